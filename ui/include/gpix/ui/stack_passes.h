#pragma once
// Whole-stack tools on file-backed layers (issues 16 and 18): the histogram, ROI statistics,
// the xz and yz planes and the maximum-intensity projection of a StackFile, computed by reading
// the file once in slabs and combining per-slab partials, so host memory stays at one slab
// whatever the file's size:
//  - the histogram is core's tiled fold (run_tiled "histogram": per-slab counts over the same
//    edges, added up), over the range of the stack's statistics when they are known (the card's
//    pass), else over the range the fold finds in a first pass;
//  - ROI statistics merge each slab's count, sum, mean and spread (Chan's formula) with
//    min/max; a ROI on one slice reads just that plane;
//  - the xz and yz planes through (y, x) gather one row / one column of every plane, slab by
//    slab, on the host (both planes from one pass);
//  - the projection is core's tiled maximum_z_projection (each column's maximum carried from
//    slab to slab on the device);
//  - the reduced volume (the turning 3D view's) is the maximum over blocks of f x f x f voxels,
//    folded slab by slab on the host into a copy of bounded size.
// Every function is blocking (disk and device): call it from a worker thread. `cancel` stops it
// between slabs with gpix::Cancelled and leaves nothing cached; `progress` gets the slab just
// done and the slabs of the whole pass. Results that took a pass over the whole file are kept
// per file in a cache of bounded size (the file's contents never change while a StackFile holds
// it: filters write new files); `cached` says when a result came from there.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpix/device.h"
#include "gpix/host_array.h"
#include "gpix/ui/roi.h"
#include "gpix/ui/stack_file.h"

namespace gpix::ui {

// Slab `done` (1-based) of `total` in the pass under way.
using SlabProgress = std::function<void(std::size_t done, std::size_t total)>;

struct StackHistogram {
  std::vector<std::uint64_t> counts;  // empty when the stack has no finite range (all NaN)
  double min = 0, max = 1;            // the first bin's start and the last bin's end
  std::vector<double> edges;          // counts.size() + 1 bin edges, as the fold compared them
  bool cached = false;
};
// `bins` equal bins over the stack's [min, max] (max = min + 1 when they are equal), as
// gpix::histogram counts them (NaN and values outside not counted). Where the file's
// statistics are known, a stack without a finite range (NaN only, or reaching an infinity) gets
// no counts; otherwise the tiled histogram finds the range itself and throws InvalidArgument
// for such a stack (stack_auto_contrast tells that case apart). Throws Cancelled, what the file
// and the device throw.
StackHistogram stack_histogram(const std::shared_ptr<const StackFile>& file,
                               const gpix::Device& device, int bins,
                               const std::atomic<bool>* cancel = nullptr,
                               const SlabProgress& progress = {});

// measure_roi's numbers for a ROI over a file-backed stack: on a 3D stack the ROI's slice read
// alone, or every slab of an all-slices ROI measured on `device` and merged (pixels, count,
// min, max and sum exactly as one measurement gives them; mean and std within rounding); on a
// 2D image the rows of the ROI's box, slab by slab. Throws what measure_roi throws.
RoiStats stack_roi_stats(const std::shared_ptr<const StackFile>& file, const Roi& roi,
                         const gpix::Device& device, const std::atomic<bool>* cancel = nullptr,
                         const SlabProgress& progress = {}, bool* cached = nullptr);

struct SidePlanes {
  gpix::HostArray xz;  // (depth, width): numpy a[:, y, :]
  gpix::HostArray yz;  // (height, depth): numpy a[:, :, x].T
  bool cached = false;
};
// Both side planes through row y and column x of a 3D stack, in its dtype, from one pass.
// Throws InvalidArgument for a stack that is not 3D or a point outside it.
SidePlanes stack_side_planes(const std::shared_ptr<const StackFile>& file, std::size_t y,
                             std::size_t x, const std::atomic<bool>* cancel = nullptr,
                             const SlabProgress& progress = {});
// A side plane already in the cache (xz at row `index`, or yz at column `index`), else invalid.
gpix::HostArray cached_side_plane(const std::shared_ptr<const StackFile>& file, bool xz,
                                  std::size_t index);

struct StackProjection {
  gpix::HostArray image;  // (height, width) in the stack's dtype: numpy a.max(axis=0)
  bool cached = false;
};
// The maximum over z of a 3D stack (core's maximum_z_projection, tiled), on `device`.
StackProjection stack_max_projection(const std::shared_ptr<const StackFile>& file,
                                     const gpix::Device& device,
                                     const std::atomic<bool>* cancel = nullptr,
                                     const SlabProgress& progress = {});

struct StackVolume {
  gpix::HostArray volume;  // (ceil(d/f), ceil(h/f), ceil(w/f)) in the stack's dtype
  std::size_t factor = 1;  // f: the copy's voxel is f x f x f of the stack's
  bool cached = false;
};
// The smallest f whose block copy of a (d, h, w) stack of `dtype` takes at most `bound_bytes`.
std::size_t block_max_factor(const Shape& shape, DType dtype, std::uint64_t bound_bytes);
// The bound the 3D view uses: the large-stack policy's volume_bytes, else half the pass cache,
// so that the copy stays cached beside the other passes' results.
std::uint64_t stack_volume_bound();
// A reduced-resolution copy of a 3D stack for a maximum-intensity view: each voxel of the copy
// is the maximum of one block of f x f x f voxels (f = block_max_factor(.., bound_bytes); the
// last blocks along an axis are smaller where f does not divide it: their maximum is over the
// voxels there are). NaN voxels are skipped (a block of NaN only is NaN), as render_mip skips
// them. Block maxima, not means: a bright structure smaller than a block keeps its brightness in
// a maximum-intensity view. f = 1 gives the stack itself. Cached per file and f.
// Throws InvalidArgument for a stack that is not 3D or a bound smaller than one voxel.
StackVolume stack_block_max(const std::shared_ptr<const StackFile>& file,
                            std::uint64_t bound_bytes = stack_volume_bound(),
                            const std::atomic<bool>* cancel = nullptr,
                            const SlabProgress& progress = {});

// Host bytes the cache holds and its bound; clear_stack_pass_cache forgets everything (tests).
std::uint64_t stack_pass_cache_bytes();
std::uint64_t stack_pass_cache_limit();
void clear_stack_pass_cache();

}  // namespace gpix::ui
