// Reference tests for the "Neighbourhood" category. Plain CPU references in double
// (tests/filters/reference.h) on fresh random data; the catalog rows run every filter x device x
// dtype on the harness shapes (1-pixel dims, odd extents, 1D/2D/3D). Tolerances:
// - minimum/maximum/median/top-hat/bottom-hat: exact (they only select and subtract).
// - mean of 8- and 16-bit integers: exact. mean of wider integers, gaussian, unsharp, into
//   integers: within 1 (the float32 or float64 result may sit next to .5 where rounding
//   flips); floats: 5e-5 (gaussian 1e-5) relative to
//   max(|expected|, 1) (float32 accumulation over at most ~100 values), 1e-12 for float64.
// - variance, sobel, laplace, gradients, difference of Gaussians (float outputs): 2e-4
//   relative to max(|expected|, 1) for float32 (differences of float32 values of magnitude
//   ~200 cancel to small results, so the error is relative to the inputs, not the output),
//   1e-10 for float64.
// Every check also verifies that the input is left untouched.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>

#include "gpix/filters/neighbourhood.h"
#include "gpix/kernel.h"
#include "harness.h"
#include "reference.h"

using namespace gpix;
using namespace gpix::test;

namespace {

using Radii = std::array<int, 3>;

// The integer nearest sum / n (n > 0), half to even, exactly.
std::int64_t nearest_quotient(std::int64_t sum, std::int64_t n) {
  std::int64_t q = sum / n, rem = sum % n;
  if (rem < 0) {
    q -= 1;
    rem += n;
  }
  return 2 * rem > n || (2 * rem == n && q % 2 != 0) ? q + 1 : q;
}

Params box_params(const Radii& r) {
  return {{"radius_x", double(r[0])}, {"radius_y", double(r[1])}, {"radius_z", double(r[2])}};
}

// Whether a dtype takes every radius of test_radii: the grid's types (issue 17: float32 and the
// cameras' uint8 and uint16). The others take one radius per kernel family: radius 1 (the
// stencils), 2 x 1 x 3 (tiled.kernel's buckets 2 and 3, or the median's radix select), 1 x 2 x 1
// (the median's register kernel), and the large radii below. Each (type, radius bucket or
// median window) pair is a program of its own, which PoCL takes 2-4 s to build: with every
// type on every radius these rows took 723 s cold on 2 cores, most of it building 619 programs
// (bottom_hat, which builds the min/max ones, 230 s; the median 209 s). A kernel's
// text depends on the type only through its load, key and accumulator macros, which every
// radius runs, and on the radius only through constants, which the grid's types cover.
bool all_radii(DType t) {
  return t == DType::f32 || t == DType::u8 || t == DType::u16;
}

// Radii the checks use: radius 1 everywhere (the fast kernels) and uneven radii larger than
// the 1-pixel and short axes of the harness shapes (border replication); all_radii says which
// types take {0, 2, 1} (a zero radius) and 3 x 3 (bucket 3 in a plane, 49 median values).
std::vector<Radii> test_radii(int max_window, DType t) {
  const bool all = all_radii(t);
  std::vector<Radii> r = {{1, 1, 1}, {2, 1, 3}};
  if (all) r.push_back({0, 2, 1});
  // The median's register kernel takes windows up to 49 values: 7x7 in a plane (every
  // shape) and 3x5x3 in 3D are its largest.
  if (max_window >= 49) {
    if (all) r.push_back({3, 3, 0});
    r.push_back({1, 2, 1});
  }
  if (max_window >= 7 * 7 * 7) r.push_back({5, 13, 2});
  // The median's radix select reads its window from global memory in 3D when no work-group's
  // tile fits local memory (34 x 10 x 24 keys for the smallest group).
  if (max_window >= 31 * 7 * 21) r.push_back({15, 3, 10});
  return r;
}

template <class T>
void untouched(const Array& a, const std::vector<T>& host, const QByteArray& w) {
  QVERIFY2(a.pull_as<T>() == host, w + ": the input was modified");
}

// Integer outputs within 1, float32 with rel, float64 with 1e-12 (or rel64).
template <class T>
void compare_rounded(const Array& got, const std::vector<double>& expect, double rel,
                     const QByteArray& w, double rel64 = 1e-12) {
  QCOMPARE(got.dtype(), dtype_of<T>);
  compare(got.pull_as<T>(), ref::cast<T>(expect), 1, std::is_same_v<T, double> ? rel64 : rel, w);
}

// The float output (float32, or float64 for float64 input) against a double reference.
template <class T>
void compare_float(const Array& got, const std::vector<double>& expect, double rel,
                   const QByteArray& w, double rel64 = 1e-10) {
  if constexpr (std::is_same_v<T, double>) {
    QCOMPARE(got.dtype(), DType::f64);
    compare(got.pull_as<double>(), expect, 0, rel64, w);
  } else {
    QCOMPARE(got.dtype(), DType::f32);
    compare(got.pull_as<float>(), ref::cast<float>(expect), 0, rel, w);
  }
}

// A box filter against ref::box with f applied to each window.
template <bool Exact, class F>
void box_check(const char* fname, const Device& device, DType dtype, const Shape& shape,
               bool extremes, int max_window, F f) {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (const Radii& r : test_radii(max_window, dtype)) {
      auto [a, host] = push_random<T>(device, shape, extremes);
      const QByteArray w = where(fname, dtype, shape) + " r=" + QByteArray::number(r[0]) + "," +
                           QByteArray::number(r[1]) + "," + QByteArray::number(r[2]);
      const Result res = run(fname, a, box_params(r));
      QCOMPARE(res.array.shape(), shape);
      if constexpr (Exact) {
        QCOMPARE(res.array.dtype(), dtype);
        // Selections of the input's own values: compare in T itself (exact for 64-bit too).
        compare(res.array.pull_as<T>(), ref::box_t(host, shape, r, f), 0, 0, w);
      } else if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
        // The mean of 8- and 16-bit images is exact (exact_integer_means), and so is the
        // double reference (the sum is exact, the quotient never within an ulp of a half).
        QCOMPARE(res.array.dtype(), dtype);
        compare(res.array.pull_as<T>(), ref::cast<T>(ref::box(ref::to_double(host), shape, r, f)),
                0, 0, w);
      } else {
        compare_rounded<T>(res.array, ref::box(ref::to_double(host), shape, r, f), 5e-5, w);
      }
      untouched(a, host, w);
      if (QTest::currentTestFailed()) return;
    }
  });
}

