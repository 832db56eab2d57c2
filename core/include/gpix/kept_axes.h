#pragma once
// Which axes of a filter's input its output keeps, so that per-axis metadata (a file's spacing
// and origin) goes from an input to a result only where it still holds. Used by the command
// line (input file -> output file) and the viewer (layer -> result layer) alike.
#include <vector>

#include "gpix/shape.h"

namespace gpix {

// For each axis of `out`, the axis of `in` it is, or -1. The same shape keeps every axis; fewer
// dimensions whose extents are the trailing ones of `in` (a projection along z) keep those;
// any other change of shape (resampling, cropping, ...) keeps none: the filter's parameters,
// not the shapes, would say how the pixel grid moved.
inline std::vector<int> kept_axes(const Shape& in, const Shape& out) {
  std::vector<int> axes(static_cast<std::size_t>(out.ndim()), -1);
  const int skip = in.ndim() - out.ndim();
  if (skip < 0) return axes;
  for (int i = 0; i < out.ndim(); ++i) {
    if (in[i + skip] != out[i]) return std::vector<int>(axes.size(), -1);
  }
  for (int i = 0; i < out.ndim(); ++i) axes[static_cast<std::size_t>(i)] = i + skip;
  return axes;
}

}  // namespace gpix
