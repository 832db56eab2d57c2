// The gpix command line tool, run as a process; --json output checked field by field.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include "gpix/catalog.h"
#include "gpix/samples.h"
#include "support/devices.h"
#include "support/process.h"
#include "support/random.h"

using namespace gpix;

class TestCli : public QObject {
  Q_OBJECT
 private slots:
  void devices_json() {
    const auto& devs = test::all_devices();  // as the CLI lists them
    const test::ProcessResult r = test::run_cli({"devices", "--json"});
    QCOMPARE(r.code, 0);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    const QJsonArray list = o["devices"].toArray();
    QCOMPARE(list.size(), static_cast<qsizetype>(devs.size()));
    for (qsizetype i = 0; i < list.size(); ++i) {
      const QJsonObject d = list[i].toObject();
      const DeviceInfo& info = devs[static_cast<std::size_t>(i)].info();
      QCOMPARE(d["name"].toString().toStdString(), info.name);
      QCOMPARE(d["backend"].toString(), QString(name(info.backend).data()));
      QCOMPARE(d["type"].toString(), QString(name(info.type).data()));
      QCOMPARE(d["global_memory"].toInteger(), static_cast<qint64>(info.global_memory));
      QCOMPARE(d["max_allocation"].toInteger(), static_cast<qint64>(info.max_allocation));
      QCOMPARE(d["compute_units"].toInteger(), static_cast<qint64>(info.compute_units));
      QCOMPARE(d["fp64"].toBool(), info.fp64);
      QCOMPARE(d["images"].toBool(), info.images);
    }
    QCOMPARE(o["backends"].toArray().size(), 2);
    if (!devs.empty()) QCOMPARE(o["default"].toInt(), choose_device().device.info().index);
  }

  void devices_text() {
    const test::ProcessResult r = test::run_cli({"devices"});
    QCOMPARE(r.code, 0);
    for (const auto& d : test::test_devices()) QVERIFY2(r.out.contains(d.name().c_str()), r.out);
    QVERIFY(r.out.contains("cuda"));  // the CUDA line says why or what, even with no driver
    QVERIFY(r.out.contains("Default:") || test::test_devices().empty());
  }

