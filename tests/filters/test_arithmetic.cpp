// Reference tests for the "Arithmetic" and "Types" categories.
#include "harness.h"

using namespace gpix;
using namespace gpix::test;

namespace {

// Compute type of the kernels: float for 8/16-bit integers and float32, double otherwise.
bool wide(DType t) {
  return size_of(t) > 2 && t != DType::f32;
}

// Unary reference: out = sat<O>(f(a)) computed in the kernel's compute type.
template <class T, class O, class F>
void unary_check(const char* fname, const Device& dev, const Shape& s, const Params& p, F f,
                 double abs_tol, double rel_tol, bool extremes = true) {
  auto [a, host] = push_random<T>(dev, s, extremes);
  const Result r = run(fname, a, p);
  QCOMPARE(r.array.dtype(), dtype_of<O>);
  QCOMPARE(r.array.shape(), s);
  std::vector<O> expect(host.size());
  const bool use_double = wide(dtype_of<T>) || wide(dtype_of<O>);
  for (std::size_t i = 0; i < host.size(); ++i) {
    expect[i] = use_double ? sat<O>(f(static_cast<double>(host[i])))
                           : sat<O>(static_cast<double>(static_cast<float>(
                                 f(static_cast<double>(static_cast<float>(host[i]))))));
  }
  compare(r.array.pull_as<O>(), expect, abs_tol, rel_tol, where(fname, dtype_of<T>, s));
  // The input is untouched.
  QVERIFY(a.template pull_as<T>() == host);
}

template <class F>
void unary_same(const char* fname, const Device& dev, DType t, const Shape& s, const Params& p, F f,
                double abs_tol = 0, double rel_tol = 1e-6) {
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    unary_check<T, T>(fname, dev, s, p, f, abs_tol, rel_tol);
  });
}

template <class F>
void unary_float(const char* fname, const Device& dev, DType t, const Shape& s, F f,
                 double rel_tol) {
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_same_v<T, double>) {
      unary_check<T, double>(fname, dev, s, {}, f, 0, 1e-12, false);
    } else {
      unary_check<T, float>(fname, dev, s, {}, f, 0, rel_tol, false);
    }
  });
}

template <class F>
void binary_check(const char* fname, const Device& dev, DType t, const Shape& s, F f, DType second,
                  double abs_tol = 0) {
  visit_dtype(t, [&](auto za) {
    using A = decltype(za);
    visit_dtype(second, [&](auto zb) {
      using B = decltype(zb);
      auto [a, ha] = push_random<A>(dev, s);
      auto [b, hb] = push_random<B>(dev, s);
      const Array inputs[] = {a, b};
      const Result r = run(fname, inputs);
      QCOMPARE(r.array.dtype(), dtype_of<A>);
      const bool use_double = wide(dtype_of<A>) || wide(dtype_of<B>);
      std::vector<A> expect(ha.size());
      for (std::size_t i = 0; i < ha.size(); ++i) {
        if (use_double) {
          expect[i] = sat<A>(f(static_cast<double>(ha[i]), static_cast<double>(hb[i])));
        } else {
          const float x = static_cast<float>(ha[i]), y = static_cast<float>(hb[i]);
          expect[i] = sat<A>(static_cast<double>(static_cast<float>(f(x, y))));
        }
      }
      compare(r.array.pull_as<A>(), expect, abs_tol, 1e-6, where(fname, dtype_of<A>, s));
    });
  });
}

// The second image's dtype cycles so that mixed-dtype pairs are covered across rows.
DType partner(DType t) {
  return kAllDTypes[(static_cast<std::size_t>(t) * 3 + 1) % kAllDTypes.size()];
}
DType usable_partner(const Device& d, DType t) {
  DType p = partner(t);
  return p == DType::f64 && !d.supports_fp64() ? DType::f32 : p;
}

