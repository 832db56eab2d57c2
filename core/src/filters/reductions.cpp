// Projections along z (kernels/projection.kernel) and reductions over all pixels: minimum,
// maximum, sum and mean come from gpix::stats() (one pass, stats.kernel), the standard
// deviation from detail::moments() (stats.kernel's stats_moments), the histogram from
// kernels/histogram.kernel.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>

#include "config.h"
#include "filters/launch.h"
#include "filters/registry.h"
#include "gpix/error.h"
#include "gpix/filters/reductions.h"
#include "gpix/stats.h"
#include "kernel_variants.h"
#include "memory_pool.h"
#include "moments.h"
#include "recycling.h"
#include "stats_accumulator.h"

namespace gpix::detail {
namespace {

// A one-row, one-column table. The reductions' column names are made once, so that every
// call's table shares its list and a repeated call allocates nothing for it.
Result row(std::string_view column, double value) {
  static const std::array<Table::Columns, 5> lists = {
      Table::shared_columns({"minimum"}), Table::shared_columns({"maximum"}),
      Table::shared_columns({"sum"}), Table::shared_columns({"mean"}),
      Table::shared_columns({"std"})};
  const auto known = std::find_if(lists.begin(), lists.end(),
                                  [&](const Table::Columns& l) { return l->front() == column; });
  Result r;
  r.table = Table::for_overwrite(
      known != lists.end() ? *known : Table::shared_columns({std::string(column)}), 1);
  r.table(0, 0) = value;
  return r;
}

// ---------------------------------------------------------------- projections

enum class ZOp { minimum, maximum, sum, mean, std };

Defines extreme_defines(DType t) {
  Defines d;
  add_type_defines(d, {{"T_IN", t}});
  d.emplace_back("IS_FLOAT", is_float(t) ? "1" : "0");
  return d;
}

// The sum keeps the accumulation type; mean and std are float32 (float64 stays float64).
DType moments_out(DType t, ZOp op) {
  if (op == ZOp::sum) return compute_type({t});
  return t == DType::f64 ? DType::f64 : DType::f32;
}

// Whether projection.kernel sums and means t in 64-bit integers (INT_SUM).
bool int_sum(DType t) {
  return !is_float(t) && size_of(t) <= 4;
}

Defines moments_defines(DType t, DType out) {
  Defines d;
  add_type_defines(d, {{"T_IN", t}, {"T_OUT", out}, {"CT", compute_type({t})}});
  d.emplace_back("IS_FLOAT", is_float(t) ? "1" : "0");
  // Sums and means of integers of up to 32 bits in 64-bit integers (projection.kernel).
  d.emplace_back("INT_SUM", int_sum(t) ? "1" : "0");
  return d;
}

Array z_project(const Array& in, ZOp op) {
  const Shape& s = in.shape();
  const Shape out_shape{s.height(), s.width()};
  const bool extreme = op == ZOp::minimum || op == ZOp::maximum;
  const DType out_t = extreme ? in.dtype() : moments_out(in.dtype(), op);
  if (!extreme) {
    require_dtype(in.device(), compute_type({in.dtype()}), [&] {
      return "this projection on " + std::string(name(in.dtype())) + " (computed in float64)";
    });
  }
  Array out = Array::empty(out_shape, out_t, in.device());
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, s);
  Launch grid = image_grid(out_shape);
  if (extreme) {
    args.push_back(arg(static_cast<std::int32_t>(op == ZOp::maximum)));
    launch(in, "projection.kernel", "z_extreme", extreme_defines(in.dtype()), grid, args);
  } else {
    args.push_back(arg(static_cast<std::int32_t>(op == ZOp::sum ? 0 : (op == ZOp::mean ? 1 : 2))));
    launch(in, "projection.kernel", "z_moments", moments_defines(in.dtype(), out_t), grid, args);
  }
  return out;
}

// The projections slab by slab (gpix::run_tiled): each column's state stays on the device
// between slabs, so the result is the whole-array kernel's (projection.kernel's _carry
// kernels: the same arithmetic in the same order).
class ProjectionFold final : public SlabFold {
 public:
  ProjectionFold(ZOp op, const Shape& shape, DType t)
      : op_(op), planes_(shape[0]), out_shape_{shape.height(), shape.width()}, dtype_(t) {}

