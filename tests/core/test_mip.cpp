// render_mip (the 3D view's projection) on every device and dtype: views along the axes equal
// plain maxima over z, x and y (numpy's a.max(axis=...)), and any camera equals a plain CPU
// reference that walks the documented rays in double.
#include <QTest>
#include <cmath>
#include <limits>
#include <numbers>

#include "gpix/mip.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

// Values of a (z, y, x) host volume.
struct Volume {
  std::size_t nz, ny, nx;
  std::vector<double> v;
  double at(std::size_t z, std::size_t y, std::size_t x) const { return v[(z * ny + y) * nx + x]; }
};

// Max of a sequence as numpy.nanmax (NaN skipped); -inf for none.
struct NanMax {
  double m = -std::numeric_limits<double>::infinity();
  bool any = false;
  void add(double x) {
    any = true;
    if (x > m) m = x;
  }
};

// The plain maximum along one axis, laid out as the view along it shows it: along z (rows y,
// columns x), along x (rows y, columns z) and along y (rows z, columns x).
std::vector<double> axis_max(const Volume& a, char axis) {
  std::vector<double> out;
  if (axis == 'z') {
    for (std::size_t y = 0; y < a.ny; ++y)
      for (std::size_t x = 0; x < a.nx; ++x) {
        NanMax m;
        for (std::size_t z = 0; z < a.nz; ++z) m.add(a.at(z, y, x));
        out.push_back(m.m);
      }
  } else if (axis == 'x') {
    for (std::size_t y = 0; y < a.ny; ++y)
      for (std::size_t z = 0; z < a.nz; ++z) {
        NanMax m;
        for (std::size_t x = 0; x < a.nx; ++x) m.add(a.at(z, y, x));
        out.push_back(m.m);
      }
  } else {
    for (std::size_t z = 0; z < a.nz; ++z)
      for (std::size_t x = 0; x < a.nx; ++x) {
        NanMax m;
        for (std::size_t y = 0; y < a.ny; ++y) m.add(a.at(z, y, x));
        out.push_back(m.m);
      }
  }
  return out;
}

// The documented camera, walked in double in physical coordinates: screen right u, down v,
// rays d (yaw about v, then pitch about u); samples one voxel apart along the ray's most
// advanced axis, on whole coordinates of that axis; inside when -0.5 <= c < n - 0.5.
std::vector<double> reference(const Volume& a, const MipOptions& o, std::size_t w, std::size_t h,
                              bool linear, bool* all_missed = nullptr) {
  // As documented, whole multiples of 90 degrees are exact (std::sin(pi) is 1.2e-16).
  const auto cs = [](double deg) {
    const double q = deg / 90;
    if (q == std::round(q)) {
      const long k = ((long(q) % 4) + 4) % 4;
      return std::pair<double, double>{k == 0 ? 1 : (k == 2 ? -1 : 0),
                                       k == 1 ? 1 : (k == 3 ? -1 : 0)};
    }
    const double r = deg * std::numbers::pi / 180;
    return std::pair<double, double>{std::cos(r), std::sin(r)};
  };
  const auto [cy, sy] = cs(o.yaw);
  const auto [cp, sp] = cs(o.pitch);
  const double s[3] = {o.spacing[2], o.spacing[1], o.spacing[0]};
  const double n[3] = {double(a.nx), double(a.ny), double(a.nz)};
  const double pixel = o.pixel != 0 ? o.pixel : std::min({s[0], s[1], s[2]});
  const double u[3] = {cy, 0, sy};
  const double v[3] = {-sy * sp, cp, cy * sp};
  const double d[3] = {-sy * cp, -sp, cy * cp};
  double step[3], big = 0;
  int dom = 0;
  for (int i = 0; i < 3; ++i) {
    step[i] = d[i] / s[i];
    if (std::abs(step[i]) > big) big = std::abs(step[i]), dom = i;
  }
  for (double& c : step) c /= big;
  const auto sample = [&](const double c[3]) {
    if (!linear) {
      return a.at(std::size_t(std::floor(c[2] + 0.5)), std::size_t(std::floor(c[1] + 0.5)),
                  std::size_t(std::floor(c[0] + 0.5)));
    }
    std::size_t i0[3], i1[3];
    double t[3];
    for (int i = 0; i < 3; ++i) {
      const double cc = std::clamp(c[i], 0.0, n[i] - 1);
      i0[i] = std::size_t(std::floor(cc));
      i1[i] = std::min(i0[i] + 1, std::size_t(n[i]) - 1);
      t[i] = cc - double(i0[i]);
    }
    const auto lerp = [](double p, double q, double f) { return f == 0 ? p : (1 - f) * p + f * q; };
    const auto row = [&](std::size_t z, std::size_t y) {
      return lerp(a.at(z, y, i0[0]), a.at(z, y, i1[0]), t[0]);
    };
    return lerp(lerp(row(i0[2], i0[1]), row(i0[2], i1[1]), t[1]),
                lerp(row(i1[2], i0[1]), row(i1[2], i1[1]), t[1]), t[2]);
  };
  std::vector<double> out;
  if (all_missed) *all_missed = true;
  const long reach = long(a.nx + a.ny + a.nz) + 2;
  for (std::size_t i = 0; i < h; ++i) {
    for (std::size_t j = 0; j < w; ++j) {
      double c0[3];
      for (int k = 0; k < 3; ++k) {
        const double p = (double(j) - (double(w) - 1) / 2) * pixel * u[k] +
                         (double(i) - (double(h) - 1) / 2) * pixel * v[k];
        c0[k] = (n[k] - 1) / 2 + p / s[k];
      }
      const double shift = c0[dom] - std::floor(c0[dom] + 0.5);
      for (int k = 0; k < 3; ++k) c0[k] -= shift * step[k] / step[dom];
      NanMax m;
      for (long k = -reach; k <= reach; ++k) {
        double c[3];
        bool inside = true;
        for (int q = 0; q < 3; ++q) {
          c[q] = c0[q] + double(k) * step[q];
          inside = inside && c[q] >= -0.5 && c[q] < n[q] - 0.5;
        }
        if (inside) m.add(sample(c));
      }
      if (all_missed && m.any) *all_missed = false;
      out.push_back(m.any ? m.m : std::numeric_limits<double>::quiet_NaN());
    }
  }
  return out;
}