GPIX_REFERENCE("mean_box") {
  box_check<false>("mean_box", device, dtype, shape, false, 1000, ref::mean);
});
GPIX_REFERENCE("minimum_box") {
  box_check<true>("minimum_box", device, dtype, shape, true, 1000, ref::minimum);
});
GPIX_REFERENCE("maximum_box") {
  box_check<true>("maximum_box", device, dtype, shape, true, 1000, ref::maximum);
});
GPIX_REFERENCE("median_box") {
  // Windows of up to 49 pixels take the register kernel, larger ones the radix select
  // (through local memory, or global memory for the largest).
  box_check<true>("median_box", device, dtype, shape, true, 31 * 7 * 21, [](const auto& w) {
    auto c = w;
    std::nth_element(c.begin(), c.begin() + static_cast<long>(c.size() / 2), c.end());
    return c[c.size() / 2];
  });
});

GPIX_REFERENCE("variance_box") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (const Radii& r : test_radii(125, dtype)) {
      auto [a, host] = push_random<T>(device, shape, false);
      const QByteArray w = where("variance_box", dtype, shape);
      const Result res = run("variance_box", a, box_params(r));
      compare_float<T>(res.array,
                       ref::box(ref::to_double(host), shape, r, ref::population_variance), 2e-4, w);
      untouched(a, host, w);
      if (QTest::currentTestFailed()) return;
    }
  });
});

// White (top) and black (bottom) top-hats: exact selections and a saturating subtraction.
template <class T>
T sat_sub(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a - b;
  } else {
    T r;
    if (!__builtin_sub_overflow(a, b, &r)) return r;
    if constexpr (std::is_unsigned_v<T>) return 0;
    return b > 0 ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
}

void hat_check(const char* fname, bool white, const Device& device, DType dtype,
               const Shape& shape) {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (const Radii& r : test_radii(1000, dtype)) {
      auto [a, host] = push_random<T>(device, shape, true);
      const QByteArray w = where(fname, dtype, shape);
      const Result res = run(fname, a, box_params(r));
      QCOMPARE(res.array.dtype(), dtype);
      const auto first = white ? ref::box_t(host, shape, r, ref::minimum)
                               : ref::box_t(host, shape, r, ref::maximum);
      const auto second = white ? ref::box_t(first, shape, r, ref::maximum)
                                : ref::box_t(first, shape, r, ref::minimum);
      std::vector<T> e(host.size());
      for (std::size_t i = 0; i < e.size(); ++i)
        e[i] = white ? sat_sub(host[i], second[i]) : sat_sub(second[i], host[i]);
      compare(res.array.pull_as<T>(), e, 0, 0, w);
      untouched(a, host, w);
      if (QTest::currentTestFailed()) return;
    }
  });
}
GPIX_REFERENCE("top_hat_box") {
  hat_check("top_hat_box", true, device, dtype, shape);
});
GPIX_REFERENCE("bottom_hat_box") {
  hat_check("bottom_hat_box", false, device, dtype, shape);
});

// A filter with no parameters and a float output against ref_fn(host as double).
template <class F>
void float_check(const char* fname, const Device& device, DType dtype, const Shape& shape,
                 const Params& p, F ref_fn, double rel) {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape, false);
    const QByteArray w = where(fname, dtype, shape);
    const Result res = run(fname, a, p);
    QCOMPARE(res.array.shape(), shape);
    compare_float<T>(res.array, ref_fn(ref::to_double(host)), rel, w);
    untouched(a, host, w);
  });
}

GPIX_REFERENCE("sobel") {
  float_check(
      "sobel", device, dtype, shape, {},
      [&](const std::vector<double>& v) {
        std::vector<double> m(v.size(), 0.0);
        for (int axis = 0; axis < shape.ndim(); ++axis) {
          const auto s = ref::sobel_axis(v, shape, axis);
          for (std::size_t i = 0; i < m.size(); ++i) m[i] += s[i] * s[i];
        }
        for (auto& x : m) x = std::sqrt(x);
        return m;
      },
      2e-4);
});
GPIX_REFERENCE("laplace") {
  float_check(
      "laplace", device, dtype, shape, {},
      [&](const std::vector<double>& v) { return ref::laplace(v, shape); }, 2e-4);
});
void gradient_check(int axis, const Device& device, DType dtype, const Shape& shape) {
  const char* names[] = {"gradient_x", "gradient_y", "gradient_z"};
  float_check(
      names[axis], device, dtype, shape, {},
      [&](const std::vector<double>& v) {
        return ref::convolve_axis(v, shape, {-0.5, 0, 0.5}, axis);
      },
      2e-4);
}
GPIX_REFERENCE("gradient_x") {
  gradient_check(0, device, dtype, shape);
});
GPIX_REFERENCE("gradient_y") {
  gradient_check(1, device, dtype, shape);
});
GPIX_REFERENCE("gradient_z") {
  gradient_check(2, device, dtype, shape);
});