  void info_sample_json() {
    if (test::test_devices().empty()) QSKIP("no device");
    const Sample s = sample();
    const auto px = s.image.as<std::uint16_t>();
    const auto [mn, mx] = std::minmax_element(px.begin(), px.end());
    const test::ProcessResult r = test::run_cli({"info", "sample", "--json", "--device", "0"});
    QVERIFY2(r.code == 0, r.err);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o["shape"].toArray(), (QJsonArray{256, 256}));
    QCOMPARE(o["dtype"].toString(), QString("uint16"));
    QCOMPARE(o["bytes"].toInteger(), 131072);
    QCOMPARE(o["size"].toString(), QString("131 kB"));
    QCOMPARE(o["min"].toInteger(), static_cast<qint64>(*mn));
    QCOMPARE(o["max"].toInteger(), static_cast<qint64>(*mx));
    QCOMPARE(o["device"].toString().toStdString(), devices()[0].label());
    QCOMPARE(o["memory"].toString(), QString("buffer"));
    QCOMPARE(o["source"].toString(), QString("sample:nuclei_2d"));
    const test::ProcessResult r3 = test::run_cli({"info", "sample:nuclei_3d", "--json"});
    QCOMPARE(QJsonDocument::fromJson(r3.out).object()["shape"].toArray(),
             (QJsonArray{32, 128, 128}));
  }

  void info_raw() {
    if (test::test_devices().empty()) QSKIP("no device");
    QTemporaryDir dir;
    const auto data = test::random_values<float>(3 * 5 * 7);
    const QString path = dir.filePath("x.raw");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(reinterpret_cast<const char*>(data.data()), static_cast<qint64>(data.size() * 4));
    f.close();
    const test::ProcessResult r =
        test::run_cli({"info", path, "--shape", "3,5,7", "--dtype", "f32", "--json"});
    QVERIFY2(r.code == 0, r.err);
    const QJsonObject o = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(o["min"].toDouble(), static_cast<double>(*std::min_element(data.begin(), data.end())));
    QCOMPARE(o["max"].toDouble(), static_cast<double>(*std::max_element(data.begin(), data.end())));
    QCOMPARE(o["dtype"].toString(), QString("float32"));
    // Text form.
    const test::ProcessResult t =
        test::run_cli({"info", path, "--shape", "3,5,7", "--dtype", "float32"});
    QVERIFY(t.out.contains("shape:  3 x 5 x 7"));
    // Errors: size mismatch (IoError, exit 1); what the command line asks wrongly, exit 2:
    // missing --shape, a device that does not exist, an unknown option (Qt's parser exited
    // with 1 for it), an unknown command or sample.
    const test::ProcessResult bad =
        test::run_cli({"info", path, "--shape", "3,5,8", "--dtype", "f32"});
    QCOMPARE(bad.code, 1);
    QVERIFY2(bad.err.contains("420 bytes") && bad.err.contains("needs 480"), bad.err);
    QCOMPARE(test::run_cli({"info", path}).code, 2);
    const test::ProcessResult nodev = test::run_cli({"info", "sample", "--device", "no-such-gpu"});
    QCOMPARE(nodev.code, 2);
    QVERIFY2(nodev.err.contains("no device matches 'no-such-gpu'"), nodev.err);
    QCOMPARE(test::run_cli({"info", "sample", "--device", "99"}).code, 2);
    const test::ProcessResult unknown = test::run_cli({"info", "sample", "--sigma-x", "2"});
    QCOMPARE(unknown.code, 2);
    QVERIFY2(unknown.err.contains("Unknown option 'sigma-x'"), unknown.err);
    QCOMPARE(test::run_cli({"--version"}).code, 0);
    QCOMPARE(test::run_cli({"frobnicate"}).code, 2);
    QCOMPARE(test::run_cli({"info", "sample:nope"}).code, 2);
    // --shape and --dtype describe raw files: with a sample they did nothing.
    for (const char* opt : {"--dtype", "--shape"}) {
      const test::ProcessResult raw =
          test::run_cli({"info", "sample", opt, opt == std::string("--dtype") ? "u8" : "4,4"});
      QCOMPARE(raw.code, 2);
      QVERIFY2(raw.err.contains("describes a raw file"), raw.err);
    }
  }

  // --help names every command; `gpix filters NAME` describes that filter alone (it printed
  // the whole catalog, ignoring the name), an unknown name is a usage error.
  void filters_one() {
    const test::ProcessResult help = test::run_cli({"--help"});
    QCOMPARE(help.code, 0);
    for (const char* c : {"devices", "filters [NAME]", "run FILTER INPUT", "info <source>"})
      QVERIFY2(help.out.contains(c), help.out);
    for (const FilterInfo& f : filters()) {
      const test::ProcessResult r = test::run_cli({"filters", QString::fromStdString(f.name)});
      QVERIFY2(r.code == 0, r.err);
      QVERIFY2(r.out.contains(("gpix run " + f.name + " ").c_str()), r.out);
      for (const ParamSpec& s : f.params) QVERIFY2(r.out.contains(("--" + s.name).c_str()), r.out);
      for (const FilterInfo& other : filters()) {
        if (other.name != f.name && other.name.find(f.name) == std::string::npos &&
            f.name.find(other.name) == std::string::npos)
          QVERIFY2(!r.out.contains(("gpix run " + other.name + " ").c_str()), r.out);
      }
    }
    const test::ProcessResult json = test::run_cli({"filters", "clip", "--json"});
    QCOMPARE(json.code, 0);
    const QJsonArray list = QJsonDocument::fromJson(json.out).array();
    QCOMPARE(list.size(), 1);
    QCOMPARE(list[0].toObject()["name"].toString(), QStringLiteral("clip"));
    const test::ProcessResult typo = test::run_cli({"filters", "median_bx"});
    QCOMPARE(typo.code, 2);
    QVERIFY2(typo.err.contains("median_box"), typo.err);
    QCOMPARE(test::run_cli({"filters", "clip", "--markdown"}).code, 2);
    QCOMPARE(test::run_cli({"filters", "clip", "absolute"}).code, 2);
  }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
