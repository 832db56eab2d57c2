// Neighbourhood filters: separable passes (kernels/separable.kernel) for the Gaussian, box
// mean, minimum and maximum; direct stencils (kernels/neighbourhood.kernel) and flat pointwise
// steps (kernels/steps.kernel) for the rest.
#include "gpix/filters/neighbourhood.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "filters/launch.h"
#include "filters/registry.h"
#include "filters/shared.h"
#include "gpix/error.h"
#include "kernel_variants.h"

namespace gpix::detail {
std::size_t gaussian_radius(double sigma) {
  return sigma <= 0 ? 0 : static_cast<std::size_t>(4.0 * sigma + 0.5);
}

namespace {

// Intermediate passes keep full precision: float32 for 8/16-bit and float32 images,
// float64 for wider ones (whose values float32 cannot hold exactly).
DType work_type(DType t) {
  return compute_type({t});
}

// The dtype of filters whose output is "float32 (float64 stays float64)".
DType float_out(DType t) {
  return t == DType::f64 ? DType::f64 : DType::f32;
}

// T_IN, T_OUT and CT for both kernel files; every launch and kernel_variants use this.
// T_IN, T_OUT and the compute type CT of a neighbourhood kernel.
Defines ct_defines(DType in, DType out, DType ct) {
  Defines d;
  add_type_defines(d, {{"T_IN", in}, {"T_OUT", out}, {"CT", ct}});
  return d;
}
Defines nb_defines(DType in, DType out) {
  return ct_defines(in, out, compute_type({in, out}));
}

// The defines of the order filters' kernels (minimum, maximum, median, and the hats'
// subtract_sat): they compare keys of the input's own type and take the compute type only as a
// parameter type (the divisor the box kernels share), so it is float32 unless the data is
// float64. With nb_defines' float64 for 32- and 64-bit integers, a device without fp64 refused
// a maximum_box of uint32 labels, and its median failed to build.
DType order_ct(DType in, DType out) {
  return in == DType::f64 || out == DType::f64 ? DType::f64 : DType::f32;
}
Defines order_defines(DType in, DType out) {
  return ct_defines(in, out, order_ct(in, out));
}

// The pointwise steps (subtract_sat, unsharp, difference): nb_defines and FLAT_K for the
// arrays the step reads (dialect.h's GPIX_FLAT_IN; v4: four elements an index, flat_v4_ok).
Defines flat_nb_defines(DType in, DType out, std::initializer_list<DType> loads, bool v4 = false) {
  Defines d = nb_defines(in, out);
  add_flat_define(d, loads, v4);
  return d;
}
// subtract_sat's: order_defines (it subtracts in T_IN itself) and FLAT_K.
Defines subtract_sat_defines(DType t, bool v4 = false) {
  Defines d = order_defines(t, t);
  add_flat_define(d, {t}, v4);
  return d;
}

enum class SepOp { conv, sum, min, max };  // TILE_OP in tiled.kernel: 0 .. 3
bool is_order(SepOp op) {
  return op == SepOp::min || op == SepOp::max;
}

struct Separable {
  SepOp op;
  std::array<int, 3> radius{0, 0, 0};            // per axis x, y, z (0 = leave the axis alone)
  std::array<RecycledVector<double>, 3> taps{};  // conv only: 2 r + 1 taps per axis
  // sum only: the integer type an exact mean sums in (int_sum_type); none: the compute type.
  std::optional<DType> int_acc{};
};

// The pixels of a box of these radii (0 on an axis: one pixel there).
double window_pixels(const std::array<int, 3>& radius) {
  double window = 1;
  for (int r : radius) window *= 2 * r + 1;
  return window;
}

// The integer type the box mean of an 8- or 16-bit integer image sums in where float32 could
// miss its exact mean (rounded half to even); none where it cannot, and for every other type,
// which keeps the float path. Float32 holds every partial sum exactly while window x largest
// magnitude stays below 2^24, and its quotient rounds to the right integer while the window
// is below 1 / ulp(mean) (a window's mean is never within 1 / (2 window) of a half without
// being one): 2^8 for 16-bit values (ulp 2^-8 below 65536), 2^16 for 8-bit ones. A uint16
// image of mean_box radius 8 (289 pixels) had 794 of 512^2 pixels one off on bright random
// data, a 3D one of radius 3 (343) would too. Past that, int32 sums while window x largest
// magnitude stays below 2^31, int64 beyond (the catalog's radius 256 in 3D: 513^3 x 65535 is
// about 8.8e12).
std::optional<DType> int_sum_type(SepOp op, DType in, DType out, double window) {
  if (op != SepOp::sum || in != out || is_float(in) || size_of(in) > 2) return std::nullopt;
  if (window < (size_of(in) == 2 ? 256.0 : 65536.0)) return std::nullopt;
  const double largest = in == DType::u16   ? 65535
                         : in == DType::i16 ? 32768
                         : in == DType::u8  ? 255
                                            : 128;
  return window * largest < 2147483648.0 ? DType::i32 : DType::i64;
}

// The type a pass accumulates in: min/max stay in the input dtype (exact), conv/sum use the
// compute type, exact means their integer type.
DType acc_type(const Separable& s, DType in, DType out) {
  if (s.int_acc) return *s.int_acc;
  return is_order(s.op) ? in : compute_type({in, out});
}

// The compute type CT of a pass: an exact mean's integer type, order_ct for minima and maxima,
// else the compute type.
DType pass_ct(const Separable& s, DType in, DType out) {
  if (s.int_acc) return *s.int_acc;
  return is_order(s.op) ? order_ct(in, out) : compute_type({in, out});
}

// An 8-byte accumulator (float64 sums and convolutions, int64 sums, 64-bit keys):
// tiled.kernel's tiles of fewer rows and 64-bit taps.
bool wide_acc(const Separable& s, DType in, DType out) {
  return size_of(acc_type(s, in, out)) > 4;
}

// separable.kernel's and tiled.kernel's defines: the types with pass_ct, and GPIX_INT_SUM for
// an exact mean.
Defines sep_defines(const Separable& s, DType in, DType out) {
  Defines d = ct_defines(in, out, pass_ct(s, in, out));
  if (s.int_acc) d.emplace_back("GPIX_INT_SUM", "1");
  return d;
}

// Output rows of a tiled.kernel xy tile (TL_Y there): 64 for accumulators of up to 4 bytes; 32
// for 8-byte ones up to bucket 4 and 16 above it, whose local tiles (TL_Y + 2 TB rows of
// TL_X + 2 TB + 1 inputs and TL_X + 1 intermediates) would not fit 48 kB otherwise (bucket 4
// at 32 rows: 44 kB; bucket 8 at 32 rows: 56 kB, at 16: 37 kB).
std::size_t tile_rows(bool wide, int tb) {
  if (!wide) return 64;
  return tb <= 4 ? 32 : 16;
}

// tiled.kernel: the same types, the radius bucket TB (2 to 8) and the operation; with an
// 8-byte accumulator (float64 sums and convolutions, 64-bit keys) tiles of fewer output rows
// (TL_Y, tile_rows) and one 64-bit tap a word (TL_TAPS64).
Defines tile_defines(DType in, DType out, int tb, const Separable& s) {
  Defines d = sep_defines(s, in, out);
  d.emplace_back("TB", std::to_string(tb));
  d.emplace_back("TILE_OP", std::to_string(static_cast<int>(s.op)));
  if (wide_acc(s, in, out)) {
    d.emplace_back("TL_Y", std::to_string(tile_rows(true, tb)));
    d.emplace_back("TL_TAPS64", "1");
  }
  return d;
}

void require_compute(const Array& a, DType ct, std::string_view filter) {
  if (ct == DType::f64) {
    require_dtype(a.device(), DType::f64, [&] {
      return std::string(filter) + " on " + std::string(name(a.dtype())) + " (computed in float64)";
    });
  }
}

KernelArg ct_arg(DType ct, double v) {
  if (ct == DType::i32) return arg(static_cast<std::int32_t>(v));
  if (ct == DType::i64) return arg(static_cast<std::int64_t>(v));
  return ct == DType::f64 ? arg(v) : arg(static_cast<float>(v));
}

// ------------------------------------------------------------------ separable passes
const char* op_name(SepOp op) {
  switch (op) {
    case SepOp::conv:
      return "conv";
    case SepOp::sum:
      return "sum";
    case SepOp::min:
      return "min";
    case SepOp::max:
      break;
  }
  return "max";
}

// Tile limits, as in kernels/separable.kernel.
constexpr int kRmaxX = 128, kRmaxYZ = 32, kRmaxXY = 12;
constexpr std::size_t kLocalX = 256 + 2 * kRmaxX;
constexpr std::size_t kLocalYZ = (64 + 2 * kRmaxYZ) * 32;
constexpr std::size_t kLocalXY = (32 + 2 * kRmaxXY) * (32 + 2 * kRmaxXY) + 32 * (32 + 2 * kRmaxXY);

// Whether a tile kernel with `elements` local values of the accumulator type fits the device.
bool fits(const Array& a, const Separable& s, DType in, DType out, std::size_t elements) {
  return a.device().info().local_memory >= elements * size_of(acc_type(s, in, out));
}

// tiled.kernel (register-blocked passes) serves radii up to 8, one bucket a radius from 2, for
// accumulators of 4 bytes and of 8 (float64, and the float64 sums of 32- and 64-bit integers;
// fewer rows a tile, tile_rows). separable.kernel's fused pass, which 8-byte accumulators had
// taken before, reads every tap of every output from local memory (a float64 Gaussian of
// sigma 1 at 8192^2 took 3.6x the copy of the image, level with cuCIM, bench/RESULTS.md
// 2026-12-02). Every radius has a bucket of its own because a radius below its bucket pays a
// predicate for every tap the bucket holds: in bucket 4, a 5x5 and a 7x7 minimum of an 8192^2
// float32 image took 0.340 ms (2.5x the copy), in buckets 2 and 3 0.167 and 0.172 ms
// (bench/RESULTS.md, 2026-11-29); in bucket 8 an 8192^2 int32 minimum of radius 5 or 7 took
// 0.47 ms, of radius 8 0.21 ms, and in buckets 5 and 7 0.18 and 0.20 ms (2026-12-03). Each
// bucket is one more program per operation and type pair. A bucket of 12
// was no faster than separable.kernel on an H200 (predicated taps, 80 registers) and its float
// convolution crashes PoCL 3.1's LLVM 15 (SLP vectorizer) at compile time.
// The buckets are kTileRmin .. kTileRmax, one a radius (radius 1 takes bucket 2); the catalog's
// variants (add_neighbourhood_variants) are one per bucket.
constexpr int kTileRmin = 2, kTileRmax = 8;
constexpr std::size_t kTileX = 64, kTileRun = 16;
int tile_bucket(int r) {
  return std::max(r, kTileRmin);  // callers check r <= kTileRmax first
}
// tiled.kernel indexes rows and columns in 32-bit ints (tile origin + halo included): extents
// up to 2^31 - 4096 (larger ones take separable.kernel, same results).
bool tile_extents_ok(const Shape& s) {
  constexpr std::size_t kMax = std::numeric_limits<std::int32_t>::max() - 4095;
  return s.width() <= kMax && s.height() <= kMax && s.depth() <= kMax;
}
// Whether tiled.kernel has a prebuilt program for a pass of these types (the bundle must carry
// every program a call can ask for: NVRTC is optional at run time): every float path, and the
// exact means' int32 passes of 16-bit images (add_neighbourhood_variants). The exact means'
// int64 passes (windows of 32768 pixels and more) and 8-bit images' int32 passes (65536 and
// more) take separable.kernel's passes instead: as rare as those windows, and as exact.
bool tile_types_ok(const Separable& s, DType in, DType out) {
  const auto byte = [](DType t) { return t == DType::u8 || t == DType::i8; };
  return !s.int_acc || (*s.int_acc == DType::i32 && !byte(in) && !byte(out));
}

bool tile_xy_ok(const Array& a, const Separable& s, DType out, int rx, int ry) {
  if (rx > kTileRmax || ry > kTileRmax || !tile_extents_ok(a.shape())) return false;
  if (!tile_types_ok(s, a.dtype(), out)) return false;
  const auto tb = static_cast<std::size_t>(tile_bucket(std::max(rx, ry)));
  const std::size_t rows = tile_rows(wide_acc(s, a.dtype(), out), static_cast<int>(tb)) + 2 * tb;
  return fits(a, s, a.dtype(), out, rows * ((kTileX + 2 * tb + 1) + (kTileX + 1)));
}

// One launch of sep_<op>_<shape>; wa/wb are the taps of axes axis_a/axis_b (-1: none).
// tb > 0 selects tiled.kernel's tile_<op>_<shape> with radius bucket tb instead. Every shape but
// "simple" launches only where its program is ready (tiered compilation,
// DeviceImpl::kernel_if_ready): false, and nothing launched, where it is not, and the caller
// runs sep_simple, the plain tier (the same taps in the same order with the same accumulator
// type). The tile kernels take the longest of the catalog to build (tile_conv_xy at bucket 8:
// 345 ms on NVIDIA's OpenCL, bench/RESULTS.md). Asked after every other condition of its path
// holds, so that no compile starts for a call that could not take it.
bool sep_launch(const Array& in, const Array& out, const Separable& s, const char* shape,
                const Launch& g, int axis_a, int axis_b, int axis, double divisor, int tb = 0) {
  const DType ct = pass_ct(s, in.dtype(), out.dtype());
  const auto radius = [&](int ax) { return ax >= 0 ? s.radius[static_cast<std::size_t>(ax)] : 0; };
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, in.shape());
  RecycledVector<Array> uploads;  // separable.kernel's taps; the arguments point into them
  uploads.reserve(2);
  for (int ax : {axis_a, axis_b}) {
    const bool conv = s.op == SepOp::conv && ax >= 0;
    if (tb > 0 && wide_acc(s, in.dtype(), out.dtype())) {
      // tiled.kernel with 8-byte accumulators (TL_TAPS64): one float64 tap a word at window
      // positions 0 .. 2 tb, zero beyond the radius: nine words up to bucket 4, 17 above it.
      std::array<std::uint64_t, 17> w{};
      if (conv) {
        const RecycledVector<double>& t = s.taps[static_cast<std::size_t>(ax)];
        const int r = radius(ax);
        for (int k = 0; k <= 2 * r; ++k) {
          std::memcpy(&w.at(static_cast<std::size_t>(tb - r + k)), &t[static_cast<std::size_t>(k)],
                      sizeof(double));
        }
      }
      for (std::size_t i = 0; i < (tb > 4 ? 17U : 9U); ++i) args.push_back(arg(w.at(i)));
    } else if (tb > 0) {
      // tiled.kernel: the taps by value (float32 at window positions 0 .. 2 tb, zero beyond
      // the radius, in pairs per 64-bit word), no upload.
      std::array<float, 18> w{};
      if (conv) {
        const RecycledVector<double>& t = s.taps[static_cast<std::size_t>(ax)];
        const int r = radius(ax);
        for (int k = 0; k <= 2 * r; ++k) {
          w[static_cast<std::size_t>(tb - r + k)] =
              static_cast<float>(t[static_cast<std::size_t>(k)]);
        }
      }
      for (std::size_t i = 0; i < w.size(); i += 2) {
        std::uint64_t word = 0;
        std::memcpy(&word, &w[i], sizeof word);
        args.push_back(arg(word));
      }
    } else if (!conv) {
      args.push_back(arg(in));  // only conv reads taps: a never-read placeholder
    } else {
      const RecycledVector<double>& t = s.taps[static_cast<std::size_t>(ax)];
      uploads.push_back(
          ct == DType::f64
              ? Array::push(std::span<const double>(t), Shape{t.size()}, in.device())
              : Array::push(std::span<const float>(RecycledVector<float>(t.begin(), t.end())),
                            Shape{t.size()}, in.device()));
      args.push_back(arg(uploads.back()));
    }
  }
  args.push_back(arg(radius(axis_a)));
  args.push_back(arg(radius(axis_b)));
  args.push_back(arg(axis));
  args.push_back(ct_arg(ct, divisor));
  if (tb > 0) {
    return launch_if_ready(in, "tiled.kernel", std::string("tile_") + op_name(s.op) + "_" + shape,
                           tile_defines(in.dtype(), out.dtype(), tb, s), g, args);
  }
  const std::string entry = std::string("sep_") + op_name(s.op) + "_" + shape;
  if (std::string_view(shape) != "simple") {
    return launch_if_ready(in, "separable.kernel", entry, sep_defines(s, in.dtype(), out.dtype()),
                           g, args);
  }
  launch(in, "separable.kernel", entry, sep_defines(s, in.dtype(), out.dtype()), g, args);
  return true;
}

// The plain tier of every separable pass (tiered compilation, DeviceImpl::kernel_if_ready):
// sep_<op>_simple, one output a work-item straight from global memory. It applies the same taps
// in the same order in the same accumulator type as the tiled, fused and local-tile kernels,
// and a 2D or 3D filter's passes keep that type between them (acc_type), so every tier gives
// the same bits (test_kernel_tiers). It is the quickest of them to build: on NVIDIA's OpenCL
// sep_conv_simple took 74-77 ms, sep_conv_xy 107-113 and tile_conv_xy 182-189, with the floor
// of any build at 30 (bench/RESULTS.md, 2026-12-03, twenty-second session), so a first Gaussian
// builds one small program where it built sep_conv_xy (and a large radius sep_conv_x and
// sep_conv_yz) before.
void sep_simple(const Array& in, const Array& out, const Separable& s, int axis, double divisor) {
  sep_launch(in, out, s, "simple", image_grid(in.shape()), axis, -1, axis, divisor);
}

// One pass along `axis`: the tile kernel where the radius fits, the simple one otherwise. Each
// faster kernel runs where its program is ready; while it compiles in the background the
// simple pass serves (sep_simple). `plain`: the simple pass at once, nothing asked for (the
// caller's fused kernel, not this pass's, is the one the filter waits for).
Array sep_axis(const Array& in, DType out_t, const Separable& s, int axis, double divisor,
               bool plain = false) {
  Array out = empty_like(in, out_t);
  const Shape& sh = in.shape();
  const int r = s.radius[static_cast<std::size_t>(axis)];
  bool done = false;
  if (plain) {
    // the simple pass, below
  } else if (axis == 0 && r <= kRmaxX && fits(in, s, in.dtype(), out_t, kLocalX)) {
    done = sep_launch(in, out, s, "x", grid({sh.width(), sh.height(), sh.depth()}, {256, 1, 1}), 0,
                      -1, 0, divisor);
  } else if (axis > 0 && r <= kTileRmax && tile_extents_ok(sh) &&
             tile_types_ok(s, in.dtype(), out_t)) {
    // tiled.kernel's pass; separable.kernel's local-tile pass is not asked for meanwhile (the
    // tile pass is the one that stays).
    done = sep_launch(in, out, s, "axis",
                      grid({sh.width(), ceil_div(axis == 1 ? sh.height() : sh.depth(), kTileRun),
                            axis == 1 ? sh.depth() : sh.height()},
                           {64, 1, 1}),
                      axis, -1, axis, divisor, tile_bucket(r));
  } else if (axis > 0 && r <= kRmaxYZ && fits(in, s, in.dtype(), out_t, kLocalYZ)) {
    const std::size_t extent = axis == 1 ? sh.height() : sh.depth();
    const std::size_t other = axis == 1 ? sh.depth() : sh.height();
    done = sep_launch(in, out, s, "yz",
                      grid({sh.width(), ceil_div(extent, 64) * 8, other}, {32, 8, 1}), axis, -1,
                      axis, divisor);
  }
  if (!done) sep_simple(in, out, s, axis, divisor);
  return out;
}

// Applies a separable operation over every axis of the image, writing dtype out_t.
// conv/sum accumulate in the compute type and keep it between passes; min/max stay in the
// input dtype (exact). 2D planes take a fused x+y kernel: tiled.kernel's for radii up to 8,
// separable.kernel's for radii up to 12; then a z pass for 3D. While the fused kernel compiles
// (tiered compilation) the x and y passes run one at a time through sep_simple.
Array separable(const Array& in, const Separable& s, DType out_t, const RunOptions& o,
                std::string_view filter) {
  const DType inter = acc_type(s, in.dtype(), out_t);
  // Float64 sums and convolutions, and float64 data, in the filter's own words where the
  // device has no fp64 (DeviceImpl::kernel would refuse the program in its own).
  require_compute(in, pass_ct(s, in.dtype(), out_t), filter);
  const double window = window_pixels(s.radius);
  const int nd = in.ndim();
  const auto rad = [&](int axis) { return s.radius[static_cast<std::size_t>(axis)]; };
  const bool z_pass = nd == 3 && rad(2) > 0;
  const DType t1 = z_pass ? inter : out_t;
  const bool tile = nd >= 2 && tile_xy_ok(in, s, t1, rad(0), rad(1));
  const bool fused =
      nd >= 2 && rad(0) <= kRmaxXY && rad(1) <= kRmaxXY && fits(in, s, in.dtype(), inter, kLocalXY);
  if (tile || fused) {
    Array out = empty_like(in, t1);
    const Shape& sh = in.shape();
    const double divisor = z_pass ? 1.0 : window;
    // tiled.kernel's fused passes where the tile fits, separable.kernel's otherwise; each where
    // its program is ready.
    const int tb = tile_bucket(std::max(rad(0), rad(1)));
    const std::size_t tile_y = tile_rows(wide_acc(s, in.dtype(), t1), tb);
    const bool ran =
        tile ? sep_launch(in, out, s, "xy",
                          grid({ceil_div(sh.width(), kTileX) * 256, ceil_div(sh.height(), tile_y),
                                sh.depth()},
                               {256, 1, 1}),
                          0, 1, 0, divisor, tb)
             : sep_launch(in, out, s, "xy",
                          grid({sh.width(), ceil_div(sh.height(), 32) * 8, sh.depth()}, {32, 8, 1}),
                          0, 1, 0, divisor);
    if (ran) {
      if (!z_pass) return out;
      checkpoint(o, 0.5, filter);
      return sep_axis(out, out_t, s, 2, window);
    }
  }
  RecycledVector<int> axes;
  for (int axis = 0; axis < nd; ++axis) {
    if (rad(axis) > 0) axes.push_back(axis);
  }
  if (axes.empty()) axes.push_back(0);  // radius 0 everywhere: one pass converts
  Array cur = in;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    checkpoint(o, static_cast<double>(i) / static_cast<double>(axes.size()), filter);
    const bool last = i + 1 == axes.size();
    // The x and y passes of a fused kernel that is still compiling: simple passes.
    const bool plain = (tile || fused) && axes[i] < 2;
    cur = sep_axis(cur, last ? out_t : inter, s, axes[i], last ? window : 1.0, plain);
  }
  return cur;
}