GPIX_REFERENCE("add_images") {
  binary_check(
      "add_images", device, dtype, shape, [](auto a, auto b) { return a + b; }, dtype);
  binary_check(
      "add_images", device, dtype, shape, [](auto a, auto b) { return a + b; },
      usable_partner(device, dtype));
});
GPIX_REFERENCE("subtract_images") {
  binary_check(
      "subtract_images", device, dtype, shape, [](auto a, auto b) { return a - b; },
      usable_partner(device, dtype));
});
GPIX_REFERENCE("multiply_images") {
  binary_check(
      "multiply_images", device, dtype, shape, [](auto a, auto b) { return a * b; },
      usable_partner(device, dtype));
});
GPIX_REFERENCE("divide_images") {
  // Rounding of a quotient near .5 may differ by one ulp between compilers: +-1 for integers.
  binary_check(
      "divide_images", device, dtype, shape, [](auto a, auto b) { return a / b; },
      usable_partner(device, dtype), 1);
});
GPIX_REFERENCE("minimum_images") {
  binary_check(
      "minimum_images", device, dtype, shape, [](auto a, auto b) { return std::fmin(a, b); },
      usable_partner(device, dtype));
});
GPIX_REFERENCE("maximum_images") {
  binary_check(
      "maximum_images", device, dtype, shape, [](auto a, auto b) { return std::fmax(a, b); },
      usable_partner(device, dtype));
});
GPIX_REFERENCE("add_scalar") {
  unary_same("add_scalar", device, dtype, shape, {{"value", 7.5}},
             [](double a) { return a + 7.5; });
  if (is_float(dtype) || size_of(dtype) < 8) {
    unary_same("add_scalar", device, dtype, shape, {{"value", -300.0}},
               [](double a) { return a - 300.0; });
    return;
  }
  // An integer scalar on a 64-bit image is exact (long double holds the difference), saturated.
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) {
      auto [a, host] = push_random<T>(device, shape);
      std::vector<T> expect(host.size());
      for (std::size_t i = 0; i < host.size(); ++i) {
        const long double v = static_cast<long double>(host[i]) - 300;
        expect[i] = v < static_cast<long double>(std::numeric_limits<T>::lowest())
                        ? std::numeric_limits<T>::lowest()
                        : static_cast<T>(v);
      }
      compare(run("add_scalar", a, {{"value", -300.0}}).array.template pull_as<T>(), expect, 0, 0,
              where("add_scalar", dtype, shape) + " -300");
    }
  });
});
GPIX_REFERENCE("multiply_scalar") {
  unary_same("multiply_scalar", device, dtype, shape, {{"factor", -1.25}},
             [](double a) { return a * -1.25; });
});
GPIX_REFERENCE("absolute") {
  unary_same("absolute", device, dtype, shape, {}, [](double a) { return std::fabs(a); });
});
GPIX_REFERENCE("clip") {
  unary_same("clip", device, dtype, shape, {{"minimum", -20.0}, {"maximum", 50.0}},
             [](double a) { return std::isnan(a) ? a : std::min(std::max(a, -20.0), 50.0); });
  // A minimum above the maximum is refused before any device work.
  auto [a, h] = push_random<std::uint8_t>(device, Shape{3});
  QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("clip", a, {{"minimum", 5.0}, {"maximum", 1.0}}));
});
GPIX_REFERENCE("invert") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    auto [a, host] = push_random<T>(device, shape);
    std::vector<T> expect(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) {
      if constexpr (std::is_floating_point_v<T>)
        expect[i] = static_cast<T>(1 - host[i]);
      else if constexpr (std::is_unsigned_v<T>)
        expect[i] = static_cast<T>(std::numeric_limits<T>::max() - host[i]);
      else
        expect[i] = static_cast<T>(-1 - host[i]);
    }
    compare(invert(a).template pull_as<T>(), expect, 0, 1e-6, where("invert", dtype, shape));
  });
});
GPIX_REFERENCE("sqrt") {
  unary_float(
      "sqrt", device, dtype, shape, [](double a) { return std::sqrt(a); }, 1e-6);
});
GPIX_REFERENCE("exp") {
  unary_float(
      "exp", device, dtype, shape, [](double a) { return std::exp(a); }, 1e-5);
});
GPIX_REFERENCE("log") {
  unary_float(
      "log", device, dtype, shape, [](double a) { return std::log(a); }, 1e-5);
});
GPIX_REFERENCE("power") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    using O = std::conditional_t<std::is_same_v<T, double>, double, float>;
    unary_check<T, O>(
        "power", device, shape, {{"exponent", 1.5}}, [](double a) { return std::pow(a, 1.5); }, 0,
        std::is_same_v<O, double> ? 1e-12 : 2e-5, false);
  });
});
GPIX_REFERENCE("convert") {
  for (DType out : kAllDTypes) {
    if (out == DType::f64 && !device.supports_fp64()) continue;
    visit_dtype(dtype, [&](auto zi) {
      using T = decltype(zi);
      visit_dtype(out, [&](auto zo) {
        using O = decltype(zo);
        // Values with fractions for floats (round half to even), extremes to saturate.
        auto [a, host] = push_random<T>(device, shape);
        std::vector<O> expect(host.size());
        for (std::size_t i = 0; i < host.size(); ++i) {
          if constexpr (std::is_integral_v<T> && std::is_integral_v<O>) {
            // Exact saturation for integer pairs.
            const long double v = static_cast<long double>(host[i]);
            expect[i] = v <= static_cast<long double>(std::numeric_limits<O>::lowest())
                            ? std::numeric_limits<O>::lowest()
                        : v >= static_cast<long double>(std::numeric_limits<O>::max())
                            ? std::numeric_limits<O>::max()
                            : static_cast<O>(host[i]);
          } else {
            expect[i] = sat<O>(static_cast<double>(host[i]));
          }
        }
        const Array c = convert(a, out);
        QCOMPARE(c.dtype(), out);
        compare(c.pull_as<O>(), expect, 0, 1e-7,
                where("convert", dtype, shape) + " to " + QByteArray(name(out).data()));
      });
    });
  }
});
GPIX_REFERENCE("rescale_intensity") {
  visit_dtype(dtype, [&](auto z) {
    using T = decltype(z);
    using O = std::conditional_t<std::is_same_v<T, double>, double, float>;
    auto [a, host] = push_random<T>(device, shape, false);
    const auto [mn, mx] = std::minmax_element(host.begin(), host.end());
    const double lo = static_cast<double>(*mn), hi = static_cast<double>(*mx);
    std::vector<O> expect(host.size());
    for (std::size_t i = 0; i < host.size(); ++i) {
      expect[i] = static_cast<O>(
          hi > lo ? (static_cast<double>(host[i]) - lo) / (hi - lo) * 2.0 - 1.0 : -1.0);
    }
    const Array r = rescale_intensity(a, -1, 1);
    compare(r.pull_as<O>(), expect, 0, std::is_same_v<O, double> ? 1e-12 : 1e-5,
            where("rescale_intensity", dtype, shape));
  });
});

