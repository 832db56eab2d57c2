#include "gpix/ui/stack_passes.h"

#include <QJsonDocument>
#include <algorithm>
#include <any>
#include <cmath>
#include <cstring>
#include <limits>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>

#include "gpix/array.h"
#include "gpix/catalog.h"
#include "gpix/error.h"
#include "gpix/tiled.h"

namespace gpix::ui {
namespace {

// Host memory one slab of a pass reads at a time (as StackFile::stats): the policy's slab
// budget where it is smaller.
constexpr std::uint64_t kHostSlab = 64ull << 20;
// Results of whole-file passes kept, all files together: side planes are the big ones (a
// 2048 x 2048 x 1000 uint16 stack's xz plane takes 4 MB).
constexpr std::uint64_t kCacheBytes = 128ull << 20;

std::size_t planes_per_slab(const StackFile& f) {
  const LargeStackPolicy p = large_stack_policy();
  const std::uint64_t budget =
      p.slab_budget_bytes ? std::min(p.slab_budget_bytes, kHostSlab) : kHostSlab;
  const std::uint64_t plane = std::max<std::uint64_t>(1, f.planes() ? f.bytes() / f.planes() : 1);
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(budget / plane, 1, f.planes()));
}

Shape with_planes(const Shape& s, std::size_t n) {
  std::vector<std::size_t> d(s.dims().begin(), s.dims().end());
  d[0] = n;
  return Shape(std::span<const std::size_t>(d));
}

void check_cancel(const std::atomic<bool>* cancel, const char* what) {
  if (cancel && cancel->load()) throw Cancelled(std::string(what) + " was cancelled");
}

// Reads `file` slab by slab into one reused buffer and hands each slab to `fn(from, to, slab)`.
template <class Fn>
void for_each_slab(const StackFile& file, const std::atomic<bool>* cancel,
                   const SlabProgress& progress, const char* what, Fn fn) {
  const std::unique_ptr<SlabSource> src = file.open();
  const std::size_t step = planes_per_slab(file), n = file.planes();
  const std::size_t total = (n + step - 1) / step;
  HostArray buffer;
  for (std::size_t t = 0; t < total; ++t) {
    check_cancel(cancel, what);
    const std::size_t from = t * step, to = std::min(n, from + step);
    if (!buffer.valid() || buffer.shape()[0] != to - from) {
      buffer = HostArray::empty(with_planes(file.shape(), to - from), file.dtype());
    }
    src->read(from, to, buffer.data());
    fn(from, to, buffer);
    if (progress) progress(t + 1, total);
  }
  check_cancel(cancel, what);  // a cancel during the last slab still leaves nothing
}

// run_tiled reports a fraction of its slabs; its first report is one slab of all of them.
std::function<void(double)> slab_progress(const SlabProgress& progress) {
  if (!progress) return {};
  auto units = std::make_shared<std::size_t>(0);
  return [progress, units](double f) {
    if (!(f > 0)) return;
    if (*units == 0) *units = std::max<std::size_t>(1, std::size_t(std::lround(1.0 / f)));
    progress(std::min(*units, std::size_t(std::lround(f * double(*units)))), *units);
  };
}

// A pass of core's tiled folds over a file: one device, the large-stack slab budget, cancel
// and slab progress.
TiledOptions file_pass_options(const Device& device, const std::atomic<bool>* cancel,
                               const SlabProgress& progress) {
  TiledOptions o;
  o.devices = {device};
  o.budget_bytes = large_stack_policy().slab_budget_bytes;
  o.cancel = cancel;
  o.progress = slab_progress(progress);
  return o;
}

// Results of passes over whole files, per file, least recently used out first. Entries hold
// the file weakly: a StackFile that is gone (and a new one at its address) never matches.
class PassCache {
 public:
  static PassCache& get() {
    static PassCache c;
    return c;
  }
  template <class T>
  std::optional<T> find(const std::shared_ptr<const StackFile>& file, const std::string& key) {
    std::lock_guard lock(mutex_);
    purge_locked();
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->owner == file.get() && it->key == key && !it->file.expired()) {
        lru_.splice(lru_.end(), lru_, it);
        return std::any_cast<T>(lru_.back().value);
      }
    }
    return std::nullopt;
  }
  template <class T>
  void put(const std::shared_ptr<const StackFile>& file, const std::string& key, T value,
           std::uint64_t bytes) {
    std::lock_guard lock(mutex_);
    purge_locked();
    if (bytes > kCacheBytes) return;
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->owner == file.get() && it->key == key) {
        bytes_ -= it->bytes;
        lru_.erase(it);
        break;
      }
    }
    lru_.push_back(Entry{file, file.get(), key, std::any(std::move(value)), bytes});
    bytes_ += bytes;
    while (bytes_ > kCacheBytes && !lru_.empty()) {
      bytes_ -= lru_.front().bytes;
      lru_.pop_front();
    }
  }
  std::uint64_t bytes() {
    std::lock_guard lock(mutex_);
    purge_locked();
    return bytes_;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    lru_.clear();
    bytes_ = 0;
  }

 private:
  struct Entry {
    std::weak_ptr<const StackFile> file;
    const StackFile* owner;
    std::string key;
    std::any value;
    std::uint64_t bytes;
  };
  void purge_locked() {
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (it->file.expired()) {
        bytes_ -= it->bytes;
        it = lru_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::mutex mutex_;
  std::list<Entry> lru_;
  std::uint64_t bytes_ = 0;
};

void check_file(const std::shared_ptr<const StackFile>& file, const char* what) {
  if (!file) throw InvalidArgument(std::string(what) + ": no file-backed stack was given");
}

void check_stack(const StackFile& file, const char* what) {
  if (file.shape().ndim() != 3) {
    throw InvalidArgument(std::string(what) + " needs a 3D (z, y, x) stack; '" +
                          file.path().toStdString() + "' is " + file.shape().str());
  }
}

std::string side_key(bool xz, std::size_t index) {
  return (xz ? "xz " : "yz ") + std::to_string(index);
}

// Running totals of per-slab ROI measurements.
struct RoiMerge {
  std::uint64_t count = 0;
  double sum = 0, mean = 0, m2 = 0;
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  void add(const RoiStats& s) {
    if (s.count == 0) return;
    // Chan et al.: the spread of two groups from each one's count, mean and spread.
    const double n1 = double(count), n2 = double(s.count), n = n1 + n2;
    const double delta = s.mean - mean;
    m2 += s.std * s.std * n2 + delta * delta * n1 * n2 / n;
    mean += delta * n2 / n;
    count += s.count;
    sum += s.sum;
    min = std::min(min, s.min);
    max = std::max(max, s.max);
  }
};

}  // namespace

