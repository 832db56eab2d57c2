#include "gpix/array.h"

#include <cstring>
#include <vector>

#include "detail.h"
#include "gpix/error.h"
#include "memory_pool.h"
#include "programs.h"
#include "recycling.h"
#include "util.h"

namespace gpix {

namespace detail {
ArrayImpl& Access::impl(const Array& a) {
  if (!a.impl_) throw InvalidArgument("a null gpix::Array was used; create or push one first");
  return *a.impl_;
}
}  // namespace detail

using detail::Access;
using detail::ArrayImpl;
using detail::Recycling;

namespace {

std::string dims_str(const std::vector<std::size_t>& v) {
  std::string s = "(";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + ")";
}

// A checked box in (z, y, x) with missing leading axes as origin 0, extent 1.
struct Box {
  std::size_t z = 0, y = 0, x = 0, d = 1, h = 1, w = 1;
};

Box check_box(const Shape& shape, const std::vector<std::size_t>& origin,
              const std::vector<std::size_t>& extent, std::string_view what) {
  const auto nd = static_cast<std::size_t>(shape.ndim());
  if (origin.size() != nd || extent.size() != nd) {
    throw InvalidArgument(std::string(what) + ": origin " + dims_str(origin) + " and extent " +
                          dims_str(extent) + " need one entry per axis of the " + shape.str() +
                          " array (" + std::to_string(nd) + ", in z, y, x order)");
  }
  std::size_t o[3] = {0, 0, 0}, e[3] = {1, 1, 1};
  for (std::size_t i = 0; i < nd; ++i) {
    const std::size_t dim = shape[static_cast<int>(i)];
    if (extent[i] == 0) {
      throw InvalidArgument(std::string(what) + ": extent " + dims_str(extent) +
                            " is empty along axis " + std::to_string(i) +
                            "; every extent must be at least 1");
    }
    if (origin[i] >= dim || extent[i] > dim - origin[i]) {
      throw OutOfRange(std::string(what) + ": origin " + dims_str(origin) + " + extent " +
                       dims_str(extent) + " reaches past the " + shape.str() +
                       " array along axis " + std::to_string(i) + " (size " + std::to_string(dim) +
                       "); there at most " +
                       (origin[i] < dim ? std::to_string(dim - origin[i]) + " pixels fit"
                                        : "the origin must be below " + std::to_string(dim)));
    }
    o[3 - nd + i] = origin[i];
    e[3 - nd + i] = extent[i];
  }
  return Box{o[0], o[1], o[2], e[0], e[1], e[2]};
}

Shape shape_of(const std::vector<std::size_t>& extent) {
  return Shape(std::span<const std::size_t>(extent.data(), extent.size()));
}

detail::ImageFormat image_format(const Shape& s, DType t) {
  detail::ImageFormat f;
  f.dims = s.ndim() == 3 ? 3 : 2;
  f.width = s.width();
  f.height = s.height();
  f.depth = s.depth();
  f.dtype = t;
  return f;
}

constexpr DType kImageDTypes[] = {DType::u8,  DType::i8,  DType::u16, DType::i16,
                                  DType::u32, DType::i32, DType::f32};

}  // namespace

std::string_view name(MemoryKind k) {
  return k == MemoryKind::image ? "image" : "buffer";
}

Array Array::empty(const Shape& shape, DType dtype, const Device& device) {
  if (shape.empty()) throw InvalidArgument("an array needs a shape of 1 to 3 dimensions");
  // The message only where it is needed (float64 on a device without it): every filter
  // output comes through here.
  if (dtype == DType::f64) {
    detail::require_dtype(device, dtype, [&] { return "an array of " + shape.str() + " pixels"; });
  }
  auto& dev = Access::impl(device);
  const std::size_t nbytes = shape.elements() * size_of(dtype);
  auto mem = dev.pool().allocate(nbytes);
  return Array(std::allocate_shared<ArrayImpl>(Recycling<ArrayImpl>(), Access::shared(device),
                                               std::move(mem), shape, dtype));
}

Array Array::padded(const Shape& shape, const Shape& padded_shape, DType dtype,
                    const Device& device) {
  if (shape.empty()) throw InvalidArgument("an array needs a shape of 1 to 3 dimensions");
  bool fits = padded_shape.ndim() == shape.ndim();
  for (int i = 0; fits && i < shape.ndim(); ++i) fits = padded_shape[i] >= shape[i];
  if (!fits) {
    throw InvalidArgument("padded_shape " + padded_shape.str() + " must have the " +
                          std::to_string(shape.ndim()) + " dims of shape " + shape.str() +
                          " and be at least as large along each");
  }
  detail::require_dtype(device, dtype, [&] { return "an array of " + shape.str() + " pixels"; });
  auto& dev = Access::impl(device);
  auto mem = dev.pool().allocate(padded_shape.elements() * size_of(dtype));
  auto impl = std::allocate_shared<ArrayImpl>(Recycling<ArrayImpl>(), Access::shared(device),
                                              std::move(mem), shape, dtype);
  impl->padded = padded_shape;
  return Array(std::move(impl));
}

Array Array::empty_image(const Shape& shape, DType dtype, const Device& device) {
  if (shape.empty()) throw InvalidArgument("an image needs a shape of 1 to 3 dimensions");
  auto& dev = Access::impl(device);
  if (!device.info().images) {
    throw UnsupportedFeature("'" + device.name() +
                             "' has no image support; use a buffer array or another device");
  }
  const detail::ImageFormat f = image_format(shape, dtype);
  if (!dev.image_supported(dtype, f.dims)) {
    std::string ok;
    for (DType t : kImageDTypes) {
      if (dev.image_supported(t, f.dims))
        ok += (ok.empty() ? "" : " ") + std::string(short_name(t));
    }
    throw UnsupportedDType("a " + std::to_string(f.dims) + "D image of " +
                           std::string(name(dtype)) + " is not available on '" + device.name() +
                           "'; image dtypes there: " + (ok.empty() ? "none" : ok) +
                           " (one channel; gpix maps u8 i8 u16 i16 u32 i32 f32)");
  }
  auto mem = dev.pool().allocate_image(f);
  auto impl = std::allocate_shared<ArrayImpl>(Recycling<ArrayImpl>(), Access::shared(device),
                                              std::move(mem), shape, dtype);
  impl->kind = MemoryKind::image;
  return Array(std::move(impl));
}

Array Array::to_image() const {
  Array img = empty_image(shape(), dtype(), device());
  img.copy_from(*this);
  return img;
}

Array Array::to_buffer() const {
  Array b = empty(shape(), dtype(), device());
  b.copy_from(*this);
  return b;
}

Array Array::create(const Shape& shape, DType dtype, const Device& device) {
  Array a = empty(shape, dtype, device);
  a.zero();
  return a;
}

Array Array::push(const HostArray& host, const Device& device) {
  if (!host.valid()) throw InvalidArgument("push() was given an empty HostArray");
  Array a = empty(host.shape(), host.dtype(), device);
  detail::write_all(*a.impl_, host.data(), host.is_pinned());
  return a;
}

HostArray Array::pull() const {
  HostArray h = HostArray::empty(shape(), dtype());
  read(h.data(), h.bytes());
  return h;
}

HostArray empty_like(const Array& a) {
  return HostArray::pinned(a.shape(), a.dtype(), a.device());
}

void Array::write(const void* src, std::size_t nbytes) {
  auto& a = Access::impl(*this);
  if (nbytes != bytes()) {
    throw InvalidArgument("the host buffer has " + std::to_string(nbytes) + " bytes but the " +
                          shape().str() + " " + std::string(name(dtype())) + " array needs " +
                          std::to_string(bytes()));
  }
  if (!src) throw InvalidArgument("write() was given a null host pointer");
  detail::write_all(a, src, false);
}

void Array::read(void* dst, std::size_t nbytes) const {
  auto& a = Access::impl(*this);
  if (nbytes != bytes()) {
    throw InvalidArgument("the host buffer has " + std::to_string(nbytes) + " bytes but the " +
                          shape().str() + " " + std::string(name(dtype())) + " array holds " +
                          std::to_string(bytes()));
  }
  if (!dst) throw InvalidArgument("read() was given a null host pointer");
  detail::read_all(a, dst, false);
}

void Array::write(const HostArray& src) {
  auto& a = Access::impl(*this);
  if (!src.valid() || src.shape() != a.shape || src.dtype() != a.dtype) {
    throw InvalidArgument("write(): the HostArray must have the array's shape " + a.shape.str() +
                          " and dtype " + std::string(name(a.dtype)));
  }
  detail::write_all(a, src.data(), src.is_pinned());
}

void Array::read(HostArray& dst) const {
  auto& a = Access::impl(*this);
  if (!dst.valid() || dst.shape() != a.shape || dst.dtype() != a.dtype) {
    throw InvalidArgument("read(): the HostArray must have the array's shape " + a.shape.str() +
                          " and dtype " + std::string(name(a.dtype)));
  }
  detail::read_all(a, dst.data(), dst.is_pinned());
}

HostArray Array::read_region(const Region& region) const {
  auto& a = Access::impl(*this);
  const Box b = check_box(a.shape, region.origin, region.extent, "read_region");
  HostArray h = HostArray::empty(shape_of(region.extent), a.dtype);
  const std::size_t row = b.w * a.element_bytes();
  a.device
      ->read_rect(a.device->default_queue(), *a.memory, a.at(b.z, b.y, b.x), h.data(),
                  detail::Pitched{{0, 0, 0}, row, row * b.h}, a.extent(b.d, b.h, b.w), {})
      ->wait();
  return h;
}

void Array::write_region(const Region& region, const HostArray& src) {
  auto& a = Access::impl(*this);
  const Box b = check_box(a.shape, region.origin, region.extent, "write_region");
  if (!src.valid() || src.dtype() != a.dtype || src.elements() != b.d * b.h * b.w ||
      src.shape() != shape_of(region.extent)) {
    throw InvalidArgument("write_region: the source must be a " + std::string(name(a.dtype)) +
                          " HostArray of the region's extent " + dims_str(region.extent) +
                          (src.valid()
                               ? ", not " + src.shape().str() + " " + std::string(name(src.dtype()))
                               : ", not an empty HostArray"));
  }
  const std::size_t row = b.w * a.element_bytes();
  a.device
      ->write_rect(a.device->default_queue(), *a.memory, a.at(b.z, b.y, b.x), src.data(),
                   detail::Pitched{{0, 0, 0}, row, row * b.h}, a.extent(b.d, b.h, b.w), {})
      ->wait();
}

void copy_region(const Array& src, const std::vector<std::size_t>& src_origin, Array& dst,
                 const std::vector<std::size_t>& dst_origin,
                 const std::vector<std::size_t>& extent) {
  auto& s = Access::impl(src);
  auto& d = Access::impl(dst);
  if (s.dtype != d.dtype) {
    throw InvalidArgument("copy_region: source is " + std::string(name(s.dtype)) +
                          " but destination is " + std::string(name(d.dtype)) +
                          "; dtypes must match");
  }
  const Box sb = check_box(s.shape, src_origin, extent, "copy_region (source)");
  const Box db = check_box(d.shape, dst_origin, extent, "copy_region (destination)");
  if (s.memory == d.memory) {
    // Two boxes of one allocation: through a copy of the source box, so that boxes that
    // overlap read the source as it was (OpenCL refuses a copy within one buffer whose
    // regions overlap, CL_MEM_COPY_OVERLAP; CUDA leaves it undefined).
    Array tmp = Array::empty(shape_of(extent), s.dtype, src.device());
    const std::vector<std::size_t> zero(extent.size(), 0);
    copy_region(src, src_origin, tmp, zero, extent);
    copy_region(tmp, zero, dst, dst_origin, extent);
    return;
  }
  detail::copy_box(s, s.at(sb.z, sb.y, sb.x), d, d.at(db.z, db.y, db.x),
                   s.extent(sb.d, sb.h, sb.w));
}

Mapping Array::map(MapMode mode) {
  auto impl = impl_;
  auto& a = Access::impl(*this);
  if (a.kind == MemoryKind::image) {
    throw InvalidArgument(
        "map() works on buffer arrays; pull() the image or copy it with "
        "to_buffer() first");
  }
  const std::size_t n = a.span_bytes();
  // A region view's mapping starts at its first pixel and runs to the allocation's end.
  const std::size_t first = a.first_byte();
  // The whole allocation is mapped, and a write-only mapping neither reads it (CUDA's pinned
  // block) nor keeps it (OpenCL's CL_MAP_WRITE_INVALIDATE_REGION), yet is written back whole:
  // for a region view or a padded array that would replace the pixels around it (the parent's,
  // the padding) by undefined bytes. Those read them first.
  if (mode == MapMode::write && (first != 0 || n != a.shape.elements() * size_of(a.dtype)))
    mode = MapMode::read_write;
  void* p = a.device->map(*a.memory, 0, n, static_cast<detail::MapAccess>(mode));
  return Mapping(static_cast<std::byte*>(p) + first, n - first, a.dtype,
                 [impl, p] { impl->device->unmap(*impl->memory, p); });
}

Array Array::view(const Region& region) const {
  auto& a = Access::impl(*this);
  const Box b = check_box(a.shape, region.origin, region.extent, "view");
  auto v = std::allocate_shared<ArrayImpl>(Recycling<ArrayImpl>(), a);
  v->shape = shape_of(region.extent);
  v->view = true;
  v->region = true;
  v->origin = {a.origin[0] + b.z, a.origin[1] + b.y, a.origin[2] + b.x};
  return Array(std::move(v));
}

Array Array::reshape(const Shape& new_shape, bool* copied) const {
  auto& a = Access::impl(*this);
  if (new_shape.elements() != a.shape.elements()) {
    throw InvalidArgument("cannot reshape a " + a.shape.str() + " array (" +
                          std::to_string(a.shape.elements()) + " pixels) to " + new_shape.str() +
                          " (" + std::to_string(new_shape.elements()) + " pixels)");
  }
  if (a.contiguous()) {
    auto v = std::allocate_shared<ArrayImpl>(Recycling<ArrayImpl>(), a.device, a.memory, new_shape,
                                             a.dtype);
    v->view = true;
    if (copied) *copied = false;
    return Array(std::move(v));
  }
  Array c = to_buffer();
  Access::impl(c).shape = new_shape;
  Access::impl(c).padded = new_shape;
  if (copied) *copied = true;
  return c;
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
  if (same_memory(src)) {
    // The same pixels: nothing to copy. Two views of one allocation at other places (region
    // views of other parts, which may overlap): through a copy of the source, so that the
    // destination's writes cannot change what is still to be read.
    if (s.origin == d.origin && s.padded == d.padded) return;
    copy_from(src.copy());
    return;
  }
  if (s.device == d.device && s.contiguous() && d.contiguous()) {
    d.device->copy(*s.memory, 0, *d.memory, 0, bytes());
    d.device->finish();  // blocking, as documented: work on other queues may read it next
    return;
  }
  detail::copy_box(s, s.at(), d, d.at(), s.whole());
}

void Array::fill(Scalar value) {
  auto& a = Access::impl(*this);
  visit_dtype(a.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T v = value.exact_as<T>();
    if (a.kind == MemoryKind::image || a.region) {
      std::vector<T> host(a.shape.elements(), v);
      detail::write_all(a, host.data(), false);
      return;
    }
    // The padding is filled too: its contents are undefined anyway.
    a.device->fill(*a.memory, 0, a.span_bytes(), &v, sizeof(T));
    a.device->finish();  // blocking, as documented: work on other queues may read it next
  });
}

