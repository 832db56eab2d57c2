// `gpix info <file>` on files written by gpix_io, --json checked field by field.
#include <sys/types.h>

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <array>
#include <cmath>
#include <csignal>
#include <cstring>

#include "gpix/channels.h"
#include "gpix/filters.h"
#include "gpix/io.h"
#include "support/devices.h"
#include "support/process.h"
#include "support/random.h"

using namespace gpix;

namespace {

QJsonArray numbers(const std::vector<double>& v) {
  QJsonArray a;
  for (double d : v) a.append(d);
  return a;
}

template <class T>
void check_file(const QString& path, const Shape& s, const io::Metadata& meta,
                const std::string& format) {
  const auto vals = test::random_values<T>(s.elements());
  io::write(path.toStdString(), HostArray::from(vals, s), meta);
  const test::ProcessResult r = test::run_cli({"info", path, "--json", "--device", "0"});
  QVERIFY2(r.code == 0, r.err);
  const QJsonObject o = QJsonDocument::fromJson(r.out).object();
  QJsonArray shape;
  for (auto d : s.dims()) shape.append(static_cast<qint64>(d));
  QCOMPARE(o["shape"].toArray(), shape);
  QCOMPARE(o["dtype"].toString(), QString(name(dtype_of<T>).data()));
  QCOMPARE(o["bytes"].toInteger(), static_cast<qint64>(s.elements() * sizeof(T)));
  QCOMPARE(o["min"].toDouble(), static_cast<double>(*std::min_element(vals.begin(), vals.end())));
  QCOMPARE(o["max"].toDouble(), static_cast<double>(*std::max_element(vals.begin(), vals.end())));
  double sum = 0;
  for (T v : vals) sum += static_cast<double>(v);
  QVERIFY(std::abs(o["mean"].toDouble() - sum / static_cast<double>(vals.size())) <=
          1e-4 * std::max(1.0, std::abs(sum)));
  QCOMPARE(o["format"].toString().toStdString(), format);
  QCOMPARE(o["source"].toString(), path);
  QCOMPARE(o["device"].toString().toStdString(), devices()[0].label());
  QCOMPARE(o["file_components"].toInt(), 1);
  if (!meta.spacing.empty()) {
    const QJsonArray sp = o["spacing"].toArray();
    QCOMPARE(sp.size(), static_cast<qsizetype>(s.ndim()));
    for (int i = 0; i < s.ndim(); ++i)
      QVERIFY(std::abs(sp[i].toDouble() - meta.spacing[static_cast<std::size_t>(i)]) < 1e-5);
  }
  if (!meta.origin.empty()) QCOMPARE(o["origin"].toArray(), numbers(meta.origin));
}
}  // namespace

class TestIoCli : public QObject {
  Q_OBJECT
 private slots:
  void info_files() {
    if (test::test_devices().empty()) QSKIP("no device");
    QTemporaryDir dir;
    io::Metadata m3;
    m3.spacing = {2.0, 0.5, 0.25};
    m3.origin = {1.0, -2.5, 3.75};
    check_file<std::uint16_t>(dir.filePath("stack.nrrd"), Shape{3, 5, 7}, m3, "NRRD");
    check_file<float>(dir.filePath("vol.mha"), Shape{2, 9, 4}, m3, "MetaImage");
    check_file<std::int16_t>(dir.filePath("brain.nii.gz"), Shape{4, 3, 2}, m3, "NIfTI");
    io::Metadata m2;
    m2.spacing = {0.5, 0.25};
    check_file<std::uint8_t>(dir.filePath("plane.tif"), Shape{6, 11}, m2, "TIFF");
    check_file<std::uint16_t>(dir.filePath("plane.png"), Shape{5, 3}, m2, "PNG");
    const test::ProcessResult text = test::run_cli({"info", dir.filePath("stack.nrrd")});
    QVERIFY(text.out.contains("format: NRRD"));
    QVERIFY(text.out.contains("spacing: 2, 0.5, 0.25 (z, y, x)"));
    QVERIFY(text.out.contains("shape:  3 x 5 x 7 (z, y, x)"));
    // A 2D file's card names the axes it has.
    const test::ProcessResult plane = test::run_cli({"info", dir.filePath("plane.png")});
    QVERIFY2(plane.out.contains("spacing: 0.5, 0.25 (y, x)\n"), plane.out);
    QVERIFY2(plane.out.contains("shape:  5 x 3 (y, x)\n"), plane.out);
    QVERIFY2(!plane.out.contains("z, y, x"), plane.out);
  }

  void info_errors() {
    QTemporaryDir dir;
    const test::ProcessResult unknown = test::run_cli({"info", dir.filePath("x.xyz")});
    QCOMPARE(unknown.code, 1);
    QVERIFY2(unknown.err.contains(".nrrd"), unknown.err);
    const test::ProcessResult missing = test::run_cli({"info", dir.filePath("none.tif")});
    QCOMPARE(missing.code, 1);
    QVERIFY2(missing.err.contains("no such file"), missing.err);
    const test::ProcessResult badopt =
        test::run_cli({"info", dir.filePath("none.tif"), "--channels", "purple"});
    QCOMPARE(badopt.code, 2);
  }

