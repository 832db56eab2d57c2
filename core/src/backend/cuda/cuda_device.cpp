// The CUDA backend: the driver API and NVRTC, both loaded at run time. One primary context
// per device, its default queue a non-blocking stream; every call makes the context current
// for its scope, so calls may come from any thread.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "gpix/error.h"
#include "memory_pool.h"
#include "programs.h"
#include "util.h"

namespace gpix::detail {
namespace {

using cuda::check;
using cuda::Context;
using cuda::ContextScope;

// A linear device allocation: owned (cuMemAlloc), or adopted from another framework (DLPack),
// in which case release_ runs instead of cuMemFree.
class CuMemory final : public Memory {
 public:
  CuMemory(std::size_t bytes, std::shared_ptr<const Context> ctx, cuda::DevicePtr ptr)
      : Memory(bytes), ctx_(std::move(ctx)), ptr_(std::move(ptr)), addr_(ptr_.get()) {}
  CuMemory(std::size_t bytes, std::shared_ptr<const Context> ctx, CUdeviceptr foreign,
           std::function<void()> release)
      : Memory(bytes), ctx_(std::move(ctx)), addr_(foreign), release_(std::move(release)) {}
  ~CuMemory() override {
    if (ptr_) {
      ContextScope scope(*ctx_, std::nothrow);
      ptr_.reset();
    }
    if (release_) release_();
  }
  CUdeviceptr get() const noexcept { return addr_; }
  std::uint64_t native_pointer() const noexcept override { return addr_; }

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::DevicePtr ptr_;
  CUdeviceptr addr_ = 0;
  std::function<void()> release_;
};

// An image: a one-channel CUDA array, and the texture objects that kernels read it through,
// one per sampler, made on first use and destroyed with the array.
class CuImage final : public Memory {
 public:
  CuImage(std::size_t bytes, std::shared_ptr<const Context> ctx, cuda::Array array,
          std::size_t element_bytes, DType dtype)
      : Memory(bytes, true),
        ctx_(std::move(ctx)),
        array_(std::move(array)),
        element_(element_bytes),
        dtype_(dtype) {}
  ~CuImage() override {
    ContextScope scope(*ctx_, std::nothrow);
    if (std::any_of(textures_.begin(), textures_.end(), [](const auto& t) { return bool(t); })) {
      // A kernel still reading through a texture object must finish before it goes.
      ctx_->driver().cuCtxSynchronize();
    }
    for (auto& t : textures_) t.reset();
    array_.reset();
  }
  CUarray get() const noexcept { return array_.get(); }
  std::size_t element_bytes() const noexcept { return element_; }

