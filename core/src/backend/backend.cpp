// DeviceImpl's defaults for the optional parts of the backend contract, and the backend-
// neutral keep-alive list behind asynchronous transfers.
#include <string>

#include "backend/backend.h"
#include "gpix/error.h"
#include "memory_pool.h"

namespace gpix::detail {

void DeviceImpl::not_implemented(std::string_view what) const {
  throw DeviceError("the " + std::string(gpix::name(info_.backend)) + " backend of gpix does not " +
                        "implement " + std::string(what) + " yet (device '" + info_.name +
                        "'); use an OpenCL device for it",
                    "GPIX_NOT_IMPLEMENTED");
}

QueueImpl& DeviceImpl::default_queue() {
  not_implemented("queues");
}
std::unique_ptr<QueueImpl> DeviceImpl::create_queue() {
  not_implemented("queues");
}
void DeviceImpl::finish(QueueImpl&) {
  not_implemented("queues");
}
std::shared_ptr<EventImpl> DeviceImpl::marker(QueueImpl&, Waits) {
  not_implemented("events");
}
std::shared_ptr<EventImpl> DeviceImpl::user_event() {
  not_implemented("user events");
}
std::shared_ptr<EventImpl> DeviceImpl::write_rect(QueueImpl&, Memory&, const Pitched&, const void*,
                                                  const Pitched&, Extent, Waits) {
  not_implemented("asynchronous and region writes");
}
std::shared_ptr<EventImpl> DeviceImpl::read_rect(QueueImpl&, const Memory&, const Pitched&, void*,
                                                 const Pitched&, Extent, Waits) {
  not_implemented("asynchronous and region reads");
}
std::shared_ptr<EventImpl> DeviceImpl::copy_rect(QueueImpl&, const Memory&, const Pitched&, Memory&,
                                                 const Pitched&, Extent, Waits) {
  not_implemented("asynchronous and region copies");
}
std::shared_ptr<EventImpl> DeviceImpl::fill_async(QueueImpl&, Memory&, std::size_t, std::size_t,
                                                  const void*, std::size_t, Waits) {
  not_implemented("asynchronous fills");
}
std::shared_ptr<EventImpl> DeviceImpl::launch_async(QueueImpl&, const Kernel&, const Launch&,
                                                    std::span<const KernelArg>, Waits) {
  not_implemented("asynchronous kernel launches");
}
std::unique_ptr<HostMemory> DeviceImpl::allocate_host(std::size_t) {
  not_implemented("pinned host memory");
}
void* DeviceImpl::map(Memory&, std::size_t, std::size_t, MapAccess) {
  not_implemented("mapping");
}
void DeviceImpl::unmap(Memory&, void*) {
  not_implemented("mapping");
}
std::unique_ptr<Memory> DeviceImpl::allocate_image(const ImageFormat&) {
  not_implemented("image objects");
}
bool DeviceImpl::image_supported(DType, int) {
  return false;
}
std::shared_ptr<EventImpl> DeviceImpl::copy_peer(const Memory&, std::size_t, DeviceImpl&, Memory&,
                                                 std::size_t, std::size_t) {
  return nullptr;
}
NativeMemoryInfo DeviceImpl::native_memory_info() {
  return {};
}
bool DeviceImpl::svm_supported() {
  return false;
}
void* DeviceImpl::svm_allocate(std::size_t) {
  not_implemented("shared virtual memory");
}
void DeviceImpl::svm_free(void*) {
  not_implemented("shared virtual memory");
}
void DeviceImpl::svm_map(void*, std::size_t, MapAccess) {
  not_implemented("shared virtual memory");
}
void DeviceImpl::svm_unmap(void*) {
  not_implemented("shared virtual memory");
}
void DeviceImpl::svm_copy_to(Memory&, std::size_t, const void*, std::size_t) {
  not_implemented("shared virtual memory");
}
void DeviceImpl::svm_copy_from(const Memory&, std::size_t, void*, std::size_t) {
  not_implemented("shared virtual memory");
}

MemoryPool& DeviceImpl::pool() {
  std::call_once(pool_once_, [this] { pool_ = std::make_shared<MemoryPool>(*this); });
  return *pool_;
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
