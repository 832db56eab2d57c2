#pragma once
// Neighbourhood filters (catalog category "Neighbourhood").
#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix {

// sigma_z is ignored for 2D images; sigma 0 leaves an axis alone.
Array gaussian_blur(const Array& a, double sigma_x, double sigma_y, double sigma_z = 0);
inline Array gaussian_blur(const Array& a, double sigma) {
  return gaussian_blur(a, sigma, sigma, a.ndim() == 3 ? sigma : 0);
}

}  // namespace gpix
