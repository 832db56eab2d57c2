#pragma once
// Neighbourhood filters (catalog category "Neighbourhood"). Borders replicate the nearest
// pixel; a box radius r means a window of 2r+1 along that axis (radii of axes the image does
// not have are ignored). Integer outputs round half to even and saturate. Each function is
// the catalog entry of the same name with the same checks, so errors are gpix::run's:
// InvalidArgument for out-of-range parameters, UnsupportedDType for float64 work on devices
// without fp64.
#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix {

// sigma_z is ignored for 2D images; sigma 0 leaves an axis alone.
Array gaussian_blur(const Array& a, double sigma_x, double sigma_y, double sigma_z = 0);
inline Array gaussian_blur(const Array& a, double sigma) {
  return gaussian_blur(a, sigma, sigma, a.ndim() == 3 ? sigma : 0);
}

// Box filters; same dtype as the input.
Array mean_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);
Array minimum_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);
Array maximum_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);
// The window may hold at most 125 pixels (e.g. 11x11, 5x5x5): InvalidArgument beyond.
Array median_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);
// Population variance of the window; float32 output (float64 stays float64).
Array variance_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);
// a - opening(a) and closing(a) - a with a box; same dtype, saturating.
Array top_hat_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);
Array bottom_hat_box(const Array& a, int radius_x, int radius_y, int radius_z = 0);

// Derivatives, float32 output (float64 stays float64).
Array sobel(const Array& a);       // gradient magnitude, scipy.ndimage.sobel per axis
Array laplace(const Array& a);     // scipy.ndimage.laplace
Array gradient_x(const Array& a);  // (a[x+1] - a[x-1]) / 2
Array gradient_y(const Array& a);  // 2D and 3D
Array gradient_z(const Array& a);  // 3D only

// gaussian(sigma1) - gaussian(sigma2) on every axis; float32 output (float64 stays float64).
Array difference_of_gaussian(const Array& a, double sigma1, double sigma2);
// a + amount * (a - gaussian(a, sigma)); same dtype, saturating.
Array unsharp_mask(const Array& a, double sigma, double amount = 1);

}  // namespace gpix
