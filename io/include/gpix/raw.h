#pragma once
// Raw files: pixels only, native byte order, z-y-x order (x fastest), no header. Their layout
// (shape and dtype) comes from the caller, as the CLI's --shape/--dtype give it, or from the
// file itself: a sidecar PATH.json {"shape": [Z, Y, X], "dtype": "uint16"} (what write_raw
// writes) or a name NAME_ZxYxX_DTYPE.raw (cells_32x256x256_u16.raw). The one implementation
// of raw files: the CLI and the gpix plugin both read through it. No ITK involved.
// Errors: IoError with the path, saying what was found and what would work.
#include <filesystem>

#include "gpix/dtype.h"
#include "gpix/host_array.h"
#include "gpix/shape.h"

namespace gpix::io {

struct RawLayout {
  Shape shape;
  DType dtype = DType::u8;
};

// The layout a raw file declares: its sidecar PATH.json, else its name.
RawLayout raw_layout(const std::filesystem::path& path);
// Reads a raw file of the given layout; its size must match exactly.
HostArray read_raw(const std::filesystem::path& path, const RawLayout& layout);
// Reads a raw file of the layout it declares (raw_layout).
HostArray read_raw(const std::filesystem::path& path);
// Writes the pixels and the sidecar PATH.json that read_raw(path) reads back.
void write_raw(const std::filesystem::path& path, const HostArray& pixels);

}  // namespace gpix::io
