#pragma once
// Filters over arrays larger than a device's memory (or the host's), and over several devices
// at once.
//
// run_tiled cuts the input into slabs along its slowest axis (z of a 3D array, y of a 2D one,
// x of a 1D one). Each slab travels to a device with the planes around it that its output
// depends on (the filter's halo, from its parameters: a box of radius r needs r planes on each
// side, a Gaussian its truncated kernel radius, a pointwise filter none), is filtered there,
// and its interior comes back into the output. Every output pixel therefore sees exactly the
// input pixels it sees in a whole-array run, and the result is bit-identical to it.
// Filters whose output depends on the whole image fold their slabs instead (the catalog row
// says how): projections carry each column's running state from slab to slab, reductions and
// histograms add per-slab partials, Otsu thresholds with the histogram of every slab, and
// connected components label each slab, join the labels that touch across slab faces and
// label each slab again into the whole image's numbering (the input is read twice). The
// rest (relabelling, Voronoi-Otsu, label statistics, geometry) are refused with the reason.
//
// Inputs come from SlabSources and the output goes to a SlabSink, plane by plane, so neither
// needs to fit in memory: gpix_io streams TIFF, MetaImage, NRRD and raw files
// (gpix/slab_files.h); HostArraySource and HostArraySink are the in-memory ends.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/device.h"
#include "gpix/host_array.h"

namespace gpix {

// Where a tiled run reads an input: planes along axis 0 (z of a stack, rows of a 2D image),
// on demand.
class SlabSource {
 public:
  SlabSource() = default;
  SlabSource(const SlabSource&) = delete;
  SlabSource& operator=(const SlabSource&) = delete;
  virtual ~SlabSource() = default;
  virtual Shape shape() const = 0;
  virtual DType dtype() const = 0;
  // Copies planes [from, to) of axis 0 into dst, contiguous ((to - from) planes of
  // shape().elements() / shape()[0] pixels). run_tiled calls it from one thread at a time, in
  // any order (slabs mostly come in increasing order; a halo reads planes again). Throws what
  // its medium throws (IoError for files).
  virtual void read(std::size_t from, std::size_t to, std::byte* dst) = 0;
  // Plane `from` onwards where they already lie in memory, contiguous (a slab is then pushed
  // from there without a copy), or null.
  virtual const std::byte* planes(std::size_t /*from*/) const { return nullptr; }
  // Whether the memory planes() hands out is page-locked for device d, so that a slab goes to
  // it by DMA without gpix's staging copy (a pinned HostArray).
  virtual bool pinned_for(const Device& /*d*/) const { return false; }
};

// Where a tiled run writes its output, plane by plane.
class SlabSink {
 public:
  SlabSink() = default;
  SlabSink(const SlabSink&) = delete;
  SlabSink& operator=(const SlabSink&) = delete;
  virtual ~SlabSink() = default;
  // Once, before any plane: the output's shape and dtype (known from the first slab; a
  // projection's output is one plane). Throws to refuse them (InvalidArgument, IoError).
  virtual void start(const Shape& shape, DType dtype) = 0;
  // Planes [from, to) of axis 0, contiguous. Calls come in increasing order, each plane once,
  // one thread at a time.
  virtual void write(std::size_t from, std::size_t to, const std::byte* src) = 0;
  // Plane `from` onwards where the sink keeps its planes in memory (slabs are then pulled
  // straight there, in any order, and write() is not called), or null.
  virtual std::byte* planes(std::size_t /*from*/) { return nullptr; }
  // Whether the memory planes() hands out is page-locked for device d (see SlabSource).
  virtual bool pinned_for(const Device& /*d*/) const { return false; }
  // After the last plane, once the run succeeded (a file moves into place). A sink whose run
  // failed is destroyed without it and leaves nothing behind.
  virtual void finish() {}
};

// A HostArray as a SlabSource: slabs go to the device straight from its memory.
class HostArraySource final : public SlabSource {
 public:
  explicit HostArraySource(HostArray array);
  Shape shape() const override { return array_.shape(); }
  DType dtype() const override { return array_.dtype(); }
  void read(std::size_t from, std::size_t to, std::byte* dst) override;
  const std::byte* planes(std::size_t from) const override;
  bool pinned_for(const Device& d) const override;

 private:
  HostArray array_;
  std::size_t plane_bytes_;
};

// A HostArray as a SlabSink: a new one made at start(), or a given one filled in place (its
// shape and dtype must then be the output's: InvalidArgument at start() otherwise).
class HostArraySink final : public SlabSink {
 public:
  HostArraySink() = default;
  explicit HostArraySink(HostArray into);
  void start(const Shape& shape, DType dtype) override;
  void write(std::size_t from, std::size_t to, const std::byte* src) override;
  std::byte* planes(std::size_t from) override;
  bool pinned_for(const Device& d) const override;
  // The output (invalid before start()).
  const HostArray& array() const { return array_; }