// ---- exact 64-bit integer arithmetic. Pairs of integer images where a 64-bit dtype takes part
// are computed exactly (not through float64, whose 53 bits round values beyond 2^53); the
// reference is computed in 128-bit integers and saturated into the first input's dtype.
__extension__ using Int128 = __int128;
__extension__ using UInt128 = unsigned __int128;
constexpr Int128 kMax128 = static_cast<Int128>(~static_cast<UInt128>(0) >> 1);
constexpr Int128 kMin128 = -kMax128 - 1;

template <class O>
O saturate_int(Int128 v) {
  if (v < static_cast<Int128>(std::numeric_limits<O>::lowest()))
    return std::numeric_limits<O>::lowest();
  if (v > static_cast<Int128>(std::numeric_limits<O>::max())) return std::numeric_limits<O>::max();
  return static_cast<O>(v);
}

Int128 exact_binary(std::string_view f, Int128 a, Int128 b) {
  if (f == "add_images") return a + b;
  if (f == "subtract_images") return a - b;
  if (f == "minimum_images") return std::min(a, b);
  if (f == "maximum_images") return std::max(a, b);
  if (f == "multiply_images") {
    Int128 r = 0;
    if (__builtin_mul_overflow(a, b, &r)) return (a < 0) != (b < 0) ? kMin128 : kMax128;
    return r;
  }
  // divide_images: round half to even; x/0 saturates towards x's sign, 0/0 is 0.
  if (b == 0) return a == 0 ? 0 : (a < 0 ? kMin128 : kMax128);
  Int128 q = a / b;
  const Int128 r = a % b;
  const Int128 twice = 2 * (r < 0 ? -r : r), mag = b < 0 ? -b : b;
  if (twice > mag || (twice == mag && (q & 1) != 0)) q += (a < 0) != (b < 0) ? -1 : 1;
  return q;
}

