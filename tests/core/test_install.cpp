// cmake --install, then find_package(gpix) from a separate project that builds and runs.
#include <QFileInfo>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>

#include "support/process.h"

namespace {
// Its output (stdout and stderr); the test fails unless it exits with 0.
QByteArray run(const QString& program, const QStringList& args, const QString& cwd = {},
               const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  const gpix::test::ProcessResult r = gpix::test::run_process(
      program, args,
      {.timeout_ms = 600000, .merge_channels = true, .working_dir = cwd, .env = env});
  [&] {
    QVERIFY2(r.code == 0, (program + " " + args.join(' ') + "\n").toUtf8() + r.out + r.err);
  }();
  return r.out;
}
}  // namespace

class TestInstall : public QObject {
  Q_OBJECT
 private slots:
  // The two install components (the gpix and gpix-dev packages) hold everything: programs and
  // libraries in "runtime", headers and the CMake package in "development". A separate project
  // then finds gpix::core alone, and (with the GUI built) the other components, and hosts the
  // installed plugin.
  void find_package_works() {
    QTemporaryDir prefix, build;
    run(GPIX_CMAKE,
        {"--install", GPIX_BINARY_DIR, "--prefix", prefix.path(), "--component", "runtime"});
    QVERIFY(QFile::exists(prefix.filePath("lib/libgpix_core.so.0")));
    QVERIFY(!QFile::exists(prefix.filePath("lib/libgpix_core.so")));  // only for linking
    QVERIFY(!QFile::exists(prefix.filePath("include")));
    run(GPIX_CMAKE,
        {"--install", GPIX_BINARY_DIR, "--prefix", prefix.path(), "--component", "development"});
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/gpix.h")));
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/version.h")));
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/dlpack.h")));
    QVERIFY(!QFile::exists(prefix.filePath("include/gpix/backend.h")));  // internals stay private
    QVERIFY(QFile::exists(prefix.filePath("lib/libgpix_core.so")));
    run(GPIX_CMAKE, {"-S", QString(GPIX_SOURCE_DIR) + "/tests/install_consumer", "-B", build.path(),
                     "-DCMAKE_PREFIX_PATH=" + prefix.path()});
    if (QTest::currentTestFailed()) return;
    // gpix::core alone looks for DLPack only.
    QFile cache(build.filePath("CMakeCache.txt"));
    QVERIFY(cache.open(QIODevice::ReadOnly));
    const QByteArray cached = cache.readAll();
    QVERIFY(cached.contains("\ndlpack_DIR:"));
    QVERIFY2(!cached.contains("\nQt6_DIR:") && !cached.contains("\nITK_DIR:"),
             "find_package(gpix) without components looked for Qt or ITK");
    if (GPIX_INSTALL_HAS_PLUGIN) {
      for (const char* f :
           {"include/gpix/io.h", "include/gpix/itk.h", "include/gpix/qimage.h",
            "include/gpix/plugin_api.h", "include/gpix/plugin_loader.h",
            "include/gpix/ui/image_view.h", "lib/libgpix_io.so.0", "lib/libgpix_qt.so.0",
            "lib/libgpix_host.so.0", "lib/libgpix_ui.so.0", "lib/gpix/plugins/libgpix_plugin.so"}) {
        QVERIFY2(QFile::exists(prefix.filePath(f)), f);
      }
      run(GPIX_CMAKE, {build.path(), "-DCONSUMER_HOST=ON"});
    }
    run(GPIX_CMAKE, {"--build", build.path()});
    if (QTest::currentTestFailed()) return;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("LD_LIBRARY_PATH"));
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    run(build.filePath("consumer"), {}, {}, env);
    if (GPIX_INSTALL_HAS_PLUGIN) {
      const QByteArray out = run(build.filePath("host"), {}, {}, env);
      QVERIFY2(out.contains("ok: gpix::io::to_itk") || out.contains("no device"), out.constData());
    }
  }

  // The installed programs and the plugin find every library they need from the install
  // prefix alone (RPATH relative to themselves; no LD_LIBRARY_PATH), and run.
  void installed_programs_run() {
    if (!GPIX_INSTALL_HAS_CLI) QSKIP("built without GPIX_WITH_APPS");
    QTemporaryDir prefix, work;
    run(GPIX_CMAKE, {"--install", GPIX_BINARY_DIR, "--prefix", prefix.path()});
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("LD_LIBRARY_PATH"));
    QStringList files = {prefix.filePath("bin/gpix")};
    if (GPIX_INSTALL_HAS_VIEWER) {
      files << prefix.filePath("bin/gpix-viewer") << prefix.filePath("bin/gpix-plugin-probe")
            << prefix.filePath("lib/gpix/plugins/libgpix_plugin.so");
    }
    for (const QString& f : files) {
      QVERIFY2(QFile::exists(f), qPrintable(f + " was not installed"));
      const QByteArray deps = run(QStringLiteral("ldd"), {f}, {}, env);
      if (QTest::currentTestFailed()) return;
      QVERIFY2(!deps.contains("not found"), qPrintable(f + ":\n" + deps));
    }
    const QByteArray filters = run(prefix.filePath("bin/gpix"), {"filters"}, {}, env);
    QVERIFY2(filters.contains("gaussian_blur"), filters.constData());
    if (GPIX_INSTALL_HAS_VIEWER) {
      env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
      const QString shot = work.filePath("shot.png");
      run(prefix.filePath("bin/gpix-viewer"), {"--screenshot", shot}, {}, env);
      QVERIFY(QFileInfo(shot).size() > 0);
      // A session named on the command line opens as File > Open session does (it was
      // refused: "no reader"), and the options wait for it.
      const QString image = work.filePath("blurred.tif");
      run(prefix.filePath("bin/gpix"), {"run", "gaussian_blur", "sample", image}, {}, env);
      QFile session(work.filePath("work.gpix.json"));
      QVERIFY(session.open(QIODevice::WriteOnly));
      session.write(R"({"format": "gpix-session", "version": 1,
                        "layers": [{"name": "blurred", "file": "blurred.tif"}]})");
      session.close();
      const QString session_shot = work.filePath("session.png");
      const gpix::test::ProcessResult opened = gpix::test::run_process(
          prefix.filePath("bin/gpix-viewer"), {session.fileName(), "--screenshot", session_shot},
          {.timeout_ms = 120000, .env = env});
      QVERIFY2(opened.code == 0 && QFileInfo(session_shot).size() > 0, opened.err.constData());
      QVERIFY2(opened.err.contains("(1 layer(s))"), opened.err.constData());
      // A usage error exits with 2, as gpix's do (Qt's parser gave 1), before any window.
      const gpix::test::ProcessResult bad =
          gpix::test::run_process(prefix.filePath("bin/gpix-viewer"), {"--no-such-option"},
                                  {.timeout_ms = 60000, .env = env});
      QVERIFY2(bad.code == 2, bad.err.constData());
      // So is a --filter or --param that gpix::run would refuse (they ran clamped or with the
      // defaults, saying nothing).
      const std::pair<QStringList, const char*> refused[] = {
          {{"--filter", "gaussian_blur", "--param", "sigma_x=500"}, "from 0 to 100"},
          {{"--filter", "gaussian_blur", "--param", "bogus=3"}, "no parameter 'bogus'"},
          {{"--filter", "gaussian_blur", "--param", "sigma_x=abc"}, "takes a number"},
          {{"--filter", "gaussian_blur", "--param", "sigma_x"}, "NAME=VALUE"},
          {{"--filter", "no_such_filter"}, "no filter named"},
          {{"--param", "sigma_x=2"}, "--filter"},
      };
      for (const auto& [args, says] : refused) {
        const gpix::test::ProcessResult r = gpix::test::run_process(
            prefix.filePath("bin/gpix-viewer"), args, {.timeout_ms = 60000, .env = env});
        QVERIFY2(r.code == 2 && r.err.contains(says),
                 (args.join(' ') + ": " + QString::number(r.code) + " " + r.err).toUtf8());
      }
    }
  }
};

QTEST_GUILESS_MAIN(TestInstall)
#include "test_install.moc"
