#pragma once
// Statistics computed on the device in one pass, and the metadata card built from them.
#include <cstdint>
#include <string>

#include "gpix/array.h"
#include "gpix/scalar.h"

namespace gpix {

// NaN handling (float dtypes): NaN pixels are counted in nan_count and otherwise ignored,
// as numpy's nanmin/nanmax/nansum/nanmean do. If every pixel is NaN, min, max and mean are
// NaN and sum is 0. Infinities take part normally (+inf and -inf together make the sum NaN).
// Sums: integer dtypes are summed exactly (in 128 bits); the sum is an int64 (signed dtypes)
// or uint64 (unsigned) when it fits, else the nearest double, and the mean is computed from
// the exact sum. Floats are summed in double where the device has fp64, otherwise in float
// with a tree reduction.
struct Stats {
  Scalar min;   // exact, in the array's dtype
  Scalar max;
  Scalar sum;   // int64/uint64 for integer dtypes (double past 64 bits), double for floats
  double mean = 0;
  std::uint64_t count = 0;      // pixels that took part (all but NaN)
  std::uint64_t nan_count = 0;  // NaN pixels (always 0 for integer dtypes)
};

// Throws UnsupportedDType/DeviceError as the device reports.
Stats stats(const Array& a);

// The metadata card: what an array is, at a glance.
struct Card {
  Shape shape;
  DType dtype = DType::u8;
  std::uint64_t bytes = 0;
  std::string size;  // human units, e.g. "64.0 kB" (SI: 1 kB = 1000 B)
  Stats stats;
  std::string device;  // device label
  MemoryKind kind = MemoryKind::buffer;
};

Card card(const Array& a);
// Several lines of "key: value" for the CLI and logs.
std::string to_text(const Card& c);
// "64.0 kB", "1.50 GB": SI units, three significant digits.
std::string human_bytes(std::uint64_t bytes);

}  // namespace gpix
