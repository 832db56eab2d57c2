#!/usr/bin/env python3
"""CuPy's figures for the same operations as gpix's benchmarks, in the same run.

    python3 bench/peer_cupy.py [--quick] [--transfers]

Median ms over repeats with CUDA events (device work) or a synchronised host clock
(transfers), float32, as bench_filters / bench_reductions / bench_memory measure gpix.
"""
import statistics
import sys
import time

import cupy as cp
import numpy as np
from cupyx.scipy import ndimage as ndi


def device_ms(f, repeats=21):
    f()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        f()
        b.record()
        b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    return statistics.median(times)


def host_ms(f, repeats=11):
    f()
    times = []
    for _ in range(repeats):
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        f()
        cp.cuda.Device().synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    quick = "--quick" in sys.argv
    print(f"cupy {cp.__version__}, device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
    print(f"{'op (float32)':34s} {'median ms':>10s} {'GB/s':>8s}")
    # Transfers (skipped with --filters).
    for mb in [] if "--filters" in sys.argv else ([1, 16, 256] if quick else [1, 16, 256, 1024]):
        n = mb * 1000 * 1000 // 4
        host = np.random.default_rng(0).random(n, dtype=np.float32)
        dev = cp.empty(n, dtype=cp.float32)
        pinned_mem = cp.cuda.alloc_pinned_memory(n * 4)
        pinned = np.frombuffer(pinned_mem, dtype=np.float32, count=n)
        pinned[:] = host
        for name, src in (("pageable", host), ("pinned", pinned)):
            t = host_ms(lambda: dev.set(src))
            print(f"{'push %d MB %s' % (mb, name):34s} {t:10.3f} {n * 4 / t / 1e6:8.2f}")
            t = host_ms(lambda: dev.get(out=src))
            print(f"{'pull %d MB %s' % (mb, name):34s} {t:10.3f} {n * 4 / t / 1e6:8.2f}")
        del dev
    if "--transfers" in sys.argv:
        return
    # Filters and reductions.
    for shape in ((8192, 8192), (512, 512, 512)):
        a = cp.random.default_rng(1).random(shape, dtype=cp.float32)
        nbytes = a.nbytes
        label = "x".join(map(str, shape))
        copy = device_ms(lambda: a.copy())
        print(f"{'copy ' + label:34s} {copy:10.3f} {2 * nbytes / copy / 1e6:8.2f}")
        ops = [
            ("gaussian sigma 2", lambda: ndi.gaussian_filter(a, 2.0, mode="nearest"), 2),
            ("mean box r1", lambda: ndi.uniform_filter(a, 3, mode="nearest"), 2),
            ("min box r1", lambda: ndi.minimum_filter(a, 3, mode="nearest"), 2),
            ("max box r1", lambda: ndi.maximum_filter(a, 3, mode="nearest"), 2),
            ("median box r1", lambda: ndi.median_filter(a, 3, mode="nearest"), 2),
            ("min+max", lambda: (a.min(), a.max()), 1),
            ("sum", lambda: a.sum(), 1),
            ("std", lambda: a.std(), 1),
            ("histogram 256", lambda: cp.histogram(a, 256), 1),
        ]
        if len(shape) == 3:
            ops.append(("max z projection", lambda: a.max(axis=0), 1))
        for name, f, passes in ops:
            t = device_ms(f, 7 if "median" in name and len(shape) == 3 else 21)
            print(f"{name + ' ' + label:34s} {t:10.3f} {passes * nbytes / t / 1e6:8.2f}  ({t / (passes * nbytes / (2 * nbytes / copy)):.2f}x floor)")


if __name__ == "__main__":
    main()
