#pragma once
// Count, mean and M2 (sum of squared deviations from the mean) of an array's non-NaN pixels,
// computed on the device in one pass (stats.kernel's stats_moments) and combined on the host
// with Chan et al.'s pairwise formula. The variance is m2 / count. Accumulates in float64;
// float32 on devices without fp64 for 8/16-bit and float32 arrays (UnsupportedDType for the
// wider dtypes there).
#include <cstdint>

#include "gpix/array.h"

namespace gpix::detail {

struct Moments {
  std::uint64_t count = 0;
  double mean = 0;
  double m2 = 0;
};

Moments moments(const Array& a);

}  // namespace gpix::detail