  // What add() allocates, each array in its block of the pool (MemoryPool::size_class).
  std::size_t state_bytes() const override {
    const std::size_t px = out_shape_.elements();
    const auto block = [](std::size_t bytes) { return detail::MemoryPool::size_class(bytes); };
    if (extreme()) return block(px * size_of(dtype_)) + block(px * sizeof(std::uint32_t));
    return block(px * size_of(moments_out(dtype_, op_))) +
           block(state_elements() * size_of(compute_type({dtype_}))) +
           block(px * sizeof(std::uint64_t));
  }

  void add(int /*pass*/, std::span<const Array> slab, std::size_t z0) override {
    const Array& in = slab[0];
    const Shape& s = in.shape();
    const bool first = z0 == 0, last = z0 + s.depth() == planes_;
    const Launch grid = image_grid(out_shape_);
    if (extreme()) {
      if (first) {
        out_ = Array::empty(out_shape_, dtype_, in.device());
        count_ = Array::empty(out_shape_, DType::u32, in.device());
      }
      KernelArgs args = {arg(in), arg(out_), arg(count_)};
      push_shape(args, s);
      args.push_back(arg(static_cast<std::int32_t>(op_ == ZOp::maximum)));
      args.push_back(arg(static_cast<std::int32_t>(first)));
      args.push_back(arg(static_cast<std::int32_t>(last)));
      launch(in, "projection.kernel", "z_extreme_carry", extreme_defines(dtype_), grid, args);
      return;
    }
    const DType out_t = moments_out(dtype_, op_), ct = compute_type({dtype_});
    if (first) {
      require_dtype(in.device(), ct, [&] {
        return "this projection on " + std::string(name(dtype_)) + " (computed in float64)";
      });
      out_ = Array::empty(out_shape_, out_t, in.device());
      // k, s, ss and c (projection.kernel's z_moments_carry); the integer sums keep theirs in
      // count_, and the kernel's state argument is a placeholder there.
      state_ = state_elements() == 1
                   ? Array::empty(Shape{1}, ct, in.device())
                   : Array::empty(Shape{4, out_shape_[0], out_shape_[1]}, ct, in.device());
      count_ = Array::empty(out_shape_, DType::u64, in.device());
    }
    KernelArgs args = {arg(in), arg(out_), arg(state_), arg(count_)};
    push_shape(args, s);
    args.push_back(
        arg(static_cast<std::int32_t>(op_ == ZOp::sum ? 0 : (op_ == ZOp::mean ? 1 : 2))));
    args.push_back(arg(static_cast<std::int32_t>(first)));
    args.push_back(arg(static_cast<std::int32_t>(last)));
    args.push_back(KernelArg::scalar<std::uint64_t>(z0));
    launch(in, "projection.kernel", "z_moments_carry", moments_defines(dtype_, out_t), grid, args);
  }

  Folded finish() override { return {one(out_), {}}; }

