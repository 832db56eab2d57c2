#pragma once
// Geometry filters (catalog category "Geometry"): crop, flip, transpose, resample,
// affine_transform. 2D and 3D images of every dtype; the semantics are in each catalog
// entry's doc (gpix::filter("resample").doc). Errors as for gpix::run.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix {

enum class Interpolation : std::uint8_t { nearest, linear };

// The box [origin, origin + size) per axis; a size of 0 means "to the end of the axis".
// Throws InvalidArgument naming the valid range when the box leaves the image.
Array crop(const Array& a, std::size_t origin_x, std::size_t origin_y, std::size_t origin_z,
           std::size_t size_x, std::size_t size_y, std::size_t size_z = 0);
// Mirrors along each chosen axis (flip_z has no effect on 2D images).
Array flip(const Array& a, bool flip_x, bool flip_y, bool flip_z = false);
// Swaps two axes: "xy" (2D and 3D), "xz" or "yz" (3D only).
Array transpose(const Array& a, std::string_view axes = "xy");
// Output extent round(extent * factor) per axis (half to even, at least 1), pixel centres
// aligned as scipy.ndimage.zoom(grid_mode=True, mode='nearest'). factor_z is ignored in 2D.
Array resample(const Array& a, double factor_x, double factor_y, double factor_z = 1.0,
               Interpolation interpolation = Interpolation::linear);
// Output pixel (x, y, z) samples the input at m * (x, y, z, 1), m row-major 3x4 in (x, y, z)
// order: {m00, m01, m02, m03, m10, ..., m23}. Output shape = input shape.
Array affine_transform(const Array& a, const std::array<double, 12>& m,
                       Interpolation interpolation = Interpolation::linear);

}  // namespace gpix
