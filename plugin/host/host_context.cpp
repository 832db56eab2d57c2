#include <QChar>
#include <exception>

#include "gpix/plugin_api.h"

namespace gpix::plugin {

HostContext::~HostContext() = default;

void HostContext::open_files_later(const QStringList& paths) {
  for (const QString& path : paths) {
    try {
      open_file(path);
    } catch (const std::exception& e) {
      show_status(QString::fromUtf8(e.what()), 0);
    }
  }
}

QList<gpix::ui::SaveFormat> HostContext::save_formats() const {
  QList<gpix::ui::SaveFormat> formats;
  for (const Writer& w : writers()) {
    if (w.patterns.isEmpty()) continue;
    // "*.png" -> ".png"
    formats.append({w.name, w.patterns.first().section(QLatin1Char('*'), -1)});
  }
  return formats;
}

}  // namespace gpix::plugin
