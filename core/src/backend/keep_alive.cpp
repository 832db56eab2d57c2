// What every device owns whatever its backend: the memory pool, the staging ring and the
// keep-alive list behind asynchronous transfers.
#include <string>

#include "backend/backend.h"
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

StagingRing& DeviceImpl::staging_ring() {
  std::call_once(ring_once_, [this] { ring_ = std::make_unique<StagingRing>(*this); });
  return *ring_;
}

void DeviceImpl::release_resources() {
  collect(true);
  ring_.reset();  // its pinned block goes back to the backend that made it (device dying)
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