// scipy.ndimage.gaussian_filter's kernel: sampled, normalised, radius gaussian_radius(sigma).
RecycledVector<double> gaussian_taps(double sigma) {
  if (sigma <= 0) return RecycledVector<double>(1, 1.0);
  const int radius = static_cast<int>(gaussian_radius(sigma));
  RecycledVector<double> t(static_cast<std::size_t>(2 * radius + 1));
  double sum = 0;
  for (int i = -radius; i <= radius; ++i) {
    const double v = std::exp(-0.5 * i * i / (sigma * sigma));
    t[static_cast<std::size_t>(i + radius)] = v;
    sum += v;
  }
  for (auto& v : t) v /= sum;
  return t;
}

Separable gaussian_op(const Array& in, std::array<double, 3> sigma) {
  Separable s{SepOp::conv};
  for (std::size_t a = 0; a < 3; ++a) {
    s.taps[a] = gaussian_taps(static_cast<int>(a) < in.ndim() ? sigma[a] : 0.0);
    s.radius[a] = static_cast<int>(s.taps[a].size() / 2);
  }
  return s;
}

// The Gaussian of `in` in dtype out_t.
Array gaussian_to(const Array& in, std::array<double, 3> sigma, DType out_t, const RunOptions& o,
                  std::string_view filter) {
  return separable(in, gaussian_op(in, sigma), out_t, o, filter);
}

