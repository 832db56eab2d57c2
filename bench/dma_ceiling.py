#!/usr/bin/env python3
"""The host's DMA ceiling with CuPy alone (issue 20): pinned host <-> device copies on one GPU and
on every GPU at once, one direction and both, so that a tiled run's speed-up on two GPUs can be
read against what the host's PCIe links and memory allow together.

    python3 bench/dma_ceiling.py [--gb 1] [--repeats 4]

Each stream copies --gb GB per repeat between a pinned host buffer (cupyx.empty_pinned) and a
device buffer; all streams start together and the aggregate GB/s is bytes / wall time (best of
three rounds)."""
import argparse
import time

import cupy
import cupyx


def run(gpus, directions, gb, repeats):
    nbytes = int(gb * 1e9)
    jobs = []
    for g in gpus:
        with cupy.cuda.Device(g):
            for d in directions:
                host = cupyx.empty_pinned((nbytes,), dtype=cupy.uint8)
                host[:] = 1
                dev = cupy.empty((nbytes,), dtype=cupy.uint8)
                jobs.append((g, d, host, dev, cupy.cuda.Stream(non_blocking=True)))
    kinds = {"h2d": cupy.cuda.runtime.memcpyHostToDevice,
             "d2h": cupy.cuda.runtime.memcpyDeviceToHost}
    best = None
    for _ in range(3):
        for g, _, _, _, _ in jobs:
            with cupy.cuda.Device(g):
                cupy.cuda.Device(g).synchronize()
        t0 = time.perf_counter()
        for _ in range(repeats):
            for g, d, host, dev, s in jobs:
                with cupy.cuda.Device(g):
                    if d == "h2d":
                        cupy.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, nbytes,
                                                      kinds[d], s.ptr)
                    else:
                        cupy.cuda.runtime.memcpyAsync(host.ctypes.data, dev.data.ptr, nbytes,
                                                      kinds[d], s.ptr)
        for g, _, _, _, s in jobs:
            with cupy.cuda.Device(g):
                s.synchronize()
        wall = time.perf_counter() - t0
        best = wall if best is None else min(best, wall)
    total = len(jobs) * repeats * nbytes
    per = {}
    for d in directions:
        per[d] = len(gpus) * repeats * nbytes / best / 1e9
    return total / best / 1e9, per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gb", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=4)
    a = ap.parse_args()
    n = cupy.cuda.runtime.getDeviceCount()
    print(f"{n} GPU(s); {a.gb} GB per stream and repeat, {a.repeats} repeats, best of 3 rounds")
    print(f"{'GPUs':<6} {'directions':<10} {'aggregate GB/s':>15} {'per direction GB/s':>30}")
    sets = [[0]] + ([list(range(n))] if n > 1 else [])
    for gpus in sets:
        for dirs in (["h2d"], ["d2h"], ["h2d", "d2h"]):
            agg, per = run(gpus, dirs, a.gb, a.repeats)
            detail = ", ".join(f"{d} {v:.1f}" for d, v in per.items())
            print(f"{len(gpus):<6} {'+'.join(dirs):<10} {agg:>15.1f} {detail:>30}", flush=True)


if __name__ == "__main__":
    main()
