// Labels as first-class layers (issue 16), offscreen on a BasicHost with the gpix plugin's
// formats: results of labelling filters are labels; labels saved as TIFF, NRRD, MetaImage and
// NIfTI reopen as labels with the same colours (and images do not); the outline mode draws
// exactly the pixels whose 4-neighbour holds another id; the label panel's measurements equal a
// plain reference on blob images (512x512 with ~100 blobs, a 32x128x128 stack), sort by any
// column, export the same numbers as CSV, and a click in the view picks the label under it.
#include <QApplication>
#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QSettings>
#include <QSignalSpy>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

#include "formats.h"
#include "gpix/basic_host.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/segmentation.h"
#include "gpix/io.h"
#include "gpix/render.h"
#include "gpix/slab_files.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/label_panel.h"
#include "gpix/ui/labels.h"
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

// About n bright ellipses (ellipsoids in 3D) of random size and brightness on a noisy
// background, float32: what a fluorescence image of nuclei looks like to a threshold.
HostArray blobs(const Shape& s, int n) {
  auto& r = test::rng();
  std::normal_distribution<double> noise(100, 5);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<float> v(s.elements());
  for (auto& x : v) x = float(noise(r));
  const bool stack = s.ndim() == 3;
  const auto w = double(s.width()), h = double(s.height()), d = double(s.depth());
  for (int b = 0; b < n; ++b) {
    const double cx = u(r) * w, cy = u(r) * h, cz = stack ? u(r) * d : 0;
    const double rx = 3 + u(r) * 8, ry = 3 + u(r) * 8, rz = stack ? 1.5 + u(r) * 3 : 1;
    const double peak = 200 + u(r) * 800;
    const auto lo = [](double c, double rad) { return std::size_t(std::max(0.0, c - rad - 1)); };
    const auto hi = [](double c, double rad, double e) {
      return std::size_t(std::min(e, c + rad + 2));
    };
    for (std::size_t z = lo(cz, rz); z < (stack ? hi(cz, rz, d) : 1); ++z) {
      for (std::size_t y = lo(cy, ry); y < hi(cy, ry, h); ++y) {
        for (std::size_t x = lo(cx, rx); x < hi(cx, rx, w); ++x) {
          const double q = std::pow((double(x) - cx) / rx, 2) + std::pow((double(y) - cy) / ry, 2) +
                           (stack ? std::pow((double(z) - cz) / rz, 2) : 0);
          if (q < 1) v[(z * s.height() + y) * s.width() + x] += float(peak * (1 - 0.5 * q));
        }
      }
    }
  }
  return HostArray::from(v, s);
}

// Labels of the blobs as the viewer's user would make them: threshold, connected components.
Array label_blobs(const Array& intensity) {
  return connected_components(threshold(intensity, 150), "face");
}

std::vector<std::uint64_t> ids_of(const HostArray& labels) {
  return visit_dtype(labels.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<std::uint64_t> out;
    if constexpr (std::is_integral_v<T>) {
      for (T v : labels.as<T>()) out.push_back(std::uint64_t(v));
    }
    return out;
  });
}

// The outline as a plain loop: a pixel keeps its colour where a 4-neighbour inside the plane
// holds another id; everything else is entry 0 of the labels table.
std::vector<std::uint32_t> outline_reference(const HostArray& labels, std::size_t z) {
  const Shape& s = labels.shape();
  const std::size_t w = s.width(), h = s.height();
  const std::vector<std::uint64_t> all = ids_of(labels);
  const std::uint64_t* id = all.data() + z * w * h;
  const Lut& lut = gpix::lut("labels");
  std::vector<std::uint32_t> out(w * h, lut.table[0]);
  for (std::size_t y = 0; y < h; ++y) {
    for (std::size_t x = 0; x < w; ++x) {
      const std::uint64_t c = id[y * w + x];
      const bool border =
          (x > 0 && id[y * w + x - 1] != c) || (x + 1 < w && id[y * w + x + 1] != c) ||
          (y > 0 && id[(y - 1) * w + x] != c) || (y + 1 < h && id[(y + 1) * w + x] != c);
      if (border && c != 0) out[y * w + x] = lut.table[1 + (c - 1) % 255];
    }
  }
  return out;
}

// Per-label measurements by a plain loop over the pixels.
struct RefLabel {
  double count = 0, sum[3] = {0, 0, 0};
  double lo[3] = {1e300, 1e300, 1e300}, hi[3] = {-1, -1, -1};
  double isum = 0, imin = std::numeric_limits<double>::infinity(), imax = -imin;
};

