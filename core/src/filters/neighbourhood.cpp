// Neighbourhood filters.
#include <cmath>

#include "filters/launch.h"
#include "filters/registry.h"
#include "filters/shared.h"
#include "gpix/error.h"
#include "kernel_variants.h"

namespace gpix::detail {
namespace {

Result one(Array a) {
  Result r;
  r.array = std::move(a);
  return r;
}

// Intermediate passes keep full precision: float32 for 8/16-bit and float32 images,
// float64 for wider ones (whose values float32 cannot hold exactly).
DType work_type(DType t) {
  return compute_type({t});
}

Defines convolve_defines(DType in, DType out) {
  Defines d;
  add_type_defines(d, {{"T_IN", in}, {"T_OUT", out}, {"CT", compute_type({in, out})}});
  return d;
}

// One pass along axis with the given taps (odd count, centred).
Array convolve_axis(const Array& in, DType out_t, const std::vector<double>& taps, int axis) {
  const DType ct = compute_type({in.dtype(), out_t});
  require_dtype(in.device(), ct,
                "this filter on " + std::string(name(in.dtype())) + " (computed in float64)");
  Array w;
  if (ct == DType::f64) {
    w = Array::push(taps, Shape{taps.size()}, in.device());
  } else {
    std::vector<float> f(taps.begin(), taps.end());
    w = Array::push(f, Shape{taps.size()}, in.device());
  }
  Array out = empty_like(in, out_t);
  std::vector<KernelArg> args = {arg(in), arg(out)};
  push_shape(args, in.shape());
  args.push_back(arg(w));
  args.push_back(arg(static_cast<std::int32_t>(taps.size() / 2)));
  args.push_back(arg(static_cast<std::int32_t>(axis)));
  launch(in, "convolve.kernel", "convolve_axis", convolve_defines(in.dtype(), out_t),
         image_grid(in.shape()), args);
  return out;
}

// scipy.ndimage.gaussian_filter's kernel: sampled, normalised, radius = int(4 * sigma + 0.5).
std::vector<double> gaussian_taps(double sigma) {
  const int radius = static_cast<int>(4.0 * sigma + 0.5);
  std::vector<double> t(static_cast<std::size_t>(2 * radius + 1));
  double sum = 0;
  for (int i = -radius; i <= radius; ++i) {
    const double v = std::exp(-0.5 * i * i / (sigma * sigma));
    t[static_cast<std::size_t>(i + radius)] = v;
    sum += v;
  }
  for (auto& v : t) v /= sum;
  return t;
}

}  // namespace

// Blurs along every axis with sigma > 0; the last pass writes the output dtype.
Array gaussian(const Array& in, double sx, double sy, double sz, const RunOptions& o) {
  const double sigmas[3] = {sx, sy, sz};
  std::vector<int> axes;
  for (int axis = 0; axis < in.ndim(); ++axis) {
    if (sigmas[axis] > 0) axes.push_back(axis);
  }
  if (axes.empty()) return in.copy();
  Array cur = in;
  for (std::size_t i = 0; i < axes.size(); ++i) {
    checkpoint(o, static_cast<double>(i) / static_cast<double>(axes.size()), "gaussian_blur");
    const bool last = i + 1 == axes.size();
    cur = convolve_axis(cur, last ? in.dtype() : work_type(in.dtype()),
                        gaussian_taps(sigmas[axes[i]]), axes[i]);
  }
  return cur;
}

void register_neighbourhood(Catalog& c) {
  c.add({"gaussian_blur",
         "Neighbourhood",
         "Gaussian blur as scipy.ndimage.gaussian_filter(mode='nearest'): sampled normalised "
         "kernel truncated "
         "at 4 sigma, borders replicate the nearest pixel, sigma 0 leaves an axis alone; integers "
         "round half "
         "to even",
         {image_input()},
         {real_param("sigma_x", 2, 0, 100, "px", "standard deviation along x"),
          real_param("sigma_y", 2, 0, 100, "px", "standard deviation along y"),
          real_param("sigma_z", 0, 0, 100, "px", "standard deviation along z (3D)")},
         {1, 2, 3},
         all_dtypes(),
         OutputKind::image,
         "same as input"},
        [](std::span<const Array> x, const ResolvedParams& p, const RunOptions& o) {
          return one(gaussian(x[0], p.real("sigma_x"), p.real("sigma_y"), p.real("sigma_z"), o));
        });
}

void add_convolve_variants(std::vector<KernelVariant>& out) {
  for (DType t : kAllDTypes) {
    out.push_back({"convolve.kernel", "convolve_axis", convolve_defines(t, work_type(t))});
    out.push_back({"convolve.kernel", "convolve_axis", convolve_defines(work_type(t), t)});
  }
}

}  // namespace gpix::detail

namespace gpix {
Array gaussian_blur(const Array& a, double sigma_x, double sigma_y, double sigma_z) {
  return detail::run_array("gaussian_blur", {a},
                           {{"sigma_x", sigma_x}, {"sigma_y", sigma_y}, {"sigma_z", sigma_z}});
}
}  // namespace gpix
