#include "gpix_plugin.h"

#include <QAction>

#include "formats.h"
#include "gpix/samples.h"
#include "gpix/ui/device_panel.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/layer_card.h"
#include "gpix/ui/workflow.h"
#include "gpix/ui/workflow_panel.h"

void GpixPlugin::initialize(gpix::plugin::HostContext& host) {
  using namespace gpix::ui;
  // The host's workflow: it outlives the docks and undo commands that refer to it, and the
  // host saves it in sessions.
  Workflow* workflow = &host.workflow();
  host.add_dock(QStringLiteral("devices"), tr("Devices"), new DevicePanel(host),
                Qt::RightDockWidgetArea);
  host.add_dock(QStringLiteral("layer_card"), tr("Layer info"), new LayerCard(host),
                Qt::RightDockWidgetArea);
  host.add_dock(QStringLiteral("filters"), tr("Filters"), new FilterPanel(host, workflow),
                Qt::LeftDockWidgetArea);
  host.add_dock(QStringLiteral("workflow"), tr("Workflow"), new WorkflowPanel(host, *workflow),
                Qt::LeftDockWidgetArea);
  gpix::formats::register_all(host);
  for (const std::string& name : gpix::sample_names()) {
    auto* a = new QAction(QString::fromStdString(name));
    const QString path = QStringLiteral("sample:") + QString::fromStdString(name);
    gpix::plugin::HostContext* h = &host;
    // The host's background path: making the sample and pushing it to the device never run
    // on the GUI thread.
    QObject::connect(a, &QAction::triggered, &host, [h, path] { h->open_files_later({path}); });
    host.add_menu_action(QStringLiteral("File/Open sample"), a);
  }
}
