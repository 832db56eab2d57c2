#pragma once
// CUDA memory: device buffers (owned or adopted), images as CUDA arrays with their texture
// objects, and page-locked host memory (users' blocks and the bounce/map cache).
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

inline CUdeviceptr native(const Memory& m) {
  if (m.is_image()) {
    throw InvalidArgument(
        "an image was passed where the CUDA backend needs a buffer (kernels read images "
        "through a sampler; copy the image to a buffer first)");
  }
  return static_cast<const CuMemory&>(m).get();
}

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
// Never destroyed: host memory may be released by other static objects at exit.
PinnedRegistry& pinned_registry();

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

inline CUarray_format array_format(DType t) {
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

}  // namespace gpix::detail::cuda
