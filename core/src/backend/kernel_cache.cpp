// DeviceImpl's in-memory program cache, in front of the disk cache (program_cache.h).
// Compiling takes from milliseconds (a cached binary) to seconds (NVRTC, PoCL), so the cache's
// lock covers only the map: the first request for a program makes its entry and compiles it
// without the lock; later requests for the same program wait for that entry's future (one
// compile, not one per thread), and requests for other programs go on at once.
#include <chrono>
#include <future>
#include <string>

#include "backend/backend.h"
#include "config.h"
#include "kernel_bundle.h"
#include "kernel_entry.h"
#include "program_cache.h"
#include "run_phase.h"

namespace gpix::detail {

const Kernel& DeviceImpl::kernel(const ProgramSource& src, std::string_view name,
                                 const Defines& defines) {
  // One program per entry where the backend compiles faster that way (kernel_entry.h): its
  // key names the entry, in memory and on disk.
  const bool one_entry = src.splittable && programs_per_entry();
  const std::string key =
      program_key(src, defines) + (one_entry ? "|entry=" + std::string(name) : std::string());
  std::shared_ptr<ProgramEntry> entry;
  std::promise<void> built;  // set by this thread where it makes the entry
  bool mine = false;
  std::function<void(const ProgramSource&, const Defines&)> hook;
  {
    std::lock_guard lock(cache_mutex_);
    auto it = programs_.find(key);
    if (it != programs_.end()) {
      ++counters_.memory_hits;
      entry = it->second;
    } else {
      entry = std::make_shared<ProgramEntry>();
      entry->built = built.get_future().share();
      programs_.emplace(key, entry);
      mine = true;
      hook = compile_hook_;
    }
  }
  if (mine) {
    try {
      // Everything that changes the binary is in the disk key.
      const std::string disk_key = std::string(gpix::name(info_.backend)) + "|" + info_.name + "|" +
                                   info_.compute_capability + "|" + info_.api_version + "|" +
                                   info_.driver_version + "|" + key;
      bool rejected = false, prebuilt_rejected = false;
      // The prebuilt bundle first: it ships with the library, so it is right for this build's
      // sources by construction (its keys hold their hashes), and it needs no disk write.
      std::unique_ptr<Program> program = load_prebuilt(key, &prebuilt_rejected);
      const bool prebuilt_hit = program != nullptr;
      bool disk_hit = false;
      if (!program) {
        if (auto bin = cache_load(disk_key, &rejected)) {
          program = load(*bin);
          if (program) {
            disk_hit = true;
          } else {
            rejected = true;
          }
        }
      }
      bool compiled = false, stored = false;
      if (!program) {
        const PhaseNote phase("compiling kernels");
        if (one_entry) {
          ProgramSource part = src;
          part.name = src.name + " (entry " + std::string(name) + ")";
          part.text = single_entry_source(src.text, name);
          if (hook) hook(part, defines);
          program = build(part, defines);
        } else {
          if (hook) hook(src, defines);
          program = build(src, defines);
        }
        compiled = true;
        stored = cache_store(disk_key, program->binary());
      }
      {
        std::lock_guard lock(cache_mutex_);
        counters_.prebuilt_hits += prebuilt_hit ? 1 : 0;
        counters_.prebuilt_rejected += prebuilt_rejected ? 1 : 0;
        counters_.disk_hits += disk_hit ? 1 : 0;
        counters_.disk_rejected += rejected ? 1 : 0;
        counters_.compiles += compiled ? 1 : 0;
        counters_.disk_writes += stored ? 1 : 0;
      }
      entry->program = std::move(program);
      built.set_value();
    } catch (...) {
      // A failed compile is not cached: the next request tries again (as it always did);
      // requests already waiting get this error.
      {
        std::lock_guard lock(cache_mutex_);
        auto it = programs_.find(key);
        if (it != programs_.end() && it->second == entry) programs_.erase(it);
      }
      built.set_exception(std::current_exception());
      throw;
    }
  } else {
    if (entry->built.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      const PhaseNote phase("compiling kernels");  // another thread builds it
      entry->built.wait();
    }
    entry->built.get();  // rethrows the compile error of the thread that compiled it
  }
  std::lock_guard lock(entry->kernels_mutex);
  auto kit = entry->kernels.find(name);
  if (kit == entry->kernels.end()) {
    kit = entry->kernels.emplace(std::string(name), entry->program->create_kernel(name)).first;
  }
  return *kit->second;
}

bool DeviceImpl::programs_per_entry() const {
  const std::string& unit = config().program_unit;
  if (unit == "entry") return true;
  if (unit == "file") return false;
  return prefers_programs_per_entry();
}

DeviceImpl::CacheCounters DeviceImpl::cache_counters() {
  std::lock_guard lock(cache_mutex_);
  return counters_;
}

void DeviceImpl::clear_memory_cache() {
  std::lock_guard lock(cache_mutex_);
  programs_.clear();
}

void DeviceImpl::set_compile_hook_for_testing(
    std::function<void(const ProgramSource&, const Defines&)> f) {
  std::lock_guard lock(cache_mutex_);
  compile_hook_ = std::move(f);
}

}  // namespace gpix::detail