// ------------------------------------------------------------------ box filters
using Radii = std::array<int, 3>;

// The box filters' parameters.
struct BoxParams {
  int radius_x, radius_y, radius_z;
};

// A window of radius r along the slab axis reads r planes on either side; `windows` windows
// in a row (the hats: an opening or a closing) read that many times as far.
template <std::size_t windows>
std::size_t box_halo(const BoxParams& p, int ndim) {
  return windows *
         static_cast<std::size_t>(along_slab_axis(ndim, p.radius_x, p.radius_y, p.radius_z));
}

// The radii per axis, 0 for the axes the image does not have.
Radii radii(int ndim, const BoxParams& p) {
  Radii r{p.radius_x, p.radius_y, p.radius_z};
  for (int axis = ndim; axis < 3; ++axis) r[static_cast<std::size_t>(axis)] = 0;
  return r;
}
Radii radii(const Array& a, const BoxParams& p) {
  return radii(a.ndim(), p);
}

// The peak device memory of separable() per pixel (each pass writes a new array while the
// one it reads is alive, beside the input): the input, an intermediate, and the larger of
// another intermediate and the output. The fused and radius-1 paths hold less.
std::size_t separable_bytes(DType in, DType inter, DType out) {
  return size_of(in) + size_of(inter) + std::max(size_of(inter), size_of(out));
}

