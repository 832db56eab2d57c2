#pragma once
// CUDA programs: NVRTC output loaded as a module, its kernels, the disk cache's binary format
// (a tag saying cubin or PTX, then the image) and the choice of target architecture.
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
#include "backend/cuda/nvrtc.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cuda {

class CuKernel final : public Kernel {
 public:
  CuKernel(CUfunction f, std::string name, int max_threads)
      : Kernel(std::move(name)), f_(f), max_threads_(max_threads) {}
  CUfunction get() const noexcept { return f_; }
  // The most threads per block this kernel can launch with (registers may limit it below
  // the device's limit).
  int max_threads() const noexcept { return max_threads_; }

 private:
  CUfunction f_;  // owned by its module, which the program cache keeps
  int max_threads_;
};

inline bool is_load_failure(CUresult r) {
  return r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_NO_BINARY_FOR_GPU ||
         r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
         r == CUDA_ERROR_INVALID_SOURCE;
}

// How programs are compiled for one device.
struct Target {
  int arch = 0;      // e.g. 90 for compute capability 9.0
  bool ptx = false;  // PTX for compute_<arch> (the driver finishes it) instead of a cubin
};

// The program binary handed to the disk cache: a tag saying cubin or PTX, then the image.
constexpr char kBinaryMagic[8] = {'G', 'P', 'I', 'X', 'C', 'U', 'D', 'A'};
constexpr std::size_t kBinaryHeader = 16;  // magic, kind byte, padding: keeps the image aligned

// An image (cubin, or NUL-terminated PTX) behind that header: what the disk cache stores and
// the prebuilt bundle holds, and what CudaDevice::load() reads back.
inline std::vector<char> tagged_binary(const std::vector<char>& image, bool ptx) {
  std::vector<char> out(kBinaryHeader + image.size(), '\0');
  std::memcpy(out.data(), kBinaryMagic, sizeof kBinaryMagic);
  out[sizeof kBinaryMagic] = ptx ? 'P' : 'C';
  if (!image.empty()) std::memcpy(out.data() + kBinaryHeader, image.data(), image.size());
  return out;
}

// A loaded module; hands out its kernels and, for the disk cache, its image.
class CuProgram final : public DeviceImpl::Program {
 public:
  CuProgram(std::shared_ptr<const Context> ctx, cuda::Module module, std::vector<char> bin,
            bool is_ptx)
      : binary_(std::move(bin)), ptx_(is_ptx), ctx_(std::move(ctx)), module_(std::move(module)) {}
  ~CuProgram() override {
    ContextScope scope(*ctx_, std::nothrow);
    // The program cache drops programs while the device works on (eviction, clear), and a
    // module must outlive every launch of its kernels (unloading one in use is undefined
    // behaviour, cuda.h). Launches are queued asynchronously, so wait for the context's
    // work first; an error here (a dead context, a driver shut down at exit) leaves nothing
    // to wait for.
    (void)ctx_->driver().cuCtxSynchronize();
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
  std::vector<char> binary() const override { return tagged_binary(binary_, ptx_); }

 private:
  std::vector<char> binary_;
  bool ptx_;
  std::shared_ptr<const Context> ctx_;
  cuda::Module module_;
};

// Cubin for the device's own architecture where NVRTC knows it; otherwise PTX for the newest
// architecture NVRTC has that the device can run (the driver compiles it the rest of the way).
bool choose_target(const Nvrtc& nvrtc, int arch, Target& t, std::string& why);

// The prebuilt bundle's targets a device of architecture arch (e.g. 86) can load, best first:
// its own cubin, cubins of older minors of its major, then the newest PTX at or below it
// among those present.
std::vector<std::string> prebuilt_targets(int arch, const std::vector<std::string>& present);

}  // namespace gpix::detail::cuda
