// gpix-viewer: the reference host. With no file it opens the embedded sample image.
#include <QApplication>
#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDockWidget>
#include <QTimer>
#include <algorithm>
#include <cstdio>

#include "gpix/basic_host.h"
#include "gpix/catalog.h"
#include "gpix/device.h"
#include "gpix/error.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/stack_file.h"
#include "gpix/version.h"
#include "main_window.h"

namespace {

void add_options(QCommandLineParser& p) {
  p.setApplicationDescription(QStringLiteral(
      "gpix-viewer: view images and run gpix filters on any GPU.\n"
      "FILE may be an image (*.raw, *.png, ...) or sample[:NAME]; with none, the sample opens."));
  p.addHelpOption();
  p.addVersionOption();
  p.addPositionalArgument(QStringLiteral("files"),
                          QStringLiteral("Images to open, or one session (NAME.gpix.json)."),
                          QStringLiteral("[FILE...]"));
  p.addOption({QStringLiteral("device"),
               QStringLiteral("Device: index, name part, or cuda:/opencl: prefix."),
               QStringLiteral("NAME")});
  p.addOption({QStringLiteral("file-backed-above"),
               QStringLiteral("Open stacks larger than this many MB from their files, reading the "
                              "planes shown on demand (default: a quarter of the host's or the "
                              "device's memory)."),
               QStringLiteral("MB")});
  p.addOption({QStringLiteral("filter"), QStringLiteral("Select this filter in the filter panel."),
               QStringLiteral("NAME")});
  p.addOption({QStringLiteral("param"),
               QStringLiteral("Set a parameter of the selected filter (repeatable)."),
               QStringLiteral("NAME=VALUE")});
  p.addOption(
      {QStringLiteral("run"), QStringLiteral("Run the selected filter once the window is up.")});
  p.addOption({QStringLiteral("preview"), QStringLiteral("Turn live preview on.")});
  p.addOption({QStringLiteral("dock"),
               QStringLiteral("Raise this dock (devices, layer_card, filters, workflow, layers)."),
               QStringLiteral("ID")});
  p.addOption({QStringLiteral("slice"), QStringLiteral("Show this slice of a 3D stack."),
               QStringLiteral("Z")});
  p.addOption({QStringLiteral("screenshot"),
               QStringLiteral("Save a screenshot of the window to FILE and quit."),
               QStringLiteral("FILE")});
  p.addOption({QStringLiteral("allow-untrusted-plugins"),
               QStringLiteral("Load plugins from folders or files that other users may change "
                              "(also GPIX_PLUGIN_ALLOW_UNTRUSTED=1).")});
  p.addOption({QStringLiteral("screenshot-dock"),
               QStringLiteral("With --screenshot: grab only this dock."), QStringLiteral("ID")});
}

void set_names() {
  QCoreApplication::setApplicationName(QStringLiteral("gpix-viewer"));
  QCoreApplication::setOrganizationName(QStringLiteral("gpix"));
  QCoreApplication::setApplicationVersion(QStringLiteral(GPIX_VERSION_STRING));
}

// --filter, --param, --run, --preview, --dock, --slice and --screenshot, once the files are open.
// --filter NAME and its --param NAME=VALUE options, checked as gpix::run would take them: the
// parameters given (none without --filter).
gpix::Params filter_options(const QCommandLineParser& p) {
  const QStringList params = p.values(QStringLiteral("param"));
  if (!p.isSet(QStringLiteral("filter"))) {
    if (!params.isEmpty())
      throw gpix::InvalidArgument("--param sets a parameter of the --filter named with it");
    return {};
  }
  const gpix::FilterInfo& f = gpix::filter(p.value(QStringLiteral("filter")).toStdString());
  gpix::Params given;
  for (const QString& kv : params) {
    if (!kv.contains(QLatin1Char('='))) {
      throw gpix::InvalidArgument("--param takes NAME=VALUE, not '" + kv.toStdString() + "'");
    }
    const std::string name = kv.section(QLatin1Char('='), 0, 0).trimmed().toStdString();
    const gpix::ParamSpec* spec = f.param(name);
    if (!spec) {
      gpix::check_params(f.name, {{name, 0.0}});  // says which parameters the filter has
      continue;
    }
    given[name] = gpix::parse_param(*spec, kv.section(QLatin1Char('='), 1).toStdString());
  }
  gpix::check_params(f.name, given);
  return given;
}

void apply_options(MainWindow& w, const QCommandLineParser& p) {
  auto* filters =
      qobject_cast<gpix::ui::FilterPanel*>(w.host().dock_widget(QStringLiteral("filters")));
  if (p.isSet(QStringLiteral("filter")) && filters) {
    filters->select_filter(p.value(QStringLiteral("filter")));
    // Checked before the window (main): the values as parsed there.
    for (const auto& [name, value] : filter_options(p)) {
      if (!filters->form()) break;
      filters->form()->set_param(QString::fromStdString(name), value);
    }
    if (p.isSet(QStringLiteral("preview"))) filters->set_preview(true);
    if (p.isSet(QStringLiteral("run"))) filters->run();
  }
  if (p.isSet(QStringLiteral("dock"))) {
    if (auto* dock =
            w.findChild<QDockWidget*>(QStringLiteral("dock_") + p.value(QStringLiteral("dock")))) {
      dock->show();
      dock->raise();
    }
  }
  if (p.isSet(QStringLiteral("slice")))
    w.view()->set_slice(p.value(QStringLiteral("slice")).toInt());
  if (p.isSet(QStringLiteral("screenshot"))) {
    const QString out = p.value(QStringLiteral("screenshot"));
    QWidget* target = &w;
    if (p.isSet(QStringLiteral("screenshot-dock"))) {
      target = w.findChild<QDockWidget*>(QStringLiteral("dock_") +
                                         p.value(QStringLiteral("screenshot-dock")));
      if (!target) target = &w;
    }
    // Wait for filters to finish and the window to settle, then grab it.
    auto* timer = new QTimer(&w);
    QObject::connect(timer, &QTimer::timeout, &w, [&w, target, filters, out, timer] {
      // Frames and contrast arrive from worker threads: wait for them too.
      if ((filters && filters->busy()) || w.view()->busy() || w.reading() ||
          w.histogram_panel()->busy())
        return;
      timer->stop();
      QTimer::singleShot(300, &w, [&w, target, out] {
        const bool ok = target->grab().save(out);
        // With the number of layers shown, for scripts (and tests) that check what opened.
        std::fprintf(stderr, "gpix-viewer: %s %s (%d layer(s))\n", ok ? "saved" : "could not save",
                     qPrintable(out), int(w.host().layer_ids().size()));
        QApplication::exit(ok ? 0 : 1);
      });
    });
    timer->start(200);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // --help and --version answer without a display (QApplication needs one to start) and
  // a bad --device stops here with its reason, before any window: no silent fallback.
  gpix::Device device;
  {
    QCoreApplication console(argc, argv);
    set_names();
    QCommandLineParser p;
    add_options(p);
    // A usage error exits with 2, as gpix's (and a bad --device here) do; process() gave 1.
    if (!p.parse(QCoreApplication::arguments())) {
      std::fprintf(stderr, "gpix-viewer: %s\n", qPrintable(p.errorText()));
      return 2;
    }
    if (p.isSet(QStringLiteral("help")) || p.optionNames().contains(QStringLiteral("help-all")))
      p.showHelp(0);
    if (p.isSet(QStringLiteral("version"))) p.showVersion();
    if (p.isSet(QStringLiteral("device"))) {
      try {
        device = gpix::choose_device(p.value(QStringLiteral("device")).toStdString()).device;
      } catch (const gpix::Error& e) {
        std::fprintf(stderr, "gpix-viewer: %s\n", e.what());
        return 2;
      }
    }
    // --filter and its --param values are checked here too: a value out of range ran clamped
    // by the form (sigma_x=500 ran 100), a misspelt name ran the defaults, both silently.
    try {
      (void)filter_options(p);
    } catch (const gpix::Error& e) {
      std::fprintf(stderr, "gpix-viewer: %s\n", e.what());
      return 2;
    }
  }
  QApplication app(argc, argv);
  set_names();
  QCommandLineParser p;
  add_options(p);
  p.process(app);

  if (p.isSet(QStringLiteral("file-backed-above"))) {
    gpix::ui::LargeStackPolicy policy = gpix::ui::large_stack_policy();
    policy.threshold_bytes =
        std::max<std::uint64_t>(1, p.value(QStringLiteral("file-backed-above")).toULongLong())
        << 20;
    gpix::ui::set_large_stack_policy(policy);
  }
  MainWindow w;
  if (device.valid()) w.host().set_device(device);
  gpix::plugin::LoaderOptions plugin_options;
  plugin_options.allow_untrusted =
      p.isSet(QStringLiteral("allow-untrusted-plugins")) ||
      qEnvironmentVariable("GPIX_PLUGIN_ALLOW_UNTRUSTED") == QStringLiteral("1");
  plugin_options.probe = gpix::plugin::PluginLoader::default_probe();
  plugin_options.verdict_cache = gpix::plugin::PluginLoader::default_verdict_cache();
  w.plugins().set_options(plugin_options);
  w.load_plugins(
      gpix::plugin::PluginLoader::default_search_paths(QApplication::applicationDirPath()));
  // The files are read off the GUI thread (the window shows at once); what the options do to
  // them waits until they are in.
  const QStringList files = p.positionalArguments();
  const bool session =
      files.size() == 1 && files[0].endsWith(QLatin1String(".gpix.json"), Qt::CaseInsensitive);
  if (!session) {
    QObject::connect(
        &w, &MainWindow::files_opened, &w, [&w, &p] { apply_options(w, p); },
        Qt::SingleShotConnection);
  }
  if (files.isEmpty()) {
    w.open_default();
  } else if (session) {
    // A session, as File > Open session reads it (it was refused: "no reader"); the options
    // apply once it is in.
    QObject::connect(
        &w, &MainWindow::session_opened, &w, [&w, &p](bool) { apply_options(w, p); },
        Qt::SingleShotConnection);
    w.open_session(files[0]);
  } else {
    w.open_files(files);
  }
  w.show();
  return QApplication::exec();
}
