#include "program_cache.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "config.h"
#include "util.h"

namespace gpix::detail {
namespace {

constexpr char kMagic[8] = {'G', 'P', 'I', 'X', 'P', 'C', '0', '1'};

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool get_u64(const std::vector<char>& in, std::size_t& pos, std::uint64_t& v) {
  if (in.size() < pos + 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<std::uint64_t>(
             static_cast<unsigned char>(in[pos + static_cast<std::size_t>(i)]))
         << (8 * i);
  pos += 8;
  return true;
}

}  // namespace

std::uint64_t stable_hash(std::string_view data, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string cache_dir() {
  const Config& c = config();
  return c.no_disk_cache ? std::string() : c.cache_dir;
}

std::string cache_path(const std::string& key) {
  const std::string dir = cache_dir();
  if (dir.empty()) return {};
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin",
                static_cast<unsigned long long>(stable_hash(key)));
  return dir + "/" + name;
}

std::optional<std::vector<char>> cache_load(const std::string& key, bool* rejected) {
  if (rejected) *rejected = false;
  const std::string path = cache_path(key);
  if (path.empty()) return std::nullopt;
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::vector<char> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto reject = [&]() -> std::optional<std::vector<char>> {
    if (rejected) *rejected = true;
    return std::nullopt;
  };
  if (data.size() < sizeof kMagic || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    return reject();
  std::size_t pos = sizeof kMagic;
  std::uint64_t key_len = 0, bin_len = 0, checksum = 0;
  if (!get_u64(data, pos, key_len) || key_len > data.size() - pos) return reject();
  if (std::string_view(data.data() + pos, key_len) != key)
    return reject();  // a hash collision or foreign file
  pos += key_len;
  if (!get_u64(data, pos, bin_len) || bin_len != data.size() - pos - 8 || bin_len == 0)
    return reject();
  std::vector<char> binary(data.begin() + static_cast<std::ptrdiff_t>(pos),
                           data.begin() + static_cast<std::ptrdiff_t>(pos + bin_len));
  pos += bin_len;
  if (!get_u64(data, pos, checksum) ||
      checksum != stable_hash(std::string_view(binary.data(), binary.size()))) {
    return reject();
  }
  return binary;
}

bool cache_store(const std::string& key, const std::vector<char>& binary) {
  const std::string path = cache_path(key);
  if (path.empty() || binary.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (ec) return false;
  std::string out(kMagic, sizeof kMagic);
  put_u64(out, key.size());
  out += key;
  put_u64(out, binary.size());
  out.append(binary.data(), binary.size());
  put_u64(out, stable_hash(std::string_view(binary.data(), binary.size())));
  // A unique temp name per writer, then an atomic rename: readers never see half a file.
  const std::string tmp =
      path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f.write(out.data(), static_cast<std::streamsize>(out.size()));
    // Closed and checked here: a full disk may fail only the buffer's last flush, which the
    // destructor would ignore, and a short file would then be renamed into place.
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

}  // namespace gpix::detail
