#include "gpix/svm.h"

#include "detail.h"
#include "gpix/error.h"
#include "util.h"

namespace gpix {

using detail::Access;

struct SharedBuffer::State {
  std::shared_ptr<detail::DeviceImpl> device;
  void* ptr = nullptr;
  std::size_t bytes = 0;
  ~State() {
    if (ptr) device->svm_free(ptr);
  }
};

bool supports_svm(const Device& device) {
  return Access::impl(device).svm_supported();
}

SharedBuffer SharedBuffer::allocate(std::size_t bytes, const Device& device) {
  auto& dev = Access::impl(device);
  if (!dev.svm_supported()) {
    std::string with;
    for (const Device& d : devices()) {
      if (Access::impl(d).svm_supported()) with += (with.empty() ? "" : ", ") + d.label();
    }
    throw UnsupportedFeature("'" + device.label() +
                                 "' has no coarse-grain shared virtual memory (it needs OpenCL "
                                 "2.0 SVM); devices with it: " +
                                 (with.empty() ? "none" : with) +
                                 ". Use an Array with map() instead",
                             "GPIX_NO_SVM");
  }
  if (bytes == 0) throw InvalidArgument("SharedBuffer::allocate needs at least 1 byte");
  auto st = std::make_shared<State>();
  st->device = Access::shared(device);
  st->ptr = dev.svm_allocate(bytes);
  st->bytes = bytes;
  SharedBuffer b;
  b.s_ = std::move(st);
  return b;
}

std::size_t SharedBuffer::bytes() const {
  return s_ ? s_->bytes : 0;
}
Device SharedBuffer::device() const {
  if (!s_) throw InvalidArgument("a null SharedBuffer was used");
  return Access::device(s_->device);
}
void* SharedBuffer::data() const {
  return s_ ? s_->ptr : nullptr;
}

Mapping SharedBuffer::map(MapMode mode) {
  if (!s_) throw InvalidArgument("a null SharedBuffer was used");
  auto st = s_;
  st->device->svm_map(st->ptr, st->bytes, static_cast<detail::MapAccess>(mode));
  return Mapping(static_cast<std::byte*>(st->ptr), st->bytes, DType::u8,
                 [st] { st->device->svm_unmap(st->ptr); });
}

namespace {
void check_pair(const SharedBuffer& b, const Array& a, const char* what) {
  auto& impl = Access::impl(a);
  if (!b.valid()) throw InvalidArgument(std::string(what) + ": null SharedBuffer");
  if (!a.is_contiguous() || a.bytes() != b.bytes() || !(a.device() == b.device())) {
    throw InvalidArgument(std::string(what) + ": needs a contiguous buffer array of " +
                          std::to_string(b.bytes()) + " bytes on '" + b.device().label() +
                          "', not " + impl.shape.str() + " " + std::string(name(impl.dtype)) +
                          " on '" + a.device().label() + "'");
  }
}
}  // namespace

void SharedBuffer::copy_to(Array& dst) const {
  check_pair(*this, dst, "SharedBuffer::copy_to");
  s_->device->svm_copy_to(*Access::impl(dst).memory, 0, s_->ptr, s_->bytes);
}

void SharedBuffer::copy_from(const Array& src) {
  check_pair(*this, src, "SharedBuffer::copy_from");
  s_->device->svm_copy_from(*Access::impl(src).memory, 0, s_->ptr, s_->bytes);
}

}  // namespace gpix
