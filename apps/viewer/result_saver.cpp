#include "result_saver.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <functional>
#include <utility>

#include "background.h"
#include "gpix/error.h"
#include "gpix/ui/thread_priority.h"
#include "session.h"
#include "viewer_host.h"

namespace {

bool unsaved(const gpix::ui::Layer& l) {
  return l.source.isEmpty() && !l.metadata.value(QStringLiteral("preview")).toBool();
}

// Whether two copies of a layer hold the same pixels (display settings aside).
bool same_pixels(const gpix::ui::Layer& a, const gpix::ui::Layer& b) {
  if (a.array.valid() || b.array.valid()) return a.array.same_memory(b.array);
  if (a.host.valid() || b.host.valid()) return a.host.data() == b.host.data();
  return a.file == b.file;
}

}  // namespace

ResultSaver::ResultSaver(ViewerHost& host, QObject* parent) : QObject(parent), host_(host) {
  pool_.setMaxThreadCount(1);
}

bool ResultSaver::start(const QString& folder) {
  if (busy_) return false;
  busy_ = true;
  folder_ = folder;
  jobs_.clear();
  errors_.clear();
  for (int id : host_.layer_ids()) {
    const gpix::ui::Layer l = host_.layer(id);
    if (unsaved(l)) jobs_.append({id, l.name});
  }
  total_ = int(jobs_.size());
  // From the event loop, so that finished() never comes before start() returns.
  QMetaObject::invokeMethod(this, &ResultSaver::next, Qt::QueuedConnection);
  return true;
}

void ResultSaver::next() {
  if (jobs_.isEmpty()) {
    busy_ = false;
    emit finished(errors_.isEmpty() ? QString()
                                    : tr("Not saved: %1").arg(errors_.join(QStringLiteral("; "))));
    return;
  }
  const Job job = jobs_.takeFirst();
  if (!host_.has_layer(job.id) || !unsaved(host_.layer(job.id))) {
    next();  // removed or saved meanwhile
    return;
  }
  const gpix::ui::Layer layer = host_.layer(job.id);
  emit progress(total_ - int(jobs_.size()) - 1, total_, job.name);
  // The paths and writers are chosen here (the host's formats are the GUI thread's); the
  // folder, the pulls and the writes happen on a worker. TIFF where its writer takes the layer,
  // else NRRD (every dtype), else any format.
  QStringList suffixes = {QStringLiteral(".tif"), QStringLiteral(".nrrd")};
  for (const gpix::ui::SaveFormat& f : host_.save_formats()) suffixes << f.suffix;
  suffixes.removeDuplicates();
  const QString stem = QDir(folder_).filePath(session::file_stem(job.name));
  struct Try {
    QString suffix;
    std::function<void(const QString&)> write;
  };
  QList<Try> tries;
  for (const QString& suffix : suffixes) {
    const gpix::plugin::Writer* w = host_.writer_for(stem + suffix);
    if (!w) continue;
    // What BasicHost::save_call does, for a path chosen on the worker (where it sees the folder).
    tries.append({suffix, [write = w->write, l = layer](const QString& path) mutable {
                    if (!l.host.valid() && l.array.valid()) l.host = l.array.pull();
                    write(l, path);
                  }});
  }
  in_background(
      this, pool_,
      [folder = folder_, stem, tries]() -> QString {
        gpix::ui::lower_this_thread_priority();
        if (!QDir().mkpath(folder))
          throw gpix::IoError("cannot make the folder " + folder.toStdString(),
                              folder.toStdString());
        QStringList why;
        for (const Try& t : tries) {
          QString path = stem + t.suffix;
          for (int i = 2; QFileInfo::exists(path); ++i)
            path = stem + QStringLiteral("_%1").arg(i) + t.suffix;
          try {
            t.write(path);
            return path;
          } catch (const std::exception& e) {
            QFile::remove(path);  // a half-written file is no result
            why << QString::fromUtf8(e.what());
          }
        }
        throw gpix::IoError(
            (why.isEmpty() ? QStringLiteral("no format takes it") : why.join(QStringLiteral("; ")))
                .toStdString(),
            stem.toStdString());
      },
      [this, job, layer](const QString& path, const QString& error) {
        if (!error.isEmpty()) {
          errors_ << tr("'%1': %2").arg(job.name, error);
        } else if (host_.has_layer(job.id)) {
          gpix::ui::Layer now = host_.layer(job.id);
          if (same_pixels(now, layer)) {
            now.source = path;
            now.metadata.insert(QStringLiteral("index_in_file"), 0);
            host_.replace_layer(job.id, now);
          } else {
            errors_
                << tr("'%1' changed while it was written to %2; save it again").arg(job.name, path);
          }
        }
        next();
      });
}
