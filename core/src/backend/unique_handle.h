#pragma once
// A move-only owner of a native handle (cl_mem, CUstream, ...): Release runs exactly once per
// handle. release() gives ownership up; reset() adopts another handle.
#include <utility>

namespace gpix::detail {

template <class T, auto Release>
class UniqueHandle {
 public:
  UniqueHandle() noexcept = default;
  explicit UniqueHandle(T handle) noexcept : h_(handle) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& other) noexcept : h_(std::exchange(other.h_, T{})) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) reset(std::exchange(other.h_, T{}));
    return *this;
  }
  ~UniqueHandle() { reset(); }

  T get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != T{}; }
  // Gives up ownership without releasing.
  [[nodiscard]] T release() noexcept { return std::exchange(h_, T{}); }
  // Releases the current handle (if any) and owns h.
  void reset(T h = T{}) noexcept {
    T old = std::exchange(h_, h);
    if (old != T{}) Release(old);
  }

 private:
  T h_{};
};

}  // namespace gpix::detail
