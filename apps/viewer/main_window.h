#pragma once
// gpix-viewer's main window: the image view with a slice slider, the layer list, File/Edit/
// View/Help menus, sessions, a prompt before unsaved results are lost, drag-and-drop in
// (files, read off the GUI thread) and out (layers, via LayerList), the plugins and their docks.
#include <QFutureWatcher>
#include <QLabel>
#include <QMainWindow>
#include <QMessageBox>
#include <QPointer>
#include <QSlider>
#include <atomic>
#include <functional>
#include <memory>

#include "gpix/plugin_loader.h"
#include "gpix/ui/histogram_panel.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/label_panel.h"
#include "gpix/ui/layer_list.h"
#include "gpix/ui/profile_panel.h"
#include "gpix/ui/roi_overlay.h"
#include "gpix/ui/roi_panel.h"
#include "help_dialogs.h"
#include "result_saver.h"
#include "session.h"
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
  gpix::ui::RoiOverlay* roi_overlay() const { return rois_; }
  gpix::ui::RoiPanel* roi_panel() const { return roi_panel_; }
  gpix::ui::ProfilePanel* profile_panel() const { return profile_; }
  gpix::ui::HistogramPanel* histogram_panel() const { return histogram_; }
  QSlider* slice_slider() const { return slice_; }
  gpix::plugin::PluginLoader& plugins() { return loader_; }

  // Loads plugins from these paths (see PluginLoader::default_search_paths), then restores
  // the saved window layout (docks exist only now).
  void load_plugins(const QStringList& paths);
  // Opens each file (several at once) and returns at once: the files are read one after another
  // on a thread of their own, with "Reading NAME…" and a Cancel button in the status bar, and
  // their layers are added in order. files_opened() gives the new ids when the last one is in
  // (or the rest were cancelled); errors go to the status bar and last_error(). The menu, the
  // recent files, drag-and-drop and the command line all open files this way.
  void open_files(const QStringList& paths);
  // The embedded sample image on the current device (through open_files).
  void open_default();
  // Whether a file is being read or waits to be.
  bool reading() const { return !batches_.isEmpty(); }
  // Stops the reads asked for: the one under way adds nothing when it ends (a reader cannot be
  // interrupted, so its thread finishes on its own), the waiting ones are dropped.
  void cancel_reading();
  // Reader threads still working, cancelled ones included.
  int reads_running() const { return running_->load(); }
  QString last_error() const { return last_error_; }
  // The message box that shows a failed open or layer save (besides the status bar), while it
  // is open; null otherwise. Not modal: the window goes on working behind it.
  QMessageBox* error_box() const { return error_box_; }
  QStringList recent_files() const;
  void show_plugins_dialog();

  // --- sessions (session.h) ---
  // Writes the session and returns at once; session_saved() tells how it went. Filter results
  // without a file are first written into <session name>_data/ beside it (ResultSaver, off the
  // GUI thread, with their progress in the status bar), then the session file, also off the
  // GUI thread. Errors go to session_saved(), last_error() and the status bar; a result that
  // could not be written stays unsaved and no session file is written.
  void save_session(const QString& path);
  // Whether a session (or the results it needs) is being written.
  bool saving_session() const { return saving_session_; }
  // Replaces the layers, undo history and workflow with the session's. Returns at once (false
  // only when the user kept unsaved results: Cancel): the session and its files are read off
  // the GUI thread, and session_opened() tells how it went. Missing or unreadable files are
  // named in last_error(), the status bar and the window's message box (not modal); the other
  // layers open. A session that cannot be read leaves the work as it was
  // (session_opened(false)) and says why in the same places. When the user chose to save
  // unsaved results first, they are written off the GUI thread and the session opens after.
  bool open_session(const QString& path);
  // Whether a session is being read.
  bool opening_session() const { return opening_session_; }
  QString session_path() const { return session_path_; }

  // --- unsaved results ---
  // Names of the layers that exist only in memory (filter results never saved; previews are
  // not results).
  QStringList unsaved_layers() const;
  // Writes each unsaved layer into `folder` off the GUI thread (ResultSaver) and returns at
  // once; results_saved() follows. False when a write of results is already under way.
  bool save_unsaved(const QString& folder);
  bool saving_results() const;
  // Asks Save / Discard / Cancel when there are unsaved results. go_on: nothing unsaved or
  // Discard; stop: Cancel (or no folder chosen); saving: Save, and the results are being
  // written in the background: `after_save` runs once all are written (on an error the
  // window says why and after_save does not run: nothing is lost).
  enum class Discard { go_on, stop, saving };
  Discard confirm_discard(const QString& action, std::function<void()> after_save);
  // Tests answer the prompts instead of a person: `ask` gets the unsaved layer names and
  // returns QMessageBox::Save, Discard or Cancel; `folder` returns where to save them.
  void set_prompts_for_testing(std::function<int(const QStringList&)> ask,
                               std::function<QString()> folder);

  // --- help ---
  void show_quick_start();
  // The filter reference, open at `name` (the filter panel's filter when empty).
  FilterHelpDialog* show_filter_help(const QString& name = {});
  void show_about();
 signals:
  // After open_files: the new layer ids of that call.
  void files_opened(const QList<int>& ids);
  // After open_session: whether the session's layers replaced the work.
  void session_opened(bool ok);
  // After save_layer_as: the error, empty when the file was written.
  void layer_saved(int id, const QString& path, const QString& error);
  // After save_session: the error, empty when the session (and its results) were written.
  void session_saved(const QString& path, const QString& error);
  // After save_unsaved (and the quit prompt's Save): the error, empty when all were written.
  void results_saved(const QString& error);

 public:
  // Saves a layer off the GUI thread (a pull from the device, a file-backed layer streamed plane
  // by plane) and, once written, makes the file its source; layer_saved() follows. Returns at
  // once; "Saving NAME…" shows in the status bar meanwhile.
  void save_layer_as(int id, const QString& path);
  int saves_running() const { return saves_; }
  // Save layer as's first suggestion: the layer's name, with .tif where no writer takes it.
  QString suggested_file_name(int id) const;

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void build_menus();
  void build_roi_tools();
  void rebuild_recent();
  void add_recent(const QString& path);
  void open_dialog();
  void save_as_dialog();
  void save_settings();
  void open_session_dialog();
  void save_session_dialog(bool ask_name);
  void clear_workspace();
  void finish_session_open(const QString& path, const session::Opened& opened,
                           const QJsonObject& view);
  void session_not_opened(const QString& path, const QString& error);
  QJsonObject view_state() const;
  QStringList restore_view(const QJsonObject& view);
  void write_session_file(const QString& path);
  void session_failed(const QString& path, const QString& error);
  // Quit was asked while something was written: closes once nothing is (queued).
  void close_if_asked();
  void restore_rois(int id, const QJsonObject& layer, QStringList& errors);
  void read_next();
  void read_done(const QString& path, QList<gpix::plugin::Layer> layers, const QString& error);
  struct OpenBatch;
  void end_batch(const OpenBatch& b);
  void show_reading();

  // One open_files call: what is left to read and what came of the rest.
  struct OpenBatch {
    QStringList paths;
    int total = 0;
    QList<int> ids;
    QStringList errors;
  };
  struct ReadOutcome {
    QList<gpix::plugin::Layer> layers;
    QString error;
  };

  std::unique_ptr<QSettings> settings_holder_;
  ViewerHost* host_ = nullptr;
  gpix::ui::ImageView* view_ = nullptr;
  gpix::ui::LayerList* layers_ = nullptr;
  gpix::ui::LabelPanel* labels_ = nullptr;
  gpix::ui::RoiOverlay* rois_ = nullptr;
  gpix::ui::RoiPanel* roi_panel_ = nullptr;
  gpix::ui::ProfilePanel* profile_ = nullptr;
  gpix::ui::HistogramPanel* histogram_ = nullptr;
  QSlider* slice_ = nullptr;
  QLabel* slice_label_ = nullptr;
  QLabel* cursor_ = nullptr;
  QMenu* recent_menu_ = nullptr;
  gpix::plugin::PluginLoader loader_;
  QString last_error_;
  // Shows `text` in the error box, opening it where it is not open and adding a paragraph
  // where it is (several files that fail at once make one box, not a stack of them).
  void show_error(const QString& title, const QString& text);
  // The default arrangement of the docks: some pairs of the right area as tabs.
  void tabify_default_docks();
  QPointer<QMessageBox> error_box_;
  QString session_path_;
  std::function<int(const QStringList&)> ask_unsaved_;
  std::function<QString()> ask_folder_;
  QPointer<FilterHelpDialog> filter_help_;
  QList<OpenBatch> batches_;
  QFutureWatcher<ReadOutcome>* read_ = nullptr;  // the read under way
  QString read_path_;
  std::shared_ptr<std::atomic<int>> running_ = std::make_shared<std::atomic<int>>(0);
  QWidget* read_box_ = nullptr;
  QLabel* read_label_ = nullptr;
  bool opening_session_ = false;
  bool saving_session_ = false;
  bool close_when_saved_ = false;  // Quit while results or a session were being written
  ResultSaver* saver_ = nullptr;
  QWidget* save_box_ = nullptr;  // "Saving NAME (i of n)…" in the status bar
  QLabel* save_label_ = nullptr;
  int saves_ = 0;
};
