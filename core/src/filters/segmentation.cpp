// Segmentation filters: thresholds, binary logic and morphology, connected components,
// sequential relabelling, Voronoi-Otsu labelling and label statistics
// (kernels/segmentation.kernel, kernels/steps.kernel, kernels/label_statistics.kernel).
#include "gpix/filters/segmentation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "config.h"
#include "filters/components.h"
#include "filters/label_stats_table.h"
#include "filters/launch.h"
#include "filters/registry.h"
#include "filters/shared.h"
#include "gpix/error.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/neighbourhood.h"
#include "gpix/stats.h"
#include "kernel_variants.h"
#include "moments.h"
#include "recycling.h"
#include "stats_accumulator.h"

namespace gpix::detail {
namespace {

constexpr const char* kFile = "segmentation.kernel";
constexpr const char* kStepsFile = "steps.kernel";  // threshold_gt, to_mask, binary_logic
constexpr const char* kStatsFile = "label_statistics.kernel";
// Pixels per work-item of label_stats (RUN in label_statistics.kernel).
constexpr std::size_t kStatsRun = 16;
constexpr std::size_t kScanWG = 256;  // SCAN_WG in segmentation.kernel
// cc_roots ranks four pixels a work-item: groups of this many pixels (CC_RANK_SPAN there).
constexpr std::size_t kRankSpan = 4 * kScanWG;

// `groups` work-groups of kScanWG work-items: the scan kernels' grid, one group per block.
Launch scan_grid(std::size_t groups) {
  Launch l;
  l.global[0] = groups * kScanWG;
  l.local[0] = kScanWG;
  return l;
}
constexpr std::uint32_t kNone = 0xffffffffu;

Defines seg_defines(DType t) {
  Defines d;
  add_type_defines(d, {{"T_IN", t}});
  return d;
}
// connected_components' merge, roots and write passes on a volume (CC_LIST_PAIRS in
// segmentation.kernel); built once, so that a call allocates nothing for it.
const Defines& cc_list_defines() {
  static const Defines d = [] {
    Defines v = seg_defines(DType::u32);
    v.emplace_back("CC_LIST_PAIRS", "1");
    return v;
  }();
  return d;
}

// threshold_gt, to_mask and binary_logic: flat passes (dialect.h's GPIX_FLAT_IN; v4: four
// elements an index, flat_v4_ok).
Defines flat_defines(DType t, bool v4 = false) {
  Defines d = seg_defines(t);
  add_flat_define(d, {t}, v4);
  return d;
}
Defines logic_defines(DType a, DType b, bool v4 = false) {
  Defines d;
  add_type_defines(d, {{"T_IN", a}, {"T_B", b}});
  add_flat_define(d, {a, b}, v4);
  return d;
}
Defines otsu_defines(DType t) {
  Defines d;
  add_type_defines(d, {{"T_IN", t}, {"CT", compute_type({t})}});
  return d;
}

struct StatsKind {
  int key_bits, key_mode, sum_mode;
};
StatsKind stats_kind(DType t, bool fp64) {
  const int bits = size_of(t) == 8 ? 64 : 32;
  const int key_mode = is_float(t) ? 2 : (is_signed(t) ? 1 : 0);
  int sum_mode = 2;
  if (!is_float(t) && size_of(t) <= 4) sum_mode = 0;
  if (t == DType::f32 && !fp64) sum_mode = 1;
  return {bits, key_mode, sum_mode};
}
Defines label_stats_defines(DType t, bool fp64) {
  const StatsKind k = stats_kind(t, fp64);
  Defines d;
  add_type_defines(d, {{"T_V", t}});
  if (k.sum_mode == 2 && t != DType::f64) d.emplace_back("GPIX_NEED_FP64", "1");
  // Define names fit std::string's 15 inline characters: no allocation on a repeated call.
  if (k.key_bits == 64 || k.sum_mode != 1) d.emplace_back("GPIX_ATOMIC64", "1");
  d.emplace_back("KEY", k.key_bits == 64 ? "gpix_u64" : "gpix_u32");
  d.emplace_back("KEY_BITS", std::to_string(k.key_bits));
  d.emplace_back("KEY_MODE", std::to_string(k.key_mode));
  d.emplace_back("SUM_MODE", std::to_string(k.sum_mode));
  d.emplace_back("SUMW", k.sum_mode == 1 ? "gpix_u32" : "gpix_u64");
  return d;
}

// Label images index with uint32: one value is kept for "background".
void require_u32_indices(const Array& a, std::string_view what) {
  if (a.elements() >= kNone) {
    throw InvalidArgument(
        std::string(what) + " works on images of fewer than 4294967295 pixels; this one has " +
        std::to_string(a.elements()) + " (" + a.shape().str() + "); crop it into parts first");
  }
}

void require_same_shape(const Array& a, const Array& b, std::string_view what) {
  if (!(a.shape() == b.shape())) {
    throw InvalidArgument(std::string(what) + ": the two inputs must have the same shape; got " +
                          a.shape().str() + " and " + b.shape().str());
  }
}

std::uint32_t read_u32(const Array& a, std::size_t index) {
  std::uint32_t v = 0;
  auto& impl = Access::impl(a);
  impl.device->read(*impl.memory, index * sizeof v, &v, sizeof v);
  return v;
}

// ------------------------------------------------------------------ thresholds
// The kernel argument t (in the input's dtype) and `all` such that "pixel > value" is exactly
// "all >= 0 ? all : pixel > t" for every pixel of dtype dt.
std::pair<KernelArg, int> threshold_arg(DType dt, double value) {
  return visit_dtype(dt, [&](auto zero) -> std::pair<KernelArg, int> {
    using T = decltype(zero);
    if (std::isnan(value)) return {arg(T{}), 0};  // nothing is greater than NaN
    if constexpr (std::is_floating_point_v<T>) {
      // The largest T <= value: for a T pixel, pixel > value <=> pixel > that.
      constexpr double big = static_cast<double>(std::numeric_limits<T>::max());
      T t;
      if (value > big) {
        t = std::numeric_limits<T>::max();
      } else if (value < -big) {
        t = -std::numeric_limits<T>::infinity();
      } else {
        t = static_cast<T>(value);
        if (static_cast<double>(t) > value)
          t = std::nextafter(t, -std::numeric_limits<T>::infinity());
      }
      return {arg(t), -1};
    } else {
      const double f = std::floor(value);  // pixel > value <=> pixel > floor(value)
      if (f < static_cast<double>(std::numeric_limits<T>::lowest())) return {arg(T{}), 1};
      if (f >= static_cast<double>(std::numeric_limits<T>::max())) return {arg(T{}), 0};
      return {arg(static_cast<T>(f)), -1};
    }
  });
}

Array threshold_with(const Array& in, const KernelArg& t, int all) {
  Array out = empty_like(in, DType::u8);
  const Defines d = flat_defines(in.dtype(), flat_v4_ok({&in}, out));
  launch(in, kStepsFile, "threshold_gt", d, flat_grid(in.elements(), d),
         {arg(in), arg(out), arg<std::uint64_t>(in.elements()), t, arg(all)});
  return out;
}

Array threshold_gt(const Array& in, double value) {
  const auto [t, all] = threshold_arg(in.dtype(), value);
  return threshold_with(in, t, all);
}

// Otsu's counts, one per bin: recycled, so that a repeated call allocates nothing on the host
// up to 65536 bins, a 16-bit image's whole range (detail::kLargestRecycled; the wider ranges of
// 32- and 64-bit integer images take the heap).
using OtsuCounts = detail::RecycledVector<std::uint64_t>;

// skimage.filters.threshold_otsu's search, operation for operation as numpy evaluates it:
// integer class weights (their product rounded to a double once before it meets the float
// square), class sums accumulated in the centres' precision, the first maximum wins.
// Centre is long double for integer images (numpy's int64 products and sums, exact below 2^64)
// and double for float ones; centre(i) gives bin i's.
// Only the lower class's means are kept (one double per bin): the upper class's weight and mean
// are summed from the top in the search itself, and the lower class's weight is the total less
// the upper's (exact in integers). An integer image may have 2^24 bins, and the four arrays
// numpy keeps (plus the centres, 16 bytes each) took 0.9 GB there against 128 MB now.
template <class Centre, class CentreOf>
std::size_t otsu_bin(const OtsuCounts& counts, CentreOf centre) {
  const std::size_t nb = counts.size();
  detail::RecycledVector<double> m1(nb);
  std::uint64_t cw = 0;
  Centre cm = 0;
  for (std::size_t i = 0; i < nb; ++i) {
    cw += counts[i];
    cm += static_cast<Centre>(counts[i]) * centre(i);
    m1[i] = static_cast<double>(cm) / static_cast<double>(cw);
  }
  const std::uint64_t total = cw;
  // Bin i's upper class meets bin i - 1's lower one. Walking down, ">=" keeps the smallest
  // index of the largest variance, numpy's first argmax. A class with no pixels has a 0/0 mean,
  // so a NaN variance, and numpy's argmax returns the first NaN: float images whose first bins
  // are empty (numpy's float32 edges of a range a few ulps wide put the minimum in bin 1) give
  // scikit-image's threshold bin_centers[0]; taking the largest number there was 20 pixels off
  // on a 60-pixel image (a read-only review). Integer images have no empty end bins.
  cw = 0;
  cm = 0;
  std::size_t best = 0;
  double best_v = -1;
  std::size_t first_nan = nb;
  for (std::size_t i = nb; i-- > 1;) {
    cw += counts[i];
    cm += static_cast<Centre>(counts[i]) * centre(i);
    const double m2 = static_cast<double>(cm) / static_cast<double>(cw);
    const std::uint64_t w1 = total - cw;
    const double d = m1[i - 1] - m2;
    // numpy's int64 product of the weights, then a double: both weights are exact doubles
    // (below 2^53), so their double product is that integer product rounded once, the same
    // bits, and does not wrap where an image of over 6 * 10^9 pixels would take it past 2^63.
    const double v = static_cast<double>(w1) * static_cast<double>(cw) * (d * d);
    if (std::isnan(v)) first_nan = i - 1;  // walking down: the smallest such index stays
    if (v >= best_v) {
      best_v = v;
      best = i - 1;
    }
  }
  return first_nan < nb ? first_nan : best;
}

// Integer images with more distinct values than this are refused: scikit-image's one bin
// per value would need a table larger than the image for any realistic image.
constexpr double kMaxOtsuBins = 16777216;

struct Otsu {
  Scalar threshold;  // in the image's dtype (a float32 centre for float32 images): pixel > it
  bool constant = false;
};

// Otsu's threshold in three steps, so that gpix::run_tiled can take an image's slabs through
// them one at a time: the bins, from the whole image's stats; the counts of the pixels of a
// part of the image; the threshold, from the counts of every part.
struct OtsuBins {
  DType dtype = DType::u8;
  // Set when the stats settle the threshold without counts (no value but NaN, one value).
  std::optional<Otsu> settled;
  std::size_t bins = 0;
  Scalar lo;        // integers: one bin per value from lo; floats: the first edge
  double norm = 0;  // floats: 256 / (max - min), as the image's float type
  detail::RecycledVector<double> edges;  // floats: 257 edges, each a value of the image's type
};

OtsuBins otsu_bins(DType t, const Stats& s) {
  OtsuBins b;
  b.dtype = t;
  if (s.count == 0) {
    b.settled = Otsu{Scalar(std::numeric_limits<double>::quiet_NaN()), false};
    return b;
  }
  if (s.min.as_double() == s.max.as_double() && (is_float(t) || s.min.str() == s.max.str())) {
    b.settled = Otsu{s.min, true};  // scikit-image returns the value itself
    return b;
  }
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    const T lo = s.min.exact_as<T>(), hi = s.max.exact_as<T>();
    b.lo = s.min;
    if constexpr (std::is_integral_v<T>) {
      // One bin per value over [min, max], as scikit-image's bincount histogram.
      const auto range = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
      if (static_cast<double>(range) >= kMaxOtsuBins) {
        throw InvalidArgument(
            "threshold_otsu on " + std::string(name(t)) + ": the image spans " + s.min.str() +
            " to " + s.max.str() +
            "; scikit-image bins integer images one bin per value, which gpix does up to " +
            "16777216 values. Convert to float32 first for scikit-image's 256 float bins");
      }
      b.bins = static_cast<std::size_t>(range) + 1;
    } else {
      // numpy.histogram(image, 256, range=(min, max)) in the image's own float type: edges
      // from numpy.linspace (computed in float64, then stored as T), the scale 256 / (max -
      // min) with the difference taken in T.
      const T diff = hi - lo;
      if (!std::isfinite(diff)) {
        throw InvalidArgument("threshold_otsu: the image's range [" + s.min.str() + ", " +
                              s.max.str() +
                              "] has no 256 finite bins (scikit-image refuses it too); clip or "
                              "rescale_intensity first");
      }
      b.bins = 256;
      b.norm = static_cast<T>(256.0 / static_cast<double>(diff));
      b.edges.resize(257);
      const double start = lo, step = (static_cast<double>(hi) - start) / 256.0;
      for (std::size_t i = 0; i < 256; ++i)
        b.edges[i] = static_cast<T>(static_cast<double>(i) * step + start);
      b.edges[256] = hi;
    }
  });
  return b;
}

