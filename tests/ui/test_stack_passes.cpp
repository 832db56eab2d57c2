// Whole-stack tools on file-backed layers (issues 16 and 18): the histogram, ROI statistics,
// the xz/yz planes and the maximum over z of a TIFF stack read from its file in slabs, against
// numpy and tifffile on the same file:
//  - a 64 x 512 x 512 uint16 stack (32 MiB, slabs of 8 MB: 32 slabs for core's folds, 4 for the
//    host passes) and an odd 23 x 131 x 97 float32 one (slabs of 512 kB: 12 and 3);
//  - histogram bins, ROI statistics (rectangle, ellipse, polygon; on one slice and on all),
//    the xz and yz planes byte for byte, the maximum over z byte for byte;
//  - a second request comes from the cache, and the widgets say so;
//  - Cancel in the middle leaves no result and nothing cached;
//  - the turning 3D view's block-maximum copy of an odd 37 x 129 x 211 stack against a plain
//    block maximum, the view turned to yaw 90 against render_mip of that copy, no second read
//    of the file when it turns on, and Cancel/Retry of the copy;
//  - automatic contrast of a file-backed stack whose planes differ in range: the whole stack's
//    percentiles (sorted in the test), from the layer list (Ctrl+A's call) and the dock;
//  - the widgets (Histogram dock, ROI panel, orthogonal views, 3D view) on a file-backed layer,
//    and the longest pause of the event loop while all of them read the file (< 50 ms).
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "gpix/basic_host.h"
#include "gpix/error.h"
#include "gpix/filters/reductions.h"
#include "gpix/io.h"
#include "gpix/slab_files.h"
#include "gpix/ui/histogram_panel.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/layer_commands.h"
#include "gpix/ui/layer_list.h"
#include "gpix/ui/mip_view.h"
#include "gpix/ui/ortho_views.h"
#include "gpix/ui/render.h"
#include "gpix/ui/roi_overlay.h"
#include "gpix/ui/roi_panel.h"
#include "gpix/ui/stack_contrast.h"
#include "gpix/ui/stack_passes.h"
#include "support/process.h"
#include "ui/image_words.h"

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::test::words;
using gpix::ui::Plane;
using gpix::ui::Roi;
using gpix::ui::RoiKind;

namespace {

// A source that takes its time: a slow disk, so that Cancel lands in the middle of a pass (the
// test's 32 MiB file is read from the page cache in well under a second).
class SlowSource final : public SlabSource {
 public:
  SlowSource(std::unique_ptr<SlabSource> in, int ms) : in_(std::move(in)), ms_(ms) {}
  Shape shape() const override { return in_->shape(); }
  DType dtype() const override { return in_->dtype(); }
  void read(std::size_t from, std::size_t to, std::byte* dst) override {
    QThread::msleep(static_cast<unsigned long>(ms_));
    in_->read(from, to, dst);
  }

 private:
  std::unique_ptr<SlabSource> in_;
  int ms_;
};

// A TIFF read plane by plane through gpix_io, as the gpix plugin's reader makes it.
class TiffStackFile final : public ui::StackFile {
 public:
  explicit TiffStackFile(const QString& path, const io::FileSlabSource& src, int delay_ms = 0)
      : StackFile(path, QStringLiteral("TIFF"), src.shape(), src.dtype()), delay_ms_(delay_ms) {}
  static std::shared_ptr<TiffStackFile> open_file(const QString& path, int delay_ms = 0) {
    auto src = io::open_slabs(path.toStdString());
    if (!src) throw IoError("cannot stream " + path.toStdString(), path.toStdString());
    return std::make_shared<TiffStackFile>(path, *src, delay_ms);
  }
  std::unique_ptr<SlabSource> open() const override {
    ++opens_;
    std::unique_ptr<SlabSource> src = io::open_slabs(path().toStdString());
    if (delay_ms_ > 0) return std::make_unique<SlowSource>(std::move(src), delay_ms_);
    return src;
  }
  std::unique_ptr<SlabSink> create(const QString&, const std::vector<double>&,
                                   const std::vector<double>&, const QString&,
                                   bool) const override {
    throw InvalidArgument("not needed here");
  }
  std::shared_ptr<StackFile> open_result(const QString&) const override {
    throw InvalidArgument("not needed here");
  }
  // Passes over the file so far (each opens it once).
  int opens() const { return opens_; }