 private:
  bool extreme() const { return op_ == ZOp::minimum || op_ == ZOp::maximum; }
  std::size_t state_elements() const {
    return int_sum(dtype_) && op_ != ZOp::std ? 1 : 4 * out_shape_.elements();
  }
  ZOp op_;
  std::size_t planes_;
  Shape out_shape_;
  DType dtype_;
  Array out_, state_, count_;
};

// ---------------------------------------------------------------- histogram

constexpr int kMaxBins = 4096;  // the largest local-memory sub-histogram: 16 kB
constexpr std::size_t kHistWG = 256;
// histogram_partial's local bins and edges together at most: under CUDA's static 48 kB a block.
constexpr std::uint64_t kHistLocalBytes = 40960;

// histogram_edges' and histogram_partial's defines; the latter adds its local memory's.
Defines histogram_defines(DType t, std::size_t wg) {
  Defines d;
  add_type_defines(d, {{"T", t}, {"CT", compute_type({t})}});
  d.emplace_back("WG", std::to_string(wg));
  return d;
}

// histogram_partial's local memory: bins for nbins rounded up to a power of two from 256 (one
// program per power), and the edges beside them while both fit in kHistLocalBytes (every case
// but 4096 float64 bins) and in the device's local memory (local_memory; 0: unknown).
// histogram.kernel says why the edges move there.
Defines histogram_partial_defines(DType t, std::size_t wg, int nbins, std::uint64_t local_memory) {
  Defines d = histogram_defines(t, wg);
  const auto lbins = std::max<std::size_t>(256, std::bit_ceil(static_cast<std::size_t>(nbins)));
  const std::size_t edge_bytes = (lbins + 1) * size_of(compute_type({t}));
  d.emplace_back("LBINS", std::to_string(lbins));
  const std::uint64_t room =
      local_memory ? std::min(kHistLocalBytes, local_memory) : kHistLocalBytes;
  d.emplace_back("LEDGES", edge_bytes + lbins * sizeof(std::uint32_t) <= room ? "1" : "0");
  return d;
}

// A histogram's bins as the catalog's table and the tiled fold use them: recycled vectors, so
// that a repeated call allocates nothing on the host (the public histogram() copies them out).
struct Bins {
  RecycledVector<double> edges;          // n_bins + 1
  RecycledVector<std::uint64_t> counts;  // n_bins
};

// Whether histogram_partial's first guess of a value's bin, (v - edges[0]) * scale truncated
// and clamped as the kernel computes it in CT, is never more than one bin from the right one
// for these edges (histogram.kernel's one_step). The guess does not decrease as v grows, so it
// is enough that each inner edge j guesses j - 1 or j: a value of bin j (from edge j up to
// below edge j + 1) then guesses j - 1 to j + 1. This is a little stricter than checking each
// bin's first and last value (a false answer only costs the loops), and one guess a bin.
// Bins so narrow that a subnormal difference v - edges[0] spans a whole bin are left to the
// loops: a device that flushes subnormals to zero guesses bin 0 for it, where this check
// computed otherwise.
template <class CT>
bool guess_within_one(std::span<const CT> edges, CT scale) {
  const int nbins = static_cast<int>(edges.size()) - 1;
  const CT lo = edges[0];
  if (!(std::numeric_limits<CT>::min() * scale < CT(1))) return false;
  for (int j = 1; j < nbins; ++j) {
    const CT g = (edges[static_cast<std::size_t>(j)] - lo) * scale;
    const int guess =
        g >= static_cast<CT>(nbins - 1) ? nbins - 1 : (g > CT(0) ? static_cast<int>(g) : 0);
    if (guess < j - 1 || guess > j) return false;
  }
  return true;
}

// histogram_edges' defines: the image's type for its extrema, the compute type for the edges,
// float64 for numpy.linspace's arithmetic.
Defines histogram_edges_defines(DType t) {
  Defines d = histogram_defines(t, kHistWG);
  if (compute_type({t}) != DType::f64) d.emplace_back("GPIX_NEED_FP64", "1");
  return d;
}

// histogram.kernel's head: 8-byte slots for the status and the range found, then the edges,
// the scale and one_step in CT, rounded up to whole slots; the counts follow it.
constexpr std::size_t kHeadSlots = 3;
template <class CT>
std::size_t head_bytes(int nbins) {
  const std::size_t bytes =
      kHeadSlots * sizeof(std::uint64_t) + (static_cast<std::size_t>(nbins) + 3) * sizeof(CT);
  return (bytes + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t) * sizeof(std::uint64_t);
}

// The head for a settled range [lo, hi], as histogram_edges writes it: edges as
// numpy.linspace(lo, hi, nbins + 1) computes them (a product, then a sum: the build never fuses
// them, CMAKE_CXX_EXTENSIONS being off), then rounded to the compute type; these exact values
// are what histogram_partial compares against, and what is reported.
template <class CT>
void histogram_head(std::span<std::byte> head, int nbins, double lo, double hi) {
  const std::uint64_t status = 0;
  std::memcpy(head.data(), &status, sizeof status);
  std::memcpy(head.data() + 8, &lo, sizeof lo);
  std::memcpy(head.data() + 16, &hi, sizeof hi);
  const auto n = static_cast<std::size_t>(nbins);
  RecycledVector<CT> edges(n + 3);
  const double step = (hi - lo) / nbins;
  for (std::size_t i = 0; i < n; ++i)
    edges[i] = static_cast<CT>(lo + static_cast<double>(i) * step);
  edges[n] = static_cast<CT>(hi);
  const CT scale = static_cast<CT>(nbins / (hi - lo));
  edges[n + 1] = scale;
  edges[n + 2] = guess_within_one(std::span<const CT>(edges.data(), n + 1), scale) ? 1 : 0;
  std::memcpy(head.data() + kHeadSlots * 8, edges.data(), edges.size() * sizeof(CT));
}

// Where a histogram's range comes from: settled on the host (lo, hi), or the image's own range
// still on the device (stats_extrema's slots at `at` of `memory`, DeviceExtrema), for
// histogram_edges to settle there.
struct HistRange {
  double lo = 0, hi = 0;
  std::shared_ptr<Memory> memory;
  std::uint64_t at = 0;
  DeviceImpl::KernelPtr edges;  // histogram_edges, where the caller found it ready
};

[[noreturn]] void not_finite(double lo, double hi) {
  throw InvalidArgument("histogram: the image's range [" + Scalar(lo).str() + ", " +
                        Scalar(hi).str() +
                        "] is not finite (all NaN or with infinities); give minimum and "
                        "maximum explicitly");
}

template <class CT>
Bins histogram_typed(const Array& a, int nbins, const HistRange& range) {
  auto& impl = Access::impl(a);
  auto& dev = *impl.device;
  const auto nb = static_cast<std::size_t>(nbins);
  const std::uint64_t n = a.elements();
  // histogram_partial counts in uint32: runs of at most `run` elements, each with its own
  // counts, added up here in 64 bits (one run below 2^32 elements).
  const std::uint64_t run = std::max<std::uint64_t>(config().histogram_run, 1);
  const std::size_t runs =
      static_cast<std::size_t>(std::max<std::uint64_t>((n + run - 1) / run, 1));
  const std::size_t hbytes = head_bytes<CT>(nbins);
  const std::size_t cbytes = runs * nb * sizeof(std::uint32_t);
  // One block, head then counts, so that one read brings back both.
  auto block = dev.pool().allocate(hbytes + cbytes);
  const std::uint64_t counts_at = hbytes / sizeof(std::uint32_t);
  // A range on the device comes with the kernel (histogram_impl found it ready); a settled
  // one takes it where it is ready now, and the host's head, the same bits, where it is not.
  const DeviceImpl::KernelPtr edges_kernel =
      range.edges || !a.device().supports_fp64()
          ? range.edges
          : dev.kernel_if_ready(program("histogram.kernel"), "histogram_edges",
                                histogram_edges_defines(a.dtype()));
  if (edges_kernel) {
    const KernelArg args[] = {KernelArg::mem(range.memory ? *range.memory : *block),
                              KernelArg::scalar<std::uint64_t>(range.at),
                              KernelArg::scalar<std::uint64_t>(n),
                              KernelArg::scalar<std::int32_t>(range.memory ? 1 : 0),
                              KernelArg::scalar<double>(range.lo),
                              KernelArg::scalar<double>(range.hi),
                              KernelArg::scalar<std::int32_t>(nbins),
                              KernelArg::mem(*block),
                              KernelArg::scalar<std::uint64_t>(counts_at),
                              KernelArg::scalar<std::uint64_t>(runs * nb)};
    Launch l;
    l.global[0] = kHistWG;
    l.local[0] = kHistWG;
    dev.launch(*edges_kernel, l, args);
  } else {
    // The head and zeroed counts in one write.
    RecycledVector<std::byte> head(hbytes + cbytes, std::byte{0});
    histogram_head<CT>(std::span<std::byte>(head.data(), hbytes), nbins, range.lo, range.hi);
    dev.write(*block, 0, head.data(), head.size());
  }

  std::size_t wg = kHistWG;
  while (wg > dev.info().max_work_group && wg > 1) wg /= 2;
  const std::size_t max_groups = std::clamp<std::size_t>(dev.info().compute_units * 8u, 16u, 4096u);
  const DeviceImpl::KernelPtr partial =
      dev.kernel(program("histogram.kernel"), "histogram_partial",
                 histogram_partial_defines(a.dtype(), wg, nbins, dev.info().local_memory));
  for (std::size_t r = 0; r < runs; ++r) {
    const std::uint64_t first = r * run, count = std::min(run, n - first);
    const std::size_t groups = std::min<std::size_t>((count + wg - 1) / wg, max_groups);
    const KernelArg args[] = {arg(a),
                              KernelArg::scalar<std::uint64_t>(first),
                              KernelArg::scalar<std::uint64_t>(count),
                              KernelArg::mem(*block),
                              KernelArg::scalar<std::int32_t>(nbins),
                              KernelArg::scalar<std::uint64_t>(counts_at + r * nb)};
    Launch l;
    l.global[0] = std::max<std::size_t>(groups, 1) * wg;
    l.local[0] = wg;
    dev.launch(*partial, l, args);
  }
  RecycledVector<std::byte> bytes(hbytes + cbytes);
  dev.read(*block, 0, bytes.data(), bytes.size());
  std::uint64_t status = 0;
  std::memcpy(&status, bytes.data(), sizeof status);
  if (status != 0) {
    double lo = 0, hi = 0;
    std::memcpy(&lo, bytes.data() + 8, sizeof lo);
    std::memcpy(&hi, bytes.data() + 16, sizeof hi);
    not_finite(lo, hi);
  }
  Bins h;
  h.counts.assign(nb, 0);
  for (std::size_t r = 0; r < runs; ++r) {
    for (std::size_t b = 0; b < nb; ++b) {
      std::uint32_t c = 0;
      std::memcpy(&c, bytes.data() + hbytes + (r * nb + b) * sizeof c, sizeof c);
      h.counts[b] += c;
    }
  }
  RecycledVector<CT> edges(nb + 1);
  std::memcpy(edges.data(), bytes.data() + kHeadSlots * 8, edges.size() * sizeof(CT));
  h.edges.assign(edges.begin(), edges.end());
  return h;
}

// Whether the bins span the image's own range (minimum and maximum both 0).
bool own_range(double lo, double hi) {
  return lo == 0 && hi == 0;
}

// The bins' range as the histogram settles it: the image's minimum and maximum (from its
// stats, `whole`) for its own range, an empty range widened by 0.5 on each side.
std::pair<double, double> histogram_range(double lo, double hi, const Stats& whole) {
  if (own_range(lo, hi)) {
    lo = whole.min.as_double();
    hi = whole.max.as_double();
    if (!std::isfinite(lo) || !std::isfinite(hi)) not_finite(lo, hi);
  }
  if (!(lo <= hi)) {
    throw InvalidArgument("histogram: minimum " + Scalar(lo).str() + " is above maximum " +
                          Scalar(hi).str());
  }
  if (lo == hi) {
    // As numpy.histogram: an empty range becomes [lo - 0.5, hi + 0.5].
    lo -= 0.5;
    hi += 0.5;
  }
  return {lo, hi};
}

// The counts of a's pixels in bins over `range` (a settled one, or the device's own range).
Bins histogram_counts(const Array& a, int nbins, const HistRange& range) {
  const DType ct = compute_type({a.dtype()});
  require_dtype(a.device(), ct, [&] {
    return "histogram on " + std::string(name(a.dtype())) + " (computed in float64)";
  });
  return ct == DType::f64 ? histogram_typed<double>(a, nbins, range)
                          : histogram_typed<float>(a, nbins, range);
}

Bins histogram_counts(const Array& a, int nbins, double lo, double hi) {
  HistRange r;
  r.lo = lo;
  r.hi = hi;
  return histogram_counts(a, nbins, r);
}

Bins histogram_impl(const Array& a, long long nbins, double lo, double hi, const RunOptions& o) {
  const int bins = static_cast<int>(nbins);
  if (!own_range(lo, hi)) {
    const auto [l, h] = histogram_range(lo, hi, {});
    return histogram_counts(a, bins, l, h);
  }
  // The image's own range stays on the device where stats_final and histogram_edges are ready
  // (a read of the extrema and a write of the edges less); otherwise the host settles it.
  Stats whole;
  DeviceImpl::KernelPtr edges =
      a.device().supports_fp64()
          ? Access::impl(a).device->kernel_if_ready(program("histogram.kernel"), "histogram_edges",
                                                    histogram_edges_defines(a.dtype()))
          : nullptr;
  if (edges) {
    DeviceExtrema e = extrema_on_device(a);
    checkpoint(o, 0.5, "histogram");
    if (!e.host) {
      HistRange r;
      r.memory = std::move(e.memory);
      r.at = e.at;
      r.edges = std::move(edges);
      return histogram_counts(a, bins, r);
    }
    whole = *e.host;
  } else {
    whole = detail::extrema(a);  // the range alone
    checkpoint(o, 0.5, "histogram");
  }
  const auto [l, h] = histogram_range(lo, hi, whole);
  return histogram_counts(a, bins, l, h);
}

Result histogram_table(const Bins& h) {
  static const Table::Columns columns = Table::shared_columns({"bin_start", "bin_end", "count"});
  Result r;
  const std::size_t n = h.counts.size();
  r.table = Table::for_overwrite(columns, n);
  const std::span<double> start = r.table.column(0), end = r.table.column(1),
                          count = r.table.column(2);
  for (std::size_t i = 0; i < n; ++i) {
    start[i] = h.edges[i];
    end[i] = h.edges[i + 1];
    count[i] = static_cast<double>(h.counts[i]);
  }
  return r;
}

// The histogram slab by slab: the range from every slab's stats (for the image's own range),
// then each slab's counts added up. The edges are the whole image's, so are the counts.
class HistogramFold final : public SlabFold {
 public:
  HistogramFold(int nbins, double lo, double hi, DType t)
      : nbins_(nbins), lo_(lo), hi_(hi), range_(t) {}
  int passes() const override { return own_range(lo_, hi_) ? 2 : 1; }
  void add(int pass, std::span<const Array> slab, std::size_t z0) override {
    if (pass + 1 < passes()) {
      range_.add(stats(slab[0]));
      return;
    }
    if (z0 == 0) std::tie(lo_, hi_) = histogram_range(lo_, hi_, range_.result());
    Bins part = histogram_counts(slab[0], nbins_, lo_, hi_);
    if (sum_.counts.empty()) {
      sum_ = std::move(part);
    } else {
      for (std::size_t i = 0; i < sum_.counts.size(); ++i) sum_.counts[i] += part.counts[i];
    }
  }
  Folded finish() override { return {histogram_table(sum_), {}}; }

