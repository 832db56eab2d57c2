#include "filters/launch.h"

#include <algorithm>
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

void add_flat_define(Defines& d, std::initializer_list<DType> loads) {
  std::size_t widest = 1;
  for (DType t : loads) widest = std::max(widest, size_of(t));
  d.emplace_back("FLAT_K", std::to_string(std::max<std::size_t>(16 / widest, 1)));
}

Launch flat_grid(std::size_t n, const Defines& d) {
  for (const auto& [name, value] : d) {
    if (name == "FLAT_K")
      return flat_grid(ceil_div(n, static_cast<std::size_t>(std::stoul(value))));
  }
  throw Error("internal: a flat pass's defines carry no FLAT_K");
}

void launch(const Array& on, std::string_view file, std::string_view entry, const Defines& defines,
            const Launch& grid, const std::vector<KernelArg>& args) {
  auto& dev = *Access::impl(on).device;
  const auto k = dev.kernel(program(file), entry, defines);
  dev.launch(*k, grid, args);
}

bool launch_if_ready(const Array& on, std::string_view file, std::string_view entry,
                     const Defines& defines, const Launch& grid,
                     const std::vector<KernelArg>& args) {
  auto& dev = *Access::impl(on).device;
  const auto k = dev.kernel_if_ready(program(file), entry, defines);
  if (!k) return false;
  dev.launch(*k, grid, args);
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
  d.reserve(d.size() + types.size() + 1);  // one allocation, not one per growth
  for (const auto& [k, t] : types) {
    d.emplace_back(k, std::string(kernel_type(t)));
    fp64 |= t == DType::f64;
  }
  if (fp64) d.emplace_back("GPIX_NEED_FP64", "1");
}

}  // namespace gpix::detail
