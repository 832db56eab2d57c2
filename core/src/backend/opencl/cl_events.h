#pragma once
// OpenCL queues and events: in-order command queues, events (plain and user), wait lists.
#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/opencl/cl.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail::cl {

class ClQueue final : public QueueImpl {
 public:
  explicit ClQueue(cl::Queue q) : q_(std::move(q)) {}
  cl_command_queue get() const noexcept { return q_.get(); }

 private:
  cl::Queue q_;
};

inline cl_command_queue native(QueueImpl& q) {
  return static_cast<ClQueue&>(q).get();
}

class ClEvent final : public EventImpl {
 public:
  ClEvent(cl_event e, bool user) : e_(e), user_(user) {}
  cl_event get() const noexcept { return e_.get(); }
  void wait() override {
    const cl_event e = e_.get();
    cl_int err = clWaitForEvents(1, &e);
    cl_int status = CL_COMPLETE;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
    if (status < 0) err = status;
    cl::check(err, "waiting for an event");
  }
  bool done() override {
    cl_int status = CL_COMPLETE;
    cl::check(clGetEventInfo(e_.get(), CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status,
                             nullptr),
              "querying an event");
    return status <= CL_COMPLETE;  // CL_COMPLETE is 0; failures are negative
  }
  void complete() override {
    if (!user_) throw InvalidArgument("complete() is only for user events (Event::user())");
    cl::check(clSetUserEventStatus(e_.get(), CL_COMPLETE), "completing a user event");
  }

 private:
  cl::EventHandle e_;
  bool user_;
};

// The wait list of events, all of this device (core waits on the host for others).
inline std::vector<cl_event> wait_list(Waits waits) {
  std::vector<cl_event> v;
  v.reserve(waits.size());
  for (EventImpl* e : waits) v.push_back(static_cast<ClEvent*>(e)->get());
  return v;
}

inline std::shared_ptr<EventImpl> wrap(cl_event e) {
  return std::make_shared<ClEvent>(e, false);
}

}  // namespace gpix::detail::cl
