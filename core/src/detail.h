#pragma once
// Internal access to the implementation behind the public handles.
#include <memory>

#include "backend/backend.h"
#include "gpix/array.h"
#include "gpix/device.h"

namespace gpix::detail {

class ArrayImpl {
 public:
  ArrayImpl(std::shared_ptr<DeviceImpl> dev, std::unique_ptr<Memory> mem, Shape s, DType t)
      : device(std::move(dev)), memory(std::move(mem)), shape(s), dtype(t) {}
  std::shared_ptr<DeviceImpl> device;
  std::unique_ptr<Memory> memory;
  Shape shape;
  DType dtype;
  MemoryKind kind = MemoryKind::buffer;
};

struct Access {
  static DeviceImpl& impl(const Device& d);
  static const std::shared_ptr<DeviceImpl>& shared(const Device& d) { return d.impl_; }
  static Device device(std::shared_ptr<DeviceImpl> impl) { return Device(std::move(impl)); }
  static ArrayImpl& impl(const Array& a);
  static const std::shared_ptr<ArrayImpl>& shared(const Array& a) { return a.impl_; }
  static Array array(std::shared_ptr<ArrayImpl> impl) { return Array(std::move(impl)); }
};

}  // namespace gpix::detail
