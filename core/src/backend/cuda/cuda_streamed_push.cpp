#include "backend/cuda/cuda_device.h"
#include "programs.h"

namespace gpix::detail::cuda {

std::unique_ptr<CudaDevice::StreamedPush> CudaDevice::do_stream_in(QueueImpl& q, Memory& mem,
                                                                   std::size_t offset, void* host,
                                                                   std::size_t bytes,
                                                                   std::size_t slice) {
  const auto aligned = [](std::uintptr_t v) { return v % 16 == 0; };
  if (mem.is_image() || bytes == 0 || slice == 0 || !aligned(slice) || !aligned(offset) ||
      !aligned(reinterpret_cast<std::uintptr_t>(host)) ||
      (bytes + slice - 1) / slice > StreamControl::kMaxSlices) {
    return nullptr;
  }
  // Looked up before the context scope: a first use compiles it.
  const KernelPtr kp = kernel(program("staging.kernel"), "stage_in", {});
  const auto& k = static_cast<const CuKernel&>(*kp);
  std::unique_lock lock(control_->mutex);
  ContextScope scope(*ctx_);
  control_->ready();
  CUdeviceptr from = 0;
  check(drv().cuMemHostGetDevicePointer(&from, host, 0),
        "mapping the staging ring into '" + info().name + "'");
  return std::make_unique<CuStreamedPush>(
      ctx_, events_, *control_, std::move(lock),
      CuStreamedPush::Args{kp, k.get(), native(q), from, native(mem) + offset, bytes, slice});
}

}  // namespace gpix::detail::cuda
