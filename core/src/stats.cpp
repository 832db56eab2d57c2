#include "gpix/stats.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <tuple>
#include <vector>

#include "detail.h"
#include "kernel_variants.h"
#include "memory_pool.h"
#include "moments.h"
#include "programs.h"
#include "stats_accumulator.h"

namespace gpix {
namespace {

using detail::Access;
using detail::KernelArg;

using detail::Int128;
using detail::RecycledVector;

// stats.kernel's stats_final: the combined partial's slots.
constexpr std::size_t kFinalSlots = 7;

// The value of type T in the low bytes of a 64-bit slot (the kernel stores T there).
template <class T>
T bits_as(std::uint64_t slot) {
  static_assert(sizeof(T) <= sizeof slot);
  T v;
  std::memcpy(&v, &slot, sizeof v);
  return v;
}

// An integer sum as Stats keeps it: the exact int64/uint64 where it fits, else the nearest
// double; the mean from the exact sum.
template <class T>
void set_int_sum(Stats& s, Int128 total) {
  using Wide = std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>;
  if (total >= static_cast<Int128>(std::numeric_limits<Wide>::lowest()) &&
      total <= static_cast<Int128>(std::numeric_limits<Wide>::max())) {
    s.sum = static_cast<Wide>(total);
  } else {
    s.sum = static_cast<double>(total);  // beyond 64 bits: the nearest double
  }
  s.mean = static_cast<double>(static_cast<long double>(total) / static_cast<long double>(s.count));
}

// The partials' float sum in stats.kernel's stats_final order: work-item i of wg adds a
// contiguous run of partials in order, then a tree halves the wg sums. Where the device's
// final pass is not ready yet (tiered compilation), the host's sum is the device's to the bit.
template <class Acc>
Acc tree_sum(const RecycledVector<Acc>& sums, std::size_t wg) {
  const std::size_t groups = sums.size(), per = (groups + wg - 1) / wg;
  RecycledVector<Acc> part(wg, Acc{});
  for (std::size_t i = 0; i < wg; ++i) {
    for (std::size_t g = std::min(i * per, groups); g < std::min(i * per + per, groups); ++g)
      part[i] += sums[g];
  }
  for (std::size_t h = wg / 2; h > 0; h >>= 1) {
    for (std::size_t i = 0; i < h; ++i) part[i] += part[i + h];
  }
  return part[0];
}

template <class T>
Stats combine(const RecycledVector<T>& mins, const RecycledVector<T>& maxs, const auto& sums,
              const RecycledVector<std::uint64_t>& nans, std::uint64_t n, std::size_t wg) {
  Stats s;
  for (auto c : nans) s.nan_count += c;
  s.count = n - s.nan_count;
  if constexpr (std::is_floating_point_v<T>) {
    if (s.count == 0) {
      s.min = std::numeric_limits<double>::quiet_NaN();
      s.max = std::numeric_limits<double>::quiet_NaN();
      s.sum = 0.0;
      s.mean = std::numeric_limits<double>::quiet_NaN();
      return s;
    }
  }
  s.min = *std::min_element(mins.begin(), mins.end());
  s.max = *std::max_element(maxs.begin(), maxs.end());
  const auto total = tree_sum(sums, wg);
  s.sum = total;
  s.mean = static_cast<double>(total) / static_cast<double>(s.count);
  return s;
}

// Integers: the kernel sums the low 32 bits and the (signed) high 32 bits of each pixel apart.
template <class T>
Stats combine_int(const RecycledVector<T>& mins, const RecycledVector<T>& maxs,
                  const RecycledVector<std::uint64_t>& lows,
                  const RecycledVector<std::int64_t>& highs, std::uint64_t n) {
  Stats s;
  s.count = n;
  s.min = *std::min_element(mins.begin(), mins.end());
  s.max = *std::max_element(maxs.begin(), maxs.end());
  Int128 total = 0;
  for (auto v : lows) total += v;
  for (auto v : highs) total += static_cast<Int128>(v) * (Int128{1} << 32);
  set_int_sum<T>(s, total);
  return s;
}

}  // namespace

namespace detail {

void StatsAccumulator::add(const Stats& part) {
  count_ += part.count;
  nan_count_ += part.nan_count;
  if (part.count == 0) return;  // every pixel NaN: no extremes, a sum of 0
  visit_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    // The first of equal extremes stays, as stats() keeps its first work-group's.
    if (!extremes_ || part.min.exact_as<T>() < min_.exact_as<T>()) min_ = part.min;
    if (!extremes_ || max_.exact_as<T>() < part.max.exact_as<T>()) max_ = part.max;
    if constexpr (std::is_floating_point_v<T>) {
      float_total_ += part.sum.as_double();
    } else if (part.sum.is_float()) {
      exact_ = false;  // a part's sum beyond 64 bits came as a double
      approx_total_ += static_cast<long double>(part.sum.as_double());
    } else if (part.sum.is_signed_int()) {
      int_total_ += part.sum.exact_as<std::int64_t>();
      approx_total_ += static_cast<long double>(part.sum.exact_as<std::int64_t>());
    } else {
      int_total_ += part.sum.exact_as<std::uint64_t>();
      approx_total_ += static_cast<long double>(part.sum.exact_as<std::uint64_t>());
    }
  });
  extremes_ = true;
}

