#pragma once
// Shared virtual memory (OpenCL 2.0 coarse-grain SVM): one allocation with the same address
// on the host and on the device. Host access happens inside map(); outside it the device
// owns the contents.
#include <cstddef>
#include <memory>

#include "gpix/array.h"

namespace gpix {

// Whether device can allocate SharedBuffers (DeviceInfo::svm).
bool supports_svm(const Device& device);

class SharedBuffer {
 public:
  SharedBuffer() = default;
  // Throws UnsupportedFeature on a device without SVM (the message says which have it) and
  // OutOfMemory when the allocation fails.
  static SharedBuffer allocate(std::size_t bytes, const Device& device = default_device());

  bool valid() const noexcept { return s_ != nullptr; }
  std::size_t bytes() const;
  Device device() const;
  // The address, valid on the host inside map() and on the device.
  void* data() const;
  // Host access until the Mapping ends (svm map/unmap).
  Mapping map(MapMode mode);
  // Blocking copies to and from a contiguous buffer array of the same byte size and device.
  void copy_to(Array& dst) const;
  void copy_from(const Array& src);

 private:
  struct State;
  std::shared_ptr<State> s_;
};

}  // namespace gpix