// Whether the radius-1 fast kernels apply: radius exactly 1 on every axis of a 2D/3D image.
bool radius_one(const Array& a, const Radii& r) {
  if (a.ndim() < 2) return false;
  for (int axis = 0; axis < a.ndim(); ++axis) {
    if (r[static_cast<std::size_t>(axis)] != 1) return false;
  }
  return true;
}

// r1_<op>_2d / _3d (kernels/neighbourhood.kernel). Rows per work-item in 2D: NB_RUN (8),
// NB_RUN_MEDIAN (16) for the median, NB_RUN_V4 (2) and NB_RUN_C4 (2) for the four-column
// r1_<op>_2d_v4 and r1_<op>_2d_c4; the 3D box kernels' tile: NB_TX x NB_TY x NB_TZ;
// r1_median_3d: NB_RUN planes per work-item.
constexpr std::size_t kR1Run = 8, kR1RunMedian = 16, kR1RunV4 = 2, kR1RunC4 = 2;
constexpr std::size_t kR1TileX = 32, kR1TileY = 16, kR1TileZ = 32;

// Whether the four-column scalar kernel r1_<op>_2d_c4 serves a 2D radius-1 box that the vector
// kernel cannot take (a width that is not a multiple of 4, memory not aligned to a vector):
// float32 minima and maxima only. Their loads pay a conversion to an order key each, which the
// one-column kernel repeats for the three outputs whose window holds a value; c4 converts each
// once, at the price of loads 16 bytes apart across a warp. On an H200 (bench/RESULTS.md,
// 2026-12-02, seventeenth session), 1999 x 2047 and 3001 x 4099 float32: minimum and maximum
// 0.90-0.98x the one-column kernel's time, the hats built on them 0.91-0.96x; the same kernel
// for means 1.09-1.21x, 16-bit types 0.93-1.35x, float64 1.16-1.52x, so those stay on r1_<op>_2d.
bool r1_c4(const Array& in, const char* op) {
  const std::string_view o(op);
  return in.ndim() == 2 && in.dtype() == DType::f32 && (o == "min" || o == "max") && !vector_ok(in);
}
// Whether the radius-1 median's sorting network (r1_median_2d / _3d) has its program now
// (filters/launch.h, kernel_ready): it is slow to compile (0.4 s on NVIDIA's OpenCL,
// bench/RESULTS.md), and any other median kernel finds the same value (keys in a total order),
// so median_count or median_radix serves meanwhile. The 2D radius-1 mean, minimum and maximum
// tier in radius_one_box (r1_<op>_2d_plain: the same sums in the same order); the 3D ones wait
// for their own kernel (its float sums depend on the order it visits values). The separable
// passes tier on their own (sep_launch).
bool r1_median_ready(const Array& in) {
  return kernel_ready(in, "neighbourhood.kernel", in.ndim() == 2 ? "r1_median_2d" : "r1_median_3d",
                      order_defines(in.dtype(), in.dtype()));
}
Array radius_one_box(const Array& in, const char* op, DType out_t, double divisor) {
  Array out = empty_like(in, out_t);
  const Shape& s = in.shape();
  const bool median = std::string_view(op) == "median";
  const DType ct = std::string_view(op) == "sum" ? compute_type({in.dtype(), out_t})
                                                 : order_ct(in.dtype(), out_t);
  const Defines d = ct_defines(in.dtype(), out_t, ct);
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, s);
  args.push_back(ct_arg(ct, divisor));
  if (in.ndim() == 2 && !median) {
    // Four columns per work-item where rows are whole vectors: 1.10-1.13x -> 0.97-0.99x the
    // copy time on an H200 (8192^2 float32, bench/RESULTS.md). Each where its program is
    // ready; r1_<op>_2d_plain while it compiles (tiered compilation).
    const bool v4 = vector_ok(in) && vector_ok(out), c4 = !v4 && r1_c4(in, op);
    const Launch g =
        v4   ? grid({s.width() / 4, ceil_div(s.height(), kR1RunV4), s.depth()}, {64, 4, 1})
        : c4 ? grid({ceil_div(s.width(), 4), ceil_div(s.height(), kR1RunC4), s.depth()}, {64, 4, 1})
             : grid({s.width(), ceil_div(s.height(), kR1Run), s.depth()}, {64, 4, 1});
    const std::string entry = std::string("r1_") + op + (v4 ? "_2d_v4" : c4 ? "_2d_c4" : "_2d");
    if (!launch_if_ready(in, "neighbourhood.kernel", entry, d, g, args)) {
      launch(in, "neighbourhood.kernel", std::string("r1_") + op + "_2d_plain", d, image_grid(s),
             args);
    }
  } else if (in.ndim() == 2) {
    launch(in, "neighbourhood.kernel", "r1_median_2d", d,
           grid({s.width(), ceil_div(s.height(), kR1RunMedian), s.depth()}, {64, 4, 1}), args);
  } else if (median) {
    launch(in, "neighbourhood.kernel", "r1_median_3d", d,
           grid({s.width(), s.height(), ceil_div(s.depth(), kR1Run)}, {32, 8, 1}), args);
  } else {
    launch(in, "neighbourhood.kernel", std::string("r1_") + op + "_3d", d,
           grid({ceil_div(s.width(), kR1TileX) * 32, ceil_div(s.height(), kR1TileY) * 8,
                 ceil_div(s.depth(), kR1TileZ)},
                {32, 8, 1}),
           args);
  }
  return out;
}

