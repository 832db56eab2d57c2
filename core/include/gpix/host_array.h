#pragma once
// Pixels in host memory with a shape and a dtype. Copies of a HostArray share their pixels
// (like Array); clone() makes a deep copy.
//
// Two kinds: ordinary (pageable) memory, and pinned (page-locked) memory from a device
// (HostArray::pinned, gpix::empty_like), which the device reads and writes directly by DMA:
// pushes and pulls from it take the fastest path, and the async transfers keep it alive
// until they complete. Large transfers from ordinary memory are staged through a small ring
// of pinned chunks by gpix itself. A DMA into or out of pinned memory that the CPU has just
// read or written waits while the CPU caches give up those lines (an H200 host: a 1 MiB
// pull 26 us into untouched memory, 34-45 us after the CPU read it): for a stream of
// transfers, alternate between a few pinned buffers rather than reusing one at once.
#include <cstddef>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "gpix/device.h"
#include "gpix/dtype.h"
#include "gpix/error.h"
#include "gpix/shape.h"

namespace gpix {

class HostArray {
 public:
  HostArray() = default;
  // Zero-filled, 64-byte aligned. Throws OutOfMemory if the host cannot provide it.
  HostArray(const Shape& shape, DType dtype);
  // Like the constructor but the contents are undefined (no zero pass).
  static HostArray empty(const Shape& shape, DType dtype);
  // Page-locked memory of device (OpenCL: a CL_MEM_ALLOC_HOST_PTR buffer kept mapped; CUDA:
  // cuMemHostAlloc). Contents undefined. Throws OutOfMemory when the host cannot lock that
  // much memory. Any device may transfer from it; device's transfers are the fastest.
  static HostArray pinned(const Shape& shape, DType dtype, const Device& device = default_device());

  // Whether the memory is pinned, and for which device (null device when pageable).
  bool is_pinned() const noexcept { return pinned_for_.valid(); }
  const Device& pinned_device() const noexcept { return pinned_for_; }

  // Copies data (its size must equal shape.elements()) into a new HostArray.
  template <Pixel T>
  static HostArray from(std::span<const T> data, const Shape& shape) {
    check_size(data.size(), shape);
    HostArray h = empty(shape, dtype_of<T>);
    std::memcpy(h.data(), data.data(), h.bytes());
    return h;
  }
  template <Pixel T>
  static HostArray from(const std::vector<T>& data, const Shape& shape) {
    return from(std::span<const T>(data), shape);
  }

  // Adopts pixels owned elsewhere, without copying: the HostArray (and its copies) keep owner
  // alive and never free data themselves. data must be aligned to the dtype's size (it may be
  // less aligned than the 64 bytes of gpix's own allocations). Throws InvalidArgument for a
  // null or misaligned pointer.
  static HostArray wrap(std::byte* data, const Shape& shape, DType dtype,
                        std::shared_ptr<void> owner);

  bool valid() const noexcept { return data_ != nullptr; }
  const Shape& shape() const noexcept { return shape_; }
  DType dtype() const noexcept { return dtype_; }
  std::size_t elements() const noexcept { return shape_.elements(); }
  std::size_t bytes() const noexcept { return elements() * size_of(dtype_); }
  std::byte* data() noexcept { return data_.get(); }
  const std::byte* data() const noexcept { return data_.get(); }

  // The pixels as T; throws UnsupportedDType when T is not the array's dtype.
  template <Pixel T>
  std::span<T> as() {
    check_type(dtype_of<T>);
    return {reinterpret_cast<T*>(data()), elements()};
  }
  template <Pixel T>
  std::span<const T> as() const {
    check_type(dtype_of<T>);
    return {reinterpret_cast<const T*>(data()), elements()};
  }

  HostArray clone() const;

 private:
  struct NoInit {};
  HostArray(const Shape& shape, DType dtype, NoInit);
  static void check_size(std::size_t n, const Shape& shape);
  void check_type(DType requested) const;

  Shape shape_;
  DType dtype_ = DType::u8;
  std::shared_ptr<std::byte[]> data_;
  Device pinned_for_;
  friend struct detail::Access;
};

}  // namespace gpix
