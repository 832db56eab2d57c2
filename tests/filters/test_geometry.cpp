// Reference tests for the "Geometry", "Projections" and "Reductions" categories: plain CPU
// references on fresh random data, every dtype, odd shapes and 1-pixel dims.
#include <algorithm>
#include <array>
#include <cstring>

#include "config.h"
#include "gpix/filters.h"
#include "harness.h"
#include "reference.h"
#include "support/compare.h"

using namespace gpix;
using namespace gpix::test;

namespace {

// The kernels' compute type: float for 8/16-bit integers and float32, double otherwise.
bool wide(DType t) {
  return size_of(t) > 2 && t != DType::f32;
}

// Filters computed in float64 for 32/64-bit dtypes must refuse them, with UnsupportedDType,
// on a device without fp64 (GPIX_DISABLE_FP64=1 simulates one); returns true when it did.
bool refused_without_fp64(const char* fname, const Device& d, DType t, const Shape& s) {
  if (!wide(t) || d.supports_fp64()) return false;
  const Array a = Array::create(s, t, d);
  try {
    run(fname, a);
    QTest::qFail((std::string(fname) + " ran in float64 on a device without fp64").c_str(),
                 __FILE__, __LINE__);
  } catch (const UnsupportedDType&) {
  }
  return true;
}

long rand_in(long lo, long hi) {  // inclusive
  return std::uniform_int_distribution<long>(lo, hi)(rng());
}

template <class T>
void expect_equal(const std::vector<T>& got, const std::vector<T>& expect, const QByteArray& w) {
  compare(got, expect, 0, 0, w);
}

// ---------------------------------------------------------------- crop, flip, transpose

GPIX_REFERENCE("crop") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    const ref::Dims dm(shape);
    const long ext[3] = {dm.w, dm.h, dm.d};
    long o[3], s[3], out[3];
    for (int i = 0; i < 3; ++i) {
      o[i] = rand_in(0, ext[i] - 1);
      s[i] = rand_in(0, ext[i] - o[i]);  // 0: to the end
      out[i] = s[i] ? s[i] : ext[i] - o[i];
    }
    const Result r = run("crop", a,
                         {{"origin_x", double(o[0])},
                          {"origin_y", double(o[1])},
                          {"origin_z", double(o[2])},
                          {"size_x", double(s[0])},
                          {"size_y", double(s[1])},
                          {"size_z", double(s[2])}});
    const Shape es = shape.ndim() == 3
                         ? Shape{std::size_t(out[2]), std::size_t(out[1]), std::size_t(out[0])}
                         : Shape{std::size_t(out[1]), std::size_t(out[0])};
    QCOMPARE(r.array.shape(), es);
    std::vector<T> expect;
    for (long zz = 0; zz < out[2]; ++zz)
      for (long y = 0; y < out[1]; ++y)
        for (long x = 0; x < out[0]; ++x)
          expect.push_back(host[dm.at(x + o[0], y + o[1], zz + o[2])]);
    expect_equal(r.array.pull_as<T>(), expect, where("crop", dtype, shape));
    // A box that leaves the image: InvalidArgument naming the valid range; the input is intact.
    try {
      run("crop", a, {{"origin_x", double(dm.w - 1)}, {"size_x", 2.0}});
      QFAIL("crop out of bounds did not throw");
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("size_x must be from 1 to 1") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("crop", a, {{"origin_y", double(dm.h)}}));
    QVERIFY(a.template pull_as<T>() == host);
  });
});

GPIX_REFERENCE("flip") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    const ref::Dims dm(shape);
    for (int combo : {1, 2, 4, 5, 6, 7}) {
      const bool fx = combo & 1, fy = combo & 2, fz = combo & 4;
      const Result r =
          run("flip", a,
              {{"flip_x", fx ? 1.0 : 0.0}, {"flip_y", fy ? 1.0 : 0.0}, {"flip_z", fz ? 1.0 : 0.0}});
      QCOMPARE(r.array.shape(), shape);
      std::vector<T> expect;
      for (long zz = 0; zz < dm.d; ++zz)
        for (long y = 0; y < dm.h; ++y)
          for (long x = 0; x < dm.w; ++x)
            expect.push_back(
                host[dm.at(fx ? dm.w - 1 - x : x, fy ? dm.h - 1 - y : y, fz ? dm.d - 1 - zz : zz)]);
      expect_equal(r.array.pull_as<T>(), expect,
                   where("flip", dtype, shape) + " combo " + QByteArray::number(combo));
    }
  });
});

GPIX_REFERENCE("transpose") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    const ref::Dims dm(shape);
    const std::vector<std::string> all = {"xy", "xz", "yz"};
    for (const std::string& axes : all) {
      if (shape.ndim() == 2 && axes != "xy") {
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("transpose", a, {{"axes", axes}}));
        continue;
      }
      const int p = axes == "xy" ? 0 : (axes == "xz" ? 1 : 2);
      long ext[3] = {dm.w, dm.h, dm.d};
      const int ia = p == 2 ? 1 : 0, ib = p == 0 ? 1 : 2;
      std::swap(ext[ia], ext[ib]);
      const Result r = run("transpose", a, {{"axes", axes}});
      const Shape es = shape.ndim() == 3
                           ? Shape{std::size_t(ext[2]), std::size_t(ext[1]), std::size_t(ext[0])}
                           : Shape{std::size_t(ext[1]), std::size_t(ext[0])};
      QCOMPARE(r.array.shape(), es);
      std::vector<T> expect;
      for (long zz = 0; zz < ext[2]; ++zz)
        for (long y = 0; y < ext[1]; ++y)
          for (long x = 0; x < ext[0]; ++x) {
            long c[3] = {x, y, zz};
            std::swap(c[ia], c[ib]);
            expect.push_back(host[dm.at(c[0], c[1], c[2])]);
          }
      expect_equal(r.array.pull_as<T>(), expect,
                   where("transpose", dtype, shape) + " " + QByteArray(axes.c_str()));
    }
  });
});

// ---------------------------------------------------------------- resample, affine

using Matrix = std::array<double, 12>;

