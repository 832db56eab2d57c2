#pragma once
// Plain CPU references for neighbourhood operations, in double, on (z, y, x) images stored
// x-fastest. Borders replicate the nearest pixel, as gpix's filters do.
#include <algorithm>
#include <cmath>
#include <vector>

#include "harness.h"

namespace gpix::test::ref {

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return {v.begin(), v.end()};
}

template <class T>
std::vector<T> cast(const std::vector<double>& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = sat<T>(v[i]);
  return out;
}

struct Dims {
  long w, h, d;
  explicit Dims(const Shape& s)
      : w(static_cast<long>(s.width())),
        h(static_cast<long>(s.height())),
        d(static_cast<long>(s.depth())) {}
  long clamp(long v, long n) const { return std::min(std::max(v, 0L), n - 1); }
  // Pixel (x, y, z) with replicated borders.
  std::size_t at(long x, long y, long z) const {
    return static_cast<std::size_t>((clamp(z, d) * h + clamp(y, h)) * w + clamp(x, w));
  }
};

// scipy.ndimage's Gaussian taps: radius int(4 sigma + 0.5), normalised.
inline std::vector<double> gaussian_taps(double sigma) {
  const int r = static_cast<int>(4.0 * sigma + 0.5);
  std::vector<double> t;
  double sum = 0;
  for (int i = -r; i <= r; ++i) {
    t.push_back(std::exp(-0.5 * i * i / (sigma * sigma)));
    sum += t.back();
  }
  for (auto& v : t) v /= sum;
  return t;
}

// Convolution along axis (0 = x, 1 = y, 2 = z) with centred taps.
inline std::vector<double> convolve_axis(const std::vector<double>& in, const Shape& s,
                                         const std::vector<double>& taps, int axis) {
  const Dims dm(s);
  const long r = static_cast<long>(taps.size() / 2);
  std::vector<double> out(in.size());
  for (long z = 0; z < dm.d; ++z)
    for (long y = 0; y < dm.h; ++y)
      for (long x = 0; x < dm.w; ++x) {
        double acc = 0;
        for (long k = -r; k <= r; ++k) {
          const long xx = x + (axis == 0 ? k : 0), yy = y + (axis == 1 ? k : 0),
                     zz = z + (axis == 2 ? k : 0);
          acc += taps[static_cast<std::size_t>(k + r)] * in[dm.at(xx, yy, zz)];
        }
        out[dm.at(x, y, z)] = acc;
      }
  return out;
}

// Applies f to the (2r+1)^ndim box around each pixel (borders replicate); f gets the values.
template <class F>
std::vector<double> box(const std::vector<double>& in, const Shape& s, int r, F f) {
  const Dims dm(s);
  const long rz = s.ndim() == 3 ? r : 0, ry = s.ndim() >= 2 ? r : 0, rx = r;
  std::vector<double> out(in.size()), window;
  for (long z = 0; z < dm.d; ++z)
    for (long y = 0; y < dm.h; ++y)
      for (long x = 0; x < dm.w; ++x) {
        window.clear();
        for (long k = -rz; k <= rz; ++k)
          for (long j = -ry; j <= ry; ++j)
            for (long i = -rx; i <= rx; ++i) window.push_back(in[dm.at(x + i, y + j, z + k)]);
        out[dm.at(x, y, z)] = f(window);
      }
  return out;
}

}  // namespace gpix::test::ref
