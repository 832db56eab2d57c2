#!/usr/bin/env python3
"""The peers' side of the performance suite (bench/suite.py, issue 17): runs the suite's cases
through CuPy (cupyx.scipy.ndimage), cuCIM (cucim.skimage) or pyclesperanto and writes one JSON
line per case, in the format of bench/bench_grid.cpp.

    suite_peers.py --peer cupy|cucim|cle --cases CASES.json --data DIR --json OUT
                   [--max-reps 15] [--min-reps 3] [--target-ms 200] [--max-call-s 1.5]
                   [--deadline EPOCH_S] [--case-timeout-s 60] [--cle-device NAME]
                   [--prewarm | --first-call]

Each peer maps gpix's catalog names onto its own functions (PEERS below); a case whose filter
has no counterpart there is left out. A mapping marked APPROX does comparable but not identical
work (its note says how); the report marks those rows. Timing is the same as bench_grid's: wall
clock around the call and a synchronisation (CuPy / cuCIM: the device; pyclesperanto: every
kernel waits for its end, wait_for_kernel_to_finish), two warm-up calls, then repetitions up to
--target-ms of timed work; the device copy of each shape and dtype is timed the same way (CuPy:
cudaMemcpyAsync device to device; pyclesperanto: its copy kernel).

SUITE_FAKE_CUPY=1 runs the CuPy mappings on numpy and scipy.ndimage (no GPU): the suite's own
tests use it to check the mappings' calls without a GPU.
"""

import argparse
import json
import math
import os
import sys
import time
import warnings

# ---------------------------------------------------------------------------------------------
# Inputs shared with bench_grid.cpp: hash noise and the blob files bench/suite.py writes.


def hash_noise(xp, shape, dtype, seed):
    """The suite's noise, bit for bit as bench_grid's hash32: uint32 arithmetic wraps."""
    n = math.prod(shape)
    u = xp.uint32
    h = xp.arange(n, dtype=u) * u(2654435761) + u((seed * 0x85EBCA77) & 0xFFFFFFFF)
    h ^= h >> u(15)
    h *= u(0x2C1B3C6D)
    h ^= h >> u(12)
    h *= u(0x297A2D39)
    h ^= h >> u(15)
    # Signed types take the hash's top bits as non-negative values (as camera data are);
    # float64 has float32's values.
    if dtype == "float32":
        v = (h >> u(8)).astype(xp.float32) * xp.float32(1000.0 / 16777216.0)
    elif dtype == "float64":
        v = (h >> u(8)).astype(xp.float64) * (1000.0 / 16777216.0)
    elif dtype == "uint8":
        v = (h >> u(24)).astype(xp.uint8)
    elif dtype == "int8":
        v = (h >> u(25)).astype(xp.int8)
    elif dtype == "uint16":
        v = (h >> u(16)).astype(xp.uint16)
    elif dtype == "int16":
        v = (h >> u(17)).astype(xp.int16)
    elif dtype == "uint32":
        v = h
    elif dtype == "int32":
        v = (h >> u(1)).astype(xp.int32)
    else:
        raise ValueError(f"no noise of {dtype}")
    return v.reshape(shape)


def shape_key(shape):
    return "x".join(str(d) for d in shape)


def read_raw(np, data, name, shape, dtype):
    path = os.path.join(
        data, f"{name}_{shape_key(shape)}.{ {'uint8': 'u8', 'float32': 'f32'}[dtype] }"
    )
    a = np.fromfile(path, dtype=dtype)
    if a.size != math.prod(shape):
        raise ValueError(f"{path} holds {a.size} values, not {math.prod(shape)}")
    return a.reshape(shape)


def make_blobs(xp, ndi, shape):
    """A realistic binary blob image and its intensity image (bench/suite.py writes them):
    smoothed noise thresholded at its 75th percentile (25% foreground, blobs of ~10-20 pixels
    in 2D, ~10 in 3D, some touching), and 200 + 3000 x the mask smoothed by sigma 1, plus 20%
    of the noise, rounded: whole numbers in [200, 3400], exact in float32 and uint16."""
    n = hash_noise(xp, shape, "float32", 7)
    f = ndi.gaussian_filter(n, 4.0 if len(shape) == 2 else 2.5, mode="nearest")
    t = xp.percentile(f, 75)
    blob = (f > t).astype(xp.uint8)
    soft = ndi.gaussian_filter(blob.astype(xp.float32), 1.0, mode="nearest")
    img = xp.rint(200 + 3000 * soft + xp.float32(0.2) * n).astype(xp.float32)
    return blob, img


# ---------------------------------------------------------------------------------------------
# Parameters in gpix's names (bench/suite.py writes them as gpix's catalog has them).


def sizes(p, nd):
    """(2r+1) per axis in numpy order (z, y, x) from radius_x/_y/_z."""
    r = [int(p.get("radius_x", 1)), int(p.get("radius_y", 1)), int(p.get("radius_z", 0))]
    return tuple(2 * v + 1 for v in ([r[2], r[1], r[0]] if nd == 3 else [r[1], r[0]]))


def radii(p, nd):
    return dict(
        radius_x=int(p.get("radius_x", 1)),
        radius_y=int(p.get("radius_y", 1)),
        radius_z=int(p.get("radius_z", 0)) if nd == 3 else 0,
    )


def sigmas(p, nd):
    s = [float(p.get("sigma_x", 2)), float(p.get("sigma_y", 2)), float(p.get("sigma_z", 0))]
    return tuple([s[2], s[1], s[0]] if nd == 3 else [s[1], s[0]])


def radius_of(p):
    return int(p.get("radius", 1))


