#pragma once
// gpix's run-time configuration: every GPIX_* environment variable that core reads, parsed
// once per process into one typed struct (docs/ENVIRONMENT.md lists them). Hot paths read the
// struct, never the environment: a transfer used to make a dozen getenv calls.
//
// Tests and benchmarks change settings through config_for_testing() or a ScopedConfig instead
// of setenv: the environment is read only once, and setenv while other threads call getenv is
// undefined behaviour in glibc.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace gpix::detail {

// How transfers from ordinary (pageable) host memory are staged (transfer.cpp). Defaults from
// `bench_memory --sweep` on an H200 host (2026-11-22); see docs/ENVIRONMENT.md.
struct StagingConfig {
  bool off = false;                                // GPIX_NO_STAGING
  std::size_t min_bytes = std::size_t{512} << 10;  // GPIX_STAGING_MIN_MB
  std::size_t max_piece = std::size_t{4} << 20;    // GPIX_STAGING_CHUNK_MB
  std::size_t per_worker = std::size_t{64} << 10;  // GPIX_STAGING_WORKER_MB
  std::size_t kernel_max = std::size_t{16} << 20;  // GPIX_STAGING_KERNEL_MB (0: never)
  std::size_t slice = 0;                           // GPIX_STAGING_SLICE_MB (0: by size)
  std::size_t ring_bytes = std::size_t{64} << 20;  // GPIX_STAGING_RING_MB
  unsigned threads = 1;                            // GPIX_STAGING_THREADS (default: cores, <= 8)
  unsigned depth = 0;                              // GPIX_STAGING_DEPTH (0: the ring's capacity)
  unsigned pieces = 8;                             // GPIX_STAGING_PIECES
  int streaming = -1;                              // GPIX_STAGING_NT: 0, 1, -1 (by direction)
  std::chrono::microseconds spin{50};              // GPIX_STAGING_SPIN_US (copy threads' poll)
};

