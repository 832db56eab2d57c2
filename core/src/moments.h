#pragma once
// Count, mean and M2 (sum of squared deviations from the mean) of an array's non-NaN pixels,
// computed on the device in one pass (stats.kernel's stats_moments) and combined on the host
// with Chan et al.'s pairwise formula. The variance is m2 / count. Accumulates in float64;
// float32 on devices without fp64 for 8/16-bit and float32 arrays (UnsupportedDType for the
// wider dtypes there).
#include <cstdint>
#include <memory>
#include <optional>

#include "backend/backend.h"
#include "gpix/array.h"
#include "gpix/stats.h"

namespace gpix::detail {

struct Moments {
  std::uint64_t count = 0;
  double mean = 0;
  double m2 = 0;
};

Moments moments(const Array& a);

// gpix::stats()'s minimum, maximum, count and nan_count without its sum (sum and mean are 0):
// one pass that reads 8- and 16-bit integers 16 bytes a load (stats.kernel's stats_extrema).
Stats extrema(const Array& a);

// extrema() left on the device, for a kernel that reads them there instead of the host waiting
// for them (rescale_intensity): `memory` holds the minimum in slot `at` and the maximum in slot
// `at + 1` (8-byte slots, each the dtype's bits in its low bytes), queued on a's device. Where
// stats.kernel's final pass is still compiling (tiered compilation on OpenCL GPUs) the host
// combines the work-groups' partials and `host` holds the result instead.
struct DeviceExtrema {
  std::shared_ptr<Memory> memory;
  std::uint64_t at = 0;
  std::optional<Stats> host;
};
DeviceExtrema extrema_on_device(const Array& a);

// Chan et al.'s merge of a part's moments into m: merging (na, ma, Ma) and (nb, mb, Mb) gives
// mean ma + d nb / n and M2 Ma + Mb + d^2 na nb / n with d = mb - ma. moments() merges its
// work-groups with it, gpix::run_tiled its slabs.
inline void merge(Moments& m, const Moments& part) {
  if (part.count == 0) return;
  const double na = static_cast<double>(m.count), nb = static_cast<double>(part.count);
  const double nt = na + nb, d = part.mean - m.mean;
  m.mean += d * (nb / nt);
  m.m2 += part.m2 + d * d * (na * (nb / nt));
  m.count += part.count;
}

}  // namespace gpix::detail