void Array::zero() {
  auto& a = Access::impl(*this);
  if (a.kind == MemoryKind::image || a.region) {  // the rest of the allocation is not ours
    std::vector<std::byte> host(a.shape.elements() * a.element_bytes());
    detail::write_all(a, host.data(), false);
    return;
  }
  const std::uint32_t z = 0;
  // A 4-byte pattern is faster where the size allows it.
  const std::size_t n = a.span_bytes();
  a.device->fill(*a.memory, 0, n, &z, n % 4 == 0 ? 4 : 1);
  a.device->finish();
}

const Shape& Array::shape() const {
  return Access::impl(*this).shape;
}
DType Array::dtype() const {
  return Access::impl(*this).dtype;
}
Device Array::device() const {
  return Access::device(Access::impl(*this).device);
}
MemoryKind Array::kind() const {
  return Access::impl(*this).kind;
}
const Shape& Array::padded_shape() const {
  return Access::impl(*this).padded;
}
std::size_t Array::row_pitch() const {
  return Access::impl(*this).row_pitch();
}
std::size_t Array::slice_pitch() const {
  return Access::impl(*this).slice_pitch();
}
bool Array::is_contiguous() const {
  return Access::impl(*this).contiguous();
}
bool Array::is_view() const {
  return Access::impl(*this).view;
}
bool Array::same_memory(const Array& other) const noexcept {
  return impl_ && other.impl_ && impl_->memory == other.impl_->memory;
}

