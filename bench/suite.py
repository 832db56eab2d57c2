#!/usr/bin/env python3
"""Issue 17's performance suite: gpix (CUDA and NVIDIA OpenCL, bench/bench_grid.cpp) and the
GPU peers (CuPy's cupyx.scipy.ndimage, cuCIM's cucim.skimage, pyclesperanto; bench/
suite_peers.py) timed on one grid in one run, plus first calls in new processes.

    suite.py --bench-grid PATH [--out DIR] [--work DIR] [--quick] [--budget S]
             [--gpix-devices cuda:,opencl:NVIDIA] [--peers cupy,cucim,cle] [--cle-device NVIDIA]
             [--filters REGEX] [--phases firstcall,prewarm,grid,profile] [--commit C]
             [--profile-from RESULTS.json] [--ncu PATH]
    suite.py --list [--quick]          the grid's cases, one line each

On the GPU machine: `scripts/gpu-run.sh suite` (which installs the carried wheels and passes
--bench-grid and --commit). Phases, in this order, all within --budget seconds:
  firstcall  per implementation: a new process with empty disk caches (gpix, CUDA's and NVIDIA
             OpenCL's JIT caches, CuPy's, pyclesperanto's: a fresh HOME), then two more with the
             caches it filled; each times process start -> device ready (select_device and a first
             push) and the first and second call of five common filters on 2048^2.
  prewarm    every implementation's kernels compiled into its disk cache, at small sizes, in
             parallel processes (compilation is CPU work; nothing is timed).
  grid       one implementation after another, each in its own process, every case of the grid:
             median and minimum of repeated calls after two warm-up calls, and the device copy
             of the same array in the same process (bench_grid.cpp's header says how).
  profile    (not in the default list) every case that misses issue 17's target (a memory-bound
             case over 1.5x the copy, a case slower than the best peer), taken from this run's
             grid or from --profile-from (an earlier run's results.json, whose grid the report
             then shows), run once more on gpix CUDA under Nsight Compute (ncu, one process:
             bench_grid --profile's ranges, a few counters per kernel; not timed, since ncu
             slows every call: the grid's timings stand). The report writes each case's cause
             next to its row (suite_report.cause()).
A case predicted to take more than --max-call-s per call (from the same case on the smaller
shape, or the next smaller window) is skipped and reported so; a runner that dies is restarted
with the cases left, and the case it died in is reported as crashed.

Output (--out, default $OUT or ./suite-out): results.json (everything), table.md (the table of
bench/suite_report.py), performance.png (its plot, when matplotlib is there), suite.log is the
caller's, raw.tar.gz (each runner's JSON lines and logs).
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import suite_peers  # noqa: E402  (hash noise and blobs, shared with the peers)

SHAPES = {2: [(2048, 2048), (8192, 8192)], 3: [(256, 256, 256), (512, 512, 512)]}
# --quick: tiny and not square, so that a mixed-up axis shows.
QUICK_SHAPES = {2: [(40, 56), (80, 112)], 3: [(10, 12, 14), (20, 24, 28)]}
PREWARM_SHAPES = {2: (256, 256), 3: (32, 32, 32)}
QUICK_PREWARM_SHAPES = {2: (24, 32), 3: (8, 10, 12)}
FIRST_CALL_SHAPE, QUICK_FIRST_CALL_SHAPE = (2048, 2048), (64, 64)
RADII = [1, 2, 3, 5, 7]
SIGMAS = [1, 2, 5, 10]
# Each implementation's share of the grid phase's time (what one leaves goes to the next).
WEIGHTS = {"gpix-cuda": 1.0, "gpix-opencl": 1.0, "cupy": 1.2, "cucim": 0.9, "cle": 1.2}

# ---------------------------------------------------------------------------------------------
# The grid.


def xyz(nd, **axes):
    """{name_x: v, name_y: v[, name_z: v]} for 2D / 3D from name=v."""
    out = {}
    for name, v in axes.items():
        out[f"{name}_x"] = v
        out[f"{name}_y"] = v
        out[f"{name}_z"] = v if nd == 3 else 0
    return out


def radius_variants(radii, work="volume"):
    """(label, params(nd, shape, dtype), work(nd)) per radius of a box filter."""
    return [
        (
            f"r{r}",
            lambda nd, s, t, r=r: xyz(nd, radius=r),
            (
                (lambda nd, r=r: (2 * r + 1) ** nd)
                if work == "volume"
                else (lambda nd, r=r: 2 * r + 1)
            ),
        )
        for r in radii
    ]


def sigma_variants(sigmas):
    return [
        (f"s{s:g}", lambda nd, sh, t, s=s: xyz(nd, sigma=s), lambda nd, s=s: 8 * s + 1)
        for s in sigmas
    ]


def one(label="", params=None):
    return [(label, lambda nd, s, t: dict(params or {}), None)]


def affine_rotation(nd, shape, t, degrees=10.0):
    """A rotation by `degrees` about the z axis through the image centre, linear."""
    c, s = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    cy, cx = (shape[-2] - 1) / 2, (shape[-1] - 1) / 2
    return {
        "m00": c,
        "m01": -s,
        "m03": cx - c * cx + s * cy,
        "m10": s,
        "m11": c,
        "m13": cy - s * cx - c * cy,
        "interpolation": "linear",
    }


def crop_half(nd, shape, t):
    names = ["z", "y", "x"][3 - nd :]
    p = {}
    for a, n in zip(names, shape):
        p[f"origin_{a}"], p[f"size_{a}"] = n // 4, n // 2
    return p


F32, U16, U8 = "float32", "uint16", "uint8"
NB, MO, SE, PW, GE, PR, RE = GROUPS_ = (
    "neighbourhood",
    "morphology",
    "segmentation",
    "pointwise",
    "geometry",
    "projections",
    "reductions",
)
N, N2, B, BI = ["noise"], ["noise", "noise2"], ["blob"], ["blobimg"]


def binary_variants(radii):
    return [
        (
            f"r{r}",
            lambda nd, s, t, r=r: {"radius": r, "connectivity": "box"},
            lambda nd, r=r: (2 * r + 1) ** nd,
        )
        for r in radii
    ]


def pairs(label, key, values):
    """(label, params, work) per value of one parameter that sets the window (work ~ width)."""
    return [
        (
            label.format(*v) if isinstance(v, tuple) else label.format(v),
            lambda nd, s, t, v=v: dict(zip(key, v if isinstance(v, tuple) else (v,))),
            lambda nd, v=v: 8 * (v[-1] if isinstance(v, tuple) else v) + 1,
        )
        for v in values
    ]


def is_float(dtype):
    return dtype.startswith("float")


def by_dtype(label, f):
    return [(label, lambda nd, s, t: f(t), None)]


# (filter, group, dtypes in 2D, dtypes in 3D, inputs, variants). The grid of issue 17: every
# catalog filter with a peer counterpart; windows of radius 1, 2, 3, 5, 7 (and 15 for the means;
# the composite filters top/bottom hat, opening and closing at 1, 3, 7); sigmas 1, 2, 5, 10;
# float32 everywhere, uint16 (and uint8 for medians) where the filter is used on camera data.
# fmt: off
FAMILIES = [
    ("gaussian_blur", NB, [F32, U16], [F32, U16], N, sigma_variants(SIGMAS)),
    ("mean_box", NB, [F32, U16], [F32, U16], N, radius_variants(RADII + [15], "width")),
    ("minimum_box", NB, [F32, U16], [F32, U16], N, radius_variants(RADII, "width")),
    ("maximum_box", NB, [F32], [F32], N, radius_variants(RADII, "width")),
    ("median_box", NB, [F32, U16, U8], [F32, U16], N, radius_variants(RADII)),
    ("variance_box", NB, [F32], [F32], N, radius_variants(RADII)),
    ("top_hat_box", NB, [F32], [F32], N, radius_variants([1, 3, 7], "width")),
    ("bottom_hat_box", NB, [F32], [F32], N, radius_variants([1, 3, 7], "width")),
    ("sobel", NB, [F32, U16], [F32, U16], N, one()),
    ("laplace", NB, [F32], [F32], N, one()),
    ("gradient_x", NB, [F32], [F32], N, one()),
    ("gradient_y", NB, [F32], [F32], N, one()),
    ("gradient_z", NB, [], [F32], N, one()),
    ("difference_of_gaussian", NB, [F32], [F32], N,
     pairs("s{}-{}", ("sigma1", "sigma2"), [(1, 2), (2, 5), (5, 10)])),
    ("unsharp_mask", NB, [F32, U16], [F32, U16], N,
     [(lab, lambda nd, s, t, p=p: dict(p(nd, s, t), amount=1), w)
      for lab, p, w in pairs("s{}", ("sigma",), SIGMAS)]),
    ("threshold", SE, [F32, U16], [F32, U16], N,
     by_dtype("", lambda t: {"value": 500 if is_float(t) else 32768})),
    ("threshold_otsu", SE, [F32, U16], [F32, U16], BI, one("blobs")),
    ("binary_erosion", MO, [U8], [U8], B, binary_variants(RADII)),
    ("binary_dilation", MO, [U8], [U8], B, binary_variants(RADII)),
    ("binary_opening", MO, [U8], [U8], B, binary_variants([1, 3, 7])),
    ("binary_closing", MO, [U8], [U8], B, binary_variants([1, 3, 7])),
    ("binary_and", PW, [U8], [U8], ["blob", "noise"], one()),
    ("binary_not", PW, [U8], [U8], B, one()),
    ("connected_components", SE, [U8], [U8], B,
     [(c, lambda nd, s, t, c=c: {"connectivity": c}, None) for c in ["face", "full"]]),
    ("relabel_sequential", SE, ["uint32"], ["uint32"], ["sparse_labels"], one("blobs")),
    ("label_statistics", SE, [F32], [F32], ["labels", "blobimg"], one("blobs")),
    ("voronoi_otsu_labeling", SE, [F32], [F32], BI,
     one("s2-2", {"spot_sigma": 2, "outline_sigma": 2})),
    ("add_images", PW, [F32], [F32], N2, one()),
    ("subtract_images", PW, [F32], [F32], N2, one()),
    ("multiply_images", PW, [F32], [F32], N2, one()),
    ("divide_images", PW, [F32], [F32], N2, one()),
    ("minimum_images", PW, [F32], [F32], N2, one()),
    ("maximum_images", PW, [F32], [F32], N2, one()),
    ("add_scalar", PW, [F32], [F32], N, one("", {"value": 1})),
    ("multiply_scalar", PW, [F32, U16], [F32], N, one("", {"factor": 2})),
    ("absolute", PW, [F32], [F32], N, one()),
    ("power", PW, [F32], [F32], N, one("", {"exponent": 2})),
    ("sqrt", PW, [F32], [F32], N, one()),
    ("exp", PW, [F32], [F32], N, one()),
    ("log", PW, [F32], [F32], N, one()),
    ("clip", PW, [F32], [F32], N, one("", {"minimum": 100, "maximum": 900})),
    ("invert", PW, [F32, U16], [F32], N, one()),
    ("rescale_intensity", PW, [F32, U16], [F32, U16], N, one("", {"out_min": 0, "out_max": 1})),
    ("convert", PW, [F32, U16], [F32, U16], N,
     by_dtype("", lambda t: {"dtype": "uint16" if is_float(t) else "float32"})),
    ("crop", GE, [F32], [F32], N, [("half", crop_half, None)]),
    ("flip", GE, [F32], [F32], N,
     one("x", {"flip_x": "true", "flip_y": "false", "flip_z": "false"})),
    ("transpose", GE, [F32], [F32], N, one("xy", {"axes": "xy"})),
    ("resample", GE, [F32], [F32], N,
     [("x2", lambda nd, s, t: {"factor_x": 2, "factor_y": 2, "factor_z": 2 if nd == 3 else 1,
                               "interpolation": "linear"}, None)]),
    ("affine_transform", GE, [F32], [F32], N, [("rot10", affine_rotation, None)]),
    ("maximum_z_projection", PR, [], [F32, U16], N, one()),
    ("minimum_z_projection", PR, [], [F32], N, one()),
    ("mean_z_projection", PR, [], [F32, U16], N, one()),
    ("sum_z_projection", PR, [], [F32, U16], N, one()),
    ("std_z_projection", PR, [], [F32], N, one()),
    ("minimum_of_all_pixels", RE, [F32], [F32], N, one()),
    ("maximum_of_all_pixels", RE, [F32, U16], [F32, U16], N, one()),
    ("sum_of_all_pixels", RE, [F32], [F32], N, one()),
    ("mean_of_all_pixels", RE, [F32], [F32], N, one()),
    ("std_of_all_pixels", RE, [F32], [F32], N, one()),
    # gpix::stats (min, max, sum in one pass), not a catalog entry.
    ("@stats", RE, [F32, U16], [F32, U16], N, one("min+max+sum")),
    ("histogram", RE, [F32, U16], [F32, U16], N,
     by_dtype("256", lambda t: {"n_bins": 256, "minimum": 0,
                                "maximum": 1000 if is_float(t) else 0})),
]
# fmt: on
GROUPS = list(GROUPS_)


def shape_str(shape):
    return "x".join(str(d) for d in shape)


def case_id(filt, label, dtype, shape):
    return f"{filt}:{label}:{dtype}:{shape_str(shape)}"


def fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if not v.is_integer() else str(int(v))
    return str(v)


def parse_shapes(text):
    """--shapes: '2:AxB,CxD;3:AxBxC,DxExF' -> {2: [(A, B), (C, D)], 3: [...]}, the grid's form
    (two shapes per dimensionality, the smaller first: it predicts the larger's times)."""
    shapes = {}
    for part in filter(None, text.split(";")):
        nd, _, items = part.partition(":")
        nd = int(nd)
        got = [tuple(int(v) for v in item.split("x")) for item in items.split(",")]
        if nd not in (2, 3) or len(got) != 2 or any(len(s) != nd for s in got):
            raise SystemExit(f"--shapes: '{part}' is not '{nd}:' and two {nd}D shapes like AxB")
        shapes[nd] = sorted(got, key=math.prod)
    if set(shapes) != {2, 3}:
        raise SystemExit("--shapes needs both '2:' and '3:' (two shapes each)")
    return shapes


# The element types that hash noise (suite_peers.hash_noise, bench_grid's noise) comes in.
NOISE_DTYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "float64")