// Adds the counts of in's pixels in the bins to counts (b.bins of them). The kernels count in
// uint32, so the image goes through them in runs of fewer than 2^32 pixels
// (config().histogram_run), each run's counts read back and added here in 64 bits.
void otsu_count(const Array& in, const OtsuBins& b, OtsuCounts& counts) {
  visit_dtype(b.dtype, [&](auto zero) {
    using T = decltype(zero);
    Array hist = Array::create(Shape{b.bins}, DType::u32, in.device());
    const T lo = b.lo.exact_as<T>();
    auto& dev = *Access::impl(in).device;
    std::optional<Array> edge_arr;
    if constexpr (std::is_floating_point_v<T>) {
      const detail::RecycledVector<T> edges(b.edges.begin(), b.edges.end());
      edge_arr = Array::push(std::span<const T>(edges), Shape{edges.size()}, in.device());
    }
    detail::RecycledVector<std::uint32_t> c32(b.bins);
    const std::uint64_t n = in.elements();
    const std::uint64_t run = std::max<std::uint64_t>(config().histogram_run, 1);
    for (std::uint64_t first = 0; first < n; first += run) {
      const std::uint64_t count = std::min(run, n - first);
      if (first > 0) hist.fill(Scalar(0));
      // Counting work-groups: enough to fill the device, each walking the run with a stride.
      const std::size_t groups = std::clamp<std::size_t>(
          std::min<std::size_t>((count + 255) / 256, dev.info().compute_units * 8u), 1, 4096);
      Launch l;
      l.global[0] = groups * 256;
      l.local[0] = 256;
      if constexpr (std::is_integral_v<T>) {
        // Up to 4096 values (12-bit cameras, most 16-bit images' range): counts per work-group
        // in local memory (OTSU_LOCAL_BINS in segmentation.kernel says why); wider ranges count
        // straight into the global bins.
        if (b.bins <= 4096) {
          launch(in, kFile, "otsu_count_local", seg_defines(in.dtype()), l,
                 {arg(in), arg<std::uint64_t>(first), arg<std::uint64_t>(count), arg(lo),
                  arg(static_cast<int>(b.bins)), arg(hist)});
        } else {
          launch(
              in, kFile, "otsu_count", seg_defines(in.dtype()), flat_grid(count),
              {arg(in), arg<std::uint64_t>(first), arg<std::uint64_t>(count), arg(lo), arg(hist)});
        }
      } else {
        launch(in, kFile, "otsu_histogram", otsu_defines(in.dtype()), l,
               {arg(in), arg<std::uint64_t>(first), arg<std::uint64_t>(count), arg(lo),
                arg(static_cast<T>(b.norm)), arg(*edge_arr), arg(hist)});
      }
      const auto& h = Access::impl(hist);
      h.device->read(*h.memory, 0, c32.data(), c32.size() * sizeof(std::uint32_t));
      for (std::size_t i = 0; i < c32.size(); ++i) counts[i] += c32[i];
    }
  });
}