struct Config {
  StagingConfig staging;
  bool disable_fp64 = false;      // GPIX_DISABLE_FP64
  bool test_fill_kernel = false;  // GPIX_TEST_FILL_KERNEL
  bool no_disk_cache = false;     // GPIX_NO_DISK_CACHE
  // GPIX_NO_PEER_COPY: copies between two CUDA devices go through pinned host memory even where
  // the driver offers peer-to-peer, for hosts whose peer path is slow or broken (an IOMMU in a
  // VM) and for measuring the two paths against each other (bench_devices).
  bool no_peer_copy = false;
  // The disk cache's folder: GPIX_CACHE_DIR, else $XDG_CACHE_HOME/gpix, else ~/.cache/gpix;
  // empty when none of them is set.
  std::string cache_dir;
  // GPIX_DISABLE_WORKAROUNDS: names of driver workarounds switched off, or "all".
  std::vector<std::string> disabled_workarounds;
  std::string cuda_library;  // GPIX_CUDA_LIBRARY: the driver library to open instead of libcuda
  std::string nvrtc_path;    // GPIX_NVRTC_PATH: the NVRTC library to try first
  std::string cuda_path;     // CUDA_PATH: a toolkit folder to search for NVRTC
  // GPIX_KERNEL_BUNDLE: the prebuilt kernel bundle to use instead of the one next to
  // libgpix_core; "off" for none (kernel_bundle.h).
  std::string kernel_bundle;
  // GPIX_PROGRAM_UNIT: "file" or "entry" overrides each backend's choice of building a kernel
  // file as one program or one program per entry (DeviceImpl::programs_per_entry); empty:
  // the backend's default.
  std::string program_unit;
  // GPIX_PROGRAM_CACHE_ENTRIES: programs each device keeps in memory (least recently used go
  // first; DeviceImpl::kernel). A process that asks for thousands of variants (a fuzzer, a
  // long session) otherwise grows without bound.
  unsigned program_cache_entries = 256;
  // GPIX_TIERED_COMPILE: whether a filter runs a bit-identical plain kernel while its fastest
  // kernel compiles in the background (DeviceImpl::kernel_if_ready): 0 never, 1 on every
  // device, unset (-1) on GPUs only. PoCL 3.1 aborts ("Failed to create kernel compiler pass
  // inline-kernels") when two programs build at once in a fresh process.
  int tiered_compile = -1;
  // GPIX_TIER_QUIET_MS: a background compile of a tiered program waits until no foreground
  // compile has run on its device for this long. NVIDIA's OpenCL builds one program at a time
  // in a process, so a background build that starts at once delays the plain kernel's build
  // it was meant to spare and the next filter's first build (bench/RESULTS.md); a person
  // looks at a result for longer than this before the next click.
  unsigned tier_quiet_ms = 250;
  // GPIX_QUICK_BUILDS=1: a program's first build, where tiered compilation is on, is a quick
  // one (the backend's build_quick(): OpenCL's -cl-opt-disable) that serves until its full
  // build, queued in the background, replaces it; a launch past kQuickLaunchLimit work-items
  // builds the full one first. Off by default: on NVIDIA's OpenCL first calls took 20-40%
  // less, but one catalog kernel's quick build gave other bits (ClDevice::build_quick).
  bool quick_builds = false;
  // The most elements one launch of histogram_partial or of Otsu's counting kernels counts:
  // their counts are uint32 (tests set fewer, so that small images take several runs; no
  // variable).
  std::uint64_t histogram_run = 0xffffffffu;
  // Arrays of fewer elements than this take sample_affine's and sample_scale's 32-bit indices
  // (tests set 0, so that the 64-bit ones run too; no variable).
  std::uint64_t index32_below = std::uint64_t{1} << 31;
  // The most work-groups a launch may have on axis 1 or 2 on any device, below the device's
  // own limit (DeviceImpl::groups_limit): tests set a few, so that small images take the
  // swapped grids CUDA needs past 65535 (filters/launch.cpp; no variable).
  std::size_t grid_groups_limit = std::numeric_limits<std::size_t>::max();
  // GPIX_CL_BLOCKING: how OpenCL's blocking reads and writes wait (ClDevice::blocks): 0 a
  // queued transfer and clFinish for all, 1 one blocking call for all, unset (-1) by direction
  // and size as NVIDIA's OpenCL measured fastest (reads up to 512 kB blocking, writes from 64
  // kB to 512 kB; bench/RESULTS.md, 2026-12-02).
  int cl_blocking = -1;
  // GPIX_TILED_PIPELINE: whether a tiled run's worker pushes slab k + 1 while slab k is
  // filtered (tiled.cpp's worker): 0 never, 1 always, unset (-1) the backend's default
  // (DeviceImpl::tiled_pipeline). For measuring the two against each other.
  int tiled_pipeline = -1;

  // Whether the named driver workaround is switched off.
  bool workaround_disabled(std::string_view name) const;

  // A configuration from variables as lookup() returns them (nullptr: unset). from_environment()
  // passes getenv; benchmarks that sweep string settings pass their own table.
  static Config from(const std::function<const char*(const char*)>& lookup);
  static Config from_environment();
};

// The process's configuration, read from the environment on first use.
const Config& config();

// The same object, writable: tests and benchmarks only, and only while no other thread uses
// gpix (nothing synchronises the readers).
Config& config_for_testing();

// Replaces the configuration for a scope and restores the previous one at its end.
class ScopedConfig {
 public:
  explicit ScopedConfig(Config c) : saved_(config()) { config_for_testing() = std::move(c); }
  ScopedConfig() : saved_(config()) {}  // change config_for_testing() in the scope
  ~ScopedConfig() { config_for_testing() = std::move(saved_); }
  ScopedConfig(const ScopedConfig&) = delete;
  ScopedConfig& operator=(const ScopedConfig&) = delete;

 private:
  Config saved_;
};

}  // namespace gpix::detail
