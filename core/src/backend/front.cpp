// DeviceImpl's front: the argument checks that every backend shares, then the backend call.
// A wrong range would corrupt memory on CUDA and give an API code on OpenCL; checked here,
// both raise the same InvalidArgument naming what was asked and the device.
#include <algorithm>
#include <string>

#include "backend/backend.h"
#include "config.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix::detail {

void DeviceImpl::check_range(const Memory& m, std::size_t offset, std::size_t bytes,
                             const char* op) const {
  if (offset > m.bytes() || bytes > m.bytes() - offset) {
    throw InvalidArgument(std::string(op) + " of " + std::to_string(bytes) + " bytes at offset " +
                          std::to_string(offset) + " is outside an allocation of " +
                          std::to_string(m.bytes()) + " bytes on '" + info_.name + "'");
  }
}

void DeviceImpl::check_box(const Memory& m, const Pitched& p, const Extent& e,
                           const char* op) const {
  if (e[0] == 0 || e[1] == 0 || e[2] == 0) {
    throw InvalidArgument(std::string(op) + " of an empty box (" + std::to_string(e[0]) +
                          " bytes x " + std::to_string(e[1]) + " rows x " + std::to_string(e[2]) +
                          " slices) on '" + info_.name + "'");
  }
  if (!m.is_image()) {
    const std::size_t last = p.offset(e[0] - 1, e[1] - 1, e[2] - 1);
    check_range(m, p.offset(0, 0, 0), last + 1 - p.offset(0, 0, 0), op);
  }
}

void DeviceImpl::check_fill(const Memory& m, std::size_t offset, std::size_t bytes,
                            std::size_t pattern_bytes) const {
  check_range(m, offset, bytes, "fill");
  if (pattern_bytes != 1 && pattern_bytes != 2 && pattern_bytes != 4 && pattern_bytes != 8) {
    throw InvalidArgument("a fill pattern has 1, 2, 4 or 8 bytes, not " +
                          std::to_string(pattern_bytes) + " (on '" + info_.name + "')");
  }
  if (offset % pattern_bytes != 0 || bytes % pattern_bytes != 0) {
    throw InvalidArgument("a fill of " + std::to_string(bytes) + " bytes at offset " +
                          std::to_string(offset) + " is not a whole number of " +
                          std::to_string(pattern_bytes) + "-byte patterns (on '" + info_.name +
                          "')");
  }
}

std::size_t DeviceImpl::groups_limit(int axis) const {
  const std::size_t own = max_groups(axis);
  return axis == 0 ? own : std::min(own, config().grid_groups_limit);
}

bool DeviceImpl::check_launch(const Kernel& k, const Launch& l) const {
  bool empty = false;
  for (int d = 0; d < l.dims && d < 3; ++d) {
    const auto i = static_cast<std::size_t>(d);
    if (l.local[i] == 0 || l.global[i] % l.local[i] != 0) {
      throw InvalidArgument("a kernel launch's global size " + std::to_string(l.global[i]) +
                            " on axis " + std::to_string(d) +
                            " is not a multiple of the work-group size " +
                            std::to_string(l.local[i]) + " (on '" + info_.name + "')");
    }
    if (l.global[i] == 0) empty = true;
  }
  if (empty) return false;
  for (int d = 0; d < l.dims && d < 3; ++d) {
    const auto i = static_cast<std::size_t>(d);
    const std::size_t groups = l.global[i] / l.local[i], limit = groups_limit(d);
    if (groups > limit) {
      throw InvalidArgument("kernel " + k.name() + ": " + std::to_string(groups) +
                            " work-groups on axis " + std::to_string(d) + " exceed the " +
                            std::to_string(limit) + " that '" + info_.name +
                            "' launches on that axis; use larger work-groups");
    }
  }
  return true;
}

std::unique_ptr<Memory> DeviceImpl::allocate(std::size_t bytes) {
  if (bytes > info_.max_allocation) {
    throw OutOfMemory("cannot allocate " + human(bytes) + " on '" + info_.name +
                          "': its largest single allocation is " + human(info_.max_allocation) +
                          " (total memory " + human(info_.global_memory) +
                          "); use a smaller image or a device with more memory",
                      bytes);
  }
  return do_allocate(bytes);
}

void DeviceImpl::write(Memory& dst, std::size_t offset, const void* src, std::size_t bytes) {
  check_range(dst, offset, bytes, "write");
  if (bytes) do_write(dst, offset, src, bytes);
}

void DeviceImpl::read(const Memory& src, std::size_t offset, void* dst, std::size_t bytes) {
  check_range(src, offset, bytes, "read");
  if (bytes) do_read(src, offset, dst, bytes);
}

void DeviceImpl::copy(const Memory& src, std::size_t src_offset, Memory& dst,
                      std::size_t dst_offset, std::size_t bytes) {
  check_range(src, src_offset, bytes, "copy from");
  check_range(dst, dst_offset, bytes, "copy to");
  if (bytes) do_copy(src, src_offset, dst, dst_offset, bytes);
}

void DeviceImpl::fill(Memory& dst, std::size_t offset, std::size_t bytes, const void* pattern,
                      std::size_t pattern_bytes) {
  check_fill(dst, offset, bytes, pattern_bytes);
  if (bytes) do_fill(dst, offset, bytes, pattern, pattern_bytes);
}