// Full-range values with the cases that break a float64 detour: odd values beyond 2^53,
// the extremes, small values (large quotients), zeros.
template <class T>
std::vector<T> wide_values(std::size_t n) {
  auto v = random_values<T>(n);
  auto& r = rng();
  for (std::size_t i = 0; i < n; i += 7) {
    switch (r() % 6) {
      case 0:
        v[i] = std::numeric_limits<T>::max();
        break;
      case 1:
        v[i] = std::numeric_limits<T>::lowest();
        break;
      case 2:
        v[i] = 0;
        break;
      case 3:
        v[i] = static_cast<T>(1 + 2 * (r() % 3));
        break;
      default:
        if constexpr (sizeof(T) == 8)
          v[i] = static_cast<T>((std::uint64_t{1} << 53) + 1 + 2 * (r() % 1000));
        break;
    }
  }
  return v;
}

void check_wide_binary(const Device& dev, DType ta, DType tb) {
  visit_dtype(ta, [&](auto za) {
    using A = decltype(za);
    visit_dtype(tb, [&](auto zb) {
      using B = decltype(zb);
      if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {
        const Shape s{37, 11};
        const auto ha = wide_values<A>(s.elements());
        const auto hb = wide_values<B>(s.elements());
        const Array inputs[] = {input(ha, s, dev), input(hb, s, dev)};
        for (const char* f : {"add_images", "subtract_images", "multiply_images", "divide_images",
                              "minimum_images", "maximum_images"}) {
          std::vector<A> expect(ha.size());
          for (std::size_t i = 0; i < ha.size(); ++i)
            expect[i] = saturate_int<A>(exact_binary(f, ha[i], hb[i]));
          compare(run(f, inputs).array.template pull_as<A>(), expect, 0, 0,
                  where(f, ta, s) + " with " + QByteArray(name(tb).data()));
        }
      }
    });
  });
}