 private:
  int delay_ms_ = 0;
  mutable std::atomic<int> opens_{0};
};

struct Case {
  const char* name;
  Shape shape;
  DType dtype;
  std::uint64_t budget;  // slab budget
  int slice;             // the slice of the one-slice ROIs
  std::size_t y, x;      // the side planes' point
};

const Case kCases[] = {
    {"u16", Shape{64, 512, 512}, DType::u16, 8ull << 20, 41, 300, 123},
    {"f32", Shape{23, 131, 97}, DType::f32, 512ull << 10, 17, 64, 95},
};

// A 2D image (rows are its slabs) for ROI statistics.
const Shape k2d{1001, 777};

// Three ROIs over an image of (h, w): a rectangle, an ellipse and a concave polygon whose
// vertices are not on pixel edges.
std::map<QString, Roi> rois_for(std::size_t h, std::size_t w) {
  const double W = double(w), H = double(h);
  Roi rect, ell, poly;
  rect.kind = RoiKind::rectangle;
  rect.points = QPolygonF({QPointF(std::round(W * 0.1), std::round(H * 0.2)),
                           QPointF(std::round(W * 0.55), std::round(H * 0.7))});
  ell.kind = RoiKind::ellipse;
  ell.points = QPolygonF({QPointF(std::round(W * 0.3), std::round(H * 0.25)),
                          QPointF(std::round(W * 0.9), std::round(H * 0.8))});
  poly.kind = RoiKind::polygon;
  poly.points = QPolygonF({QPointF(W * 0.05 + 0.3, H * 0.1 + 0.7), QPointF(W * 0.8 + 0.2, H * 0.15),
                           QPointF(W * 0.5 + 0.4, H * 0.45 + 0.1), QPointF(W * 0.9, H * 0.9 + 0.3),
                           QPointF(W * 0.15 + 0.6, H * 0.85)});
  return {{QStringLiteral("rectangle"), rect},
          {QStringLiteral("ellipse"), ell},
          {QStringLiteral("polygon"), poly}};
}

// The ROI's pixels over the whole (h, w) image, one byte each (the viewer's own mask rule,
// tested against a plain reference in test_ui_roi), for numpy.
QByteArray full_mask(const Roi& roi, std::size_t h, std::size_t w) {
  QByteArray out(qsizetype(h * w), '\0');
  const QRect box = ui::roi_box(roi, int(w), int(h));
  const std::vector<std::uint8_t> m = ui::roi_mask(roi, box);
  for (int y = 0; y < box.height(); ++y)
    for (int x = 0; x < box.width(); ++x)
      out[qsizetype(std::size_t(box.y() + y) * w + std::size_t(box.x() + x))] =
          char(m[std::size_t(y * box.width() + x)]);
  return out;
}

HostArray read_raw(const QString& path, const Shape& s, DType t) {
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return {};
  const QByteArray b = f.readAll();
  HostArray h = HostArray::empty(s, t);
  if (std::size_t(b.size()) != h.bytes()) return {};
  std::memcpy(h.data(), b.constData(), h.bytes());
  return h;
}

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.valid() && b.valid() && a.bytes() == b.bytes() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

bool close(double got, double want, double rel) {
  if (std::isnan(want)) return std::isnan(got);
  return std::abs(got - want) <= rel * std::max(1.0, std::abs(want));
}

// The longest gap between turns of the event loop, ticking every 5 ms.
struct StallMeter {
  QElapsedTimer tick;
  qint64 worst = 0;
  QTimer timer;
  StallMeter() {
    timer.setTimerType(Qt::PreciseTimer);
    QObject::connect(&timer, &QTimer::timeout, [this] { worst = std::max(worst, tick.restart()); });
    timer.start(5);
    tick.start();
  }
};

// An odd-shaped uint16 stack: noise up to 999 and, every few hundred voxels, one bright voxel
// (a point a block mean would wash out and a block maximum keeps).
HostArray odd_stack(const Shape& s) {
  HostArray a = HostArray::empty(s, DType::u16);
  auto* p = reinterpret_cast<std::uint16_t*>(a.data());
  std::uint32_t r = 16;
  for (std::size_t i = 0; i < a.elements(); ++i) {
    r = r * 1664525u + 1013904223u;
    p[i] = std::uint16_t((r >> 8) % 1000);
    if ((r >> 4) % 397 == 0) p[i] = std::uint16_t(20000 + (r >> 16) % 40000);
  }
  return a;
}

// The plain reference of stack_block_max: each output voxel loops over its block (clipped at
// the far edges), as numpy's a[z0:z0+f, y0:y0+f, x0:x0+f].max() would.
HostArray block_max_reference(const HostArray& a, std::size_t f) {
  const std::size_t d = a.shape()[0], h = a.shape()[1], w = a.shape()[2];
  const std::size_t od = (d + f - 1) / f, oh = (h + f - 1) / f, ow = (w + f - 1) / f;
  HostArray out = HostArray::empty(Shape{od, oh, ow}, DType::u16);
  const auto* in = reinterpret_cast<const std::uint16_t*>(a.data());
  auto* o = reinterpret_cast<std::uint16_t*>(out.data());
  for (std::size_t bz = 0; bz < od; ++bz)
    for (std::size_t by = 0; by < oh; ++by)
      for (std::size_t bx = 0; bx < ow; ++bx) {
        std::uint16_t m = 0;
        for (std::size_t z = bz * f; z < std::min(d, bz * f + f); ++z)
          for (std::size_t y = by * f; y < std::min(h, by * f + f); ++y)
            for (std::size_t x = bx * f; x < std::min(w, bx * f + f); ++x)
              m = std::max(m, in[(z * h + y) * w + x]);
        o[(bz * oh + by) * ow + bx] = m;
      }
  return out;
}

QString pass_text(QWidget* w) {
  auto* l = w->findChild<QLabel*>(QStringLiteral("pass_text"));
  return l ? l->text() : QString();
}

}  // namespace

