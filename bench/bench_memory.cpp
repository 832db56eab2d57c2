// Push/pull bandwidth from pinned and from ordinary (pageable) host memory, 1 MB to 1 GB.
//   bench_memory [--device NAME] [--repeats 11] [--max-mb 1024] [--sweep]
// Pinned: HostArray::pinned + write()/read() (direct DMA). Pageable: std::vector + write()/
// read() (transfers from GPIX_STAGING_MIN_MB on staged through gpix's pinned ring;
// GPIX_NO_STAGING=1 turns that off for comparison). Prints medians in ms and GB/s (1 GB = 1e9
// bytes). Host buffers are allocated and written once and reused by every repetition, pushes
// and pulls alike, as bench/peer_cupy.py does (so neither side pays first-touch page faults).
// --sweep: pageable push/pull at 1, 4, 16 and 256 MB under several staging settings
// (GPIX_STAGING_THREADS / _DEPTH / _CHUNK_MB / _MIN_MB / _WORKER_MB / _NT / _PIECES /
// _KERNEL_MB / _SLICE_MB, set per row), to pick the defaults.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "config.h"
#include "gpix/gpix.h"
#include "timing.h"

namespace {

// Pageable push/pull under one staging setting per row; "-" leaves a knob at its default.
int run_sweep(const gpix::Device& dev, int repeats) {
  struct Setting {
    const char *threads, *depth, *chunk, *min, *worker, *nt, *pieces, *kernel, *slice;
  };
  const Setting settings[] = {
      {"-", "-", "-", "-", "-", "-", "-", "-", "-"},
      {"-", "-", "-", "-", "-", "0", "-", "-", "-"},
      {"-", "-", "-", "-", "-", "-", "4", "-", "-"},
      {"-", "-", "-", "-", "-", "-", "8", "-", "-"},
      {"-", "-", "-", "-", "-", "-", "32", "-", "-"},
      {"-", "-", "1", "-", "-", "-", "-", "-", "-"},
      {"-", "-", "16", "-", "-", "-", "-", "-", "-"},
      {"-", "2", "-", "-", "-", "-", "-", "-", "-"},
      {"-", "4", "-", "-", "-", "-", "-", "-", "-"},
      {"-", "-", "-", "-", "0.125", "-", "-", "-", "-"},
      {"-", "-", "-", "-", "1", "-", "-", "-", "-"},
      {"4", "-", "-", "-", "-", "-", "-", "-", "-"},
      {"-", "-", "-", "1000000", "-", "-", "-", "-", "-"},
      {"-", "-", "-", "-", "-", "-", "-", "0", "-"},
      {"4", "-", "-", "-", "-", "-", "-", "0", "-"},
      {"-", "-", "-", "-", "-", "-", "-", "-", "0.0625"},
      {"-", "-", "-", "-", "-", "-", "-", "-", "0.25"},
  };

  const char* const knobs[] = {
      "GPIX_STAGING_THREADS", "GPIX_STAGING_DEPTH",     "GPIX_STAGING_CHUNK_MB",
      "GPIX_STAGING_MIN_MB",  "GPIX_STAGING_WORKER_MB", "GPIX_STAGING_NT",
      "GPIX_STAGING_PIECES",  "GPIX_STAGING_KERNEL_MB", "GPIX_STAGING_SLICE_MB"};
  std::printf("%-8s %-6s %-6s %-8s %-7s %-4s %-7s %-7s %-7s %-7s %10s %10s\n", "threads", "depth",
              "chunk", "min_mb", "worker", "nt", "pieces", "kernel", "slice", "size", "push GB/s",
              "pull GB/s");
  for (std::size_t mb : {1u, 4u, 16u, 256u}) {
    const std::size_t bytes = mb * 1000 * 1000;
    auto a = gpix::Array::empty(gpix::Shape{bytes}, gpix::DType::u8, dev);
    std::vector<unsigned char> host(bytes);
    for (std::size_t i = 0; i < bytes; ++i) host[i] = static_cast<unsigned char>(i * 131 + 7);
    std::vector<unsigned char> back(bytes, 0);
    for (const Setting& s : settings) {
      const char* values[] = {s.threads, s.depth,  s.chunk,  s.min,  s.worker,
                              s.nt,      s.pieces, s.kernel, s.slice};
      // Parsed as the environment would be; gpix reads the environment only once.
      const gpix::detail::ScopedConfig scoped(
          gpix::detail::Config::from([&](const char* name) -> const char* {
            for (int k = 0; k < 9; ++k) {
              if (std::strcmp(name, knobs[k]) == 0)
                return std::strcmp(values[k], "-") != 0 ? values[k] : nullptr;
            }
            return std::getenv(name);
          }));
      const double push = gpix::bench::median_ms(repeats, [&] { a.write(host.data(), bytes); });
      const double pull = gpix::bench::median_ms(repeats, [&] { a.read(back.data(), bytes); });
      if (std::memcmp(back.data(), host.data(), bytes) != 0) {
        std::fprintf(stderr, "bench_memory: data mismatch in the sweep\n");
        return 1;
      }
      std::printf("%-8s %-6s %-6s %-8s %-7s %-4s %-7s %-7s %-7s %-7s %10.2f %10.2f\n", s.threads,
                  s.depth, s.chunk, s.min, s.worker, s.nt, s.pieces, s.kernel, s.slice,
                  (std::to_string(mb) + " MB").c_str(),
                  gpix::bench::gbps(static_cast<double>(bytes), push),
                  gpix::bench::gbps(static_cast<double>(bytes), pull));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device;
  int repeats = 11;
  std::size_t max_mb = 1024;
  bool sweep = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sweep")) sweep = true;
    if (i + 1 >= argc) continue;
    if (!std::strcmp(argv[i], "--device"))
      device = argv[++i];
    else if (!std::strcmp(argv[i], "--repeats"))
      repeats = std::stoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--max-mb"))
      max_mb = std::stoul(argv[++i]);
  }
  try {
    const gpix::Device dev = gpix::select_device(device);
    std::printf("device: %s\n", dev.label().c_str());
    std::printf(
        "host buffers: allocated and written once, reused by every repetition (as "
        "peer_cupy.py)\n");
    if (sweep) return run_sweep(dev, repeats);
    std::printf("%-10s %-9s %-5s %10s %9s\n", "size", "host", "op", "median ms", "GB/s");
    for (std::size_t mb : {1u, 16u, 256u, 1024u}) {
      if (mb > max_mb) continue;
      const std::size_t bytes = mb * 1000 * 1000;
      const std::size_t n = bytes / 4;
      const gpix::Shape shape{n};
      auto a = gpix::Array::empty(shape, gpix::DType::f32, dev);
      std::vector<float> pageable(n);
      for (std::size_t i = 0; i < n; ++i) pageable[i] = static_cast<float>(i % 1000) * 0.5f;
      auto pinned = gpix::HostArray::pinned(shape, gpix::DType::f32, dev);
      std::memcpy(pinned.data(), pageable.data(), bytes);
      const int reps = mb >= 1024 ? std::max(3, repeats / 2) : repeats;
      auto row = [&](const char* host, const char* op, double ms) {
        std::printf("%-10s %-9s %-5s %10.3f %9.2f\n", (std::to_string(mb) + " MB").c_str(), host,
                    op, ms, gpix::bench::gbps(static_cast<double>(bytes), ms));
      };
      row("pinned", "push", gpix::bench::median_ms(reps, [&] { a.write(pinned); }));
      row("pinned", "pull", gpix::bench::median_ms(reps, [&] { a.read(pinned); }));
      row("pageable", "push",
          gpix::bench::median_ms(reps, [&] { a.write(pageable.data(), bytes); }));
      row("pageable", "pull",
          gpix::bench::median_ms(reps, [&] { a.read(pageable.data(), bytes); }));
      // Check the data survived the last round trip (a benchmark that moves garbage lies).
      if (pageable[n - 1] != static_cast<float>((n - 1) % 1000) * 0.5f) {
        std::fprintf(stderr, "bench_memory: data mismatch after the round trip\n");
        return 1;
      }
    }
    const gpix::MemoryStats s = gpix::memory_stats(dev);
    std::printf("pool: %llu allocations, %llu cache hits, peak %s\n",
                static_cast<unsigned long long>(s.allocations),
                static_cast<unsigned long long>(s.cache_hits),
                gpix::human_bytes(s.peak_bytes_in_use).c_str());
  } catch (const gpix::Error& e) {
    std::fprintf(stderr, "bench_memory: %s\n", e.what());
    return 1;
  }
  return 0;
}
