#include "gpix/raw.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "gpix/error.h"
#include "io_shared.h"

namespace gpix::io {
namespace {

using detail::str;

std::filesystem::path sidecar_of(const std::filesystem::path& path) {
  return std::filesystem::path(path).concat(".json");
}

std::string hint(const std::filesystem::path& path) {
  return "give it a sidecar '" + str(sidecar_of(path).filename()) +
         "' with {\"shape\": [Z, Y, X], \"dtype\": \"uint16\"}, name it NAME_ZxYxX_DTYPE.raw "
         "(e.g. cells_32x256x256_u16.raw), or pass the shape and dtype (gpix --shape, --dtype)";
}

RawLayout make_layout(const std::filesystem::path& path, const std::vector<std::size_t>& dims,
                      const std::string& dtype_text) {
  std::string lower = dtype_text;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const auto dtype = parse_dtype(lower);
  if (!dtype) {
    throw IoError(
        "'" + str(path) + "': unknown dtype '" + dtype_text + "'; use one of " + dtype_names(),
        str(path));
  }
  try {
    return {Shape(std::span<const std::size_t>(dims)), *dtype};
  } catch (const InvalidArgument& e) {
    throw IoError("'" + str(path) + "': " + e.what() + "; " + hint(path), str(path));
  }
}

// The two keys of the sidecar. A sidecar is small and written by write_raw or by hand, so a
// pattern for each key is all the JSON this needs (gpix_io has no JSON library).
RawLayout from_sidecar(const std::filesystem::path& path, const std::filesystem::path& side,
                       const std::string& text) {
  static const std::regex shape_re(R"re("shape"\s*:\s*\[([^\]]*)\])re");
  static const std::regex dtype_re(R"re("dtype"\s*:\s*"([^"]*)")re");
  std::smatch shape_m, dtype_m;
  if (!std::regex_search(text, shape_m, shape_re) || !std::regex_search(text, dtype_m, dtype_re)) {
    throw IoError("the sidecar '" + str(side) + "' lacks \"shape\" or \"dtype\"; " + hint(path),
                  str(side));
  }
  std::vector<std::size_t> dims;
  std::stringstream list(shape_m[1].str());
  std::string item;
  while (std::getline(list, item, ',')) {
    const auto first = item.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) continue;
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
      v = std::stoull(item.substr(first), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" \t\r\n", first + used) != std::string::npos) {
      throw IoError("the sidecar '" + str(side) + "' has a shape entry '" + item +
                        "' that is not a whole number; " + hint(path),
                    str(side));
    }
    dims.push_back(static_cast<std::size_t>(v));
  }
  return make_layout(path, dims, dtype_m[1].str());
}

}  // namespace

RawLayout raw_layout(const std::filesystem::path& path) {
  const std::filesystem::path side = sidecar_of(path);
  if (std::ifstream f(side, std::ios::binary); f) {
    std::stringstream text;
    text << f.rdbuf();
    return from_sidecar(path, side, text.str());
  }
  static const std::regex name_re(R"(_(\d+(?:x\d+){0,2})_([A-Za-z0-9]+)\.raw$)", std::regex::icase);
  const std::string name = str(path.filename());
  std::smatch m;
  if (!std::regex_search(name, m, name_re)) {
    throw IoError("'" + name + "' does not say its shape and dtype; " + hint(path), str(path));
  }
  std::vector<std::size_t> dims;
  std::stringstream list(m[1].str());
  std::string item;
  while (std::getline(list, item, 'x')) dims.push_back(std::stoull(item));
  return make_layout(path, dims, m[2].str());
}

HostArray read_raw(const std::filesystem::path& path, const RawLayout& layout) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw IoError("cannot open '" + str(path) + "'", str(path));
  // The file's size is checked before the pixels are allocated: a sidecar may claim any shape
  // (fuzz_raw: 16 GB asked for a file of a few bytes).
  std::uint64_t need = size_of(layout.dtype);
  bool overflow = false;
  for (int axis = 0; axis < layout.shape.ndim(); ++axis) {
    const std::uint64_t n = layout.shape[axis];
    if (n != 0 && need > std::numeric_limits<std::uint64_t>::max() / n) overflow = true;
    need *= n;
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || overflow || size != need) {
    throw IoError("'" + str(path) + "' has " +
                      (ec ? "an unknown number of" : std::to_string(size)) + " bytes but a " +
                      layout.shape.str() + " " + std::string(name(layout.dtype)) + " image needs " +
                      (overflow ? "more than 2^64" : std::to_string(need)),
                  str(path));
  }
  HostArray h = HostArray::empty(layout.shape, layout.dtype);
  if (!f.read(reinterpret_cast<char*>(h.data()), static_cast<std::streamsize>(h.bytes()))) {
    throw IoError(
        "reading '" + str(path) + "' failed after " + std::to_string(f.gcount()) + " bytes",
        str(path));
  }
  return h;
}

HostArray read_raw(const std::filesystem::path& path) {
  return read_raw(path, raw_layout(path));
}

void write_raw(const std::filesystem::path& path, const HostArray& pixels) {
  if (!pixels.valid()) throw InvalidArgument("write_raw('" + str(path) + "') was given no pixels");
  // Into a temporary folder beside it, then moved into place: a failed write (a full disk)
  // truncated the file that was there.
  detail::TempFolder tmp(path);
  {
    std::ofstream f(tmp.file(), std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(pixels.data()),
            static_cast<std::streamsize>(pixels.bytes()));
    f.close();
    if (!f) {
      detail::fail(path, "cannot be written: " + std::string(std::strerror(errno)) +
                             " (disk full?); nothing was replaced");
    }
  }
  detail::write_raw_sidecar(path, sidecar_of(tmp.file()), pixels.shape(), pixels.dtype());
  tmp.commit();
}

namespace detail {

void write_raw_sidecar(const std::filesystem::path& raw, const std::filesystem::path& side,
                       const Shape& shape, DType dtype) {
  std::string dims;
  for (std::size_t d : shape.dims()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  std::ofstream s(side, std::ios::trunc);
  s << "{\n  \"shape\": [" << dims << "],\n  \"dtype\": \"" << name(dtype) << "\"\n}\n";
  s.close();  // checked after the flush: a full disk fails only there for a few bytes
  if (!s) throw IoError("cannot write the sidecar of '" + str(raw) + "' (disk full?)", str(side));
}

}  // namespace detail

}  // namespace gpix::io
