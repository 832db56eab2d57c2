#pragma once
// The host threads that copy staged transfers between pageable and pinned memory
// (transfer.cpp). Two pools per process, one for pushes and one for pulls, so that a push and
// a pull (two workers of a tiled run, on one device or two) copy at once while transfers of
// one direction take turns; tests make their own.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "util.h"

namespace gpix::detail {

// A pool of host threads that live as long as the process: a staged transfer runs f(0) on the
// caller and f(1) .. f(n - 1) on the pool. Creating threads per transfer costs tens of
// microseconds each, as much as copying a megabyte, and so does waking a sleeping thread on a
// VM, so both sides poll before they sleep: a worker for GPIX_STAGING_SPIN_US (default 50,
// read when the pool starts) after its last batch (transfers in a row find it awake), the caller as
// long for the batch's end. A batch is published with one atomic word (its generation and its
// number of threads), which the workers poll: no queue, no lock while nobody sleeps.
class CopyThreads {
 public:
  // The process's pool for pushes (to_device) or pulls, polling for config().staging.spin
  // (GPIX_STAGING_SPIN_US).
  static CopyThreads& get(bool to_device);
  // A pool of its own (tests); workers poll for `spin` before they sleep.
  explicit CopyThreads(std::chrono::microseconds spin) : spin_(spin) {}
  CopyThreads(const CopyThreads&) = delete;
  CopyThreads& operator=(const CopyThreads&) = delete;
  ~CopyThreads() {
    {
      std::lock_guard lock(mutex_);
      stop_.store(true);
      state_.fetch_add(kGeneration, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  // Threads started so far (they are made on demand and live as long as the pool).
  std::size_t threads() {
    std::lock_guard lock(mutex_);
    return threads_.size();
  }

  // Runs f(0) .. f(n - 1), f(0) on the caller, and returns when all have returned. f must not
  // throw (the staging tasks catch their own errors). One batch at a time: transfers of one
  // direction on two devices take turns for the threads (their copies share the memory bus
  // anyway).
  void run(unsigned n, const std::function<void(unsigned)>& f) {
    n = std::min(n, kMaxThreads);
    if (n <= 1) {
      f(0);
      return;
    }
    std::lock_guard batch(run_mutex_);
    {
      std::lock_guard lock(mutex_);
      while (threads_.size() < n - 1) {
        const auto index = static_cast<unsigned>(threads_.size() + 1);
        const std::uint64_t now = state_.load(std::memory_order_relaxed);
        threads_.emplace_back([this, index, now] { loop(index, now); });
      }
      job_ = &f;
      left_.store(n - 1, std::memory_order_relaxed);
      const std::uint64_t s = state_.load(std::memory_order_relaxed);
      state_.store((s & ~kThreadsMask) + kGeneration + n, std::memory_order_release);
    }
    if (sleepers_.load() > 0) wake_.notify_all();
    f(0);
    if (!poll([&] { return left_.load(std::memory_order_acquire) == 0; })) {
      std::unique_lock lock(mutex_);
      done_.wait(lock, [&] { return left_.load(std::memory_order_acquire) == 0; });
    }
  }

 private:
  static constexpr unsigned kMaxThreads = 255;
  static constexpr std::uint64_t kThreadsMask = 0xff, kGeneration = 0x100;

  // Polls ready() for spin_; true once it holds, false when the time ran out (the caller then
  // sleeps on a condition variable, which rechecks).
  template <class Ready>
  bool poll(Ready ready) const {
    const auto until = std::chrono::steady_clock::now() + spin_;
    for (unsigned i = 0;; ++i) {
      if (ready()) return true;
      if (i % 64 == 63 && std::chrono::steady_clock::now() >= until) return ready();
      relax();
    }
  }
  // Worker `index` (1 ..): runs every batch of more than `index` threads. `seen` is the state
  // it was created under (a batch published after that is one it must run).
  void loop(unsigned index, std::uint64_t seen) {
    for (;;) {
      const auto changed = [&] { return state_.load(std::memory_order_acquire) != seen; };
      if (!poll(changed)) {
        std::unique_lock lock(mutex_);
        ++sleepers_;
        wake_.wait(lock, changed);
        --sleepers_;
      }
      seen = state_.load(std::memory_order_acquire);
      if (stop_.load()) return;
      // A batch that needs this thread cannot end (nor job_ change) before it has run.
      if ((seen & kThreadsMask) <= index) continue;
      (*job_)(index);
      if (left_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex_);  // the caller may be between its check and its wait
        done_.notify_one();
      }
    }
  }
  std::mutex run_mutex_;  // one batch at a time
  std::mutex mutex_;      // for sleeping, and for creating threads
  std::condition_variable wake_, done_;
  std::atomic<std::uint64_t> state_{0};  // generation * kGeneration + threads of the batch
  const std::function<void(unsigned)>* job_ = nullptr;
  std::atomic<unsigned> left_{0};      // workers of the batch still running
  std::atomic<unsigned> sleepers_{0};  // workers waiting on wake_
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  std::chrono::microseconds spin_{0};
};

}  // namespace gpix::detail
