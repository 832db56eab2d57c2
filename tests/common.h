#pragma once
// Helpers shared by the test suites: device rows for data-driven tests and random data.
#include <QTest>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gpix/gpix.h"

namespace gpix::test {

// Every device present; a test run with none fails unless GPIX_TEST_ALLOW_NO_DEVICE is set,
// so that a CI machine that lost its OpenCL driver does not pass by testing nothing.
inline const std::vector<Device>& test_devices() {
  const auto& d = devices();
  if (d.empty() && !qEnvironmentVariableIsSet("GPIX_TEST_ALLOW_NO_DEVICE")) {
    qFatal(
        "no gpix device found; install pocl-opencl-icd (see README) or set "
        "GPIX_TEST_ALLOW_NO_DEVICE=1");
  }
  return d;
}

inline QByteArray row_name(const Device& d) {
  return QByteArray::fromStdString(std::to_string(d.info().index) + ":" + d.label());
}

// A fresh seed per run (printed so a failure can be replayed with GPIX_TEST_SEED).
inline std::uint64_t seed() {
  static const std::uint64_t s = [] {
    bool ok = false;
    std::uint64_t v = qEnvironmentVariable("GPIX_TEST_SEED").toULongLong(&ok);
    if (!ok) v = std::random_device{}();
    qInfo("GPIX_TEST_SEED=%llu", static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(seed());
  return r;
}

// Random values over the dtype's whole range (integers) or a wide signed range (floats).
template <class T>
std::vector<T> random_values(std::size_t n) {
  std::vector<T> v(n);
  auto& r = rng();
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> small(std::numeric_limits<T>::lowest() < 0 ? -1000 : 0,
                                                   1000);
    for (auto& x : v) {
      // Mostly full-range bits, some small values so sums are not dominated by extremes.
      if (r() % 4 == 0) {
        x = static_cast<T>(small(r));
      } else {
        const std::uint64_t bits = r();
        std::memcpy(&x, &bits, sizeof(T));
      }
    }
  } else {
    std::uniform_real_distribution<double> d(-1000.0, 1000.0);
    for (auto& x : v) x = static_cast<T>(d(r));
  }
  return v;
}

// Random bit patterns: for floats this includes NaNs with payloads, infinities, -0 and
// denormals, for the bit-exact round trip.
template <class T>
std::vector<T> random_bits(std::size_t n) {
  std::vector<T> v(n);
  auto& r = rng();
  for (auto& x : v) {
    const std::uint64_t bits = r();
    std::memcpy(&x, &bits, sizeof(T));
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(),  std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),  T(-0.0),
                          std::numeric_limits<T>::denorm_min(), std::numeric_limits<T>::lowest()};
    for (std::size_t i = 0; i < std::min<std::size_t>(n, 6); ++i) v[(i * 7919) % n] = specials[i];
  }
  return v;
}

// Shapes that find stride and edge bugs: 1-pixel dims, odd sizes, 2D and 3D.
inline std::vector<Shape> odd_shapes() {
  return {Shape{1},      Shape{1, 1},    Shape{1, 17},   Shape{17, 1},   Shape{13},
          Shape{31, 37}, Shape{3, 5, 7}, Shape{1, 1, 9}, Shape{9, 1, 1}, Shape{11, 23, 29}};
}

// A 33 x 17 int32 SharedBuffer on `dev`: written through a mapping, copied to an array and
// back after a fill, read through a mapping (test_memory's svm and the fake CUDA device's).
inline void shared_buffer_round_trip(const Device& dev) {
  const Shape s{33, 17};
  const auto data = random_values<std::int32_t>(s.elements());
  SharedBuffer b = SharedBuffer::allocate(s.elements() * 4, dev);
  QVERIFY(b.data() != nullptr);
  {
    Mapping m = b.map(MapMode::write);
    std::memcpy(m.data(), data.data(), b.bytes());
  }
  Array a = Array::empty(s, DType::i32, dev);
  b.copy_to(a);
  QVERIFY(a.pull_as<std::int32_t>() == data);
  a.fill(-5);
  b.copy_from(a);
  const Mapping m = b.map(MapMode::read);
  const auto* p = reinterpret_cast<const std::int32_t*>(m.data());
  for (std::size_t i = 0; i < s.elements(); ++i) QCOMPARE(p[i], -5);
}

}  // namespace gpix::test
