#pragma once
// BasicHost: a complete HostContext without a window. It keeps the layers, the device, the
// formats, the undo stack, settings and tasks; a host application (gpix-viewer) derives from it
// and puts docks and menu actions into its window. Tests use it as it is.
#include <QHash>
#include <QMap>
#include <QPointer>
#include <atomic>
#include <memory>
#include <vector>

#include "gpix/plugin_api.h"

namespace gpix::plugin {

class BasicHost : public HostContext {
  Q_OBJECT
 public:
  // settings: the host's QSettings (owned); nullptr makes QSettings("gpix", "gpix").
  explicit BasicHost(const gpix::Device& device, QSettings* settings = nullptr,
                     QObject* parent = nullptr);
  ~BasicHost() override;

  QList<int> layer_ids() const override;
  bool has_layer(int id) const override;
  Layer layer(int id) const override;
  int current_layer() const override { return current_; }
  void set_current_layer(int id) override;
  int add_layer(Layer layer) override;
  void replace_layer(int id, Layer layer) override;
  void remove_layer(int id) override;
  void restore_layer(int id, Layer layer, int index) override;
  void move_layer(int id, int index) override;
  gpix::HostArray host_data(int id) override;
  int find_layer(const QString& name) const override;

  gpix::Device device() const override { return device_; }
  void set_device(const gpix::Device& device) override;
  // The layers are copied to `device` on a worker (a task with progress), then the host
  // switches on the GUI thread; layers that changed meanwhile are copied then. Refused, with a
  // status message, while another task runs (its result would come from the old device after
  // the copies, which waited behind it) or a switch is under way.
  void request_device(const gpix::Device& device) override;
  // Whether request_device's copies are under way.
  bool switching_device() const override { return switching_; }
  // The titles of the tasks begun and not finished (filters, re-runs, device switches), and
  // Cancel for all of them (each stops where it can: a filter after its slab, adding nothing).
  QStringList running_tasks() const;
  void cancel_tasks();

  void register_reader(Reader reader) override;
  void register_writer(Writer writer) override;
  QList<Reader> readers() const override { return readers_; }
  QList<Writer> writers() const override { return writers_; }
  QList<int> open_file(const QString& path) override;
  // open_file in two halves, for hosts that read off the GUI thread. read_call() finds the
  // reader (throws IoError naming the patterns when none matches) and returns the call that
  // reads the file: it may run on any thread and uses nothing of the host.
  std::function<QList<Layer>()> read_call(const QString& path) const;
  // The same over a copy of readers() (taken on the GUI thread), for a worker that finds the
  // readers of several files itself (a session's).
  static std::function<QList<Layer>()> read_call(const QList<Reader>& readers, const QString& path);
  // Adds the layers read_call's call returned (their arrays on device() or not) as open_file
  // does; returns the new ids.
  QList<int> add_read_layers(const QString& path, QList<Layer> layers);
  void save_layer(int id, const QString& path) override;
  // save_layer in two halves, for hosts that write off the GUI thread: finds the writer (throws
  // as save_layer does) and returns the call that pulls the layer's pixels (or streams a
  // file-backed layer) and writes the file; it may run on any thread and uses nothing of the
  // host.
  std::function<void()> save_call(int id, const QString& path) const override;
  // The reader/writer that would handle path, or nullptr.
  const Reader* reader_for(const QString& path) const;
  const Writer* writer_for(const QString& path) const;
  // "Images (*.raw *.png);;raw (*.raw);;..." for file dialogs.
  QString reader_filter() const;
  QString writer_filter() const;

  void add_dock(const QString& id, const QString& title, QWidget* widget, int area) override;
  void add_menu_action(const QString& menu_path, QAction* action) override;
  std::shared_ptr<Task> begin_task(const QString& title) override;
  QSettings& settings() override { return *settings_; }
  QUndoStack* undo_stack() override { return undo_; }
  gpix::ui::Workflow& workflow() override { return *workflow_; }
  void show_status(const QString& message, int timeout_ms = 5000) override;

  // What the plugins contributed (BasicHost keeps them; a window host moves them into place).
  struct Dock {
    QString id;
    QString title;
    QPointer<QWidget> widget;
    int area = 0;
  };
  const QList<Dock>& docks() const { return docks_; }
  QWidget* dock_widget(const QString& id) const;
  const QList<QPair<QString, QPointer<QAction>>>& menu_actions() const { return actions_; }
  QString last_status() const { return last_status_; }

 signals:
  void status_message(const QString& message, int timeout_ms);

 protected:
  // Copies `a` to device_ (or pushes `h` when there is no array). Returns a null array and
  // fills `why` when the device cannot hold it.
  gpix::Array to_device(const gpix::Array& a, const gpix::HostArray& h, QString* why) const;
  QString unique_name(const QString& wanted, int except_id = -1) const;
  // Makes `device` the host's: each layer takes its array from `moved` (copies made on a
  // worker), or is copied now; a layer the device cannot hold keeps its host copy.
  void switch_to(const gpix::Device& device, const QHash<int, gpix::Array>& moved);

  QList<Dock> docks_;
  QList<QPair<QString, QPointer<QAction>>> actions_;

 private:
  gpix::Device device_;
  std::unique_ptr<QSettings> settings_;
  QUndoStack* undo_ = nullptr;
  gpix::ui::Workflow* workflow_ = nullptr;
  QList<int> order_;
  QHash<int, Layer> layers_;
  int next_id_ = 1;
  int current_ = -1;
  QList<Reader> readers_;
  QList<Writer> writers_;
  QString last_status_;
  // The tasks begun: a flag set when each finishes (on any thread), the task, its title.
  struct Begun {
    std::shared_ptr<std::atomic<bool>> done;
    std::weak_ptr<Task> task;
    QString title;
  };
  std::vector<Begun> tasks_;
  bool switching_ = false;
};

}  // namespace gpix::plugin
