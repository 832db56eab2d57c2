// Arithmetic and type filters: pointwise operations on one or two images, through
// kernels/pointwise.kernel.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "filters/launch.h"
#include "filters/registry.h"
#include "gpix/error.h"
#include "gpix/stats.h"
#include "kernel_variants.h"
#include "moments.h"

namespace gpix::detail {
namespace {

enum class OutRule { same, floating };

DType output_dtype(DType in, OutRule rule) {
  if (rule == OutRule::same) return in;
  return in == DType::f64 ? DType::f64 : DType::f32;
}

// How a pointwise kernel computes: an OP expression in a float compute type, a RAW_OP on
// the input's own type, or a WIDE_OP on exact sign-magnitude 64-bit integers
// (kernels/pointwise.kernel).
enum class OpKind { expr, raw, wide };

// v4: four elements an index (flat_v4_ok; filters/launch.h).
Defines unary_defines(DType in, DType out, const std::string& op, OpKind kind, bool v4 = false) {
  Defines d;
  if (kind == OpKind::expr) {
    add_type_defines(d, {{"T_A", in}, {"T_OUT", out}, {"CT", compute_type({in, out})}});
  } else {
    add_type_defines(d, {{"T_A", in}, {"T_OUT", out}});
  }
  d.emplace_back(kind == OpKind::raw ? "RAW_OP" : kind == OpKind::wide ? "WIDE_OP" : "OP", op);
  add_flat_define(d, {in}, v4);
  return d;
}

Defines binary_defines(DType a, DType b, DType out, const std::string& op, OpKind kind,
                       bool v4 = false) {
  Defines d;
  if (kind == OpKind::wide) {
    add_type_defines(d, {{"T_A", a}, {"T_B", b}, {"T_OUT", out}});
    d.emplace_back("WIDE_OP", op);
  } else {
    add_type_defines(d,
                     {{"T_A", a}, {"T_B", b}, {"T_OUT", out}, {"CT", compute_type({a, b, out})}});
    d.emplace_back("OP", op);
  }
  add_flat_define(d, {a, b}, v4);
  return d;
}

// Integer operations involving a 64-bit integer go through the exact WIDE_OP path: float64
// holds 53 bits, so u64/i64 values beyond 2^53 would round. Narrower integers stay on the
// float path, which is exact for them (sums, differences, quotients of 32-bit values are
// exact or correctly rounded in float64, and products beyond 2^53 saturate anyway) and
// avoids 64-bit division on the device.
bool needs_wide(std::initializer_list<DType> types) {
  bool wide = false;
  for (DType t : types) {
    if (is_float(t)) return false;
    wide |= size_of(t) == 8;
  }
  return wide;
}

// The exact WIDE_OP path also where the float path would compute in float64 on a device
// without it (32-bit integers on some Intel and ARM GPUs): the same bits, since float64 is exact
// or correctly rounded for 32-bit values (needs_wide) and the wide path is exact, and no
// float64 (these operations were refused there).
bool wide_path(const Device& d, std::initializer_list<DType> types) {
  if (needs_wide(types)) return true;
  for (DType t : types) {
    if (is_float(t)) return false;
  }
  return compute_type(types) == DType::f64 && !d.supports_fp64();
}

void require_compute(const Array& a, DType ct, std::string_view what) {
  if (ct == DType::f64)
    require_dtype(a.device(), DType::f64, [&] {
      return std::string(what) + " on " + std::string(name(a.dtype())) + " (computed in float64)";
    });
}

KernelArgs scalars_for(DType ct, double b, double c, double d) {
  if (ct == DType::f64) return {arg(b), arg(c), arg(d)};
  return {arg(static_cast<float>(b)), arg(static_cast<float>(c)), arg(static_cast<float>(d))};
}

Array unary(const Array& in, DType out_t, const std::string& op, double b = 0, double c = 0,
            double d = 0) {
  const DType ct = compute_type({in.dtype(), out_t});
  require_compute(in, ct, "this operation");
  Array out = empty_like(in, out_t);
  KernelArgs args;
  args.reserve(6);  // one allocation for the three arrays' and three scalars' arguments
  args.insert(args.end(), {arg(in), arg(out), arg<std::uint64_t>(in.elements())});
  for (auto& s : scalars_for(ct, b, c, d)) args.push_back(s);
  const Defines defs = unary_defines(in.dtype(), out_t, op, OpKind::expr, flat_v4_ok({&in}, out));
  launch(in, "pointwise.kernel", "unary", defs, flat_grid(in.elements(), defs), args);
  return out;
}

// The value v (integral and inside t's range) as a kernel scalar of integer dtype t.
KernelArg int_scalar(DType t, long double v) {
  return visit_dtype(t, [&](auto zero) -> KernelArg {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      return arg(static_cast<T>(v));
    } else {
      throw Error("internal: int_scalar on a float dtype");
    }
  });
}

// A RAW_OP on x (the input in its own integer type) with four scalars b..e of that type.
Array unary_raw(const Array& in, DType out_t, const std::string& op,
                std::array<long double, 4> scalars = {}) {
  Array out = empty_like(in, out_t);
  KernelArgs args = {arg(in), arg(out), arg<std::uint64_t>(in.elements())};
  for (long double s : scalars) args.push_back(int_scalar(in.dtype(), s));
  const Defines d = unary_defines(in.dtype(), out_t, op, OpKind::raw, flat_v4_ok({&in}, out));
  launch(in, "pointwise.kernel", "unary", d, flat_grid(in.elements(), d), args);
  return out;
}

// A WIDE_OP on a (exact, see needs_wide): op names the function the kernel applies to a, at
// most 15 characters so that the define's value needs no allocation.
Array unary_wide(const Array& in, DType out_t, const std::string& op) {
  Array out = empty_like(in, out_t);
  const Defines d = unary_defines(in.dtype(), out_t, op, OpKind::wide);
  launch(in, "pointwise.kernel", "unary", d, flat_grid(in.elements(), d),
         {arg(in), arg(out), arg<std::uint64_t>(in.elements())});
  return out;
}

// WIDE_OP(a, b) with b the integer `value` (|value| < 2^64): add_scalar and multiply_scalar of
// a 64-bit integer image by an integer, exact, where float64 would round values past 2^53.
Defines wide_scalar_defines(DType t, const std::string& op) {
  Defines d = unary_defines(t, t, op, OpKind::wide);
  d.emplace_back("WIDE_SCALAR", "1");
  return d;
}
Array unary_wide_scalar(const Array& in, const std::string& op, double value) {
  Array out = empty_like(in, in.dtype());
  const Defines d = wide_scalar_defines(in.dtype(), op);
  launch(in, "pointwise.kernel", "unary", d, flat_grid(in.elements(), d),
         {arg(in), arg(out), arg<std::uint64_t>(in.elements()),
          arg(static_cast<std::uint64_t>(std::fabs(value))),
          arg(static_cast<std::int32_t>(value < 0 ? 1 : 0))});
  return out;
}

// a op value in the image's dtype: exact for 64-bit integer images and integer values (their
// sign-magnitude form), the float path otherwise.
Array scalar_op(const Array& in, const std::string& expr, const std::string& wide_op,
                double value) {
  if (wide_path(in.device(), {in.dtype()}) && std::trunc(value) == value &&
      std::fabs(value) < 0x1p64) {
    return unary_wide_scalar(in, wide_op, value);
  }
  return unary(in, in.dtype(), expr, value);
}

// clip on an integer image, exactly: a pixel below `lo` becomes ceil(lo) saturated into the
// dtype, one above `hi` floor(hi); the comparisons use the same ceil(lo) and floor(hi), which
// an integer pixel compares with as it would with lo and hi. Bounds beyond the dtype's range
// saturate (a uint8 clipped to [300, 400] is 255 everywhere). long double holds every 64-bit
// integer exactly.
// clip's operations, at most 15 characters each: a define's value that long is kept inside its
// std::string, so a repeated call allocates nothing for it (bench_launch). The integer one is
// x < b ? d : (x > c ? e : x) (?: groups to the right); the float one keeps NaN
// (pointwise.kernel's CLIP_NAN).
constexpr const char* kClipInteger = "x<b?d:x>c?e:x";
constexpr const char* kClipFloat = "CLIP_NAN(a,b,c)";

Array clip_integer(const Array& in, double lo, double hi) {
  const DType t = in.dtype();
  // Not a structured binding: clang before 16 cannot capture one in the lambda below.
  const std::pair<long double, long double> range =
      visit_dtype(t, [](auto zero) -> std::pair<long double, long double> {
        using T = decltype(zero);
        return {static_cast<long double>(std::numeric_limits<T>::lowest()),
                static_cast<long double>(std::numeric_limits<T>::max())};
      });
  auto clamp = [&](long double v) { return std::clamp(v, range.first, range.second); };
  // Values outside go to the nearest integer inside the bounds (a uint8 clipped to
  // [2.5, 200.7] holds 3..200; the bounds rounded to nearest gave 2 and 201, outside them),
  // saturated into the dtype.
  const long double lo_int = std::ceil(static_cast<long double>(lo));
  const long double hi_int = std::floor(static_cast<long double>(hi));
  if (lo_int > hi_int) {
    throw InvalidArgument("clip: no integer lies in [" + Scalar(lo).str() + ", " +
                          Scalar(hi).str() + "], which a " + std::string(name(t)) +
                          " image's pixels would have to take; widen the bounds to hold one");
  }
  return unary_raw(in, t, kClipInteger,
                   {clamp(lo_int), clamp(hi_int), clamp(lo_int), clamp(hi_int)});
}

Array binary(const Array& a, const Array& b, DType out_t, const std::string& op,
             const std::string& wide_op) {
  if (!(a.shape() == b.shape())) {
    throw InvalidArgument("the two images must have the same shape; got " + a.shape().str() +
                          " and " + b.shape().str() + " (crop or resample one first)");
  }
  Array out = empty_like(a, out_t);
  KernelArgs args = {arg(a), arg(b), arg(out), arg<std::uint64_t>(a.elements())};
  if (wide_path(a.device(), {a.dtype(), b.dtype(), out_t})) {
    const Defines d = binary_defines(a.dtype(), b.dtype(), out_t, wide_op, OpKind::wide);
    launch(a, "pointwise.kernel", "binary", d, flat_grid(a.elements(), d), args);
    return out;
  }
  const DType ct = compute_type({a.dtype(), b.dtype(), out_t});
  require_compute(a, ct, "this operation");
  args.push_back(ct == DType::f64 ? arg(0.0) : arg(0.0f));
  const Defines d =
      binary_defines(a.dtype(), b.dtype(), out_t, op, OpKind::expr, flat_v4_ok({&a, &b}, out));
  launch(a, "pointwise.kernel", "binary", d, flat_grid(a.elements(), d), args);
  return out;
}

// Exact integer-to-integer conversion with saturation, done in the integer types (a detour
// through double would round 64-bit values): pointwise.kernel's CVT_* expressions, whose names
// keep the define's value short (no allocation on a repeated call).
const char* int_convert_op(DType in, DType out) {
  auto max_of = [](DType t) -> long double {
    return std::ldexp(1.0L, static_cast<int>(size_of(t) * 8) - (is_signed(t) ? 1 : 0)) - 1;
  };
  const bool high = max_of(in) > max_of(out);
  if (is_signed(in) && !is_signed(out)) return high ? "CVT_Z_HI" : "CVT_Z";
  // A narrower signed type: its highest is below the input's too.
  if (is_signed(in) && size_of(out) < size_of(in)) return "CVT_LO_HI";
  return high ? "CVT_HI" : "(T_OUT)x";
}

// ---- the catalog rows

// The six binary operations: the expression on the float path and on the exact 64-bit one.
struct BinaryOp {
  const char* name;
  const char* op;
  const char* wide_op;
  const char* doc;
};
constexpr BinaryOp kAdd{
    .name = "add_images",
    .op = "a+b",
    .wide_op = "gpix_wide_add",
    .doc = "a + b pixel by pixel; the output has the first image's dtype and integers saturate"};
constexpr BinaryOp kSubtract{
    .name = "subtract_images",
    .op = "a-b",
    .wide_op = "gpix_wide_sub",
    .doc = "a - b pixel by pixel; the output has the first image's dtype and integers saturate"};
constexpr BinaryOp kMultiply{
    .name = "multiply_images",
    .op = "a*b",
    .wide_op = "gpix_wide_mul",
    .doc = "a * b pixel by pixel; the output has the first image's dtype and integers saturate"};
constexpr BinaryOp kDivide{
    .name = "divide_images",
    .op = "a/b",
    .wide_op = "gpix_wide_div",
    .doc =
        "a / b pixel by pixel; integers round half to even and saturate, x/0 gives the dtype's "
        "max (or min for negative x, 0 for 0/0) in integers and inf/NaN in floats"};
constexpr BinaryOp kMinimum{.name = "minimum_images",
                            .op = "fmin(a,b)",
                            .wide_op = "gpix_wide_min",
                            .doc = "the smaller of a and b per pixel (a NaN loses to a number)"};
constexpr BinaryOp kMaximum{.name = "maximum_images",
                            .op = "fmax(a,b)",
                            .wide_op = "gpix_wide_max",
                            .doc = "the larger of a and b per pixel (a NaN loses to a number)"};
constexpr BinaryOp kBinary[] = {kAdd, kSubtract, kMultiply, kDivide, kMinimum, kMaximum};

Filter<> binary_filter(const BinaryOp& op) {
  return Filter<>({.name = op.name,
                   .category = Category::arithmetic,
                   .doc = op.doc,
                   .inputs = {image_input("a", "first image"),
                              image_input("b", "second image, same shape, any dtype")},
                   .output_dtype = "same as the first input",
                   .halo = pointwise,
                   .fn = [expr = std::string(op.op), wide = std::string(op.wide_op)](
                             std::span<const Array> x, const NoParams&, const RunOptions&) {
                     return one(binary(x[0], x[1], x[0].dtype(), expr, wide));
                   }});
}

// The four unary functions: the expression and the output dtype rule.
struct UnaryOp {
  const char* name;
  const char* op;
  OutRule out;
  const char* doc;
};
constexpr UnaryOp kAbsolute{
    .name = "absolute",
    .op = "fabs(a)",
    .out = OutRule::same,
    .doc = "|a|; int8 -128 saturates to 127 (likewise for every signed integer dtype)"};
constexpr UnaryOp kSqrt{
    .name = "sqrt",
    .op = "sqrt(a)",
    .out = OutRule::floating,
    .doc =
        "square root; float32 output for integer inputs (float64 stays); sqrt of a negative is "
        "NaN"};
constexpr UnaryOp kExp{.name = "exp",
                       .op = "exp(a)",
                       .out = OutRule::floating,
                       .doc = "e^a; float32 output for integer inputs (float64 stays)"};
constexpr UnaryOp kLog{
    .name = "log",
    .op = "log(a)",
    .out = OutRule::floating,
    .doc = "natural logarithm; float32 output for integer inputs; log(0) = -inf, log(<0) = NaN"};
constexpr UnaryOp kUnary[] = {kAbsolute, kSqrt, kExp, kLog};

Filter<> unary_filter(const UnaryOp& op) {
  const bool is_abs = std::string_view(op.name) == kAbsolute.name;
  return Filter<>({.name = op.name,
                   .category = Category::arithmetic,
                   .doc = op.doc,
                   .output_dtype = op.out == OutRule::same ? "same as input"
                                                           : "float32 (float64 stays float64)",
                   .halo = pointwise,
                   .fn = [expr = std::string(op.op), rule = op.out, is_abs](
                             std::span<const Array> x, const NoParams&, const RunOptions&) {
                     const DType out = output_dtype(x[0].dtype(), rule);
                     if (is_abs && wide_path(x[0].device(), {x[0].dtype(), out}))
                       return one(unary_wide(x[0], out, "gpix_wide_abs"));
                     return one(unary(x[0], out, expr));
                   }});
}

const Filter<> kAddImages = binary_filter(kAdd);
const Filter<> kSubtractImages = binary_filter(kSubtract);
const Filter<> kMultiplyImages = binary_filter(kMultiply);
const Filter<> kDivideImages = binary_filter(kDivide);
const Filter<> kMinimumImages = binary_filter(kMinimum);
const Filter<> kMaximumImages = binary_filter(kMaximum);
const Filter<> kAbsoluteFilter = unary_filter(kAbsolute);
const Filter<> kSqrtFilter = unary_filter(kSqrt);
const Filter<> kExpFilter = unary_filter(kExp);
const Filter<> kLogFilter = unary_filter(kLog);

struct ValueParams {
  double value;
};
const Filter<ValueParams> kAddScalar(
    {.name = "add_scalar",
     .category = Category::arithmetic,
     .doc = "a + value; the output has the input's dtype and integers saturate (64-bit "
            "integers: exact for a whole value; a fractional one computes in float64, which "
            "rounds pixels beyond 2^53 to 53 bits first)",
     .params = {real(&ValueParams::value, {.name = "value", .def = 1, .doc = "the number to add"})},
     .halo = pointwise,
     .fn = [](std::span<const Array> x, const ValueParams& p, const RunOptions&) {
       return one(scalar_op(x[0], "a+b", "gpix_wide_add", p.value));
     }});

struct FactorParams {
  double factor;
};
const Filter<FactorParams> kMultiplyScalar(
    {.name = "multiply_scalar",
     .category = Category::arithmetic,
     .doc = "a * factor; the output has the input's dtype, integers round half to even and "
            "saturate (64-bit integers: exact for a whole factor; a fractional one computes in "
            "float64, which rounds pixels beyond 2^53 to 53 bits first)",
     .params = {real(&FactorParams::factor, {.name = "factor", .def = 2, .doc = "the factor"})},
     .halo = pointwise,
     .fn = [](std::span<const Array> x, const FactorParams& p, const RunOptions&) {
       return one(scalar_op(x[0], "a*b", "gpix_wide_mul", p.factor));
     }});

struct PowerParams {
  double exponent;
};

// pow(a, b) with the exponent a kernel argument, except for the integer exponents -2..4, which
// become products (as numpy's fast_scalar_power does for -1, 0, 1 and 2): at most two IEEE
// roundings, inside pow's own error bound (OpenCL allows 16 ulp in float32), with pow's
// special cases (pow(x, 0) = 1 even for NaN; signed zeros and infinities follow from the
// products) and a fraction of its instructions. Why: ncu found the float32 pow kept 85 % of
// the issue slots busy, at 1.2-2.0x the time of a copy of the same array (bench/RESULTS.md,
// 2026-11-29, the suite's profile); a square runs at the copy's pace.
const char* power_op(double e) {
  if (e == 0) return "(CT)1";
  if (e == 1) return "a";
  if (e == 2) return "a*a";
  if (e == 3) return "a*a*a";
  if (e == 4) return "(a*a)*(a*a)";
  if (e == -1) return "1/a";
  if (e == -2) return "1/(a*a)";
  return "pow(a,b)";
}
const Filter<PowerParams> kPower(
    {.name = "power",
     .category = Category::arithmetic,
     .doc = "a^exponent (C's pow); float32 output for integer inputs (float64 stays)",
     .params = {real(
         &PowerParams::exponent,
         {.name = "exponent", .def = 2, .min = -1e6, .max = 1e6, .doc = "the exponent"})},
     .output_dtype = "float32 (float64 stays float64)",
     .halo = pointwise,
     .fn = [](std::span<const Array> x, const PowerParams& p, const RunOptions&) {
       return one(unary(x[0], output_dtype(x[0].dtype(), OutRule::floating), power_op(p.exponent),
                        p.exponent));
     }});

struct ClipParams {
  double minimum, maximum;
};
const Filter<ClipParams> kClip(
    {.name = "clip",
     .category = Category::arithmetic,
     .doc = "limits every pixel to [minimum, maximum]: integer pixels outside take the nearest "
            "integer inside (saturated into the dtype); NaN stays NaN in floats",
     .params = {real(&ClipParams::minimum, {.name = "minimum", .def = 0, .doc = "lower limit"}),
                real(&ClipParams::maximum, {.name = "maximum", .def = 255, .doc = "upper limit"})},
     .halo = pointwise,
     .fn = [](std::span<const Array> x, const ClipParams& p, const RunOptions&) {
       if (p.minimum > p.maximum) {
         throw InvalidArgument("clip: minimum " + Scalar(p.minimum).str() + " is above maximum " +
                               Scalar(p.maximum).str());
       }
       if (!is_float(x[0].dtype())) return one(clip_integer(x[0], p.minimum, p.maximum));
       return one(unary(x[0], x[0].dtype(), kClipFloat, p.minimum, p.maximum));
     }});

const Filter<> kInvert(
    {.name = "invert",
     .category = Category::arithmetic,
     .doc = "inverts intensities as scikit-image's invert: dtype max - a for unsigned, -1 - a for "
            "signed integers (both exact, as bitwise not), 1 - a for floats",
     .halo = pointwise,
     .fn = [](std::span<const Array> x, const NoParams&, const RunOptions&) {
       const DType t = x[0].dtype();
       if (is_float(t)) return one(unary(x[0], t, "1-a"));
       return one(unary_raw(x[0], t, "~x"));
     }});

std::vector<std::pair<DType, std::string>> dtype_choices() {
  std::vector<std::pair<DType, std::string>> v;
  for (DType t : kAllDTypes) v.emplace_back(t, std::string(name(t)));
  return v;
}

struct ConvertParams {
  DType dtype;
};
const Filter<ConvertParams> kConvert(
    {.name = "convert",
     .category = Category::types,
     .doc = "converts to another dtype: floats to integers round half to even and saturate (NaN "
            "-> 0), wider integers saturate into narrower ones",
     .params = {choice(&ConvertParams::dtype, {.name = "dtype",
                                               .choices = dtype_choices(),
                                               .def = DType::f32,
                                               .doc = "the output dtype"})},
     .output_dtype = "the dtype parameter",
     .halo = pointwise,
     .output_bytes = [](const ConvertParams& p, DType) { return size_of(p.dtype); },
     .fn =
         [](std::span<const Array> x, const ConvertParams& p, const RunOptions&) {
           require_dtype(x[0].device(), p.dtype, "convert");
           if (x[0].dtype() == p.dtype) return one(x[0].copy());
           if (!is_float(x[0].dtype()) && !is_float(p.dtype)) {
             return one(unary_raw(x[0], p.dtype, int_convert_op(x[0].dtype(), p.dtype)));
           }
           // A 64-bit integer into float32 in one rounding, as numpy's astype: through float64
           // (the pair's compute type) it would round twice (2^60 + 2^36 + 1 gave 2^60).
           if (p.dtype == DType::f32 && !is_float(x[0].dtype()) && size_of(x[0].dtype()) == 8) {
             return one(unary_raw(x[0], p.dtype, "x"));
           }
           return one(unary(x[0], p.dtype, "a"));
         }});

// rescale_intensity's second pass, its extrema read on the device (pointwise.kernel's rescale):
// reading them back first made the host wait between the passes, which was a 2048^2 float32
// rescale's largest fixed cost (bench/RESULTS.md, 2026-12-03). RS, the type the scale is
// computed in, is float64 where the device has it: the host's double, as before.
Defines rescale_defines(DType in, DType out, DType rs, bool v4) {
  Defines d;
  add_type_defines(d, {{"T_A", in}, {"T_OUT", out}, {"CT", compute_type({in, out})}, {"RS", rs}});
  d.emplace_back("RESCALE", "1");
  add_flat_define(d, {in}, v4);
  return d;
}

Array rescale_on_device(const Array& in, DType out_t, const detail::DeviceExtrema& e,
                        double out_min, double out_max) {
  const DType rs = in.device().supports_fp64() ? DType::f64 : DType::f32;
  Array out = empty_like(in, out_t);
  KernelArgs args;
  args.reserve(7);
  args.insert(args.end(), {arg(in), arg(out), arg<std::uint64_t>(in.elements()),
                           KernelArg::mem(*e.memory), arg<std::uint64_t>(e.at)});
  if (rs == DType::f64) {
    args.insert(args.end(), {arg(out_min), arg(out_max)});
  } else {
    args.insert(args.end(), {arg(static_cast<float>(out_min)), arg(static_cast<float>(out_max))});
  }
  const Defines defs = rescale_defines(in.dtype(), out_t, rs, flat_v4_ok({&in}, out));
  launch(in, "pointwise.kernel", "rescale", defs, flat_grid(in.elements(), defs), args);
  return out;
}

struct RescaleParams {
  double out_min, out_max;
};
const Filter<RescaleParams> kRescaleIntensity(
    {.name = "rescale_intensity",
     .category = Category::types,
     .doc = "maps the image's [min, max] linearly onto [out_min, out_max] (as scikit-image's "
            "rescale_intensity with in_range='image'); a constant image maps to out_min; NaN "
            "stays NaN",
     .params = {real(&RescaleParams::out_min,
                     {.name = "out_min", .def = 0, .doc = "value for the image minimum"}),
                real(&RescaleParams::out_max,
                     {.name = "out_max", .def = 1, .doc = "value for the image maximum"})},
     .output_dtype = "float32 (float64 stays float64)",
     .untiled = "it maps the whole image's minimum and maximum (compute them first, then use "
                "multiply_scalar and add_scalar, which tile)",
     .fn = [](std::span<const Array> x, const RescaleParams& p, const RunOptions& o) {
       const Array& in = x[0];
       const DType out_t = output_dtype(in.dtype(), OutRule::floating);
       require_compute(in, compute_type({in.dtype(), out_t}), "rescale_intensity");
       detail::DeviceExtrema e = detail::extrema_on_device(in);
       checkpoint(o, 0.5, "rescale_intensity");
       if (e.host && (in.dtype() == DType::i64 || in.dtype() == DType::u64)) {
         // 64-bit integers take pointwise.kernel's rescale, which subtracts the minimum in the
         // integers (the unary path's float64 lost the low bits above 2^53): the extrema the
         // host has go to it as the stats pass would have left them.
         const auto bits = [&](const Scalar& s) {
           return in.dtype() == DType::i64 ? static_cast<std::uint64_t>(s.exact_as<std::int64_t>())
                                           : s.exact_as<std::uint64_t>();
         };
         const Array ext =
             Array::push(std::vector<std::uint64_t>{bits(e.host->min), bits(e.host->max)}, Shape{2},
                         in.device());
         detail::DeviceExtrema pushed;
         pushed.memory = detail::Access::impl(ext).memory;
         return one(rescale_on_device(in, out_t, pushed, p.out_min, p.out_max));
       }
       if (e.host) {  // stats.kernel's final pass still compiling: the host has the extrema
         // The scale as pointwise.kernel's rescale computes it (RS: float64 where the device
         // has it, else float), for the same bits.
         const auto scale_in = [&](auto zero) -> double {
           using RS = decltype(zero);
           const RS lo = static_cast<RS>(e.host->min.as_double());
           const RS hi = static_cast<RS>(e.host->max.as_double());
           const RS range = static_cast<RS>(p.out_max) - static_cast<RS>(p.out_min);
           return hi > lo ? range / (hi - lo) : RS{0};
         };
         const double scale = in.device().supports_fp64() ? scale_in(0.0) : scale_in(0.0f);
         return one(unary(in, out_t, "(a-b)*c+d", e.host->min.as_double(), scale, p.out_min));
       }
       return one(rescale_on_device(in, out_t, e, p.out_min, p.out_max));
     }});

}  // namespace