  CUtexObject texture(const SamplerDesc& s) const {
    std::lock_guard lock(mutex_);
    auto& t = textures_[static_cast<std::size_t>((s.linear ? 1 : 0) | (s.normalized ? 2 : 0))];
    if (!t) {
      CUDA_RESOURCE_DESC res{};
      res.resType = CU_RESOURCE_TYPE_ARRAY;
      res.res.array.hArray = array_.get();
      CUDA_TEXTURE_DESC tex{};
      for (auto& m : tex.addressMode) m = CU_TR_ADDRESS_MODE_CLAMP;
      tex.filterMode = s.linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
      // Integer images return their values as they are (OpenCL's read_imagei/ui); only f32
      // images are read as float, which is also the only dtype gpix samples linearly.
      tex.flags = (s.normalized ? CU_TRSF_NORMALIZED_COORDINATES : 0u) |
                  (dtype_ == DType::f32 ? 0u : static_cast<unsigned>(CU_TRSF_READ_AS_INTEGER));
      CUtexObject obj = 0;
      check(ctx_->driver().cuTexObjectCreate(&obj, &res, &tex, nullptr),
            "creating a texture object for a " + std::string(name(dtype_)) + " image");
      t.reset(obj);
    }
    return t.get();
  }

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::Array array_;
  std::size_t element_;
  DType dtype_;
  mutable std::mutex mutex_;
  mutable std::array<cuda::Texture, 4> textures_;
};

CUdeviceptr native(const Memory& m) {
  if (m.is_image()) {
    throw InvalidArgument(
        "an image was passed where the CUDA backend needs a buffer (kernels read images "
        "through a sampler; copy the image to a buffer first)");
  }
  return static_cast<const CuMemory&>(m).get();
}

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

CUstream native(QueueImpl& q) {
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
void check_what(CUresult r, const What& what, const char* step = "") {
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

// One streamed push (DeviceImpl::stream_in): the staging kernel on the device's stream, fed
// through the StreamControl words under their lock.
class CuStreamedPush final : public DeviceImpl::StreamedPush {
 public:
  struct Args {
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

// The page-locked blocks that gpix allocated, on any device: transfers from or to them never
// need a bounce block (CudaDevice::must_bounce). gpix's own record rather than
// cuPointerGetAttribute, whose answer for pageable memory differs on HMM systems.
class PinnedRegistry {
 public:
  void add(const void* p, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    ranges_[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  }
  void remove(const void* p) {
    std::lock_guard lock(mutex_);
    ranges_.erase(reinterpret_cast<std::uintptr_t>(p));
  }
  bool contains(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::lock_guard lock(mutex_);
    auto it = ranges_.upper_bound(a);
    if (it == ranges_.begin()) return false;
    --it;
    return a - it->first < it->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> ranges_;
};
PinnedRegistry& pinned_registry() {
  // Never destroyed: host memory may be released by other static objects at exit.
  static auto* r = new PinnedRegistry;
  return *r;
}

// Page-locked host memory for users (HostArray::pinned and the staging ring).
class CuHostMemory final : public HostMemory {
 public:
  CuHostMemory(std::shared_ptr<const Context> ctx, cuda::HostPtr p, std::size_t bytes)
      : HostMemory(p.get(), bytes), ctx_(std::move(ctx)), p_(std::move(p)) {
    pinned_registry().add(data(), std::max<std::size_t>(bytes, 1));
  }
  ~CuHostMemory() override {
    pinned_registry().remove(data());
    ContextScope scope(*ctx_, std::nothrow);
    p_.reset();
  }

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::HostPtr p_;
};

// Page-locked bounce blocks for transfers that must not go through the driver's pageable
// path (see CudaDevice::must_bounce) and for map(). Blocks are reused, never freed while the
// device lives: returning one happens on the driver's host-function thread, where no CUDA call
// is allowed, and freeing page-locked memory may synchronise the whole context.
class PinnedCache : public std::enable_shared_from_this<PinnedCache> {
 public:
  explicit PinnedCache(std::shared_ptr<const Context> ctx) : ctx_(std::move(ctx)) {}
  ~PinnedCache() {
    for (const auto& b : blocks_) pinned_registry().remove(b.get());
    ContextScope scope(*ctx_, std::nothrow);
    blocks_.clear();
  }
  // A block of at least bytes bytes; needs the context current. Throws OutOfMemory.
  std::shared_ptr<std::byte> take(std::size_t bytes) {
    constexpr std::size_t kGrain = 64 * 1024;
    const std::size_t want = std::max<std::size_t>((bytes + kGrain - 1) / kGrain, 1) * kGrain;
    std::byte* p = nullptr;
    std::size_t size = 0;
    {
      std::lock_guard lock(mutex_);
      auto it = free_.lower_bound(want);
      if (it != free_.end() && it->first <= 2 * want) {
        size = it->first;
        p = it->second;
        free_.erase(it);
      }
    }
    if (!p) {
      void* raw = nullptr;
      const CUresult r = ctx_->driver().cuMemHostAlloc(&raw, want, CU_MEMHOSTALLOC_PORTABLE);
      if (r != CUDA_SUCCESS) {
        throw OutOfMemory("cannot allocate " + human(want) +
                              " of page-locked host memory for a transfer: " + cuda::error_name(r) +
                              "; free pinned HostArrays or host memory",
                          want, cuda::error_name(r));
      }
      pinned_registry().add(raw, want);
      std::lock_guard lock(mutex_);
      blocks_.emplace_back(raw);
      p = static_cast<std::byte*>(raw);
      size = want;
    }
    return std::shared_ptr<std::byte>(p, [self = shared_from_this(), size](std::byte* b) {
      std::lock_guard lock(self->mutex_);
      self->free_.emplace(size, b);
    });
  }

 private:
  std::shared_ptr<const Context> ctx_;
  std::mutex mutex_;
  std::vector<cuda::HostPtr> blocks_;
  std::multimap<std::size_t, std::byte*> free_;
};

class CuKernel final : public Kernel {
 public:
  CuKernel(CUfunction f, std::string name, int max_threads)
      : f_(f), name_(std::move(name)), max_threads_(max_threads) {}
  CUfunction get() const noexcept { return f_; }
  const std::string& name() const noexcept { return name_; }
  // The most threads per block this kernel can launch with (registers may limit it below
  // the device's limit).
  int max_threads() const noexcept { return max_threads_; }

 private:
  CUfunction f_;  // owned by its module, which the program cache keeps
  std::string name_;
  int max_threads_;
};

bool is_load_failure(CUresult r) {
  return r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
         r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         r == CUDA_ERROR_INVALID_SOURCE;
}

// How programs are compiled for one device.
struct Target {
  int arch = 0;      // e.g. 90 for compute capability 9.0
  bool ptx = false;  // PTX for compute_<arch> (the driver finishes it) instead of a cubin
};

CUarray_format array_format(DType t) {
  switch (t) {
    case DType::u8:
      return CU_AD_FORMAT_UNSIGNED_INT8;
    case DType::i8:
      return CU_AD_FORMAT_SIGNED_INT8;
    case DType::u16:
      return CU_AD_FORMAT_UNSIGNED_INT16;
    case DType::i16:
      return CU_AD_FORMAT_SIGNED_INT16;
    case DType::u32:
      return CU_AD_FORMAT_UNSIGNED_INT32;
    case DType::i32:
      return CU_AD_FORMAT_SIGNED_INT32;
    case DType::f32:
      return CU_AD_FORMAT_FLOAT;
    default:
      return static_cast<CUarray_format>(0);
  }
}

// One side of a pitched transfer: host memory, a device buffer or a CUDA array.
struct Side {
  CUmemorytype type = CU_MEMORYTYPE_HOST;
  const std::byte* host = nullptr;
  CUdeviceptr device = 0;
  CUarray array = nullptr;
  Pitched p;
};

// The program binary handed to the disk cache: a tag saying cubin or PTX, then the image.
constexpr char kBinaryMagic[8] = {'G', 'P', 'I', 'X', 'C', 'U', 'D', 'A'};
constexpr std::size_t kBinaryHeader = 16;  // magic, kind byte, padding: keeps the image aligned

// The payload of a host function that unpacks a bounce block into pageable host memory.
struct Unpack {
  std::shared_ptr<std::byte> block;
  std::byte* dst;
  Pitched d;
  Extent e;
};

// Copies the box e between a pitched layout and a dense block (rows of e[0] bytes).
void pack(const std::byte* src, const Pitched& s, const Extent& e, std::byte* dense) {
  for (std::size_t z = 0; z < e[2]; ++z)
    for (std::size_t y = 0; y < e[1]; ++y)
      std::memcpy(dense + (z * e[1] + y) * e[0], src + s.offset(0, y, z), e[0]);
}
void unpack(const std::byte* dense, std::byte* dst, const Pitched& d, const Extent& e) {
  for (std::size_t z = 0; z < e[2]; ++z)
    for (std::size_t y = 0; y < e[1]; ++y)
      std::memcpy(dst + d.offset(0, y, z), dense + (z * e[1] + y) * e[0], e[0]);
}
void CUDA_CB run_unpack(void* data) {
  // The driver's host-function thread: no CUDA calls here (the block goes back to its
  // cache, which only takes a lock).
  std::unique_ptr<Unpack> u(static_cast<Unpack*>(data));
  unpack(u->block.get(), u->dst, u->d, u->e);
}

class CudaDevice final : public DeviceImpl {
 public:
  CudaDevice(DeviceInfo info, std::shared_ptr<const Context> ctx, cuda::Stream stream,
             const Nvrtc& nvrtc, Target target, int ordinal)
      : DeviceImpl(std::move(info)),
        ctx_(ctx),
        default_(ctx, std::move(stream)),
        nvrtc_(nvrtc),
        target_(target),
        ordinal_(ordinal),
        flags_(std::make_shared<UserFlags>(ctx)),
        pinned_(std::make_shared<PinnedCache>(ctx)),
        events_(std::make_shared<EventPool>(ctx)),
        control_(std::make_unique<StreamControl>(ctx)) {}

  ~CudaDevice() override {
    {
      ContextScope scope(*ctx_, std::nothrow);
      // Everything queued, host functions included, is done before the caches go.
      drv().cuCtxSynchronize();
    }
    release_resources();  // cached blocks and the staging ring go back while the device exists
  }

  int native_ordinal() const noexcept override { return ordinal_; }
  PciAddress pci_address() const override { return pci_; }
  void set_pci(PciAddress a) { pci_ = a; }

  std::unique_ptr<Memory> do_allocate(std::size_t bytes) override {
    ContextScope scope(*ctx_);
    CUdeviceptr p = 0;
    // cuMemAlloc rejects 0 bytes; CUDA memory is backed at allocation, so no touch is needed.
    const CUresult r = drv().cuMemAlloc(&p, std::max<std::size_t>(bytes, 1));
    if (r != CUDA_SUCCESS) throw_alloc(r, bytes, "");
    return std::make_unique<CuMemory>(bytes, ctx_, cuda::DevicePtr(p));
  }

  std::unique_ptr<Memory> adopt(std::uint64_t pointer, std::size_t bytes,
                                std::function<void()> release) override {
    ContextScope scope(*ctx_);
    const auto ptr = static_cast<CUdeviceptr>(pointer);
    const std::string what = "the foreign pointer 0x" + hex(pointer);
    int ordinal = -1;
    CUresult r = drv().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
    if (r != CUDA_SUCCESS) {
      throw InvalidArgument(what +
                            " is not CUDA memory (cuPointerGetAttribute: " + cuda::error_name(r) +
                            "); pass a tensor on CUDA device " + std::to_string(ordinal_));
    }
    if (ordinal != ordinal_) {
      throw InvalidArgument(what + " lives on CUDA device " + std::to_string(ordinal) +
                            ", not on '" + info().name + "' (CUDA device " +
                            std::to_string(ordinal_) + "); import it on that device");
    }
    unsigned type = 0;
    r = drv().cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
    if (r != CUDA_SUCCESS || type != CU_MEMORYTYPE_DEVICE) {
      throw InvalidArgument(what + " is not device memory (page-locked host memory or unknown: " +
                            cuda::error_name(r) + "); import it as a kDLCPU/kDLCUDAHost tensor");
    }
    CUcontext owner = nullptr;
    if (drv().cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, ptr) == CUDA_SUCCESS &&
        owner && owner != ctx_->get()) {
      throw InvalidArgument(what +
                            " belongs to a CUDA context other than the device's primary "
                            "context, which gpix's kernels cannot address; allocate it in "
                            "the primary context (as the CUDA runtime does)");
    }
    CUdeviceptr start = 0;
    std::size_t size = 0;
    if (drv().cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) ==
            CUDA_SUCCESS &&
        drv().cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) == CUDA_SUCCESS &&
        (ptr < start || ptr - start > size || bytes > size - (ptr - start))) {
      throw InvalidArgument(what + " with " + human(bytes) +
                            " runs past the end of its allocation (" + human(size) + " from 0x" +
                            hex(start) + ")");
    }
    return std::make_unique<CuMemory>(bytes, ctx_, ptr, std::move(release));
  }

  void do_write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) override {
    ContextScope scope(*ctx_);
    const std::string what = "writing " + human(bytes) + " to '" + info().name + "'";
    check(drv().cuMemcpyHtoDAsync(native(dst) + offset, src, bytes, stream()), what);
    sync(what);
  }

  void do_read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) override {
    ContextScope scope(*ctx_);
    const std::string what = "reading " + human(bytes) + " from '" + info().name + "'";
    check(drv().cuMemcpyDtoHAsync(dst, native(src) + offset, bytes, stream()), what);
    sync(what);
  }

  void do_copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
               std::size_t bytes) override {
    ContextScope scope(*ctx_);
    const std::string what = "copying " + human(bytes) + " on '" + info().name + "'";
    check(drv().cuMemcpyDtoDAsync(native(dst) + dst_offset, native(src) + src_offset, bytes,
                                  stream()),
          what);
    sync(what);
  }

  void do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
               std::size_t pattern_bytes) override {
    const Kernel* fill64 = fill64_kernel(bytes, pattern_bytes);
    ContextScope scope(*ctx_);
    const std::string what = "filling " + human(bytes) + " on '" + info().name + "'";
    enqueue_fill(stream(), dst, offset, bytes, pattern, pattern_bytes, fill64, what);
    sync(what);
  }

