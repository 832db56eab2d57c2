#pragma once
// A maximum-intensity projection of a volume seen from any direction: the display path of a
// 3D view (gpix-viewer's View > 3D). One ray per output pixel through the volume, on the
// device (kernels/mip.kernel); the result is the projected values, which render_rgba colours.
#include <array>
#include <cstddef>

#include "gpix/array.h"
#include "gpix/filters/geometry.h"

namespace gpix {

// The camera. The volume is centred on the output image and seen along parallel rays
// (orthographic). At yaw = pitch = 0 the output's columns are x, its rows y, and the rays run
// along z, so the result is the maximum over z. yaw turns about the screen's vertical axis:
// at 90 the rays run along x and the columns are z (numpy's a.max(axis=2).T). pitch then turns
// about the screen's horizontal axis: at 90 (yaw 0) the rays run along y and the rows are z
// (a.max(axis=1)). Angles that are whole multiples of 90 degrees are exact.
struct MipOptions {
  double yaw = 0;    // degrees
  double pitch = 0;  // degrees
  // The physical size of a voxel along (z, y, x): rays and the output's pixels are square in
  // physical space, so a z spacing of 5 makes the volume five times deeper than it has slices.
  std::array<double, 3> spacing{1, 1, 1};
  // Output size; 0 takes the volume's width / height.
  std::size_t width = 0;
  std::size_t height = 0;
  // Physical size of one output pixel; 0 takes the smallest spacing. Larger zooms out.
  double pixel = 0;
  // nearest: each sample is the voxel it falls in, and the result keeps the input's dtype
  // (exactly a maximum over voxels); linear: trilinear samples, float32 result (float64 for
  // float64 input; integers wider than 16 bits are interpolated in float64, which needs fp64).
  Interpolation interpolation = Interpolation::linear;
};

// The (height, width) projection of a 3D array on the array's device. Samples along a ray
// are one voxel apart along its most advanced axis, so no layer of voxels is skipped; NaN
// voxels are skipped (numpy.nanmax). Pixels whose ray misses the volume are NaN for float
// results and the dtype's lowest value otherwise.
// Throws InvalidArgument for an array that is not 3D (naming what would work), spacings or
// a pixel size that are not finite and positive (0 pixel means "default"), non-finite
// angles, or an output of more than 2^31 pixels per side; UnsupportedDType where linear
// interpolation needs fp64 the device lacks.
Array render_mip(const Array& volume, const MipOptions& options = {});

}  // namespace gpix
