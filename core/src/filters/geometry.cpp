// Geometry filters: crop, flip and transpose as one index-remapping kernel; resample and
// affine_transform as one sampling kernel (kernels/geometry.kernel). Interpolation reads the
// buffers directly (clamped indices), so it works on every device and dtype.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <string>

#include "config.h"
#include "filters/launch.h"
#include "filters/registry.h"
#include "gpix/error.h"
#include "gpix/filters/geometry.h"
#include "kernel_variants.h"

namespace gpix::detail {
namespace {

// remap moves bits: the unsigned type of the element's size serves every dtype.
DType bits_type(DType t) {
  switch (size_of(t)) {
    case 1:
      return DType::u8;
    case 2:
      return DType::u16;
    case 4:
      return DType::u32;
    default:
      return DType::u64;
  }
}

// remap_rows' elements per work-item (RK): 16 bytes at least, at most 8 elements.
int remap_elements(DType t) {
  return static_cast<int>(std::clamp<std::size_t>(16 / size_of(t), 2, 8));
}

// remap_tile's tile is 32 TK columns of the output (16 loads a work-item for 1- and 2-byte
// elements, 4 for wider ones).
std::size_t remap_tile_rows(DType t) {
  return std::max<std::size_t>(1, 4 / size_of(t));
}

// The remap kernels' program for dtype t; lkx: remap_rows' columns per work-item (log2; a
// compile-time constant there, 0 for remap_tile).
Defines remap_defines(DType t, int lkx = 0) {
  const DType b = bits_type(t);
  return {{"T", std::string(kernel_type(b))},
          {"RK", std::to_string(remap_elements(b))},
          {"LKX", std::to_string(lkx)},
          {"TK", std::to_string(remap_tile_rows(b))}};
}

// ct: the coordinates' and interpolation's type, the image's compute type unless an axis is
// too long for it (sample_type).
Defines sample_defines(DType t, DType ct) {
  Defines d;
  add_type_defines(d, {{"T_IN", t}, {"CT", ct}});
  return d;
}

// sample_scale's outputs per work-item, down a column.
constexpr int kScaleRows = 4;

Defines scale_defines(DType t, DType ct) {
  Defines d = sample_defines(t, ct);
  d.emplace_back("YN", std::to_string(kScaleRows));
  return d;
}

Shape make_shape(int ndim, std::size_t w, std::size_t h, std::size_t d) {
  return ndim == 3 ? Shape{d, h, w} : Shape{h, w};
}

// out(x, y, z) = in[base + x sx + y sy + z sz]: remap_rows where x runs along the input's rows
// (|sx| == 1; remap_rows_v4 where those rows are aligned vectors of 1- or 2-byte elements) or
// no axis does, remap_tile where the input's x becomes the output's y or z (remap_tile_v4
// where both sides' rows are aligned vectors of 1- or 2-byte elements).
Array remap(const Array& in, const Shape& out_shape, std::int64_t base, std::int64_t sx,
            std::int64_t sy, std::int64_t sz) {
  Array out = Array::empty(out_shape, in.dtype(), in.device());
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, out_shape);
  for (std::int64_t v : {base, sx, sy, sz}) args.push_back(arg(v));
  // Groups in dimension 1 go round the kernels' grid-stride loops: CUDA allows 65535.
  constexpr std::size_t kMaxGroups1 = 65535;
  const std::size_t w = out_shape.width(), h = out_shape.height(), depth = out_shape.depth();
  const int axis = std::abs(sx) == 1 ? 0 : (std::abs(sy) == 1 ? 1 : (std::abs(sz) == 1 ? 2 : 0));
  if (axis == 0) {
    // Whole aligned vectors for 1- and 2-byte elements: every row starts at a vector's first
    // element (sx = 1) or ends at one's last (sx = -1).
    const bool v4 = std::abs(sx) == 1 && flat_v4_ok({&in}, out) && w % 4 == 0 && sy % 4 == 0 &&
                    sz % 4 == 0 && base % 4 == (sx > 0 ? 0 : 3);
    // RK units (elements or vectors) a work-item: as many columns 64 apart as the rows have
    // room for (a power of two), the rest in consecutive rows.
    const auto rk = static_cast<std::size_t>(remap_elements(bits_type(in.dtype())));
    const std::size_t units = v4 ? w / 4 : w;
    int lkx = 0;
    while ((std::size_t{64} << lkx) < units && (std::size_t{1} << (lkx + 1)) <= rk) ++lkx;
    const std::size_t rows_per_group = 4 * (rk >> lkx);
    const std::size_t groups = std::min(ceil_div(h * depth, rows_per_group), kMaxGroups1);
    launch(in, "geometry.kernel", v4 ? "remap_rows_v4" : "remap_rows",
           remap_defines(in.dtype(), lkx),
           grid({ceil_div(units, std::size_t{64} << lkx) * 64, groups * 4, 1}, {64, 4, 1}), args);
  } else {
    const std::size_t ext_a = axis == 1 ? h : depth, ext_b = axis == 1 ? depth : h;
    const std::int64_t sa = axis == 1 ? sy : sz, sb = axis == 1 ? sz : sy;
    // Whole aligned vectors on both sides for 1- and 2-byte elements: input rows forward
    // along the axis from vector starts, output rows whole vectors.
    const bool v4 = sa == 1 && flat_v4_ok({&in}, out) && w % 4 == 0 && ext_a % 4 == 0 &&
                    base % 4 == 0 && sx % 4 == 0 && sb % 4 == 0;
    const std::size_t tile_a = v4 ? 128 : 32;
    const std::size_t tile_x = v4 ? 128 : 32 * remap_tile_rows(in.dtype());
    const std::size_t groups = std::min(ceil_div(ext_a, tile_a) * ext_b, kMaxGroups1);
    args.push_back(arg(axis));
    launch(in, "geometry.kernel", v4 ? "remap_tile_v4" : "remap_tile", remap_defines(in.dtype()),
           grid({ceil_div(w, tile_x) * 32, groups * 8, 1}, {32, 8, 1}), args);
  }
  return out;
}

using Matrix = std::array<double, 12>;

// The kernels' coordinate type: the image's compute type (float32 for 8- and 16-bit and
// float32 images), except where an axis of the input or the output is longer than 2^16
// pixels, where float64 is taken. A float32 coordinate carries the rounding of the scale and
// of itself, about x 2^-24 scale pixels at output x: a resample by 1.7 of a 500009-pixel row
// put 1.1% of its nearest samples on a neighbouring pixel (0.02 px off), of 4000000 pixels
// 13.6% (0.28 px); below 2^16 the error stays under 0.004 px. Past 2^23 float32 does not even
// hold c + 0.5, past 2^24 it could round beyond the last pixel (a read outside the row).
DType sample_type(const Array& in, const Shape& out_shape) {
  constexpr std::size_t kExact = std::size_t{1} << 16;
  const std::size_t longest = std::max({in.shape().width(), in.shape().height(), in.shape().depth(),
                                        out_shape.width(), out_shape.height(), out_shape.depth()});
  return longest > kExact ? DType::f64 : compute_type({in.dtype()});
}

Array sample(const Array& in, const Shape& out_shape, const Matrix& m, bool linear,
             const char* who) {
  const DType ct = sample_type(in, out_shape);
  require_dtype(in.device(), ct, [&] {
    return std::string(who) + " on " + std::string(name(in.dtype())) +
           (ct == compute_type({in.dtype()}) ? "" : " with an axis of more than 65536 pixels") +
           " (computed in float64)";
  });
  for (double v : m) {
    if (!std::isfinite(v)) throw InvalidArgument(std::string(who) + ": the matrix must be finite");
  }
  Array out = Array::empty(out_shape, in.dtype(), in.device());
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, in.shape());
  push_shape(args, out_shape);
  auto scalar = [&](double v) {
    args.push_back(ct == DType::f64 ? arg(v) : arg(static_cast<float>(v)));
  };
  // 32-bit indices where every index, and every work-item id of the grid (rounded up to whole
  // work-groups), stays below 2^32 (geometry.kernel's SAMPLE_AFFINE_BODY says why): arrays
  // below 2^31 elements (config().index32_below).
  const std::uint64_t below = std::min(config().index32_below, std::uint64_t{1} << 31);
  const bool narrow = in.elements() < below && out.elements() < below;
  // Scale and shift only (every resample): the kernel that walks columns.
  if (m[1] == 0 && m[2] == 0 && m[4] == 0 && m[6] == 0 && m[8] == 0 && m[9] == 0) {
    for (int axis = 0; axis < 3; ++axis) {
      scalar(m[static_cast<std::size_t>(axis * 5)]);
      scalar(m[static_cast<std::size_t>(axis * 4 + 3)]);
    }
    args.push_back(arg(static_cast<std::int32_t>(linear ? 1 : 0)));
    args.push_back(arg(static_cast<std::int32_t>(narrow ? 1 : 0)));
    const std::size_t rows = (out_shape.height() + kScaleRows - 1) / kScaleRows;
    const std::array<std::size_t, 3> local = out_shape.ndim() == 3
                                                 ? std::array<std::size_t, 3>{32, 4, 2}
                                                 : std::array<std::size_t, 3>{32, 8, 1};
    launch(in, "geometry.kernel", "sample_scale", scale_defines(in.dtype(), ct),
           grid({out_shape.width(), rows, out_shape.depth()}, local), args);
    return out;
  }
  for (double v : m) scalar(v);
  args.push_back(arg(static_cast<std::int32_t>(linear ? 1 : 0)));
  args.push_back(arg(static_cast<std::int32_t>(narrow ? 1 : 0)));
  launch(in, "geometry.kernel", "sample_affine", sample_defines(in.dtype(), ct),
         image_grid(out_shape), args);
  return out;
}

