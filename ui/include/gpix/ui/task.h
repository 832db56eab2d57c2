#pragma once
// A long task (a filter run) as the workspace reports it: progress and cancel.
#include <QString>
#include <atomic>

namespace gpix::ui {

// Thread-safe: the worker calls set_progress() and reads cancel_flag(); the GUI thread calls
// cancel().
class Task {
 public:
  virtual ~Task() = default;
  virtual void set_progress(double fraction) = 0;  // 0..1
  // What the task is doing now, in words ("compiling kernels", "slab 2 of 4").
  virtual void set_phase(const QString& text) = 0;
  virtual void cancel() = 0;
  virtual bool cancelled() const = 0;
  // For gpix::RunOptions::cancel; valid as long as the Task lives.
  virtual const std::atomic<bool>* cancel_flag() const = 0;
  // Ends the task (hides its progress). Idempotent; the destructor calls it too.
  virtual void finish() = 0;
};

}  // namespace gpix::ui
