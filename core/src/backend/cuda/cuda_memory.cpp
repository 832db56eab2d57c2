#include "backend/cuda/cuda_memory.h"

namespace gpix::detail::cuda {

PinnedRegistry& pinned_registry() {
  // Never destroyed: host memory may be released by other static objects at exit.
  static auto* r = new PinnedRegistry;
  return *r;
}

}  // namespace gpix::detail::cuda