def parse_dtypes(text):
    """--dtypes: 'float32=float64,uint16=int16' -> {'float32': 'float64', 'uint16': 'int16'}:
    the grid's noise cases in other element types (blob images, masks and labels keep theirs)."""
    out = {}
    for item in filter(None, text.split(",")):
        a, _, b = item.partition("=")
        if a not in (F32, U16, U8) or b not in NOISE_DTYPES:
            raise SystemExit(
                f"--dtypes: '{item}' is not GRID=OTHER with GRID one of float32, uint16, uint8 "
                f"and OTHER one of {', '.join(NOISE_DTYPES)}"
            )
        out[a] = b
    return out


def grid(shapes, filters=None, dtypes=None):
    """The cases, small shapes first (2D, 3D), then the large ones, each with its predictor:
    the same case on the smaller shape (factor: the ratio of pixels), or on the smaller shape
    the previous window of the same filter (factor: the ratio of the window's work), or for the
    first of such a chain in 3D the same case in 2D (both ratios). `dtypes` (parse_dtypes) maps
    the element types of the filters that read noise only; a mapping that gives a filter one
    type twice keeps it once."""
    rx = re.compile(filters) if filters else None

    def mapped(types, inputs):
        if not dtypes or not set(inputs) <= {"noise", "noise2"}:
            return types
        return list(dict.fromkeys(dtypes.get(t, t) for t in types))

    cases = []
    order = [(2, 0), (3, 0), (2, 1), (3, 1)]
    for nd, k in order:
        shape = shapes[nd][k]
        for filt, group, d2, d3, inputs, variants in FAMILIES:
            if rx and not rx.search(filt):
                continue
            m2, m3 = mapped(d2, inputs), mapped(d3, inputs)
            for dtype in (m2 if nd == 2 else m3):
                prev = None
                for label, params, work in variants:
                    cid = case_id(filt, label, dtype, shape)
                    frm, factor = "-", 1.0
                    if k == 1:
                        frm = case_id(filt, label, dtype, shapes[nd][0])
                        factor = math.prod(shape) / math.prod(shapes[nd][0])
                    elif prev is not None and work is not None:
                        frm, factor = prev[0], work(nd) / prev[1]
                    elif nd == 3 and dtype in m2:
                        # The first of its chain in 3D: from the same case in 2D.
                        frm = case_id(filt, label, dtype, shapes[2][0])
                        factor = (
                            math.prod(shape)
                            / math.prod(shapes[2][0])
                            * (work(3) / work(2) if work is not None else 1.0)
                        )
                    cases.append(
                        dict(
                            id=cid,
                            filter=filt,
                            group=group,
                            label=label,
                            shape=list(shape),
                            dtype=dtype,
                            inputs=inputs,
                            params={a: fmt(b) for a, b in params(nd, shape, dtype).items()},
                            **{"from": frm},
                            factor=factor,
                        )
                    )
                    prev = (cid, work(nd)) if work is not None else None
    return cases


