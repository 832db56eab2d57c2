#pragma once
// How a filter's output grid sits on its input's, so that per-axis metadata (a file's spacing
// and origin) goes from an input to a result as far as it holds. Used by the command line
// (input file -> output file) and the viewer (layer -> result layer) alike.
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/shape.h"

namespace gpix {

// One output axis: its index q is index scale * q + offset of input axis `axis` (-1: none of
// the input's, and scale and offset mean nothing).
struct AxisMap {
  int axis = -1;
  double scale = 1.0;
  double offset = 0.0;
  bool operator==(const AxisMap&) const = default;
};

// For each axis of `out`, where it lies on `in` as far as the shapes say: the same shape keeps
// every axis; fewer dimensions whose extents are the trailing ones of `in` (a projection along
// z) keep those; any other change of shape keeps none (the filter's parameters, not the shapes,
// say how the pixel grid moved: the overload below).
inline std::vector<AxisMap> axis_maps(const Shape& in, const Shape& out) {
  std::vector<AxisMap> axes(static_cast<std::size_t>(out.ndim()));
  const int skip = in.ndim() - out.ndim();
  if (skip < 0) return axes;
  for (int i = 0; i < out.ndim(); ++i) {
    if (in[i + skip] != out[i]) return std::vector<AxisMap>(axes.size());
  }
  for (int i = 0; i < out.ndim(); ++i) axes[static_cast<std::size_t>(i)].axis = i + skip;
  return axes;
}

namespace detail {
inline double number_param(const Params& params, const std::string& name, double def) {
  const auto it = params.find(name);
  if (it == params.end()) return def;
  const double* d = std::get_if<double>(&it->second);
  return d ? *d : def;
}
}  // namespace detail

// The same for filter `filter` run with `params` on `in`, giving `out`:
//  - transpose: its input's axes with the two named ones swapped (a cube transposed keeps its
//    shape, not its axes: its spacing and origin must swap too);
//  - crop: every axis, shifted by the box's origin (origin_z, origin_y, origin_x);
//  - resample: every axis, scaled as it samples (grid_mode: output pixel o at input coordinate
//    (o + 0.5) * in / out - 0.5), so a resampled image keeps its physical extent;
//  - every other filter as axis_maps(in, out).
// Where `out` is not the shape the parameters give, none.
inline std::vector<AxisMap> axis_maps(std::string_view filter, const Params& params,
                                      const Shape& in, const Shape& out) {
  const int n = in.ndim();
  const std::vector<AxisMap> none(static_cast<std::size_t>(out.ndim()));
  if (n != out.ndim() || n == 0) return axis_maps(in, out);
  // Axis i of an n-dimensional (z, y, x) shape is named "xyz"[n - 1 - i].
  const auto name = [n](int i) { return std::string(1, "xyz"[n - 1 - i]); };
  std::vector<AxisMap> axes(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) axes[static_cast<std::size_t>(i)].axis = i;
  if (filter == "crop") {
    for (int i = 0; i < n; ++i) {
      const double o = detail::number_param(params, "origin_" + name(i), 0.0);
      if (o < 0 || o + static_cast<double>(out[i]) > static_cast<double>(in[i])) return none;
      axes[static_cast<std::size_t>(i)].offset = o;
    }
    return axes;
  }
  if (filter == "resample") {
    for (int i = 0; i < n; ++i) {
      const double s = static_cast<double>(in[i]) / static_cast<double>(out[i]);
      axes[static_cast<std::size_t>(i)].scale = s;
      axes[static_cast<std::size_t>(i)].offset = 0.5 * s - 0.5;
    }
    return axes;
  }
  if (filter != "transpose") return axis_maps(in, out);
  std::string which = "xy";
  if (const auto it = params.find("axes");
      it != params.end() && std::holds_alternative<std::string>(it->second))
    which = std::get<std::string>(it->second);
  const auto axis = [n](char c) {
    return c == 'x' ? n - 1 : c == 'y' ? n - 2 : c == 'z' ? n - 3 : -1;
  };
  const int a = which.size() == 2 ? axis(which[0]) : -1,
            b = which.size() == 2 ? axis(which[1]) : -1;
  if (a < 0 || b < 0) return none;
  std::swap(axes[static_cast<std::size_t>(a)], axes[static_cast<std::size_t>(b)]);
  for (int i = 0; i < n; ++i) {
    if (out[i] != in[axes[static_cast<std::size_t>(i)].axis]) return none;
  }
  return axes;
}

}  // namespace gpix
