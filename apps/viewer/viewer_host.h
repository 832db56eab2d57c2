#pragma once
// The viewer's HostContext: BasicHost plus docks, menus and the status bar of a main window.
#include <QMainWindow>
#include <QMenu>
#include <functional>

#include "gpix/basic_host.h"

// A dock's content in a frameless scroll area that gives it the dock's width and height down to
// the content's own minimum and scrolls below it, so that no dock sets the window's minimum
// height (the docks stacked in one area asked for 1178 px, more than a 1080-pixel screen).
QWidget* scrolling(QWidget* content);

class ViewerHost : public gpix::plugin::BasicHost {
  Q_OBJECT
 public:
  ViewerHost(QMainWindow* window, const gpix::Device& device, QSettings* settings);
  void add_dock(const QString& id, const QString& title, QWidget* widget, int area) override;
  void add_menu_action(const QString& menu_path, QAction* action) override;
  void show_status(const QString& message, int timeout_ms = 5000) override;
  // Through the window's reader thread (MainWindow::open_files) once set_opener was called.
  void open_files_later(const QStringList& paths) override;
  void set_opener(std::function<void(const QStringList&)> opener) { opener_ = std::move(opener); }
  // The menu at "File/Open sample", created on demand.
  QMenu* menu(const QString& path);
  QMenu* view_menu() { return menu(QStringLiteral("View")); }

 private:
  QMainWindow* window_;
  std::function<void(const QStringList&)> opener_;
};
