// Colour composites and the interactive histogram, as a user meets them (real widgets on a
// BasicHost, offscreen): an RGB PNG and a 3-channel 16-bit TIFF made by tifffile open as one
// composite layer each; the view's frame equals a plain reference of additive blending with the
// channels' colours, limits and gamma; dragging a histogram handle with the mouse sets the
// limits and the pixels follow; gamma; split channels with undo/redo; filters channel by
// channel.
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <cmath>
#include <cstring>

#include "formats.h"
#include "gpix/basic_host.h"
#include "gpix/catalog.h"
#include "gpix/io.h"
#include "gpix/render.h"
#include "gpix/ui/composite.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/histogram_panel.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/render.h"
#include "gpix/ui/workflow.h"
#include "support/process.h"
#include "support/random.h"
#include "ui/image_words.h"

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::plugin::Layer;
using gpix::test::words;

namespace {

// The documented display mapping, written plainly: the fine step in float32 arithmetic (the
// kernel's for these integer dtypes), the gamma curve in double, the channel's colour scaled
// by the entry, channels summed per byte with saturation, opaque where any channel is shown.
std::uint8_t entry(double v, double lo, double hi, double gamma) {
  const float t =
      (static_cast<float>(v) - static_cast<float>(lo)) * static_cast<float>(4096.0 / (hi - lo));
  const int f = !(t >= 0.0f) ? 0 : (t < 4095.0f ? static_cast<int>(t) : 4095);
  if (gamma == 1.0) return static_cast<std::uint8_t>(f / 16);
  return static_cast<std::uint8_t>(
      std::min(255.0, std::floor(256.0 * std::pow(f / 4096.0, gamma))));
}

std::vector<std::uint32_t> reference(const HostArray& data, const std::vector<ui::Channel>& chs) {
  const Shape& s = data.shape();
  const std::size_t plane = s.height() * s.width();
  std::vector<std::uint32_t> out(plane, 0);
  for (std::size_t i = 0; i < plane; ++i) {
    int rgb[3] = {0, 0, 0};
    bool any = false;
    for (std::size_t c = 0; c < chs.size(); ++c) {
      const ui::Channel& ch = chs[c];
      if (!ch.visible) continue;
      any = true;
      const double v = visit_dtype(data.dtype(), [&](auto z) {
        using T = decltype(z);
        return static_cast<double>(reinterpret_cast<const T*>(data.data())[c * plane + i]);
      });
      const int e = entry(v, ch.contrast_min, ch.contrast_max, ch.gamma);
      const int col[3] = {qRed(ch.colour), qGreen(ch.colour), qBlue(ch.colour)};
      for (int k = 0; k < 3; ++k) rgb[k] += int(std::lround(e * col[k] / 255.0));
    }
    if (any) {
      out[i] = rgba(std::uint8_t(std::min(rgb[0], 255)), std::uint8_t(std::min(rgb[1], 255)),
                    std::uint8_t(std::min(rgb[2], 255)), 255);
    }
  }
  return out;
}

// How many pixels differ, and the first one, for a readable failure.
QString difference(const std::vector<std::uint32_t>& got, const std::vector<std::uint32_t>& want) {
  if (got.size() != want.size())
    return QStringLiteral("sizes %1 and %2").arg(got.size()).arg(want.size());
  std::size_t n = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i] && n++ == 0) first = i;
  }
  if (n == 0) return {};
  return QStringLiteral("%1 of %2 pixels differ; first at %3: got %4 want %5")
      .arg(n)
      .arg(got.size())
      .arg(first)
      .arg(got[first], 8, 16, QLatin1Char('0'))
      .arg(want[first], 8, 16, QLatin1Char('0'));
}

}  // namespace

