// The plugin loader: a valid plugin loads and initialises; wrong IID, wrong or missing API
// version, a duplicate name, a missing file, a file that is no plugin and a plugin whose
// dependency is missing are each refused with the reason, and the refused ones are never
// instantiated; plugins in places other users can change are refused unless allowed, and one
// that crashes in its constructor is refused by a trial load in gpix-plugin-probe. Also the
// real gpix plugin (docks, readers, writers).
#include <unistd.h>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QSettings>
#include <QTemporaryDir>
#include <QTest>

#include "gpix/basic_host.h"
#include "gpix/plugin_loader.h"
#include "gpix/samples.h"

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::plugin::PluginLoader;
using gpix::plugin::PluginRecord;

namespace {

QString plugin_file(const QString& name) {
  const QDir dir(QStringLiteral(GPIX_TEST_PLUGIN_DIR));
  const QStringList hits =
      dir.entryList({QStringLiteral("*") + name + QStringLiteral(".so")}, QDir::Files);
  for (const QString& h : hits) {
    if (h == QStringLiteral("lib") + name + QStringLiteral(".so") ||
        h == name + QStringLiteral(".so")) {
      return dir.filePath(h);
    }
  }
  return dir.filePath(QStringLiteral("lib") + name + QStringLiteral(".so"));
}

PluginRecord find(const QList<PluginRecord>& rs, const QString& file_part) {
  for (const PluginRecord& r : rs) {
    if (QFileInfo(r.path).fileName().contains(file_part)) return r;
  }
  return {};
}

bool instantiated(const char* name) {
  return qEnvironmentVariableIsSet((QByteArray("GPIX_TEST_INSTANTIATED_") + name).constData());
}

bool has_reader(const BasicHost& h, const QString& name) {
  for (const auto& r : h.readers()) {
    if (r.name == name) return true;
  }
  return false;
}

}  // namespace

