#include "kernel_bundle.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

#include "config.h"
#include "gpix/error.h"
#include "program_cache.h"

namespace gpix::detail {
namespace {

constexpr char kMagic[8] = {'G', 'P', 'I', 'X', 'K', 'B', '0', '1'};
// Entries start on 256-byte boundaries: cuModuleLoadData reads the image in place from the
// vector it is given, and aligned offsets keep a later mmap reader possible.
constexpr std::uint64_t kAlign = 256;

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

struct Reader {
  const std::string& s;
  std::size_t pos = 0;
  bool u64(std::uint64_t& v) {
    if (s.size() < pos + 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<std::uint64_t>(
               static_cast<unsigned char>(s[pos + static_cast<std::size_t>(i)]))
           << (8 * i);
    pos += 8;
    return true;
  }
  bool text(std::string& out, std::uint64_t n) {
    if (n > s.size() - pos) return false;
    out.assign(s, pos, n);
    pos += n;
    return true;
  }
};

std::string target_of(const std::string& key) {
  return key.substr(0, key.find('|'));
}

}  // namespace

void append_program_key(std::string& out, const ProgramSource& src, const Defines& defines) {
  out += src.hash;
  for (const auto& [k, v] : defines) {
    out += ';';
    out += k;
    out += '=';
    out += v;
  }
}

std::string program_key(const ProgramSource& src, const Defines& defines) {
  // Sized once and appended in place (one allocation, where ";" + k + "=" + v made temporaries
  // for each define).
  std::size_t n = src.hash.size();
  for (const auto& [k, v] : defines) n += k.size() + v.size() + 2;
  std::string key;
  key.reserve(n);
  append_program_key(key, src, defines);
  return key;
}

std::shared_ptr<const KernelBundle> KernelBundle::open(const std::string& path, std::string* why) {
  auto fail = [&](const std::string& w) -> std::shared_ptr<const KernelBundle> {
    if (why) *why = "the kernel bundle '" + path + "' " + w;
    return nullptr;
  };
  std::ifstream f(path, std::ios::binary);
  if (!f) return fail("cannot be opened");
  char head[16];
  if (!f.read(head, sizeof head) || std::memcmp(head, kMagic, sizeof kMagic) != 0) {
    return fail("is not a gpix kernel bundle (wrong magic)");
  }
  std::uint64_t index_bytes = 0;
  for (int i = 0; i < 8; ++i)
    index_bytes |= static_cast<std::uint64_t>(static_cast<unsigned char>(head[8 + i])) << (8 * i);
  std::error_code ec;
  const auto file_size = std::filesystem::file_size(path, ec);
  if (ec || index_bytes < 24 || index_bytes > file_size - sizeof head) {
    return fail("has a truncated index");
  }
  std::string index(index_bytes, '\0');
  if (!f.read(index.data(), static_cast<std::streamsize>(index_bytes))) {
    return fail("has a truncated index");
  }
  // The index ends with its own checksum.
  Reader tail{index, index_bytes - 8};
  std::uint64_t sum = 0;
  tail.u64(sum);
  if (sum != stable_hash(std::string_view(index).substr(0, index_bytes - 8))) {
    return fail("has a corrupt index (checksum)");
  }
  auto b = std::make_shared<KernelBundle>();
  b->path_ = path;
  Reader r{index};
  std::uint64_t count = 0, note_len = 0;
  if (!r.u64(count) || !r.u64(note_len) || !r.text(b->note_, note_len)) {
    return fail("has a corrupt index");
  }
  std::set<std::string> targets;
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t key_len = 0;
    std::string key;
    Entry e;
    if (!r.u64(key_len) || !r.text(key, key_len) || !r.u64(e.offset) || !r.u64(e.size) ||
        !r.u64(e.checksum) || e.offset > file_size || e.size > file_size - e.offset) {
      return fail("has a corrupt index entry");
    }
    targets.insert(target_of(key));
    b->entries_.emplace_back(std::move(key), e);
  }
  std::sort(b->entries_.begin(), b->entries_.end(),
            [](const auto& x, const auto& y) { return x.first < y.first; });
  b->targets_.assign(targets.begin(), targets.end());
  return b;
}

const KernelBundle::Entry* KernelBundle::entry(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const auto& e, std::string_view k) { return e.first < k; });
  return it != entries_.end() && it->first == key ? &it->second : nullptr;
}

