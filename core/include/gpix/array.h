#pragma once
// Arrays in device memory. An Array is a handle: copies share the device memory, copy()
// makes a deep copy on the same device. All operations are blocking unless named *_async.
//
// Layout: an array of shape (z, y, x) lives in an allocation of padded_shape() (equal to
// shape() unless made with Array::padded()); the usable part sits at the origin, rows are
// row_pitch() bytes apart and slices slice_pitch() bytes apart. Every transfer, fill, copy
// and stats() honours the pitches; the padding's contents are undefined.
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "gpix/device.h"
#include "gpix/dtype.h"
#include "gpix/host_array.h"
#include "gpix/queue.h"
#include "gpix/scalar.h"
#include "gpix/shape.h"

namespace gpix {

namespace detail {
class ArrayImpl;
}  // namespace detail

enum class MemoryKind : std::uint8_t { buffer, image };
std::string_view name(MemoryKind k);  // "buffer", "image"

// A box of an array: origin and extent per axis in (z, y, x) order, as many entries as the
// array has dimensions. Regions that reach outside the array raise OutOfRange.
struct Region {
  std::vector<std::size_t> origin;
  std::vector<std::size_t> extent;
};

enum class MapMode : std::uint8_t { read = 1, write = 2, read_write = 3 };

// Host access to device memory (Array::map, SharedBuffer::map), released at scope end
// (unmap; for write modes the device then sees what was written). Move-only. For a padded
// array the mapping covers the whole allocation: element (z, y, x) is at byte
// z * slice_pitch + y * row_pitch + x * element size.
class Mapping {
 public:
  Mapping() = default;
  Mapping(std::byte* data, std::size_t bytes, DType dtype, std::function<void()> unmap)
      : data_(data), bytes_(bytes), dtype_(dtype), unmap_(std::move(unmap)) {}
  Mapping(Mapping&& o) noexcept { swap(o); }
  Mapping& operator=(Mapping&& o) noexcept {
    if (this != &o) {
      Mapping tmp(std::move(o));
      swap(tmp);
    }
    return *this;
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  // A failed unmap (a device lost) cannot throw from here: the destructor swallows it, where
  // unmap() would have thrown DeviceError.
  ~Mapping() {
    try {
      unmap();
    } catch (...) {  // NOLINT(bugprone-empty-catch): see above
    }
  }

  std::byte* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  bool valid() const noexcept { return data_ != nullptr; }
  // The mapped memory as T; throws UnsupportedDType when T is not the dtype.
  template <Pixel T>
  std::span<T> as() const {
    if (dtype_of<T> != dtype_) {
      throw UnsupportedDType("the mapping holds " + std::string(name(dtype_)) +
                             " pixels but was read as " + std::string(name(dtype_of<T>)));
    }
    return {reinterpret_cast<T*>(data_), bytes_ / sizeof(T)};
  }
  // Ends the mapping now (what the destructor does). Throws DeviceError if unmapping fails.
  void unmap() {
    if (unmap_) {
      auto f = std::exchange(unmap_, nullptr);
      data_ = nullptr;
      f();
    }
  }

 private:
  void swap(Mapping& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    std::swap(dtype_, o.dtype_);
    std::swap(unmap_, o.unmap_);
  }
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
  DType dtype_ = DType::u8;
  std::function<void()> unmap_;
};

class Array {
 public:
  Array() = default;  // a null array; valid() is false

  // Zero-filled array. Throws InvalidArgument (bad shape), UnsupportedDType (f64 on a device
  // without fp64) or OutOfMemory (larger than the device's max allocation or free memory).
  static Array create(const Shape& shape, DType dtype, const Device& device = default_device());
  // Like create() but the contents are undefined (no fill pass).
  static Array empty(const Shape& shape, DType dtype, const Device& device = default_device());
  // An array of shape in an allocation of padded_shape (same dims, each extent at least
  // shape's), e.g. rows padded to a multiple of 64 pixels. Contents undefined.
  static Array padded(const Shape& shape, const Shape& padded_shape, DType dtype,
                      const Device& device = default_device());
  // An image object (MemoryKind::image; OpenCL image2d/3d, a CUDA array): 1D and 2D shapes
  // make 2D images, 3D shapes 3D images. dtype must be one of u8 i8 u16 i16 u32 i32 f32
  // (UnsupportedDType names them otherwise); UnsupportedFeature where the device has no
  // images. Contents undefined. push/pull/copy/fill work as on buffers; kernels read it
  // through a Sampler (image.h).
  static Array empty_image(const Shape& shape, DType dtype,
                           const Device& device = default_device());
  // A copy of this array as an image / as a contiguous buffer.
  Array to_image() const;
  Array to_buffer() const;
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
  // The same with a HostArray of the array's shape and dtype; a pinned one moves directly,
  // ordinary ones over 16 MB are staged through pinned chunks.
  void write(const HostArray& src);
  void read(HostArray& dst) const;