  void do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) override {
    ContextScope scope(*ctx_);
    enqueue_launch(stream(), k, l, args);
  }

  // ---- queues and events
  QueueImpl& default_queue() override { return default_; }

  std::unique_ptr<QueueImpl> create_queue() override {
    ContextScope scope(*ctx_);
    CUstream s = nullptr;
    check(drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
          "creating a stream on '" + info().name + "'");
    return std::make_unique<CuQueue>(ctx_, cuda::Stream(s));
  }

  void do_finish(QueueImpl& q) override {
    ContextScope scope(*ctx_);
    check(drv().cuStreamSynchronize(native(q)), "waiting for a queue of '" + info().name + "'");
  }

  std::shared_ptr<EventImpl> marker(QueueImpl& q, Waits waits) override {
    ContextScope scope(*ctx_);
    const std::string what = "enqueueing a marker on '" + info().name + "'";
    wait_for(native(q), waits, what);
    return record(native(q), what);
  }

  std::shared_ptr<EventImpl> user_event() override {
    if (!drv().cuStreamWaitValue32) {
      throw DeviceError("user events on '" + info().name +
                            "' need cuStreamWaitValue32_v2 (CUDA 11.7), which the CUDA " +
                            cuda::version_text(drv().version) +
                            " driver lacks; update the NVIDIA driver or use an OpenCL device",
                        "GPIX_NOT_IMPLEMENTED");
    }
    ContextScope scope(*ctx_);
    const std::string what = "creating a user event on '" + info().name + "'";
    const UserFlags::Slot slot = flags_->acquire();
    try {
      CUstream s = nullptr;
      check(drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), what);
      cuda::Stream stream(s);
      const CUresult r =
          drv().cuStreamWaitValue32(s, slot.device, slot.generation, CU_STREAM_WAIT_VALUE_GEQ);
      if (r == CUDA_ERROR_NOT_SUPPORTED) {
        throw DeviceError(what +
                              ": the driver has stream memory operations switched off "
                              "(cuStreamWaitValue32: CUDA_ERROR_NOT_SUPPORTED); enable them "
                              "(nvidia module option NVreg_EnableStreamMemOPs=1) or use an "
                              "OpenCL device",
                          cuda::error_name(r));
      }
      check(r, what);
      cuda::Event e = new_event(what);
      check(drv().cuEventRecord(e.get(), s), what);
      return std::make_shared<CuEvent>(ctx_, std::move(e), std::move(stream), flags_, slot);
    } catch (...) {
      flags_->release(slot);
      throw;
    }
  }

  // ---- pitched transfers
  std::shared_ptr<EventImpl> do_write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                           const void* src, const Pitched& s, Extent ext,
                                           Waits waits) override {
    ContextScope scope(*ctx_);
    const auto what = [&] {
      return "writing " + human(ext[0] * ext[1] * ext[2]) + " to '" + info().name + "'";
    };
    const CUstream st = native(q);
    wait_for(st, waits, what);
    Side from{CU_MEMORYTYPE_HOST, static_cast<const std::byte*>(src), 0, nullptr, s};
    std::shared_ptr<std::byte> bounce;
    if (must_bounce(from.host + s.offset(0, 0, 0))) {
      // The data is taken now (the contract allows it: the host memory stays untouched
      // until the event completes anyway).
      bounce = pinned_->take(ext[0] * ext[1] * ext[2]);
      pack(from.host, s, ext, bounce.get());
      from = Side{CU_MEMORYTYPE_HOST, bounce.get(), 0, nullptr, dense(ext)};
    }
    copy3d(st, from, side(dst, d), ext, what);
    auto e = record(st, what);
    if (bounce) retain(e, bounce);
    return e;
  }

  std::shared_ptr<EventImpl> do_read_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                          void* dst, const Pitched& d, Extent ext,
                                          Waits waits) override {
    ContextScope scope(*ctx_);
    const auto what = [&] {
      return "reading " + human(ext[0] * ext[1] * ext[2]) + " from '" + info().name + "'";
    };
    const CUstream st = native(q);
    wait_for(st, waits, what);
    auto* host = static_cast<std::byte*>(dst);
    if (must_bounce(host + d.offset(0, 0, 0))) {
      // Into a pinned block, then a host function on the stream unpacks it: the stream, not
      // this thread, decides when the data lands.
      auto block = pinned_->take(ext[0] * ext[1] * ext[2]);
      copy3d(st, side(src, s), Side{CU_MEMORYTYPE_HOST, block.get(), 0, nullptr, dense(ext)}, ext,
             what);
      auto u = std::make_unique<Unpack>(Unpack{std::move(block), host, d, ext});
      check_what(drv().cuLaunchHostFunc(st, &run_unpack, u.get()), what);
      (void)u.release();  // run_unpack owns it now
    } else {
      copy3d(st, side(src, s), Side{CU_MEMORYTYPE_HOST, host, 0, nullptr, d}, ext, what);
    }
    return record(st, what);
  }

  std::shared_ptr<EventImpl> do_copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                          Memory& dst, const Pitched& d, Extent ext,
                                          Waits waits) override {
    ContextScope scope(*ctx_);
    const std::string what =
        "copying " + human(ext[0] * ext[1] * ext[2]) + " on '" + info().name + "'";
    const CUstream st = native(q);
    wait_for(st, waits, what);
    copy3d(st, side(src, s), side(dst, d), ext, what);
    return record(st, what);
  }

  std::shared_ptr<EventImpl> do_fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                           std::size_t bytes, const void* pattern,
                                           std::size_t pattern_bytes, Waits waits) override {
    const Kernel* fill64 = fill64_kernel(bytes, pattern_bytes);
    ContextScope scope(*ctx_);
    const std::string what = "filling " + human(bytes) + " on '" + info().name + "'";
    const CUstream st = native(q);
    wait_for(st, waits, what);
    if (bytes) enqueue_fill(st, dst, offset, bytes, pattern, pattern_bytes, fill64, what);
    return record(st, what);
  }

  std::shared_ptr<EventImpl> do_launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                             std::span<const KernelArg> args,
                                             Waits waits) override {
    ContextScope scope(*ctx_);
    const CUstream st = native(q);
    const std::string what = "launching a kernel on '" + info().name + "'";
    wait_for(st, waits, what);
    enqueue_launch(st, k, l, args);
    return record(st, what);
  }

  // ---- host memory
  std::unique_ptr<HostMemory> allocate_host(std::size_t bytes) override {
    ContextScope scope(*ctx_);
    void* p = nullptr;
    // Portable: page-locked for every CUDA context, so peer devices take the fast path too.
    const CUresult r =
        // Mapped too: streamed pushes (stream_in) read the staging ring from the device.
        drv().cuMemHostAlloc(&p, std::max<std::size_t>(bytes, 1),
                             CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
    if (r != CUDA_SUCCESS) {
      throw OutOfMemory("cannot allocate " + human(bytes) + " of page-locked host memory for '" +
                            info().name + "': " + cuda::error_name(r) +
                            "; free pinned HostArrays, or use ordinary host memory",
                        bytes, cuda::error_name(r));
    }
    return std::make_unique<CuHostMemory>(ctx_, cuda::HostPtr(p), bytes);
  }

  void* do_map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) override {
    ContextScope scope(*ctx_);
    // CUDA has no mapping of device memory: a pinned block holds the bytes while mapped.
    auto block = pinned_->take(bytes);
    if (access != MapAccess::write && bytes) {
      const std::string what = "mapping " + human(bytes) + " of '" + info().name + "'";
      check(drv().cuMemcpyDtoHAsync(block.get(), native(m) + offset, bytes, stream()), what);
      sync(what);
    }
    void* p = block.get();
    std::lock_guard lock(maps_mutex_);
    maps_[p] = Mapped{std::move(block), &m, offset, bytes, access};
    return p;
  }

  void do_unmap(Memory& m, void* ptr) override {
    Mapped mp;
    {
      std::lock_guard lock(maps_mutex_);
      auto it = maps_.find(ptr);
      if (it == maps_.end() || it->second.memory != &m) {
        throw InvalidArgument(
            "unmap() was given a pointer that is not mapped from this array on '" + info().name +
            "'");
      }
      mp = std::move(it->second);
      maps_.erase(it);
    }
    if (mp.access != MapAccess::read && mp.bytes) {
      ContextScope scope(*ctx_);
      const std::string what = "unmapping " + human(mp.bytes) + " of '" + info().name + "'";
      check(drv().cuMemcpyHtoDAsync(native(m) + mp.offset, mp.block.get(), mp.bytes, stream()),
            what);
      sync(what);
    }
  }

  // ---- images
  bool image_supported(DType t, int dims) override {
    return array_format(t) != static_cast<CUarray_format>(0) && (dims == 2 || dims == 3);
  }

  std::unique_ptr<Memory> do_allocate_image(const ImageFormat& f) override {
    const std::size_t es = size_of(f.dtype);
    const std::size_t bytes = f.width * f.height * f.depth * es;
    CUDA_ARRAY3D_DESCRIPTOR desc{};
    desc.Width = f.width;
    desc.Height = f.height;
    desc.Depth = f.dims == 3 ? f.depth : 0;  // 0: a 2D array
    desc.Format = array_format(f.dtype);
    desc.NumChannels = 1;
    ContextScope scope(*ctx_);
    CUarray a = nullptr;
    const CUresult r = drv().cuArray3DCreate(&a, &desc);
    if (r != CUDA_SUCCESS) {
      const std::string shape = std::to_string(f.width) + " x " + std::to_string(f.height) +
                                (f.dims == 3 ? " x " + std::to_string(f.depth) : "");
      throw_alloc(r, bytes,
                  " for a " + shape + " " + std::string(name(f.dtype)) +
                      " image (CUDA arrays are limited to 131072 x 65536 in 2D and "
                      "16384 per axis in 3D)");
    }
    return std::make_unique<CuImage>(bytes, ctx_, cuda::Array(a), es, f.dtype);
  }

  NativeMemoryInfo native_memory_info() override {
    ContextScope scope(*ctx_);
    std::size_t free = 0, total = 0;
    check(drv().cuMemGetInfo(&free, &total), "querying the memory of '" + info().name + "'");
    return {true, free, total};
  }

  // ---- managed memory as shared virtual memory
  bool svm_supported() override { return info().svm; }
  void* svm_allocate(std::size_t bytes) override {
    ContextScope scope(*ctx_);
    std::size_t free = 0, total = 0;
    check(drv().cuMemGetInfo(&free, &total), "querying the memory of '" + info().name + "'");
    // Managed memory may be oversubscribed and would then page to the host unnoticed: gpix
    // never asks for more than the device has free.
    if (bytes > free) {
      throw OutOfMemory("cannot allocate " + human(bytes) + " of managed memory on '" +
                            info().name + "': only " + human(free) + " of " + human(total) +
                            " are free; free arrays or use a smaller buffer",
                        bytes);
    }
    CUdeviceptr p = 0;
    const CUresult r = drv().cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL);
    if (r != CUDA_SUCCESS) throw_alloc(r, bytes, " of managed memory");
    return reinterpret_cast<void*>(static_cast<std::uintptr_t>(p));
  }
  void svm_free(void* p) override {
    ContextScope scope(*ctx_, std::nothrow);
    drv().cuMemFree(address(p));
  }
  void svm_map(void*, std::size_t, MapAccess) override {
    // The host may touch managed memory once no kernel that could use it runs.
    ContextScope scope(*ctx_);
    check(drv().cuCtxSynchronize(), "mapping managed memory on '" + info().name + "'");
  }
  void svm_unmap(void*) override {}
  void do_svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                      std::size_t bytes) override {
    ContextScope scope(*ctx_);
    const std::string what = "copying managed memory to an array on '" + info().name + "'";
    check(drv().cuMemcpyDtoDAsync(native(dst) + dst_offset, address(svm), bytes, stream()), what);
    sync(what);
  }
  void do_svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                        std::size_t bytes) override {
    ContextScope scope(*ctx_);
    const std::string what = "copying an array to managed memory on '" + info().name + "'";
    check(drv().cuMemcpyDtoDAsync(address(svm), native(src) + src_offset, bytes, stream()), what);
    sync(what);
  }

  // ---- streamed pushes (kernels/staging.kernel)
  std::unique_ptr<StreamedPush> do_stream_in(QueueImpl& q, Memory& mem, std::size_t offset,
                                             void* host, std::size_t bytes,
                                             std::size_t slice) override {
    const auto aligned = [](std::uintptr_t v) { return v % 16 == 0; };
    if (mem.is_image() || bytes == 0 || slice == 0 || !aligned(slice) || !aligned(offset) ||
        !aligned(reinterpret_cast<std::uintptr_t>(host)) ||
        (bytes + slice - 1) / slice > StreamControl::kMaxSlices) {
      return nullptr;
    }
    // Looked up before the context scope: a first use compiles it.
    const auto& k = static_cast<const CuKernel&>(kernel(program("staging.kernel"), "stage_in", {}));
    std::unique_lock lock(control_->mutex);
    ContextScope scope(*ctx_);
    control_->ready();
    CUdeviceptr from = 0;
    check(drv().cuMemHostGetDevicePointer(&from, host, 0),
          "mapping the staging ring into '" + info().name + "'");
    return std::make_unique<CuStreamedPush>(
        ctx_, events_, *control_, std::move(lock),
        CuStreamedPush::Args{k.get(), native(q), from, native(mem) + offset, bytes, slice});
  }

  // ---- peer copies
  std::shared_ptr<EventImpl> do_copy_peer(const Memory& src, std::size_t src_offset, DeviceImpl& to,
                                          Memory& dst, std::size_t dst_offset,
                                          std::size_t bytes) override {
    auto* peer = dynamic_cast<CudaDevice*>(&to);
    if (!peer || peer == this || !peer_access(*peer)) return nullptr;
    ContextScope scope(*ctx_);
    const std::string what = "copying " + human(bytes) + " from '" + info().name + "' to '" +
                             peer->info().name + "' (peer to peer)";
    check(drv().cuMemcpyPeerAsync(native(dst) + dst_offset, peer->ctx_->get(),
                                  native(src) + src_offset, ctx_->get(), bytes, stream()),
          what);
    return record(stream(), what);
  }

 protected:
  class CuProgram final : public Program {
   public:
    CuProgram(std::shared_ptr<const Context> ctx, cuda::Module module, std::vector<char> bin,
              bool is_ptx)
        : binary_(std::move(bin)), ptx_(is_ptx), ctx_(std::move(ctx)), module_(std::move(module)) {}
    ~CuProgram() override {
      ContextScope scope(*ctx_, std::nothrow);
      module_.reset();
    }

    std::unique_ptr<Kernel> create_kernel(std::string_view name) override {
      const std::string n(name);
      const cuda::Driver& d = ctx_->driver();
      ContextScope scope(*ctx_);
      CUfunction f = nullptr;
      const CUresult r = d.cuModuleGetFunction(&f, module_.get(), n.c_str());
      if (r == CUDA_ERROR_NOT_FOUND) {
        throw DeviceError(
            "the CUDA program has no kernel named '" + n +
                "' (kernels must be GPIX_KERNEL, i.e. extern \"C\", to keep their name)",
            cuda::error_name(r));
      }
      check(r, "looking up kernel '" + n + "'");
      int max_threads = 0;
      check(d.cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f),
            "querying kernel '" + n + "'");
      return std::make_unique<CuKernel>(f, n, max_threads);
    }

    // The loaded image (cubin, or NUL-terminated PTX) behind a tag saying which, for the disk
    // cache; load() reads it back.
    std::vector<char> binary() const override {
      std::vector<char> out(kBinaryHeader + binary_.size(), '\0');
      std::memcpy(out.data(), kBinaryMagic, sizeof kBinaryMagic);
      out[sizeof kBinaryMagic] = ptx_ ? 'P' : 'C';
      if (!binary_.empty()) std::memcpy(out.data() + kBinaryHeader, binary_.data(), binary_.size());
      return out;
    }

   private:
    std::vector<char> binary_;
    bool ptx_;
    std::shared_ptr<const Context> ctx_;
    cuda::Module module_;
  };

  std::unique_ptr<Program> load(const std::vector<char>& bin) override {
    if (bin.size() <= kBinaryHeader ||
        std::memcmp(bin.data(), kBinaryMagic, sizeof kBinaryMagic) != 0) {
      return nullptr;
    }
    const char kind = bin[sizeof kBinaryMagic];
    if (kind != 'P' && kind != 'C') return nullptr;
    // A fresh vector: the image starts aligned, and PTX must end with a NUL.
    std::vector<char> image(bin.begin() + static_cast<std::ptrdiff_t>(kBinaryHeader), bin.end());
    if (kind == 'P' && image.back() != '\0') return nullptr;
    ContextScope scope(*ctx_);
    CUmodule m = nullptr;
    const CUresult r = drv().cuModuleLoadData(&m, image.data());
    if (r != CUDA_SUCCESS && is_load_failure(r)) return nullptr;  // rebuilt from source
    check(r, "loading a cached program on '" + info().name + "'");
    return std::make_unique<CuProgram>(ctx_, cuda::Module(m), std::move(image), kind == 'P');
  }

  std::unique_ptr<Program> build(const ProgramSource& src, const Defines& defines) override {
    bool ptx = target_.ptx;
    std::vector<char> bin = ptx ? nvrtc_.compile_ptx(src, defines, target_.arch)
                                : nvrtc_.compile(src, defines, target_.arch);
    ContextScope scope(*ctx_);
    CUmodule m = nullptr;
    CUresult r = drv().cuModuleLoadData(&m, bin.data());
    std::string first_failure;
    if (r != CUDA_SUCCESS && !ptx && is_load_failure(r)) {
      // A cubin the driver cannot load (an NVRTC newer than the driver): PTX may still work.
      first_failure = "the sm_" + std::to_string(target_.arch) + " cubin failed with " +
                      cuda::error_name(r) + "; ";
      bin = nvrtc_.compile_ptx(src, defines, target_.arch);
      ptx = true;
      r = drv().cuModuleLoadData(&m, bin.data());
    }
    if (r != CUDA_SUCCESS && !is_load_failure(r)) {
      check(r, "loading " + src.name + " on '" + info().name + "'");  // e.g. out of memory
    }
    if (r != CUDA_SUCCESS) {
      const std::string name = cuda::error_name(r);
      std::string msg = "CUDA could not load " + src.name + " on '" + info().name +
                        "': " + first_failure + (ptx ? "the PTX" : "the cubin") + " failed with " +
                        name;
      msg += " (the driver's CUDA " + cuda::version_text(drv().version) +
             " cannot load what NVRTC " + nvrtc_.version() +
             " produced; update the NVIDIA driver, or point GPIX_NVRTC_PATH to an NVRTC no "
             "newer than the driver)";
      throw CompileError(msg, {}, name);
    }
    return std::make_unique<CuProgram>(ctx_, cuda::Module(m), std::move(bin), ptx);
  }

 private:
  struct Mapped {
    std::shared_ptr<std::byte> block;
    const Memory* memory = nullptr;
    std::size_t offset = 0, bytes = 0;
    MapAccess access = MapAccess::read;
  };

  const cuda::Driver& drv() const noexcept { return ctx_->driver(); }
  CUstream stream() const noexcept { return default_.get(); }

  void sync(const std::string& what) { check(drv().cuStreamSynchronize(stream()), what); }

  static std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
  }
  static CUdeviceptr address(const void* p) {
    return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p));
  }
  static Pitched dense(const Extent& e) { return Pitched{{0, 0, 0}, e[0], e[0] * e[1]}; }

  [[noreturn]] void throw_alloc(CUresult r, std::size_t bytes, const std::string& what) {
    std::size_t free = 0, total = 0;
    std::string mem;
    if (drv().cuMemGetInfo(&free, &total) == CUDA_SUCCESS) {
      mem = human(free) + " of " + human(total) + " free";
    } else {
      mem = "total memory " + human(info().global_memory);
    }
    const std::string name = cuda::error_name(r);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      throw OutOfMemory("cannot allocate " + human(bytes) + what + " on '" + info().name +
                            "': " + name + " (" + mem +
                            "); free arrays, use smaller images or a device with more memory",
                        bytes, name);
    }
    check(r, "allocating " + human(bytes) + what + " on '" + info().name + "' (" + mem + ")");
    throw DeviceError("unreachable", name);
  }

  // A plain event from the device's pool (no timing). Needs the context current.
  cuda::Event new_event(const What& what) { return events_->take(what); }

  // An event recorded on st now. Needs the context current.
  std::shared_ptr<EventImpl> record(CUstream st, const What& what) {
    cuda::Event e = new_event(what);
    check_what(drv().cuEventRecord(e.get(), st), what, " (recording an event)");
    return std::make_shared<CuEvent>(ctx_, std::move(e), events_);
  }

  // Makes st wait for every event (all of this device: core waits on the host for others).
  void wait_for(CUstream st, Waits waits, const What& what) {
    for (EventImpl* w : waits) {
      check_what(drv().cuStreamWaitEvent(st, static_cast<CuEvent*>(w)->get(), 0), what,
                 " (waiting for an event)");
    }
  }

  // The driver copies pageable host memory synchronously after the stream drains; while a
  // user event is pending, the stream may never drain on its own (the thread that would
  // complete it is the one that would block), so pageable memory then goes through a pinned
  // block instead. Page-locked memory that gpix did not allocate is bounced too (a copy more,
  // only while a user event is pending).
  bool must_bounce(const void* host) {
    return flags_->pending.load() != 0 && !pinned_registry().contains(host);
  }

  Side side(const Memory& m, const Pitched& p) const {
    if (m.is_image()) {
      return Side{CU_MEMORYTYPE_ARRAY, nullptr, 0, static_cast<const CuImage&>(m).get(), p};
    }
    return Side{CU_MEMORYTYPE_DEVICE, nullptr, native(m), nullptr, p};
  }

  // One box between two sides, on st. Buffers and host memory have their origin folded into
  // the address; arrays take it as coordinates (x in bytes, as Pitched says).
  void copy3d(CUstream st, const Side& s, const Side& d, const Extent& e, const What& what) {
    const bool arrays = s.type == CU_MEMORYTYPE_ARRAY || d.type == CU_MEMORYTYPE_ARRAY;
    if (!arrays && is_dense(s.p, e) && is_dense(d.p, e)) {
      const std::size_t n = e[0] * e[1] * e[2];
      const std::size_t so = s.p.offset(0, 0, 0), dof = d.p.offset(0, 0, 0);
      CUresult r;
      if (s.type == CU_MEMORYTYPE_HOST) {
        r = drv().cuMemcpyHtoDAsync(d.device + dof, s.host + so, n, st);
      } else if (d.type == CU_MEMORYTYPE_HOST) {
        r = drv().cuMemcpyDtoHAsync(const_cast<std::byte*>(d.host) + dof, s.device + so, n, st);
      } else {
        r = drv().cuMemcpyDtoDAsync(d.device + dof, s.device + so, n, st);
      }
      check_what(r, what);
      return;
    }
    // Rows per slice of a pitched side; slices that are not a whole number of rows apart are
    // copied one at a time.
    auto pitch = [&](const Side& x) {
      return e[1] == 1 && x.p.row_pitch < e[0] ? e[0] : x.p.row_pitch;
    };
    auto whole_rows = [&](const Side& x) {
      if (x.type == CU_MEMORYTYPE_ARRAY || e[2] == 1) return true;
      const std::size_t rp = pitch(x);
      return rp > 0 && x.p.slice_pitch % rp == 0 && x.p.slice_pitch / rp >= e[1];
    };
    const bool one_call = whole_rows(s) && whole_rows(d);
    const std::size_t slices = one_call ? 1 : e[2];
    for (std::size_t z = 0; z < slices; ++z) {
      CUDA_MEMCPY3D m{};
      const std::size_t depth = one_call ? e[2] : 1;
      auto fill_side = [&](const Side& x, bool src) {
        std::size_t xb = 0, y = 0, zz = 0, height = 0, rp = 0;
        CUdeviceptr dev = 0;
        const void* host = nullptr;
        CUarray arr = nullptr;
        if (x.type == CU_MEMORYTYPE_ARRAY) {
          xb = x.p.origin[0];
          y = x.p.origin[1];
          zz = x.p.origin[2] + z;
          arr = x.array;
        } else {
          rp = pitch(x);
          height = depth == 1 ? e[1] : x.p.slice_pitch / rp;
          const std::size_t off = x.p.offset(0, 0, z);
          if (x.type == CU_MEMORYTYPE_HOST) {
            host = x.host + off;
          } else {
            dev = x.device + off;
          }
        }
        if (src) {
          m.srcXInBytes = xb;
          m.srcY = y;
          m.srcZ = zz;
          m.srcMemoryType = x.type;
          m.srcHost = host;
          m.srcDevice = dev;
          m.srcArray = arr;
          m.srcPitch = rp;
          m.srcHeight = height;
        } else {
          m.dstXInBytes = xb;
          m.dstY = y;
          m.dstZ = zz;
          m.dstMemoryType = x.type;
          m.dstHost = const_cast<void*>(host);
          m.dstDevice = dev;
          m.dstArray = arr;
          m.dstPitch = rp;
          m.dstHeight = height;
        }
      };
      fill_side(s, true);
      fill_side(d, false);
      m.WidthInBytes = e[0];
      m.Height = e[1];
      m.Depth = depth;
      check_what(drv().cuMemcpy3DAsync(&m, st), what);
    }
  }

  // The 8-byte fill kernel where a fill needs one (the driver has no 8-byte memset), looked
  // up before any context scope: a first use compiles it.
  const Kernel* fill64_kernel(std::size_t bytes, std::size_t pattern_bytes) {
    return pattern_bytes == 8 && bytes ? &kernel(program("fill.kernel"), "fill_u64", {}) : nullptr;
  }

  void enqueue_fill(CUstream st, Memory& dst, std::size_t offset, std::size_t bytes,
                    const void* pattern, std::size_t pattern_bytes, const Kernel* fill64,
                    const std::string& what) {
    const CUdeviceptr p = native(dst) + offset;
    const std::size_t n = bytes / pattern_bytes;
    switch (pattern_bytes) {
      case 1: {
        unsigned char v;
        std::memcpy(&v, pattern, 1);
        check(drv().cuMemsetD8Async(p, v, n, st), what);
        break;
      }
      case 2: {
        unsigned short v;
        std::memcpy(&v, pattern, 2);
        check(drv().cuMemsetD16Async(p, v, n, st), what);
        break;
      }
      case 4: {
        unsigned int v;
        std::memcpy(&v, pattern, 4);
        check(drv().cuMemsetD32Async(p, v, n, st), what);
        break;
      }
      default: {
        // The driver has no 8-byte memset: a grid-stride kernel writes the pattern.
        std::uint64_t v;
        std::memcpy(&v, pattern, 8);
        std::uint64_t count = n;
        CUdeviceptr ptr = p;
        void* params[] = {&ptr, &count, &v};
        const auto& k = static_cast<const CuKernel&>(*fill64);
        const unsigned block = static_cast<unsigned>(std::min(256, k.max_threads()));
        const std::uint64_t max_grid = std::max<std::uint64_t>(info().compute_units, 1) * 32;
        const auto grid =
            static_cast<unsigned>(std::min<std::uint64_t>((n + block - 1) / block, max_grid));
        check(drv().cuLaunchKernel(k.get(), grid, 1, 1, block, 1, 1, 0, st, params, nullptr),
              what + " (kernel fill_u64)");
        break;
      }
    }
  }

  // Needs the context current.
  void enqueue_launch(CUstream st, const Kernel& k, const Launch& l,
                      std::span<const KernelArg> args) {
    const auto& kern = static_cast<const CuKernel&>(k);
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::size_t threads = 1;
    for (int d = 0; d < l.dims && d < 3; ++d) {
      const auto i = static_cast<std::size_t>(d);
      // The front checked that global is a whole number of work-groups (DeviceImpl::launch).
      if (l.global[i] == 0) return;  // nothing to do
      const std::size_t groups = l.global[i] / l.local[i];
      const std::size_t max_groups = d == 0 ? 0x7fffffffu : 65535u;
      if (groups > max_groups) {
        throw InvalidArgument("kernel " + kern.name() + ": " + std::to_string(groups) +
                              " blocks on axis " + std::to_string(d) + " exceed CUDA's limit of " +
                              std::to_string(max_groups) + "; use larger work-groups");
      }
      grid[i] = static_cast<unsigned>(groups);
      block[i] = static_cast<unsigned>(l.local[i]);
      threads *= l.local[i];
    }
    if (threads > static_cast<std::size_t>(kern.max_threads())) {
      throw InvalidArgument("kernel " + kern.name() + ": a work-group of " +
                            std::to_string(threads) + " threads exceeds its limit of " +
                            std::to_string(kern.max_threads()) + " on '" + info().name + "'");
    }
    // cuLaunchKernel takes a pointer to each argument's value: the CUdeviceptr for memory,
    // the texture object for a sampled image, the scalar's own bytes otherwise. Both arrays
    // live until the call returns, which is all the driver needs (it copies the values).
    std::vector<std::uint64_t> handles(args.size());
    std::vector<void*> params(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (const Memory* m = args[i].memory) {
        if (args[i].sampled != m->is_image()) {
          throw InvalidArgument("kernel " + kern.name() + ": argument " + std::to_string(i) +
                                (m->is_image() ? " is an image without a sampler"
                                               : " is a buffer passed as a sampled image"));
        }
        static_assert(sizeof(CUtexObject) == sizeof(std::uint64_t) &&
                      sizeof(CUdeviceptr) == sizeof(std::uint64_t));
        handles[i] =
            m->is_image() ? static_cast<const CuImage&>(*m).texture(args[i].sampler) : native(*m);
        params[i] = &handles[i];
      } else {
        params[i] = const_cast<std::byte*>(args[i].value.data());
      }
    }
    check(drv().cuLaunchKernel(kern.get(), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                               0, st, params.empty() ? nullptr : params.data(), nullptr),
          "launching kernel " + kern.name() + " on '" + info().name + "' (grid " +
              std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
              std::to_string(grid[2]) + ", block " + std::to_string(block[0]) + "x" +
              std::to_string(block[1]) + "x" + std::to_string(block[2]) + ")");
  }

  // Whether cuMemcpyPeerAsync goes straight to peer's memory; peer access is enabled on first
  // use. Otherwise (no NVLink/PCIe P2P between them) callers stage through host memory.
  bool peer_access(CudaDevice& peer) {
    std::lock_guard lock(peer_mutex_);
    auto it = peers_.find(&peer);
    if (it != peers_.end()) return it->second;
    bool ok = false;
    int can = 0;
    if (drv().cuDeviceCanAccessPeer(&can, ctx_->device(), peer.ctx_->device()) == CUDA_SUCCESS &&
        can) {
      ContextScope scope(*ctx_);
      const CUresult r = drv().cuCtxEnablePeerAccess(peer.ctx_->get(), 0);
      ok = r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    }
    peers_[&peer] = ok;
    return ok;
  }

  std::shared_ptr<const Context> ctx_;
  CuQueue default_;
  const Nvrtc& nvrtc_;
  Target target_;
  PciAddress pci_;
  int ordinal_;
  std::shared_ptr<UserFlags> flags_;
  std::shared_ptr<PinnedCache> pinned_;
  std::shared_ptr<EventPool> events_;
  std::unique_ptr<StreamControl> control_;
  std::mutex maps_mutex_;
  std::map<void*, Mapped> maps_;
  std::mutex peer_mutex_;
  std::map<const CudaDevice*, bool> peers_;
};

