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

}  // namespace gpix::test
