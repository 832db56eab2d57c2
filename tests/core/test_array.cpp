// Arrays on every device present: round trips of every dtype, create/empty/fill/zero/copy
// and the error paths.
#include <QTest>
#include <cstdlib>

#include "config.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

bool device_has(const Device& d, DType t) {
  return t != DType::f64 || d.supports_fp64();
}

template <class T>
void check_round_trip(const Device& dev, const Shape& shape) {
  const auto data = test::random_bits<T>(shape.elements());
  Array a = Array::push(data, shape, dev);
  QCOMPARE(a.shape(), shape);
  QCOMPARE(a.dtype(), dtype_of<T>);
  QVERIFY(a.device() == dev);
  QCOMPARE(a.kind(), MemoryKind::buffer);
  // Bit-exact: compare bytes, so NaN payloads and -0 count.
  const HostArray back = a.pull();
  QCOMPARE(back.shape(), shape);
  QCOMPARE(back.dtype(), dtype_of<T>);
  QVERIFY(std::memcmp(back.data(), data.data(), back.bytes()) == 0);
  const std::vector<T> typed = a.pull_as<T>();
  QVERIFY(std::memcmp(typed.data(), data.data(), back.bytes()) == 0);
}

}  // namespace

class TestArray : public QObject {
  Q_OBJECT
 private slots:
  void round_trip_data() { test::add_device_dtype_rows(); }
  void round_trip() {
    QFETCH(DType, dtype);
    const Device dev = test::fetch_device();
    if (!device_has(dev, dtype)) {
      QVERIFY_THROWS_EXCEPTION(UnsupportedDType, Array::create(Shape{4}, dtype, dev));
      return;
    }
    for (const Shape& s : test::odd_shapes()) {
      visit_dtype(dtype, [&](auto z) { check_round_trip<decltype(z)>(dev, s); });
    }
    // Through HostArray too.
    HostArray h(Shape{5, 3}, dtype);
    const auto bits = test::random_bits<std::uint8_t>(h.bytes());
    std::memcpy(h.data(), bits.data(), h.bytes());
    const HostArray back = push(h, dev).pull();
    QVERIFY(std::memcmp(back.data(), h.data(), h.bytes()) == 0);
  }

  void large_data() { test::add_device_rows(); }
  void large() {
    const Device dev = test::fetch_device();
    // 64 MB of float32 with odd extents.
    const Shape s{4099, 4093};
    const auto data = test::random_bits<float>(s.elements());
    QVERIFY(s.elements() * 4 >= 64u * 1000 * 1000);
    Array a = Array::push(data, s, dev);
    const auto back = a.pull_as<float>();
    QVERIFY(std::memcmp(back.data(), data.data(), data.size() * 4) == 0);
  }

  // gpix's own fill kernel (fill.kernel's fill_pattern), which NVIDIA's OpenCL needs past
  // 4 GB of a buffer (workaround nvidia-opencl-fill-4g); config().test_fill_kernel routes every
  // OpenCL fill through it, so it is checked on every OpenCL device with patterns of 1, 2,
  // 4 and 8 bytes over odd sizes, on poisoned buffers.
  void fill_pattern_kernel_data() { large_data(); }
  void fill_pattern_kernel() {
    const Device dev = test::fetch_device();
    if (dev.backend() != Backend::opencl) QSKIP("an OpenCL path");
    detail::ScopedConfig scoped_config;
    detail::config_for_testing().test_fill_kernel = true;
    const auto check = [&](auto value, const Shape& s) {
      using T = decltype(value);
      Array a = Array::push(test::random_bits<T>(s.elements()), s, dev);
      a.fill(value);
      for (const T v : a.pull_as<T>()) {
        if (std::memcmp(&v, &value, sizeof(T)) != 0) {
          QFAIL(qPrintable(
              QString("fill of %1 x %2 bytes differs").arg(s.elements()).arg(sizeof(T))));
        }
      }
      a.zero();
      for (const T v : a.pull_as<T>()) QVERIFY(v == T(0));
    };
    for (const Shape& s : {Shape{1}, Shape{7}, Shape{1001, 3}, Shape{3, 5, 67}}) {
      check(std::uint8_t{0xa5}, s);
      check(std::int16_t{-12345}, s);
      check(std::uint32_t{0xdeadbeefu}, s);
      check(-1.25e300, s);
    }
  }