def affine_numpy(p, nd):
    """gpix's affine (output (x, y, z) -> input (x, y, z), rows m0*, m1*, m2*) as scipy's
    affine_transform matrix and offset in (z, y, x) order."""
    m = [[float(p.get(f"m{r}{c}", 1.0 if r == c else 0.0)) for c in range(4)] for r in range(3)]
    axes = [2, 1, 0] if nd == 3 else [1, 0]  # numpy axis k is gpix axis axes[k]
    mat = [[m[axes[i]][axes[j]] for j in range(nd)] for i in range(nd)]
    off = [m[axes[i]][3] for i in range(nd)]
    return mat, off


def resample_factors(p, nd):
    f = [float(p.get("factor_x", 2)), float(p.get("factor_y", 2)), float(p.get("factor_z", 1))]
    return tuple([f[2], f[1], f[0]] if nd == 3 else [f[1], f[0]])


def crop_box(p, shape):
    """Slices (numpy order) of gpix's crop origin/size (size 0: to the end)."""
    nd = len(shape)
    names = ["z", "y", "x"][3 - nd :]
    out = []
    for k, a in enumerate(names):
        o, s = int(p.get(f"origin_{a}", 0)), int(p.get(f"size_{a}", 0))
        out.append(slice(o, o + s if s else shape[k]))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# The peers. Each maps a gpix filter name to fn(inputs, params, ndim) and, where the work is not
# the same as gpix's, a note (APPROX). Functions return what they made; the harness drops it
# after synchronising.


class Peer:
    name = ""
    approx = {}

    def ops(self):
        return {}

    def sync(self):
        pass

    def version(self):
        return ""

    def free(self):
        pass


