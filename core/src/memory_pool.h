#pragma once
// The per-device caching memory pool (backend-neutral). Blocks are rounded up to a size
// class (4 classes per power of two, so at most 25% is wasted), handed out as shared_ptrs
// whose deleter returns them to the cache, and reused by later requests of the same class.
// On an allocation failure the cache is given back and the request retried once.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gpix/memory.h"

namespace gpix::detail {

class MemoryPool : public std::enable_shared_from_this<MemoryPool> {
 public:
  explicit MemoryPool(DeviceImpl& device) : device_(device) { spare_nodes_.reserve(64); }
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // A buffer of at least bytes bytes (Memory::bytes() is its size class). Throws OutOfMemory
  // saying what was asked, what gpix holds and the device's limits.
  std::shared_ptr<Memory> allocate(std::size_t bytes);
  // An image object; images are counted but not cached (their formats rarely repeat).
  std::shared_ptr<Memory> allocate_image(const ImageFormat& f);
  void trim();
  MemoryStats stats() const;
  void set_limit(std::uint64_t bytes);
  void reset_peak();
  // Why the limit is there, for the out-of-memory message (empty: the user set it).
  void set_limit_reason(std::string reason);

  static std::size_t size_class(std::size_t bytes);

 private:
  std::unique_ptr<Memory> device_allocate(std::size_t bytes, const std::string& what,
                                          const std::function<std::unique_ptr<Memory>()>& make);
  void give_back(Memory* m, bool cache);
  [[noreturn]] void throw_oom(std::size_t bytes, const std::string& what, const std::string& reason,
                              const std::string& code);
  std::vector<std::unique_ptr<Memory>> take_cache();  // under mutex_

  DeviceImpl& device_;
  mutable std::mutex mutex_;
  using Cache = std::multimap<std::size_t, std::unique_ptr<Memory>>;
  Cache cache_;
  // Emptied nodes of cache_, reused by give_back() (reserved in the constructor).
  std::vector<Cache::node_type> spare_nodes_;
  MemoryStats stats_;
  std::string limit_reason_;
};

}  // namespace gpix::detail
