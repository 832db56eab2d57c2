// gpix-plugin-probe FILE: loads a plugin and runs its constructor (and static initialisers) in
// a process of its own, so that a plugin that crashes there takes down this process instead of
// the host. PluginLoader runs it for each plugin file it has no verdict for.
// Exit status 0: loads, and implements gpix::plugin::Plugin. 1: refused, with the reason on
// stdout in the words the host shows. Killed by a signal: crashed (the host names the signal).
#include <QApplication>
#include <QPluginLoader>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "gpix/plugin_api.h"

#if defined(__SANITIZE_ADDRESS__)
// In sanitizer builds, a plugin's fault must end the probe by its signal, as in a release
// build, not by AddressSanitizer's report and exit status.
extern "C" const char* __asan_default_options() {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0";
}
#endif

namespace {

[[noreturn]] void finish(int status, const QString& said) {
  if (!said.isEmpty()) std::fputs((said + QLatin1Char('\n')).toUtf8().constData(), stdout);
  std::fflush(stdout);
  // No destructors and no unloading: a plugin's teardown is not what is on trial, and the
  // host never unloads plugins either.
  std::_Exit(status);
}

}  // namespace

int main(int argc, char** argv) {
  // Widgets, as in the host: a constructor may make QObjects that need the application.
  QApplication app(argc, argv);
  const QStringList args = QCoreApplication::arguments();
  if (args.size() != 2) finish(2, QStringLiteral("usage: gpix-plugin-probe PLUGIN_FILE"));
  QPluginLoader loader(args[1]);
  QObject* object = nullptr;
  try {
    object = loader.instance();
  } catch (const std::exception& e) {
    finish(1, QStringLiteral("its constructor failed: ") + QString::fromUtf8(e.what()));
  } catch (...) {
    finish(1, QStringLiteral("its constructor failed with an unknown exception"));
  }
  if (!object) finish(1, QStringLiteral("could not be loaded: ") + loader.errorString());
  if (!qobject_cast<gpix::plugin::Plugin*>(object)) {
    finish(1, QStringLiteral("its class does not implement gpix::plugin::Plugin"));
  }
  finish(0, {});
}
