#pragma once
// The workflow dock: the recorded steps, undo/redo (the host's undo stack), export as a gpix
// CLI script or as C++ code, and re-running the recorded steps on the current layer.
#include <QWidget>

#include "gpix/ui/workflow.h"
#include "gpix/ui/workspace.h"

class QListWidget;
class QLabel;

namespace gpix::ui {

class WorkflowPanel : public QWidget {
  Q_OBJECT
 public:
  WorkflowPanel(Workspace& host, Workflow& workflow, QWidget* parent = nullptr);
  QListWidget* steps() const { return steps_; }

 public slots:
  void refresh();
  void export_script();  // asks for a file name
  void export_cpp();
  // Returns at once: the re-run goes on off the GUI thread (Workflow::rerun_async).
  void rerun_on_current();

 signals:
  // A re-run ended: the new layer ids, or the error shown under the buttons.
  void rerun_finished(const QList<int>& ids, const QString& error);

 private:
  Workspace& host_;
  Workflow& workflow_;
  QListWidget* steps_ = nullptr;
  QLabel* error_ = nullptr;
  QWidget* rerun_ = nullptr;  // disabled while a re-run runs
};

}  // namespace gpix::ui