def prewarm_cases(cases, shapes):
    """One case per (filter, variant, dtype, dims) at the prewarm shape (compiles, not time)."""
    seen, out = set(), []
    for c in cases:
        nd = len(c["shape"])
        key = (c["filter"], c["label"], c["dtype"], nd)
        if key in seen:
            continue
        seen.add(key)
        shape = shapes[nd]
        fam = next(f for f in FAMILIES if f[0] == c["filter"])
        params = next(p for lab, p, _ in fam[5] if lab == c["label"])
        out.append(
            dict(
                c,
                id=case_id(c["filter"], c["label"], c["dtype"], shape),
                shape=list(shape),
                params={a: fmt(b) for a, b in params(nd, shape, c["dtype"]).items()},
                **{"from": "-"},
                factor=1.0,
            )
        )
    return out


def first_call_cases(shape):
    """Five common filters, each as a user's first call (2D float32; CCL on the blob image)."""
    sel = [
        ("gaussian_blur", "s2", F32),
        ("mean_box", "r1", F32),
        ("median_box", "r1", F32),
        ("threshold_otsu", "blobs", F32),
        ("connected_components", "full", U8),
    ]
    out = []
    for filt, label, dtype in sel:
        fam = next(f for f in FAMILIES if f[0] == filt)
        params = next(p for lab, p, _ in fam[5] if lab == label)
        out.append(
            dict(
                id=case_id(filt, label, dtype, shape),
                filter=filt,
                group=fam[1],
                label=label,
                shape=list(shape),
                dtype=dtype,
                inputs=fam[4],
                params={a: fmt(b) for a, b in params(2, shape, dtype).items()},
                **{"from": "-"},
                factor=1.0,
            )
        )
    return out