 private:
  int nbins_;
  double lo_, hi_;
  StatsAccumulator range_;
  Bins sum_;
};

// Minimum, maximum, sum and mean slab by slab: every slab's stats() added up (see
// StatsAccumulator for what is exact).
class StatsFold final : public SlabFold {
 public:
  StatsFold(const char* column, double (*pick)(const Stats&), DType t)
      : column_(column), pick_(pick), acc_(t) {}
  void add(int, std::span<const Array> slab, std::size_t) override { acc_.add(stats(slab[0])); }
  Folded finish() override { return {row(column_, pick_(acc_.result())), {}}; }

 private:
  const char* column_;
  double (*pick_)(const Stats&);
  StatsAccumulator acc_;
};

FoldFn<NoParams> stats_fold(const char* column, double (*pick)(const Stats&)) {
  return [column, pick](const NoParams&, const Shape&, DType t) {
    return std::make_unique<StatsFold>(column, pick, t);
  };
}

double std_of(const Moments& m) {
  if (m.count == 0) return std::numeric_limits<double>::quiet_NaN();
  return std::sqrt(std::max(m.m2, 0.0) / static_cast<double>(m.count));
}

double std_impl(const Array& a) {
  return std_of(moments(a));
}

// The standard deviation slab by slab: every slab's moments merged as moments() merges its
// work-groups (the groupings differ, so the two agree to float64 rounding).
class StdFold final : public SlabFold {
 public:
  void add(int, std::span<const Array> slab, std::size_t) override { merge(m_, moments(slab[0])); }
  Folded finish() override { return {row("std", std_of(m_)), {}}; }