// absolute and clip on every integer dtype, exactly: clip compares with the bounds themselves
// and replaces by the nearest integer inside them, saturated into the dtype.
void check_wide_unary(const Device& dev, DType t) {
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    if constexpr (std::is_integral_v<T>) {
      const Shape s{29, 5};
      const auto h = wide_values<T>(s.elements());
      const Array a = input(h, s, dev);
      std::vector<T> expect(h.size());
      for (std::size_t i = 0; i < h.size(); ++i)
        expect[i] = saturate_int<T>(h[i] < 0 ? -Int128{h[i]} : Int128{h[i]});
      compare(absolute(a).template pull_as<T>(), expect, 0, 0, where("absolute", t, s));
      const std::pair<double, double> bounds[] = {
          {-2.5, 3.5},       {-1e30, 1e30}, {2.5, 200.7},
          {0.4, 1.6},        {1e30, 2e30},  {-2e30, -1e30},
          {-2.5, -2.5001},   {-3.5, -2.5},  {9007199254740993.0, 1.8e19},
          {-9.3e18, -9.2e18}};
      for (const auto& [lo, hi] : bounds) {
        if (std::ceil(lo) > std::floor(hi)) continue;  // refused, below
        for (std::size_t i = 0; i < h.size(); ++i) {
          const long double x = static_cast<long double>(h[i]);
          const long double v = x < lo   ? std::ceil(static_cast<long double>(lo))
                                : x > hi ? std::floor(static_cast<long double>(hi))
                                         : x;
          const long double cl =
              std::clamp(v, static_cast<long double>(std::numeric_limits<T>::lowest()),
                         static_cast<long double>(std::numeric_limits<T>::max()));
          expect[i] = static_cast<T>(cl);
        }
        const auto got = clip(a, lo, hi).template pull_as<T>();
        compare(got, expect, 0, 0,
                where("clip", t, s) + " " + QByteArray::number(lo) + ".." + QByteArray::number(hi));
      }
      // No integer between the bounds: refused, not clipped to a value outside them.
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, clip(a, 0.4, 0.6));
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, clip(a, -2.6, -2.5001));
      // add_scalar and multiply_scalar by integers, exactly (64-bit images past 2^53 too),
      // saturated into the dtype.
      for (const double value : {1.0, -5.0, 3.0, -1.0, 0.0, 4e18, -9.2e18}) {
        const auto b = static_cast<Int128>(static_cast<long long>(value));
        for (std::size_t i = 0; i < h.size(); ++i) expect[i] = saturate_int<T>(Int128{h[i]} + b);
        compare(run("add_scalar", a, {{"value", value}}).array.template pull_as<T>(), expect, 0, 0,
                where("add_scalar", t, s) + " " + QByteArray::number(value));
        for (std::size_t i = 0; i < h.size(); ++i) expect[i] = saturate_int<T>(Int128{h[i]} * b);
        compare(run("multiply_scalar", a, {{"factor", value}}).array.template pull_as<T>(), expect,
                0, 0, where("multiply_scalar", t, s) + " " + QByteArray::number(value));
      }
      // convert to float32 rounds once, as numpy's astype (the host's cast): 64-bit values
      // that float64 would round first land elsewhere (2^60 + 2^36 + 1).
      std::vector<float> as_float(h.size());
      for (std::size_t i = 0; i < h.size(); ++i) as_float[i] = static_cast<float>(h[i]);
      const std::vector<float> got =
          run("convert", a, {{"dtype", std::string("float32")}}).array.template pull_as<float>();
      QVERIFY2(got == as_float, where("convert to float32", t, s));
      if constexpr (sizeof(T) == 8) {
        // Random values almost never meet the double rounding: values made for it (just above
        // float32's halfway point, so that float64 rounds them down onto it and float32 then
        // breaks the tie to even, down), negated for signed types.
        std::vector<T> ties = {static_cast<T>((1ULL << 60) + (1ULL << 36) + 1),
                               static_cast<T>((1ULL << 62) + (1ULL << 38) + 3)};
        if constexpr (std::is_signed_v<T>) ties.push_back(-ties[0]);
        std::vector<float> want;
        for (T v : ties) want.push_back(static_cast<float>(v));
        const Array ta = input(ties, Shape{ties.size()}, dev);
        QVERIFY2(run("convert", ta, {{"dtype", std::string("float32")}})
                         .array.template pull_as<float>() == want,
                 where("convert to float32, double-rounding cases", t, s));
      }
    }
  });
}

// Fills a pool block of s in dtype t with poison and hands it back, so that the next output
// of that size is likely to land on it: an element that no work-item writes shows.
void poison_pool(const Device& dev, const Shape& s, DType t) {
  Array p = Array::empty(s, t, dev);
  p.fill(poison(t));
}

