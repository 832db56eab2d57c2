#pragma once
// CUDA queues and events: streams, pooled plain events, user events (a private stream that
// waits on a page-locked flag), and the lazily built messages of failed calls.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/driver.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cuda {

class CuQueue final : public QueueImpl {
 public:
  CuQueue(std::shared_ptr<const Context> ctx, cuda::Stream s)
      : ctx_(std::move(ctx)), s_(std::move(s)) {}
  ~CuQueue() override {
    ContextScope scope(*ctx_, std::nothrow);
    s_.reset();  // work still queued completes; the driver frees the stream afterwards
  }
  CUstream get() const noexcept { return s_.get(); }

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::Stream s_;
};

inline CUstream native(QueueImpl& q) {
  return static_cast<CuQueue&>(q).get();
}

// Host-written flags that user events' private streams wait on (cuStreamWaitValue32): 32-bit
// slots in page-locked, device-mapped host memory. A slot's value only grows: an event waits
// for value >= its generation and complete() stores the generation, so a slot can be handed
// to the next event as soon as the previous one is destroyed (its waiter is already released).
class UserFlags {
 public:
  struct Slot {
    std::size_t index = 0;
    std::uint32_t* host = nullptr;
    CUdeviceptr device = 0;
    std::uint32_t generation = 0;
  };
  explicit UserFlags(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {}
  ~UserFlags() {
    ContextScope scope(*ctx_, std::nothrow);
    pages_.clear();
  }
  // Needs the context current.
  Slot acquire() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      constexpr std::size_t kPage = 4096;
      void* p = nullptr;
      check(ctx_->driver().cuMemHostAlloc(&p, kPage,
                                          CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
            "allocating page-locked flags for user events");
      cuda::HostPtr page(p);
      CUdeviceptr d = 0;
      check(ctx_->driver().cuMemHostGetDevicePointer(&d, p, 0),
            "mapping the user-event flags into the device");
      std::memset(p, 0, kPage);
      for (std::size_t i = 0; i < kPage / 4; ++i) {
        free_.push_back(slots_.size());
        slots_.push_back(Slot{slots_.size(), static_cast<std::uint32_t*>(p) + i, d + 4 * i, 0});
      }
      pages_.push_back(std::move(page));
    }
    Slot& s = slots_[free_.back()];
    free_.pop_back();
    ++s.generation;
    return s;
  }
  void release(const Slot& s) {
    std::lock_guard lock(mutex_);
    free_.push_back(s.index);
  }
  std::atomic<int> pending{0};  // user events not yet completed

 private:
  std::shared_ptr<const Context> ctx_;
  std::mutex mutex_;
  std::vector<cuda::HostPtr> pages_;
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_;
};

// The words of an error message, built only when a call fails: transfers are queued in
// microseconds, and "writing 1 MB to 'NVIDIA H200'" costs allocations on every call. Holds a
// reference to a string or to a callable; both must outlive it (pass it down, never keep it).
class What {
 public:
  What(const std::string& text) : obj_(&text), make_(&copy) {}  // NOLINT(*-explicit-*)
  template <class F>
  requires std::is_invocable_r_v<std::string, const F&> What(const F& make)  // NOLINT(*-explicit-*)
      : obj_(&make), make_([](const void* f) { return (*static_cast<const F*>(f))(); }) {}
  std::string str() const { return make_(obj_); }

 private:
  static std::string copy(const void* s) { return *static_cast<const std::string*>(s); }
  const void* obj_;
  std::string (*make_)(const void*);
};

// check() for a What: the message is built only on failure.
inline void check_what(CUresult r, const What& what, const char* step = "") {
  if (r != CUDA_SUCCESS) check(r, what.str() + step);
}

// Plain events for reuse. Creating and destroying a CUevent per transfer are two driver calls
// more on every queued DMA (a staged 1 MB push queues two); a recorded event is simply
// recorded again by its next user, so a finished CuEvent hands its CUevent back here.
class EventPool {
 public:
  explicit EventPool(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {}
  ~EventPool() {
    ContextScope scope(*ctx_, std::nothrow);
    free_.clear();
  }
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;

  // An event without timing (cheaper to record and to wait for). Needs the context current.
  cuda::Event take(const What& what) {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        cuda::Event e = std::move(free_.back());
        free_.pop_back();
        return e;
      }
    }
    CUevent e = nullptr;
    const CUresult r = ctx_->driver().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    check_what(r, what, " (creating an event)");
    return cuda::Event(e);
  }
  void give(cuda::Event e) noexcept {
    std::unique_lock lock(mutex_);
    if (free_.size() < kKeep) {
      try {
        free_.push_back(std::move(e));
        return;
      } catch (const std::bad_alloc&) {
      }
    }
    lock.unlock();
    ContextScope scope(*ctx_, std::nothrow);
    e.reset();
  }

 private:
  static constexpr std::size_t kKeep = 256;
  std::shared_ptr<const Context> ctx_;
  std::mutex mutex_;
  std::vector<cuda::Event> free_;
};

class CuEvent final : public EventImpl {
 public:
  // A plain event, which goes back to pool when dropped.
  CuEvent(std::shared_ptr<const Context> ctx, cuda::Event e, std::shared_ptr<EventPool> pool)
      : ctx_(std::move(ctx)), e_(std::move(e)), pool_(std::move(pool)) {}
  // A user event: e_ is recorded on stream, which waits for slot's flag.
  CuEvent(std::shared_ptr<const Context> ctx, cuda::Event e, cuda::Stream stream,
          std::shared_ptr<UserFlags> flags, UserFlags::Slot slot)
      : ctx_(std::move(ctx)),
        e_(std::move(e)),
        stream_(std::move(stream)),
        flags_(std::move(flags)),
        slot_(slot) {
    ++flags_->pending;
  }
  ~CuEvent() override {
    if (flags_) {
      // A user event dropped before complete(): complete it, so that its private stream and
      // everything waiting on it drain instead of waiting forever.
      complete();
      flags_->release(slot_);
    }
    if (pool_) {
      pool_->give(std::move(e_));
      return;
    }
    ContextScope scope(*ctx_, std::nothrow);
    e_.reset();
    stream_.reset();
  }
  CUevent get() const noexcept { return e_.get(); }

  void wait() override {
    ContextScope scope(*ctx_);
    check(ctx_->driver().cuEventSynchronize(e_.get()), "waiting for an event");
  }
  bool done() override {
    ContextScope scope(*ctx_);
    const CUresult r = ctx_->driver().cuEventQuery(e_.get());
    return r != CUDA_ERROR_NOT_READY;  // failed work counts as done; wait() reports it
  }
  void complete() override {
    if (!flags_) throw InvalidArgument("complete() is only for user events (Event::user())");
    if (completed_.exchange(true)) return;
    std::atomic_ref<std::uint32_t>(*slot_.host).store(slot_.generation, std::memory_order_release);
    --flags_->pending;
  }

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::Event e_;
  std::shared_ptr<EventPool> pool_;  // plain events
  cuda::Stream stream_;
  std::shared_ptr<UserFlags> flags_;
  UserFlags::Slot slot_;
  std::atomic<bool> completed_{false};
};

}  // namespace gpix::detail::cuda
