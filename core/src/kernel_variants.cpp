#include "kernel_variants.h"

namespace gpix::detail {

std::vector<KernelVariant> all_kernel_variants() {
  std::vector<KernelVariant> v;
  add_stats_variants(v);
  add_resample_variants(v);
  return v;
}

}  // namespace gpix::detail