StackHistogram stack_histogram(const std::shared_ptr<const StackFile>& file, const Device& device,
                               int bins, const std::atomic<bool>* cancel,
                               const SlabProgress& progress) {
  check_file(file, "stack_histogram");
  const std::string key = "histogram " + std::to_string(bins);
  if (auto hit = PassCache::get().find<StackHistogram>(file, key)) {
    hit->cached = true;
    return *hit;
  }
  Params params{{"n_bins", double(bins)}};
  if (const std::optional<StackStats> st = file->known_stats()) {
    // The card's pass found the range: one pass of counts.
    if (!st->finite_range()) return StackHistogram{};
    params["minimum"] = st->min;
    params["maximum"] = st->max > st->min ? st->max : st->min + 1;
  }
  const std::unique_ptr<SlabSource> src = file->open();
  SlabSource* const inputs[] = {src.get()};
  const TiledOptions o = file_pass_options(device, cancel, progress);
  const Table t = run_tiled("histogram", inputs, nullptr, params, o);
  StackHistogram h;
  if (!t.empty()) {
    h.min = t(0, 0);
    h.max = t(t.size() - 1, 1);
    for (double c : t.column("count")) h.counts.push_back(std::uint64_t(c));
    for (double e : t.column("bin_start")) h.edges.push_back(e);
    h.edges.push_back(h.max);
  }
  PassCache::get().put(file, key, h, h.counts.size() * 16 + 64);
  return h;
}