class CupyPeer(Peer):
    name = "cupy"

    def __init__(self, fake=False):
        self.fake = fake
        if fake:
            import numpy as xp
            import scipy.ndimage as ndi
        else:
            import cupy as xp
            import cupyx.scipy.ndimage as ndi
        self.xp, self.ndi = xp, ndi
        import numpy

        self.np = numpy

    def version(self):
        return ("numpy " if self.fake else "cupy ") + self.xp.__version__

    def device_name(self):
        if self.fake:
            return "CPU (numpy, SUITE_FAKE_CUPY)"
        return self.xp.cuda.runtime.getDeviceProperties(0)["name"].decode()

    def sync(self):
        if not self.fake:
            self.xp.cuda.get_current_stream().synchronize()

    def free(self):
        if not self.fake:
            self.xp.get_default_memory_pool().free_all_blocks()

    def noise(self, shape, dtype, seed):
        return hash_noise(self.xp, shape, dtype, seed)

    def from_host(self, a):
        return self.xp.asarray(a)

    def to_host(self, a):
        return a if self.fake else a.get()

    def label_structure(self, nd, connectivity):
        """scipy's structuring element for label as a numpy array (cupyx's label takes one)."""
        np = self.np
        return np.abs(np.indices((3,) * nd) - 1).sum(axis=0) <= (
            nd if connectivity == "full" else 1
        )

    def label_full(self, blob):
        return self.ndi.label(blob, structure=self.label_structure(blob.ndim, "full"))[0]

    def copy_fn(self, a):
        b = self.xp.empty_like(a)
        if self.fake:
            return lambda: self.np.copyto(b, a)
        return lambda: b.data.copy_from_device_async(a.data, a.nbytes)

    approx = {
        "variance_box": "composite: uniform_filter(a*a) - uniform_filter(a)^2 in gpix's compute "
        "type (float32; float64 for float64 and 32/64-bit integers)",
        "sobel": "composite: ndimage.sobel per axis in gpix's compute type (float32; float64 for "
        "float64 and 32/64-bit integers), sqrt of the sum of squares",
        "gradient_x": "cupy.gradient (one-sided at the borders)",
        "gradient_y": "cupy.gradient (one-sided at the borders)",
        "gradient_z": "cupy.gradient (one-sided at the borders)",
        "difference_of_gaussian": "composite: two gaussian_filter calls and a subtraction",
        "unsharp_mask": "composite: gaussian_filter, then a + (a - blur) in gpix's compute type "
        "(float32; float64 for float64 and 32/64-bit integers), cast back",
        "binary_erosion": "binary_erosion with a full (2r+1)^n structure, border_value=1",
        "binary_dilation": "binary_dilation with a full (2r+1)^n structure",
        "binary_opening": "binary_opening with a full (2r+1)^n structure (zero border)",
        "binary_closing": "binary_closing with a full (2r+1)^n structure (zero border)",
        "label_statistics": "composite: sum_labels, mean, minimum, maximum with index 1..n",
        "rescale_intensity": "composite: (a - a.min()) / (a.max() - a.min()) in float32",
        "convert": "astype (truncates where gpix rounds half to even)",
        "@stats": "composite: a.min(), a.max(), a.sum() to the host (three passes)",
    }

    def ops(self):
        xp, ndi = self.xp, self.ndi
        f32 = xp.float32
        near = dict(mode="nearest")

        def h(v):  # to the host, as gpix's table results come back
            return float(v)

        # The floating type gpix computes these filters in (launch.cpp's compute_type): float32
        # for 8- and 16-bit integers and float32, float64 for float64 and 32/64-bit integers.
        # A peer computing a float64 image in float32 would move half the bytes at half the
        # precision (suite_report.converted's concern, from inside the composite).
        def work(a):
            return xp.float64 if a.dtype.itemsize > 2 and a.dtype != f32 else f32

        def variance(i, p, nd):
            a = i[0].astype(work(i[0]))
            m = ndi.uniform_filter(a, sizes(p, nd), **near)
            return ndi.uniform_filter(a * a, sizes(p, nd), **near) - m * m

        def sobel(i, p, nd):
            a = i[0].astype(work(i[0]))
            acc = None
            for ax in range(nd):
                s = ndi.sobel(a, axis=ax, **near)
                acc = s * s if acc is None else acc + s * s
            return xp.sqrt(acc)

        def unsharp(i, p, nd):
            a = i[0]
            af = a.astype(work(a))
            s = float(p.get("sigma", 1))
            r = af + float(p.get("amount", 1)) * (af - ndi.gaussian_filter(af, s, **near))
            if xp.issubdtype(a.dtype, xp.floating):
                return r.astype(a.dtype)
            info = xp.iinfo(a.dtype)
            return xp.clip(xp.rint(r), info.min, info.max).astype(a.dtype)

        def struct(p, nd):
            return xp.ones((2 * radius_of(p) + 1,) * nd, dtype=bool)

        def label_stats(i, p, nd):
            lab, img = i
            n = int(lab.max())
            idx = xp.arange(1, n + 1)
            return (
                ndi.sum_labels(img, lab, idx),
                ndi.mean(img, lab, idx),
                ndi.minimum(img, lab, idx),
                ndi.maximum(img, lab, idx),
            )

        def invert(i, p, nd):
            a = i[0]
            return 1 - a if xp.issubdtype(a.dtype, xp.floating) else ~a

        def rescale(i, p, nd):
            a = i[0] if i[0].dtype == xp.float64 else i[0].astype(f32)
            lo, hi = a.min(), a.max()
            return (a - lo) / (hi - lo)

        def hist(i, p, nd):
            a = i[0]
            lo, hi = float(p.get("minimum", 0)), float(p.get("maximum", 0))
            if lo == hi:
                lo, hi = float(a.min()), float(a.max())
            c, _ = xp.histogram(a, bins=int(p.get("n_bins", 256)), range=(lo, hi))
            return self.to_host(c)

        def affine(i, p, nd):
            mat, off = affine_numpy(p, nd)
            order = 1 if p.get("interpolation", "linear") == "linear" else 0
            return ndi.affine_transform(i[0], xp.asarray(mat), offset=off, order=order, **near)

        def resample(i, p, nd):
            order = 1 if p.get("interpolation", "linear") == "linear" else 0
            return ndi.zoom(i[0], resample_factors(p, nd), order=order, grid_mode=True, **near)

        return {
            "gaussian_blur": lambda i, p, nd: ndi.gaussian_filter(
                i[0], sigmas(p, nd), truncate=4.0, **near
            ),
            "mean_box": lambda i, p, nd: ndi.uniform_filter(i[0], sizes(p, nd), **near),
            "minimum_box": lambda i, p, nd: ndi.minimum_filter(i[0], sizes(p, nd), **near),
            "maximum_box": lambda i, p, nd: ndi.maximum_filter(i[0], sizes(p, nd), **near),
            "median_box": lambda i, p, nd: ndi.median_filter(i[0], sizes(p, nd), **near),
            "variance_box": variance,
            "top_hat_box": lambda i, p, nd: ndi.white_tophat(i[0], sizes(p, nd), **near),
            "bottom_hat_box": lambda i, p, nd: ndi.black_tophat(i[0], sizes(p, nd), **near),
            "sobel": sobel,
            "laplace": lambda i, p, nd: ndi.laplace(i[0], **near),
            "gradient_x": lambda i, p, nd: xp.gradient(i[0], axis=nd - 1),
            "gradient_y": lambda i, p, nd: xp.gradient(i[0], axis=nd - 2),
            "gradient_z": lambda i, p, nd: xp.gradient(i[0], axis=0),
            "difference_of_gaussian": lambda i, p, nd: (
                ndi.gaussian_filter(i[0], float(p["sigma1"]), **near)
                - ndi.gaussian_filter(i[0], float(p["sigma2"]), **near)
            ),
            "unsharp_mask": unsharp,
            "threshold": lambda i, p, nd: i[0] > float(p.get("value", 0)),
            "binary_erosion": lambda i, p, nd: ndi.binary_erosion(
                i[0], struct(p, nd), border_value=1
            ),
            "binary_dilation": lambda i, p, nd: ndi.binary_dilation(i[0], struct(p, nd)),
            "binary_opening": lambda i, p, nd: ndi.binary_opening(i[0], struct(p, nd)),
            "binary_closing": lambda i, p, nd: ndi.binary_closing(i[0], struct(p, nd)),
            "binary_and": lambda i, p, nd: xp.logical_and(i[0], i[1]),
            "binary_not": lambda i, p, nd: xp.logical_not(i[0]),
            "connected_components": lambda i, p, nd: ndi.label(
                i[0], structure=self.label_structure(nd, p.get("connectivity", "full"))
            ),
            "label_statistics": label_stats,
            "add_images": lambda i, p, nd: i[0] + i[1],
            "subtract_images": lambda i, p, nd: i[0] - i[1],
            "multiply_images": lambda i, p, nd: i[0] * i[1],
            "divide_images": lambda i, p, nd: i[0] / i[1],
            "minimum_images": lambda i, p, nd: xp.fmin(i[0], i[1]),
            "maximum_images": lambda i, p, nd: xp.fmax(i[0], i[1]),
            "add_scalar": lambda i, p, nd: i[0] + i[0].dtype.type(float(p.get("value", 1))),
            "multiply_scalar": lambda i, p, nd: i[0] * i[0].dtype.type(float(p.get("factor", 2))),
            "absolute": lambda i, p, nd: xp.abs(i[0]),
            "power": lambda i, p, nd: xp.power(i[0], f32(float(p.get("exponent", 2)))),
            "sqrt": lambda i, p, nd: xp.sqrt(i[0]),
            "exp": lambda i, p, nd: xp.exp(i[0]),
            "log": lambda i, p, nd: xp.log(i[0]),
            "clip": lambda i, p, nd: xp.clip(
                i[0], float(p.get("minimum", 0)), float(p.get("maximum", 255))
            ),
            "invert": invert,
            "rescale_intensity": rescale,
            "convert": lambda i, p, nd: i[0].astype(p.get("dtype", "float32")),
            "crop": lambda i, p, nd: i[0][crop_box(p, i[0].shape)].copy(),
            "flip": lambda i, p, nd: xp.ascontiguousarray(xp.flip(i[0], axis=nd - 1)),
            "transpose": lambda i, p, nd: xp.ascontiguousarray(xp.swapaxes(i[0], nd - 1, nd - 2)),
            "resample": resample,
            "affine_transform": affine,
            "maximum_z_projection": lambda i, p, nd: i[0].max(axis=0),
            "minimum_z_projection": lambda i, p, nd: i[0].min(axis=0),
            "mean_z_projection": lambda i, p, nd: i[0].mean(axis=0, dtype=work(i[0])),
            "sum_z_projection": lambda i, p, nd: i[0].sum(axis=0, dtype=work(i[0])),
            "std_z_projection": lambda i, p, nd: i[0].std(axis=0, dtype=work(i[0])),
            "minimum_of_all_pixels": lambda i, p, nd: h(i[0].min()),
            "maximum_of_all_pixels": lambda i, p, nd: h(i[0].max()),
            "sum_of_all_pixels": lambda i, p, nd: h(i[0].sum()),
            "mean_of_all_pixels": lambda i, p, nd: h(i[0].mean()),
            "std_of_all_pixels": lambda i, p, nd: h(i[0].std()),
            "histogram": hist,
            "@stats": lambda i, p, nd: (h(i[0].min()), h(i[0].max()), h(i[0].sum())),
        }