class TestStackPasses : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QJsonObject ref_;  // what numpy says, per case
  std::unique_ptr<BasicHost> host_;

  QString file_of(const Case& c) const {
    return tmp_.filePath(QStringLiteral("%1.tif").arg(QLatin1String(c.name)));
  }
  QJsonObject ref(const Case& c) const { return ref_.value(QLatin1String(c.name)).toObject(); }
  void use_budget(const Case& c) {
    ui::LargeStackPolicy p;
    p.slab_budget_bytes = c.budget;
    ui::set_large_stack_policy(p);
  }
  std::shared_ptr<ui::StackFile> open(const Case& c) {
    use_budget(c);
    return TiffStackFile::open_file(file_of(c));
  }
  int add_file_layer(const Case& c, std::shared_ptr<ui::StackFile> file) {
    ui::Layer l;
    l.name = QLatin1String(c.name);
    l.file = std::move(file);
    const QJsonObject r = ref(c);
    l.contrast_min = r.value(QStringLiteral("min")).toDouble();
    l.contrast_max = r.value(QStringLiteral("max")).toDouble();
    return host_->add_layer(l);
  }
  std::vector<std::uint64_t> numpy_counts(const Case& c) const {
    std::vector<std::uint64_t> out;
    for (const auto v : ref(c).value(QStringLiteral("hist")).toArray())
      out.push_back(std::uint64_t(v.toDouble()));
    return out;
  }
  void compare_stats(const ui::RoiStats& got, const QJsonObject& want, const QString& what) {
    QVERIFY2(got.pixels == std::uint64_t(want.value(QStringLiteral("pixels")).toDouble()),
             qPrintable(what + QStringLiteral(" pixels %1").arg(got.pixels)));
    QVERIFY2(got.count == std::uint64_t(want.value(QStringLiteral("count")).toDouble()),
             qPrintable(what));
    QVERIFY2(got.min == want.value(QStringLiteral("min")).toDouble(),
             qPrintable(what + QStringLiteral(" min %1").arg(got.min)));
    QVERIFY2(got.max == want.value(QStringLiteral("max")).toDouble(),
             qPrintable(what + QStringLiteral(" max %1").arg(got.max)));
    QVERIFY2(close(got.sum, want.value(QStringLiteral("sum")).toDouble(), 1e-9),
             qPrintable(what + QStringLiteral(" sum %1 vs %2")
                                   .arg(got.sum, 0, 'g', 17)
                                   .arg(want.value(QStringLiteral("sum")).toDouble(), 0, 'g', 17)));
    QVERIFY2(close(got.mean, want.value(QStringLiteral("mean")).toDouble(), 1e-9),
             qPrintable(what + QStringLiteral(" mean %1").arg(got.mean, 0, 'g', 17)));
    QVERIFY2(close(got.std, want.value(QStringLiteral("std")).toDouble(), 1e-6),
             qPrintable(what + QStringLiteral(" std %1 vs %2")
                                   .arg(got.std, 0, 'g', 17)
                                   .arg(want.value(QStringLiteral("std")).toDouble(), 0, 'g', 17)));
  }

 private slots:
  void initTestCase() {
    // The masks of the ROIs, for numpy; then the stacks, written by tifffile, and numpy's
    // numbers of them.
    QJsonArray spec;
    for (const Case& c : kCases) {
      const std::size_t h = c.shape.height(), w = c.shape.width();
      QJsonArray names;
      for (const auto& [name, roi] : rois_for(h, w)) {
        QFile f(tmp_.filePath(QStringLiteral("%1_%2.mask").arg(QLatin1String(c.name), name)));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(full_mask(roi, h, w));
        names.append(name);
      }
      spec.append(
          QJsonObject{{QStringLiteral("name"), QLatin1String(c.name)},
                      {QStringLiteral("shape"), QJsonArray{int(c.shape.depth()), int(h), int(w)}},
                      {QStringLiteral("slice"), c.slice},
                      {QStringLiteral("y"), int(c.y)},
                      {QStringLiteral("x"), int(c.x)},
                      {QStringLiteral("rois"), names}});
    }
    {
      // A 2D float32 image whose slabs are rows, for the ROI statistics.
      QJsonArray names;
      for (const auto& [name, roi] : rois_for(k2d.height(), k2d.width())) {
        QFile f(tmp_.filePath(QStringLiteral("f32_2d_%1.mask").arg(name)));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(full_mask(roi, k2d.height(), k2d.width()));
        names.append(name);
      }
      spec.append(
          QJsonObject{{QStringLiteral("name"), QStringLiteral("f32_2d")},
                      {QStringLiteral("shape"), QJsonArray{int(k2d.height()), int(k2d.width())}},
                      {QStringLiteral("rois"), names}});
    }
    const QString script = QStringLiteral(R"(
import json, os, sys, numpy as np, tifffile
out, spec = sys.argv[1], json.loads(sys.argv[2])
res = {}
for c in spec:
    rng = np.random.default_rng(16)
    if len(c['shape']) == 2:
        h, w = c['shape']
        a = rng.normal(100, 30, (h, w)).astype(np.float32)
        path = os.path.join(out, c['name'] + '.tif')
        tifffile.imwrite(path, a)
        a = tifffile.imread(path)
        r = {}
        for roi in c['rois']:
            m = np.fromfile(os.path.join(out, '%s_%s.mask' % (c['name'], roi)), np.uint8).reshape(h, w) > 0
            v = a[m].astype(np.float64)
            r[roi] = {'pixels': int(m.sum()), 'count': int(v.size), 'min': float(v.min()),
                      'max': float(v.max()), 'sum': float(v.sum()), 'mean': float(v.mean()),
                      'std': float(v.std())}
        res[c['name']] = r
        continue
    name, (d, h, w) = c['name'], c['shape']
    if name == 'u16':
        # A light-sheet-like stack: gamma noise, a bright blob that moves with z, a gradient.
        yy, xx = np.mgrid[0:h, 0:w]
        planes = []
        for z in range(d):
            cy, cx = h * (0.3 + 0.4 * z / d), w * (0.7 - 0.4 * z / d)
            blob = 20000 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * 40.0 ** 2))
            p = rng.gamma(2.0, 300.0, (h, w)) + blob + xx * 3 + z * 50
            planes.append(np.clip(p, 0, 65535).astype(np.uint16))
        a = np.stack(planes)
    else:
        a = rng.normal(100, 30, (d, h, w)).astype(np.float32)
    path = os.path.join(out, name + '.tif')
    tifffile.imwrite(path, a)
    a = tifffile.imread(path)
    mn, mx = float(a.min()), float(a.max())
    counts, _ = np.histogram(a, bins=256, range=(mn, mx))
    r = {'min': mn, 'max': mx, 'hist': [int(v) for v in counts]}
    for roi in c['rois']:
        m = np.fromfile(os.path.join(out, '%s_%s.mask' % (name, roi)), np.uint8).reshape(h, w) > 0
        for key, v, planes in (('slice', a[c['slice']][m], 1), ('all', a[:, m], d)):
            v = v.astype(np.float64).ravel()
            r['%s %s' % (roi, key)] = {'pixels': int(m.sum()) * planes, 'count': int(v.size),
                'min': float(v.min()), 'max': float(v.max()), 'sum': float(v.sum()),
                'mean': float(v.mean()), 'std': float(v.std())}
    np.ascontiguousarray(a[:, c['y'], :]).tofile(os.path.join(out, name + '.xz'))
    np.ascontiguousarray(a[:, :, c['x']].T).tofile(os.path.join(out, name + '.yz'))
    a.max(axis=0).tofile(os.path.join(out, name + '.mip'))
    res[name] = r