void register_arithmetic(Catalog& c) {
  c.add({&kAddImages, &kSubtractImages, &kMultiplyImages, &kDivideImages, &kMinimumImages,
         &kMaximumImages, &kAbsoluteFilter, &kSqrtFilter, &kExpFilter, &kLogFilter, &kAddScalar,
         &kMultiplyScalar, &kPower, &kClip, &kInvert, &kConvert, &kRescaleIntensity});
}

void add_pointwise_variants(std::vector<KernelVariant>& out) {
  // Every dtype through the generic unary and binary paths with representative expressions;
  // the expression set does not change what the dialect must support per type. Each also in
  // its four-elements-an-index form where the types allow one (flat_v4_ok).
  auto v4_types = [](std::initializer_list<DType> in, DType o) {
    return std::all_of(in.begin(), in.end(), [](DType t) { return size_of(t) <= 2; }) &&
           size_of(o) <= 4;
  };
  auto unary_v = [&](DType a, DType o, const std::string& op, OpKind kind) {
    out.push_back({"pointwise.kernel", "unary", unary_defines(a, o, op, kind)});
    if (kind != OpKind::wide && v4_types({a}, o)) {
      out.push_back({"pointwise.kernel", "unary", unary_defines(a, o, op, kind, true)});
    }
  };
  for (DType a : kAllDTypes) {
    for (const auto& op : kUnary) unary_v(a, output_dtype(a, op.out), op.op, OpKind::expr);
    unary_v(a, a, "(a-b)*c+d", OpKind::expr);
    if (!is_float(a)) {
      unary_v(a, a, "~x", OpKind::raw);
      unary_v(a, a, kClipInteger, OpKind::raw);
    } else {
      unary_v(a, a, kClipFloat, OpKind::expr);
    }
    if (needs_wide({a})) {
      unary_v(a, a, "gpix_wide_abs", OpKind::wide);
      for (const char* op : {"gpix_wide_add", "gpix_wide_mul"})
        out.push_back({"pointwise.kernel", "unary", wide_scalar_defines(a, op)});
      unary_v(a, DType::f32, "x", OpKind::raw);  // convert's single rounding
    }
    // rescale_intensity, as on devices with fp64 (every CUDA device).
    const DType rescaled = output_dtype(a, OutRule::floating);
    out.push_back({"pointwise.kernel", "rescale", rescale_defines(a, rescaled, DType::f64, false)});
    if (v4_types({a}, rescaled)) {
      out.push_back(
          {"pointwise.kernel", "rescale", rescale_defines(a, rescaled, DType::f64, true)});
    }
    for (DType b : kAllDTypes) {
      if (needs_wide({a, b})) {
        for (const auto& op : kBinary) {
          out.push_back(
              {"pointwise.kernel", "binary", binary_defines(a, b, a, op.wide_op, OpKind::wide)});
        }
      } else {
        out.push_back({"pointwise.kernel", "binary", binary_defines(a, b, a, "a/b", OpKind::expr)});
        if (v4_types({a, b}, a)) {
          out.push_back(
              {"pointwise.kernel", "binary", binary_defines(a, b, a, "a/b", OpKind::expr, true)});
        }
      }
      if (a == b) continue;
      if (!is_float(a) && !is_float(b)) {
        unary_v(a, b, int_convert_op(a, b), OpKind::raw);
      } else {
        unary_v(a, b, "a", OpKind::expr);
      }
    }
  }
}

}  // namespace gpix::detail

