// libFuzzer target: one image file format through gpix::io::read. The bytes become a file
// with the format's extension (GPIX_FUZZ_EXT), because ITK picks its reader by name. The
// contract under test: a reader returns an image or throws gpix::Error; any other exception,
// a crash, a sanitizer report or a read that runs past libFuzzer's -timeout is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "gpix/error.h"
#include "gpix/io.h"

namespace {

const std::filesystem::path& input_path() {
  static const std::filesystem::path p = [] {
    auto dir = std::filesystem::temp_directory_path() /
               ("gpix-fuzz-" + std::to_string(static_cast<long>(getpid())));
    std::filesystem::create_directories(dir);
    return dir / (std::string("input") + GPIX_FUZZ_EXT);
  }();
  return p;
}

void read_with(const gpix::io::ReadOptions& o) {
  try {
    const gpix::io::Image img = gpix::io::read(input_path(), o);
    (void)img.pixels.bytes();
  } catch (const gpix::Error&) {
    // The expected way to refuse a file.
  }
}

}  // namespace

// Headers that declare more than this are refused before decoding (ReadOptions::max_bytes).
// Without it a few hundred bytes declaring a gigapixel arithmetic-coded progressive JPEG made
// libjpeg take 2.3 GB of coefficients beside the 1.2 GB image, past libFuzzer's 2 GB limit,
// before it met the damage (CI's bounded run of stop 42). Such a claim cannot be refused from
// the file's size: arithmetic coding can spend far less than a bit on a block of a flat image.
// OSS-Fuzz's libjpeg-turbo target skips images over 1 megapixel for the same reason; 64 MB
// still lets a reader decode 8192^2 bytes, and large reads run the same code as small ones.
constexpr std::uint64_t kMaxBytes = std::uint64_t{64} << 20;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream f(input_path(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  // The default policy, and the two that read multi-component and palette files another way.
  read_with({.max_bytes = kMaxBytes});
  read_with({.channels = gpix::io::Channels::split, .max_bytes = kMaxBytes});
  read_with({.channels = gpix::io::Channels::error,
             .channel = 0,
             .palette_indices = true,
             .max_bytes = kMaxBytes});
  return 0;
}
