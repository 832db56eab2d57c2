#include "gpix/ui/workflow_panel.h"

#include <QAction>
#include <QCoreApplication>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPointer>
#include <QPushButton>
#include <QSaveFile>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include "gpix/error.h"

namespace gpix::ui {

WorkflowPanel::WorkflowPanel(Workspace& host, Workflow& workflow, QWidget* parent)
    : QWidget(parent), host_(host), workflow_(workflow) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  steps_ = new QListWidget;
  steps_->setObjectName(QStringLiteral("workflow_steps"));
  v->addWidget(steps_, 1);
  auto* row1 = new QHBoxLayout;
  // Fixed texts with the step in the tooltip: QUndoStack's own actions name the step in their
  // text ("Undo Add stack · gaussian_blur sigma=2 ..."), which widened the dock until
  // "Re-run on current" went behind a scroll bar (the GUI walk-through).
  QUndoStack* stack = host_.undo_stack();
  for (const bool undo : {true, false}) {
    auto* b = new QToolButton;
    b->setObjectName(undo ? QStringLiteral("workflow_undo") : QStringLiteral("workflow_redo"));
    b->setText(undo ? tr("Undo") : tr("Redo"));
    const auto update = [b, stack, undo, this] {
      b->setEnabled(undo ? stack->canUndo() : stack->canRedo());
      const QString step = undo ? stack->undoText() : stack->redoText();
      b->setToolTip(step.isEmpty() ? QString() : (undo ? tr("Undo %1") : tr("Redo %1")).arg(step));
    };
    update();
    connect(stack, &QUndoStack::indexChanged, b, update);
    connect(stack, &QUndoStack::cleanChanged, b, update);
    connect(b, &QToolButton::clicked, stack, undo ? &QUndoStack::undo : &QUndoStack::redo);
    row1->addWidget(b);
  }
  row1->addStretch(1);
  v->addLayout(row1);
  auto* row2 = new QHBoxLayout;
  auto* script = new QPushButton(tr("Export CLI…"));
  auto* cpp = new QPushButton(tr("Export C++…"));
  auto* rerun = new QPushButton(tr("Re-run on current"));
  rerun->setObjectName(QStringLiteral("rerun_on_current"));
  rerun_ = rerun;
  rerun->setToolTip(tr("Runs the recorded steps again with the current layer as the first source"));
  row2->addWidget(script);
  row2->addWidget(cpp);
  row2->addWidget(rerun);
  v->addLayout(row2);
  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setStyleSheet(QStringLiteral("color: #c03030"));
  error_->hide();
  v->addWidget(error_);
  connect(script, &QPushButton::clicked, this, &WorkflowPanel::export_script);
  connect(cpp, &QPushButton::clicked, this, &WorkflowPanel::export_cpp);
  connect(rerun, &QPushButton::clicked, this, &WorkflowPanel::rerun_on_current);
  connect(&workflow_, &Workflow::changed, this, &WorkflowPanel::refresh);
  refresh();
}

void WorkflowPanel::refresh() {
  steps_->clear();
  for (const WorkflowStep& s : workflow_.steps()) {
    QStringList ps;
    for (const auto& [k, val] : s.params)
      ps << QString::fromStdString(k) + QLatin1Char('=') + param_text(val);
    steps_->addItem(QStringLiteral("%1 = %2(%3; %4)")
                        .arg(s.output, s.operation, s.inputs.join(QStringLiteral(", ")),
                             ps.join(QStringLiteral(", "))));
  }
}

static void save_text(QWidget* parent, const QString& title, const QString& filter,
                      const QString& text, QLabel* error) {
  const QString path = QFileDialog::getSaveFileName(parent, title, QString(), filter);
  if (path.isEmpty()) return;
  // QSaveFile: written beside, moved into place only whole (a full disk leaves the file that
  // was there). Unbuffered: buffered, Qt 6.4's commit() let the failed flush of a full disk
  // through and renamed an empty file into place (`gpix run ... table.csv` under `ulimit -f 0`
  // exited 0 with an empty file); unbuffered, write() itself fails.
  QSaveFile f(path);
  const QByteArray bytes = text.toUtf8();
  if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered) || f.write(bytes) != bytes.size() ||
      !f.commit()) {
    error->setText(QObject::tr("Could not write %1: %2").arg(path, f.errorString()));
    error->show();
    return;
  }
  if (path.endsWith(QStringLiteral(".sh"))) {
    QFile::setPermissions(path,
                          QFile::permissions(path) | QFileDevice::ExeOwner | QFileDevice::ExeUser);
  }
  error->hide();
}

void WorkflowPanel::export_script() {
  // The CLI installed beside this program (both go to the same bin directory), so that the
  // script runs without gpix on PATH; "gpix" when there is none.
  const QString beside = QCoreApplication::applicationDirPath() + QStringLiteral("/gpix");
  const QString cli = QFileInfo(beside).isExecutable() ? beside : QStringLiteral("gpix");
  save_text(this, tr("Export workflow as a gpix script"), tr("Shell scripts (*.sh)"),
            workflow_.to_cli_script(cli), error_);
}

void WorkflowPanel::export_cpp() {
  save_text(this, tr("Export workflow as C++"), tr("C++ sources (*.cpp)"), workflow_.to_cpp(),
            error_);
}

void WorkflowPanel::rerun_on_current() {
  error_->hide();
  rerun_->setEnabled(false);
  workflow_.rerun_async(
      host_, host_.current_layer(),
      [self = QPointer<WorkflowPanel>(this)](const QList<int>& ids, const QString& error) {
        if (!self) return;
        self->rerun_->setEnabled(true);
        if (!error.isEmpty()) {
          self->error_->setText(error);
          self->error_->show();
        }
        emit self->rerun_finished(ids, error);
      });
}

}  // namespace gpix::ui
