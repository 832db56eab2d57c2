#include "copy_threads.h"

#include "config.h"

namespace gpix::detail {

CopyThreads& CopyThreads::get(bool to_device) {
  static CopyThreads pushes(config().staging.spin), pulls(config().staging.spin);
  return to_device ? pushes : pulls;
}

}  // namespace gpix::detail
