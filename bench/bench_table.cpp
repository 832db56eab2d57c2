// The host half of label_statistics on synthetic pulled buffers (issue 17): from the per-label
// buffers as the kernel leaves them to the returned gpix::Table, against the layout it
// replaced (one heap vector per row, pulled buffers zeroed first, 32-bit keys widened by an
// extra copy), both written here the same way the filter does. CPU only: no device.
//   bench_table [--repeats 21]
// Each timed call: allocate the pull destinations, copy the synthetic buffers into them (the
// pull's writes, first touch included), build the table and free it; "table only" times the
// last two on buffers pulled once. 2D and 3D images reach
// the same host code with the same buffers (their sizes depend on the label count only:
// one slot per label sum from 65536 labels on), so the label count is the axis here.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "filters/label_stats_table.h"
#include "timing.h"

namespace {

using gpix::DType;

struct Case {
  const char* name;
  DType value;
  int key_bits, key_mode, sum_mode;
};

// What the kernel leaves on the device, as bytes.
struct Device {
  std::size_t rows = 0, reps = 1;
  std::vector<std::uint32_t> area, nans;
  std::vector<std::byte> mins, maxs, sums;
};

Device synthetic(std::size_t rows, const Case& c) {
  Device d;
  d.rows = rows;
  d.reps = std::clamp<std::size_t>(65536 / rows, 1, 32);
  std::mt19937_64 rng(rows);
  d.area.resize(rows);
  d.nans.assign(rows, 0);
  for (auto& a : d.area) a = static_cast<std::uint32_t>(rng() % 200);  // some absent (0)
  const std::size_t key = c.key_bits / 8, word = c.sum_mode == 1 ? 4 : 8;
  d.mins.resize(rows * key);
  d.maxs.resize(rows * key);
  d.sums.resize(rows * d.reps * word);
  for (auto* v : {&d.mins, &d.maxs, &d.sums}) {
    for (auto& b : *v) b = static_cast<std::byte>(rng());
  }
  if (c.key_mode == 0) {
    // Unsigned keys are the values themselves: keep them in the intensity dtype's range.
    const std::uint64_t mask = (std::uint64_t{1} << (8 * gpix::size_of(c.value))) - 1;
    for (auto* v : {&d.mins, &d.maxs}) {
      auto* k = reinterpret_cast<std::uint32_t*>(v->data());
      for (std::size_t r = 0; r < rows; ++r) k[r] = static_cast<std::uint32_t>(k[r] & mask);
    }
    // Minima are stored complemented (label_statistics.kernel).
    auto* k = reinterpret_cast<std::uint32_t*>(d.mins.data());
    for (std::size_t r = 0; r < rows; ++r) k[r] = ~k[r];
  }
  return d;
}

// As label_statistics allocates its pull destinations: unset, on the table's allocator.
using Buffer = std::vector<std::byte, gpix::detail::ForOverwriteAllocator<std::byte>>;
struct Pulled {
  Buffer area, nans, mins, maxs, sums;
};

Buffer pull(const void* src, std::size_t bytes) {
  Buffer p(bytes);
  std::memcpy(p.data(), src, bytes);
  return p;
}

Pulled pull_all(const Device& d, const Case& c) {
  const std::size_t key = c.key_bits / 8, word = c.sum_mode == 1 ? 4 : 8;
  return {pull(d.area.data(), d.rows * 4), pull(d.nans.data(), d.rows * 4),
          pull(d.mins.data(), d.rows * key), pull(d.maxs.data(), d.rows * key),
          pull(d.sums.data(), d.rows * d.reps * word)};
}

gpix::Table table_of(const Pulled& p, const Device& d, const Case& c) {
  gpix::detail::LabelStatsBuffers b;
  b.rows = d.rows;
  b.reps = d.reps;
  b.value_dtype = c.value;
  b.key_bits = c.key_bits;
  b.key_mode = c.key_mode;
  b.sum_mode = c.sum_mode;
  b.area = reinterpret_cast<const std::uint32_t*>(p.area.data());
  b.nan_flags = reinterpret_cast<const std::uint32_t*>(p.nans.data());
  b.mins_complement = p.mins.data();
  b.maxs = p.maxs.data();
  b.sums = p.sums.data();
  return gpix::detail::label_stats_table(b);
}

gpix::Table columnar(const Device& d, const Case& c) {
  return table_of(pull_all(d, c), d, c);
}

// ---- the layout this replaced (core/src/filters/segmentation.cpp before issue 17's table)
struct RowsTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
};

template <class T>
double decode_key(std::uint64_t key, int key_bits, int key_mode) {
  const std::uint64_t sign = key_bits == 64 ? (1ull << 63) : (1ull << 31);
  if (key_mode == 0) return static_cast<double>(static_cast<T>(key));
  if (key_mode == 1) {
    const std::uint64_t u = key ^ sign;
    if (key_bits == 64) return static_cast<double>(static_cast<std::int64_t>(u));
    return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(u)));
  }
  const std::uint64_t bits = (key & sign) ? (key ^ sign) : ~key;
  if (key_bits == 64) {
    double x;
    std::memcpy(&x, &bits, sizeof x);
    return x;
  }
  const auto b32 = static_cast<std::uint32_t>(bits);
  float f;
  std::memcpy(&f, &b32, sizeof f);
  return f;
}