// Samples host (shape in) at m * (x, y, z, 1) for every pixel of shape out, in double, with
// clamped coordinates (mode='nearest'). nearest: floor(c + 0.5); pixels whose coordinate
// lies within 1e-4 of a .5 tie are marked in `skip` (float32 coordinates may round either way).
template <class T>
std::vector<double> sample_ref(const std::vector<T>& host, const Shape& in, const Shape& out,
                               const Matrix& m, bool linear, std::vector<bool>& skip) {
  const ref::Dims di(in), dout(out);
  const long ext[3] = {di.w, di.h, di.d};
  std::vector<double> res;
  skip.assign(out.elements(), false);
  for (long z = 0; z < dout.d; ++z)
    for (long y = 0; y < dout.h; ++y)
      for (long x = 0; x < dout.w; ++x) {
        double c[3];
        bool tie = false;
        for (int r = 0; r < 3; ++r) {
          const std::size_t b = static_cast<std::size_t>(r * 4);
          c[r] = m[b] * double(x) + m[b + 1] * double(y) + m[b + 2] * double(z) + m[b + 3];
          c[r] = std::min(std::max(c[r], 0.0), double(ext[r] - 1));
          const double f = c[r] - std::floor(c[r]);
          tie |= std::fabs(f - 0.5) < 1e-4;
        }
        if (!linear) {
          skip[res.size()] = tie;
          res.push_back(
              double(host[di.at(long(std::floor(c[0] + 0.5)), long(std::floor(c[1] + 0.5)),
                                long(std::floor(c[2] + 0.5)))]));
          continue;
        }
        const long x0 = long(std::floor(c[0])), y0 = long(std::floor(c[1])),
                   z0 = long(std::floor(c[2]));
        const double tx = c[0] - double(x0), ty = c[1] - double(y0), tz = c[2] - double(z0);
        double v = 0;
        for (int k = 0; k < 8; ++k) {
          const int ox = k & 1, oy = (k >> 1) & 1, oz = (k >> 2) & 1;
          const double w = (ox ? tx : 1 - tx) * (oy ? ty : 1 - ty) * (oz ? tz : 1 - tz);
          if (w != 0) v += w * double(host[di.at(x0 + ox, y0 + oy, z0 + oz)]);
        }
        res.push_back(v);
      }
  return res;
}

template <class T>
void check_sampled(const Array& got, const std::vector<double>& expect,
                   const std::vector<bool>& skip, bool linear, double value_range,
                   const QByteArray& w) {
  const auto g = got.pull_as<T>();
  QCOMPARE(g.size(), expect.size());
  const DType t = dtype_of<T>;
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (skip[i]) continue;
    bool ok;
    if (!linear) {
      ok = std::is_floating_point_v<T>
               ? (double(g[i]) == expect[i] || (std::isnan(double(g[i])) && std::isnan(expect[i])))
               : g[i] == sat<T>(expect[i]);
    } else if constexpr (std::is_floating_point_v<T>) {
      // Coordinates and weights in float32 (float64): errors scale with the value range.
      ok = std::fabs(double(g[i]) - expect[i]) <= (wide(t) ? 1e-9 : 1e-4) * (1 + value_range);
    } else {
      // Rounding near .5 may go either way: +-1.
      ok = std::fabs(double(g[i]) - double(sat<T>(expect[i]))) <= 1;
    }
    if (!ok) {
      QFAIL((w + " at element " + QByteArray::number(qulonglong(i)) + ": got " +
             QByteArray::number(double(g[i]), 'g', 17) + ", expected " +
             QByteArray::number(expect[i], 'g', 17))
                .constData());
    }
  }
}

GPIX_REFERENCE("resample") {
  if (refused_without_fp64("resample", device, dtype, shape)) return;
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    for (const bool linear : {false, true}) {
      // Linear interpolation of the dtype's extremes is meaningless in float32: moderate data.
      auto [a, host] = push_random<T>(device, shape, !linear);
      const double f[3] = {1.7, 0.6, shape.ndim() == 3 ? 1.3 : 1.0};
      const Result r = run("resample", a,
                           {{"factor_x", f[0]},
                            {"factor_y", f[1]},
                            {"factor_z", f[2]},
                            {"interpolation", std::string(linear ? "linear" : "nearest")}});
      const ref::Dims dm(shape);
      const long in_ext[3] = {dm.w, dm.h, dm.d};
      long out_ext[3] = {1, 1, 1};
      Matrix m{};
      for (int i = 0; i < shape.ndim(); ++i) {
        out_ext[i] = std::max(1L, long(std::nearbyint(double(in_ext[i]) * f[i])));
        const double s = double(in_ext[i]) / double(out_ext[i]);
        m[std::size_t(i * 5)] = s;
        m[std::size_t(i * 4 + 3)] = 0.5 * s - 0.5;
      }
      const Shape es = shape.ndim() == 3 ? Shape{std::size_t(out_ext[2]), std::size_t(out_ext[1]),
                                                 std::size_t(out_ext[0])}
                                         : Shape{std::size_t(out_ext[1]), std::size_t(out_ext[0])};
      QCOMPARE(r.array.shape(), es);
      QCOMPARE(r.array.dtype(), dtype);
      std::vector<bool> skip;
      const auto expect = sample_ref(host, shape, es, m, linear, skip);
      check_sampled<T>(r.array, expect, skip, linear, 100,
                       where("resample", dtype, shape) + (linear ? " linear" : " nearest"));
      if (QTest::currentTestFailed()) return;
    }
    // An extent that rounds to 0 gives 1 pixel (scipy's zoom would give an empty array).
    auto [a, host] = push_random<T>(device, shape);
    QCOMPARE(run("resample", a, {{"factor_x", 1e-4}}).array.shape().width(), std::size_t{1});
  });
});

GPIX_REFERENCE("affine_transform") {
  if (refused_without_fp64("affine_transform", device, dtype, shape)) return;
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    // Scale and shift only take sample_scale's column walk, the others sample_affine.
    for (const bool scale_only : {false, true})
      for (const bool linear : {false, true}) {
        auto [a, host] = push_random<T>(device, shape, !linear);
        // Rotation, scale and shear, with offsets that map part of the output outside the input
        // (borders replicate).
        Matrix m = {0.95, -0.31, 0.0, 2.3, 0.29, 1.1, 0.0, -3.7, 0.0, 0.0, 1.0, 0.0};
        if (shape.ndim() == 3) {
          m[2] = 0.21;
          m[8] = -0.17;
          m[9] = 0.13;
          m[10] = 0.9;
          m[11] = 1.4;
        }
        if (scale_only) {
          // A downscale in x, an upscale in y and z, shifted past both ends of each axis.
          m = {1.37, 0.0, 0.0, -2.6, 0.0, 0.45, 0.0, 1.8, 0.0, 0.0, 0.7, -0.9};
        }
        Params p;
        const char* names[12] = {"m00", "m01", "m02", "m03", "m10", "m11",
                                 "m12", "m13", "m20", "m21", "m22", "m23"};
        for (std::size_t i = 0; i < 12; ++i) p[names[i]] = m[i];
        p["interpolation"] = std::string(linear ? "linear" : "nearest");
        const Result r = run("affine_transform", a, p);
        QCOMPARE(r.array.shape(), shape);
        Matrix used = m;
        if (shape.ndim() == 2) used = {m[0], m[1], 0, m[3], m[4], m[5], 0, m[7], 0, 0, 0, 0};
        std::vector<bool> skip;
        const auto expect = sample_ref(host, shape, shape, used, linear, skip);
        check_sampled<T>(
            r.array, expect, skip, linear, 100,
            where("affine_transform", dtype, shape) + (linear ? " linear" : " nearest"));
        if (QTest::currentTestFailed()) return;
        // The typed function is the same implementation.
        const Array typed =
            affine_transform(a, m, linear ? Interpolation::linear : Interpolation::nearest);
        QVERIFY(typed.pull_as<T>() == r.array.pull_as<T>());
      }
  });
});