std::map<std::uint64_t, RefLabel> reference(const HostArray& labels, const HostArray& intensity) {
  const Shape& s = labels.shape();
  const std::vector<std::uint64_t> id = ids_of(labels);
  const auto values = intensity.as<float>();
  std::map<std::uint64_t, RefLabel> out;
  std::size_t i = 0;
  for (std::size_t z = 0; z < s.depth(); ++z) {
    for (std::size_t y = 0; y < s.height(); ++y) {
      for (std::size_t x = 0; x < s.width(); ++x, ++i) {
        if (id[i] == 0) continue;
        RefLabel& r = out[id[i]];
        r.count += 1;
        const double c[3] = {double(x), double(y), double(z)};
        for (int a = 0; a < 3; ++a) {
          r.sum[a] += c[a];
          r.lo[a] = std::min(r.lo[a], c[a]);
          r.hi[a] = std::max(r.hi[a], c[a]);
        }
        r.isum += double(values[i]);
        r.imin = std::min(r.imin, double(values[i]));
        r.imax = std::max(r.imax, double(values[i]));
      }
    }
  }
  return out;
}

bool close(double got, double want, double rel) {
  return std::abs(got - want) <= rel * std::max(1.0, std::abs(want));
}

// The table measure_labels gives (any row order) against the plain reference.
void check_table(const Table& t, const HostArray& labels, const HostArray& intensity) {
  const bool stack = labels.shape().ndim() == 3;
  std::vector<std::string> want_cols = {"label", stack ? "volume" : "area", "centroid_x",
                                        "centroid_y"};
  if (stack) want_cols.emplace_back("centroid_z");
  for (const char* a : {"x", "y", "z"}) {
    if (!stack && std::string(a) == "z") break;
    want_cols.push_back(std::string(a) + "_min");
    want_cols.push_back(std::string(a) + "_max");
  }
  for (const char* c : {"mean_intensity", "min_intensity", "max_intensity"})
    want_cols.emplace_back(c);
  QCOMPARE(t.columns(), want_cols);
  const auto ref = reference(labels, intensity);
  QCOMPARE(t.size(), ref.size());
  const int nd = stack ? 3 : 2;
  for (std::size_t tr = 0; tr < t.size(); ++tr) {
    const std::vector<double> row = t.row(tr).values();
    const auto it = ref.find(std::uint64_t(row[0]));
    QVERIFY2(it != ref.end(),
             qPrintable(QStringLiteral("label %1 is not in the image").arg(row[0])));
    const RefLabel& r = it->second;
    QCOMPARE(row[1], r.count);
    std::size_t c = 2;
    for (int a = 0; a < nd; ++a, ++c) QVERIFY(close(row[c], r.sum[a] / r.count, 1e-12));
    for (int a = 0; a < nd; ++a) {
      QCOMPARE(row[c++], r.lo[a]);
      QCOMPARE(row[c++], r.hi[a]);
    }
    QVERIFY2(close(row[c], r.isum / r.count, 1e-9),
             qPrintable(QStringLiteral("mean %1 vs %2").arg(row[c]).arg(r.isum / r.count)));
    QCOMPARE(row[c + 1], r.imin);
    QCOMPARE(row[c + 2], r.imax);
  }
}

// The exported CSV (argv[3]) against scipy.ndimage over the labels (argv[1]) and the
// intensity image (argv[2]): counts, centre of mass (z, y, x), find_objects' slices (stop
// exclusive, the CSV's max inclusive), mean/minimum/maximum.
constexpr const char* kScipyCheck = R"(
import csv, sys
import numpy as np, tifffile
from scipy import ndimage
lab = tifffile.imread(sys.argv[1]).astype(np.int64)
img = tifffile.imread(sys.argv[2]).astype(np.float64)
rows = list(csv.DictReader(open(sys.argv[3])))
ids = [int(r["label"]) for r in rows]
assert sorted(ids) == sorted(set(np.unique(lab)) - {0}), "labels differ"
count = ndimage.sum_labels(np.ones(lab.shape), lab, ids)
com = ndimage.center_of_mass(np.ones(lab.shape), lab, ids)
mean = ndimage.mean(img, lab, ids)
lo = ndimage.minimum(img, lab, ids)
hi = ndimage.maximum(img, lab, ids)
boxes = ndimage.find_objects(lab)
axes = "zyx"[3 - lab.ndim:]
size = "volume" if lab.ndim == 3 else "area"
for i, r in enumerate(rows):
    assert float(r[size]) == count[i], (r["label"], r[size], count[i])
    for a, name in enumerate(axes):
        assert abs(float(r["centroid_" + name]) - com[i][a]) < 1e-9, (r["label"], name)
        box = boxes[ids[i] - 1][a]
        assert float(r[name + "_min"]) == box.start and float(r[name + "_max"]) == box.stop - 1
    assert abs(float(r["mean_intensity"]) - mean[i]) <= 1e-9 * max(1, abs(mean[i])), r["label"]
    assert float(r["min_intensity"]) == lo[i] and float(r["max_intensity"]) == hi[i], r["label"]