// The NVIDIA kernel module's version ("580.159.04"), which is what users know as the driver
// version; empty where /proc does not say.
std::string kernel_module_version() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!f || !std::getline(f, line)) return {};
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  <date>" (or "Open Kernel
  // Module for x86_64  580...."): the first token after "Module" that starts with a digit.
  const auto pos = line.find("Module");
  if (pos == std::string::npos) return {};
  std::size_t i = pos;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    const std::string tok = line.substr(i, j - i);
    if (!tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])) &&
        tok.find('.') != std::string::npos) {
      return tok;
    }
    i = j;
  }
  return {};
}

int attribute(const cuda::Driver& d, CUdevice dev, CUdevice_attribute a, const char* what) {
  int v = 0;
  check(d.cuDeviceGetAttribute(&v, a, dev), std::string("querying ") + what);
  return v;
}

// Cubin for the device's own architecture where NVRTC knows it; otherwise PTX for the newest
// architecture NVRTC has that the device can run (the driver compiles it the rest of the way).
bool choose_target(const Nvrtc& nvrtc, int arch, Target& t, std::string& why) {
  const auto& archs = nvrtc.supported_archs();
  t.arch = arch;
  t.ptx = false;
  if (archs.empty() || std::find(archs.begin(), archs.end(), arch) != archs.end()) return true;
  int best = 0;
  for (int a : archs) {
    if (a <= arch) best = std::max(best, a);
  }
  if (best == 0) {
    why = "compute capability " + std::to_string(arch / 10) + "." + std::to_string(arch % 10) +
          " is older than NVRTC " + nvrtc.version() + " supports (sm_" +
          std::to_string(archs.front()) + " and newer); use an older CUDA toolkit's NVRTC";
    return false;
  }
  t.arch = best;
  t.ptx = true;
  return true;
}

