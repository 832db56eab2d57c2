// User kernels (gpix/kernel.h) and the program cache's public face.
#include <map>
#include <mutex>

#include "detail.h"
#include "filters/launch.h"
#include "gpix/error.h"
#include "gpix/kernel.h"
#include "program_cache.h"
#include "programs.h"
#include "util.h"

namespace gpix {

void execute(std::string_view source, std::string_view entry, std::vector<std::size_t> range,
             const std::vector<KernelArgument>& args, const KernelDefines& defines,
             const Device& device) {
  auto& dev = detail::Access::impl(device);
  if (range.empty() || range.size() > 3) {
    throw InvalidArgument("execute: the range needs 1 to 3 extents (x, y, z); got " +
                          std::to_string(range.size()));
  }
  // The dialect is prepended exactly as for gpix's own kernels.
  detail::ProgramSource src;
  src.name = "user kernel '" + std::string(entry) + "'";
  src.text = detail::dialect_text() + "\n#line 1\n" + std::string(source);
  src.hash = "user-" + std::to_string(detail::stable_hash(src.text));
  detail::Defines d(defines.begin(), defines.end());
  for (const auto& a : args) {
    if (const Array* arr = std::get_if<Array>(&a); arr && arr->dtype() == DType::f64) {
      d.emplace_back("GPIX_NEED_FP64", "1");
      break;
    }
  }
  detail::Launch l;
  l.dims = static_cast<int>(range.size());
  for (std::size_t i = 0; i < range.size(); ++i) {
    if (range[i] == 0) throw InvalidArgument("execute: range extents must be at least 1");
    l.local[i] = i == 0 ? (range.size() == 1 ? 256 : (range.size() == 2 ? 16 : 8))
                        : (range.size() == 2 ? 16 : 8);
    l.global[i] = detail::round_up(range[i], l.local[i]);
  }
  // A tall range runs as gpix's own kernels do past CUDA's grid limits (filters/launch.h).
  const auto [k, grid] = detail::kernel_for_grid(dev, src, entry, d, l);
  std::vector<detail::KernelArg> kargs;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::visit(
        [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<V, Array>) {
            if (!(v.device() == device)) {
              throw InvalidArgument("execute: argument " + std::to_string(i) + " lives on '" +
                                    v.device().label() + "', not on '" + device.label() + "'");
            }
            if (!v.is_contiguous()) {
              // A kernel gets the allocation's start and no pitches: it would read padding
              // (or the wrong pixels of a region view) as data.
              throw InvalidArgument("execute: argument " + std::to_string(i) + " is a " +
                                    (v.kind() == MemoryKind::image ? "image object"
                                     : v.is_view()                 ? "region view"
                                                                   : "padded array") +
                                    "; kernels take contiguous buffers: pass a.to_buffer()");
            }
            kargs.push_back(detail::KernelArg::mem(*detail::Access::impl(v).memory));
          } else {
            kargs.push_back(detail::KernelArg::scalar(v));
          }
        },
        args[i]);
  }
  dev.launch(*k, grid, kargs);
  dev.finish();
}

ProgramCacheStats program_cache_stats(const Device& device) {
  const auto c = detail::Access::impl(device).cache_counters();
  return {c.memory_hits,   c.disk_hits,         c.compiles,  c.disk_rejected,      c.disk_writes,
          c.prebuilt_hits, c.prebuilt_rejected, c.evictions, c.background_compiles};
}

void clear_memory_program_cache(const Device& device) {
  detail::Access::impl(device).clear_memory_cache();
}

std::string program_cache_dir() {
  return detail::cache_dir();
}

}  // namespace gpix
