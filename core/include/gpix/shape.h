#pragma once
// Shapes of 1 to 3 dimensions in (z, y, x) order, as pyclesperanto and numpy write them:
// the last axis is the fastest-moving one in memory.
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>

namespace gpix {

class Shape {
 public:
  static constexpr int kMaxDims = 3;

  Shape() = default;
  // Throws InvalidArgument for 0 or more than 3 dims, a zero extent, or a byte size that
  // would overflow 64 bits.
  Shape(std::initializer_list<std::size_t> dims);
  explicit Shape(std::span<const std::size_t> dims);

  int ndim() const noexcept { return ndim_; }
  std::size_t operator[](int axis) const noexcept { return dims_[static_cast<std::size_t>(axis)]; }
  std::span<const std::size_t> dims() const noexcept {
    return {dims_.data(), static_cast<std::size_t>(ndim_)};
  }
  std::size_t elements() const noexcept;
  // Extents with missing leading axes taken as 1: width() is x, height() y, depth() z.
  std::size_t width() const noexcept { return ndim_ ? dims_[static_cast<std::size_t>(ndim_ - 1)] : 0; }
  std::size_t height() const noexcept { return ndim_ > 1 ? dims_[static_cast<std::size_t>(ndim_ - 2)] : 1; }
  std::size_t depth() const noexcept { return ndim_ > 2 ? dims_[0] : 1; }
  bool empty() const noexcept { return ndim_ == 0; }

  // "512 x 512" (z, y, x order).
  std::string str() const;

  friend bool operator==(const Shape&, const Shape&) = default;

 private:
  std::array<std::size_t, kMaxDims> dims_{};
  int ndim_ = 0;
};

}  // namespace gpix
