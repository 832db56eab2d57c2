#include "memory_pool.h"

#include "recycling.h"

#include <bit>
#include <limits>

#include "detail.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail {

MemoryPool::~MemoryPool() {
  // Blocks in the cache go back to the driver; blocks in use keep the pool alive through
  // their deleters, so none can be in use here.
  std::lock_guard lock(mutex_);
  cache_.clear();
}

std::size_t MemoryPool::size_class(std::size_t bytes) {
  constexpr std::size_t kMin = 256;
  if (bytes <= kMin) return kMin;
  // Four classes per power of two: round up to a multiple of 2^(floor(log2 n) - 2).
  const auto log2 = static_cast<unsigned>(std::bit_width(bytes)) - 1u;
  const std::size_t step = std::size_t{1} << (log2 - 2u);
  // No class above the largest size_t: such a request (beyond any device) keeps its size, and
  // the device refuses it (rounding up would wrap to a tiny block that "holds" it).
  if (bytes > std::numeric_limits<std::size_t>::max() - (step - 1)) return bytes;
  return (bytes + step - 1) / step * step;
}

std::vector<std::unique_ptr<Memory>> MemoryPool::take_cache() {
  std::vector<std::unique_ptr<Memory>> out;
  for (auto& [size, m] : cache_) out.push_back(std::move(m));
  cache_.clear();
  stats_.bytes_cached = 0;
  return out;
}

void MemoryPool::trim() {
  std::vector<std::unique_ptr<Memory>> released;
  {
    std::lock_guard lock(mutex_);
    released = take_cache();
  }
  // Freed here, outside the lock.
}

MemoryStats MemoryPool::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void MemoryPool::set_limit(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  stats_.limit = bytes;
  limit_reason_.clear();
}

void MemoryPool::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

void MemoryPool::set_limit_reason(std::string reason) {
  std::lock_guard lock(mutex_);
  limit_reason_ = std::move(reason);
}

void MemoryPool::throw_oom(std::size_t bytes, const std::string& what, const std::string& reason,
                           const std::string& code) {
  const DeviceInfo& info = device_.info();
  MemoryStats s = stats();
  throw OutOfMemory(
      "cannot allocate " + human(bytes) + " for " + what + " on '" + info.name + "': " + reason +
          ". gpix holds " + human(s.bytes_in_use) + " in use and " + human(s.bytes_cached) +
          " cached (peak " + human(s.peak_bytes_in_use) + "); the device has " +
          human(info.global_memory) + " in total and allows at most " + human(info.max_allocation) +
          " in one allocation" + (s.limit ? "; gpix's memory limit is " + human(s.limit) : "") +
          ". Free arrays, call gpix::trim(), use smaller images or another device",
      bytes, code);
}

std::unique_ptr<Memory> MemoryPool::device_allocate(
    std::size_t bytes, const std::string& what,
    const std::function<std::unique_ptr<Memory>()>& make) {
  const DeviceInfo& info = device_.info();
  if (bytes > info.max_allocation) {
    throw_oom(
        bytes, what,
        "that is more than its largest single allocation (" + human(info.max_allocation) + ")", {});
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::unique_lock lock(mutex_);
      if (stats_.limit && stats_.bytes_in_use + stats_.bytes_cached + bytes > stats_.limit) {
        auto released = take_cache();
        lock.unlock();
        released.clear();
        lock.lock();
        if (stats_.bytes_in_use + bytes > stats_.limit) {
          std::string why = "that would pass gpix's memory limit";
          if (!limit_reason_.empty()) why += " (" + limit_reason_ + ")";
          lock.unlock();
          throw_oom(bytes, what, why, "GPIX_MEMORY_LIMIT");
        }
      }
    }
    try {
      auto m = make();
      std::lock_guard lock(mutex_);
      ++stats_.device_allocations;
      return m;
    } catch (const OutOfMemory& e) {
      {
        std::lock_guard lock(mutex_);
        ++stats_.failed_allocations;
      }
      if (attempt == 1)
        throw_oom(bytes, what, std::string("the device refused: ") + e.what(), e.code());
      trim();  // give the cache back and retry once
    }
  }
  throw_oom(bytes, what, "unreachable", {});
}