bool KernelBundle::contains(std::string_view key) const {
  return entry(key) != nullptr;
}

std::optional<std::vector<char>> KernelBundle::find(std::string_view key) const {
  const Entry* e = entry(key);
  if (!e) return std::nullopt;
  std::ifstream f(path_, std::ios::binary);
  std::vector<char> out(e->size);
  if (!f || !f.seekg(static_cast<std::streamoff>(e->offset)) ||
      !f.read(out.data(), static_cast<std::streamsize>(out.size()))) {
    return std::nullopt;
  }
  if (stable_hash(std::string_view(out.data(), out.size())) != e->checksum) return std::nullopt;
  return out;
}

std::string KernelBundle::default_path() {
  const std::string& configured = config().kernel_bundle;
  if (configured == "off") return {};
  if (!configured.empty()) return configured;
  // Next to the library that holds this code: <libdir>/gpix/cuda-kernels.bin, in the build
  // tree and where it is installed alike (core/CMakeLists.txt puts it there).
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&program_key), &info) == 0 || !info.dli_fname) return {};
  return (std::filesystem::path(info.dli_fname).parent_path() / "gpix" / "cuda-kernels.bin")
      .string();
}

std::shared_ptr<const KernelBundle> KernelBundle::process_bundle() {
  static std::mutex mutex;
  static std::string opened_path;
  static bool tried = false;
  static std::shared_ptr<const KernelBundle> bundle;
  const std::string path = default_path();
  std::lock_guard lock(mutex);
  if (!tried || path != opened_path) {
    tried = true;
    opened_path = path;
    // A missing bundle is normal (a build without prebuilt kernels): programs compile as
    // before, and `gpix devices` says which bundle each CUDA device uses.
    bundle = path.empty() ? nullptr : open(path, nullptr);
  }
  return bundle;
}

void write_kernel_bundle(const std::string& path, std::string_view note,
                         const std::vector<std::pair<std::string, std::vector<char>>>& entries) {
  // Index size first (offsets depend on it): the same loop twice, the first for lengths.
  std::uint64_t index_bytes = 8 + 8 + note.size() + 8;
  for (const auto& [key, bin] : entries) index_bytes += 8 + key.size() + 24;
  std::uint64_t offset = (16 + index_bytes + kAlign - 1) / kAlign * kAlign;
  std::string index;
  put_u64(index, entries.size());
  put_u64(index, note.size());
  index.append(note);
  std::vector<std::uint64_t> offsets;
  for (const auto& [key, bin] : entries) {
    put_u64(index, key.size());
    index.append(key);
    put_u64(index, offset);
    put_u64(index, bin.size());
    put_u64(index, stable_hash(std::string_view(bin.data(), bin.size())));
    offsets.push_back(offset);
    offset = (offset + bin.size() + kAlign - 1) / kAlign * kAlign;
  }
  put_u64(index, stable_hash(index));
  std::string head(kMagic, sizeof kMagic);
  put_u64(head, index.size());

  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(head.data(), static_cast<std::streamsize>(head.size()));
    f.write(index.data(), static_cast<std::streamsize>(index.size()));
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto pad =
          static_cast<std::streamoff>(offsets[i]) - static_cast<std::streamoff>(f.tellp());
      for (std::streamoff p = 0; p < pad; ++p) f.put('\0');
      f.write(entries[i].second.data(), static_cast<std::streamsize>(entries[i].second.size()));
    }
    if (!f.flush()) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw IoError("cannot write the kernel bundle '" + tmp + "' (disk full or read-only?)", tmp);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw IoError("cannot move the kernel bundle into place at '" + path + "'", path);
  }
}

}  // namespace gpix::detail