// ---------------------------------------------------------------- projections

// Random data; for float dtypes about 10% NaN and the first (y, x) column all NaN.
template <class T>
std::pair<Array, std::vector<T>> push_with_nans(const Device& d, const Shape& s,
                                                bool extremes = true) {
  auto v = moderate_values<T>(s.elements(), extremes);
  if constexpr (std::is_floating_point_v<T>) {
    const std::size_t plane = s.width() * s.height();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i % plane == 0 || rng()() % 10 == 0) v[i] = std::numeric_limits<T>::quiet_NaN();
    }
  }
  return {input(v, s, d), v};
}

// column_ref returns (expected value, scale): the tolerance is tol * (1 + scale), tol 1e-5
// where the kernel accumulates in float32 and 1e-12 in float64.
template <class T, class F>
void projection_check(const char* fname, const Device& dev, const Shape& s, F column_ref) {
  auto [a, host] = push_with_nans<T>(dev, s, false);
  const Result r = run(fname, a);
  QCOMPARE(r.array.shape(), (Shape{s.height(), s.width()}));
  const std::size_t plane = s.width() * s.height();
  visit_dtype(r.array.dtype(), [&](auto zo) {
    using O = decltype(zo);
    // float32 accumulation or a float32 result: 1e-5; float64 throughout: 1e-12.
    const double tol = wide(dtype_of<T>) && std::is_same_v<O, double> ? 1e-12 : 1e-5;
    const auto got = r.array.pull_as<O>();
    for (std::size_t i = 0; i < plane; ++i) {
      std::vector<double> col;
      for (std::size_t z = 0; z < s.depth(); ++z) {
        const double v = double(host[z * plane + i]);
        if (!std::isnan(v)) col.push_back(v);
      }
      const auto [e, scale] = column_ref(col);
      const double g = double(got[i]);
      const bool ok = std::isnan(e) ? std::isnan(g) : std::fabs(g - e) <= tol * (1 + scale);
      if (!ok) {
        QFAIL((where(fname, dtype_of<T>, s) + " at column " + QByteArray::number(qulonglong(i)) +
               ": got " + QByteArray::number(g, 'g', 17) + ", expected " +
               QByteArray::number(e, 'g', 17))
                  .constData());
      }
    }
  });
  // The input is untouched (bitwise: NaN != NaN).
  const auto after = a.template pull_as<T>();
  QVERIFY(std::memcmp(after.data(), host.data(), host.size() * sizeof(T)) == 0);
}

std::pair<double, double> col_sum(const std::vector<double>& c) {
  double s = 0, scale = 0;
  for (double v : c) {
    s += v;
    scale += std::fabs(v);
  }
  return {s, scale};
}

std::pair<double, double> col_mean(const std::vector<double>& c) {
  if (c.empty()) return {std::nan(""), 0};
  auto [s, scale] = col_sum(c);
  return {s / double(c.size()), scale / double(c.size())};
}

std::pair<double, double> col_std(const std::vector<double>& c) {
  if (c.empty()) return {std::nan(""), 0};
  const double mean = col_mean(c).first;
  double ss = 0, scale = 0;
  for (double v : c) {
    ss += (v - mean) * (v - mean);
    scale = std::max(scale, std::fabs(v - mean));
  }
  return {std::sqrt(ss / double(c.size())), scale};
}

template <class T>
T column_extreme(const std::vector<T>& c, bool want_max) {
  if (c.empty()) return std::numeric_limits<T>::quiet_NaN();
  return want_max ? *std::max_element(c.begin(), c.end()) : *std::min_element(c.begin(), c.end());
}

// maximum/minimum_z_projection: the extreme of each z column's non-NaN values, exact, in the
// input dtype (NaN where a column is all NaN).
template <class T, class F>
void extreme_projection_check(const char* name, F project, bool want_max, const Device& device,
                              const Shape& shape, DType dtype) {
  auto [a, host] = push_with_nans<T>(device, shape);
  const Array r = project(a);
  QCOMPARE(r.dtype(), dtype);
  const std::size_t plane = shape.width() * shape.height();
  std::vector<T> expect(plane);
  for (std::size_t i = 0; i < plane; ++i) {
    std::vector<T> col;
    for (std::size_t k = 0; k < shape.depth(); ++k)
      if (!std::isnan(double(host[k * plane + i]))) col.push_back(host[k * plane + i]);
    expect[i] = column_extreme(col, want_max);
  }
  expect_equal(r.pull_as<T>(), expect, where(name, dtype, shape));
}

GPIX_REFERENCE("maximum_z_projection") {
  visit_dtype(dtype, [&](auto z) {
    extreme_projection_check<decltype(z)>(
        "maximum_z_projection", [](const Array& a) { return maximum_z_projection(a); }, true,
        device, shape, dtype);
  });
});

GPIX_REFERENCE("minimum_z_projection") {
  visit_dtype(dtype, [&](auto z) {
    extreme_projection_check<decltype(z)>(
        "minimum_z_projection", [](const Array& a) { return minimum_z_projection(a); }, false,
        device, shape, dtype);
  });
});

GPIX_REFERENCE("sum_z_projection") {
  if (refused_without_fp64("sum_z_projection", device, dtype, shape)) return;
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    projection_check<T>("sum_z_projection", device, shape, col_sum);
    auto [a, h] = push_random<T>(device, shape);
    QCOMPARE(sum_z_projection(a).dtype(), wide(dtype) ? DType::f64 : DType::f32);
  });
});

