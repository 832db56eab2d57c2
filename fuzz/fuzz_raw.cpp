// libFuzzer target: raw files and their sidecar. The first bytes up to a NUL are the sidecar
// PATH.json, the rest the pixels; read_raw must read them or throw gpix::Error.
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpix/error.h"
#include "gpix/raw.h"

namespace {

void put(const std::filesystem::path& p, const std::uint8_t* data, std::size_t size) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() /
             ("gpix-fuzz-raw-" + std::to_string(static_cast<long>(getpid())));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::uint8_t* nul = std::find(data, data + size, std::uint8_t{0});
  const auto sidecar = static_cast<std::size_t>(nul - data);
  const std::filesystem::path raw = dir / "input.raw";
  put(dir / "input.raw.json", data, sidecar);
  const std::size_t body = sidecar < size ? sidecar + 1 : size;
  put(raw, data + body, size - body);
  try {
    const gpix::HostArray h = gpix::io::read_raw(raw);
    (void)h.bytes();
  } catch (const gpix::Error&) {
  }
  return 0;
}