GPIX_REFERENCE("difference_of_gaussian") {
  const double s1 = 0.8, s2 = 1.9;
  float_check(
      "difference_of_gaussian", device, dtype, shape, {{"sigma1", s1}, {"sigma2", s2}},
      [&](const std::vector<double>& v) {
        auto g1 = ref::gaussian(v, shape, {s1, s1, s1});
        const auto g2 = ref::gaussian(v, shape, {s2, s2, s2});
        for (std::size_t i = 0; i < g1.size(); ++i) g1[i] -= g2[i];
        return g1;
      },
      2e-4);
});

GPIX_REFERENCE("unsharp_mask") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape, false);
    const double sigma = 1.2, amount = 0.7;
    const Result r = run("unsharp_mask", a, {{"sigma", sigma}, {"amount", amount}});
    auto v = ref::to_double(host);
    const auto g = ref::gaussian(v, shape, {sigma, sigma, sigma});
    for (std::size_t i = 0; i < v.size(); ++i) v[i] += amount * (v[i] - g[i]);
    compare_rounded<T>(r.array, v, 5e-5, where("unsharp_mask", dtype, shape));
    untouched(a, host, where("unsharp_mask", dtype, shape));
  });
});

GPIX_REFERENCE("gaussian_blur") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape, false);
    const double sx = 1.3, sy = 0.7, sz = shape.ndim() == 3 ? 1.1 : 0.0;
    const Result r = run("gaussian_blur", a, {{"sigma_x", sx}, {"sigma_y", sy}, {"sigma_z", sz}});
    QCOMPARE(r.array.dtype(), dtype);
    // float32 accumulation over up to ~25 taps: 1e-5 relative; integers may differ by one
    // where the exact value sits near .5.
    compare_rounded<T>(r.array, ref::gaussian(ref::to_double(host), shape, {sx, sy, sz}), 1e-5,
                       where("gaussian_blur", dtype, shape));
    untouched(a, host, where("gaussian_blur", dtype, shape));
  });
});

}  // namespace

class TestNeighbourhood : public QObject {
  Q_OBJECT
 private slots:
  void neighbourhood_data() { add_rows(Category::neighbourhood); }
  void neighbourhood() { run_row(); }

  void devices_data() { test::add_device_rows(); }

  // Images larger than one tile of every kernel shape, radii beyond the tile limits (the
  // simple paths) and beyond the image extent (border replication), on float32 and uint8.
  void tiles_and_large_radii_data() { devices_data(); }
  void tiles_and_large_radii() {
    const Device dev = test::fetch_device();
    const std::vector<std::pair<Shape, std::vector<Radii>>> cases = {
        {Shape{70, 75}, {{1, 1, 0}, {3, 12, 0}, {13, 2, 0}, {40, 33, 0}}},
        // Several 64 x 32 register-blocked tiles; radii equal to a bucket (every tap on) and
        // below it (taps switched off), x and y different; every bucket (2, 3, 4, 8).
        {Shape{133, 69}, {{8, 8, 0}, {4, 7, 0}, {12, 5, 0}, {2, 2, 0}, {3, 1, 0}, {4, 4, 0}}},
        {Shape{300}, {{129, 0, 0}, {7, 0, 0}}},
        {Shape{13, 67, 37}, {{1, 1, 1}, {2, 3, 4}, {1, 1, 33}, {0, 0, 20}}},
        // Several 32 x 16 x 32 tiles of the radius-1 3D kernels on every axis.
        {Shape{70, 35, 67}, {{1, 1, 1}}},
        // Radii past the y/z tiles along a long z: the simple pass's unclamped interior.
        {Shape{100, 6, 5}, {{0, 0, 40}, {1, 2, 45}}},
    };
    for (const auto& [shape, radii] : cases) {
      for (const Radii& r : radii) {
        const QByteArray w = QByteArray::fromStdString(shape.str()) +
                             " r=" + QByteArray::number(r[0]) + "," + QByteArray::number(r[1]) +
                             "," + QByteArray::number(r[2]);
        auto [a, host] = push_random<float>(dev, shape, false);
        const auto hd = ref::to_double(host);
        compare(run("mean_box", a, box_params(r)).array.pull_as<float>(),
                ref::cast<float>(ref::box(hd, shape, r, ref::mean)), 0, 5e-5, "mean " + w);
        compare(run("minimum_box", a, box_params(r)).array.pull_as<float>(),
                ref::cast<float>(ref::box(hd, shape, r, ref::minimum)), 0, 0, "min " + w);
        compare(run("maximum_box", a, box_params(r)).array.pull_as<float>(),
                ref::cast<float>(ref::box(hd, shape, r, ref::maximum)), 0, 0, "max " + w);
        auto [b, hb] = push_random<std::uint8_t>(dev, shape, true);
        compare(run("mean_box", b, box_params(r)).array.pull_as<std::uint8_t>(),
                ref::cast<std::uint8_t>(ref::box(ref::to_double(hb), shape, r, ref::mean)), 1, 0,
                "mean u8 " + w);
        untouched(a, host, w);
        if (QTest::currentTestFailed()) return;
      }
      // Gaussians whose radius fits the fused tile (sigma 2: radius 8), does not (sigma 4),
      // and passes the y/z tiles' limit (sigma 10: radius 40, the simple pass).
      for (double sigma : {2.0, 4.0, 10.0}) {
        auto [a, host] = push_random<float>(dev, shape, false);
        const std::array<double, 3> s{sigma, shape.ndim() >= 2 ? sigma / 2 : 0.0,
                                      shape.ndim() == 3 ? sigma : 0.0};
        compare(run("gaussian_blur", a, {{"sigma_x", s[0]}, {"sigma_y", s[1]}, {"sigma_z", s[2]}})
                    .array.pull_as<float>(),
                ref::cast<float>(ref::gaussian(ref::to_double(host), shape, s)), 0, 1e-5,
                "gaussian " + QByteArray::fromStdString(shape.str()));
        if (QTest::currentTestFailed()) return;
      }
      // Median beyond radius 1 on a multi-tile image: the register kernel (35 values) and
      // the radix select through local memory (99 and 75 values; its 32 x 8 and 8 x 8 x 4
      // groups' tiles cross every border of these shapes).
      if (shape.ndim() >= 2) {
        const std::vector<Radii> rs = shape.ndim() == 2 ? std::vector<Radii>{{3, 2, 0}, {5, 4, 0}}
                                                        : std::vector<Radii>{{2, 1, 2}};
        for (const Radii& r : rs) {
          auto [a, host] = push_random<float>(dev, shape, true);
          compare(run("median_box", a, box_params(r)).array.pull_as<float>(),
                  ref::cast<float>(ref::box(ref::to_double(host), shape, r, ref::median)), 0, 0,
                  "median " + QByteArray::fromStdString(shape.str()) +
                      " r=" + QByteArray::number(r[0]) + "," + QByteArray::number(r[1]));
          if (QTest::currentTestFailed()) return;
        }
      }
    }
  }

