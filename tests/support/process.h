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

#ifdef GPIX_CLI_PATH
// The gpix CLI of this build (gpix_add_test(... USES_CLI) defines GPIX_CLI_PATH).
inline ProcessResult run_cli(const QStringList& args, const ProcessOptions& options = {}) {
  return run_process(QStringLiteral(GPIX_CLI_PATH), args, options);
}
#endif

}  // namespace gpix::test
