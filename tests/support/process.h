#pragma once
// Runs a program (the gpix CLI, cmake, python3, ldd) and collects what it printed.
#include <QByteArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <optional>

namespace gpix::test {

struct ProcessResult {
  int code = -1;        // the exit code; -1 when it crashed, could not start or did not finish
  QByteArray out, err;  // with merge_channels, everything is in out
};

struct ProcessOptions {
  int timeout_ms = 300000;
  bool merge_channels = false;
  QString working_dir{};
  std::optional<QProcessEnvironment> env{};  // the test's own environment when empty
};

// Never throws and never aborts the test: a process that does not finish within the timeout is
// killed, and err says so.
ProcessResult run_process(const QString& program, const QStringList& args,
                          const ProcessOptions& options = {});

// A Python 3 with numpy and tifffile for the differential tests (Debian's python3-tifffile; a
// python3 first in PATH, a pyenv one, may lack it): "python3" or "/usr/bin/python3", looked
// for once; empty when neither has them (the caller skips).
QString python_with_tifffile();
// `python -c script args...`.
ProcessResult run_python(const QString& python, const QString& script, const QStringList& args = {},
                         const ProcessOptions& options = {});

#ifdef GPIX_CLI_PATH
// The gpix CLI of this build (gpix_add_test(... USES_CLI) defines GPIX_CLI_PATH).
inline ProcessResult run_cli(const QStringList& args, const ProcessOptions& options = {}) {
  return run_process(QStringLiteral(GPIX_CLI_PATH), args, options);
}
#endif

}  // namespace gpix::test
