#pragma once
// ROI changes as undo steps on the workspace's undo stack, beside the layer commands
// (layer_commands.h): a ROI drawn, moved or reshaped (one step per drag), put on every slice or
// back on one, or deleted. A step keeps the layer's ROI list before and after the change, so
// undo and redo give back exactly the shapes, slice scopes, ids (a ROI's name, "ROI 2") and
// their order, whatever happened in between.
#include <QList>
#include <QPointer>
#include <QUndoCommand>

#include "gpix/ui/roi.h"

namespace gpix::ui {

class RoiOverlay;

class RoiCommand : public QUndoCommand {
 public:
  // `roi` is the id of the ROI the change is about: selected after redo or undo where the
  // list holds it.
  RoiCommand(RoiOverlay* overlay, int layer, QList<Roi> before, QList<Roi> after, int roi,
             const QString& text);
  void redo() override;
  void undo() override;
  int layer() const { return layer_; }

 private:
  void apply(const QList<Roi>& list);
  QPointer<RoiOverlay> overlay_;  // the undo stack may outlive the window's widgets
  int layer_;
  QList<Roi> before_;
  QList<Roi> after_;
  int roi_;
};

}  // namespace gpix::ui
