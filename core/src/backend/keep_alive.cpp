// What every device owns whatever its backend: the memory pool, the staging rings and their
// copy threads, the push and pull queues and the keep-alive list behind asynchronous transfers.
#include <string>

#include "backend/backend.h"
#include "config.h"
#include "copy_threads.h"
#include "gpix/error.h"
#include "memory_pool.h"
#include "staging_ring.h"

namespace gpix::detail {

DeviceImpl::DeviceImpl(DeviceInfo info) : info_(std::move(info)) {}

DeviceImpl::~DeviceImpl() = default;

MemoryPool& DeviceImpl::pool() {
  std::call_once(pool_once_, [this] { pool_ = std::make_shared<MemoryPool>(*this); });
  return *pool_;
}

StagingRing& DeviceImpl::staging_ring(bool to_device) {
  const int k = to_device ? 1 : 0;
  std::call_once(ring_once_[k], [this, k] { ring_[k] = std::make_unique<StagingRing>(*this); });
  return *ring_[k];
}

CopyThreads& DeviceImpl::copy_threads(bool to_device) {
  const int k = to_device ? 1 : 0;
  std::call_once(copy_threads_once_[k], [this, k] {
    copy_threads_[k] =
        std::make_unique<CopyThreads>(config().staging.spin, &ThreadShare::process());
  });
  return *copy_threads_[k];
}

QueueImpl& DeviceImpl::push_queue() {
  std::call_once(push_queue_once_, [this] { push_queue_ = create_queue(); });
  return *push_queue_;
}

QueueImpl& DeviceImpl::pull_queue() {
  std::call_once(pull_queue_once_, [this] { pull_queue_ = create_queue(); });
  return *pull_queue_;
}

void DeviceImpl::release_resources() {
  // Background compiles call the backend: they finish while it still exists, and those not
  // yet started never start (the compiler may be shutting down with the process).
  forget_background_work(this);
  stop_background_compiles();
  collect(true);
  // The rings' pinned blocks and the push and pull queues go back to the backend that made
  // them (the device is dying). The queues are idle: every transfer on them is waited for
  // before it returns. It is not finished here: at process exit the CUDA driver may already be shut
  // down, and finish() would throw from the device's destructor (bench_transfer ended in
  // std::terminate so); the queue's own destructor releases it without throwing.
  for (auto& r : ring_) r.reset();
  push_queue_.reset();
  pull_queue_.reset();
  pool().trim();
}

void DeviceImpl::retain(std::shared_ptr<EventImpl> e, std::shared_ptr<const void> keep) {
  collect();
  std::lock_guard lock(retain_mutex_);
  retained_.emplace_back(std::move(e), std::move(keep));
}

void DeviceImpl::collect(bool wait_all) {
  // Released outside the lock: a HostArray's destructor may call back into the backend.
  std::vector<std::pair<std::shared_ptr<EventImpl>, std::shared_ptr<const void>>> dropped;
  {
    std::lock_guard lock(retain_mutex_);
    for (auto it = retained_.begin(); it != retained_.end();) {
      if (wait_all) {
        try {
          it->first->wait();
        } catch (const Error&) {
          // A failed transfer is reported by its own Event; here it only ends the retention.
        }
      }
      if (wait_all || it->first->done()) {
        dropped.push_back(std::move(*it));
        it = retained_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace gpix::detail
