#!/usr/bin/python3
"""Mutates the geometry fields of a NIfTI-1 header (pixdim, quaternion, affine rows and their
form codes) and runs `gpix info --json` on each mutant under a 10 s bound: an exit by signal is
a crash, the bound a hang. This is how the hang that check_nifti_geometry now refuses (a
subnormal beside a large shear in the affine) was found.

    fuzz/mutate_nifti.py GPIX [SEED] [COUNT]      (findings are kept as crash*.nii / hang*.nii)
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

import numpy as np
import tifffile

gpix = sys.argv[1]
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
count = int(sys.argv[3]) if len(sys.argv) > 3 else 300
work = tempfile.mkdtemp(prefix="gpix-nifti-")
src = os.path.join(work, "s.tif")
tifffile.imwrite(src, (np.random.default_rng(1).random((6, 20, 24)) * 1000).astype(np.uint16))
base_path = os.path.join(work, "s.nii")
subprocess.run([gpix, "run", "multiply_scalar", src, base_path, "--factor", "1"], check=True)
base = open(base_path, "rb").read()
values = [0.0, -0.0, 1e-38, 1e-45, 3e38, 1e14, -1e14, 1.0, -1.0, 2.0, 0.5]
hangs = crashes = 0
for i in range(count):
    b = bytearray(base)
    for _ in range(random.randint(1, 6)):
        off = random.choice([random.randrange(76, 108, 4), random.randrange(256, 328, 4), 252, 254,
                             random.randrange(0, 348)])
        kind = random.random()
        if kind < 0.4:
            v = random.choice(values + [random.uniform(-1e6, 1e6)])
            b[off:off + 4] = struct.pack("<f", v)
        elif kind < 0.7:
            b[off:off + 2] = struct.pack("<h", random.randint(-5, 5))
        else:
            b[off] = random.randrange(256)
    path = os.path.join(work, "m.nii")
    open(path, "wb").write(b)
    try:
        r = subprocess.run([gpix, "info", path, "--json"], capture_output=True, timeout=10)
        if r.returncode < 0 or r.returncode > 2:
            crashes += 1
            os.rename(path, f"crash{i}.nii")
    except subprocess.TimeoutExpired:
        hangs += 1
        os.rename(path, f"hang{i}.nii")
print(f"{count} mutants: {hangs} hangs, {crashes} crashes")
sys.exit(1 if hangs or crashes else 0)