class TestComposite : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<BasicHost> host_;
  QString tiff_;  // (3, 384, 512) uint16 ImageJ hyperstack, channels=3
  QString ome_;   // the same as OME-TIFF
  HostArray tiff_data_;

  BasicHost& host() { return *host_; }

  // The layer the viewer's readers (the gpix plugin's formats) make of a file.
  Layer read(const QString& path) {
    const QList<Layer> layers = host().read_call(path)();
    if (layers.size() != 1) qFatal("%s gave %d layers", qPrintable(path), int(layers.size()));
    return layers.first();
  }

  // The view's frame once nothing is pending (empty when none came within a minute).
  std::vector<std::uint32_t> shown(ui::ImageView& view, int id) {
    QElapsedTimer t;
    t.start();
    while ((view.frame(id).isNull() || view.busy()) && t.elapsed() < 60000) QTest::qWait(10);
    return words(view.frame(id));
  }

 private slots:
  void initTestCase() {
    QVERIFY(tmp_.isValid());
    tiff_ = tmp_.filePath(QStringLiteral("cells.tif"));
    ome_ = tmp_.filePath(QStringLiteral("cells.ome.tif"));
    // Three channels with different ranges and structure: blobs, a ramp and noise.
    const QString script = QStringLiteral(
        "import numpy as np, tifffile, sys\n"
        "rng = np.random.default_rng(16)\n"
        "y, x = np.mgrid[0:384, 0:512]\n"
        "a = (3000 * np.exp(-((x - 200) ** 2 + (y - 150) ** 2) / 4000.0) + 400).astype(np.uint16)\n"
        "b = (x * 40 + y * 7).astype(np.uint16)\n"
        "c = rng.integers(0, 65535, size=(384, 512), dtype=np.uint16)\n"
        "d = np.stack([a, b, c])\n"
        "tifffile.imwrite(sys.argv[1], d, imagej=True, metadata={'axes': 'CYX'})\n"
        "tifffile.imwrite(sys.argv[2], d, ome=True, metadata={'axes': 'CYX'})\n");
    const auto r = test::run_process(QStringLiteral("/usr/bin/python3"),
                                     {QStringLiteral("-c"), script, tiff_, ome_});
    if (r.code != 0) QSKIP(qPrintable(QStringLiteral("tifffile could not write: ") + r.err));
    tiff_data_ = io::read(tiff_.toStdString()).pixels;
  }

  void init() {
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("t.ini")), QSettings::IniFormat));
    formats::register_all(*host_);
  }
  void cleanup() { host_.reset(); }

  // io says which pages are channels: ImageJ channels=3 and OME SizeC=3; a plain 3-page stack
  // stays a z stack.
  void channel_axis_from_files() {
    QCOMPARE(io::read(tiff_.toStdString()).meta.channels, 3);
    QCOMPARE(io::read(ome_.toStdString()).meta.channels, 3);
    const QString plain = tmp_.filePath(QStringLiteral("stack.tif"));
    io::write(plain.toStdString(), tiff_data_);
    QCOMPARE(io::read(plain.toStdString()).meta.channels, 1);
    const Layer l = read(plain);
    QVERIFY(!l.composite());
  }

  void rgb_png_is_one_composite() {
    // A real RGB photo-like PNG: a colour gradient with a disc.
    QImage img(301, 203, QImage::Format_RGB32);
    for (int y = 0; y < img.height(); ++y)
      for (int x = 0; x < img.width(); ++x) {
        const bool disc = (x - 150) * (x - 150) + (y - 100) * (y - 100) < 60 * 60;
        img.setPixel(x, y, qRgb(x * 255 / 300, disc ? 230 : y, disc ? 40 : 255 - x * 255 / 300));
      }
    const QString path = tmp_.filePath(QStringLiteral("photo.png"));
    QVERIFY(img.save(path, "PNG"));
    Layer l = read(path);
    QVERIFY(l.composite());
    QCOMPARE(l.channels.size(), std::size_t{3});
    QCOMPARE(l.channels[0].name, QStringLiteral("R"));
    QCOMPARE(l.channels[2].colour, qRgb(0, 0, 255));
    // Full range limits: the composite shows the photo's own colours.
    for (auto& c : l.channels) {
      c.contrast_min = 0;
      c.contrast_max = 255;
    }
    const HostArray data = l.host;
    ui::ImageView view(host());
    view.resize(400, 300);
    const int id = host().add_layer(l);
    QCOMPARE(host().layer_ids().size(), qsizetype(1));
    const auto got = shown(view, id);
    QVERIFY2(difference(got, reference(data, host().layer(id).channels)).isEmpty(),
             qPrintable(difference(got, reference(data, host().layer(id).channels))));
    // 0..255 limits with (v * 256 / 255) entries: each colour within one step of the file's.
    const QImage frame = view.frame(id);
    for (const QPoint p : {QPoint(0, 0), QPoint(150, 100), QPoint(300, 202), QPoint(77, 31)}) {
      const QColor want = img.pixelColor(p), have = frame.pixelColor(p);
      QVERIFY(std::abs(want.red() - have.red()) <= 1 &&
              std::abs(want.green() - have.green()) <= 1 &&
              std::abs(want.blue() - have.blue()) <= 1);
    }
    // Depth stays 1: the channel axis is not a slice axis.
    QCOMPARE(view.depth(), 1);
  }

  void tiff_composite_matches_reference() {
    Layer l = read(tiff_);
    QVERIFY(l.composite());
    QCOMPARE(l.channels.size(), std::size_t{3});
    QCOMPARE(l.channels[0].colour, qRgb(0, 255, 0));  // fluorescence: green, magenta, cyan
    QCOMPARE(l.channels[1].colour, qRgb(255, 0, 255));
    QCOMPARE(l.channels[2].colour, qRgb(0, 255, 255));
    ui::ImageView view(host());
    view.resize(600, 450);
    const int id = host().add_layer(l);
    // First show: each channel gets its own automatic limits from its own plane.
    QTRY_VERIFY_WITH_TIMEOUT(host().layer(id).has_contrast(), 60000);
    const auto limits = ui::auto_contrast(host().layer(id).array, 1);
    QCOMPARE(host().layer(id).channels[1].contrast_min, limits.first);
    QCOMPARE(host().layer(id).channels[1].contrast_max, limits.second);
    auto got = shown(view, id);
    QVERIFY2(difference(got, reference(tiff_data_, host().layer(id).channels)).isEmpty(),
             qPrintable(difference(got, reference(tiff_data_, host().layer(id).channels))));
    // Chosen limits and gammas, one channel hidden.
    Layer c = host().layer(id);
    c.channels[0] = {QStringLiteral("C1"), qRgb(0, 255, 0), 500, 3000, 0.5, true};
    c.channels[1] = {QStringLiteral("C2"), qRgb(255, 0, 255), 1000, 20000, 2.0, true};
    c.channels[2].visible = false;
    host().replace_layer(id, c);
    got = shown(view, id);
    const auto want = reference(tiff_data_, c.channels);
    QVERIFY2(difference(got, want).isEmpty(), qPrintable(difference(got, want)));
    // The test can fail: the same frame is not what a linear gamma gives.
    auto linear = c.channels;
    linear[0].gamma = 1.0;
    QVERIFY(!difference(got, reference(tiff_data_, linear)).isEmpty());
    // The readout names every channel's value.
    view.fit();
    const QPointF at = QPointF(view.width() / 2.0, view.height() / 2.0);
    QTRY_VERIFY_WITH_TIMEOUT(view.describe(at).contains(QLatin1String("C3 ")), 30000);
  }

  void histogram_drag_sets_limits() {
    ui::ImageView view(host());
    view.resize(600, 450);
    const int id = host().add_layer(read(tiff_));
    ui::HistogramPanel panel(host());
    panel.resize(420, 360);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTRY_VERIFY_WITH_TIMEOUT(host().layer(id).has_contrast(), 60000);
    shown(view, id);
    panel.set_channel(1);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !panel.histogram()->counts().empty(), 60000);
    QCOMPARE(panel.channel(), 1);
    // The histogram is of channel 1's plane: every pixel of it counted once.
    std::uint64_t total = 0;
    for (auto n : panel.histogram()->counts()) total += n;
    QCOMPARE(total, std::uint64_t{384 * 512});

    ui::HistogramWidget* plot = panel.histogram();
    const double before_hi = host().layer(id).channels[1].contrast_max;
    const double before_lo = host().layer(id).channels[1].contrast_min;
    const ui::Channel other = host().layer(id).channels[0];
    const int y = plot->height() / 2;
    const int from = int(std::lround(plot->x_of(before_hi)));
    const int to = int(std::lround(plot->x_of(before_lo + (before_hi - before_lo) * 0.4)));
    const int undo_before = host().undo_stack()->count();
    QTest::mousePress(plot, Qt::LeftButton, {}, QPoint(from, y));
    for (int x = from; x >= to; x -= 7) QTest::mouseMove(plot, QPoint(x, y));
    QTest::mouseMove(plot, QPoint(to, y));
    QTest::mouseRelease(plot, Qt::LeftButton, {}, QPoint(to, y));
    const ui::Channel ch = host().layer(id).channels[1];
    QCOMPARE(ch.contrast_min, before_lo);  // the other handle stayed
    QVERIFY(ch.contrast_max < before_hi);
    QVERIFY(std::abs(ch.contrast_max - plot->value_at(to)) < 1e-9 * std::abs(before_hi) + 1e-6);
    QVERIFY(host().layer(id).channels[0] == other);  // the other channels stayed
    // One drag, one undo step.
    QCOMPARE(host().undo_stack()->count(), undo_before + 1);
    // The pixels follow.
    auto got = shown(view, id);
    QVERIFY2(difference(got, reference(tiff_data_, host().layer(id).channels)).isEmpty(),
             qPrintable(difference(got, reference(tiff_data_, host().layer(id).channels))));
    // Gamma from the dock's spin box, on channel 1 only.
    panel.findChild<QDoubleSpinBox*>(QStringLiteral("gamma"))->setValue(2.5);
    QCOMPARE(host().layer(id).channels[1].gamma, 2.5);
    QCOMPARE(host().layer(id).channels[0].gamma, 1.0);
    got = shown(view, id);
    QVERIFY2(difference(got, reference(tiff_data_, host().layer(id).channels)).isEmpty(),
             qPrintable(difference(got, reference(tiff_data_, host().layer(id).channels))));
    // Visibility toggle.
    panel.findChild<QCheckBox*>(QStringLiteral("channel_visible"))->setChecked(false);
    QVERIFY(!host().layer(id).channels[1].visible);
    got = shown(view, id);
    QVERIFY(difference(got, reference(tiff_data_, host().layer(id).channels)).isEmpty());
    // Undo the three changes: the drag's limits come back.
    host().undo_stack()->undo();
    host().undo_stack()->undo();
    host().undo_stack()->undo();
    QCOMPARE(host().layer(id).channels[1].contrast_max, before_hi);
    QCOMPARE(host().layer(id).channels[1].gamma, 1.0);
    // Auto: the percentile limits of the channel.
    host().undo_stack()->redo();  // the drag again
    QVERIFY(host().layer(id).channels[1].contrast_max < before_hi);
    panel.auto_limits();
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy(), 60000);
    QCOMPARE(host().layer(id).channels[1].contrast_max, before_hi);
    // Log scale draws; the limits do not change.
    QVERIFY(plot->log_scale());  // on by default
    panel.findChild<QCheckBox*>(QStringLiteral("histogram_log"))->setChecked(false);
    QVERIFY(!plot->log_scale());
    QVERIFY(!plot->grab().isNull());
  }

  // A grey layer: the same dock drags its limits, and gamma goes to render_rgba.
  void histogram_on_a_grey_layer() {
    HostArray plane = HostArray::empty(Shape{384, 512}, DType::u16);
    std::memcpy(plane.data(), tiff_data_.data(), plane.bytes());
    Layer g;
    g.name = QStringLiteral("grey");
    g.host = plane;
    g.contrast_min = 400;
    g.contrast_max = 3400;
    ui::ImageView view(host());
    view.resize(600, 450);
    const int id = host().add_layer(g);
    ui::HistogramPanel panel(host());
    panel.resize(420, 360);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !panel.histogram()->counts().empty(), 60000);
    ui::HistogramWidget* plot = panel.histogram();
    const int y = plot->height() / 2;
    const int from = int(std::lround(plot->x_of(400))), to = from + 40;
    QTest::mousePress(plot, Qt::LeftButton, {}, QPoint(from, y));
    QTest::mouseMove(plot, QPoint(to, y));
    QTest::mouseRelease(plot, Qt::LeftButton, {}, QPoint(to, y));
    const Layer l = host().layer(id);
    QVERIFY(l.contrast_min > 400);
    QCOMPARE(l.contrast_max, 3400.0);
    panel.findChild<QDoubleSpinBox*>(QStringLiteral("gamma"))->setValue(0.4);
    const Layer l2 = host().layer(id);
    QCOMPARE(l2.gamma, 0.4);
    const auto got = shown(view, id);
    const Array a = host().layer(id).array;
    QCOMPARE(got, render_rgba(a, l2.contrast_min, l2.contrast_max, lut("gray"), 0, 0.4)
                      .pull_as<std::uint32_t>());
  }

  void split_channels_and_undo() {
    host().add_layer([] {
      Layer other;
      other.name = QStringLiteral("below");
      other.host = HostArray::empty(Shape{4, 4}, DType::u8);
      std::memset(other.host.data(), 3, other.host.bytes());
      return other;
    }());
    Layer l = read(tiff_);
    l.channels[1].contrast_min = 10;
    l.channels[1].contrast_max = 900;
    l.channels[1].gamma = 0.7;
    const int id = host().add_layer(l);
    const QString name = host().layer(id).name;
    ui::HistogramPanel panel(host());  // Split acts on the current layer
    panel.split_channels();
    QTRY_COMPARE_WITH_TIMEOUT(host().layer_ids().size(), qsizetype(4), 60000);
    QVERIFY(!host().has_layer(id));
    const QList<int> ids = host().layer_ids();
    const std::size_t plane = 384 * 512 * 2;
    for (int c = 0; c < 3; ++c) {
      const Layer one = host().layer(ids[c + 1]);  // in the composite's place, in order
      QVERIFY(!one.composite());
      QCOMPARE(one.shape(), (Shape{384, 512}));
      // In its channel's colour (as Fiji's Split Channels keeps LUTs), C2 on added over C1:
      // the split layers look as the composite did.
      const QString map = ui::colour_map_of(l.channels[std::size_t(c)].colour);
      QCOMPARE(one.colormap, map.isEmpty() ? QStringLiteral("gray") : map);
      QCOMPARE(one.additive, c > 0);
      QCOMPARE(one.name, QStringLiteral("%1 [C%2]").arg(name).arg(c + 1));
      const HostArray px = one.array.valid() ? one.array.pull() : one.host;
      QCOMPARE(std::memcmp(px.data(), tiff_data_.data() + std::size_t(c) * plane, plane), 0);
    }
    QCOMPARE(host().layer(ids[2]).contrast_max, 900.0);
    QCOMPARE(host().layer(ids[2]).gamma, 0.7);
    host().undo_stack()->undo();
    QCOMPARE(host().layer_ids().size(), qsizetype(2));
    QVERIFY(host().has_layer(id));
    QVERIFY(host().layer(id).composite());
    QCOMPARE(host().layer_ids().last(), id);
    host().undo_stack()->redo();
    QCOMPARE(host().layer_ids(), ids);  // the same ids again
    // Splitting a grey layer is refused with a message, and no step.
    const int steps = host().undo_stack()->count();
    ui::request_split_channels(host(), ids[0], &panel);
    QTest::qWait(50);
    QCOMPARE(host().undo_stack()->count(), steps);
  }

  // Through the filter panel, as a user runs it: the result is a composite in the same colours
  // whose planes are the per-plane results, and the status line says how it ran.
  void filter_panel_on_a_composite() {
    ui::Workflow workflow;
    ui::FilterPanel panel(host(), &workflow);
    Layer l = read(tiff_);
    l.channels[0].colour = qRgb(255, 128, 0);
    const int id = host().add_layer(l);
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    // No z sigma offered by default: the channel axis is not z (a stack gets sigma_x's size).
    QCOMPARE(std::get<double>(panel.form()->params().at("sigma_z")), 0.0);
    // A z sigma: on the stack as a whole it would blur across the channels.
    QVERIFY(panel.form()->set_param(QStringLiteral("sigma_z"), 1.0));
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(120000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids().size(), qsizetype(2));
    const Layer out = host().layer(host().layer_ids().last());
    QVERIFY(out.composite());
    QCOMPARE(out.channels.size(), std::size_t{3});
    QCOMPARE(out.channels[0].colour, qRgb(255, 128, 0));
    QCOMPARE(out.shape(), (Shape{3, 384, 512}));
    // Named as the 2D filter it ran as, channel by channel: no z parameter.
    QVERIFY2(!out.name.contains(QStringLiteral("_z")), qPrintable(out.name));
    const HostArray got = out.array.pull();
    const Array in = host().layer(id).array;
    for (std::size_t c = 0; c < 3; ++c) {
      const HostArray want =
          run("gaussian_blur", gpix::channel_plane(in, c), {{"sigma_z", 1.0}}).array.pull();
      QCOMPARE(std::memcmp(got.data() + c * want.bytes(), want.data(), want.bytes()), 0);
    }
    // The recorded step re-run on the composite runs channel by channel too: the same pixels,
    // a composite in the same colours (it ran on the stack as a whole, mixing the channels).
    const QList<int> again = workflow.rerun(host(), id);
    QCOMPARE(again.size(), qsizetype(1));
    const Layer re = host().layer(again.first());
    QVERIFY(re.composite());
    QCOMPARE(re.channels.size(), std::size_t{3});
    QCOMPARE(re.channels[0].colour, qRgb(255, 128, 0));
    const HostArray re_px = re.array.pull();
    QCOMPARE(re_px.bytes(), got.bytes());
    QCOMPARE(std::memcmp(re_px.data(), got.data(), got.bytes()), 0);
    // Recorded as it ran, for the exports: channel by channel.
    QCOMPARE(workflow.steps().size(), qsizetype(2));
    QCOMPARE(workflow.steps().at(1).per_channel, QList<bool>{true});
    host().undo_stack()->undo();
    QCOMPARE(host().layer_ids().size(), qsizetype(2));
    // A table per channel: one table, a "channel" column first, no layer added.
    QVERIFY(panel.select_filter(QStringLiteral("mean_of_all_pixels")));
    host().set_current_layer(id);
    done.clear();
    panel.run();
    QVERIFY(done.wait(120000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids().size(), qsizetype(2));
  }

  // A photo's workflow exported as a shell script and run with the real CLI on the photo gives
  // the pixels the viewer gave: the recorded step says it ran channel by channel, so the script
  // reads the RGB file with --channels split and `gpix run` filters each colour on its own
  // (without either, the run stops at the colour pixels or blurs across the colours).
  void exported_script_runs_channel_by_channel() {
#ifndef GPIX_TEST_CLI
    QSKIP("no gpix CLI known to the test");
#else
    QImage img(97, 61, QImage::Format_RGB32);
    for (int y = 0; y < img.height(); ++y)
      for (int x = 0; x < img.width(); ++x)
        img.setPixel(x, y, qRgb((x * 37 + y * 11) % 256, (x * x + y) % 256, (y * 53) % 256));
    const QString photo = tmp_.filePath(QStringLiteral("export photo.png"));
    QVERIFY(img.save(photo, "PNG"));
    ui::Workflow workflow;
    ui::FilterPanel panel(host(), &workflow);
    const int id = host().add_layer(read(photo));
    QVERIFY(host().layer(id).composite());
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QVERIFY(panel.form()->set_param(QStringLiteral("sigma_z"), 1.5));
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(120000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.error_text()));
    QVERIFY(panel.select_filter(QStringLiteral("multiply_scalar")));
    QVERIFY(panel.form()->set_param(QStringLiteral("factor"), 3.0));
    panel.form()->set_input(0, host().layer_ids().last());
    done.clear();
    panel.run();
    QVERIFY(done.wait(120000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.error_text()));
    QCOMPARE(workflow.steps().size(), qsizetype(2));
    QCOMPARE(workflow.steps().at(0).per_channel, QList<bool>{true});
    QCOMPARE(workflow.steps().at(1).per_channel, QList<bool>{true});
    const HostArray want = host().layer(host().layer_ids().last()).array.pull();

    const QString script = tmp_.filePath(QStringLiteral("photo.sh"));
    QFile f(script);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(workflow.to_cli_script(QStringLiteral(GPIX_TEST_CLI)).toUtf8());
    f.close();
    QTemporaryDir out;
    QVERIFY(out.isValid());
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("GPIX"));
    const gpix::test::ProcessResult sh =
        gpix::test::run_process(QStringLiteral("/bin/sh"), {script, photo},
                                {.timeout_ms = 240000, .working_dir = out.path(), .env = env});
    QVERIFY2(sh.code == 0, qPrintable(QString::fromUtf8(sh.err) + workflow.to_cli_script()));
    // The last step's file: the only one multiply_scalar wrote.
    const QStringList made = QDir(out.path()).entryList({QStringLiteral("*multiply*.nrrd")});
    QCOMPARE(made.size(), qsizetype(1));
    const io::Image got = io::read(QDir(out.path()).filePath(made.first()).toStdString());
    QCOMPARE(got.meta.channels, 3);
    QCOMPARE(got.pixels.shape(), want.shape());
    QCOMPARE(got.pixels.dtype(), want.dtype());
    QCOMPARE(std::memcmp(got.pixels.data(), want.data(), want.bytes()), 0);
