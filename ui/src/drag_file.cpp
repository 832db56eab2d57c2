#include "gpix/ui/drag_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <functional>

#include "async.h"
#include "gpix/error.h"
#include "gpix/ui/thread_priority.h"

namespace gpix::ui {

namespace {

bool same_pixels(const Layer& a, const Layer& b) {
  if (a.array.valid() || b.array.valid()) return a.array.same_memory(b.array);
  if (a.host.valid() || b.host.valid()) return a.host.data() == b.host.data();
  return a.file == b.file;
}

}  // namespace

DragFiles::DragFiles(Workspace& host, QObject* parent) : QObject(parent), host_(host) {
  pool_.setMaxThreadCount(1);
  connect(&host_, &Workspace::layer_removed, this, &DragFiles::drop);
}

bool DragFiles::up_to_date(const Entry& e, const Layer& now) const {
  return same_pixels(e.layer, now) && e.layer.name == now.name && e.layer.spacing == now.spacing &&
         e.layer.origin == now.origin && e.layer.unit == now.unit &&
         e.layer.saves_as_labels() == now.saves_as_labels() &&
         e.layer.channels.size() == now.channels.size();
}

void DragFiles::drop(int id) {
  const auto it = entries_.constFind(id);
  if (it == entries_.cend()) return;
  // The folder of that version; a write still under way finds its entry gone and removes its
  // own file.
  if (!it->path.isEmpty()) QDir(QFileInfo(it->path).absolutePath()).removeRecursively();
  entries_.erase(it);
}

QString DragFiles::ready(int id) const {
  const auto it = entries_.constFind(id);
  if (it == entries_.cend() || it->writing || it->path.isEmpty()) return {};
  return up_to_date(*it, host_.layer(id)) ? it->path : QString();
}

bool DragFiles::preparing(int id) const {
  const auto it = entries_.constFind(id);
  return it != entries_.cend() && it->writing && up_to_date(*it, host_.layer(id));
}

QString DragFiles::error(int id) const {
  return entries_.value(id).error;
}

void DragFiles::prepare(int id) {
  const Layer l = host_.layer(id);
  if (!l.valid()) return;
  if (entries_.contains(id) && up_to_date(entries_.value(id), l) &&
      entries_.value(id).error.isEmpty())
    return;  // written or being written for the layer as it is
  if (!dir_.isValid()) {
    const QString why = tr("no temporary folder: %1").arg(dir_.errorString());
    emit prepared(id, {}, why);
    return;
  }
  drop(id);
  Entry e;
  e.layer = l;
  e.writing = true;
  e.serial = ++serial_;
  const QString folder = dir_.filePath(QString::number(e.serial));
  QString base = l.name;
  base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]+")), QStringLiteral("_"));
  // The newest format first: the one save_layer() picks for its suffix. The calls are made
  // here (the formats are the GUI thread's), the writes run on a worker.
  struct Try {
    QString path;
    QString format;
    std::function<void()> write;
  };
  QList<Try> tries;
  QStringList reasons;
  const QList<SaveFormat> formats = host_.save_formats();
  for (auto it = formats.rbegin(); it != formats.rend(); ++it) {
    const QString path = QDir(folder).filePath(base + it->suffix);
    try {
      tries.append({path, it->name, host_.save_call(id, path)});
    } catch (const gpix::Error& err) {
      reasons << it->name + QStringLiteral(": ") + QString::fromUtf8(err.what());
    }
  }
  entries_.insert(id, e);
  detail::run_async(
      this, pool_,
      [folder, tries, reasons]() mutable {
        lower_this_thread_priority();
        if (!QDir().mkpath(folder))
          throw gpix::IoError("cannot make the folder " + folder.toStdString(),
                              folder.toStdString());
        for (const Try& t : tries) {
          try {
            t.write();
            return t.path;
          } catch (const std::exception& err) {
            QFile::remove(t.path);
            reasons << t.format + QStringLiteral(": ") + QString::fromUtf8(err.what());
          }
        }
        throw gpix::IoError(reasons.isEmpty() ? std::string("no writer is registered")
                                              : reasons.join(QStringLiteral("; ")).toStdString(),
                            folder.toStdString());
      },
      [this, id, serial = e.serial, folder](const detail::Outcome<QString>& out) {
        auto it = entries_.find(id);
        if (it == entries_.end() || it->serial != serial) {
          QDir(folder).removeRecursively();  // superseded or the layer went: nobody drags it
          return;
        }
        it->writing = false;
        it->path = out.value.value_or(QString());
        it->error = out.value ? QString() : out.error;
        emit prepared(id, it->path, it->error);
      });
}

}  // namespace gpix::ui