struct AxisInfo {
  const char* name;  // "x"
  const char* extent_name;
  std::size_t extent;
};

// Validates one axis of a crop box and returns its size.
std::size_t crop_axis(const AxisInfo& a, long long origin, long long size) {
  const auto ext = static_cast<long long>(a.extent);
  const std::string o = std::string("origin_") + a.name, s = std::string("size_") + a.name;
  if (origin >= ext) {
    throw InvalidArgument("crop: " + o + " is " + std::to_string(origin) + " but the image " +
                          a.extent_name + " is " + std::to_string(ext) + "; " + o +
                          " must be from 0 to " + std::to_string(ext - 1));
  }
  if (size == 0) return static_cast<std::size_t>(ext - origin);
  if (origin + size > ext) {
    throw InvalidArgument("crop: " + o + " " + std::to_string(origin) + " + " + s + " " +
                          std::to_string(size) + " = " + std::to_string(origin + size) +
                          " exceeds the image " + a.extent_name + " " + std::to_string(ext) +
                          "; with this origin " + s + " must be from 1 to " +
                          std::to_string(ext - origin) + " (or 0 for 'to the end')");
  }
  return static_cast<std::size_t>(size);
}

Array crop_impl(const Array& in, const long long o[3], const long long s[3]) {
  const Shape& sh = in.shape();
  const AxisInfo axes[3] = {
      {"x", "width", sh.width()}, {"y", "height", sh.height()}, {"z", "depth", sh.depth()}};
  std::size_t size[3];
  for (int i = 0; i < 3; ++i) size[i] = crop_axis(axes[i], o[i], s[i]);
  const auto w = static_cast<std::int64_t>(sh.width()), h = static_cast<std::int64_t>(sh.height());
  const std::int64_t base = (o[2] * h + o[1]) * w + o[0];
  return remap(in, make_shape(in.ndim(), size[0], size[1], size[2]), base, 1, w, w * h);
}