 private:
  Moments m_;
};

// ---- the catalog rows

// The z projections: 3D in, 2D out, no parameters.
Filter<> projection_filter(const char* fname, ZOp op, const char* doc, const char* out) {
  return Filter<>({.name = fname,
                   .category = Category::projections,
                   .doc = doc,
                   .dims = {3},
                   .output_dtype = out,
                   .fold = [op](const NoParams&, const Shape& shape,
                                DType t) { return std::make_unique<ProjectionFold>(op, shape, t); },
                   .fn = [op](std::span<const Array> x, const NoParams&,
                              const RunOptions&) { return one(z_project(x[0], op)); }});
}

const Filter<> kMaximumZProjection = projection_filter(
    "maximum_z_projection", ZOp::maximum,
    "the maximum along z of each (y, x) column (numpy.nanmax(axis=0): NaN ignored, a column of "
    "NaN gives NaN)",
    "same as input");
const Filter<> kMinimumZProjection = projection_filter(
    "minimum_z_projection", ZOp::minimum,
    "the minimum along z of each (y, x) column (numpy.nanmin(axis=0): NaN ignored, a column of "
    "NaN gives NaN)",
    "same as input");
const Filter<> kSumZProjection = projection_filter(
    "sum_z_projection", ZOp::sum,
    "the sum along z of each (y, x) column, accumulated in the output type, integers as "
    "differences from the column's first value (numpy.nansum: NaN ignored)",
    "float32 for 8/16-bit integers and float32, float64 for wider dtypes");
const Filter<> kMeanZProjection = projection_filter(
    "mean_z_projection", ZOp::mean,
    "the mean along z of each (y, x) column, accumulated in float32 (float64 for 32/64-bit "
    "dtypes), integers as differences from the column's first value (numpy.nanmean: NaN "
    "ignored, a column of NaN gives NaN)",
    "float32 (float64 stays float64)");
const Filter<> kStdZProjection = projection_filter(
    "std_z_projection", ZOp::std,
    "the population standard deviation (ddof 0) along z of each (y, x) column, single pass with "
    "shifted sums, accumulated in float32 (float64 for 32/64-bit dtypes) (numpy.nanstd: NaN "
    "ignored, a column of NaN gives NaN)",
    "float32 (float64 stays float64)");

constexpr const char* kNanRule = "; NaN pixels are ignored as gpix::stats() does";

// The reductions give a one-row table in the catalog; their typed functions return the value
// (reductions at the end of this file). stats() reads every layout itself, so the four that
// are stats() alone take InputLayout::any.
const Filter<> kMinimumOfAllPixels(
    {.name = "minimum_of_all_pixels",
     .category = Category::reductions,
     .doc = std::string("the smallest pixel value (table column 'minimum'; NaN if every pixel is "
                        "NaN; 64-bit integers beyond 2^53 are rounded in the table, exact from "
                        "the typed function)") +
            kNanRule,
     .output = OutputKind::table,
     .output_dtype = "table: minimum",
     .layout = InputLayout::any,
     .fold = stats_fold("minimum", [](const Stats& s) { return s.min.as_double(); }),
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       return row("minimum", detail::extrema(x[0]).min.as_double());
     }});
