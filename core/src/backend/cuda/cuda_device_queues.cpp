// CudaDevice: streams, markers, user events, and the events every async call records.
#include "backend/cuda/cuda_device.h"

namespace gpix::detail::cuda {

std::unique_ptr<QueueImpl> CudaDevice::create_queue() {
  ContextScope scope(*ctx_);
  CUstream s = nullptr;
  check(drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
        "creating a stream on '" + info().name + "'");
  return std::make_unique<CuQueue>(ctx_, cuda::Stream(s));
}

void CudaDevice::do_finish(QueueImpl& q) {
  ContextScope scope(*ctx_);
  check_what(drv().cuStreamSynchronize(native(q)),
             [&] { return "waiting for a queue of '" + info().name + "'"; });
}

std::shared_ptr<EventImpl> CudaDevice::marker(QueueImpl& q, Waits waits) {
  ContextScope scope(*ctx_);
  const std::string what = "enqueueing a marker on '" + info().name + "'";
  wait_for(native(q), waits, what);
  return record(native(q), what);
}

std::shared_ptr<EventImpl> CudaDevice::user_event() {
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

std::shared_ptr<EventImpl> CudaDevice::record(CUstream st, const What& what) {
  cuda::Event e = new_event(what);
  check_what(drv().cuEventRecord(e.get(), st), what, " (recording an event)");
  return std::make_shared<CuEvent>(ctx_, std::move(e), events_);
}

void CudaDevice::wait_for(CUstream st, Waits waits, const What& what) {
  for (EventImpl* w : waits) {
    check_what(drv().cuStreamWaitEvent(st, static_cast<CuEvent*>(w)->get(), 0), what,
               " (waiting for an event)");
  }
}

}  // namespace gpix::detail::cuda
