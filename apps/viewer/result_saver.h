#pragma once
// Writes the layers that exist only in memory (filter results never saved) into a folder, off
// the GUI thread, one layer after another: what saving a session with unsaved results and the
// quit prompt's "Save" do. Each layer goes to <folder>/<name>.tif where the TIFF writer takes
// it, else .nrrd, else the first format that does; once written, the file becomes the layer's
// source (so a session refers to it and quitting no longer asks). A layer whose pixels changed
// while it was written keeps no source: the file holds the old pixels. Nothing is lost on an
// error: the layers that could not be written stay unsaved and finished() names them.
#include <QObject>
#include <QString>
#include <QStringList>
#include <QThreadPool>

class ViewerHost;

class ResultSaver : public QObject {
  Q_OBJECT
 public:
  ResultSaver(ViewerHost& host, QObject* parent);

  // Starts writing every unsaved layer into `folder` (made where missing); returns at once.
  // finished() follows, from the event loop, also when there was nothing to write. False (and
  // nothing started) while an earlier run is under way.
  bool start(const QString& folder);
  bool busy() const { return busy_; }

 signals:
  // Before layer `index` (0-based) of `total` is written.
  void progress(int index, int total, const QString& name);
  // error: empty when every layer was written, else what was not and why.
  void finished(const QString& error);

 private:
  struct Job {
    int id = -1;
    QString name;
  };
  void next();

  ViewerHost& host_;
  // One thread at a lowered priority (thread_priority.h); its destructor waits for a write
  // under way, whose result then goes nowhere.
  QThreadPool pool_;
  bool busy_ = false;
  QString folder_;
  QList<Job> jobs_;
  int total_ = 0;
  QStringList errors_;
};
