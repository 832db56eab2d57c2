#pragma once
// The reporting side of gpix::PhaseScope (gpix/phase.h), for code far below a filter that
// never sees its caller (the program cache, run_in_slabs).
#include <string>

#include "gpix/phase.h"

namespace gpix::detail {

// Reports `what` to this thread's PhaseScope, if any, and remembers it as the current phase.
void report_phase(const std::string& what);

// Reports `what` for its lifetime, then the phase that was current before it ("running" when
// none was): the program cache's "compiling kernels".
class PhaseNote {
 public:
  explicit PhaseNote(const std::string& what);
  ~PhaseNote();
  PhaseNote(const PhaseNote&) = delete;
  PhaseNote& operator=(const PhaseNote&) = delete;

 private:
  bool active_ = false;
  std::string previous_;
};

}  // namespace gpix::detail