print("ok", len(rows))
)";

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// The widget position of the centre of image pixel (x, y).
QPoint widget_pos(const ui::ImageView& view, int x, int y) {
  const QPointF origin = view.image_pos(QPointF(0, 0));  // -offset / zoom
  return ((QPointF(x + 0.5, y + 0.5) - origin) * view.zoom()).toPoint();
}

}  // namespace

class TestLabels : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<BasicHost> host_;

  BasicHost& host() { return *host_; }
  int add(const QString& name, const Array& a, bool labels) {
    Layer l;
    l.name = name;
    l.array = a;
    if (labels) l.mark_labels();
    return host().add_layer(l);
  }

 private slots:
  void init() {
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("t.ini")), QSettings::IniFormat));
    formats::register_all(*host_);
  }
  void cleanup() { host_.reset(); }

  // The filter panel and a workflow re-run mark label outputs (from the catalog) as labels,
  // and only those.
  void filter_results_are_labels() {
    ui::Workflow workflow;
    ui::FilterPanel panel(host(), &workflow);
    const Array img = Array::push(blobs(Shape{64, 80}, 8), default_device());
    const int in = add(QStringLiteral("blobs"), img, false);
    QVERIFY(!host().layer(in).labels);
    const auto run = [&](const QString& filter, int input) {
      QVERIFY(panel.select_filter(filter));
      panel.form()->set_input(0, input);
      QSignalSpy done(&panel, &ui::FilterPanel::finished);
      panel.run();
      QVERIFY(done.wait(60000));
      QCOMPARE(done.first().first().toBool(), true);
    };
    run(QStringLiteral("threshold"), in);
    if (QTest::currentTestFailed()) return;
    const int mask = host().layer_ids().last();
    QVERIFY(!host().layer(mask).labels);  // binary, not labels
    run(QStringLiteral("connected_components"), mask);
    if (QTest::currentTestFailed()) return;
    const Layer cc = host().layer(host().layer_ids().last());
    QVERIFY(cc.labels);
    QCOMPARE(cc.colormap, QStringLiteral("labels"));
    QCOMPARE(cc.array.dtype(), DType::u32);
    const QList<int> again = workflow.rerun(host(), in);
    QCOMPARE(again.size(), 2);
    QVERIFY(!host().layer(again[0]).labels);
    QVERIFY(host().layer(again[1]).labels);
    QCOMPARE(host().layer(again[1]).colormap, QStringLiteral("labels"));
  }

  // Saved by gpix, reopened: still labels, same pixels, same colours; an image saved the same
  // way stays an image.
  void saved_labels_reopen_as_labels_data() {
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<QString>("suffix");
    QTest::addColumn<bool>("stack");
    const std::pair<DType, const char*> rows[] = {
        {DType::u32, ".tif"},  {DType::u16, ".tif"},   {DType::u8, ".tif"},  {DType::i32, ".tif"},
        {DType::u32, ".nrrd"}, {DType::i32, ".nrrd"},  {DType::u16, ".mha"}, {DType::u32, ".mha"},
        {DType::u32, ".nii"},  {DType::u16, ".nii.gz"}};
    for (const auto& [t, suffix] : rows) {
      for (bool stack : {false, true}) {
        QTest::addRow("%s%s%s", name(t).data(), suffix, stack ? " 3D" : "")
            << t << QString::fromLatin1(suffix) << stack;
      }
    }
  }
  void saved_labels_reopen_as_labels() {
    QFETCH(DType, dtype);
    QFETCH(QString, suffix);
    QFETCH(bool, stack);
    const Shape s = stack ? Shape{9, 70, 61} : Shape{97, 131};
    const Array intensity = Array::push(blobs(s, stack ? 12 : 30), default_device());
    const Array lab = convert(label_blobs(intensity), dtype);
    const int id = add(QStringLiteral("cells"), lab, true);
    const QString path =
        tmp_.filePath(QStringLiteral("cells_%1%2%3")
                          .arg(QString::fromStdString(std::string(name(dtype))))
                          .arg(stack ? QLatin1String("_3d") : QLatin1String(), suffix));
    host().save_layer(id, path);
    const QList<int> back_ids = host().open_file(path);
    QCOMPARE(back_ids.size(), 1);
    const Layer back = host().layer(back_ids.first());
    QVERIFY(back.labels);
    QCOMPARE(back.colormap, QStringLiteral("labels"));
    const HostArray want = lab.pull();
    QVERIFY(same_bytes(back.host.valid() ? back.host : back.array.pull(), want));
    const ui::RenderOptions o{stack ? 4 : 0, 0, 1, back.colormap};
    const QImage shown =
        back.array.valid() ? ui::render(back.array, o) : ui::render(back.host, default_device(), o);
    QCOMPARE(words(shown), words(ui::render(lab, {stack ? 4 : 0, 0, 1, QStringLiteral("labels")})));
    // The mark, not the dtype, makes labels: the same pixels saved as an image stay an image.
    Layer plain = host().layer(id);
    plain.labels = false;
    plain.colormap = QStringLiteral("gray");
    host().replace_layer(id, plain);
    const QString image_path = tmp_.filePath(QStringLiteral("image_") + QFileInfo(path).fileName());
    host().save_layer(id, image_path);
    const Layer image = host().layer(host().open_file(image_path).first());
    QVERIFY(!image.labels);
    QCOMPARE(image.colormap, QStringLiteral("gray"));
    // Integers the user shows with the labels colour map (a label image made elsewhere) are
    // saved as labels too; floats under that map stay an image on disk.
    Layer chosen = host().layer(id);
    chosen.colormap = QStringLiteral("labels");
    host().replace_layer(id, chosen);
    QVERIFY(!host().layer(id).labels);
    const QString chosen_path =
        tmp_.filePath(QStringLiteral("chosen_") + QFileInfo(path).fileName());
    host().save_layer(id, chosen_path);
    const Layer reopened = host().layer(host().open_file(chosen_path).first());
    QVERIFY(reopened.labels);
    QCOMPARE(reopened.colormap, QStringLiteral("labels"));
    const int floats = add(QStringLiteral("float ids"), convert(lab, DType::f32), false);
    Layer shown_float = host().layer(floats);
    shown_float.colormap = QStringLiteral("labels");
    host().replace_layer(floats, shown_float);
    const QString float_path = tmp_.filePath(QStringLiteral("float_") + QFileInfo(path).fileName());
    host().save_layer(floats, float_path);
    QVERIFY(!host().layer(host().open_file(float_path).first()).labels);
  }

  // gpix_io itself: the mark survives write/read where Format::labels_marker says so, and PNG
  // (which has no room for it) reads back as an image.
  void io_keeps_the_mark() {
    const HostArray h = label_blobs(Array::push(blobs(Shape{40, 50}, 6), default_device())).pull();
    io::Metadata m;
    m.labels = true;
    for (const io::Format& f : io::formats()) {
      if (f.lossy || f.name == "PNG") {
        QVERIFY(!f.labels_marker);
        continue;
      }
      QVERIFY2(f.labels_marker, f.name.c_str());
      const std::filesystem::path p =
          tmp_.filePath(QStringLiteral("io_labels")).toStdString() + f.extensions.front();
      io::write(p, h, m);
      QVERIFY2(io::read(p).meta.labels, f.name.c_str());
      io::write(p, h);
      QVERIFY2(!io::read(p).meta.labels, f.name.c_str());
    }
    // Written and read plane by plane (gpix run --tiled) the same.
    const HostArray stack =
        label_blobs(Array::push(blobs(Shape{4, 30, 20}, 3), default_device())).pull();
    for (const char* ext : {".tif", ".nrrd", ".nhdr", ".mha", ".mhd"}) {
      for (bool labels : {true, false}) {
        // One name a format: .nhdr's data file would be .mhd's (slabs.raw), which is refused.
        const std::filesystem::path p =
            tmp_.filePath(QStringLiteral("slabs")).toStdString() + &ext[1] + ext;
        io::Metadata sm;
        sm.labels = labels;
        std::unique_ptr<SlabSink> sink = io::create_slabs(p, sm);
        QVERIFY2(sink, ext);
        sink->start(stack.shape(), stack.dtype());
        sink->write(0, 4, stack.data());
        sink->finish();
        sink.reset();
        QCOMPARE(io::read(p).meta.labels, labels);
        const auto source = io::open_slabs(p);
        QVERIFY2(source, ext);
        QCOMPARE(source->metadata().labels, labels);
        QVERIFY(same_bytes(io::read(p).pixels, stack));
      }
    }
  }

  // The command line marks what labelling filters write (and `gpix info` says so); the TIFF
  // mark is a tag that tifffile reads as the text gpix wrote.
  void cli_marks_label_outputs() {
    const Array img = Array::push(blobs(Shape{120, 90}, 12), default_device());
    const std::string in = tmp_.filePath(QStringLiteral("cli_blobs.tif")).toStdString();
    io::write(in, img);
    const QString mask = tmp_.filePath(QStringLiteral("cli_mask.tif"));
    const QString cells = tmp_.filePath(QStringLiteral("cli_cells.tif"));
    const auto ok = [](const test::ProcessResult& r) {
      return r.code == 0 ? QByteArray() : r.err + r.out;
    };
    QCOMPARE(ok(test::run_cli({QStringLiteral("run"), QStringLiteral("threshold"),
                               QString::fromStdString(in), mask, QStringLiteral("--value"),
                               QStringLiteral("150")})),
             QByteArray());
    QCOMPARE(ok(test::run_cli(
                 {QStringLiteral("run"), QStringLiteral("connected_components"), mask, cells})),
             QByteArray());
    QVERIFY(!io::read(mask.toStdString()).meta.labels);
    const io::Image labels = io::read(cells.toStdString());
    QVERIFY(labels.meta.labels);
    // The CLI's default connectivity ("full").
    QVERIFY(same_bytes(labels.pixels, connected_components(threshold(img, 150)).pull()));
    const test::ProcessResult info = test::run_cli({QStringLiteral("info"), cells});
    QVERIFY2(info.out.contains("pixels: labels"), info.out.constData());
    const test::ProcessResult py =
        test::run_process(QStringLiteral("/usr/bin/python3"),
                          {QStringLiteral("-c"),
                           QStringLiteral("import sys, tifffile\n"
                                          "p = tifffile.TiffFile(sys.argv[1]).pages[0]\n"
                                          "print(p.tags[65011].value, p.asarray().dtype)"),
                           cells});
    if (py.code != 0 && py.err.contains("No module named")) QSKIP("python3-tifffile is missing");
    QCOMPARE(py.out.trimmed(), QByteArray("gpix_kind=labels uint32"));
  }

  // Outline: exactly the pixels with a differing 4-neighbour in the plane, in core's label
  // colours; 2D and a slice of a stack, every label dtype, and through the image view.
  void outline_matches_reference() {
    const Array blobs2d = Array::push(blobs(Shape{512, 512}, 100), default_device());
    const Array blobs3d = Array::push(blobs(Shape{32, 128, 128}, 60), default_device());
    for (const Array& img : {blobs2d, blobs3d}) {
      const Array u32 = label_blobs(img);
      for (DType t : {DType::u32, DType::u16, DType::u8, DType::i32, DType::i64}) {
        const Array lab = convert(u32, t);
        const int z = lab.ndim() == 3 ? 17 : 0;
        const QImage got = ui::render(lab, {z, 0, 1, QStringLiteral("labels"), true});
        QCOMPARE(words(got), outline_reference(lab.pull(), std::size_t(z)));
      }
    }
    // Outline is a way of drawing labels; an intensity map is refused, not ignored.
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             ui::render(blobs2d, {0, 0, 1, QStringLiteral("gray"), true}));
    // The view draws a layer's outline through the same path.
    ui::ImageView view(host());
    view.resize(400, 400);
    view.show();
    const Array lab = label_blobs(blobs3d);
    Layer l;
    l.name = QStringLiteral("stack labels");
    l.array = lab;
    l.mark_labels();
    l.outline = true;
    const int id = host().add_layer(l);
    view.set_slice(9);
    QTRY_VERIFY_WITH_TIMEOUT(!view.frame(id).isNull() && !view.busy(), 30000);
    QCOMPARE(words(view.frame(id)), outline_reference(lab.pull(), 9));
  }

  // The panel's table against the plain reference, 2D (512x512, ~100 blobs) and 3D
  // (32x128x128); sorting by any column; the CSV (string and file) carries the same numbers.
  void table_matches_reference_data() {
    QTest::addColumn<bool>("stack");
    QTest::newRow("512x512") << false;
    QTest::newRow("32x128x128") << true;
  }
  void table_matches_reference() {
    QFETCH(bool, stack);
    const Shape s = stack ? Shape{32, 128, 128} : Shape{512, 512};
    const HostArray inten_host = blobs(s, stack ? 60 : 100);
    const Array intensity = Array::push(inten_host, default_device());
    const Array lab = label_blobs(intensity);
    ui::LabelPanel panel(host());
    QSignalSpy measured(&panel, &ui::LabelPanel::measured);
    add(QStringLiteral("nuclei"), intensity, false);
    const int lid = add(QStringLiteral("nuclei labels"), lab, true);
    QCOMPARE(panel.labels_layer(), lid);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !measured.isEmpty(), 60000);
    QVERIFY2(panel.error_text().isEmpty(), qPrintable(panel.error_text()));
    ui::LabelTableModel* model = panel.model();
    QVERIFY(model->rowCount() > (stack ? 20 : 60));
    check_table(model->table(), lab.pull(), inten_host);
    if (QTest::currentTestFailed()) return;
    // measure_labels itself gives the same, in id order.
    const Table direct = ui::measure_labels(lab, intensity);
    QVERIFY(direct == model->table());
    for (std::size_t r = 1; r < direct.size(); ++r) QVERIFY(direct(r - 1, 0) < direct(r, 0));

    // Sorting: every column, both ways; the rows stay whole.
    for (int c = 0; c < model->columnCount(); ++c) {
      for (Qt::SortOrder order : {Qt::DescendingOrder, Qt::AscendingOrder}) {
        panel.table()->sortByColumn(c, order);
        const Table& t = model->table();
        QCOMPARE(t.size(), direct.size());
        for (std::size_t r = 1; r < t.size(); ++r) {
          const double a = t(r - 1, std::size_t(c)), b = t(r, std::size_t(c));
          QVERIFY(order == Qt::AscendingOrder ? a <= b : a >= b);
        }
        check_table(t, lab.pull(), inten_host);
        if (QTest::currentTestFailed()) return;
        // What the view shows is the model's order.
        QCOMPARE(panel.table()->model()->index(0, c).data(Qt::UserRole).toDouble(),
                 t(0, std::size_t(c)));
      }
    }
    panel.table()->sortByColumn(
        model->column(stack ? QStringLiteral("volume") : QStringLiteral("area")),
        Qt::DescendingOrder);

    // CSV: the header, then the rows in the order on screen, every number exact.
    const QString csv = panel.csv();
    const QStringList lines = csv.trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), model->rowCount() + 1);
    QStringList head;
    for (const auto& c : model->table().columns()) head << QString::fromStdString(c);
    QCOMPARE(lines.first(), head.join(QLatin1Char(',')));
    for (int r = 0; r < model->rowCount(); ++r) {
      const QStringList cells = lines[r + 1].split(QLatin1Char(','));
      QCOMPARE(cells.size(), model->columnCount());
      for (int c = 0; c < cells.size(); ++c) {
        bool ok = false;
        const double v = cells[c].toDouble(&ok);
        QVERIFY2(ok, qPrintable(cells[c]));
        QCOMPARE(v, model->value(r, c));
      }
    }
    const QString file = tmp_.filePath(stack ? QStringLiteral("m3.csv") : QStringLiteral("m2.csv"));
    QSignalSpy exported(&panel, &ui::LabelPanel::exported);
    panel.export_csv(file);
    QVERIFY(exported.wait(30000));
    QCOMPARE(exported.first().at(1).toString(), QString());
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(f.readAll()), csv);

    // And the exported file against scipy.ndimage on the same pixels (read by tifffile).
    const std::string lab_tif = tmp_.filePath(QStringLiteral("m_labels.tif")).toStdString();
    const std::string img_tif = tmp_.filePath(QStringLiteral("m_image.tif")).toStdString();
    io::write(lab_tif, lab);
    io::write(img_tif, inten_host);
    const test::ProcessResult py =
        test::run_process(QStringLiteral("/usr/bin/python3"),
                          {QStringLiteral("-c"), QString::fromLatin1(kScipyCheck),
                           QString::fromStdString(lab_tif), QString::fromStdString(img_tif), file},
                          {.merge_channels = true});
    if (py.code != 0 && py.out.contains("No module named")) QSKIP("python3-scipy is missing");
    QVERIFY2(py.code == 0, py.out.constData());
    QCOMPARE(py.out.trimmed(), QByteArray("ok ") + QByteArray::number(model->rowCount()));
  }

  // Without an intensity layer of the same shape: geometry only. Ids that are not in the image
  // have no row. Float labels and huge ids are errors shown in the panel, not a wrong table.
  void table_without_intensity_and_errors() {
    std::vector<std::uint16_t> v(30 * 40, 0);
    for (std::size_t i = 100; i < 140; ++i) v[i] = 7;  // only id 7 (1..6 absent)
    v[1199] = 3;
    const Array lab = Array::push(v, Shape{30, 40});
    const Table t = ui::measure_labels(lab);
    QCOMPARE(t.columns().size(), std::size_t(8));
    QCOMPARE(t.size(), std::size_t(2));
    QCOMPARE(t.row(0).values(), (std::vector<double>{3, 1, 39, 29, 39, 39, 29, 29}));
    QCOMPARE(t(1, 0), 7.0);
    QCOMPARE(t(1, 1), 40.0);
    ui::LabelPanel panel(host());
    QSignalSpy measured(&panel, &ui::LabelPanel::measured);
    add(QStringLiteral("other shape"), Array::push(blobs(Shape{8, 8}, 1), default_device()), false);
    add(QStringLiteral("sparse"), lab, true);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !measured.isEmpty(), 30000);
    QCOMPARE(panel.intensity_layer(), -1);
    QCOMPARE(panel.model()->rowCount(), 2);
    QCOMPARE(panel.model()->columnCount(), 8);
    measured.clear();
    const std::vector<std::uint32_t> huge = {0, 20000000, 1, 1};
    add(QStringLiteral("huge ids"), Array::push(huge, Shape{2, 2}), true);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !measured.isEmpty(), 30000);
    QVERIFY2(panel.error_text().contains(QStringLiteral("relabel_sequential")),
             qPrintable(panel.error_text()));
    QCOMPARE(panel.model()->rowCount(), 0);
    QVERIFY_THROWS_EXCEPTION(UnsupportedDType, ui::measure_labels(convert(lab, DType::f32)));
  }

  // A click on a label selects its row, shows its measurements and boxes it in the view;
  // selecting a row centres the view on the label; the background is said to be background.
  void click_picks_label() {
    ui::ImageView view(host());
    view.resize(600, 600);
    ui::LabelPanel panel(host(), &view);
    view.show();
    panel.show();
    const HostArray inten_host = blobs(Shape{256, 256}, 30);
    const Array intensity = Array::push(inten_host, default_device());
    const Array lab = label_blobs(intensity);
    QSignalSpy measured(&panel, &ui::LabelPanel::measured);
    add(QStringLiteral("nuclei"), intensity, false);
    add(QStringLiteral("nuclei labels"), lab, true);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !measured.isEmpty() && !view.busy(), 60000);
    const HostArray ids = lab.pull();
    const auto id = ids.as<std::uint32_t>();
    // The largest label and one of its pixels.
    ui::LabelTableModel* m = panel.model();
    panel.table()->sortByColumn(m->column(QStringLiteral("area")), Qt::DescendingOrder);
    const double want = m->value(0, 0);
    std::size_t at = 0;
    while (id[at] != want) ++at;
    const int x = int(at % 256), y = int(at / 256);
    QSignalSpy picked(&panel, &ui::LabelPanel::picked);
    panel.table()->sortByColumn(0, Qt::AscendingOrder);
    QTest::mouseClick(&view, Qt::LeftButton, {}, widget_pos(view, x, y));
    QVERIFY(picked.wait(30000));
    QCOMPARE(panel.picked_label(), want);
    const int row = panel.table()->currentIndex().row();
    QCOMPARE(m->value(row, 0), want);
    QVERIFY2(panel.details().contains(QStringLiteral("Label %1").arg(want)),
             qPrintable(panel.details()));
    const auto col = [&](const char* c) { return m->value(row, m->column(QLatin1String(c))); };
    QCOMPARE(view.highlight(), QRectF(col("x_min"), col("y_min"), col("x_max") - col("x_min") + 1,
                                      col("y_max") - col("y_min") + 1));
    // Centred: the view's middle shows the label's centroid.
    const QPointF mid = view.image_pos(QPointF(view.width() / 2.0, view.height() / 2.0));
    QVERIFY(std::abs(mid.x() - (col("centroid_x") + 0.5)) < 1e-6);
    QVERIFY(std::abs(mid.y() - (col("centroid_y") + 0.5)) < 1e-6);
    // Selecting another row moves the box there.
    const int other = row == 0 ? 1 : 0;
    panel.table()->selectRow(other);
    QCOMPARE(view.highlight().x(), m->value(other, m->column(QStringLiteral("x_min"))));
    // The background.
    std::size_t bg = 0;
    while (id[bg] != 0) ++bg;
    picked.clear();
    view.fit();
    QTest::mouseClick(&view, Qt::LeftButton, {}, widget_pos(view, int(bg % 256), int(bg / 256)));
    QVERIFY(picked.wait(30000));
    QCOMPARE(panel.picked_label(), 0.0);
    QVERIFY(view.highlight().isEmpty());
    // The outline box of the panel sets the layer's outline mode.
    panel.outline_box()->setChecked(true);
    QVERIFY(host().layer(panel.labels_layer()).outline);
  }

  // A stack: a selected row takes the view to its centroid's slice, and a click there picks
  // the label of that slice.
  void stack_row_goes_to_its_slice() {
    ui::ImageView view(host());
    view.resize(500, 500);
    ui::LabelPanel panel(host(), &view);
    view.show();
    const Array intensity = Array::push(blobs(Shape{32, 128, 128}, 40), default_device());
    const Array lab = label_blobs(intensity);
    QSignalSpy measured(&panel, &ui::LabelPanel::measured);
    add(QStringLiteral("stack"), intensity, false);
    add(QStringLiteral("stack labels"), lab, true);
    QTRY_VERIFY_WITH_TIMEOUT(!panel.busy() && !measured.isEmpty() && !view.busy(), 60000);
    ui::LabelTableModel* m = panel.model();
    panel.table()->sortByColumn(m->column(QStringLiteral("volume")), Qt::DescendingOrder);
    const double label = m->value(0, 0);
    const auto col = [&](const char* c) { return m->value(0, m->column(QLatin1String(c))); };
    panel.select_label(label);
    const int z = int(std::lround(col("centroid_z")));
    QCOMPARE(view.slice(), z);
    QCOMPARE(view.highlight(), QRectF(col("x_min"), col("y_min"), col("x_max") - col("x_min") + 1,
                                      col("y_max") - col("y_min") + 1));
    // A pixel of that label, on slice z where it has one (a merged blob may not).
    const HostArray ids = lab.pull();
    const auto id = ids.as<std::uint32_t>();
    const std::size_t plane = 128 * 128;
    std::size_t at = std::size_t(z) * plane;
    while (at < (std::size_t(z) + 1) * plane && id[at] != label) ++at;
    if (at == (std::size_t(z) + 1) * plane) {
      at = 0;
      while (id[at] != label) ++at;
      view.set_slice(int(at / plane));
    }
    view.fit();
    QSignalSpy picked(&panel, &ui::LabelPanel::picked);
    QTest::mouseClick(&view, Qt::LeftButton, {},
                      widget_pos(view, int(at % 128), int(at / 128 % 128)));
    QVERIFY(picked.wait(30000));
    QCOMPARE(panel.picked_label(), label);
  }

  // The labels colour map and the table as a user sees them; GPIX_SCREENSHOT_DIR keeps the
  // picture (docs/screenshot_labels.png is made this way).
  void screenshot() {
    QWidget window;
    auto* row = new QHBoxLayout(&window);
    auto* view = new ui::ImageView(host());
    auto* panel = new ui::LabelPanel(host(), view);
    row->addWidget(view, 3);
    row->addWidget(panel, 2);
    window.resize(1200, 640);
    window.show();
    const HostArray inten_host = blobs(Shape{512, 512}, 100);
    const Array intensity = Array::push(inten_host, default_device());
    QSignalSpy measured(panel, &ui::LabelPanel::measured);
    add(QStringLiteral("nuclei"), intensity, false);
    const int lid = add(QStringLiteral("nuclei labels"), label_blobs(intensity), true);
    Layer l = host().layer(lid);
    l.opacity = 0.7;
    host().replace_layer(lid, l);
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy() && !measured.isEmpty() && !view->busy(), 60000);
    panel->table()->sortByColumn(1, Qt::DescendingOrder);
    view->set_zoom(2.0);
    panel->select_label(panel->model()->value(2, 0));
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QTest::qWait(100);  // the layout follows the new details text on a later event
    const QImage shot = window.grab().toImage();
    QVERIFY(!shot.isNull());
    QVERIFY(shot.save(tmp_.filePath(QStringLiteral("labels.png"))));
    const QString dir = qEnvironmentVariable("GPIX_SCREENSHOT_DIR");
    if (!dir.isEmpty()) QVERIFY(shot.save(dir + QStringLiteral("/screenshot_labels.png")));
  }
};

QTEST_MAIN(TestLabels)
#include "test_labels.moc"