void Array::check_dtype(DType requested) const {
  if (requested != dtype()) {
    throw UnsupportedDType("the array holds " + std::string(name(dtype())) +
                           " pixels but was pulled as " + std::string(name(requested)) +
                           "; use pull_as<T>() with the matching type, or pull()");
  }
}

// ---- asynchronous transfers

namespace {

std::string size_mismatch(const ArrayImpl& a, std::size_t nbytes) {
  return "the host buffer has " + std::to_string(nbytes) + " bytes but the " + a.shape.str() + " " +
         std::string(name(a.dtype)) + " array has " +
         std::to_string(a.shape.elements() * a.element_bytes());
}

detail::Pitched dense(const ArrayImpl& a) {
  const std::size_t row = a.shape.width() * a.element_bytes();
  return detail::Pitched{{0, 0, 0}, row, row * a.shape.height()};
}

}  // namespace

Event push_async(const void* src, std::size_t nbytes, Array& dst, const Queue& queue,
                 const std::vector<Event>& after) {
  auto& a = Access::impl(dst);
  if (nbytes != dst.bytes()) throw InvalidArgument("push_async: " + size_mismatch(a, nbytes));
  if (!src) throw InvalidArgument("push_async was given a null host pointer");
  auto s = detail::submission(a.device, queue, after);
  s.after_earlier_owners({a.memory.get()});
  auto e = a.device->write_rect(*s.queue, *a.memory, a.at(), src, dense(a), a.whole(), s.span());
  // The destination stays allocated until the transfer is done, even if dst is dropped.
  return detail::make_event(std::move(e), a.device, {Access::shared(dst)});
}