  // A volume's Gaussian equals, bit for bit, its passes run one at a time: the x-y passes of
  // each plane (sigma_z = 0), then a z pass done as the y pass of the same data seen as one
  // plane per z (depth x height*width, sigma_x = 0: the x pass's single tap of 1 leaves
  // values as they are). So the z pass (tiled.kernel's tile_conv_axis) sums the same taps in
  // the same order as the y pass, on shapes that cross the tiles, end a run of outputs
  // part-way or are shallower than the window (every plane clamped), with radii equal to
  // their bucket (4, 8: every tap on) and below it, different per axis. Outputs land in
  // poisoned memory. (It was written for a fused three-pass kernel, 27aabf1, measured slower
  // than the two passes and dropped; bench/RESULTS.md.)
  void volume_passes_in_steps_data() { devices_data(); }
  void volume_passes_in_steps() {
    const Device dev = test::fetch_device();
    using Sigmas = std::array<double, 3>;
    const std::pair<Shape, std::vector<Sigmas>> cases[] = {
        {Shape{150, 20, 21}, {{2, 2, 2}, {1, 1, 1}, {0.7, 1.3, 1.9}}},
        {Shape{45, 67, 70}, {{2, 1, 2}, {1, 0.6, 0.8}}},
        {Shape{5, 40, 33}, {{1.5, 2, 1.2}}},
        {Shape{1, 33, 65}, {{1, 1, 2}}},
        {Shape{40, 1, 3}, {{2, 0.5, 2}}},
    };
    for (const auto& [shape, sigmas] : cases) {
      for (const Sigmas& s : sigmas) {
        const QByteArray w = QByteArray::fromStdString(shape.str()) + " sigma " +
                             QByteArray::number(s[0]) + "," + QByteArray::number(s[1]) + "," +
                             QByteArray::number(s[2]);
        auto [a, host] = push_random<float>(dev, shape, false);
        const Array xy = gaussian_blur(a, s[0], s[1], 0);
        const Shape flat{shape.depth(), shape.height() * shape.width()};
        const std::vector<float> expect =
            gaussian_blur(xy.reshape(flat), 0, s[2], 0).pull_as<float>();
        Array::create(shape, DType::f32, dev).fill(Scalar(std::nan("")));
        const std::vector<float> got = gaussian_blur(a, s[0], s[1], s[2]).pull_as<float>();
        QVERIFY2(got.size() == expect.size(), w);
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (std::memcmp(&got[i], &expect[i], sizeof(float)) != 0) {
            QFAIL((w + ": the Gaussian gives " + QByteArray::number(got[i], 'g', 9) +
                   " at element " + QByteArray::number(static_cast<qulonglong>(i)) +
                   ", its passes one at a time " + QByteArray::number(expect[i], 'g', 9))
                      .constData());
          }
        }
        // And against the double-precision reference, as every Gaussian.
        compare(got, ref::cast<float>(ref::gaussian(ref::to_double(host), shape, s)), 0, 1e-5, w);
        untouched(a, host, w);
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  // Radius-1 2D mean/minimum/maximum through each of their kernels: four columns a work-item
  // from vectors (r1_OP_2d_v4: widths that are a multiple of 4, 8-, 16- and 32-bit types), four
  // from scalars (r1_OP_2d_c4: float32 minima and maxima of other widths) and one column
  // (r1_OP_2d: the rest). Against the reference on every dtype, and bit for bit across kernels:
  // the same image with its last column repeated (width + 1) has the same first `width`
  // columns of output under border replication, and one of the two widths is a multiple of 4
  // wherever the other is not (the scalar kernel's last work-item of a row holds 1, 2 or 3
  // columns in the shapes below). Outputs land in poisoned memory (a released array of the
  // same size, filled, which the pool hands out again).
  void radius_one_vector_widths_data() { devices_data(); }
  void radius_one_vector_widths() {
    const Device dev = test::fetch_device();
    const Radii r{1, 1, 0};
    for (DType dtype : kAllDTypes) {
      if (dtype == DType::f64 && !dev.supports_fp64()) continue;
      visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        for (const Shape& shape :
             {Shape{1, 4}, Shape{17, 4}, Shape{5, 8}, Shape{33, 76}, Shape{9, 1}, Shape{2, 3},
              Shape{6, 7}, Shape{13, 11}, Shape{4, 5}}) {
          const std::size_t h = shape.height(), w = shape.width();
          for (const char* f : {"mean_box", "minimum_box", "maximum_box"}) {
            const std::string name(f);
            // Extreme values only where no float sum of them can overflow.
            auto [a, host] = push_random<T>(dev, shape, name != "mean_box");
            std::vector<T> wide(h * (w + 1));
            for (std::size_t y = 0; y < h; ++y) {
              std::copy_n(host.begin() + static_cast<long>(y * w), w,
                          wide.begin() + static_cast<long>(y * (w + 1)));
              wide[y * (w + 1) + w] = host[y * w + w - 1];
            }
            const Shape wshape{h, w + 1};
            const Array b = input(wide, wshape, dev);
            const QByteArray at = where(f, dtype, shape);
            Array::create(shape, dtype, dev).fill(Scalar(77));
            const std::vector<T> got = run(f, a, box_params(r)).array.template pull_as<T>();
            Array::create(wshape, dtype, dev).fill(Scalar(77));
            const std::vector<T> one = run(f, b, box_params(r)).array.pull_as<T>();
            for (std::size_t y = 0; y < h; ++y) {
              QVERIFY2(
                  std::memcmp(got.data() + y * w, one.data() + y * (w + 1), w * sizeof(T)) == 0,
                  at + ": the kernels for widths w and w + 1 differ in row " +
                      QByteArray::number(static_cast<qulonglong>(y)));
            }
            if (name == "mean_box") {
              compare(got, ref::cast<T>(ref::box(ref::to_double(host), shape, r, ref::mean)), 1,
                      5e-5, at);
            } else if (name == "minimum_box") {
              compare(got, ref::box_t(host, shape, r, ref::minimum), 0, 0, at);
            } else {
              compare(got, ref::box_t(host, shape, r, ref::maximum), 0, 0, at);
            }
            untouched(a, host, at);
            if (QTest::currentTestFailed()) return;
          }
        }
      });
      if (QTest::currentTestFailed()) return;
    }
  }

