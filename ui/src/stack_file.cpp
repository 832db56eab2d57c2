#include "gpix/ui/stack_file.h"

#include <unistd.h>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QStandardPaths>
#include <algorithm>
#include <cmath>
#include <limits>
#include <list>
#include <map>

#include "gpix/array.h"
#include "gpix/error.h"

namespace gpix::ui {

namespace {

constexpr std::uint64_t kDefaultCache = 256ull << 20;
// Host memory one slab of a statistics pass or a save reads at a time.
constexpr std::uint64_t kHostSlab = 64ull << 20;

std::mutex& policy_mutex() {
  static std::mutex m;
  return m;
}
LargeStackPolicy& policy_store() {
  static LargeStackPolicy p;
  return p;
}
std::uint64_t& device_threshold() {
  static std::uint64_t t = 0;
  return t;
}

// The displayed planes of every StackFile, least recently used first out once their bytes pass
// the limit. A plane handed out stays valid after eviction (HostArray is shared).
class PlaneCache {
 public:
  static PlaneCache& get() {
    static PlaneCache c;
    return c;
  }
  HostArray find(const StackFile* owner, std::size_t z) {
    std::lock_guard lock(mutex_);
    const auto it = index_.find({owner, z});
    if (it == index_.end()) return {};
    lru_.splice(lru_.end(), lru_, it->second);  // most recent last
    return it->second->data;
  }
  void put(const StackFile* owner, std::size_t z, const HostArray& data) {
    std::lock_guard lock(mutex_);
    const std::uint64_t limit = limit_locked();
    if (data.bytes() > limit || index_.count({owner, z})) return;
    bytes_ += data.bytes();
    index_[{owner, z}] = lru_.insert(lru_.end(), Entry{owner, z, data});
    trim_locked(limit);
  }
  void drop(const StackFile* owner) {
    std::lock_guard lock(mutex_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (it->owner == owner) {
        bytes_ -= it->data.bytes();
        index_.erase({owner, it->z});
        it = lru_.erase(it);
      } else {
        ++it;
      }
    }
  }
  void trim() {
    std::lock_guard lock(mutex_);
    trim_locked(limit_locked());
  }
  std::uint64_t bytes() {
    std::lock_guard lock(mutex_);
    return bytes_;
  }

 private:
  struct Entry {
    const StackFile* owner;
    std::size_t z;
    HostArray data;
  };
  static std::uint64_t limit_locked() {
    std::lock_guard lock(policy_mutex());
    return policy_store().cache_bytes ? policy_store().cache_bytes : kDefaultCache;
  }
  void trim_locked(std::uint64_t limit) {
    while (bytes_ > limit && !lru_.empty()) {
      bytes_ -= lru_.front().data.bytes();
      index_.erase({lru_.front().owner, lru_.front().z});
      lru_.pop_front();
    }
  }
  std::mutex mutex_;
  std::list<Entry> lru_;
  std::map<std::pair<const StackFile*, std::size_t>, std::list<Entry>::iterator> index_;
  std::uint64_t bytes_ = 0;
};

std::uint64_t plane_bytes(const StackFile& f) {
  return f.planes() ? f.bytes() / f.planes() : 0;
}

// Planes per slab so that a slab takes at most `budget` bytes (at least one plane).
std::size_t planes_per_slab(const StackFile& f, std::uint64_t budget) {
  const std::uint64_t pb = std::max<std::uint64_t>(1, plane_bytes(f));
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(budget / pb, 1, f.planes()));
}

// The shape of planes [from, to) of `s`.
Shape slab_shape(const Shape& s, std::size_t n) {
  std::vector<std::size_t> d(s.dims().begin(), s.dims().end());
  d[0] = n;
  return Shape(std::span<const std::size_t>(d));
}

void check_cancel(const std::atomic<bool>* cancel, const char* what) {
  if (cancel && cancel->load()) throw Cancelled(std::string(what) + " was cancelled");
}

}  // namespace

LargeStackPolicy large_stack_policy() {
  std::lock_guard lock(policy_mutex());
  return policy_store();
}

