#pragma once
// Running your own kernels on gpix arrays, and the program cache behind every kernel.
//
// A user kernel is written in gpix's dialect (kernels/dialect.h, prepended automatically), so
// one source runs on OpenCL and CUDA devices:
//
//   const char* src = R"(
//     GPIX_KERNEL void scale(GPIX_GLOBAL float* a, float f, gpix_index n) {
//       const gpix_index i = gpix_global_id(0);
//       if (i < n) a[i] *= f;
//     })";
//   gpix::execute(src, "scale", {a.elements()}, {a, 2.0f, std::uint64_t(a.elements())});
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "gpix/array.h"

namespace gpix {

// One kernel argument: an array (passed as a pointer to its first pixel) or a scalar of
// exactly the C type the kernel declares (int32_t for int, float for float, uint64_t for
// gpix_index/ulong, ...).
using KernelArgument =
    std::variant<Array, std::int32_t, std::uint32_t, std::int64_t, std::uint64_t, float, double>;

// -D definitions for the build, e.g. {{"T", "gpix_f32"}}.
using KernelDefines = std::vector<std::pair<std::string, std::string>>;

// Compiles source (cached in memory and on disk) and runs entry over `range` work-items
// (x, y, z: range[0] is the fastest axis, like gpix_global_id(0)); blocks until done. Read the
// work-item's position through the dialect's ids only (gpix_global_id and the rest), never the
// API's own (get_global_id, blockIdx): a range past the device's work-groups on y or z (CUDA:
// 65535 groups of 16 in 2D, of 8 in 3D) runs with that axis swapped with x, which only the
// dialect's ids undo (kernels/dialect.h, GPIX_GRID_SWAP).
// Throws CompileError with the build log, InvalidArgument for arrays of another device.
void execute(std::string_view source, std::string_view entry, std::vector<std::size_t> range,
             const std::vector<KernelArgument>& args, const KernelDefines& defines = {},
             const Device& device = default_device());

struct ProgramCacheStats {
  std::uint64_t memory_hits = 0;    // kernels found already built in this process
  std::uint64_t disk_hits = 0;      // programs loaded from the disk cache
  std::uint64_t compiles = 0;       // programs compiled from source
  std::uint64_t disk_rejected = 0;  // corrupt, truncated or foreign cache files ignored
  std::uint64_t disk_writes = 0;
  std::uint64_t prebuilt_hits = 0;      // programs loaded from the bundle shipped with gpix
  std::uint64_t prebuilt_rejected = 0;  // bundle entries the driver or checksum refused
  // Programs dropped from memory for the entry limit (GPIX_PROGRAM_CACHE_ENTRIES).
  std::uint64_t evictions = 0;
  // Fast kernels compiled in the background while a first call ran a plain one with
  // bit-identical results (GPIX_TIERED_COMPILE).
  std::uint64_t background_compiles = 0;
};
ProgramCacheStats program_cache_stats(const Device& device);
// Forgets the programs built in this process (the disk cache stays): for tests and for
// measuring cold and disk-cached start-up.
void clear_memory_program_cache(const Device& device);
// The disk cache folder ($GPIX_CACHE_DIR, $XDG_CACHE_HOME/gpix or ~/.cache/gpix), or an
// empty string when GPIX_NO_DISK_CACHE=1.
std::string program_cache_dir();

}  // namespace gpix
