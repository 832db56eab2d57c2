#include "run_phase.h"

namespace gpix {

namespace {
thread_local const PhaseFn* t_phase = nullptr;
thread_local std::string t_current;
}  // namespace

PhaseScope::PhaseScope(PhaseFn fn) : fn_(std::move(fn)) {
  if (!fn_) return;
  previous_ = t_phase;
  previous_text_ = t_current;
  t_phase = &fn_;
  t_current.clear();
}

PhaseScope::~PhaseScope() {
  if (!fn_) return;
  t_phase = previous_;
  t_current = previous_text_;
}

namespace detail {

void report_phase(const std::string& what) {
  if (!t_phase) return;
  t_current = what;
  try {
    (*t_phase)(what);
  } catch (...) {  // information only: a failing status line must not end a compile half-way
  }
}

PhaseNote::PhaseNote(const std::string& what) {
  if (!t_phase) return;
  active_ = true;
  previous_ = t_current;
  report_phase(what);
}

PhaseNote::~PhaseNote() {
  if (active_) report_phase(previous_.empty() ? std::string("running") : previous_);
}

}  // namespace detail
}  // namespace gpix
