#pragma once
// The prebuilt kernel bundle: every catalog program compiled at build time (by the
// gpix-prebuild-kernels tool, core/tools/) for the CUDA architectures the build was asked for,
// shipped as one file next to libgpix_core (<libdir>/gpix/cuda-kernels.bin). A CUDA device
// looks a program up here after its in-memory cache and before the disk cache, so the first
// call of a filter in a new process loads a cubin in about a millisecond instead of running
// NVRTC for half a second (issue 17's first-call target; figures in bench/RESULTS.md).
//
// The bundle is read lazily: its index on the first lookup, an entry's bytes when it is asked
// for. Each entry carries its full key and a checksum; a bundle that is missing, foreign,
// truncated or corrupt is a miss (the program is compiled as before and counted), never
// trusted. GPIX_KERNEL_BUNDLE names another file, or "off" for none.
//
// Keys: "<target>|<program key>", where the target is "sm_90" (a cubin) or "compute_90" (PTX
// the driver finishes) and the program key is program_key() below, the in-memory cache's key.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace gpix::detail {

// The in-memory program cache's key: the source's hash and its defines.
std::string program_key(const ProgramSource& src, const Defines& defines);
// The same text appended to out (a buffer reused across calls allocates nothing once it is
// large enough: the in-memory cache's lookup on every launch).
void append_program_key(std::string& out, const ProgramSource& src, const Defines& defines);

class KernelBundle {
 public:
  // Opens path and reads its index; nullptr with *why saying what is wrong.
  static std::shared_ptr<const KernelBundle> open(const std::string& path, std::string* why);
  // The process's bundle (GPIX_KERNEL_BUNDLE, else the file next to libgpix_core), opened on
  // first use and again only if the configured path changes; nullptr when there is none.
  static std::shared_ptr<const KernelBundle> process_bundle();
  // Where the process's bundle is looked for ("" when switched off).
  static std::string default_path();

  // The stored binary for key, or nullopt (absent, unreadable or failing its checksum).
  std::optional<std::vector<char>> find(std::string_view key) const;
  bool contains(std::string_view key) const;
  std::size_t size() const noexcept { return entries_.size(); }
  const std::string& path() const noexcept { return path_; }
  // The targets present ("sm_80", "sm_90", "compute_90"), sorted.
  const std::vector<std::string>& targets() const noexcept { return targets_; }
  // What built it (the tool's note: NVRTC version, architectures).
  const std::string& note() const noexcept { return note_; }

 private:
  struct Entry {
    std::uint64_t offset = 0, size = 0, checksum = 0;
  };
  std::string path_;
  std::string note_;
  std::vector<std::pair<std::string, Entry>> entries_;  // sorted by key
  std::vector<std::string> targets_;
  const Entry* entry(std::string_view key) const;
};

// Writes a bundle atomically (a temporary file, then a rename). Throws IOError.
void write_kernel_bundle(const std::string& path, std::string_view note,
                         const std::vector<std::pair<std::string, std::vector<char>>>& entries);

}  // namespace gpix::detail
