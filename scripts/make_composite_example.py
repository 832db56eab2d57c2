#!/usr/bin/python3
"""A three-channel 16-bit fluorescence-like ImageJ TIFF for docs/VIEWER.md's screenshot:
nuclei (C1), cytoplasm around them (C2) and small bright spots (C3), with camera noise.

usage: make_composite_example.py OUT.tif
"""
import sys

import numpy as np
import tifffile
from scipy import ndimage as ndi

rng = np.random.default_rng(2026)
h, w = 512, 640
centres = rng.uniform([30, 30], [h - 30, w - 30], size=(40, 2))
yy, xx = np.mgrid[0:h, 0:w]
nuclei = np.zeros((h, w))
cyto = np.zeros((h, w))
for cy, cx in centres:
    r2 = (yy - cy) ** 2 + (xx - cx) ** 2
    nuclei += np.exp(-r2 / (2 * rng.uniform(60, 120)))
    cyto += np.exp(-r2 / (2 * rng.uniform(500, 900)))
cyto = np.clip(cyto - 0.9 * np.clip(nuclei, 0, 1), 0, None)
spots = np.zeros((h, w))
idx = rng.integers(0, [h, w], size=(400, 2))
spots[idx[:, 0], idx[:, 1]] = rng.uniform(0.5, 1.0, 400)
spots = ndi.gaussian_filter(spots, 1.3) * 40


def camera(x, gain, offset):
    return np.clip(rng.poisson(x * gain) + rng.normal(offset, 20, x.shape), 0, 65535).astype(
        np.uint16)


data = np.stack([camera(nuclei, 9000, 300), camera(cyto, 4000, 200), camera(spots, 6000, 150)])
tifffile.imwrite(sys.argv[1], data, imagej=True,
                 metadata={'axes': 'CYX', 'unit': 'micron'}, resolution=(1 / 0.16, 1 / 0.16))