  // An output the run could never write is refused before the work, as a usage error (exit
  // 2), whole and --tiled: it was refused with exit 1 after the filter had run (minutes of a
  // median on a large stack).
  void unwritable_output_refused_before_the_work() {
    QTemporaryDir dir;
    const QString stack = dir.filePath("stack.tif"), flat = dir.filePath("flat.tif");
    io::write(stack.toStdString(),
              HostArray::from(test::random_values<std::uint16_t>(6 * 9 * 11), Shape{6, 9, 11}));
    io::write(flat.toStdString(),
              HostArray::from(test::random_values<float>(9 * 11), Shape{9, 11}));
    struct Case {
      QStringList args;
      const char* says;
    };
    const QString nowhere = dir.filePath("no/such/folder/out.tif");
    const Case cases[] = {
        {{"median_box", stack, dir.filePath("out.xyz")}, "unknown extension"},
        {{"median_box", stack, nowhere}, "does not exist"},
        {{"median_box", stack, dir.filePath("out.png")}, "3D image as PNG"},
        {{"median_box", stack, dir.filePath("out.png"), "--tiled"}, "3D image as PNG"},
        {{"gaussian_blur", flat, dir.filePath("out.jpg")}, "float32 pixels as JPEG"},
        {{"convert", flat, dir.filePath("out.jpg"), "--dtype", "uint16"}, "uint16 pixels as JPEG"},
        {{"maximum_z_projection", stack, dir.filePath("out.jpg"), "--channels", "z"},
         "uint16 pixels as JPEG"},
        {{"maximum_z_projection", flat, dir.filePath("out.tif")}, "works on 3D images"},
        {{"connected_components", stack, dir.filePath("labels.png"), "--channels", "z"},
         "uint32 pixels as PNG"},
    };
    for (const Case& c : cases) {
      const test::ProcessResult r =
          test::run_cli(QStringList{"run"} + c.args + QStringList{"--device", "0"});
      const QByteArray where = c.args.join(' ').toUtf8() + ": " + r.err;
      QVERIFY2(r.code == 2, where);
      QVERIFY2(r.err.contains(c.says), where);
      // Refused for the output, before the work (an input run() refuses says so itself).
      if (!QByteArray(c.says).contains("works on"))
        QVERIFY2(r.err.contains("nothing was run"), where);
    }
    // Nothing was left behind: no output, no temporary folder.
    QCOMPARE(QDir(dir.path()).entryList(QDir::AllEntries | QDir::Hidden | QDir::NoDotAndDotDot),
             (QStringList{"flat.tif", "stack.tif"}));
    // What the format stores still runs: a 2D projection as PNG.
    const test::ProcessResult ok = test::run_cli(
        {"run", "maximum_z_projection", stack, dir.filePath("mip.png"), "--device", "0"});
    QVERIFY2(ok.code == 0, ok.err);
    // And a tiled run streams into a raw file with its sidecar, which io::write does not take.
    const test::ProcessResult raw = test::run_cli(
        {"run", "median_box", stack, dir.filePath("out.raw"), "--tiled", "--device", "0"});
    QVERIFY2(raw.code == 0, raw.err);
    QCOMPARE(QFileInfo(dir.filePath("out.raw")).size(), qint64(6 * 9 * 11 * 2));
  }

  // --shape and --dtype describe a raw file's pixels: on a TIFF, --dtype did nothing and
  // --shape read its bytes as raw; both are refused. convert's --dtype is its parameter.
  void raw_options_on_a_file_that_says_its_own() {
    QTemporaryDir dir;
    const QString in = dir.filePath("in.tif");
    io::write(in.toStdString(), HostArray::from(test::random_values<float>(9 * 11), Shape{9, 11}));
    for (const QStringList& opt :
         {QStringList{"--dtype", "uint8"}, QStringList{"--shape", "9,11"}}) {
      for (const bool tiled : {false, true}) {
        QStringList args = QStringList{"run", "gaussian_blur", in, dir.filePath("o.tif")} + opt;
        if (tiled) args << "--tiled";
        const test::ProcessResult r = test::run_cli(args);
        QVERIFY2(r.code == 2 && r.err.contains("describes a raw file"),
                 args.join(' ').toUtf8() + ": " + r.err);
      }
    }
    const test::ProcessResult c =
        test::run_cli({"run", "convert", in, dir.filePath("c.tif"), "--dtype", "uint8"});
    QVERIFY2(c.code == 0, c.err);
    QCOMPARE(io::read(dir.filePath("c.tif").toStdString()).pixels.dtype(), DType::u8);
  }

