#pragma once
// Helpers for filter implementations: outputs, grids and launches.
#include <array>
#include <initializer_list>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "detail.h"
#include "gpix/array.h"
#include "programs.h"

namespace gpix::detail {

// A new array on a's device with a's shape and dtype t (contents undefined).
inline Array empty_like(const Array& a, DType t) {
  return Array::empty(a.shape(), t, a.device());
}

// Work-item grid over an image, x fastest: global rounded up to the work-group size, so
// kernels bounds-check against width/height/depth.
Launch image_grid(const Shape& s);
// A flat grid over n elements (work-group size 256).
Launch flat_grid(std::size_t n);

// Flat passes that take several elements per work-item (dialect.h's GPIX_FLAT_IN and
// GPIX_FLAT_OUT): adds FLAT_K to d, 16 bytes of the widest type in `loads` (the arrays the
// kernel reads) per work-item, at least one index; with v4 (flat_v4_ok) also FLAT_V4, four
// elements an index, loaded and stored as vectors, and 16 bytes over all of `loads`.
void add_flat_define(Defines& d, std::initializer_list<DType> loads, bool v4 = false);
// Whether a flat pass reading `inputs` and writing `out` may move four elements an index:
// inputs of 1 or 2 bytes (wider ones reach the copy's speed element by element), every type
// with a gpix_v4 vector, every buffer aligned to its vector (gpix's own allocations are;
// memory wrapped from elsewhere, DLPack, may not be), and at least four elements.
bool flat_v4_ok(std::initializer_list<const Array*> inputs, const Array& out);
// The grid of such a pass over n elements, with the FLAT_K and FLAT_V4 that d carries (an
// internal error where d has no FLAT_K), so that the grid and the program cannot disagree.
Launch flat_grid(std::size_t n, const Defines& d);
// A 3D grid of `global` work-items (each extent at least 1, rounded up to `local`).
Launch grid(std::array<std::size_t, 3> global, std::array<std::size_t, 3> local);
inline std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

// A buffer argument. Kernels index it as a flat run from the allocation's start, so only
// contiguous arrays may get here (gpix::run copies other layouts first).
inline KernelArg arg(const Array& a) {
  if (!a.is_contiguous()) {
    throw Error("internal: a " + a.shape().str() + " array of layout " +
                (a.kind() == MemoryKind::image ? "image"
                 : a.is_view()                 ? "region view"
                                               : "padded") +
                " reached a kernel that reads contiguous buffers");
  }
  return KernelArg::mem(*Access::impl(a).memory);
}
template <class T>
KernelArg arg(T v) {
  return KernelArg::scalar(v);
}

// Whether a's allocation starts on a `bytes` boundary (OpenCL buffers, which have no address
// here, count as aligned: their base alignment is the device's, 128 bytes or more).
inline bool aligned_base(const Array& a, std::size_t bytes) {
  return Access::impl(a).memory->native_pointer() % bytes == 0;
}

// Whether a's rows load and store as the dialect's gpix_v4 vectors: 8-, 16- and 32-bit types,
// rows of whole vectors (width a multiple of 4) and an allocation aligned to a vector. gpix's
// own allocations always are (CUDA: 256 bytes, OpenCL: CL_DEVICE_MEM_BASE_ADDR_ALIGN, and
// native_pointer() is 0 there); memory wrapped from elsewhere (DLPack) may not be.
inline bool vector_ok(const Array& a) {
  return size_of(a.dtype()) <= 4 && a.shape().width() % 4 == 0 &&
         aligned_base(a, 4 * size_of(a.dtype()));
}

// Whether every row of a (8-, 16- or 32-bit elements) starts on a `bytes` boundary.
inline bool aligned_rows(const Array& a, std::size_t bytes) {
  return size_of(a.dtype()) <= 4 && a.shape().width() * size_of(a.dtype()) % bytes == 0 &&
         aligned_base(a, bytes);
}

// width, height, depth as gpix_index (64-bit) arguments.
inline void push_shape(KernelArgs& args, const Shape& s) {
  args.push_back(KernelArg::scalar<std::uint64_t>(s.width()));
  args.push_back(KernelArg::scalar<std::uint64_t>(s.height()));
  args.push_back(KernelArg::scalar<std::uint64_t>(s.depth()));
}

// Grids past a device's work-groups on y or z (CUDA: 65535 on each, 2^31 - 1 on x) launch
// with that axis and x trading places, and the kernel built with GPIX_GRID_SWAP (dialect.h)
// undoes the trade. fitting_axis: that axis (1 or 2), 0 where g fits as it is, -1 where it fits
// neither way (past the limit on y and z both, or on the swapped axis and x together: on CUDA
// past 65535 x 65535 work-groups, some 2^40 pixels in 2D); `groups` gets g's work-groups.
int fitting_axis(const DeviceImpl& dev, const Launch& g, std::array<std::size_t, 3>& groups);
// Builds (cached) src's `entry` for grid g on dev and the grid to launch it with: g itself, or
// g swapped where fitting_axis() says so; InvalidArgument naming `entry` where g fits neither
// way.
std::pair<DeviceImpl::KernelPtr, Launch> kernel_for_grid(DeviceImpl& dev, const ProgramSource& src,
                                                         std::string_view entry,
                                                         const Defines& defines, const Launch& g);

// Builds (cached) and launches file:entry on `on`'s device (kernel_for_grid).
void launch(const Array& on, std::string_view file, std::string_view entry, const Defines& defines,
            const Launch& grid, const KernelArgs& args);

// launch(), where file:entry is ready to run now (DeviceImpl::kernel_if_ready); false, and
// nothing launched, where it is not (its program then compiles in the background) or where
// its grid fits the device neither way (fitting_axis): the caller runs its plain kernel. One lookup
// of the program for the launch and the question together.
bool launch_if_ready(const Array& on, std::string_view file, std::string_view entry,
                     const Defines& defines, const Launch& grid, const KernelArgs& args);

// Whether file:entry is ready to run on `on`'s device now (DeviceImpl::kernel_if_ready). Where
// it is not, its program compiles in the background and the caller runs a plain kernel with
// bit-identical results meanwhile; only for such pairs (the same operations in the same
// order, or exact ones), so that a result never depends on which ran.
bool kernel_ready(const Array& on, std::string_view file, std::string_view entry,
                  const Defines& defines);

// The compute type for arithmetic on dtypes in/out: float for 8/16-bit integers and float32,
// double for everything wider (which needs fp64 on the device: UnsupportedDType otherwise).
DType compute_type(std::initializer_list<DType> types);
// Adds T_IN/T_OUT/CT (and GPIX_NEED_FP64 when any of them is f64) to defines.
void add_type_defines(Defines& d, std::initializer_list<std::pair<const char*, DType>> types);

}  // namespace gpix::detail