def shard(cases, k, n):
    """The k-th of n parts, whole filters each (a case's predictor stays in its part), the
    filters dealt round robin in the grid's order; the cases keep their order."""
    filters = list(dict.fromkeys(c["filter"] for c in cases))
    mine = set(filters[k::n])
    return [c for c in cases if c["filter"] in mine]


def write_cases(cases, base):
    """base.tsv for bench_grid, base.json for suite_peers.py."""
    with open(base + ".tsv", "w") as f:
        f.write("# id\tfilter\tshape\tdtype\tinputs\tparams\tfrom\tfactor\n")
        for c in cases:
            f.write(
                "\t".join(
                    [
                        c["id"],
                        c["filter"],
                        shape_str(c["shape"]),
                        c["dtype"],
                        ",".join(c["inputs"]),
                        ",".join(f"{k}={v}" for k, v in c["params"].items()),
                        c["from"],
                        repr(c["factor"]),
                    ]
                )
                + "\n"
            )
    with open(base + ".json", "w") as f:
        json.dump(cases, f)


# ---------------------------------------------------------------------------------------------
# Data: the blob images every implementation reads.


# Blob images up to this many pixels are made on the host: CuPy's first use compiles its kernels
# (15-20 s for the first 32^3 shape on an H200 machine, 2026-12-02), which took the whole time of
# a first-call-only run; scipy makes a 256^3 one in about 2.5 s.
HOST_DATA_MAX = 1 << 24


def make_data(shapes, data_dir, log):
    import numpy
    import scipy.ndimage

    host = (numpy, scipy.ndimage, lambda a: a)
    gpu = None  # CuPy's, imported at the first shape that needs it (the host's without CuPy)
    os.makedirs(data_dir, exist_ok=True)
    for shape in shapes:
        if math.prod(shape) > HOST_DATA_MAX and gpu is None:
            try:
                import cupy
                import cupyx.scipy.ndimage

                gpu = (cupy, cupyx.scipy.ndimage, cupy.asnumpy)
            except ImportError:
                gpu = host
        xp, ndi, to_host = host if math.prod(shape) <= HOST_DATA_MAX else gpu
        key = shape_str(shape)
        b, i = os.path.join(data_dir, f"blob_{key}.u8"), os.path.join(
            data_dir, f"blobimg_{key}.f32"
        )
        if os.path.exists(b) and os.path.exists(i):
            continue
        t = time.time()
        blob, img = suite_peers.make_blobs(xp, ndi, tuple(shape))
        to_host(blob).tofile(b)
        to_host(img).tofile(i)
        log(f"data {key}: {float(blob.mean()) * 100:.1f}% foreground, {time.time() - t:.1f} s")
        del blob, img
    if gpu is not None and gpu[0].__name__ == "cupy":
        gpu[0].get_default_memory_pool().free_all_blocks()


# ---------------------------------------------------------------------------------------------
# Running the implementations.


class Impl:
    def __init__(self, name, cmd, env, case_format):
        self.name, self.cmd, self.env, self.case_format = name, cmd, env, case_format


