// The 3D view's projection (gpix/mip.h): the camera becomes four vectors in the volume's
// index coordinates here, in double; kernels/mip.kernel walks the rays.
#include "gpix/mip.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <utility>

#include "filters/launch.h"
#include "gpix/error.h"
#include "kernel_variants.h"

namespace gpix {
namespace detail {
namespace {

// cos and sin of an angle in degrees, exact at whole multiples of 90 (std::cos(pi / 2) is
// 6e-17, which would tilt a view along an axis by a hair and break exact projections).
std::pair<double, double> cos_sin(double degrees) {
  double r = std::fmod(degrees, 360.0);
  if (r < 0) r += 360.0;
  if (r == 0) return {1, 0};
  if (r == 90) return {0, 1};
  if (r == 180) return {-1, 0};
  if (r == 270) return {0, -1};
  const double a = r * std::numbers::pi / 180.0;
  return {std::cos(a), std::sin(a)};
}

DType output_dtype(DType in, bool linear) {
  if (!linear) return in;
  return in == DType::f64 ? DType::f64 : DType::f32;
}

Defines mip_defines(DType in, bool linear) {
  Defines d;
  const DType out = output_dtype(in, linear);
  if (linear) {
    add_type_defines(d, {{"T_IN", in}, {"T_OUT", out}, {"CT", compute_type({in})}});
  } else {
    add_type_defines(d, {{"T_IN", in}, {"T_OUT", out}});
  }
  d.emplace_back("LINEAR", linear ? "1" : "0");
  d.emplace_back("OUT_FLOAT", is_float(out) ? "1" : "0");
  return d;
}

void check_positive(double v, const std::string& what) {
  if (!std::isfinite(v) || !(v > 0)) {
    throw InvalidArgument("render_mip: " + what + " is " + std::to_string(v) +
                          "; it must be a finite number above 0");
  }
}

}  // namespace

void add_mip_variants(std::vector<KernelVariant>& out) {
  for (DType t : kAllDTypes) {
    out.push_back({"mip.kernel", "mip", mip_defines(t, false)});
    out.push_back({"mip.kernel", "mip", mip_defines(t, true)});
  }
}

}  // namespace detail

Array render_mip(const Array& volume, const MipOptions& o) {
  using namespace detail;
  if (!volume.valid()) throw InvalidArgument("render_mip: the array is null");
  const Shape& s = volume.shape();
  if (s.ndim() != 3) {
    throw InvalidArgument(
        "render_mip: a maximum-intensity projection needs a 3D (z, y, x) "
        "array; this one is " +
        s.str() +
        " (show a 2D image as it is, or project a stack of one with "
        "maximum_z_projection)");
  }
  static const char* const axis[] = {"spacing z", "spacing y", "spacing x"};
  for (int i = 0; i < 3; ++i) check_positive(o.spacing[static_cast<std::size_t>(i)], axis[i]);
  if (o.pixel != 0) check_positive(o.pixel, "the pixel size");
  if (!std::isfinite(o.yaw) || !std::isfinite(o.pitch)) {
    throw InvalidArgument("render_mip: yaw " + std::to_string(o.yaw) + " and pitch " +
                          std::to_string(o.pitch) + " must be finite angles in degrees");
  }
  const std::size_t w = o.width ? o.width : s.width(), h = o.height ? o.height : s.height();
  constexpr std::size_t kMaxSide = std::size_t{1} << 31;
  if (w > kMaxSide || h > kMaxSide) {
    throw InvalidArgument("render_mip: an output of " + std::to_string(h) + " x " +
                          std::to_string(w) + " pixels; each side must be at most 2^31");
  }
  const bool linear = o.interpolation == Interpolation::linear;
  if (linear) {
    const DType ct = compute_type({volume.dtype()});
    require_dtype(volume.device(), ct, [&] {
      return "render_mip with linear interpolation on " + std::string(name(volume.dtype())) +
             " (interpolated in float64; nearest needs no fp64)";
    });
  }
  // (x, y, z) order from here on.
  const double sp[3] = {o.spacing[2], o.spacing[1], o.spacing[0]};
  const double n[3] = {double(s.width()), double(s.height()), double(s.depth())};
  const double pixel = o.pixel != 0 ? o.pixel : std::min({sp[0], sp[1], sp[2]});
  // Screen right (u), down (v) and into the screen (d) in physical space: yaw about v, then
  // pitch about u. u x v = d throughout.
  const auto [cy, sy] = cos_sin(o.yaw);
  const auto [cp, spi] = cos_sin(o.pitch);
  const double u[3] = {cy, 0, sy};
  const double v0[3] = {0, 1, 0}, d0[3] = {-sy, 0, cy};
  double v[3], d[3];
  for (int i = 0; i < 3; ++i) {
    v[i] = v0[i] * cp + d0[i] * spi;
    d[i] = d0[i] * cp - v0[i] * spi;
  }
  // Index coordinates: divide by the spacing. The ray step is scaled so that its largest
  // component is exactly 1 (one voxel along the dominant axis per sample).
  double U[3], V[3], D[3], big = 0;
  int dom = 0;
  for (int i = 0; i < 3; ++i) {
    U[i] = pixel * u[i] / sp[i];
    V[i] = pixel * v[i] / sp[i];
    D[i] = d[i] / sp[i];
    if (std::abs(D[i]) > big) {
      big = std::abs(D[i]);
      dom = i;
    }
  }
  for (double& c : D) c /= big;
  D[dom] = D[dom] > 0 ? 1.0 : -1.0;  // exactly, whatever the division rounded to
  double B[3];
  for (int i = 0; i < 3; ++i) {
    B[i] = (n[i] - 1) / 2 - (double(w) - 1) / 2 * U[i] - (double(h) - 1) / 2 * V[i];
  }
  const DType out_t = output_dtype(volume.dtype(), linear);
  Array out = Array::empty(Shape{h, w}, out_t, volume.device());
  if (w == 0 || h == 0) return out;
  const Array in = volume.is_contiguous() ? volume : volume.copy();
  KernelArgs args = {arg(in), arg(out)};
  push_shape(args, s);
  args.push_back(arg(std::uint64_t{w}));
  args.push_back(arg(std::uint64_t{h}));
  for (const double* vec : {B, U, V, D}) {
    for (int i = 0; i < 3; ++i) args.push_back(arg(static_cast<float>(vec[i])));
  }
  args.push_back(arg(static_cast<std::int32_t>(dom)));
  launch(in, "mip.kernel", "mip", mip_defines(volume.dtype(), linear), image_grid(Shape{h, w}),
         args);
  return out;
}

}  // namespace gpix
