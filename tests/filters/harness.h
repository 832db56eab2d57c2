#pragma once
// The filter test harness. Each suite (one executable per catalog category) registers a
// reference check per filter; the suite's rows are generated FROM THE CATALOG (every filter
// of the category x every device x every dtype it claims), so a new catalog entry without a
// reference check fails its suite.
#include <QTest>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "gpix/catalog.h"
#include "support/devices.h"
#include "support/random.h"

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

// Shapes for the other layouts: pitches and origins go wrong on any shape with rows (and
// slices), so the smaller odd shapes find them; the large ones stay contiguous-only.
inline std::vector<Shape> layout_shapes_for(int dims) {
  if (dims == 1) return {Shape{13}};
  if (dims == 2) return {Shape{1, 17}, Shape{9, 7}};
  return {Shape{1, 1, 9}, Shape{3, 5, 7}};
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

// ---- layouts. Each row runs its check once per layout an array can have (see Array): the
// check's inputs come from input() below, so every reference check covers every layout.
enum class Layout : std::uint8_t { contiguous, padded, region, image };
constexpr Layout kLayouts[] = {Layout::contiguous, Layout::padded, Layout::region, Layout::image};
inline const char* name(Layout l) {
  switch (l) {
    case Layout::contiguous:
      return "contiguous";
    case Layout::padded:
      return "padded";
    case Layout::region:
      return "region view";
    case Layout::image:
      break;
  }
  return "image";
}
inline Layout& current_layout() {
  static Layout l = Layout::contiguous;
  return l;
}
// Whether a can be stored as an image object on its device (images take 8-32-bit dtypes).
inline bool image_layout_possible(const Device& d, DType t) {
  static const DType ok[] = {DType::u8,  DType::i8,  DType::u16, DType::i16,
                             DType::u32, DType::i32, DType::f32};
  return d.info().images && std::find(std::begin(ok), std::end(ok), t) != std::end(ok);
}

// A value no filter result should take from an input, written where padding or the rest of
// a region view's allocation lies: a kernel that reads there shows in the comparison.
inline Scalar poison(DType t) {
  return visit_dtype(t, [](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      return Scalar(std::numeric_limits<T>::quiet_NaN());
    } else {
      return Scalar(std::numeric_limits<T>::max() - 3);
    }
  });
}

// a's pixels in layout l: rows padded by 1-17 pixels (and planes by 0-3 rows, 0-2 slices);
// a region view at a random origin of a poisoned larger array, at its far edge on odd draws;
// an image object. Throws UnsupportedFeature for an image the device cannot hold.
inline Array in_layout(const Array& a, Layout l) {
  auto& r = rng();
  const Shape& s = a.shape();
  const int nd = s.ndim();
  auto grown = [&](std::size_t x_extra_min) {
    std::vector<std::size_t> dims;
    for (int i = 0; i < nd; ++i) {
      const std::size_t extra = i == nd - 1 ? x_extra_min + r() % 17 : r() % (i == 0 ? 3 : 4);
      dims.push_back(s[i] + extra);
    }
    return Shape(std::span<const std::size_t>(dims));
  };
  switch (l) {
    case Layout::contiguous:
      return a;
    case Layout::padded: {
      Array p = Array::padded(s, grown(1), a.dtype(), a.device());
      p.fill(poison(a.dtype()));
      p.copy_from(a);
      return p;
    }
    case Layout::region: {
      Array parent = Array::empty(grown(0), a.dtype(), a.device());
      parent.fill(poison(a.dtype()));
      const bool far = r() % 2 == 1;
      Region box;
      for (int i = 0; i < nd; ++i) {
        const std::size_t room = parent.shape()[i] - s[i];
        box.origin.push_back(far ? room : (room ? r() % (room + 1) : 0));
        box.extent.push_back(s[i]);
      }
      Array v = parent.view(box);
      v.copy_from(a);
      return v;
    }
    case Layout::image:
      break;
  }
  if (!image_layout_possible(a.device(), a.dtype())) {
    throw UnsupportedFeature("no image object for " + std::string(gpix::name(a.dtype())));
  }
  return a.to_image();
}

// The pixels of v as a filter input in the current row's layout (a second input of a dtype
// that images cannot hold stays contiguous in an image row).
template <class T>
Array input(const std::vector<T>& v, const Shape& s, const Device& d) {
  const Array a = Array::push(v, s, d);
  if (current_layout() == Layout::image && !image_layout_possible(d, a.dtype())) return a;
  return in_layout(a, current_layout());
}

// Pushes fresh data (in the current row's layout), returning the host copy too.
template <class T>
std::pair<Array, std::vector<T>> push_random(const Device& d, const Shape& s,
                                             bool extremes = true) {
  auto v = moderate_values<T>(s.elements(), extremes);
  return {input(v, s, d), v};
}

inline QByteArray where(const char* filter, DType t, const Shape& s) {
  return QByteArray(filter) + " " + QByteArray(name(t).data()) + " " +
         QByteArray::fromStdString(s.str());
}

// The data-driven rows of a category suite.
inline void add_rows(Category category) {
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
  if (!any) qFatal("the catalog has no filter in category %s", name(category).data());
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
  const Device dev = test::device_at(device);
  const DType t = static_cast<DType>(dtype);
  if (t == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64");
  const FilterInfo& info = gpix::filter(fname);
  for (Layout l : kLayouts) {
    if (l == Layout::image && !image_layout_possible(dev, t)) continue;
    current_layout() = l;
    for (int dims : info.dims) {
      for (const Shape& s : l == Layout::contiguous ? shapes_for(dims) : layout_shapes_for(dims)) {
        it->second(dev, t, s);
        if (QTest::currentTestFailed()) {
          qWarning("inputs stored as: %s", name(l));
          current_layout() = Layout::contiguous;
          return;
        }
      }
    }
  }
  current_layout() = Layout::contiguous;
}

}  // namespace gpix::test