def last_line(text):
    """The last non-empty line of a program's output (a Python traceback's exception)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no output)"


def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass
    return out


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()


def run_impl(impl, cases, work, deadline, opts, log, prewarm=False, suffix=""):
    """Runs impl over cases until done or deadline, restarting it after a crash; returns the
    JSON lines it wrote plus a line for the case it died in."""
    tag = f"{impl.name}{'-prewarm' if prewarm else ''}{suffix}"
    out = os.path.join(work, f"{tag}.jsonl")
    logf = open(os.path.join(work, f"{tag}.log"), "a")
    extra = []
    remaining = list(cases)
    for attempt in range(6):
        if not remaining or time.time() > deadline:
            break
        base = os.path.join(work, f"{tag}-cases{attempt}")
        write_cases(remaining, base)
        cmd = impl.cmd + [
            "--cases",
            base + impl.case_format,
            "--json",
            out,
            "--deadline",
            f"{deadline:.3f}",
            # Prewarm times include compiling: its predictions are looser.
            "--max-call-s",
            str(opts.max_call_s * (4 if prewarm else 1)),
            "--max-reps",
            str(opts.max_reps),
            "--min-reps",
            str(opts.min_reps),
            "--target-ms",
            str(opts.target_ms),
            "--case-timeout-s",
            str(opts.case_timeout_s),
        ]
        if prewarm:
            cmd.append("--prewarm")
        p = subprocess.Popen(
            cmd, env=impl.env, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc = p.wait(timeout=max(1.0, deadline - time.time()) + 30)
        except subprocess.TimeoutExpired:
            kill_group(p)
            rc = "timeout"
        lines = read_jsonl(out)
        done = {r["id"] for r in lines if "id" in r} | {r["id"] for r in extra}
        if rc == 0:
            break
        started = [r["start"] for r in lines if "start" in r]
        culprit = next((s for s in reversed(started) if s not in done), None)
        log(f"{tag}: runner ended with {rc}" + (f" in {culprit}" if culprit else ""))
        if not culprit:
            break  # it died outside any case (e.g. its import failed): trying again will not help
        if culprit:
            if rc in ("timeout", 124):
                why = (
                    f"took longer than {opts.case_timeout_s:g} s"
                    if rc == 124
                    else "the runner was still in this case at its deadline"
                )
                extra.append(dict(id=culprit, status="timeout", note=why))
            else:
                extra.append(
                    dict(
                        id=culprit,
                        status="crashed",
                        note=f"the runner exited with {rc} in this case",
                    )
                )
            done.add(culprit)
        remaining = [c for c in remaining if c["id"] not in done]
    logf.close()
    return read_jsonl(out) + extra


def collect(lines):
    """header, copies, results of one implementation's JSON lines."""
    header, copies, results = {}, {}, {}
    for r in lines:
        if "header" in r:
            header = r["header"]
        elif "copy" in r and "id" not in r:
            copies[r["copy"]] = r
        elif "id" in r:
            results[r["id"]] = r
    return header, copies, results


def first_call_phase(impls, cases, work, data, deadline, quick, log):
    """Cold (fresh caches) then two warm runs of each implementation's first calls.

    Each implementation first makes one cold run that is not recorded, with caches of its own
    that are then thrown away: it leaves nothing but the operating system's page cache warm
    for the libraries it loads. Without it the first implementation to load NVIDIA's OpenCL
    compiler from disk paid for every later one (gpix's first OpenCL build in a process took
    284 ms against 75 once the compiler was read, bench/RESULTS.md 2026-11-28), and which one
    that was depended on the order of --gpix-devices and --peers."""
    base = os.path.join(work, "firstcall-cases")
    write_cases(cases, base)
    out = {}
    runs = [("discard", -1), ("cold", 0), ("warm", 1), ("warm", 2)]
    def fresh_env(impl, home):
        shutil.rmtree(home, ignore_errors=True)
        for sub in ("gpix", "nv", "cupy", "home", "xdg"):
            os.makedirs(os.path.join(home, sub))
        return dict(
            impl.env,
            # First calls are where tiered compilation acts: the caller's setting (by default
            # none: the library's), not the grid's GPIX_TIERED_COMPILE=0.
            GPIX_TIERED_COMPILE=os.environ.get("GPIX_TIERED_COMPILE", ""),
            GPIX_CACHE_DIR=os.path.join(home, "gpix"),
            CUDA_CACHE_PATH=os.path.join(home, "nv"),
            CUPY_CACHE_DIR=os.path.join(home, "cupy"),
            HOME=os.path.join(home, "home"),
            XDG_CACHE_HOME=os.path.join(home, "xdg"),
        )

    for impl in impls:
        home = os.path.join(work, f"firstcall-{impl.name}")
        res = {"cold": [], "warm": []}
        for kind, k in runs:
            if time.time() > deadline:
                log(f"firstcall {impl.name}: time budget")
                break
            # The discarded run's caches go with it; the recorded cold run starts empty.
            env = fresh_env(impl, home) if k <= 0 else env
            jl = os.path.join(work, f"firstcall-{impl.name}-{k}.jsonl")
            cmd = impl.cmd + ["--cases", base + impl.case_format, "--json", jl, "--first-call"]
            spawn = time.time()
            try:
                p = subprocess.run(
                    cmd,
                    env=env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    timeout=max(1.0, deadline - time.time()) + 20,
                )
                rc, text = p.returncode, p.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired:
                rc, text = "timeout", ""
            lines = read_jsonl(jl)
            if kind == "discard":
                if rc != 0 or not lines:
                    log(f"firstcall {impl.name} (page-cache warm-up): failed ({rc})")
                continue
            if rc != 0 or not lines:
                res[kind].append(dict(error=f"exit {rc}: {last_line(text)}"))
                log(f"firstcall {impl.name} {kind}: failed ({rc}) {last_line(text)}")
                continue
            r = lines[-1]
            gen_ms = r.get("gen_ms", 0)
            r["start_to_ready_ms"] = (r["ready_us"] * 1e-3 - spawn * 1e3) - gen_ms
            r["spawn_us"] = int(spawn * 1e6)
            res[kind].append(r)
        out[impl.name] = res
    return out


# ---------------------------------------------------------------------------------------------
# The profile phase: why a case misses its target.