Stats StatsAccumulator::result() const {
  Stats s;
  s.count = count_;
  s.nan_count = nan_count_;
  if (!extremes_) {
    // No pixel took part (every one NaN): as stats() says it.
    s.min = std::numeric_limits<double>::quiet_NaN();
    s.max = std::numeric_limits<double>::quiet_NaN();
    s.sum = 0.0;
    s.mean = std::numeric_limits<double>::quiet_NaN();
    return s;
  }
  s.min = min_;
  s.max = max_;
  visit_dtype(dtype_, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      s.sum = float_total_;
      s.mean = float_total_ / static_cast<double>(s.count);
    } else if (exact_) {
      set_int_sum<T>(s, int_total_);
    } else {
      s.sum = static_cast<double>(approx_total_);
      s.mean = static_cast<double>(approx_total_ / static_cast<long double>(s.count));
    }
  });
  return s;
}

Defines stats_defines(DType t, DType acc, std::size_t wg) {
  Defines d = {{"T", std::string(kernel_type(t))},
               {"ACC", std::string(kernel_type(acc))},
               {"IS_FLOAT", is_float(t) ? "1" : "0"},
               {"WG", std::to_string(wg)}};
  if (t == DType::f64 || acc == DType::f64) d.emplace_back("GPIX_NEED_FP64", "1");
  return d;
}

void add_stats_variants(std::vector<KernelVariant>& out) {
  for (DType t : kAllDTypes) {
    // Whole statistics, and minimum and maximum alone (extrema()) with the same defines.
    for (const char* entry : {"stats_partial", "stats_extrema"}) {
      if (is_float(t)) {
        if (t == DType::f32)
          out.push_back({"stats.kernel", entry, stats_defines(t, DType::f32, 256)});
        out.push_back({"stats.kernel", entry, stats_defines(t, DType::f64, 256)});
      } else {
        out.push_back({"stats.kernel", entry, stats_defines(t, DType::u64, 256)});
      }
    }
    // Moments accumulate in double, or in float on devices without fp64 for the dtypes whose
    // squares float holds (8/16-bit integers and float32).
    out.push_back({"stats.kernel", "stats_moments", stats_defines(t, DType::f64, 256)});
    if (size_of(t) <= 2 || t == DType::f32)
      out.push_back({"stats.kernel", "stats_moments", stats_defines(t, DType::f32, 256)});
  }
}

namespace {
// Work-group size and count for the one-pass reductions: enough groups to fill the device,
// few enough that the partials stay a few kB.
std::pair<std::size_t, std::size_t> reduction_grid(const DeviceInfo& info, std::uint64_t n) {
  std::size_t wg = 256;
  while (wg > info.max_work_group && wg > 1) wg /= 2;
  const std::size_t max_groups = std::clamp<std::size_t>(info.compute_units * 8u, 16u, 4096u);
  return {wg, std::min<std::size_t>((n + wg - 1) / wg, max_groups)};
}
}  // namespace

