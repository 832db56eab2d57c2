#include "viewer_host.h"

#include <QDockWidget>
#include <QMenuBar>
#include <QScrollArea>
#include <QStatusBar>

QWidget* scrolling(QWidget* content) {
  auto* area = new QScrollArea;
  area->setFrameShape(QFrame::NoFrame);
  area->setWidgetResizable(true);
  area->setWidget(content);
  return area;
}

ViewerHost::ViewerHost(QMainWindow* window, const gpix::Device& device, QSettings* settings)
    : BasicHost(device, settings, window), window_(window) {}

void ViewerHost::add_dock(const QString& id, const QString& title, QWidget* widget, int area) {
  auto* dock = new QDockWidget(title, window_);
  dock->setObjectName(QStringLiteral("dock_") + id);  // saveState() needs stable names
  dock->setWidget(scrolling(widget));
  window_->addDockWidget(static_cast<Qt::DockWidgetArea>(area), dock);
  view_menu()->addAction(dock->toggleViewAction());
  BasicHost::add_dock(id, title, nullptr, area);  // listed, but the dock owns the widget
  docks_.last().widget = widget;
}

QMenu* ViewerHost::menu(const QString& path) {
  QMenu* current = nullptr;
  for (const QString& part : path.split(QLatin1Char('/'), Qt::SkipEmptyParts)) {
    const QList<QAction*> actions = current ? current->actions() : window_->menuBar()->actions();
    QMenu* found = nullptr;
    for (QAction* a : actions) {
      if (a->menu() && a->menu()->title().remove(QLatin1Char('&')) == part) found = a->menu();
    }
    if (!found) found = current ? current->addMenu(part) : window_->menuBar()->addMenu(part);
    current = found;
  }
  return current;
}

void ViewerHost::add_menu_action(const QString& menu_path, QAction* action) {
  BasicHost::add_menu_action(menu_path, action);
  menu(menu_path)->addAction(action);
}

void ViewerHost::show_status(const QString& message, int timeout_ms) {
  BasicHost::show_status(message, timeout_ms);
  window_->statusBar()->showMessage(message, timeout_ms);
}

void ViewerHost::open_files_later(const QStringList& paths) {
  if (opener_) {
    opener_(paths);
  } else {
    BasicHost::open_files_later(paths);
  }
}
