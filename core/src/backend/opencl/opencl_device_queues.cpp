// ClDevice: queues, markers and user events.
#include "backend/opencl/opencl_device.h"

namespace gpix::detail::cl {

std::unique_ptr<QueueImpl> ClDevice::create_queue() {
  cl_int err = CL_SUCCESS;
  cl::Queue q(clCreateCommandQueue(ctx_.get(), id_, 0, &err));
  cl::check_lazy(err, [&] { return "creating a queue on '" + info().name + "'"; });
  return std::make_unique<ClQueue>(std::move(q));
}

void ClDevice::do_finish(QueueImpl& q) {
  cl::check_lazy(clFinish(native(q)),
                 [&] { return "waiting for a queue of '" + info().name + "'"; });
}

std::shared_ptr<EventImpl> ClDevice::marker(QueueImpl& q, Waits waits) {
  const auto w = wait_list(waits);
  cl_event e = nullptr;
  cl::check_lazy(clEnqueueMarkerWithWaitList(native(q), static_cast<cl_uint>(w.size()),
                                             w.empty() ? nullptr : w.data(), &e),
                 [&] { return "enqueueing a marker on '" + info().name + "'"; });
  // Other queues wait on markers (a push queue on the default one's work): OpenCL requires
  // the marker's queue to be flushed before a wait from another queue, or a driver that
  // batches commands may never submit it.
  cl::check_lazy(clFlush(native(q)), [&] { return "flushing a queue of '" + info().name + "'"; });
  return wrap(e);
}

std::shared_ptr<EventImpl> ClDevice::user_event() {
  cl_int err = CL_SUCCESS;
  cl_event e = clCreateUserEvent(ctx_.get(), &err);
  cl::check_lazy(err, [&] { return "creating a user event on '" + info().name + "'"; });
  return std::make_shared<ClEvent>(e, true);
}

}  // namespace gpix::detail::cl