class CucimPeer(CupyPeer):
    name = "cucim"

    def __init__(self):
        super().__init__(fake=False)
        import cucim
        import cucim.skimage as cs
        import cucim.skimage.exposure
        import cucim.skimage.filters
        import cucim.skimage.measure
        import cucim.skimage.morphology
        import cucim.skimage.segmentation
        import cucim.skimage.transform
        import cucim.skimage.util

        self.cucim, self.cs = cucim, cs

    def version(self):
        return f"cucim {self.cucim.__version__}, cupy {self.xp.__version__}"

    def label_full(self, blob):
        return self.cs.measure.label(blob, connectivity=blob.ndim)

    approx = {
        "gaussian_blur": "filters.gaussian(preserve_range=True): float output for integer images",
        "sobel": "filters.sobel: magnitude divided by sqrt(ndim), reflect borders",
        "laplace": "filters.laplace(ksize=3) (sign and borders as scikit-image)",
        "unsharp_mask": "filters.unsharp_mask(preserve_range=True): float output",
        "binary_erosion": "morphology.binary_erosion(footprint_rectangle) (border: mode='ignore')",
        "binary_dilation": "morphology.binary_dilation(footprint_rectangle)",
        "binary_opening": "morphology.binary_opening(footprint_rectangle)",
        "binary_closing": "morphology.binary_closing(footprint_rectangle)",
        "relabel_sequential": "segmentation.relabel_sequential (also the forward and inverse maps)",
        "label_statistics": "measure.regionprops_table(label, area, intensity_mean/min/max)",
        "rescale_intensity": "exposure.rescale_intensity(out_range=(0, 1))",
        "resample": "transform.rescale(mode='edge', anti_aliasing=False, preserve_range=True)",
    }

    def ops(self):
        cs = self.cs

        def rect(p, nd):
            return cs.morphology.footprint_rectangle(sizes(p, nd))

        def brect(p, nd):
            return cs.morphology.footprint_rectangle((2 * radius_of(p) + 1,) * nd)

        def otsu(i, p, nd):
            return i[0] > cs.filters.threshold_otsu(i[0])

        def resample(i, p, nd):
            order = 1 if p.get("interpolation", "linear") == "linear" else 0
            return cs.transform.rescale(
                i[0],
                resample_factors(p, nd),
                order=order,
                mode="edge",
                anti_aliasing=False,
                preserve_range=True,
            )

        def regionprops(i, p, nd):
            return cs.measure.regionprops_table(
                i[0],
                i[1],
                properties=("label", "area", "intensity_mean", "intensity_min", "intensity_max"),
            )

        return {
            "gaussian_blur": lambda i, p, nd: cs.filters.gaussian(
                i[0], sigma=sigmas(p, nd), mode="nearest", preserve_range=True, truncate=4.0
            ),
            "minimum_box": lambda i, p, nd: cs.morphology.erosion(
                i[0], rect(p, nd), mode="nearest"
            ),
            "maximum_box": lambda i, p, nd: cs.morphology.dilation(
                i[0], rect(p, nd), mode="nearest"
            ),
            "median_box": lambda i, p, nd: cs.filters.median(i[0], sizes(p, nd), mode="nearest"),
            "top_hat_box": lambda i, p, nd: cs.morphology.white_tophat(
                i[0], rect(p, nd), mode="nearest"
            ),
            "bottom_hat_box": lambda i, p, nd: cs.morphology.black_tophat(
                i[0], rect(p, nd), mode="nearest"
            ),
            "sobel": lambda i, p, nd: cs.filters.sobel(i[0]),
            "laplace": lambda i, p, nd: cs.filters.laplace(i[0], ksize=3),
            "difference_of_gaussian": lambda i, p, nd: cs.filters.difference_of_gaussians(
                i[0], float(p["sigma1"]), float(p["sigma2"]), mode="nearest"
            ),
            "unsharp_mask": lambda i, p, nd: cs.filters.unsharp_mask(
                i[0],
                radius=float(p.get("sigma", 1)),
                amount=float(p.get("amount", 1)),
                preserve_range=True,
            ),
            "threshold_otsu": otsu,
            "binary_erosion": lambda i, p, nd: cs.morphology.binary_erosion(i[0], brect(p, nd)),
            "binary_dilation": lambda i, p, nd: cs.morphology.binary_dilation(i[0], brect(p, nd)),
            "binary_opening": lambda i, p, nd: cs.morphology.binary_opening(i[0], brect(p, nd)),
            "binary_closing": lambda i, p, nd: cs.morphology.binary_closing(i[0], brect(p, nd)),
            "connected_components": lambda i, p, nd: cs.measure.label(
                i[0], connectivity=nd if p.get("connectivity", "full") == "full" else 1
            ),
            "relabel_sequential": lambda i, p, nd: cs.segmentation.relabel_sequential(i[0]),
            "label_statistics": regionprops,
            "invert": lambda i, p, nd: cs.util.invert(i[0]),
            "rescale_intensity": lambda i, p, nd: cs.exposure.rescale_intensity(
                i[0],
                in_range="image",
                out_range=(float(p.get("out_min", 0)), float(p.get("out_max", 1))),
            ),
            "resample": resample,
        }


