#include "kernel_variants.h"

namespace gpix::detail {

std::vector<KernelVariant> all_kernel_variants() {
  std::vector<KernelVariant> v;
  add_stats_variants(v);
  add_pointwise_variants(v);
  add_neighbourhood_variants(v);
  add_segmentation_variants(v);
  add_geometry_variants(v);
  add_reduction_variants(v);
  // The CUDA backend's 8-byte fill (the driver has memsets of 1, 2 and 4 bytes only).
  v.push_back({"fill.kernel", "fill_u64", {}});
  v.push_back({"fill.kernel", "fill_pattern", {}});
  // The CUDA backend's streamed pushes (core/src/transfer.cpp, CudaDevice::stream_in).
  v.push_back({"staging.kernel", "stage_in", {}});
  add_render_variants(v);
  add_resample_variants(v);
  add_mip_variants(v);
  return v;
}

}  // namespace gpix::detail
