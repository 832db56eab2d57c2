// cmake --install, then find_package(gpix) from a separate project that builds and runs.
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

namespace {
void run(const QString& program, const QStringList& args, const QString& cwd = {}) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  if (!cwd.isEmpty()) p.setWorkingDirectory(cwd);
  p.start(program, args);
  QVERIFY(p.waitForFinished(600000));
  const QByteArray out = p.readAll();
  QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
           (program + " " + args.join(' ') + "\n").toUtf8() + out);
}
}  // namespace

class TestInstall : public QObject {
  Q_OBJECT
 private slots:
  void find_package_works() {
    QTemporaryDir prefix, build;
    run(GPIX_CMAKE, {"--install", GPIX_BINARY_DIR, "--prefix", prefix.path(), "--component", "Unspecified"});
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/gpix.h")));
    QVERIFY(QFile::exists(prefix.filePath("include/gpix/version.h")));
    QVERIFY(!QFile::exists(prefix.filePath("include/gpix/backend.h")));  // internals stay private
    run(GPIX_CMAKE, {"-S", QString(GPIX_SOURCE_DIR) + "/tests/install_consumer", "-B", build.path(),
                     "-DCMAKE_PREFIX_PATH=" + prefix.path()});
    run(GPIX_CMAKE, {"--build", build.path()});
    run(build.filePath("consumer"), {});
  }
};

QTEST_GUILESS_MAIN(TestInstall)
#include "test_install.moc"
