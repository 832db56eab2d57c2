// Workflow::rerun_async: the recorded steps run on a worker thread (filters wait on the device
// and may compile kernels first); the layers are added on the GUI thread when all are done.
#include <QFutureWatcher>
#include <QHash>
#include <QPointer>
#include <QUndoStack>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <variant>

#include "gpix/channels.h"
#include "gpix/error.h"
#include "gpix/kept_axes.h"
#include "gpix/phase.h"
#include "gpix/tiled.h"
#include "gpix/ui/workflow.h"

namespace gpix::ui {

namespace {

// One step as the worker runs it: each input an array of a layer that exists, or the result
// of an earlier step (its index).
struct PlannedStep {
  WorkflowStep recorded;
  std::vector<std::variant<gpix::Array, int>> inputs;
  std::vector<int> input_ids;  // layer id, or -1 for an earlier step's result
  // Inputs that are composites (a composite layer, or an earlier step's composite result):
  // the step runs channel by channel where any is, as the Filters panel runs it.
  std::vector<bool> per_channel;
  // Its result is a composite: its first input is one and it makes no labels (FilterPanel).
  bool composite_result = false;
};

struct RerunOutcome {
  std::vector<gpix::Result> results;  // one per step
  QString error;
  bool cancelled = false;
};

// The plan of a re-run, made on the GUI thread (it reads the layers); an error instead when a
// step cannot run.
struct Plan {
  std::vector<PlannedStep> steps;
  QString error;
};

Plan make_plan(const QList<WorkflowStep>& recorded, const QStringList& src, Workspace& host,
               int input) {
  Plan plan;
  if (!host.has_layer(input)) {
    plan.error = QObject::tr("rerun: the input layer does not exist");
    return plan;
  }
  // Where each recorded layer name comes from now: a layer id (>= 0) or a step (-(i + 2)).
  QHash<QString, int> map;
  if (!src.isEmpty()) map.insert(src.first(), input);
  for (qsizetype i = 0; i < recorded.size(); ++i) {
    const WorkflowStep& s = recorded[i];
    PlannedStep p{s, {}, {}, {}, false};
    for (const QString& in : s.inputs) {
      const int where = map.contains(in) ? map.value(in) : host.find_layer(in);
      if (where <= -2) {
        p.inputs.emplace_back(-where - 2);
        p.input_ids.push_back(-1);
        p.per_channel.push_back(plan.steps[std::size_t(-where - 2)].composite_result);
        continue;
      }
      const Layer l = host.layer(where);
      if (l.file_backed()) {
        plan.error = QObject::tr(
                         "rerun: step '%1' needs layer '%2', which is file-backed (larger than "
                         "memory); run its filters from the Filters panel, which runs them in "
                         "slabs from the file")
                         .arg(s.operation, l.name);
        return plan;
      }
      if (!l.array.valid()) {
        plan.error = QObject::tr("rerun: step '%1' needs layer '%2', which is not on the device")
                         .arg(s.operation, in);
        return plan;
      }
      p.inputs.emplace_back(l.array);
      p.input_ids.push_back(where);
      p.per_channel.push_back(l.composite());
    }
    const gpix::OutputKind kind = gpix::filter(s.operation.toStdString()).output;
    p.composite_result = !p.per_channel.empty() && p.per_channel.front() &&
                         kind != gpix::OutputKind::labels && kind != gpix::OutputKind::table;
    if (kind != gpix::OutputKind::table) {
      map.insert(s.output, -int(i) - 2);
    }
    plan.steps.push_back(std::move(p));
  }
  return plan;
}

// The filters, on whichever thread calls it (slab by slab, so that Cancel takes effect).
RerunOutcome run_plan(const std::vector<PlannedStep>& plan, const std::shared_ptr<Task>& task) {
  RerunOutcome o;
  try {
    const auto n = double(plan.size());
    for (std::size_t i = 0; i < plan.size(); ++i) {
      const PlannedStep& p = plan[i];
      std::vector<gpix::Array> arrays;
      for (const auto& in : p.inputs) {
        if (const auto* a = std::get_if<gpix::Array>(&in)) {
          arrays.push_back(*a);
        } else {
          const gpix::Result& r = o.results[std::size_t(std::get<int>(in))];
          if (r.is_table()) {
            throw gpix::InvalidArgument("rerun: step '" + p.recorded.operation.toStdString() +
                                        "' reads a table, not an image");
          }
          arrays.push_back(r.array);
        }
      }
      const QString title = p.recorded.operation;
      const gpix::PhaseScope phases([task, title](const std::string& what) {
        if (task) task->set_phase(title + QStringLiteral(": ") + QString::fromStdString(what));
      });
      gpix::RunOptions opts;
      if (task) {
        opts.cancel = task->cancel_flag();
        opts.progress = [task, i, n](double f) { task->set_progress((double(i) + f) / n); };
      }
      const std::string name = p.recorded.operation.toStdString();
      const bool channels =
          std::find(p.per_channel.begin(), p.per_channel.end(), true) != p.per_channel.end();
      gpix::Result r =
          channels ? gpix::run_per_channel(name, arrays, p.per_channel, p.recorded.params, opts)
                   : gpix::run_in_slabs(name, arrays, p.recorded.params, opts);
      if (r.array.valid()) r.array.device().finish();  // added when the device is done
      // A cancel during a run of one slab (which cannot stop inside its kernels) adds nothing.
      if (opts.cancel && opts.cancel->load()) {
        throw gpix::Cancelled(p.recorded.operation.toStdString() + " was cancelled");
      }
      o.results.push_back(std::move(r));
    }
  } catch (const gpix::Cancelled& e) {
    o.cancelled = true;
    o.results.clear();
    o.error = QString::fromStdString(e.what());
  } catch (const std::exception& e) {
    o.error = QString::fromStdString(e.what());
  }
  return o;
}

// Adds the results on the GUI thread, each recorded as a step of `workflow`, in one undo macro.
// What ran before a failure is kept (one undo step); a cancelled re-run adds nothing.
QList<int> apply(Workspace& h, Workflow* workflow, int input, const std::vector<PlannedStep>& plan,
                 const RerunOutcome& o, QString& error) {
  QList<int> created;
  error = o.error;
  if (o.cancelled || o.results.empty()) return created;
  std::vector<int> made(plan.size(), -1);  // layer id of each step's result
  QUndoStack* undo = h.undo_stack();
  undo->beginMacro(QObject::tr("Re-run workflow on %1").arg(h.layer(input).name));
  for (std::size_t i = 0; i < o.results.size(); ++i) {
    const PlannedStep& p = plan[i];
    const gpix::Result& r = o.results[i];
    if (r.is_table()) continue;
    WorkflowStep step = p.recorded;
    step.inputs.clear();
    // What this run did, which the layers it ran on decided (not what the recording says).
    step.per_channel.clear();
    if (std::find(p.per_channel.begin(), p.per_channel.end(), true) != p.per_channel.end())
      step.per_channel = QList<bool>(p.per_channel.begin(), p.per_channel.end());
    Layer first;  // its calibration goes to the result
    int first_id = -1;
    bool lost = false;
    for (std::size_t k = 0; k < p.inputs.size(); ++k) {
      const int id =
          p.input_ids[k] >= 0 ? p.input_ids[k] : made[std::size_t(std::get<int>(p.inputs[k]))];
      if (!h.has_layer(id)) {
        lost = true;  // removed while the re-run ran
        break;
      }
      const Layer l = h.layer(id);
      if (!first.valid()) {
        first = l;
        first_id = id;
      }
      step.inputs << l.name;
    }
    if (lost) {
      error = QObject::tr("rerun: an input of step '%1' was removed while it ran")
                  .arg(p.recorded.operation);
      break;
    }
    Layer out;
    // A composite's channels were filtered as 2D images: no z parameters in its name.
    out.name = result_name(step.operation, step.params, step.inputs,
                           p.composite_result ? 2 : int(r.array.shape().ndim()));
    out.array = r.array;
    inherit_calibration(
        first, out,
        gpix::axis_maps(step.operation.toStdString(), step.params, first.shape(), out.shape()));
    if (gpix::filter(step.operation.toStdString()).output == gpix::OutputKind::labels)
      out.mark_labels();
    // A composite's result, made channel by channel: a composite in the same colours, its
    // limits computed anew (as the Filters panel makes it).
    if (p.composite_result && first.composite()) {
      out.channels = first.channels;
      for (Channel& c : out.channels) c.contrast_min = c.contrast_max = 0;
    }
    // A channel's result shown as that channel and in its place, as the Filters panel shows it.
    const bool as_channel = show_as_channel_of(
        first, out, gpix::filter(step.operation.toStdString()).output == gpix::OutputKind::labels);
    auto* cmd = new AddLayerCommand(h, out, workflow, step);
    if (as_channel) cmd->show_in_place_of(first_id);
    undo->push(cmd);
    made[i] = cmd->layer_id();
    created << cmd->layer_id();
  }
  undo->endMacro();
  return created;
}

}  // namespace

QList<int> Workflow::rerun(Workspace& host, int input) {
  const Plan plan = make_plan(steps_, sources(), host, input);
  if (!plan.error.isEmpty()) throw gpix::InvalidArgument(plan.error.toStdString());
  const RerunOutcome o = run_plan(plan.steps, nullptr);
  QString error;
  const QList<int> created = apply(host, this, input, plan.steps, o, error);
  if (!error.isEmpty()) throw gpix::InvalidArgument(error.toStdString());
  return created;
}

void Workflow::rerun_async(Workspace& host, int input,
                           std::function<void(const QList<int>&, const QString&)> done) {
  auto plan = std::make_shared<Plan>(make_plan(steps_, sources(), host, input));
  if (!plan->error.isEmpty()) {
    if (done) done({}, plan->error);
    return;
  }
  std::shared_ptr<Task> task =
      host.begin_task(tr("Re-run workflow on %1").arg(host.layer(input).name));
  auto* watcher = new QFutureWatcher<RerunOutcome>(this);
  const QPointer<Workspace> hp(&host);
  connect(
      watcher, &QFutureWatcherBase::finished, this, [this, watcher, hp, plan, task, input, done] {
        watcher->deleteLater();
        task->finish();
        if (!hp) return;
        QString error;
        const QList<int> created = apply(*hp, this, input, plan->steps, watcher->result(), error);
        if (done) done(created, error);
      });
  watcher->setFuture(QtConcurrent::run([plan, task]() { return run_plan(plan->steps, task); }));
}

}  // namespace gpix::ui
