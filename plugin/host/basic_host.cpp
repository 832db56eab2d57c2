#include "gpix/basic_host.h"

#include <QAction>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSettings>
#include <QThreadPool>
#include <QUndoStack>
#include <QWidget>
#include <algorithm>

#include "gpix/error.h"
#include "gpix/ui/workflow.h"

namespace gpix::plugin {

namespace {

QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

bool matches(const QStringList& patterns, const QString& path) {
  const QString file = QFileInfo(path).fileName();
  for (const QString& p : patterns) {
    const QRegularExpression re(QRegularExpression::wildcardToRegularExpression(p),
                                QRegularExpression::CaseInsensitiveOption);
    if (re.match(file).hasMatch()) return true;
  }
  return false;
}

// Progress of one task, reported to the host's signals on the GUI thread.
class BasicTask final : public Task {
 public:
  BasicTask(BasicHost* host, std::shared_ptr<std::atomic<bool>> done)
      : host_(host), done_(std::move(done)) {}
  ~BasicTask() override { finish(); }
  void set_progress(double fraction) override {
    QPointer<BasicHost> h = host_;
    if (!h) return;
    QMetaObject::invokeMethod(
        h,
        [h, fraction] {
          if (h) emit h->task_progress(fraction);
        },
        Qt::QueuedConnection);
  }
  void set_phase(const QString& text) override {
    QPointer<BasicHost> h = host_;
    if (!h) return;
    QMetaObject::invokeMethod(
        h,
        [h, text] {
          if (h) emit h->task_phase(text);
        },
        Qt::QueuedConnection);
  }
  void cancel() override { cancel_.store(true); }
  bool cancelled() const override { return cancel_.load(); }
  const std::atomic<bool>* cancel_flag() const override { return &cancel_; }
  void finish() override {
    if (finished_.exchange(true)) return;
    done_->store(true);
    QPointer<BasicHost> h = host_;
    if (!h) return;
    QMetaObject::invokeMethod(
        h,
        [h] {
          if (h) emit h->task_finished();
        },
        Qt::QueuedConnection);
  }