Otsu otsu_threshold(const OtsuBins& b, const OtsuCounts& counts) {
  if (b.settled) return *b.settled;
  return visit_dtype(b.dtype, [&](auto zero) -> Otsu {
    using T = decltype(zero);
    Otsu r;
    if constexpr (std::is_integral_v<T>) {
      const T lo = b.lo.exact_as<T>();
      const auto centre = [lo](std::size_t i) {
        return static_cast<long double>(lo) + static_cast<long double>(i);
      };
      r.threshold = Scalar(
          static_cast<T>(static_cast<std::uint64_t>(lo) + otsu_bin<long double>(counts, centre)));
    } else {
      // Centres (e[i] + e[i+1]) / 2 in T.
      std::array<double, 256> centres{};
      std::array<T, 256> centres_t{};
      for (std::size_t i = 0; i < 256; ++i) {
        centres_t[i] =
            static_cast<T>((static_cast<T>(b.edges[i]) + static_cast<T>(b.edges[i + 1])) / T(2));
        centres[i] = centres_t[i];
      }
      r.threshold = Scalar(
          centres_t[otsu_bin<double>(counts, [&centres](std::size_t i) { return centres[i]; })]);
    }
    return r;
  });
}

Otsu otsu(const Array& in) {
  if (!in.is_contiguous()) return otsu(in.to_buffer());
  // Count, minimum and maximum: the extremes' pass (16-byte loads for 8- and 16-bit images).
  const OtsuBins b = otsu_bins(in.dtype(), detail::extrema(in));
  OtsuCounts counts(b.bins, 0);
  if (!b.settled) otsu_count(in, b, counts);
  return otsu_threshold(b, counts);
}

// 1 where in > o's threshold (the map of the whole image and of each tiled slab).
Array apply_otsu(const Array& in, const Otsu& o) {
  return visit_dtype(in.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      return threshold_with(in, arg(static_cast<T>(o.threshold.as_double())), -1);
    } else {
      return threshold_with(in, arg(o.threshold.exact_as<T>()), -1);
    }
  });
}

Array threshold_otsu_impl(const Array& in) {
  return apply_otsu(in, otsu(in));
}

// threshold_otsu slab by slab: the stats of every slab, then their counts, then each slab
// thresholded. Every step is the whole image's, so is the result.
class OtsuFold final : public SlabFold {
 public:
  explicit OtsuFold(DType t) : dtype_(t), stats_(t) {}
  int passes() const override { return 2; }
  bool maps() const override { return true; }
  void add(int pass, std::span<const Array> slab, std::size_t z0) override {
    const Array in = slab[0].is_contiguous() ? slab[0] : slab[0].to_buffer();
    if (pass == 0) {
      stats_.add(stats(in));
      return;
    }
    if (z0 == 0) {
      bins_ = otsu_bins(dtype_, stats_.result());
      counts_.assign(bins_.bins, 0);
    }
    if (!bins_.settled) otsu_count(in, bins_, counts_);
  }
  Folded finish() override {
    const Otsu o = otsu_threshold(bins_, counts_);
    return {{}, [o](std::span<const Array> slab, std::size_t) { return apply_otsu(slab[0], o); }};
  }

 private:
  DType dtype_;
  StatsAccumulator stats_;
  OtsuBins bins_;
  OtsuCounts counts_;
};

// ------------------------------------------------------------------ binary logic, morphology
Array to_mask(const Array& in, bool invert) {
  Array out = empty_like(in, DType::u8);
  const Defines d = flat_defines(in.dtype(), flat_v4_ok({&in}, out));
  launch(in, kStepsFile, "to_mask", d, flat_grid(in.elements(), d),
         {arg(in), arg(out), arg<std::uint64_t>(in.elements()), arg(invert ? 1 : 0)});
  return out;
}

Array logic(const Array& a, const Array& b_in, int op, std::string_view what) {
  require_same_shape(a, b_in, what);
  // Mixed dtypes go through a uint8 mask of b, so programs exist for (t, t) and (t, u8) only.
  const Array b = a.dtype() == b_in.dtype() ? b_in : to_mask(b_in, false);
  Array out = empty_like(a, DType::u8);
  const Defines d = logic_defines(a.dtype(), b.dtype(), flat_v4_ok({&a, &b}, out));
  launch(a, kStepsFile, "binary_logic", d, flat_grid(a.elements(), d),
         {arg(a), arg(b), arg(out), arg<std::uint64_t>(a.elements()), arg(op)});
  return out;
}