template <class T>
std::vector<double> pulled(const Array& a) {
  std::vector<double> out;
  visit_dtype(a.dtype(), [&](auto t) {
    for (auto x : a.pull_as<decltype(t)>()) out.push_back(static_cast<double>(x));
  });
  return out;
}

// Equal pixel by pixel; NaN (a missed ray, float results) equals NaN, and a missed ray of an
// integer result holds the dtype's lowest value.
bool same(double got, double want, double tol, DType out) {
  if (std::isnan(want)) {
    return is_float(out) ? std::isnan(got)
                         : got == visit_dtype(out, [](auto t) {
                             return double(std::numeric_limits<decltype(t)>::lowest());
                           });
  }
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol;
}

template <class T>
void check(const Device& dev, const Shape& shape, const std::array<double, 3>& spacing) {
  auto data = test::random_values<T>(shape.elements());
  if constexpr (std::is_floating_point_v<T>) {
    if (data.size() > 4) data[data.size() / 2] = std::numeric_limits<T>::quiet_NaN();
  }
  Volume vol{shape.depth(), shape.height(), shape.width(), {}};
  double range = 1;
  for (T x : data) {
    vol.v.push_back(static_cast<double>(x));
    if (!std::isnan(double(x))) range = std::max(range, std::abs(double(x)));
  }
  const Array a = Array::push(data, shape, dev);
  const bool isotropic = spacing[0] == spacing[1] && spacing[1] == spacing[2];
  for (const Interpolation interp : {Interpolation::nearest, Interpolation::linear}) {
    const bool linear = interp == Interpolation::linear;
    const char* mode = linear ? "linear" : "nearest";
    // Along the axes: plain maxima, exactly. A view along z needs square x/y pixels, and
    // the side views the spacing of the axis across the screen.
    struct AxisView {
      double yaw, pitch;
      char axis;
      std::size_t w, h;
      bool exact;
    };
    const AxisView views[] = {
        {0, 0, 'z', vol.nx, vol.ny, spacing[1] == spacing[2]},
        {360, -720, 'z', vol.nx, vol.ny, spacing[1] == spacing[2]},
        {90, 0, 'x', vol.nz, vol.ny, isotropic},
        {0, 90, 'y', vol.nx, vol.nz, isotropic},
    };
    for (const AxisView& av : views) {
      if (!av.exact) continue;
      MipOptions o{.yaw = av.yaw,
                   .pitch = av.pitch,
                   .spacing = spacing,
                   .width = av.w,
                   .height = av.h,
                   .interpolation = interp};
      const Array got_a = render_mip(a, o);
      QVERIFY(got_a.shape() == (Shape{av.h, av.w}));
      QCOMPARE(got_a.dtype(),
               linear ? (std::is_same_v<T, double> ? DType::f64 : DType::f32) : a.dtype());
      const auto got = pulled<T>(got_a);
      const auto want = axis_max(vol, av.axis);
      // Linear results are float32: the input's value rounded to float.
      for (std::size_t i = 0; i < want.size(); ++i) {
        const double w =
            linear && !std::is_same_v<T, double> ? double(static_cast<float>(want[i])) : want[i];
        if (!(got[i] == w || (std::isnan(got[i]) && std::isnan(w)) ||
              (std::isinf(w) && got[i] == w))) {
          QFAIL(qPrintable(QString("%1 %2 view along %3 (yaw %4 pitch %5): pixel %6 is %7, the "
                                   "max over %3 is %8")
                               .arg(mode, shape.str().c_str())
                               .arg(av.axis)
                               .arg(av.yaw)
                               .arg(av.pitch)
                               .arg(i)
                               .arg(got[i])
                               .arg(w)));
        }
      }
    }
    // Any camera, with a border of missed rays: the reference walk, within float rounding of
    // the sample positions (a sample lying on a voxel border may fall either side of it). The
    // pixel size is not a round fraction of the spacing, which would put whole rows of
    // samples exactly on borders, where float and double round apart.
    for (const auto& [yaw, pitch] :
         {std::pair{30.0, 0.0}, {0.0, -50.0}, {135.0, 20.0}, {-75.0, 160.0}, {180.0, 0.0}}) {
      const std::size_t w = vol.nx + vol.nz + 3, h = vol.ny + vol.nz + 4;
      MipOptions o{.yaw = yaw,
                   .pitch = pitch,
                   .spacing = spacing,
                   .width = w,
                   .height = h,
                   .pixel = 0.7313 * std::min({spacing[0], spacing[1], spacing[2]}),
                   .interpolation = interp};
      const Array got_a = render_mip(a, o);
      const auto got = pulled<T>(got_a);
      const auto want = reference(vol, o, w, h, linear);
      QCOMPARE(got.size(), want.size());
      const double tol = linear ? range * 1e-5 : 0;
      std::size_t bad = 0, first = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        if (!same(got[i], want[i], tol, got_a.dtype())) {
          if (!bad++) first = i;
        }
      }
      // Float32 positions: a few samples per thousand rays sit within 1e-4 of a border.
      if (bad > std::max<std::size_t>(1, got.size() / 100)) {
        QFAIL(qPrintable(QString("%1 %2 yaw %3 pitch %4: %5 of %6 pixels differ from the "
                                 "reference; first %7: %8 vs %9")
                             .arg(mode, shape.str().c_str())
                             .arg(yaw)
                             .arg(pitch)
                             .arg(bad)
                             .arg(got.size())
                             .arg(first)
                             .arg(got[first])
                             .arg(want[first])));
      }
    }
  }
}

}  // namespace