const Filter<> kMaximumOfAllPixels(
    {.name = "maximum_of_all_pixels",
     .category = Category::reductions,
     .doc = std::string("the largest pixel value (table column 'maximum'; NaN if every pixel is "
                        "NaN; 64-bit integers beyond 2^53 are rounded in the table, exact from "
                        "the typed function)") +
            kNanRule,
     .output = OutputKind::table,
     .output_dtype = "table: maximum",
     .layout = InputLayout::any,
     .fold = stats_fold("maximum", [](const Stats& s) { return s.max.as_double(); }),
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       return row("maximum", detail::extrema(x[0]).max.as_double());
     }});
const Filter<> kSumOfAllPixels(
    {.name = "sum_of_all_pixels",
     .category = Category::reductions,
     .doc = std::string("the sum of all pixels (table column 'sum'): integer sums are exact (the "
                        "nearest double where the sum leaves the 64-bit range), floats are summed "
                        "in double where the device has fp64; 0 if every pixel is NaN") +
            kNanRule,
     .output = OutputKind::table,
     .output_dtype = "table: sum",
     .layout = InputLayout::any,
     .fold = stats_fold("sum", [](const Stats& s) { return s.sum.as_double(); }),
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       return row("sum", stats(x[0]).sum.as_double());
     }});
