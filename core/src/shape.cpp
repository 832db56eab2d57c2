#include "gpix/shape.h"

#include <limits>

#include "gpix/error.h"

namespace gpix {

Shape::Shape(std::initializer_list<std::size_t> dims)
    : Shape(std::span<const std::size_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::size_t> dims) {
  auto describe = [&] {
    std::string s = "(";
    for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + ")";
  };
  if (dims.empty() || dims.size() > kMaxDims) {
    throw InvalidArgument("shape " + describe() + " has " + std::to_string(dims.size()) +
                          " dimensions; gpix arrays have 1, 2 or 3 (z, y, x)");
  }
  std::size_t total = 1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) {
      throw InvalidArgument("shape " + describe() + " has a zero extent on axis " +
                            std::to_string(i) + "; every extent must be at least 1");
    }
    // Leave room for 8-byte pixels so that bytes() never overflows.
    if (total > std::numeric_limits<std::size_t>::max() / 8 / dims[i]) {
      throw InvalidArgument("shape " + describe() + " is too large to address");
    }
    total *= dims[i];
    dims_[i] = dims[i];
  }
  ndim_ = static_cast<int>(dims.size());
}

std::size_t Shape::elements() const noexcept {
  if (ndim_ == 0) return 0;
  std::size_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[static_cast<std::size_t>(i)];
  return n;
}

std::string Shape::str() const {
  std::string s;
  for (int i = 0; i < ndim_; ++i) s += (i ? " x " : "") + std::to_string(dims_[static_cast<std::size_t>(i)]);
  return s.empty() ? "(none)" : s;
}

}  // namespace gpix
