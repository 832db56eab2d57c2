// Neighbourhood filter timings against the device's memory-bandwidth floor.
//   bench_filters [--device NAME] [--scale N] [--repeats 21]
// For float32 8192x8192 and 512x512x512 (each extent divided by --scale for quick runs) it
// prints the median ms of gaussian sigma 2 and mean/min/max/median box radius 1, the device
// copy bandwidth measured in the same run (Array::copy of the same bytes, read + written),
// and each result as a multiple of the floor: input read once + output written once at that
// bandwidth. It also times gaussian_blur's first call (compiling into an empty disk cache)
// and the call after clear_memory_program_cache (loading the disk-cached program).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "config.h"
#include "gpix/filters/neighbourhood.h"
#include "gpix/gpix.h"
#include "gpix/kernel.h"
#include "timing.h"

namespace {

double once_ms(const std::function<void()>& f) {
  const auto a = std::chrono::steady_clock::now();
  f();
  const auto b = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string device;
  std::size_t scale = 1;
  int repeats = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--scale")) scale = std::max<std::size_t>(1, std::stoul(argv[i + 1]));
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
  }
  // A fresh disk cache, so the first call really compiles.
  const auto cache = std::filesystem::temp_directory_path() /
                     ("gpix-bench-cache-" +
                      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(cache);
  gpix::detail::config_for_testing().cache_dir = cache.string();
  try {
    const gpix::Device dev = gpix::select_device(device);
    std::printf("device: %s\n", dev.label().c_str());
    const std::size_t n2 = 8192 / scale, n3 = 512 / scale;
    const std::vector<gpix::Shape> shapes = {gpix::Shape{n2, n2}, gpix::Shape{n3, n3, n3}};

    {
      // First call and disk-cached call, on a small image (the cost is the program).
      std::vector<float> h(256 * 256, 1.0f);
      const auto a = gpix::Array::push(h, gpix::Shape{256, 256}, dev);
      const double first = once_ms([&] {
        (void)gpix::gaussian_blur(a, 2.0);
        dev.finish();
      });
      gpix::clear_memory_program_cache(dev);
      const double disk = once_ms([&] {
        (void)gpix::gaussian_blur(a, 2.0);
        dev.finish();
      });
      const double warm = once_ms([&] {
        (void)gpix::gaussian_blur(a, 2.0);
        dev.finish();
      });
      // Backends without a disk cache (CUDA today) recompile on the second call: the counters
      // show which happened.
      const auto st = gpix::program_cache_stats(dev);
      std::printf(
          "gaussian 2D first call: compile %.1f ms, after clear_memory_program_cache %.1f ms, "
          "in memory %.2f ms (compiles %llu, disk hits %llu)\n",
          first, disk, warm, static_cast<unsigned long long>(st.compiles),
          static_cast<unsigned long long>(st.disk_hits));
    }

    std::printf("%-24s %-14s %10s %10s %10s %8s\n", "op (float32)", "shape", "median ms", "GB/s",
                "floor ms", "x floor");
    for (const gpix::Shape& s : shapes) {
      std::vector<float> host(s.elements());
      for (std::size_t i = 0; i < host.size(); ++i)
        host[i] = static_cast<float>((i * 2654435761u) % 1000) * 0.25f;
      const auto a = gpix::Array::push(host, s, dev);
      const double bytes = static_cast<double>(a.bytes());
      gpix::Array keep;
      const double copy_ms = gpix::bench::median_ms(repeats, [&] {
        keep = a.copy();
        dev.finish();
      });
      // Copy moves the bytes twice (read + write): bandwidth in those terms.
      const double bw = 2 * bytes / (copy_ms * 1e-3);
      const double floor_ms = 2 * bytes / bw * 1e3;
      const bool is3 = s.ndim() == 3;
      const std::vector<std::pair<std::string, std::function<gpix::Array()>>> ops = {
          {"gaussian sigma 2", [&] { return gpix::gaussian_blur(a, 2.0); }},
          {"mean box r1", [&] { return gpix::mean_box(a, 1, 1, is3 ? 1 : 0); }},
          {"minimum box r1", [&] { return gpix::minimum_box(a, 1, 1, is3 ? 1 : 0); }},
          {"maximum box r1", [&] { return gpix::maximum_box(a, 1, 1, is3 ? 1 : 0); }},
          {"median box r1", [&] { return gpix::median_box(a, 1, 1, is3 ? 1 : 0); }},
      };
      std::printf("%-24s %-14s %10.3f %10.1f %10.3f %8.2f\n", "copy (device)", s.str().c_str(),
                  copy_ms, gpix::bench::gbps(2 * bytes, copy_ms), floor_ms, copy_ms / floor_ms);
      for (const auto& [name, f] : ops) {
        const double ms = gpix::bench::median_ms(repeats, [&] {
          keep = f();
          dev.finish();
        });
        std::printf("%-24s %-14s %10.3f %10.1f %10.3f %8.2f\n", name.c_str(), s.str().c_str(), ms,
                    gpix::bench::gbps(2 * bytes, ms), floor_ms, ms / floor_ms);
      }
    }
  } catch (const gpix::Error& e) {
    std::fprintf(stderr, "bench_filters: %s\n", e.what());
    std::filesystem::remove_all(cache);
    return 1;
  }
  std::filesystem::remove_all(cache);
  return 0;
}