class ClePeer(Peer):
    name = "cle"

    def __init__(self, device=""):
        import numpy as np
        import pyclesperanto as cle

        self.np, self.cle = np, cle
        self.dev = cle.select_device(device)
        # Every kernel call waits for its end: the wall clock then times the device's work.
        cle.wait_for_kernel_to_finish(True)
        try:
            import cupy  # noqa: F401  (noise made on the GPU when CuPy is there: faster)

            self.gen = cupy
        except ImportError:
            self.gen = None

    def version(self):
        return f"pyclesperanto {self.cle.__version__}"

    def device_name(self):
        return str(self.dev.name)

    def noise(self, shape, dtype, seed):
        xp = self.gen if self.gen is not None else self.np
        h = hash_noise(xp, shape, dtype, seed)
        return self.cle.push(h if xp is self.np else h.get())

    def from_host(self, a):
        return self.cle.push(a)

    def to_host(self, a):
        return a.get() if hasattr(a, "get") else a

    def label_full(self, blob):
        return self.cle.connected_components_labeling(blob, connectivity="box")

    def copy_fn(self, a):
        b = self.cle.create_like(a)
        return lambda: self.cle.copy(a, b)

    approx = {
        "sobel": "sobel (pyclesperanto's kernel and magnitude)",
        "laplace": "laplace_diamond (pyclesperanto's sign and output type)",
        "gradient_x": "gradient_x (pyclesperanto's differences, not divided by 2)",
        "gradient_y": "gradient_y (pyclesperanto's differences, not divided by 2)",
        "gradient_z": "gradient_z (pyclesperanto's differences, not divided by 2)",
        "label_statistics": "statistics_of_labelled_pixels (many more columns: boxes, shape, ...)",
        "invert": "invert (-a: the negative, not gpix's 1 - a)",
        "rescale_intensity": "normalize (to [0, 1])",
        "resample": "scale(resize=True, interpolate=True)",
        "affine_transform": "affine_transform(interpolate=True) with the same 4x4 matrix",
        "@stats": "composite: minimum_of_all_pixels + maximum_of_all_pixels + sum_of_all_pixels",
    }

    def ops(self):
        cle = self.cle

        def g(p, nd):
            s = sigmas(p, nd)[::-1]
            return dict(sigma_x=s[0], sigma_y=s[1], sigma_z=s[2] if nd == 3 else 0)

        def br(p, nd):
            r = radius_of(p)
            return dict(radius_x=r, radius_y=r, radius_z=r if nd == 3 else 0)

        def dog(i, p, nd):
            s1, s2 = float(p["sigma1"]), float(p["sigma2"])
            z1, z2 = (s1, s2) if nd == 3 else (0, 0)
            return cle.difference_of_gaussian(
                i[0], sigma1_x=s1, sigma1_y=s1, sigma1_z=z1, sigma2_x=s2, sigma2_y=s2, sigma2_z=z2
            )

        def crop(i, p, nd):
            sl = crop_box(p, i[0].shape)[::-1]  # x, y, z
            sl = list(sl) + [slice(0, 1)] * (3 - nd)
            return cle.crop(
                i[0],
                start_x=sl[0].start,
                start_y=sl[1].start,
                start_z=sl[2].start,
                width=sl[0].stop - sl[0].start,
                height=sl[1].stop - sl[1].start,
                depth=sl[2].stop - sl[2].start,
            )

        def transpose(i, p, nd):
            return {"xy": cle.transpose_xy, "xz": cle.transpose_xz, "yz": cle.transpose_yz}[
                p.get("axes", "xy")
            ](i[0])

        def scale(i, p, nd):
            f = resample_factors(p, nd)[::-1]
            return cle.scale(
                i[0],
                factor_x=f[0],
                factor_y=f[1],
                factor_z=f[2] if nd == 3 else 1,
                centered=False,
                interpolate=p.get("interpolation", "linear") == "linear",
                resize=True,
            )

        def affine(i, p, nd):
            m = [
                [float(p.get(f"m{r}{c}", 1.0 if r == c else 0.0)) for c in range(4)]
                for r in range(3)
            ]
            mat = [v for row in m for v in row] + [0, 0, 0, 1]
            return cle.affine_transform(
                i[0], transform_matrix=mat, interpolate=p.get("interpolation", "linear") == "linear"
            )

        def hist(i, p, nd):
            lo, hi = float(p.get("minimum", 0)), float(p.get("maximum", 0))
            if lo == hi:
                lo, hi = float("nan"), float("nan")
            return cle.histogram(
                i[0], num_bins=int(p.get("n_bins", 256)), minimum_intensity=lo, maximum_intensity=hi
            ).get()

        ccl = {"full": "box", "face": "sphere"}
        return {
            "gaussian_blur": lambda i, p, nd: cle.gaussian_blur(i[0], **g(p, nd)),
            "mean_box": lambda i, p, nd: cle.mean_box(i[0], **radii(p, nd)),
            "minimum_box": lambda i, p, nd: cle.minimum_box(i[0], **radii(p, nd)),
            "maximum_box": lambda i, p, nd: cle.maximum_box(i[0], **radii(p, nd)),
            "median_box": lambda i, p, nd: cle.median_box(i[0], **radii(p, nd)),
            "variance_box": lambda i, p, nd: cle.variance_box(i[0], **radii(p, nd)),
            "top_hat_box": lambda i, p, nd: cle.top_hat_box(i[0], **radii(p, nd)),
            "bottom_hat_box": lambda i, p, nd: cle.bottom_hat_box(i[0], **radii(p, nd)),
            "sobel": lambda i, p, nd: cle.sobel(i[0]),
            "laplace": lambda i, p, nd: cle.laplace_diamond(i[0]),
            "gradient_x": lambda i, p, nd: cle.gradient_x(i[0]),
            "gradient_y": lambda i, p, nd: cle.gradient_y(i[0]),
            "gradient_z": lambda i, p, nd: cle.gradient_z(i[0]),
            "difference_of_gaussian": dog,
            "threshold": lambda i, p, nd: cle.greater_constant(
                i[0], scalar=float(p.get("value", 0))
            ),
            "threshold_otsu": lambda i, p, nd: cle.threshold_otsu(i[0]),
            "binary_erosion": lambda i, p, nd: cle.binary_erode(
                i[0], **br(p, nd), connectivity="box"
            ),
            "binary_dilation": lambda i, p, nd: cle.binary_dilate(
                i[0], **br(p, nd), connectivity="box"
            ),
            "binary_opening": lambda i, p, nd: cle.binary_opening(
                i[0], **br(p, nd), connectivity="box"
            ),
            "binary_closing": lambda i, p, nd: cle.binary_closing(
                i[0], **br(p, nd), connectivity="box"
            ),
            "binary_and": lambda i, p, nd: cle.binary_and(i[0], i[1]),
            "binary_not": lambda i, p, nd: cle.binary_not(i[0]),
            "connected_components": lambda i, p, nd: cle.connected_components_labeling(
                i[0], connectivity=ccl[p.get("connectivity", "full")]
            ),
            "relabel_sequential": lambda i, p, nd: cle.relabel_sequential(i[0]),
            "label_statistics": lambda i, p, nd: cle.statistics_of_labelled_pixels(i[1], i[0]),
            "voronoi_otsu_labeling": lambda i, p, nd: cle.voronoi_otsu_labeling(
                i[0],
                spot_sigma=float(p.get("spot_sigma", 2)),
                outline_sigma=float(p.get("outline_sigma", 2)),
            ),
            "add_images": lambda i, p, nd: cle.add_images(i[0], i[1]),
            "subtract_images": lambda i, p, nd: cle.subtract_images(i[0], i[1]),
            "multiply_images": lambda i, p, nd: cle.multiply_images(i[0], i[1]),
            "divide_images": lambda i, p, nd: cle.divide_images(i[0], i[1]),
            "minimum_images": lambda i, p, nd: cle.minimum_images(i[0], i[1]),
            "maximum_images": lambda i, p, nd: cle.maximum_images(i[0], i[1]),
            "add_scalar": lambda i, p, nd: cle.add_image_and_scalar(
                i[0], scalar=float(p.get("value", 1))
            ),
            "multiply_scalar": lambda i, p, nd: cle.multiply_image_and_scalar(
                i[0], scalar=float(p.get("factor", 2))
            ),
            "absolute": lambda i, p, nd: cle.absolute(i[0]),
            "power": lambda i, p, nd: cle.power(i[0], scalar=float(p.get("exponent", 2))),
            "sqrt": lambda i, p, nd: cle.square_root(i[0]),
            "exp": lambda i, p, nd: cle.exponential(i[0]),
            "log": lambda i, p, nd: cle.logarithm(i[0]),
            "clip": lambda i, p, nd: cle.clip(
                i[0],
                min_intensity=float(p.get("minimum", 0)),
                max_intensity=float(p.get("maximum", 255)),
            ),
            "invert": lambda i, p, nd: cle.invert(i[0]),
            "rescale_intensity": lambda i, p, nd: cle.normalize(i[0]),
            "crop": crop,
            "flip": lambda i, p, nd: cle.flip(
                i[0],
                flip_x=p.get("flip_x", "true") == "true",
                flip_y=p.get("flip_y", "false") == "true",
                flip_z=p.get("flip_z", "false") == "true",
            ),
            "transpose": transpose,
            "resample": scale,
            "affine_transform": affine,
            "maximum_z_projection": lambda i, p, nd: cle.maximum_z_projection(i[0]),
            "minimum_z_projection": lambda i, p, nd: cle.minimum_z_projection(i[0]),
            "mean_z_projection": lambda i, p, nd: cle.mean_z_projection(i[0]),
            "sum_z_projection": lambda i, p, nd: cle.sum_z_projection(i[0]),
            "std_z_projection": lambda i, p, nd: cle.std_z_projection(i[0]),
            "minimum_of_all_pixels": lambda i, p, nd: cle.minimum_of_all_pixels(i[0]),
            "maximum_of_all_pixels": lambda i, p, nd: cle.maximum_of_all_pixels(i[0]),
            "sum_of_all_pixels": lambda i, p, nd: cle.sum_of_all_pixels(i[0]),
            "mean_of_all_pixels": lambda i, p, nd: cle.mean_of_all_pixels(i[0]),
            "std_of_all_pixels": lambda i, p, nd: cle.standard_deviation_of_all_pixels(i[0]),
            "histogram": hist,
            "@stats": lambda i, p, nd: (
                cle.minimum_of_all_pixels(i[0]),
                cle.maximum_of_all_pixels(i[0]),
                cle.sum_of_all_pixels(i[0]),
            ),
        }


