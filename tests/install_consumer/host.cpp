// A Qt host built against the installed gpix: loads the installed gpix plugin, opens the
// embedded 2D sample (uint16) through it, shows it in gpix::ui's ImageView, saves it through the
// plugin's writer and reads the file back with gpix::io, and converts it with gpix::qt and
// gpix/itk.h. Prints what it checked; exits 1 on the first failure.
#include <QApplication>
#include <QSettings>
#include <QTemporaryDir>
#include <QTimer>
#include <cstdint>
#include <cstdio>

#include "gpix/basic_host.h"
#include "gpix/device.h"
#include "gpix/io.h"
#include "gpix/itk.h"
#include "gpix/plugin_loader.h"
#include "gpix/qimage.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/image_view.h"

namespace {
bool check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  return ok;
}
}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  if (gpix::devices().empty()) {
    std::printf("no device: nothing to host\n");
    return 0;
  }
  QTemporaryDir tmp;
  gpix::plugin::BasicHost host(
      gpix::default_device(),
      new QSettings(tmp.filePath(QStringLiteral("host.ini")), QSettings::IniFormat));
  gpix::plugin::PluginLoader loader;
  bool loaded = false;
  for (const auto& r : loader.load_all({QStringLiteral(GPIX_PLUGIN_DIR)}, host)) {
    std::printf("plugin %s: %s\n", qPrintable(r.path), r.loaded ? "loaded" : qPrintable(r.reason));
    loaded = loaded || (r.loaded && r.name == QStringLiteral("gpix"));
  }
  if (!check(loaded, "the installed gpix plugin loads")) return 1;
  // The plugin's widgets are gpix::ui classes: the cast works only if plugin and host share
  // the installed libgpix_ui.
  if (!check(qobject_cast<gpix::ui::FilterPanel*>(host.dock_widget(QStringLiteral("filters"))),
             "its filter panel is the host's gpix::ui::FilterPanel")) {
    return 1;
  }

  // The view shows the layers added after it is made.
  gpix::ui::ImageView view(host);
  view.resize(200, 150);
  view.show();
  const QList<int> ids = host.open_file(QStringLiteral("sample:nuclei_2d"));
  if (!check(ids.size() == 1, "the plugin's reader opens the sample")) return 1;
  const int id = ids.front();
  QTimer::singleShot(120000, &app, &QApplication::quit);
  QObject::connect(&view, &gpix::ui::ImageView::frame_ready, &app, &QApplication::quit);
  app.exec();
  if (!check(!view.frame(id).isNull(), "ImageView renders the layer")) return 1;

  const QString tif = tmp.filePath(QStringLiteral("sample.tif"));
  host.save_layer(id, tif);
  const gpix::io::Image back = gpix::io::read(tif.toStdString());
  const gpix::HostArray pixels = host.host_data(id);
  if (!check(back.pixels.shape() == pixels.shape() && back.pixels.dtype() == pixels.dtype(),
             "the plugin's TIFF writer and gpix::io::read agree")) {
    return 1;
  }
  if (!check(gpix::qt::to_qimage(pixels).width() == static_cast<int>(pixels.shape().width()),
             "gpix::qt::to_qimage")) {
    return 1;
  }
  const auto itk_image = gpix::io::to_itk<std::uint16_t, 2>(pixels);
  const auto size = itk_image->GetLargestPossibleRegion().GetSize();
  if (!check(size[0] == pixels.shape().width() && size[1] == pixels.shape().height(),
             "gpix::io::to_itk")) {
    return 1;
  }
  return 0;
}