GPIX_REFERENCE("mean_z_projection") {
  if (refused_without_fp64("mean_z_projection", device, dtype, shape)) return;
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    projection_check<T>("mean_z_projection", device, shape, col_mean);
    auto [a, h] = push_random<T>(device, shape);
    QCOMPARE(mean_z_projection(a).dtype(), dtype == DType::f64 ? DType::f64 : DType::f32);
  });
});

GPIX_REFERENCE("std_z_projection") {
  if (refused_without_fp64("std_z_projection", device, dtype, shape)) return;
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    projection_check<T>("std_z_projection", device, shape, col_std);
    auto [a, h] = push_random<T>(device, shape);
    QCOMPARE(std_z_projection(a).dtype(), dtype == DType::f64 ? DType::f64 : DType::f32);
  });
});

// ---------------------------------------------------------------- reductions

// numpy's nan* semantics; integer sums wrap as stats() documents (64-bit accumulators).
struct HostStats {
  double min = NAN, max = NAN, sum = 0, mean = NAN, std = NAN, abs_sum = 0;
  std::size_t count = 0;
};

template <class T>
HostStats host_stats(const std::vector<T>& v) {
  HostStats h;
  long double exact = 0;
  for (T x : v) {
    if (std::isnan(double(x))) continue;
    h.min = h.count ? std::min(h.min, double(x)) : double(x);
    h.max = h.count ? std::max(h.max, double(x)) : double(x);
    exact += static_cast<long double>(x);
    h.abs_sum += std::fabs(double(x));
    ++h.count;
  }
  h.sum = double(exact);  // integer sums are exact in gpix (see gpix/stats.h)
  if (h.count) {
    h.mean = h.sum / double(h.count);
    long double m2 = 0;
    const long double mean = exact / static_cast<long double>(h.count);
    for (T x : v) {
      if (std::isnan(double(x))) continue;
      const long double d = static_cast<long double>(x) - mean;
      m2 += d * d;
    }
    h.std = double(std::sqrt(m2 / static_cast<long double>(h.count)));
  }
  return h;
}

void check_value(double got, double expect, double tol, const QByteArray& w) {
  const bool ok = std::isnan(expect) ? std::isnan(got) : std::fabs(got - expect) <= tol;
  QVERIFY2(ok, (w + ": got " + QByteArray::number(got, 'g', 17) + ", expected " +
                QByteArray::number(expect, 'g', 17))
                   .constData());
}

// pick returns (expected value, absolute tolerance).
template <class F>
void reduction_check(const char* fname, const char* column, const Device& dev, DType t,
                     const Shape& s, F pick) {
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    // Full-range random values (and NaN for floats): exact 64-bit integer sums matter here.
    auto v = random_values<T>(s.elements());
    if constexpr (std::is_floating_point_v<T>) {
      for (auto& x : v)
        if (rng()() % 7 == 0) x = std::numeric_limits<T>::quiet_NaN();
    }
    const Array a = input(v, s, dev);
    const Result r = run(fname, a);
    QVERIFY(r.is_table());
    QCOMPARE(r.table.columns(), std::vector<std::string>{column});
    QCOMPARE(r.table.size(), std::size_t(1));
    const auto [e, tol] = pick(host_stats(v));
    check_value(r.table(0, 0), e, tol, where(fname, t, s));
  });
}

GPIX_REFERENCE("minimum_of_all_pixels") {
  reduction_check("minimum_of_all_pixels", "minimum", device, dtype, shape,
                  [](const HostStats& h) { return std::pair(h.min, 0.0); });
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    QVERIFY(minimum_of_all_pixels(a) == Scalar(*std::min_element(host.begin(), host.end())));
  });
});
GPIX_REFERENCE("maximum_of_all_pixels") {
  reduction_check("maximum_of_all_pixels", "maximum", device, dtype, shape,
                  [](const HostStats& h) { return std::pair(h.max, 0.0); });
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    QVERIFY(maximum_of_all_pixels(a) == Scalar(*std::max_element(host.begin(), host.end())));
  });
});
GPIX_REFERENCE("sum_of_all_pixels") {
  // Integer sums are exact (the table's double rounds past 2^53 as the reference's does);
  // float sums in double: 1e-13 of the sum of magnitudes.
  // Without fp64, stats() sums floats in float32: 1e-6.
  const double tol = device.supports_fp64() ? 1e-13 : 1e-6;
  reduction_check("sum_of_all_pixels", "sum", device, dtype, shape,
                  [&](const HostStats& h) { return std::pair(h.sum, tol * h.abs_sum); });
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    if constexpr (std::is_integral_v<T>) {
      // Exact: a 64-bit Scalar where the sum fits, else the nearest double.
      using Acc = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
      __extension__ using Int128 = __int128;
      Int128 s = 0;
      for (T v : host) s += static_cast<Int128>(v);
      const bool fits = s >= static_cast<Int128>(std::numeric_limits<Acc>::lowest()) &&
                        s <= static_cast<Int128>(std::numeric_limits<Acc>::max());
      const Scalar got = sum_of_all_pixels(a);
      QVERIFY2(fits ? got == Scalar(static_cast<Acc>(s)) : got == Scalar(static_cast<double>(s)),
               got.str().c_str());
    } else {
      const HostStats h = host_stats(host);
      check_value(sum_of_all_pixels(a).as_double(), h.sum, tol * h.abs_sum, "typed sum");
    }
  });
});
GPIX_REFERENCE("mean_of_all_pixels") {
  const double tol = device.supports_fp64() ? 1e-13 : 1e-6;
  reduction_check("mean_of_all_pixels", "mean", device, dtype, shape, [&](const HostStats& h) {
    return std::pair(h.mean, tol * h.abs_sum / double(std::max<std::size_t>(h.count, 1)) +
                                 1e-15 * std::fabs(h.mean));
  });
});
GPIX_REFERENCE("std_of_all_pixels") {
  if (refused_without_fp64("std_of_all_pixels", device, dtype, shape)) return;
  // float64 partials combined with Chan's formula: 1e-9 relative of the true std (float32
  // partials on devices without fp64: 1e-4).
  const double rel = device.supports_fp64() ? 1e-9 : 1e-4;
  reduction_check("std_of_all_pixels", "std", device, dtype, shape,
                  [&](const HostStats& h) { return std::pair(h.std, rel * h.std + 1e-12); });
});

