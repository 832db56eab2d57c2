// Used when gpix is built with GPIX_WITH_CUDA=OFF.
#include "backend/backend.h"

namespace gpix::detail {

BackendDevices enumerate_cuda() {
  BackendDevices out;
  out.status.backend = Backend::cuda;
  out.status.detail =
      "this build of gpix has no CUDA backend (configured with GPIX_WITH_CUDA=OFF or without the "
      "CUDA toolkit headers)";
  return out;
}

}  // namespace gpix::detail