 private:
  QPointer<BasicHost> host_;
  std::atomic<bool> cancel_{false};
  std::atomic<bool> finished_{false};
  std::shared_ptr<std::atomic<bool>> done_;  // the host's flag of this task
};

}  // namespace

BasicHost::BasicHost(const gpix::Device& device, QSettings* settings, QObject* parent)
    : HostContext(parent),
      device_(device),
      settings_(settings ? settings
                         : new QSettings(QStringLiteral("gpix"), QStringLiteral("gpix"))),
      undo_(new QUndoStack(this)),
      workflow_(new gpix::ui::Workflow(this)) {}

BasicHost::~BasicHost() {
  // Undo commands hold layers (device memory): drop them before the devices go.
  undo_->clear();
  for (const Dock& d : docks_) delete d.widget.data();
}

QList<int> BasicHost::layer_ids() const {
  return order_;
}
bool BasicHost::has_layer(int id) const {
  return layers_.contains(id);
}
Layer BasicHost::layer(int id) const {
  return layers_.value(id);
}

int BasicHost::find_layer(const QString& name) const {
  for (int id : order_) {
    if (layers_.value(id).name == name) return id;
  }
  return -1;
}

void BasicHost::set_current_layer(int id) {
  if (id != -1 && !layers_.contains(id)) return;
  if (current_ == id) return;
  current_ = id;
  emit current_layer_changed(id);
}

QString BasicHost::unique_name(const QString& wanted, int except_id) const {
  const QString base = wanted.isEmpty() ? QStringLiteral("layer") : wanted;
  auto taken = [&](const QString& n) {
    for (auto it = layers_.begin(); it != layers_.end(); ++it) {
      if (it.key() != except_id && it->name == n) return true;
    }
    return false;
  };
  QString name = base;
  for (int i = 2; taken(name); ++i) name = base + QLatin1Char(' ') + QString::number(i);
  return name;
}

namespace {

// `a` on device d (a copy), or `h` pushed there; a null array and `why` where d cannot hold it.
// Blocking: on a worker for request_device.
gpix::Array copy_to(const gpix::Array& a, const gpix::HostArray& h, const gpix::Device& d,
                    QString* why) {
  try {
    if (a.valid()) {
      if (a.device() == d) return a;
      gpix::Array moved = gpix::Array::empty(a.shape(), a.dtype(), d);
      moved.copy_from(a);
      return moved;
    }
    if (h.valid()) return gpix::Array::push(h, d);
  } catch (const gpix::Error& e) {
    if (why) *why = qs(e.what());
  }
  return {};
}

}  // namespace

gpix::Array BasicHost::to_device(const gpix::Array& a, const gpix::HostArray& h,
                                 QString* why) const {
  return copy_to(a, h, device_, why);
}

int BasicHost::add_layer(Layer layer) {
  if (!layer.valid()) {
    throw gpix::InvalidArgument("add_layer: layer '" + layer.name.toStdString() +
                                "' has neither device nor host data");
  }
  QString why;
  // A file-backed layer stays in its file: nothing to move.
  if (!layer.file_backed() && (!layer.array.valid() || !(layer.array.device() == device_))) {
    gpix::Array moved = to_device(layer.array, layer.host, &why);
    if (!moved.valid() && !layer.host.valid()) layer.host = layer.array.pull();
    layer.array = moved;
  }
  layer.name = unique_name(layer.name);
  const int id = next_id_++;
  layers_.insert(id, layer);
  order_.append(id);
  emit layer_added(id);
  set_current_layer(id);
  if (!why.isEmpty()) {
    show_status(QStringLiteral("'%1' stays in host memory: %2").arg(layer.name, why), 0);
  }
  return id;
}

void BasicHost::replace_layer(int id, Layer layer) {
  auto it = layers_.find(id);
  if (it == layers_.end()) return;
  if (!layer.valid()) {
    throw gpix::InvalidArgument("replace_layer: layer '" + layer.name.toStdString() +
                                "' has neither device nor host data");
  }
  // A new array invalidates the cached host copy unless the caller gave a matching one.
  if (layer.array.valid() && !layer.array.same_memory(it->array) && layer.host.valid() &&
      it->host.valid() && layer.host.data() == it->host.data()) {
    layer.host = {};
  }
  if (layer.array.valid() && !(layer.array.device() == device_)) {
    QString why;
    gpix::Array moved = to_device(layer.array, layer.host, &why);
    if (!moved.valid() && !layer.host.valid()) layer.host = layer.array.pull();
    layer.array = moved;
  }
  layer.name = unique_name(layer.name, id);
  *it = layer;
  emit layer_changed(id);
}

void BasicHost::remove_layer(int id) {
  if (!layers_.contains(id)) return;
  const int pos = static_cast<int>(order_.indexOf(id));
  order_.removeAll(id);
  layers_.remove(id);
  emit layer_removed(id);
  if (current_ == id) {
    current_ = -1;
    const int next = order_.isEmpty() ? -1 : order_.value(std::min(pos, int(order_.size()) - 1));
    set_current_layer(next);
    if (next == -1) emit current_layer_changed(-1);
  }
}

void BasicHost::restore_layer(int id, Layer layer, int index) {
  if (id < 0 || layers_.contains(id)) {
    throw gpix::InvalidArgument("restore_layer: layer id " + std::to_string(id) +
                                (id < 0 ? " is not a layer id" : " is in use"));
  }
  if (!layer.valid()) {
    throw gpix::InvalidArgument("restore_layer: layer '" + layer.name.toStdString() +
                                "' has neither device nor host data");
  }
  if (layer.array.valid() && !(layer.array.device() == device_)) {
    // The device changed since the layer was removed.
    QString why;
    gpix::Array moved = to_device(layer.array, layer.host, &why);
    if (!moved.valid() && !layer.host.valid()) layer.host = layer.array.pull();
    layer.array = moved;
  }
  layer.name = unique_name(layer.name);
  layers_.insert(id, layer);
  order_.insert(std::clamp(index, 0, int(order_.size())), id);
  next_id_ = std::max(next_id_, id + 1);
  emit layer_added(id);
  set_current_layer(id);
}

void BasicHost::move_layer(int id, int index) {
  if (!layers_.contains(id)) return;
  order_.removeAll(id);
  index = std::clamp(index, 0, int(order_.size()));
  order_.insert(index, id);
  emit layers_reordered();
}

gpix::HostArray BasicHost::host_data(int id) {
  auto it = layers_.find(id);
  if (it == layers_.end()) return {};
  if (!it->host.valid() && it->array.valid()) it->host = it->array.pull();
  return it->host;
}

void BasicHost::set_device(const gpix::Device& device) {
  if (!device.valid() || device == device_) return;
  switch_to(device, {});
}

void BasicHost::request_device(const gpix::Device& device) {
  if (!device.valid() || device == device_) return;
  const QString label = qs(device.label());
  if (switching_) {
    show_status(QStringLiteral("A switch of device is under way; %1 was not chosen").arg(label));
    return;
  }
  if (!running_tasks().isEmpty()) {
    // Its work is queued on the current device, and the copies would wait behind it; its
    // result would then come from the old device (the GUI walk-through: a 12 s freeze when
    // the copies ran here, then a view that never drew again).
    show_status(QStringLiteral("A task is running on %1: switch to %2 when it is done, or "
                               "cancel it first")
                    .arg(qs(device_.label()), label),
                0);
    return;
  }
  struct Copy {
    int id;
    gpix::Array from;
    gpix::HostArray host;
    gpix::Array to;
    QString why;
  };
  auto copies = std::make_shared<std::vector<Copy>>();
  for (int id : order_) {
    const Layer& l = layers_[id];
    if (!l.file_backed()) copies->push_back({id, l.array, l.host, {}, {}});
  }
  switching_ = true;
  std::shared_ptr<Task> task = begin_task(QStringLiteral("Moving the layers to %1").arg(label));
  QPointer<BasicHost> self(this);
  QThreadPool::globalInstance()->start([self, copies, task, device] {
    for (std::size_t i = 0; i < copies->size(); ++i) {
      Copy& c = (*copies)[i];
      c.to = copy_to(c.from, c.host, device, &c.why);
      if (c.to.valid()) c.to.device().finish();  // there when the host switches
      task->set_progress(double(i + 1) / double(copies->size()));
    }
    QMetaObject::invokeMethod(
        self.data(),
        [self, copies, task, device] {
          task->finish();
          if (!self) return;
          self->switching_ = false;
          QHash<int, gpix::Array> moved;
          for (const Copy& c : *copies) {
            // Only where the layer still holds what was copied (an undo or a filter may have
            // replaced it meanwhile: switch_to copies that one).
            if (!self->layers_.contains(c.id)) continue;
            const Layer& now = self->layers_[c.id];
            const bool same = c.from.valid() ? now.array.same_memory(c.from)
                                             : (!now.array.valid() && now.host.valid() &&
                                                now.host.data() == c.host.data());
            if (same && c.to.valid()) moved.insert(c.id, c.to);
          }
          self->switch_to(device, moved);
        },
        Qt::QueuedConnection);
  });
}

void BasicHost::switch_to(const gpix::Device& device, const QHash<int, gpix::Array>& moved) {
  device_ = device;
  QStringList kept;
  for (int id : order_) {
    Layer& l = layers_[id];
    if (l.file_backed()) continue;  // read from its file onto whichever device shows it
    if (moved.contains(id)) {
      l.array = moved.value(id);
      continue;
    }
    QString why;
    gpix::Array moved_now = to_device(l.array, l.host, &why);
    gpix::Array& m = moved_now;
    if (!m.valid()) {
      // Never lose a layer: keep (or take) a host copy; it is pushed again on the next switch.
      if (!l.host.valid() && l.array.valid()) l.host = l.array.pull();
      kept << QStringLiteral("'%1' (%2)").arg(l.name, why);
    }
    l.array = m;
  }
  emit device_changed();
  for (int id : order_) emit layer_changed(id);
  const QString label = qs(device.label());
  if (kept.isEmpty()) {
    show_status(QStringLiteral("Now on %1").arg(label));
  } else {
    show_status(QStringLiteral("Now on %1; kept in host memory: %2").arg(label, kept.join(", ")),
                0);
  }
}

void BasicHost::register_reader(Reader reader) {
  readers_.append(std::move(reader));
}
void BasicHost::register_writer(Writer writer) {
  writers_.append(std::move(writer));
}

const Reader* BasicHost::reader_for(const QString& path) const {
  // The last registered reader wins, so a later plugin (gpix_io's ITK readers) can take over a
  // pattern from an earlier, simpler one.
  for (auto it = readers_.rbegin(); it != readers_.rend(); ++it) {
    if (matches(it->patterns, path)) return &*it;
  }
  return nullptr;
}

const Writer* BasicHost::writer_for(const QString& path) const {
  for (auto it = writers_.rbegin(); it != writers_.rend(); ++it) {
    if (matches(it->patterns, path)) return &*it;
  }
  return nullptr;
}

static QString filter_of(const QString& all, const QStringList& names,
                         const QList<QStringList>& patterns) {
  QStringList every;
  for (const auto& p : patterns) every << p;
  every.removeDuplicates();
  QStringList parts;
  parts << QStringLiteral("%1 (%2)").arg(all, every.join(QLatin1Char(' ')));
  for (qsizetype i = 0; i < names.size(); ++i) {
    parts << QStringLiteral("%1 (%2)").arg(names[i], patterns[i].join(QLatin1Char(' ')));
  }
  parts << QStringLiteral("All files (*)");
  return parts.join(QStringLiteral(";;"));
}

QString BasicHost::reader_filter() const {
  QStringList names;
  QList<QStringList> patterns;
  for (const Reader& r : readers_) names << r.name, patterns << r.patterns;
  return filter_of(QStringLiteral("Images"), names, patterns);
}

QString BasicHost::writer_filter() const {
  QStringList names;
  QList<QStringList> patterns;
  for (const Writer& w : writers_) names << w.name, patterns << w.patterns;
  return filter_of(QStringLiteral("Images"), names, patterns);
}

std::function<QList<Layer>()> BasicHost::read_call(const QString& path) const {
  return read_call(readers_, path);
}

std::function<QList<Layer>()> BasicHost::read_call(const QList<Reader>& readers,
                                                   const QString& path) {
  // The last registered reader wins, as in reader_for().
  const Reader* r = nullptr;
  for (auto it = readers.rbegin(); it != readers.rend() && !r; ++it) {
    if (matches(it->patterns, path)) r = &*it;
  }
  if (!r) {
    QStringList all;
    for (const Reader& x : readers) all << x.patterns;
    throw gpix::IoError("no reader for '" + QFileInfo(path).fileName().toStdString() +
                            "'; the readers take: " +
                            (all.isEmpty() ? std::string("nothing (no reader loaded)")
                                           : all.join(", ").toStdString()),
                        path.toStdString());
  }
  return [read = r->read, path] { return read(path); };
}

QList<int> BasicHost::add_read_layers(const QString& path, QList<Layer> layers) {
  QList<int> ids;
  for (qsizetype i = 0; i < layers.size(); ++i) {
    Layer l = layers[i];
    if (l.source.isEmpty()) l.source = path;
    // Which of the file's layers this is (a session refers to a layer by file and position).
    l.metadata.insert(QStringLiteral("index_in_file"), int(i));
    ids << add_layer(std::move(l));
  }
  return ids;
}

QList<int> BasicHost::open_file(const QString& path) {
  return add_read_layers(path, read_call(path)());
}

void BasicHost::save_layer(int id, const QString& path) {
  save_call(id, path)();
}

std::function<void()> BasicHost::save_call(int id, const QString& path) const {
  if (!layers_.contains(id)) {
    throw gpix::InvalidArgument("save_layer: there is no layer " + std::to_string(id));
  }
  const Writer* w = writer_for(path);
  if (!w) {
    QStringList all;
    for (const Writer& x : writers_) all << x.patterns;
    throw gpix::IoError("no writer for '" + QFileInfo(path).fileName().toStdString() +
                            "'; the writers take: " +
                            (all.isEmpty() ? std::string("nothing (no writer loaded)")
                                           : all.join(", ").toStdString()),
                        path.toStdString());
  }
  // The pull (which waits behind the device's queue) and the write happen in the call, on
  // whichever thread runs it; the cached host copy is used where there is one.
  return [write = w->write, l = layers_.value(id), path]() mutable {
    if (!l.host.valid() && l.array.valid()) l.host = l.array.pull();
    write(l, path);
  };
}

void BasicHost::add_dock(const QString& id, const QString& title, QWidget* widget, int area) {
  docks_.append({id, title, widget, area});
}

QWidget* BasicHost::dock_widget(const QString& id) const {
  for (const Dock& d : docks_) {
    if (d.id == id) return d.widget;
  }
  return nullptr;
}

void BasicHost::add_menu_action(const QString& menu_path, QAction* action) {
  if (action && !action->parent()) action->setParent(this);
  actions_.append({menu_path, action});
}

std::shared_ptr<Task> BasicHost::begin_task(const QString& title) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::erase_if(tasks_, [](const Begun& b) { return b.done->load(); });
  auto task = std::make_shared<BasicTask>(this, done);
  tasks_.push_back({std::move(done), task, title});
  emit task_started(title);
  return task;
}

QStringList BasicHost::running_tasks() const {
  QStringList titles;
  for (const Begun& b : tasks_) {
    if (!b.done->load()) titles << b.title;
  }
  return titles;
}

void BasicHost::cancel_tasks() {
  for (const Begun& b : tasks_) {
    if (b.done->load()) continue;
    if (const std::shared_ptr<Task> t = b.task.lock()) t->cancel();
  }
}

void BasicHost::show_status(const QString& message, int timeout_ms) {
  last_status_ = message;
  emit status_message(message, timeout_ms);
}

}  // namespace gpix::plugin