// The histogram as the doc defines it, found independently: binary search on the edges.
template <class T, class CT>
std::vector<std::uint64_t> histogram_ref(const std::vector<T>& v, const std::vector<double>& e) {
  const std::size_t n = e.size() - 1;
  std::vector<std::uint64_t> c(n);
  for (T x : v) {
    const CT y = static_cast<CT>(x);
    if (!(y >= CT(e.front()) && y <= CT(e.back()))) continue;
    auto it = std::upper_bound(e.begin(), e.end(), double(y));
    std::size_t b = std::size_t(it - e.begin()) - 1;
    c[std::min(b, n - 1)]++;
  }
  return c;
}

template <class T>
void histogram_check(const Device& dev, const std::vector<T>& v, const Shape& s, int bins,
                     double lo, double hi, const QByteArray& w) {
  const Array a = input(v, s, dev);
  const Result r =
      run("histogram", a, {{"n_bins", double(bins)}, {"minimum", lo}, {"maximum", hi}});
  QCOMPARE(r.table.columns(), (std::vector<std::string>{"bin_start", "bin_end", "count"}));
  QCOMPARE(r.table.size(), std::size_t(bins));
  if (lo == 0 && hi == 0) {
    const HostStats h = host_stats(v);
    lo = h.min;
    hi = h.max;
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
  }
  // numpy.linspace edges, rounded to the compute type.
  const bool dbl = wide(dtype_of<T>);
  std::vector<double> e(std::size_t(bins) + 1);
  for (int i = 0; i <= bins; ++i) {
    const double x = i == bins ? hi : lo + i * ((hi - lo) / bins);
    e[std::size_t(i)] = dbl ? x : double(float(x));
  }
  const auto expect = dbl ? histogram_ref<T, double>(v, e) : histogram_ref<T, float>(v, e);
  for (int i = 0; i < bins; ++i) {
    const auto& row = r.table.row(std::size_t(i)).values();
    QVERIFY2(row[0] == e[std::size_t(i)] && row[1] == e[std::size_t(i) + 1], w);
    if (row[2] != double(expect[std::size_t(i)])) {
      QFAIL((w + " bin " + QByteArray::number(i) + ": got " + QByteArray::number(row[2]) +
             ", expected " + QByteArray::number(qulonglong(expect[std::size_t(i)])))
                .constData());
    }
  }
}

GPIX_REFERENCE("histogram") {
  if (refused_without_fp64("histogram", device, dtype, shape)) return;
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto v = moderate_values<T>(shape.elements(), false);
    if constexpr (std::is_floating_point_v<T>) {
      if (v.size() > 2) v[1] = std::numeric_limits<T>::quiet_NaN();
    }
    histogram_check(device, v, shape, 7, -50, 50, where("histogram", dtype, shape) + " [-50, 50]");
    if (QTest::currentTestFailed()) return;
    histogram_check(device, v, shape, 16, 0, 0, where("histogram", dtype, shape) + " auto");
    if (QTest::currentTestFailed()) return;
    // Values exactly on every edge: each lands in the bin that starts there, the maximum in
    // the last bin; values just outside are not counted. Edges of [0, 160] / 16 are exact.
    std::vector<T> edges_data;
    for (int i = 0; i <= 16; ++i) edges_data.push_back(T(i * 5));
    edges_data.push_back(T(81));
    if constexpr (std::is_signed_v<T>) edges_data.push_back(T(-1));
    const Array a = input(edges_data, Shape{edges_data.size()}, device);
    const Histogram h = histogram(a, 16, 0, 80);
    for (std::size_t i = 0; i < 16; ++i) {
      QCOMPARE(h.counts[i], std::uint64_t(i == 15 ? 2 : 1));
      QCOMPARE(h.edges[i], double(i) * 5);
    }
  });
});

// crop, flip and transpose on shapes that cross many of the remap kernels' blocks (32 x 32
// tiles; rows of 64 x RK columns; more rows or tiles than CUDA's 65535 groups of dimension 1,
// which the kernels' grid-stride loops cover), each output in poisoned memory, against a plain
// reference: out(x, y, z) = in[at(f(x, y, z))].
template <class T>
void remap_case(const Device& dev, const Shape& shape) {
  auto [a, host] = push_random<T>(dev, shape);
  const ref::Dims dm(shape);
  const DType t = a.dtype();
  const auto check = [&](const char* what, const Result& r, long ow, long oh, long od,
                         const auto& source) {
    std::vector<T> expect;
    expect.reserve(static_cast<std::size_t>(ow * oh * od));
    for (long z = 0; z < od; ++z)
      for (long y = 0; y < oh; ++y)
        for (long x = 0; x < ow; ++x) expect.push_back(host[source(x, y, z)]);
    expect_equal(r.array.pull_as<T>(), expect, where(what, t, shape));
  };
  const auto poisoned = [&](const Shape& s) {
    Array p = Array::empty(s, t, dev);
    p.fill(poison(t));
  };
  for (int combo = 1; combo < 8; ++combo) {
    const bool fx = combo & 1, fy = combo & 2, fz = (combo & 4) && shape.ndim() == 3;
    poisoned(shape);
    check("flip",
          run("flip", a, {{"flip_x", double(fx)}, {"flip_y", double(fy)}, {"flip_z", double(fz)}}),
          dm.w, dm.h, dm.d, [&](long x, long y, long z) {
            return dm.at(fx ? dm.w - 1 - x : x, fy ? dm.h - 1 - y : y, fz ? dm.d - 1 - z : z);
          });
    if (QTest::currentTestFailed()) return;
  }
  // An origin off the 4-element vectors, and one on them (with a width that keeps the rows
  // whole vectors where the image's width does).
  for (const long ox : {dm.w / 3, dm.w > 8 ? 4L : 0L}) {
    const long oy = dm.h / 2, sx = ox == 4 ? dm.w - 8 : dm.w - ox, sy = dm.h - oy;
    poisoned(shape.ndim() == 3 ? Shape{std::size_t(dm.d), std::size_t(sy), std::size_t(sx)}
                               : Shape{std::size_t(sy), std::size_t(sx)});
    check("crop",
          run("crop", a,
              {{"origin_x", double(ox)},
               {"origin_y", double(oy)},
               {"size_x", double(sx)},
               {"size_y", double(sy)}}),
          sx, sy, dm.d, [&](long x, long y, long z) { return dm.at(ox + x, oy + y, z); });
  }
  for (const char* axes : {"xy", "xz", "yz"}) {
    if (shape.ndim() == 2 && std::string(axes) != "xy") continue;
    long ext[3] = {dm.w, dm.h, dm.d};
    const int ia = axes[0] - 'x', ib = axes[1] - 'x';
    std::swap(ext[ia], ext[ib]);
    poisoned(shape.ndim() == 3
                 ? Shape{std::size_t(ext[2]), std::size_t(ext[1]), std::size_t(ext[0])}
                 : Shape{std::size_t(ext[1]), std::size_t(ext[0])});
    check("transpose", run("transpose", a, {{"axes", std::string(axes)}}), ext[0], ext[1], ext[2],
          [&](long x, long y, long z) {
            long c[3] = {x, y, z};
            std::swap(c[ia], c[ib]);
            return dm.at(c[0], c[1], c[2]);
          });
    if (QTest::currentTestFailed()) return;
  }
  expect_equal(a.template pull_as<T>(), host, where("remap input", t, shape));
}

}  // namespace

