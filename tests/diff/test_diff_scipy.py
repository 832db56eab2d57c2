#!/usr/bin/env python3
"""Differential tests of gpix's filters against scipy.ndimage, scikit-image and numpy (issue 14).

Every catalog entry (`gpix filters --json`, read at start) is either compared here (SPECS) or
listed in NO_COUNTERPART with the reason; an entry that is neither fails the suite, and so does a
name here that left the catalog. Each case writes fresh random images (odd shapes, 1-pixel axes,
1D/2D/3D where the filter takes them) as MetaImage files, runs `gpix run FILTER IN... OUT
[--PARAM VALUE ...]` and compares the result with the reference:

  exact   integer outputs of exact operations (min/max/median filters, flips, crops, label images,
          masks, saturating integer arithmetic, conversions), and float outputs of operations
          IEEE rounds exactly (a + b, a * b, fmax, 1 - a, ...). 64-bit integer references are
          computed with Python integers / fractions, never through float64.
  round   integer outputs of float computations: the reference is computed in float64 and
          rounded half to even and saturated as gpix documents; where gpix computes in float32
          (or float64 for the wide dtypes) a pixel may take either rounding of
          [ref - tol, ref + tol], tol = rtol * magnitude (the largest finite |value| of the
          inputs and of the reference).
  float   float outputs: |got - ref| <= rtol * magnitude; rtol 1e-5 for float32 results or
          float32 arithmetic, 1e-12 for float64 (pointwise functions such as exp/log/pow use
          |ref| itself as the magnitude, with the OpenCL ulp bounds). NaN must meet NaN and
          infinities must match exactly.
  table   CSV columns, each exact or within a tolerance as above.

Where gpix documents a deliberate difference from the reference library (relabel_sequential's
raster numbering, threshold_otsu on a constant image, rescale_intensity of a constant image,
binary morphology with a clamped window, ...), the case checks exactly the documented behaviour.

Usage: test_diff_scipy.py --gpix PATH [--seed N] [--jobs 2] [-k REGEX] [--keep DIR] [--list]
The last line printed is "N passed, M failed"; the exit status is non-zero on any failure, and
when scipy / scikit-image are missing (CI installs them: scripts/deps.sh).
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
import zlib
from fractions import Fraction


def _import_or_reexec():
    """Imports the reference libraries; if this interpreter lacks them (a pyenv or venv python
    found first on PATH), re-runs the script with the system's python3 that has them."""
    try:
        import numpy  # noqa: F401
        import scipy.ndimage  # noqa: F401
        import skimage  # noqa: F401
        return
    except ImportError as e:
        missing = e
    if not os.environ.get("GPIX_DIFF_REEXEC"):
        for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
            if os.path.exists(cand) and os.path.realpath(cand) != os.path.realpath(sys.executable):
                probe = subprocess.run([cand, "-c", "import numpy, scipy.ndimage, skimage"],
                                       capture_output=True)
                if probe.returncode == 0:
                    os.environ["GPIX_DIFF_REEXEC"] = "1"
                    os.execv(cand, [cand] + sys.argv)
    print(f"test_diff_scipy: cannot import the references ({missing}); install python3-numpy "
          "python3-scipy python3-skimage python3-tifffile (scripts/deps.sh)")
    print("0 passed, 1 failed")
    sys.exit(1)


_import_or_reexec()

import numpy as np  # noqa: E402
import scipy  # noqa: E402
import scipy.ndimage as ndi  # noqa: E402
import skimage  # noqa: E402
import skimage.exposure  # noqa: E402
import skimage.filters  # noqa: E402
import skimage.measure  # noqa: E402
import skimage.segmentation  # noqa: E402
import skimage.util  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metaimage import read_mha, write_mha  # noqa: E402

DEFAULT_SEED = 14
warnings.simplefilter("ignore", RuntimeWarning)  # NaN and overflow in references are intended

# --------------------------------------------------------------------------------------------
# Catalog entries with no scipy.ndimage / scikit-image / numpy counterpart.
NO_COUNTERPART = {
    "voronoi_otsu_labeling":
        "pyclesperanto's algorithm (Otsu mask, spot maxima, seeded growth alternating face and "
        "box neighbourhoods); neither scipy.ndimage nor scikit-image has it, and a reference "
        "would be a re-implementation rather than an independent library",
}

# --------------------------------------------------------------------------------------------
# dtypes

U8, I8, U16, I16, U32, I32, U64, I64, F32, F64 = (np.dtype(n) for n in (
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float32",
    "float64"))
ALL_DTYPES = [U8, I8, U16, I16, U32, I32, U64, I64, F32, F64]
INT_DTYPES = [U8, I8, U16, I16, U32, I32, U64, I64]
SHORT = {U8: "u8", I8: "i8", U16: "u16", I16: "i16", U32: "u32", I32: "i32", U64: "u64",
         I64: "i64", F32: "f32", F64: "f64"}
BY_NAME = {}
for _d, _s in SHORT.items():
    BY_NAME[_s] = _d
    BY_NAME[_d.name] = _d
REQUIRED_DTYPES = {U8, U16, I16, I32, F32, F64}  # plus one 64-bit integer, checked below


def is_int(dt):
    return np.dtype(dt).kind in "ui"


def is_wide(dt):
    """32/64-bit integers and float64: the dtypes gpix documents float64 arithmetic for."""
    dt = np.dtype(dt)
    return dt == F64 or (is_int(dt) and dt.itemsize >= 4)


def float_out(dt):
    return F64 if np.dtype(dt) == F64 else F32


def rtol_for(dt, wide_f64=False):
    """The relative tolerance of a float computation on dtype dt: float32 arithmetic (1e-5)
    unless the input is float64 or (wide_f64) a 32/64-bit integer the doc says gpix computes in
    float64."""
    if np.dtype(dt) == F64 or (wide_f64 and is_wide(dt)):
        return 1e-12
    return 1e-5


# --------------------------------------------------------------------------------------------
# Exact and rounded arithmetic helpers


def to_obj(a):
    """Python ints (integer dtypes) or floats, exact."""
    return np.asarray(a).astype(object)


def sat_obj(o, dt):
    info = np.iinfo(dt)
    o = np.asarray(o, dtype=object)
    return np.minimum(np.maximum(o, info.min), info.max).astype(dt)


_round_obj = np.frompyfunc(round, 1, 1)  # Python round: half to even, exact for Fraction


def round_sat_obj(o, dt):
    """Exact values (ints/Fractions) -> dtype dt, round half to even, saturating."""
    return sat_obj(_round_obj(np.asarray(o, dtype=object)), dt)


def sat_round(x, dt):
    """float64 values -> integer dtype dt: round half to even, saturate, NaN -> 0."""
    dt = np.dtype(dt)
    info = np.iinfo(dt)
    x = np.asarray(x, dtype=np.float64)
    r = np.rint(x)
    out = np.zeros(x.shape, dtype=dt)
    with np.errstate(invalid="ignore"):
        hi = r >= float(info.max)  # float(2**63 - 1) == 2**63: saturates from there
        lo = r <= float(info.min)
    nan = np.isnan(r)
    mid = ~(hi | lo | nan)
    out[hi] = info.max
    out[lo] = info.min
    out[mid] = r[mid].astype(dt)
    return out


def finite_max_abs(*arrays):
    m = 0.0
    for a in arrays:
        a = np.asarray(a)
        if a.size == 0:
            continue
        if a.dtype == object:
            a = a.astype(np.float64)
        f = np.abs(a.astype(np.float64))
        f = f[np.isfinite(f)]
        if f.size:
            m = max(m, float(f.max()))
    return m


def raster_renumber(lab):
    """Labels renumbered 1..n in raster (C) order of first appearance; 0 stays 0; uint32."""
    flat = np.asarray(lab).ravel()
    vals, first, inv = np.unique(flat, return_index=True, return_inverse=True)
    new = np.zeros(len(vals), dtype=np.uint32)
    n = 0
    for i in np.argsort(first, kind="stable"):
        if vals[i] != 0:
            n += 1
            new[i] = n
    return new[inv].reshape(np.shape(lab))


def same_partition(a, b):
    """True if label images a and b have the same background and a bijection between labels."""
    a = np.asarray(a).ravel().astype(np.int64)
    b = np.asarray(b).ravel().astype(np.int64)
    if not np.array_equal(a == 0, b == 0):
        return False
    pairs = np.unique(np.stack([a, b]), axis=1)
    return len(np.unique(pairs[0])) == pairs.shape[1] == len(np.unique(pairs[1]))


def gt_exact(a, value):
    """a > value, exact for every dtype (numpy would round 64-bit integers to float64)."""
    a = np.asarray(a)
    if not is_int(a.dtype):
        return a.astype(np.float64) > value
    if math.isnan(value):
        return np.zeros(a.shape, dtype=bool)
    if math.isinf(value):
        return np.full(a.shape, value < 0)
    t = math.floor(value)  # for integers, a > value <=> a > floor(value)
    info = np.iinfo(a.dtype)
    if t >= info.max:
        return np.zeros(a.shape, dtype=bool)
    if t < info.min:
        return np.ones(a.shape, dtype=bool)
    return a > a.dtype.type(t)


# --------------------------------------------------------------------------------------------
# Random images