def make_peer(name, cle_device=""):
    if name == "cupy":
        return CupyPeer(fake=os.environ.get("SUITE_FAKE_CUPY") == "1")
    if name == "cucim":
        return CucimPeer()
    if name == "cle":
        return ClePeer(cle_device)
    raise ValueError(f"unknown peer {name!r} (cupy, cucim, cle)")


# ---------------------------------------------------------------------------------------------
# The harness.


class Inputs:
    """The inputs of the current shape, made once and kept until the shape changes."""

    def __init__(self, peer, data):
        import numpy as np

        self.peer, self.data, self.np = peer, data, np
        self.shape, self.cache = None, {}

    def get(self, spec, shape, dtype):
        shape = tuple(shape)
        if shape != self.shape:
            self.cache.clear()
            self.peer.free()
            self.shape = shape
        key = (spec, dtype)
        if key not in self.cache:
            self.cache[key] = self.make(spec, shape, dtype)
        return self.cache[key]

    def make(self, spec, shape, dtype):
        p, np = self.peer, self.np
        if spec in ("noise", "noise2"):
            return p.noise(shape, dtype, 1 if spec == "noise" else 2)
        if spec == "blob":
            return p.from_host(read_raw(np, self.data, "blob", shape, "uint8"))
        if spec == "blobimg":
            img = read_raw(np, self.data, "blobimg", shape, "float32")
            if dtype == "uint16":
                img = img.astype(np.uint16)
            elif dtype != "float32":
                raise ValueError("blobimg is float32 or uint16")
            return p.from_host(img)
        if spec == "labels":
            lab = p.label_full(self.get("blob", shape, "uint8"))
            p.sync()
            return lab
        if spec == "sparse_labels":
            lab = self.get("labels", shape, "uint32")
            if isinstance(p, ClePeer):
                return p.from_host((p.to_host(lab).astype(np.uint32) * 3).astype(np.uint32))
            return lab * 3
        raise ValueError(f"unknown input {spec!r}")