Event push_async(const HostArray& src, Array& dst, const Queue& queue,
                 const std::vector<Event>& after) {
  auto& a = Access::impl(dst);
  if (!src.valid() || src.shape() != a.shape || src.dtype() != a.dtype) {
    throw InvalidArgument("push_async: the HostArray must have the array's shape " + a.shape.str() +
                          " and dtype " + std::string(name(a.dtype)));
  }
  auto s = detail::submission(a.device, queue, after);
  s.after_earlier_owners({a.memory.get()});
  auto e =
      a.device->write_rect(*s.queue, *a.memory, a.at(), src.data(), dense(a), a.whole(), s.span());
  return detail::make_event(std::move(e), a.device, {Access::keep(src), Access::shared(dst)});
}

Event pull_async(const Array& src, void* dst, std::size_t nbytes, const Queue& queue,
                 const std::vector<Event>& after) {
  auto& a = Access::impl(src);
  if (nbytes != src.bytes()) throw InvalidArgument("pull_async: " + size_mismatch(a, nbytes));
  if (!dst) throw InvalidArgument("pull_async was given a null host pointer");
  auto s = detail::submission(a.device, queue, after);
  s.after_earlier_owners({a.memory.get()});
  auto e = a.device->read_rect(*s.queue, *a.memory, a.at(), dst, dense(a), a.whole(), s.span());
  return detail::make_event(std::move(e), a.device, {Access::shared(src)});
}

