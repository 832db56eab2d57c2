#pragma once
// The host half of label_statistics: its table from the per-label buffers that
// kernels/label_statistics.kernel leaves, pulled as they are. Apart from the device half so
// that bench/bench_table.cpp can time it on synthetic buffers (issue 17: on an H100 this was
// most of a 2D call).
#include <cstddef>
#include <cstdint>

#include "gpix/dtype.h"
#include "gpix/table.h"

namespace gpix::detail {

// The kernel's encodings (label_statistics.kernel's header): keys order-preserving
// unsigned words of key_bits (key_mode 0 unsigned, 1 signed, 2 float), minima complemented
// (~key); sums in `reps` slots per label (sum_mode 0: 64-bit two's-complement integers,
// 1: float32 bits, 2: float64 bits).
struct LabelStatsBuffers {
  std::size_t rows = 0;  // labels 1..rows
  std::size_t reps = 1;  // sum slots per label
  DType value_dtype = DType::f32;
  int key_bits = 32;
  int key_mode = 0;
  int sum_mode = 0;
  const std::uint32_t* area = nullptr;       // rows
  const std::uint32_t* nan_flags = nullptr;  // rows: nonzero where the label has a NaN pixel
  const void* mins_complement = nullptr;     // rows keys, each ~key
  const void* maxs = nullptr;                // rows keys
  const void* sums = nullptr;                // rows * reps words, slot j of label r at r*reps+j
};

inline const char* const kLabelStatsColumns[] = {"label", "area", "mean_intensity", "min_intensity",
                                                 "max_intensity"};

// label, area, mean, min, max for labels 1..rows in one pass over the buffers (NaN for the
// statistics of an absent label or one holding a NaN pixel).
Table label_stats_table(const LabelStatsBuffers& b);

}  // namespace gpix::detail