std::shared_ptr<Memory> MemoryPool::allocate(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  std::size_t cls = size_class(bytes);
  // Near the device's limit a size class could pass it; then ask for the exact size.
  if (cls > device_.info().max_allocation) cls = bytes;
  std::unique_ptr<Memory> block;
  bool hit = false;
  {
    std::lock_guard lock(mutex_);
    ++stats_.allocations;
    auto it = cache_.find(cls);
    if (it != cache_.end()) {
      // The emptied node is kept for give_back(): a cache hit and its return allocate nothing.
      auto node = cache_.extract(it);
      block = std::move(node.mapped());
      if (spare_nodes_.size() < spare_nodes_.capacity()) spare_nodes_.push_back(std::move(node));
      stats_.bytes_cached -= cls;
      ++stats_.cache_hits;
      hit = true;
    }
  }
  if (!hit) {
    try {
      block = device_allocate(cls, "a buffer of " + human(bytes),
                              [&] { return device_.allocate(cls); });
    } catch (const OutOfMemory& e) {
      {
        std::lock_guard lock(mutex_);
        --stats_.allocations;
      }
      // Report what the caller asked for, not the size class it was rounded to.
      throw OutOfMemory(e.what(), bytes, e.code());
    } catch (...) {
      std::lock_guard lock(mutex_);
      --stats_.allocations;
      throw;
    }
  }
  {
    std::lock_guard lock(mutex_);
    stats_.bytes_in_use += block->bytes();
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  }
  if (hit) block->mark_handed_on();  // outside the pool's lock: the block is ours alone now
  // The control block from a recycled block (recycling.h): one allocation less a call.
  return std::shared_ptr<Memory>(
      block.release(), [pool = shared_from_this()](Memory* m) { pool->give_back(m, true); },
      Recycling<Memory>());
}

std::shared_ptr<Memory> MemoryPool::allocate_image(const ImageFormat& f) {
  const std::size_t bytes = f.width * f.height * f.depth * size_of(f.dtype);
  auto block = device_allocate(bytes, "a " + std::to_string(f.dims) + "D image",
                               [&] { return device_.allocate_image(f); });
  {
    std::lock_guard lock(mutex_);
    ++stats_.allocations;
    stats_.bytes_in_use += block->bytes();
    stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  }
  return std::shared_ptr<Memory>(
      block.release(), [pool = shared_from_this()](Memory* m) { pool->give_back(m, false); });
}

void MemoryPool::give_back(Memory* m, bool cache) {
  std::unique_ptr<Memory> owned(m);
  std::lock_guard lock(mutex_);
  stats_.bytes_in_use -= owned->bytes();
  if (!cache) return;  // freed on leaving (under the lock: freeing a buffer does not call back)
  // The cache holds at most a quarter of the device's memory, so that freed giant blocks go
  // back to the driver (another backend's context on the same card may need them: NVIDIA's
  // OpenCL cannot recover from running out, see nvidia-opencl-oom).
  if (stats_.bytes_cached + owned->bytes() > device_.info().global_memory / 4) return;
  stats_.bytes_cached += owned->bytes();
  if (!spare_nodes_.empty()) {
    auto node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = owned->bytes();
    node.mapped() = std::move(owned);
    cache_.insert(std::move(node));
    return;
  }
  cache_.emplace(owned->bytes(), std::move(owned));
}

}  // namespace gpix::detail

namespace gpix {

using detail::Access;

MemoryStats memory_stats(const Device& device) {
  return Access::impl(device).pool().stats();
}

void trim(const Device& device) {
  Access::impl(device).pool().trim();
}

void reset_peak_memory(const Device& device) {
  Access::impl(device).pool().reset_peak();
}

void set_memory_limit(const Device& device, std::uint64_t bytes) {
  Access::impl(device).pool().set_limit(bytes);
}

MemoryReport memory_report(const Device& device) {
  auto& dev = Access::impl(device);
  MemoryReport r;
  r.gpix = dev.pool().stats();
  const detail::NativeMemoryInfo n = dev.native_memory_info();
  r.device_known = n.known;
  r.device_free = n.free;
  r.device_total = n.known ? n.total : dev.info().global_memory;
  if (!n.known) {
    r.note = std::string(name(dev.info().backend)) +
             " has no query for free device memory; the total is the device's global memory "
             "size and gpix's own accounting is exact for what gpix holds";
  }
  return r;
}

}  // namespace gpix
