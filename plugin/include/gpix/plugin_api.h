#pragma once
// The contract between a gpix host (gpix-viewer or any other Qt application) and its plugins.
// QtCore and gpix's public types only: widgets, actions and the undo stack appear as forward
// declarations, so a plugin that contributes no widgets needs nothing but QtCore.
//
// A plugin is a Qt plugin whose class derives from QObject and gpix::plugin::Plugin, declares
//   Q_PLUGIN_METADATA(IID GPIX_PLUGIN_IID FILE "gpix_plugin.json")
//   Q_INTERFACES(gpix::plugin::Plugin)
// and ships a JSON manifest:
//   { "name": "...", "version": "1.2.0", "apiVersion": 1,
//     "docks": ["devices", ...], "readers": [{"name": "raw", "patterns": ["*.raw"]}],
//     "writers": [...], "menus": [{"menu": "Filters", "action": "..."}] }
// The host reads IID and manifest with QPluginLoader::metaData() and refuses a plugin whose
// IID or apiVersion differs from its own BEFORE instantiating anything (PluginLoader does this).
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVariantMap>
#include <atomic>
#include <functional>
#include <memory>

#include "gpix/array.h"
#include "gpix/host_array.h"

class QWidget;
class QAction;
class QSettings;
class QUndoStack;

// The interface id carries the major API version: a host built for another major version does
// not even match the IID. The manifest's apiVersion must equal kApiVersion as well.
#define GPIX_PLUGIN_IID "org.gpix.Plugin/1.0"

namespace gpix::plugin {

inline constexpr int kApiVersion = 1;
inline constexpr const char* kPluginIid = GPIX_PLUGIN_IID;

// One image in the host. `array` is the data on the current device; `host` a host copy that the
// host keeps for display and as the safety net when a device switch cannot take the array
// (for example f64 onto a device without fp64). At least one of them is valid.
struct Layer {
  QString name;
  gpix::Array array;
  gpix::HostArray host;
  bool visible = true;
  double opacity = 1.0;
  QString colormap = QStringLiteral("gray");  // see gpix::ui::colormap_names()
  // Display range. contrast_max <= contrast_min means "not set yet": the host computes an
  // automatic range (percentiles) the first time the layer is shown.
  double contrast_min = 0;
  double contrast_max = 0;
  QString source;        // file the layer came from, if any
  QVariantMap metadata;  // free-form (spacing, units, reader-specific keys)

  bool valid() const { return array.valid() || host.valid(); }
  gpix::Shape shape() const { return array.valid() ? array.shape() : host.shape(); }
  gpix::DType dtype() const { return array.valid() ? array.dtype() : host.dtype(); }
  bool has_contrast() const { return contrast_max > contrast_min; }
};

// A file format. `read` returns one or more layers (a multi-channel file may give several);
// `write` saves one. Both throw gpix::Error (IoError for file problems) with a message that
// says what was asked and what would work.
struct Reader {
  QString name;          // "raw", "png", "itk" ...
  QStringList patterns;  // "*.raw", "*.tif" ... (case-insensitive wildcard)
  std::function<QList<Layer>(const QString& path)> read;
};
struct Writer {
  QString name;
  QStringList patterns;  // the first pattern's suffix is the default for "save as"
  std::function<void(const Layer& layer, const QString& path)> write;
};

// A long task (a filter run). Thread-safe: the worker calls set_progress() and reads
// cancel_flag(); the GUI thread calls cancel().
class Task {
 public:
  virtual ~Task() = default;
  virtual void set_progress(double fraction) = 0;  // 0..1
  virtual void cancel() = 0;
  virtual bool cancelled() const = 0;
  // For gpix::RunOptions::cancel; valid as long as the Task lives.
  virtual const std::atomic<bool>* cancel_flag() const = 0;
  // Ends the task (hides its progress). Idempotent; the destructor calls it too.
  virtual void finish() = 0;
};

// What the host offers a plugin: one object, handed to Plugin::initialize(). Layer ids are
// stable for the life of a layer; -1 means none. Everything is called on the GUI thread.
class HostContext : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  ~HostContext() override;

  // --- layers (ordered bottom to top) ---
  virtual QList<int> layer_ids() const = 0;
  virtual bool has_layer(int id) const = 0;
  // A copy of the layer (cheap: arrays are shared handles). An empty Layer for an unknown id.
  virtual Layer layer(int id) const = 0;
  virtual int current_layer() const = 0;
  virtual void set_current_layer(int id) = 0;
  // Adds on top and makes it current; returns its id. The array is moved to the host's device
  // when it lives elsewhere. Throws gpix::Error when the layer has no data.
  virtual int add_layer(Layer layer) = 0;
  // Replaces data and/or display settings of an existing layer (emits layer_changed).
  virtual void replace_layer(int id, Layer layer) = 0;
  virtual void remove_layer(int id) = 0;
  // Moves a layer to position `index` in layer_ids().
  virtual void move_layer(int id, int index) = 0;
  // The layer's pixels on the host (pulled once and cached until the layer changes).
  virtual gpix::HostArray host_data(int id) = 0;
  // Layer names are made unique by the host ("gaussian_blur", "gaussian_blur 2").
  virtual int find_layer(const QString& name) const = 0;

  // --- device ---
  virtual gpix::Device device() const = 0;
  // Switches the device: every layer is copied to the new one, never lost. A layer that the
  // new device cannot hold keeps its host copy and the status bar says why.
  virtual void set_device(const gpix::Device& device) = 0;

  // --- formats ---
  virtual void register_reader(Reader reader) = 0;
  virtual void register_writer(Writer writer) = 0;
  virtual QList<Reader> readers() const = 0;
  virtual QList<Writer> writers() const = 0;
  // Opens a file with the first reader whose pattern matches; returns the new layer ids.
  // Throws gpix::IoError when no reader matches (naming the patterns that exist) or reading fails.
  virtual QList<int> open_file(const QString& path) = 0;
  // Saves a layer with the first writer whose pattern matches the path.
  virtual void save_layer(int id, const QString& path) = 0;

  // --- GUI registration (the host owns what it is given) ---
  // `id` is the manifest's dock id; `area` a Qt::DockWidgetArea value.
  virtual void add_dock(const QString& id, const QString& title, QWidget* widget, int area) = 0;
  // menu_path like "Filters" or "File/Samples"; the host parents the action.
  virtual void add_menu_action(const QString& menu_path, QAction* action) = 0;

  // --- services ---
  virtual std::shared_ptr<Task> begin_task(const QString& title) = 0;
  virtual QSettings& settings() = 0;
  virtual QUndoStack* undo_stack() = 0;
  virtual void show_status(const QString& message, int timeout_ms = 5000) = 0;

 signals:
  void layer_added(int id);
  void layer_removed(int id);
  void current_layer_changed(int id);  // -1 when none
  void layer_changed(int id);          // data or display settings
  void layers_reordered();
  void device_changed();
  void task_started(const QString& title);
  void task_progress(double fraction);
  void task_finished();
};

// The plugin interface. initialize() is called once, after the manifest was checked, on the
// GUI thread; the plugin keeps `host` (it outlives the plugin).
class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual void initialize(HostContext& host) = 0;
};

}  // namespace gpix::plugin

Q_DECLARE_INTERFACE(gpix::plugin::Plugin, GPIX_PLUGIN_IID)
