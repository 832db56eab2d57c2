#pragma once
// The gpix plugin: devices panel, layer card, filter panel, workflow and the built-in formats.
#include <QObject>

#include "gpix/plugin_api.h"

namespace gpix::ui {
class Workflow;
}

class GpixPlugin : public QObject, public gpix::plugin::Plugin {
  Q_OBJECT
  Q_PLUGIN_METADATA(IID GPIX_PLUGIN_IID FILE "gpix_plugin.json")
  Q_INTERFACES(gpix::plugin::Plugin)
 public:
  void initialize(gpix::plugin::HostContext& host) override;
};