Array flip_impl(const Array& in, bool fx, bool fy, bool fz) {
  const Shape& sh = in.shape();
  const auto w = static_cast<std::int64_t>(sh.width()), h = static_cast<std::int64_t>(sh.height()),
             d = static_cast<std::int64_t>(sh.depth());
  std::int64_t sx = 1, sy = w, sz = w * h;
  const std::int64_t x0 = fx ? w - 1 : 0, y0 = fy ? h - 1 : 0, z0 = fz ? d - 1 : 0;
  if (fx) sx = -sx;
  if (fy) sy = -sy;
  if (fz) sz = -sz;
  return remap(in, sh, (z0 * h + y0) * w + x0, sx, sy, sz);
}

Array transpose_impl(const Array& in, const std::string& axes) {
  const Shape& sh = in.shape();
  if (in.ndim() == 2 && axes != "xy") {
    throw InvalidArgument("transpose: axes '" + axes + "' needs a 3D image; this one is 2D (" +
                          sh.str() + "), where only 'xy' applies");
  }
  const auto w = static_cast<std::int64_t>(sh.width()), h = static_cast<std::int64_t>(sh.height());
  // Input strides of x, y, z; the output takes the permuted extents and strides.
  std::size_t ext[3] = {sh.width(), sh.height(), sh.depth()};
  std::int64_t stride[3] = {1, w, w * h};
  const int a = axes == "xy" ? 0 : (axes == "xz" ? 0 : 1);
  const int b = axes == "xy" ? 1 : 2;
  std::swap(ext[a], ext[b]);
  std::swap(stride[a], stride[b]);
  return remap(in, make_shape(in.ndim(), ext[0], ext[1], ext[2]), 0, stride[0], stride[1],
               stride[2]);
}

