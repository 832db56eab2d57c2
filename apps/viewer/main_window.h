#pragma once
// gpix-viewer's main window: the image view with a slice slider, the layer list, File/View
// menus, drag-and-drop in (files) and out (layers, via LayerList), the plugins and their docks.
#include <QLabel>
#include <QMainWindow>
#include <QSlider>
#include <memory>

#include "gpix/plugin_loader.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/label_panel.h"
#include "gpix/ui/layer_list.h"
#include "viewer_host.h"

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  // settings: owned; nullptr means QSettings("gpix", "gpix-viewer"). The device is the one
  // saved in the settings when it still exists, else the best one (gpix::choose_device).
  explicit MainWindow(QSettings* settings = nullptr, QWidget* parent = nullptr);
  ~MainWindow() override;

  ViewerHost& host() { return *host_; }
  gpix::ui::ImageView* view() const { return view_; }
  gpix::ui::LayerList* layer_list() const { return layers_; }
  gpix::ui::LabelPanel* label_panel() const { return labels_; }
  QSlider* slice_slider() const { return slice_; }
  gpix::plugin::PluginLoader& plugins() { return loader_; }

  // Loads plugins from these paths (see PluginLoader::default_search_paths), then restores
  // the saved window layout (docks exist only now).
  void load_plugins(const QStringList& paths);
  // Opens each file (several at once); errors go to the status bar and last_error(). Returns
  // the new layer ids.
  QList<int> open_files(const QStringList& paths);
  // The embedded sample image on the current device.
  void open_default();
  QString last_error() const { return last_error_; }
  QStringList recent_files() const;
  void show_plugins_dialog();

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void build_menus();
  void rebuild_recent();
  void add_recent(const QString& path);
  void open_dialog();
  void save_as_dialog();
  void save_settings();

  std::unique_ptr<QSettings> settings_holder_;
  ViewerHost* host_ = nullptr;
  gpix::ui::ImageView* view_ = nullptr;
  gpix::ui::LayerList* layers_ = nullptr;
  gpix::ui::LabelPanel* labels_ = nullptr;
  QSlider* slice_ = nullptr;
  QLabel* slice_label_ = nullptr;
  QLabel* cursor_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  gpix::plugin::PluginLoader loader_;
  QString last_error_;
};
