#include "async.h"

#include <QCoreApplication>

namespace gpix::ui::detail {

QThreadPool& display_pool() {
  // Two threads: a frame can be read while a contrast computation waits on the device.
  // Running work holds device handles and uses core's statics (the program table), so it must
  // end before static destruction, whose order across libraries is not ours: the pool is
  // drained when the application object goes (a post routine), and again by its destructor.
  static QThreadPool pool;
  static const bool sized = [] {
    pool.setMaxThreadCount(2);
    qAddPostRoutine([] { pool.waitForDone(); });
    return true;
  }();
  (void)sized;
  return pool;
}

}  // namespace gpix::ui::detail

namespace gpix::ui::detail {

QThreadPool& long_pool() {
  // One thread: passes over a whole file-backed stack, one at a time; drained like the above.
  static QThreadPool pool;
  static const bool sized = [] {
    pool.setMaxThreadCount(1);
    qAddPostRoutine([] { pool.waitForDone(); });
    return true;
  }();
  (void)sized;
  return pool;
}

}  // namespace gpix::ui::detail
