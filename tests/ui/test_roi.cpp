// ROIs and the line profile, offscreen: rectangle, ellipse and polygon ROIs drawn with QTest
// mouse events on a 1024x768 uint16 image and on a 3D stack, their statistics against a plain
// per-pixel reference mask (a concave polygon at an odd zoom, a one-pixel-wide rectangle, a ROI
// on one slice and on every slice), editing (move, delete, Esc, Enter), crop to ROI (bounding
// box recorded as core's crop, outside set to 0) with undo, CSV export, areas in physical units,
// and the line profile against scipy.ndimage.map_coordinates(order=1) and a plain bilinear
// reference, following the slice, with distances in µm.
#include <QApplication>
#include <QCheckBox>
#include <QElapsedTimer>
#include <QFile>
#include <QHBoxLayout>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <cmath>
#include <limits>

#include "gpix/basic_host.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/profile_panel.h"
#include "gpix/ui/render.h"
#include "gpix/ui/roi.h"
#include "gpix/ui/roi_overlay.h"
#include "gpix/ui/roi_panel.h"
#include "gpix/ui/workflow.h"
#include "support/process.h"
#include "support/random.h"

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::ui::Roi;
using gpix::ui::RoiKind;
using gpix::ui::RoiOverlay;
using Tool = gpix::ui::RoiOverlay::Tool;

namespace {

// Something like a fluorescence image: a background gradient, a few bright blobs and noise, so
// that means over different shapes differ.
std::vector<std::uint16_t> cells(std::size_t depth, std::size_t h, std::size_t w) {
  std::vector<std::uint16_t> v(depth * h * w);
  const std::vector<std::uint16_t> noise = test::random_values<std::uint16_t>(v.size());
  for (std::size_t z = 0; z < depth; ++z) {
    for (std::size_t y = 0; y < h; ++y) {
      for (std::size_t x = 0; x < w; ++x) {
        double s = 300 + 0.3 * double(x) + 0.2 * double(y) + 40.0 * double(z);
        for (int b = 0; b < 6; ++b) {
          const double cx = double(w) * (0.15 + 0.14 * b), cy = double(h) * (0.3 + 0.08 * (b % 4));
          const double r2 =
              ((double(x) - cx) * (double(x) - cx) + (double(y) - cy) * (double(y) - cy));
          s += 20000.0 * std::exp(-r2 / (2.0 * (30.0 + 5 * b) * (30.0 + 5 * b)));
        }
        const std::size_t i = (z * h + y) * w + x;
        v[i] = std::uint16_t(std::min(65535.0, s + noise[i] % 512));
      }
    }
  }
  return v;
}

// The plain reference: whether image point (px, py) is inside, written apart from roi.cpp
// (pnpoly's crossing rule for polygons).
bool inside(const Roi& r, double px, double py) {
  const QRectF b = r.points.boundingRect();
  if (r.kind == RoiKind::rectangle) {
    return px >= b.left() && px < b.right() && py >= b.top() && py < b.bottom();
  }
  if (r.kind == RoiKind::ellipse) {
    const double u = (px - b.center().x()) / (b.width() / 2),
                 v = (py - b.center().y()) / (b.height() / 2);
    return u * u + v * v <= 1;
  }
  bool in = false;
  const qsizetype n = r.points.size();
  for (qsizetype i = 0, j = n - 1; i < n; j = i++) {
    const QPointF a = r.points[i], c = r.points[j];
    if ((a.y() > py) != (c.y() > py) &&
        px < (c.x() - a.x()) * (py - a.y()) / (c.y() - a.y()) + a.x())
      in = !in;
  }
  return in;
}

struct Ref {
  std::uint64_t pixels = 0;
  double mean = 0, std = 0, min = 0, max = 0, sum = 0;
};

// Statistics of the pixels whose centres lie inside, over slices [z0, z1).
Ref reference(const std::vector<std::uint16_t>& v, std::size_t h, std::size_t w, const Roi& r,
              std::size_t z0, std::size_t z1) {
  Ref ref;
  ref.min = std::numeric_limits<double>::infinity();
  ref.max = -std::numeric_limits<double>::infinity();
  std::vector<double> in;
  for (std::size_t z = z0; z < z1; ++z) {
    for (std::size_t y = 0; y < h; ++y) {
      for (std::size_t x = 0; x < w; ++x) {
        if (!inside(r, double(x) + 0.5, double(y) + 0.5)) continue;
        const double val = v[(z * h + y) * w + x];
        in.push_back(val);
        ref.sum += val;
        ref.min = std::min(ref.min, val);
        ref.max = std::max(ref.max, val);
      }
    }
  }
  ref.pixels = in.size();
  ref.mean = ref.sum / double(in.size());
  double m2 = 0;
  for (double val : in) m2 += (val - ref.mean) * (val - ref.mean);
  ref.std = std::sqrt(m2 / double(in.size()));
  return ref;
}

// Bilinear between pixel centres, edges clamped: written from the formula, apart from roi.cpp.
double bilinear(const std::vector<std::uint16_t>& v, std::size_t z, std::size_t h, std::size_t w,
                double x, double y) {
  x = std::clamp(x - 0.5, 0.0, double(w - 1));
  y = std::clamp(y - 0.5, 0.0, double(h - 1));
  const std::size_t x0 = std::size_t(x), y0 = std::size_t(y);
  const std::size_t x1 = std::min(x0 + 1, w - 1), y1 = std::min(y0 + 1, h - 1);
  const double fx = x - double(x0), fy = y - double(y0);
  auto at = [&](std::size_t yy, std::size_t xx) { return double(v[(z * h + yy) * w + xx]); };
  return at(y0, x0) * (1 - fx) * (1 - fy) + at(y0, x1) * fx * (1 - fy) +
         at(y1, x0) * (1 - fx) * fy + at(y1, x1) * fx * fy;
}

void compare(const ui::RoiStats& s, const Ref& r) {
  QCOMPARE(s.pixels, r.pixels);
  QCOMPARE(s.count, r.pixels);
  QCOMPARE(s.sum, r.sum);  // uint16 sums are exact
  QCOMPARE(s.min, r.min);
  QCOMPARE(s.max, r.max);
  QVERIFY2(std::abs(s.mean - r.mean) <= 1e-9 * r.mean,
           qPrintable(QString::number(s.mean - r.mean)));
  QVERIFY2(std::abs(s.std - r.std) <= 1e-6 * r.std + 1e-9,
           qPrintable(QStringLiteral("%1 vs %2").arg(s.std).arg(r.std)));
}

}  // namespace

