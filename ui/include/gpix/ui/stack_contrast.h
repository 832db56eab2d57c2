#pragma once
// Automatic contrast limits from a histogram (issue 16): the rule auto_contrast applies to an
// array on the device, given the counts, so that a file-backed stack gets the same limits from
// the whole stack's histogram (stack_histogram, streamed from its file in slabs) as the same
// stack in memory gets from gpix::histogram.
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "gpix/device.h"
#include "gpix/ui/stack_file.h"
#include "gpix/ui/stack_passes.h"

namespace gpix::ui {

// Limits at the low/high percentiles of the pixels counted in `counts` (bin i spans
// edges[i]..edges[i + 1]; edges has one more entry than counts), over values in [min, max]:
// low is the lower edge of the bin holding rank floor(low% * (n - 1)), high the upper edge of
// the bin holding the high rank; for integer data rounded inwards to whole values; clamped to
// [min, max]; a flat result widened so that it maps. No counts give (min, max).
std::pair<double, double> contrast_from_histogram(std::span<const std::uint64_t> counts,
                                                  std::span<const double> edges, double min,
                                                  double max, bool integer, double low_percent,
                                                  double high_percent);

struct StackContrast {
  double low = 0, high = 1;
  bool cached = false;  // the histogram came from the pass cache (the file was not read)
};
// auto_contrast's limits of a whole file-backed stack (2D or 3D): the percentiles of
// stack_histogram with kContrastBins bins (one pass over the file, or two where the stack's
// range is not known yet; none when it is cached). A stack of NaN only, or one reaching an
// infinity, gives (0, 1), as auto_contrast does in memory. Blocking
// (disk and device): call it from a worker thread. Throws Cancelled and what stack_histogram
// throws.
StackContrast stack_auto_contrast(const std::shared_ptr<const StackFile>& file,
                                  const gpix::Device& device, double low_percent = 0.5,
                                  double high_percent = 99.5,
                                  const std::atomic<bool>* cancel = nullptr,
                                  const SlabProgress& progress = {});

}  // namespace gpix::ui
