#pragma once
// The on-disk program cache: compiled device binaries keyed by a stable hash of everything
// that affects them (backend, device, driver, API version, source hash, defines). Each file
// holds its full key and a checksum, so a corrupt, truncated or foreign file is detected,
// ignored and overwritten, never trusted.
//
// Folder: config().cache_dir ($GPIX_CACHE_DIR, else $XDG_CACHE_HOME/gpix, else ~/.cache/gpix;
// docs/ENVIRONMENT.md).
// GPIX_NO_DISK_CACHE=1 turns the disk cache off.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpix::detail {

// FNV-1a, 64 bit: stable across runs, compilers and platforms (unlike std::hash).
std::uint64_t stable_hash(std::string_view data, std::uint64_t seed = 0xcbf29ce484222325ull);

// The folder, or an empty string when the disk cache is off.
std::string cache_dir();

// The binary stored under key, or nullopt (missing, unreadable, corrupt or foreign).
// *rejected is set when a file existed but was not valid.
std::optional<std::vector<char>> cache_load(const std::string& key, bool* rejected = nullptr);
// Stores atomically (temp file + rename). Failures are ignored: the cache is an optimisation.
bool cache_store(const std::string& key, const std::vector<char>& binary);
// The file a key maps to (for tests).
std::string cache_path(const std::string& key);

}  // namespace gpix::detail