class TestPluginLoader : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<QSettings> settings() {
    return std::make_unique<QSettings>(tmp_.filePath(QStringLiteral("s.ini")),
                                       QSettings::IniFormat);
  }

 private slots:
  void inspect_reads_manifest_without_loading() {
    const PluginRecord r = PluginLoader::inspect(plugin_file(QStringLiteral("good")));
    QVERIFY2(r.reason.isEmpty(), qPrintable(r.reason));
    QCOMPARE(r.name, QStringLiteral("good"));
    QCOMPARE(r.version, QStringLiteral("0.0.1"));
    QCOMPARE(r.api_version, 1);
    QVERIFY(!r.loaded);
    const PluginRecord w = PluginLoader::inspect(plugin_file(QStringLiteral("wrong_api")));
    QVERIFY(w.reason.contains(QStringLiteral("API 99")));
    QVERIFY(!instantiated("good"));
    QVERIFY(!instantiated("wrong_api"));
  }

  void folder_load_reports_each_reason() {
    BasicHost host(default_device(), settings().release());
    PluginLoader loader;
    const QList<PluginRecord> rs = loader.load_all({QStringLiteral(GPIX_TEST_PLUGIN_DIR)}, host);
    QCOMPARE(rs.size(), 9);

    const PluginRecord good = find(rs, QStringLiteral("good.so"));
    QVERIFY2(good.loaded, qPrintable(good.reason));
    QVERIFY(instantiated("good"));
    QVERIFY(has_reader(host, QStringLiteral("good")));

    const PluginRecord iid = find(rs, QStringLiteral("wrong_iid"));
    QVERIFY(!iid.loaded);
    QVERIFY2(iid.reason.contains(QStringLiteral("org.gpix.Plugin/2.0")) &&
                 iid.reason.contains(QStringLiteral("org.gpix.Plugin/1.0")),
             qPrintable(iid.reason));
    QVERIFY(!instantiated("wrong_iid"));
    QVERIFY(!has_reader(host, QStringLiteral("wrong_iid")));

    const PluginRecord api = find(rs, QStringLiteral("wrong_api"));
    QVERIFY(!api.loaded);
    QVERIFY2(api.reason.contains(QStringLiteral("API 99")) &&
                 api.reason.contains(QStringLiteral("API 1")),
             qPrintable(api.reason));
    QVERIFY(!instantiated("wrong_api"));

    const PluginRecord none = find(rs, QStringLiteral("no_api"));
    QVERIFY(!none.loaded);
    QVERIFY2(none.reason.contains(QStringLiteral("no apiVersion")), qPrintable(none.reason));
    QVERIFY(!instantiated("no_api"));

    const PluginRecord dep = find(rs, QStringLiteral("missing_dep"));
    QVERIFY(!dep.loaded);
    QVERIFY2(dep.reason.contains(QStringLiteral("libgpix_test_dep")), qPrintable(dep.reason));
    QVERIFY(!has_reader(host, QStringLiteral("missing_dep")));

    const PluginRecord again = find(rs, QStringLiteral("good_again"));
    QVERIFY(!again.loaded);
    QVERIFY2(again.reason.contains(QStringLiteral("already loaded")), qPrintable(again.reason));
    QVERIFY(!instantiated("good_again"));

    // A plugin's own code that throws, in its constructor or in initialize(), refuses that
    // plugin with the message; the host and the other plugins go on.
    const PluginRecord ctor = find(rs, QStringLiteral("throws_ctor"));
    QVERIFY(!ctor.loaded);
    QVERIFY2(ctor.reason.contains(QStringLiteral("constructor")) &&
                 ctor.reason.contains(QStringLiteral("no licence on this machine")),
             qPrintable(ctor.reason));
    const PluginRecord init = find(rs, QStringLiteral("throws_init"));
    QVERIFY(!init.loaded);
    QVERIFY2(init.reason.contains(QStringLiteral("its device is busy")), qPrintable(init.reason));
    QVERIFY(!has_reader(host, QStringLiteral("throws_init")));
    // Not a std::exception (throw 42): still the plugin's failure, not the host's end.
    const PluginRecord any = find(rs, QStringLiteral("throws_int_init"));
    QVERIFY(!any.loaded);
    QVERIFY2(any.reason.contains(QStringLiteral("initialize() failed with an unknown exception")),
             qPrintable(any.reason));
    QCOMPARE(loader.records().size(), 9);
  }

  void missing_and_foreign_files() {
    BasicHost host(default_device(), settings().release());
    PluginLoader loader;
    const QString missing = tmp_.filePath(QStringLiteral("libnot_there.so"));
    QFile junk(tmp_.filePath(QStringLiteral("libjunk.so")));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write("this is not a shared library");
    junk.close();
    const QList<PluginRecord> rs = loader.load_all(
        {missing, junk.fileName(), tmp_.filePath(QStringLiteral("no_such_folder"))}, host);
    QCOMPARE(rs.size(), 2);  // a missing folder is not an error, a missing library is
    QVERIFY(!rs[0].loaded);
    QVERIFY2(rs[0].reason.contains(QStringLiteral("does not exist")), qPrintable(rs[0].reason));
    QVERIFY(!rs[1].loaded);
    QVERIFY2(rs[1].reason.contains(QStringLiteral("not a Qt plugin")), qPrintable(rs[1].reason));
  }

  // A plugin that dies by SIGSEGV in its constructor: tried in gpix-plugin-probe first, so it
  // is refused with the signal named, and the host (this test) and later plugins go on. The
  // verdicts are kept by the file's SHA-256: a second loader decides without the helper.
  void crashing_constructor_is_refused() {
    const QString cache = tmp_.filePath(QStringLiteral("verdicts.ini"));
    gpix::plugin::LoaderOptions o;
    o.probe = QStringLiteral(GPIX_PLUGIN_PROBE);
    o.verdict_cache = cache;
    {
      BasicHost host(default_device(), settings().release());
      PluginLoader loader(o);
      const PluginRecord crash = loader.load(QStringLiteral(GPIX_CRASHING_PLUGIN), host);
      QVERIFY(!crash.loaded);
      QVERIFY2(crash.reason.contains(QStringLiteral("crashed (SIGSEGV)")),
               qPrintable(crash.reason));
      QVERIFY(!instantiated("crashes_ctor"));  // never constructed in this process
      const PluginRecord good = loader.load(plugin_file(QStringLiteral("good")), host);
      QVERIFY2(good.loaded, qPrintable(good.reason));
      // An exception in the constructor is reported by the helper in the same words.
      const PluginRecord ctor = loader.load(plugin_file(QStringLiteral("throws_ctor")), host);
      QVERIFY(!ctor.loaded);
      QVERIFY2(ctor.reason.contains(QStringLiteral("its constructor failed: no licence")),
               qPrintable(ctor.reason));
    }
    QSettings kept(cache, QSettings::IniFormat);
    kept.beginGroup(QStringLiteral("verdicts"));
    QCOMPARE(kept.childKeys().size(), 2);  // crash and good; not the exception
    // The same files again, with a helper that does not exist: the kept verdicts decide.
    o.probe = tmp_.filePath(QStringLiteral("no-such-probe"));
    BasicHost host(default_device(), settings().release());
    PluginLoader again(o);
    const PluginRecord crash = again.load(QStringLiteral(GPIX_CRASHING_PLUGIN), host);
    QVERIFY2(crash.reason.contains(QStringLiteral("crashed (SIGSEGV)")), qPrintable(crash.reason));
    const PluginRecord good = again.load(plugin_file(QStringLiteral("good_again")), host);
    QVERIFY2(good.reason.contains(QStringLiteral("no-such-probe is missing")),
             qPrintable(good.reason));  // no verdict for this file: the missing helper refuses
  }

  // Plugins that crash or throw in initialize(), or crash when their dock is first painted:
  // the trial process meets them first (with this host's device and a copy of its settings),
  // so each is refused with the signal (or the message) and the stage, none runs in this
  // process, and the host and a good plugin loaded after them go on working.
  void crashing_initialize_is_refused() {
    gpix::plugin::LoaderOptions o;
    o.probe = QStringLiteral(GPIX_PLUGIN_PROBE);
    BasicHost host(default_device(), settings().release());
    host.settings().setValue(QStringLiteral("kept"), 7);
    host.settings().sync();
    PluginLoader loader(o);
    const struct {
      const char* file;
      const char* name;
      const char* signal;
      const char* stage;
    } cases[] = {
        {GPIX_CRASHING_INIT_PLUGIN, "crashes_init", "SIGSEGV", "in its initialize()"},
        {GPIX_ABORTING_INIT_PLUGIN, "aborts_init", "SIGABRT", "in its initialize()"},
        {GPIX_CRASHING_PAINT_PLUGIN, "crashes_paint", "SIGSEGV", "while its docks were painted"},
    };
    for (const auto& c : cases) {
      const PluginRecord r = loader.load(QString::fromUtf8(c.file), host);
      QVERIFY(!r.loaded);
      const QString want = QStringLiteral("it crashed (%1) %2 while a trial process loaded it")
                               .arg(QLatin1String(c.signal), QLatin1String(c.stage));
      QVERIFY2(r.reason.contains(want), qPrintable(r.name + QStringLiteral(": ") + r.reason));
      QVERIFY(!instantiated(c.name));  // never constructed in this process
    }
    // Exceptions in initialize(), reported by the helper with the message.
    const PluginRecord init = loader.load(plugin_file(QStringLiteral("throws_init")), host);
    QVERIFY(!init.loaded);
    QVERIFY2(init.reason == QStringLiteral("initialize() failed: its device is busy"),
             qPrintable(init.reason));
    const PluginRecord any = loader.load(plugin_file(QStringLiteral("throws_int_init")), host);
    QVERIFY2(any.reason == QStringLiteral("initialize() failed with an unknown exception"),
             qPrintable(any.reason));
    QVERIFY(!has_reader(host, QStringLiteral("crashes_init")));
    QVERIFY(host.docks().isEmpty());

    // The host goes on: a good plugin passes the same trial, loads, and its reader works; the
    // settings the trial's copy was made from are as they were.
    const PluginRecord good = loader.load(plugin_file(QStringLiteral("good")), host);
    QVERIFY2(good.loaded, qPrintable(good.reason));
    QVERIFY(has_reader(host, QStringLiteral("good")));
    const QString data = tmp_.filePath(QStringLiteral("x.good"));
    QFile f(data);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.close();
    QVERIFY(host.open_file(data).isEmpty());  // the test reader gives no layers
    QCOMPARE(host.settings().value(QStringLiteral("kept")).toInt(), 7);
    QCOMPARE(loader.records().size(), 6);
  }

  // The helper's report channel is its own: what a plugin prints cannot pose as a verdict.
  void probe_report_is_not_the_plugins_stdout() {
    const QString out = tmp_.filePath(QStringLiteral("probe.out"));
    QProcess p;
    p.setStandardOutputFile(out);
    p.setProcessEnvironment([] {
      QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
      e.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
      return e;
    }());
    p.start(QStringLiteral(GPIX_PLUGIN_PROBE), {QStringLiteral(GPIX_CRASHING_INIT_PLUGIN)});
    QVERIFY(p.waitForFinished(30000));
    QCOMPARE(p.exitStatus(), QProcess::CrashExit);
    QFile f(out);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll(), QByteArray("stage constructor\nstage initialize\n"));
  }

  // Plugins from places other users can change are refused before anything of them is read,
  // with the place and the permission named; allow_untrusted loads them.
  void untrusted_locations_are_refused() {
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("plugins"));
    QVERIFY(QDir().mkpath(folder));
    const QString file = folder + QStringLiteral("/libgood_copy.so");
    QVERIFY(QFile::copy(plugin_file(QStringLiteral("good")), file));
    auto load = [&](bool allow) {
      gpix::plugin::LoaderOptions o;
      o.allow_untrusted = allow;
      BasicHost host(default_device(), settings().release());
      PluginLoader loader(o);
      return loader.load(file, host);
    };
    const auto rwx = QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner | QFile::ReadGroup |
                     QFile::ExeGroup | QFile::ReadOther | QFile::ExeOther;
    QVERIFY(QFile::setPermissions(folder, rwx | QFile::WriteOther));  // 0757
    PluginRecord r = load(false);
    QVERIFY(!r.loaded);
    QVERIFY2(r.reason.contains(QStringLiteral("not trusted: its folder ") + folder) &&
                 r.reason.contains(QStringLiteral("writable by every user (mode 0757)")) &&
                 r.reason.contains(QStringLiteral("--allow-untrusted-plugins")),
             qPrintable(r.reason));
    QVERIFY(PluginLoader::untrusted(dir.path()).isEmpty());  // its parent (/tmp: sticky) is fine
    r = load(true);
    QVERIFY2(r.loaded, qPrintable(r.reason));
    QVERIFY(QFile::setPermissions(folder, rwx));
    QVERIFY(QFile::setPermissions(
        file, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadOther | QFile::WriteOther));
    r = load(false);
    QVERIFY2(r.reason.contains(QStringLiteral("the file is writable by every user (mode 0606)")),
             qPrintable(r.reason));
    QVERIFY(QFile::setPermissions(file, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadOther));
    QVERIFY2(PluginLoader::untrusted(file).isEmpty(), qPrintable(PluginLoader::untrusted(file)));
    // A link from a trusted place to the untrusted folder is judged by where it leads.
    QVERIFY(QFile::setPermissions(folder, rwx | QFile::WriteOther));
    const QString link = dir.filePath(QStringLiteral("libgood_link.so"));
    QVERIFY(QFile::link(file, link));
    QVERIFY2(PluginLoader::untrusted(link).contains(folder),
             qPrintable(PluginLoader::untrusted(link)));
    QVERIFY(QFile::setPermissions(folder, rwx));
    // Another user's file: only root can make one here.
    if (geteuid() == 0) {
      QVERIFY(chown(QFile::encodeName(file).constData(), 65534, 65534) == 0);
      QVERIFY2(PluginLoader::untrusted(file).contains(QStringLiteral("the file belongs to")),
               qPrintable(PluginLoader::untrusted(file)));
    }
  }

  void search_paths_include_env_and_app_dir() {
    qputenv("GPIX_PLUGIN_PATH", "/opt/a:/opt/b/libx.so");
    const QStringList p = PluginLoader::default_search_paths(QStringLiteral("/usr/local/bin"));
    qunsetenv("GPIX_PLUGIN_PATH");
    QCOMPARE(p.value(0), QStringLiteral("/usr/local/lib/gpix/plugins"));
    QCOMPARE(p.value(1), QStringLiteral("/usr/local/bin/plugins"));
    QVERIFY(p.contains(QStringLiteral("/opt/a")));
    QVERIFY(p.contains(QStringLiteral("/opt/b/libx.so")));
    QVERIFY(p.last().endsWith(QStringLiteral("/plugins")));
  }

  void gpix_plugin_contributes_docks_and_formats() {
    BasicHost host(default_device(), settings().release());
    PluginLoader loader;
    const PluginRecord r = loader.load(QStringLiteral(GPIX_PLUGIN_FILE), host);
    QVERIFY2(r.loaded, qPrintable(r.reason));
    QCOMPARE(r.name, QStringLiteral("gpix"));
    QCOMPARE(r.api_version, gpix::plugin::kApiVersion);
    for (const char* id : {"devices", "layer_card", "filters", "workflow"}) {
      QVERIFY2(host.dock_widget(QLatin1String(id)), id);
    }
    // The manifest lists what the code registers.
    QStringList manifest_readers;
    for (const auto& v : r.manifest.value(QStringLiteral("readers")).toArray()) {
      manifest_readers << v.toObject().value(QStringLiteral("name")).toString();
    }
    QStringList readers;
    for (const auto& rd : host.readers()) readers << rd.name;
    QCOMPARE(readers, manifest_readers);
    QVERIFY(host.reader_for(QStringLiteral("x/cells_3x4x5_u16.raw")));
    QVERIFY(host.writer_for(QStringLiteral("out.PNG")));
    QVERIFY(!host.reader_for(QStringLiteral("a.xyz")));
    // The sample menu opens the embedded sample.
    QVERIFY(!host.menu_actions().isEmpty());
    host.menu_actions().first().second->trigger();
    QCOMPARE(host.layer_ids().size(), 1);
    const HostArray want = gpix::sample().image;
    const HostArray got = host.host_data(host.layer_ids().first());
    QCOMPARE(got.shape(), want.shape());
    QVERIFY(std::memcmp(got.data(), want.data(), want.bytes()) == 0);
  }
};

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  TestPluginLoader t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_plugin_loader.moc"