std::shared_ptr<DeviceImpl> make_device(const cuda::Driver& d, const Nvrtc& nvrtc, int ordinal,
                                        const std::string& module_version, std::string& why) {
  CUdevice dev = 0;
  check(d.cuDeviceGet(&dev, ordinal), "getting CUDA device " + std::to_string(ordinal));
  char name[256] = {};
  check(d.cuDeviceGetName(name, sizeof name - 1, dev), "querying the device name");
  DeviceInfo info;
  info.backend = Backend::cuda;
  info.name = trim(name);
  info.vendor = "NVIDIA";
  info.platform = "CUDA";
  info.type = DeviceType::gpu;
  info.compute_units = static_cast<unsigned>(
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "the multiprocessor count"));
  std::size_t total = 0;
  check(d.cuDeviceTotalMem(&total, dev), "querying the device memory");
  info.global_memory = total;
  info.max_allocation = total;  // CUDA has no separate single-allocation limit
  info.local_memory = static_cast<std::uint64_t>(attribute(
      d, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "the shared memory per block"));
  info.max_work_group = static_cast<std::size_t>(
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "the threads per block"));
  info.fp64 = true;
  info.images = true;
  // Managed memory stands in for OpenCL's shared virtual memory.
  info.svm = attribute(d, dev, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, "managed memory support") != 0;
  const int major =
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "the compute capability");
  const int minor =
      attribute(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "the compute capability");
  info.compute_capability = std::to_string(major) + "." + std::to_string(minor);
  info.api_version = "CUDA " + cuda::version_text(d.version);
  info.driver_version =
      module_version.empty() ? "CUDA " + cuda::version_text(d.version) : module_version;

  Target target;
  if (!choose_target(nvrtc, major * 10 + minor, target, why)) return nullptr;

  auto ctx = std::make_shared<const Context>(d, dev);
  ContextScope scope(*ctx);
  CUstream s = nullptr;
  // Non-blocking: the stream does not synchronise with the legacy default stream, which
  // other libraries in the process may use.
  check(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "creating a stream");
  cuda::Stream stream(s);
  auto device = std::make_shared<CudaDevice>(std::move(info), std::move(ctx), std::move(stream),
                                             nvrtc, target, ordinal);
  // The card's PCI address, so that NVIDIA's OpenCL device of the same card can be matched
  // (card_memory.h). Optional: a driver that does not answer leaves it unknown.
  int bus = -1, slot = -1, domain = -1;
  if (d.cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev) == CUDA_SUCCESS &&
      d.cuDeviceGetAttribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev) == CUDA_SUCCESS) {
    PciAddress a;
    a.bus = bus;
    a.device = slot;
    if (d.cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev) == CUDA_SUCCESS)
      a.domain = domain;
    device->set_pci(a);
  }
  return device;
}

}  // namespace

