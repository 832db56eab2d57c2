#pragma once
// Filters over arrays larger than a device's memory, and over several devices at once.
//
// run_tiled cuts the input into slabs along its slowest axis (z of a 3D array, y of a 2D one,
// x of a 1D one). Each slab travels to a device with the planes around it that its output
// depends on (the filter's halo, from its parameters: a box of radius r needs r planes on each
// side, a Gaussian its truncated kernel radius, a pointwise filter none), is filtered there,
// and its interior comes back into the host output. Every output pixel therefore sees exactly
// the input pixels it sees in a whole-array run, and the result is bit-identical to it.
// Filters whose output depends on the whole image (Otsu, reductions, labelling, geometry) are
// not tileable: run_tiled refuses them with the reason.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/device.h"
#include "gpix/host_array.h"

namespace gpix {

// What a tiled run did (TiledOptions::report), for progress displays and benchmarks.
struct TiledReport {
  std::size_t halo = 0;             // planes on each side of a slab
  std::size_t planes_per_slab = 0;  // planes kept per slab (the last may have fewer)
  std::size_t slabs = 0;
  std::vector<std::size_t> slabs_per_device;  // in TiledOptions::devices order
  std::uint64_t bytes_in = 0;                 // pushed, halos included
  std::uint64_t bytes_out = 0;                // pulled
  double seconds = 0;                         // wall time of the whole run
};

struct TiledOptions {
  // The devices that share the slabs (one worker each, slabs taken in turn from one queue);
  // empty: the default device. Devices of one kind give the whole-array bytes; devices of
  // different backends or models each round their slabs' float operations their own way
  // (OpenCL's float divide and sqrt are not correctly rounded, CUDA's are).
  std::vector<Device> devices;
  // Device memory one slab may take on each device, counting its inputs, its output and the
  // filter's intermediate arrays; 0: a quarter of the device's memory (at most its largest
  // allocation). A budget too small for one plane and its halo is an InvalidArgument.
  std::uint64_t budget_bytes = 0;
  // Workers per device, each with its own slab (and its share of the budget): while one
  // worker's kernel runs, another's slab can travel.
  std::size_t workers_per_device = 1;
  // Stops between slabs (gpix::Cancelled; nothing is returned); progress gets 0..1.
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(double)> progress;
  // Filled when the run completes (left untouched when it throws).
  TiledReport* report = nullptr;
  // Where the output goes; null: a new HostArray. When given, it must have the input's shape
  // and the filter's output dtype (InvalidArgument otherwise); reusing one output (or a
  // pinned one) saves the first-touch page faults of fresh host memory, which cost about as
  // much as the transfers themselves (bench/RESULTS.md).
  HostArray* output = nullptr;
};

// How filter `name` tiles: whether it can, and if not, why.
struct TileInfo {
  bool tileable = false;
  std::string reason;  // why not, for messages and docs; empty when tileable
};
TileInfo tile_info(std::string_view name);

// The planes (rows in 2D) on each side of a slab that the filter's output depends on, for an
// input of `ndim` dimensions and these parameters (defaults filled in as gpix::run does).
// Throws InvalidArgument for an untileable filter or bad parameters.
std::size_t tile_halo(std::string_view name, int ndim, const Params& params = {});

// Runs a catalog filter slab by slab (see above) and returns its output in host memory.
// The inputs must have one shape; the filter's own checks (dtypes, dims, parameters) apply.
HostArray run_tiled(std::string_view name, std::span<const HostArray> inputs,
                    const Params& params = {}, const TiledOptions& options = {});
inline HostArray run_tiled(std::string_view name, const HostArray& input, const Params& params = {},
                           const TiledOptions& options = {}) {
  return run_tiled(name, std::span<const HostArray>(&input, 1), params, options);
}

// Runs a filter on device arrays slab by slab on their own device, into one output array, so
// that progress advances and cancel (RunOptions) takes effect between slabs: what a GUI wants
// for a long filter. The result equals gpix::run's bit for bit. `slabs` 0 chooses: about 16
// MB or more of input, and slabs of at least 8 halos each (so the halos add at most a quarter
// of the work), at most 32; an untileable filter, or 1 slab, runs as gpix::run does.
Result run_in_slabs(std::string_view name, std::span<const Array> inputs, const Params& params = {},
                    const RunOptions& options = {}, std::size_t slabs = 0);

}  // namespace gpix