Array box_op(const Array& in, SepOp op, const Radii& r, const RunOptions& o,
             std::string_view filter) {
  if (radius_one(in, r)) {
    const char* names[] = {"", "sum", "min", "max"};
    const double divisor = in.ndim() == 2 ? 9.0 : 27.0;
    require_compute(
        in, op == SepOp::sum ? compute_type({in.dtype()}) : order_ct(in.dtype(), in.dtype()),
        filter);
    return radius_one_box(in, names[static_cast<int>(op)], in.dtype(), divisor);
  }
  Separable s{op};
  s.radius = r;
  s.int_acc = int_sum_type(op, in.dtype(), in.dtype(), window_pixels(r));
  return separable(in, s, in.dtype(), o, filter);
}

// Saturating a - b in the images' own dtype.
Array subtract_sat(const Array& a, const Array& b) {
  Array out = empty_like(a, a.dtype());
  const Defines d = subtract_sat_defines(a.dtype(), flat_v4_ok({&a, &b}, out));
  launch(a, "steps.kernel", "subtract_sat", d, flat_grid(a.elements(), d),
         {arg(a), arg(b), arg(out), arg<std::uint64_t>(a.elements())});
  return out;
}

// Windows up to this many pixels take median_fixed (one program per radius triple, the kept
// keys in registers); larger ones median_radix (radix select, no storage: any window). 49: a
// 7x7 window; the fixed program's compile time grows with the square of the window (on PoCL
// a 105-pixel one took 30 s more than a 25-pixel one).
constexpr int kMedianFixedMax = 49;
// Windows up to this many pixels take median_count while their fast kernel compiles (a small
// program: the window's keys loaded once, then n^2 compares, 729 a pixel at 27), larger ones
// median_radix(_local). 27: 3x3x3; MD_COUNT_MAX in median.kernel, the size of its key array.
constexpr int kMedianCountMax = 27;

Defines median_fixed_defines(DType t, const Radii& r) {
  Defines d = order_defines(t, t);
  d.emplace_back("NB_RX", std::to_string(r[0]));
  d.emplace_back("NB_RY", std::to_string(r[1]));
  d.emplace_back("NB_RZ", std::to_string(r[2]));
  return d;
}

// median_radix_local's work-group: the first of these whose tile, (group + 2 r) on each axis,
// fits the kernel's local array (MD_LOCAL_BYTES in median.kernel: 16 KB of 32-bit keys, or
// 64-bit ones for 64-bit types); none (a zero group) when no tile fits, and median_radix
// reads global memory. Rows of 256 for lines, 32 x 8 in a plane and 8 x 8 x 4 in a volume
// (the halo grows with the group's surface, so volumes take a cube-like group); smaller
// groups for wider windows (a 3D radius 5: 18 x 18 x 14 keys for 8 x 8 x 4 do not fit,
// 14^3 for 4 x 4 x 4 do), whose passes outweigh the tile's loads many times over.
std::array<std::size_t, 3> median_group(DType t, int ndim, const Radii& r) {
  using Group = std::array<std::size_t, 3>;
  static constexpr Group k3[] = {{8, 8, 4}, {4, 4, 4}};
  static constexpr Group k2[] = {{32, 8, 1}, {16, 4, 1}};
  static constexpr Group k1[] = {{256, 1, 1}, {64, 1, 1}};
  const std::span<const Group> groups = ndim == 3   ? std::span<const Group>(k3)
                                        : ndim == 2 ? std::span<const Group>(k2)
                                                    : std::span<const Group>(k1);
  constexpr std::uint64_t kLocalBytes = 16384;
  const std::uint64_t key = size_of(t) == 8 ? 8 : 4;
  for (const Group& g : groups) {
    std::uint64_t bytes = key;
    for (std::size_t i = 0; i < 3 && bytes <= kLocalBytes; ++i) {
      bytes *= g[i] + 2 * static_cast<std::uint64_t>(r[i]);
    }
    if (bytes <= kLocalBytes) return g;
  }
  return {0, 0, 0};
}

Array median(const Array& in, const Radii& r) {
  require_compute(in, order_ct(in.dtype(), in.dtype()), "median_box");
  // A median is exact whichever kernel finds it, so while the specialised kernel (the r1
  // sorting network, median_fixed's registers) compiles, median_count (up to 27 values) or
  // median_radix serves.
  if (radius_one(in, r) && r1_median_ready(in)) {
    return radius_one_box(in, "median", in.dtype(), 1.0);
  }
  const long window = (2L * r[0] + 1) * (2L * r[1] + 1) * (2L * r[2] + 1);
  Array out = empty_like(in, in.dtype());
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, in.shape());
  if (!radius_one(in, r) && window <= kMedianFixedMax &&
      kernel_ready(in, "median.kernel", "median_fixed", median_fixed_defines(in.dtype(), r))) {
    launch(in, "median.kernel", "median_fixed", median_fixed_defines(in.dtype(), r),
           image_grid(in.shape()), args);
  } else {
    for (int v : r) args.push_back(arg(v));
    const std::array<std::size_t, 3> group = median_group(in.dtype(), in.ndim(), r);
    if (window <= kMedianCountMax) {
      // Only while the window's fast kernel compiles (tiered compilation): a quick first
      // build. On NVIDIA's OpenCL median_radix_local took 181 ms to build (bench/RESULTS.md).
      launch(in, "median.kernel", "median_count", order_defines(in.dtype(), in.dtype()),
             image_grid(in.shape()), args);
    } else if (group[0] != 0) {
      const Shape& s = in.shape();
      launch(in, "median.kernel", "median_radix_local", order_defines(in.dtype(), in.dtype()),
             grid({s.width(), s.height(), s.depth()}, group), args);
    } else {
      launch(in, "median.kernel", "median_radix", order_defines(in.dtype(), in.dtype()),
             image_grid(in.shape()), args);
    }
  }
  return out;
}

// A direct stencil kernel with (in, out, w, h, d, int) arguments writing float32/float64.
Array stencil(const Array& in, const char* entry, int extra, std::string_view filter) {
  const DType out_t = float_out(in.dtype());
  require_compute(in, compute_type({in.dtype(), out_t}), filter);
  Array out = empty_like(in, out_t);
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, in.shape());
  args.push_back(arg(extra));
  // sobel, laplace and gradient walk ST_RUN (8) outputs along the last axis per work-item;
  // gradient's extra is its axis, and the image's dimensionality follows.
  const std::string_view e = entry;
  const Shape& s = in.shape();
  if (e == "gradient") args.push_back(arg(static_cast<std::int32_t>(in.ndim())));
  Launch g = image_grid(s);
  if (e == "sobel" || e == "laplace" || e == "gradient") {
    constexpr std::size_t kRun = 8;
    g = in.ndim() == 3   ? grid({s.width(), s.height(), ceil_div(s.depth(), kRun)}, {32, 8, 1})
        : in.ndim() == 2 ? grid({s.width(), ceil_div(s.height(), kRun), 1}, {64, 4, 1})
                         : grid({s.width(), 1, 1}, {256, 1, 1});
  }
  launch(in, "neighbourhood.kernel", entry, nb_defines(in.dtype(), out_t), g, args);
  return out;
}

