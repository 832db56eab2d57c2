#!/usr/bin/env python3
"""Times kernels/tiled.kernel's fused 2D pass (tile_conv_xy, Gaussian sigma 2) under other
tile shapes, straight through CuPy's NVRTC, to choose the shape on the GPU machine without a
rebuild. Usage: python3 bench/tile_probe.py [N [KERNEL_FILE]]   (N x N float32, default 8192; another
version of tiled.kernel to compare)."""
import sys
from pathlib import Path

import cupy as cp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_cupy import device_ms  # noqa: E402  (the same timing as the peer figures)

root = Path(__file__).resolve().parent.parent
n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
kernel = Path(sys.argv[2]) if len(sys.argv) > 2 else root / "kernels/tiled.kernel"
source = (root / "kernels/dialect.h").read_text() + "\n" + kernel.read_text()
a = cp.random.default_rng(1).random((n, n), dtype=cp.float32)
out = cp.empty_like(a)
sigma, r = 2.0, 8
x = np.arange(-r, r + 1)
taps = np.exp(-0.5 * x * x / sigma**2)
taps = cp.asarray((taps / taps.sum()).astype(np.float32))


copy = device_ms(lambda: cp.copyto(out, a))
print(f"copy {copy:.3f} ms (floor)")
ref = None
for tx, ty, px, py, tb in [(64, 64, 8, 16, 8), (64, 32, 8, 8, 8), (32, 64, 8, 8, 8), (128, 16, 8, 8, 8),
                           (64, 64, 4, 16, 8), (64, 64, 8, 16, 4)]:
    opts = ("-std=c++17", "-DT_IN=gpix_f32", "-DT_OUT=gpix_f32", "-DCT=gpix_f32", f"-DTB={tb}", "-DTILE_OP=0",
            f"-DTL_X={tx}", f"-DTL_Y={ty}", f"-DTL_PX={px}", f"-DTL_PY={py}")
    try:
        k = cp.RawModule(code=source, options=opts).get_function("tile_conv_xy")
    except Exception as e:  # noqa: BLE001
        print(tx, ty, px, py, tb, "compile failed:", str(e).splitlines()[0])
        continue
    grid = ((n + tx - 1) // tx, (n + ty - 1) // ty, 1)
    args = (a, out, np.uint64(n), np.uint64(n), np.uint64(1), taps, taps, np.int32(r), np.int32(r),
            np.int32(0), np.float32(1))
    t = device_ms(lambda: k(grid, (256, 1, 1), args))
    if ref is None:
        ref = out.copy()
    err = float(cp.abs(out - ref).max())
    print(f"TL_X {tx:3d} TL_Y {ty:3d} PX {px:2d} PY {py:2d} TB {tb:2d}: {t:.3f} ms ({t / copy:.2f}x floor) "
          f"regs {k.num_regs} smem {k.shared_size_bytes} max|diff| {err:.2e}")
