#!/usr/bin/env python3
"""Checks of the performance suite (bench/suite.py) that need no GPU: the grid (unique ids,
predictors, every filter and parameter known to gpix's catalog), the inputs (bench_grid's hash
noise and blob inputs bit for bit equal to the peers'), the runner restarts (a runner that
crashes or hangs in a case), the report (table, summary and plot from made-up results), and the
suite end to end on the OpenCL device given (PoCL in CI) with gpix and the CuPy mappings run on
numpy and scipy (SUITE_FAKE_CUPY=1).

    test_suite.py --bench-grid PATH [--device opencl:] [--skip-end-to-end]

Ends with "N passed, M failed". Needs numpy, scipy and matplotlib (scripts/deps.sh); a python3
without them re-runs the script with the system's.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import traceback


def _import_or_reexec():
    try:
        import matplotlib  # noqa: F401
        import numpy  # noqa: F401
        import scipy.ndimage  # noqa: F401

        return
    except ImportError as e:
        missing = e
    if not os.environ.get("GPIX_SUITE_REEXEC"):
        for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
            if os.path.exists(cand) and os.path.realpath(cand) != os.path.realpath(sys.executable):
                probe = subprocess.run(
                    [cand, "-c", "import numpy, scipy.ndimage, matplotlib"], capture_output=True
                )
                if probe.returncode == 0:
                    os.environ["GPIX_SUITE_REEXEC"] = "1"
                    os.execv(cand, [cand] + sys.argv)
    print(
        f"test_suite: cannot import numpy, scipy and matplotlib ({missing}); install "
        "python3-numpy python3-scipy python3-matplotlib (scripts/deps.sh)"
    )
    print("0 passed, 1 failed")
    sys.exit(1)


_import_or_reexec()

import numpy as np  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import suite  # noqa: E402
import suite_peers  # noqa: E402
import suite_report  # noqa: E402

TESTS = []


def test(f):
    TESTS.append(f)
    return f


@test
def grid_ids_and_predictors(o, tmp):
    for shapes in (suite.SHAPES, suite.QUICK_SHAPES):
        cases = suite.grid(shapes)
        ids = [c["id"] for c in cases]
        assert len(ids) == len(set(ids)), "case ids repeat"
        seen = set()
        for c in cases:
            assert (
                c["from"] == "-" or c["from"] in seen
            ), f"{c['id']}: predictor {c['from']} not before it"
            assert c["factor"] > 0
            seen.add(c["id"])
        assert {c["group"] for c in cases} <= set(suite.GROUPS)
    full = suite.grid(suite.SHAPES)
    assert 400 <= len(full) <= 700, f"{len(full)} cases: the runtime estimate assumes about 560"
    # The issue's grid: radii 1-7 (15 for means), sigmas 1-10, both sizes per dimension.
    labels = {(c["filter"], c["label"]) for c in full}
    for r in (1, 2, 3, 5, 7):
        assert ("median_box", f"r{r}") in labels and ("minimum_box", f"r{r}") in labels
    assert ("mean_box", "r15") in labels
    for s in (1, 2, 5, 10):
        assert ("gaussian_blur", f"s{s}") in labels
    assert {"x".join(map(str, c["shape"])) for c in full} == {
        "2048x2048",
        "8192x8192",
        "256x256x256",
        "512x512x512",
    }


@test
def shapes_off_the_grid(o, tmp):
    got = suite.parse_shapes("2:3001x4099,1999x2047;3:64x512x512,97x301x263")
    assert got == {2: [(1999, 2047), (3001, 4099)], 3: [(97, 301, 263), (64, 512, 512)]}, got
    cases = suite.grid(got)
    assert {"x".join(map(str, c["shape"])) for c in cases} == {
        "1999x2047",
        "3001x4099",
        "97x301x263",
        "64x512x512",
    }
    assert len(cases) == len(suite.grid(suite.SHAPES))
    for bad in ("2:10x10", "2:10x10,20x20", "2:10x10,20x20;3:1x2x3,4x5", "2:10x10x1,2x2;3:1x1x1,2x2x2"):
        try:
            suite.parse_shapes(bad)
        except SystemExit as e:
            assert "--shapes" in str(e), e
        else:
            raise AssertionError(f"{bad!r} was accepted")


@test
def dtypes_off_the_grid(o, tmp):
    """--dtypes maps the noise cases' element types (blob, mask and label cases keep theirs),
    refuses what it cannot make, and bench_grid's noise in every such type equals the peers'."""
    m = suite.parse_dtypes("float32=float64,uint16=int16")
    assert m == {"float32": "float64", "uint16": "int16"}, m
    for bad in ("float32", "float32=float16", "int16=float32", "float32=complex64"):
        try:
            suite.parse_dtypes(bad)
        except SystemExit as e:
            assert "--dtypes" in str(e), e
        else:
            raise AssertionError(f"{bad!r} was accepted")
    plain = suite.grid(suite.SHAPES)
    cases = suite.grid(suite.SHAPES, dtypes=m)
    assert len(cases) == len(plain)
    for c, p in zip(cases, plain):
        if set(c["inputs"]) <= {"noise", "noise2"}:
            assert c["dtype"] == m.get(p["dtype"], p["dtype"]), (c["id"], p["id"])
        else:
            assert c["dtype"] == p["dtype"], c["id"]
    assert any(c["id"].startswith("gaussian_blur:s1:int16:") for c in cases)
    # Two grid types onto one: the filter keeps one case per shape and window.
    merged = suite.grid(suite.SHAPES, "^mean_box$", {"uint16": "float32"})
    assert {c["dtype"] for c in merged} == {"float32"}
    assert len(merged) == len(suite.grid(suite.SHAPES, "^mean_box$")) // 2
    # Every noise type through bench_grid --dump against suite_peers.hash_noise.
    shape = (3, 37, 29)
    cases = [
        dict(
            id=f"add_images::{t}:3x37x29",
            filter="add_images",
            group="pointwise",
            label="",
            shape=list(shape),
            dtype=t,
            inputs=["noise", "noise2"],
            params={},
            **{"from": "-"},
            factor=1.0,
        )
        for t in suite.NOISE_DTYPES
    ]
    base, dump = os.path.join(tmp, "types"), os.path.join(tmp, "dump")
    os.makedirs(dump)
    suite.write_cases(cases, base)
    r = subprocess.run(
        [o.bench_grid, "--device", o.device, "--cases", base + ".tsv", "--data", tmp,
         "--dump", dump],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for n, c in enumerate(cases):
        for k, seed in enumerate((1, 2)):
            want = suite_peers.hash_noise(np, shape, c["dtype"], seed)
            got = np.fromfile(os.path.join(dump, f"{n}-{k}.raw"), dtype=want.dtype).reshape(shape)
            assert np.array_equal(got, want), f"{c['dtype']} noise {seed} differs from the peers'"
            if c["dtype"] != "uint32":
                assert want.min() >= 0 and want.max() > 0, c["dtype"]


@test
def prewarm_and_shards(o, tmp):
    cases = suite.grid(suite.QUICK_SHAPES)
    pre = suite.prewarm_cases(cases, suite.QUICK_PREWARM_SHAPES)
    keys = {(c["filter"], c["label"], c["dtype"], len(c["shape"])) for c in cases}
    assert len(pre) == len(keys)
    assert all(c["from"] == "-" for c in pre)
    parts = [suite.shard(cases, k, 3) for k in range(3)]
    assert sorted(c["id"] for p in parts for c in p) == sorted(c["id"] for c in cases)
    for p in parts:
        ids = {c["id"] for c in p}
        assert all(c["from"] == "-" or c["from"] in ids for c in p), "a predictor left its shard"


@test
def case_file_format(o, tmp):
    cases = suite.grid(suite.QUICK_SHAPES, "^(affine_transform|crop|histogram)$")
    base = os.path.join(tmp, "cf")
    suite.write_cases(cases, base)
    lines = [ln for ln in open(base + ".tsv") if not ln.startswith("#")]
    assert len(lines) == len(cases)
    for ln, c in zip(lines, cases):
        f = ln.rstrip("\n").split("\t")
        assert len(f) == 8 and f[0] == c["id"] and f[1] == c["filter"]
        assert dict(kv.split("=") for kv in f[5].split(",")) == c["params"]
    assert json.load(open(base + ".json")) == cases


@test
def catalog_names_and_inputs(o, tmp):
    """Every quick case through bench_grid --dump (its filter and parameters checked against
    gpix's catalog), and its inputs equal to what the peers make."""
    cases = suite.grid(suite.QUICK_SHAPES)
    data = os.path.join(tmp, "data")
    suite.make_data(sorted({tuple(c["shape"]) for c in cases}, key=math.prod), data, lambda m: None)
    base = os.path.join(tmp, "all")
    suite.write_cases(cases, base)
    dump = os.path.join(tmp, "dump")
    os.makedirs(dump)
    r = subprocess.run(
        [
            o.bench_grid,
            "--device",
            o.device,
            "--cases",
            base + ".tsv",
            "--data",
            data,
            "--dump",
            dump,
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    checked = 0
    for n, c in enumerate(cases):
        shape = tuple(c["shape"])
        for k, spec in enumerate(c["inputs"]):
            path = os.path.join(dump, f"{n}-{k}.raw")
            if spec in ("noise", "noise2"):
                want = suite_peers.hash_noise(np, shape, c["dtype"], 1 if spec == "noise" else 2)
            elif spec == "blob":
                want = suite_peers.read_raw(np, data, "blob", shape, "uint8")
            elif spec == "blobimg":
                want = suite_peers.read_raw(np, data, "blobimg", shape, "float32").astype(
                    c["dtype"]
                )
            elif spec == "labels":
                want = ndi.label(
                    suite_peers.read_raw(np, data, "blob", shape, "uint8"),
                    structure=np.ones((3,) * len(shape)),
                )[0].astype(np.uint32)
            elif spec == "sparse_labels":
                want = (
                    ndi.label(
                        suite_peers.read_raw(np, data, "blob", shape, "uint8"),
                        structure=np.ones((3,) * len(shape)),
                    )[0].astype(np.uint32)
                    * 3
                )
            else:
                raise AssertionError(f"unknown input {spec}")
            got = np.fromfile(path, dtype=want.dtype).reshape(shape)
            assert np.array_equal(got, want), f"{c['id']} input {spec} differs from the peers'"
            checked += 1
    assert checked >= len(cases)


@test
def blobs_are_blobs(o, tmp):
    blob, img = suite_peers.make_blobs(np, ndi, (128, 160))
    frac = float(blob.mean())
    assert 0.2 < frac < 0.3, frac
    n = ndi.label(blob, structure=np.ones((3, 3)))[1]
    assert 15 < n < 400, f"{n} blobs in 128x160"
    assert (
        img.dtype == np.float32
        and np.all(img == np.rint(img))
        and img.min() >= 0
        and img.max() < 65536
    )
    assert img[blob == 1].mean() > img[blob == 0].mean() + 1000


FAKE_RUNNER = r"""
import json, os, sys
a = sys.argv
cases = json.load(open(a[a.index("--cases") + 1]))
out = open(a[a.index("--json") + 1], "a")
for c in cases:
    out.write(json.dumps({"start": c["id"]}) + "\n"); out.flush()
    if c["id"] == "c2" and not os.path.exists(a[a.index("--json") + 1] + ".crashed"):
        open(a[a.index("--json") + 1] + ".crashed", "w").close()
        os._exit(3)
    if c["id"] == "c4":
        os._exit(124)
    out.write(json.dumps({"id": c["id"], "status": "ok", "median_ms": 1.0}) + "\n"); out.flush()
"""


@test
def runner_restarts(o, tmp):
    """A runner that dies in c2 and hangs in c4 (status 124): both reported, the rest run."""
    script = os.path.join(tmp, "fake_runner.py")
    open(script, "w").write(FAKE_RUNNER)
    cases = [
        dict(
            id=f"c{k}",
            filter="f",
            shape=[4, 4],
            dtype="float32",
            inputs=["noise"],
            params={},
            factor=1.0,
            **{"from": "-"},
        )
        for k in range(6)
    ]
    impl = suite.Impl("fake", [sys.executable, script], dict(os.environ), ".json")

    class Opts:
        max_call_s, max_reps, min_reps, target_ms, case_timeout_s = 1.0, 3, 2, 10, 30

    import time

    lines = suite.run_impl(impl, cases, tmp, time.time() + 60, Opts, lambda m: None)
    _, _, res = suite.collect(lines)
    assert res["c2"]["status"] == "crashed", res["c2"]
    assert res["c4"]["status"] == "timeout", res["c4"]
    for k in (0, 1, 3, 5):
        assert res[f"c{k}"]["status"] == "ok", res.get(f"c{k}")


def fake_results():
    cases = suite.grid(
        suite.QUICK_SHAPES, "^(gaussian_blur|median_box|connected_components|@stats)$"
    )
    impls = {}
    for name, scale in (
        ("gpix-cuda", 1.0),
        ("gpix-opencl", 1.1),
        ("cupy", 3.0),
        ("cucim", 2.0),
        ("cle", 4.0),
    ):
        res, copies = {}, {}
        for k, c in enumerate(cases):
            if name == "cupy" and c["filter"] == "@stats":
                continue  # no counterpart
            key = "x".join(map(str, c["shape"])) + "/" + c["dtype"]
            copies[key] = {"copy": key, "median_ms": 0.5}
            if name == "gpix-cuda" and c["label"] == "r7":
                res[c["id"]] = dict(
                    id=c["id"],
                    status="unsupported",
                    note="median_box with radii (x 7, y 7, z 0) needs 225",
                )
            elif name == "cle" and k % 7 == 3:
                res[c["id"]] = dict(
                    id=c["id"], status="skipped", note="predicted 3 s per call from x"
                )
            else:
                res[c["id"]] = dict(
                    id=c["id"],
                    status="ok",
                    median_ms=scale * (1 + k % 3),
                    min_ms=scale,
                    reps=3,
                    copy=key,
                )
        impls[name] = dict(
            header=dict(
                peer=name,
                version=f"{name} 1.0",
                device="fake",
                maps=sorted(
                    {c["filter"] for c in cases} - ({"@stats"} if name == "cupy" else set())
                ),
                approx={"median_box": "a made-up difference"} if name == "cle" else {},
            ),
            copies=copies,
            results=res,
        )
    fc_cases = suite.first_call_cases((64, 64))
    run = dict(
        start_to_ready_ms=100.0,
        cases=[dict(id=c["id"], first_ms=50.0, second_ms=0.5) for c in fc_cases],
    )
    return dict(
        meta=dict(
            date="2026-01-01 00:00 UTC", commit="abc1234", gpu="Fake GPU", quick=True, total_s=1.0
        ),
        cases=cases,
        impls=impls,
        first_call={"gpix-cuda": {"cold": [run], "warm": [run, run]}},
        first_call_cases=fc_cases,
    )


@test
def report_converted_peer(o, tmp):
    """A peer that ran a case on another element type than the case's (its timed copy says so:
    pyclesperanto pushes float64 as float32) is marked and never the best peer, however fast."""
    res = fake_results()
    c = next(c for c in res["cases"] if c["filter"] == "gaussian_blur")
    r = res["impls"]["cle"]["results"][c["id"]]
    r.update(status="ok", median_ms=1e-6, copy=r["copy"].rpartition("/")[0] + "/float16")
    assert suite_report.converted(res, "cle", c) == "float16"
    assert suite_report.best_peer(res, c)[1] != "cle"
    row = next(
        ln
        for ln in suite_report.table(res).splitlines()
        if ln.startswith(f"| {suite_report.case_name(c)} | {'x'.join(map(str, c['shape']))} |")
        and f"| {c['dtype']} |" in ln
    )
    assert "‡" in row, row
    other = next(x for x in res["cases"] if x["filter"] == "median_box" and x["id"] != c["id"])
    assert suite_report.converted(res, "cle", other) is None


@test
def report_table_and_plot(o, tmp):
    res = fake_results()
    md = suite_report.markdown(res, "scripts/gpu-run.sh suite")
    rows = [ln for ln in md.splitlines() if ln.startswith("| `")]
    assert len(rows) == len(res["cases"]) + 0, (len(rows), len(res["cases"]))
    c = res["cases"][0]  # gaussian s1: gpix 1.0 (k=0), peers 3.0, 2.0, 4.0: best cuCIM, 2x
    assert suite_report.best_peer(res, c) == (2.0, "cucim")
    assert abs(suite_report.speedup(res, c) - 2.0) < 1e-9
    assert abs(suite_report.copy_ratio(res, c) - 2.0) < 1e-9
    row = next(
        r
        for r in rows
        if r.startswith(f"| `gaussian_blur` s1 | {'x'.join(map(str, c['shape']))} | float32 |")
    )
    assert "| cuCIM | 2.00x | 2.00 |" in row, row
    assert "n/s<sup>" in md and "skip<sup>" in md and " †" in md and "a made-up difference" in md
    assert "| gpix CUDA | 100 / 100 |" in md, "first-call row"
    assert "geometric mean speed-up" in md
    png = os.path.join(tmp, "p.png")
    suite_report.plot(res, png)
    assert os.path.getsize(png) > 10000
    out_md = os.path.join(tmp, "r.md")
    open(out_md, "w").write("# Benchmark results\n")
    path = os.path.join(tmp, "results.json")
    json.dump(res, open(path, "w"))
    r = subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "suite_report.py"),
            path,
            "--append",
            out_md,
            "--png",
            png,
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    text = open(out_md).read()
    assert text.startswith(
        "# Benchmark results\n\n## 2026-01-01 00:00 UTC, Fake GPU, commit abc1234"
    )


@test
def profile_parse_and_causes(o, tmp):
    """The profile phase's reading of ncu's CSV (kernels to their case by the NVTX range, the
    longest range name winning, the units row and ncu's own lines skipped) and each rule of
    suite_report.cause(), in the report's grid column and its table of causes."""
    import csv
    import io

    res = fake_results()
    over = [c for c in res["cases"] if suite_report.over_target(res, c)]
    assert len(over) >= 5, len(over)
    fine = [c for c in res["cases"] if not suite_report.over_target(res, c)]
    metrics = list(suite.PROFILE_METRICS)
    nvtx = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
    head = ["ID", "Process ID", "Process Name", "Host Name", nvtx, "Kernel Name", "Context"]
    head += metrics
    units = [""] * 7 + ["nsecond", "byte", "byte", "%", "%", "%", "%", "", "register/thread"]
    assert len(units) == len(head)

    def line(cells):
        f = io.StringIO()
        csv.writer(f, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(cells)
        return f.getvalue()

    rows = []

    def kernel(rng, name, us, read, written, dram, l2, issue, warps):
        rows.append(
            [str(len(rows)), "42", "bench_grid", "gpu", f"<default domain>:{rng}:none:none",
             f"{name}(float const*, float*, int)", "1"]
            + [f"{us * 1000:,.0f}", f"{read:,}", f"{written:,}", str(dram), str(l2), str(issue),
               str(warps), "4,096", "32"]
        )

    mb = 1 << 20
    a, b, c, d, e = over[:5]
    longer = a["id"] + "-longer"
    kernel(a["id"], "tile_conv_xy", 400, 16 * mb, 16 * mb, 40, 50, 75, 60)
    kernel(a["id"], "tile_conv_axis", 300, 16 * mb, 16 * mb, 70, 60, 50, 55)
    kernel(longer, "not_a", 1, 0, 0, 0, 0, 0, 0)  # a range whose name a["id"] begins
    kernel(b["id"], "stats_partial", 200, 8 * mb, 0, 60, 40, 20, 80)
    kernel(c["id"], "sep_conv_xy", 950, 8 * mb, 8 * mb, 30, 40, 80, 45)
    kernel(d["id"], "remap", 950, 8 * mb, 8 * mb, 30, 35, 20, 25)
    kernel(e["id"], "unary", 950, 8 * mb, 8 * mb, 85, 60, 30, 70)
    path = os.path.join(tmp, "ncu.csv")
    with open(path, "w") as f:
        f.write("==PROF== Connected to process 42 (bench_grid)\n")
        f.write(line(head) + line(units) + "".join(line(r) for r in rows))
        f.write("==PROF== Disconnected from process 42\n")
    names = [x["id"] for x in (a, b, c, d, e)] + [longer]
    got = suite.parse_ncu_csv(path, names)
    assert [k["kernel"].split("(")[0] for k in got[a["id"]]] == ["tile_conv_xy", "tile_conv_axis"]
    assert len(got[longer]) == 1 and len(got[e["id"]]) == 1, got.keys()
    assert got[a["id"]][0]["gpu__time_duration.sum"] == 400000
    assert got[a["id"]][0]["dram__bytes_read.sum"] == 16 * mb

    # The call's time and the copy come from the grid (gpix CUDA's): 1 ms, a copy of 8 MiB.
    cuda = res["impls"]["gpix-cuda"]
    for x in (a, b, c, d, e):
        cuda["results"][x["id"]]["median_ms"] = 1.0
        cuda["copies"][cuda["results"][x["id"]]["copy"]]["bytes"] = 8 * mb

    def entry(cid):
        return dict(kernels=got[cid], copy_kernels=[])

    res["profile"] = dict(
        date="2026-01-01 01:00 UTC",
        commit="def5678",
        device="Fake GPU",
        cases={x["id"]: entry(x["id"]) for x in (a, b, c, d, e)},
    )
    want = {
        a["id"]: "traffic: 4.00x the copy's DRAM bytes over 2 kernels",
        b["id"]: "fixed cost: 800 of 1000 µs outside the kernels",
        c["id"]: "instruction issue: 80% of issue slots busy",
        d["id"]: "latency: occupancy 25%",
        e["id"]: "at the memory's pace",
    }
    for x in (a, b, c, d, e):
        got_cause = suite_report.cause(res, x)
        assert got_cause == want[x["id"]], (x["id"], got_cause)
    f = suite_report.profile_figures(res, a)
    assert abs(f["kernel_us"] - 700) < 1e-6 and f["kernels"] == 2
    assert abs(f["dram_pct"] - (400 * 40 + 300 * 70) / 700) < 1e-9
    assert suite_report.cause(res, fine[0]) == "" if fine else True
    md = suite_report.markdown(res, "scripts/gpu-run.sh suite")
    assert "### Cases over target, with their profile" in md
    assert "| cause (ncu) |" in md
    grid = md.split("### The grid")[1]
    assert want[b["id"]] in grid and "not profiled" in grid
    causes = md.split("### Cases over target, with their profile")[1].split("### The grid")[0]
    assert "tile_conv_axis, tile_conv_xy" in causes and "Not profiled (" in causes


@test
def peer_arguments(o, tmp):
    nd = 3
    assert suite_peers.sizes({"radius_x": "1", "radius_y": "2", "radius_z": "3"}, nd) == (7, 5, 3)
    assert suite_peers.sizes({"radius_x": "1", "radius_y": "2", "radius_z": "0"}, 2) == (5, 3)
    assert suite_peers.sigmas({"sigma_x": "1", "sigma_y": "2", "sigma_z": "3"}, 3) == (
        3.0,
        2.0,
        1.0,
    )
    assert suite_peers.crop_box(
        {"origin_x": "2", "size_x": "3", "origin_y": "1", "size_y": "0"}, (5, 8)
    ) == (slice(1, 5), slice(2, 5))
    # The affine mapping: gpix's (x, y) matrix as scipy's (y, x) one gives the same image.
    p = {k: suite.fmt(v) for k, v in suite.affine_rotation(2, (20, 30), "float32").items()}
    mat, off = suite_peers.affine_numpy(
        {k: float(v) if k != "interpolation" else v for k, v in p.items()}, 2
    )
    y, x = 7.0, 11.0
    xin = float(p["m00"]) * x + float(p["m01"]) * y + float(p["m03"])
    yin = float(p["m10"]) * x + float(p["m11"]) * y + float(p["m13"])
    got = np.array(mat) @ np.array([y, x]) + np.array(off)
    assert np.allclose(got, [yin, xin]), (got, yin, xin)


@test
def peer_work_types(o, tmp):
    """CuPy's composites compute in the floating type gpix computes in: float64 for float64
    and 32/64-bit integers, float32 for float32 and 8/16-bit integers. In float32, a float64
    image would move half the bytes at half the precision, unseen by the report; in float64, a
    float32 one twice the bytes."""
    ops = suite_peers.CupyPeer(fake=True).ops()
    p = {"radius_x": "1", "radius_y": "1", "radius_z": "0", "sigma": "1", "amount": "1"}
    exact = 1 + 2.0**-40  # not a float32 value
    f64 = np.full((6, 7), exact, dtype=np.float64)
    u16 = np.arange(42, dtype=np.uint16).reshape(6, 7)
    for name in ("variance_box", "sobel"):
        assert ops[name]([f64], p, 2).dtype == np.float64, name
        assert ops[name]([u16], p, 2).dtype == np.float32, name
        assert ops[name]([u16.astype(np.float32)], p, 2).dtype == np.float32, name
        assert ops[name]([u16.astype(np.int32)], p, 2).dtype == np.float64, name
    # unsharp_mask casts back to the input's type: a constant image is its own result only
    # where the blur and the difference kept float64.
    assert np.array_equal(ops["unsharp_mask"]([f64], p, 2), f64)
    vol = np.full((3, 4, 5), exact, dtype=np.float64)
    for name in ("mean_z_projection", "sum_z_projection", "std_z_projection"):
        assert ops[name]([vol], p, 3).dtype == np.float64, name
        assert ops[name]([vol.astype(np.int32)], p, 3).dtype == np.float64, name
        assert ops[name]([vol.astype(np.uint16)], p, 3).dtype == np.float32, name
        assert ops[name]([vol.astype(np.float32)], p, 3).dtype == np.float32, name
    assert ops["mean_z_projection"]([vol], p, 3)[0, 0] == exact


@test
def end_to_end(o, tmp):
    """suite.py --quick on a few filters: gpix on the device, the CuPy mappings on numpy."""
    if o.skip_end_to_end:
        return "skipped"
    out = os.path.join(tmp, "out")
    env = dict(os.environ, SUITE_FAKE_CUPY="1")
    r = subprocess.run(
        [
            sys.executable,
            os.path.join(HERE, "suite.py"),
            "--quick",
            "--bench-grid",
            o.bench_grid,
            "--gpix-devices",
            o.device,
            "--peers",
            "cupy",
            "--out",
            out,
            "--work",
            os.path.join(tmp, "work"),
            "--budget",
            "600",
            "--gpix-cache",
            "inherit",
            "--filters",
            "^(gaussian_blur|median_box|connected_components|maximum_z_projection|@stats)$",
            "--phases",
            "firstcall,prewarm,grid",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    res = json.load(open(os.path.join(out, "results.json")))
    g = res["impls"]["gpix-opencl"]["results"]
    cp = res["impls"]["cupy"]["results"]
    assert len(g) == len(res["cases"])
    bad = {
        k: v
        for k, v in g.items()
        # Large median windows run (radix select) but slowly on PoCL: the suite's own
        # prediction skips them, which is the suite working as designed.
        if v["status"] != "ok"
        and not (v["status"] == "skipped" and "median_box" in k and "predicted" in v.get("note", ""))
    }
    assert not bad, list(bad.items())[:3]
    assert all(v["status"] in ("ok", "skipped") for v in cp.values()), [
        v for v in cp.values() if v["status"] not in ("ok", "skipped")
    ][:3]
    assert "@stats:min+max+sum:float32:80x112" in cp
    fc = res["first_call"]["gpix-opencl"]
    assert len(fc["cold"]) == 1 and len(fc["warm"]) == 2 and "error" not in fc["cold"][0], fc
    assert fc["cold"][0]["cases"][0]["compiles"] >= 1 and fc["warm"][0]["cases"][0]["compiles"] == 0
    for f in ("results.json", "table.md", "performance.png", "raw.tar.gz"):
        assert os.path.exists(os.path.join(out, f)), f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-grid", required=True)
    ap.add_argument("--device", default="opencl:")
    ap.add_argument("--skip-end-to-end", action="store_true")
    ap.add_argument("--only", default="")
    o = ap.parse_args()
    passed = failed = 0
    for t in TESTS:
        if o.only and o.only not in t.__name__:
            continue
        tmp = tempfile.mkdtemp(prefix="gpix-suite-test-")
        try:
            if t(o, tmp) == "skipped":
                print(f"SKIP {t.__name__}", flush=True)
                continue
            print(f"PASS {t.__name__}", flush=True)
            passed += 1
        except Exception:
            print(f"FAIL {t.__name__}\n{traceback.format_exc()}", flush=True)
            failed += 1
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
