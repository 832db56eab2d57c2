#include "gpix/array.h"

#include <vector>

#include "detail.h"
#include "gpix/error.h"
#include "programs.h"
#include "util.h"

namespace gpix {

namespace detail {
ArrayImpl& Access::impl(const Array& a) {
  if (!a.impl_) throw InvalidArgument("a null gpix::Array was used; create or push one first");
  return *a.impl_;
}
}  // namespace detail

using detail::Access;

std::string_view name(MemoryKind k) { return k == MemoryKind::image ? "image" : "buffer"; }

Array Array::empty(const Shape& shape, DType dtype, const Device& device) {
  if (shape.empty()) throw InvalidArgument("an array needs a shape of 1 to 3 dimensions");
  detail::require_dtype(device, dtype, "an array of " + shape.str() + " pixels");
  auto& dev = Access::impl(device);
  const std::size_t nbytes = shape.elements() * size_of(dtype);
  auto mem = dev.allocate(nbytes);
  return Array(std::make_shared<detail::ArrayImpl>(Access::shared(device), std::move(mem), shape,
                                                   dtype));
}

Array Array::create(const Shape& shape, DType dtype, const Device& device) {
  Array a = empty(shape, dtype, device);
  a.zero();
  return a;
}

Array Array::push(const HostArray& host, const Device& device) {
  if (!host.valid()) throw InvalidArgument("push() was given an empty HostArray");
  Array a = empty(host.shape(), host.dtype(), device);
  a.write(host.data(), host.bytes());
  return a;
}

HostArray Array::pull() const {
  HostArray h = HostArray::empty(shape(), dtype());
  read(h.data(), h.bytes());
  return h;
}

void Array::write(const void* src, std::size_t nbytes) {
  auto& a = Access::impl(*this);
  if (nbytes != bytes()) {
    throw InvalidArgument("the host buffer has " + std::to_string(nbytes) + " bytes but the " +
                          shape().str() + " " + std::string(name(dtype())) + " array needs " +
                          std::to_string(bytes()));
  }
  if (!src) throw InvalidArgument("write() was given a null host pointer");
  a.device->write(*a.memory, 0, src, nbytes);
}

void Array::read(void* dst, std::size_t nbytes) const {
  auto& a = Access::impl(*this);
  if (nbytes != bytes()) {
    throw InvalidArgument("the host buffer has " + std::to_string(nbytes) + " bytes but the " +
                          shape().str() + " " + std::string(name(dtype())) + " array holds " +
                          std::to_string(bytes()));
  }
  if (!dst) throw InvalidArgument("read() was given a null host pointer");
  a.device->read(*a.memory, 0, dst, nbytes);
}

Array Array::copy() const {
  Array c = empty(shape(), dtype(), device());
  c.copy_from(*this);
  return c;
}

void Array::copy_from(const Array& src) {
  auto& d = Access::impl(*this);
  auto& s = Access::impl(src);
  if (s.shape != d.shape || s.dtype != d.dtype) {
    throw InvalidArgument("cannot copy a " + s.shape.str() + " " + std::string(name(s.dtype)) +
                          " array into a " + d.shape.str() + " " + std::string(name(d.dtype)) +
                          " array; shapes and dtypes must match");
  }
  if (same_memory(src)) return;
  if (s.device == d.device) {
    d.device->copy(*s.memory, 0, *d.memory, 0, bytes());
    return;
  }
  // Different devices: staged through host memory.
  std::vector<std::byte> staging(bytes());
  s.device->read(*s.memory, 0, staging.data(), staging.size());
  d.device->write(*d.memory, 0, staging.data(), staging.size());
}

void Array::fill(Scalar value) {
  auto& a = Access::impl(*this);
  visit_dtype(a.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T v = value.exact_as<T>();
    a.device->fill(*a.memory, 0, bytes(), &v, sizeof(T));
  });
}

void Array::zero() {
  auto& a = Access::impl(*this);
  const std::uint32_t z = 0;
  // A 4-byte pattern is faster where the size allows it.
  if (bytes() % 4 == 0) {
    a.device->fill(*a.memory, 0, bytes(), &z, 4);
  } else {
    a.device->fill(*a.memory, 0, bytes(), &z, 1);
  }
}

const Shape& Array::shape() const { return Access::impl(*this).shape; }
DType Array::dtype() const { return Access::impl(*this).dtype; }
Device Array::device() const { return Access::device(Access::impl(*this).device); }
MemoryKind Array::kind() const { return Access::impl(*this).kind; }

void Array::check_dtype(DType requested) const {
  if (requested != dtype()) {
    throw UnsupportedDType("the array holds " + std::string(name(dtype())) +
                           " pixels but was pulled as " + std::string(name(requested)) +
                           "; use pull_as<T>() with the matching type, or pull()");
  }
}

}  // namespace gpix
