#!/usr/bin/env python3
"""Times gpix kernels straight through CuPy's NVRTC, to compare tile shapes and kernel
versions on the GPU machine without a rebuild. Every result is checked against CuPy's
ndimage on the same data (mode "nearest", gpix's border).

    python3 bench/tile_probe.py gauss [N] [TILED_KERNEL ...]
        tiled.kernel's fused 2D pass (tile_conv_xy, Gaussian sigma 2) on N x N float32
        (default 8192) under several tile shapes; further files: other versions of
        tiled.kernel, timed in the first two shapes.
    python3 bench/tile_probe.py gauss3d [N] [once] [TILED_KERNEL ...]
        a volume's Gaussian as gpix runs it, tiled.kernel's x-y pass (tile_conv_xy) and z
        pass (tile_conv_axis), each timed alone, sigma 1 and 2 (radius buckets 4 and 8), on
        N^3 float32 and uint16 (default 512); further files: their z pass, timed and compared
        bit for bit; "once": each pass launched once, untimed (for ncu: `ncu -k
        regex:tile_conv ... tile_probe.py gauss3d 512 once`).
    python3 bench/tile_probe.py box3d [N] [NEIGHBOURHOOD_KERNEL ...]
        neighbourhood.kernel's radius-1 3D median on N^3 float32 (default 512), also from
        further files (other versions), then the 3D boxes (r1_sum/min/max_3d) for several
        NB_TZ.
    python3 bench/tile_probe.py box2d [N] [NEIGHBOURHOOD_KERNEL ...]
        neighbourhood.kernel's radius-1 2D boxes and median (r1_OP_2d) on N x N float32
        (default 8192) with 8 and 16 rows per work-item, and the four-column versions
        (r1_OP_2d_v4) under several rows per work-item and work-group shapes; further
        files: other versions.
    python3 bench/tile_probe.py buckets [N]
        tiled.kernel's box passes (sum, min, max) of radius 2 and 3 in the radius bucket TB 4
        (predicated taps) against a bucket of exactly the radius (TB = r, every tap on): the
        fused 2D pass (tile_OP_xy) on N x N and 2048 x 2048, and a volume's x-y pass plus z
        pass (tile_OP_axis) on 256^3, float32 and uint16; every output compared bit for bit
        with the TB 4 one and with CuPy.
"""
import sys
from pathlib import Path

import cupy as cp
import numpy as np
from cupyx.scipy import ndimage as ndi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_cupy import device_ms  # noqa: E402  (the same timing as the peer figures)

root = Path(__file__).resolve().parent.parent


def source(path):
    return (root / "kernels/dialect.h").read_text() + "\n" + Path(path).read_text()


def compile_fn(path, name, defines):
    opts = ("-std=c++17",) + tuple(f"-D{d}" for d in defines)
    return cp.RawModule(code=source(path), options=opts).get_function(name)


def report(label, k, t, copy, err):
    print(f"{label}: {t:.3f} ms ({t / copy:.2f}x floor) regs {k.num_regs} "
          f"smem {k.shared_size_bytes} max|diff| {err:.2e}", flush=True)