void set_large_stack_policy(const LargeStackPolicy& policy) {
  {
    std::lock_guard lock(policy_mutex());
    policy_store() = policy;
  }
  PlaneCache::get().trim();
}

std::uint64_t default_large_stack_threshold(const Device& device) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  std::uint64_t t = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) / 4
                                          : std::uint64_t(2) << 30;
  if (device.valid()) t = std::min<std::uint64_t>(t, device.info().global_memory / 4);
  return t;
}

void set_large_stack_device(const Device& device) {
  const std::uint64_t t = default_large_stack_threshold(device);
  std::lock_guard lock(policy_mutex());
  device_threshold() = t;
}

std::uint64_t large_stack_threshold() {
  std::lock_guard lock(policy_mutex());
  if (policy_store().threshold_bytes) return policy_store().threshold_bytes;
  return device_threshold() ? device_threshold() : default_large_stack_threshold();
}

std::uint64_t plane_cache_bytes() {
  return PlaneCache::get().bytes();
}

std::uint64_t plane_cache_limit() {
  const LargeStackPolicy p = large_stack_policy();
  return p.cache_bytes ? p.cache_bytes : kDefaultCache;
}

StackFile::StackFile(QString path, QString format, Shape shape, DType dtype)
    : path_(std::move(path)), format_(std::move(format)), shape_(shape), dtype_(dtype) {}

StackFile::~StackFile() {
  PlaneCache::get().drop(this);
  if (temporary_) {
    QFile::remove(path_);
    QFile::remove(path_ + QStringLiteral(".json"));  // a raw file's sidecar
  }
}

HostArray StackFile::plane(std::size_t z) const {
  const bool stack = shape_.ndim() == 3;
  if (stack && z >= shape_.depth()) {
    throw InvalidArgument("plane " + std::to_string(z) + " is outside 0.." +
                          std::to_string(shape_.depth() - 1) + " of the " + shape_.str() +
                          " stack in '" + path_.toStdString() + "'");
  }
  if (!stack) z = 0;
  if (HostArray cached = PlaneCache::get().find(this, z); cached.valid()) return cached;
  HostArray out = stack ? HostArray::empty(Shape{shape_.height(), shape_.width()}, dtype_)
                        : HostArray::empty(shape_, dtype_);
  {
    std::lock_guard lock(read_mutex_);
    if (!reader_) reader_ = open();
    if (stack) {
      reader_->read(z, z + 1, out.data());
    } else {
      reader_->read(0, planes(), out.data());
    }
  }
  PlaneCache::get().put(this, z, out);
  return out;
}