namespace gpix {
using namespace detail;
Array add_images(const Array& a, const Array& b) {
  return kAddImages.array({a, b});
}
Array subtract_images(const Array& a, const Array& b) {
  return kSubtractImages.array({a, b});
}
Array multiply_images(const Array& a, const Array& b) {
  return kMultiplyImages.array({a, b});
}
Array divide_images(const Array& a, const Array& b) {
  return kDivideImages.array({a, b});
}
Array minimum_images(const Array& a, const Array& b) {
  return kMinimumImages.array({a, b});
}
Array maximum_images(const Array& a, const Array& b) {
  return kMaximumImages.array({a, b});
}
Array add_scalar(const Array& a, double value) {
  return kAddScalar.array({a}, {.value = value});
}
Array multiply_scalar(const Array& a, double factor) {
  return kMultiplyScalar.array({a}, {.factor = factor});
}
Array absolute(const Array& a) {
  return kAbsoluteFilter.array({a});
}
Array power(const Array& a, double exponent) {
  return kPower.array({a}, {.exponent = exponent});
}
Array sqrt(const Array& a) {
  return kSqrtFilter.array({a});
}
Array exp(const Array& a) {
  return kExpFilter.array({a});
}
Array log(const Array& a) {
  return kLogFilter.array({a});
}
Array clip(const Array& a, double minimum, double maximum) {
  return kClip.array({a}, {.minimum = minimum, .maximum = maximum});
}
Array invert(const Array& a) {
  return kInvert.array({a});
}
Array convert(const Array& a, DType dtype) {
  return kConvert.array({a}, {.dtype = dtype});
}
Array rescale_intensity(const Array& a, double out_min, double out_max) {
  return kRescaleIntensity.array({a}, {.out_min = out_min, .out_max = out_max});
}
}  // namespace gpix