// 2D windows of at most 3 per axis read their values directly (variance_box: two passes over
// 9 values); wider ones and every 3D window go axis by axis (variance_rows, variance_merge),
// which reads 2r+1 values per axis and pass but writes a mean and an M2 array of the compute
// type between passes (H100: 2048^2 r1 0.11 ms direct, r2 0.14 axis by axis; 256^3 r1 1.02 ms
// direct, r2 0.79 axis by axis; bench/RESULTS.md). The peak working set is the input plus four such
// arrays (3D), which the catalog row's working_set tells the tiler.
Array variance(const Array& in, const Radii& r) {
  const DType out_t = float_out(in.dtype());
  const DType ct = compute_type({in.dtype(), out_t});
  require_compute(in, ct, "variance_box");
  const Defines defines = nb_defines(in.dtype(), out_t);
  if (r[0] <= 1 && r[1] <= 1 && r[2] == 0) {
    Array out = empty_like(in, out_t);
    KernelArgs args = {arg(in), arg(out)};
    push_shape(args, in.shape());
    for (int v : r) args.push_back(arg(v));
    launch(in, "neighbourhood.kernel", "variance_box", defines, image_grid(in.shape()), args);
    return out;
  }
  RecycledVector<int> axes;  // the merge passes: y, then z
  for (int axis = 1; axis < 3; ++axis) {
    if (r[static_cast<std::size_t>(axis)] > 0) axes.push_back(axis);
  }
  Array mean = empty_like(in, ct), m2 = empty_like(in, ct);
  // The x pass writes the variance itself when no other axis follows.
  std::optional<Array> out;
  if (axes.empty()) out = empty_like(in, out_t);
  {
    KernelArgs args = {arg(in), arg(mean), arg(m2), arg(out ? *out : mean)};
    push_shape(args, in.shape());
    args.push_back(arg(r[0]));
    args.push_back(arg(static_cast<int>(axes.empty())));
    launch(in, "neighbourhood.kernel", "variance_rows", defines, image_grid(in.shape()), args);
  }
  int count = 2 * r[0] + 1;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const bool last = i + 1 == axes.size();
    const int rr = r[static_cast<std::size_t>(axes[i])];
    std::optional<Array> next_mean, next_m2;
    if (last) {
      out = empty_like(in, out_t);
    } else {
      next_mean = empty_like(in, ct);
      next_m2 = empty_like(in, ct);
    }
    KernelArgs args = {arg(in),
                       arg(mean),
                       arg(m2),
                       arg(last ? *out : *next_mean),
                       arg(last ? *out : *next_m2),
                       arg(last ? *out : *next_mean)};
    push_shape(args, in.shape());
    for (int v : {axes[i], rr, count, static_cast<int>(last)}) args.push_back(arg(v));
    launch(in, "neighbourhood.kernel", "variance_merge", defines, image_grid(in.shape()), args);
    count *= 2 * rr + 1;
    if (!last) {
      mean = std::move(*next_mean);
      m2 = std::move(*next_m2);
    }
  }
  return std::move(*out);
}

}  // namespace

// Blurs along every axis with sigma > 0; the result has the input's dtype.
Array gaussian(const Array& in, double sx, double sy, double sz, const RunOptions& o) {
  const double sigmas[3] = {sx, sy, sz};
  bool any = false;
  for (int axis = 0; axis < std::min(in.ndim(), 3); ++axis) any |= sigmas[axis] > 0;
  if (!any) return in.copy();
  return gaussian_to(in, {sx, sy, sz}, in.dtype(), o, "gaussian_blur");
}

namespace {

// ---- the catalog rows

constexpr const char* kBorders = "borders replicate the nearest pixel";

std::vector<Param<BoxParams>> radius_params(long long max) {
  return {integer(&BoxParams::radius_x, {.name = "radius_x",
                                         .def = 1,
                                         .max = max,
                                         .unit = "px",
                                         .doc = "half window along x (window 2r+1)"}),
          integer(&BoxParams::radius_y, {.name = "radius_y",
                                         .def = 1,
                                         .max = max,
                                         .unit = "px",
                                         .doc = "half window along y (2D/3D)"}),
          integer(&BoxParams::radius_z, {.name = "radius_z",
                                         .def = 1,
                                         .max = max,
                                         .unit = "px",
                                         .doc = "half window along z (3D)"})};
}

// mean_box, minimum_box, maximum_box: one separable operation each.
Filter<BoxParams> box_filter(const char* fname, const std::string& doc, SepOp op) {
  return Filter<BoxParams>(
      {.name = fname,
       .category = Category::neighbourhood,
       .doc = doc + " of the (2r+1) box per axis; " + kBorders +
              "; radius_y/radius_z are ignored for images with fewer axes",
       .params = radius_params(256),
       .halo = box_halo<1>,
       // Exact means of wide windows sum in int64: 2 + 16 bytes a pixel of a uint16 image.
       .working_set =
           [op](const BoxParams& p, int ndim, DType t) {
             Separable s{op};
             s.int_acc = int_sum_type(op, t, t, window_pixels(radii(ndim, p)));
             return separable_bytes(t, acc_type(s, t, t), t);
           },
       .fn = [op, fname](
                 std::span<const Array> x, const BoxParams& p,
                 const RunOptions& o) { return one(box_op(x[0], op, radii(x[0], p), o, fname)); }});
}

const Filter<BoxParams> kMeanBox =
    box_filter("mean_box", "Mean (integers round half to even)", SepOp::sum);
const Filter<BoxParams> kMinimumBox =
    box_filter("minimum_box",
               "Minimum (grey erosion with a box; NaN in the window gives NaN, -0 counts as below "
               "+0)",
               SepOp::min);
const Filter<BoxParams> kMaximumBox =
    box_filter("maximum_box",
               "Maximum (grey dilation with a box; NaN in the window gives NaN, -0 counts as "
               "below +0)",
               SepOp::max);

const Filter<BoxParams> kMedianBox(
    {.name = "median_box",
     .category = Category::neighbourhood,
     .doc = std::string("Median of the (2r+1) box per axis; ") + kBorders +
            "; any window (beyond 125 pixels the cost grows with the window's volume times the "
            "dtype's bits); NaN counts as larger than +inf (-NaN as smaller than -inf), -0 as "
            "smaller than +0",
     .params = radius_params(100),
     .halo = box_halo<1>,
     .fn = [](std::span<const Array> x, const BoxParams& p, const RunOptions&) {
       return one(median(x[0], radii(x[0], p)));
     }});

const Filter<BoxParams> kVarianceBox(
    {.name = "variance_box",
     .category = Category::neighbourhood,
     .doc = std::string("Population variance of the (2r+1) box per axis (mean of squared "
                        "deviations from the window mean); ") +
            kBorders + "; windows wider than 3 go axis by axis (cost grows with the radius)",
     .params = radius_params(32),
     .output_dtype = "float32 (float64 stays float64)",
     .halo = box_halo<1>,
     // variance(): the input, a mean and an M2 array of the compute type, and the next pass's
     // two (3D with radius_y and radius_z) or the output.
     .working_set =
         [](const BoxParams& p, int ndim, DType t) {
           const Radii r = radii(ndim, p);
           const std::size_t ct = size_of(compute_type({t, float_out(t)}));
           const std::size_t out = size_of(float_out(t));
           const bool two_merges = r[1] > 0 && r[2] > 0;
           return size_of(t) + 2 * ct + std::max(out, two_merges ? 2 * ct : 0);
         },
     .fn = [](std::span<const Array> x, const BoxParams& p,
              const RunOptions&) { return one(variance(x[0], radii(x[0], p))); }});

const Filter<BoxParams> kTopHatBox(
    {.name = "top_hat_box",
     .category = Category::neighbourhood,
     .doc = std::string("White top-hat: image minus its grey opening (maximum_box of minimum_box) "
                        "with the (2r+1) box; ") +
            kBorders + "; integers saturate",
     .params = radius_params(256),
     .halo = box_halo<2>,
     .fn = [](std::span<const Array> x, const BoxParams& p, const RunOptions& o) {
       const Radii r = radii(x[0], p);
       const Array opened =
           box_op(box_op(x[0], SepOp::min, r, o, "top_hat_box"), SepOp::max, r, o, "top_hat_box");
       return one(subtract_sat(x[0], opened));
     }});

const Filter<BoxParams> kBottomHatBox(
    {.name = "bottom_hat_box",
     .category = Category::neighbourhood,
     .doc = std::string("Black top-hat: grey closing (minimum_box of maximum_box) with the (2r+1) "
                        "box minus the image; ") +
            kBorders + "; integers saturate",
     .params = radius_params(256),
     .halo = box_halo<2>,
     .fn = [](std::span<const Array> x, const BoxParams& p, const RunOptions& o) {
       const Radii r = radii(x[0], p);
       const Array closed = box_op(box_op(x[0], SepOp::max, r, o, "bottom_hat_box"), SepOp::min, r,
                                   o, "bottom_hat_box");
       return one(subtract_sat(closed, x[0]));
     }});

const Filter<> kSobel(
    {.name = "sobel",
     .category = Category::neighbourhood,
     .doc = std::string("Gradient magnitude sqrt(sum over axes of sobel_axis^2), each as "
                        "scipy.ndimage.sobel (derivative [-1,0,1] along the axis, smoothing "
                        "[1,2,1] along the others); ") +
            kBorders,
     .output_dtype = "float32 (float64 stays float64)",
     .halo = one_pixel,
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       return one(stencil(x[0], "sobel", x[0].ndim(), "sobel"));
     }});