Array resample_impl(const Array& in, const double factor[3], bool linear) {
  const Shape& sh = in.shape();
  const std::size_t ext[3] = {sh.width(), sh.height(), sh.depth()};
  std::size_t out[3] = {1, 1, 1};
  Matrix m{};
  for (int i = 0; i < in.ndim(); ++i) {
    // Python's round (half to even), as scipy.ndimage.zoom sizes its output, but at least 1:
    // zoom would return an empty array where a 1-pixel axis shrinks (1 * 0.5 rounds to 0),
    // and an image of 0 pixels is nothing a user can look at or save.
    const double e = std::max(1.0, std::nearbyint(static_cast<double>(ext[i]) * factor[i]));
    out[i] = static_cast<std::size_t>(e);
    // Pixel centres aligned (grid_mode=True): c = (o + 0.5) * in / out - 0.5.
    const double scale = static_cast<double>(ext[i]) / e;
    m[static_cast<std::size_t>(i * 4 + i)] = scale;
    m[static_cast<std::size_t>(i * 4 + 3)] = 0.5 * scale - 0.5;
  }
  const Shape out_shape = make_shape(in.ndim(), out[0], out[1], out[2]);
  return sample(in, out_shape, m, linear, "resample");
}

Array affine_impl(const Array& in, Matrix m, bool linear) {
  if (in.ndim() == 2) {
    // z terms do not apply to a 2D image (its z is always 0).
    m[2] = m[6] = 0;
    m[8] = m[9] = m[10] = m[11] = 0;
  }
  return sample(in, in.shape(), m, linear, "affine_transform");
}

// ---- the catalog rows

constexpr long long kMaxExtent = 1LL << 40;

struct CropParams {
  std::size_t origin_x, origin_y, origin_z, size_x, size_y, size_z;
};
const Filter<CropParams> kCrop(
    {.name = "crop",
     .category = Category::geometry,
     .doc = "the box [origin, origin + size) per axis, pixels copied exactly; size 0 means to the "
            "end of the axis; a box that leaves the image is an error naming the valid range (2D: "
            "origin_z 0, size_z 0 or 1)",
     .params =
         {integer(
              &CropParams::origin_x,
              {.name = "origin_x", .max = kMaxExtent, .unit = "px", .doc = "first column kept"}),
          integer(&CropParams::origin_y,
                  {.name = "origin_y", .max = kMaxExtent, .unit = "px", .doc = "first row kept"}),
          integer(&CropParams::origin_z, {.name = "origin_z",
                                          .max = kMaxExtent,
                                          .unit = "px",
                                          .doc = "first slice kept (3D)"}),
          integer(&CropParams::size_x, {.name = "size_x",
                                        .max = kMaxExtent,
                                        .unit = "px",
                                        .doc = "columns kept (0: to the end)"}),
          integer(&CropParams::size_y, {.name = "size_y",
                                        .max = kMaxExtent,
                                        .unit = "px",
                                        .doc = "rows kept (0: to the end)"}),
          integer(&CropParams::size_z, {.name = "size_z",
                                        .max = kMaxExtent,
                                        .unit = "px",
                                        .doc = "slices kept (0: to the end)"})},
     .dims = {2, 3},
     .untiled = "its output has another shape (crop the host array instead)",
     .fn = [](std::span<const Array> x, const CropParams& p, const RunOptions&) {
       auto ll = [](std::size_t v) { return static_cast<long long>(v); };
       const long long o[3] = {ll(p.origin_x), ll(p.origin_y), ll(p.origin_z)};
       const long long s[3] = {ll(p.size_x), ll(p.size_y), ll(p.size_z)};
       return one(crop_impl(x[0], o, s));
     }});

