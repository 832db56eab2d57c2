// Push/pull bandwidth from pinned and from ordinary (pageable) host memory, 1 MB to 1 GB.
//   bench_memory [--device NAME] [--repeats 11] [--max-mb 1024]
// Pinned: HostArray::pinned + write()/read() (direct DMA). Pageable: std::vector + write()/
// read() (large transfers staged through gpix's pinned ring; GPIX_NO_STAGING=1 turns that
// off for comparison). Prints medians in ms and GB/s (1 GB = 1e9 bytes).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpix/gpix.h"
#include "timing.h"

int main(int argc, char** argv) {
  std::string device;
  int repeats = 11;
  std::size_t max_mb = 1024;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-mb")) max_mb = std::stoul(argv[i + 1]);
  }
  try {
    const gpix::Device dev = gpix::select_device(device);
    std::printf("device: %s\n", dev.label().c_str());
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