def random_image(rng, dt, shape, lo=None, hi=None, specials=True, nan=False):
    """Uniform random pixels of dtype dt in [lo, hi] (the whole dtype for integers by default,
    [-1000, 1000] for floats), with a few special values (the dtype's extremes, 0, -1, 1, and
    for floats exact halves and -0) scattered at random pixels; nan adds NaN and infinities."""
    dt = np.dtype(dt)
    shape = tuple(shape)
    if is_int(dt):
        info = np.iinfo(dt)
        lo = info.min if lo is None else max(int(lo), int(info.min))
        hi = info.max if hi is None else min(int(hi), int(info.max))
        a = rng.integers(lo, hi, size=shape, dtype=dt, endpoint=True)
        sp = [lo, hi, 0, 1, -1, lo + 1, hi - 1]
        sp = [v for v in sp if lo <= v <= hi]
    else:
        lo = -1000.0 if lo is None else lo
        hi = 1000.0 if hi is None else hi
        a = rng.uniform(lo, hi, size=shape).astype(dt)
        sp = [v for v in (0.0, -0.0, 0.5, -0.5, 1.5, -2.5, lo, hi) if lo <= v <= hi]
        if nan:
            sp += [np.nan, np.inf, -np.inf, np.nan]
    if specials and a.size >= 4:
        k = min(len(sp), a.size // 3)
        idx = rng.choice(a.size, size=k, replace=False)
        order = rng.permutation(len(sp))[:k]
        flat = a.reshape(-1)
        for i, j in zip(idx, order):
            flat[i] = sp[j]
    elif nan and a.size and not is_int(dt):
        a.reshape(-1)[rng.integers(a.size)] = np.nan
    return a


def with_nan(dt, v):
    """Whether a float case gets NaN (and infinities): always on the base grid (variants
    0-9, so both float32 and float64 see them), every other case elsewhere."""
    return not is_int(dt) and (v < 10 or v % 2 == 1)


def blob_mask(rng, shape, density=0.5, sigma=1.2, noise=0.05):
    """A boolean mask of random blobs (a smoothed random field thresholded) with some noise."""
    f = ndi.gaussian_filter(rng.random(shape), sigma, mode="nearest")
    m = f > np.quantile(f, 1 - density) if f.size > 1 else rng.random(shape) < density
    flip = rng.random(shape) < noise
    return m ^ flip


def mask_values(rng, mask, dt, nan=False):
    """A binary input of dtype dt: 0 where mask is false, random nonzero values where it is true
    (for floats -0.0 among the zeros and, with nan, NaN among the nonzeros)."""
    dt = np.dtype(dt)
    v = random_image(rng, dt, mask.shape, specials=False)
    if is_int(dt):
        v[v == 0] = 1
    else:
        v[v == 0] = 1.5
    out = np.where(mask, v, np.zeros((), dt)).astype(dt)
    if not is_int(dt):
        zeros = np.flatnonzero(~mask.ravel())
        if zeros.size:
            out.reshape(-1)[zeros[rng.random(zeros.size) < 0.3]] = -0.0
        if nan:
            ones = np.flatnonzero(mask.ravel())
            if ones.size:
                out.reshape(-1)[ones[rng.random(ones.size) < 0.2]] = np.nan
    return out


def bimodal_image(rng, dt, shape, lo, hi):
    """Two overlapping Gaussian populations in [lo, hi] (a well-defined Otsu threshold)."""
    span = hi - lo
    fg = blob_mask(rng, shape, density=0.4, sigma=1.5, noise=0.0)
    x = np.where(fg, rng.normal(lo + 0.7 * span, 0.08 * span, shape),
                 rng.normal(lo + 0.3 * span, 0.07 * span, shape))
    x = np.clip(x, lo, hi)
    if is_int(dt):
        return np.rint(x).astype(dt)
    return x.astype(dt)


# --------------------------------------------------------------------------------------------
# Expectations and comparison


class Expect:
    """What a case expects. kind: 'exact' (want has the output dtype), 'round' (want float64,
    integer output dtype; either rounding of [want - tol, want + tol] passes), 'float' (want
    float64, |got - want| <= tol), 'table' (columns: list of (name, want float64, tol))."""

    def __init__(self, kind, want=None, dtype=None, tol=0.0, columns=None, note=""):
        self.kind = kind
        self.want = want
        self.dtype = None if dtype is None else np.dtype(dtype)
        self.tol = tol
        self.columns = columns
        self.note = note


def error(pattern):
    """gpix must refuse the case (as the reference library does), its message matching."""
    e = Expect("error")
    e.want = pattern
    return e


def exact(want, dtype=None):
    want = np.asarray(want)
    return Expect("exact", want, dtype if dtype is not None else want.dtype)


def rounded(want, dtype, rtol, *inputs):
    """Integer output of a float computation (want float64)."""
    want = np.asarray(want, dtype=np.float64)
    return Expect("round", want, dtype, rtol * max(finite_max_abs(want, *inputs), 1.0))


def floating(want, dtype, rtol, *inputs, atol=0.0):
    want = np.asarray(want, dtype=np.float64)
    return Expect("float", want, dtype, rtol * finite_max_abs(want, *inputs) + atol)


def pointwise(want, dtype, rtol, atol=0.0):
    """Float output of a pointwise function: tolerance relative to each |want|."""
    want = np.asarray(want, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        tol = rtol * np.where(np.isfinite(want), np.abs(want), 0.0) + atol
    return Expect("float", want, dtype, tol)


def same_dtype_result(want_float, dt, rtol, *inputs):
    """A filter whose output has the input's dtype: rounded for integers, float otherwise."""
    if is_int(dt):
        return rounded(want_float, dt, rtol, *inputs)
    return floating(want_float, dt, rtol, *inputs)


def _first_bad(bad):
    i = int(np.flatnonzero(bad.ravel())[0])
    return tuple(int(v) for v in np.unravel_index(i, bad.shape)), i


def compare(exp, got):
    """None when got matches, else a message: max abs diff and the first differing index."""
    if exp.kind == "table":
        return compare_table(exp, got)
    if not isinstance(got, np.ndarray):
        return "expected an image, got a table"
    want = exp.want
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if exp.dtype is not None and got.dtype != exp.dtype:
        return f"dtype {got.dtype}, expected {exp.dtype}"
    if got.size == 0:
        return None
    if exp.kind == "exact":
        if is_int(got.dtype):
            bad = got != want
        else:
            bad = ~((got == want) | (np.isnan(got) & np.isnan(want.astype(np.float64))))
    elif exp.kind == "round":
        lo = sat_round(want - exp.tol, got.dtype)
        hi = sat_round(want + exp.tol, got.dtype)
        bad = (got < lo) | (got > hi)
        want = sat_round(want, got.dtype)
    else:
        g = got.astype(np.float64)
        w = want
        if got.dtype == F32:  # the reference as float32 (overflow to inf as float32 does)
            with np.errstate(over="ignore", invalid="ignore"):
                w = want.astype(np.float32).astype(np.float64)
        with np.errstate(invalid="ignore"):
            diff = np.abs(g - w)
            bad = ~((g == w) | (np.isnan(g) & np.isnan(w)) | (diff <= exp.tol))
        want = w
    if not bad.any():
        return None
    idx, flat = _first_bad(bad)
    with np.errstate(invalid="ignore", over="ignore"):
        if is_int(got.dtype):  # exact differences (64-bit values do not fit float64)
            d = np.abs(got[bad].astype(object) - np.asarray(want)[bad].astype(object))
            d = d.astype(np.float64)
        else:
            d = np.abs(got[bad].astype(np.float64) - np.asarray(want)[bad].astype(np.float64))
    maxd = float("nan") if np.isnan(d).all() else float(np.nanmax(d))
    tol = exp.tol if np.isscalar(exp.tol) else np.asarray(exp.tol).ravel()[flat]
    g1, w1 = got.ravel()[flat], np.asarray(want).ravel()[flat]
    return (f"{int(bad.sum())} of {bad.size} pixels differ; max abs diff {maxd:.6g}; first at "
            f"index {idx} (numpy order, z y x): got {g1!r}, expected {w1!r} (tol {tol:.3g})")


def compare_table(exp, got):
    if not isinstance(got, dict):
        return "expected a table, got an image"
    for name, want, tol in exp.columns:
        if name not in got:
            return f"no column '{name}' (columns {list(got)})"
        g = got[name]
        want = np.asarray(want, dtype=np.float64).ravel()
        if g.shape != want.shape:
            return f"column {name}: {g.size} rows, expected {want.size}"
        with np.errstate(invalid="ignore"):
            bad = ~((g == want) | (np.isnan(g) & np.isnan(want)) | (np.abs(g - want) <= tol))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            with np.errstate(invalid="ignore"):
                d = np.abs(g - want)[bad]
            t = tol if np.isscalar(tol) else np.asarray(tol).ravel()[i]
            return (f"column {name}: {int(bad.sum())} of {g.size} rows differ; max abs diff "
                    f"{np.nanmax(d) if not np.isnan(d).all() else float('nan'):.6g}; first at row "
                    f"{i}: got {g[i]!r}, expected {want[i]!r} (tol {t:.3g})")
    return None


# --------------------------------------------------------------------------------------------
# Case specifications. A spec is fn(rng, dt, shape, v) -> (inputs, params, expect), where v is a
# small variant number (cycles parameters across the grid) and expect() returns an Expect.

SPECS = {}


def spec(*names):
    def deco(fn):
        for n in names:
            SPECS[n] = fn
        return fn
    return deco


def pick(v, options):
    return options[v % len(options)]


def per_axis(shape, zyx):
    """(z, y, x) values for the image's axes (the last ndim of them)."""
    return tuple(zyx[3 - len(shape):])


# ---- Arithmetic ----------------------------------------------------------------------------


@spec("absolute")
def _absolute(rng, dt, shape, v):
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))

    def expect():
        if is_int(dt):
            return exact(sat_obj(np.abs(to_obj(a)), dt))
        return exact(np.abs(a))
    return [a], {}, expect