  // NaN, infinities and signed zeros: every median kernel (radius 1 in 2D and 3D, the
  // register kernel, the radix select through local memory, in 8 x 8 x 4 groups, in
  // 4 x 4 x 4 groups for 6,6,6 (a tile of exactly 16 KB) and, for 7,7,7, whose tile fits no
  // group, through global memory) orders values as documented,
  // -NaN < -inf < ... < -0 < +0 < ... < +inf < NaN, and returns one of the window's values
  // bit for bit.
  void median_special_values_data() { devices_data(); }
  void median_special_values() {
    const Device dev = test::fetch_device();
    const auto key = [](float v) {
      std::uint32_t b = 0;
      std::memcpy(&b, &v, sizeof b);
      return static_cast<std::int32_t>(
          b ^ (static_cast<std::uint32_t>(static_cast<std::int32_t>(b) >> 31) >> 1));
    };
    constexpr float kInf = std::numeric_limits<float>::infinity();
    constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
    const float specials[] = {kNaN, -kNaN, kInf, -kInf, 0.0f, -0.0f};
    const std::pair<Shape, Radii> cases[] = {
        {Shape{37, 21}, {1, 1, 0}},    {Shape{37, 21}, {2, 1, 0}},    {Shape{37, 21}, {5, 4, 0}},
        {Shape{13, 11, 9}, {1, 1, 1}}, {Shape{13, 11, 9}, {1, 2, 1}}, {Shape{13, 11, 9}, {2, 2, 1}},
        {Shape{13, 11, 9}, {6, 6, 6}}, {Shape{13, 11, 9}, {7, 7, 7}}};
    for (const auto& [shape, r] : cases) {
      std::vector<float> values = moderate_values<float>(shape.elements(), false);
      std::uniform_int_distribution<int> pick(0, 11);  // about one value in two special
      for (float& v : values) {
        const int k = pick(rng());
        if (k < 6) v = specials[k];
      }
      const Array a = input(values, shape, dev);
      const std::vector<float> got = run("median_box", a, box_params(r)).array.pull_as<float>();
      const std::vector<float> expect =
          ref::box_t<float>(values, shape, r, [&](std::vector<float> w) {
            std::sort(w.begin(), w.end(), [&](float x, float y) { return key(x) < key(y); });
            return w[w.size() / 2];
          });
      for (std::size_t i = 0; i < got.size(); ++i) {
        QVERIFY2(key(got[i]) == key(expect[i]),
                 (shape.str() + " r=" + std::to_string(r[0]) + "," + std::to_string(r[1]) + "," +
                  std::to_string(r[2]) + " at element " + std::to_string(i) + ": got " +
                  std::to_string(got[i]) + ", expected " + std::to_string(expect[i]))
                     .c_str());
      }
      const std::vector<float> after = a.pull_as<float>();  // NaN != NaN: compare the bits
      QVERIFY2(std::memcmp(after.data(), values.data(), values.size() * sizeof(float)) == 0,
               "median special values: the input was modified");
    }
  }