class TestMip : public QObject {
  Q_OBJECT
 private slots:
  void matches_reference_data() { test::add_device_dtype_rows(); }
  void matches_reference() {
    QFETCH(int, device);
    QFETCH(DType, dtype);
    const Device dev = test::device_at(device);
    if (dtype == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64 on this device");
    if (size_of(dtype) > 2 && dtype != DType::f32 && !dev.supports_fp64()) {
      QSKIP("linear interpolation of wide integers needs fp64");
    }
    const std::array<double, 3> iso{1, 1, 1}, deep{3, 1, 1}, odd{2.5, 0.5, 1.25};
    for (const auto& row : {std::pair{Shape{7, 13, 11}, iso},
                            {Shape{6, 9, 10}, deep},
                            {Shape{5, 8, 7}, odd},
                            {Shape{1, 1, 1}, iso},
                            {Shape{1, 5, 9}, iso},
                            {Shape{6, 1, 4}, deep},
                            {Shape{5, 7, 1}, iso}}) {
      visit_dtype(dtype, [&](auto z) { check<decltype(z)>(dev, row.first, row.second); });
      if (QTest::currentTestFailed()) return;
    }
  }

  // Every ray misses: NaN for float results, the lowest value for integer ones.
  void missed_rays() {
    const Device dev = test::test_devices().front();
    const Array f = Array::push(std::vector<float>{1, 5, 2}, Shape{1, 1, 3}, dev);
    MipOptions far{.width = 3, .height = 1, .pixel = 2};
    const auto got = render_mip(f, far).pull_as<float>();
    QVERIFY(std::isnan(got[0]));  // the outer rays pass beside the volume
    QCOMPARE(got[1], 5.0f);       // the middle one meets its middle voxel
    QVERIFY(std::isnan(got[2]));
    far.interpolation = Interpolation::nearest;
    const Array u = Array::push(std::vector<std::uint16_t>{1, 5, 2}, Shape{1, 1, 3}, dev);
    const auto gu = render_mip(u, far).pull_as<std::uint16_t>();
    QCOMPARE(gu, (std::vector<std::uint16_t>{0, 5, 0}));
  }

  void errors() {
    const Device dev = test::test_devices().front();
    const Array flat = Array::push(test::random_values<float>(20), Shape{4, 5}, dev);
    try {
      render_mip(flat);
      QFAIL("a 2D array was projected");
    } catch (const InvalidArgument& e) {
      const QString m = QString::fromUtf8(e.what());
      QVERIFY2(m.contains("3D") && m.contains("4 x 5") && m.contains("maximum_z_projection"),
               e.what());
    }
    const Array a = Array::push(test::random_values<float>(24), Shape{2, 3, 4}, dev);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_mip(a, {.spacing = {0, 1, 1}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_mip(a, {.spacing = {1, -1, 1}}));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument,
        render_mip(a, {.spacing = {1, 1, std::numeric_limits<double>::infinity()}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_mip(a, {.pixel = -1}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             render_mip(a, {.yaw = std::numeric_limits<double>::quiet_NaN()}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render_mip(Array{}));
  }
};

QTEST_GUILESS_MAIN(TestMip)
#include "test_mip.moc"