// The flat passes' kernels (dialect.h's GPIX_FLAT_LOAD) on n elements of dtype t: each kind
// of pointwise kernel (float expression, raw and exact 64-bit unary, binary, threshold, mask,
// logic) against a plain reference.
void check_flat_pass(const Device& dev, DType t, std::size_t n) {
  const Shape s{n, 1};  // 2D: the segmentation rows take 2D and 3D images
  const QByteArray at = QByteArray(name(t).data()) + " n=" + QByteArray::number(qulonglong(n));
  poison_pool(dev, s, t);
  unary_same("add_scalar", dev, t, s, {{"value", 7.5}}, [](double a) { return a + 7.5; });
  poison_pool(dev, s, t);
  unary_same("absolute", dev, t, s, {}, [](double a) { return std::fabs(a); });
  poison_pool(dev, s, t);
  binary_check(
      "add_images", dev, t, s, [](auto a, auto b) { return a + b; }, t);
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    auto [a, ha] = push_random<T>(dev, s);
    auto [b, hb] = push_random<T>(dev, s);
    std::vector<T> expect(n);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_floating_point_v<T>)
        expect[i] = static_cast<T>(1 - ha[i]);
      else
        expect[i] = static_cast<T>(~ha[i]);
    }
    poison_pool(dev, s, t);
    compare(invert(a).template pull_as<T>(), expect, 0, 1e-6, "invert " + at);
    const double cut = std::clamp(static_cast<double>(ha[n / 2]), -1e300, 1e300);
    std::vector<std::uint8_t> gt(n), nz(n), both(n);
    for (std::size_t i = 0; i < n; ++i) {
      gt[i] = static_cast<double>(ha[i]) > cut ? 1 : 0;
      nz[i] = ha[i] == T(0) ? 1 : 0;
      both[i] = ha[i] != T(0) && hb[i] != T(0) ? 1 : 0;
    }
    poison_pool(dev, s, DType::u8);
    compare(run("threshold", a, {{"value", cut}}).array.template pull_as<std::uint8_t>(), gt, 0, 0,
            "threshold " + at);
    poison_pool(dev, s, DType::u8);
    compare(run("binary_not", a).array.template pull_as<std::uint8_t>(), nz, 0, 0,
            "binary_not " + at);
    const Array pair[] = {a, b};
    poison_pool(dev, s, DType::u8);
    compare(run("binary_and", pair).array.template pull_as<std::uint8_t>(), both, 0, 0,
            "binary_and " + at);
  });
}

}  // namespace

// power on special values and random ones for one float type (TestArithmetic::power_exponents).
template <class T>
void power_exponents_of(const Device& dev, DType t) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {L::quiet_NaN(), T(0), -T(0),    L::infinity(), -L::infinity(), T(-2), T(-0.5),
                      T(0.5),         T(3), L::min(), L::max(),      -L::max(),      T(1),  T(-1)};
  for (T x : moderate_values<T>(101, false)) v.push_back(x);
  const Array a = input(v, Shape{v.size()}, dev);
  for (double e : {2.0, 3.0, 4.0, -1.0, -2.0, 0.0, 1.0, 0.5, 1.5, -3.0, 2.5}) {
    const auto got = run("power", a, {{"exponent", e}}).array.template pull_as<T>();
    const QByteArray at = where("power", t, Shape{v.size()}) + " exponent " + QByteArray::number(e);
    // pow's bound (OpenCL: 16 ulp); products round at most twice.
    const double rel = std::is_same_v<T, float> ? 2e-6 : 1e-14;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const T want = static_cast<T>(std::pow(static_cast<double>(v[i]), e));
      const T g = got[i];
      bool ok;
      if (std::isnan(want) || std::isnan(g)) {
        ok = std::isnan(want) && std::isnan(g);
      } else if (want == 0 || std::isinf(want) || !std::isnormal(want)) {
        // Zeros keep their sign; infinities and subnormal results (flushed to zero
        // on devices without denormals: within one smallest normal) as pow gives them.
        ok = (want == 0 || std::isinf(want)) ? g == want && std::signbit(g) == std::signbit(want)
                                             : std::fabs(g - want) <= L::min();
      } else {
        ok = std::fabs(g - want) <= rel * std::fabs(want);
      }
      if (!ok) {
        QFAIL((at + ": pow(" + QByteArray::number(double(v[i]), 'g', 17) + ") gave " +
               QByteArray::number(double(g), 'g', 17) + ", expected " +
               QByteArray::number(double(want), 'g', 17))
                  .constData());
      }
    }
  }
}

class TestArithmetic : public QObject {
  Q_OBJECT
 private slots:
  void arithmetic_data() { add_rows(Category::arithmetic); }
  void arithmetic() { run_row(); }
  void types_data() { add_rows(Category::types); }
  void types() { run_row(); }