const Filter<> kLaplace(
    {.name = "laplace",
     .category = Category::neighbourhood,
     .doc = std::string("Sum over the axes of a[i-1] - 2 a[i] + a[i+1], as "
                        "scipy.ndimage.laplace(mode='nearest') but with a float output; ") +
            kBorders,
     .output_dtype = "float32 (float64 stays float64)",
     .halo = one_pixel,
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       return one(stencil(x[0], "laplace", x[0].ndim(), "laplace"));
     }});

// gradient_x, gradient_y, gradient_z: for images that have the axis.
Filter<> gradient_filter(int axis) {
  const char* axis_names[] = {"x", "y", "z"};
  const std::string fname = std::string("gradient_") + axis_names[axis];
  std::vector<int> dims;
  for (int d = std::max(1, axis + 1); d <= 3; ++d) dims.push_back(d);
  return Filter<>(
      {.name = fname,
       .category = Category::neighbourhood,
       .doc = std::string("Central difference (a[i+1] - a[i-1]) / 2 along ") + axis_names[axis] +
              "; " + kBorders + " (so the first and last pixels see half a one-sided step)",
       .dims = dims,
       .output_dtype = "float32 (float64 stays float64)",
       .halo = one_pixel,
       .fn = [axis, fname](std::span<const Array> x, const NoParams&, const RunOptions&) {
         return one(stencil(x[0], "gradient", axis, fname));
       }});
}
const Filter<> kGradientX = gradient_filter(0);
const Filter<> kGradientY = gradient_filter(1);
const Filter<> kGradientZ = gradient_filter(2);

struct GaussianParams {
  double sigma_x, sigma_y, sigma_z;
};
const Filter<GaussianParams> kGaussianBlur(
    {.name = "gaussian_blur",
     .category = Category::neighbourhood,
     .doc = "Gaussian blur as scipy.ndimage.gaussian_filter(mode='nearest'): sampled normalised "
            "kernel truncated at 4 sigma, borders replicate the nearest pixel, sigma 0 leaves an "
            "axis alone; integers round half to even and saturate",
     .params = {real(&GaussianParams::sigma_x, {.name = "sigma_x",
                                                .def = 2,
                                                .min = 0,
                                                .max = 100,
                                                .unit = "px",
                                                .doc = "standard deviation along x"}),
                real(&GaussianParams::sigma_y, {.name = "sigma_y",
                                                .def = 2,
                                                .min = 0,
                                                .max = 100,
                                                .unit = "px",
                                                .doc = "standard deviation along y"}),
                real(&GaussianParams::sigma_z, {.name = "sigma_z",
                                                .def = 0,
                                                .min = 0,
                                                .max = 100,
                                                .unit = "px",
                                                .doc = "standard deviation along z (3D)"})},
     .halo =
         [](const GaussianParams& p, int ndim) {
           return gaussian_radius(along_slab_axis(ndim, p.sigma_x, p.sigma_y, p.sigma_z));
         },
     // int32 and wider integers pass through float64.
     .working_set = [](const GaussianParams&, int,
                       DType t) { return separable_bytes(t, work_type(t), t); },
     .fn =
         [](std::span<const Array> x, const GaussianParams& p, const RunOptions& o) {
           return one(gaussian(x[0], p.sigma_x, p.sigma_y, p.sigma_z, o));
         }});

struct DogParams {
  double sigma1, sigma2;
};
const Filter<DogParams> kDifferenceOfGaussian(
    {.name = "difference_of_gaussian",
     .category = Category::neighbourhood,
     .doc = "gaussian(sigma1) - gaussian(sigma2), each as gaussian_blur with that sigma on every "
            "axis of the image, computed and returned in floating point; borders replicate the "
            "nearest pixel",
     .params = {real(&DogParams::sigma1, {.name = "sigma1",
                                          .def = 1,
                                          .min = 0,
                                          .max = 100,
                                          .unit = "px",
                                          .doc = "sigma of the first (usually smaller) Gaussian"}),
                real(&DogParams::sigma2, {.name = "sigma2",
                                          .def = 3,
                                          .min = 0,
                                          .max = 100,
                                          .unit = "px",
                                          .doc = "sigma of the subtracted Gaussian"})},
     .output_dtype = "float32 (float64 stays float64)",
     .halo = [](const DogParams& p,
                int) { return std::max(gaussian_radius(p.sigma1), gaussian_radius(p.sigma2)); },
     // The first Gaussian is kept while the second runs (separable_bytes), then both and the
     // output.
     .working_set =
         [](const DogParams&, int, DType t) {
           const std::size_t w = size_of(work_type(t));
           return size_of(t) + std::max(3 * w, 2 * w + size_of(float_out(t)));
         },
     .fn =
         [](std::span<const Array> x, const DogParams& p, const RunOptions& o) {
           const Array& a = x[0];
           const DType w = work_type(a.dtype()), out_t = float_out(a.dtype());
           const double s1 = p.sigma1, s2 = p.sigma2;
           const Array g1 = gaussian_to(a, {s1, s1, s1}, w, o, "difference_of_gaussian");
           checkpoint(o, 0.5, "difference_of_gaussian");
           const Array g2 = gaussian_to(a, {s2, s2, s2}, w, o, "difference_of_gaussian");
           Array out = empty_like(a, out_t);
           const Defines d = flat_nb_defines(a.dtype(), out_t, {compute_type({a.dtype(), out_t})});
           launch(a, "steps.kernel", "difference", d, flat_grid(a.elements(), d),
                  {arg(g1), arg(g2), arg(out), arg<std::uint64_t>(a.elements())});
           return one(std::move(out));
         }});