RowsTable per_row(const Device& d, const Case& c) {
  const std::size_t rows = d.rows, reps = d.reps;
  std::vector<std::uint32_t> a(rows), nan_flags(rows), s32, a32, b32;
  std::vector<std::uint64_t> kmin(rows), kmax(rows), s64;
  std::memcpy(a.data(), d.area.data(), rows * 4);
  std::memcpy(nan_flags.data(), d.nans.data(), rows * 4);
  if (c.key_bits == 64) {
    std::memcpy(kmin.data(), d.mins.data(), rows * 8);
    std::memcpy(kmax.data(), d.maxs.data(), rows * 8);
  } else {
    a32.resize(rows);
    b32.resize(rows);
    std::memcpy(a32.data(), d.mins.data(), rows * 4);
    std::memcpy(b32.data(), d.maxs.data(), rows * 4);
  }
  if (c.sum_mode != 1) {
    s64.resize(rows * reps);
    std::memcpy(s64.data(), d.sums.data(), rows * reps * 8);
  } else {
    s32.resize(rows * reps);
    std::memcpy(s32.data(), d.sums.data(), rows * reps * 4);
  }
  if (c.key_bits != 64) {
    std::copy(a32.begin(), a32.end(), kmin.begin());
    std::copy(b32.begin(), b32.end(), kmax.begin());
  }
  RowsTable t;
  t.columns = {"label", "area", "mean_intensity", "min_intensity", "max_intensity"};
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Minima come complemented (label_statistics.kernel).
  const std::uint64_t key_mask = c.key_bits == 64 ? ~std::uint64_t{0} : 0xffffffffull;
  t.rows.reserve(rows);
  gpix::visit_dtype(c.value, [&](auto zero) {
    using T = decltype(zero);
    for (std::size_t r = 0; r < rows; ++r) {
      const double cnt = a[r];
      double sum = 0;
      if (c.sum_mode == 0) {
        std::uint64_t total = 0;
        for (std::size_t j = 0; j < reps; ++j) total += s64[r * reps + j];
        sum = gpix::is_signed(c.value) ? static_cast<double>(static_cast<std::int64_t>(total))
                                       : static_cast<double>(total);
      } else if (c.sum_mode == 1) {
        for (std::size_t j = 0; j < reps; ++j) {
          float f;
          std::memcpy(&f, &s32[r * reps + j], sizeof f);
          sum += f;
        }
      } else {
        for (std::size_t j = 0; j < reps; ++j) {
          double x;
          std::memcpy(&x, &s64[r * reps + j], sizeof x);
          sum += x;
        }
      }
      const bool none = a[r] == 0 || nan_flags[r] != 0;
      t.rows.push_back({static_cast<double>(r + 1), cnt, none ? nan : sum / cnt,
                        none ? nan : decode_key<T>(~kmin[r] & key_mask, c.key_bits, c.key_mode),
                        none ? nan : decode_key<T>(kmax[r], c.key_bits, c.key_mode)});
    }
  });
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
  }
  // The intensity dtypes of the suite's rows and the widest encodings: float32 summed in
  // float64 (CUDA, NVIDIA OpenCL) or in float32 (no fp64), uint16, float64 (64-bit keys).
  const Case cases[] = {{"float32 (fp64 sums)", DType::f32, 32, 2, 2},
                        {"float32 (fp32 sums)", DType::f32, 32, 2, 1},
                        {"uint16", DType::u16, 32, 0, 0},
                        {"float64", DType::f64, 64, 2, 2}};
  std::printf("label_statistics host half, median of %d (ms)\n", repeats);
  std::printf("  %-8s %-20s %12s %12s %8s %12s\n", "labels", "intensity", "rows-of-vecs",
              "columnar", "speed-up", "table only");
  double sink = 0;
  for (std::size_t rows : {std::size_t{4096}, std::size_t{80000}, std::size_t{1000000}}) {
    for (const Case& c : cases) {
      const Device d = synthetic(rows, c);
      // Both give the same values: checked once here, so the timing compares like with like.
      const gpix::Table t = columnar(d, c);
      const RowsTable o = per_row(d, c);
      for (std::size_t r = 0; r < rows; ++r) {
        for (std::size_t k = 0; k < 5; ++k) {
          const double x = t(r, k), y = o.rows[r][k];
          if (!(x == y || (x != x && y != y))) {
            std::fprintf(stderr, "mismatch at row %zu column %zu: %g vs %g\n", r, k, x, y);
            return 1;
          }
        }
      }
      const double old_ms = gpix::bench::median_ms(repeats, [&] {
        const RowsTable x = per_row(d, c);
        sink += x.rows.back()[1];
      });
      const double new_ms = gpix::bench::median_ms(repeats, [&] {
        const gpix::Table x = columnar(d, c);
        sink += x(rows - 1, 1);
      });
      // The table alone, from buffers pulled once (no pull allocation or first touch).
      const Pulled p = pull_all(d, c);
      const double table_ms = gpix::bench::median_ms(repeats, [&] {
        const gpix::Table x = table_of(p, d, c);
        sink += x(rows - 1, 1);
      });
      std::printf("  %-8zu %-20s %12.3f %12.3f %7.1fx %12.3f\n", rows, c.name, old_ms, new_ms,
                  old_ms / new_ms, table_ms);
    }
  }
  return sink == -1 ? 1 : 0;
}
