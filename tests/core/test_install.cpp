// cmake --install, then find_package(gpix) from a separate project that builds and runs.
#include <QFileInfo>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>

namespace {
QByteArray run(const QString& program, const QStringList& args, const QString& cwd = {},
               const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  p.setProcessEnvironment(env);
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(program, args);
  [&] { QVERIFY(p.waitForFinished(600000)); }();
  const QByteArray out = p.readAll();
  [&] {
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
             (program + " " + args.join(' ') + "\n").toUtf8() + out);
  }();
  return out;
}
}  // namespace

class TestInstall : public QObject {
  Q_OBJECT
 private slots:
  void find_package_works() {
    QTemporaryDir prefix, build;
    run(GPIX_CMAKE,
        {"--install", GPIX_BINARY_DIR, "--prefix", prefix.path(), "--component", "Unspecified"});
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/gpix.h")));
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/version.h")));
    QVERIFY(!QFile::exists(prefix.filePath("include/gpix/backend.h")));  // internals stay private
    run(GPIX_CMAKE, {"-S", QString(GPIX_SOURCE_DIR) + "/tests/install_consumer", "-B", build.path(),
                     "-DCMAKE_PREFIX_PATH=" + prefix.path()});
    run(GPIX_CMAKE, {"--build", build.path()});
    run(build.filePath("consumer"), {});
  }

  // The installed programs and the plugin find every library they need from the install
  // prefix alone (RPATH relative to themselves; no LD_LIBRARY_PATH), and run.
  void installed_programs_run() {
    QTemporaryDir prefix, work;
    run(GPIX_CMAKE, {"--install", GPIX_BINARY_DIR, "--prefix", prefix.path()});
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove(QStringLiteral("LD_LIBRARY_PATH"));
    QStringList files = {prefix.filePath("bin/gpix")};
    if (GPIX_INSTALL_HAS_VIEWER) {
      files << prefix.filePath("bin/gpix-viewer")
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
    }
  }
};

QTEST_GUILESS_MAIN(TestInstall)
#include "test_install.moc"
