// CudaDevice: kernel launches and fills (memsets, and a kernel for 8-byte patterns).
#include "backend/cuda/cuda_device.h"

#include <array>

#include "programs.h"

namespace gpix::detail::cuda {

void CudaDevice::do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
                         std::size_t pattern_bytes) {
  const KernelPtr fill64 = fill64_kernel(bytes, pattern_bytes);
  ContextScope scope(*ctx_);
  const auto what = [&] { return "filling " + human(bytes) + " on '" + info().name + "'"; };
  enqueue_fill(stream(), dst, offset, bytes, pattern, pattern_bytes, fill64.get(), what);
  sync(what);
}

void CudaDevice::do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) {
  ContextScope scope(*ctx_);
  enqueue_launch(stream(), k, l, args);
}

std::shared_ptr<EventImpl> CudaDevice::do_fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                                     std::size_t bytes, const void* pattern,
                                                     std::size_t pattern_bytes, Waits waits) {
  const KernelPtr fill64 = fill64_kernel(bytes, pattern_bytes);
  ContextScope scope(*ctx_);
  const auto what = [&] { return "filling " + human(bytes) + " on '" + info().name + "'"; };
  const CUstream st = native(q);
  wait_for(st, waits, what);
  if (bytes) enqueue_fill(st, dst, offset, bytes, pattern, pattern_bytes, fill64.get(), what);
  return record(st, what);
}

std::shared_ptr<EventImpl> CudaDevice::do_launch_async(QueueImpl& q, const Kernel& k,
                                                       const Launch& l,
                                                       std::span<const KernelArg> args,
                                                       Waits waits) {
  ContextScope scope(*ctx_);
  const CUstream st = native(q);
  const std::string what = "launching a kernel on '" + info().name + "'";
  wait_for(st, waits, what);
  enqueue_launch(st, k, l, args);
  return record(st, what);
}

DeviceImpl::KernelPtr CudaDevice::fill64_kernel(std::size_t bytes, std::size_t pattern_bytes) {
  return pattern_bytes == 8 && bytes ? kernel(program("fill.kernel"), "fill_u64", {}) : nullptr;
}

void CudaDevice::enqueue_fill(CUstream st, Memory& dst, std::size_t offset, std::size_t bytes,
                              const void* pattern, std::size_t pattern_bytes, const Kernel* fill64,
                              const What& what) {
  const CUdeviceptr p = native(dst) + offset;
  const std::size_t n = bytes / pattern_bytes;
  switch (pattern_bytes) {
    case 1: {
      unsigned char v;
      std::memcpy(&v, pattern, 1);
      check_what(drv().cuMemsetD8Async(p, v, n, st), what);
      break;
    }
    case 2: {
      unsigned short v;
      std::memcpy(&v, pattern, 2);
      check_what(drv().cuMemsetD16Async(p, v, n, st), what);
      break;
    }
    case 4: {
      unsigned int v;
      std::memcpy(&v, pattern, 4);
      check_what(drv().cuMemsetD32Async(p, v, n, st), what);
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
      check_what(drv().cuLaunchKernel(k.get(), grid, 1, 1, block, 1, 1, 0, st, params, nullptr),
                 what, " (kernel fill_u64)");
      break;
    }
  }
}

void CudaDevice::enqueue_launch(CUstream st, const Kernel& k, const Launch& l,
                                std::span<const KernelArg> args) {
  const auto& kern = static_cast<const CuKernel&>(k);
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::size_t threads = 1;
  for (int d = 0; d < l.dims && d < 3; ++d) {
    const auto i = static_cast<std::size_t>(d);
    // The front checked that global is a whole number of work-groups, none of them empty,
    // within max_groups() (DeviceImpl::check_launch).
    grid[i] = static_cast<unsigned>(l.global[i] / l.local[i]);
    block[i] = static_cast<unsigned>(l.local[i]);
    threads *= l.local[i];
  }
  if (threads > static_cast<std::size_t>(kern.max_threads())) {
    throw InvalidArgument("kernel " + kern.name() + ": a work-group of " + std::to_string(threads) +
                          " threads exceeds its limit of " + std::to_string(kern.max_threads()) +
                          " on '" + info().name + "'");
  }
  // cuLaunchKernel takes a pointer to each argument's value: the CUdeviceptr for memory,
  // the texture object for a sampled image, the scalar's own bytes otherwise. Both arrays
  // live until the call returns, which is all the driver needs (it copies the values).
  // On the stack for the argument counts gpix's kernels use (a vector pair was two host
  // allocations per launch).
  constexpr std::size_t kArgs = 32;
  std::array<std::uint64_t, kArgs> handles_small{};
  std::array<void*, kArgs> params_small{};
  std::vector<std::uint64_t> handles_big;
  std::vector<void*> params_big;
  std::uint64_t* handles = handles_small.data();
  void** params = params_small.data();
  if (args.size() > kArgs) {
    handles_big.resize(args.size());
    params_big.resize(args.size());
    handles = handles_big.data();
    params = params_big.data();
  }
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
  // The message only on failure: built eagerly it cost a dozen host allocations a launch.
  check_what(drv().cuLaunchKernel(kern.get(), grid[0], grid[1], grid[2], block[0], block[1],
                                  block[2], 0, st, args.empty() ? nullptr : params, nullptr),
             [&] {
               return "launching kernel " + kern.name() + " on '" + info().name + "' (grid " +
                      std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
                      std::to_string(grid[2]) + ", block " + std::to_string(block[0]) + "x" +
                      std::to_string(block[1]) + "x" + std::to_string(block[2]) + ")";
             });
}

}  // namespace gpix::detail::cuda
