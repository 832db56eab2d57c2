#pragma once
// The files that layers are dragged out of the window as, written before the drag starts and
// off the GUI thread.
//
// Why before: on X11 and Wayland the drop target asks the source process for the dragged data
// (the file's URL) while the drop happens, and Qt answers from QMimeData::retrieveData on the
// source's GUI thread. A "promised" file that is written only when asked would therefore make
// our GUI thread wait for the write, which is what this avoids; Qt offers no delayed-file
// promise that is fulfilled in the target's process (macOS's file promises are not exposed).
// So the layer list asks for the file when a layer is pressed (prepare()), the write runs on a
// worker, and the drag carries the file's URL only once it exists; a drag begun sooner starts
// when the file is ready, if the button is still held.
//
// A written file serves later drags while the layer's pixels, name and calibration stay the
// same (display settings do not go into the file); each version gets a folder of its own, so
// that a new version never overwrites a file a drop target may still be reading.
#include <QHash>
#include <QObject>
#include <QString>
#include <QTemporaryDir>
#include <QThreadPool>

#include "gpix/ui/workspace.h"

namespace gpix::ui {

class DragFiles : public QObject {
  Q_OBJECT
 public:
  explicit DragFiles(Workspace& host, QObject* parent = nullptr);

  // Starts writing the layer's file in the background, with the newest format that takes it
  // (the one save_layer() picks for its suffix), unless it is written or being written for the
  // layer as it is now. prepared() follows.
  void prepare(int id);
  // The layer's file when it is written for the layer as it is now; empty otherwise.
  QString ready(int id) const;
  bool preparing(int id) const;
  // Why the last write for the layer failed (empty when it did not).
  QString error(int id) const;

 signals:
  // path is empty and error says why when no format could write the layer.
  void prepared(int id, const QString& path, const QString& error);

 private:
  struct Entry {
    Layer layer;  // what was written (its data handles and what goes into the file)
    QString path;
    QString error;
    bool writing = false;
    quint64 serial = 0;
  };
  bool up_to_date(const Entry& e, const Layer& now) const;
  void drop(int id);

  Workspace& host_;
  QTemporaryDir dir_;
  // One thread at a lowered priority (thread_priority.h); declared after dir_ so that it is
  // destroyed (waiting for a write under way) before the folder goes.
  QThreadPool pool_;
  QHash<int, Entry> entries_;
  quint64 serial_ = 0;
};

}  // namespace gpix::ui
