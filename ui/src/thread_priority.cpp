#include "gpix/ui/thread_priority.h"

#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace gpix::ui {

void lower_this_thread_priority() {
#ifdef __linux__
  // On Linux a nice value belongs to a thread (its tid), not to the whole process.
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  if (getpriority(PRIO_PROCESS, tid) < 10) (void)setpriority(PRIO_PROCESS, tid, 10);
#endif
}

}  // namespace gpix::ui
