#include "support/process.h"

#include <QProcess>

namespace gpix::test {

ProcessResult run_process(const QString& program, const QStringList& args,
                          const ProcessOptions& options) {
  QProcess p;
  if (options.merge_channels) p.setProcessChannelMode(QProcess::MergedChannels);
  if (options.env) p.setProcessEnvironment(*options.env);
  if (!options.working_dir.isEmpty()) p.setWorkingDirectory(options.working_dir);
  p.start(program, args);
  ProcessResult r;
  if (!p.waitForFinished(options.timeout_ms)) {
    p.kill();
    p.waitForFinished();
    r.out = p.readAllStandardOutput();
    r.err =
        p.readAllStandardError() + "\n" + program.toUtf8() + " " + args.join(' ').toUtf8() +
        (p.error() == QProcess::FailedToStart
             ? QByteArray(": could not start")
             : ": did not finish within " + QByteArray::number(options.timeout_ms / 1000) + " s");
    return r;
  }
  r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput();
  r.err = p.readAllStandardError();
  return r;
}

QString python_with_tifffile() {
  static const QString found = [] {
    for (const QString& py : {QStringLiteral("python3"), QStringLiteral("/usr/bin/python3")}) {
      if (run_python(py, QStringLiteral("import numpy, tifffile"), {}, {.timeout_ms = 60000})
              .code == 0)
        return py;
    }
    return QString();
  }();
  return found;
}

ProcessResult run_python(const QString& python, const QString& script, const QStringList& args,
                         const ProcessOptions& options) {
  return run_process(python, QStringList{QStringLiteral("-c"), script} + args, options);
}

}  // namespace gpix::test
