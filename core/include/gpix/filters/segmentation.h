#pragma once
// Segmentation filters (catalog category "Segmentation"). Binary outputs are uint8 0/1,
// labels uint32 numbered 1..n in raster order (z, then y, then x) of first appearance, 0 for
// background. Binary inputs may have any dtype: nonzero (NaN included) is true.
#include <string_view>

#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix {

// 1 where pixel > value (exact for every dtype), else 0.
Array threshold(const Array& a, double value);
// 1 where pixel > the Otsu threshold (otsu_threshold), else 0.
Array threshold_otsu(const Array& a);
// scikit-image's threshold_otsu(image) computed on the device: integer images binned one bin
// per value (InvalidArgument beyond 16777216 values), float images in 256 bins as
// numpy.histogram; the bin that maximises the between-class variance. A constant image gives
// its value; NaN pixels are ignored (an all-NaN image gives NaN).
double otsu_threshold(const Array& a);

Array binary_and(const Array& a, const Array& b);
Array binary_or(const Array& a, const Array& b);
Array binary_xor(const Array& a, const Array& b);
Array binary_not(const Array& a);

// connectivity "box" (a (2r+1)^ndim window) or "cross" (|dx| + |dy| + |dz| <= r); the
// window is clamped at the borders (outside = the nearest pixel).
Array binary_erosion(const Array& a, int radius = 1, std::string_view connectivity = "box");
Array binary_dilation(const Array& a, int radius = 1, std::string_view connectivity = "box");
Array binary_opening(const Array& a, int radius = 1, std::string_view connectivity = "box");
Array binary_closing(const Array& a, int radius = 1, std::string_view connectivity = "box");

// connectivity "face" (4 in 2D, 6 in 3D) or "full" (8 / 26).
Array connected_components(const Array& binary, std::string_view connectivity = "full");
// Integer labels (>= 0) -> uint32 labels 1..n in raster order of first appearance.
Array relabel_sequential(const Array& labels);
Array voronoi_otsu_labeling(const Array& a, double spot_sigma = 2, double outline_sigma = 2);
// Columns label, area, mean_intensity, min_intensity, max_intensity; one row per label
// 1..max(labels).
Table label_statistics(const Array& labels, const Array& intensity);

}  // namespace gpix