# Per kernel: its time, the DRAM bytes it moved, how busy DRAM, L2 and the issue slots were, and
# the warps it kept resident (ncu's names; "issue slots busy" is sm__inst_issued's share).
PROFILE_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__inst_issued.avg.pct_of_peak_sustained_active",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__grid_size",
    "launch__registers_per_thread",
)


def ncu_path():
    for p in (shutil.which("ncu"), "/usr/local/cuda/bin/ncu"):
        if p and os.path.exists(p):
            return p
    return None


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_ncu_csv(path, names):
    """ncu's --csv --page raw log: {range name: [kernel rows]} for the names given (the case
    ids and "copy:SHAPE/DTYPE"), each row {kernel, metric: value}, in launch order. A kernel's
    range is found in the NVTX column (any cell naming one of the ranges, the longest name
    winning, so that an id that is a prefix of another cannot take its kernels)."""
    import csv

    rows = []
    with open(path, newline="") as f:
        for line in f:
            if line.startswith('"'):
                rows.append(line)
    table = list(csv.reader(rows))
    if not table:
        return {}
    head = table[0]
    col = {h: k for k, h in enumerate(head)}
    kname = col.get("Kernel Name")
    by_len = sorted(names, key=len, reverse=True)
    out = {}
    for r in table[1:]:
        if kname is None or len(r) != len(head) or not r[col.get("ID", 0)].strip():
            continue  # the units row, or a malformed one
        blob = "\x1f".join(r)
        owner = next((n for n in by_len if n in blob), None)
        if owner is None:
            continue
        k = dict(kernel=r[kname])
        for m in PROFILE_METRICS:
            if m in col:
                k[m] = number(r[col[m]])
        out.setdefault(owner, []).append(k)
    return out


