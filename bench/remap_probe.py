#!/usr/bin/env python3
"""crop, flip and transpose on every element size and axis (bench/RESULTS.md, 2026-11-29): the
suite's grid has float32 only for them.
  remap_probe.py cases FILE          writes bench_grid's case file (bench/bench_grid.cpp)
  remap_probe.py cupy FILE           CuPy's time for each case of FILE (ms, median of 15), the
                                     view made contiguous as a gpix call returns a new array
  remap_probe.py table DIR           the table of DIR/geom-{cuda,opencl}.jsonl (bench_grid) and
                                     DIR/geom-cupy.tsv, with each case's ratio to the copy
"""
import json
import sys
import time

SHAPES = [(2048, 2048), (8192, 8192), (256, 256, 256), (512, 512, 512)]
DTYPES = ["uint8", "uint16", "float32"]


def cases():
    rows = []
    for sh in SHAPES:
        s = "x".join(map(str, sh))
        q, h = [d // 4 for d in sh], [d // 2 for d in sh]
        names = "zyx"[3 - len(sh):]
        crop = {f"origin_{n}": q[i] for i, n in enumerate(names)}
        crop.update({f"size_{n}": h[i] for i, n in enumerate(names)})
        ops = [("flip", "x", {"flip_x": "true", "flip_y": "false", "flip_z": "false"}),
               ("flip", "y", {"flip_x": "false", "flip_y": "true", "flip_z": "false"}),
               ("transpose", "xy", {"axes": "xy"})]
        if len(sh) == 3:
            ops += [("flip", "xyz", {"flip_x": "true", "flip_y": "true", "flip_z": "true"}),
                    ("transpose", "xz", {"axes": "xz"}), ("transpose", "yz", {"axes": "yz"})]
        ops.append(("crop", "half", crop))
        for dt in DTYPES:
            for f, label, p in ops:
                params = ",".join(f"{k}={v}" for k, v in p.items())
                rows.append("\t".join([f"{f}:{label}:{dt}:{s}", f, s, dt, "noise", params, "-", "1"]))
    return rows


def cupy_times(path):
    import cupy as cp

    def timeit(f, reps=15):
        f()
        f()
        cp.cuda.Device().synchronize()
        ts = []
        for _ in range(reps):
            t = time.perf_counter()
            f()
            cp.cuda.Device().synchronize()
            ts.append(time.perf_counter() - t)
        return sorted(ts)[reps // 2] * 1e3

    for line in open(path):
        if line.startswith("#"):
            continue
        cid, filt, shape, dtype, _, params, _, _ = line.rstrip("\n").split("\t")
        sh = tuple(int(v) for v in shape.split("x"))
        p = dict(kv.split("=") for kv in params.split(","))
        a = (cp.random.random(sh) * 200).astype(dtype)
        nd = len(sh)
        axis = {"x": nd - 1, "y": nd - 2, "z": 0}
        if filt == "flip":
            axes = tuple(axis[n] for n in "xyz"[:nd] if p.get("flip_" + n) == "true")
            f = lambda: cp.ascontiguousarray(cp.flip(a, axes))
        elif filt == "transpose":
            order = list(range(nd))
            i, j = axis[p["axes"][0]], axis[p["axes"][1]]
            order[i], order[j] = order[j], order[i]
            f = lambda: cp.ascontiguousarray(cp.transpose(a, order))
        else:
            sl = tuple(slice(int(p["origin_" + n]), int(p["origin_" + n]) + int(p["size_" + n]))
                       for n in "zyx"[3 - nd:])
            f = lambda: cp.ascontiguousarray(a[sl])
        print(f"{cid}\t{timeit(f):.4f}", flush=True)


def table(d):
    cupy = {}
    for line in open(f"{d}/geom-cupy.tsv"):
        part = line.rstrip("\n").split("\t")
        if len(part) == 2:
            cupy[part[0]] = float(part[1])
    res = {}
    for dev in ("cuda", "opencl"):
        copies = {}
        for line in open(f"{d}/geom-{dev}.jsonl"):
            x = json.loads(line)
            if "copy" in x and "id" not in x:
                copies[x["copy"]] = x["median_ms"]
            if "id" in x and x.get("status") == "ok":
                res.setdefault(x["id"], {})[dev] = (x["median_ms"], copies[x["copy"]])
    print("| case | shape, dtype | gpix CUDA | gpix OpenCL | CuPy | copy | x copy | over CuPy |")
    print("|---|---|---|---|---|---|---|---|")
    for k, v in res.items():
        (c, copy), o = v["cuda"], v.get("opencl", (float("nan"), 0))[0]
        f, label, dt, sh = k.split(":")
        peer = cupy.get(k, float("nan"))
        print(f"| `{f}` {label} | {sh} {dt} | {c:.4f} | {o:.4f} | {peer:.4f} | {copy:.4f} | "
              f"{c / copy:.2f} | {peer / min(c, o):.2f}x |")


if __name__ == "__main__":
    what, arg = sys.argv[1], sys.argv[2]
    if what == "cases":
        with open(arg, "w") as f:
            f.write("# id\tfilter\tshape\tdtype\tinputs\tparams\tfrom\tfactor\n")
            f.write("\n".join(cases()) + "\n")
    elif what == "cupy":
        cupy_times(arg)
    else:
        table(arg)
