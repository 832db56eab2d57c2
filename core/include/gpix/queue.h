#pragma once
// Queues and events. A Queue is an ordered stream of work on one device (an OpenCL command
// queue, a CUDA stream): work on one queue runs in submission order; work on different
// queues is ordered only through Events. Every device has a default queue, which all
// blocking calls use; Queue::create() makes more.
//
// Asynchronous calls (push_async, pull_async, copy_async, fill_async in array.h) return at
// once with an Event and start after every Event in their `after` list. A raw host pointer
// handed to them must stay alive and untouched until the returned Event completes; the
// HostArray overloads keep the HostArray alive until then by themselves (the safe way).
// A fresh array's memory may be a block whose earlier owner's kernels are still queued on the
// default queue; async calls on other queues that touch it wait for the work queued on the
// default queue before the first of them (to overlap a push with a filter, queue the push
// first). Once that work is done they are not held back.
#include <memory>
#include <vector>

#include "gpix/device.h"

namespace gpix {

namespace detail {
struct EventState;
class QueueState;
struct Access;
}  // namespace detail

class Event {
 public:
  Event() = default;  // a null event, complete from the start
  // Blocks until the work is done. Throws DeviceError when it failed.
  void wait() const;
  // Whether the work is done, without blocking.
  bool done() const;
  bool valid() const noexcept { return s_ != nullptr; }

  // An event that completes only when complete() is called: holds back work that waits on
  // it (for instance until the host has produced the data). Throws UnsupportedFeature where
  // the backend has no user events.
  static Event user(const Device& device);
  // Completes a user event; InvalidArgument for other events.
  void complete();

 private:
  std::shared_ptr<detail::EventState> s_;
  friend struct detail::Access;
};

// Blocks until every event is done.
void wait_all(const std::vector<Event>& events);

class Queue {
 public:
  Queue() = default;  // a null queue: calls that take one use the device's default queue
  // A new queue on device, independent of the others.
  static Queue create(const Device& device = default_device());
  // The queue that device's blocking calls use.
  static Queue default_for(const Device& device = default_device());

  bool valid() const noexcept { return s_ != nullptr; }
  Device device() const;
  // Blocks until everything submitted to this queue is done.
  void finish() const;
  // An event that completes when everything submitted so far and every event in after is
  // done; work submitted later is not held back by it unless it waits on it.
  Event marker(const std::vector<Event>& after = {}) const;

 private:
  std::shared_ptr<detail::QueueState> s_;
  friend struct detail::Access;
};

}  // namespace gpix