BackendDevices enumerate_cuda() {
  BackendDevices out;
  out.status.backend = Backend::cuda;
  std::string why;
  const cuda::Driver* d = cuda::driver(&why);
  if (!d) {
    out.status.detail = why;
    return out;
  }
  const std::string version = cuda::version_text(d->version);
  const Nvrtc* nvrtc = Nvrtc::get(&why);
  if (!nvrtc) {
    out.status.detail = "the CUDA " + version + " driver loaded, but " + why;
    return out;
  }
  int count = 0;
  if (CUresult r = d->cuDeviceGetCount(&count); r != CUDA_SUCCESS || count == 0) {
    out.status.detail = "the CUDA " + version + " driver reports no device" +
                        (r != CUDA_SUCCESS ? " (" + cuda::error_name(r) + ")" : std::string());
    return out;
  }
  const std::string module_version = kernel_module_version();
  std::vector<std::string> problems;
  for (int i = 0; i < count; ++i) {
    std::string reason;
    try {
      if (auto dev = make_device(*d, *nvrtc, i, module_version, reason)) {
        out.devices.push_back(std::move(dev));
      } else {
        problems.push_back("device " + std::to_string(i) + ": " + reason);
      }
    } catch (const Error& e) {
      problems.push_back("device " + std::to_string(i) + ": " + e.what());
    }
  }
  out.status.devices = out.devices.size();
  out.status.available = !out.devices.empty();
  out.status.detail = "CUDA " + version + " driver" +
                      (module_version.empty() ? std::string() : " " + module_version) + ", NVRTC " +
                      nvrtc->version() + ", " + std::to_string(out.devices.size()) +
                      " usable device(s)";
  for (const auto& p : problems) out.status.detail += "; " + p;
  return out;
}

}  // namespace gpix::detail