RoiStats stack_roi_stats(const std::shared_ptr<const StackFile>& file, const Roi& roi,
                         const Device& device, const std::atomic<bool>* cancel,
                         const SlabProgress& progress, bool* cached) {
  check_file(file, "ROI statistics");
  if (cached) *cached = false;
  const Shape& s = file->shape();
  if (s.ndim() != 2 && s.ndim() != 3) {
    throw InvalidArgument("ROI statistics need a 2D or 3D image; '" + file->path().toStdString() +
                          "' is " + s.str());
  }
  if (roi.plane >= 0 && s.ndim() == 3) {
    // One slice: that plane alone (through the plane cache), measured as a one-slice stack.
    if (std::size_t(roi.plane) >= s.depth()) {
      throw InvalidArgument("ROI statistics: the ROI lies on slice " + std::to_string(roi.plane) +
                            " but '" + file->path().toStdString() + "' has " +
                            std::to_string(s.depth()) + " slices (0.." +
                            std::to_string(s.depth() - 1) + ")");
    }
    const HostArray plane = file->plane(std::size_t(roi.plane));
    Roi one = roi;
    one.plane = 0;
    const RoiStats r =
        measure_roi(Array::push(plane, device).reshape(Shape{1, s.height(), s.width()}), one);
    if (progress) progress(1, 1);
    return r;
  }
  const std::string key =
      "roi " + QJsonDocument(roi.to_json()).toJson(QJsonDocument::Compact).toStdString();
  if (auto hit = PassCache::get().find<RoiStats>(file, key)) {
    if (cached) *cached = true;
    return *hit;
  }
  RoiMerge m;
  RoiStats out;
  if (s.ndim() == 2) {
    // A 2D image's slabs are rows: only the rows of the ROI's box are read, each slab measured
    // with the ROI moved up by its first row (whole rows: the same pixels are inside).
    out.planes = 1;
    const QRect box = roi_box(roi, int(s.width()), int(s.height()));
    if (roi.kind == RoiKind::line) {
      throw InvalidArgument(
          "ROI statistics take a rectangle, ellipse or polygon; a line has no area (use its "
          "profile)");
    }
    const std::size_t first = box.isEmpty() ? 0 : std::size_t(box.y());
    const std::size_t last = box.isEmpty() ? 0 : std::size_t(box.y() + box.height());
    const std::size_t step = planes_per_slab(*file), total = (last - first + step - 1) / step;
    const std::unique_ptr<SlabSource> src = total ? file->open() : nullptr;
    HostArray buffer;
    for (std::size_t t = 0; t < total; ++t) {
      check_cancel(cancel, "the ROI statistics");
      const std::size_t from = first + t * step, to = std::min(last, from + step);
      if (!buffer.valid() || buffer.shape()[0] != to - from) {
        buffer = HostArray::empty(with_planes(s, to - from), file->dtype());
      }
      src->read(from, to, buffer.data());
      Roi moved = roi;
      moved.points.translate(0, -double(from));
      const RoiStats r = measure_roi(Array::push(buffer, device), moved);
      out.pixels += r.pixels;
      m.add(r);
      if (progress) progress(t + 1, total);
    }
    check_cancel(cancel, "the ROI statistics");
  }
  bool first = s.ndim() == 3;
  if (first)
    for_each_slab(*file, cancel, progress, "the ROI statistics",
                  [&](std::size_t, std::size_t, const HostArray& slab) {
                    const RoiStats r = measure_roi(Array::push(slab, device), roi);
                    if (first) {
                      out = r;  // pixels and planes per slab, scaled below
                      out.pixels = 0;
                      out.planes = 0;
                      first = false;
                    }
                    out.pixels += r.pixels;
                    out.planes += r.planes;
                    m.add(r);
                  });
  out.count = m.count;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  out.mean = m.count ? m.mean : nan;
  out.std = m.count ? std::sqrt(m.m2 / double(m.count)) : nan;
  out.min = m.count ? m.min : nan;
  out.max = m.count ? m.max : nan;
  out.sum = m.count ? m.sum : nan;
  PassCache::get().put(file, key, out, sizeof(RoiStats) + key.size());
  return out;
}