Event pull_async(const Array& src, HostArray& dst, const Queue& queue,
                 const std::vector<Event>& after) {
  auto& a = Access::impl(src);
  if (!dst.valid() || dst.shape() != a.shape || dst.dtype() != a.dtype) {
    throw InvalidArgument("pull_async: the HostArray must have the array's shape " + a.shape.str() +
                          " and dtype " + std::string(name(a.dtype)) +
                          " (HostArray::empty or empty_like(array) make one)");
  }
  auto s = detail::submission(a.device, queue, after);
  s.after_earlier_owners({a.memory.get()});
  auto e =
      a.device->read_rect(*s.queue, *a.memory, a.at(), dst.data(), dense(a), a.whole(), s.span());
  return detail::make_event(std::move(e), a.device, {Access::keep(dst), Access::shared(src)});
}

Event copy_async(const Array& src, Array& dst, const Queue& queue,
                 const std::vector<Event>& after) {
  auto& s = Access::impl(src);
  auto& d = Access::impl(dst);
  if (s.shape != d.shape || s.dtype != d.dtype) {
    throw InvalidArgument("copy_async: cannot copy a " + s.shape.str() + " " +
                          std::string(name(s.dtype)) + " array into a " + d.shape.str() + " " +
                          std::string(name(d.dtype)) + " array; shapes and dtypes must match");
  }
  auto sub = detail::submission(d.device, queue, after);
  if (s.device != d.device) {
    // Staged through the host before returning (documented): wait for the queue's earlier
    // work and the events first, so the order is kept.
    d.device->marker(*sub.queue, sub.span())->wait();
    detail::copy_box(s, s.at(), d, d.at(), s.whole());
    return {};
  }
  if (s.memory == d.memory) {
    // Two views of one allocation (which may overlap): through a temporary, as copy_region
    // does, in queue order (OpenCL refuses an overlapping copy within one buffer,
    // CL_MEM_COPY_OVERLAP; CUDA's gives undefined pixels).
    Array tmp = Array::empty(src.shape(), src.dtype(), src.device());
    auto& t = Access::impl(tmp);
    sub.after_earlier_owners({s.memory.get(), t.memory.get()});
    auto first =
        detail::copy_box_async(*d.device, *sub.queue, s, s.at(), t, t.at(), s.whole(), sub.span());
    detail::EventImpl* const after_first[] = {first.get()};
    auto e =
        detail::copy_box_async(*d.device, *sub.queue, t, t.at(), d, d.at(), s.whole(), after_first);
    return detail::make_event(std::move(e), d.device,
                              {Access::shared(src), Access::shared(dst), Access::shared(tmp)});
  }
  sub.after_earlier_owners({s.memory.get(), d.memory.get()});
  auto e =
      detail::copy_box_async(*d.device, *sub.queue, s, s.at(), d, d.at(), s.whole(), sub.span());
  return detail::make_event(std::move(e), d.device, {Access::shared(src), Access::shared(dst)});
}

Event fill_async(Array& dst, Scalar value, const Queue& queue, const std::vector<Event>& after) {
  auto& a = Access::impl(dst);
  if (a.kind == MemoryKind::image || a.region) {
    throw InvalidArgument(std::string("fill_async works on whole buffer arrays; use fill() on ") +
                          (a.region ? "a region view" : "an image"));
  }
  return visit_dtype(a.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T v = value.exact_as<T>();
    auto s = detail::submission(a.device, queue, after);
    s.after_earlier_owners({a.memory.get()});
    auto e = a.device->fill_async(*s.queue, *a.memory, 0, a.span_bytes(), &v, sizeof(T), s.span());
    return detail::make_event(std::move(e), a.device, {Access::shared(dst)});
  });
}

}  // namespace gpix
