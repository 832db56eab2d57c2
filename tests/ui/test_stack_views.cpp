// The views of stacks (issue 16), as real widgets on a BasicHost, offscreen: the orthogonal
// views' panes are the numpy-style slices a[z], a[:, y, :] and a[:, :, x].T of the stack
// coloured by the documented contrast mapping (a plain loop here, not core's renderer), the
// crosshair follows clicks and drags in every pane, and the panes keep the layer's physical
// proportions; the 3D view at yaw = pitch = 0 is the maximum over z, turned by 90 degrees the
// maximum over x; and neither blocks the event loop on a 64 x 512 x 512 stack (a fast drag
// renders only the newest camera). With GPIX_SCREENSHOT_DIR the views of a blob volume are
// saved as ortho_views.png and mip_3d.png (docs/img).
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QElapsedTimer>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "gpix/basic_host.h"
#include "gpix/render.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/mip_view.h"
#include "gpix/ui/ortho_views.h"
#include "support/random.h"
#include "ui/image_words.h"
#if defined(GPIX_TEST_HAVE_VIEWER)
#include <QMenu>

#include "stack_views.h"
#endif

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::plugin::Layer;
using gpix::test::words;
using gpix::ui::Plane;

namespace {

// A host stack (z, y, x) of doubles, indexed as numpy would.
struct Stack {
  std::size_t nz, ny, nx;
  std::vector<double> v;
  double at(std::size_t z, std::size_t y, std::size_t x) const { return v[(z * ny + y) * nx + x]; }
};

// The documented contrast mapping (gpix/render.h) in float32, as a plain loop: what a pixel of
// value v looks like with limits lo, hi under `lut`.
std::uint32_t colour(double v, double lo, double hi, const Lut& lut) {
  if (std::isnan(v)) return 0;
  const float t = (float(v) - float(lo)) * float(256.0 / (hi - lo));
  int idx = 255;
  if (!(t >= 0.0f)) {
    idx = 0;
  } else if (t < 255.0f) {
    idx = int(t);
  }
  return lut.table[std::size_t(idx)];
}

// Plane `p` of the stack at `i` (numpy: a[i], a[:, i, :], a[:, :, i].T), coloured.
std::vector<std::uint32_t> expected_plane(const Stack& s, Plane p, std::size_t i, double lo,
                                          double hi, const Lut& lut) {
  std::vector<std::uint32_t> out;
  if (p == Plane::xy) {
    for (std::size_t y = 0; y < s.ny; ++y)
      for (std::size_t x = 0; x < s.nx; ++x) out.push_back(colour(s.at(i, y, x), lo, hi, lut));
  } else if (p == Plane::xz) {
    for (std::size_t z = 0; z < s.nz; ++z)
      for (std::size_t x = 0; x < s.nx; ++x) out.push_back(colour(s.at(z, i, x), lo, hi, lut));
  } else {
    for (std::size_t y = 0; y < s.ny; ++y)
      for (std::size_t z = 0; z < s.nz; ++z) out.push_back(colour(s.at(z, y, i), lo, hi, lut));
  }
  return out;
}

// The longest gap between turns of the event loop while `busy` holds, ticking every 5 ms.
struct StallMeter {
  QElapsedTimer tick;
  qint64 worst = 0;
  int ticks = 0;
  QTimer timer;
  StallMeter() {
    QObject::connect(&timer, &QTimer::timeout, [this] {
      worst = std::max(worst, tick.restart());
      ++ticks;
    });
    timer.start(5);
    tick.start();
  }
};

// A volume of soft blobs over noise (what a nucleus stain looks like), float32.
std::vector<float> blobs(const Shape& s, int count) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> v(s.elements());
  for (auto& x : v) x = float(20 * u(rng));
  for (int b = 0; b < count; ++b) {
    const double cz = u(rng) * double(s.depth()), cy = u(rng) * double(s.height()),
                 cx = u(rng) * double(s.width());
    const double r = 4 + 10 * u(rng), amp = 100 + 150 * u(rng);
    const auto lo = [](double c, double rr) { return std::size_t(std::max(0.0, c - 3 * rr)); };
    const auto hi = [](double c, double rr, std::size_t n) {
      return std::min(n, std::size_t(std::max(0.0, c + 3 * rr)));
    };
    const double rz = r / 4;  // z spacing 4x the pixel size: round in physical space
    for (std::size_t z = lo(cz, rz); z < hi(cz, rz, s.depth()); ++z)
      for (std::size_t y = lo(cy, r); y < hi(cy, r, s.height()); ++y)
        for (std::size_t x = lo(cx, r); x < hi(cx, r, s.width()); ++x) {
          const double d2 = std::pow((double(z) - cz) / rz, 2) + std::pow((double(y) - cy) / r, 2) +
                            std::pow((double(x) - cx) / r, 2);
          v[(z * s.height() + y) * s.width() + x] += float(amp * std::exp(-d2 / 2));
        }
  }
  return v;
}

}  // namespace

