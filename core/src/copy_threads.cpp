#include "copy_threads.h"

#include "config.h"

namespace gpix::detail {

CopyThreads& CopyThreads::get() {
  static CopyThreads pool(config().staging.spin);
  return pool;
}

}  // namespace gpix::detail