class TestGeometry : public QObject {
  Q_OBJECT
 private slots:
  void geometry_data() { add_rows(Category::geometry); }
  void geometry() { run_row(); }
  void projections_data() { add_rows(Category::projections); }
  void projections() { run_row(); }

  // Deep integer stacks (a time series of 40000 frames, past the 32768 planes of a 32-bit run
  // of sums): the mean of a constant column is the value exactly, never above the dtype's
  // largest (float32 sums gave 65535.94 for 65535 and 12344.33 for 12345); every column's sum
  // is the exact sum rounded once to float32 and its mean within one float32 ulp of the exact
  // mean (64-bit integer sums), both whole and in slabs.
  void deep_integer_projections_data() { test::add_device_rows(); }
  void deep_integer_projections() {
    const Device dev = test::fetch_device();
    const Shape s{40000, 2, 3};
    const std::size_t plane = 6;
    std::vector<std::uint16_t> v(s.elements());
    for (std::size_t z = 0; z < s.depth(); ++z) {
      v[z * plane + 0] = 65535;
      v[z * plane + 1] = 12345;
      v[z * plane + 2] = static_cast<std::uint16_t>(60000 + (z * 7919) % 5000);
      v[z * plane + 3] = static_cast<std::uint16_t>((z * 104729) % 65536);
      v[z * plane + 4] = static_cast<std::uint16_t>(z % 2 ? 65535 : 0);
      v[z * plane + 5] = 1;
    }
    const Array a = Array::push(v, s, dev);
    const std::vector<float> mean = run("mean_z_projection", a).array.pull_as<float>();
    const std::vector<float> sum = run("sum_z_projection", a).array.pull_as<float>();
    QCOMPARE(mean[0], 65535.0f);
    QCOMPARE(mean[1], 12345.0f);
    QCOMPARE(mean[5], 1.0f);
    QCOMPARE(sum[0], static_cast<float>(65535.0 * 40000.0));
    for (std::size_t i = 0; i < plane; ++i) {
      double total = 0;  // exact: below 2^53
      for (std::size_t z = 0; z < s.depth(); ++z) total += v[z * plane + i];
      const double m = total / double(s.depth());
      const double ulp = std::nextafter(static_cast<float>(m), 1e30f) - static_cast<float>(m);
      QVERIFY2(std::fabs(mean[i] - m) <= ulp,
               qPrintable(QString("column %1: mean %2, expected %3").arg(i).arg(mean[i]).arg(m)));
      QVERIFY2(sum[i] == static_cast<float>(total),
               qPrintable(QString("column %1: sum %2, expected %3").arg(i).arg(sum[i]).arg(total)));
    }
    // Signed 16-bit values around 0 and 32-bit ones near their limits (a float64 mean).
    std::vector<std::int16_t> w(s.elements());
    std::vector<std::int32_t> big(s.elements());
    for (std::size_t j = 0; j < w.size(); ++j) {
      w[j] = static_cast<std::int16_t>(static_cast<int>((j * 7919) % 65536) - 32768);
      big[j] =
          static_cast<std::int32_t>(2147483647 - static_cast<std::int64_t>((j * 104729) % 4000));
    }
    const std::vector<float> wmean =
        run("mean_z_projection", Array::push(w, s, dev)).array.pull_as<float>();
    const Array abig = Array::push(big, s, dev);
    const bool fp64 = dev.supports_fp64();
    const std::vector<double> bsum =
        fp64 ? run("sum_z_projection", abig).array.pull_as<double>() : std::vector<double>{};
    for (std::size_t i = 0; i < plane; ++i) {
      std::int64_t tw = 0, tb = 0;
      for (std::size_t z = 0; z < s.depth(); ++z) {
        tw += w[z * plane + i];
        tb += big[z * plane + i];
      }
      const double m = double(tw) / double(s.depth());
      QVERIFY2(
          std::fabs(wmean[i] - m) <= 1e-6 * std::fabs(m) + 1e-7,
          qPrintable(QString("int16 column %1: mean %2, expected %3").arg(i).arg(wmean[i]).arg(m)));
      if (fp64) QCOMPARE(bsum[i], static_cast<double>(tb));
    }
    // In slabs (the state carried from slab to slab): the same bits.
    for (const auto& [name, whole] :
         {std::pair{"mean_z_projection", &mean}, std::pair{"sum_z_projection", &sum}}) {
      TiledOptions o;
      o.devices = {dev};
      o.budget_bytes = 64 * 1024;
      const HostArray tiled = run_tiled(name, HostArray::from(v, s), {}, o);
      QCOMPARE(tiled.shape(), (Shape{2, 3}));
      QVERIFY2(std::memcmp(tiled.data(), whole->data(), plane * sizeof(float)) == 0, name);
    }
  }
  void reductions_data() { add_rows(Category::reductions); }
  void reductions() { run_row(); }

  // crop, flip and transpose across many blocks of the remap kernels, for each element size.
  void remap_across_blocks_data() { test::add_device_rows(); }
  void remap_across_blocks() {
    const Device dev = test::fetch_device();
    // Widths that are multiples of 4 take whole vectors for 1- and 2-byte elements (rows:
    // the image's width; transposes: both the image's width and the output's).
    const std::vector<Shape> shapes = {
        Shape{70, 45},   Shape{3, 1100},    Shape{1100, 3},   Shape{33, 64},    Shape{36, 64},
        Shape{260, 136}, Shape{37, 41, 67}, Shape{2, 70, 33}, Shape{5, 7, 128}, Shape{8, 12, 132}};
    for (const Shape& s : shapes) {
      remap_case<std::uint8_t>(dev, s);
      remap_case<std::uint16_t>(dev, s);
      remap_case<float>(dev, s);
      remap_case<double>(dev, s);
      if (QTest::currentTestFailed()) return;
    }
    // More output rows (remap_rows, its vector form for uint8: up to 32 rows a work-group)
    // and tiles (remap_tile) than 65535 groups take.
    remap_case<std::uint8_t>(dev, Shape{2200000, 4});
    remap_case<double>(dev, Shape{66000, 40, 3});
    remap_case<std::uint8_t>(dev, Shape{66000, 8, 4});
  }

