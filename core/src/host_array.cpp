#include "gpix/host_array.h"

#include <cstdint>
#include <new>
#include <string>

#include "detail.h"
#include "util.h"

namespace gpix {

HostArray::HostArray(const Shape& shape, DType dtype) : HostArray(shape, dtype, NoInit{}) {
  std::memset(data(), 0, bytes());
}

HostArray HostArray::empty(const Shape& shape, DType dtype) {
  return {shape, dtype, NoInit{}};
}

HostArray::HostArray(const Shape& shape, DType dtype, NoInit) : shape_(shape), dtype_(dtype) {
  if (shape.empty()) throw InvalidArgument("a HostArray needs a shape of 1 to 3 dimensions");
  const std::size_t n = bytes();
  constexpr std::align_val_t kAlign{64};
  std::byte* p = static_cast<std::byte*>(::operator new(n, kAlign, std::nothrow));
  if (!p) {
    throw OutOfMemory("cannot allocate " + human_bytes(n) + " of host memory for a " + shape.str() +
                          " " + std::string(name(dtype)) + " array",
                      n);
  }
  data_ = std::shared_ptr<std::byte[]>(p, [kAlign](std::byte* q) { ::operator delete(q, kAlign); });
}

HostArray HostArray::pinned(const Shape& shape, DType dtype, const Device& device) {
  if (shape.empty()) throw InvalidArgument("a HostArray needs a shape of 1 to 3 dimensions");
  auto& dev = detail::Access::impl(device);
  const std::size_t n = shape.elements() * size_of(dtype);
  std::shared_ptr<detail::HostMemory> mem = dev.allocate_host(n);
  HostArray h;
  h.shape_ = shape;
  h.dtype_ = dtype;
  auto* p = static_cast<std::byte*>(mem->data());
  h.data_ = std::shared_ptr<std::byte[]>(p, [mem](std::byte*) mutable { mem.reset(); });
  h.pinned_for_ = device;
  return h;
}

void HostArray::check_size(std::size_t n, const Shape& shape) {
  if (n != shape.elements()) {
    throw InvalidArgument("the host data holds " + std::to_string(n) + " elements but the shape " +
                          shape.str() + " needs " + std::to_string(shape.elements()));
  }
}

void HostArray::check_type(DType requested) const {
  if (requested != dtype_) {
    throw UnsupportedDType("the host array holds " + std::string(name(dtype_)) +
                           " pixels but was read as " + std::string(name(requested)) +
                           "; use as<T>() with the matching type");
  }
}

HostArray HostArray::wrap(std::byte* data, const Shape& shape, DType dtype,
                          std::shared_ptr<void> owner) {
  if (shape.empty()) throw InvalidArgument("a HostArray needs a shape of 1 to 3 dimensions");
  if (!data) throw InvalidArgument("HostArray::wrap() was given a null pointer");
  if (reinterpret_cast<std::uintptr_t>(data) % size_of(dtype) != 0) {
    throw InvalidArgument("HostArray::wrap(): the " + std::string(name(dtype)) + " pixels at " +
                          std::to_string(reinterpret_cast<std::uintptr_t>(data)) +
                          " are not aligned to " + std::to_string(size_of(dtype)) +
                          " bytes; copy them instead");
  }
  HostArray h;
  h.shape_ = shape;
  h.dtype_ = dtype;
  h.data_ = std::shared_ptr<std::byte[]>(std::move(owner), data);
  return h;
}

HostArray HostArray::clone() const {
  if (!valid()) return {};
  HostArray c = is_pinned() ? pinned(shape_, dtype_, pinned_for_) : empty(shape_, dtype_);
  std::memcpy(c.data(), data(), bytes());
  return c;
}

}  // namespace gpix
