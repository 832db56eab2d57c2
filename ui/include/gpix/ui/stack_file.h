#pragma once
// Stacks larger than memory in the viewer: a layer whose pixels stay in their file.
//
// A StackFile is a file the viewer reads in planes (gpix::SlabSource) instead of whole: the
// metadata card shows its shape, dtype and size at once, the view reads the plane on screen
// when it is asked for (through one plane cache of bounded size, least recently used first),
// its min/max/mean come from a pass over the file in slabs in the background, and filters run
// on it through gpix::run_tiled from the file into a temporary file, which is the result's
// StackFile. Whether a file opens this way is decided by its reader against
// large_stack_policy(). gpix_ui knows no file format: the reader that opens the file (the gpix
// plugin's, through gpix_io) derives from StackFile and makes the sources and sinks.
#include <QString>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "gpix/device.h"
#include "gpix/host_array.h"
#include "gpix/stats.h"
#include "gpix/tiled.h"

namespace gpix::ui {

// When a stack opens file-backed, and how much host memory its displayed planes may take.
struct LargeStackPolicy {
  // A file whose pixels take more than this opens file-backed (0: the default, see
  // default_large_stack_threshold).
  std::uint64_t threshold_bytes = 0;
  // The plane cache of every file-backed layer together (0: 256 MB).
  std::uint64_t cache_bytes = 0;
  // Device memory one slab of a tiled filter or statistics pass may take (0: run_tiled's
  // default, a quarter of the device).
  std::uint64_t slab_budget_bytes = 0;
  // Host memory of the turned 3D view's reduced copy of a file-backed stack (0: half the
  // stack passes' cache, see stack_volume_bound).
  std::uint64_t volume_bytes = 0;
};
LargeStackPolicy large_stack_policy();
// Thread-safe; a smaller cache drops planes at once.
void set_large_stack_policy(const LargeStackPolicy& policy);
// A quarter of the host's physical memory, or of `device`'s memory where that is less.
std::uint64_t default_large_stack_threshold(const gpix::Device& device = {});
// The threshold in force (the policy's, else the default for the last device given to
// set_large_stack_device).
std::uint64_t large_stack_threshold();
void set_large_stack_device(const gpix::Device& device);

// Statistics of a whole file-backed stack (the card's min, max and mean).
struct StackStats {
  double min = 0;
  double max = 0;
  double mean = 0;
  std::uint64_t count = 0;      // pixels that are not NaN
  std::uint64_t nan_count = 0;  // NaN pixels
  // Whether [min, max] is a finite range to bin: not NaN only, no infinity reached.
  bool finite_range() const { return count > 0 && std::isfinite(min) && std::isfinite(max); }
};

class StackFile {
 public:
  StackFile(QString path, QString format, gpix::Shape shape, gpix::DType dtype);
  StackFile(const StackFile&) = delete;
  StackFile& operator=(const StackFile&) = delete;
  // Drops its planes from the cache; a temporary file (a filter's result) is deleted.
  virtual ~StackFile();

  const QString& path() const { return path_; }
  const QString& format() const { return format_; }  // "TIFF", "MetaImage", ...
  const gpix::Shape& shape() const { return shape_; }
  gpix::DType dtype() const { return dtype_; }
  std::uint64_t bytes() const { return shape_.elements() * gpix::size_of(dtype_); }
  // Planes along axis 0: z slices of a stack, rows of a 2D image.
  std::size_t planes() const { return shape_.ndim() ? shape_[0] : 0; }

  // A new source over the file, with its own handle (one per thread: sources are not shared).
  // Throws gpix::IoError when the file cannot be opened any more.
  virtual std::unique_ptr<gpix::SlabSource> open() const = 0;
  // A sink that writes a result at `path` in this file's format family, with the calibration
  // given ((z, y, x); empty for none), and the StackFile of that file once it is complete.
  virtual std::unique_ptr<gpix::SlabSink> create(const QString& path,
                                                 const std::vector<double>& spacing,
                                                 const std::vector<double>& origin,
                                                 const QString& unit, bool labels) const = 0;
  virtual std::shared_ptr<StackFile> open_result(const QString& path) const = 0;

  // The displayed plane: z of a 3D stack (a 2D image of (height, width)), or the whole image of
  // a 2D one. Read through the plane cache; blocking (disk), for worker threads. Throws
  // gpix::InvalidArgument for a z outside the stack, IoError from the file.
  gpix::HostArray plane(std::size_t z) const;

  // The whole stack's statistics, computed once in slabs on `device` (blocking; later calls
  // return the same). `progress` gets 0..1; `cancel` stops between slabs (gpix::Cancelled,
  // and the next call starts again).
  StackStats stats(const gpix::Device& device, const std::atomic<bool>* cancel = nullptr,
                   const std::function<void(double)>& progress = {}) const;
  // The statistics if they are known, without waiting.
  std::optional<StackStats> known_stats() const;
  // How far the statistics pass is (0..1; 1 once known).
  double stats_progress() const { return stats_progress_.load(); }

  // A temporary file (a filter's result in the viewer's result folder) is deleted with its
  // StackFile, that is when no layer and no undo step refers to it any more.
  void set_temporary(bool temporary) { temporary_ = temporary; }
  bool temporary() const { return temporary_; }

 private:
  QString path_;
  QString format_;
  gpix::Shape shape_;
  gpix::DType dtype_;
  bool temporary_ = false;
  mutable std::mutex read_mutex_;  // the display's source reads one plane at a time
  mutable std::unique_ptr<gpix::SlabSource> reader_;
  mutable std::mutex stats_mutex_;  // one pass at a time
  mutable std::optional<StackStats> stats_;
  mutable std::atomic<double> stats_progress_{0};
};

// Host bytes the plane cache holds now, and its limit.
std::uint64_t plane_cache_bytes();
std::uint64_t plane_cache_limit();

// Where the viewer's file-backed results go: <cache location>/results/<process id>, made on
// first use. remove_result_folder() deletes it with what it holds (at exit).
QString result_folder();
void remove_result_folder();

// Runs catalog filter `name` over file-backed inputs (one shape) with gpix::run_tiled on
// `device`, into a new temporary file in result_folder() in the first input's format family,
// and returns its StackFile (temporary: deleted when the last layer that holds it goes).
// Table outputs (reductions) are returned in `table` and no file is made. Throws
// InvalidArgument naming the reason for a filter that does not tile (TileInfo::reason),
// Cancelled (nothing is left behind), and what the filter and the files throw.
struct FileRunResult {
  std::shared_ptr<StackFile> file;
  gpix::Table table;
};
FileRunResult run_on_files(const std::string& name,
                           const std::vector<std::shared_ptr<StackFile>>& inputs,
                           const gpix::Params& params, const gpix::Device& device,
                           const QString& result_stem, const std::vector<double>& spacing,
                           const std::vector<double>& origin, const QString& unit, bool labels,
                           const std::atomic<bool>* cancel = nullptr,
                           const std::function<void(double)>& progress = {});

// Copies a file-backed stack plane by plane into `sink` (saving it in another file).
void stream_to(const StackFile& file, gpix::SlabSink& sink,
               const std::atomic<bool>* cancel = nullptr,
               const std::function<void(double)>& progress = {});

}  // namespace gpix::ui