  // gpix run, file to file, against the same filter run in this process.
  void run_filters() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    QTemporaryDir dir;
    const auto data = test::random_values<std::uint16_t>(9 * 13);
    const Shape shape{9, 13};
    const QString in = dir.filePath("in.nrrd"), out = dir.filePath("out.nrrd");
    io::write(in.toStdString(), HostArray::from(data, shape));
    const test::ProcessResult r =
        test::run_cli({"run", "gaussian_blur", in, out, "--sigma_x", "1.5", "--sigma_y", "0.5",
                       "--device", "0", "--json"});
    QVERIFY2(r.code == 0, r.err);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o["dtype"].toString(), QString("uint16"));
    QCOMPARE(o["shape"].toArray(), (QJsonArray{9, 13}));
    QCOMPARE(o["output"].toString(), out);
    const io::Image back = io::read(out.toStdString());
    const Array expect = gaussian_blur(Array::push(data, shape, devs[0]), 1.5, 0.5);
    QVERIFY(back.pixels.as<std::uint16_t>().size() == expect.elements());
    const auto e = expect.pull_as<std::uint16_t>();
    QVERIFY(std::equal(e.begin(), e.end(), back.pixels.as<std::uint16_t>().begin()));
    QCOMPARE(o["max"].toInteger(), static_cast<qint64>(*std::max_element(e.begin(), e.end())));

    // Two inputs, and a choice parameter that shares its name with a global option.
    const QString sum = dir.filePath("sum.nrrd"), f32 = dir.filePath("f.nrrd");
    QCOMPARE(test::run_cli({"run", "add_images", in, in, sum, "--device", "0"}).code, 0);
    QCOMPARE(
        test::run_cli({"run", "convert", sum, f32, "--dtype", "float32", "--device", "0"}).code, 0);
    const io::Image conv = io::read(f32.toStdString());
    QCOMPARE(conv.pixels.dtype(), DType::f32);
    for (std::size_t i = 0; i < data.size(); ++i) {
      QCOMPARE(conv.pixels.as<float>()[i], static_cast<float>(std::min<int>(2 * data[i], 65535)));
    }

    // Labels (uint32) from a TIFF to a TIFF, as microscopy users keep them.
    const Shape ms{3, 11, 14};
    std::vector<std::uint8_t> mask(ms.elements());
    for (auto& m : mask) m = test::rng()() % 3 == 0 ? 1 : 0;
    const QString mask_tif = dir.filePath("mask.tif"), labels_tif = dir.filePath("labels.tif");
    io::write(mask_tif.toStdString(), HostArray::from(mask, ms));
    const test::ProcessResult cc =
        test::run_cli({"run", "connected_components", mask_tif, labels_tif, "--device", "0"});
    QVERIFY2(cc.code == 0, cc.err);
    QVERIFY2(cc.err.isEmpty(), cc.err);
    const io::Image labels = io::read(labels_tif.toStdString());
    QCOMPARE(labels.pixels.dtype(), DType::u32);
    const auto want_labels =
        connected_components(Array::push(mask, ms, devs[0])).pull_as<std::uint32_t>();
    QVERIFY(std::equal(want_labels.begin(), want_labels.end(),
                       labels.pixels.as<std::uint32_t>().begin()));

    // A table result: printed as JSON, or written as CSV.
    const test::ProcessResult h =
        test::run_cli({"run", "histogram", in, "--n_bins", "4", "--json", "--device", "0"});
    QVERIFY2(h.code == 0, h.err);
    const QJsonObject ho = QJsonDocument::fromJson(h.out).object();
    QCOMPARE(ho["columns"].toArray(), (QJsonArray{"bin_start", "bin_end", "count"}));
    qint64 total = 0;
    for (const auto& row : ho["rows"].toArray()) total += row.toObject()["count"].toInteger();
    QCOMPARE(total, static_cast<qint64>(data.size()));
    const QString csv = dir.filePath("h.csv");
    QCOMPARE(test::run_cli({"run", "histogram", in, csv, "--n_bins", "4", "--device", "0"}).code,
             0);
    QFile cf(csv);
    QVERIFY(cf.open(QIODevice::ReadOnly));
    QCOMPARE(cf.readAll().count('\n'), 5);

    // Errors: bad parameter value (usage, exit 2, nothing written), unknown filter, wrong
    // number of files.
    const QString never = dir.filePath("never.nrrd");
    const test::ProcessResult bad =
        test::run_cli({"run", "gaussian_blur", in, never, "--sigma_x", "1000"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("0 to 100 px"), bad.err);
    QVERIFY(!QFile::exists(never));
    QCOMPARE(test::run_cli({"run", "gausian_blur", in, never}).code, 2);
    // Another filter's parameter (every catalog parameter is an option) is refused, naming
    // the filter's own: mean_box --radius 5 ran radius 1 with exit 0.
    const test::ProcessResult other =
        test::run_cli({"run", "mean_box", in, never, "--radius", "5"});
    QCOMPARE(other.code, 2);
    QVERIFY2(other.err.contains("mean_box has no parameter 'radius'") &&
                 other.err.contains("--radius_x, --radius_y, --radius_z"),
             other.err);
    QVERIFY(!QFile::exists(never));
    // A parameter given twice is refused (the last value won without a word).
    const test::ProcessResult twice =
        test::run_cli({"run", "gaussian_blur", in, never, "--sigma_x", "1", "--sigma_x", "2"});
    QCOMPARE(twice.code, 2);
    QVERIFY2(twice.err.contains("--sigma_x is given 2 times (1, 2): give it once"), twice.err);
    QVERIFY(!QFile::exists(never));
    // A table into a file named as an image: refused (it was CSV text in a .tif).
    const QString tif = dir.filePath("table.tif");
    const test::ProcessResult table = test::run_cli({"run", "histogram", in, tif});
    QCOMPARE(table.code, 2);
    QVERIFY2(table.err.contains("written as CSV"), table.err);
    QVERIFY(!QFile::exists(tif));
    QCOMPARE(test::run_cli({"run", "add_images", in, never}).code, 2);
  }

  // convert's --dtype is the output's, not the raw input's: a uint32 raw file converted to
  // float32 read its bytes as float32 (1.4e-42 for 1000). The file says its layout instead.
  void convert_of_a_raw_file() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    QTemporaryDir dir;
    std::vector<std::uint32_t> v(4 * 8 * 10);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::uint32_t(i * 1000);
    const QString raw = dir.filePath("u32.raw");
    QFile f(raw);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(reinterpret_cast<const char*>(v.data()), qint64(v.size() * 4));
    f.close();
    const QString out = dir.filePath("c.nrrd");
    const test::ProcessResult bare =
        test::run_cli({"run", "convert", raw, out, "--shape", "4,8,10", "--dtype", "float32"});
    QCOMPARE(bare.code, 2);
    QVERIFY2(bare.err.contains("here --dtype is the filter's"), bare.err);
    QVERIFY(!QFile::exists(out));
    QFile side(raw + ".json");
    QVERIFY(side.open(QIODevice::WriteOnly));
    side.write(R"({"shape": [4, 8, 10], "dtype": "uint32"})");
    side.close();
    const test::ProcessResult ok =
        test::run_cli({"run", "convert", raw, out, "--dtype", "float32"});
    QVERIFY2(ok.code == 0, ok.err);
    const io::Image img = io::read(out.toStdString());
    QCOMPARE(img.pixels.dtype(), DType::f32);
    QCOMPARE(img.pixels.as<float>()[7], 7000.0f);
  }

  // A transpose swaps the calibration with the axes, also where the shape does not change (a
  // cube, a square): the spacing of a transposed cube was written unswapped.
  void transpose_swaps_the_calibration() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    QTemporaryDir dir;
    const Shape cube{6, 6, 6};
    const HostArray px = HostArray::from(test::random_values<std::uint16_t>(216), cube);
    io::Metadata m;
    m.spacing = {2.0, 0.3, 0.1};
    m.origin = {5.0, 1.0, -1.0};
    m.unit = "um";
    const std::string in = dir.filePath("cube.nrrd").toStdString();
    io::write(in, px, m);
    struct Case {
      const char* axes;
      std::vector<double> spacing, origin;
    };
    for (const Case& c : {Case{"xz", {0.1, 0.3, 2.0}, {-1.0, 1.0, 5.0}},
                          Case{"xy", {2.0, 0.1, 0.3}, {5.0, -1.0, 1.0}},
                          Case{"yz", {0.3, 2.0, 0.1}, {1.0, 5.0, -1.0}}}) {
      const QString out = dir.filePath(QStringLiteral("t_%1.nrrd").arg(c.axes));
      const test::ProcessResult r =
          test::run_cli({"run", "transpose", QString::fromStdString(in), out, "--axes", c.axes});
      QVERIFY2(r.code == 0, r.err);
      const io::Image img = io::read(out.toStdString());
      QCOMPARE(img.meta.spacing, c.spacing);
      QCOMPARE(img.meta.origin, c.origin);
      QCOMPARE(img.meta.unit, std::string("um"));
    }
    // A square image's xy transpose in 2D as well.
    const std::string sq = dir.filePath("square.nrrd").toStdString();
    io::write(sq, HostArray::from(test::random_values<std::uint8_t>(25), Shape{5, 5}),
              io::Metadata{{0.5, 0.25}, {0, 0}, {}, "mm"});
    const QString sq_out = dir.filePath("square_t.nrrd");
    QCOMPARE(test::run_cli({"run", "transpose", QString::fromStdString(sq), sq_out}).code, 0);
    QCOMPARE(io::read(sq_out.toStdString()).meta.spacing, (std::vector<double>{0.25, 0.5}));
  }

  // --channels N of a plain z stack (one sample a pixel, no channels marked): refused, whole
  // and --tiled, where it filtered the whole stack as if no channel had been asked for.
  void channel_of_a_plain_stack() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    QTemporaryDir dir;
    const QString in = dir.filePath("stack.tif");
    io::write(in.toStdString(),
              HostArray::from(test::random_values<std::uint16_t>(3 * 8 * 9), Shape{3, 8, 9}));
    const QString out = dir.filePath("out.tif");
    for (const QStringList& extra : {QStringList{}, QStringList{"--tiled"}}) {
      const test::ProcessResult r =
          test::run_cli(QStringList{"run", "gaussian_blur", in, out, "--channels", "1"} + extra);
      QVERIFY2(r.code != 0 && r.err.contains("there is no channel 1"), r.err);
      QVERIFY(!QFile::exists(out));
    }
    const test::ProcessResult zero =
        test::run_cli({"run", "gaussian_blur", in, out, "--channels", "0"});
    QVERIFY2(zero.code == 0, zero.err);
    QCOMPARE(io::read(out.toStdString()).pixels.shape(), (Shape{3, 8, 9}));
    // split and luminance read it as it is too, and say so (they asked for what it lacks).
    for (const char* policy : {"split", "luminance"}) {
      const test::ProcessResult as_is = test::run_cli({"info", in, "--channels", policy});
      QVERIFY2(as_is.code == 0 && as_is.out.contains("3 x 8 x 9") &&
                   as_is.out.contains("one sample a pixel") && as_is.out.contains(policy),
               as_is.out + as_is.err);
      const test::ProcessResult ran =
          test::run_cli({"run", "gaussian_blur", in, out, "--channels", policy});
      QVERIFY2(ran.code == 0 && ran.err.contains("one sample a pixel"), ran.err);
    }
    // Samples and raw files have no channels either (exit 2: nothing to read).
    QCOMPARE(test::run_cli({"run", "gaussian_blur", "sample", out, "--channels", "1"}).code, 2);
    // Said as it was asked (C3 is channel 2).
    const test::ProcessResult named = test::run_cli({"info", "sample", "--channels", "C3"});
    QVERIFY2(named.code == 2 && named.err.contains("--channels C3 picks nothing"), named.err);
    // Several inputs: channel N of those that have channels, the plain ones whole (a channel
    // of a stack of channels times a plain mask), whole and --tiled; none with channels is
    // refused; a channel the stack lacks is its own refusal.
    const Shape plane{8, 9};
    const HostArray chans =
        HostArray::from(test::random_values<std::uint16_t>(3 * plane.elements()), Shape{3, 8, 9});
    io::Metadata cm;
    cm.channels = 3;
    const QString stack = dir.filePath("chans.nrrd");
    io::write(stack.toStdString(), chans, cm);
    std::vector<std::uint16_t> ones(plane.elements(), 2);
    const QString mask = dir.filePath("mask.tif");
    io::write(mask.toStdString(), HostArray::from(ones, plane));
    const QString prod = dir.filePath("prod.tif");
    // C2 is channel 1 as the viewer's layers name it ("chans [C2]").
    for (const QStringList& extra :
         {QStringList{}, QStringList{"--tiled"}, QStringList{"--channels", "C2"}}) {
      QFile::remove(prod);
      const QStringList channel =
          extra.contains("--channels") ? QStringList{} : QStringList{"--channels", "1"};
      const test::ProcessResult r =
          test::run_cli(QStringList{"run", "multiply_images", stack, mask, prod} + channel + extra);
      QVERIFY2(r.code == 0, r.err);
      const HostArray got = io::read(prod.toStdString()).pixels;
      QCOMPARE(got.shape(), plane);
      for (std::size_t i = 0; i < plane.elements(); ++i) {
        const auto want = std::uint16_t(
            std::min(65535, 2 * int(chans.as<std::uint16_t>()[plane.elements() + i])));
        QCOMPARE(got.as<std::uint16_t>()[i], want);
      }
    }
    const test::ProcessResult neither =
        test::run_cli({"run", "multiply_images", mask, mask, prod, "--channels", "1"});
    QVERIFY2(neither.code != 0 && neither.err.contains("there is no channel 1"), neither.err);
    const test::ProcessResult lacks =
        test::run_cli({"run", "multiply_images", stack, mask, prod, "--channels", "5"});
    QVERIFY2(lacks.code != 0 && lacks.err.contains("5"), lacks.err);
    const test::ProcessResult c0 =
        test::run_cli({"run", "multiply_images", stack, mask, prod, "--channels", "C0"});
    QVERIFY2(c0.code == 2 && c0.err.contains("C1"), c0.err);
  }

  // A crop and a resample keep their output where it lies in space: a crop's first pixel at
  // the box's corner, a resample's pixels at the input coordinates it sampled (its spacing
  // scaled, its physical extent the input's), a rotated direction included. Both came out
  // without any calibration.
  void crop_and_resample_keep_the_placement() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    QTemporaryDir dir;
    const Shape s{7, 12, 10};
    const HostArray px = HostArray::from(test::random_values<std::uint16_t>(s.elements()), s);
    io::Metadata m;
    m.spacing = {2.0, 0.3, 0.1};
    m.origin = {5.0, 1.0, -1.0};
    // A rotation of 30 degrees about z (rows: physical axes, columns: index axes, (z, y, x)).
    const double c = std::cos(0.5235987755982988), sn = std::sin(0.5235987755982988);
    m.direction = {1, 0, 0, 0, c, -sn, 0, sn, c};
    m.unit = "um";
    const std::string in = dir.filePath("cal.nrrd").toStdString();
    io::write(in, px, m);
    // Physical position of index (z, y, x) under a metadata.
    const auto where = [](const io::Metadata& md, std::array<double, 3> idx) {
      std::array<double, 3> p{};
      for (std::size_t r = 0; r < 3; ++r) {
        p[r] = md.origin[r];
        for (std::size_t k = 0; k < 3; ++k)
          p[r] += md.direction[r * 3 + k] * md.spacing[k] * idx[k];
      }
      return p;
    };
    const auto same_place = [&](const io::Metadata& a, std::array<double, 3> ia,
                                const io::Metadata& b, std::array<double, 3> ib) {
      const auto pa = where(a, ia), pb = where(b, ib);
      for (std::size_t r = 0; r < 3; ++r) {
        if (std::abs(pa[r] - pb[r]) > 1e-9) return false;
      }
      return true;
    };
    const QString crop = dir.filePath("crop.nrrd");
    const test::ProcessResult rc =
        test::run_cli({"run", "crop", QString::fromStdString(in), crop, "--origin_x", "3",
                       "--origin_y", "2", "--origin_z", "1", "--size_x", "5", "--size_y", "6"});
    QVERIFY2(rc.code == 0, rc.err);
    const io::Image ci = io::read(crop.toStdString());
    QCOMPARE(ci.pixels.shape(), (Shape{6, 6, 5}));
    // (NRRD stores spacing times direction: a rotation rounds the last bit.)
    for (std::size_t a = 0; a < 3; ++a)
      QVERIFY(std::abs(ci.meta.spacing[a] - m.spacing[a]) < 1e-12);
    QCOMPARE(ci.meta.unit, std::string("um"));
    QVERIFY(same_place(ci.meta, {0, 0, 0}, m, {1, 2, 3}));
    QVERIFY(same_place(ci.meta, {5, 5, 4}, m, {6, 7, 7}));
    // Its pixels are the box's (the calibration follows the pixels, not the other way).
    QCOMPARE(ci.pixels.as<std::uint16_t>()[0], px.as<std::uint16_t>()[(1 * 12 + 2) * 10 + 3]);

    const QString res = dir.filePath("res.nrrd");
    const test::ProcessResult rr =
        test::run_cli({"run", "resample", QString::fromStdString(in), res, "--factor_x", "2.5",
                       "--factor_y", "0.5", "--factor_z", "1"});
    QVERIFY2(rr.code == 0, rr.err);
    const io::Image ri = io::read(res.toStdString());
    QCOMPARE(ri.pixels.shape(), (Shape{7, 6, 25}));
    const Shape o = ri.pixels.shape();
    for (std::size_t a = 0; a < 3; ++a) {
      // The same physical extent: out extent x out spacing = in extent x in spacing.
      QVERIFY(std::abs(ri.meta.spacing[a] * double(o[int(a)]) - m.spacing[a] * double(s[int(a)])) <
              1e-12);
    }
    // Output pixel (z, y, x) at input coordinate (q + 0.5) in / out - 0.5 on each axis.
    for (const std::array<double, 3> q : {std::array<double, 3>{0, 0, 0}, {6, 5, 24}, {3, 2, 7}}) {
      std::array<double, 3> p{};
      for (std::size_t a = 0; a < 3; ++a)
        p[a] = (q[a] + 0.5) * double(s[int(a)]) / double(o[int(a)]) - 0.5;
      QVERIFY(same_place(ri.meta, q, m, p));
    }

    // Without calibration (a TIFF that says nothing reads spacing 1, origin 0): nothing is
    // made up for the crop.
    const std::string bare = dir.filePath("bare.tif").toStdString();
    io::write(bare, px);
    const QString bare_crop = dir.filePath("bare_crop.tif");
    QCOMPARE(test::run_cli({"run", "crop", QString::fromStdString(bare), bare_crop, "--origin_x",
                            "3", "--size_x", "4"})
                 .code,
             0);
    const io::Image bi = io::read(bare_crop.toStdString());
    QCOMPARE(bi.meta.origin, (std::vector<double>{0, 0, 0}));
    QCOMPARE(bi.meta.spacing, (std::vector<double>{1, 1, 1}));
    QCOMPARE(bi.meta.unit, std::string());
  }

  // Ctrl+C or a kill while `gpix run --tiled` writes its output plane by plane: the hidden
  // temporary folder beside the target (the output so far) goes with the process, and the
  // target stays as it was. It stayed behind (9 MB here; gigabytes on a real stack).
  void killed_run_leaves_nothing() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    for (const int sig : {SIGTERM, SIGINT}) {
      QTemporaryDir dir;
      const QString in = dir.filePath(QStringLiteral("stack.tif"));
      const QString out = dir.filePath(QStringLiteral("out.tif"));
      io::write(
          in.toStdString(),
          HostArray::from(test::random_values<std::uint16_t>(48 * 256 * 256), Shape{48, 256, 256}));
      QFile keep(out);
      QVERIFY(keep.open(QIODevice::WriteOnly));
      keep.write("an earlier result");
      keep.close();
      QProcess p;
      // Started as nohup starts it: SIGHUP ignored (inherited through exec).
      const auto previous = std::signal(SIGHUP, SIG_IGN);
      p.start(QStringLiteral(GPIX_CLI_PATH),
              {QStringLiteral("run"), QStringLiteral("median_box"), in, out,
               QStringLiteral("--radius_x"), QStringLiteral("3"), QStringLiteral("--radius_y"),
               QStringLiteral("3"), QStringLiteral("--radius_z"), QStringLiteral("3"),
               QStringLiteral("--tiled"), QStringLiteral("--tile-budget"), QStringLiteral("16MB")});
      const bool started = p.waitForStarted(30000);
      std::signal(SIGHUP, previous);
      QVERIFY(started);
      const auto partial = [&] {
        return QDir(dir.path())
            .entryList({QStringLiteral(".gpix-write-*")}, QDir::Dirs | QDir::Hidden)
            .size();
      };
      QTRY_VERIFY_WITH_TIMEOUT(partial() == 1 || p.state() == QProcess::NotRunning, 60000);
      if (p.state() == QProcess::NotRunning) QSKIP("the run ended before it could be stopped");
      if (sig == SIGTERM) {
        // A signal ignored when gpix started (nohup's SIGHUP) stays ignored: the run goes on.
        QCOMPARE(::kill(static_cast<pid_t>(p.processId()), SIGHUP), 0);
        QVERIFY(!p.waitForFinished(300));
        QCOMPARE(partial(), 1);
      }
      QCOMPARE(::kill(static_cast<pid_t>(p.processId()), sig), 0);
      QVERIFY(p.waitForFinished(60000));
      QCOMPARE(p.exitStatus(), QProcess::CrashExit);  // ended by the signal, as before
      QCOMPARE(partial(), 0);
      QVERIFY(keep.open(QIODevice::ReadOnly));
      QCOMPARE(keep.readAll(), QByteArray("an earlier result"));
      keep.close();
    }
  }

  // A file whose planes are channels (an ImageJ hyperstack, a NRRD gpix marked): `gpix run`
  // filters each channel on its own, as the viewer does its composites (a z sigma, a 3D median
  // would mix them otherwise), says so on stderr, and the output keeps the mark; with a plain
  // 2D image beside it (a mask) that one goes to every channel whole. Tables get a channel
  // column. --tiled, whose slabs go along z, refuses such a file with the way out.
  void run_channels() {
    const auto& devs = test::test_devices();
    if (devs.empty()) QSKIP("no device");
    QTemporaryDir dir;
    const Shape shape{3, 21, 17};
    const auto data = test::random_values<std::uint16_t>(shape.elements());
    io::Metadata m;
    m.channels = 3;
    m.spacing = {1.0, 0.5, 0.5};
    m.unit = "um";
    for (const char* ext : {"tif", "nrrd"}) {
      const QString in = dir.filePath(QStringLiteral("in.%1").arg(ext));
      const QString out = dir.filePath(QStringLiteral("out.%1").arg(ext));
      io::write(in.toStdString(), HostArray::from(data, shape), m);
      const test::ProcessResult r =
          test::run_cli({"run", "median_box", in, out, "--radius_x", "1", "--radius_y", "1",
                         "--radius_z", "1", "--device", "0"});
      QVERIFY2(r.code == 0, r.err);
      QVERIFY2(r.err.contains("3 channels, filtered one by one"), r.err);
      const io::Image back = io::read(out.toStdString());
      QCOMPARE(back.meta.channels, 3);
      QCOMPARE(back.pixels.shape(), shape);
      const Array whole = Array::push(data, shape, devs[0]);
      for (std::size_t c = 0; c < 3; ++c) {
        const auto want = median_box(channel_plane(whole, c), 1, 1).pull_as<std::uint16_t>();
        QVERIFY2(std::equal(want.begin(), want.end(),
                            back.pixels.as<std::uint16_t>().begin() + c * want.size()),
                 ext);
      }
      // The 3D median of the stack differs: the check above could tell the two apart.
      const auto mixed = median_box(whole, 1, 1, 1).pull_as<std::uint16_t>();
      QVERIFY(!std::equal(mixed.begin(), mixed.end(), back.pixels.as<std::uint16_t>().begin()));
    }
    const QString in = dir.filePath("in.tif");
    // A plain 2D mask with a channel stack: the mask goes to every channel.
    std::vector<std::uint16_t> mask(shape.height() * shape.width());
    for (auto& v : mask) v = static_cast<std::uint16_t>(test::rng()() % 2);
    const QString mask_file = dir.filePath("mask.tif"), masked = dir.filePath("masked.tif");
    io::write(mask_file.toStdString(), HostArray::from(mask, Shape{shape.height(), shape.width()}));
    const test::ProcessResult mr =
        test::run_cli({"run", "multiply_images", in, mask_file, masked, "--device", "0"});
    QVERIFY2(mr.code == 0, mr.err);
    const io::Image mb = io::read(masked.toStdString());
    QCOMPARE(mb.meta.channels, 3);
    for (std::size_t i = 0; i < shape.elements(); ++i) {
      QCOMPARE(mb.pixels.as<std::uint16_t>()[i],
               static_cast<std::uint16_t>(data[i] * mask[i % mask.size()]));
    }
    // A table: one row per channel, the channel first.
    const test::ProcessResult t =
        test::run_cli({"run", "maximum_of_all_pixels", in, "--json", "--device", "0"});
    QVERIFY2(t.code == 0, t.err);
    const QJsonObject to = QJsonDocument::fromJson(t.out).object();
    QCOMPARE(to["columns"].toArray().first().toString(), QString("channel"));
    const QJsonArray rows = to["rows"].toArray();
    QCOMPARE(rows.size(), qsizetype(3));
    const std::size_t plane = shape.height() * shape.width();
    for (qsizetype c = 0; c < 3; ++c) {
      const QJsonObject row = rows[c].toObject();
      QCOMPARE(row["channel"].toInteger(), c + 1);
      const auto first = data.begin() + static_cast<std::ptrdiff_t>(plane) * c;
      const auto most = *std::max_element(first, first + static_cast<std::ptrdiff_t>(plane));
      QCOMPARE(row[to["columns"].toArray()[1].toString()].toDouble(), double(most));
    }
    // Colour pixels split into channels (--channels split): channels as well.
    const QString rgb = dir.filePath("rgb.tif"), rgb_out = dir.filePath("rgb_out.tif");
    const test::ProcessResult py = test::run_process(
        QStringLiteral("/usr/bin/python3"),
        {QStringLiteral("-c"),
         QStringLiteral("import sys, numpy as np, tifffile\n"
                        "a = np.random.default_rng(5).integers(0, 256, (19, 23, 3), np.uint8)\n"
                        "tifffile.imwrite(sys.argv[1], a, photometric='rgb')\n"),
         rgb});
    if (py.code == 0) {
      const test::ProcessResult cr = test::run_cli({"run", "median_box", rgb, rgb_out, "--channels",
                                                    "split", "--radius_z", "1", "--device", "0"});
      QVERIFY2(cr.code == 0, cr.err);
      QVERIFY2(cr.err.contains("3 channels, filtered one by one"), cr.err);
      const io::Image split = io::read(rgb.toStdString(), {.channels = io::Channels::split});
      const io::Image got = io::read(rgb_out.toStdString());
      QCOMPARE(got.meta.channels, 3);
      const Array planes = Array::push(split.pixels, devs[0]);
      for (std::size_t c = 0; c < 3; ++c) {
        const auto want = median_box(channel_plane(planes, c), 1, 1).pull_as<std::uint8_t>();
        QVERIFY(std::equal(want.begin(), want.end(),
                           got.pixels.as<std::uint8_t>().begin() + c * want.size()));
      }
    } else {
      qWarning("no /usr/bin/python3 with numpy and tifffile: the RGB case is not run");
    }
    // An unmarked stack of the same shape beside it pairs plane by plane (it was refused for a
    // shape mismatch of one plane against the stack).
    const QString plain = dir.filePath("plain.nrrd"), sum = dir.filePath("sum.tif");
    io::write(plain.toStdString(), HostArray::from(data, shape));
    const test::ProcessResult pr =
        test::run_cli({"run", "add_images", in, plain, sum, "--device", "0"});
    QVERIFY2(pr.code == 0, pr.err);
    const io::Image sb = io::read(sum.toStdString());
    QCOMPARE(sb.meta.channels, 3);
    for (std::size_t i = 0; i < shape.elements(); ++i) {
      QCOMPARE(sb.pixels.as<std::uint16_t>()[i],
               static_cast<std::uint16_t>(std::min(2 * int(data[i]), 65535)));
    }
    // A crop made channel by channel holds channels still; labels made channel by channel are
    // one label image per channel, marked as labels only (as the viewer keeps them).
    const QString cropped = dir.filePath("crop.tif");
    QCOMPARE(test::run_cli(
                 {"run", "crop", in, cropped, "--size_x", "5", "--size_y", "4", "--device", "0"})
                 .code,
             0);
    const io::Image cb = io::read(cropped.toStdString());
    QCOMPARE(cb.pixels.shape(), (Shape{3, 4, 5}));
    QCOMPARE(cb.meta.channels, 3);
    const QString labels = dir.filePath("labels.tif");
    QCOMPARE(test::run_cli({"run", "threshold_otsu", in, labels, "--device", "0"}).code, 0);
    const QString cc = dir.filePath("cc.tif");
    QCOMPARE(test::run_cli({"run", "connected_components", labels, cc, "--device", "0"}).code, 0);
    const io::Image lb = io::read(cc.toStdString());
    QVERIFY(lb.meta.labels);
    QCOMPARE(lb.meta.channels, 1);
    // A filter of 3D images: refused with the two ways out, which both run.
    const QString mip = dir.filePath("mip.tif");
    const test::ProcessResult z =
        test::run_cli({"run", "maximum_z_projection", in, mip, "--device", "0"});
    QCOMPARE(z.code, 2);
    QVERIFY2(z.err.contains("--channels z") && z.err.contains("--channels N"), z.err);
    QCOMPARE(
        test::run_cli({"run", "maximum_z_projection", in, mip, "--channels", "z", "--device", "0"})
            .code,
        0);
    const io::Image mb2 = io::read(mip.toStdString());
    QCOMPARE(mb2.pixels.shape(), (Shape{shape.height(), shape.width()}));
    for (std::size_t i = 0; i < plane; ++i) {
      QCOMPARE(mb2.pixels.as<std::uint16_t>()[i],
               std::max({data[i], data[i + plane], data[i + 2 * plane]}));
    }
    const QString one = dir.filePath("one.tif");
    QCOMPARE(test::run_cli(
                 {"run", "add_scalar", in, one, "--channels", "2", "--value", "0", "--device", "0"})
                 .code,
             0);
    const io::Image ob = io::read(one.toStdString());
    QCOMPARE(ob.pixels.shape(), (Shape{shape.height(), shape.width()}));
    QVERIFY(std::equal(data.begin() + 2 * static_cast<std::ptrdiff_t>(plane), data.end(),
                       ob.pixels.as<std::uint16_t>().begin()));
    // --tiled: refused, naming the channels and the way out; nothing written.
    const QString never = dir.filePath("never.tif");
    const test::ProcessResult tiled = test::run_cli(
        {"run", "gaussian_blur", in, never, "--sigma_x", "1", "--tiled", "--device", "0"});
    QCOMPARE(tiled.code, 2);
    QVERIFY2(tiled.err.contains("3 channels") && tiled.err.contains("without --tiled"), tiled.err);
    QVERIFY(!QFile::exists(never));
  }

  // `gpix run --tiled`: a TIFF stack filtered in slabs under a small budget equals the
  // whole-array run (connected_components too); untileable filters and bad budgets are usage
  // errors.
  void run_tiled() {
    const auto& devs = test::test_devices();
    QTemporaryDir dir;
    const Shape s{37, 21, 17};
    const auto data = test::random_values<std::uint16_t>(s.elements());
    const QString in = dir.filePath("stack.tif"), whole = dir.filePath("whole.tif"),
                  tiled = dir.filePath("tiled.tif");
    io::write(in.toStdString(), HostArray::from(data, s));
    QCOMPARE(
        test::run_cli({"run", "median_box", in, whole, "--radius_z", "2", "--device", "0"}).code,
        0);
    const test::ProcessResult r =
        test::run_cli({"run", "median_box", in, tiled, "--radius_z", "2", "--device", "0",
                       "--tiled", "--tile-budget", "40kB", "--json"});
    QVERIFY2(r.code == 0, r.err);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QVERIFY2(o["slabs"].toInteger() >= 8, r.out);
    QCOMPARE(o["halo"].toInteger(), 2);
    const io::Image a = io::read(whole.toStdString()), b = io::read(tiled.toStdString());
    QVERIFY(a.pixels.bytes() == b.pixels.bytes());
    QVERIFY(std::memcmp(a.pixels.data(), b.pixels.data(), a.pixels.bytes()) == 0);
    // Three workers on the device, pushes beside pulls: the same bytes.
    const QString workers = dir.filePath("workers.tif");
    const test::ProcessResult w =
        test::run_cli({"run", "median_box", in, workers, "--radius_z", "2", "--device", "0",
                       "--tile-budget", "120kB", "--tile-workers", "3", "--json"});
    QVERIFY2(w.code == 0, w.err);
    QVERIFY2(QJsonDocument::fromJson(w.out).object()["slabs"].toInteger() >= 8, w.out);
    const io::Image c = io::read(workers.toStdString());
    QVERIFY(std::memcmp(a.pixels.data(), c.pixels.data(), a.pixels.bytes()) == 0);
    QCOMPARE(test::run_cli({"run", "median_box", in, workers, "--tile-workers", "0"}).code, 2);
    (void)devs;
    // Labelling tiles (labels joined across slab faces): the whole-array labels.
    const QString cc_whole = dir.filePath("cc_whole.tif"), cc_tiled = dir.filePath("cc_tiled.tif");
    QCOMPARE(test::run_cli({"run", "connected_components", in, cc_whole, "--device", "0"}).code, 0);
    const test::ProcessResult cc =
        test::run_cli({"run", "connected_components", in, cc_tiled, "--device", "0", "--tiled",
                       "--tile-budget", "60kB", "--json"});
    QVERIFY2(cc.code == 0, cc.err);
    QVERIFY2(QJsonDocument::fromJson(cc.out).object()["slabs"].toInteger() >= 4, cc.out);
    const io::Image ccw = io::read(cc_whole.toStdString()), cct = io::read(cc_tiled.toStdString());
    QVERIFY(ccw.pixels.bytes() == cct.pixels.bytes());
    QVERIFY(std::memcmp(ccw.pixels.data(), cct.pixels.data(), ccw.pixels.bytes()) == 0);
    const QString never = dir.filePath("never.tif");
    const test::ProcessResult labels =
        test::run_cli({"run", "relabel_sequential", in, never, "--tiled"});
    QCOMPARE(labels.code, 2);
    QVERIFY2(labels.err.contains("cannot run tiled"), labels.err);
    // An input of a dtype the filter does not take is the command line's mistake, as other
    // refused inputs are (it exited with 1, a failure while doing the work).
    const QString floats = dir.filePath("floats.tif");
    io::write(floats.toStdString(), HostArray::from(test::random_values<float>(s.elements()), s));
    const test::ProcessResult float_labels =
        test::run_cli({"run", "relabel_sequential", floats, never});
    QCOMPARE(float_labels.code, 2);
    QVERIFY2(float_labels.err.contains("float32"), float_labels.err);
    const test::ProcessResult budget =
        test::run_cli({"run", "mean_box", in, never, "--tile-budget", "lots"});
    QCOMPARE(budget.code, 2);
    QVERIFY2(budget.err.contains("256MB"), budget.err);
    // Less than a byte (fuzz_cli_args: ".5" was taken as a budget of 0 bytes).
    for (const char* tiny : {".5", "0.9B", "1e-4kB"}) {
      const test::ProcessResult small =
          test::run_cli({"run", "mean_box", in, never, "--tile-budget", tiny});
      QCOMPARE(small.code, 2);
      QVERIFY2(small.err.contains("256MB"), small.err);
    }
    QVERIFY(!QFile::exists(never));
  }

  // docs/FILTERS.md is `gpix filters --markdown`: the docs follow the catalog.
  void filters_doc_is_current() {
    const test::ProcessResult r = test::run_cli({"filters", "--markdown"});
    QCOMPARE(r.code, 0);
    QFile f(QStringLiteral(GPIX_SOURCE_DIR) + "/docs/FILTERS.md");
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY2(f.readAll() == r.out,
             "docs/FILTERS.md is stale: run `build/bin/gpix filters --markdown > docs/FILTERS.md`");
    const test::ProcessResult j = test::run_cli({"filters", "--json"});
    const QJsonArray list = QJsonDocument::fromJson(j.out).array();
    QCOMPARE(list.size(), static_cast<qsizetype>(filters().size()));
    for (qsizetype i = 0; i < list.size(); ++i) {
      const FilterInfo& f2 = filters()[static_cast<std::size_t>(i)];
      const QJsonObject o = list[i].toObject();
      QCOMPARE(o["name"].toString().toStdString(), f2.name);
      QCOMPARE(o["category"].toString().toStdString(), std::string(name(f2.category)));
      QCOMPARE(o["params"].toArray().size(), static_cast<qsizetype>(f2.params.size()));
      QCOMPARE(o["inputs"].toArray().size(), static_cast<qsizetype>(f2.inputs.size()));
    }
  }
};

QTEST_GUILESS_MAIN(TestIoCli)
#include "test_io_cli.moc"