SidePlanes stack_side_planes(const std::shared_ptr<const StackFile>& file, std::size_t y,
                             std::size_t x, const std::atomic<bool>* cancel,
                             const SlabProgress& progress) {
  check_file(file, "the xz and yz planes");
  check_stack(*file, "the xz and yz planes");
  const Shape& s = file->shape();
  const std::size_t nz = s.depth(), ny = s.height(), nx = s.width(), e = size_of(file->dtype());
  if (y >= ny || x >= nx) {
    throw InvalidArgument("the xz and yz planes through x " + std::to_string(x) + ", y " +
                          std::to_string(y) + " are outside the " + s.str() + " stack in '" +
                          file->path().toStdString() + "'");
  }
  SidePlanes out;
  out.xz = cached_side_plane(file, true, y);
  out.yz = cached_side_plane(file, false, x);
  if (out.xz.valid() && out.yz.valid()) {
    out.cached = true;
    return out;
  }
  HostArray xz = HostArray::empty(Shape{nz, nx}, file->dtype());
  HostArray yz = HostArray::empty(Shape{ny, nz}, file->dtype());
  for_each_slab(*file, cancel, progress, "reading the xz and yz planes",
                [&](std::size_t from, std::size_t to, const HostArray& slab) {
                  const std::byte* src = slab.data();
                  for (std::size_t z = from; z < to; ++z) {
                    const std::byte* plane = src + (z - from) * ny * nx * e;
                    // One row of the plane into xz, one column into yz.
                    std::memcpy(xz.data() + z * nx * e, plane + y * nx * e, nx * e);
                    for (std::size_t r = 0; r < ny; ++r) {
                      std::memcpy(yz.data() + (r * nz + z) * e, plane + (r * nx + x) * e, e);
                    }
                  }
                });
  PassCache::get().put(file, side_key(true, y), xz, xz.bytes());
  PassCache::get().put(file, side_key(false, x), yz, yz.bytes());
  out.xz = xz;
  out.yz = yz;
  return out;
}

HostArray cached_side_plane(const std::shared_ptr<const StackFile>& file, bool xz,
                            std::size_t index) {
  if (!file) return {};
  return PassCache::get().find<HostArray>(file, side_key(xz, index)).value_or(HostArray{});
}

StackProjection stack_max_projection(const std::shared_ptr<const StackFile>& file,
                                     const Device& device, const std::atomic<bool>* cancel,
                                     const SlabProgress& progress) {
  check_file(file, "the maximum-intensity projection");
  check_stack(*file, "the maximum-intensity projection");
  if (auto hit = PassCache::get().find<HostArray>(file, "max z")) return {*hit, true};
  const std::unique_ptr<SlabSource> src = file->open();
  SlabSource* const inputs[] = {src.get()};
  const TiledOptions o = file_pass_options(device, cancel, progress);
  HostArraySink sink;
  run_tiled("maximum_z_projection", inputs, &sink, {}, o);
  const Shape& s = file->shape();
  // The fold's output is one plane; the view wants it as (height, width).
  HostArray image = HostArray::empty(Shape{s.height(), s.width()}, sink.array().dtype());
  std::memcpy(image.data(), sink.array().data(), image.bytes());
  PassCache::get().put(file, "max z", image, image.bytes());
  return {image, false};
}

namespace {

// Folds the planes [from, to) of a slab into the block copy: out(z/f, y/f, x/f) takes the
// maximum. A plain host loop, not a kernel: one compare per voxel of the slab just read, in
// memory order, costs less than reading and decoding that slab (the TIFF reader copies every
// byte once already), and it needs no device memory besides the copy the view renders. A 64 x
// 512 x 512 uint16 file: 49 ms to read, 55 ms to read and fold (test_ui_stack_passes logs it).
template <class T>
void fold_block_max(const HostArray& slab, std::size_t from, std::size_t to, std::size_t f,
                    HostArray& out) {
  const std::size_t ny = slab.shape()[1], nx = slab.shape()[2];
  const std::size_t oy = out.shape()[1], ox = out.shape()[2];
  const T* src = reinterpret_cast<const T*>(slab.data());
  T* dst = reinterpret_cast<T*>(out.data());
  for (std::size_t z = from; z < to; ++z) {
    for (std::size_t y = 0; y < ny; ++y) {
      const T* row = src + ((z - from) * ny + y) * nx;
      T* orow = dst + ((z / f) * oy + y / f) * ox;
      for (std::size_t bx = 0, x = 0; bx < ox; ++bx) {
        T m = orow[bx];
        for (const std::size_t end = std::min(nx, x + f); x < end; ++x) {
          if constexpr (std::is_floating_point_v<T>) {
            if (row[x] > m || std::isnan(m)) m = row[x];  // NaN only where all are NaN
          } else {
            m = std::max(m, row[x]);
          }
        }
        orow[bx] = m;
      }
    }
  }
}

template <class T>
void fill_lowest(HostArray& out) {
  T* p = reinterpret_cast<T*>(out.data());
  const T low = std::is_floating_point_v<T> ? std::numeric_limits<T>::quiet_NaN()
                                            : std::numeric_limits<T>::lowest();
  std::fill(p, p + out.elements(), low);
}

// Calls fn(T{}) with the C++ type of `t`.
template <class Fn>
void with_type(DType t, Fn fn) {
  switch (t) {
    case DType::u8:
      return fn(std::uint8_t{});
    case DType::i8:
      return fn(std::int8_t{});
    case DType::u16:
      return fn(std::uint16_t{});
    case DType::i16:
      return fn(std::int16_t{});
    case DType::u32:
      return fn(std::uint32_t{});
    case DType::i32:
      return fn(std::int32_t{});
    case DType::u64:
      return fn(std::uint64_t{});
    case DType::i64:
      return fn(std::int64_t{});
    case DType::f32:
      return fn(float{});
    case DType::f64:
      return fn(double{});
  }
}

std::size_t ceil_div(std::size_t a, std::size_t b) {
  return (a + b - 1) / b;
}

}  // namespace