Moments moments(const Array& a) {
  if (!a.is_contiguous()) return moments(a.to_buffer());  // the kernel reads a flat run
  auto& impl = Access::impl(a);
  auto& dev = *impl.device;
  const std::uint64_t n = a.elements();
  const auto [wg, groups] = reduction_grid(dev.info(), n);
  // 32/64-bit dtypes need double: float would overflow on the squares of 64-bit values.
  const bool narrow = size_of(impl.dtype) <= 2 || impl.dtype == DType::f32;
  if (!narrow) {
    require_dtype(a.device(), DType::f64, [&] {
      return "the standard deviation of " + std::string(name(impl.dtype)) +
             " (accumulated in float64)";
    });
  }
  const DType acc = a.device().supports_fp64() ? DType::f64 : DType::f32;
  const auto& kernel =
      dev.kernel(program("stats.kernel"), "stats_moments", stats_defines(impl.dtype, acc, wg));
  // The groups' counts, means and M2s in one buffer, read back at once: with three reads (each
  // a wait for the device) a 2048^2 float32 standard deviation took 79 us on an H200, with one
  // 54 (bench/RESULTS.md, 2026-11-29).
  const std::size_t acc_bytes = size_of(acc);
  auto part = dev.pool().allocate(groups * (sizeof(std::uint64_t) + 2 * acc_bytes));
  const KernelArg args[] = {KernelArg::mem(*impl.memory), KernelArg::scalar<std::uint64_t>(n),
                            KernelArg::mem(*part)};
  Launch l;
  l.global[0] = groups * wg;
  l.local[0] = wg;
  dev.launch(*kernel, l, args);
  RecycledVector<std::byte> bytes(groups * (sizeof(std::uint64_t) + 2 * acc_bytes));
  dev.read(*part, 0, bytes.data(), bytes.size());
  RecycledVector<std::uint64_t> counts(groups);
  RecycledVector<double> means(groups), m2s(groups);
  std::memcpy(counts.data(), bytes.data(), groups * sizeof(std::uint64_t));
  const std::byte* acc_at = bytes.data() + groups * sizeof(std::uint64_t);
  if (acc == DType::f64) {
    std::memcpy(means.data(), acc_at, groups * sizeof(double));
    std::memcpy(m2s.data(), acc_at + groups * sizeof(double), groups * sizeof(double));
  } else {
    RecycledVector<float> f(2 * groups);
    std::memcpy(f.data(), acc_at, 2 * groups * sizeof(float));
    means.assign(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(groups));
    m2s.assign(f.begin() + static_cast<std::ptrdiff_t>(groups), f.end());
  }
  Moments m;
  for (std::size_t g = 0; g < groups; ++g) merge(m, Moments{counts[g], means[g], m2s[g]});
  return m;
}

}  // namespace detail

