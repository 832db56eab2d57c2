#include "config.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace gpix::detail {
namespace {

// Set and not "0".
bool flag(const char* v) {
  return v && *v && std::string_view(v) != "0";
}

// A size in MB; fractions allowed ("0.25" is 256 KiB), so tests can make pieces small. An
// unset, unparsable or non-positive value keeps the fallback.
std::size_t mb(const char* v, std::size_t fallback) {
  if (!v || !*v) return fallback;
  const double m = std::strtod(v, nullptr);
  return m > 0 ? static_cast<std::size_t>(m * 1024 * 1024) : fallback;
}

// A positive count up to 4096; otherwise the fallback.
unsigned count(const char* v, unsigned fallback) {
  const long n = v && *v ? std::atol(v) : 0;
  return n > 0 ? static_cast<unsigned>(std::min(n, 4096L)) : fallback;
}

std::string text(const char* v) {
  return v ? std::string(v) : std::string();
}

}  // namespace

bool Config::workaround_disabled(std::string_view name) const {
  return std::any_of(disabled_workarounds.begin(), disabled_workarounds.end(),
                     [&](const std::string& w) { return w == name || w == "all"; });
}

Config Config::from(const std::function<const char*(const char*)>& get) {
  Config c;
  StagingConfig& s = c.staging;
  s.off = flag(get("GPIX_NO_STAGING"));
  s.min_bytes = mb(get("GPIX_STAGING_MIN_MB"), s.min_bytes);
  s.max_piece = mb(get("GPIX_STAGING_CHUNK_MB"), s.max_piece);
  s.per_worker = mb(get("GPIX_STAGING_WORKER_MB"), s.per_worker);
  // "0" (or any value <= 0) switches streamed pushes off; unset keeps the default.
  const char* km = get("GPIX_STAGING_KERNEL_MB");
  s.kernel_max = km && *km && std::strtod(km, nullptr) <= 0 ? 0 : mb(km, s.kernel_max);
  s.slice = mb(get("GPIX_STAGING_SLICE_MB"), 0);
  s.ring_bytes = mb(get("GPIX_STAGING_RING_MB"), s.ring_bytes);
  // hardware_concurrency() reads /sys/devices/system/cpu/online on every call (6 us here).
  static const unsigned cores = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  s.threads = count(get("GPIX_STAGING_THREADS"), cores);
  s.depth = count(get("GPIX_STAGING_DEPTH"), 0);
  s.pieces = count(get("GPIX_STAGING_PIECES"), 8);
  const char* nt = get("GPIX_STAGING_NT");
  s.streaming = nt && *nt ? (std::strcmp(nt, "0") == 0 ? 0 : 1) : -1;
  const char* spin = get("GPIX_STAGING_SPIN_US");
  s.spin = std::chrono::microseconds(spin && *spin ? std::max(0L, std::atol(spin)) : 50L);

  c.disable_fp64 = flag(get("GPIX_DISABLE_FP64"));
  c.test_fill_kernel = flag(get("GPIX_TEST_FILL_KERNEL"));
  c.no_disk_cache = flag(get("GPIX_NO_DISK_CACHE"));
  c.no_peer_copy = flag(get("GPIX_NO_PEER_COPY"));
  if (const char* d = get("GPIX_CACHE_DIR"); d && *d) {
    c.cache_dir = d;
  } else if (const char* x = get("XDG_CACHE_HOME"); x && *x) {
    c.cache_dir = std::string(x) + "/gpix";
  } else if (const char* h = get("HOME"); h && *h) {
    c.cache_dir = std::string(h) + "/.cache/gpix";
  }
  std::string_view list(get("GPIX_DISABLE_WORKAROUNDS") ? get("GPIX_DISABLE_WORKAROUNDS") : "");
  while (!list.empty()) {
    const auto comma = list.find(',');
    if (comma != 0) c.disabled_workarounds.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  c.cuda_library = text(get("GPIX_CUDA_LIBRARY"));
  c.nvrtc_path = text(get("GPIX_NVRTC_PATH"));
  c.cuda_path = text(get("CUDA_PATH"));
  c.kernel_bundle = text(get("GPIX_KERNEL_BUNDLE"));
  c.program_unit = text(get("GPIX_PROGRAM_UNIT"));
  c.program_cache_entries = count(get("GPIX_PROGRAM_CACHE_ENTRIES"), c.program_cache_entries);
  if (const char* tiered = get("GPIX_TIERED_COMPILE"); tiered && *tiered) {
    c.tiered_compile = std::string_view(tiered) == "0" ? 0 : 1;
  }
  if (const char* quick = get("GPIX_QUICK_BUILDS"); quick && *quick) {
    c.quick_builds = std::string_view(quick) != "0";
  }
  if (const char* pipe = get("GPIX_TILED_PIPELINE"); pipe && *pipe) {
    c.tiled_pipeline = std::string_view(pipe) == "0" ? 0 : 1;
  }
  if (const char* blocking = get("GPIX_CL_BLOCKING"); blocking && *blocking) {
    c.cl_blocking = std::string_view(blocking) == "0" ? 0 : 1;
  }
  if (const char* quiet = get("GPIX_TIER_QUIET_MS"); quiet && *quiet) {
    c.tier_quiet_ms = static_cast<unsigned>(std::clamp(std::atol(quiet), 0L, 60000L));
  }
  return c;
}

Config Config::from_environment() {
  return from([](const char* name) -> const char* { return std::getenv(name); });
}

Config& config_for_testing() {
  static Config c = Config::from_environment();
  return c;
}

const Config& config() {
  return config_for_testing();
}

}  // namespace gpix::detail