class TestStackViews : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<BasicHost> host_;

  BasicHost& host() { return *host_; }
  int add(const QString& name, const Array& a, double lo, double hi,
          const QString& cmap = QStringLiteral("gray"), std::vector<double> spacing = {}) {
    Layer l;
    l.name = name;
    l.array = a;
    l.colormap = cmap;
    l.contrast_min = lo;
    l.contrast_max = hi;
    l.spacing = std::move(spacing);
    if (!l.spacing.empty()) l.unit = QStringLiteral("um");
    return host().add_layer(l);
  }
  // Every pane shows the planes through the cursor.
  void check_panes(const ui::OrthoViews& v, const Stack& s, double lo, double hi, const Lut& lut) {
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy(), 60000);
    const std::size_t at[] = {std::size_t(v.cursor_z()), std::size_t(v.cursor_y()),
                              std::size_t(v.cursor_x())};
    for (Plane p : {Plane::xy, Plane::xz, Plane::yz}) {
      const QImage img = v.frame(p);
      QVERIFY(!img.isNull());
      const std::size_t w = p == Plane::yz ? s.nz : s.nx, h = p == Plane::xz ? s.nz : s.ny;
      QCOMPARE(std::size_t(img.width()), w);
      QCOMPARE(std::size_t(img.height()), h);
      QVERIFY2(words(img) == expected_plane(s, p, at[int(p)], lo, hi, lut),
               qPrintable(QStringLiteral("plane %1 at %2").arg(int(p)).arg(at[int(p)])));
    }
  }

 private slots:
  void init() {
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("t.ini")), QSettings::IniFormat));
  }
  void cleanup() { host_.reset(); }

  // Odd shapes, a z spacing of 4: the panes are the slices, coloured as documented; the
  // panes' sizes on screen follow the physical extents.
  void ortho_panes_are_slices() {
    const Shape shape{9, 23, 31};
    const auto data = test::random_values<std::uint16_t>(shape.elements());
    Stack s{shape.depth(), shape.height(), shape.width(), {data.begin(), data.end()}};
    ui::OrthoViews v(host());
    v.resize(700, 600);
    v.show();
    const int id = add(QStringLiteral("stack"), Array::push(data, shape), 3000, 51000,
                       QStringLiteral("hot"), {4, 1, 1});
    QCOMPARE(v.layer(), id);
    QCOMPARE(v.cursor_x(), 15);  // a new stack starts at its centre in x and y
    QCOMPARE(v.cursor_y(), 11);
    check_panes(v, s, 3000, 51000, lut("hot"));
    v.set_cursor(30, 0, 8);
    check_panes(v, s, 3000, 51000, lut("hot"));
    // Physical proportions: xz is 9 * 4 deep against 31 wide, yz 36 wide against 23 high.
    const QSize xy = v.pane(Plane::xy)->size(), xz = v.pane(Plane::xz)->size(),
                yz = v.pane(Plane::yz)->size();
    QCOMPARE(xz.width(), xy.width());
    QCOMPARE(yz.height(), xy.height());
    QVERIFY2(std::abs(double(xz.height()) / xz.width() - 36.0 / 31) < 0.03,
             qPrintable(QStringLiteral("xz pane %1 x %2").arg(xz.width()).arg(xz.height())));
    QVERIFY(std::abs(double(yz.width()) / yz.height() - 36.0 / 23) < 0.03);
    // A new colour map and limits reach every pane.
    Layer l = host().layer(id);
    l.colormap = QStringLiteral("viridis");
    l.contrast_min = 100;
    l.contrast_max = 20000;
    host().replace_layer(id, l);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy(), 60000);
    check_panes(v, s, 100, 20000, lut("viridis"));
    // Host-only layers (the device could not hold them) cut their planes on the host.
    Layer h;
    h.name = QStringLiteral("host");
    h.host = HostArray::empty(shape, DType::u16);
    std::memcpy(h.host.data(), data.data(), h.host.bytes());
    h.contrast_min = 0;
    h.contrast_max = 65535;
    const QImage want = ui::render_plane(Array::push(data, shape), {}, default_device(), Plane::yz,
                                         5, {0, 0, 65535, QStringLiteral("gray")});
    QCOMPARE(words(ui::render_plane({}, h.host, default_device(), Plane::yz, 5,
                                    {0, 0, 65535, QStringLiteral("gray")})),
             words(want));
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument, ui::render_plane(Array::push(data, shape), {}, default_device(), Plane::xz,
                                          23, {0, 0, 1, QStringLiteral("gray")}));
    const Array flat = Array::push(test::random_values<float>(12), Shape{3, 4});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             ui::render_plane(flat, {}, default_device(), Plane::xy, 0,
                                              {0, 0, 1, QStringLiteral("gray")}));
  }

  // Clicks and drags in each pane move the cursor; the other panes follow; z follows the main
  // view's slice and the main view follows z.
  void crosshair_follows_the_mouse() {
    const Shape shape{12, 40, 50};
    const auto data = test::random_values<float>(shape.elements());
    Stack s{shape.depth(), shape.height(), shape.width(), {data.begin(), data.end()}};
    ui::ImageView main(host());
    ui::OrthoViews v(host());
    v.resize(600, 600);
    v.show();
    QObject::connect(&main, &ui::ImageView::slice_changed, &v, &ui::OrthoViews::set_slice);
    QObject::connect(&v, &ui::OrthoViews::slice_changed, &main, &ui::ImageView::set_slice);
    add(QStringLiteral("f"), Array::push(data, shape), -500, 500, QStringLiteral("gray"),
        {2, 1, 1});
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy(), 60000);
    const auto centre_of = [&](Plane p, int col, int row, QSize n) {
      const QWidget* w = v.pane(p);
      return QPoint(int((col + 0.5) * w->width() / n.width()),
                    int((row + 0.5) * w->height() / n.height()));
    };
    // xy: a click sets x and y.
    QTest::mouseClick(v.pane(Plane::xy), Qt::LeftButton, {},
                      centre_of(Plane::xy, 7, 33, QSize(50, 40)));
    QCOMPARE(v.cursor_x(), 7);
    QCOMPARE(v.cursor_y(), 33);
    check_panes(v, s, -500, 500, lut("gray"));
    // xz: a click sets x and z, and the main view's slice follows z.
    QTest::mouseClick(v.pane(Plane::xz), Qt::LeftButton, {},
                      centre_of(Plane::xz, 41, 10, QSize(50, 12)));
    QCOMPARE(v.cursor_x(), 41);
    QCOMPARE(v.cursor_z(), 10);
    QCOMPARE(main.slice(), 10);
    check_panes(v, s, -500, 500, lut("gray"));
    // yz: a drag from (z 2, y 5) to (z 6, y 20) ends there.
    QWidget* yz = v.pane(Plane::yz);
    QTest::mousePress(yz, Qt::LeftButton, {}, centre_of(Plane::yz, 2, 5, QSize(12, 40)));
    for (int i = 1; i <= 8; ++i) {
      QMouseEvent move(QEvent::MouseMove,
                       centre_of(Plane::yz, 2 + i / 2, 5 + 15 * i / 8, QSize(12, 40)),
                       yz->mapToGlobal(QPoint()), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(yz, &move);
    }
    QTest::mouseRelease(yz, Qt::LeftButton, {}, centre_of(Plane::yz, 6, 20, QSize(12, 40)));
    QCOMPARE(v.cursor_z(), 6);
    QCOMPARE(v.cursor_y(), 20);
    QCOMPARE(v.cursor_x(), 41);
    QCOMPARE(main.slice(), 6);
    check_panes(v, s, -500, 500, lut("gray"));
    // The main view's slice slider moves the xy plane.
    main.set_slice(3);
    QCOMPARE(v.cursor_z(), 3);
    check_panes(v, s, -500, 500, lut("gray"));
    // The wheel over a pane steps its plane.
    QWheelEvent wheel(QPointF(5, 5), yz->mapToGlobal(QPointF(5, 5)), QPoint(), QPoint(0, 120),
                      Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(yz, &wheel);
    QCOMPARE(v.cursor_x(), 42);
  }

  // The 3D view along z is the maximum over z; turned by 90 degrees, the maximum over x
  // (exact with cubic voxels; with a z spacing of 3 exact on the columns that fall on slices).
  void mip_view_is_the_maximum() {
    const Shape shape{12, 20, 30};
    const auto data = test::random_values<float>(shape.elements());
    Stack s{shape.depth(), shape.height(), shape.width(), {data.begin(), data.end()}};
    ui::MipView v(host());
    v.resize(250, 210);  // even margins around 30 x 20 and 12 x 20: pixels on voxel centres
    v.show();
    const double lo = -900, hi = 950;
    const int id =
        add(QStringLiteral("f"), Array::push(data, shape), lo, hi, QStringLiteral("hot"));
    v.set_zoom(1);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy() && !v.frame().isNull(), 60000);
    // slack: the side view of a z spacing of 3 samples its slices at coordinates one float
    // rounding away from whole ones, so a colour may be that of a value a hair off.
    const auto check = [&](char axis, std::size_t step, double slack) {
      const QImage img = v.frame();
      QCOMPARE(img.size(), QSize(250, 210));
      const std::size_t cols = axis == 'z' ? s.nx : s.nz;
      const std::size_t x0 = (250 - (cols - 1) * step - 1) / 2, y0 = (210 - s.ny) / 2;
      for (std::size_t y = 0; y < s.ny; ++y) {
        for (std::size_t c = 0; c < cols; ++c) {
          double m = -std::numeric_limits<double>::infinity();
          for (std::size_t k = 0; k < (axis == 'z' ? s.nz : s.nx); ++k)
            m = std::max(m, axis == 'z' ? s.at(k, y, c) : s.at(c, y, k));
          const auto got =
              reinterpret_cast<const std::uint32_t*>(img.constScanLine(int(y0 + y)))[x0 + c * step];
          const Lut& hot = lut("hot");
          if (got != colour(m, lo, hi, hot) && got != colour(m - slack, lo, hi, hot) &&
              got != colour(m + slack, lo, hi, hot)) {
            QFAIL(qPrintable(QStringLiteral("view along %1: row %2 column %3 differs from the "
                                            "maximum %4")
                                 .arg(axis)
                                 .arg(y)
                                 .arg(c)
                                 .arg(m)));
          }
        }
      }
    };
    check('z', 1, 0);
    if (QTest::currentTestFailed()) return;
    // Zoomed in (3 screen pixels a voxel), the smooth view blends neighbouring columns; without
    // smoothing every pixel is exactly one column's maximum, at any zoom.
    std::set<float> maxima;
    for (std::size_t y = 0; y < s.ny; ++y) {
      for (std::size_t c = 0; c < s.nx; ++c) {
        float m = -std::numeric_limits<float>::infinity();
        for (std::size_t k = 0; k < s.nz; ++k) m = std::max(m, float(s.at(k, y, c)));
        maxima.insert(m);
      }
    }
    // The fraction of the camera's projected pixels (those on the volume) that are maxima.
    const auto on_maxima = [&] {
      const Array p = render_mip(Array::push(data, shape), v.frame_camera());
      std::size_t in = 0, all = 0;
      for (float x : p.pull_as<float>()) {
        if (std::isnan(x)) continue;
        ++all;
        in += maxima.count(x);
      }
      return all ? double(in) / double(all) : 0.0;
    };
    QVERIFY(v.smooth());
    v.set_zoom(3);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy() && v.frame_camera().pixel < 0.5, 60000);
    QCOMPARE(v.frame_camera().interpolation, Interpolation::linear);
    const double smooth_share = on_maxima();
    QVERIFY2(smooth_share < 0.5, qPrintable(QString::number(smooth_share)));
    const int before = v.frames_rendered();
    v.set_smooth(false);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy() && v.frames_rendered() > before, 60000);
    QCOMPARE(v.frame_camera().interpolation, Interpolation::nearest);
    QCOMPARE(on_maxima(), 1.0);
    v.set_smooth(true);
    v.set_zoom(1);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy() && v.frame_camera().pixel == 1 &&
                                 v.frame_camera().interpolation == Interpolation::linear,
                             60000);
    v.set_angles(90, 0);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy() && v.frame_camera().yaw == 90, 60000);
    check('x', 1, 0);
    if (QTest::currentTestFailed()) return;
    // z spacing 3: every third column of the side view lies on a slice.
    Layer l = host().layer(id);
    l.spacing = {3, 1, 1};
    l.unit = QStringLiteral("um");
    host().replace_layer(id, l);
    QTRY_VERIFY_WITH_TIMEOUT(!v.busy() && v.frame_camera().spacing[0] == 3, 60000);
    check('x', 3, 0.01);
    // A 2D layer alone: no projection, and the view says why.
    host().remove_layer(id);
    QCOMPARE(v.layer(), -1);
  }

  // A 64 x 512 x 512 stack: dragging in the 3D view and across the orthogonal panes never
  // blocks the event loop, and a fast drag renders only the newest cameras.
  void large_stack_never_blocks() {
    const Shape shape{64, 512, 512};
    const Array a = Array::push(blobs(shape, 120), shape);
    ui::OrthoViews ortho(host());
    ortho.resize(800, 700);
    ortho.show();
    ui::MipView mip(host());
    mip.resize(640, 480);
    mip.show();
    add(QStringLiteral("blobs"), a, 0, 260, QStringLiteral("gray"), {4, 0.5, 0.5});
    QTRY_VERIFY_WITH_TIMEOUT(!ortho.busy() && !mip.busy(), 120000);
    // One full-size projection, for the record (the documentation states it).
    QElapsedTimer clock;
    clock.start();
    render_mip(a, {.yaw = 30, .pitch = 20, .spacing = {4, 0.5, 0.5}, .width = 640, .height = 480})
        .pull_as<float>();
    const qint64 full_ms = clock.elapsed();
    clock.restart();
    render_mip(a, {.yaw = 30, .pitch = 20, .spacing = {4, 0.5, 0.5}, .width = 320, .height = 240})
        .pull_as<float>();
    const qint64 half_ms = clock.elapsed();
    clock.restart();
    render_mip(a, {.yaw = 30,
                   .pitch = 20,
                   .spacing = {4, 0.5, 0.5},
                   .width = 640,
                   .height = 480,
                   .interpolation = Interpolation::nearest})
        .pull_as<float>();
    qInfo("render_mip 64x512x512 float32 on %s: 640x480 %lld ms (nearest %lld ms), 320x240 %lld ms",
          default_device().label().c_str(), full_ms, clock.elapsed(), half_ms);
    const std::size_t pulled_before = ortho.bytes_pulled();
    StallMeter meter;
    // A drag in the 3D view: 40 moves 10 ms apart.
    QTest::mousePress(&mip, Qt::LeftButton, {}, QPoint(100, 100));
    for (int i = 1; i <= 40; ++i) {
      QMouseEvent move(QEvent::MouseMove, QPointF(100 + 3 * i, 100 + i), mip.mapToGlobal(QPointF()),
                       Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(&mip, &move);
      QTest::qWait(10);
    }
    QTest::mouseRelease(&mip, Qt::LeftButton, {}, QPoint(220, 140));
    // A drag across the xz pane.
    QWidget* xz = ortho.pane(Plane::xz);
    QTest::mousePress(xz, Qt::LeftButton, {}, QPoint(10, 10));
    for (int i = 1; i <= 40; ++i) {
      QMouseEvent move(QEvent::MouseMove, QPointF(10 + 5 * i, 10 + i % 30),
                       xz->mapToGlobal(QPointF()), Qt::NoButton, Qt::LeftButton, Qt::NoModifier);
      QApplication::sendEvent(xz, &move);
      QTest::qWait(10);
    }
    QTest::mouseRelease(xz, Qt::LeftButton, {}, QPoint(210, 20));
    QTRY_VERIFY_WITH_TIMEOUT(!ortho.busy() && !mip.busy(), 240000);
    meter.timer.stop();
    qInfo(
        "3D view: %d frames rendered for %d asked; orthogonal views pulled %zu bytes; "
        "longest event-loop gap %lld ms over %d ticks",
        mip.frames_rendered(), mip.frames_requested(), ortho.bytes_pulled() - pulled_before,
        meter.worst, meter.ticks);
    QVERIFY2(meter.worst < 100,
             qPrintable(QStringLiteral("the event loop stalled %1 ms").arg(meter.worst)));
    QVERIFY(mip.frames_rendered() < mip.frames_requested());
    QCOMPARE(mip.frame_camera().yaw, mip.yaw());  // the last camera is the one on screen
    QCOMPARE(mip.frame().width(), 640);           // at full resolution after the release
    // Planes only: each pane reads back its own RGBA, never the volume.
    QVERIFY(ortho.bytes_pulled() - pulled_before < a.bytes());
  }

#if defined(GPIX_TEST_HAVE_VIEWER)
  // gpix-viewer's View menu entries open the views in windows of their own, once; the main
  // view's slice and the orthogonal views' z follow each other.
  void view_menu_opens_the_views() {
    QWidget window;
    ui::ImageView main(host(), &window);
    QMenu menu;
    StackViews views(host(), &main, &window);
    views.add_to(&menu);
    QAction* ortho_action = menu.findChild<QAction*>(QStringLiteral("action_ortho_views"));
    QAction* mip_action = menu.findChild<QAction*>(QStringLiteral("action_mip_3d"));
    QVERIFY(ortho_action && mip_action);
    const Shape shape{10, 30, 40};
    add(QStringLiteral("s"),
        Array::push(test::random_values<std::int16_t>(shape.elements()), shape), -1000, 1000);
    main.set_slice(4);
    ortho_action->trigger();
    auto* ortho = window.findChild<ui::OrthoViews*>();
    QVERIFY(ortho && ortho->isVisible() && ortho->window() != &window);
    QCOMPARE(ortho->cursor_z(), 4);
    main.set_slice(7);
    QCOMPARE(ortho->cursor_z(), 7);
    ortho->set_cursor(3, 3, 2);
    QCOMPARE(main.slice(), 2);
    ortho_action->trigger();  // again: the same window
    QCOMPARE(window.findChildren<ui::OrthoViews*>().size(), 1);
    mip_action->trigger();
    auto* mip = window.findChild<ui::MipView*>();
    QVERIFY(mip && mip->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!mip->busy() && !mip->frame().isNull(), 60000);
    // The switch above the 3D view: smooth by default, off for the voxels themselves.
    auto* smooth = window.findChild<QCheckBox*>(QStringLiteral("mip_smooth"));
    QVERIFY(smooth && smooth->isVisible() && smooth->isChecked());
    smooth->click();
    QVERIFY(!mip->smooth());
    QTRY_VERIFY_WITH_TIMEOUT(
        !mip->busy() && mip->frame_camera().interpolation == Interpolation::nearest, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(!ortho->busy(), 60000);
  }
#endif

  // The documentation's screenshots, on a blob volume (GPIX_SCREENSHOT_DIR).
  void screenshots() {
    const QString dir = qEnvironmentVariable("GPIX_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("GPIX_SCREENSHOT_DIR is not set");
    const Shape shape{64, 256, 256};
    add(QStringLiteral("nuclei"), Array::push(blobs(shape, 60), shape), 0, 230,
        QStringLiteral("gray"), {4, 1, 1});
    ui::OrthoViews ortho(host());
    ortho.setWindowTitle(QStringLiteral("Orthogonal views"));
    ortho.resize(760, 660);
    ortho.show();
    ortho.set_cursor(140, 120, 30);
    QTRY_VERIFY_WITH_TIMEOUT(!ortho.busy(), 60000);
    QVERIFY(ortho.grab().save(QDir(dir).filePath(QStringLiteral("ortho_views.png"))));
    ui::MipView mip(host());
    mip.resize(700, 560);
    mip.show();
    Layer l = host().layer(host().layer_ids().last());
    l.colormap = QStringLiteral("hot");
    host().replace_layer(host().layer_ids().last(), l);
    mip.set_angles(35, 25);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy() && mip.frame_camera().yaw == 35, 60000);
    QVERIFY(mip.grab().save(QDir(dir).filePath(QStringLiteral("mip_3d.png"))));
  }
};

QTEST_MAIN(TestStackViews)
#include "test_stack_views.moc"