def gauss(n, files):
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    out = cp.empty_like(a)
    sigma, r = 2.0, 8
    x = np.arange(-r, r + 1)
    taps = np.exp(-0.5 * x * x / sigma**2)
    taps = (taps / taps.sum()).astype(np.float32)
    # tiled.kernel takes the 2 TB + 1 taps by value, packed in pairs into 9 64-bit words.
    words = [np.uint64(w) for w in np.concatenate([taps, np.zeros(1, np.float32)]).view(np.uint64)]
    ref = ndi.gaussian_filter(a, sigma, mode="nearest")
    copy = device_ms(lambda: cp.copyto(out, a))
    print(f"gauss {n}^2: copy {copy:.3f} ms (floor), CuPy {device_ms(lambda: ndi.gaussian_filter(a, sigma, mode='nearest')):.3f} ms")
    shapes = [(64, 64, 8, 16, 8), (64, 64, 4, 16, 8), (64, 32, 8, 8, 8), (32, 64, 8, 8, 8)]
    runs = [(root / "kernels/tiled.kernel", s) for s in shapes]
    runs += [(Path(f), s) for f in files for s in shapes[:2]]
    for path, (tx, ty, px, py, tb) in runs:
        defines = ("T_IN=gpix_f32", "T_OUT=gpix_f32", "CT=gpix_f32", f"TB={tb}", "TILE_OP=0",
                   f"TL_X={tx}", f"TL_Y={ty}", f"TL_PX={px}", f"TL_PY={py}")
        try:
            k = compile_fn(path, "tile_conv_xy", defines)
        except Exception as e:  # noqa: BLE001
            print(path.name, tx, ty, px, py, tb, "compile failed:", str(e).splitlines()[0])
            continue
        grid = ((n + tx - 1) // tx, (n + ty - 1) // ty, 1)
        args = (a, out, np.uint64(n), np.uint64(n), np.uint64(1), *words, *words, np.int32(r),
                np.int32(r), np.int32(0), np.float32(1))
        out.fill(np.nan)
        t = device_ms(lambda: k(grid, (256, 1, 1), args))
        report(f"{path.name} TL_X {tx} TL_Y {ty} PX {px} PY {py} TB {tb}", k, t, copy,
               float(cp.abs(out - ref).max()))


def tap_words(sigma, tb):
    """The Gaussian's taps as tiled.kernel takes them: 2 TB + 1 float32 (centre TB, zero beyond
    the radius) packed in pairs into 9 64-bit words."""
    r = int(4 * sigma + 0.5)
    x = np.arange(-r, r + 1)
    taps = np.exp(-0.5 * x * x / sigma**2)
    w = np.zeros(18, np.float32)
    w[tb - r:tb + r + 1] = taps / taps.sum()
    return [np.uint64(v) for v in w.view(np.uint64)], r


def gauss3d(n, files):
    """The two passes of a volume's Gaussian (tile_conv_xy per plane, tile_conv_axis along z),
    each timed alone, against the copy and CuPy; run under ncu for their profiles."""
    once = "once" in files
    for dtype, tname in ((cp.float32, "gpix_f32"), (cp.uint16, "gpix_u16")):
        rng = cp.random.default_rng(1)
        a = (rng.random((n, n, n), dtype=cp.float32) * 60000).astype(dtype)
        out = cp.empty_like(a)
        mid = cp.empty((n, n, n), cp.float32)
        copy = 1.0 if once else device_ms(lambda: cp.copyto(out, a))
        print(f"gauss3d {n}^3 {cp.dtype(dtype).name}: copy {copy:.3f} ms (floor)", flush=True)
        for sigma in (1.0, 2.0):
            tb = 4 if sigma <= 1 else 8
            words, r = tap_words(sigma, tb)
            base = ("CT=gpix_f32", f"TB={tb}", "TILE_OP=0")
            sh = (np.uint64(n), np.uint64(n), np.uint64(n))
            kxy = compile_fn(root / "kernels/tiled.kernel", "tile_conv_xy",
                             (f"T_IN={tname}", "T_OUT=gpix_f32") + base)
            kz = compile_fn(root / "kernels/tiled.kernel", "tile_conv_axis",
                            ("T_IN=gpix_f32", f"T_OUT={tname}") + base)

            def xy():
                kxy(((n + 63) // 64, (n + 63) // 64, n), (256, 1, 1),
                    (a, mid, *sh, *words, *words, np.int32(r), np.int32(r), np.int32(0),
                     np.float32(1)))

            def z():
                kz(((n + 63) // 64, (n + 15) // 16, n), (64, 1, 1),
                   (mid, out, *sh, *words, *words, np.int32(r), np.int32(0), np.int32(2),
                    np.float32(1)))
            if once:
                xy()
                z()
                cp.cuda.Device().synchronize()
                print(f"  sigma {sigma}: launched once", flush=True)
                continue
            txy, tz = device_ms(xy), device_ms(z)
            zout = out.copy()
            for f in (f for f in files if f != "once"):
                kz2 = compile_fn(Path(f), "tile_conv_axis",
                                 ("T_IN=gpix_f32", f"T_OUT={tname}") + base)
                out.fill(0)
                t = device_ms(lambda: kz2(((n + 63) // 64, (n + 15) // 16, n), (64, 1, 1),
                                          (mid, out, *sh, *words, *words, np.int32(r),
                                           np.int32(0), np.int32(2), np.float32(1))))
                print(f"    z pass of {Path(f).name}: {t:.3f} ms (regs {kz2.num_regs}), "
                      f"{'bit-identical' if bool(cp.array_equal(out, zout)) else 'DIFFERS'}",
                      flush=True)
            out[...] = zout
            peer = device_ms(lambda: ndi.gaussian_filter(a, sigma, mode="nearest"))
            err = float(cp.abs(out.astype(cp.float32) -
                               ndi.gaussian_filter(a.astype(cp.float32), sigma,
                                                   mode="nearest")).max())
            print(f"  sigma {sigma}: x-y pass {txy:.3f} ms ({txy / copy:.2f}x floor, regs "
                  f"{kxy.num_regs}), z pass {tz:.3f} ms ({tz / copy:.2f}x, regs {kz.num_regs}), "
                  f"both {txy + tz:.3f}; CuPy {peer:.3f} ms; max|diff| {err:.2e}", flush=True)
        del a, out, mid


def box3d(n, files):
    a = cp.random.default_rng(1).random((n, n, n), dtype=cp.float32)
    out = cp.empty_like(a)
    copy = device_ms(lambda: cp.copyto(out, a))
    print(f"box3d {n}^3: copy {copy:.3f} ms (floor)")
    peers = {"sum": lambda: ndi.uniform_filter(a, 3, mode="nearest"),
             "min": lambda: ndi.minimum_filter(a, 3, mode="nearest"),
             "max": lambda: ndi.maximum_filter(a, 3, mode="nearest")}
    refs = {op: f() for op, f in peers.items()}
    for op, f in peers.items():
        print(f"  CuPy {op}: {device_ms(f):.3f} ms")
    # The 3D median: a work-item per column, NB_RUN planes (this and other versions).
    ref = ndi.median_filter(a, 3, mode="nearest")
    print(f"  CuPy median: {device_ms(lambda: ndi.median_filter(a, 3, mode='nearest')):.3f} ms")
    for path in [root / "kernels/neighbourhood.kernel"] + [Path(f) for f in files]:
        k = compile_fn(path, "r1_median_3d", ("T_IN=gpix_f32", "T_OUT=gpix_f32", "CT=gpix_f32"))
        grid = ((n + 31) // 32, (n + 7) // 8, (n + 7) // 8)
        args = (a, out, np.uint64(n), np.uint64(n), np.uint64(n), np.float32(1))
        out.fill(np.nan)
        t = device_ms(lambda: k(grid, (32, 8, 1), args))
        report(f"{path.name} r1_median_3d", k, t, copy, float(cp.abs(out - ref).max()))
    del ref
    runs = [(root / "kernels/neighbourhood.kernel", tz) for tz in (32, 64)]
    for path, tz in runs:
        for op in ("sum", "min", "max"):
            try:
                k = compile_fn(path, f"r1_{op}_3d",
                               ("T_IN=gpix_f32", "T_OUT=gpix_f32", "CT=gpix_f32", f"NB_TZ={tz}"))
            except Exception as e:  # noqa: BLE001
                print(path.name, op, "compile failed:", str(e).splitlines()[0])
                continue
            grid = ((n + 31) // 32, (n + 15) // 16, (n + tz - 1) // tz)
            args = (a, out, np.uint64(n), np.uint64(n), np.uint64(n), np.float32(27))
            out.fill(np.nan)
            t = device_ms(lambda: k(grid, (32, 8, 1), args))
            report(f"{path.name} r1_{op}_3d NB_TZ {tz}", k, t, copy,
                   float(cp.abs(out - refs[op]).max()))


def box2d(n, files):
    a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
    out = cp.empty_like(a)
    copy = device_ms(lambda: cp.copyto(out, a))
    print(f"box2d {n}^2: copy {copy:.3f} ms (floor)")
    peers = {"sum": lambda: ndi.uniform_filter(a, 3, mode="nearest"),
             "min": lambda: ndi.minimum_filter(a, 3, mode="nearest"),
             "max": lambda: ndi.maximum_filter(a, 3, mode="nearest"),
             "median": lambda: ndi.median_filter(a, 3, mode="nearest")}
    refs = {op: f() for op, f in peers.items()}
    for op, f in peers.items():
        print(f"  CuPy {op}: {device_ms(f):.3f} ms")
    runs = [(root / "kernels/neighbourhood.kernel", run) for run in (8, 16)]
    runs += [(Path(f), 8) for f in files]
    for path, run in runs:
        for op in peers:
            k = compile_fn(path, f"r1_{op}_2d",
                           ("T_IN=gpix_f32", "T_OUT=gpix_f32", "CT=gpix_f32", f"NB_RUN={run}",
                            f"NB_RUN_MEDIAN={run}"))
            grid = ((n + 63) // 64, ((n + run - 1) // run + 3) // 4, 1)
            args = (a, out, np.uint64(n), np.uint64(n), np.uint64(1), np.float32(9))
            out.fill(np.nan)
            t = device_ms(lambda: k(grid, (64, 4, 1), args))
            report(f"{path.name} r1_{op}_2d NB_RUN {run}", k, t, copy,
                   float(cp.abs(out - refs[op]).max()))
    # Four columns per work-item (r1_OP_2d_v4), where the kernel file has them.
    vruns = [(root / "kernels/neighbourhood.kernel", run, block)
             for run, block in ((2, (64, 4)), (4, (64, 4)), (4, (128, 2)), (4, (32, 8)),
                                (8, (64, 4)), (16, (64, 4)))]
    vruns += [(Path(f), run, (64, 4)) for f in files for run in (2, 4)]
    for path, run, block in vruns:
        if "_2d_v4" not in path.read_text():
            continue
        for op in ("sum", "min", "max"):
            k = compile_fn(path, f"r1_{op}_2d_v4",
                           ("T_IN=gpix_f32", "T_OUT=gpix_f32", "CT=gpix_f32", f"NB_RUN_V4={run}"))
            grid = ((n // 4 + block[0] - 1) // block[0],
                    ((n + run - 1) // run + block[1] - 1) // block[1], 1)
            args = (a, out, np.uint64(n), np.uint64(n), np.uint64(1), np.float32(9))
            out.fill(np.nan)
            t = device_ms(lambda: k(grid, (*block, 1), args))
            report(f"{path.name} r1_{op}_2d_v4 NB_RUN {run} block {block}", k, t, copy,
                   float(cp.abs(out - refs[op]).max()))

def buckets(n):
    zero = [np.uint64(0)] * 9
    ops = {"sum": (1, lambda a, k: ndi.uniform_filter(a.astype(cp.float32), k, mode="nearest")),
           "min": (2, lambda a, k: ndi.minimum_filter(a, k, mode="nearest")),
           "max": (3, lambda a, k: ndi.maximum_filter(a, k, mode="nearest"))}
    for dtype, tname in ((cp.float32, "gpix_f32"), (cp.uint16, "gpix_u16")):
        for shape in ((2048, 2048), (n, n), (256, 256, 256)):
            rng = cp.random.default_rng(1)
            a = (rng.random(shape, dtype=cp.float32) * 60000).astype(dtype)
            out = cp.empty_like(a)
            copy = device_ms(lambda: cp.copyto(out, a))
            dims = "x".join(map(str, shape))
            print(f"buckets {dims} {cp.dtype(dtype).name}: copy {copy:.3f} ms", flush=True)
            d = len(shape) == 3
            w, h, z = shape[-1], shape[-2], (shape[0] if d else 1)
            sh = (np.uint64(w), np.uint64(h), np.uint64(z))
            for op, (code, peer) in ops.items():
                for r in (2, 3):
                    size = 2 * r + 1
                    ref = peer(a, size)
                    mid_t = "gpix_f32" if op == "sum" else tname
                    mid = cp.empty(shape, cp.float32 if op == "sum" else dtype)
                    first = None
                    for tb in (4, r):
                        base = ("CT=gpix_f32", f"TB={tb}", f"TILE_OP={code}")
                        if d:
                            kxy = compile_fn(root / "kernels/tiled.kernel", f"tile_{op}_xy",
                                             (f"T_IN={tname}", f"T_OUT={mid_t}") + base)
                            kz = compile_fn(root / "kernels/tiled.kernel", f"tile_{op}_axis",
                                            (f"T_IN={mid_t}", f"T_OUT={tname}") + base)

                            def run():
                                kxy(((w + 63) // 64, (h + 63) // 64, z), (256, 1, 1),
                                    (a, mid, *sh, *zero, *zero, np.int32(r), np.int32(r),
                                     np.int32(0), np.float32(1)))
                                kz(((w + 63) // 64, (z + 15) // 16, h), (64, 1, 1),
                                   (mid, out, *sh, *zero, *zero, np.int32(r), np.int32(0),
                                    np.int32(2), np.float32(size ** 3)))
                            regs = f"{kxy.num_regs}/{kz.num_regs}"
                        else:
                            kxy = compile_fn(root / "kernels/tiled.kernel", f"tile_{op}_xy",
                                             (f"T_IN={tname}", f"T_OUT={tname}") + base)

                            def run():
                                kxy(((w + 63) // 64, (h + 63) // 64, 1), (256, 1, 1),
                                    (a, out, *sh, *zero, *zero, np.int32(r), np.int32(r),
                                     np.int32(0), np.float32(size ** 2)))
                            regs = f"{kxy.num_regs}"
                        out.fill(0)
                        t = device_ms(run)
                        got = out.copy()
                        err = float(cp.abs(got.astype(cp.float32) - ref.astype(cp.float32)).max())
                        same = "" if first is None else (
                            " bit-identical to TB 4" if bool(cp.array_equal(got, first))
                            else " DIFFERS from TB 4")
                        first = got if first is None else first
                        print(f"  {op} r{r} TB {tb}: {t:.3f} ms ({t / copy:.2f}x copy) regs "
                              f"{regs} max|diff| vs CuPy {err:.2e}{same}", flush=True)
            del a, out


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "gauss"
    rest = sys.argv[2:]
    n = int(rest.pop(0)) if rest and rest[0].isdigit() else None
    if mode == "gauss":
        gauss(n or 8192, rest)
    elif mode == "box2d":
        box2d(n or 8192, rest)
    elif mode == "gauss3d":
        gauss3d(n or 512, rest)
    elif mode == "box3d":
        box3d(n or 512, rest)
    elif mode == "buckets":
        buckets(n or 8192)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
