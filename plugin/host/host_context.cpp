#include <QChar>

#include "gpix/plugin_api.h"

namespace gpix::plugin {

HostContext::~HostContext() = default;

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
