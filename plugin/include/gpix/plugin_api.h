#pragma once
// The contract between a gpix host (gpix-viewer or any other Qt application) and its plugins.
// HostContext extends gpix_ui's Workspace, the interface the widgets work on, so a plugin links
// gpix_ui. The headers are QtCore and gpix types only: widgets, actions and the undo stack
// appear as forward declarations, so a plugin that contributes no widgets compiles against
// QtCore alone.
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
#include <functional>

#include "gpix/host_array.h"
#include "gpix/ui/workspace.h"

class QWidget;
class QAction;
class QSettings;

// The interface id carries the major API version: a host built for another major version does
// not even match the IID. The manifest's apiVersion must equal kApiVersion as well.
#define GPIX_PLUGIN_IID "org.gpix.Plugin/1.0"

namespace gpix::plugin {

inline constexpr int kApiVersion = 1;
inline constexpr const char* kPluginIid = GPIX_PLUGIN_IID;

// Layers and tasks are gpix_ui's, so that the host's widgets show what the plugins add.
using Layer = gpix::ui::Layer;
using Task = gpix::ui::Task;

// A file format. `read` returns one or more layers (a multi-channel file may give several);
// `write` saves one. Both throw gpix::Error (IoError for file problems) with a message that
// says what was asked and what would work. A host may call `read` on a worker thread (the
// viewer does, so that a slow file never freezes its window): it must not touch widgets or
// the host, only the file.
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

// What the host offers a plugin: one object, handed to Plugin::initialize(). Layer ids are
// stable for the life of a layer; -1 means none. Everything is called on the GUI thread.
class HostContext : public gpix::ui::Workspace {
  Q_OBJECT
 public:
  using Workspace::Workspace;
  ~HostContext() override;

  // --- layers: the Workspace's, and ---
  // The layer's pixels on the host (pulled once and cached until the layer changes).
  virtual gpix::HostArray host_data(int id) = 0;

  // --- formats (a path goes to the last registered reader or writer whose pattern it matches;
  // save_layer() is the Workspace's) ---
  virtual void register_reader(Reader reader) = 0;
  virtual void register_writer(Writer writer) = 0;
  virtual QList<Reader> readers() const = 0;
  virtual QList<Writer> writers() const = 0;
  // Opens a file with its reader; returns the new layer ids.
  // Throws gpix::IoError when no reader matches (naming the patterns that exist) or reading fails.
  virtual QList<int> open_file(const QString& path) = 0;
  // Opens files the host's way and returns at once: what a plugin's menu action should call
  // (open_file blocks its caller on the disk and the device). A window host reads them off the
  // GUI thread and adds their layers when they are read (gpix-viewer: its File > Open path,
  // with progress and Cancel); this default calls open_file for each and reports a failure in
  // the status line.
  virtual void open_files_later(const QStringList& paths);
  // The writers as the widgets see them: each one's name and its first pattern's suffix.
  QList<gpix::ui::SaveFormat> save_formats() const override;

  // --- GUI registration (the host owns what it is given) ---
  // `id` is the manifest's dock id; `area` a Qt::DockWidgetArea value.
  virtual void add_dock(const QString& id, const QString& title, QWidget* widget, int area) = 0;
  // menu_path like "Filters" or "File/Samples"; the host parents the action.
  virtual void add_menu_action(const QString& menu_path, QAction* action) = 0;

  // --- services (tasks, the undo stack and the status line are the Workspace's) ---
  virtual QSettings& settings() = 0;
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