// Erosions (false) and dilations (true) in `steps` order, each by `radius` with the box or the
// cross, on the bit-packed mask (segmentation.kernel's mask_*): the input packs once, every
// pass reads and writes 32 pixels per word in a buffer of an eighth of the byte mask (in the
// L2 cache for a 512^3 volume), and the result unpacks once to 0/1 bytes. An opening or a
// closing stays packed between its two halves.
Array morph(const Array& in, int radius, bool cross, std::initializer_list<bool> steps,
            const RunOptions& o, const char* what) {
  if (radius == 0) return to_mask(in, false);
  const Shape& s = in.shape();
  const std::size_t nw = ceil_div(s.width(), 32), words = nw * s.height() * s.depth();
  const Launch rows = grid({nw, s.height(), s.depth()}, {32, 8, 1});
  const auto rows_args = [&](const Array& src, const Array& dst) {
    KernelArgs a = {arg(src), arg(dst)};
    push_shape(a, s);
    a.push_back(arg<std::uint64_t>(nw));
    return a;
  };
  const Defines u32 = seg_defines(DType::u32);
  Array cur = Array::empty(Shape{words}, DType::u32, in.device());
  Array next = Array::empty(Shape{words}, DType::u32, in.device());
  {
    KernelArgs a = rows_args(in, cur);
    // 1: rows of whole aligned vectors; 2: 8-bit pixels in an aligned allocation, rows of any
    // width (the kernel's 16-byte loads around each word); 0: an element at a time.
    a.push_back(arg(aligned_rows(in, 16)                               ? 1
                    : size_of(in.dtype()) == 1 && aligned_base(in, 16) ? 2
                                                                       : 0));
    launch(in, kFile, "mask_pack", seg_defines(in.dtype()), rows, a);
  }
  const auto pass = [&](const char* entry, const Launch& g, KernelArgs a) {
    launch(in, kFile, entry, u32, g, a);
    std::swap(cur, next);
  };
  const int nd = in.ndim();
  std::size_t done = 0;
  for (const bool dilate : steps) {
    const int op = dilate ? 1 : 0;
    checkpoint(o, static_cast<double>(done++) / static_cast<double>(steps.size()), what);
    if (cross) {
      // The diamond |dx| + |dy| + |dz| <= r: the radius-1 cross applied r times.
      for (int p = 0; p < radius; ++p) {
        KernelArgs a = rows_args(cur, next);
        a.push_back(arg(op));
        pass("mask_cross", rows, a);
      }
      continue;
    }
    KernelArgs a = rows_args(cur, next);
    for (int v : {radius, op}) a.push_back(arg(v));
    pass("mask_x", rows, a);
    for (int axis = 1; axis < nd; ++axis) {
      pass("mask_axis", flat_grid(words),
           {arg(cur), arg(next), arg<std::uint64_t>(s.height()), arg<std::uint64_t>(s.depth()),
            arg<std::uint64_t>(nw), arg(radius), arg(axis), arg(op)});
    }
  }
  Array out = empty_like(in, DType::u8);
  // 16-byte stores for every width where the allocation allows them (vec 0: 16 pixels of the
  // flat image a work-item, rows ending inside them).
  const int vec = aligned_rows(out, 16)   ? 16
                  : aligned_base(out, 16) ? 0
                  : aligned_rows(out, 4)  ? 4
                                          : 1;
  launch(in, kFile, "mask_unpack", u32,
         flat_grid(ceil_div(in.elements(), static_cast<std::size_t>(vec == 0 ? 16 : vec))),
         {arg(cur), arg(out), arg<std::uint64_t>(s.width()), arg<std::uint64_t>(in.elements()),
          arg<std::uint64_t>(nw), arg(vec)});
  return out;
}

// ------------------------------------------------------------------ labelling
// Exclusive prefix sum of a uint32 array in place; returns the total, or 0 without `total`
// (reading it back waits for the device).
std::uint32_t exclusive_scan(const Array& data, bool total = true) {
  const std::size_t n = data.elements();
  const std::size_t groups = (n + kScanWG - 1) / kScanWG;
  Array sums = Array::empty(Shape{groups}, DType::u32, data.device());
  launch(data, kFile, "scan_block", seg_defines(DType::u32), scan_grid(groups),
         {arg(data), arg(sums), arg<std::uint64_t>(n)});
  if (groups == 1) return total ? read_u32(sums, 0) : 0;
  const std::uint32_t sum = exclusive_scan(sums, total);
  launch(data, kFile, "scan_add", seg_defines(DType::u32), flat_grid(n),
         {arg(data), arg(sums), arg<std::uint64_t>(n)});
  return sum;
}

Array label_components(const Array& bin, bool full, const RunOptions& o,
                       std::uint32_t* count = nullptr) {
  require_u32_indices(bin, "connected_components");
  const std::size_t n = bin.elements();
  const Defines u32 = seg_defines(DType::u32);
  Array parents = empty_like(bin, DType::u32);
  Array ranks = empty_like(bin, DType::u32);  // written at the roots only
  const std::size_t rank_groups = (n + kRankSpan - 1) / kRankSpan;
  Array counts = Array::empty(Shape{rank_groups}, DType::u32, bin.device());
  Array out = empty_like(bin, DType::u32);
  // Tiles of at most 2048 pixels (CC_TILE in segmentation.kernel, which says why): 16x16x8 in
  // 3D and 64x32 in 2D, square-ish so that few of a tile's pixels lie on its faces; narrower
  // along thin axes, deeper or taller to fill the rest.
  const Shape& s = bin.shape();
  const auto clip = [](std::size_t len, std::size_t t) {
    return static_cast<int>(std::min(len, t));
  };
  const bool vol = s.depth() > 1;
  const int tx = clip(s.width(), vol ? 16 : 64), ty = clip(s.height(), vol ? 16 : 2048 / tx);
  const int tz = vol ? clip(s.depth(), 2048 / (tx * ty)) : 1;
  const auto tiles = [](std::size_t len, int t) {
    return (len + static_cast<std::size_t>(t) - 1) / t;
  };
  const std::size_t ntiles = tiles(s.width(), tx) * tiles(s.height(), ty) * tiles(s.depth(), tz);
  const auto push_tiles = [&](KernelArgs& a) {
    push_shape(a, s);
    for (int t : {tx, ty, tz}) a.push_back(arg(t));
  };
  const auto tile_args = [&](KernelArgs a) {
    push_tiles(a);
    a.push_back(arg(full ? 1 : 0));
    return a;
  };
  launch(bin, kFile, "cc_local", seg_defines(bin.dtype()), flat_grid(ntiles * 256),
         tile_args({arg(bin), arg(parents)}));
  // Volumes list their merge's pairs (cc_merge_tiles says why not images); the merge, roots
  // and write passes share one program.
  const Defines& cc = vol ? cc_list_defines() : u32;
  launch(bin, kFile, "cc_merge_tiles", cc, flat_grid(ntiles * 256), tile_args({arg(parents)}));
  checkpoint(o, 0.5, "connected_components");
  // Roots ranked per group of kRankSpan pixels, then only the groups' counts scanned; the
  // total comes back to the host only for a caller that asks (the tiled run's table).
  launch(bin, kFile, "cc_roots", cc, scan_grid(rank_groups),
         {arg(parents), arg(ranks), arg(counts), arg<std::uint64_t>(n)});
  const std::uint32_t roots = exclusive_scan(counts, count != nullptr);
  if (count) *count = roots;
  KernelArgs write_args = {arg(parents), arg(ranks), arg(counts), arg(out)};
  push_tiles(write_args);
  launch(bin, kFile, "cc_write", cc, flat_grid(ntiles * 256), write_args);
  return out;
}

