#pragma once
// Internal access to the implementation behind the public handles.
#include <array>
#include <initializer_list>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "gpix/array.h"
#include "gpix/device.h"
#include "gpix/queue.h"

namespace gpix::detail {

// An array: a (shared) allocation and its layout. The usable shape sits at `origin` (z, y, x;
// nonzero only for region views) of an allocation of `padded` extents (== shape unless padded
// or a region view); images are never padded.
class ArrayImpl {
 public:
  ArrayImpl(std::shared_ptr<DeviceImpl> dev, std::shared_ptr<Memory> mem, Shape s, DType t)
      : device(std::move(dev)), memory(std::move(mem)), shape(s), padded(s), dtype(t) {}
  std::shared_ptr<DeviceImpl> device;
  std::shared_ptr<Memory> memory;
  Shape shape;
  Shape padded;
  DType dtype;
  MemoryKind kind = MemoryKind::buffer;
  bool view = false;
  // A region view (Array::view) covers only part of its allocation, so whole-allocation
  // operations (fills, maps) must not touch the rest.
  bool region = false;
  std::array<std::size_t, 3> origin{};  // (z, y, x) in pixels

  std::size_t element_bytes() const { return size_of(dtype); }
  std::size_t row_pitch() const { return padded.width() * element_bytes(); }
  std::size_t slice_pitch() const { return row_pitch() * padded.height(); }
  // Bytes spanned by the whole allocation as laid out (without the pool's rounding).
  std::size_t span_bytes() const { return slice_pitch() * padded.depth(); }
  bool contiguous() const { return kind == MemoryKind::buffer && padded == shape && !region; }
  // The box starting at (z, y, x) of the array (its own origin added), for the backend's
  // pitched transfers.
  Pitched at(std::size_t z = 0, std::size_t y = 0, std::size_t x = 0) const {
    return Pitched{{(x + origin[2]) * element_bytes(), y + origin[1], z + origin[0]},
                   row_pitch(),
                   slice_pitch()};
  }
  // Byte offset of the first pixel in the allocation.
  std::size_t first_byte() const {
    return origin[0] * slice_pitch() + origin[1] * row_pitch() + origin[2] * element_bytes();
  }
  // The backend extent of a (depth, height, width) box.
  Extent extent(std::size_t d, std::size_t h, std::size_t w) const {
    return {w * element_bytes(), h, d};
  }
  Extent whole() const { return extent(shape.depth(), shape.height(), shape.width()); }
};

// The state behind gpix::Event: the backend's event, its device, and what it keeps alive.
struct EventState {
  std::shared_ptr<EventImpl> event;
  std::shared_ptr<DeviceImpl> device;
  std::vector<std::shared_ptr<const void>> keep;
};

class QueueState {
 public:
  std::shared_ptr<DeviceImpl> device;
  std::unique_ptr<QueueImpl> owned;  // null for the device's default queue
  QueueImpl* queue = nullptr;
};

struct Access {
  static DeviceImpl& impl(const Device& d);
  static const std::shared_ptr<DeviceImpl>& shared(const Device& d) { return d.impl_; }
  static Device device(std::shared_ptr<DeviceImpl> impl) { return Device(std::move(impl)); }
  static ArrayImpl& impl(const Array& a);
  static const std::shared_ptr<ArrayImpl>& shared(const Array& a) { return a.impl_; }
  static Array array(std::shared_ptr<ArrayImpl> impl) { return Array(std::move(impl)); }
  // The HostArray's pixels as an owner, to keep them alive behind an async transfer.
  static std::shared_ptr<const void> keep(const HostArray& h) { return h.data_; }
  static const std::shared_ptr<EventState>& state(const Event& e) { return e.s_; }
  static Event event(std::shared_ptr<EventState> s) {
    Event e;
    e.s_ = std::move(s);
    return e;
  }
  static const std::shared_ptr<QueueState>& state(const Queue& q) { return q.s_; }
  static Queue queue(std::shared_ptr<QueueState> s) {
    Queue q;
    q.s_ = std::move(s);
    return q;
  }
};

// ---- transfers (transfer.cpp)

// Whole-array blocking transfers between contiguous host memory and any array (padded,
// image). host_pinned: the host memory is page-locked, so no staging.
void write_all(ArrayImpl& a, const void* src, bool host_pinned);
// The same where the destination's memory is known to be free of everything the default
// queue holds after `after` (an event of a's device): a staged or pinned push then waits on
// the device for `after` only, not for a marker of everything queued so far, so kernels
// queued after `after` run beside it. Tiled runs push slab k + 1 this way while slab k's
// filter runs (its arrays were allocated, and `after` recorded, before that filter was queued).
void write_all_after(ArrayImpl& a, const void* src, bool host_pinned, EventImpl& after);
void read_all(const ArrayImpl& a, void* dst, bool host_pinned);
// Blocking copy of a box between any two arrays (any devices, kinds, padding).
void copy_box(const ArrayImpl& src, const Pitched& s, ArrayImpl& dst, const Pitched& d,
              const Extent& e);

// The submission context of an async call: the queue and the events to wait for (events of
// other devices have been waited for on the host already).
struct Submission {
  DeviceImpl* device = nullptr;
  QueueImpl* queue = nullptr;
  std::vector<EventImpl*> waits;
  std::vector<std::shared_ptr<EventImpl>> keep;  // what after_earlier_owners() added to waits
  Waits span() const { return {waits.data(), waits.size()}; }
  // Call with every block the work touches, before it is queued. On a queue other than the
  // default one, the work then also waits for the default queue's work queued before the
  // block's first use off that queue since the pool handed it on: kernels of its earlier owner
  // may still read or write it there (Memory::mark_handed_on). Without this an async push into
  // a fresh array raced them (test_core_stress_two_devices: a label table read another
  // thread's pixels).
  void after_earlier_owners(std::initializer_list<Memory*> blocks);
};
// The same for one block: adds what work on q that touches m waits for to waits and keep.
void after_earlier_owners(DeviceImpl& dev, QueueImpl& q, Memory& m, std::vector<EventImpl*>& waits,
                          std::vector<std::shared_ptr<EventImpl>>& keep);
Submission submission(const std::shared_ptr<DeviceImpl>& dev, const Queue& q,
                      const std::vector<Event>& after);
Event make_event(std::shared_ptr<EventImpl> e, std::shared_ptr<DeviceImpl> dev,
                 std::vector<std::shared_ptr<const void>> keep = {});

// Async box copy on one device; temporaries it needs are kept alive by the event.
std::shared_ptr<EventImpl> copy_box_async(DeviceImpl& dev, QueueImpl& q, const ArrayImpl& src,
                                          const Pitched& s, ArrayImpl& dst, const Pitched& d,
                                          const Extent& e, Waits waits);

}  // namespace gpix::detail
