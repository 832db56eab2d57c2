#pragma once
// The recorded workflow: each committed filter run (operation, inputs, parameters, output),
// undoable through the host's undo stack, exportable as a gpix CLI script or C++ code, and
// re-runnable on another image.
#include <QJsonArray>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QUndoCommand>
#include <functional>

#include "gpix/catalog.h"
#include "gpix/ui/workspace.h"

namespace gpix::ui {

struct WorkflowStep {
  QString operation;    // catalog name
  QStringList inputs;   // layer names, in the filter's input order
  gpix::Params params;  // every parameter, defaults included
  QString output;       // the result layer's name
  // Which inputs were composites (colour or multi-channel images, run channel by channel with
  // gpix::run_per_channel); empty where none was. The exports run such steps channel by channel
  // too: a whole-stack run would mix the channels (a z sigma, a 3D median).
  QList<bool> per_channel = {};
};

class Workflow : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  const QList<WorkflowStep>& steps() const { return steps_; }
  void append(const WorkflowStep& s);
  void remove_last();
  void clear();

  // A POSIX shell script of `gpix run` commands. Layers that no step produced become the
  // script's arguments ($1, $2, ...). Steps that ran channel by channel read their source files
  // with `--channels split` (colour pixels as channels; files marked as channels are filtered
  // channel by channel by `gpix run` anyway, and so are the NRRD files of earlier steps).
  // `gpix_program` is the CLI the script runs unless the environment's GPIX names another. Any
  // layer name or parameter text is safe in it: names become identifiers, values are quoted,
  // comments escape control characters.
  QString to_cli_script(const QString& gpix_program = QStringLiteral("gpix")) const;
  // A C++ function taking the source images and returning the last result; steps that ran
  // channel by channel call gpix::run_per_channel with the same inputs marked.
  QString to_cpp() const;
  // Runs every step again with `input` (a layer id) in place of the first source image;
  // returns the ids of the new layers. Each result is added through the host's undo stack (one
  // undo step for the whole re-run) and recorded in this workflow as a step of its own, so that
  // an export after a re-run reproduces it. Throws gpix::Error from the filters (the layers
  // made before the failing step stay, as one undo step).
  QList<int> rerun(Workspace& host, int input);
  // The same off the GUI thread: the steps run on a worker (with the host's task progress,
  // phases and Cancel, slab by slab), and the layers are added when all are done, as one undo
  // step; then done(new ids, error) on the GUI thread (error empty on success; a cancelled
  // re-run adds nothing). Returns at once.
  void rerun_async(Workspace& host, int input,
                   std::function<void(const QList<int>&, const QString&)> done = {});
  // The steps as JSON (sessions) and back; from_json throws gpix::InvalidArgument naming the
  // step and field that is wrong.
  QJsonArray to_json() const;
  void from_json(const QJsonArray& steps);
  // Layers that the steps read but no step produced, in first-use order.
  QStringList sources() const;

 signals:
  void changed();

 private:
  QList<WorkflowStep> steps_;
};

// Adds a layer (redo) or removes it again (undo); records/unrecords the workflow step.
class AddLayerCommand : public QUndoCommand {
 public:
  AddLayerCommand(Workspace& host, Layer layer, Workflow* workflow = nullptr,
                  WorkflowStep step = {});
  void redo() override;
  void undo() override;
  int layer_id() const { return id_; }
  // A result shown as a channel of `input` (show_as_channel_of): put just above the input, not
  // on top of every layer (where, additive, it added to other images' layers above the
  // input's), and the input hidden while the result is there (both added, the channel counted
  // twice). Call before the command is pushed; undo shows the input again.
  void show_in_place_of(int input) { in_place_of_ = input; }
  // Whether the last redo hid the input (it may have been hidden already).
  bool hid_input() const { return hid_input_; }

 private:
  Workspace& host_;
  Layer layer_;
  Workflow* workflow_;
  WorkflowStep step_;
  int id_ = -1;     // kept across undo: redo restores the layer under the same id
  int index_ = -1;  // its position when undone
  int in_place_of_ = -1;
  bool hid_input_ = false;  // whether redo hid it (it may have been hidden already)
};

// The name of a filter's result: its first input's name, the operation and the parameters
// that say most about it ("cells · gaussian_blur sigma=2"): all of them for filters with up
// to four, else those that differ from their defaults (at most three shown); x/y/z values
// that are equal are written once ("sigma=2", "radius_xy=2 radius_z=1"); z parameters are
// left out for 2D inputs (`ndim` 2).
QString result_name(const QString& operation, const gpix::Params& params, const QStringList& inputs,
                    int ndim);

// Formats a parameter for code and scripts: numbers shortest round-trip, choices as text.
QString param_text(const gpix::ParamValue& v);

}  // namespace gpix::ui
