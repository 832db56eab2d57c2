#pragma once
// Streamed pushes (DeviceImpl::stream_in on CUDA): kernels/staging.kernel reads the staging
// ring while host threads fill it, told slice by slice through page-locked words.
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
#include "backend/cuda/cuda_events.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/driver.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cuda {

// The host side of kernels/staging.kernel, one per device: page-locked words mapped into the
// device, a flag per slice and the stop word (the host writes them) and a done word per
// work-group (the kernel writes them). A streamed push holds `mutex` from start to finish.
class StreamControl {
 public:
  static constexpr std::size_t kMaxSlices = 1024, kMaxGroups = 64;
  // Word offsets: the flags, then stop and the done words on cache lines of their own.
  static constexpr std::size_t kStop = kMaxSlices, kDone = kMaxSlices + 16,
                               kWords = kDone + kMaxGroups;

  explicit StreamControl(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {}
  ~StreamControl() {
    ContextScope scope(*ctx_, std::nothrow);
    block_.reset();
  }
  StreamControl(const StreamControl&) = delete;
  StreamControl& operator=(const StreamControl&) = delete;

  // Allocates on first use. Needs the context current and `mutex` held.
  void ready() {
    if (block_) return;
    const cuda::Driver& d = ctx_->driver();
    const std::string what = "allocating the streamed-push words";
    void* p = nullptr;
    check(d.cuMemHostAlloc(&p, kWords * 4, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
          what);
    cuda::HostPtr block(p);
    std::memset(p, 0, kWords * 4);
    CUdeviceptr words = 0;
    check(d.cuMemHostGetDevicePointer(&words, p, 0), what);
    block_ = std::move(block);
    device_words_ = words;
  }
  std::uint32_t* words() const { return static_cast<std::uint32_t*>(block_.get()); }
  CUdeviceptr device_words() const { return device_words_; }
  // The next generation (never 0, the words' initial value).
  std::uint32_t next() {
    if (++generation_ == 0) ++generation_;
    return generation_;
  }
  std::mutex mutex;

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::HostPtr block_;
  CUdeviceptr device_words_ = 0;
  std::uint32_t generation_ = 0;
};

// One streamed push (DeviceImpl::stream_in): the staging kernel on the device's stream, fed
// through the StreamControl words under their lock.
class CuStreamedPush final : public DeviceImpl::StreamedPush {
 public:
  struct Args {
    DeviceImpl::KernelPtr keep;  // the program outlives the launch (the cache may evict it)
    CUfunction kernel;
    CUstream stream;
    CUdeviceptr from, to;
    std::size_t bytes, slice;
  };
  CuStreamedPush(std::shared_ptr<const Context> ctx, std::shared_ptr<EventPool> events,
                 StreamControl& control, std::unique_lock<std::mutex> lock, const Args& a)
      : ctx_(std::move(ctx)),
        events_(std::move(events)),
        control_(control),
        lock_(std::move(lock)),
        a_(a),
        generation_(control.next()) {}
  ~CuStreamedPush() override {
    if (launched_ && !finished_) {
      try {
        finish(true);
      } catch (const Error&) {  // a destructor cannot report it; the stream's next call will
      }
    }
    if (event_) events_->give(std::move(event_));
  }
  CuStreamedPush(const CuStreamedPush&) = delete;
  CuStreamedPush& operator=(const CuStreamedPush&) = delete;

  void start() override {
    const auto what = [&] { return "starting a streamed push of " + human(a_.bytes); };
    ContextScope scope(*ctx_);
    const cuda::Driver& d = ctx_->driver();
    const std::size_t slices = (a_.bytes + a_.slice - 1) / a_.slice;
    const CUdeviceptr words = control_.device_words();
    CUdeviceptr flags = words, stop = words + 4 * StreamControl::kStop,
                done = words + 4 * StreamControl::kDone, from = a_.from, to = a_.to;
    unsigned long long bytes = a_.bytes, slice = a_.slice;
    unsigned gen = generation_;
    void* params[] = {&from, &to, &bytes, &slice, &flags, &stop, &gen, &done};
    groups_ = std::min<std::size_t>(slices, StreamControl::kMaxGroups);
    event_ = events_->take(what);
    check_what(d.cuLaunchKernel(a_.kernel, static_cast<unsigned>(groups_), 1, 1, kThreads, 1, 1, 0,
                                a_.stream, params, nullptr),
               what);
    launched_ = true;
    check_what(d.cuEventRecord(event_.get(), a_.stream), what, " (recording an event)");
    recorded_ = true;
  }

  void ready(std::size_t k) noexcept override {
    std::atomic_ref<std::uint32_t>(control_.words()[k])
        .store(generation_, std::memory_order_release);
  }

  void finish(bool failed) override {
    finished_ = true;
    if (failed) {
      std::atomic_ref<std::uint32_t>(control_.words()[StreamControl::kStop])
          .store(generation_, std::memory_order_release);
    }
    if (!launched_) return;
    const auto landed = [&] {
      std::uint32_t* done = control_.words() + StreamControl::kDone;
      for (std::size_t g = 0; g < groups_; ++g) {
        if (std::atomic_ref<std::uint32_t>(done[g]).load(std::memory_order_acquire) !=
            generation_) {
          return false;
        }
      }
      return true;
    };
    if (!recorded_) {
      // The kernel runs but its event was not recorded: the stream says when it has returned
      // (told to stop, it returns without waiting for the slices).
      ContextScope scope(*ctx_);
      check(ctx_->driver().cuStreamSynchronize(a_.stream),
            "waiting for a streamed push of " + human(a_.bytes));
      return;
    }
    // The kernel's own words say when the data is in place, microseconds before its event
    // does. Poll them for up to a millisecond (the stream may still run earlier work),
    // checking now and then whether the kernel ended without them (an error).
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    for (unsigned i = 1; !landed(); ++i) {
      if (i % 256 == 0) {
        if (ctx_->driver().cuEventQuery(event_.get()) != CUDA_ERROR_NOT_READY) break;
        if (std::chrono::steady_clock::now() > until) break;
      }
      relax();
    }
    if (!landed()) {
      ContextScope scope(*ctx_);
      check(ctx_->driver().cuEventSynchronize(event_.get()),
            "waiting for a streamed push of " + human(a_.bytes));
      if (!landed() && !failed) {
        throw DeviceError("a streamed push of " + human(a_.bytes) +
                              " ended without its data; set GPIX_STAGING_KERNEL_MB=0 to push "
                              "through the DMA engine and report this",
                          "GPIX_STREAMED_PUSH");
      }
    }
    events_->give(std::move(event_));
  }

  static constexpr unsigned kThreads = 256;

 private:
  std::shared_ptr<const Context> ctx_;
  std::shared_ptr<EventPool> events_;
  StreamControl& control_;
  std::unique_lock<std::mutex> lock_;
  Args a_;
  std::uint32_t generation_;
  cuda::Event event_;
  std::size_t groups_ = 0;
  bool launched_ = false, recorded_ = false, finished_ = false;
};

}  // namespace gpix::detail::cuda