Array relabel(const Array& labels, const RunOptions& o) {
  require_u32_indices(labels, "relabel_sequential");
  const std::size_t n = labels.elements();
  const Stats s = detail::extrema(labels);
  if (s.min.as_double() < 0) {
    throw InvalidArgument(
        "relabel_sequential: labels must be >= 0 (0 is background); the "
        "smallest is " +
        s.min.str());
  }
  // Dense ids index first[] directly; sparse ones (ids from other tools are often large or
  // hashed) go through a hash table of pixel indices sized by the pixel count, so any id the
  // dtype holds works. The largest id decides, rounded up in double (exactness is not needed).
  // Below 2^32 only: the kernel's dense slot is the label as uint32, so labels 2^32 apart
  // (an image of 2^31 pixels or more may have dense ids past 2^32) would share one.
  const double max_id = s.max.as_double();
  const bool dense = max_id < static_cast<double>(2 * n + 65536) && max_id < 0x1p32;
  std::size_t table = dense ? static_cast<std::size_t>(max_id) + 1 : 1;
  while (!dense && table < 2 * n && table < (std::size_t{1} << 32)) table *= 2;
  const std::uint32_t mask = dense ? 0u : static_cast<std::uint32_t>(table - 1);
  checkpoint(o, 0.25, "relabel_sequential");
  Array first = Array::empty(Shape{table}, DType::u32, labels.device());
  first.fill(Scalar(kNone));
  Array slots = first;  // unused where ids are dense
  if (!dense) {
    slots = Array::empty(Shape{table}, DType::u32, labels.device());
    slots.fill(Scalar(kNone));
  }
  Array ranks = empty_like(labels, DType::u32);  // written at the labels' first pixels only
  Array counts = Array::empty(Shape{(n + kScanWG - 1) / kScanWG}, DType::u32, labels.device());
  Array out = empty_like(labels, DType::u32);
  const Defines d = seg_defines(labels.dtype());
  const Shape& sh = labels.shape();
  launch(labels, kFile, "relabel_first", d, flat_grid(n),
         {arg(labels), arg(slots), arg(first), arg(mask), arg<std::uint64_t>(n),
          arg<std::uint64_t>(sh.width()), arg<std::uint64_t>(sh.width() * sh.height())});
  launch(labels, kFile, "relabel_flags", d, flat_grid(n),
         {arg(labels), arg(slots), arg(first), arg(ranks), arg(counts), arg(mask),
          arg<std::uint64_t>(n)});
  exclusive_scan(counts, false);
  launch(labels, kFile, "relabel_write", d, flat_grid(n),
         {arg(labels), arg(slots), arg(first), arg(ranks), arg(counts), arg(out), arg(mask),
          arg<std::uint64_t>(n)});
  return out;
}

Array voronoi_otsu(const Array& in, double spot_sigma, double outline_sigma, const RunOptions& o) {
  require_u32_indices(in, "voronoi_otsu_labeling");
  const DType w = compute_type({in.dtype()});
  require_dtype(in.device(), w, [&] {
    return "voronoi_otsu_labeling on " + std::string(name(in.dtype())) + " (blurred in float64)";
  });
  const Array work = in.dtype() == w ? in : convert(in, w);
  const bool three = in.ndim() == 3;
  checkpoint(o, 0.05, "voronoi_otsu_labeling");
  const Array spot_blur = gaussian(work, spot_sigma, spot_sigma, three ? spot_sigma : 0, {});
  checkpoint(o, 0.2, "voronoi_otsu_labeling");
  const Array outline_blur =
      gaussian(work, outline_sigma, outline_sigma, three ? outline_sigma : 0, {});
  checkpoint(o, 0.35, "voronoi_otsu_labeling");
  const Array mask = threshold_otsu_impl(outline_blur);
  Array spots = empty_like(in, DType::u8);
  KernelArgs args = {arg(spot_blur), arg(mask), arg(spots)};
  push_shape(args, in.shape());
  launch(in, kFile, "local_maxima", seg_defines(w), image_grid(in.shape()), args);
  checkpoint(o, 0.45, "voronoi_otsu_labeling");
  Array cur = label_components(spots, true, {});
  Array next = empty_like(in, DType::u32);
  Array changed = Array::empty(Shape{1}, DType::u32, in.device());
  // Grow the seeds inside the mask, alternating face and box neighbourhoods (an octagon-like
  // approximation of the Euclidean Voronoi partition), until nothing changes.
  for (int step = 0;; ++step) {
    if (step % 8 == 0) checkpoint(o, 0.5, "voronoi_otsu_labeling");
    changed.zero();
    KernelArgs a = {arg(cur), arg(mask), arg(next)};
    push_shape(a, in.shape());
    a.push_back(arg(step % 2));
    a.push_back(arg(changed));
    launch(in, kFile, "extend_labels", seg_defines(DType::u32), image_grid(in.shape()), a);
    std::swap(cur, next);
    if (read_u32(changed, 0) == 0) break;
  }
  checkpoint(o, 0.9, "voronoi_otsu_labeling");
  return relabel(cur, {});  // numbered by first appearance of the grown regions
}

// ------------------------------------------------------------------ label statistics
constexpr double kMaxStatLabel = 16777216;  // rows in the table