struct UnsharpParams {
  double sigma, amount;
};
const Filter<UnsharpParams> kUnsharpMask(
    {.name = "unsharp_mask",
     .category = Category::neighbourhood,
     .doc = "a + amount * (a - gaussian(a, sigma)), the Gaussian as gaussian_blur with sigma on "
            "every axis kept in floating point; borders replicate the nearest pixel; integers "
            "round half to even and saturate",
     .params = {real(&UnsharpParams::sigma, {.name = "sigma",
                                             .def = 1,
                                             .min = 0,
                                             .max = 100,
                                             .unit = "px",
                                             .doc = "sigma of the blur that is subtracted"}),
                real(&UnsharpParams::amount, {.name = "amount",
                                              .def = 1,
                                              .min = -100,
                                              .max = 100,
                                              .doc = "strength of the sharpening"})},
     .halo = [](const UnsharpParams& p, int) { return gaussian_radius(p.sigma); },
     .working_set = [](const UnsharpParams&, int,
                       DType t) { return separable_bytes(t, work_type(t), t); },
     .fn =
         [](std::span<const Array> x, const UnsharpParams& p, const RunOptions& o) {
           const Array& a = x[0];
           const DType w = work_type(a.dtype());
           const Array g = gaussian_to(a, {p.sigma, p.sigma, p.sigma}, w, o, "unsharp_mask");
           Array out = empty_like(a, a.dtype());
           const Defines d =
               flat_nb_defines(a.dtype(), a.dtype(), {a.dtype(), compute_type({a.dtype()})});
           launch(
               a, "steps.kernel", "unsharp", d, flat_grid(a.elements(), d),
               {arg(a), arg(g), arg(out), arg<std::uint64_t>(a.elements()), ct_arg(w, p.amount)});
           return one(std::move(out));
         }});

}  // namespace

void register_neighbourhood(Catalog& c) {
  c.add({&kMeanBox, &kMinimumBox, &kMaximumBox, &kMedianBox, &kVarianceBox, &kTopHatBox,
         &kBottomHatBox, &kSobel, &kLaplace, &kGradientX, &kGradientY, &kGradientZ, &kGaussianBlur,
         &kDifferenceOfGaussian, &kUnsharpMask});
}

void add_neighbourhood_variants(std::vector<KernelVariant>& out) {
  static const char* const shapes[] = {"simple", "x", "yz", "xy"};
  static const char* const stencils[] = {"r1_sum_2d", "r1_sum_3d", "r1_min_2d",    "r1_min_3d",
                                         "r1_max_2d", "r1_max_3d", "r1_median_2d", "r1_median_3d"};
  static const char* const floats[] = {"variance_box", "variance_rows", "variance_merge",
                                       "sobel",        "laplace",       "gradient"};
  for (DType t : kAllDTypes) {
    const DType w = work_type(t);
    // separable.kernel: input->input (min/max, fused), input->work, work->work, work->input.
    std::vector<std::pair<DType, DType>> pairs = {{t, t}};
    if (w != t) pairs.insert(pairs.end(), {{t, w}, {w, w}, {w, t}});
    for (const auto& [a, b] : pairs) {
      for (SepOp op : {SepOp::conv, SepOp::sum, SepOp::min, SepOp::max}) {
        if (is_order(op) && a != b) continue;
        for (const char* sh : shapes) {
          out.push_back({"separable.kernel", std::string("sep_") + op_name(op) + "_" + sh,
                         sep_defines(Separable{op}, a, b)});
        }
        for (int tb = kTileRmin; tb <= kTileRmax; ++tb) {
          for (const char* sh : {"xy", "axis"}) {
            out.push_back({"tiled.kernel", std::string("tile_") + op_name(op) + "_" + sh,
                           tile_defines(a, b, tb, Separable{op})});
          }
        }
      }
    }
    // Exact means (int_sum_type): the passes of 8- and 16-bit images in int32 and int64, the
    // tiled ones for 16-bit images in int32 (tile_types_ok: the others run separable.kernel).
    if (!is_float(t) && size_of(t) <= 2) {
      for (DType acc : {DType::i32, DType::i64}) {
        const Separable mean{SepOp::sum, {}, {}, acc};
        for (const auto& [a, b] : {std::pair{t, t}, {t, acc}, {acc, acc}, {acc, t}}) {
          for (const char* sh : shapes) {
            out.push_back(
                {"separable.kernel", std::string("sep_sum_") + sh, sep_defines(mean, a, b)});
          }
          if (acc != DType::i32 || size_of(t) != 2) continue;
          for (int tb = kTileRmin; tb <= kTileRmax; ++tb) {
            for (const char* sh : {"xy", "axis"}) {
              out.push_back(
                  {"tiled.kernel", std::string("tile_sum_") + sh, tile_defines(a, b, tb, mean)});
            }
          }
        }
      }
    }
    // The radius-1 stencils: sums with nb_defines, the order ones with order_defines.
    const auto stencil_defines = [t](std::string_view e) {
      return e.find("_sum_") != std::string_view::npos ? nb_defines(t, t) : order_defines(t, t);
    };
    for (const char* e : stencils) out.push_back({"neighbourhood.kernel", e, stencil_defines(e)});
    for (const char* e : {"r1_sum_2d_plain", "r1_min_2d_plain", "r1_max_2d_plain"})
      out.push_back({"neighbourhood.kernel", e, stencil_defines(e)});
    out.push_back({"steps.kernel", "subtract_sat", subtract_sat_defines(t)});
    if (size_of(t) <= 2)
      out.push_back({"steps.kernel", "subtract_sat", subtract_sat_defines(t, true)});
    out.push_back({"steps.kernel", "unsharp", flat_nb_defines(t, t, {t, compute_type({t})})});
    out.push_back({"steps.kernel", "difference",
                   flat_nb_defines(t, float_out(t), {compute_type({t, float_out(t)})})});
    // median_fixed compiles per radius triple: one 3D triple stands for all (the code is the
    // same with other constants).
    out.push_back({"median.kernel", "median_radix", order_defines(t, t)});
    out.push_back({"median.kernel", "median_radix_local", order_defines(t, t)});
    out.push_back({"median.kernel", "median_count", order_defines(t, t)});
    out.push_back({"median.kernel", "median_fixed", median_fixed_defines(t, {2, 1, 1})});
    if (size_of(t) <= 4) {
      for (const char* e : {"r1_sum_2d_v4", "r1_min_2d_v4", "r1_max_2d_v4"})
        out.push_back({"neighbourhood.kernel", e, stencil_defines(e)});
    }
    if (t == DType::f32) {
      for (const char* e : {"r1_min_2d_c4", "r1_max_2d_c4"})
        out.push_back({"neighbourhood.kernel", e, order_defines(t, t)});
    }
    for (const char* e : floats)
      out.push_back({"neighbourhood.kernel", e, nb_defines(t, float_out(t))});
  }
}

}  // namespace gpix::detail

namespace gpix {
using namespace detail;
Array gaussian_blur(const Array& a, double sigma_x, double sigma_y, double sigma_z) {
  return kGaussianBlur.array({a}, {.sigma_x = sigma_x, .sigma_y = sigma_y, .sigma_z = sigma_z});
}
Array mean_box(const Array& a, int rx, int ry, int rz) {
  return kMeanBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array median_box(const Array& a, int rx, int ry, int rz) {
  return kMedianBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array minimum_box(const Array& a, int rx, int ry, int rz) {
  return kMinimumBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array maximum_box(const Array& a, int rx, int ry, int rz) {
  return kMaximumBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array variance_box(const Array& a, int rx, int ry, int rz) {
  return kVarianceBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array top_hat_box(const Array& a, int rx, int ry, int rz) {
  return kTopHatBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array bottom_hat_box(const Array& a, int rx, int ry, int rz) {
  return kBottomHatBox.array({a}, {.radius_x = rx, .radius_y = ry, .radius_z = rz});
}
Array sobel(const Array& a) {
  return kSobel.array({a});
}
Array laplace(const Array& a) {
  return kLaplace.array({a});
}
Array gradient_x(const Array& a) {
  return kGradientX.array({a});
}
Array gradient_y(const Array& a) {
  return kGradientY.array({a});
}
Array gradient_z(const Array& a) {
  return kGradientZ.array({a});
}
Array difference_of_gaussian(const Array& a, double sigma1, double sigma2) {
  return kDifferenceOfGaussian.array({a}, {.sigma1 = sigma1, .sigma2 = sigma2});
}
Array unsharp_mask(const Array& a, double sigma, double amount) {
  return kUnsharpMask.array({a}, {.sigma = sigma, .amount = amount});
}
}  // namespace gpix