 private:
  HostArray array_;
  bool given_ = false;
  std::size_t plane_bytes_ = 0;
};

// What a tiled run did (TiledOptions::report), for progress displays and benchmarks.
// The phase times are summed over the workers, so with several workers they can exceed
// `seconds`: push_seconds + pull_seconds above `seconds` means transfers overlapped.
struct TiledReport {
  std::size_t halo = 0;             // planes on each side of a slab
  std::size_t planes_per_slab = 0;  // planes kept per slab (the last may have fewer)
  std::size_t slabs = 0;            // per pass over the input
  std::size_t passes = 1;           // reads of the whole input (folds: a histogram's range first)
  std::vector<std::size_t> slabs_per_device;  // in TiledOptions::devices order, all passes
  std::uint64_t bytes_in = 0;                 // pushed, halos included
  std::uint64_t bytes_out = 0;                // pulled
  double seconds = 0;                         // wall time of the whole run
  double read_seconds = 0;                    // SlabSource::read (files: disk and decoding)
  double push_seconds = 0;                    // host to device
  double run_seconds = 0;    // the filter on the device (until its output is complete)
  double pull_seconds = 0;   // device to host
  double write_seconds = 0;  // SlabSink::write, waits for earlier slabs' turn included
};

struct TiledOptions {
  // The devices that share the slabs (one worker each, slabs taken in turn from one queue);
  // empty: the default device. Devices of one kind give the whole-array bytes; devices of
  // different backends or models each round their slabs' float operations their own way
  // (OpenCL's float divide and sqrt are not correctly rounded, CUDA's are). Folds (see
  // above) run on the first device, slabs in order; Otsu's final pass on all of them.
  std::vector<Device> devices;
  // Device memory that the slabs in flight on each device may take together (each device's
  // workers share it), counting their inputs, outputs and the filter's intermediate arrays;
  // 0: a quarter of the device's memory (at most its largest allocation). A budget too small
  // for one plane and its halo is an InvalidArgument. Host memory in use is about half as
  // much again (a slab's input and output planes per worker, for sources and sinks that are
  // not in memory), plus the device's pinned staging rings.
  std::uint64_t budget_bytes = 0;
  // Workers per device, each with its own slab (and its share of the budget): while one
  // worker's kernel runs, another's slab can travel.
  std::size_t workers_per_device = 1;
  // Stops between slabs (gpix::Cancelled; nothing is returned); progress gets 0..1.
  const std::atomic<bool>* cancel = nullptr;
  std::function<void(double)> progress;
  // Filled when the run completes (left untouched when it throws).
  TiledReport* report = nullptr;
  // The HostArray overload of run_tiled: where the output goes; null: a new HostArray. When
  // given, it must have the output's shape and dtype (InvalidArgument otherwise); reusing one
  // output (or a pinned one) saves the first-touch page faults of fresh host memory, which
  // cost about as much as the transfers themselves (bench/RESULTS.md).
  HostArray* output = nullptr;
};

// How filter `name` tiles: whether it can, how, and if not, why.
struct TileInfo {
  bool tileable = false;
  // Its output depends on the whole input and run_tiled folds the slabs (projections,
  // reductions, histogram, Otsu); otherwise each output slab needs its input slab and halo.
  bool folds = false;
  std::string reason;  // why not, for messages and docs; empty when tileable
};
TileInfo tile_info(std::string_view name);

// The planes (rows in 2D) on each side of a slab that the filter's output depends on, for an
// input of `ndim` dimensions and these parameters (defaults filled in as gpix::run does); 0
// for folds. Throws InvalidArgument for an untileable filter or bad parameters.
std::size_t tile_halo(std::string_view name, int ndim, const Params& params = {});

// Runs a catalog filter slab by slab (see above) from sources to a sink. The sources must
// have one shape; the filter's own checks (dtypes, dims, parameters) apply. An image output
// goes to `output` (InvalidArgument when it is null); a table (reductions, histogram) is
// returned, and is empty for image outputs. Throws what the sources, the sink and the filter
// throw, Cancelled, and InvalidArgument for an untileable filter or a budget below one plane
// and its halo.
Table run_tiled(std::string_view name, std::span<SlabSource* const> inputs, SlabSink* output,
                const Params& params = {}, const TiledOptions& options = {});

// The same from and into host memory (HostArraySource, HostArraySink): returns the output.
// Table filters are InvalidArgument here (give them a source and no sink).
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
// of the work), at most 32; a filter without a halo rule (untileable, or folding), or 1 slab,
// runs as gpix::run does (asynchronously: its kernels may still run when it returns). With
// several slabs each is done on the device before the next is queued, progress counts the
// slabs done, and a cancel seen after the last one throws Cancelled too.
Result run_in_slabs(std::string_view name, std::span<const Array> inputs, const Params& params = {},
                    const RunOptions& options = {}, std::size_t slabs = 0);

}  // namespace gpix