def timed(f, sync):
    t = time.perf_counter()
    r = f()
    sync()
    dt = (time.perf_counter() - t) * 1e3
    del r
    return dt


def time_it(f, sync, o, deadline):
    first = timed(f, sync)
    second = timed(f, sync)
    if second > o.max_call_s * 1e3:
        # Too slow to repeat: the second call (the first one compiles) is all there is.
        return dict(median=second, min=second, first=first, reps=1)
    reps = max(o.min_reps, min(o.max_reps, int(o.target_ms / max(second, 1e-3))))
    v = []
    for _ in range(reps):
        v.append(timed(f, sync))
        if deadline and time.time() > deadline:
            break
    v.sort()
    n = len(v)
    med = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    return dict(median=med, min=v[0], first=first, reps=n)


def earlier_results(path):
    """Medians of an earlier, cut-short run in the same output file (-1: skipped)."""
    m = {}
    if os.path.exists(path):
        for line in open(path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "id" in r:
                if r.get("status") == "skipped":
                    m[r["id"]] = -1
                elif "median_ms" in r:
                    m[r["id"]] = r["median_ms"]
    return m


class Watchdog:
    """Ends the process with status 124 when one case runs longer than the limit (a call that
    never returns would hold the whole suite); the suite restarts the runner with the rest."""

    def __init__(self, limit_s):
        import threading

        self.start_t, self.limit = 0.0, limit_s
        threading.Thread(target=self.watch, daemon=True).start()

    def watch(self):
        while True:
            time.sleep(0.1)
            if self.limit > 0 and self.start_t and time.time() - self.start_t > self.limit:
                sys.stderr.write(
                    f"suite_peers: a case ran longer than {self.limit:.0f} s: giving up\n"
                )
                sys.stderr.flush()
                os._exit(124)


def run_grid(peer, cases, data, out_path, o):
    ops = peer.ops()
    dog = Watchdog(o.case_timeout_s)
    inputs = Inputs(peer, data)
    measured = earlier_results(out_path)
    copied = set()
    ok = 0
    with open(out_path, "a") as out:

        def line(r):
            out.write(json.dumps(r) + "\n")
            out.flush()

        for c in cases:
            dog.start_t = 0.0
            if c["filter"] not in ops:
                continue
            cid = c["id"]
            if o.deadline and time.time() > o.deadline:
                measured[cid] = -1
                line(dict(id=cid, status="skipped", note="time budget"))
                continue
            fr = c.get("from")
            if fr and fr in measured:
                if measured[fr] < 0:
                    measured[cid] = -1
                    line(dict(id=cid, status="skipped", note=f"skipped with {fr}"))
                    continue
                if measured[fr] * c["factor"] > o.max_call_s * 1e3:
                    measured[cid] = -1
                    line(
                        dict(
                            id=cid,
                            status="skipped",
                            note=f"predicted {measured[fr] * c['factor'] * 1e-3:.3g} s per call "
                            f"from {fr}",
                        )
                    )
                    continue
            line({"start": cid})
            dog.start_t = time.time()
            shape, nd = tuple(c["shape"]), len(c["shape"])
            try:
                ins = [inputs.get(s, shape, c["dtype"]) for s in c["inputs"]]
                fn = ops[c["filter"]]
                params = c["params"]

                def call(fn=fn, ins=ins, params=params, nd=nd):
                    return fn(ins, params, nd)

                if o.prewarm:
                    # One call (compilation included); its time serves the predictions.
                    measured[cid] = timed(call, peer.sync)
                    line(dict(id=cid, status="ok", median_ms=measured[cid]))
                    ok += 1
                    continue
                a = ins[0]
                key = f"{shape_key(shape)}/{str(a.dtype)}"
                if key not in copied:
                    copied.add(key)
                    t = time_it(peer.copy_fn(a), peer.sync, o, o.deadline)
                    line(
                        {
                            "copy": key,
                            "median_ms": t["median"],
                            "min_ms": t["min"],
                            "reps": t["reps"],
                            "bytes": int(a.nbytes),
                        }
                    )
                t = time_it(call, peer.sync, o, o.deadline)
                measured[cid] = t["median"]
                line(
                    dict(
                        id=cid,
                        status="ok",
                        median_ms=t["median"],
                        min_ms=t["min"],
                        first_ms=t["first"],
                        reps=t["reps"],
                        copy=key,
                    )
                )
                ok += 1
            except Exception as e:  # a peer's refusal or failure is a result, not the end
                msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
                line(dict(id=cid, status="error", note=msg))
                if "out of memory" in msg.lower() or "OutOfMemory" in msg:
                    inputs.cache.clear()
                    peer.free()
    return ok


def run_first_call(peer_name, cases, data, out_path, cle_device, main_t):
    """A new process: import, device, first push, then each case's first and second call."""
    import numpy as np

    c0 = cases[0]
    t = time.time()
    host = hash_noise(np, tuple(c0["shape"]), c0["dtype"], 1)
    gen_ms = (time.time() - t) * 1e3
    peer = make_peer(peer_name, cle_device)
    imported_t = time.time()
    first = peer.from_host(host)
    peer.sync()
    ready_t = time.time()
    ops = peer.ops()
    inputs = Inputs(peer, data)
    per = []
    for c in cases:
        if c["filter"] not in ops:
            per.append(dict(id=c["id"], status="n/a"))
            continue
        ins = [inputs.get(s, tuple(c["shape"]), c["dtype"]) for s in c["inputs"]]
        nd = len(c["shape"])

        def call(fn=ops[c["filter"]], ins=ins, params=c["params"], nd=nd):
            return fn(ins, params, nd)

        try:
            t1 = timed(call, peer.sync)
            t2 = timed(call, peer.sync)
            per.append(dict(id=c["id"], first_ms=t1, second_ms=t2))
        except Exception as e:
            per.append(dict(id=c["id"], status="error", note=f"{type(e).__name__}: {e}"[:300]))
    del first
    with open(out_path, "a") as out:
        out.write(
            json.dumps(
                dict(
                    peer=peer_name,
                    version=peer.version(),
                    main_us=int(main_t * 1e6),
                    gen_ms=gen_ms,
                    imported_us=int(imported_t * 1e6),
                    ready_us=int(ready_t * 1e6),
                    cases=per,
                )
            )
            + "\n"
        )


def main(argv=None):
    main_t = time.time()
    # pyclesperanto deprecates names the suite uses on purpose (affine_transform): not news here.
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer", required=True, choices=["cupy", "cucim", "cle"])
    ap.add_argument("--cases", required=True)
    ap.add_argument("--data", default=".")
    ap.add_argument("--json", required=True)
    ap.add_argument("--max-reps", type=int, default=15)
    ap.add_argument("--min-reps", type=int, default=3)
    ap.add_argument("--target-ms", type=float, default=200)
    ap.add_argument("--max-call-s", type=float, default=1.5)
    ap.add_argument("--deadline", type=float, default=0)
    ap.add_argument("--case-timeout-s", type=float, default=60)
    ap.add_argument("--cle-device", default="")
    ap.add_argument("--prewarm", action="store_true")
    ap.add_argument("--first-call", action="store_true")
    ap.add_argument(
        "--info",
        action="store_true",
        help="print the peer's version, device and mapped filters, then exit",
    )
    o = ap.parse_args(argv)
    cases = json.load(open(o.cases))
    if o.first_call:
        run_first_call(o.peer, cases, o.data, o.json, o.cle_device, main_t)
        return 0
    peer = make_peer(o.peer, o.cle_device)
    header = dict(
        peer=o.peer,
        version=peer.version(),
        device=peer.device_name(),
        maps=sorted(peer.ops()),
        approx=peer.approx,
    )
    if o.info:
        print(json.dumps(header))
        return 0
    with open(o.json, "a") as out:
        out.write(json.dumps({"header": header}) + "\n")
    ok = run_grid(peer, cases, o.data, o.json, o)
    print(
        f"suite_peers {o.peer}: {ok} of {sum(c['filter'] in peer.ops() for c in cases)} cases ran"
        f"{' (prewarm)' if o.prewarm else ''}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
