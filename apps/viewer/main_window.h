#pragma once
// gpix-viewer's main window: the image view with a slice slider, the layer list, File/Edit/
// View/Help menus, sessions, a prompt before unsaved results are lost, drag-and-drop in
// (files) and out (layers, via LayerList), the plugins and their docks.
#include <QLabel>
#include <QMainWindow>
#include <QPointer>
#include <QSlider>
#include <functional>
#include <memory>

#include "gpix/plugin_loader.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/label_panel.h"
#include "gpix/ui/layer_list.h"
#include "help_dialogs.h"
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

  // --- sessions (session.h) ---
  // Writes the session; filter results without a file are saved first into
  // <session name>_data/ beside it. False (and last_error()) when something could not be
  // written.
  bool save_session(const QString& path);
  // Replaces the layers, undo history and workflow with the session's. Missing or unreadable
  // files are named in last_error() (and the status bar); the other layers open. False when
  // the session itself cannot be read, or when the user kept unsaved results (Cancel).
  bool open_session(const QString& path);
  QString session_path() const { return session_path_; }

  // --- unsaved results ---
  // Names of the layers that exist only in memory (filter results never saved; previews are
  // not results).
  QStringList unsaved_layers() const;
  // Saves each unsaved layer into `folder` (TIFF, else NRRD, else the first format that takes
  // it) and makes that file its source. False (and last_error()) when one could not be saved.
  bool save_unsaved(const QString& folder);
  // Asks Save / Discard / Cancel when there are unsaved results; true when it may go on.
  bool confirm_discard(const QString& action);
  // Tests answer the prompts instead of a person: `ask` gets the unsaved layer names and
  // returns QMessageBox::Save, Discard or Cancel; `folder` returns where to save them.
  void set_prompts_for_testing(std::function<int(const QStringList&)> ask,
                               std::function<QString()> folder);

  // --- help ---
  void show_quick_start();
  // The filter reference, open at `name` (the filter panel's filter when empty).
  FilterHelpDialog* show_filter_help(const QString& name = {});
  void show_about();

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
  void open_session_dialog();
  void save_session_dialog(bool ask_name);
  void clear_workspace();

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
  QString session_path_;
  std::function<int(const QStringList&)> ask_unsaved_;
  std::function<QString()> ask_folder_;
  QPointer<FilterHelpDialog> filter_help_;
};