namespace {
// A quick program's kernel for a launch this large: its full program's (Kernel::full).
DeviceImpl::KernelPtr full_for_large_launch(const Kernel& k, const Launch& l) {
  if (!k.full || l.global[0] * l.global[1] * l.global[2] <= kQuickLaunchLimit) return nullptr;
  return k.full();
}
}  // namespace

void DeviceImpl::launch(const Kernel& k, const Launch& l, std::span<const KernelArg> args) {
  if (!check_launch(k, l)) return;
  if (const KernelPtr full = full_for_large_launch(k, l)) {
    do_launch(*full, l, args);
    return;
  }
  do_launch(k, l, args);
}

void DeviceImpl::finish() {
  finish(default_queue());
}

void DeviceImpl::finish(QueueImpl& q) {
  do_finish(q);
  collect();
}

std::shared_ptr<EventImpl> DeviceImpl::write_rect(QueueImpl& q, Memory& dst, const Pitched& d,
                                                  const void* src, const Pitched& s, Extent extent,
                                                  Waits waits) {
  check_box(dst, d, extent, "write");
  return do_write_rect(q, dst, d, src, s, extent, waits);
}

std::shared_ptr<EventImpl> DeviceImpl::read_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                                 void* dst, const Pitched& d, Extent extent,
                                                 Waits waits) {
  check_box(src, s, extent, "read");
  return do_read_rect(q, src, s, dst, d, extent, waits);
}

std::shared_ptr<EventImpl> DeviceImpl::copy_rect(QueueImpl& q, const Memory& src, const Pitched& s,
                                                 Memory& dst, const Pitched& d, Extent extent,
                                                 Waits waits) {
  check_box(src, s, extent, "copy from");
  check_box(dst, d, extent, "copy to");
  return do_copy_rect(q, src, s, dst, d, extent, waits);
}

std::shared_ptr<EventImpl> DeviceImpl::fill_async(QueueImpl& q, Memory& dst, std::size_t offset,
                                                  std::size_t bytes, const void* pattern,
                                                  std::size_t pattern_bytes, Waits waits) {
  check_fill(dst, offset, bytes, pattern_bytes);
  if (!bytes) return marker(q, waits);
  return do_fill_async(q, dst, offset, bytes, pattern, pattern_bytes, waits);
}

std::shared_ptr<EventImpl> DeviceImpl::launch_async(QueueImpl& q, const Kernel& k, const Launch& l,
                                                    std::span<const KernelArg> args, Waits waits) {
  if (!check_launch(k, l)) return marker(q, waits);
  if (const KernelPtr full = full_for_large_launch(k, l)) {
    return do_launch_async(q, *full, l, args, waits);
  }
  return do_launch_async(q, k, l, args, waits);
}

void* DeviceImpl::map(Memory& m, std::size_t offset, std::size_t bytes, MapAccess access) {
  check_range(m, offset, bytes, "map");
  void* p = do_map(m, offset, bytes, access);
  std::lock_guard lock(maps_mutex_);
  maps_.emplace(p, &m);
  return p;
}

void DeviceImpl::unmap(Memory& m, void* ptr) {
  {
    std::lock_guard lock(maps_mutex_);
    auto [lo, hi] = maps_.equal_range(ptr);
    while (lo != hi && lo->second != &m) ++lo;
    if (lo == hi) {
      throw InvalidArgument("unmap() was given a pointer that is not mapped from this array on '" +
                            info_.name + "'");
    }
    maps_.erase(lo);
  }
  do_unmap(m, ptr);
}

std::unique_ptr<Memory> DeviceImpl::allocate_image(const ImageFormat& f) {
  if (!image_supported(f.dtype, f.dims)) {
    throw UnsupportedDType("'" + info_.name + "' has no one-channel " + std::to_string(f.dims) +
                           "D image format for " + std::string(name(f.dtype)));
  }
  return do_allocate_image(f);
}

std::shared_ptr<EventImpl> DeviceImpl::copy_peer(const Memory& src, std::size_t src_offset,
                                                 DeviceImpl& to, Memory& dst,
                                                 std::size_t dst_offset, std::size_t bytes) {
  check_range(src, src_offset, bytes, "copy from");
  to.check_range(dst, dst_offset, bytes, "copy to");
  return do_copy_peer(src, src_offset, to, dst, dst_offset, bytes);
}

void DeviceImpl::svm_copy_to(Memory& dst, std::size_t dst_offset, const void* svm,
                             std::size_t bytes) {
  check_range(dst, dst_offset, bytes, "copy to");
  do_svm_copy_to(dst, dst_offset, svm, bytes);
}

void DeviceImpl::svm_copy_from(const Memory& src, std::size_t src_offset, void* svm,
                               std::size_t bytes) {
  check_range(src, src_offset, bytes, "copy from");
  do_svm_copy_from(src, src_offset, svm, bytes);
}

std::unique_ptr<DeviceImpl::StreamedPush> DeviceImpl::stream_in(QueueImpl& q, Memory& mem,
                                                                std::size_t offset, void* host,
                                                                std::size_t bytes,
                                                                std::size_t slice) {
  check_range(mem, offset, bytes, "streamed push");
  return do_stream_in(q, mem, offset, host, bytes, slice);
}

}  // namespace gpix::detail