const Filter<> kMeanOfAllPixels(
    {.name = "mean_of_all_pixels",
     .category = Category::reductions,
     .doc = std::string("the mean of all pixels (table column 'mean'; NaN if every pixel is NaN)") +
            kNanRule,
     .output = OutputKind::table,
     .output_dtype = "table: mean",
     .layout = InputLayout::any,
     .fold = stats_fold("mean", [](const Stats& s) { return s.mean; }),
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       return row("mean", stats(x[0]).mean);
     }});
const Filter<> kStdOfAllPixels(
    {.name = "std_of_all_pixels",
     .category = Category::reductions,
     .doc = std::string("the population standard deviation (ddof 0, numpy.nanstd) of all pixels "
                        "(table column 'std'; NaN if every pixel is NaN): one pass of "
                        "per-work-group (count, mean, M2) in float64 (float32 for 8/16-bit and "
                        "float32 images on devices without fp64) combined with Chan et al.'s "
                        "formula") +
            kNanRule,
     .output = OutputKind::table,
     .output_dtype = "table: std",
     .fold = [](const NoParams&, const Shape&, DType) -> std::unique_ptr<SlabFold> {
       return std::make_unique<StdFold>();
     },
     .fn = [](std::span<const Array> x, const NoParams&,
              const RunOptions&) { return row("std", std_impl(x[0])); }});

