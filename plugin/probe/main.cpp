// gpix-plugin-probe [--device LABEL] [--settings FILE] PLUGIN_FILE: puts a plugin through what
// a host does with it before it is trusted, in a process of its own, so that a plugin that
// crashes there takes down this process instead of the host. In order: dlopen (static
// initialisers), its constructor, Plugin::initialize() on a BasicHost (with the host's device,
// found by its label, and a copy of the host's settings, so that what the plugin writes there
// goes nowhere), and one paint of each dock widget it added (the host shows them at once).
// PluginLoader runs it for each plugin file it has no verdict for.
//
// Exit status 0: passes. 1: refused, with the reason as the last line on the report channel,
// in the words the host shows. Killed by a signal: crashed; the host names the signal and the
// last stage reported. The report channel is this process's stdout when it starts; the plugin's
// own writes to stdout are sent to stderr, so that nothing it prints can pose as a report.
// Report lines: "stage NAME" before each stage, "refused REASON" at the end.
#include <unistd.h>

#include <QApplication>
#include <QFile>
#include <QPluginLoader>
#include <QSettings>
#include <QTemporaryDir>
#include <QWidget>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "gpix/basic_host.h"
#include "gpix/device.h"
#include "gpix/plugin_api.h"

#if defined(__SANITIZE_ADDRESS__)
// In sanitizer builds, a plugin's fault must end the probe by its signal, as in a release
// build, not by AddressSanitizer's report and exit status.
extern "C" const char* __asan_default_options() {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0";
}
#endif

namespace {

FILE* report = stdout;

void say(const QString& line) {
  std::fputs((line + QLatin1Char('\n')).toUtf8().constData(), report);
  std::fflush(report);
}

[[noreturn]] void finish(int status, const QString& reason = {}) {
  if (!reason.isEmpty()) say(QStringLiteral("refused ") + reason);
  // No destructors and no unloading: a plugin's teardown is not what is on trial, and the
  // host never unloads plugins either.
  std::_Exit(status);
}

// Keeps the report channel to this program: fd 1 becomes a copy of stderr for the plugin.
void take_report_channel() {
  std::fflush(stdout);
  const int fd = dup(STDOUT_FILENO);
  if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return;  // report on stdout as it is
  if (FILE* f = fdopen(fd, "w")) report = f;
}

gpix::Device device_by_label(const QString& label) {
  if (label.isEmpty()) return {};
  try {
    for (const gpix::Device& d : gpix::devices()) {
      if (QString::fromStdString(d.label()) == label) return d;
    }
  } catch (const std::exception&) {
    // No device here: the plugin meets a host without one, which hosts allow.
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  take_report_channel();
  // Widgets, as in the host: a constructor may make QObjects that need the application.
  QApplication app(argc, argv);
  QStringList args = QCoreApplication::arguments();
  args.removeFirst();
  QString device_label;
  QString settings_file;
  while (args.size() > 1) {
    const QString opt = args.takeFirst();
    if (opt == QStringLiteral("--device") && args.size() > 1) {
      device_label = args.takeFirst();
    } else if (opt == QStringLiteral("--settings") && args.size() > 1) {
      settings_file = args.takeFirst();
    } else {
      args.clear();
    }
  }
  if (args.size() != 1) {
    finish(2, QStringLiteral(
                  "usage: gpix-plugin-probe [--device LABEL] [--settings FILE] PLUGIN_FILE"));
  }

  say(QStringLiteral("stage constructor"));
  QPluginLoader loader(args[0]);
  QObject* object = nullptr;
  try {
    object = loader.instance();
  } catch (const std::exception& e) {
    finish(1, QStringLiteral("its constructor failed: ") + QString::fromUtf8(e.what()));
  } catch (...) {
    finish(1, QStringLiteral("its constructor failed with an unknown exception"));
  }
  if (!object) finish(1, QStringLiteral("could not be loaded: ") + loader.errorString());
  auto* plugin = qobject_cast<gpix::plugin::Plugin*>(object);
  if (!plugin) finish(1, QStringLiteral("its class does not implement gpix::plugin::Plugin"));

  // The host's settings as they are, in a copy: the plugin reads what it would read in the
  // host, and what it writes is dropped with the copy.
  QTemporaryDir tmp;
  const QString copy = tmp.filePath(QStringLiteral("settings.ini"));
  if (!settings_file.isEmpty() && QFile::exists(settings_file)) QFile::copy(settings_file, copy);
  gpix::plugin::BasicHost host(device_by_label(device_label),
                               new QSettings(copy, QSettings::IniFormat));
  say(QStringLiteral("stage initialize"));
  try {
    plugin->initialize(host);
  } catch (const std::exception& e) {
    finish(1, QStringLiteral("initialize() failed: ") + QString::fromUtf8(e.what()));
  } catch (...) {
    finish(1, QStringLiteral("initialize() failed with an unknown exception"));
  }
  say(QStringLiteral("stage paint"));
  for (const auto& dock : host.docks()) {
    if (!dock.widget) continue;
    try {
      (void)dock.widget->grab();
    } catch (const std::exception& e) {
      finish(1, QStringLiteral("its dock '%1' failed to paint: %2")
                    .arg(dock.id, QString::fromUtf8(e.what())));
    } catch (...) {
      finish(
          1,
          QStringLiteral("its dock '%1' failed to paint with an unknown exception").arg(dock.id));
    }
  }
  finish(0);
}
