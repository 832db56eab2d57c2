#pragma once
// Plain CPU references for neighbourhood operations, in double, on (z, y, x) images stored
// x-fastest. Borders replicate the nearest pixel, as gpix's filters do.
#include <algorithm>
#include <array>
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

// Applies f to the box of radii (rx, ry, rz) around each pixel (borders replicate; radii of
// axes the image lacks are ignored); f gets the values, in the pixels' own type T (exact for
// 64-bit integers, which double cannot hold).
template <class T, class F>
std::vector<T> box_t(const std::vector<T>& in, const Shape& s, std::array<int, 3> r, F f) {
  const Dims dm(s);
  const long rz = s.ndim() == 3 ? r[2] : 0, ry = s.ndim() >= 2 ? r[1] : 0, rx = r[0];
  std::vector<T> out(in.size()), window;
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

// box_t in double.
template <class F>
std::vector<double> box(const std::vector<double>& in, const Shape& s, std::array<int, 3> r, F f) {
  return box_t<double>(in, s, r, f);
}

// The (2r+1)^ndim box.
template <class F>
std::vector<double> box(const std::vector<double>& in, const Shape& s, int r, F f) {
  return box(in, s, std::array<int, 3>{r, r, r}, f);
}

inline double mean(const std::vector<double>& w) {
  double sum = 0;
  for (double v : w) sum += v;
  return sum / static_cast<double>(w.size());
}
inline double population_variance(const std::vector<double>& w) {
  const double m = mean(w);
  double sq = 0;
  for (double v : w) sq += (v - m) * (v - m);
  return sq / static_cast<double>(w.size());
}
// The smallest and the largest value of a window (any element type).
inline constexpr auto minimum = [](const auto& w) { return *std::min_element(w.begin(), w.end()); };
inline constexpr auto maximum = [](const auto& w) { return *std::max_element(w.begin(), w.end()); };
inline double median(std::vector<double> w) {
  std::nth_element(w.begin(), w.begin() + static_cast<long>(w.size() / 2), w.end());
  return w[w.size() / 2];
}

// scipy.ndimage.sobel along axis: derivative [-1, 0, 1] along it, [1, 2, 1] along the others.
inline std::vector<double> sobel_axis(const std::vector<double>& in, const Shape& s, int axis) {
  std::vector<double> out = in;
  for (int a = 0; a < s.ndim(); ++a) {
    out = convolve_axis(
        out, s, a == axis ? std::vector<double>{-1, 0, 1} : std::vector<double>{1, 2, 1}, a);
  }
  return out;
}

// The sum over axes of the [1, -2, 1] second difference (scipy.ndimage.laplace).
inline std::vector<double> laplace(const std::vector<double>& in, const Shape& s) {
  std::vector<double> out(in.size(), 0.0);
  for (int a = 0; a < s.ndim(); ++a) {
    const auto d = convolve_axis(in, s, {1, -2, 1}, a);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += d[i];
  }
  return out;
}

// Gaussian blur with sigma per axis (0 leaves the axis alone).
inline std::vector<double> gaussian(std::vector<double> v, const Shape& s,
                                    std::array<double, 3> sigma) {
  for (int a = 0; a < s.ndim(); ++a) {
    if (sigma[static_cast<std::size_t>(a)] > 0)
      v = convolve_axis(v, s, gaussian_taps(sigma[static_cast<std::size_t>(a)]), a);
  }
  return v;
}

}  // namespace gpix::test::ref
