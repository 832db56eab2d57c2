#include "gpix/image.h"

#include "detail.h"
#include "gpix/error.h"
#include "kernel_variants.h"
#include "memory_pool.h"
#include "programs.h"

namespace gpix {

namespace detail {

Defines resample_defines(DType t, int dims) {
  return {{"T", std::string(kernel_type(t))}, {"DIMS", std::to_string(dims)}};
}

void add_resample_variants(std::vector<KernelVariant>& out) {
  for (DType t :
       {DType::u8, DType::i8, DType::u16, DType::i16, DType::u32, DType::i32, DType::f32}) {
    for (int dims : {2, 3})
      out.push_back({"resample.kernel", "resample", resample_defines(t, dims)});
  }
}

}  // namespace detail

using detail::Access;

Array resample(const Array& image, const Array& coords, Sampler sampler) {
  auto& img = Access::impl(image);
  auto& c = Access::impl(coords);
  if (img.kind != MemoryKind::image) {
    throw InvalidArgument("resample() reads an image array; convert the buffer with to_image()");
  }
  const int dims = img.shape.ndim() == 3 ? 3 : 2;
  if (c.kind != MemoryKind::buffer || !c.contiguous() || c.dtype != DType::f32 ||
      c.shape.ndim() != 2 || c.shape[1] != static_cast<std::size_t>(dims)) {
    throw InvalidArgument("resample(): coords must be a contiguous f32 buffer of shape (n, " +
                          std::to_string(dims) + ") for a " + std::to_string(dims) +
                          "D image, not " + c.shape.str() + " " + std::string(name(c.dtype)));
  }
  if (img.device != c.device) {
    throw InvalidArgument("resample(): image and coords live on different devices; copy one");
  }
  if (sampler.filter == Sampler::Filter::linear && img.dtype != DType::f32) {
    throw UnsupportedDType(
        "linear sampling needs an f32 image (OpenCL and CUDA interpolate "
        "float formats only), not " +
        std::string(name(img.dtype)) + "; use nearest, or convert the image to f32");
  }
  auto& dev = *img.device;
  const std::size_t n = c.shape[0];
  Array out = Array::empty(Shape{n}, img.dtype, image.device());
  const auto& kernel = dev.kernel(detail::program("resample.kernel"), "resample",
                                  detail::resample_defines(img.dtype, dims));
  detail::SamplerDesc sd;
  sd.linear = sampler.filter == Sampler::Filter::linear;
  sd.normalized = sampler.coordinates == Sampler::Coordinates::normalized;
  const detail::KernelArg args[] = {detail::KernelArg::image(*img.memory, sd),
                                    detail::KernelArg::mem(*c.memory),
                                    detail::KernelArg::scalar<std::uint64_t>(n),
                                    detail::KernelArg::mem(*Access::impl(out).memory)};
  detail::Launch l;
  l.local[0] = 64;
  l.global[0] = detail::round_up(n, 64);
  dev.launch(*kernel, l, args);
  return out;
}

}  // namespace gpix