std::size_t block_max_factor(const Shape& s, DType dtype, std::uint64_t bound_bytes) {
  if (s.ndim() != 3) {
    throw InvalidArgument("a block copy needs a 3D (z, y, x) stack; this one is " + s.str());
  }
  const std::uint64_t e = size_of(dtype);
  if (bound_bytes < e) {
    throw InvalidArgument("a block copy of at most " + std::to_string(bound_bytes) +
                          " bytes cannot hold one voxel of " + std::to_string(e) +
                          " bytes; give a bound of at least " + std::to_string(e));
  }
  const auto bytes = [&](std::size_t f) {
    return ceil_div(s.depth(), f) * ceil_div(s.height(), f) * ceil_div(s.width(), f) * e;
  };
  // The cube root gets close; the loop makes it exact (rounding and the ceilings).
  const double ratio =
      double(s.depth()) * double(s.height()) * double(s.width()) * double(e) / double(bound_bytes);
  std::size_t f = std::max<std::size_t>(1, std::size_t(std::floor(std::cbrt(ratio))));
  while (f > 1 && bytes(f - 1) <= bound_bytes) --f;
  while (bytes(f) > bound_bytes) ++f;
  return f;
}

std::uint64_t stack_volume_bound() {
  const std::uint64_t set = large_stack_policy().volume_bytes;
  // At least one voxel of the widest dtype, so that block_max_factor always finds an f.
  return set ? std::max<std::uint64_t>(set, 8) : kCacheBytes / 2;
}

StackVolume stack_block_max(const std::shared_ptr<const StackFile>& file, std::uint64_t bound_bytes,
                            const std::atomic<bool>* cancel, const SlabProgress& progress) {
  check_file(file, "the 3D view's block copy");
  check_stack(*file, "the 3D view's block copy");
  const Shape& s = file->shape();
  const std::size_t f = block_max_factor(s, file->dtype(), bound_bytes);
  const std::string key = "block max " + std::to_string(f);
  if (auto hit = PassCache::get().find<HostArray>(file, key)) return {*hit, f, true};
  HostArray out = HostArray::empty(
      Shape{ceil_div(s.depth(), f), ceil_div(s.height(), f), ceil_div(s.width(), f)},
      file->dtype());
  with_type(file->dtype(), [&](auto t) {
    using T = decltype(t);
    fill_lowest<T>(out);
    for_each_slab(*file, cancel, progress, "the 3D view's block copy",
                  [&](std::size_t from, std::size_t to, const HostArray& slab) {
                    fold_block_max<T>(slab, from, to, f, out);
                  });
  });
  PassCache::get().put(file, key, out, out.bytes());
  return {out, f, false};
}

std::uint64_t stack_pass_cache_bytes() {
  return PassCache::get().bytes();
}

std::uint64_t stack_pass_cache_limit() {
  return kCacheBytes;
}

void clear_stack_pass_cache() {
  PassCache::get().clear();
}

}  // namespace gpix::ui
