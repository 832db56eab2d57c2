// DeviceImpl's in-memory program cache, in front of the disk cache (program_cache.h).
// Compiling takes from milliseconds (a cached binary) to seconds (NVRTC, PoCL), so the cache's
// lock covers only the map: the first request for a program makes its entry and compiles it
// without the lock; later requests for the same program wait for that entry's future (one
// compile, not one per thread), and requests for other programs go on at once.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "backend/backend.h"
#include "config.h"
#include "gpix/error.h"
#include "kernel_bundle.h"
#include "kernel_entry.h"
#include "program_cache.h"
#include "run_phase.h"

namespace gpix::detail {

namespace {

// A program that asks for float64 (GPIX_NEED_FP64) on a device without it (or with it switched
// off by GPIX_DISABLE_FP64) failed to build with the compiler's words, or built where the
// switch was meant to stand for such a device: refused here, typed, with what and why. Filters
// check their float64 needs first (require_dtype) with their own words; this catches the rest.
void refuse_missing_fp64(const DeviceInfo& info, const ProgramSource& src, std::string_view name,
                         const Defines& defines) {
  if (info.fp64 && !config().disable_fp64) return;
  for (const auto& [k, v] : defines) {
    if (k == "GPIX_NEED_FP64") {
      throw UnsupportedDType("kernel " + std::string(name) + " of " + src.name +
                             " computes in float64, but '" + info.name +
                             "' has no double precision" +
                             (info.fp64 ? " (disabled by GPIX_DISABLE_FP64)" : "") +
                             "; convert the image to float32 first or choose a device with fp64");
    }
  }
}

}  // namespace

DeviceImpl::KernelPtr DeviceImpl::built_kernel(const ProgramSource& src, std::string_view name,
                                               const Defines& defines, bool* compiling) {
  // program_request()'s key, composed in a buffer this thread keeps: a repeated call's lookup
  // allocates nothing (it made two strings a launch, bench_launch).
  thread_local std::string key;
  key.clear();
  append_request_key(key, src, name, defines);
  std::shared_ptr<ProgramEntry> entry;
  {
    std::lock_guard lock(cache_mutex_);
    auto it = programs_.find(std::string_view(key));
    if (it == programs_.end()) return nullptr;
    if (it->second->built.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      if (compiling) *compiling = true;
      return nullptr;
    }
    it->second->last_use = ++use_clock_;
    ++counters_.memory_hits;
    entry = it->second;
  }
  entry->built.get();  // a program, or the error its compile threw
  return kernel_of(entry, name);
}

DeviceImpl::ProgramRequest DeviceImpl::program_request(const ProgramSource& src,
                                                       std::string_view name,
                                                       const Defines& defines) const {
  ProgramRequest r;
  r.one_entry = src.splittable && programs_per_entry();
  if (r.one_entry) r.group = group_of(src, name);
  append_request_key(r.key, src, name, defines);
  return r;
}

void DeviceImpl::append_request_key(std::string& out, const ProgramSource& src,
                                    std::string_view name, const Defines& defines) const {
  append_program_key(out, src, defines);
  // One program per entry where the backend compiles faster that way (kernel_entry.h): its
  // key names the entry, in memory and on disk; a kernel of a program group names the group's
  // program by its first kernel.
  if (!src.splittable || !programs_per_entry()) return;
  const std::vector<std::string>* group = group_of(src, name);
  out += "|entry=";
  out += group ? std::string_view(group->front()) : name;
}

const std::vector<std::string>* DeviceImpl::group_of(const ProgramSource& src,
                                                     std::string_view name) {
  for (const auto& g : src.groups) {
    if (std::find(g.begin(), g.end(), name) != g.end()) return &g;
  }
  return nullptr;
}

std::string DeviceImpl::disk_key(const std::string& key) const {
  // Everything that changes the binary is in the disk key.
  return std::string(gpix::name(info_.backend)) + "|" + info_.name + "|" +
         info_.compute_capability + "|" + info_.api_version + "|" + info_.driver_version + "|" +
         key;
}

std::shared_ptr<DeviceImpl::ProgramEntry> DeviceImpl::claim(
    const std::string& key, bool* mine, std::vector<std::shared_ptr<ProgramEntry>>* dropped) {
  // Under cache_mutex_.
  *mine = false;
  auto it = programs_.find(key);
  if (it != programs_.end()) {
    it->second->last_use = ++use_clock_;
    return it->second;
  }
  auto entry = std::make_shared<ProgramEntry>();
  entry->built = entry->promise.get_future().share();
  entry->last_use = ++use_clock_;
  programs_.emplace(key, entry);
  *mine = true;
  // The least recently used built entries go (never one still compiling: its builder and
  // waiters hold it, and dropping it would only start a second compile of the same program).
  // A linear scan: this runs once per new program, next to a load or a compile.
  const std::size_t limit = std::max<std::size_t>(1, config().program_cache_entries);
  while (programs_.size() > limit) {
    auto oldest = programs_.end();
    for (auto p = programs_.begin(); p != programs_.end(); ++p) {
      if (p->second == entry) continue;
      if (p->second->built.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
      if (oldest == programs_.end() || p->second->last_use < oldest->second->last_use) oldest = p;
    }
    if (oldest == programs_.end()) break;  // every other entry is compiling
    dropped->push_back(std::move(oldest->second));
    programs_.erase(oldest);
    ++counters_.evictions;
  }
  return entry;
}

std::unique_ptr<DeviceImpl::Program> DeviceImpl::load_cached(const ProgramRequest& r) {
  bool rejected = false, prebuilt_rejected = false;
  // The prebuilt bundle first: it ships with the library, so it is right for this build's
  // sources by construction (its keys hold their hashes), and it needs no disk write.
  std::unique_ptr<Program> program = load_prebuilt(r.key, &prebuilt_rejected);
  const bool prebuilt_hit = program != nullptr;
  bool disk_hit = false;
  if (!program) {
    if (auto bin = cache_load(disk_key(r.key), &rejected)) {
      program = load(*bin);
      if (program) {
        disk_hit = true;
      } else {
        rejected = true;
      }
    }
  }
  std::lock_guard lock(cache_mutex_);
  counters_.prebuilt_hits += prebuilt_hit ? 1 : 0;
  counters_.prebuilt_rejected += prebuilt_rejected ? 1 : 0;
  counters_.disk_hits += disk_hit ? 1 : 0;
  counters_.disk_rejected += rejected ? 1 : 0;
  return program;
}

std::unique_ptr<DeviceImpl::Program> DeviceImpl::compile(const ProgramRequest& r,
                                                         const ProgramSource& src,
                                                         std::string_view name,
                                                         const Defines& defines, bool background,
                                                         bool quick) {
  // A foreground compile holds background ones back while it runs and for the quiet time
  // after it (wait_for_quiet_compiler).
  struct Activity {
    DeviceImpl* d;
    explicit Activity(DeviceImpl* dev) : d(dev) {
      if (!d) return;
      std::lock_guard lock(d->quiet_mutex_);
      ++d->foreground_compiles_;
    }
    ~Activity() {
      if (!d) return;
      {
        std::lock_guard lock(d->quiet_mutex_);
        --d->foreground_compiles_;
        d->last_activity_ = std::chrono::steady_clock::now();
      }
      d->quiet_cv_.notify_all();
      note_build_for_exit_handler(d);
    }
    Activity(const Activity&) = delete;
    Activity& operator=(const Activity&) = delete;
  } activity(background ? nullptr : this);
  std::function<void(const ProgramSource&, const Defines&)> hook;
  {
    std::lock_guard lock(cache_mutex_);
    hook = compile_hook_;
  }
  std::unique_ptr<Program> program;
  {
    const PhaseNote phase("compiling kernels");
    if (r.one_entry) {
      ProgramSource part = src;
      if (r.group) {
        part.name = src.name + " (entries";
        for (const std::string& e : *r.group) part.name += " " + e;
        part.name += ")";
        part.text = entries_source(src.text, *r.group);
      } else {
        part.name = src.name + " (entry " + std::string(name) + ")";
        part.text = single_entry_source(src.text, name);
      }
      // Named so in its build log and error, and to the test hook.
      if (quick) part.name += " (quick build)";
      if (hook) hook(part, defines);
      program = quick ? build_quick(part, defines) : build(part, defines);
    } else {
      if (hook) hook(src, defines);
      program = quick ? build_quick(src, defines) : build(src, defines);
    }
  }
  if (!program) return nullptr;  // no quick build here
  // A quick program is not stored: the disk keeps the full build, which replaces it.
  const bool stored = !quick && cache_store(disk_key(r.key), program->binary());
  std::lock_guard lock(cache_mutex_);
  ++(quick ? counters_.quick_compiles : counters_.compiles);
  counters_.disk_writes += stored ? 1 : 0;
  return program;
}

void DeviceImpl::settle(ProgramEntry& entry, std::unique_ptr<Program> program) {
  entry.program = std::move(program);
  entry.promise.set_value();
}

void DeviceImpl::settle_failed(const std::string& key, const std::shared_ptr<ProgramEntry>& entry,
                               std::exception_ptr error) {
  // A failed compile is not cached: the next request tries again (as it always did);
  // requests already waiting get this error.
  {
    std::lock_guard lock(cache_mutex_);
    auto it = programs_.find(key);
    if (it != programs_.end() && it->second == entry) programs_.erase(it);
  }
  entry->promise.set_exception(std::move(error));
}

DeviceImpl::KernelPtr DeviceImpl::kernel_of(const std::shared_ptr<ProgramEntry>& entry,
                                            std::string_view name) {
  std::lock_guard lock(entry->kernels_mutex);
  auto kit = entry->kernels.find(name);
  if (kit == entry->kernels.end()) {
    std::unique_ptr<Kernel> k = entry->program->create_kernel(name);
    if (entry->upgrade) {
      // The entry outlives the call: the caller holds this kernel, which the entry owns.
      k->full = [this, e = entry.get(), n = std::string(name)]() -> KernelPtr {
        const std::shared_ptr<ProgramEntry> f = upgrade(*e, false);
        return f ? kernel_of(f, n) : nullptr;
      };
    }
    kit = entry->kernels.emplace(std::string(name), std::move(k)).first;
  }
  // Shares the entry's ownership: the program outlives every launch through this pointer.
  return KernelPtr(entry, kit->second.get());
}

DeviceImpl::KernelPtr DeviceImpl::kernel(const ProgramSource& src, std::string_view name,
                                         const Defines& defines) {
  if (KernelPtr k = built_kernel(src, name, defines)) return k;
  refuse_missing_fp64(info_, src, name, defines);
  const ProgramRequest r = program_request(src, name, defines);
  std::shared_ptr<ProgramEntry> entry;
  std::vector<std::shared_ptr<ProgramEntry>> dropped;  // released after the lock
  bool mine = false;
  {
    std::lock_guard lock(cache_mutex_);
    entry = claim(r.key, &mine, &dropped);
    if (!mine) ++counters_.memory_hits;
  }
  dropped.clear();
  if (mine) {
    bool quick = false;
    try {
      std::unique_ptr<Program> program = load_cached(r);
      if (!program && quick_build_applies(r)) {
        program = compile(r, src, name, defines, false, true);
        quick = program != nullptr;
        if (quick) {
          auto up = std::make_unique<ProgramEntry::Upgrade>();
          up->key = r.key;
          up->build = [this, r, src, n = std::string(name), defines](bool background) {
            return compile(r, src, n, defines, background);
          };
          entry->upgrade = std::move(up);
        }
      }
      if (!program) program = compile(r, src, name, defines);
      settle(*entry, std::move(program));
    } catch (...) {
      settle_failed(r.key, entry, std::current_exception());
      throw;
    }
    if (quick) {
      // The full build follows in the background and takes the quick program's place. No
      // thread to be had: the quick program stays, which gives the same results, slower.
      const auto quiet = std::chrono::milliseconds(config().tier_quiet_ms);
      try {
        start_background([this, entry, quiet] {
          // The device going away first: no upgrade, the quick program stays.
          if (!wait_for_quiet_compiler(quiet)) return;
          stop_background_compiles_at_exit();
          (void)upgrade(*entry, true);
          note_build_for_exit_handler(this);
        });
      } catch (const std::system_error&) {
        std::lock_guard lock(cache_mutex_);
        ++counters_.upgrade_failures;
      }
    }
  } else {
    if (entry->built.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      const PhaseNote phase("compiling kernels");  // another thread builds it
      entry->built.wait();
    }
    entry->built.get();  // rethrows the compile error of the thread that compiled it
  }
  return kernel_of(entry, name);
}

DeviceImpl::KernelPtr DeviceImpl::kernel_if_ready(const ProgramSource& src, std::string_view name,
                                                  const Defines& defines) {
  // Only one-entry programs: a plain kernel built with its whole file is no quicker (CUDA
  // without the bundle: a first Gaussian 1028 ms waiting, 1592 ms tiered, bench/RESULTS.md).
  // Tiered or not (tiered_now()) is decided before the request's key is built: kernel()
  // builds its own (a repeated call's allocations, bench_launch).
  if (!src.splittable || !programs_per_entry() || !tiered_now()) {
    return kernel(src, name, defines);
  }
  // While the fast program compiles in the background every call runs the plain kernel; that
  // is known from the same lookup, so that those calls allocate nothing either (on NVIDIA's
  // OpenCL a tiled pass's program takes 200-400 ms, test_core_allocations' warm-up less).
  bool compiling = false;
  if (KernelPtr k = built_kernel(src, name, defines, &compiling)) return k;
  if (compiling) return nullptr;
  refuse_missing_fp64(info_, src, name, defines);
  const ProgramRequest r = program_request(src, name, defines);
  std::shared_ptr<ProgramEntry> entry;
  std::vector<std::shared_ptr<ProgramEntry>> dropped;
  bool mine = false;
  bool failed_before = false;
  {
    std::lock_guard lock(cache_mutex_);
    auto it = programs_.find(r.key);
    if (it != programs_.end() &&
        it->second->built.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      return nullptr;  // compiling, here or in the background
    }
    // A background compile of this program failed: compile it here, so that the caller gets
    // the error rather than the plain kernel for ever.
    failed_before = it == programs_.end() && background_failed_.erase(r.key) > 0;
    if (!failed_before) {
      entry = claim(r.key, &mine, &dropped);
      if (!mine) ++counters_.memory_hits;
    }
  }
  if (failed_before) return kernel(src, name, defines);
  dropped.clear();
  if (!mine) {
    entry->built.get();  // ready: a program, or (an entry failing just now) its error
    return kernel_of(entry, name);
  }
  std::unique_ptr<Program> program;
  try {
    program = load_cached(r);
  } catch (...) {
    settle_failed(r.key, entry, std::current_exception());
    throw;
  }
  if (program) {
    settle(*entry, std::move(program));
    return kernel_of(entry, name);
  }
  // Nothing to load: the compile goes to a background thread, which owns the claimed entry.
  // The source is copied (a user's source may not outlive this call); the device outlives
  // the thread (release_resources() stops it). It starts once the compiler has been quiet
  // for a while: the caller is about to build its plain kernel, and NVIDIA's OpenCL builds one
  // program at a time in a process (a first median took 236 ms with its fast program building
  // beside the plain one's against 225 waiting, and the next filter's first build waited
  // behind it; bench/RESULTS.md). This request counts as activity, so that the caller's build
  // starts first.
  {
    std::lock_guard lock(cache_mutex_);
    ++counters_.background_compiles;
  }
  const auto quiet = std::chrono::milliseconds(config().tier_quiet_ms);
  try {
    start_background([this, r, src, n = std::string(name), defines, entry, quiet] {
      background_compile(r, src, n, defines, entry, quiet);
    });
  } catch (...) {
    // No thread to be had: the entry must not stay claimed for ever.
    settle_failed(r.key, entry, std::current_exception());
    throw;
  }
  return nullptr;
}

bool DeviceImpl::tiered_now() {
  // By default only on GPUs: the background compile runs beside the plain kernel's, and PoCL
  // 3.1 aborts the process when two programs build at once in a fresh process (CI's
  // test_diff_scipy and test_io_cli, `gpix run median_box`).
  const int tiers = config().tiered_compile;
  if (!(tiers > 0 || (tiers < 0 && info_.type == DeviceType::gpu))) return false;
  std::lock_guard lock(quiet_mutex_);
  return !releasing_;
}

bool DeviceImpl::quick_build_applies(const ProgramRequest& r) {
  // One-entry programs only, as tiers: a whole file's quick build still builds every kernel.
  return config().quick_builds && r.one_entry && tiered_now();
}

void DeviceImpl::start_background(std::function<void()> job) {
  // The request counts as compiler activity, so that the caller's own build starts first.
  {
    std::lock_guard lock(quiet_mutex_);
    last_activity_ = std::chrono::steady_clock::now();
  }
  note_background_work(this);
  stop_background_compiles_at_exit();
  std::lock_guard lock(background_mutex_);
  std::erase_if(background_, [](std::future<void>& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  background_.push_back(std::async(std::launch::async, std::move(job)));
}

std::shared_ptr<DeviceImpl::ProgramEntry> DeviceImpl::upgrade(ProgramEntry& quick,
                                                              bool background) {
  ProgramEntry::Upgrade& up = *quick.upgrade;
  std::lock_guard up_lock(up.mutex);  // held while building: a second asker waits for it
  if (up.full || up.failed) return up.full;
  auto full = std::make_shared<ProgramEntry>();
  full->built = full->promise.get_future().share();
  try {
    settle(*full, up.build(background));
  } catch (...) {
    // The quick build of the same text succeeded, so this is the compiler's own failure (out
    // of memory, say); the quick program gives the same results and stays. Counted, not
    // thrown: the program works, only slower.
    up.failed = true;
    std::lock_guard lock(cache_mutex_);
    ++counters_.upgrade_failures;
    return nullptr;
  }
  up.full = full;
  std::shared_ptr<ProgramEntry> old;  // released after the lock
  std::lock_guard lock(cache_mutex_);
  ++counters_.upgrades;
  auto it = programs_.find(up.key);
  if (it != programs_.end() && it->second.get() == &quick) {
    full->last_use = it->second->last_use;
    old = std::exchange(it->second, full);
  }
  return full;
}

void DeviceImpl::background_compile(const ProgramRequest& r, const ProgramSource& src,
                                    const std::string& name, const Defines& defines,
                                    const std::shared_ptr<ProgramEntry>& entry,
                                    std::chrono::milliseconds quiet) {
  if (!wait_for_quiet_compiler(quiet)) {
    // The device is going away (or the process is exiting) before the compile began: none
    // starts now. Not recorded as a failure: a later request compiles as if none was made.
    settle_failed(r.key, entry,
                  std::make_exception_ptr(Error(
                      "the background compile of " + src.name + " (" + name +
                      ") did not start: its device was released first; ask for the kernel again")));
    return;
  }
  stop_background_compiles_at_exit();
  try {
    settle(*entry, compile(r, src, name, defines, true));
    note_build_for_exit_handler(this);
  } catch (...) {
    // Not reported here: the next request for the program compiles it again in the
    // foreground and throws the error to its caller.
    {
      std::lock_guard failed_lock(cache_mutex_);
      background_failed_.insert(r.key);
    }
    settle_failed(r.key, entry, std::current_exception());
  }
}

bool DeviceImpl::wait_for_quiet_compiler(std::chrono::milliseconds quiet) {
  std::unique_lock lock(quiet_mutex_);
  while (!releasing_ && flushes_ == 0) {
    if (foreground_compiles_ > 0) {
      quiet_cv_.wait(lock);
      continue;
    }
    const auto until = last_activity_ + quiet;
    if (std::chrono::steady_clock::now() >= until) break;
    quiet_cv_.wait_until(lock, until);
  }
  return !releasing_;
}

void DeviceImpl::wait_for_background_compiles() {
  {
    std::lock_guard lock(quiet_mutex_);
    ++flushes_;
  }
  quiet_cv_.notify_all();
  std::vector<std::future<void>> pending;
  {
    std::lock_guard lock(background_mutex_);
    pending.swap(background_);
  }
  for (auto& f : pending) f.wait();
  std::lock_guard lock(quiet_mutex_);
  --flushes_;
}

void DeviceImpl::stop_background_compiles() {
  {
    std::lock_guard lock(quiet_mutex_);
    releasing_ = true;
  }
  quiet_cv_.notify_all();
  std::vector<std::future<void>> pending;
  {
    std::lock_guard lock(background_mutex_);
    pending.swap(background_);
  }
  for (auto& f : pending) f.wait();
}

// Devices with background compiles, and the process's exit. A compile that starts while the
// process exits runs into compilers whose own static objects are already destroyed (PoCL's
// clang segfaulted so in `gpix run` when the waiting compile started at the device's
// teardown; test_core_stats on NVIDIA's OpenCL so after its last test, when stats_final's
// compile, queued moments before, came out of its quiet time during the exit). So at exit no
// waiting compile starts, and the running ones finish first: a handler registered with
// atexit(), which runs handlers in reverse order of registration, so it must be registered
// after the compiler's statics are made. Those come with the process's first build, which may
// be the plain kernel's right after the fast one was queued: the handler is registered when a
// background compile is queued or starts, and again after each foreground build on a device
// with background work, where a build has run since the last registration.
// Two locks: the handler holds g_background_mutex while it waits for the running compiles, so
// what those compiles take on their way (registering the handler, noting a build) is under
// g_exit_mutex only; with one lock a compile that ended during the exit waited for the handler
// that waited for it (a fresh clone's CI hung there for 5 minutes).
namespace {
std::mutex g_background_mutex;
std::mutex g_exit_mutex;
bool g_build_since_exit_handler = true;  // under g_exit_mutex
int g_exit_handlers = 0;                 // under g_exit_mutex
std::set<DeviceImpl*>& background_devices() {
  static auto* devices = new std::set<DeviceImpl*>;  // used at exit: never destroyed
  return *devices;
}
void stop_all_background_compiles() {
  std::lock_guard lock(g_background_mutex);
  for (DeviceImpl* d : background_devices()) d->stop_background_compiles();
  background_devices().clear();
}
}  // namespace

void DeviceImpl::note_background_work(DeviceImpl* d) {
  d->had_background_work_ = true;
  std::lock_guard lock(g_background_mutex);
  background_devices().insert(d);
}

void DeviceImpl::forget_background_work(DeviceImpl* d) {
  std::lock_guard lock(g_background_mutex);
  background_devices().erase(d);
}

void DeviceImpl::stop_background_compiles_at_exit() {
  std::lock_guard lock(g_exit_mutex);
  // Bounded: one registration per build at most, and builds are few; the cap only keeps a
  // process that builds without end from growing the handler list without end.
  if (!g_build_since_exit_handler || g_exit_handlers >= 4096) return;
  if (std::atexit(stop_all_background_compiles) == 0) ++g_exit_handlers;
  g_build_since_exit_handler = false;
}

void DeviceImpl::note_build_for_exit_handler(DeviceImpl* d) {
  {
    std::lock_guard lock(g_exit_mutex);
    g_build_since_exit_handler = true;
  }
  if (d->had_background_work_) stop_background_compiles_at_exit();
}

bool DeviceImpl::programs_per_entry() const {
  const std::string& unit = config().program_unit;
  if (unit == "entry") return true;
  if (unit == "file") return false;
  return prefers_programs_per_entry();
}

bool DeviceImpl::tiled_pipeline() const {
  const int c = config().tiled_pipeline;
  return c < 0 ? prefers_tiled_pipeline() : c == 1;
}

DeviceImpl::CacheCounters DeviceImpl::cache_counters() {
  std::lock_guard lock(cache_mutex_);
  return counters_;
}

std::size_t DeviceImpl::programs_in_memory() {
  std::lock_guard lock(cache_mutex_);
  return programs_.size();
}

void DeviceImpl::clear_memory_cache() {
  std::map<std::string, std::shared_ptr<ProgramEntry>, std::less<>> dropped;  // after the lock
  std::lock_guard lock(cache_mutex_);
  // Entries still compiling stay: their builders fill them.
  for (auto it = programs_.begin(); it != programs_.end();) {
    if (it->second->built.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      dropped.insert(programs_.extract(it++));
    } else {
      ++it;
    }
  }
}

void DeviceImpl::set_compile_hook_for_testing(
    std::function<void(const ProgramSource&, const Defines&)> f) {
  std::lock_guard lock(cache_mutex_);
  compile_hook_ = std::move(f);
}

}  // namespace gpix::detail