  void wide_integers_data() { test::add_device_rows(); }
  void wide_integers() {
    const Device dev = test::fetch_device();
    const std::pair<DType, DType> pairs[] = {{DType::u64, DType::u64},
                                             {DType::i64, DType::i64},
                                             {DType::u64, DType::i64},
                                             {DType::i64, DType::u64},
                                             {DType::i32, DType::u64}};
    for (const auto& [a, b] : pairs) check_wide_binary(dev, a, b);
    for (DType t : kAllDTypes) check_wide_unary(dev, t);
  }

  // Flat passes take 16 bytes of their widest input per work-item, a work-group of 256 apart:
  // lengths around one work-group's share (256 * FLAT_K elements), several of them and a tail.
  void flat_pass_lengths_data() { test::add_device_rows(); }
  void flat_pass_lengths() {
    const Device dev = test::fetch_device();
    // One dtype of each size (FLAT_K 16, 8, 4, 2 elements), signed and unsigned, the exact
    // 64-bit path and both floats; the category rows cover every dtype on smaller images.
    for (DType t : {DType::u8, DType::i16, DType::f32, DType::i32, DType::u64, DType::f64}) {
      if (t == DType::f64 && !dev.supports_fp64()) continue;
      const std::size_t share = 256 * std::max<std::size_t>(16 / size_of(t), 1);
      // Two-input kernels on vectors take half a share (16 bytes over both inputs).
      for (std::size_t n : {std::size_t{1}, std::size_t{5}, share / 2 - 1, share / 2 + 1, share - 1,
                            share, share + 1, 3 * share + 17}) {
        check_flat_pass(dev, t, n);
        if (QTest::currentTestFailed()) return;
      }
    }
  }

  // power's exponents: the integer ones -2..4 run as products, the rest through pow; both
  // against std::pow on special values (NaN, signed zeros, infinities, negatives, tiny and huge
  // values) and random ones, an odd length so that the flat passes' tails run too.
  void power_exponents_data() { test::add_device_rows(); }
  void power_exponents() {
    const Device dev = test::fetch_device();
    for (DType t : {DType::f32, DType::f64}) {
      if (t == DType::f64 && !dev.supports_fp64()) continue;
      visit_dtype(t, [&](auto z) {
        using T = decltype(z);
        if constexpr (std::is_floating_point_v<T>) power_exponents_of<T>(dev, t);
      });
      if (QTest::currentTestFailed()) return;
    }
  }

  // rescale_intensity of 64-bit integers beyond 2^53 takes each pixel's difference from the
  // minimum in the integers: through float64 first, int64 2^62 + {0, 1, 2} came out 0, 0, 0
  // (a constant image) and uint64 2^63 + {0, 1000, 2048} 0, 0, 1.
  void rescale_wide_integers_data() { test::add_device_rows(); }
  void rescale_wide_integers() {
    const Device dev = test::fetch_device();
    const auto check = [&](const Array& in, const std::vector<float>& expect, const char* what) {
      const Array r = rescale_intensity(in, 0, 1);
      QCOMPARE(r.dtype(), DType::f32);
      QVERIFY2(r.pull_as<float>() == expect, what);
    };
    constexpr std::int64_t k62 = std::int64_t{1} << 62;
    check(Array::push(std::vector<std::int64_t>{k62 + 2, k62, k62 + 1}, Shape{3}, dev),
          {1.0f, 0.0f, 0.5f}, "int64 2^62 + {2, 0, 1}");
    constexpr std::uint64_t k63 = std::uint64_t{1} << 63;
    check(Array::push(std::vector<std::uint64_t>{k63, k63 + 1000, k63 + 2048}, Shape{3, 1}, dev),
          {0.0f, 0.48828125f, 1.0f}, "uint64 2^63 + {0, 1000, 2048}");
    // The whole int64 range: its span, 2^64 - 1, does not fit int64.
    const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    const std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    check(Array::push(std::vector<std::int64_t>{lo, 0, hi, lo + 2048}, Shape{2, 2}, dev),
          {0.0f, 0.5f, 1.0f, 0x1p-53f}, "int64 min, 0, max");
    check(Array::push(std::vector<std::int64_t>(5, k62 + 1), Shape{5}, dev),
          std::vector<float>(5, 0.0f), "a constant int64 image");
  }

