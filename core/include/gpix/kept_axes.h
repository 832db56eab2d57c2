#pragma once
// Which axes of a filter's input its output keeps, so that per-axis metadata (a file's spacing
// and origin) goes from an input to a result only where it still holds. Used by the command
// line (input file -> output file) and the viewer (layer -> result layer) alike.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpix/catalog.h"
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

// The same for filter `filter` run with `params`: transpose's output axes are its input's with
// the two named ones swapped (a cube transposed keeps its shape, not its axes: its spacing and
// origin must swap too); every other filter as kept_axes(in, out).
inline std::vector<int> kept_axes(std::string_view filter, const Params& params, const Shape& in,
                                  const Shape& out) {
  if (filter != "transpose" || in.ndim() != out.ndim()) return kept_axes(in, out);
  const int n = in.ndim();
  std::string which = "xy";
  if (const auto it = params.find("axes");
      it != params.end() && std::holds_alternative<std::string>(it->second))
    which = std::get<std::string>(it->second);
  const auto axis = [n](char c) {
    return c == 'x' ? n - 1 : c == 'y' ? n - 2 : c == 'z' ? n - 3 : -1;
  };
  std::vector<int> axes(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) axes[static_cast<std::size_t>(i)] = i;
  const int a = which.size() == 2 ? axis(which[0]) : -1,
            b = which.size() == 2 ? axis(which[1]) : -1;
  if (a < 0 || b < 0) return std::vector<int>(axes.size(), -1);
  std::swap(axes[static_cast<std::size_t>(a)], axes[static_cast<std::size_t>(b)]);
  for (int i = 0; i < n; ++i) {
    if (out[i] != in[axes[static_cast<std::size_t>(i)]]) return std::vector<int>(axes.size(), -1);
  }
  return axes;
}

}  // namespace gpix