  // Minimum and maximum in IEEE 754-2019's order on every kernel path (r1 one- and four-column
  // and 3D, tiled.kernel's buckets 4 and 8, separable.kernel's fused, row and per-axis passes):
  // a NaN anywhere in the window gives the canonical quiet NaN, -0 is below +0, infinities
  // order as numbers. Before, the answer depended on the radius: the separable passes never let
  // a NaN in (an all-NaN window gave +inf) and the r1 kernels kept a NaN only where it came
  // first. float32 and float64; about one value in two special, so every window meets them.
  void min_max_special_values_data() { devices_data(); }
  void min_max_special_values() {
    const Device dev = test::fetch_device();
    const std::pair<Shape, Radii> cases[] = {
        {Shape{37, 21}, {1, 1, 0}},    {Shape{40, 21}, {1, 1, 0}},    {Shape{37, 21}, {2, 1, 0}},
        {Shape{37, 21}, {8, 5, 0}},    {Shape{37, 21}, {11, 9, 0}},   {Shape{57, 21}, {14, 1, 0}},
        {Shape{13, 11, 9}, {1, 1, 1}}, {Shape{13, 11, 9}, {2, 1, 3}}, {Shape{61}, {3, 0, 0}}};
    const auto check = [&]<class T>(T) {
      if (std::is_same_v<T, double> && !dev.supports_fp64()) return;
      constexpr T kInf = std::numeric_limits<T>::infinity();
      constexpr T kNaN = std::numeric_limits<T>::quiet_NaN();
      const T specials[] = {kNaN, -kNaN, kInf, -kInf, T(0), -T(0)};
      using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
      const auto bits = [](T v) {
        Bits b = 0;
        std::memcpy(&b, &v, sizeof b);
        return b;
      };
      // IEEE 754-2019 minimum (maximum: the mirror): NaN propagates, -0 < +0.
      const auto pick = [&](const std::vector<T>& w, bool max) {
        T best = w[0];
        for (T v : w) {
          if (std::isnan(v)) return kNaN;
          const bool less = v < best || (v == best && std::signbit(v) && !std::signbit(best));
          const bool more = v > best || (v == best && !std::signbit(v) && std::signbit(best));
          if (max ? more : less) best = v;
        }
        return best;
      };
      for (const auto& [shape, r] : cases) {
        std::vector<T> values = moderate_values<T>(shape.elements(), false);
        std::uniform_int_distribution<int> which(0, 11);
        for (T& v : values) {
          const int k = which(rng());
          if (k < 6) v = specials[k];
        }
        const Array a = input(values, shape, dev);
        for (const bool max : {false, true}) {
          const std::vector<T> got = run(max ? "maximum_box" : "minimum_box", a, box_params(r))
                                         .array.template pull_as<T>();
          const std::vector<T> expect =
              ref::box_t<T>(values, shape, r, [&](std::vector<T> w) { return pick(w, max); });
          for (std::size_t i = 0; i < got.size(); ++i) {
            QVERIFY2(
                bits(got[i]) == bits(expect[i]),
                (std::string(max ? "maximum" : "minimum") + " " + std::string(name(dtype_of<T>)) +
                 " " + shape.str() + " r=" + std::to_string(r[0]) + "," + std::to_string(r[1]) +
                 "," + std::to_string(r[2]) + " at element " + std::to_string(i) + ": got " +
                 std::to_string(got[i]) + " (bits " + std::to_string(bits(got[i])) +
                 "), expected " + std::to_string(expect[i]) + " (bits " +
                 std::to_string(bits(expect[i])) + ")")
                    .c_str());
          }
        }
        const std::vector<T> after = a.template pull_as<T>();
        QVERIFY2(std::memcmp(after.data(), values.data(), values.size() * sizeof(T)) == 0,
                 "min/max special values: the input was modified");
      }
    };
    check(float{});
    if (QTest::currentTestFailed()) return;
    check(double{});
  }

  void median_any_window_data() { devices_data(); }
  // No window is too large: 7x7x7 and 15x15 (beyond the register kernel's 125 pixels) run,
  // and a 201-pixel window on a line matches a plain reference.
  void median_any_window() {
    const Device dev = test::fetch_device();
    const Array a = Array::push(test::random_values<float>(9 * 9 * 9), Shape{9, 9, 9}, dev);
    QCOMPARE(median_box(a, 3, 3, 3).shape(), a.shape());
    const Array b = Array::push(test::random_values<std::uint8_t>(20 * 20), Shape{20, 20}, dev);
    QCOMPARE(median_box(b, 7, 7).dtype(), DType::u8);
    const std::vector<float> v = test::random_values<float>(300);
    const auto got = median_box(Array::push(v, Shape{300}, dev), 100, 0).pull_as<float>();
    for (int x = 0; x < 300; ++x) {
      std::vector<float> w;
      for (int i = x - 100; i <= x + 100; ++i)
        w.push_back(v[static_cast<std::size_t>(std::clamp(i, 0, 299))]);
      std::nth_element(w.begin(), w.begin() + 100, w.end());
      QCOMPARE(got[static_cast<std::size_t>(x)], w[100]);
    }
  }