struct FlipParams {
  bool flip_x, flip_y, flip_z;
};
const Filter<FlipParams> kFlip(
    {.name = "flip",
     .category = Category::geometry,
     .doc = "mirrors the image along each chosen axis (numpy.flip), pixels copied exactly; flip_z "
            "has no effect on 2D images",
     .params = {boolean(&FlipParams::flip_x,
                        {.name = "flip_x", .def = true, .doc = "mirror left-right"}),
                boolean(&FlipParams::flip_y, {.name = "flip_y", .doc = "mirror top-bottom"}),
                boolean(&FlipParams::flip_z,
                        {.name = "flip_z", .doc = "reverse the slice order (3D)"})},
     .dims = {2, 3},
     .untiled = "an output pixel comes from the far side of the image",
     .fn = [](std::span<const Array> x, const FlipParams& p, const RunOptions&) {
       return one(flip_impl(x[0], p.flip_x, p.flip_y, x[0].ndim() == 3 && p.flip_z));
     }});

struct TransposeParams {
  std::string axes;
};
const Filter<TransposeParams> kTranspose(
    {.name = "transpose",
     .category = Category::geometry,
     .doc = "swaps two axes, pixels copied exactly: 'xy' swaps x and y (2D and 3D: out(z, x, y) = "
            "in(z, y, x)), 'xz' swaps x and z, 'yz' swaps y and z (3D only)",
     .params = {choice(&TransposeParams::axes, {.name = "axes",
                                                .choices = {"xy", "xz", "yz"},
                                                .def = "xy",
                                                .doc = "the two axes to swap"})},
     .dims = {2, 3},
     .untiled = "its output has another shape",
     .fn = [](std::span<const Array> x, const TransposeParams& p, const RunOptions&) {
       return one(transpose_impl(x[0], p.axes));
     }});

template <class P>
Param<P> interpolation_param(Interpolation P::*m) {
  return choice(
      m, {.name = "interpolation",
          .choices = {{Interpolation::linear, "linear"}, {Interpolation::nearest, "nearest"}},
          .def = Interpolation::linear,
          .doc = "nearest neighbour or (bi/tri)linear"});
}

struct ResampleParams {
  double factor_x, factor_y, factor_z;
  Interpolation interpolation;
};
const Filter<ResampleParams> kResample(
    {.name = "resample",
     .category = Category::geometry,
     .doc =
         "scales by a factor per axis as scipy.ndimage.zoom(grid_mode=True, mode='nearest', "
         "order=0 or 1): output extent round(extent * factor) (half to even, at least 1), output "
         "pixel o samples input coordinate (o + 0.5) * in / out - 0.5; nearest takes "
         "floor(c + 0.5), linear interpolates in float32 (float64 for 32/64-bit dtypes and axes "
         "over 65536 pixels) with borders replicating the edge pixel; integers round half to "
         "even and saturate",
     .params = {real(&ResampleParams::factor_x, {.name = "factor_x",
                                                 .def = 2,
                                                 .min = 1e-4,
                                                 .max = 1e4,
                                                 .doc = "scale factor along x"}),
                real(&ResampleParams::factor_y, {.name = "factor_y",
                                                 .def = 2,
                                                 .min = 1e-4,
                                                 .max = 1e4,
                                                 .doc = "scale factor along y"}),
                real(&ResampleParams::factor_z, {.name = "factor_z",
                                                 .def = 1,
                                                 .min = 1e-4,
                                                 .max = 1e4,
                                                 .doc = "scale factor along z (3D)"}),
                interpolation_param(&ResampleParams::interpolation)},
     .dims = {2, 3},
     .untiled = "its output has another shape",
     .fn = [](std::span<const Array> x, const ResampleParams& p, const RunOptions&) {
       const double f[3] = {p.factor_x, p.factor_y, p.factor_z};
       return one(resample_impl(x[0], f, p.interpolation == Interpolation::linear));
     }});