Table label_stats(const Array& labels, const Array& image, const RunOptions& o) {
  // 16 characters: a std::string of it would be a heap allocation on every call.
  const std::string_view what = "label_statistics";
  if (is_float(labels.dtype())) {
    throw UnsupportedDType(std::string(what) + ": labels must have an integer dtype; got " +
                           std::string(name(labels.dtype())) + " (convert first)");
  }
  require_same_shape(labels, image, what);
  require_u32_indices(labels, what);  // areas are uint32 counts
  const Stats ls = detail::extrema(labels);
  if (ls.min.as_double() < 0) {
    throw InvalidArgument(std::string(what) +
                          ": labels must be >= 0 (0 is background); the smallest is " +
                          ls.min.str());
  }
  if (ls.max.as_double() > kMaxStatLabel) {
    throw InvalidArgument(std::string(what) +
                          " gives one row per label 1..max and takes labels up to 16777216;"
                          " the largest is " +
                          ls.max.str() + " (relabel_sequential makes them 1..n)");
  }
  const auto rows = static_cast<std::size_t>(ls.max.as_double());
  if (rows == 0) return detail::label_stats_table({});
  checkpoint(o, 0.2, what);
  const bool fp64 = image.device().supports_fp64();
  const DType vt = image.dtype();
  if (vt == DType::u64 || vt == DType::i64) {
    require_dtype(image.device(), DType::f64, [&] {
      return std::string(what) + " on " + std::string(name(vt)) + " (summed in float64)";
    });
  }
  const StatsKind k = stats_kind(vt, fp64);
  const Array lab = labels.dtype() == DType::u32 ? labels : convert(labels, DType::u32);
  const Device dev = image.device();
  // One work-group of 256 per tile, each work-item a run of kStatsRun pixels along x: 64x64
  // tiles in 2D (16 x 256 for images at most 16 wide), 16x16x16 in 3D.
  const Shape& s = image.shape();
  const bool vol = s.depth() > 1, narrow = !vol && s.width() <= kStatsRun;
  const int tx = narrow ? 16 : (vol ? 16 : 64), tz = vol ? 16 : 1;
  const int ty = static_cast<int>(256 / (static_cast<std::size_t>(tx) / kStatsRun)) / tz;
  const auto tiles = [](std::size_t len, int tile) {
    return (len + static_cast<std::size_t>(tile) - 1) / static_cast<std::size_t>(tile);
  };
  const std::size_t groups = tiles(s.width(), tx) * tiles(s.height(), ty) * tiles(s.depth(), tz);
  // Slots per label sum (label_statistics.kernel says why): about one per work-group that
  // meets a label (groups / labels), at most 32 and a table of 65536 slots, so that a label
  // met by every group (a 3D blob image's one large region) spreads its updates while an
  // image of many small labels keeps one slot each and the table pulled back stays small
  // (a 2048^2 blob image, 4357 labels: 35 kB instead of 15 slots each, 523 kB).
  const std::size_t reps = std::clamp<std::size_t>(std::min(groups / rows, 65536 / rows), 1, 32);
  // One table of 8-byte words, zeroed by one fill and pulled by one read: the sums, the
  // complemented minima, the maxima, then the areas and NaN flags. Five buffers took five
  // allocations, fills and pulls, 185 us of a 435 us call on a 2048^2 blob image (H200).
  const auto words = [](std::size_t n, std::size_t bytes) { return (n * bytes + 7) / 8; };
  const std::size_t key_bytes = k.key_bits / 8;
  const std::size_t off_mins = words(rows * reps, k.sum_mode == 1 ? 4 : 8);
  const std::size_t off_maxs = off_mins + words(rows, key_bytes);
  const std::size_t off_area = off_maxs + words(rows, key_bytes);
  const std::size_t off_nans = off_area + words(rows, 4);
  const std::size_t total = off_nans + words(rows, 4);
  Array table = Array::create(Shape{total}, DType::u64, dev);
  KernelArgs args = {arg(lab), arg(image)};
  push_shape(args, s);
  for (KernelArg a : {arg(tx), arg(ty), arg(tz), arg(table), arg(std::uint64_t{off_mins}),
                      arg(std::uint64_t{off_maxs}), arg(std::uint64_t{off_area}),
                      arg(std::uint64_t{off_nans}), arg(static_cast<int>(reps))}) {
    args.push_back(a);
  }
  launch(image, kStatsFile, "label_stats", label_stats_defines(vt, fp64), flat_grid(groups * 256),
         args);
  checkpoint(o, 0.8, what);
  // Read once, as pulled, by label_stats_table (with the table's allocator: huge pages for
  // the buffer of a million labels); not zeroed first.
  // Bytes, read as the words of each part (implicitly created objects, as a pull's are).
  using Buffer = std::vector<std::byte, detail::ForOverwriteAllocator<std::byte>>;
  Buffer host(total * sizeof(std::uint64_t));
  table.read(host.data(), host.size());
  const auto at = [&](std::size_t word) { return host.data() + word * sizeof(std::uint64_t); };
  detail::LabelStatsBuffers b;
  b.rows = rows;
  b.reps = reps;
  b.value_dtype = vt;
  b.key_bits = k.key_bits;
  b.key_mode = k.key_mode;
  b.sum_mode = k.sum_mode;
  b.area = reinterpret_cast<const std::uint32_t*>(at(off_area));
  b.nan_flags = reinterpret_cast<const std::uint32_t*>(at(off_nans));
  b.mins_complement = at(off_mins);
  b.maxs = at(off_maxs);
  b.sums = at(0);
  return detail::label_stats_table(b);
}

InputSpec binary_input(std::string name = "input") {
  return {std::move(name), InputKind::binary, "binary image: nonzero (NaN included) is true"};
}

// ---- the catalog rows

const Filter<> kThresholdOtsu(
    {.name = "threshold_otsu",
     .category = Category::segmentation,
     .doc = "binary image: 1 where pixel > Otsu's threshold, exactly as image > "
            "skimage.filters.threshold_otsu(image): integer images get one bin per value over "
            "[min, max] (the threshold is one of the image's values; ranges of more than 16777216 "
            "values raise InvalidArgument: convert to float32 first), float images 256 bins as "
            "numpy.histogram in the image's own float type (threshold = a bin centre); the "
            "threshold maximises the between-class variance. A constant image gives 0 everywhere; "
            "NaN pixels are ignored and give 0",
     .dims = {2, 3},
     .output = OutputKind::binary,
     .output_dtype = "uint8 (0/1)",
     .fold = [](const NoParams&, const Shape&, DType t) -> std::unique_ptr<SlabFold> {
       return std::make_unique<OtsuFold>(t);
     },
     .fn = [](std::span<const Array> x, const NoParams&,
              const RunOptions&) { return one(threshold_otsu_impl(x[0])); }});

struct ThresholdParams {
  double value;
};
const Filter<ThresholdParams> kThreshold(
    {.name = "threshold",
     .category = Category::segmentation,
     .doc = "binary image: 1 where pixel > value, else 0 (exact for every dtype; NaN gives 0)",
     .params = {real(&ThresholdParams::value,
                     {.name = "value", .def = 0, .doc = "pixels above this become 1"})},
     .dims = {2, 3},
     .output = OutputKind::binary,
     .output_dtype = "uint8 (0/1)",
     .halo = pointwise,
     .fn = [](std::span<const Array> x, const ThresholdParams& p, const RunOptions&) {
       return one(threshold_gt(x[0], p.value));
     }});