  // Every pixel NaN: min, max, mean, std NaN; sum 0; the histogram refuses an automatic range.
  void reductions_all_nan() {
    for (const Device& d : test_devices()) {
      const Array a = input(std::vector<float>(37, NAN), Shape{37}, d);
      QVERIFY(std::isnan(run("minimum_of_all_pixels", a).table(0, 0)));
      QVERIFY(std::isnan(run("maximum_of_all_pixels", a).table(0, 0)));
      QCOMPARE(run("sum_of_all_pixels", a).table(0, 0), 0.0);
      QVERIFY(std::isnan(mean_of_all_pixels(a)));
      QVERIFY(std::isnan(std_of_all_pixels(a)));
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, histogram(a, 4));
      const Histogram h = histogram(a, 4, -1, 1);
      for (auto c : h.counts) QCOMPARE(c, std::uint64_t(0));
    }
  }

  // A large offset with a small spread: the one-pass std keeps its precision (a naive
  // sum-of-squares in double would lose it all).
  void std_is_numerically_sound() {
    for (const Device& d : test_devices()) {
      if (!d.supports_fp64()) continue;
      std::vector<double> v(100003);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = 1e9 + double(i % 7) - 3.0;
      const Array a = input(v, Shape{v.size()}, d);
      const HostStats h = host_stats(v);
      // Welford/Chan updates round the running mean at eps * 1e9 ~ 1e-7 each, which bounds
      // the relative error of the std near 1e-7 (3e-9 seen on an H200); a naive sum of
      // squares would be off by more than 100%.
      check_value(std_of_all_pixels(a), h.std, 1e-6 * h.std, "std with offset 1e9");
    }
  }

  // Images large enough that every work-item of histogram_partial takes its loops of eight
  // and four loads in flight and the one-element tail (groups of 256, at most eight per compute
  // unit: an H200's 1056 groups need more than 12 x 270336 elements), with NaN for floats,
  // against the reference: a load counted twice or skipped moves a bin's count. Bin counts that
  // take each size of local histogram (256, 1024 and 4096 bins), with the edges beside them in
  // local memory or not, and float edges that rounding puts onto each other.
  void histogram_many_elements_per_work_item_data() { test::add_device_dtype_rows(); }
  void histogram_many_elements_per_work_item() {
    const Device dev = test::fetch_device();
    QFETCH(DType, dtype);
    if (refused_without_fp64("histogram", dev, dtype, Shape{1})) return;
    const Shape shape{1901, 1801};
    visit_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      auto v = moderate_values<T>(shape.elements(), false);
      if constexpr (std::is_floating_point_v<T>) {
        for (std::size_t i = 5; i < v.size(); i += 100003)
          v[i] = std::numeric_limits<T>::quiet_NaN();
      }
      histogram_check(dev, v, shape, 256, 0, 0, where("histogram", dtype, shape) + " auto");
      if (QTest::currentTestFailed()) return;
      histogram_check(dev, v, shape, 100, -20, 30, where("histogram", dtype, shape) + " [-20, 30]");
      if (QTest::currentTestFailed()) return;
      // 1024 local bins; 4096 (float64 edges stay in global memory: no room beside the bins).
      histogram_check(dev, v, shape, 600, 0, 0, where("histogram", dtype, shape) + " 600 bins");
      if (QTest::currentTestFailed()) return;
      histogram_check(dev, v, shape, 4096, -40, 40, where("histogram", dtype, shape) + " 4096");
      if constexpr (std::is_floating_point_v<T>) {
        // Bins narrower than float32's spacing there (1/16): their edges round onto each
        // other, and the kernel's first guess can be several bins off, so it walks to the bin
        // instead of taking one step each way.
        if (QTest::currentTestFailed()) return;
        std::vector<T> w(v.size());
        for (std::size_t i = 0; i < w.size(); ++i)
          w[i] = static_cast<T>(1e6 + static_cast<double>(i * 7919 % 17) / 16);
        histogram_check(dev, w, shape, 256, 1e6, 1e6 + 1,
                        where("histogram", dtype, shape) + " edges rounded together");
      }
    });
  }

  // sample_affine and sample_scale take 32-bit indices below 2^31 elements and 64-bit ones
  // above: the same bits both ways, nearest and linear, 2D and 3D, on odd shapes with a
  // 1-pixel axis; a rotation with shear (sample_affine), and a scale with shifts past both
  // ends and a resample by 1.7 (sample_scale, down a column, rows past the end).
  void affine_index_widths_data() { test::add_device_dtype_rows(); }
  void affine_index_widths() {
    const Device dev = test::fetch_device();
    QFETCH(DType, dtype);
    if (refused_without_fp64("affine_transform", dev, dtype, Shape{1})) return;
    const std::array<double, 12> shear = {0.95,  -0.31, 0.21, 2.3,  0.29, 1.1,
                                          -0.17, -3.7,  0.13, 0.08, 0.9,  1.4};
    const std::array<double, 12> scale = {1.37, 0, 0, -2.6, 0, 0.45, 0, 1.8, 0, 0, 0.7, -0.9};
    for (const Shape& shape : {Shape{37, 61}, Shape{1, 45}, Shape{9, 23, 31}, Shape{5, 1, 17}}) {
      const Array a =
          visit_dtype(dtype, [&](auto z) { return push_random<decltype(z)>(dev, shape).first; });
      for (const Interpolation how : {Interpolation::nearest, Interpolation::linear}) {
        const auto runs = [&] {
          return std::array<Array, 3>{affine_transform(a, shear, how),
                                      affine_transform(a, scale, how),
                                      resample(a, 1.7, 1.7, 1.7, how)};
        };
        const std::array<Array, 3> narrow = runs();
        const detail::ScopedConfig scope;
        detail::config_for_testing().index32_below = 0;
        const std::array<Array, 3> wide = runs();
        const char* what[3] = {" shear", " scale", " resample"};
        for (std::size_t k = 0; k < 3; ++k)
          QVERIFY2(test::same_bits(narrow[k], wide[k]),
                   where("affine_transform", dtype, shape) + what[k] +
                       (how == Interpolation::linear ? " linear" : " nearest"));
      }
    }
  }

  // An axis longer than 2^23 pixels: float32 holds c + 0.5 exactly only below 2^23 and every
  // integer only up to 2^24, so 8- and 16-bit and float32 images take float64 coordinates
  // there. A shift by 5 along a row of 2^24 + 7 pixels through both kernels (sample_scale:
  // shift only; sample_affine: a y term that the 1-pixel axis clamps away), nearest and
  // linear: every output is the input 5 pixels on (the last one past the end). With float32
  // coordinates, nearest takes a neighbour from column 2^23 - 4 on, linear from 2^24 on, and
  // the last columns read past the row.
  void long_axis_coordinates_data() { test::add_device_rows(); }
  void long_axis_coordinates() {
    const Device dev = test::fetch_device();
    if (!dev.supports_fp64()) QSKIP("float64 coordinates: the device has no fp64");
    constexpr std::size_t n = (std::size_t{1} << 24) + 7;
    const Shape shape{1, n};
    QCOMPARE(shape.width(), n);
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(i % 251);
    const Array a = Array::push(v, shape, dev);
    const std::array<double, 12> shift = {1, 0, 0, 5, 0, 1, 0, 0, 0, 0, 1, 0};
    const std::array<double, 12> skew = {1, 0, 0, 5, 1e-9, 1, 0, 0, 0, 0, 1, 0};
    for (const auto& [m, what] :
         {std::pair{shift, "shift"}, std::pair{skew, "shift with y term"}}) {
      for (const Interpolation how : {Interpolation::nearest, Interpolation::linear}) {
        const std::vector<std::uint8_t> got = affine_transform(a, m, how).pull_as<std::uint8_t>();
        QCOMPARE(got.size(), n);
        for (std::size_t x = 0; x < n; ++x) {
          const std::uint8_t want = v[std::min(x + 5, n - 1)];
          if (got[x] != want) {
            QFAIL(qPrintable(QString("%1 %2: column %3 is %4, expected %5")
                                 .arg(what, how == Interpolation::linear ? "linear" : "nearest")
                                 .arg(x)
                                 .arg(got[x])
                                 .arg(want)));
          }
        }
      }
    }
  }

  // A resample of a long row by a factor with no short period (1.7): each nearest sample is
  // the pixel the exact rational coordinate names, floor((2x + 1) in / (2 out)), computed here
  // in integers (an odd input length never puts a coordinate on a boundary). With float32
  // coordinates 1.1% of this row's samples took a neighbour; shorter rows stay on float32.
  void long_row_resample_data() { test::add_device_rows(); }
  void long_row_resample() {
    const Device dev = test::fetch_device();
    if (!dev.supports_fp64()) QSKIP("float64 coordinates: the device has no fp64");
    for (const std::size_t n : {std::size_t{500009}, std::size_t{4099}}) {
      std::vector<std::uint16_t> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint16_t>(i * 7919 % 65521);
      const Array a = Array::push(v, Shape{1, n}, dev);
      const std::vector<std::uint16_t> got =
          resample(a, 1.7, 1.0, 1.0, Interpolation::nearest).pull_as<std::uint16_t>();
      const auto out = static_cast<std::size_t>(std::nearbyint(static_cast<double>(n) * 1.7));
      QCOMPARE(got.size(), out);
      std::size_t wrong = 0, first = 0;
      for (std::size_t x = 0; x < out; ++x) {
        const std::size_t i = std::min((2 * x + 1) * n / (2 * out), n - 1);
        if (got[x] != v[i] && wrong++ == 0) first = x;
      }
      QVERIFY2(wrong == 0, qPrintable(QString("%1 of %2 samples of a %3-pixel row off, the "
                                              "first at %4")
                                          .arg(wrong)
                                          .arg(out)
                                          .arg(n)
                                          .arg(first)));
    }
  }

  // histogram_partial counts in uint32, so the host launches it on runs of fewer than 2^32
  // elements, each with its own counts, and adds them up. With runs of 997 elements: several
  // whole runs and a shorter last one, a last run of one element, and one run alone.
  void histogram_in_runs_data() { test::add_device_dtype_rows(); }
  void histogram_in_runs() {
    const Device dev = test::fetch_device();
    QFETCH(DType, dtype);
    if (refused_without_fp64("histogram", dev, dtype, Shape{1})) return;
    const detail::ScopedConfig scope;
    detail::config_for_testing().histogram_run = 997;
    for (const Shape& shape : {Shape{151, 33}, Shape{998}, Shape{7, 5, 13}, Shape{997}}) {
      visit_dtype(dtype, [&](auto z) {
        using T = decltype(z);
        auto v = moderate_values<T>(shape.elements(), false);
        if constexpr (std::is_floating_point_v<T>)
          v[shape.elements() / 2] = std::numeric_limits<T>::quiet_NaN();
        histogram_check(dev, v, shape, 256, 0, 0, where("histogram", dtype, shape) + " auto");
        if (QTest::currentTestFailed()) return;
        histogram_check(dev, v, shape, 100, -20, 30,
                        where("histogram", dtype, shape) + " [-20, 30]");
      });
      if (QTest::currentTestFailed()) return;
    }
  }

  void histogram_validation() {
    const Device d = test_devices().front();
    const Array a = input(std::vector<float>{1, 2, 3}, Shape{3}, d);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("histogram", a, {{"n_bins", 0.0}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("histogram", a, {{"n_bins", 4097.0}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             run("histogram", a, {{"minimum", 2.0}, {"maximum", 1.0}}));
    // A constant image widens to [v - 0.5, v + 0.5], as numpy.histogram.
    const Array c = input(std::vector<float>(5, 2.0f), Shape{5}, d);
    const Histogram h = histogram(c, 2);
    QCOMPARE(h.edges.front(), 1.5);
    QCOMPARE(h.edges.back(), 2.5);
    QCOMPARE(h.counts[1], std::uint64_t(5));
    // 256 bins over [0, 1e-36]: edges and values subnormal or nearly, bins so narrow that
    // histogram_partial takes its loops (a device flushing subnormals guesses bin 0 for them).
    std::vector<float> tiny(3001);
    for (std::size_t i = 0; i < tiny.size(); ++i) tiny[i] = static_cast<float>(i) * 3.5e-40f;
    for (const Device& dev : test_devices())
      histogram_check(dev, tiny, Shape{tiny.size()}, 256, 0, 1e-36, "histogram of subnormals");
  }
};

QTEST_APPLESS_MAIN(TestGeometry)
#include "test_geometry.moc"
