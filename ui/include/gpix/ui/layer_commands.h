#pragma once
// Every change a user makes to the layers, as QUndoCommands on the workspace's undo stack:
// removing, moving, renaming and display settings (visibility, opacity, colour map, contrast).
// Commands refer to layers by id; undoing a removal puts the layer back under the same id
// (Workspace::restore_layer), so that the commands before and after it still find it.
#include <QUndoCommand>

#include "gpix/ui/workspace.h"

namespace gpix::ui {

class RemoveLayerCommand : public QUndoCommand {
 public:
  RemoveLayerCommand(Workspace& host, int id);
  void redo() override;
  void undo() override;

 private:
  Workspace& host_;
  int id_;
  Layer layer_;
  int index_ = 0;
};

// Moves a layer to position `index` of layer_ids().
class MoveLayerCommand : public QUndoCommand {
 public:
  MoveLayerCommand(Workspace& host, int id, int index);
  void redo() override;
  void undo() override;

 private:
  Workspace& host_;
  int id_;
  int to_;
  int from_ = 0;
};

class RenameLayerCommand : public QUndoCommand {
 public:
  RenameLayerCommand(Workspace& host, int id, QString name);
  void redo() override;
  void undo() override;

 private:
  Workspace& host_;
  int id_;
  QString name_;
  QString old_;
};

// The display settings of a layer: visible, opacity, colour map, contrast limits, gamma, a
// composite's channels and additive blending. Changes
// of one kind to one layer in a row (an opacity slider dragged) merge into one step.
struct LayerDisplay {
  bool visible = true;
  double opacity = 1.0;
  QString colormap;
  double contrast_min = 0;
  double contrast_max = 0;
  double gamma = 1.0;
  std::vector<Channel> channels;  // a composite's colours, limits, gammas and visibility
  bool additive = false;
  static LayerDisplay of(const Layer& l);
  void apply_to(Layer& l) const;
  bool operator==(const LayerDisplay&) const = default;
};

class LayerDisplayCommand : public QUndoCommand {
 public:
  // `what` names the change for the Edit menu ("opacity", "colour map", "contrast", ...).
  LayerDisplayCommand(Workspace& host, int id, const LayerDisplay& after, const QString& what);
  void redo() override;
  void undo() override;
  int id() const override { return 0x67706978; }
  bool mergeWith(const QUndoCommand* other) override;

 private:
  void set(const LayerDisplay& want);
  Workspace& host_;
  int layer_;
  QString what_;
  LayerDisplay before_;
  LayerDisplay after_;
};

// Pushes a LayerDisplayCommand when `after` differs from the layer's settings; returns
// whether it did.
bool set_layer_display(Workspace& host, int id, const LayerDisplay& after, const QString& what);

}  // namespace gpix::ui