def _binary_arith(name):
    def fn(rng, dt, shape, v):
        a = random_image(rng, dt, shape, nan=with_nan(dt, v))
        b = random_image(rng, dt, shape, nan=with_nan(dt, v))
        if name == "divide_images":
            flat = b.reshape(-1)
            if flat.size >= 3:
                flat[rng.choice(flat.size, size=max(1, flat.size // 8), replace=False)] = 0
                a.reshape(-1)[int(np.flatnonzero(flat == 0)[0])] = 0  # one 0/0
            elif is_int(dt):
                flat[flat == 0] = 3

        def expect():
            if is_int(dt):
                oa, ob = to_obj(a), to_obj(b)
                if name == "add_images":
                    return exact(sat_obj(oa + ob, dt))
                if name == "subtract_images":
                    return exact(sat_obj(oa - ob, dt))
                if name == "multiply_images":
                    return exact(sat_obj(oa * ob, dt))
                if name == "maximum_images":
                    return exact(np.maximum(a, b))
                if name == "minimum_images":
                    return exact(np.minimum(a, b))
                info = np.iinfo(dt)

                def div(x, y):
                    if y == 0:
                        return info.max if x > 0 else (info.min if x < 0 else 0)
                    return round(Fraction(x, y))  # half to even
                return exact(sat_obj(np.frompyfunc(div, 2, 1)(oa, ob), dt))
            with np.errstate(all="ignore"):
                if name == "add_images":
                    return exact(a + b)
                if name == "subtract_images":
                    return exact(a - b)
                if name == "multiply_images":
                    return exact(a * b)
                if name == "maximum_images":
                    return exact(np.fmax(a, b))
                if name == "minimum_images":
                    return exact(np.fmin(a, b))
                # IEEE division; OpenCL allows 2.5 ulp for float32 division
                return pointwise(a.astype(np.float64) / b, dt, 3e-7 if dt == F32 else 2.3e-16)
        return [a, b], {}, expect
    return fn


for _n in ("add_images", "subtract_images", "multiply_images", "divide_images",
           "maximum_images", "minimum_images"):
    SPECS[_n] = _binary_arith(_n)


def _scalar_result(a, dt, exact_values, f64_values):
    """a (op) scalar: exact for integers up to 32 bits and float64 (the scalar is a dyadic
    rational, so float64 arithmetic is exact there); 64-bit integers may be computed through
    float64, so they pass within 2^-52 relative of the exact result; float32 within one ulp."""
    if is_int(dt):
        want = round_sat_obj(exact_values, dt)
        if np.dtype(dt).itemsize < 8:
            return exact(want)
        w = exact_values.astype(np.float64)
        return Expect("round", w, dt, np.abs(w) * 2.0 ** -52)
    if dt == F64:
        return pointwise(f64_values, dt, 2.3e-16)
    return pointwise(f64_values.astype(np.float32), dt, 1.2e-7)


@spec("add_scalar")
def _add_scalar(rng, dt, shape, v):
    a = random_image(rng, dt, shape)
    value = pick(v, [-37.0, 2.5, 1e6, -0.5, 0.0])

    def expect():
        ex = to_obj(a) + (Fraction(value) if is_int(dt) else value)
        return _scalar_result(a, dt, ex, a.astype(np.float64) + value)
    return [a], {"value": value}, expect


@spec("multiply_scalar")
def _multiply_scalar(rng, dt, shape, v):
    a = random_image(rng, dt, shape)
    factor = pick(v, [2.5, 0.5, -1.5, 3.0, 0.75])

    def expect():
        ex = to_obj(a) * (Fraction(factor) if is_int(dt) else factor)
        return _scalar_result(a, dt, ex, a.astype(np.float64) * factor)
    return [a], {"factor": factor}, expect


@spec("clip")
def _clip(rng, dt, shape, v):
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))
    if is_int(dt):
        info = np.iinfo(dt)
        span = int(info.max) - int(info.min)
        lo = int(info.min) + span // 4
        hi = int(info.min) + (span // 4) * 3
        if info.bits == 64:  # bounds float64 holds exactly
            lo, hi = float(lo) - 2.0 ** 40, float(hi) + 2.0 ** 40
            lo, hi = int(lo), int(hi)
        if info.bits < 64 and v % 2:  # fractional bounds: compared as they are, pixels outside
            flo, fhi = lo + 0.5, hi - 0.5  # take the nearest integer inside (ceil, floor)
        else:
            flo, fhi = float(lo), float(hi)
        params = {"minimum": flo, "maximum": fhi}

        def expect():
            o = to_obj(a)
            w = np.where(o < flo, math.ceil(flo), np.where(o > fhi, math.floor(fhi), o))
            return exact(sat_obj(w, dt))
    else:
        params = {"minimum": -300.25, "maximum": 411.5}

        def expect():
            with np.errstate(invalid="ignore"):
                w = np.where(np.isnan(a), a, np.minimum(np.maximum(a, dt.type(-300.25)),
                                                        dt.type(411.5)))
            return exact(w.astype(dt))
    return [a], params, expect


@spec("exp")
def _exp(rng, dt, shape, v):
    a = random_image(rng, dt, shape, lo=-80, hi=80)

    def expect():
        return pointwise(np.exp(a.astype(np.float64)), float_out(dt),
                         1e-6 if float_out(dt) == F32 else 1e-14)
    return [a], {}, expect


@spec("log")
def _log(rng, dt, shape, v):
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))

    def expect():
        with np.errstate(all="ignore"):
            w = np.log(a.astype(np.float64))
        if float_out(dt) == F32:
            # float32 input rounding of wide integers and 3 ulp: relative to max(|log|, 1)
            return pointwise(w, F32, 1e-6, atol=1e-6)
        return pointwise(w, F64, 1e-14, atol=1e-15)
    return [a], {}, expect


@spec("sqrt")
def _sqrt(rng, dt, shape, v):
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))

    def expect():
        with np.errstate(all="ignore"):
            w = np.sqrt(a.astype(np.float64))
        return pointwise(w, float_out(dt), 4e-7 if float_out(dt) == F32 else 2.3e-16)
    return [a], {}, expect


@spec("power")
def _power(rng, dt, shape, v):
    exponent = pick(v, [2.0, 0.5, -1.0, 1.5, 3.0])
    wide = is_int(dt) and np.dtype(dt).itemsize >= 4
    a = random_image(rng, dt, shape, lo=-(2 ** 20) if wide else None,
                     hi=2 ** 20 if wide else None) if is_int(dt) else \
        random_image(rng, dt, shape, lo=-100.0, hi=100.0)

    def expect():
        with np.errstate(all="ignore"):
            w = np.power(a.astype(np.float64), exponent)
        # OpenCL's pow: 16 ulp in float32
        return pointwise(w, float_out(dt), 4e-6 if float_out(dt) == F32 else 1e-14)
    return [a], {"exponent": exponent}, expect


@spec("invert")
def _invert(rng, dt, shape, v):
    a = random_image(rng, dt, shape)

    def expect():
        return exact(skimage.util.invert(a).astype(dt))
    return [a], {}, expect


# ---- Types ---------------------------------------------------------------------------------


@spec("convert")
def _convert(rng, dt, shape, v):
    target = ALL_DTYPES[(3 * v + 1) % len(ALL_DTYPES)]  # the base grid: every target once
    return _convert_case(rng, dt, shape, v, target)


def _convert_case(rng, dt, shape, v, target):
    if is_int(dt):
        a = random_image(rng, dt, shape)
    else:
        a = random_image(rng, dt, shape, lo=-3e9, hi=3e9, nan=True)
        if a.size >= 12:  # small values and exact halves, which round to even
            flat = a.reshape(-1)
            n = flat.size // 3
            flat[:n] = np.round(rng.uniform(-300, 300, n) * 2) / 2
            if v % 2:  # values around the 64-bit limits
                flat[n:n + 4] = [2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 1.8e19]

    def expect():
        if is_int(target):
            if is_int(dt):
                return exact(sat_obj(to_obj(a), target))
            return exact(sat_round(a.astype(np.float64), target))
        with np.errstate(over="ignore"):
            return exact(a.astype(target))
    return [a], {"dtype": target.name}, expect


@spec("rescale_intensity")
def _rescale(rng, dt, shape, v):
    out_min, out_max = pick(v, [(0.0, 1.0), (-5.0, 250.5), (10.0, -10.0)])
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))

    def expect():
        af = a.astype(np.float64)
        if np.isnan(af).all():
            w = af
        else:
            mn, mx = np.nanmin(af), np.nanmax(af)
            if mn == mx:  # documented: a constant image maps to out_min (NaN stays NaN)
                w = np.where(np.isnan(af), np.nan, out_min)
            else:
                w = skimage.exposure.rescale_intensity(af, in_range=(mn, mx),
                                                       out_range=(out_min, out_max))
        return floating(w, float_out(dt), rtol_for(dt, wide_f64=True), np.array([out_min,
                                                                                 out_max]))
    return [a], {"out_min": out_min, "out_max": out_max}, expect


