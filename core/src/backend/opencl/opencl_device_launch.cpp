// ClDevice: kernel launches and fills (and the nvidia-opencl-fill-4g fill kernel).
#include "backend/opencl/opencl_device.h"
#include "config.h"
#include "programs.h"

namespace gpix::detail::cl {

void ClDevice::do_fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
                       std::size_t pattern_bytes) {
  if (fill_by_kernel(offset, bytes)) {  // enqueue_kernel takes mutex_ itself
    fill_kernel(default_.get(), dst, offset, bytes, pattern, pattern_bytes, {}, nullptr);
    return;
  }
  std::lock_guard lock(mutex_);
  cl::check_lazy(clEnqueueFillBuffer(default_.get(), native(dst), pattern, pattern_bytes, offset,
                                     bytes, 0, nullptr, nullptr),
                 [&] { return "filling " + human(bytes) + " on '" + info().name + "'"; });
}

bool ClDevice::fill_by_kernel(std::size_t offset, std::size_t bytes) const {
  if (config().test_fill_kernel) return true;
  return nvidia_ && offset + bytes >= (std::size_t{1} << 32) &&
         !config().workaround_disabled("nvidia-opencl-fill-4g");
}

void ClDevice::fill_kernel(cl_command_queue q, Memory& dst, std::size_t offset, std::size_t bytes,
                           const void* pattern, std::size_t pattern_bytes,
                           const std::vector<cl_event>& waits, cl_event* e) {
  if (pattern_bytes > 8) {
    throw UnsupportedFeature("filling past 4 GB of a buffer on '" + info().name +
                             "' with a pattern of " + std::to_string(pattern_bytes) +
                             " bytes: NVIDIA's OpenCL fill is wrong there and gpix's own fill "
                             "takes patterns of up to 8 bytes (every gpix dtype)");
  }
  std::uint64_t p = 0;
  std::memcpy(&p, pattern, pattern_bytes);
  const KernelPtr k = kernel(program("fill.kernel"), "fill_pattern", {});
  Launch l;
  l.dims = 1;
  l.local = {256, 1, 1};
  l.global = {std::min<std::size_t>((bytes + 255) / 256, 65536) * 256, 1, 1};
  const std::array<KernelArg, 5> args = {
      KernelArg::mem(dst), KernelArg::scalar<std::uint64_t>(offset),
      KernelArg::scalar<std::uint64_t>(bytes), KernelArg::scalar<std::uint64_t>(p),
      KernelArg::scalar<std::uint32_t>(static_cast<std::uint32_t>(pattern_bytes))};
  enqueue_kernel(q, *k, l, args, waits, e);
}

void ClDevice::do_launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) {
  enqueue_kernel(default_.get(), k, l, args, {}, nullptr);
}

std::shared_ptr<EventImpl> ClDevice::do_fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                                   std::size_t bytes, const void* pattern,
                                                   std::size_t pattern_bytes, Waits waits) {
  const auto w = wait_list(waits);
  cl_event e = nullptr;
  if (fill_by_kernel(offset, bytes)) {
    fill_kernel(native(q), dst, offset, bytes, pattern, pattern_bytes, w, &e);
    return wrap(e);
  }
  cl::check_lazy(
      clEnqueueFillBuffer(native(q), native(dst), pattern, pattern_bytes, offset, bytes,
                          static_cast<cl_uint>(w.size()), w.empty() ? nullptr : w.data(), &e),
      [&] { return "filling " + human(bytes) + " on '" + info().name + "'"; });
  return wrap(e);
}

std::shared_ptr<EventImpl> ClDevice::do_launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                                     std::span<const KernelArg> args, Waits waits) {
  const auto w = wait_list(waits);
  cl_event e = nullptr;
  enqueue_kernel(native(q), k, l, args, w, &e);
  return wrap(e);
}

void ClDevice::enqueue_kernel(cl_command_queue q, const Kernel& k, const Launch& l,
                              std::span<const KernelArg> args, const std::vector<cl_event>& w,
                              cl_event* e) {
  cl_kernel kernel = static_cast<const ClKernel&>(k).get();
  // clSetKernelArg is not thread-safe on one kernel object, so argument setting and the
  // enqueue happen under one lock.
  std::lock_guard lock(mutex_);
  cl_uint index = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    cl_int err;
    if (args[i].memory) {
      cl_mem m = native(*args[i].memory);
      err = clSetKernelArg(kernel, index++, sizeof(cl_mem), &m);
      if (err == CL_SUCCESS && args[i].sampled) {
        // The dialect's GPIX_IMAGE2D/3D parameter is an image and a sampler_t.
        cl_sampler smp = sampler(args[i].sampler);
        err = clSetKernelArg(kernel, index++, sizeof(cl_sampler), &smp);
      }
    } else {
      err = clSetKernelArg(kernel, index++, args[i].size, args[i].value.data());
    }
    // Messages are built only on failure: eagerly they were most of a launch's host
    // allocations (bench_launch: 39 of add_scalar's 64 on PoCL).
    cl::check_lazy(err, [&] { return "setting kernel argument " + std::to_string(i); });
  }
  cl::check_lazy(
      clEnqueueNDRangeKernel(q, kernel, static_cast<cl_uint>(l.dims), nullptr, l.global.data(),
                             l.local.data(), static_cast<cl_uint>(w.size()),
                             w.empty() ? nullptr : w.data(), e),
      [&] { return "launching a kernel on '" + info().name + "'"; });
}

cl_sampler ClDevice::sampler(const SamplerDesc& d) {
  const int key = (d.linear ? 1 : 0) | (d.normalized ? 2 : 0);
  auto& s = samplers_[static_cast<std::size_t>(key)];
  if (!s) {
    cl_int err = CL_SUCCESS;
    s = cl::Sampler(clCreateSampler(ctx_.get(), d.normalized ? CL_TRUE : CL_FALSE,
                                    CL_ADDRESS_CLAMP_TO_EDGE,
                                    d.linear ? CL_FILTER_LINEAR : CL_FILTER_NEAREST, &err));
    cl::check_lazy(err, [&] { return "creating a sampler on '" + info().name + "'"; });
  }
  return s.get();
}

}  // namespace gpix::detail::cl
