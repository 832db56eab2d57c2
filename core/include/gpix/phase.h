#pragma once
// What a run is waiting for, in words, for a status line: a first run on PoCL or NVRTC spends
// seconds compiling before any pixel moves, and a long filter goes slab by slab.
#include <functional>
#include <string>

namespace gpix {

using PhaseFn = std::function<void(const std::string&)>;

// While it lives, the runs on this thread (gpix::run, run_in_slabs, typed filter functions)
// report what they wait for to `fn`, on this thread, each time that changes: "compiling
// kernels" while a GPU program they need is built for the first time on the device (later runs
// find it in the program caches), then the phase before it again ("running" where there was
// none); run_in_slabs says "slab 2 of 4". Scopes nest: the innermost one hears. An empty fn
// changes nothing. An exception from fn is ignored (phases are information only).
class PhaseScope {
 public:
  explicit PhaseScope(PhaseFn fn);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  PhaseFn fn_;
  const PhaseFn* previous_ = nullptr;
  std::string previous_text_;
};

}  // namespace gpix
