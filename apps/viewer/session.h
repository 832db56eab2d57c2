#pragma once
// Sessions: the layers by file reference (with their names and display settings), the current
// layer and the workflow, as JSON ("format": "gpix-session", "version": 2; version 2 added
// gamma and a composite's channels, session_display.h, and reads version 1 as before; the
// viewer adds its view, MainWindow::view_state, which older sessions lack). Paths are
// stored relative to the session file where they lie below its folder, so that a folder of data and
// its session can move together. Layers without a file (filter results) are written beside
// the session first (<session name>_data/<layer>.<suffix>) by the caller's writer.
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <functional>

#include "gpix/basic_host.h"

namespace session {

inline constexpr int kVersion = 2;

// The session of the host's layers; every layer must have a source (a file or "sample...").
// Throws gpix::InvalidArgument naming the first layer without one.
// `extra` (optional) gives keys of the viewer's own to store with each layer (its ROIs).
QJsonObject to_json(gpix::plugin::BasicHost& host, const QString& session_path,
                    const std::function<QJsonObject(int id)>& extra = {});

struct Opened {
  QList<int> layers;    // the new layer ids, in the session's order
  QStringList missing;  // "layer 'cells': /data/cells.tif does not exist"
  QStringList errors;   // files that exist but could not be read, and other problems
};

// Reads and checks a session file. Throws gpix::IoError when it cannot be read or is not a
// gpix session of a version this viewer reads (saying what it found).
QJsonObject read(const QString& session_path);

// The session's files read ahead, off the GUI thread: each file's layers (pushed to `device`
// where it takes them, as MainWindow::open_files does) or the error reading it gave.
struct Preread {
  QHash<QString, QList<gpix::ui::Layer>> layers;
  QHash<QString, QString> errors;
};
// Reads every file the session's layers name (relative to session_path's folder) with the
// host's readers (a copy: this runs on a worker thread). Missing files are left for open().
Preread read_files(const QJsonObject& session, const QString& session_path,
                   const QList<gpix::plugin::Reader>& readers, const gpix::Device& device);

// Why none of the session's layers would open from `pre` (each one's file missing, unreadable or
// without that layer), one line a layer; empty where one would, and for a session of no layers.
// Judged from the files read ahead: the viewer then leaves the work as it was (a session of
// missing files emptied the window). A layer that reads but then fails to be added (the
// device's memory) is found only after the work was cleared, as before.
QStringList none_would_open(const QJsonObject& session, const QString& session_path,
                            const Preread& pre);

// Opens the session's layers into the host (after the layers already there), restores their
// names and display settings, the current layer and the workflow. A missing file or one that
// fails to read is reported and skipped; the other layers open. Relative paths are taken from
// the folder of session_path.
// With `pre`, the files come from it (nothing is read here); without, each is read on the
// calling thread. `restore` (optional) is called with each opened layer's id and its JSON
// object (the viewer's own keys, e.g. its ROIs).
Opened open(gpix::plugin::BasicHost& host, const QJsonObject& session, const QString& session_path,
            const Preread* pre = nullptr,
            const std::function<void(int id, const QJsonObject& layer)>& restore = {});

// A file name for a layer's data: its name with characters file systems dislike replaced.
QString file_stem(const QString& layer_name);

}  // namespace session
