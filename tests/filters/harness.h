#pragma once
// The filter test harness. Each suite (one executable per catalog category) registers a
// reference check per filter; the suite's rows are generated FROM THE CATALOG (every filter
// of the category x every device x every dtype it claims), so a new catalog entry without a
// reference check fails its suite.
#include <QTest>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "common.h"
#include "gpix/catalog.h"

namespace gpix::test {

// Runs the filter on `device` for inputs of dtype t and shape s (random data inside) and
// compares with a CPU reference; QVERIFY/QCOMPARE inside report failures.
using Check = std::function<void(const Device& device, DType t, const Shape& s)>;

inline std::map<std::string, Check>& references() {
  static std::map<std::string, Check> r;
  return r;
}

struct Register {
  Register(const char* name, Check c) { references()[name] = std::move(c); }
};
#define GPIX_CAT2_(a, b) a##b
#define GPIX_CAT2(a, b) GPIX_CAT2_(a, b)
#define GPIX_REFERENCE(name) static ::gpix::test::Register GPIX_CAT2(gpix_ref_, __LINE__)(name, [](const ::gpix::Device& device, ::gpix::DType dtype, const ::gpix::Shape& shape)

// Shapes per dimensionality: 1-pixel dims and odd extents.
inline std::vector<Shape> shapes_for(int dims) {
  if (dims == 1) return {Shape{1}, Shape{13}};
  if (dims == 2) return {Shape{1, 1}, Shape{1, 17}, Shape{17, 1}, Shape{31, 37}};
  return {Shape{1, 1, 9}, Shape{3, 5, 7}, Shape{11, 23, 29}};
}

// The C++ value of a saturating conversion, as the dialect's gpix_sat: round half to even,
// clamp to the type's range, NaN -> 0 for integers.
template <class T>
T sat(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    v = std::nearbyint(v);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// Compares got with expect: integers within abs_tol, floats within rel_tol relative to
// max(|expect|, 1) (NaN must match NaN, inf must match inf).
template <class T>
void compare(const std::vector<T>& got, const std::vector<T>& expect, double abs_tol,
             double rel_tol, const QByteArray& where) {
  QCOMPARE(got.size(), expect.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]), e = static_cast<double>(expect[i]);
    bool ok;
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(e) || std::isnan(g))
        ok = std::isnan(e) && std::isnan(g);
      else if (std::isinf(e) || std::isinf(g))
        ok = g == e;
      else
        ok = std::fabs(g - e) <= rel_tol * std::max(std::fabs(e), 1.0);
    } else {
      const long double d = static_cast<long double>(got[i]) - static_cast<long double>(expect[i]);
      ok = std::fabs(d) <= abs_tol;
    }
    if (!ok) {
      QFAIL((where + " at element " + QByteArray::number(qulonglong(i)) + ": got " +
             QByteArray::number(g, 'g', 17) + ", expected " + QByteArray::number(e, 'g', 17))
                .constData());
    }
  }
}

// Values small enough that arithmetic on them stays meaningful in every dtype; covers
// negatives for signed types and includes the dtype's extremes at a few positions.
template <class T>
std::vector<T> moderate_values(std::size_t n, bool extremes = true) {
  auto v = random_values<T>(n);
  auto& r = rng();
  for (auto& x : v) {
    if constexpr (std::is_floating_point_v<T>) {
      x = static_cast<T>(std::uniform_real_distribution<double>(-100, 100)(r));
    } else if constexpr (std::is_signed_v<T>) {
      x = static_cast<T>(std::uniform_int_distribution<int>(-100, 100)(r));
    } else {
      x = static_cast<T>(std::uniform_int_distribution<int>(0, 200)(r));
    }
  }
  if (extremes && n > 3) {
    v[0] = std::numeric_limits<T>::max();
    v[n / 2] = std::numeric_limits<T>::lowest();
  }
  return v;
}

// Pushes fresh data, returning the host copy too.
template <class T>
std::pair<Array, std::vector<T>> push_random(const Device& d, const Shape& s,
                                             bool extremes = true) {
  auto v = moderate_values<T>(s.elements(), extremes);
  return {Array::push(v, s, d), v};
}

inline QByteArray where(const char* filter, DType t, const Shape& s) {
  return QByteArray(filter) + " " + QByteArray(name(t).data()) + " " +
         QByteArray::fromStdString(s.str());
}

// The data-driven rows of a category suite.
inline void add_rows(const std::string& category) {
  QTest::addColumn<QString>("filter");
  QTest::addColumn<int>("device");
  QTest::addColumn<int>("dtype");
  bool any = false;
  for (const auto& f : filters()) {
    if (f.category != category) continue;
    any = true;
    for (const Device& d : test_devices()) {
      for (DType t : f.dtypes) {
        QTest::newRow(
            (f.name + " " + std::string(name(t)) + " " + std::to_string(d.info().index)).c_str())
            << QString::fromStdString(f.name) << d.info().index << static_cast<int>(t);
      }
    }
  }
  if (!any) qFatal("the catalog has no filter in category %s", category.c_str());
}

// Runs one row: the registered check on every shape of every dims the filter claims.
inline void run_row() {
  QFETCH(QString, filter);
  QFETCH(int, device);
  QFETCH(int, dtype);
  const std::string fname = filter.toStdString();
  auto it = references().find(fname);
  if (it == references().end()) {
    QFAIL(("filter '" + fname + "' has no reference test: add a GPIX_REFERENCE in tests/filters/")
              .c_str());
  }
  const Device dev = devices()[static_cast<std::size_t>(device)];
  const DType t = static_cast<DType>(dtype);
  if (t == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64");
  const FilterInfo& info = gpix::filter(fname);
  for (int dims : info.dims) {
    for (const Shape& s : shapes_for(dims)) {
      it->second(dev, t, s);
      if (QTest::currentTestFailed()) return;
    }
  }
}

}  // namespace gpix::test
