#pragma once
// gpix::stats() of an array seen in parts (gpix::run_tiled's slabs), added up on the host.
#include <cstdint>

#include "gpix/dtype.h"
#include "gpix/stats.h"

namespace gpix::detail {

// The exact sum of integer pixels: 64-bit pixels summed over many elements need more than
// 64 bits. __extension__ keeps -Wpedantic quiet about the GCC/Clang builtin.
__extension__ using Int128 = __int128;

// Equal to stats() of the whole array: minimum, maximum and counts exactly; integer sums and
// means exactly where every part's sum fits 64 bits (stats() gives those exactly), else to
// the nearest long double. Float sums add the parts' sums: stats() adds per-work-group sums
// of another grouping, so the two agree to rounding (a few units in the last place of the
// float64 sum, where the device has fp64).
class StatsAccumulator {
 public:
  explicit StatsAccumulator(DType t) : dtype_(t) {}
  // The stats() of one part; parts in any order, each pixel in one of them.
  void add(const Stats& part);
  Stats result() const;

 private:
  DType dtype_;
  std::uint64_t count_ = 0, nan_count_ = 0;
  bool extremes_ = false;
  Scalar min_, max_;
  bool exact_ = true;
  Int128 int_total_ = 0;
  long double approx_total_ = 0;
  double float_total_ = 0;
};

}  // namespace gpix::detail
