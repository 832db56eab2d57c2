#pragma once
// Filter building blocks that one module lends another (one implementation each).
#include <cstddef>

#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix::detail {

// neighbourhood.cpp: Gaussian blur along every axis with sigma > 0 (sigma 0 leaves an axis
// alone), output in the input's dtype, as the catalog's gaussian_blur.
Array gaussian(const Array& in, double sx, double sy, double sz, const RunOptions& o);

// neighbourhood.cpp: the Gaussian kernel's radius for sigma, int(4 sigma + 0.5) as
// scipy.ndimage.gaussian_filter (0 for sigma <= 0); tiling takes its halo from it.
std::size_t gaussian_radius(double sigma);

}  // namespace gpix::detail
