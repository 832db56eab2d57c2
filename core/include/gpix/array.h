#pragma once
// Arrays in device memory. An Array is a handle: copies share the device memory, copy()
// makes a deep copy on the same device. All operations are blocking unless named *_async.
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gpix/device.h"
#include "gpix/dtype.h"
#include "gpix/host_array.h"
#include "gpix/scalar.h"
#include "gpix/shape.h"

namespace gpix {

namespace detail {
class ArrayImpl;
}  // namespace detail

enum class MemoryKind : std::uint8_t { buffer, image };
std::string_view name(MemoryKind k);  // "buffer", "image"

class Array {
 public:
  Array() = default;  // a null array; valid() is false

  // Zero-filled array. Throws InvalidArgument (bad shape), UnsupportedDType (f64 on a device
  // without fp64) or OutOfMemory (larger than the device's max allocation or free memory).
  static Array create(const Shape& shape, DType dtype, const Device& device = default_device());
  // Like create() but the contents are undefined (no fill pass).
  static Array empty(const Shape& shape, DType dtype, const Device& device = default_device());
  // Copies host pixels to a new array with the host's shape and dtype.
  static Array push(const HostArray& host, const Device& device = default_device());
  template <Pixel T>
  static Array push(std::span<const T> data, const Shape& shape,
                    const Device& device = default_device()) {
    auto a = empty(shape, dtype_of<T>, device);
    a.write(data.data(), data.size() * sizeof(T));
    return a;
  }
  template <Pixel T>
  static Array push(const std::vector<T>& data, const Shape& shape,
                    const Device& device = default_device()) {
    return push(std::span<const T>(data), shape, device);
  }

  // Copies the pixels to a new HostArray (bit-exact).
  HostArray pull() const;
  // Copies the pixels into a vector of T; throws UnsupportedDType when T is not dtype().
  template <Pixel T>
  std::vector<T> pull_as() const {
    check_dtype(dtype_of<T>);
    std::vector<T> out(elements());
    read(out.data(), out.size() * sizeof(T));
    return out;
  }
  // Overwrites the whole array from host memory of exactly bytes() bytes (InvalidArgument
  // otherwise).
  void write(const void* src, std::size_t nbytes);
  // Copies the whole array into host memory of exactly bytes() bytes.
  void read(void* dst, std::size_t nbytes) const;

  // Deep copy on the same device.
  Array copy() const;
  // Copies src's pixels into this array; shapes and dtypes must match. Works across devices
  // (staged through host memory when the devices differ).
  void copy_from(const Array& src);
  // Sets every pixel to value. Throws InvalidArgument when value is not exactly representable
  // in the dtype (300 in u8, 1.5 in i32, NaN in an integer type): gpix does not round or clamp.
  void fill(Scalar value);
  void zero();

  bool valid() const noexcept { return impl_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  const Shape& shape() const;
  DType dtype() const;
  Device device() const;
  MemoryKind kind() const;
  int ndim() const { return shape().ndim(); }
  std::size_t elements() const { return shape().elements(); }
  std::size_t bytes() const { return elements() * size_of(dtype()); }
  // Whether two handles share the same device memory.
  bool same_memory(const Array& other) const noexcept { return impl_ == other.impl_; }

 private:
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}
  void check_dtype(DType requested) const;
  std::shared_ptr<detail::ArrayImpl> impl_;
  friend struct detail::Access;
};

// pyclesperanto-style free functions.
inline Array create(const Shape& shape, DType dtype, const Device& device = default_device()) {
  return Array::create(shape, dtype, device);
}
inline Array push(const HostArray& host, const Device& device = default_device()) {
  return Array::push(host, device);
}
inline HostArray pull(const Array& a) { return a.pull(); }

}  // namespace gpix
