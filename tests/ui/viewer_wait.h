#pragma once
// Waiting on the viewer window's background work in tests (save_session returns at once).
#include <QSignalSpy>

#include "main_window.h"

// Saves the session and waits until it is written; whether it was (else last_error() says why).
inline bool save_session_and_wait(MainWindow* w, const QString& path, int timeout_ms = 300000) {
  QSignalSpy saved(w, &MainWindow::session_saved);
  w->save_session(path);
  if (!saved.wait(timeout_ms)) return false;
  return saved.first().at(1).toString().isEmpty();
}
