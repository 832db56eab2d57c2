// `gpix info <file>` on files written by gpix_io, --json checked field by field.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include "common.h"
#include "gpix/io.h"

using namespace gpix;

namespace {
struct ProcResult {
  int code;
  QByteArray out, err;
};
ProcResult run(const QStringList& args) {
  QProcess p;
  p.start(GPIX_CLI_PATH, args);
  if (!p.waitForFinished(300000)) qFatal("gpix did not finish");
  return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

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
  const ProcResult r = run({"info", path, "--json", "--device", "0"});
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
    const ProcResult text = run({"info", dir.filePath("stack.nrrd")});
    QVERIFY(text.out.contains("format: NRRD"));
    QVERIFY(text.out.contains("spacing: 2, 0.5, 0.25"));
  }

  void info_errors() {
    QTemporaryDir dir;
    const ProcResult unknown = run({"info", dir.filePath("x.xyz")});
    QCOMPARE(unknown.code, 1);
    QVERIFY2(unknown.err.contains(".nrrd"), unknown.err);
    const ProcResult missing = run({"info", dir.filePath("none.tif")});
    QCOMPARE(missing.code, 1);
    QVERIFY2(missing.err.contains("no such file"), missing.err);
    const ProcResult badopt = run({"info", dir.filePath("none.tif"), "--channels", "purple"});
    QCOMPARE(badopt.code, 2);
  }
};

QTEST_GUILESS_MAIN(TestIoCli)
#include "test_io_cli.moc"
