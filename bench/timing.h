#pragma once
// Median-of-N wall-clock timing for benchmarks (each run ends with the device idle).
#include <algorithm>
#include <chrono>
#include <vector>

namespace gpix::bench {

template <class F>
double median_ms(int repeats, F&& f) {
  std::vector<double> t;
  f();  // warm-up: compilation, first-touch
  for (int i = 0; i < repeats; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double, std::milli>(b - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

inline double gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

}  // namespace gpix::bench
