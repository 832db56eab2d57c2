#include "gpix/queue.h"

#include "detail.h"
#include "gpix/error.h"

namespace gpix {

using detail::Access;

void Event::wait() const {
  if (!s_) return;
  s_->event->wait();
  // What the device keeps alive for transfers that are done goes now, not at its next
  // asynchronous call: arrays the caller dropped after this wait are free on return.
  s_->device->collect();
}

bool Event::done() const {
  return !s_ || s_->event->done();
}

Event Event::user(const Device& device) {
  auto& dev = Access::impl(device);
  std::shared_ptr<detail::EventImpl> e;
  try {
    e = dev.user_event();
  } catch (const DeviceError& err) {
    throw UnsupportedFeature(err.what(), err.code());
  }
  return detail::make_event(std::move(e), Access::shared(device));
}

void Event::complete() {
  if (!s_) throw InvalidArgument("complete() was called on a null event");
  s_->event->complete();
}

void wait_all(const std::vector<Event>& events) {
  for (const Event& e : events) e.wait();
}

Queue Queue::create(const Device& device) {
  auto st = std::make_shared<detail::QueueState>();
  st->device = Access::shared(device);
  st->owned = Access::impl(device).create_queue();
  st->queue = st->owned.get();
  return Access::queue(std::move(st));
}

Queue Queue::default_for(const Device& device) {
  auto st = std::make_shared<detail::QueueState>();
  st->device = Access::shared(device);
  st->queue = &Access::impl(device).default_queue();
  return Access::queue(std::move(st));
}

Device Queue::device() const {
  if (!s_) throw InvalidArgument("a null gpix::Queue was used; make one with Queue::create()");
  return Access::device(s_->device);
}

void Queue::finish() const {
  if (!s_) throw InvalidArgument("a null gpix::Queue was used; make one with Queue::create()");
  s_->device->finish(*s_->queue);
}

Event Queue::marker(const std::vector<Event>& after) const {
  if (!s_) throw InvalidArgument("a null gpix::Queue was used; make one with Queue::create()");
  auto sub = detail::submission(s_->device, *this, after);
  return detail::make_event(s_->device->marker(*sub.queue, sub.span()), s_->device);
}

}  // namespace gpix
