// The CUDA backend: the driver API and NVRTC, both loaded at run time. One primary context
// and one non-blocking stream per device; every call makes the context current for its scope,
// so calls may come from any thread.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "gpix/error.h"
#include "programs.h"
#include "util.h"

namespace gpix::detail {
namespace {

using cuda::check;
using cuda::Context;
using cuda::ContextScope;

class CuMemory final : public Memory {
 public:
  CuMemory(std::size_t bytes, std::shared_ptr<const Context> ctx, cuda::DevicePtr ptr)
      : Memory(bytes), ctx_(std::move(ctx)), ptr_(std::move(ptr)) {}
  ~CuMemory() override {
    ContextScope scope(*ctx_, std::nothrow);
    ptr_.reset();
  }
  CUdeviceptr get() const noexcept { return ptr_.get(); }

 private:
  std::shared_ptr<const Context> ctx_;
  cuda::DevicePtr ptr_;
};

CUdeviceptr native(const Memory& m) {
  return static_cast<const CuMemory&>(m).get();
}

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

class CudaDevice final : public DeviceImpl {
 public:
  using DeviceImpl::finish;  // the per-queue overload keeps its default until implemented
  CudaDevice(DeviceInfo info, std::shared_ptr<const Context> ctx, cuda::Stream stream,
             const Nvrtc& nvrtc, Target target)
      : DeviceImpl(std::move(info)),
        ctx_(std::move(ctx)),
        stream_(std::move(stream)),
        nvrtc_(nvrtc),
        target_(target) {}

  ~CudaDevice() override {
    ContextScope scope(*ctx_, std::nothrow);
    if (stream_) drv().cuStreamSynchronize(stream_.get());
    stream_.reset();
  }

  std::unique_ptr<Memory> allocate(std::size_t bytes) override {
    if (bytes > info().max_allocation) {
      throw OutOfMemory("cannot allocate " + human(bytes) + " on '" + info().name +
                            "': its largest single allocation is " + human(info().max_allocation) +
                            " (total memory " + human(info().global_memory) +
                            "); use a smaller image or a device with more memory",
                        bytes);
    }
    ContextScope scope(*ctx_);
    CUdeviceptr p = 0;
    // cuMemAlloc rejects 0 bytes; CUDA memory is backed at allocation, so no touch is needed.
    const CUresult r = drv().cuMemAlloc(&p, std::max<std::size_t>(bytes, 1));
    if (r != CUDA_SUCCESS) {
      std::size_t free = 0, total = 0;
      std::string mem;
      if (drv().cuMemGetInfo(&free, &total) == CUDA_SUCCESS) {
        mem = human(free) + " of " + human(total) + " free";
      } else {
        mem = "total memory " + human(info().global_memory);
      }
      const std::string name = cuda::error_name(r);
      if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        throw OutOfMemory("cannot allocate " + human(bytes) + " on '" + info().name + "': " + name +
                              " (" + mem +
                              "); free arrays, use smaller images or a device with more memory",
                          bytes, name);
      }
      check(r, "allocating " + human(bytes) + " on '" + info().name + "' (" + mem + ")");
    }
    return std::make_unique<CuMemory>(bytes, ctx_, cuda::DevicePtr(p));
  }

  void write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) override {
    check_range(dst, offset, bytes, "write");
    if (bytes == 0) return;
    ContextScope scope(*ctx_);
    const std::string what = "writing " + human(bytes) + " to '" + info().name + "'";
    check(drv().cuMemcpyHtoDAsync(native(dst) + offset, src, bytes, stream()), what);
    sync(what);
  }

