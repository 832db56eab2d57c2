#pragma once
// Device memory accounting: every device has a caching pool (freed blocks are kept by size
// class and reused), and these calls report and control it.
#include <cstdint>
#include <string>

#include "gpix/device.h"

namespace gpix {

struct MemoryStats {
  std::uint64_t bytes_in_use = 0;        // held by live arrays and temporaries (size classes)
  std::uint64_t bytes_cached = 0;        // freed blocks kept for reuse (at most 1/4 of the device)
  std::uint64_t peak_bytes_in_use = 0;   // highest bytes_in_use so far
  std::uint64_t allocations = 0;         // requests served (from the cache or the device)
  std::uint64_t cache_hits = 0;          // requests served from the cache
  std::uint64_t device_allocations = 0;  // requests that reached the device's allocator
  std::uint64_t failed_allocations = 0;  // device allocator failures (each retried once)
  std::uint64_t limit = 0;               // set_memory_limit(); 0 = none
};

// gpix's accounting for device's pool.
MemoryStats memory_stats(const Device& device);

// Gives every cached block of device back to the driver. Arrays in use are untouched.
void trim(const Device& device);

// Starts peak_bytes_in_use again from bytes_in_use now, so that a later memory_stats() says
// the peak of the work done since (what one filter or one tiled run needed).
void reset_peak_memory(const Device& device);

// Caps what gpix holds on device (in use + cached) at bytes, 0 to lift the cap. An
// allocation past the cap first trims the cache, then throws OutOfMemory as if the device
// were full. For tests and for sharing a GPU with other programs.
void set_memory_limit(const Device& device, std::uint64_t bytes);

struct MemoryReport {
  MemoryStats gpix;           // gpix's own accounting
  bool device_known = false;  // whether the API reports free memory (CUDA yes, OpenCL no)
  std::uint64_t device_free = 0;
  std::uint64_t device_total = 0;  // from the API where known, else DeviceInfo::global_memory
  std::string note;                // e.g. "OpenCL has no query for free memory"
};

// What is known about device's memory. Never throws for a valid device.
MemoryReport memory_report(const Device& device);

}  // namespace gpix
