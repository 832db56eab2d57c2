#include "async.h"

namespace gpix::ui::detail {

QThreadPool& display_pool() {
  // Two threads: a frame can be read while a contrast computation waits on the device. At
  // exit the pool waits for running reads, which hold device handles.
  static QThreadPool pool;
  static const bool sized = (pool.setMaxThreadCount(2), true);
  (void)sized;
  return pool;
}

}  // namespace gpix::ui::detail