  // Regions (see Region). read_region returns a HostArray of the region's extent;
  // write_region's source must have exactly that shape and the array's dtype.
  HostArray read_region(const Region& region) const;
  void write_region(const Region& region, const HostArray& src);

  // Host access to the array's memory until the Mapping ends. Buffers only (InvalidArgument
  // for images: pull or copy them instead). A region view's mapping starts at its first pixel
  // and keeps the allocation's pitches.
  Mapping map(MapMode mode);

  // A view of a box of this array that shares its memory (is_view() is true): writes through
  // either are seen by the other. The view keeps the allocation's pitches, so it is not
  // contiguous (unless it is the whole array); every gpix operation honours that (filters
  // read it through one contiguous copy). OutOfRange when the box leaves the array.
  Array view(const Region& region) const;

  // The same pixels in a new shape with as many elements. A contiguous array gives a view
  // that shares its memory (is_view() is true, *copied false); a padded array is copied into
  // a contiguous one (*copied true).
  Array reshape(const Shape& shape, bool* copied = nullptr) const;

  // Deep copy on the same device (contiguous, even if this array is padded).
  Array copy() const;
  // Copies src's pixels into this array; shapes and dtypes must match. Works across devices
  // (staged through host memory when the devices differ), and between views of one
  // allocation, overlapping or not (as if through a copy of src).
  void copy_from(const Array& src);
  // Sets every pixel to value (of a region view: only the view's). Throws InvalidArgument when
  // value is not exactly representable in the dtype (300 in u8, 1.5 in i32, NaN in an integer
  // type): gpix does not round or clamp.
  void fill(Scalar value);
  void zero();

  bool valid() const noexcept { return impl_ != nullptr; }
  explicit operator bool() const noexcept { return valid(); }
  const Shape& shape() const;
  DType dtype() const;
  Device device() const;
  MemoryKind kind() const;
  const Shape& padded_shape() const;
  std::size_t row_pitch() const;    // bytes between rows (y)
  std::size_t slice_pitch() const;  // bytes between slices (z)
  // Whether the pixels fill their memory without gaps (not padded, not an image, not a region
  // view).
  bool is_contiguous() const;
  // Whether this array was made by reshape() or view() and shares another array's memory.
  bool is_view() const;
  int ndim() const { return shape().ndim(); }
  std::size_t elements() const { return shape().elements(); }
  std::size_t bytes() const { return elements() * size_of(dtype()); }
  // Whether two handles share the same device memory (handle copies and reshape views).
  bool same_memory(const Array& other) const noexcept;

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
inline HostArray pull(const Array& a) {
  return a.pull();
}

// A pinned HostArray (HostArray::pinned) with a's shape and dtype, on a's device: the
// fastest host side for a's pushes and pulls. Contents undefined.
HostArray empty_like(const Array& a);

// Copies a box of extent (z, y, x) from src at src_origin to dst at dst_origin; both arrays
// have as many dims as extent has entries, the same dtype, and may have different shapes,
// padding, kinds and devices. OutOfRange when a box leaves its array.
void copy_region(const Array& src, const std::vector<std::size_t>& src_origin, Array& dst,
                 const std::vector<std::size_t>& dst_origin,
                 const std::vector<std::size_t>& extent);

// ---- asynchronous transfers (see queue.h). A null queue means dst's (or src's) device's
// default queue; a queue of another device is an InvalidArgument. Events of another device
// in after are waited for on the host before the work is submitted.

// Host -> device. The HostArray overload keeps src alive until the event completes; the raw
// overload needs the caller to keep src alive and unchanged until then.
Event push_async(const HostArray& src, Array& dst, const Queue& queue = {},
                 const std::vector<Event>& after = {});
Event push_async(const void* src, std::size_t nbytes, Array& dst, const Queue& queue = {},
                 const std::vector<Event>& after = {});
// Device -> host. dst must have src's shape and dtype (or nbytes == src.bytes()); the
// HostArray is kept alive until the event completes; read it only after that.
Event pull_async(const Array& src, HostArray& dst, const Queue& queue = {},
                 const std::vector<Event>& after = {});
Event pull_async(const Array& src, void* dst, std::size_t nbytes, const Queue& queue = {},
                 const std::vector<Event>& after = {});
// Device -> device on one device (shapes and dtypes match). Between two devices the copy is
// staged through pinned host memory and runs before the call returns (the event is then
// complete); the queue must belong to dst's device.
Event copy_async(const Array& src, Array& dst, const Queue& queue = {},
                 const std::vector<Event>& after = {});
// Sets every pixel (buffers only), like Array::fill.
Event fill_async(Array& dst, Scalar value, const Queue& queue = {},
                 const std::vector<Event>& after = {});

}  // namespace gpix