  void create_fill_zero_copy_data() { round_trip_data(); }
  void create_fill_zero_copy() {
    QFETCH(DType, dtype);
    const Device dev = test::fetch_device();
    if (!device_has(dev, dtype)) return;
    visit_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      const Shape s{7, 13, 5};
      // empty() then poison, so that create() below must really zero.
      Array junk = Array::empty(s, dtype, dev);
      junk.fill(std::numeric_limits<T>::max());
      junk = Array();
      Array a = Array::create(s, dtype, dev);
      for (T v : a.pull_as<T>()) QCOMPARE(v, T(0));

      const T values[] = {std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(42)};
      for (T v : values) {
        a.fill(v);
        for (T got : a.pull_as<T>()) QCOMPARE(got, v);
      }
      if constexpr (std::is_floating_point_v<T>) {
        a.fill(std::numeric_limits<double>::quiet_NaN());
        for (T got : a.pull_as<T>()) QVERIFY(std::isnan(got));
        // 0.1 has no exact float32; 2^64 - 1 has no exact float64.
        const Scalar unfit = std::is_same_v<T, float>
                                 ? Scalar(0.1)
                                 : Scalar(std::numeric_limits<std::uint64_t>::max());
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.fill(unfit));
      } else {
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.fill(1.5));
        QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.fill(std::nan("")));
        if constexpr (sizeof(T) < 8) {
          QVERIFY_THROWS_EXCEPTION(
              InvalidArgument, a.fill(static_cast<long long>(std::numeric_limits<T>::max()) + 1));
        }
      }
      // A rejected fill leaves the contents alone.
      a.fill(T(7));
      const Scalar unfit = std::is_integral_v<T> ? Scalar(1.5)
                           : std::is_same_v<T, float>
                               ? Scalar(0.1)
                               : Scalar(std::numeric_limits<std::uint64_t>::max());
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.fill(unfit));
      for (T got : a.pull_as<T>()) QCOMPARE(got, T(7));

      a.zero();
      for (T got : a.pull_as<T>()) QCOMPARE(got, T(0));

      const auto data = test::random_values<T>(s.elements());
      a.write(data.data(), data.size() * sizeof(T));
      Array b = a.copy();
      QVERIFY(!b.same_memory(a));
      Array alias = a;
      QVERIFY(alias.same_memory(a));
      a.fill(T(1));
      QVERIFY(b.pull_as<T>() == data);        // the deep copy is independent
      QCOMPARE(alias.pull_as<T>()[0], T(1));  // the handle copy is not
      Array c = Array::empty(s, dtype, dev);
      c.copy_from(b);
      QVERIFY(c.pull_as<T>() == data);
    });
  }

  void cross_device_copy() {
    const auto& devs = test::test_devices();
    const auto data = test::random_values<std::int32_t>(999);
    for (const Device& from : devs) {
      for (const Device& to : devs) {
        Array a = Array::push(data, Shape{27, 37}, from);
        Array b = Array::empty(Shape{27, 37}, DType::i32, to);
        b.copy_from(a);
        QVERIFY(b.pull_as<std::int32_t>() == data);
      }
    }
  }

  void errors_data() { large_data(); }
  void errors() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    Array a = Array::create(Shape{4, 4}, DType::u16, dev);
    std::vector<std::uint16_t> wrong(15);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.write(wrong.data(), wrong.size() * 2));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, a.read(wrong.data(), wrong.size() * 2));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array::push(wrong, Shape{4, 4}, dev));
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, a.pull_as<std::int16_t>());
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array::create(Shape{2, 2, 2, 2}, DType::u8, dev));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array::create(Shape{3, 0}, DType::u8, dev));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array::create(Shape{}, DType::u8, dev));
    Array other = Array::create(Shape{4, 5}, DType::u16, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, other.copy_from(a));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Array().shape());
    // Larger than the device's largest allocation: a typed error that names the limit, and
    // the device keeps working.
    const std::uint64_t too_big = dev.info().max_allocation + 4096;
    try {
      Array::empty(Shape{too_big}, DType::u8, dev);
      QFAIL("no exception");
    } catch (const OutOfMemory& e) {
      QCOMPARE(e.requested_bytes(), too_big);
      QVERIFY2(std::string(e.what()).find("largest single allocation") != std::string::npos,
               e.what());
    }
    QCOMPARE(a.pull_as<std::uint16_t>()[0], std::uint16_t{0});
  }

  void no_fp64_data() { large_data(); }
  void no_fp64() {
    const Device dev = test::fetch_device();
    {
      detail::ScopedConfig scoped_config;
      detail::config_for_testing().disable_fp64 = true;
      QVERIFY(!dev.supports_fp64());
      try {
        Array::create(Shape{3, 3}, DType::f64, dev);
        QFAIL("no exception");
      } catch (const UnsupportedDType& e) {
        QVERIFY2(std::string(e.what()).find("float64") != std::string::npos, e.what());
      }
      QVERIFY_THROWS_EXCEPTION(UnsupportedDType,
                               Array::push(std::vector<double>(4), Shape{4}, dev));
      // Other dtypes are unaffected.
      QCOMPARE(Array::create(Shape{3}, DType::f32, dev).elements(), 3u);
    }
    QCOMPARE(dev.supports_fp64(), dev.info().fp64);
  }
};

QTEST_APPLESS_MAIN(TestArray)
#include "test_array.moc"
