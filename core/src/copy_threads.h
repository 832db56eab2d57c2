#pragma once
// The host threads that copy staged transfers between pageable and pinned memory
// (transfer.cpp). Every device owns two pools, one for pushes and one for pulls
// (DeviceImpl::copy_threads), so that the pushes and pulls of tiled workers on several devices
// copy at once (one pool per direction for the whole process capped two H200s at 1.23-1.31x
// one, bench/RESULTS.md); transfers of one direction to one device take turns. The pools of a
// process share the host's cores (ThreadShare): a batch takes the threads that are free.
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

// Copy threads that the pools sharing it may run at once, their callers included: a batch asks
// for n and is granted what is free (at least 1, its caller), so that two devices pushing and
// pulling at once do not put four times the cores' threads on the memory bus.
class ThreadShare {
 public:
  explicit ThreadShare(unsigned cap) : cap_(std::max(cap, 1u)) {}
  // The process's share: std::thread::hardware_concurrency() threads.
  static ThreadShare& process();
  unsigned take(unsigned n) {
    unsigned busy = busy_.load(std::memory_order_relaxed);
    for (;;) {
      const unsigned grant = std::clamp(cap_ > busy ? cap_ - busy : 0u, 1u, std::max(n, 1u));
      if (busy_.compare_exchange_weak(busy, busy + grant, std::memory_order_relaxed)) return grant;
    }
  }
  void give(unsigned n) { busy_.fetch_sub(n, std::memory_order_relaxed); }
  unsigned cap() const { return cap_; }

 private:
  const unsigned cap_;
  std::atomic<unsigned> busy_{0};
};

// A pool of host threads that live as long as the process: a staged transfer runs f(0) on the
// caller and f(1) .. f(n - 1) on the pool. Creating threads per transfer costs tens of
// microseconds each, as much as copying a megabyte, and so does waking a sleeping thread on a
// VM, so both sides poll before they sleep: a worker for GPIX_STAGING_SPIN_US (default 50,
// read when the pool starts) after its last batch (transfers in a row find it awake), the caller as
// long for the batch's end. A batch is published with one atomic word (its generation and its
// number of threads), which the workers poll: no queue, no lock while nobody sleeps.
class CopyThreads {
 public:
  // Workers poll for `spin` before they sleep (devices: config().staging.spin,
  // GPIX_STAGING_SPIN_US); with a share, batches take their threads from it.
  explicit CopyThreads(std::chrono::microseconds spin, ThreadShare* share = nullptr)
      : spin_(spin), share_(share) {}
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

  // Runs f(0) .. f(k - 1), f(0) on the caller, and returns k when all have returned: k = n,
  // or fewer where the share has fewer threads free (so f must share out its work by itself,
  // as the staging tasks do, taking slices from a counter). f must not throw (the staging
  // tasks catch their own errors). One batch at a time per pool. `hook` (tests) is called on
  // the caller as the batch starts and ends, with the number of threads granted.
  unsigned run(unsigned n, const std::function<void(unsigned)>& f) {
    n = std::min(n, kMaxThreads);
    if (n <= 1) {
      batch_hook(true, 1);
      f(0);
      batch_hook(false, 1);
      return 1;
    }
    std::lock_guard batch(run_mutex_);
    if (share_) n = share_->take(n);
    struct Give {
      ThreadShare* share;
      unsigned n;
      ~Give() {
        if (share) share->give(n);
      }
    } give{share_, n};
    batch_hook(true, n);
    if (n <= 1) {
      f(0);
      batch_hook(false, 1);
      return 1;
    }
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
    batch_hook(false, n);
    return n;
  }

  // Tests: called on a batch's caller as every batch of every pool starts (true) and ends,
  // with its pool and its threads; null (the default) costs one load per batch.
  using Hook = void (*)(const CopyThreads& pool, bool start, unsigned threads);
  static void set_hook(Hook h) { hook_.store(h); }

 private:
  static constexpr unsigned kMaxThreads = 255;
  static constexpr std::uint64_t kThreadsMask = 0xff, kGeneration = 0x100;

  void batch_hook(bool start, unsigned n) const {
    if (Hook h = hook_.load(std::memory_order_relaxed)) h(*this, start, n);
  }
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
  ThreadShare* share_ = nullptr;
  static inline std::atomic<Hook> hook_{nullptr};
};

}  // namespace gpix::detail
