// stats() on the device against a CPU reference, every dtype, odd shapes, NaN and Inf; and the
// metadata card.
#include <QTest>

#include "config.h"
#include "moments.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

struct Ref {
  long double min = 0, max = 0, sum = 0;
  std::uint64_t count = 0, nans = 0;
};

template <class T>
Ref reference(const std::vector<T>& v) {
  Ref r;
  bool first = true;
  for (T x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(x)) {
        ++r.nans;
        continue;
      }
    }
    const long double lx = static_cast<long double>(x);
    if (first || lx < r.min) r.min = lx;
    if (first || lx > r.max) r.max = lx;
    first = false;
    r.sum += lx;
    ++r.count;
  }
  return r;
}

template <class T>
void check(const Device& dev, const Shape& shape, bool specials) {
  auto data = test::random_values<T>(shape.elements());
  if constexpr (std::is_floating_point_v<T>) {
    if (specials && data.size() >= 4) {
      auto& r = test::rng();
      data[r() % data.size()] = std::numeric_limits<T>::quiet_NaN();
      data[r() % data.size()] = std::numeric_limits<T>::quiet_NaN();
      data[r() % data.size()] = std::numeric_limits<T>::infinity();
    }
  }
  const Ref ref = reference(data);
  const Stats s = stats(Array::push(data, shape, dev));
  const QByteArray where =
      QByteArray::fromStdString(shape.str() + " " + std::string(name(dtype_of<T>)));
  QVERIFY2(s.count == ref.count, where);
  QVERIFY2(s.nan_count == ref.nans, where);
  // min and max are exact, in the array's own type.
  QVERIFY2(static_cast<long double>(s.min.exact_as<T>()) == ref.min, where);
  QVERIFY2(static_cast<long double>(s.max.exact_as<T>()) == ref.max, where);
  if constexpr (std::is_integral_v<T>) {
    // Integer sums are exact: an int64/uint64 Scalar where the sum fits, else the nearest
    // double; the mean comes from the exact sum.
    __extension__ using Int128 = __int128;
    Int128 expect = 0;
    for (T x : data) expect += static_cast<Int128>(x);
    using Wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
    const QByteArray got = QByteArray::fromStdString(s.sum.str());
    if (expect >= static_cast<Int128>(std::numeric_limits<Wide>::lowest()) &&
        expect <= static_cast<Int128>(std::numeric_limits<Wide>::max())) {
      QVERIFY2(std::is_signed_v<T> ? s.sum.is_signed_int() : s.sum.is_unsigned_int(),
               where + " sum " + got);
      QVERIFY2(static_cast<Int128>(s.sum.exact_as<Wide>()) == expect, where + " sum " + got);
    } else {
      QVERIFY2(s.sum.as_double() == static_cast<double>(expect), where + " sum " + got);
    }
    const double mean = static_cast<double>(static_cast<long double>(expect) /
                                            static_cast<long double>(data.size()));
    QVERIFY2(std::fabs(s.mean - mean) <= 1e-15 * std::fabs(mean), where + " mean");
  } else {
    const bool has_inf = std::isinf(static_cast<double>(ref.max));
    if (has_inf) {
      QVERIFY2(std::isinf(s.sum.as_double()), where);
    } else {
      // |sum| can be small through cancellation, so the tolerance scales with sum |x|.
      long double abs_sum = 0;
      for (T x : data)
        if (!std::isnan(x)) abs_sum += std::fabs(static_cast<long double>(x));
      const double tol =
          (dev.supports_fp64() ? 1e-12 : 1e-5) * static_cast<double>(abs_sum) + 1e-30;
      QVERIFY2(std::fabs(s.sum.as_double() - static_cast<double>(ref.sum)) <= tol,
               where + " sum " + QByteArray::fromStdString(s.sum.str()));
    }
  }
}

}  // namespace

