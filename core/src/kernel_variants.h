#pragma once
// Every (kernel file, entry point, defines) combination the library can ask a backend to
// build. CI compiles each of them with NVRTC, so the CUDA side of the dialect never breaks
// unseen; each module that launches kernels adds its own list here.
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gpix/dtype.h"

namespace gpix::detail {

struct KernelVariant {
  std::string file;
  std::string entry;
  Defines defines;
};

std::vector<KernelVariant> all_kernel_variants();

// Per module.
Defines stats_defines(DType t, DType acc, std::size_t wg);
void add_stats_variants(std::vector<KernelVariant>& out);
void add_pointwise_variants(std::vector<KernelVariant>& out);
void add_neighbourhood_variants(std::vector<KernelVariant>& out);
Defines render_defines(DType t, bool contrast);
void add_render_variants(std::vector<KernelVariant>& out);
Defines resample_defines(DType t, int dims);
void add_resample_variants(std::vector<KernelVariant>& out);
void add_mip_variants(std::vector<KernelVariant>& out);
void add_segmentation_variants(std::vector<KernelVariant>& out);
void add_geometry_variants(std::vector<KernelVariant>& out);
void add_reduction_variants(std::vector<KernelVariant>& out);

}  // namespace gpix::detail
