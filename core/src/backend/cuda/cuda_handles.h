#pragma once
// Move-only owners of the CUDA driver's handles, and the shared primary context that every
// allocation, module and stream of one device keeps alive.
#include <memory>
#include <new>

#include "backend/cuda/driver.h"
#include "backend/unique_handle.h"

namespace gpix::detail::cuda {

// A retained primary context. CUdevice 0 is a valid device, so the context pointer (never
// null once retained) is what makes the pair non-empty for UniqueHandle.
struct PrimaryContext {
  CUdevice device = 0;
  CUcontext context = nullptr;
  friend bool operator==(const PrimaryContext&, const PrimaryContext&) = default;
};

// Release functions: they run only for handles that exist, so the driver is loaded. Errors
// are ignored (a destructor cannot report them, and at exit the driver may be shut down).
inline void release_primary(PrimaryContext p) noexcept {
  if (const Driver* d = driver()) d->cuDevicePrimaryCtxRelease(p.device);
}
inline void release_stream(CUstream s) noexcept {
  if (const Driver* d = driver()) d->cuStreamDestroy(s);
}
inline void release_event(CUevent e) noexcept {
  if (const Driver* d = driver()) d->cuEventDestroy(e);
}
inline void release_module(CUmodule m) noexcept {
  if (const Driver* d = driver()) d->cuModuleUnload(m);
}
inline void release_memory(CUdeviceptr p) noexcept {
  if (const Driver* d = driver()) d->cuMemFree(p);
}

inline void release_array(CUarray a) noexcept {
  if (const Driver* d = driver()) d->cuArrayDestroy(a);
}
inline void release_texture(CUtexObject t) noexcept {
  if (const Driver* d = driver()) d->cuTexObjectDestroy(t);
}
inline void release_host(void* p) noexcept {
  if (const Driver* d = driver()) d->cuMemFreeHost(p);
}

using PrimaryContextRef = UniqueHandle<PrimaryContext, &release_primary>;
using Stream = UniqueHandle<CUstream, &release_stream>;
using Event = UniqueHandle<CUevent, &release_event>;
using Module = UniqueHandle<CUmodule, &release_module>;
using DevicePtr = UniqueHandle<CUdeviceptr, &release_memory>;
using Array = UniqueHandle<CUarray, &release_array>;
using Texture = UniqueHandle<CUtexObject, &release_texture>;
using HostPtr = UniqueHandle<void*, &release_host>;  // from cuMemHostAlloc

// One device's primary context, shared (std::shared_ptr) by the device and everything it
// allocates, so the context is released only after the last allocation and module are gone,
// whatever the order of destruction.
class Context {
 public:
  Context(const Driver& drv, CUdevice dev) : drv_(drv) {
    CUcontext ctx = nullptr;
    check(drv.cuDevicePrimaryCtxRetain(&ctx, dev),
          "retaining the primary context of CUDA device " + std::to_string(dev));
    retain_.reset(PrimaryContext{dev, ctx});
  }
  const Driver& driver() const noexcept { return drv_; }
  CUcontext get() const noexcept { return retain_.get().context; }
  CUdevice device() const noexcept { return retain_.get().device; }

 private:
  const Driver& drv_;
  PrimaryContextRef retain_;
};

// Makes a context current on this thread for one scope and restores the previous one. gpix
// calls may come from any thread, so every driver call runs inside one.
class ContextScope {
 public:
  explicit ContextScope(const Context& c) : drv_(c.driver()) {
    check(drv_.cuCtxPushCurrent(c.get()), "making the CUDA context current");
    pushed_ = true;
  }
  // For destructors: never throws; a failed push leaves the current context as it was.
  ContextScope(const Context& c, std::nothrow_t) noexcept : drv_(c.driver()) {
    pushed_ = drv_.cuCtxPushCurrent(c.get()) == CUDA_SUCCESS;
  }
  ~ContextScope() {
    if (pushed_) {
      CUcontext popped = nullptr;
      drv_.cuCtxPopCurrent(&popped);
    }
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  const Driver& drv_;
  bool pushed_ = false;
};

}  // namespace gpix::detail::cuda
