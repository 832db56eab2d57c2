// Reductions and projections against the memory-bandwidth floor, on float32 8192 x 8192 and
// 512 x 512 x 512: min+max (gpix::stats), sum, std, a 256-bin histogram and the maximum z
// projection, next to a device-to-device copy of the same bytes measured in the same run.
//   bench_reductions [--device NAME] [--repeats 21]
// The floor of an operation is (bytes it must read + write) / copy bandwidth, where the copy
// bandwidth counts both the read and the write of the copy. "x floor" = median / floor.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpix/filters.h"
#include "gpix/gpix.h"
#include "timing.h"

namespace {

struct Case {
  const char* name;
  gpix::Shape shape;
};

void report(const char* op, double ms, double bytes, double copy_gbps) {
  const double floor_ms = bytes / (copy_gbps * 1e9) * 1e3;
  std::printf("  %-26s %10.3f %10.1f %10.2f\n", op, ms, gpix::bench::gbps(bytes, ms),
              ms / floor_ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::string device;
  int repeats = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
  }
  try {
    const gpix::Device dev = gpix::select_device(device);
    std::printf("device: %s\n", dev.label().c_str());
    const Case cases[] = {{"f32 8192x8192", gpix::Shape{8192, 8192}},
                          {"f32 512x512x512", gpix::Shape{512, 512, 512}}};
    for (const Case& c : cases) {
      const std::size_t n = c.shape.elements();
      std::vector<float> host(n);
      std::uint32_t state = 12345;
      for (auto& v : host) {
        state = state * 1664525u + 1013904223u;
        v = static_cast<float>(state >> 8) * (1.0f / 16777216.0f) * 1000.0f - 500.0f;
      }
      const auto a = gpix::Array::push(host, c.shape, dev);
      auto b = gpix::Array::empty(c.shape, gpix::DType::f32, dev);
      const double bytes = static_cast<double>(a.bytes());
      const double copy_ms = gpix::bench::median_ms(repeats, [&] {
        b.copy_from(a);
        dev.finish();  // copies and launches are enqueued; time them to completion
      });
      const double copy_gbps = gpix::bench::gbps(2 * bytes, copy_ms);
      std::printf("%s (%.0f MB)\n", c.name, bytes / 1e6);
      std::printf("  %-26s %10s %10s %10s\n", "op", "median ms", "GB/s", "x floor");
      std::printf("  %-26s %10.3f %10.1f %10.2f\n", "copy (read + write)", copy_ms, copy_gbps, 1.0);
      report("min+max (stats)", gpix::bench::median_ms(repeats, [&] { (void)gpix::stats(a); }),
             bytes, copy_gbps);
      report("sum_of_all_pixels",
             gpix::bench::median_ms(repeats, [&] { (void)gpix::sum_of_all_pixels(a); }), bytes,
             copy_gbps);
      report("std_of_all_pixels",
             gpix::bench::median_ms(repeats, [&] { (void)gpix::std_of_all_pixels(a); }), bytes,
             copy_gbps);
      report("histogram 256 bins (range)",
             gpix::bench::median_ms(repeats, [&] { (void)gpix::histogram(a, 256, -500, 500); }),
             bytes, copy_gbps);
      if (c.shape.ndim() == 3) {
        const double out = bytes / static_cast<double>(c.shape.depth());
        report("maximum_z_projection",
               gpix::bench::median_ms(repeats,
                                      [&] {
                                        (void)gpix::maximum_z_projection(a);
                                        dev.finish();
                                      }),
               bytes + out, copy_gbps);
      }
    }
  } catch (const gpix::Error& e) {
    std::fprintf(stderr, "bench_reductions: %s\n", e.what());
    return 1;
  }
  return 0;
}
