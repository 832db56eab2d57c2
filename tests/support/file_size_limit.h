#pragma once
// A full disk for tests: a file-size limit on this process while the object lives. Writes past
// it fail with EFBIG as they would with ENOSPC on a full disk (SIGXFSZ is ignored meanwhile, so
// the write fails instead of the process). Unprivileged, unlike a small mounted file system.
#include <sys/resource.h>

#include <csignal>

namespace gpix::test {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit l = old_;
    l.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &l);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  void (*old_handler_)(int) = SIG_DFL;
};

}  // namespace gpix::test
