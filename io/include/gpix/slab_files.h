#pragma once
// Image files read and written plane by plane (z slices of a stack, rows of a 2D image), so
// that gpix::run_tiled (gpix/tiled.h) processes files larger than memory with bounded memory.
//
// Streamed: TIFF through libtiff (the grayscale files of 8 to 64 bits gpix's own reader takes,
// strips or tiles, any codec, read; uncompressed or Deflate written), MetaImage (.mha, .mhd)
// and NRRD (.nrrd, .nhdr) whose pixels are stored raw (uncompressed, one file, read at their
// data offset, either byte order), and raw files (gpix/raw.h). Other files (PNG, JPEG,
// NIfTI, compressed MetaImage and NRRD, colour TIFF) are not: open_slabs and create_slabs
// return null for them, and callers read them whole (io::read, HostArraySource) or collect
// the output in memory (HostArraySink, io::write).
//
// Errors: IoError naming the file, as io::read and io::write give them.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gpix/io.h"
#include "gpix/raw.h"
#include "gpix/tiled.h"

namespace gpix::io {

// A file as a SlabSource, with what its header says.
class FileSlabSource : public SlabSource {
 public:
  const Metadata& metadata() const { return meta_; }
  const std::string& format() const { return format_; }  // "TIFF", "MetaImage", ...
  // What io::read says of the file's calibration in Image::warnings (a z spacing not taken, a
  // unit that cannot be converted), for the same file.
  const std::vector<std::string>& warnings() const { return warnings_; }

 protected:
  Metadata meta_;
  std::string format_;
  std::vector<std::string> warnings_;
};

// The file's planes, or null when its format or encoding cannot be read in parts. Throws
// IoError for a missing, unreadable or truncated file.
std::unique_ptr<FileSlabSource> open_slabs(const std::filesystem::path& path);
// A raw file of this layout (its size must match: IoError otherwise).
std::unique_ptr<FileSlabSource> open_raw_slabs(const std::filesystem::path& path,
                                               const RawLayout& layout);

// A sink that writes `path` plane by plane in the format its extension names (a raw file
// with its PATH.json sidecar for .raw), with this metadata; or null for formats that are
// written whole (PNG, JPEG, NIfTI, and MetaImage or NRRD with options.compress). The file
// goes into a temporary folder next to the target and replaces it at finish(); a sink
// destroyed before (a failed run) leaves nothing behind. start() throws IoError for a dtype
// or dimensionality the format cannot store, as io::write does.
std::unique_ptr<SlabSink> create_slabs(const std::filesystem::path& path, const Metadata& meta = {},
                                       const WriteOptions& options = {});

}  // namespace gpix::io