class TestStats : public QObject {
  Q_OBJECT
 private slots:
  void against_reference_data() { test::add_device_dtype_rows(); }
  void against_reference() {
    QFETCH(int, device);
    QFETCH(DType, dtype);
    const Device dev = test::device_at(device);
    if (dtype == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64 on this device");
    auto shapes = test::odd_shapes();
    shapes.push_back(Shape{1023, 1025});  // more elements than one pass of the work-groups
    for (const Shape& s : shapes) {
      for (bool specials : {false, true}) {
        visit_dtype(dtype, [&](auto z) { check<decltype(z)>(dev, s, specials); });
      }
    }
  }

  // A reduction's result comes back through a blocking read, which on OpenCL is one blocking
  // call or a queued read and a wait (GPIX_CL_BLOCKING; by default by direction and size):
  // the same results with every read and write queued, the default, and every one blocking,
  // on every device (CUDA ignores the setting). Arrays of 4 bytes to 2 MB go both ways
  // through the same calls (below the staging size) or the staging ring.
  void blocking_and_queued_transfers_data() { test::add_device_rows(); }
  void blocking_and_queued_transfers() {
    const Device dev = test::fetch_device();
    for (int blocking : {0, -1, 1}) {
      const detail::ScopedConfig scope;
      detail::config_for_testing().cl_blocking = blocking;
      for (const Shape& s : {Shape{1}, Shape{7, 13}, Shape{1023, 1025}, Shape{5, 33, 65}}) {
        check<float>(dev, s, true);
        check<std::uint16_t>(dev, s, false);
        if (QTest::currentTestFailed()) {
          qWarning("GPIX_CL_BLOCKING=%d", blocking);
          return;
        }
      }
      for (std::size_t n :
           {std::size_t{1}, std::size_t{4096}, std::size_t{70000}, std::size_t{500000}}) {
        std::vector<std::int32_t> v(n);
        for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(i * 7919) + blocking;
        Array a = Array::push(v, Shape{n}, dev);
        QCOMPARE(a.pull_as<std::int32_t>(), v);
      }
    }
  }

  void nan_rules_data() { test::add_device_rows(); }
  void nan_rules() {
    const Device dev = test::fetch_device();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    // All NaN: min/max/mean NaN, sum 0, counts right.
    Stats s = stats(Array::push(std::vector<float>(37, nan), Shape{37}, dev));
    QVERIFY(std::isnan(s.min.as_double()) && std::isnan(s.max.as_double()) && std::isnan(s.mean));
    QCOMPARE(s.sum.as_double(), 0.0);
    QCOMPARE(s.count, 0u);
    QCOMPARE(s.nan_count, 37u);
    // +inf and -inf: min -inf, max +inf, sum NaN.
    s = stats(Array::push(std::vector<float>{1.f, inf, -inf, nan, 2.f}, Shape{5}, dev));
    QCOMPARE(s.min.as_double(), -static_cast<double>(inf));
    QCOMPARE(s.max.as_double(), static_cast<double>(inf));
    QVERIFY(std::isnan(s.sum.as_double()));
    QCOMPARE(s.count, 4u);
    QCOMPARE(s.nan_count, 1u);
    // A single pixel.
    s = stats(Array::push(std::vector<std::int8_t>{-7}, Shape{1, 1}, dev));
    QCOMPARE(s.min.exact_as<std::int8_t>(), std::int8_t{-7});
    QCOMPARE(s.max.exact_as<std::int8_t>(), std::int8_t{-7});
    QCOMPARE(s.mean, -7.0);
    // 64-bit extremes stay exact (no detour through double).
    const std::uint64_t big = 18446744073709551615u;
    s = stats(Array::push(std::vector<std::uint64_t>{big - 1, 3, big}, Shape{3}, dev));
    QCOMPARE(s.max.exact_as<std::uint64_t>(), big);
    QCOMPARE(s.min.exact_as<std::uint64_t>(), std::uint64_t{3});
  }

  // detail::extrema (the catalog's minimum_of_all_pixels and maximum_of_all_pixels) and stats():
  // the smallest and largest value put at every kind of place its kernel reads differently, the
  // elements before and after the 16-byte words, each lane of a word (8- and 16-bit integers
  // compare as lanes of 32-bit words), across work-items, the last element; every dtype, sizes
  // around the word and pass boundaries, the dtype's own limits, NaN left out (floats), and
  // padded rows. Poisoned first: the rest of the array is a middle value.
  void extrema_every_position_data() { test::add_device_dtype_rows(); }
  void extrema_every_position() {
    QFETCH(int, device);
    QFETCH(DType, dtype);
    const Device dev = test::device_at(device);
    if (dtype == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64 on this device");
    visit_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      using L = std::numeric_limits<T>;
      const T lo = L::lowest(), hi = L::max(), mid = static_cast<T>(1);
      std::vector<std::size_t> sizes = {1,  2,  3,  7,  8,    9,      15,
                                        16, 17, 33, 65, 4099, 270341, std::size_t{1} << 21};
      // 8- and 16-bit integers: more 16-byte words than two per work-item of the whole grid
      // (stats.cpp's reduction grid: 8 groups of 256 per compute unit, 16 to 4096 groups), so
      // that the loop of two loads at a time runs too (an H200's grid is 270336 work-items).
      if (std::is_integral_v<T> && sizeof(T) <= 2) {
        const std::size_t items =
            std::clamp<std::size_t>(dev.info().compute_units * 8u, 16u, 4096u) * 256;
        sizes.push_back(3 * items * (16 / sizeof(T)) + 5);
      }
      for (const std::size_t n : sizes) {
        for (std::size_t pick = 0; pick < 7; ++pick) {
          std::vector<T> v(n, mid);
          const std::size_t where[7] = {0, 1, 2, 3, n / 2 + 1, n - 2, n - 1};
          const std::size_t a = std::min(where[pick], n - 1);
          const std::size_t b = std::min(where[6 - pick], n - 1);
          v[a] = lo;
          v[b] = hi;  // where a == b only the maximum is there
          if constexpr (std::is_floating_point_v<T>) {
            // A NaN away from both extremes.
            for (const std::size_t at : {(a + b) / 2, n / 3, n / 2, n - 3}) {
              if (n > 4 && at != a && at != b) {
                v[at] = L::quiet_NaN();
                break;
              }
            }
          }
          const Ref ref = reference(v);
          const Stats s = detail::extrema(Array::push(v, Shape{n}, dev));
          const QByteArray at = QByteArray::fromStdString(
              std::string(name(dtype)) + " n " + std::to_string(n) + " min at " +
              std::to_string(a) + " max at " + std::to_string(b));
          QVERIFY2(static_cast<long double>(s.min.exact_as<T>()) == ref.min, at + " min");
          QVERIFY2(static_cast<long double>(s.max.exact_as<T>()) == ref.max, at + " max");
          QVERIFY2(s.nan_count == ref.nans && s.count == ref.count, at + " counts");
          // stats() too: stats_partial reads the same positions through loops of its own.
          const Stats t = stats(Array::push(v, Shape{n}, dev));
          QVERIFY2(static_cast<long double>(t.min.exact_as<T>()) == ref.min, at + " stats min");
          QVERIFY2(static_cast<long double>(t.max.exact_as<T>()) == ref.max, at + " stats max");
          QVERIFY2(t.nan_count == ref.nans && t.count == ref.count, at + " stats counts");
          if (QTest::currentTestFailed()) return;
        }
      }
      // Padded rows: the element path over pitches.
      const auto data = test::random_values<T>(37 * 29);
      Array p = Array::padded(Shape{37, 29}, Shape{40, 35}, dtype_of<T>, dev);
      p.write(HostArray::from(data, Shape{37, 29}));
      const Ref ref = reference(data);
      const Stats s = detail::extrema(p);
      QCOMPARE(static_cast<long double>(s.min.exact_as<T>()), ref.min);
      QCOMPARE(static_cast<long double>(s.max.exact_as<T>()), ref.max);
    });
  }

  void card_data() { nan_rules_data(); }
  void card() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    const auto data = test::random_values<std::uint16_t>(128 * 128);
    const Card c = gpix::card(Array::push(data, Shape{2, 128, 64}, dev));
    QCOMPARE(c.shape, (Shape{2, 128, 64}));
    QCOMPARE(c.dtype, DType::u16);
    QCOMPARE(c.bytes, 32768u);
    QCOMPARE(c.size, std::string("32.8 kB"));
    QCOMPARE(c.device, dev.label());
    QCOMPARE(c.kind, MemoryKind::buffer);
    const Ref ref = reference(data);
    QCOMPARE(static_cast<long double>(c.stats.min.as_double()), ref.min);
    QCOMPARE(static_cast<long double>(c.stats.max.as_double()), ref.max);
    const std::string text = to_text(c);
    for (const char* key : {"shape:", "dtype:  uint16", "size:   32.8 kB",
                            "min:", "max:", "device:", "memory: buffer"}) {
      QVERIFY2(text.find(key) != std::string::npos, text.c_str());
    }
    QVERIFY(text.find(c.stats.max.str()) != std::string::npos);
  }
};

QTEST_APPLESS_MAIN(TestStats)
#include "test_stats.moc"