  void read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) override {
    check_range(src, offset, bytes, "read");
    if (bytes == 0) return;
    ContextScope scope(*ctx_);
    const std::string what = "reading " + human(bytes) + " from '" + info().name + "'";
    check(drv().cuMemcpyDtoHAsync(dst, native(src) + offset, bytes, stream()), what);
    sync(what);
  }

  void copy(const Memory& src, std::size_t src_offset, Memory& dst, std::size_t dst_offset,
            std::size_t bytes) override {
    check_range(src, src_offset, bytes, "copy from");
    check_range(dst, dst_offset, bytes, "copy to");
    if (bytes == 0) return;
    ContextScope scope(*ctx_);
    const std::string what = "copying " + human(bytes) + " on '" + info().name + "'";
    check(drv().cuMemcpyDtoDAsync(native(dst) + dst_offset, native(src) + src_offset, bytes,
                                  stream()),
          what);
    sync(what);
  }

  void fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
            std::size_t pattern_bytes) override {
    check_range(dst, offset, bytes, "fill");
    if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8) {
      throw InvalidArgument("a fill pattern has 1, 2, 4 or 8 bytes, not " +
                            std::to_string(pattern_bytes));
    }
    if (offset % pattern_bytes != 0 || bytes % pattern_bytes != 0) {
      throw InvalidArgument("a fill of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " is not a whole number of " +
                            std::to_string(pattern_bytes) + "-byte patterns");
    }
    if (bytes == 0) return;
    // The fill kernel is looked up before the context scope: a first use compiles it.
    const Kernel* fill64 =
        pattern_bytes == 8 ? &kernel(program("fill.kernel"), "fill_u64", {}) : nullptr;
    ContextScope scope(*ctx_);
    const std::string what = "filling " + human(bytes) + " on '" + info().name + "'";
    const CUdeviceptr p = native(dst) + offset;
    const std::size_t n = bytes / pattern_bytes;
    switch (pattern_bytes) {
      case 1: {
        unsigned char v;
        std::memcpy(&v, pattern, 1);
        check(drv().cuMemsetD8Async(p, v, n, stream()), what);
        break;
      }
      case 2: {
        unsigned short v;
        std::memcpy(&v, pattern, 2);
        check(drv().cuMemsetD16Async(p, v, n, stream()), what);
        break;
      }
      case 4: {
        unsigned int v;
        std::memcpy(&v, pattern, 4);
        check(drv().cuMemsetD32Async(p, v, n, stream()), what);
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
        check(drv().cuLaunchKernel(k.get(), grid, 1, 1, block, 1, 1, 0, stream(), params, nullptr),
              what + " (kernel fill_u64)");
        break;
      }
    }
    sync(what);
  }

  void launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) override {
    const auto& kern = static_cast<const CuKernel&>(k);
    unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
    std::size_t threads = 1;
    for (int d = 0; d < l.dims && d < 3; ++d) {
      const auto i = static_cast<std::size_t>(d);
      if (l.local[i] == 0 || l.global[i] % l.local[i] != 0) {
        throw InvalidArgument("kernel " + kern.name() + ": the global size " +
                              std::to_string(l.global[i]) + " on axis " + std::to_string(d) +
                              " is not a multiple of the work-group size " +
                              std::to_string(l.local[i]));
      }
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
    // the scalar's own bytes otherwise. Both arrays live until the call returns, which is
    // all the driver needs (it copies the values at launch).
    std::vector<CUdeviceptr> ptrs(args.size());
    std::vector<void*> params(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (args[i].memory) {
        ptrs[i] = native(*args[i].memory);
        params[i] = &ptrs[i];
      } else {
        params[i] = const_cast<std::byte*>(args[i].value.data());
      }
    }
    ContextScope scope(*ctx_);
    check(drv().cuLaunchKernel(kern.get(), grid[0], grid[1], grid[2], block[0], block[1], block[2],
                               0, stream(), params.empty() ? nullptr : params.data(), nullptr),
          "launching kernel " + kern.name() + " on '" + info().name + "' (grid " +
              std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
              std::to_string(grid[2]) + ", block " + std::to_string(block[0]) + "x" +
              std::to_string(block[1]) + "x" + std::to_string(block[2]) + ")");
  }

  void finish() override {
    ContextScope scope(*ctx_);
    sync("waiting for '" + info().name + "'");
  }

 protected:
  class CuProgram final : public Program {
   public:
    CuProgram(std::shared_ptr<const Context> ctx, cuda::Module module, std::vector<char> bin,
              bool is_ptx)
        : binary(std::move(bin)), ptx(is_ptx), ctx_(std::move(ctx)), module_(std::move(module)) {}
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

    // The loaded image (cubin, or NUL-terminated PTX), kept so that a program cache can
    // store it and load it with cuModuleLoadData later.
    const std::vector<char> binary;
    const bool ptx;

   private:
    std::shared_ptr<const Context> ctx_;
    cuda::Module module_;
  };

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
  const cuda::Driver& drv() const noexcept { return ctx_->driver(); }
  CUstream stream() const noexcept { return stream_.get(); }

  void sync(const std::string& what) { check(drv().cuStreamSynchronize(stream()), what); }

  // Internal callers pass valid ranges; a wrong one would corrupt memory, so it is an error.
  void check_range(const Memory& m, std::size_t offset, std::size_t bytes, const char* op) const {
    if (offset > m.bytes() || bytes > m.bytes() - offset) {
      throw InvalidArgument(std::string(op) + " of " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " is outside an allocation of " +
                            std::to_string(m.bytes()) + " bytes on '" + info().name + "'");
    }
  }

  std::shared_ptr<const Context> ctx_;
  cuda::Stream stream_;
  const Nvrtc& nvrtc_;
  Target target_;
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
  return std::make_shared<CudaDevice>(std::move(info), std::move(ctx), std::move(stream), nvrtc,
                                      target);
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
