#pragma once
// What gpix_ui's widgets work on: the layers, the device, long tasks, the undo stack and the
// status line. The application that shows the widgets implements it (Workspace
// extends it for plugins), so the widgets need nothing of the plugin host. QtCore and gpix types
// only; the undo stack is forward-declared.
#include <QList>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>

#include "gpix/device.h"
#include "gpix/ui/layer.h"
#include "gpix/ui/task.h"

class QUndoStack;

namespace gpix::ui {
class Workflow;
}

namespace gpix::ui {

// A format layers can be saved in: its name and the suffix its files take (".png").
struct SaveFormat {
  QString name;
  QString suffix;
};

// Layer ids are stable for the life of a layer; -1 means none. Everything is called on the GUI
// thread.
class Workspace : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  ~Workspace() override;

  // --- layers (ordered bottom to top) ---
  virtual QList<int> layer_ids() const = 0;
  virtual bool has_layer(int id) const = 0;
  // A copy of the layer (cheap: arrays are shared handles). An empty Layer for an unknown id.
  virtual Layer layer(int id) const = 0;
  virtual int current_layer() const = 0;
  virtual void set_current_layer(int id) = 0;
  // Adds on top and makes it current; returns its id. The array is moved to the workspace's
  // device when it lives elsewhere. Throws gpix::Error when the layer has no data.
  virtual int add_layer(Layer layer) = 0;
  // Replaces data and/or display settings of an existing layer (emits layer_changed).
  virtual void replace_layer(int id, Layer layer) = 0;
  virtual void remove_layer(int id) = 0;
  // Puts a removed layer back under the id it had, at position `index` of layer_ids(), and
  // makes it current (what undoing a removal or redoing an addition needs, so that later undo
  // commands still find the layer by its id). Throws gpix::InvalidArgument when the id is in
  // use or the layer has no data.
  virtual void restore_layer(int id, Layer layer, int index) = 0;
  // Moves a layer to position `index` in layer_ids().
  virtual void move_layer(int id, int index) = 0;
  // Layer names are made unique ("cells · gaussian_blur sigma=2", "... 2").
  virtual int find_layer(const QString& name) const = 0;

  // --- device ---
  virtual gpix::Device device() const = 0;
  // Switches the device: every layer is copied to the new one, never lost. A layer that the
  // new device cannot hold keeps its host copy and the status line says why.
  virtual void set_device(const gpix::Device& device) = 0;
  // What "Use this device" asks for: the same switch without the GUI thread waiting on a
  // device. A host may copy the layers on a worker and switch when they are there, and refuse
  // (saying so in the status line) while a task runs on the current device. By default the
  // switch itself.
  virtual void request_device(const gpix::Device& device) { set_device(device); }
  // Whether request_device's copies are under way (filters wait for the switch).
  virtual bool switching_device() const { return false; }

  // --- saving ---
  // The formats save_layer() writes, in the order they were registered (a later one wins
  // where two take the same suffix).
  virtual QList<SaveFormat> save_formats() const = 0;
  // Saves a layer in the format whose pattern its path matches. Throws gpix::InvalidArgument
  // for an unknown id, gpix::IoError when no format takes the path (naming those that exist) or
  // writing fails.
  virtual void save_layer(int id, const QString& path) = 0;
  // save_layer in two halves, for writes off the GUI thread: finds the format (throws as
  // save_layer does) and returns the call that pulls the layer's pixels and writes the file; it
  // may run on any thread and touches nothing of the workspace.
  virtual std::function<void()> save_call(int id, const QString& path) const = 0;

  // --- services ---
  virtual std::shared_ptr<Task> begin_task(const QString& title) = 0;
  virtual QUndoStack* undo_stack() = 0;
  // The recorded workflow (committed filter runs), owned by the workspace: saved in sessions.
  virtual Workflow& workflow() = 0;
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
  void task_phase(const QString& text);
  void task_finished();
};

}  // namespace gpix::ui