class TestRoi : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<BasicHost> host_;
  std::unique_ptr<QWidget> window_;
  ui::ImageView* view_ = nullptr;
  RoiOverlay* overlay_ = nullptr;
  ui::RoiPanel* panel_ = nullptr;
  ui::ProfilePanel* profile_ = nullptr;

  BasicHost& host() { return *host_; }
  QPoint at(QPointF image) const { return overlay_->widget_pos(image).toPoint(); }

  // Drags with the left button from image point a to b, through the middle.
  void drag(QPointF a, QPointF b) {
    QTest::mousePress(overlay_, Qt::LeftButton, {}, at(a));
    QTest::mouseMove(overlay_, at((a + b) / 2));
    QTest::mouseMove(overlay_, at(b));
    QTest::mouseRelease(overlay_, Qt::LeftButton, {}, at(b));
  }
  // The panel's statistics of ROI `id`, once measured.
  ui::RoiStats stats_of(int id) {
    [&] { QTRY_VERIFY_WITH_TIMEOUT(!panel_->busy(), 60000); }();
    for (qsizetype i = 0; i < panel_->rois().size(); ++i) {
      if (panel_->rois()[i].id == id) {
        [&] { QVERIFY2(panel_->errors()[i].isEmpty(), qPrintable(panel_->errors()[i])); }();
        return panel_->stats()[std::size_t(i)];
      }
    }
    return {};
  }
  Roi roi(int id) { return *overlay_->roi(overlay_->roi_layer(), id); }
  int add(const std::vector<std::uint16_t>& v, const Shape& s, const QString& name,
          bool calibrated = false) {
    ui::Layer l;
    l.name = name;
    l.host = HostArray::from(std::span<const std::uint16_t>(v), s);
    if (calibrated) {
      l.spacing =
          s.ndim() == 3 ? std::vector<double>{2.0, 0.25, 0.2} : std::vector<double>{0.25, 0.2};
      l.unit = QStringLiteral("um");
    }
    const int id = host().add_layer(l);
    [&] { QTRY_VERIFY_WITH_TIMEOUT(!view_->busy(), 60000); }();
    return id;
  }

 private slots:
  void init() {
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
    window_ = std::make_unique<QWidget>();
    auto* row = new QHBoxLayout(window_.get());
    auto* split = new QSplitter(Qt::Vertical);
    view_ = new ui::ImageView(host());
    overlay_ = new RoiOverlay(host(), view_);
    profile_ = new ui::ProfilePanel(host(), view_, overlay_);
    split->addWidget(view_);
    split->addWidget(profile_);
    split->setSizes({700, 260});
    row->addWidget(split, 3);
    panel_ = new ui::RoiPanel(host(), overlay_);
    row->addWidget(panel_, 2);
    window_->resize(1500, 960);
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
  }
  void cleanup() {
    window_.reset();
    host_.reset();
  }

  // The three shapes drawn on a 1024x768 uint16 image; the polygon (concave, five vertices) at
  // an odd zoom so that its vertices are not whole or half pixels.
  void shapes_match_a_reference_mask() {
    const std::size_t h = 768, w = 1024;
    const std::vector<std::uint16_t> v = cells(1, h, w);
    add(v, Shape{h, w}, QStringLiteral("cells"));
    QCOMPARE(overlay_->size(), view_->size());

    overlay_->set_tool(Tool::rectangle);
    drag({100.3, 200.2}, {340.6, 420.9});
    QCOMPARE(overlay_->rois(overlay_->roi_layer()).size(), 1);
    const Roi rect = roi(1);
    QCOMPARE(rect.kind, RoiKind::rectangle);
    // Corners on pixel edges, near where the mouse went.
    for (const QPointF& p : rect.points) QCOMPARE(p, QPointF(std::round(p.x()), std::round(p.y())));
    QVERIFY(std::abs(rect.bounds().left() - 100.3) <= 1.5 / view_->zoom() + 0.5);
    compare(stats_of(1), reference(v, h, w, rect, 0, 1));

    overlay_->set_tool(Tool::ellipse);
    drag({500, 100}, {700.7, 380.2});
    const Roi ell = roi(2);
    QCOMPARE(ell.kind, RoiKind::ellipse);
    compare(stats_of(2), reference(v, h, w, ell, 0, 1));

    // One pixel wide: at 4x, so that the drag spans exactly one pixel edge to the next.
    view_->set_zoom(4.0);
    view_->center_on(QPointF(800, 500));
    overlay_->set_tool(Tool::rectangle);
    drag({790.1, 450.2}, {791.1, 540.1});
    const Roi thin = roi(3);
    QCOMPARE(thin.bounds().width(), 1.0);
    QCOMPARE(thin.bounds().height(), 90.0);
    const ui::RoiStats ts = stats_of(3);
    QCOMPARE(ts.pixels, std::uint64_t(90));
    compare(ts, reference(v, h, w, thin, 0, 1));

    view_->set_zoom(1.37);
    view_->center_on(QPointF(400, 400));
    overlay_->set_tool(Tool::polygon);
    const QPointF pts[] = {{250, 300}, {480, 280}, {330, 390}, {470, 560}, {240, 520}};
    for (const QPointF& p : pts) QTest::mouseClick(overlay_, Qt::LeftButton, {}, at(p));
    QCOMPARE(overlay_->rois(overlay_->roi_layer()).size(), 3);  // not closed yet
    QTest::mouseDClick(overlay_, Qt::LeftButton, {}, at(pts[4]));
    const Roi poly = roi(4);
    QCOMPARE(poly.kind, RoiKind::polygon);
    QCOMPARE(poly.points.size(), 5);  // the double-click's vertex only once
    QVERIFY(poly.points[1].x() != std::round(poly.points[1].x()));
    const Ref pr = reference(v, h, w, poly, 0, 1);
    QVERIFY(pr.pixels > 10000);
    compare(stats_of(4), pr);
    // Concave: the notch at (330, 390) is outside.
    QVERIFY(!poly.contains({420, 400}));
    QVERIFY(poly.contains({300, 400}));

    // The table shows them, in pixels (no unit).
    QCOMPARE(panel_->table()->rowCount(), 4);
    QCOMPARE(panel_->area_header(), QStringLiteral("area (px)"));
    QCOMPARE(panel_->table()->item(3, 3)->text(), QString::number(pr.pixels));

    // Esc drops a polygon being drawn; Enter closes one.
    QTest::mouseClick(overlay_, Qt::LeftButton, {}, at({600, 600}));
    QTest::mouseClick(overlay_, Qt::LeftButton, {}, at({650, 600}));
    QTest::keyClick(view_, Qt::Key_Escape);
    QTest::mouseClick(overlay_, Qt::LeftButton, {}, at({600, 650}));
    QTest::mouseClick(overlay_, Qt::LeftButton, {}, at({680, 640}));
    QTest::mouseClick(overlay_, Qt::LeftButton, {}, at({640, 700}));
    QTest::keyClick(view_, Qt::Key_Return);
    QCOMPARE(overlay_->rois(overlay_->roi_layer()).size(), 5);
    QCOMPARE(roi(5).points.size(), 3);

    // Pointer: a drag inside the rectangle moves it (by whole pixels); the statistics follow.
    overlay_->set_tool(Tool::pointer);
    view_->fit();
    const QPointF c = rect.bounds().center();
    drag(c, c + QPointF(37.2, -20.4));
    const Roi moved = roi(1);
    QCOMPARE(moved.bounds().size(), rect.bounds().size());
    QVERIFY(moved.bounds().left() != rect.bounds().left());
    QCOMPARE(overlay_->selected(), 1);
    compare(stats_of(1), reference(v, h, w, moved, 0, 1));
    // Its second corner's handle reshapes it (snapped to pixel edges); the statistics follow.
    const QPointF corner = moved.points[1];
    drag(corner, corner + QPointF(-60.3, 45.2));
    const Roi reshaped = roi(1);
    QCOMPARE(reshaped.points[0], moved.points[0]);
    QVERIFY(reshaped.points[1] != moved.points[1]);
    QCOMPARE(reshaped.points[1],
             QPointF(std::round(reshaped.points[1].x()), std::round(reshaped.points[1].y())));
    compare(stats_of(1), reference(v, h, w, reshaped, 0, 1));
    // Delete removes the selected ROI (and not the layer).
    QTest::keyClick(view_, Qt::Key_Delete);
    QCOMPARE(overlay_->rois(overlay_->roi_layer()).size(), 4);
    QVERIFY(!overlay_->roi(overlay_->roi_layer(), 1));
    QCOMPARE(host().layer_ids().size(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(panel_->table()->rowCount(), 4, 30000);

    // CSV: a header and a line per ROI with the numbers shown.
    const QString csv_path = tmp_.filePath(QStringLiteral("rois.csv"));
    QSignalSpy exported(panel_, &ui::RoiPanel::exported);
    panel_->export_csv(csv_path);
    QVERIFY(exported.wait(30000));
    QFile f(csv_path);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QStringList lines = QString::fromUtf8(f.readAll()).trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 5);
    QCOMPARE(lines[0],
             QStringLiteral("roi,shape,slice,pixels,area,area_unit,mean,std,min,max,sum"));
    const QStringList cells4 = lines[3].split(QLatin1Char(','));
    QCOMPARE(cells4[0], QStringLiteral("4"));
    QCOMPARE(cells4[1], QStringLiteral("polygon"));
    QCOMPARE(cells4[3].toULongLong(), pr.pixels);
    QCOMPARE(cells4[10].toDouble(), pr.sum);
  }

  // A stack: a ROI belongs to the slice it was drawn on, or to every slice; statistics cover
  // those slices. Calibrated: the area is in µm².
  void stack_slices_and_units() {
    const std::size_t d = 12, h = 300, w = 410;
    const std::vector<std::uint16_t> v = cells(d, h, w);
    add(v, Shape{d, h, w}, QStringLiteral("stack"), true);
    view_->set_slice(7);
    overlay_->set_tool(Tool::ellipse);
    drag({60, 50}, {200.4, 170.2});
    const Roi e = roi(1);
    QCOMPARE(e.plane, 7);
    compare(stats_of(1), reference(v, h, w, e, 7, 8));
    QCOMPARE(panel_->area_header(), QStringLiteral("area (\u00b5m\u00b2)"));
    const double area = double(stats_of(1).pixels) * 0.2 * 0.25;
    QCOMPARE(panel_->table()->item(0, 4)->text(), QString::number(area, 'g', 6));
    QVERIFY(panel_->csv().contains(QStringLiteral(",um^2,")));
    // Shown on its slice only.
    view_->set_slice(3);
    QTRY_VERIFY_WITH_TIMEOUT(!view_->busy(), 60000);
    // All slices: the selected ROI now covers the stack.
    auto* all = panel_->findChild<QCheckBox*>(QStringLiteral("roi_all_planes"));
    QVERIFY(all);
    overlay_->select(1);
    all->setChecked(true);
    QCOMPARE(roi(1).plane, -1);
    const ui::RoiStats s = stats_of(1);
    QCOMPARE(s.planes, int(d));
    compare(s, reference(v, h, w, roi(1), 0, d));
    QCOMPARE(panel_->table()->item(0, 4)->text(), QString::number(area, 'g', 6));  // per slice
    // New ROIs take it too; off again gives the slice on screen.
    overlay_->set_tool(Tool::polygon);
    for (const QPointF p : {QPointF(250, 60), QPointF(390, 90), QPointF(300, 280)})
      QTest::mouseClick(overlay_, Qt::LeftButton, {}, at(p));
    QTest::keyClick(view_, Qt::Key_Return);
    QCOMPARE(roi(2).plane, -1);
    compare(stats_of(2), reference(v, h, w, roi(2), 0, d));
    all->setChecked(false);
    QCOMPARE(roi(2).plane, 3);
    compare(stats_of(2), reference(v, h, w, roi(2), 3, 4));
    // Rectangles take the exact path (a region view of the stack, no mask): one slice, then all.
    overlay_->set_tool(Tool::rectangle);
    drag({300.2, 180.7}, {401.4, 297.1});
    QCOMPARE(roi(3).plane, 3);
    compare(stats_of(3), reference(v, h, w, roi(3), 3, 4));
    all->setChecked(true);
    QCOMPARE(roi(3).plane, -1);
    compare(stats_of(3), reference(v, h, w, roi(3), 0, d));
  }

  // Crop: the bounding box, as core's crop (recorded in the workflow, undone with the stack);
  // with "set to 0" the pixels outside the ellipse are 0 and the step is not recorded.
  void crop_and_undo() {
    const std::size_t h = 768, w = 1024;
    const std::vector<std::uint16_t> v = cells(1, h, w);
    const int src = add(v, Shape{h, w}, QStringLiteral("cells"), true);
    ui::Layer shown = host().layer(src);  // a channel shown additively: so is its crop
    shown.additive = true;
    host().replace_layer(src, shown);
    overlay_->set_tool(Tool::ellipse);
    drag({300, 200}, {421, 330});
    const Roi e = roi(1);
    const QRect box = ui::roi_box(e, int(w), int(h));
    QSignalSpy done(panel_, &ui::RoiPanel::crop_done);
    panel_->crop();
    QVERIFY(done.wait(60000));
    const int kept = done.first().at(0).toInt();
    QVERIFY2(kept >= 0, qPrintable(done.first().at(1).toString()));
    ui::Layer c = host().layer(kept);
    QCOMPARE(c.shape(), (Shape{std::size_t(box.height()), std::size_t(box.width())}));
    const HostArray ch = c.array.pull();
    const auto cv = ch.as<std::uint16_t>();
    for (int y = 0; y < box.height(); ++y) {
      for (int x = 0; x < box.width(); ++x) {
        QCOMPARE(cv[std::size_t(y * box.width() + x)],
                 v[std::size_t(box.y() + y) * w + std::size_t(box.x() + x)]);
      }
    }
    QCOMPARE(c.unit, QStringLiteral("um"));
    QVERIFY(c.additive);
    QCOMPARE(c.origin, (std::vector<double>{box.y() * 0.25, box.x() * 0.2}));
    QCOMPARE(host().workflow().steps().size(), 1);
    QCOMPARE(host().workflow().steps()[0].operation, QStringLiteral("crop"));
    QCOMPARE(std::get<double>(host().workflow().steps()[0].params.at("origin_x")), double(box.x()));
    QCOMPARE(host().workflow().steps()[0].output, c.name);
    host().undo_stack()->undo();
    QVERIFY(!host().has_layer(kept));
    QVERIFY(host().workflow().steps().isEmpty());
    host().undo_stack()->redo();
    QVERIFY(host().has_layer(kept));
    QCOMPARE(host().workflow().steps().size(), 1);

    host().set_current_layer(src);
    QCOMPARE(overlay_->rois(overlay_->roi_layer()).size(), 1);  // kept per layer
    panel_->set_zero_outside(true);
    done.clear();
    panel_->crop(1);
    QVERIFY(done.wait(60000));
    const int zeroed = done.first().at(0).toInt();
    QVERIFY2(zeroed >= 0, qPrintable(done.first().at(1).toString()));
    // Held: a span into a temporary HostArray would dangle.
    const HostArray zh = host().layer(zeroed).array.pull();
    const auto zv = zh.as<std::uint16_t>();
    std::size_t outside = 0;
    for (int y = 0; y < box.height(); ++y) {
      for (int x = 0; x < box.width(); ++x) {
        const bool in = inside(e, box.x() + x + 0.5, box.y() + y + 0.5);
        outside += in ? 0 : 1;
        QCOMPARE(
            zv[std::size_t(y * box.width() + x)],
            in ? v[std::size_t(box.y() + y) * w + std::size_t(box.x() + x)] : std::uint16_t(0));
      }
    }
    QVERIFY(outside > 1000);
    QCOMPARE(host().workflow().steps().size(), 1);  // not recorded
    QVERIFY(host().layer(zeroed).name.contains(QStringLiteral("outside 0")));
    host().undo_stack()->undo();
    QVERIFY(!host().has_layer(zeroed));
    QVERIFY(host().has_layer(kept));
  }

  // The profile against scipy.ndimage.map_coordinates(order=1, mode="nearest") at the pixel
  // centres, and a 3-pixel-wide one against the plain bilinear mean; it follows the slice, and
  // its distances are in µm on a calibrated stack.
  void line_profile_matches_scipy() {
    const std::size_t d = 5, h = 400, w = 520;
    const std::vector<std::uint16_t> v = cells(d, h, w);
    add(v, Shape{d, h, w}, QStringLiteral("stack"), true);
    view_->set_slice(2);
    overlay_->set_tool(Tool::line);
    const QPointF a0(30.4, 60.2), b0(470.9, 333.3);
    QSignalSpy profiled(profile_, &ui::ProfilePanel::profiled);
    drag(a0, b0);
    QVERIFY(overlay_->line());
    const QPointF a = overlay_->line()->points[0], b = overlay_->line()->points[1];
    QVERIFY((a - a0).manhattanLength() < 2 && (b - b0).manhattanLength() < 2);
    QTRY_VERIFY_WITH_TIMEOUT(!profile_->busy() && !profile_->plot()->y().empty(), 60000);
    const std::vector<double> got = profile_->plot()->y();
    const std::size_t n = std::size_t(std::ceil(std::hypot(b.x() - a.x(), b.y() - a.y()))) + 1;
    QCOMPARE(got.size(), n);

    // Distances in µm: the line's length with 0.2 µm in x and 0.25 µm in y.
    const double um = std::hypot((b.x() - a.x()) * 0.2, (b.y() - a.y()) * 0.25);
    QVERIFY(std::abs(profile_->plot()->x().back() - um) < 1e-9);
    QVERIFY(profile_->csv().startsWith(QStringLiteral("distance_\u00b5m,value\n")));
    // Or in pixels, on request.
    profile_->pixels_box()->setChecked(true);
    QTRY_VERIFY_WITH_TIMEOUT(
        !profile_->busy() && profile_->csv().startsWith(QStringLiteral("distance_px,")), 30000);
    QVERIFY(std::abs(profile_->plot()->x().back() - std::hypot(b.x() - a.x(), b.y() - a.y())) <
            1e-9);
    profile_->pixels_box()->setChecked(false);
    QTRY_VERIFY_WITH_TIMEOUT(
        !profile_->busy() && std::abs(profile_->plot()->x().back() - um) < 1e-9, 30000);

    const QString raw = tmp_.filePath(QStringLiteral("stack.raw"));
    QFile f(raw);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(reinterpret_cast<const char*>(v.data()), qint64(v.size() * 2));
    f.close();
    const char* script =
        "import sys, numpy as np\n"
        "from scipy import ndimage\n"
        "d, h, w, z, n = (int(s) for s in sys.argv[2:7])\n"
        "ax, ay, bx, by = (float(s) for s in sys.argv[7:11])\n"
        "img = np.fromfile(sys.argv[1], dtype='<u2').reshape(d, h, w)[z].astype(np.float64)\n"
        "t = np.linspace(0, 1, n)\n"
        "xs, ys = ax + (bx - ax) * t - 0.5, ay + (by - ay) * t - 0.5\n"
        "print(' '.join(repr(float(x)) for x in ndimage.map_coordinates(img, [ys, xs], order=1, "
        "mode='nearest')))\n";
    auto scipy = [&](int z) {
      const test::ProcessResult py = test::run_process(
          QStringLiteral("/usr/bin/python3"),
          {QStringLiteral("-c"), QString::fromLatin1(script), raw, QString::number(d),
           QString::number(h), QString::number(w), QString::number(z), QString::number(n),
           QString::number(a.x(), 'g', 17), QString::number(a.y(), 'g', 17),
           QString::number(b.x(), 'g', 17), QString::number(b.y(), 'g', 17)},
          {.merge_channels = true});
      std::vector<double> out;
      if (py.code != 0) {
        qWarning("%s", py.out.constData());
        return out;
      }
      for (const QByteArray& s : py.out.trimmed().split(' ')) out.push_back(s.toDouble());
      return out;
    };
    const std::vector<double> ref = scipy(2);
    if (ref.empty()) QSKIP("python3-scipy is missing or failed");
    QCOMPARE(ref.size(), n);
    for (std::size_t i = 0; i < n; ++i)
      QVERIFY(std::abs(got[i] - ref[i]) <= 1e-6 * std::abs(ref[i]) + 1e-9);

    // The slice changes: the profile follows.
    view_->set_slice(4);
    QTRY_VERIFY_WITH_TIMEOUT(!profile_->busy() && profile_->plot()->y() != got, 60000);
    const std::vector<double> ref4 = scipy(4);
    const std::vector<double> got4 = profile_->plot()->y();
    for (std::size_t i = 0; i < n; ++i)
      QVERIFY(std::abs(got4[i] - ref4[i]) <= 1e-6 * std::abs(ref4[i]) + 1e-9);

    // Three pixels wide: the mean of three parallel lines one pixel apart.
    profile_->width_box()->setValue(3);
    QTRY_VERIFY_WITH_TIMEOUT(!profile_->busy() && profile_->plot()->y() != got4, 60000);
    const std::vector<double> wide = profile_->plot()->y();
    const double len = std::hypot(b.x() - a.x(), b.y() - a.y());
    const QPointF nrm(-(b.y() - a.y()) / len, (b.x() - a.x()) / len);
    for (std::size_t i = 0; i < n; ++i) {
      const QPointF p = a + (b - a) * (double(i) / double(n - 1));
      double s = 0;
      for (int k = -1; k <= 1; ++k) {
        const QPointF q = p + nrm * k;
        s += bilinear(v, 4, h, w, q.x(), q.y());
      }
      QVERIFY(std::abs(wide[i] - s / 3) <= 1e-9 * s);
    }

    // Hover shows the value under the cursor.
    ui::ProfilePlot* plot = profile_->plot();
    const int col = int(plot->column_of(plot->x()[n / 2]));
    QTest::mouseMove(plot, QPoint(col, plot->height() / 2));
    QTRY_VERIFY(plot->hovered() >= 0);
    QVERIFY(std::abs(plot->hovered() - int(n / 2)) <= 1);
    QVERIFY(plot->hover_text().contains(
        QString::number(plot->y()[std::size_t(plot->hovered())], 'g', 8)));

    // CSV export.
    const QString csv_path = tmp_.filePath(QStringLiteral("profile.csv"));
    QSignalSpy exported(profile_, &ui::ProfilePanel::exported);
    profile_->export_csv(csv_path);
    QVERIFY(exported.wait(30000));
    QFile c(csv_path);
    QVERIFY(c.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(c.readAll()).trimmed().split(QLatin1Char('\n')).size(), int(n) + 1);
  }

  // Statistics on every dtype: the masked path (float32 or float64 on the device) and the exact
  // rectangle path against the plain reference, here through measure_roi directly.
  void measure_every_dtype() {
    const Shape s{37, 53};
    Roi ell;
    ell.kind = RoiKind::ellipse;
    ell.points = QPolygonF({QPointF(3, 4), QPointF(40, 31)});
    Roi rect;
    rect.points = QPolygonF({QPointF(5, 2), QPointF(6, 30)});
    for (DType t : kAllDTypes) {
      if (t == DType::f64 && !default_device().supports_fp64()) continue;
      const HostArray hv = visit_dtype(t, [&](auto zero) {
        using T = decltype(zero);
        std::vector<T> vals = test::random_values<T>(s.elements());
        if constexpr (sizeof(T) == 8 && std::is_integral_v<T>) {
          for (T& x : vals) x = T(x % 1000000);  // exact in float64
        }
        return HostArray::from(std::span<const T>(vals), s);
      });
      const Array arr = Array::push(hv, default_device());
      for (const Roi& r : {ell, rect}) {
        const ui::RoiStats got = ui::measure_roi(arr, r);
        double sum = 0, mn = std::numeric_limits<double>::infinity(),
               mx = -std::numeric_limits<double>::infinity();
        std::vector<double> in;
        for (std::size_t y = 0; y < s.height(); ++y) {
          for (std::size_t x = 0; x < s.width(); ++x) {
            if (!inside(r, double(x) + 0.5, double(y) + 0.5)) continue;
            const double val = ui::value_at(hv, 0, y, x);
            in.push_back(val);
            sum += val;
            mn = std::min(mn, val);
            mx = std::max(mx, val);
          }
        }
        const double mean = sum / double(in.size());
        double m2 = 0;
        for (double val : in) m2 += (val - mean) * (val - mean);
        const QByteArray what =
            QByteArray(name(t).data()) + " " + qPrintable(ui::kind_name(r.kind));
        QVERIFY2(got.pixels == in.size(), what.constData());
        QVERIFY2(got.min == mn && got.max == mx, what.constData());
        const double tol = is_float(t) ? 1e-5 : 1e-9;
        QVERIFY2(std::abs(got.sum - sum) <= tol * std::abs(sum) + tol, what.constData());
        QVERIFY2(std::abs(got.mean - mean) <= tol * std::abs(mean) + tol, what.constData());
        QVERIFY2(std::abs(got.std - std::sqrt(m2 / double(in.size()))) <=
                     1e-5 * std::sqrt(m2 / double(in.size())),
                 what.constData());
      }
    }
    // A line has no area; a ROI off the image measures nothing.
    Roi line;
    line.kind = RoiKind::line;
    line.points = QPolygonF({QPointF(0, 0), QPointF(5, 5)});
    const Array a = Array::push(HostArray::from(test::random_values<float>(s.elements()), s));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, ui::measure_roi(a, line));
    Roi off;
    off.points = QPolygonF({QPointF(100, 100), QPointF(120, 130)});
    QCOMPARE(ui::measure_roi(a, off).pixels, std::uint64_t(0));
    QVERIFY(std::isnan(ui::measure_roi(a, off).mean));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, ui::crop_to_roi(a, off, false));
  }

  // A 64x512x512 stack with an all-slices polygon: every voxel of the prism, against the plain
  // reference.
  void large_stack() {
    const std::size_t d = 64, h = 512, w = 512;
    const std::vector<std::uint16_t> v = cells(d, h, w);
    const Array a = Array::push(v, Shape{d, h, w});
    Roi p;
    p.kind = RoiKind::polygon;
    p.points = QPolygonF({QPointF(40.3, 30.7), QPointF(470.2, 61.9), QPointF(260.6, 250.1),
                          QPointF(455.5, 480.4), QPointF(20.8, 400.2)});
    QElapsedTimer t;
    t.start();
    const ui::RoiStats s = ui::measure_roi(a, p);
    qInfo("measure_roi: %lld ms for %llu voxels", t.elapsed(),
          static_cast<unsigned long long>(s.pixels));
    compare(s, reference(v, h, w, p, 0, d));
  }

  // Sessions keep ROIs as JSON: the round trip, and a broken entry named.
  void roi_json_round_trip() {
    Roi p;
    p.kind = RoiKind::polygon;
    p.points = QPolygonF({QPointF(1.5, 2), QPointF(7, 3.25), QPointF(4, 9)});
    p.plane = 3;
    p.id = 7;
    const Roi q = Roi::from_json(p.to_json());
    QCOMPARE(q.kind, p.kind);
    QCOMPARE(q.points, p.points);
    QCOMPARE(q.plane, 3);
    QCOMPARE(q.id, 7);
    QJsonObject bad = p.to_json();
    bad[QStringLiteral("kind")] = QStringLiteral("star");
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Roi::from_json(bad));
  }
};

QTEST_MAIN(TestRoi)
#include "test_roi.moc"