// binary_and, binary_or, binary_xor: `op` as binary_logic in steps.kernel numbers it.
Filter<> logic_filter(const char* fname, int op, const char* doc) {
  return Filter<>({.name = fname,
                   .category = Category::segmentation,
                   .doc = doc,
                   .inputs = {binary_input("a"), binary_input("b")},
                   .dims = {2, 3},
                   .output = OutputKind::binary,
                   .output_dtype = "uint8 (0/1)",
                   .halo = pointwise,
                   .fn = [op, fname](std::span<const Array> x, const NoParams&, const RunOptions&) {
                     return one(logic(x[0], x[1], op, fname));
                   }});
}
const Filter<> kBinaryAnd =
    logic_filter("binary_and", 0, "1 where both inputs are nonzero (NaN is nonzero), else 0");
const Filter<> kBinaryOr =
    logic_filter("binary_or", 1, "1 where either input is nonzero (NaN is nonzero), else 0");
const Filter<> kBinaryXor =
    logic_filter("binary_xor", 2, "1 where exactly one input is nonzero (NaN is nonzero), else 0");

const Filter<> kBinaryNot({.name = "binary_not",
                           .category = Category::segmentation,
                           .doc = "1 where the input is zero, else 0 (NaN is nonzero)",
                           .inputs = {binary_input()},
                           .dims = {2, 3},
                           .output = OutputKind::binary,
                           .output_dtype = "uint8 (0/1)",
                           .halo = pointwise,
                           .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
                             return one(to_mask(x[0], true));
                           }});

struct MorphParams {
  int radius;
  std::string connectivity;
};
enum class MorphKind { erosion, dilation, opening, closing };
Filter<MorphParams> morph_filter(const char* fname, const char* what, MorphKind kind) {
  return Filter<MorphParams>(
      {.name = fname,
       .category = Category::segmentation,
       .doc = std::string(what) +
              " on a binary image (nonzero is true); connectivity 'box' is the (2r+1)^ndim "
              "window, 'cross' the diamond |dx|+|dy|+|dz| <= r (the 4/6-neighbour cross applied "
              "r times); the window is clamped at the borders, so outside pixels repeat the "
              "nearest pixel and an object touching the border is not eroded from outside; "
              "radius 0 copies the mask; uint8 0/1",
       .inputs = {binary_input()},
       .params = {integer(&MorphParams::radius,
                          {.name = "radius",
                           .def = 1,
                           .max = 100,
                           .unit = "px",
                           .doc = "r: the window reaches r pixels from the centre"}),
                  choice(&MorphParams::connectivity,
                         {.name = "connectivity",
                          .choices = {"box", "cross"},
                          .def = "box",
                          .doc = "box: (2r+1)^ndim window; cross: pixels with |dx|+|dy|+|dz| "
                                 "<= r"})},
       .dims = {2, 3},
       .output = OutputKind::binary,
       .output_dtype = "uint8 (0/1)",
       .halo =
           [kind](const MorphParams& p, int) {
             return static_cast<std::size_t>(p.radius) *
                    (kind == MorphKind::opening || kind == MorphKind::closing ? 2 : 1);
           },
       .fn =
           [kind, fname](std::span<const Array> x, const MorphParams& p, const RunOptions& o) {
             const bool cross = p.connectivity == "cross";
             const int r = p.radius;
             switch (kind) {
               case MorphKind::erosion:
                 return one(morph(x[0], r, cross, {false}, o, fname));
               case MorphKind::dilation:
                 return one(morph(x[0], r, cross, {true}, o, fname));
               case MorphKind::opening:
                 return one(morph(x[0], r, cross, {false, true}, o, fname));
               case MorphKind::closing:
                 break;
             }
             return one(morph(x[0], r, cross, {true, false}, o, fname));
           }});
}
const Filter<MorphParams> kBinaryErosion =
    morph_filter("binary_erosion", "binary erosion (minimum over the window)", MorphKind::erosion);
const Filter<MorphParams> kBinaryDilation = morph_filter(
    "binary_dilation", "binary dilation (maximum over the window)", MorphKind::dilation);
const Filter<MorphParams> kBinaryOpening =
    morph_filter("binary_opening", "binary opening (erosion, then dilation)", MorphKind::opening);
const Filter<MorphParams> kBinaryClosing =
    morph_filter("binary_closing", "binary closing (dilation, then erosion)", MorphKind::closing);

struct ComponentsParams {
  std::string connectivity;
};
const Filter<ComponentsParams> kConnectedComponents(
    {.name = "connected_components",
     .category = Category::segmentation,
     .doc = "labels the connected foreground (nonzero) regions: uint32 labels 1..n in raster "
            "order (z, y, x) of each region's first pixel, background 0; connectivity 'face' joins "
            "4 (2D) / 6 (3D) neighbours, 'full' 8 / 26 (computed on the device by union-find with "
            "atomics)",
     .inputs = {binary_input()},
     .params = {choice(&ComponentsParams::connectivity,
                       {.name = "connectivity",
                        .choices = {"face", "full"},
                        .def = "full",
                        .doc = "face: 4/6 neighbours; full: 8/26 neighbours"})},
     .dims = {2, 3},
     .output = OutputKind::labels,
     .output_dtype = "uint32",
     .fold = [](const ComponentsParams& p, const Shape& shape,
                DType t) -> std::unique_ptr<SlabFold> {
       return components_fold(p.connectivity == "full", shape, t);
     },
     .fn =
         [](std::span<const Array> x, const ComponentsParams& p, const RunOptions& o) {
           return one(label_components(x[0], p.connectivity == "full", o));
         }});

const Filter<> kRelabelSequential(
    {.name = "relabel_sequential",
     .category = Category::segmentation,
     .doc = "renumbers labels (integers >= 0, 0 = background; any id the dtype holds, sparse ids "
            "through a hash table on the device) to uint32 1..n in raster order of first "
            "appearance, as connected_components numbers them; deliberate difference: "
            "scikit-image's relabel_sequential keeps the labels' value order instead (the same "
            "regions, other numbers)",
     .inputs = {{"labels", InputKind::labels, "integer labels >= 0 (any size)"}},
     .dims = {2, 3},
     .dtypes = integer_dtypes(),
     .output = OutputKind::labels,
     .output_dtype = "uint32",
     .untiled = "the numbering depends on the whole image",
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions& o) {
       return one(relabel(x[0], o));
     }});

struct VoronoiParams {
  double spot_sigma, outline_sigma;
};
const Filter<VoronoiParams> kVoronoiOtsuLabeling(
    {.name = "voronoi_otsu_labeling",
     .category = Category::segmentation,
     .doc = "labels objects as pyclesperanto's voronoi_otsu_labeling: the image (as float32, "
            "float64 for 32/64-bit and float64 inputs) is blurred with spot_sigma and with "
            "outline_sigma (gaussian_blur); the outline blur thresholded with Otsu "
            "(threshold_otsu) is the mask; spots are the mask pixels no 3x3(x3) neighbour of the "
            "spot blur exceeds; touching spots join (connected_components, full); the seeds then "
            "grow inside the mask, an unlabelled pixel taking the largest neighbouring label, "
            "alternating face and box neighbourhoods, until nothing changes (a Voronoi partition "
            "of the mask); mask regions without a spot stay 0; labels are renumbered 1..n in "
            "raster order",
     .params = {real(&VoronoiParams::spot_sigma,
                     {.name = "spot_sigma",
                      .def = 2,
                      .min = 0,
                      .max = 100,
                      .unit = "px",
                      .doc = "blur before detecting spots (object size)"}),
                real(&VoronoiParams::outline_sigma,
                     {.name = "outline_sigma",
                      .def = 2,
                      .min = 0,
                      .max = 100,
                      .unit = "px",
                      .doc = "blur before Otsu's threshold (outlines)"})},
     .dims = {2, 3},
     .output = OutputKind::labels,
     .output_dtype = "uint32",
     .untiled = "it thresholds and labels the whole image",
     .fn = [](std::span<const Array> x, const VoronoiParams& p, const RunOptions& o) {
       return one(voronoi_otsu(x[0], p.spot_sigma, p.outline_sigma, o));
     }});

