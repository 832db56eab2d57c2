#include "filters/launch.h"

#include <algorithm>
#include <array>
#include <string>

#include "gpix/error.h"

namespace gpix::detail {

Launch image_grid(const Shape& s) {
  Launch l;
  l.dims = 3;
  if (s.ndim() == 3) {
    l.local = {16, 4, 4};
  } else if (s.ndim() == 2) {
    l.local = {32, 8, 1};
  } else {
    l.local = {256, 1, 1};
  }
  l.global = {round_up(s.width(), l.local[0]), round_up(s.height(), l.local[1]),
              round_up(s.depth(), l.local[2])};
  return l;
}

Launch grid(std::array<std::size_t, 3> global, std::array<std::size_t, 3> local) {
  Launch l;
  l.dims = 3;
  l.local = local;
  for (std::size_t k = 0; k < 3; ++k) {
    l.global[k] = round_up(std::max<std::size_t>(global[k], 1), local[k]);
  }
  return l;
}

Launch flat_grid(std::size_t n) {
  Launch l;
  l.local[0] = 256;
  l.global[0] = round_up(n, 256);
  return l;
}

void add_flat_define(Defines& d, std::initializer_list<DType> loads, bool v4) {
  std::size_t widest = 1;
  for (DType t : loads) widest = std::max(widest, size_of(t));
  // With vectors, 16 bytes a work-item over all inputs: binary_logic on two uint8 masks took
  // 0.073 ms with two vectors of each (8192^2, H200) against 0.082 with four (bench/RESULTS.md).
  const std::size_t index_bytes = v4 ? widest * 4 * loads.size() : widest;
  d.emplace_back("FLAT_K", std::to_string(std::max<std::size_t>(16 / index_bytes, 1)));
  if (v4) d.emplace_back("FLAT_V4", "1");
}

bool flat_v4_ok(std::initializer_list<const Array*> inputs, const Array& out) {
  auto vector_aligned = [](const Array& a) {
    const std::size_t size = size_of(a.dtype());
    return size <= 4 && Access::impl(a).memory->native_pointer() % (4 * size) == 0;
  };
  for (const Array* a : inputs) {
    if (size_of(a->dtype()) > 2 || !vector_aligned(*a)) return false;
  }
  // Every work-item loads whole vectors, vector 0 where its own runs past the end (dialect.h).
  return out.elements() >= 4 && vector_aligned(out);
}

Launch flat_grid(std::size_t n, const Defines& d) {
  std::size_t k = 0, per_index = 1;
  for (const auto& [name, value] : d) {
    if (name == "FLAT_K") k = std::stoul(value);
    if (name == "FLAT_V4" && value == "1") per_index = 4;
  }
  if (k == 0) throw Error("internal: a flat pass's defines carry no FLAT_K");
  return flat_grid(ceil_div(n, k * per_index));
}

int fitting_axis(const DeviceImpl& dev, const Launch& g, std::array<std::size_t, 3>& groups) {
  for (std::size_t i = 0; i < 3; ++i) groups[i] = g.local[i] ? g.global[i] / g.local[i] : 0;
  const auto over = [&](std::size_t n, int limit_axis) { return n > dev.groups_limit(limit_axis); };
  int axis = 0;
  bool fits = true;
  for (int d = 1; d < g.dims && d < 3; ++d) {
    if (over(groups[static_cast<std::size_t>(d)], d)) {
      fits = axis == 0;
      axis = d;
    }
  }
  if (axis == 0) return 0;
  fits = fits && !over(groups[0], axis) && !over(groups[static_cast<std::size_t>(axis)], 0);
  return fits ? axis : -1;
}

namespace {

Launch swap_axes(Launch g, int axis) {
  const auto s = static_cast<std::size_t>(axis);
  const std::size_t groups0 = g.global[0] / g.local[0], groups_s = g.global[s] / g.local[s];
  g.global[0] = groups_s * g.local[0];
  g.global[s] = groups0 * g.local[s];
  return g;
}

Defines with_swap(const Defines& d, int axis) {
  Defines out = d;
  out.emplace_back("GPIX_GRID_SWAP", std::to_string(axis));
  return out;
}

}  // namespace

std::pair<DeviceImpl::KernelPtr, Launch> kernel_for_grid(DeviceImpl& dev, const ProgramSource& src,
                                                         std::string_view entry,
                                                         const Defines& defines, const Launch& g) {
  std::array<std::size_t, 3> groups{};
  const int axis = fitting_axis(dev, g, groups);
  if (axis < 0) {
    throw InvalidArgument(std::string(entry) + ": a grid of " + std::to_string(groups[0]) + " x " +
                          std::to_string(groups[1]) + " x " + std::to_string(groups[2]) +
                          " work-groups does not fit the " + std::to_string(dev.groups_limit(0)) +
                          " x " + std::to_string(dev.groups_limit(1)) + " x " +
                          std::to_string(dev.groups_limit(2)) + " that '" + dev.info().name +
                          "' launches, nor with the x axis swapped with y or z; use a smaller "
                          "image");
  }
  if (axis == 0) return {dev.kernel(src, entry, defines), g};
  return {dev.kernel(src, entry, with_swap(defines, axis)), swap_axes(g, axis)};
}

void launch(const Array& on, std::string_view file, std::string_view entry, const Defines& defines,
            const Launch& grid, const KernelArgs& args) {
  auto& dev = *Access::impl(on).device;
  const auto [k, g] = kernel_for_grid(dev, program(file), entry, defines, grid);
  dev.launch(*k, g, args);
}

bool launch_if_ready(const Array& on, std::string_view file, std::string_view entry,
                     const Defines& defines, const Launch& grid, const KernelArgs& args) {
  auto& dev = *Access::impl(on).device;
  // A grid that fits neither way: the caller's plain tier, whose grid may (launch() says so
  // where it does not).
  std::array<std::size_t, 3> groups{};
  const int axis = fitting_axis(dev, grid, groups);
  if (axis < 0) return false;
  const auto k = axis ? dev.kernel_if_ready(program(file), entry, with_swap(defines, axis))
                      : dev.kernel_if_ready(program(file), entry, defines);
  if (!k) return false;
  dev.launch(*k, axis ? swap_axes(grid, axis) : grid, args);
  return true;
}

bool kernel_ready(const Array& on, std::string_view file, std::string_view entry,
                  const Defines& defines) {
  return Access::impl(on).device->kernel_if_ready(program(file), entry, defines) != nullptr;
}

DType compute_type(std::initializer_list<DType> types) {
  for (DType t : types) {
    if (size_of(t) > 2 && t != DType::f32) return DType::f64;
  }
  return DType::f32;
}

void add_type_defines(Defines& d, std::initializer_list<std::pair<const char*, DType>> types) {
  bool fp64 = false;
  // One allocation, not one per growth: room for GPIX_NEED_FP64 and for what callers add
  // after the types (an operation, FLAT_K and FLAT_V4).
  d.reserve(d.size() + types.size() + 4);
  for (const auto& [k, t] : types) {
    d.emplace_back(k, std::string(kernel_type(t)));
    fp64 |= t == DType::f64;
  }
  if (fp64) d.emplace_back("GPIX_NEED_FP64", "1");
}

}  // namespace gpix::detail