struct HistogramParams {
  int n_bins;
  double minimum, maximum;
};
const Filter<HistogramParams> kHistogram(
    {.name = "histogram",
     .category = Category::reductions,
     .doc = "counts pixels in n_bins equal bins over [minimum, maximum] (both 0: the image's own "
            "minimum and maximum; equal bounds widen to +-0.5 as numpy.histogram): bin i holds "
            "bin_start <= v < bin_end, a value equal to maximum goes in the last bin, values "
            "outside the range and NaN are not counted; edges as numpy.linspace, compared in "
            "float32 (float64 for 32/64-bit dtypes) and reported as compared",
     .params = {integer(&HistogramParams::n_bins, {.name = "n_bins",
                                                   .def = 256,
                                                   .min = 1,
                                                   .max = kMaxBins,
                                                   .doc = "number of bins"}),
                real(&HistogramParams::minimum,
                     {.name = "minimum", .def = 0, .doc = "start of the first bin"}),
                real(&HistogramParams::maximum,
                     {.name = "maximum", .def = 0, .doc = "end of the last bin"})},
     .output = OutputKind::table,
     .output_dtype = "table: bin_start, bin_end, count (one row per bin)",
     .fold = [](const HistogramParams& p, const Shape&, DType t) -> std::unique_ptr<SlabFold> {
       return std::make_unique<HistogramFold>(p.n_bins, p.minimum, p.maximum, t);
     },
     .fn =
         [](std::span<const Array> x, const HistogramParams& p, const RunOptions& o) {
           return histogram_table(histogram_impl(x[0], p.n_bins, p.minimum, p.maximum, o));
         }});

}  // namespace

void register_reductions(Catalog& c) {
  c.add({&kMaximumZProjection, &kMinimumZProjection, &kSumZProjection, &kMeanZProjection,
         &kStdZProjection, &kMinimumOfAllPixels, &kMaximumOfAllPixels, &kSumOfAllPixels,
         &kMeanOfAllPixels, &kStdOfAllPixels, &kHistogram});
}

void add_reduction_variants(std::vector<KernelVariant>& out) {
  for (DType t : kAllDTypes) {
    out.push_back({"projection.kernel", "z_extreme", extreme_defines(t)});
    out.push_back({"projection.kernel", "z_extreme_carry", extreme_defines(t)});
    for (ZOp op : {ZOp::sum, ZOp::mean}) {
      out.push_back({"projection.kernel", "z_moments", moments_defines(t, moments_out(t, op))});
      out.push_back(
          {"projection.kernel", "z_moments_carry", moments_defines(t, moments_out(t, op))});
    }
    for (int nbins = 256; nbins <= kMaxBins; nbins *= 2) {
      out.push_back({"histogram.kernel", "histogram_partial",
                     histogram_partial_defines(t, kHistWG, nbins, 0)});
    }
    out.push_back({"histogram.kernel", "histogram_edges", histogram_edges_defines(t)});
  }
}

}  // namespace gpix::detail

namespace gpix {
using namespace detail;
Array maximum_z_projection(const Array& a) {
  return kMaximumZProjection.array({a});
}
Array minimum_z_projection(const Array& a) {
  return kMinimumZProjection.array({a});
}
Array mean_z_projection(const Array& a) {
  return kMeanZProjection.array({a});
}
Array sum_z_projection(const Array& a) {
  return kSumZProjection.array({a});
}
Array std_z_projection(const Array& a) {
  return kStdZProjection.array({a});
}
// The catalog's checks, then the value itself rather than the catalog's one-row table (exact
// Scalars for minimum, maximum and sum).
Scalar minimum_of_all_pixels(const Array& a) {
  return detail::extrema(kMinimumOfAllPixels.prepare({a})[0]).min;
}
Scalar maximum_of_all_pixels(const Array& a) {
  return detail::extrema(kMaximumOfAllPixels.prepare({a})[0]).max;
}
Scalar sum_of_all_pixels(const Array& a) {
  return stats(kSumOfAllPixels.prepare({a})[0]).sum;
}
double mean_of_all_pixels(const Array& a) {
  return stats(kMeanOfAllPixels.prepare({a})[0]).mean;
}
double std_of_all_pixels(const Array& a) {
  return std_impl(kStdOfAllPixels.prepare({a})[0]);
}
Histogram histogram(const Array& a, int n_bins, double minimum, double maximum) {
  const HistogramParams p{.n_bins = n_bins, .minimum = minimum, .maximum = maximum};
  const Bins b = histogram_impl(kHistogram.prepare({a}, p)[0], p.n_bins, p.minimum, p.maximum, {});
  return {.edges = {b.edges.begin(), b.edges.end()}, .counts = {b.counts.begin(), b.counts.end()}};
}
}  // namespace gpix