  // Data far from zero: float32 values 1e4 + [0, 1) have a variance near 1/12 that sums of
  // squares, or window means stored at their magnitude, would lose to rounding. Every kernel
  // (direct up to 3 per axis, axis by axis beyond) keeps 2e-4 of the float64 reference.
  void variance_with_offset_data() { devices_data(); }
  void variance_with_offset() {
    const Device dev = test::fetch_device();
    for (const Shape& shape : {Shape{61, 47}, Shape{9, 23, 31}}) {
      std::uniform_real_distribution<float> unit(0.0f, 1.0f);
      std::vector<float> host(shape.elements());
      for (float& v : host) v = 10000.0f + unit(test::rng());
      const Array a = Array::push(host, shape, dev);
      for (const Radii& r : {Radii{1, 1, 1}, Radii{3, 2, 2}, Radii{0, 5, 0}, Radii{4, 0, 3}}) {
        const Radii rr = shape.ndim() == 2 ? Radii{r[0], r[1], 0} : r;
        const QByteArray w = "variance_box offset " + QByteArray::number(shape.ndim()) +
                             "D r=" + QByteArray::number(rr[0]) + "," + QByteArray::number(rr[1]) +
                             "," + QByteArray::number(rr[2]);
        const Array got = variance_box(a, rr[0], rr[1], rr[2]);
        compare_float<float>(
            got, ref::box(ref::to_double(host), shape, rr, ref::population_variance), 2e-4, w);
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  // The typed functions run the catalog entries.
  // The box mean of 8- and 16-bit images is the exact mean rounded half to even, also past
  // float32's exact range (neighbourhood.cpp's int_sum_type: windows of 256 pixels and more on
  // 16-bit images, 65536 on 8-bit ones, summed in int32 or int64): bright random data (where
  // float32 sums and quotients had 794 of 512^2 uint16 pixels one off at radius 8), constant
  // images and the types' extremes, through every kind of pass: tiled.kernel's xy tile (8 x 8)
  // and z pass, separable.kernel's x, y/z and simple passes, and int64 sums; and below that
  // range, the xy tile's float32 sums.
  void exact_integer_means_data() { devices_data(); }
  void exact_integer_means() {
    const Device dev = test::fetch_device();
    struct Case {
      Shape shape;
      Radii r;
    };
    const Case cases16[] = {
        // Windows below 256 pixels sum in float32 (exact below 2^24) in the xy tile: radii equal
        // to their bucket, below it, different per axis, and 255 pixels (15 x 17), the largest
        // window a 16-bit mean sums in float32, on the types' extremes.
        {Shape{133, 69}, {2, 2, 0}},      // 25
        {Shape{133, 69}, {3, 1, 0}},      // 21
        {Shape{133, 69}, {7, 8, 0}},      // 255
        {Shape{13, 67, 37}, {2, 2, 2}},   // 125: a float32 xy tile, then the z pass
        {Shape{70, 75}, {8, 8, 0}},       // tile xy, 289 pixels
        {Shape{70, 75}, {7, 9, 0}},       // 285: separable.kernel's fused pass
        {Shape{40, 45}, {30, 40, 0}},     // 5001: x pass, simple y pass (past 32)
        {Shape{21, 33}, {100, 90, 0}},    // 36381: int64 on uint16
        {Shape{13, 67, 37}, {3, 3, 3}},   // 343: tile xy, then tile z pass
        {Shape{13, 20, 37}, {1, 1, 20}},  // 369
        {Shape{9, 10, 11}, {2, 12, 1}},   // 375: y pass past the tiles' 8
        {Shape{7, 20, 19}, {8, 8, 60}},   // 34969: int64 with x and y radii a tile takes
    };
    const Case cases8[] = {
        {Shape{133, 69}, {8, 8, 0}},        // 289: float32 sums of 8-bit images in the xy tile
        {Shape{70, 75}, {2, 3, 0}},         // 35
        {Shape{40, 50}, {128, 128, 0}},     // 66049
        {Shape{5, 20, 19}, {8, 8, 150}},    // 86989: int32 on uint8, x and y radii of 8
        {Shape{5, 6, 7}, {102, 102, 102}},  // 205^3: int64 on uint8
    };
    // The exact means, rounded half to even: int64 sums of replicated borders, one axis at a
    // time (a window of 205^3 values a pixel would take minutes).
    const auto exact = [](const auto& host, const Shape& s, const Radii& r) {
      const long w = static_cast<long>(s.width()), h = static_cast<long>(s.height()),
                 d = static_cast<long>(s.depth());
      std::vector<std::int64_t> cur(host.begin(), host.end()), next(cur.size());
      std::int64_t n = 1;
      const long ext[3] = {w, h, d}, stride[3] = {1, w, w * h};
      for (int axis = 0; axis < s.ndim(); ++axis) {
        const long rad = r[static_cast<std::size_t>(axis)], e = ext[axis], st = stride[axis];
        n *= 2 * rad + 1;
        for (long i = 0; i < w * h * d; ++i) {
          const long pos = i / st % e, base = i - pos * st;
          std::int64_t sum = 0;
          for (long k = -rad; k <= rad; ++k)
            sum += cur[static_cast<std::size_t>(base + std::clamp(pos + k, 0L, e - 1) * st)];
          next[static_cast<std::size_t>(i)] = sum;
        }
        std::swap(cur, next);
      }
      std::vector<double> out(cur.size());
      for (std::size_t i = 0; i < cur.size(); ++i) {
        out[i] = static_cast<double>(nearest_quotient(cur[i], n));
      }
      return out;
    };
    const auto check = [&](auto zero, const Case& c) {
      using T = decltype(zero);
      constexpr double lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
      std::uniform_real_distribution<double> bright(hi - (hi - lo) / 10, hi);
      std::uniform_real_distribution<double> any(lo, hi);
      std::vector<std::vector<T>> inputs(3, std::vector<T>(c.shape.elements()));
      for (auto& v : inputs[0]) v = static_cast<T>(bright(test::rng()));
      std::fill(inputs[1].begin(), inputs[1].end(), static_cast<T>(hi - (hi - lo) / 12 + 1));
      for (std::size_t i = 0; i < inputs[2].size(); ++i) {
        inputs[2][i] = i % 3 == 0   ? static_cast<T>(lo)
                       : i % 3 == 1 ? static_cast<T>(hi)
                                    : static_cast<T>(any(test::rng()));
      }
      for (const auto& host : inputs) {
        const Array a = Array::push(host, c.shape, dev);
        const QByteArray w = where("mean_box", dtype_of<T>, c.shape) +
                             " r=" + QByteArray::number(c.r[0]) + "," + QByteArray::number(c.r[1]) +
                             "," + QByteArray::number(c.r[2]);
        const Array got = run("mean_box", a, box_params(c.r)).array;
        QCOMPARE(got.dtype(), dtype_of<T>);
        compare(got.pull_as<T>(), ref::cast<T>(exact(host, c.shape, c.r)), 0, 0, w);
        if (QTest::currentTestFailed()) return;
      }
    };
    for (const Case& c : cases16) {
      check(std::uint16_t{}, c);
      check(std::int16_t{}, c);
      if (QTest::currentTestFailed()) return;
    }
    for (const Case& c : cases8) {
      check(std::uint8_t{}, c);
      check(std::int8_t{}, c);
      if (QTest::currentTestFailed()) return;
    }
  }

  // dialect.h's gpix_round_quotient_f32, which makes OpenCL's box means into 8- and 16-bit
  // integers exact whatever its float32 division's error: from estimates one below, at and one
  // above the nearest integer, sums of either sign up to 2^24 and odd and even windows (ties),
  // it gives the integer nearest s / d, half to even. (On PoCL the division is exact, so the
  // means alone never reach the correction.)
  void mean_quotient_correction_data() { devices_data(); }
  void mean_quotient_correction() {
    const Device dev = test::fetch_device();
    const char* src = R"(
GPIX_KERNEL void round_quotient(GPIX_CONST_GLOBAL float* s, GPIX_CONST_GLOBAL float* d,
                                GPIX_CONST_GLOBAL float* q, GPIX_GLOBAL float* out, gpix_index n) {
  const gpix_index i = gpix_global_id(0);
  if (i < n) out[i] = gpix_round_quotient_f32(s[i], d[i], q[i]);
}
)";
    std::vector<float> sums, divisors, estimates;
    std::vector<double> expect;
    std::uniform_int_distribution<std::int64_t> window(1, 1000), value(-16000, 16000);
    for (int k = 0; k < 30000; ++k) {
      const std::int64_t d = k < 4 ? 2 : window(test::rng());
      // Near halves and integers too: s = q d + r for a chosen remainder.
      const std::int64_t q = k < 4 ? 2 * k - 3 : value(test::rng());
      const std::int64_t r =
          k < 4 ? 1 : std::uniform_int_distribution<std::int64_t>(-d + 1, d - 1)(test::rng());
      const std::int64_t sum = q * d + r;
      if (std::abs(sum) >= (std::int64_t{1} << 24)) continue;
      const std::int64_t n = nearest_quotient(sum, d);
      for (int off = -1; off <= 1; ++off) {
        sums.push_back(static_cast<float>(sum));
        divisors.push_back(static_cast<float>(d));
        estimates.push_back(static_cast<float>(n + off));
        expect.push_back(static_cast<double>(n));
      }
    }
    const auto push = [&](const std::vector<float>& v) {
      return Array::push(v, Shape{v.size()}, dev);
    };
    Array out = Array::empty(Shape{sums.size()}, DType::f32, dev);
    out.fill(Scalar(std::nanf("")));
    execute(src, "round_quotient", {sums.size()},
            {push(sums), push(divisors), push(estimates), out, std::uint64_t{sums.size()}}, {},
            dev);
    compare(out.pull_as<float>(), ref::cast<float>(expect), 0, 0, "gpix_round_quotient_f32");
  }

  void typed_functions_data() { devices_data(); }
  void typed_functions() {
    const Device dev = test::fetch_device();
    auto [a, host] = push_random<float>(dev, Shape{5, 6, 7}, false);
    const auto same = [](const Array& x, const Array& y) {
      return x.pull_as<float>() == y.pull_as<float>();
    };
    QVERIFY(same(mean_box(a, 1, 2, 1), run("mean_box", a, box_params({1, 2, 1})).array));
    QVERIFY(same(sobel(a), run("sobel", a).array));
    QVERIFY(same(gradient_z(a), run("gradient_z", a).array));
    QVERIFY(same(unsharp_mask(a, 1.5, 2),
                 run("unsharp_mask", a, {{"sigma", 1.5}, {"amount", 2.0}}).array));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             gradient_z(Array::create(Shape{4, 4}, DType::f32, dev)));
  }
};

QTEST_APPLESS_MAIN(TestNeighbourhood)
#include "test_neighbourhood.moc"