#endif
  }

  void filters_run_per_channel() {
    const Array a = Array::push(tiff_data_, default_device());
    const Params p = {{"sigma_x", 2.0}, {"sigma_y", 2.0}};
    const Result r = gpix::run_per_channel("gaussian_blur", std::vector<Array>{a}, {true}, p, {});
    QCOMPARE(r.array.shape(), (Shape{3, 384, 512}));
    const HostArray got = r.array.pull();
    for (std::size_t c = 0; c < 3; ++c) {
      const Array plane = gpix::channel_plane(a, c);
      const HostArray want = run("gaussian_blur", plane, p).array.pull();
      QCOMPARE(std::memcmp(got.data() + c * want.bytes(), want.data(), want.bytes()), 0);
    }
    // On the stack as a whole (3D), sigma_z would mix the channels: not what per channel gives.
    const HostArray whole =
        run("gaussian_blur", a, {{"sigma_x", 2.0}, {"sigma_y", 2.0}, {"sigma_z", 1.0}})
            .array.pull();
    QVERIFY(std::memcmp(whole.data(), got.data(), got.bytes()) != 0);
    // Tables: one, its "channel" column numbering the channels from 1, then the filter's.
    const Result t =
        gpix::run_per_channel("mean_of_all_pixels", std::vector<Array>{a}, {true}, {}, {});
    QVERIFY(t.is_table());
    QCOMPARE(t.table.size(), std::size_t{3});
    QCOMPARE(t.table.columns().front(), std::string("channel"));
    for (std::size_t c = 0; c < 3; ++c) {
      const Table one = run("mean_of_all_pixels", gpix::channel_plane(a, c)).table;
      QCOMPARE(t.table.width(), one.width() + 1);
      QCOMPARE(t.table(c, 0), double(c + 1));
      for (std::size_t j = 0; j < one.width(); ++j) QCOMPARE(t.table(c, j + 1), one(0, j));
    }
    // An unmarked stack of the channels' shape pairs plane by plane (labels made channel by
    // channel, a second multi-channel image): the same as the pixel-wise whole.
    const Array same = Array::push(a.pull(), a.device());
    const Result paired =
        gpix::run_per_channel("add_images", std::vector<Array>{a, same}, {true, false}, {}, {});
    const HostArray want_sum = run("add_images", std::vector<Array>{a, same}).array.pull();
    QCOMPARE(std::memcmp(paired.array.pull().data(), want_sum.data(), want_sum.bytes()), 0);
    // A 2D image goes whole to every channel.
    const Array mask = gpix::channel_plane(a, 1);
    const HostArray masked =
        gpix::run_per_channel("add_images", std::vector<Array>{a, mask}, {true, false}, {}, {})
            .array.pull();
    for (std::size_t c = 0; c < 3; ++c) {
      const HostArray one =
          run("add_images", std::vector<Array>{gpix::channel_plane(a, c), mask}).array.pull();
      QCOMPARE(std::memcmp(masked.data() + c * one.bytes(), one.data(), one.bytes()), 0);
    }
    // Inputs of different channel counts: refused, naming both counts and the way out.
    const Array two = Array::empty(Shape{2, 384, 512}, a.dtype(), a.device());
    try {
      gpix::run_per_channel("add_images", std::vector<Array>{a, two}, {true, true}, {}, {});
      QFAIL("3 and 2 channels were paired");
    } catch (const InvalidArgument& e) {
      QVERIFY2(QString(e.what()).contains(QLatin1String("3 and 2 channels")), e.what());
    }
    // An unmarked stack of another shape pairs with no channel: refused, saying what would.
    try {
      gpix::run_per_channel("add_images", std::vector<Array>{a, two}, {true, false}, {}, {});
      QFAIL("a 2-plane stack was paired with 3 channels");
    } catch (const InvalidArgument& e) {
      QVERIFY2(QString(e.what()).contains(QLatin1String("pairs with no channel")), e.what());
    }
  }
};

QTEST_MAIN(TestComposite)
#include "test_composite.moc"
