#include "filters/label_stats_table.h"

#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gpix/error.h"

namespace gpix::detail {
namespace {

template <class Key, int KeyMode>
double decode_key(Key key) {
  constexpr Key sign = Key{1} << (sizeof(Key) * 8 - 1);
  if constexpr (KeyMode == 0) {
    return static_cast<double>(key);
  } else if constexpr (KeyMode == 1) {
    return static_cast<double>(static_cast<std::make_signed_t<Key>>(key ^ sign));
  } else {
    const Key bits = (key & sign) ? (key ^ sign) : static_cast<Key>(~key);
    using F = std::conditional_t<sizeof(Key) == 8, double, float>;
    F f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }
}

// One pass over the buffers writing the five columns; the encodings are template arguments
// so that the loop holds no per-row branch on them.
template <class Key, int KeyMode, int SumMode>
void fill(const LabelStatsBuffers& b, bool signed_sum, Table& t) {
  using Word = std::conditional_t<SumMode == 1, std::uint32_t, std::uint64_t>;
  const auto* mins = static_cast<const Key*>(b.mins_complement);
  const auto* maxs = static_cast<const Key*>(b.maxs);
  const auto* sums = static_cast<const Word*>(b.sums);
  double* label = t.column(0).data();
  double* area = t.column(1).data();
  double* mean = t.column(2).data();
  double* lo = t.column(3).data();
  double* hi = t.column(4).data();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::size_t reps = b.reps;
  for (std::size_t r = 0; r < b.rows; ++r) {
    const Word* slot = sums + r * reps;
    double sum = 0;
    if constexpr (SumMode == 0) {
      // Exact: the slots' 64-bit two's-complement sums add up modulo 2^64 like one sum.
      std::uint64_t total = 0;
      for (std::size_t j = 0; j < reps; ++j) total += slot[j];
      sum = signed_sum ? static_cast<double>(static_cast<std::int64_t>(total))
                       : static_cast<double>(total);
    } else {
      using F = std::conditional_t<SumMode == 1, float, double>;
      for (std::size_t j = 0; j < reps; ++j) {
        F f;
        std::memcpy(&f, slot + j, sizeof f);
        sum += f;
      }
    }
    const double cnt = b.area[r];
    const bool none = b.area[r] == 0 || b.nan_flags[r] != 0;
    label[r] = static_cast<double>(r + 1);
    area[r] = cnt;
    mean[r] = none ? nan : sum / cnt;
    lo[r] = none ? nan : decode_key<Key, KeyMode>(static_cast<Key>(~mins[r]));
    hi[r] = none ? nan : decode_key<Key, KeyMode>(maxs[r]);
  }
}

template <class Key, int KeyMode>
void fill_sums(const LabelStatsBuffers& b, bool signed_sum, Table& t) {
  switch (b.sum_mode) {
    case 0:
      return fill<Key, KeyMode, 0>(b, signed_sum, t);
    case 1:
      return fill<Key, KeyMode, 1>(b, signed_sum, t);
    case 2:
      return fill<Key, KeyMode, 2>(b, signed_sum, t);
    default:
      break;
  }
  throw Error("internal: label_statistics sum mode " + std::to_string(b.sum_mode));
}

template <class Key>
void fill_keys(const LabelStatsBuffers& b, bool signed_sum, Table& t) {
  switch (b.key_mode) {
    case 0:
      return fill_sums<Key, 0>(b, signed_sum, t);
    case 1:
      return fill_sums<Key, 1>(b, signed_sum, t);
    case 2:
      return fill_sums<Key, 2>(b, signed_sum, t);
    default:
      break;
  }
  throw Error("internal: label_statistics key mode " + std::to_string(b.key_mode));
}

}  // namespace

Table label_stats_table(const LabelStatsBuffers& b) {
  // The names made once: every call's table shares them.
  static const Table::Columns columns = Table::shared_columns(
      std::vector<std::string>(std::begin(kLabelStatsColumns), std::end(kLabelStatsColumns)));
  Table t = Table::for_overwrite(columns, b.rows);
  if (b.rows == 0) return t;
  const bool signed_sum = is_signed(b.value_dtype);
  if (b.key_bits == 64) {
    fill_keys<std::uint64_t>(b, signed_sum, t);
  } else {
    fill_keys<std::uint32_t>(b, signed_sum, t);
  }
  return t;
}

}  // namespace gpix::detail