namespace {

// One pass of stats.kernel's `entry` (stats_partial, or stats_extrema: the same slots, the sums
// left 0) launched over a contiguous or pitched buffer, with stats_final after it where there is
// more than one work-group and its program is ready.
struct Partials {
  std::shared_ptr<detail::Memory> memory;
  std::size_t groups = 0, wg = 0;
  // 8-byte slots per group: floats four, integers a fifth for the high halves of their sums
  // (the read-back is latency-bound, so floats do not carry the extra slot).
  std::size_t slots = 0;
  bool acc_double = false;  // float dtypes: the sums' type
  bool combined = false;    // stats_final ran: its kFinalSlots slots follow the partials
};

Partials launch_partials(const Array& a, const char* entry) {
  auto& impl = Access::impl(a);
  auto& dev = *impl.device;
  const std::uint64_t n = a.elements();
  Partials p;
  std::tie(p.wg, p.groups) = detail::reduction_grid(dev.info(), n);
  const bool is_f = is_float(impl.dtype);
  p.acc_double = is_f && a.device().supports_fp64();
  const DType acc_dtype = is_f ? (p.acc_double ? DType::f64 : DType::f32) : DType::u64;
  const detail::Defines defines = detail::stats_defines(impl.dtype, acc_dtype, p.wg);
  const auto& kernel = dev.kernel(detail::program("stats.kernel"), entry, defines);

  // One partial buffer, one read back (four reads cost four round trips of latency). More than
  // one group: stats_final combines the partials on the device into 7 slots after them, and
  // those are what travel back.
  p.slots = is_f ? 4 : 5;
  const bool final_pass = p.groups > 1;
  p.memory = dev.pool().allocate((p.groups * p.slots + (final_pass ? kFinalSlots : 0)) *
                                 sizeof(std::uint64_t));
  const std::uint64_t w = impl.contiguous() ? n : impl.shape.width();
  const KernelArg args[] = {
      KernelArg::mem(*impl.memory),
      KernelArg::scalar<std::uint64_t>(n),
      KernelArg::scalar<std::uint64_t>(w),
      KernelArg::scalar<std::uint64_t>(impl.shape.height()),
      KernelArg::scalar<std::uint64_t>(impl.padded.width()),
      KernelArg::scalar<std::uint64_t>(impl.padded.width() * impl.padded.height()),
      KernelArg::mem(*p.memory)};
  detail::Launch l;
  l.global[0] = p.groups * p.wg;
  l.local[0] = p.wg;
  dev.launch(*kernel, l, args);

  // Where stats_final still compiles (tiered compilation on OpenCL GPUs), the host combines
  // the partials in its order.
  const auto fin =
      final_pass ? dev.kernel_if_ready(detail::program("stats.kernel"), "stats_final", defines)
                 : nullptr;
  if (fin) {
    const KernelArg fargs[] = {KernelArg::mem(*p.memory),
                               KernelArg::scalar<std::uint64_t>(p.groups)};
    detail::Launch one;
    one.global[0] = p.wg;
    one.local[0] = p.wg;
    dev.launch(*fin, one, fargs);
    p.combined = true;
  }
  return p;
}

// The partials read back and combined into a's Stats (launch_partials' order).
Stats read_partials(const Array& a, const Partials& p) {
  auto& impl = Access::impl(a);
  auto& dev = *impl.device;
  const std::uint64_t n = a.elements();
  const std::size_t groups = p.groups, slots = p.slots;
  return visit_dtype(impl.dtype, [&](auto zero) -> Stats {
    using T = decltype(zero);
    constexpr bool kFloat = std::is_floating_point_v<T>;
    if (p.combined) {
      std::array<std::uint64_t, kFinalSlots> f{};
      dev.read(*p.memory, groups * slots * sizeof(std::uint64_t), f.data(), sizeof f);
      const T mn = bits_as<T>(f[0]), mx = bits_as<T>(f[1]);
      if constexpr (kFloat) {
        auto one_sum = [&](auto acc_zero) {
          return combine<T>(RecycledVector<T>{mn}, RecycledVector<T>{mx},
                            RecycledVector<decltype(acc_zero)>{bits_as<decltype(acc_zero)>(f[2])},
                            RecycledVector<std::uint64_t>{f[3]}, n, 1);
        };
        return p.acc_double ? one_sum(double{}) : one_sum(float{});
      } else {
        // lows = f[2] + f[4] 2^32, highs = f[5] + f[6] 2^32, total = lows + highs 2^32.
        const Int128 total =
            static_cast<Int128>(f[2]) +
            (static_cast<Int128>(f[4]) + static_cast<Int128>(f[5])) * (Int128{1} << 32) +
            static_cast<Int128>(static_cast<std::int64_t>(f[6])) * (Int128{1} << 64);
        Stats s;
        s.count = n;
        s.min = mn;
        s.max = mx;
        set_int_sum<T>(s, total);
        return s;
      }
    }

    RecycledVector<std::byte> raw(groups * slots * sizeof(std::uint64_t));
    dev.read(*p.memory, 0, raw.data(), raw.size());
    const std::size_t slot = groups * sizeof(std::uint64_t);
    RecycledVector<T> mins(groups), maxs(groups);
    RecycledVector<std::uint64_t> nans(groups);
    std::memcpy(mins.data(), raw.data(), groups * sizeof(T));
    std::memcpy(maxs.data(), raw.data() + slot, groups * sizeof(T));
    std::memcpy(nans.data(), raw.data() + 3 * slot, groups * sizeof(std::uint64_t));
    auto read_sums = [&](auto acc_zero) {
      RecycledVector<decltype(acc_zero)> sums(groups);
      std::memcpy(sums.data(), raw.data() + 2 * slot, groups * sizeof(decltype(acc_zero)));
      return combine<T>(mins, maxs, sums, nans, n, p.wg);
    };
    if constexpr (kFloat) {
      return p.acc_double ? read_sums(double{}) : read_sums(float{});
    } else {
      RecycledVector<std::uint64_t> lows(groups);
      RecycledVector<std::int64_t> highs(groups);
      std::memcpy(lows.data(), raw.data() + 2 * slot, groups * sizeof(std::uint64_t));
      std::memcpy(highs.data(), raw.data() + 4 * slot, groups * sizeof(std::int64_t));
      return combine_int<T>(mins, maxs, lows, highs, n);
    }
  });
}

// The kernels read pitched buffers; images and region views (whose first pixel is not at the
// allocation's start) go through one contiguous copy.
bool needs_buffer(const Array& a) {
  return a.kind() == MemoryKind::image || Access::impl(a).region;
}

Stats stats_of(const Array& a, const char* entry) {
  if (needs_buffer(a)) return stats_of(a.to_buffer(), entry);
  return read_partials(a, launch_partials(a, entry));
}

}  // namespace