def profile_phase(results, bench_grid, data, work, deadline, o, log, env):
    """Runs the cases that miss their targets once more on gpix CUDA under ncu (not timed: ncu
    slows every API call; the grid's timings stand), with the grid's environment env; returns
    results["profile"]."""
    import suite_report

    cases = [c for c in results["cases"] if suite_report.over_target(results, c)]
    ncu = o.ncu or ncu_path()
    prof = dict(
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        commit=o.commit,
        metrics=list(PROFILE_METRICS),
        cases={},
    )
    if not cases:
        return prof
    if not ncu:
        prof["error"] = "ncu not found (PATH, /usr/local/cuda/bin)"
        return prof
    base = os.path.join(work, "profile-cases")
    write_cases(cases, base)
    csv_path = os.path.join(work, "profile-ncu.csv")
    jsonl = os.path.join(work, "profile.jsonl")
    cmd = [
        ncu,
        "--profile-from-start",
        "off",
        "--nvtx",
        # The clocks the timed runs had (ncu locks them to base by default), and their caches:
        # by default ncu flushes them before each kernel, so a kernel whose data sits in L2
        # when it is timed (a reduction's partials) reads it from DRAM instead.
        "--clock-control",
        "none",
        "--cache-control",
        "none",
        "--csv",
        "--page",
        "raw",
        "--metrics",
        ",".join(PROFILE_METRICS),
        "--log-file",
        csv_path,
        bench_grid,
        "--device",
        "cuda:",
        "--data",
        data,
        "--cases",
        base + ".tsv",
        "--json",
        jsonl,
        "--profile",
        "--deadline",
        f"{deadline:.3f}",
        "--max-call-s",
        str(o.max_call_s),
        "--max-reps",
        str(o.max_reps),
        "--min-reps",
        str(o.min_reps),
        "--target-ms",
        str(o.target_ms),
        "--case-timeout-s",
        str(4 * o.case_timeout_s),
    ]
    log(f"profile: {len(cases)} cases under {ncu}")
    with open(os.path.join(work, "profile.log"), "w") as logf:
        p = subprocess.Popen(
            cmd, env=env, stdout=logf, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            rc = p.wait(timeout=max(1.0, deadline - time.time()) + 30)
        except subprocess.TimeoutExpired:
            kill_group(p)
            rc = "timeout"
    prof["rc"] = rc
    header, _, res = collect(read_jsonl(jsonl))
    copy_keys = sorted({r["copy"] for r in res.values() if r.get("copy")})
    names = [c["id"] for c in cases] + ["copy:" + k for k in copy_keys]
    kernels = parse_ncu_csv(csv_path, names) if os.path.exists(csv_path) else {}
    prof["device"] = header.get("device", "")
    for c in cases:
        r = res.get(c["id"])
        if not r or r.get("status") != "ok":
            continue
        prof["cases"][c["id"]] = dict(
            kernels=kernels.get(c["id"], []),
            copy_kernels=kernels.get("copy:" + r.get("copy", ""), []),
        )
    n_k = sum(1 for v in prof["cases"].values() if v["kernels"])
    log(f"profile: {len(prof['cases'])} cases run, {n_k} with ncu's kernels (exit {rc})")
    if not n_k:
        prof["error"] = last_line(open(os.path.join(work, "profile.log")).read()) or "no kernels"
    return prof


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench-grid", help="the bench_grid program (gpix)")
    ap.add_argument("--out", default=os.environ.get("OUT") or "suite-out")
    ap.add_argument(
        "--work",
        default="",
        help="scratch (data, caches, raw lines); default /dev/shm/gpix-suite or /tmp",
    )
    ap.add_argument(
        "--quick", action="store_true", help="tiny shapes and few repetitions (a smoke test)"
    )
    ap.add_argument("--budget", type=float, default=420, help="seconds for all phases together")
    ap.add_argument(
        "--gpix-devices",
        default="cuda:,opencl:NVIDIA",
        help="gpix devices, comma-separated (empty: none)",
    )
    ap.add_argument(
        "--peers", default="cupy,cucim,cle", help="peers, comma-separated (empty: none)"
    )
    ap.add_argument(
        "--cle-device", default="NVIDIA", help="pyclesperanto's device (part of its name)"
    )
    ap.add_argument("--filters", default="", help="only filters whose name matches this regex")
    ap.add_argument(
        "--shapes",
        default="",
        help="other shapes than the grid's, two per dimensionality (the smaller predicts the "
        "larger's times): "
        "'2:1999x2047,3001x4099;3:64x512x512,97x301x263' (checks that a win holds off the grid)",
    )
    ap.add_argument(
        "--dtypes",
        default="",
        help="other element types for the grid's noise cases: 'float32=float64,uint16=int16' "
        "(checks that a win holds for the types a user's data come in)",
    )
    ap.add_argument("--phases", default="firstcall,prewarm,grid")
    ap.add_argument(
        "--max-call-s",
        type=float,
        default=1.0,
        help="skip a case predicted to take longer per call",
    )
    ap.add_argument(
        "--case-timeout-s",
        type=float,
        default=30,
        help="a case running longer ends its runner (reported as timeout)",
    )
    ap.add_argument(
        "--gpix-cache",
        default="",
        help="gpix's disk cache for prewarm and grid (default: a fresh one under --work; "
        "'inherit': the environment's)",
    )
    ap.add_argument("--max-reps", type=int, default=15)
    ap.add_argument("--min-reps", type=int, default=3)
    ap.add_argument("--target-ms", type=float, default=200)
    ap.add_argument("--prewarm-shards", type=int, default=3)
    ap.add_argument(
        "--prewarm-real",
        default="cle",
        help="implementations prewarmed on the grid's own shapes (pyclesperanto "
        "compiles a program per image size); the others on small shapes",
    )
    ap.add_argument("--commit", default="")
    ap.add_argument(
        "--profile-from",
        default="",
        help="profile phase: the cases over target in this earlier results.json (default: "
        "this run's grid)",
    )
    ap.add_argument("--ncu", default="", help="Nsight Compute's CLI (default: PATH, CUDA's bin)")
    ap.add_argument("--list", action="store_true", help="print the grid's cases and exit")
    o = ap.parse_args(argv)
    if o.quick:
        o.max_reps, o.min_reps, o.target_ms = (
            min(o.max_reps, 3),
            min(o.min_reps, 2),
            min(o.target_ms, 20),
        )
    shapes = parse_shapes(o.shapes) if o.shapes else QUICK_SHAPES if o.quick else SHAPES
    cases = grid(shapes, o.filters, parse_dtypes(o.dtypes))
    if o.list:
        for c in cases:
            print(c["id"], json.dumps(c["params"]), "<-", c["from"], f"x{c['factor']:.3g}")
        print(f"{len(cases)} cases")
        return 0
    t0 = time.time()
    deadline = t0 + o.budget
    os.makedirs(o.out, exist_ok=True)
    work = o.work or default_work()
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)

    def log(msg):
        print(f"[{time.time() - t0:6.1f} s] {msg}", flush=True)

    phases = set(filter(None, o.phases.split(",")))
    pre_shapes = QUICK_PREWARM_SHAPES if o.quick else PREWARM_SHAPES
    fc_shape = QUICK_FIRST_CALL_SHAPE if o.quick else FIRST_CALL_SHAPE
    # Only the data the chosen phases read (the prewarm reads the grid's shapes too, for the
    # implementations prewarmed there).
    need = set()
    if phases & {"grid", "profile"} or "prewarm" in phases and o.prewarm_real:
        need = {
            tuple(c["shape"])
            for c in cases
            if set(c["inputs"]) & {"blob", "blobimg", "labels", "sparse_labels"}
        }
    if "prewarm" in phases:
        need |= {tuple(pre_shapes[2]), tuple(pre_shapes[3])}
    if "firstcall" in phases:
        need.add(tuple(fc_shape))
    data = os.path.join(work, "data")
    make_data(sorted(need, key=math.prod), data, log)

    # The implementations.
    env = dict(os.environ, MPLCONFIGDIR=os.path.join(work, "mpl"), PYTHONUNBUFFERED="1")
    grid_env = dict(env, CUPY_CACHE_DIR=os.path.join(work, "cupy-cache"))
    if o.gpix_cache != "inherit":
        grid_env["GPIX_CACHE_DIR"] = o.gpix_cache or os.path.join(work, "gpix-cache")
    impls = []
    # The grid times kernels in their steady state: the fast programs built in the prewarm,
    # never the plain tier that serves while a fast one compiles (GPIX_TIERED_COMPILE=0:
    # otherwise a case could time the plain kernel until its fast one's background build,
    # which waits for a quiet compiler, came in; first_call_phase gives tiers back). The
    # profile phase runs with the same environment.
    gpix_env = dict(grid_env, GPIX_TIERED_COMPILE="0")
    for dev in filter(None, o.gpix_devices.split(",")):
        if not o.bench_grid:
            ap.error("--bench-grid is needed for gpix devices")
        name = "gpix-" + (
            "cuda" if dev.startswith("cuda") else "opencl" if dev.startswith("opencl") else dev
        )
        impls.append(Impl(name, [o.bench_grid, "--device", dev, "--data", data], gpix_env, ".tsv"))
    for peer in filter(None, o.peers.split(",")):
        impls.append(
            Impl(
                peer,
                [
                    sys.executable,
                    os.path.join(HERE, "suite_peers.py"),
                    "--peer",
                    peer,
                    "--data",
                    data,
                    "--cle-device",
                    o.cle_device,
                ],
                grid_env,
                ".json",
            )
        )

    results = dict(
        meta=dict(
            date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t0)),
            commit=o.commit,
            python=sys.version.split()[0],
            quick=o.quick,
            budget_s=o.budget,
            max_call_s=o.max_call_s,
            reps=dict(min=o.min_reps, max=o.max_reps, target_ms=o.target_ms),
            shapes={str(k): [shape_str(s) for s in v] for k, v in shapes.items()},
            gpu=gpu_name(),
        ),
        cases=cases,
        impls={},
        first_call={},
        phases={},
    )

    fc_cases = [
        c for c in first_call_cases(fc_shape) if not o.filters or re.search(o.filters, c["filter"])
    ]
    if "firstcall" in phases and fc_cases:
        t = time.time()
        results["first_call"] = first_call_phase(
            impls,
            fc_cases,
            work,
            data,
            # Its share of the budget, or all that is left when no phase follows it.
            min(deadline, t + (0.15 if o.quick else 0.12) * o.budget)
            if phases - {"firstcall"}
            else deadline,
            o.quick,
            log,
        )
        results["first_call_cases"] = fc_cases
        results["phases"]["firstcall"] = time.time() - t
        log(f"firstcall done ({time.time() - t:.1f} s)")

    if "prewarm" in phases:
        t = time.time()
        pre = prewarm_cases(cases, pre_shapes)
        real = set(o.prewarm_real.split(","))
        pdl = (
            min(deadline, t + (0.3 if o.quick else 0.22) * o.budget)
            if phases & {"grid", "profile"}
            else deadline
        )
        procs = []
        import threading

        for impl in impls:
            shards = o.prewarm_shards if not o.quick else 1
            todo = cases if impl.name in real else pre
            for k in range(shards):
                part = shard(todo, k, shards)
                th = threading.Thread(
                    target=run_impl, args=(impl, part, work, pdl, o, log, True, f"-{k}")
                )
                th.start()
                procs.append(th)
        for th in procs:
            th.join()
        results["phases"]["prewarm"] = time.time() - t
        log(
            f"prewarm done ({time.time() - t:.1f} s; {len(pre)} cases on small shapes, "
            f"{len(cases)} on the grid's for {','.join(sorted(real))})"
        )

    if "grid" in phases:
        names = [i.name for i in impls]
        for k, impl in enumerate(impls):
            t = time.time()
            share = WEIGHTS.get(impl.name, 1.0) / sum(WEIGHTS.get(n, 1.0) for n in names[k:])
            idl = t + max(0.0, deadline - t) * share
            lines = run_impl(impl, cases, work, idl, o, log)
            header, copies, res = collect(lines)
            maps = set(header.get("maps", [])) if impl.name in ("cupy", "cucim", "cle") else None
            for c in cases:
                if c["id"] not in res and (maps is None or c["filter"] in maps):
                    res[c["id"]] = dict(
                        id=c["id"], status="skipped", note="not reached (time budget)"
                    )
            results["impls"][impl.name] = dict(header=header, copies=copies, results=res)
            if not header:
                log_path = os.path.join(work, f"{impl.name}.log")
                results["impls"][impl.name]["error"] = last_line(
                    open(log_path).read() if os.path.exists(log_path) else "no log"
                )
            results["phases"][impl.name] = time.time() - t
            n_ok = sum(r.get("status") == "ok" for r in res.values())
            log(
                f"grid {impl.name}: {n_ok} of {len(res)} cases ok ({time.time() - t:.1f} s)"
                + ("" if header else " -- no header: the runner did not start, see its log")
            )

    if "profile" in phases:
        t = time.time()
        if o.profile_from:
            # The earlier run's grid, cases and first calls are the report's; this run adds the
            # profile (and keeps its own meta under "profile").
            earlier = json.load(open(o.profile_from))
            for k in ("cases", "impls", "first_call", "first_call_cases"):
                if k in earlier:
                    results[k] = earlier[k]
            results["meta"] = dict(earlier.get("meta", {}), profile_run=results["meta"])
        gpix_cuda = "cuda:" in o.gpix_devices.split(",") or not o.gpix_devices
        if not o.bench_grid or not gpix_cuda and not o.profile_from:
            ap.error("the profile phase needs --bench-grid (and gpix CUDA's grid or --profile-from)")
        results["profile"] = profile_phase(
            results, o.bench_grid, data, work, deadline, o, log, gpix_env
        )
        results["phases"]["profile"] = time.time() - t

    if o.profile_from and "profile" in phases:
        results["meta"]["profile_run"]["total_s"] = time.time() - t0
    else:
        results["meta"]["total_s"] = time.time() - t0
    with open(os.path.join(o.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with tarfile.open(os.path.join(o.out, "raw.tar.gz"), "w:gz") as tar:
        for name in sorted(os.listdir(work)):
            if name.endswith((".jsonl", ".log", ".tsv", ".csv")) or name.startswith(
                "firstcall-cases"
            ):
                tar.add(os.path.join(work, name), arcname=name)
    import suite_report

    try:
        md = suite_report.markdown(results)
        with open(os.path.join(o.out, "table.md"), "w") as f:
            f.write(md)
        print(suite_report.summary(results))
        if "grid" in phases:
            try:
                suite_report.plot(results, os.path.join(o.out, "performance.png"))
            except ImportError as e:
                log(f"no plot: {e}")
    except Exception as e:  # the raw results are written: a report bug must not lose them
        log(f"report failed: {type(e).__name__}: {e}")
    log(f"done: {o.out}/results.json")
    return 0


def default_work():
    """/dev/shm where it is writable and roomy (the blob files and caches take a few GB), else
    /tmp."""
    try:
        if os.access("/dev/shm", os.W_OK) and shutil.disk_usage("/dev/shm").free > 8 << 30:
            return "/dev/shm/gpix-suite"
    except OSError:
        pass
    return "/tmp/gpix-suite"


def gpu_name():
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


if __name__ == "__main__":
    sys.exit(main())