const Filter<> kLabelStatistics(
    {.name = "label_statistics",
     .category = Category::segmentation,
     .doc = "a table with one row per label 1..max(labels) (up to 16777216): label, area (pixel "
            "count), mean_intensity, min_intensity, max_intensity of the intensity image over "
            "the label; a label with no pixels has area 0 and NaN statistics, a NaN pixel makes "
            "the label's statistics NaN (as numpy); integer sums are exact for 8-32-bit images, "
            "float64 otherwise (float32 where the device has no fp64), added by atomics in no "
            "fixed order, so a float or 64-bit integer image's means can differ in the last "
            "bits from run to run. Labels: any integer dtype (>= 0); the intensity image: any "
            "dtype. Needs 64-bit atomics on OpenCL",
     .inputs = {{"labels", InputKind::labels, "integer labels >= 0"},
                image_input("intensity", "intensity image, same shape")},
     .dims = {2, 3},
     .output = OutputKind::table,
     .output_dtype = "table (float64 columns)",
     .untiled = "it returns a table over the whole image",
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions& o) {
       Result r;
       r.table = label_stats(x[0], x[1], o);
       return r;
     }});

}  // namespace

Components components(const Array& binary, bool full) {
  Components c;
  c.labels = label_components(binary, full, {}, &c.count);
  return c;
}

void map_labels(const Array& labels, const Array& table) {
  launch(labels, kFile, "cc_map", seg_defines(DType::u32), flat_grid(labels.elements()),
         {arg(labels), arg(table), arg<std::uint64_t>(labels.elements())});
}

void register_segmentation(Catalog& c) {
  c.add({&kThreshold, &kThresholdOtsu, &kBinaryAnd, &kBinaryOr, &kBinaryXor, &kBinaryNot,
         &kBinaryErosion, &kBinaryDilation, &kBinaryOpening, &kBinaryClosing, &kConnectedComponents,
         &kRelabelSequential, &kVoronoiOtsuLabeling, &kLabelStatistics});
}

void add_segmentation_variants(std::vector<KernelVariant>& out) {
  for (DType t : kAllDTypes) {
    const Defines d = seg_defines(t);
    for (const char* e : {"mask_pack", "cc_local"}) out.push_back({kFile, e, d});
    for (const char* e : {"threshold_gt", "to_mask"}) {
      out.push_back({kStepsFile, e, flat_defines(t)});
      if (size_of(t) <= 2) out.push_back({kStepsFile, e, flat_defines(t, true)});
    }
    if (!is_float(t)) {
      for (const char* e :
           {"relabel_first", "relabel_flags", "relabel_write", "otsu_count", "otsu_count_local"})
        out.push_back({kFile, e, d});
    }
    for (const bool v4 : {false, true}) {
      if (v4 && size_of(t) > 2) continue;
      out.push_back({kStepsFile, "binary_logic", logic_defines(t, t, v4)});
      if (t != DType::u8)
        out.push_back({kStepsFile, "binary_logic", logic_defines(t, DType::u8, v4)});
    }
    if (is_float(t)) out.push_back({kFile, "otsu_histogram", otsu_defines(t)});
    if (is_float(t)) out.push_back({kFile, "local_maxima", seg_defines(t)});
    out.push_back({kStatsFile, "label_stats", label_stats_defines(t, true)});
    if (t == DType::f32) out.push_back({kStatsFile, "label_stats", label_stats_defines(t, false)});
  }
  const Defines u32 = seg_defines(DType::u32);
  for (const char* e :
       {"scan_block", "scan_add", "cc_merge_tiles", "cc_roots", "cc_write", "cc_map",
        "extend_labels", "mask_x", "mask_axis", "mask_cross", "mask_unpack"})
    out.push_back({kFile, e, u32});
  for (const char* e : {"cc_merge_tiles", "cc_roots", "cc_write"})
    out.push_back({kFile, e, cc_list_defines()});
}

}  // namespace gpix::detail

namespace gpix {
using namespace detail;
Array threshold(const Array& a, double value) {
  return kThreshold.array({a}, {.value = value});
}
Array threshold_otsu(const Array& a) {
  return kThresholdOtsu.array({a});
}
double otsu_threshold(const Array& a) {
  if (!a.valid()) throw InvalidArgument("otsu_threshold: the input is a null array");
  return otsu(a).threshold.as_double();
}
Array binary_and(const Array& a, const Array& b) {
  return kBinaryAnd.array({a, b});
}
Array binary_or(const Array& a, const Array& b) {
  return kBinaryOr.array({a, b});
}
Array binary_xor(const Array& a, const Array& b) {
  return kBinaryXor.array({a, b});
}
Array binary_not(const Array& a) {
  return kBinaryNot.array({a});
}
Array binary_erosion(const Array& a, int radius, std::string_view connectivity) {
  return kBinaryErosion.array({a}, {.radius = radius, .connectivity = std::string(connectivity)});
}
Array binary_dilation(const Array& a, int radius, std::string_view connectivity) {
  return kBinaryDilation.array({a}, {.radius = radius, .connectivity = std::string(connectivity)});
}
Array binary_opening(const Array& a, int radius, std::string_view connectivity) {
  return kBinaryOpening.array({a}, {.radius = radius, .connectivity = std::string(connectivity)});
}
Array binary_closing(const Array& a, int radius, std::string_view connectivity) {
  return kBinaryClosing.array({a}, {.radius = radius, .connectivity = std::string(connectivity)});
}
Array connected_components(const Array& binary, std::string_view connectivity) {
  return kConnectedComponents.array({binary}, {.connectivity = std::string(connectivity)});
}
Array relabel_sequential(const Array& labels) {
  return kRelabelSequential.array({labels});
}
Array voronoi_otsu_labeling(const Array& a, double spot_sigma, double outline_sigma) {
  return kVoronoiOtsuLabeling.array({a},
                                    {.spot_sigma = spot_sigma, .outline_sigma = outline_sigma});
}
Table label_statistics(const Array& labels, const Array& intensity) {
  return kLabelStatistics.call({labels, intensity}).table;
}
}  // namespace gpix
