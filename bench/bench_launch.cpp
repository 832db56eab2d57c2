// What one catalog call costs on a tiny image, where the pixels cost nothing and only gpix's
// own work and the driver's launch remain (issue 17: "launch overhead of a filter on a tiny
// image under 20 us; no allocation on the hot path of a repeated call").
//   bench_launch [--device NAME] [--calls 2000] [--json FILE] [--only TEXT]
// Per filter, on an 8 x 8 float32 image (and 8 x 8 x 8 for the 3D rows), after a warm-up:
//   issue us       wall time per call of gpix::run in a loop, the device finished once at the
//                  end (what a script or a GUI pays per call when it does not wait)
//   round trip us  the same with Device::finish() after every call
//   host allocs    operator new calls per call (counted by this binary's replacement of the
//                  global operator new)
//   device allocs  requests that reached the device's allocator per call (memory_stats; the
//                  pool serves the rest)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/gpix.h"
#include "gpix/memory.h"
#include "support/counted_new.h"

namespace {

struct Case {
  const char* filter;
  gpix::Params params;
  bool volume;
  const char* label = "";
};

struct Row {
  std::string name;
  double issue_us = 0, round_us = 0, host_allocs = 0, device_allocs = 0;
};

double per_call_us(int calls, const std::function<void()>& f, const gpix::Device& dev,
                   bool finish_each) {
  const auto a = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) {
    f();
    if (finish_each) dev.finish();
  }
  dev.finish();
  const auto b = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::micro>(b - a).count() / calls;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device, json, only;
  int calls = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--calls")) calls = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--json")) json = argv[i + 1];
    if (!std::strcmp(argv[i], "--only")) only = argv[i + 1];  // rows whose name holds TEXT
  }
  try {
    const gpix::Device dev = gpix::select_device(device);
    std::printf("device: %s, %d calls per row\n", dev.label().c_str(), calls);
    const std::vector<Case> cases = {
        {"add_scalar", {{"value", 1.0}}, false},
        {"threshold", {{"value", 0.5}}, false},
        {"convert", {{"dtype", std::string("uint16")}}, false},
        {"gaussian_blur", {{"sigma_x", 1.0}, {"sigma_y", 1.0}}, false},
        {"mean_box", {{"radius_x", 1.0}, {"radius_y", 1.0}}, false},
        {"median_box", {{"radius_x", 1.0}, {"radius_y", 1.0}}, false},
        {"maximum_of_all_pixels", {}, false},
        {"std_of_all_pixels", {}, false},
        {"histogram", {{"n_bins", 256.0}, {"minimum", 0.0}, {"maximum", 1.0}}, false, " [0, 1]"},
        {"histogram", {{"n_bins", 256.0}}, false, " own range"},
        {"gaussian_blur", {{"sigma_x", 1.0}, {"sigma_y", 1.0}, {"sigma_z", 1.0}}, true},
        {"maximum_z_projection", {}, true},
    };
    std::vector<float> plane(8 * 8), cube(8 * 8 * 8);
    for (std::size_t i = 0; i < cube.size(); ++i) cube[i] = static_cast<float>(i % 13) / 13.0f;
    std::copy(cube.begin(), cube.begin() + 64, plane.begin());
    const gpix::Array a2 = gpix::Array::push(plane, gpix::Shape{8, 8}, dev);
    const gpix::Array a3 = gpix::Array::push(cube, gpix::Shape{8, 8, 8}, dev);
    std::vector<Row> rows;
    std::printf("  %-34s %10s %14s %12s %14s\n", "filter", "issue us", "round trip us",
                "host allocs", "device allocs");
    for (const Case& c : cases) {
      const std::string name = std::string(c.filter) + c.label + (c.volume ? " 8^3" : " 8^2");
      if (name.find(only) == std::string::npos) continue;
      const gpix::Array& in = c.volume ? a3 : a2;
      const auto call = [&] { (void)gpix::run(c.filter, in, c.params); };
      for (int i = 0; i < 50; ++i) call();  // compiles, tier upgrades, pool warm
      dev.finish();
      Row r;
      r.name = name;
      const std::uint64_t news0 = gpix::test::news();
      const std::uint64_t dev0 = gpix::memory_stats(dev).device_allocations;
      r.issue_us = per_call_us(calls, call, dev, false);
      r.host_allocs = static_cast<double>(gpix::test::news() - news0) / calls;
      r.device_allocs =
          static_cast<double>(gpix::memory_stats(dev).device_allocations - dev0) / calls;
      r.round_us = per_call_us(calls, call, dev, true);
      std::printf("  %-34s %10.1f %14.1f %12.1f %14.3f\n", r.name.c_str(), r.issue_us, r.round_us,
                  r.host_allocs, r.device_allocs);
      rows.push_back(r);
    }
    if (!json.empty()) {
      std::ofstream f(json);
      f << "{\"device\": \"" << dev.label() << "\", \"calls\": " << calls << ", \"rows\": [";
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        f << (i ? ", " : "") << "{\"filter\": \"" << r.name << "\", \"issue_us\": " << r.issue_us
          << ", \"round_trip_us\": " << r.round_us << ", \"host_allocs\": " << r.host_allocs
          << ", \"device_allocs\": " << r.device_allocs << "}";
      }
      f << "]}\n";
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_launch: %s\n", e.what());
    return 1;
  }
  return 0;
}
