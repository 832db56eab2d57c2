#pragma once
// Projections along z (catalog category "Projections": 3D in, 2D out) and reductions over
// all pixels (category "Reductions": the catalog returns a one-row table; these typed
// functions return the values). NaN pixels are ignored throughout, as gpix::stats() does
// (numpy's nanmax, nansum, nanmean, nanstd). Errors as for gpix::run.
#include <cstdint>
#include <vector>

#include "gpix/array.h"
#include "gpix/catalog.h"
#include "gpix/scalar.h"

namespace gpix {

// Same dtype as the input.
Array maximum_z_projection(const Array& a);
Array minimum_z_projection(const Array& a);
// float32 (float64 stays float64).
Array mean_z_projection(const Array& a);
// float32 for 8/16-bit integers and float32; float64 for wider dtypes.
Array sum_z_projection(const Array& a);
// Population standard deviation; float32 (float64 stays float64).
Array std_z_projection(const Array& a);

// Exact, in the input's dtype (NaN where every pixel is NaN).
Scalar minimum_of_all_pixels(const Array& a);
Scalar maximum_of_all_pixels(const Array& a);
// int64 / uint64 for integer dtypes (exact), double for floats.
Scalar sum_of_all_pixels(const Array& a);
double mean_of_all_pixels(const Array& a);
// Population standard deviation (numpy's nanstd with ddof=0).
double std_of_all_pixels(const Array& a);

struct Histogram {
  std::vector<double> edges;          // n_bins + 1 edges, as compared on the device
  std::vector<std::uint64_t> counts;  // n_bins counts
};
// minimum == maximum == 0: the image's own minimum and maximum. See the catalog doc of
// "histogram" for the bin rule.
Histogram histogram(const Array& a, int n_bins = 256, double minimum = 0, double maximum = 0);

}  // namespace gpix
