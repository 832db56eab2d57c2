#!/usr/bin/env bash
# On the GPU machine: unpacks .carry/gpu.tar.xz (scripts/pack-gpu.sh), registers NVIDIA's
# OpenCL driver, and runs one stage. Logs go to $OUT when set.
#   scripts/gpu-run.sh check     gpix devices + bench/gpu_check on every device
#   scripts/gpu-run.sh tests     the core, kernel and filter suites (ctest) on CUDA and NVIDIA OpenCL
#   scripts/gpu-run.sh bench     gpix benchmarks on CUDA and NVIDIA OpenCL, then CuPy's
#   scripts/gpu-run.sh cross     every filter on every device, compared across backends
#   scripts/gpu-run.sh transfers push/pull GB/s only (bench_memory and CuPy)
#   scripts/gpu-run.sh large     gpu_check --large-allocations (NVIDIA OpenCL probes, OOM)
#   scripts/gpu-run.sh filters   filter and reduction benchmarks only (both backends and CuPy)
#   scripts/gpu-run.sh suite [ARGS]  issue 17's suite: gpix (CUDA, NVIDIA OpenCL), CuPy, cuCIM and
#                                pyclesperanto on one grid, plus first calls (bench/suite.py; the
#                                peers' wheels in .whl, bench/peers-requirements.txt). ARGS go to
#                                suite.py (e.g. --budget 300, --filters REGEX).
#   scripts/gpu-run.sh launch    bench_launch: one catalog call on a tiny image (issue, round
#                                trip, host and device allocations per call), both backends
#   scripts/gpu-run.sh two       issue 20 on a host with two GPUs: gpix devices, the tiled
#                                Gaussian and median on one GPU and on both (CUDA, NVIDIA OpenCL;
#                                GPIX_TILED_GB, default 12, with a 2 GB budget per device; pageable
#                                host memory, and pinned on CUDA), and bench_devices (peer-to-peer against
#                                through-the-host copies; GPIX_TWO_COPIES=0 leaves it out).
#                                GPIX_TWO_BACKENDS (cuda opencl), GPIX_TWO_PINNED (0 1 on CUDA) and
#                                GPIX_TWO_ARGS (more bench_tiled arguments) narrow or vary it
#   scripts/gpu-run.sh multi     issue 20's checks on every GPU of the host: the DMA ceiling of one
#                                GPU and of all at once (bench/dma_ceiling.py, CuPy), every filter
#                                on every GPU compared (cross_backend), and the core suites that
#                                use several devices at once (ctest)
#   scripts/gpu-run.sh tiled     bench_tiled (GPIX_TILED_GB, default 8, of float32 with a 1 GB
#                                budget) and bench_transfer, on CUDA and NVIDIA OpenCL
set -uo pipefail
cd "$(dirname "$0")/.."
stage=${1:-check}
out=${OUT:-/tmp/gpix-out}
mkdir -p "$out"
# Once per archive (a later call in the same lease may carry another one, e.g. .suite's).
unpacked=/tmp/gpix-unpacked-$(cksum <.carry/gpu.tar.xz | cut -d' ' -f1)
if [ ! -e "$unpacked" ]; then
  tar -xJf .carry/gpu.tar.xz -C / && touch "$unpacked"