struct AffineParams {
  Matrix m;
  Interpolation interpolation;
};
// m00 .. m23, one parameter per matrix element, identity by default.
std::vector<Param<AffineParams>> affine_params() {
  std::vector<Param<AffineParams>> v;
  for (std::size_t i = 0; i < 12; ++i) {
    const std::size_t row = i / 4, col = i % 4;
    const char* axis = row == 0 ? "x" : (row == 1 ? "y" : "z");
    const std::string what = col == 3 ? std::string("offset")
                                      : std::string("coefficient of output ") +
                                            (col == 0 ? "x" : (col == 1 ? "y" : "z"));
    v.push_back(real(&AffineParams::m, i,
                     {.name = "m" + std::to_string(row) + std::to_string(col),
                      .def = row == col ? 1.0 : 0.0,
                      .min = -1e6,
                      .max = 1e6,
                      .unit = col == 3 ? "px" : "",
                      .doc = "input " + std::string(axis) + ": " + what}));
  }
  v.push_back(interpolation_param(&AffineParams::interpolation));
  return v;
}
const Filter<AffineParams> kAffineTransform(
    {.name = "affine_transform",
     .category = Category::geometry,
     .doc =
         "output pixel (x, y, z) samples the input at x_in = m00 x + m01 y + m02 z + m03, y_in = "
         "m10 x + ... + m13, z_in = m20 x + ... + m23 (pixel i at coordinate i), as "
         "scipy.ndimage.affine_transform(mode='nearest', order=0 or 1) with the matrix in (x, "
         "y, z) order; same shape as the input; 2D images use m00 m01 m03 m10 m11 m13 only; "
         "borders replicate the edge pixel; nearest takes floor(c + 0.5), linear interpolates "
         "in float32 (float64 for 32/64-bit dtypes and axes over 65536 pixels); integers round "
         "half to even and saturate",
     .params = affine_params(),
     .dims = {2, 3},
     .untiled = "an output pixel can come from anywhere",
     .fn = [](std::span<const Array> x, const AffineParams& p, const RunOptions&) {
       return one(affine_impl(x[0], p.m, p.interpolation == Interpolation::linear));
     }});

}  // namespace

void register_geometry(Catalog& c) {
  c.add({&kCrop, &kFlip, &kTranspose, &kResample, &kAffineTransform});
}

void add_geometry_variants(std::vector<KernelVariant>& out) {
  for (DType t : {DType::u8, DType::u16, DType::u32, DType::u64}) {
    out.push_back({"geometry.kernel", "remap_tile", remap_defines(t)});
    if (size_of(t) <= 2) out.push_back({"geometry.kernel", "remap_tile_v4", remap_defines(t)});
    for (int lkx = 0; (1 << lkx) <= remap_elements(t); ++lkx) {
      out.push_back({"geometry.kernel", "remap_rows", remap_defines(t, lkx)});
      if (size_of(t) <= 2) {
        out.push_back({"geometry.kernel", "remap_rows_v4", remap_defines(t, lkx)});
      }
    }
  }
  for (DType t : kAllDTypes) {
    out.push_back({"geometry.kernel", "sample_affine", sample_defines(t, compute_type({t}))});
    out.push_back({"geometry.kernel", "sample_scale", scale_defines(t, compute_type({t}))});
    // Axes longer than 2^16 pixels take float64 coordinates (sample_type).
    if (compute_type({t}) != DType::f64) {
      out.push_back({"geometry.kernel", "sample_affine", sample_defines(t, DType::f64)});
      out.push_back({"geometry.kernel", "sample_scale", scale_defines(t, DType::f64)});
    }
  }
}

}  // namespace gpix::detail

namespace gpix {
using namespace detail;

Array crop(const Array& a, std::size_t origin_x, std::size_t origin_y, std::size_t origin_z,
           std::size_t size_x, std::size_t size_y, std::size_t size_z) {
  return kCrop.array({a}, {.origin_x = origin_x,
                           .origin_y = origin_y,
                           .origin_z = origin_z,
                           .size_x = size_x,
                           .size_y = size_y,
                           .size_z = size_z});
}
Array flip(const Array& a, bool flip_x, bool flip_y, bool flip_z) {
  return kFlip.array({a}, {.flip_x = flip_x, .flip_y = flip_y, .flip_z = flip_z});
}
Array transpose(const Array& a, std::string_view axes) {
  return kTranspose.array({a}, {.axes = std::string(axes)});
}
Array resample(const Array& a, double factor_x, double factor_y, double factor_z,
               Interpolation interpolation) {
  return kResample.array({a}, {.factor_x = factor_x,
                               .factor_y = factor_y,
                               .factor_z = factor_z,
                               .interpolation = interpolation});
}
Array affine_transform(const Array& a, const std::array<double, 12>& m,
                       Interpolation interpolation) {
  return kAffineTransform.array({a}, {.m = m, .interpolation = interpolation});
}
}  // namespace gpix
