#include "copy_threads.h"

namespace gpix::detail {

ThreadShare& ThreadShare::process() {
  static ThreadShare share(std::max(std::thread::hardware_concurrency(), 1u));
  return share;
}

}  // namespace gpix::detail
