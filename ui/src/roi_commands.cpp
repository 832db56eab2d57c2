#include "gpix/ui/roi_commands.h"

#include "gpix/ui/roi_overlay.h"

namespace gpix::ui {

RoiCommand::RoiCommand(RoiOverlay* overlay, int layer, QList<Roi> before, QList<Roi> after, int roi,
                       const QString& text)
    : overlay_(overlay),
      layer_(layer),
      before_(std::move(before)),
      after_(std::move(after)),
      roi_(roi) {
  setText(text);
}

void RoiCommand::apply(const QList<Roi>& list) {
  if (!overlay_) return;
  overlay_->set_rois(layer_, list);
  if (layer_ != overlay_->roi_layer()) return;
  for (const Roi& r : list) {
    if (r.id == roi_) overlay_->select(roi_);
  }
}

void RoiCommand::redo() {
  apply(after_);
}

void RoiCommand::undo() {
  apply(before_);
}

}  // namespace gpix::ui