# ---- Neighbourhood -------------------------------------------------------------------------

BOX_RADII = [(1, 1, 1), (1, 0, 2), (2, 3, 0), (0, 1, 1), (1, 2, 3)]  # (z, y, x)
MEDIAN_RADII = [(1, 1, 1), (1, 0, 2), (2, 2, 0), (0, 1, 3), (1, 2, 1)]  # window <= 125


def _box_params(radii):
    rz, ry, rx = radii
    return {"radius_x": rx, "radius_y": ry, "radius_z": rz}


def _box_size(shape, radii):
    return tuple(2 * r + 1 for r in per_axis(shape, radii))


def via_ranks(fn, a):
    """fn (a scipy rank filter: maximum, minimum, median, grey opening/closing) applied
    exactly: scipy.ndimage computes these in float64, which rounds 64-bit integers, so the
    filter runs on the values' ranks (exact in float64) and the ranks map back to the values.
    Those filters commute with the monotone map."""
    if not is_int(a.dtype) or a.dtype.itemsize < 8:
        return fn(a)
    values, ranks = np.unique(a, return_inverse=True)
    return values[fn(ranks.reshape(a.shape).astype(np.int64))]


def _box_spec(name):
    def fn(rng, dt, shape, v):
        radii = pick(v, MEDIAN_RADII if name == "median_box" else BOX_RADII)
        a = random_image(rng, dt, shape)
        size = _box_size(shape, radii)

        def expect():
            if name == "maximum_box":
                return exact(via_ranks(lambda x: ndi.maximum_filter(x, size=size,
                                                                    mode="nearest"), a))
            if name == "minimum_box":
                return exact(via_ranks(lambda x: ndi.minimum_filter(x, size=size,
                                                                    mode="nearest"), a))
            if name == "median_box":
                return exact(via_ranks(lambda x: ndi.median_filter(x, size=size,
                                                                   mode="nearest"), a))
            if name in ("top_hat_box", "bottom_hat_box"):
                if name == "top_hat_box":
                    other = via_ranks(lambda x: ndi.grey_opening(x, size=size, mode="nearest"), a)
                    x, y = a, other
                else:
                    other = via_ranks(lambda x: ndi.grey_closing(x, size=size, mode="nearest"), a)
                    x, y = other, a
                if is_int(dt):
                    return exact(sat_obj(to_obj(x) - to_obj(y), dt))
                return exact(x - y)
            if name == "mean_box":
                w = ndi.uniform_filter(a.astype(np.float64), size=size, mode="nearest")
                return same_dtype_result(w, dt, rtol_for(dt), a)
            # variance_box: population variance of the window, in float64
            pad = [(s // 2, s // 2) for s in size]
            win = np.lib.stride_tricks.sliding_window_view(
                np.pad(a.astype(np.float64), pad, mode="edge"), size)
            w = win.var(axis=tuple(range(a.ndim, 2 * a.ndim)))
            mag = finite_max_abs(a) ** 2
            return Expect("float", w, float_out(dt), rtol_for(dt) * max(mag, 1.0))
        return [a], _box_params(radii), expect
    return fn


for _n in ("maximum_box", "minimum_box", "median_box", "mean_box", "variance_box",
           "top_hat_box", "bottom_hat_box"):
    SPECS[_n] = _box_spec(_n)


def gaussian_ref(a, sigmas):
    """scipy.ndimage.gaussian_filter(mode='nearest', truncate=4) in float64; sigmas in (z, y, x)
    order for the image's axes, 0 leaves an axis alone."""
    return ndi.gaussian_filter(a.astype(np.float64), sigma=sigmas, mode="nearest", truncate=4.0)


@spec("gaussian_blur")
def _gaussian(rng, dt, shape, v):
    sz, sy, sx = pick(v, [(0.0, 0.7, 1.3), (1.1, 2.1, 0.8), (0.6, 1.5, 0.0), (0.0, 2.0, 2.0),
                          (1.0, 0.0, 0.45)])
    a = random_image(rng, dt, shape)

    def expect():
        w = gaussian_ref(a, per_axis(shape, (sz, sy, sx)))
        return same_dtype_result(w, dt, rtol_for(dt), a)
    return [a], {"sigma_x": sx, "sigma_y": sy, "sigma_z": sz}, expect


@spec("difference_of_gaussian")
def _dog(rng, dt, shape, v):
    s1, s2 = pick(v, [(1.0, 3.0), (0.7, 1.6), (2.0, 0.5)])
    a = random_image(rng, dt, shape)

    def expect():
        w = gaussian_ref(a, [s1] * a.ndim) - gaussian_ref(a, [s2] * a.ndim)
        return floating(w, float_out(dt), rtol_for(dt), a)
    return [a], {"sigma1": s1, "sigma2": s2}, expect


@spec("unsharp_mask")
def _unsharp(rng, dt, shape, v):
    sigma, amount = pick(v, [(1.0, 1.0), (0.6, 2.5), (1.7, -0.5)])
    a = random_image(rng, dt, shape)

    def expect():
        af = a.astype(np.float64)
        w = af + amount * (af - gaussian_ref(a, [sigma] * a.ndim))
        return same_dtype_result(w, dt, rtol_for(dt), a)
    return [a], {"sigma": sigma, "amount": amount}, expect


def _gradient(axis_from_end):
    def fn(rng, dt, shape, v):
        a = random_image(rng, dt, shape)

        def expect():
            w = ndi.correlate1d(a.astype(np.float64), [-0.5, 0.0, 0.5], axis=-axis_from_end,
                                mode="nearest")
            return floating(w, float_out(dt), rtol_for(dt), a)
        return [a], {}, expect
    return fn


SPECS["gradient_x"] = _gradient(1)
SPECS["gradient_y"] = _gradient(2)
SPECS["gradient_z"] = _gradient(3)


@spec("laplace")
def _laplace(rng, dt, shape, v):
    a = random_image(rng, dt, shape)

    def expect():
        return floating(ndi.laplace(a.astype(np.float64), mode="nearest"), float_out(dt),
                        rtol_for(dt), a)
    return [a], {}, expect


@spec("sobel")
def _sobel(rng, dt, shape, v):
    a = random_image(rng, dt, shape)

    def expect():
        af = a.astype(np.float64)
        w = np.sqrt(sum(ndi.sobel(af, axis=ax, mode="nearest") ** 2 for ax in range(a.ndim)))
        return floating(w, float_out(dt), rtol_for(dt), a)
    return [a], {}, expect


# ---- Segmentation --------------------------------------------------------------------------


def _logic(name):
    def fn(rng, dt, shape, v):
        a = mask_values(rng, rng.random(shape) < 0.5, dt, nan=with_nan(dt, v))
        b = mask_values(rng, rng.random(shape) < 0.5, dt, nan=with_nan(dt, v))

        def expect():
            x, y = a != 0, b != 0  # NaN != 0 is true: NaN is nonzero
            w = {"binary_and": x & y, "binary_or": x | y, "binary_xor": x ^ y,
                 "binary_not": ~x}[name]
            return exact(w.astype(np.uint8))
        return ([a] if name == "binary_not" else [a, b]), {}, expect
    return fn


for _n in ("binary_and", "binary_or", "binary_xor", "binary_not"):
    SPECS[_n] = _logic(_n)


def footprint(ndim, radius, connectivity):
    if connectivity == "box":
        return np.ones((2 * radius + 1,) * ndim, dtype=bool)
    if radius == 0:
        return np.ones((1,) * ndim, dtype=bool)
    return ndi.iterate_structure(ndi.generate_binary_structure(ndim, 1), radius).astype(bool)


def _morph(name):
    def fn(rng, dt, shape, v):
        radius = pick(v, [1, 2, 0, 3, 1])
        conn = pick(v // 2, ["box", "cross"]) if v % 5 != 0 else "box"
        m = blob_mask(rng, shape, density=0.5 if "erosion" not in name else 0.65)
        a = mask_values(rng, m, dt, nan=with_nan(dt, v))

        def expect():
            mask = (a != 0).astype(np.uint8)
            fp = footprint(a.ndim, radius, conn)
            # gpix clamps the window at the borders; for these convex, centred windows that is
            # scipy's grey morphology with mode='nearest' (outside pixels repeat the nearest)
            op = {"binary_dilation": ndi.grey_dilation, "binary_erosion": ndi.grey_erosion,
                  "binary_opening": ndi.grey_opening, "binary_closing": ndi.grey_closing}[name]
            w = op(mask, footprint=fp, mode="nearest")
            # the scipy binary function agrees away from the borders (sanity of the reference)
            bop = {"binary_dilation": ndi.binary_dilation, "binary_erosion": ndi.binary_erosion,
                   "binary_opening": ndi.binary_opening,
                   "binary_closing": ndi.binary_closing}[name]
            if radius > 0 and name in ("binary_dilation", "binary_erosion"):
                pad = 2 * radius
                padded = np.pad(mask, pad, mode="edge").astype(bool)
                b = bop(padded, structure=fp)[tuple(slice(pad, pad + n) for n in mask.shape)]
                if not np.array_equal(b.astype(np.uint8), w):
                    raise AssertionError("reference disagreement: scipy binary_* on an "
                                         "edge-padded mask differs from grey_*(mode='nearest')")
            return exact(w.astype(np.uint8))
        return [a], {"radius": radius, "connectivity": conn}, expect
    return fn


for _n in ("binary_dilation", "binary_erosion", "binary_opening", "binary_closing"):
    SPECS[_n] = _morph(_n)


@spec("connected_components")
def _cc(rng, dt, shape, v):
    conn = pick(v, ["full", "face"])
    a = mask_values(rng, blob_mask(rng, shape, density=0.45, noise=0.08), dt, nan=with_nan(dt, v))

    def expect():
        m = a != 0
        structure = ndi.generate_binary_structure(a.ndim, a.ndim if conn == "full" else 1)
        lab, _ = ndi.label(m, structure=structure)
        sk = skimage.measure.label(m, connectivity=a.ndim if conn == "full" else 1)
        if not same_partition(lab, sk):
            raise AssertionError("reference disagreement: scipy.ndimage.label vs "
                                 "skimage.measure.label")
        return exact(raster_renumber(lab))
    return [a], {"connectivity": conn}, expect


def _label_image(rng, shape, dtype, n_max):
    """Labels of random blobs with ids in 1..n_max (some ids unused), in dtype."""
    lab, n = ndi.label(blob_mask(rng, shape, density=0.55, noise=0.03))
    ids = rng.choice(np.arange(1, n_max + 1), size=max(n, 1), replace=n > n_max)
    table = np.concatenate([[0], ids])
    return table[lab].astype(dtype)


@spec("label_statistics")
def _label_statistics(rng, dt, shape, v):
    ldt = INT_DTYPES[(ALL_DTYPES.index(np.dtype(dt)) + v) % len(INT_DTYPES)]
    labels = _label_image(rng, shape, ldt, 40)
    inten = random_image(rng, dt, shape, nan=with_nan(dt, v))

    def expect():
        n = int(labels.max()) if labels.size else 0
        L = labels.ravel().astype(np.int64)
        I = inten.ravel()
        area = np.bincount(L, minlength=n + 1)[1:].astype(np.float64)
        mean = np.full(n, np.nan)
        mn = np.full(n, np.nan)
        mx = np.full(n, np.nan)
        for k in range(1, n + 1):
            sel = I[L == k]
            if sel.size == 0:
                continue
            if is_int(dt):
                mean[k - 1] = float(Fraction(sum(to_obj(sel)), sel.size))
            else:
                mean[k - 1] = np.mean(sel.astype(np.float64))
            mn[k - 1] = float(sel.min())
            mx[k - 1] = float(sel.max())
        # cross-check with scikit-image's regionprops on the labels present (NaN-free images)
        if not (not is_int(dt) and np.isnan(I).any()) and n:
            for rp in skimage.measure.regionprops(labels.astype(np.int64),
                                                  intensity_image=inten.astype(np.float64)):
                k = rp.label - 1
                ok = (rp.area == area[k] and
                      math.isclose(rp.intensity_min, mn[k], rel_tol=1e-15, abs_tol=0) and
                      math.isclose(rp.intensity_max, mx[k], rel_tol=1e-15, abs_tol=0) and
                      math.isclose(rp.intensity_mean, mean[k], rel_tol=1e-9,
                                   abs_tol=1e-9 * finite_max_abs(inten)))
                if not ok:
                    raise AssertionError(f"reference disagreement with regionprops at label "
                                         f"{rp.label}")
        mag = finite_max_abs(inten)
        # integer sums exact for 8-32-bit images (then the mean is one division), float64 sums
        # otherwise
        mtol = (1e-15 * mag) if (is_int(dt) and np.dtype(dt).itemsize <= 4) else 1e-12 * mag
        cols = [("label", np.arange(1, n + 1, dtype=np.float64), 0.0), ("area", area, 0.0),
                ("mean_intensity", mean, mtol), ("min_intensity", mn, 0.0),
                ("max_intensity", mx, 0.0)]
        return Expect("table", columns=cols)
    return [labels, inten], {}, expect


@spec("relabel_sequential")
def _relabel(rng, dt, shape, v):
    info = np.iinfo(dt)
    hi = min(int(info.max), 2 ** 62)
    lab, n = ndi.label(blob_mask(rng, shape, density=0.55, noise=0.03))
    pool = min(hi, 100000)
    ids = rng.choice(np.arange(1, pool + 1), size=max(n, 1), replace=n > pool) \
        if hi < 2 ** 40 else rng.integers(1, hi, size=max(n, 1), endpoint=True)
    a = np.concatenate([[0], ids]).astype(object)[lab].astype(dt)
    return [a], {}, lambda: _relabel_expect(a)


def _relabel_expect(a):
    sk, _, _ = skimage.segmentation.relabel_sequential(a)
    want = raster_renumber(a)
    # the deliberate difference: the partition is scikit-image's, the numbering raster order
    if not same_partition(sk, want):
        raise AssertionError("reference disagreement: skimage relabel_sequential partition")
    return exact(want, np.uint32)


@spec("threshold")
def _threshold(rng, dt, shape, v):
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))
    finite = a[np.isfinite(a.astype(np.float64))] if not is_int(dt) else a.ravel()
    if finite.size:
        x = finite[rng.integers(finite.size)]
        # a pixel's value as float64 (64-bit integers round: the comparison must stay exact),
        # or that plus a half
        value = float(x) + (0.5 if (v % 2 and is_int(dt) and abs(float(x)) < 2 ** 52) else 0.0)
    else:
        value = 0.0

    def expect():
        return exact(gt_exact(a, value).astype(np.uint8))
    return [a], {"value": value}, expect


def otsu_expect(a):
    """image > skimage.filters.threshold_otsu(image): integer images one bin per value, floats
    256 bins; NaN pixels ignored (and 0); a constant image gives 0 everywhere."""
    if is_int(a.dtype):
        vals = a
    else:
        vals = a[~np.isnan(a)]
    if vals.size == 0 or np.all(vals == vals.ravel()[0]):
        return exact(np.zeros(a.shape, np.uint8))
    if vals.dtype == U64:  # skimage's bincount refuses uint64; the same values as int64
        assert vals.max() < 2 ** 63
        vals = vals.astype(np.int64)
    t = skimage.filters.threshold_otsu(vals)
    if is_int(a.dtype):
        return exact((a > a.dtype.type(t)).astype(np.uint8))
    return exact((a > np.asarray(t, dtype=a.dtype)).astype(np.uint8))


@spec("threshold_otsu")
def _otsu(rng, dt, shape, v):
    if is_int(dt):
        info = np.iinfo(dt)
        if info.bits <= 16:
            lo, hi = int(info.min), int(info.max)
        elif info.min < 0:
            lo, hi = -50000, 50000  # skimage bincounts integer images: keep the range small
        else:
            lo, hi = 0, 100000
    else:
        lo, hi = -250.0, 750.0
    a = bimodal_image(rng, dt, shape, lo, hi)
    if not is_int(dt) and v % 2 and a.size > 2:
        a.reshape(-1)[rng.choice(a.size, size=max(1, a.size // 10), replace=False)] = np.nan
    return [a], {}, lambda: otsu_expect(a)


# ---- Geometry ------------------------------------------------------------------------------

# Dyadic matrices (exact in float32, so that gpix's and scipy's coordinates agree bit for bit,
# ties of nearest included): rows x, y, z of [m.0 m.1 m.2 m.3].
AFFINE = [
    [[0.75, -0.375, 0.25, 3.125], [0.3125, 1.25, -0.125, -2.5], [0.0625, 0.5, 0.875, -1.5]],
    [[1.5, 0.25, 0.0, -4.0], [-0.5, 0.875, 0.5, 6.25], [0.0, -0.25, 1.25, 0.5]],
    [[0.5, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, -1.0], [0.0, 0.0, 0.5, 0.25]],
]


@spec("affine_transform")
def _affine(rng, dt, shape, v):
    m = AFFINE[v % len(AFFINE)]
    interp = pick(v // len(AFFINE), ["linear", "nearest"]) if v else "linear"
    a = random_image(rng, dt, shape)
    params = {f"m{r}{c}": m[r][c] for r in range(3) for c in range(4)}
    params["interpolation"] = interp
    nd = a.ndim
    # scipy: input(zyx) = matrix @ output(zyx) + offset, the matrix reversed from (x, y, z)
    matrix = np.array([[m[nd - 1 - i][nd - 1 - j] for j in range(nd)] for i in range(nd)])
    offset = np.array([m[nd - 1 - i][3] for i in range(nd)])

    def expect():
        if interp == "nearest":  # scipy maps pixel indices (exact for 64-bit pixels too)
            idx = ndi.affine_transform(np.arange(a.size, dtype=np.float64).reshape(a.shape),
                                       matrix, offset=offset, order=0, mode="nearest")
            return exact(a.ravel()[idx.astype(np.int64)])
        w = ndi.affine_transform(a.astype(np.float64), matrix, offset=offset, order=1,
                                 mode="nearest")
        return same_dtype_result(w, dt, rtol_for(dt, wide_f64=True), a)
    return [a], params, expect


@spec("resample")
def _resample(rng, dt, shape, v):
    fz, fy, fx = pick(v, [(1.0, 2.0, 2.0), (2.0, 0.7, 1.5), (0.5, 3.0, 0.3), (1.6, 1.0, 0.5)])
    interp = pick(v // 4, ["linear", "nearest"]) if v else "linear"
    a = random_image(rng, dt, shape)
    factors = per_axis(shape, (fz, fy, fx))
    out_shape = tuple(max(1, int(round(n * f))) for n, f in zip(a.shape, factors))

    def expect():
        zoom = [o / n for o, n in zip(out_shape, a.shape)]
        if interp == "nearest":  # scipy maps pixel indices (exact for 64-bit pixels too)
            idx = ndi.zoom(np.arange(a.size, dtype=np.float64).reshape(a.shape), zoom, order=0,
                           mode="nearest", grid_mode=True)
            if idx.shape != out_shape:
                raise AssertionError(f"reference: scipy zoom gave {idx.shape}, not {out_shape}")
            return exact(a.ravel()[idx.astype(np.int64)])
        w = ndi.zoom(a.astype(np.float64), zoom, order=1, mode="nearest", grid_mode=True)
        if w.shape != out_shape:
            raise AssertionError(f"reference: scipy zoom gave {w.shape}, not {out_shape}")
        # coordinates (o + 0.5) * in / out - 0.5 are inexact: the error scales with the extent
        ext = max(a.shape)
        return same_dtype_result(w, dt, rtol_for(dt, wide_f64=True) * ext, a)
    return [a], {"factor_x": fx, "factor_y": fy, "factor_z": fz, "interpolation": interp}, \
        expect


@spec("crop")
def _crop(rng, dt, shape, v):
    a = random_image(rng, dt, shape)
    origin, size = [], []
    for n in tuple(shape)[::-1]:  # x, y, z
        o = int(rng.integers(0, n))
        s = 0 if (v + len(origin)) % 3 == 0 else int(rng.integers(1, n - o + 1))
        origin.append(o)
        size.append(s)
    params = {}
    for axis, o, s in zip("xyz", origin, size):
        params[f"origin_{axis}"] = o
        params[f"size_{axis}"] = s

    def expect():
        sl = []
        for ax in range(a.ndim):  # numpy axis ax is x/y/z index ndim - 1 - ax
            k = a.ndim - 1 - ax
            o, s = origin[k], size[k]
            sl.append(slice(o, a.shape[ax] if s == 0 else o + s))
        return exact(a[tuple(sl)])
    return [a], params, expect


@spec("flip")
def _flip(rng, dt, shape, v):
    fx, fy, fz = pick(v, [(True, False, False), (False, True, True), (True, True, True),
                          (False, False, True), (False, False, False)])
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))

    def expect():
        axes = [a.ndim - 1 - k for k, f in enumerate((fx, fy, fz)) if f and k < a.ndim]
        return exact(np.flip(a, axis=tuple(axes)) if axes else a)
    return [a], {"flip_x": str(fx).lower(), "flip_y": str(fy).lower(),
                 "flip_z": str(fz).lower()}, expect


@spec("transpose")
def _transpose(rng, dt, shape, v):
    axes = "xy" if len(shape) == 2 else pick(v, ["xy", "xz", "yz"])
    a = random_image(rng, dt, shape)

    def expect():
        nd = a.ndim
        pair = {"xy": (nd - 1, nd - 2), "xz": (2, 0), "yz": (1, 0)}[axes]
        return exact(np.swapaxes(a, *pair))
    return [a], {"axes": axes}, expect


# ---- Projections ---------------------------------------------------------------------------


def _projection(name):
    def fn(rng, dt, shape, v):
        nan = with_nan(dt, v)
        a = random_image(rng, dt, shape, nan=nan)
        if nan and a.shape[0] > 1 and a.shape[1] * a.shape[2] > 1:
            a[:, 0, 0] = np.nan  # an all-NaN column
        if is_int(dt) and np.dtype(dt).itemsize == 8 and name == "sum_z_projection":
            a = random_image(rng, dt, shape, lo=-2 ** 50, hi=2 ** 50)

        def expect():
            with np.errstate(all="ignore"), _quiet():
                if name == "maximum_z_projection":
                    return exact(np.max(a, axis=0) if is_int(dt) else np.nanmax(a, axis=0))
                if name == "minimum_z_projection":
                    return exact(np.min(a, axis=0) if is_int(dt) else np.nanmin(a, axis=0))
                af = a.astype(np.float64)
                if name == "mean_z_projection":
                    return floating(np.nanmean(af, axis=0), float_out(dt),
                                    rtol_for(dt, wide_f64=True), a)
                if name == "std_z_projection":
                    return floating(np.nanstd(af, axis=0), float_out(dt),
                                    rtol_for(dt, wide_f64=True), a)
                out = F32 if (np.dtype(dt).itemsize <= 2 or dt == F32) else F64
                if is_int(dt):
                    w = np.sum(to_obj(a), axis=0).astype(np.float64)
                else:
                    w = np.nansum(af, axis=0)
                tol = (1e-5 if out == F32 else 1e-12) * np.nansum(np.abs(af), axis=0)
                return Expect("float", w, out, tol)
        return [a], {}, expect
    return fn


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


for _n in ("maximum_z_projection", "minimum_z_projection", "mean_z_projection",
           "std_z_projection", "sum_z_projection"):
    SPECS[_n] = _projection(_n)


# ---- Reductions ----------------------------------------------------------------------------


@spec("histogram")
def _histogram(rng, dt, shape, v):
    a = random_image(rng, dt, shape, nan=with_nan(dt, v))
    n_bins = pick(v, [256, 7, 16, 1, 100])
    af = a.astype(np.float64)
    fin = af[np.isfinite(af)]
    if v % 5 == 2 and fin.size:  # an explicit range inside the data
        lo, hi = np.quantile(fin, [0.2, 0.9])
        mn_p, mx_p = float(np.floor(lo)), float(np.ceil(hi))
    else:
        mn_p, mx_p = 0.0, 0.0
    params = {"n_bins": n_bins, "minimum": mn_p, "maximum": mx_p}

    def expect():
        ct = np.float64 if is_wide(dt) else np.float32
        vals = a.ravel().astype(ct)
        vals = vals[~np.isnan(vals)]
        if mn_p == 0.0 and mx_p == 0.0:
            nn = a.ravel()[~np.isnan(a.ravel().astype(np.float64))]
            if nn.size == 0 or not np.isfinite(nn.astype(np.float64)).all():
                # numpy.histogram refuses a non-finite automatic range too (gpix ignores NaN)
                return error("not finite")
            if nn.size:
                mn, mx = float(np.min(nn)), float(np.max(nn))
            else:
                mn, mx = 0.0, 0.0
        else:
            mn, mx = mn_p, mx_p
        if mn == mx:
            mn, mx = mn - 0.5, mx + 0.5
        edges = np.linspace(mn, mx, n_bins + 1).astype(ct)
        inside = vals[(vals >= edges[0]) & (vals <= edges[-1])]
        counts = np.histogram(inside, bins=edges)[0] if inside.size else np.zeros(n_bins)
        return Expect("table", columns=[
            ("bin_start", edges[:-1].astype(np.float64), 0.0),
            ("bin_end", edges[1:].astype(np.float64), 0.0),
            ("count", counts.astype(np.float64), 0.0)])
    return [a], params, expect


def _reduction(name):
    col = {"maximum_of_all_pixels": "maximum", "minimum_of_all_pixels": "minimum",
           "mean_of_all_pixels": "mean", "std_of_all_pixels": "std",
           "sum_of_all_pixels": "sum"}[name]

    def fn(rng, dt, shape, v):
        nan = with_nan(dt, v)
        # Full-range 64-bit pixels: their sums leave the 64-bit range (gpix sums exactly and
        # gives the nearest double there).
        a = random_image(rng, dt, shape, nan=nan)
        if nan and not is_int(dt) and v % 4 == 3:
            a[...] = np.nan  # every pixel NaN

        def expect():
            af = a.astype(np.float64)
            fin = a.ravel()[~np.isnan(af.ravel())]
            mag = finite_max_abs(a)
            if name in ("maximum_of_all_pixels", "minimum_of_all_pixels"):
                w = np.nan if fin.size == 0 else float(
                    fin.max() if name.startswith("max") else fin.min())
                tol = 0.0
            elif name == "mean_of_all_pixels":
                w = np.nan if fin.size == 0 else (
                    float(Fraction(sum(to_obj(fin)), fin.size)) if is_int(dt)
                    else float(np.mean(fin.astype(np.float64))))
                tol = 1e-12 * mag
            elif name == "std_of_all_pixels":
                w = np.nan if fin.size == 0 else float(np.std(fin.astype(np.float64)))
                tol = 1e-12 * mag
            else:
                if is_int(dt):
                    w, tol = float(sum(to_obj(fin))), 0.0  # exact integer sum, as a double
                else:
                    w = float(np.sum(fin.astype(np.float64))) if fin.size else 0.0
                    tol = 1e-12 * float(np.sum(np.abs(fin.astype(np.float64))))
            return Expect("table", columns=[(col, np.array([w]), tol)])
        return [a], {}, expect
    return fn


for _n in ("maximum_of_all_pixels", "minimum_of_all_pixels", "mean_of_all_pixels",
           "std_of_all_pixels", "sum_of_all_pixels"):
    SPECS[_n] = _reduction(_n)


# --------------------------------------------------------------------------------------------
# Hand-written cases beyond the grid: fn(rng) -> list of (label, shape, inputs, params, expect).


def _extra_otsu(rng):
    out = []
    # Issue 14: a smooth uint16 image 211x173 with values 0..60000 (skimage's one bin per value).
    yy, xx = np.mgrid[0:211, 0:173].astype(np.float64)
    f = (np.sin(xx / 23.0) * np.cos(yy / 31.0) + 0.6 * np.exp(-((xx - 120) ** 2 +
                                                                 (yy - 60) ** 2) / 900.0))
    img = np.rint((f - f.min()) / (f.max() - f.min()) * 60000).astype(np.uint16)
    out.append(("smooth-u16-0..60000", [img], {}, lambda: otsu_expect(img)))
    # a narrow integer range (fewer values than 256 bins) and a wide int16 one
    for dt, lo, hi in ((U8, 40, 90), (I16, -30000, 30000), (U32, 0, 70000), (I64, -3000, 2000)):
        a = bimodal_image(rng, dt, (29, 31), lo, hi)
        out.append((f"bimodal-{SHORT[dt]}-{lo}..{hi}", [a], {}, (lambda a=a: otsu_expect(a))))
    c = np.full((7, 9), 42, np.uint16)
    out.append(("constant-u16", [c], {}, lambda: otsu_expect(c)))
    # A float32 range a few ulps wide: numpy's bin edges collapse, the minimum lands in bin 1,
    # bin 0's class is empty and its variance NaN, which numpy's argmax picks (a review found
    # gpix taking the largest number instead: 20 of 60 pixels differed).
    u = np.spacing(np.float32(1000))
    narrow = (np.float32(1000) + u * np.repeat(np.array([0, 1, 2, 18, 19, 20], np.float32), 10))
    narrow = narrow.astype(np.float32).reshape(6, 10)
    out.append(("narrow-f32-ulps", [narrow], {}, lambda: otsu_expect(narrow)))
    for k in range(3):
        base = np.float32(rng.uniform(1, 1e6))
        step = np.spacing(base)
        wide = base + step * rng.integers(0, 40, size=(9, 11)).astype(np.float32)
        wide = wide.astype(np.float32)
        out.append((f"ulps-f32-{k}", [wide], {}, (lambda w=wide: otsu_expect(w))))
    # exactly 16777216 distinct values fit gpix's one-bin-per-value histogram ...
    e = bimodal_image(rng, I32, (13, 15), 0, 5000) - 2500
    e[0, 0], e[-1, -1] = -2 ** 23, 2 ** 23 - 1
    out.append(("span-2^24-values-i32", [e], {}, lambda: otsu_expect(e)))
    # ... one more is documented to raise InvalidArgument (skimage would bincount 2^31 bins)
    w = e.copy()
    w[-1, -1] = 2 ** 23
    out.append(("span-2^24+1-values-i32", [w], {}, lambda: error("16777216")))
    w64 = e.astype(np.int64)
    w64[0, 0] = -2 ** 62
    out.append(("span-2^62-i64", [w64], {}, lambda: error("16777216")))
    return out


def _extra_relabel(rng):
    out = []
    for dt in (U32, U64, I64):
        a = np.zeros((5, 7), dt)
        a[0, 3] = 4000000000
        a[1, 1:3] = 1
        a[3:, 4:] = 4000000000
        a[4, 0] = 1
        a[2, 6] = 7
        out.append((f"ids-1-and-4e9-{SHORT[dt]}", [a], {}, (lambda a=a: _relabel_expect(a))))
    big = np.zeros((3, 4, 5), np.uint64)
    big[0, 0, 4] = np.uint64(2 ** 64 - 1)
    big[1, 2, 0] = 5
    big[2, 3, 3] = np.uint64(2 ** 63)
    out.append(("ids-near-2^64-u64", [big], {}, lambda: _relabel_expect(big)))
    return out


def _extra_threshold(rng):
    out = []
    # exact comparison of 64-bit integers with a float64 value that does not hold them
    a = np.array([[2 ** 62 + 1, 2 ** 62, 2 ** 62 - 1, 2 ** 62 + 512, 2 ** 62 + 513]], np.int64)
    out.append(("i64-near-2^62", [np.repeat(a, 3, axis=0)], {"value": float(2 ** 62)},
                lambda: exact(gt_exact(np.repeat(a, 3, axis=0), float(2 ** 62)).astype(np.uint8))))
    u = np.array([[2 ** 64 - 1, 2 ** 63, 2 ** 63 + 1, 2 ** 63 - 1]], np.uint64)
    uu = np.repeat(u, 2, axis=0)
    out.append(("u64-near-2^63", [uu], {"value": float(2 ** 63)},
                lambda: exact(gt_exact(uu, float(2 ** 63)).astype(np.uint8))))
    return out


def _extra_arith(rng):
    out = []
    # add_scalar with a fraction: integer outputs round half to even
    for dt in (U8, I16, I32):
        a = random_image(rng, dt, (5, 6))
        out.append((f"add_scalar-half-{SHORT[dt]}", "add_scalar", [a], {"value": 0.5},
                    (lambda a=a, dt=dt: exact(round_sat_obj(to_obj(a) + Fraction(1, 2), dt)))))
    return out


def _extra_reductions(rng):
    out = []
    nan1 = np.full((1, 1), np.nan, np.float32)
    for f, col in (("maximum_of_all_pixels", "maximum"), ("minimum_of_all_pixels", "minimum"),
                   ("mean_of_all_pixels", "mean"), ("std_of_all_pixels", "std")):
        out.append((f"all-NaN-1x1-{f}", f, [nan1], {},
                    (lambda col=col: Expect("table", columns=[(col, np.array([np.nan]), 0)]))))
    out.append(("all-NaN-1x1-sum", "sum_of_all_pixels", [nan1], {},
                lambda: Expect("table", columns=[("sum", np.array([0.0]), 0)])))
    big = np.array([2 ** 63 - 1, 2 ** 63 - 3, -2 ** 63, 12345], np.int64)
    out.append(("i64-extremes-max", "maximum_of_all_pixels", [big], {},
                lambda: Expect("table", columns=[("maximum", np.array([float(2 ** 63 - 1)]),
                                                  0)])))
    out.append(("i64-extremes-min", "minimum_of_all_pixels", [big], {},
                lambda: Expect("table", columns=[("minimum", np.array([float(-2 ** 63)]), 0)])))
    return out


def _extra_convert(rng):
    """Every (source, target) dtype pair once, at one small shape."""
    out = []
    for i, src in enumerate(ALL_DTYPES):
        for j, dst in enumerate(ALL_DTYPES):
            inputs, params, expect = _convert_case(rng, src, (3, 17), i + j, dst)
            out.append((f"pair-{SHORT[src]}-to-{SHORT[dst]}", inputs, params, expect))
    return out


# name -> generator; entries are (label, inputs, params, expect) for that filter, or
# (label, filter, inputs, params, expect) where the generator serves several filters.
EXTRA = {"threshold_otsu": _extra_otsu, "relabel_sequential": _extra_relabel,
         "threshold": _extra_threshold, "add_scalar": _extra_arith,
         "sum_of_all_pixels": _extra_reductions, "convert": _extra_convert}

# --------------------------------------------------------------------------------------------
# The grid

BASE_SHAPE = {1: (61,), 2: (23, 41), 3: (5, 11, 9)}
EXTRA_SHAPES = {1: [(1,), (2,)], 2: [(1, 1), (1, 17), (19, 1), (37, 53)],
                3: [(1, 1, 1), (1, 6, 1), (4, 1, 7), (3, 5, 1), (7, 13, 11)]}


# Filters whose result is a table (from `gpix filters --json`, set by main).
TABLE_FILTERS = set()


class Case:
    def __init__(self, filt, label, shape, params, inputs, expect, seed):
        self.filter = filt
        self.label = label
        self.shape = shape
        self.params = params
        self.inputs = inputs
        self.expect = expect
        self.seed = seed

    def describe(self):
        dts = "+".join(SHORT.get(np.dtype(a.dtype), str(a.dtype)) for a in self.inputs)
        return f"{self.filter} [{self.label}] dtype={dts} shape={self.shape} params={self.params}"


def case_rng(seed, *key):
    return np.random.default_rng([seed, zlib.crc32(repr(key).encode())])


def build_cases(catalog, seed, pattern, only_dtypes=None):
    """The cases of every compared filter matching pattern (only_dtypes: a set of dtypes to
    keep, for quick local runs), and the catalog problems found on the way."""
    cases = []
    problems = []
    names = [f["name"] for f in catalog]
    for extra in set(SPECS) - set(names):
        problems.append(f"'{extra}' is compared here but is not in the catalog")
    for extra in set(NO_COUNTERPART) - set(names):
        problems.append(f"'{extra}' is listed in NO_COUNTERPART but is not in the catalog")
    for both in set(SPECS) & set(NO_COUNTERPART):
        problems.append(f"'{both}' is both compared and listed in NO_COUNTERPART")
    for fi, f in enumerate(catalog):
        name = f["name"]
        if name not in SPECS:
            if name not in NO_COUNTERPART:
                problems.append(f"catalog entry '{name}' is neither compared (SPECS) nor listed "
                                "in NO_COUNTERPART with a reason")
            continue
        if pattern and not re.search(pattern, name):
            continue
        dtypes = []
        for d in f["dtypes"]:
            if d not in BY_NAME:
                problems.append(f"{name}: unknown dtype '{d}' in the catalog")
            else:
                dtypes.append(BY_NAME[d])
        dims = sorted(int(d) for d in f["dims"])
        if not dtypes or not dims:
            problems.append(f"{name}: no dtypes or dims in the catalog")
            continue
        if not ((REQUIRED_DTYPES <= set(dtypes) or name == "relabel_sequential")
                and (U64 in dtypes or I64 in dtypes)):
            problems.append(f"{name}: claims {[SHORT[d] for d in dtypes]}, not every dtype "
                            "this suite requires")
        base_dim = 2 if 2 in dims else dims[-1]
        plan = []  # (dtype, shape, variant)
        # every dtype the filter claims, at the base shape, variants cycling
        for k, dt in enumerate(dtypes):
            plan.append((dt, BASE_SHAPE[base_dim], k))
        # the other dims' base shapes and the odd / 1-pixel shapes on rotating dtypes
        j = fi
        for d in dims:
            shapes = ([BASE_SHAPE[d]] if d != base_dim else []) + EXTRA_SHAPES[d]
            for s in shapes:
                j += 3
                plan.append((dtypes[j % len(dtypes)], s, j))
        for dt, shape, var in plan:
            if only_dtypes and dt not in only_dtypes:
                continue
            key = (name, SHORT[dt], shape, var)
            rng = case_rng(seed, *key)
            try:
                inputs, params, expect = SPECS[name](rng, dt, shape, var)
            except Exception as e:  # a spec that cannot build its case is a failure
                problems.append(f"{name} {SHORT[dt]} {shape}: building the case failed: {e!r}")
                continue
            cases.append(Case(name, f"v{var}", shape, params, inputs, expect, seed))
    # hand-written cases
    for owner, gen in EXTRA.items():
        if owner not in names:
            continue
        rng = case_rng(seed, "extra", owner)
        for entry in gen(rng):
            if len(entry) == 4:
                label, inputs, params, expect = entry
                filt = owner
            else:
                label, filt, inputs, params, expect = entry
            if pattern and not re.search(pattern, filt):
                continue
            if only_dtypes and any(np.dtype(a.dtype) not in only_dtypes for a in inputs):
                continue
            cases.append(Case(filt, label, inputs[0].shape, params, inputs, expect, seed))
    return cases, problems


# --------------------------------------------------------------------------------------------
# Running gpix


def fmt_param(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def read_table(path):
    with open(path) as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip()]
    cols = lines[0].split(",")
    rows = [[float(x) for x in ln.split(",")] for ln in lines[1:]]
    data = np.array(rows, dtype=np.float64).reshape(len(rows), len(cols))
    return {c: data[:, i] for i, c in enumerate(cols)}


def run_gpix(cmd, env, timeout):
    """Runs gpix; while its binary or libraries are missing or being relinked (a build in the
    same tree), waits and retries for up to five minutes."""
    deadline = time.monotonic() + 300
    while True:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
            relinking = r.returncode == 127 and "error while loading shared libraries" in r.stderr
        except (FileNotFoundError, PermissionError) as e:
            r, relinking = e, True
        except OSError as e:  # ETXTBSY: the binary is being written
            if e.errno != 26:
                raise
            r, relinking = e, True
        if not relinking or time.monotonic() > deadline:
            if isinstance(r, Exception):
                raise r
            return r
        time.sleep(5)


def run_case(gpix, case, workdir, index, env, timeout):
    """Returns (ok, message, seconds)."""
    t0 = time.monotonic()
    d = os.path.join(workdir, f"c{index:04d}")
    os.makedirs(d, exist_ok=True)
    try:
        paths = []
        for i, a in enumerate(case.inputs):
            p = os.path.join(d, f"in{i}.mha")
            write_mha(p, a)
            paths.append(p)
        exp = case.expect()
        # Table filters write CSV (gpix run refuses another extension), errors included.
        table = exp.kind == "table" or case.filter in TABLE_FILTERS
        out = os.path.join(d, "out.csv" if table else "out.mha")
        cmd = [gpix, "run", case.filter] + paths + [out]
        for k, v in case.params.items():
            cmd += [f"--{k}", fmt_param(v)]
        r = run_gpix(cmd, env, timeout)
        if exp.kind == "error":
            msg = r.stderr.strip()
            if r.returncode == 0:
                msg = f"gpix succeeded; expected an error matching '{exp.want}'"
            elif not re.search(exp.want, msg):
                msg = f"gpix's message '{msg}' does not match '{exp.want}'"
            else:
                msg = None
            if msg:
                msg += f"\n    command: {' '.join(cmd)}"
            return msg is None, msg, time.monotonic() - t0
        if r.returncode != 0:
            return False, (f"gpix exited {r.returncode}: {(r.stderr or r.stdout).strip()[:600]}"
                           f"\n    command: {' '.join(cmd)}"), time.monotonic() - t0
        got = read_table(out) if exp.kind == "table" else read_mha(out)
        msg = compare(exp, got)
        if msg:
            msg += f"\n    command: {' '.join(cmd)}"
        return msg is None, msg, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return False, f"gpix timed out after {timeout} s", time.monotonic() - t0
    except Exception as e:
        return False, f"{e!r}\n{traceback.format_exc(limit=3)}", time.monotonic() - t0


# Differences found by this suite that are gpix bugs still open (issue 14), each with its
# cause. A failing case of a listed (filter, input dtypes) pair is printed as KNOWN with the
# cause and counted apart, not hidden; every other difference fails the run. Take a pair off
# the list when its bug is fixed.
KNOWN_FAILURES = {}


def known_failure(case):
    dts = "+".join(SHORT.get(np.dtype(a.dtype), str(a.dtype)) for a in case.inputs)
    return KNOWN_FAILURES.get((case.filter, dts))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpix", required=True, help="the gpix command line tool")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("GPIX_DIFF_SEED",
                                                                   DEFAULT_SEED)))
    ap.add_argument("--jobs", type=int, default=2, help="gpix processes at a time")
    ap.add_argument("-k", "--filter", default="", help="only filters whose name matches REGEX")
    ap.add_argument("--dtypes", default="",
                    help="only these input dtypes, e.g. u8,f32 (quick local runs; CI runs all)")
    ap.add_argument("--keep", help="keep the case files in this folder")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per gpix run")
    ap.add_argument("--verbose", "-v", action="store_true", help="print passing cases too")
    ap.add_argument("--timings", action="store_true", help="print every filter's run time")
    args = ap.parse_args()

    print(f"test_diff_scipy: seed {args.seed} (rerun with --seed {args.seed}); numpy "
          f"{np.__version__}, scipy {scipy.__version__}, scikit-image {skimage.__version__}; "
          f"python {sys.executable}", flush=True)
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        r = run_gpix([args.gpix, "filters", "--json"], env, 300)
        catalog = json.loads(r.stdout)
        TABLE_FILTERS.update(f["name"] for f in catalog if f.get("output") == "table")
    except Exception as e:
        print(f"FAIL: cannot read the catalog from '{args.gpix} filters --json': {e!r}")
        print("0 passed, 1 failed")
        return 1

    only = None
    if args.dtypes:
        only = {BY_NAME[d.strip()] for d in args.dtypes.split(",") if d.strip()}
    cases, problems = build_cases(catalog, args.seed, args.filter, only)
    # Each (filter, input dtypes) pair's first case goes first: a cold kernel variant is then
    # compiled once, not by both workers at the same time.
    seen = set()

    def first_of_pair(c):
        key = (c.filter, tuple(np.dtype(a.dtype) for a in c.inputs))
        first = key not in seen
        seen.add(key)
        return 0 if first else 1
    cases = [c for _, c in sorted(((first_of_pair(c), i), c) for i, c in enumerate(cases))]
    compared = sorted({c.filter for c in cases})
    n_compared = len(set(SPECS) & {f["name"] for f in catalog})
    print(f"catalog: {len(catalog)} filters; compared: {n_compared}; no counterpart: "
          f"{', '.join(sorted(NO_COUNTERPART))}; {len(cases)} cases", flush=True)
    if args.list:
        for c in cases:
            print("  " + c.describe())
        return 0

    workdir = args.keep or tempfile.mkdtemp(prefix="gpix_diff_")
    os.makedirs(workdir, exist_ok=True)
    passed = failed = known = 0
    for p in problems:
        failed += 1
        print(f"FAIL: {p}", flush=True)
    t0 = time.monotonic()
    times = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(run_case, args.gpix, c, workdir, i, env, args.timeout): c
                   for i, c in enumerate(cases)}
        for fut in concurrent.futures.as_completed(futures):
            c = futures[fut]
            ok, msg, secs = fut.result()
            times[c.filter] = times.get(c.filter, 0.0) + secs
            why = known_failure(c)
            if ok and why is None:
                passed += 1
                if args.verbose:
                    print(f"ok   {c.describe()} ({secs:.1f} s)", flush=True)
            elif ok:
                passed += 1
            elif why is not None:
                known += 1
                print(f"KNOWN {c.describe()} seed={c.seed}: {why}\n    {msg}", flush=True)
            else:
                failed += 1
                print(f"FAIL {c.describe()} seed={c.seed}\n    {msg}", flush=True)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    slow = sorted(times.items(), key=lambda kv: -kv[1])[:None if args.timings else 5]
    print(f"{len(compared)} filters in {time.monotonic() - t0:.0f} s; slowest: " +
          ", ".join(f"{k} {v:.0f} s" for k, v in slow))
    if failed:
        print(f"reproduce: {sys.argv[0]} --gpix {args.gpix} --seed {args.seed} -k NAME")
    print(f"{known} cases differ for the known reasons in KNOWN_FAILURES")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