  // rescale_intensity's range comes from the non-NaN pixels and stays on the device between its
  // passes: NaN stays NaN and in place, a constant image and a one-pixel image map to out_min,
  // an image of NaN alone stays NaN, and an infinity makes every finite pixel's scale 0. Sizes
  // on both sides of one work-group (one group's slots, or stats_final's after the groups').
  void rescale_special_values_data() { test::add_device_rows(); }
  void rescale_special_values() {
    const Device dev = test::fetch_device();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    for (const Shape& shape : {Shape{1}, Shape{7, 5}, Shape{301, 257}, Shape{3, 1, 9}}) {
      const std::size_t n = shape.elements();
      std::vector<float> v = test::random_values<float>(n);
      for (std::size_t i = 3; i < n; i += 11) v[i] = nan;
      std::vector<float> finite;
      for (float x : v) {
        if (!std::isnan(x)) finite.push_back(x);
      }
      const auto check = [&](const std::vector<float>& in, const std::vector<double>& expect,
                             const char* what) {
        const Array r = rescale_intensity(Array::push(in, shape, dev), 2, 7);
        QCOMPARE(r.dtype(), DType::f32);
        const std::vector<float> got = r.pull_as<float>();
        for (std::size_t i = 0; i < n; ++i) {
          const bool ok =
              std::isnan(expect[i]) ? std::isnan(got[i]) : std::abs(got[i] - expect[i]) <= 1e-5 * 7;
          QVERIFY2(ok,
                   (std::string(what) + " " + shape.str() + " at " + std::to_string(i) + ": got " +
                    std::to_string(got[i]) + ", expected " + std::to_string(expect[i]))
                       .c_str());
        }
      };
      std::vector<double> expect(n);
      if (!finite.empty()) {
        const auto [mn, mx] = std::minmax_element(finite.begin(), finite.end());
        const double lo = *mn, hi = *mx;
        for (std::size_t i = 0; i < n; ++i) {
          expect[i] = std::isnan(v[i]) ? std::nan("")
                      : hi > lo        ? 2.0 + (v[i] - lo) / (hi - lo) * 5.0
                                       : 2.0;
        }
        check(v, expect, "with NaN");
      }
      check(std::vector<float>(n, 3.25f), std::vector<double>(n, 2.0), "constant");
      check(std::vector<float>(n, nan), std::vector<double>(n, std::nan("")), "NaN alone");
      if (n > 1) {
        std::vector<float> w = test::random_values<float>(n);
        w[n / 2] = inf;
        std::vector<double> e(n, 2.0);
        e[n / 2] = std::nan("");  // (inf - lo) * 0
        check(w, e, "with an infinity");
      }
      if (QTest::currentTestFailed()) return;
    }
  }

  void errors() {
    const Device dev = test_devices().front();
    auto [a, h] = push_random<std::uint8_t>(dev, Shape{4, 5});
    auto [b, h2] = push_random<std::uint8_t>(dev, Shape{5, 4});
    const Array pair[] = {a, b};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("add_images", pair));  // shapes differ
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("add_images", a));     // one input of two
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("add_scalar", a, {{"valeu", 1.0}}));  // typo
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("add_scalar", a, {{"value", std::string("x")}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             run("convert", a, {{"dtype", std::string("complex64")}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("no_such_filter", a));
    try {
      run("add_scalr", a);
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      QVERIFY2(std::string(e.what()).find("add_scalar") != std::string::npos, e.what());
    }
    QVERIFY(a.pull_as<std::uint8_t>() == h);
  }
};

QTEST_APPLESS_MAIN(TestArithmetic)
#include "test_arithmetic.moc"