fi
build=$(tar -tJf .carry/gpu.tar.xz | head -1 | cut -d/ -f1-3)
build=/${build%/}
mkdir -p /etc/OpenCL/vendors
[ -e /etc/OpenCL/vendors/nvidia.icd ] || echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
export LD_LIBRARY_PATH="$build/gpu-libs:$build/core:/usr/local/nvidia/lib64:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export QT_QPA_PLATFORM=offscreen
# Benchmarks time kernels in their steady state: with tiered compilation (on GPUs by default) a
# first call runs a plain kernel while the fast one's build waits for a quiet compiler, so a
# warm-up could end before it came in. The tests and the suite's first calls keep the default.
bench_env=(env GPIX_TIERED_COMPILE="${GPIX_TIERED_COMPILE:-0}")
# Only NVIDIA's OpenCL for the suites: PoCL's compiles would take the lease.
mkdir -p /tmp/nv-icd && echo libnvidia-opencl.so.1 > /tmp/nv-icd/nvidia.icd
# benches LOG B...: each benchmark B on CUDA and on NVIDIA OpenCL, appended to $out/LOG
# (the last 25 lines of each shown).
benches() {
  local log=$1 dev b
  shift
  for dev in cuda: opencl:NVIDIA; do
    for b in "$@"; do
      echo "== $b --device $dev"
      OCL_ICD_VENDORS=/tmp/nv-icd timeout 150 "${bench_env[@]}" "$build/bin/$b" --device "$dev" 2>&1 | tee -a "$out/$log" | tail -25
    done
  done
}
# gpus [BACKEND]: the device indices of the GPUs (of one backend: cuda, opencl), comma-separated.
gpus() {
  OCL_ICD_VENDORS=/tmp/nv-icd "$build/bin/gpix" devices --json | python3 -c "
import json, sys
d = json.load(sys.stdin)['devices']
print(','.join(str(x['index']) for x in d
               if x['type'].lower() == 'gpu' and '${1:-}' in ('', x['backend'])))"
}
# The commit pack-gpu.sh built from (this copy's own .git does not say).
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) commit: $(cat "$build/GPU_COMMIT" 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
case "$stage" in
  check)
    "$build/bin/gpix" devices 2>&1 | tee "$out/devices.txt"
    "$build/bin/gpu_check" 2>&1 | tee "$out/gpu_check.txt" | tail -60
    ;;
  tests)
    cd "$build"
    # GPIX_TESTS=REGEX runs only the matching suites.
    OCL_ICD_VENDORS=/tmp/nv-icd GPIX_REQUIRE_CUDA=1 timeout 520 ctest -j6 --timeout 400 ${GPIX_TESTS:+-R "$GPIX_TESTS"} \
      -E "install|package|median_networks|io_|qimage|ui_|plugin|two_devices|cuda_loader_(missing|no_device|stub|old|partial|fake)" \
      --output-on-failure > "$out/ctest.txt" 2>&1
    grep -E "tests passed|Failed|\*\*\*|FAIL!|Timeout" "$out/ctest.txt" | head -80
    tail -5 "$out/ctest.txt"
    ;;
  bench)
    benches bench.txt bench_transfer bench_memory bench_filters bench_reductions
    echo "== CuPy"
    timeout 200 python3 bench/peer_cupy.py 2>&1 | tee "$out/cupy.txt"
    ;;
  filters)
    benches bench.txt bench_filters bench_reductions
    echo "== CuPy"
    timeout 200 python3 bench/peer_cupy.py --filters 2>&1 | tee "$out/cupy.txt"
    ;;
  launch)
    benches launch.txt bench_launch
    ;;
  cross)
    # Every filter on every device (CUDA, NVIDIA OpenCL, PoCL), compared with device 0, and
    # the core checks (cross-device copies include CUDA peer copies on multi-GPU machines).
    timeout 300 "$build/bin/cross_backend" 2>&1 | tee "$out/cross_backend.txt" | grep -E "FAIL|passed|devices"
    timeout 200 "$build/bin/gpu_check" 2>&1 | tee "$out/gpu_check.txt" | grep -E "FAIL|passed|copy to" | cut -c1-200
    ;;
  tiled)
    # Tiled runs against the PCIe floor with each phase's time and the overlap of pushes and
    # pulls (issue 18), then single transfers, which the tiled changes must leave as they were.
    for dev in cuda: opencl:NVIDIA; do
      echo "== bench_tiled --device $dev"
      OCL_ICD_VENDORS=/tmp/nv-icd timeout 250 "${bench_env[@]}" "$build/bin/bench_tiled" --device "$dev" \
        --gb "${GPIX_TILED_GB:-8}" --budget-mb 1024 --repeats 3 2>&1 | tee -a "$out/tiled.txt"
    done
    benches transfers.txt bench_transfer
    ;;
  two)
    OCL_ICD_VENDORS=/tmp/nv-icd "$build/bin/gpix" devices 2>&1 | tee "$out/devices.txt"
    for backend in ${GPIX_TWO_BACKENDS:-cuda opencl}; do
      all=$(gpus $backend)
      if [ -z "$all" ]; then echo "gpu-run: no $backend GPU listed"; continue; fi
      for devs in "${all%%,*}" "$all"; do
        # Pinned host memory on CUDA only: an OpenCL context stages another one's pinned memory.
        for pinned in ${GPIX_TWO_PINNED:-0 $([ $backend = cuda ] && echo 1)}; do
          echo "== bench_tiled --device $devs --pinned $pinned"
          OCL_ICD_VENDORS=/tmp/nv-icd timeout 150 "${bench_env[@]}" "$build/bin/bench_tiled" --device "$devs" \
            --gb "${GPIX_TILED_GB:-12}" --budget-mb 2048 --repeats 3 --workers 1,2 \
            --pinned $pinned ${GPIX_TWO_ARGS:-} 2>&1 | tee -a "$out/two.txt" | grep -v "^device:"
        done
      done
    done
    [ "${GPIX_TWO_COPIES:-1}" = 0 ] && exit 0
    echo "== bench_devices"
    OCL_ICD_VENDORS=/tmp/nv-icd timeout 150 "$build/bin/bench_devices" --mb 1024 2>&1 |
      tee "$out/devices_copy.txt"
    ;;
  multi)
    echo "== dma_ceiling"
    timeout 90 python3 bench/dma_ceiling.py 2>&1 | tee "$out/dma.txt"
    gpus=$(gpus)
    echo "== cross_backend --devices $gpus"
    OCL_ICD_VENDORS=/tmp/nv-icd timeout 200 "$build/bin/cross_backend" --devices "$gpus" 2>&1 |
      tee "$out/cross_backend.txt" | grep -E "FAIL|passed|devices|device"
    echo "== ctest (suites that use several devices at once)"
    cd "$build"
    OCL_ICD_VENDORS=/tmp/nv-icd GPIX_REQUIRE_CUDA=1 timeout 240 ctest -j8 --timeout 230 \
      -R "${GPIX_TESTS:-test_core_(tiled|memory|stress|copy_threads|array|device)$}" \
      --output-on-failure > "$out/ctest.txt" 2>&1
    grep -E "tests passed|Failed|\*\*\*|FAIL!|Timeout" "$out/ctest.txt" | head -40
    tail -5 "$out/ctest.txt"
    ;;
  transfers)
    for dev in cuda: opencl:NVIDIA; do
      echo "== bench_memory --device $dev"
      OCL_ICD_VENDORS=/tmp/nv-icd timeout 150 "$build/bin/bench_memory" --device "$dev" 2>&1 | tee -a "$out/bench.txt"
    done
    for dev in cuda: opencl:NVIDIA; do
      echo "== bench_memory --sweep --device $dev"
      OCL_ICD_VENDORS=/tmp/nv-icd timeout 150 "$build/bin/bench_memory" --sweep --device "$dev" 2>&1 | tee -a "$out/sweep.txt"
    done
    echo "== CuPy"
    timeout 120 python3 bench/peer_cupy.py --transfers 2>&1 | tee "$out/cupy.txt"
    ;;
  suite)
    # The peers' wheels (carried in .whl) into /tmp/site; CuPy, numpy, scipy, scikit-image and
    # matplotlib are the machine's own.
    if compgen -G ".whl/*.whl" >/dev/null; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || echo "gpu-run: installing the wheels failed"
      export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
    fi
    # NVIDIA's OpenCL only (gpix's and pyclesperanto's), as for the other stages.
    OCL_ICD_VENDORS=/tmp/nv-icd PYTHONUNBUFFERED=1 timeout 575 python3 bench/suite.py \
      --bench-grid "$build/bin/bench_grid" --out "$out" \
      --commit "$(cat "$build/GPU_COMMIT" 2>/dev/null || echo unknown)" "${@:2}" 2>&1 |
      tee "$out/suite.log" | tail -40
    ;;
  large)
    # Single large buffers on NVIDIA OpenCL (raw probes, then gpix), then out-of-memory.
    timeout 300 "$build/bin/gpu_check" --large-allocations 2>&1 | tee "$out/large.txt" | tail -60
    ;;
esac
