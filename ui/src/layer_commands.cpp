#include "gpix/ui/layer_commands.h"

#include <QObject>
#include <QUndoStack>

namespace gpix::ui {

RemoveLayerCommand::RemoveLayerCommand(Workspace& host, int id) : host_(host), id_(id) {
  setText(QObject::tr("Remove %1").arg(host.layer(id).name));
}

void RemoveLayerCommand::redo() {
  if (!host_.has_layer(id_)) return;
  layer_ = host_.layer(id_);
  index_ = int(host_.layer_ids().indexOf(id_));
  host_.remove_layer(id_);
}

void RemoveLayerCommand::undo() {
  if (layer_.valid() && !host_.has_layer(id_)) host_.restore_layer(id_, layer_, index_);
  layer_ = {};  // the workspace holds it again: do not keep a second reference to its memory
}

MoveLayerCommand::MoveLayerCommand(Workspace& host, int id, int index)
    : host_(host), id_(id), to_(index) {
  setText(QObject::tr("Move %1").arg(host.layer(id).name));
}

void MoveLayerCommand::redo() {
  from_ = int(host_.layer_ids().indexOf(id_));
  if (from_ >= 0) host_.move_layer(id_, to_);
}

void MoveLayerCommand::undo() {
  if (from_ >= 0) host_.move_layer(id_, from_);
}

RenameLayerCommand::RenameLayerCommand(Workspace& host, int id, QString name)
    : host_(host), id_(id), name_(std::move(name)) {
  setText(QObject::tr("Rename %1 to %2").arg(host.layer(id).name, name_));
}

void RenameLayerCommand::redo() {
  Layer l = host_.layer(id_);
  if (!l.valid()) return;
  old_ = l.name;
  l.name = name_;
  host_.replace_layer(id_, l);
}

void RenameLayerCommand::undo() {
  Layer l = host_.layer(id_);
  if (!l.valid()) return;
  l.name = old_;
  host_.replace_layer(id_, l);
}

LayerDisplay LayerDisplay::of(const Layer& l) {
  return {l.visible,      l.opacity, l.colormap, l.contrast_min,
          l.contrast_max, l.gamma,   l.channels, l.additive};
}

void LayerDisplay::apply_to(Layer& l) const {
  l.visible = visible;
  l.opacity = opacity;
  l.colormap = colormap;
  l.contrast_min = contrast_min;
  l.contrast_max = contrast_max;
  l.gamma = gamma;
  l.channels = channels;
  l.additive = additive;
}

LayerDisplayCommand::LayerDisplayCommand(Workspace& host, int id, const LayerDisplay& after,
                                         const QString& what)
    : host_(host),
      layer_(id),
      what_(what),
      before_(LayerDisplay::of(host.layer(id))),
      after_(after) {
  setText(QObject::tr("Change %1 of %2").arg(what, host.layer(id).name));
}

void LayerDisplayCommand::set(const LayerDisplay& want) {
  Layer l = host_.layer(layer_);
  if (!l.valid() || LayerDisplay::of(l) == want) return;
  want.apply_to(l);
  host_.replace_layer(layer_, l);
}

void LayerDisplayCommand::redo() {
  set(after_);
}

void LayerDisplayCommand::undo() {
  set(before_);
}

bool LayerDisplayCommand::mergeWith(const QUndoCommand* other) {
  const auto* o = static_cast<const LayerDisplayCommand*>(other);
  if (o->layer_ != layer_ || o->what_ != what_) return false;
  after_ = o->after_;
  // Back where it started (a checkbox ticked and unticked, a slider dragged back): no step left
  // for Undo to take, which would do nothing (QUndoStack drops an obsolete merged command).
  setObsolete(after_ == before_);
  return true;
}

bool set_layer_display(Workspace& host, int id, const LayerDisplay& after, const QString& what) {
  const Layer l = host.layer(id);
  if (!l.valid() || LayerDisplay::of(l) == after) return false;
  host.undo_stack()->push(new LayerDisplayCommand(host, id, after, what));
  return true;
}

}  // namespace gpix::ui