std::optional<StackStats> StackFile::known_stats() const {
  std::unique_lock lock(stats_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return stats_;
}

StackStats StackFile::stats(const Device& device, const std::atomic<bool>* cancel,
                            const std::function<void(double)>& progress) const {
  std::lock_guard lock(stats_mutex_);
  if (stats_) return *stats_;
  stats_progress_ = 0;
  const LargeStackPolicy p = large_stack_policy();
  const std::uint64_t budget =
      p.slab_budget_bytes ? std::min(p.slab_budget_bytes, kHostSlab) : kHostSlab;
  const std::size_t step = planes_per_slab(*this, budget);
  const std::unique_ptr<SlabSource> src = open();
  StackStats s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  double sum = 0;  // of count x mean per slab
  HostArray buffer;
  for (std::size_t from = 0; from < planes(); from += step) {
    check_cancel(cancel, "the statistics of the stack");
    const std::size_t to = std::min(planes(), from + step);
    if (!buffer.valid() || buffer.shape()[0] != to - from) {
      buffer = HostArray::empty(slab_shape(shape_, to - from), dtype_);
    }
    src->read(from, to, buffer.data());
    const Stats st = gpix::stats(Array::push(buffer, device));
    s.count += st.count;
    s.nan_count += st.nan_count;
    if (st.count) {
      s.min = std::min(s.min, st.min.as_double());
      s.max = std::max(s.max, st.max.as_double());
      sum += st.mean * double(st.count);
    }
    const double f = double(to) / double(planes());
    stats_progress_ = f;
    if (progress) progress(f);
  }
  if (s.count == 0) s.min = s.max = std::nan("");
  s.mean = s.count ? sum / double(s.count) : std::nan("");
  stats_ = s;
  stats_progress_ = 1;
  return s;
}

QString result_folder() {
  static const QString folder = [] {
    QString base = QStandardPaths::writableLocation(QStandardPaths::CacheLocation);
    if (base.isEmpty()) base = QDir::temp().filePath(QStringLiteral("gpix"));
    return QDir(base).filePath(
        QStringLiteral("results/%1").arg(QCoreApplication::applicationPid()));
  }();
  QDir().mkpath(folder);
  return folder;
}

void remove_result_folder() {
  QDir(result_folder()).removeRecursively();
}

FileRunResult run_on_files(const std::string& name,
                           const std::vector<std::shared_ptr<StackFile>>& inputs,
                           const Params& params, const Device& device, const QString& result_stem,
                           const std::vector<double>& spacing, const std::vector<double>& origin,
                           const QString& unit, bool labels, const std::atomic<bool>* cancel,
                           const std::function<void(double)>& progress) {
  if (inputs.empty() || !inputs.front()) {
    throw InvalidArgument("run_on_files: '" + name + "' was given no file-backed input");
  }
  const TileInfo tile = tile_info(name);
  if (!tile.tileable) {
    throw InvalidArgument("'" + name + "' cannot run on the file-backed layer '" +
                          inputs.front()->path().toStdString() + "' (" +
                          inputs.front()->shape().str() +
                          ", read from its file in slabs): " + tile.reason +
                          ". Filters that tile run on it; crop or bin it to fit in memory for "
                          "this one");
  }
  std::vector<std::unique_ptr<SlabSource>> sources;
  std::vector<SlabSource*> ptrs;
  for (const auto& f : inputs) {
    sources.push_back(f->open());
    ptrs.push_back(sources.back().get());
  }
  TiledOptions o;
  o.devices = {device};
  o.budget_bytes = large_stack_policy().slab_budget_bytes;
  o.cancel = cancel;
  o.progress = progress;
  FileRunResult r;
  if (gpix::filter(name).output == OutputKind::table) {
    r.table = run_tiled(name, ptrs, nullptr, params, o);
    return r;
  }
  QString stem = result_stem;
  stem.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._=-]+")), QStringLiteral("_"));
  if (stem.isEmpty()) stem = QStringLiteral("result");
  const QDir dir(result_folder());
  QString path = dir.filePath(stem.left(80) + QStringLiteral(".tif"));
  for (int i = 2; QFile::exists(path); ++i) {
    path = dir.filePath(stem.left(80) + QStringLiteral("_%1.tif").arg(i));
  }
  {
    // Destroyed unfinished when the run throws (Cancel included): it leaves no file.
    std::unique_ptr<SlabSink> sink = inputs.front()->create(path, spacing, origin, unit, labels);
    run_tiled(name, ptrs, sink.get(), params, o);  // finishes the sink when it succeeds
  }
  r.file = inputs.front()->open_result(path);
  r.file->set_temporary(true);
  return r;
}

void stream_to(const StackFile& file, SlabSink& sink, const std::atomic<bool>* cancel,
               const std::function<void(double)>& progress) {
  const std::unique_ptr<SlabSource> src = file.open();
  sink.start(file.shape(), file.dtype());
  const std::size_t step = planes_per_slab(file, kHostSlab);
  HostArray buffer;
  for (std::size_t from = 0; from < file.planes(); from += step) {
    check_cancel(cancel, "saving the stack");
    const std::size_t to = std::min(file.planes(), from + step);
    if (!buffer.valid() || buffer.shape()[0] != to - from) {
      buffer = HostArray::empty(slab_shape(file.shape(), to - from), file.dtype());
    }
    src->read(from, to, buffer.data());
    sink.write(from, to, buffer.data());
    if (progress) progress(double(to) / double(file.planes()));
  }
  sink.finish();
}

}  // namespace gpix::ui