json.dump(res, open(os.path.join(out, 'ref.json'), 'w'))
)");
    const auto r =
        test::run_process(QStringLiteral("/usr/bin/python3"),
                          {QStringLiteral("-c"), script, tmp_.path(),
                           QString::fromUtf8(QJsonDocument(spec).toJson(QJsonDocument::Compact))},
                          {.timeout_ms = 300000, .merge_channels = true});
    if (r.code != 0) QSKIP(qPrintable("no numpy/tifffile: " + QString::fromUtf8(r.out)));
    QFile j(tmp_.filePath(QStringLiteral("ref.json")));
    QVERIFY(j.open(QIODevice::ReadOnly));
    ref_ = QJsonDocument::fromJson(j.readAll()).object();
  }

  void init() {
    ui::clear_stack_pass_cache();
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("t.ini")), QSettings::IniFormat));
  }
  void cleanup() {
    host_.reset();
    ui::set_large_stack_policy({});
  }

  // Each pass's numbers against numpy's on the same file, read in several slabs.
  void numbers_match_numpy_data() {
    QTest::addColumn<int>("index");
    for (int i = 0; i < int(std::size(kCases)); ++i) QTest::newRow(kCases[i].name) << i;
  }
  void numbers_match_numpy() {
    QFETCH(int, index);
    const Case& c = kCases[index];
    const auto file = open(c);
    QCOMPARE(file->shape(), c.shape);
    QCOMPARE(file->dtype(), c.dtype);
    const Device dev = default_device();
    std::size_t slabs = 0;
    const auto count = [&](std::size_t, std::size_t n) { slabs = n; };

    // Histogram: core's tiled fold over the stack's range (the card's statistics first, as
    // the viewer has them), against numpy.histogram over [min, max] and against core's
    // whole-array histogram of the same pixels.
    const ui::StackStats st = file->stats(dev);
    QCOMPARE(st.min, ref(c).value(QStringLiteral("min")).toDouble());
    QCOMPARE(st.max, ref(c).value(QStringLiteral("max")).toDouble());
    const ui::StackHistogram h = ui::stack_histogram(file, dev, 256, nullptr, count);
    QVERIFY2(slabs >= 8, qPrintable(QString::number(slabs)));
    QVERIFY(!h.cached);
    QCOMPARE(h.min, st.min);
    QCOMPARE(h.max, st.max);
    HostArray whole = HostArray::empty(c.shape, c.dtype);
    file->open()->read(0, file->planes(), whole.data());
    QCOMPARE(h.counts, histogram(Array::push(whole, dev), 256, st.min, st.max).counts);
    QCOMPARE(h.counts, numpy_counts(c));

    // ROI statistics, one slice (that plane only) and all slices (every slab).
    for (const auto& [name, roi0] : rois_for(c.shape.height(), c.shape.width())) {
      Roi roi = roi0;
      roi.plane = c.slice;
      slabs = 0;
      compare_stats(ui::stack_roi_stats(file, roi, dev, nullptr, count),
                    ref(c).value(name + QStringLiteral(" slice")).toObject(),
                    name + QStringLiteral(" on slice"));
      QCOMPARE(slabs, std::size_t(1));  // one plane read
      roi.plane = -1;
      bool cached = true;
      const ui::RoiStats all = ui::stack_roi_stats(file, roi, dev, nullptr, count, &cached);
      QVERIFY(!cached);
      QVERIFY2(slabs >= 3, qPrintable(QString::number(slabs)));
      compare_stats(all, ref(c).value(name + QStringLiteral(" all")).toObject(),
                    name + QStringLiteral(" on all slices"));
      QCOMPARE(all.planes, int(c.shape.depth()));
    }

    // The side planes and the maximum over z, byte for byte.
    const std::size_t nz = c.shape.depth(), ny = c.shape.height(), nx = c.shape.width();
    const QString base = tmp_.filePath(QLatin1String(c.name));
    const ui::SidePlanes sp = ui::stack_side_planes(file, c.y, c.x, nullptr, count);
    QVERIFY(!sp.cached);
    QVERIFY2(same_bytes(sp.xz, read_raw(base + QStringLiteral(".xz"), Shape{nz, nx}, c.dtype)),
             "xz");
    QVERIFY2(same_bytes(sp.yz, read_raw(base + QStringLiteral(".yz"), Shape{ny, nz}, c.dtype)),
             "yz");
    QCOMPARE(sp.xz.shape(), (Shape{nz, nx}));
    QCOMPARE(sp.yz.shape(), (Shape{ny, nz}));
    slabs = 0;
    const ui::StackProjection mip = ui::stack_max_projection(file, dev, nullptr, count);
    QVERIFY(!mip.cached);
    QVERIFY2(slabs >= 8, qPrintable(QString::number(slabs)));
    QCOMPARE(mip.image.shape(), (Shape{ny, nx}));
    QVERIFY2(same_bytes(mip.image, read_raw(base + QStringLiteral(".mip"), Shape{ny, nx}, c.dtype)),
             "maximum over z");

    // Asked again: from the cache, without reading (no progress at all).
    slabs = 0;
    QVERIFY(ui::stack_histogram(file, dev, 256, nullptr, count).cached);
    QVERIFY(ui::stack_side_planes(file, c.y, c.x, nullptr, count).cached);
    QVERIFY(ui::stack_max_projection(file, dev, nullptr, count).cached);
    Roi roi = rois_for(ny, nx).at(QStringLiteral("ellipse"));
    bool cached = false;
    ui::stack_roi_stats(file, roi, dev, nullptr, count, &cached);
    QVERIFY(cached);
    QCOMPARE(slabs, std::size_t(0));
    QVERIFY(ui::stack_pass_cache_bytes() <= ui::stack_pass_cache_limit());
    // A side plane through another point reads the file again.
    QVERIFY(!ui::stack_side_planes(file, c.y / 2, c.x, nullptr, count).cached);
    QVERIFY(slabs > 0);
  }

  // A file-backed 2D image: the rows of each ROI's box, slab by slab, against numpy.
  void roi_statistics_of_a_2d_image() {
    ui::LargeStackPolicy p;
    p.slab_budget_bytes = 256ull << 10;  // 84 rows a slab
    ui::set_large_stack_policy(p);
    const auto file = TiffStackFile::open_file(tmp_.filePath(QStringLiteral("f32_2d.tif")));
    QCOMPARE(file->shape(), k2d);
    const QJsonObject want = ref_.value(QStringLiteral("f32_2d")).toObject();
    for (const auto& [name, roi] : rois_for(k2d.height(), k2d.width())) {
      std::size_t slabs = 0;
      const ui::RoiStats got = ui::stack_roi_stats(file, roi, default_device(), nullptr,
                                                   [&](std::size_t, std::size_t n) { slabs = n; });
      QVERIFY2(slabs >= 3, qPrintable(name + QStringLiteral(" %1").arg(slabs)));
      QCOMPARE(got.planes, 1);
      compare_stats(got, want.value(name).toObject(), name + QStringLiteral(" (2D)"));
    }
  }

  // Cancel between two slabs: Cancelled, and nothing is cached (the next call reads again).
  void cancel_leaves_nothing() {
    const Case& c = kCases[0];
    const auto file = open(c);
    const Device dev = default_device();
    std::atomic<bool> cancel{false};
    std::size_t seen = 0;
    const auto stop_at_3 = [&](std::size_t done, std::size_t) {
      seen = done;
      if (done == 3) cancel = true;
    };
    const std::uint64_t before = ui::stack_pass_cache_bytes();
    QVERIFY_THROWS_EXCEPTION(Cancelled, ui::stack_histogram(file, dev, 256, &cancel, stop_at_3));
    QCOMPARE(seen, std::size_t(3));
    cancel = false;
    QVERIFY_THROWS_EXCEPTION(Cancelled, ui::stack_max_projection(file, dev, &cancel, stop_at_3));
    cancel = false;
    QVERIFY_THROWS_EXCEPTION(Cancelled, ui::stack_side_planes(file, 1, 2, &cancel, stop_at_3));
    QVERIFY(!ui::cached_side_plane(file, true, 1).valid());
    cancel = false;
    Roi roi = rois_for(c.shape.height(), c.shape.width()).at(QStringLiteral("polygon"));
    QVERIFY_THROWS_EXCEPTION(
        Cancelled, ui::stack_roi_stats(file, roi, dev, &cancel, [&](std::size_t d, std::size_t) {
          if (d == 2) cancel = true;
        }));
    QCOMPARE(ui::stack_pass_cache_bytes(), before);
    std::size_t slabs = 0;
    const auto count = [&](std::size_t, std::size_t n) { slabs = n; };
    QVERIFY(!ui::stack_histogram(file, dev, 256, nullptr, count).cached);
    QVERIFY(slabs > 0);
  }

  // The dock, the panel and both views on a file-backed layer, against numpy; the second time
  // from the cache, said in the widget; the event loop keeps turning while they read.
  void widgets_on_a_file_backed_stack() {
    const Case& c = kCases[0];
    use_budget(c);
    // 20 ms a slab, as a disk would take: the passes last seconds, not the page cache's blink.
    const auto file = TiffStackFile::open_file(file_of(c), 20);
    const std::size_t ny = c.shape.height(), nx = c.shape.width(), nz = c.shape.depth();
    const QString base = tmp_.filePath(QLatin1String(c.name));
    QWidget window;
    auto* row = new QHBoxLayout(&window);
    auto* view = new ui::ImageView(*host_);
    auto* overlay = new ui::RoiOverlay(*host_, view);
    auto* roi_panel = new ui::RoiPanel(*host_, overlay);
    auto* hist = new ui::HistogramPanel(*host_);
    auto* ortho = new ui::OrthoViews(*host_);
    auto* mip = new ui::MipView(*host_);
    row->addWidget(view);
    row->addWidget(roi_panel);
    row->addWidget(hist);
    row->addWidget(ortho);
    window.resize(1900, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    mip->resize(int(nx), int(ny));  // one screen pixel per voxel at zoom 1
    mip->show();
    QVERIFY(QTest::qWaitForWindowExposed(mip));

    StallMeter meter;
    const int id = add_file_layer(c, file);
    host_->set_current_layer(id);
    mip->set_zoom(1);
    ortho->set_cursor(int(c.x), int(c.y), c.slice);
    Roi all = rois_for(ny, nx).at(QStringLiteral("polygon"));
    all.plane = -1;
    overlay->add_roi(id, all);
    QElapsedTimer clock;
    clock.start();
    QTRY_VERIFY_WITH_TIMEOUT(
        !hist->busy() && !roi_panel->busy() && !ortho->busy() && !mip->busy() && !view->busy(),
        300000);
    const qint64 worst = meter.worst;
    qInfo(
        "four passes over the %s file-backed stack took %lld ms; longest event-loop pause %lld ms",
        c.shape.str().c_str(), clock.elapsed(), worst);
    QVERIFY2(worst < 50, qPrintable(QString::number(worst)));

    // Histogram dock.
    QCOMPARE(hist->histogram()->counts(), numpy_counts(c));
    QVERIFY2(pass_text(hist).contains(QStringLiteral("read from the file")),
             qPrintable(pass_text(hist)));
    // ROI panel.
    QCOMPARE(roi_panel->stats().size(), std::size_t(1));
    QVERIFY2(roi_panel->errors().value(0).isEmpty(), qPrintable(roi_panel->errors().value(0)));
    compare_stats(roi_panel->stats()[0], ref(c).value(QStringLiteral("polygon all")).toObject(),
                  QStringLiteral("panel"));
    // Orthogonal views: the side panes are numpy's planes, coloured as the view colours.
    const ui::RenderOptions o{0, host_->layer(id).contrast_min, host_->layer(id).contrast_max,
                              QStringLiteral("gray"), false};
    QCOMPARE(ortho->cursor_y(), int(c.y));
    const QImage xz = ui::render(read_raw(base + QStringLiteral(".xz"), Shape{nz, nx}, c.dtype),
                                 default_device(), o);
    const QImage yz = ui::render(read_raw(base + QStringLiteral(".yz"), Shape{ny, nz}, c.dtype),
                                 default_device(), o);
    QVERIFY(words(ortho->frame(Plane::xz)) == words(xz));
    QVERIFY(words(ortho->frame(Plane::yz)) == words(yz));
    QVERIFY2(pass_text(ortho).contains(QStringLiteral("read from the file")),
             qPrintable(pass_text(ortho)));
    // 3D view: the maximum over z, one pixel per voxel.
    const QImage top = ui::render(read_raw(base + QStringLiteral(".mip"), Shape{ny, nx}, c.dtype),
                                  default_device(), o);
    QCOMPARE(mip->frame().size(), top.size());
    QVERIFY(words(mip->frame()) == words(top));
    QCOMPARE(mip->yaw(), 0.0);
    // Turned: from the block copy, which is the whole stack here (32 MiB fits the bound).
    mip->set_angles(30, 20);
    QCOMPARE(mip->yaw(), 30.0);
    QTRY_VERIFY_WITH_TIMEOUT(!mip->busy() && mip->volume_factor() == 1, 120000);
    mip->set_angles(0, 0);
    QTRY_VERIFY_WITH_TIMEOUT(!mip->busy(), 120000);

    if (qEnvironmentVariableIsSet("GPIX_SCREENSHOT_DIR")) {
      const QString dir = qEnvironmentVariable("GPIX_SCREENSHOT_DIR");
      // The two views side by side, as the docs show them.
      QWidget shot;
      auto* both = new QHBoxLayout(&shot);
      ortho->setParent(nullptr);
      mip->setParent(nullptr);
      both->addWidget(ortho, 3);
      both->addWidget(mip, 2);
      shot.resize(1400, 620);
      shot.show();
      QVERIFY(QTest::qWaitForWindowExposed(&shot));
      mip->fit();
      QTRY_VERIFY_WITH_TIMEOUT(!ortho->busy() && !mip->busy(), 60000);
      QTest::qWait(300);
      shot.grab().save(QDir(dir).filePath(QStringLiteral("file_backed_views.png")));
      window.grab().save(QDir(dir).filePath(QStringLiteral("file_backed_tools.png")));
      // Turned, from a copy at half the resolution (a 4 MiB bound for the 32 MiB stack).
      ui::LargeStackPolicy p = ui::large_stack_policy();
      p.volume_bytes = 4ull << 20;
      ui::set_large_stack_policy(p);
      mip->set_angles(35, 25);
      QTRY_VERIFY_WITH_TIMEOUT(!mip->busy() && mip->volume_factor() == 2, 120000);
      QTest::qWait(300);
      shot.grab().save(QDir(dir).filePath(QStringLiteral("file_backed_turned.png")));
      return;  // the widgets moved; the rest runs without a screenshot folder
    }

    // Another layer and back: every result from the cache, and each widget says so.
    ui::Layer other;
    other.name = QStringLiteral("other");
    other.array = Array::push(std::vector<float>(2 * 8 * 8, 1.0f), Shape{2, 8, 8});
    other.contrast_min = 0;
    other.contrast_max = 2;
    const int o_id = host_->add_layer(other);
    host_->set_current_layer(o_id);
    QTRY_VERIFY_WITH_TIMEOUT(!hist->busy() && !mip->busy() && !ortho->busy(), 60000);
    host_->set_current_layer(id);
    QTRY_VERIFY_WITH_TIMEOUT(!hist->busy() && !mip->busy() && !ortho->busy(), 60000);
    QVERIFY2(pass_text(hist).contains(QStringLiteral("from the cache")),
             qPrintable(pass_text(hist)));
    QVERIFY2(pass_text(mip).contains(QStringLiteral("from the cache")), qPrintable(pass_text(mip)));
    QCOMPARE(hist->histogram()->counts(), numpy_counts(c));
    // The side panes through the same point again come from the cache.
    ortho->set_cursor(int(c.x) + 1, int(c.y) + 1, c.slice);
    QTRY_VERIFY_WITH_TIMEOUT(!ortho->busy(), 120000);
    ortho->set_cursor(int(c.x), int(c.y), c.slice);
    QTRY_VERIFY_WITH_TIMEOUT(!ortho->busy(), 60000);
    QVERIFY2(pass_text(ortho).contains(QStringLiteral("from the cache")),
             qPrintable(pass_text(ortho)));
    QVERIFY(words(ortho->frame(Plane::xz)) == words(xz));
  }

  // The turning 3D view of a file-backed stack (issue 16): the block copy against a plain block
  // maximum, the factor against the bound, Cancel, the cache, and the view turned to yaw 90
  // against render_mip of the reference copy; turning again does not read the file.
  void turning_a_file_backed_stack() {
    const Shape shape{37, 129, 211};
    const QString path = tmp_.filePath(QStringLiteral("odd_turn.tif"));
    const HostArray data = odd_stack(shape);
    io::write(path.toStdString(), data);
    ui::LargeStackPolicy p;
    // 15 planes a slab: 3 slabs, and blocks of 4 planes straddle them (the device's folds need
    // about 760 kB for one plane of this stack).
    p.slab_budget_bytes = 800ull << 10;
    p.volume_bytes = 64ull << 10;  // 2 MB of stack into 64 kB: f = 4
    ui::set_large_stack_policy(p);
    const auto file = TiffStackFile::open_file(path);
    const Device dev = default_device();

    // The factor: the smallest that fits (f = 3 takes 13 * 43 * 71 * 2 = 79378 bytes).
    QCOMPARE(ui::block_max_factor(shape, DType::u16, 64ull << 10), std::size_t(4));
    QCOMPARE(ui::block_max_factor(shape, DType::u16, 79378), std::size_t(3));
    QCOMPARE(ui::block_max_factor(shape, DType::u16, data.bytes()), std::size_t(1));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, ui::block_max_factor(shape, DType::u16, 1));

    // Cancel in the middle: Cancelled and nothing cached.
    std::atomic<bool> cancel{false};
    const std::uint64_t before = ui::stack_pass_cache_bytes();
    QVERIFY_THROWS_EXCEPTION(
        Cancelled, ui::stack_block_max(file, 64ull << 10, &cancel, [&](std::size_t d, std::size_t) {
          if (d == 2) cancel = true;
        }));
    QCOMPARE(ui::stack_pass_cache_bytes(), before);

    // The copy against the reference, read in 3 slabs; then from the cache without reading.
    const HostArray want = block_max_reference(data, 4);
    std::size_t slabs = 0;
    const auto count = [&](std::size_t, std::size_t n) { slabs = n; };
    const ui::StackVolume v = ui::stack_block_max(file, 64ull << 10, nullptr, count);
    QVERIFY(!v.cached);
    QCOMPARE(slabs, std::size_t(3));
    QCOMPARE(v.factor, std::size_t(4));
    QCOMPARE(v.volume.shape(), (Shape{10, 33, 53}));
    QVERIFY2(same_bytes(v.volume, want), "block maximum");
    slabs = 0;
    QVERIFY(ui::stack_block_max(file, 64ull << 10, nullptr, count).cached);
    QCOMPARE(slabs, std::size_t(0));
    // f = 1: the stack itself.
    QVERIFY2(same_bytes(ui::stack_block_max(file, data.bytes()).volume, data), "f = 1");

    // The view: from the top the exact maximum over z; turned, the copy.
    ui::clear_stack_pass_cache();
    ui::MipView mip(*host_);
    mip.resize(300, 260);
    mip.show();
    QVERIFY(QTest::qWaitForWindowExposed(&mip));
    ui::Layer l;
    l.name = QStringLiteral("odd");
    l.file = file;
    l.contrast_min = 0;
    l.contrast_max = 30000;
    const int odd_id = host_->add_layer(l);
    host_->set_current_layer(odd_id);
    QTRY_VERIFY2_WITH_TIMEOUT(!mip.busy() && !mip.frame().isNull(), qPrintable(pass_text(&mip)),
                              120000);
    QCOMPARE(mip.volume_factor(), std::size_t(0));
    QCOMPARE(mip.frame_camera().spacing[0], 1.0);
    const int opens_top = file->opens();
    mip.set_angles(90, 0);
    QCOMPARE(mip.yaw(), 90.0);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy(), 120000);
    QCOMPARE(file->opens(), opens_top + 1);  // one pass for the copy
    QCOMPARE(mip.volume_factor(), std::size_t(4));
    const MipOptions cam = mip.frame_camera();
    QCOMPARE(cam.yaw, 90.0);
    QCOMPARE(cam.spacing[0], 4.0);
    QCOMPARE(cam.spacing[2], 4.0);
    const ui::RenderOptions o{0, 0, 30000, QStringLiteral("gray"), false};
    const QImage side = ui::render(render_mip(Array::push(want, dev), cam), o);
    QCOMPARE(mip.frame().size(), side.size());
    QVERIFY(words(mip.frame()) == words(side));
    QVERIFY2(pass_text(&mip).contains(QStringLiteral("1/4 resolution")) &&
                 pass_text(&mip).contains(QStringLiteral("read from the file")),
             qPrintable(pass_text(&mip)));
    QVERIFY2(mip.toolTip().contains(QStringLiteral("1/4-resolution copy (maximum of 4 x 4 x 4")),
             qPrintable(mip.toolTip()));
    // Turning on renders from the copy on the device: the file is not opened again.
    const int frames = mip.frames_rendered();
    mip.set_angles(45, 30);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy() && mip.frames_rendered() > frames, 120000);
    QCOMPARE(mip.frame_camera().yaw, 45.0);
    QCOMPARE(file->opens(), opens_top + 1);
    // Another stack and back: the copy from the pass cache, said so, still no read.
    ui::Layer other;
    other.name = QStringLiteral("other");
    other.array = Array::push(std::vector<float>(2 * 8 * 8, 1.0f), Shape{2, 8, 8});
    other.contrast_min = 0;
    other.contrast_max = 2;
    const int o_id = host_->add_layer(other);
    host_->set_current_layer(o_id);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy(), 60000);
    host_->set_current_layer(odd_id);
    mip.set_angles(90, 0);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy() && mip.volume_factor() == 4, 60000);
    QCOMPARE(file->opens(), opens_top + 1);
    QVERIFY2(pass_text(&mip).contains(QStringLiteral("from the cache")),
             qPrintable(pass_text(&mip)));
    QVERIFY(words(mip.frame()) == words(side));
    // Back to the top: the exact maximum over z again.
    mip.set_angles(0, 0);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy(), 60000);
    QCOMPARE(mip.volume_factor(), std::size_t(0));
    QCOMPARE(mip.frame_camera().spacing[0], 1.0);

    // What the host fold costs beside the read, on the 32 MiB stack (logged, not asserted: a
    // shared machine's timings vary).
    const auto u16 = open(kCases[0]);
    QElapsedTimer t;
    t.start();
    HostArray all = HostArray::empty(kCases[0].shape, kCases[0].dtype);
    u16->open()->read(0, u16->planes(), all.data());
    const qint64 read_ms = t.restart();
    QCOMPARE(ui::stack_block_max(u16, 4ull << 20).factor, std::size_t(2));
    qInfo(
        "64 x 512 x 512 uint16: reading the file %lld ms, the block copy (f = 2, read and "
        "fold) %lld ms",
        read_ms, t.elapsed());
  }

  // Stacks without a finite range, file-backed as in memory: NaN only, and finite values with
  // one +inf (the range reaches an infinity). Both give (0, 1), as ui::auto_contrast gives
  // the same array in memory; before, the file-backed one said "not finite" as an error.
  // A stack with NaN among finite values keeps the finite values' percentiles.
  void auto_contrast_without_a_finite_range() {
    const Shape shape{5, 41, 37};
    const Device dev = default_device();
    ui::LargeStackPolicy p;
    p.slab_budget_bytes = 64ull << 10;  // several slabs
    ui::set_large_stack_policy(p);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> only_nan(shape.elements(), nan);
    std::vector<float> with_inf(shape.elements());
    std::vector<float> with_nan(shape.elements());
    for (std::size_t i = 0; i < shape.elements(); ++i) {
      with_inf[i] = float(i % 1000);
      with_nan[i] = i % 3 == 0 ? nan : float(i % 1000);
    }
    with_inf[shape.elements() / 2] = std::numeric_limits<float>::infinity();
    int n = 0;
    for (const auto* values : {&only_nan, &with_inf, &with_nan}) {
      const HostArray data = HostArray::from(*values, shape);
      const QString path = tmp_.filePath(QStringLiteral("no_range_%1.tif").arg(n++));
      io::write(path.toStdString(), data);
      ui::clear_stack_pass_cache();
      const auto file = TiffStackFile::open_file(path, 0);
      QVERIFY(!file->known_stats());  // the range is not known yet
      std::size_t last_done = 0, last_total = 0;
      const ui::StackContrast c = ui::stack_auto_contrast(
          file, dev, 0.5, 99.5, nullptr, [&](std::size_t done, std::size_t total) {
            QVERIFY(done <= total);
            QVERIFY(total != last_total || done >= last_done);  // never backwards
            last_done = done;
            last_total = total;
          });
      const auto memory = ui::auto_contrast(Array::push(data, dev), -1);
      QCOMPARE(std::make_pair(c.low, c.high), memory);
      if (values != &with_nan) QCOMPARE(memory, std::make_pair(0.0, 1.0));
    }
  }

  // Auto contrast of a file-backed stack: a dim plane 0 and a bright last plane. The limits are
  // the whole stack's 0.5 and 99.5 percentiles (exact: the range is under kContrastBins), not
  // plane 0's, whichever plane is on screen; the layer keeps its limits until they arrive.
  void auto_contrast_of_a_file_backed_stack() {
    const Shape shape{24, 300, 257};
    HostArray data = HostArray::empty(shape, DType::u16);
    auto* v = reinterpret_cast<std::uint16_t*>(data.data());
    std::uint32_t r = 7;
    const std::size_t plane = shape.height() * shape.width();
    for (std::size_t i = 0; i < data.elements(); ++i) {
      r = r * 1664525u + 1013904223u;
      const std::size_t z = i / plane;
      v[i] = std::uint16_t(z * 3600 / (shape.depth() - 1) + (r >> 8) % 300);  // 0..3899
    }
    const QString path = tmp_.filePath(QStringLiteral("ramp.tif"));
    io::write(path.toStdString(), data);
    ui::LargeStackPolicy p;
    p.slab_budget_bytes = 3ull << 20;  // several slabs (4096 bins take 1.2 MB of partials)
    ui::set_large_stack_policy(p);
    const auto file = TiffStackFile::open_file(path, 30);  // 30 ms a slab
    // The reference: ranks floor(p * (n - 1)) of the sorted pixels.
    std::vector<std::uint16_t> sorted(v, v + data.elements());
    std::sort(sorted.begin(), sorted.end());
    const auto rank = [&](double pct) {
      return double(sorted[std::size_t(pct / 100.0 * double(sorted.size() - 1))]);
    };
    const double lo = rank(0.5), hi = rank(99.5);
    const Device dev = default_device();
    // The same as a stack in memory gets, and not what plane 0 alone gives.
    QCOMPARE(ui::auto_contrast(Array::push(data, dev), -1), std::make_pair(lo, hi));
    QVERIFY(ui::auto_contrast(Array::push(data, dev), 0).second < hi / 4);
    const ui::StackContrast direct = ui::stack_auto_contrast(file, dev);
    QCOMPARE(direct.low, lo);
    QCOMPARE(direct.high, hi);

    // The layer list (what Edit > Auto contrast calls, with the slice on screen).
    ui::clear_stack_pass_cache();
    ui::LayerList list(*host_);
    list.resize(300, 500);
    list.show();
    QVERIFY(QTest::qWaitForWindowExposed(&list));
    ui::Layer l;
    l.name = QStringLiteral("ramp");
    l.file = file;
    l.contrast_min = 0;
    l.contrast_max = 100;
    const int id = host_->add_layer(l);
    host_->set_current_layer(id);
    list.auto_contrast_current(0);
    // Not yet: the pass runs, the limits stay.
    QCOMPARE(host_->layer(id).contrast_max, 100.0);
    auto* bar = list.findChild<QWidget*>(QStringLiteral("contrast_pass_bar"));
    QVERIFY(bar && bar->isVisible());
    QVERIFY2(pass_text(bar).contains(QStringLiteral("Automatic contrast of the whole stack")),
             qPrintable(pass_text(bar)));
    QTRY_VERIFY_WITH_TIMEOUT(host_->layer(id).contrast_max != 100.0, 120000);
    QCOMPARE(host_->layer(id).contrast_min, lo);
    QCOMPARE(host_->layer(id).contrast_max, hi);
    QVERIFY2(pass_text(bar).contains(QStringLiteral("read from the file")),
             qPrintable(pass_text(bar)));

    // The Histogram dock's Auto: the same limits, the histogram from the cache.
    ui::LayerDisplay d = ui::LayerDisplay::of(host_->layer(id));
    d.contrast_min = 5;
    d.contrast_max = 50;
    ui::set_layer_display(*host_, id, d, QStringLiteral("test"));
    ui::HistogramPanel hist(*host_);
    hist.resize(400, 500);
    hist.show();
    QVERIFY(QTest::qWaitForWindowExposed(&hist));
    QTRY_VERIFY_WITH_TIMEOUT(!hist.busy(), 120000);
    auto* button = hist.findChild<QPushButton*>(QStringLiteral("histogram_auto"));
    QVERIFY(button);
    QTest::mouseClick(button, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(host_->layer(id).contrast_max == hi, 120000);
    QCOMPARE(host_->layer(id).contrast_min, lo);
    auto* hist_bar = hist.findChild<QWidget*>(QStringLiteral("auto_pass_bar"));
    QVERIFY(hist_bar);
    QVERIFY2(pass_text(hist_bar).contains(QStringLiteral("from the cache")),
             qPrintable(pass_text(hist_bar)));
  }

  // Cancel of the 3D view's copy: no copy, nothing cached, "cancelled"; Retry reads it.
  void cancel_the_3d_copy() {
    const Case& c = kCases[0];
    ui::LargeStackPolicy p;
    p.slab_budget_bytes = 2ull << 20;  // 4 planes a slab: 16 slabs
    p.volume_bytes = 4ull << 20;       // 32 MiB into 4: f = 2
    ui::set_large_stack_policy(p);
    const auto file = TiffStackFile::open_file(file_of(c), 100);  // 100 ms a slab
    ui::MipView mip(*host_);
    mip.resize(300, 300);
    mip.show();
    QVERIFY(QTest::qWaitForWindowExposed(&mip));
    // Turned before the stack comes: its first pass is the copy's (no projection first).
    mip.set_angles(90, 0);
    const std::uint64_t before = ui::stack_pass_cache_bytes();
    host_->set_current_layer(add_file_layer(c, file));
    QTRY_VERIFY_WITH_TIMEOUT(pass_text(&mip).contains(QStringLiteral("3D copy")), 60000);
    auto* cancel = mip.findChild<QPushButton*>(QStringLiteral("pass_cancel"));
    QVERIFY(cancel && cancel->isVisible());
    QTest::mouseClick(cancel, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy(), 60000);
    QCOMPARE(mip.volume_factor(), std::size_t(0));
    QCOMPARE(ui::stack_pass_cache_bytes(), before);
    QVERIFY2(pass_text(&mip).contains(QStringLiteral("cancelled")), qPrintable(pass_text(&mip)));
    auto* retry = mip.findChild<QPushButton*>(QStringLiteral("pass_retry"));
    QVERIFY(retry && retry->isVisible());
    QTest::mouseClick(retry, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!mip.busy() && mip.volume_factor() == 2, 120000);
  }

  // The Histogram dock reads the file once it is shown; Cancel mid-way: no histogram,
  // "cancelled", nothing cached; Retry reads the file and shows numpy's counts.
  void cancel_in_the_dock() {
    const Case& c = kCases[0];
    use_budget(c);
    const auto file = TiffStackFile::open_file(file_of(c), 40);  // 40 ms a slab
    ui::HistogramPanel hist(*host_);
    hist.resize(400, 400);
    const std::uint64_t before = ui::stack_pass_cache_bytes();
    // A hidden dock does not read the file; showing it does.
    host_->set_current_layer(add_file_layer(c, file));
    QTest::qWait(300);
    QVERIFY(!hist.busy());
    QVERIFY(pass_text(&hist).isEmpty());
    hist.show();
    QVERIFY(QTest::qWaitForWindowExposed(&hist));
    // In the middle of the pass: "slab N of 64" (the range pass and the counts, 32 slabs each).
    const auto slab = [&] {
      const QRegularExpressionMatch m =
          QRegularExpression(QStringLiteral("slab (\\d+) of 64")).match(pass_text(&hist));
      return m.hasMatch() ? m.captured(1).toInt() : 0;
    };
    QTRY_VERIFY_WITH_TIMEOUT(slab() >= 2 && slab() < 40, 60000);
    auto* cancel = hist.findChild<QPushButton*>(QStringLiteral("pass_cancel"));
    QVERIFY(cancel && cancel->isVisible());
    QElapsedTimer stopping;
    stopping.start();
    QTest::mouseClick(cancel, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!hist.busy(), 60000);
    // It stopped after the slab in flight, not at the end of the pass (64 slabs of 40 ms).
    QVERIFY2(stopping.elapsed() < 1500, qPrintable(QString::number(stopping.elapsed())));
    QVERIFY2(pass_text(&hist).contains(QStringLiteral("cancelled")), qPrintable(pass_text(&hist)));
    QVERIFY(hist.histogram()->counts().empty());
    QCOMPARE(ui::stack_pass_cache_bytes(), before);
    auto* retry = hist.findChild<QPushButton*>(QStringLiteral("pass_retry"));
    QVERIFY(retry && retry->isVisible());
    QTest::mouseClick(retry, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!hist.busy(), 300000);
    QCOMPARE(hist.histogram()->counts(), numpy_counts(c));
  }
};

QTEST_MAIN(TestStackPasses)
#include "test_stack_passes.moc"
