#!/usr/bin/env python3
"""Generates gpix's embedded sample images (synthetic fluorescence nuclei), reproducibly.

    python3 scripts/make_samples.py resources/samples

Writes raw little-endian uint16 files; their shapes are listed in resources/samples.cpp.
Synthetic so that the data is ours to ship and every pixel is reproducible from the seed.
"""
import sys
import numpy as np


def nuclei(shape, count, radius, seed):
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.arange(n, dtype=np.float64) for n in shape], indexing="ij")
    img = np.zeros(shape, dtype=np.float64)
    for _ in range(count):
        centre = [rng.uniform(0.05 * n, 0.95 * n) for n in shape]
        r = radius * rng.uniform(0.6, 1.4)
        # Elongated, rotated nuclei in the last two axes.
        ang = rng.uniform(0, np.pi)
        ax = rng.uniform(0.7, 1.3)
        dy = grids[-2] - centre[-2]
        dx = grids[-1] - centre[-1]
        u = (np.cos(ang) * dx + np.sin(ang) * dy) / ax
        v = (-np.sin(ang) * dx + np.cos(ang) * dy) * ax
        d2 = u * u + v * v
        if len(shape) == 3:
            d2 = d2 + ((grids[0] - centre[0]) * 2.0) ** 2
        brightness = rng.uniform(800, 3000)
        img += brightness / (1.0 + np.exp((np.sqrt(d2) - r) / 1.5))
    texture = rng.normal(1.0, 0.08, shape)
    img = img * texture + 120.0 + rng.normal(0, 18, shape)
    return np.clip(np.round(img), 0, 65535).astype("<u2")


def main(out):
    nuclei((256, 256), 42, 11.0, 1).tofile(f"{out}/nuclei_2d.u16")
    nuclei((32, 128, 128), 18, 9.0, 2).tofile(f"{out}/nuclei_3d.u16")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "resources/samples")