Stats stats(const Array& a) {
  return stats_of(a, "stats_partial");
}

namespace detail {
Stats extrema(const Array& a) {
  return stats_of(a, "stats_extrema");
}

DeviceExtrema extrema_on_device(const Array& a) {
  if (needs_buffer(a)) return extrema_on_device(a.to_buffer());
  Partials p = launch_partials(a, "stats_extrema");
  DeviceExtrema e;
  if (p.groups == 1 || p.combined) {
    // One group's slots are laid out as stats_final's: the minimum first, then the maximum.
    e.at = p.combined ? p.groups * p.slots : 0;
    e.memory = std::move(p.memory);
  } else {
    e.host = read_partials(a, p);
  }
  return e;
}
}  // namespace detail

std::string human_bytes(std::uint64_t bytes) {
  static const char* units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  if (bytes < 1000) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 999.95 && u < 5) {
    v /= 1000.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, v < 99.95 ? (v < 9.995 ? "%.2f %s" : "%.1f %s") : "%.0f %s", v,
                units[u]);
  return buf;
}

Card card(const Array& a) {
  Card c;
  c.shape = a.shape();
  c.dtype = a.dtype();
  c.bytes = a.bytes();
  c.size = human_bytes(c.bytes);
  c.stats = stats(a);
  c.device = a.device().label();
  c.kind = a.kind();
  return c;
}

std::string to_text(const Card& c) {
  std::string s;
  // The axes the shape has (a 2D image has no z).
  const int nd = c.shape.ndim();
  s += "shape:  " + c.shape.str() + (nd == 3 ? " (z, y, x)\n" : nd == 2 ? " (y, x)\n" : " (x)\n");
  s += "dtype:  " + std::string(name(c.dtype)) + "\n";
  s += "size:   " + c.size + " (" + std::to_string(c.bytes) + " bytes)\n";
  s += "min:    " + c.stats.min.str() + "\n";
  s += "max:    " + c.stats.max.str() + "\n";
  char mean[64];
  std::snprintf(mean, sizeof mean, "%.6g", c.stats.mean);
  s += "mean:   " + std::string(mean) + "\n";
  if (c.stats.nan_count) s += "NaN:    " + std::to_string(c.stats.nan_count) + " pixels\n";
  s += "device: " + c.device + "\n";
  s += "memory: " + std::string(name(c.kind)) + "\n";
  return s;
}

}  // namespace gpix
