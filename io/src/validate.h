#pragma once
// Structural checks that run before ITK touches a file. Some of ITK's readers (through libpng,
// libjpeg, MetaIO and the nifti library) crash on truncated files or fill the missing part
// with zeros without a word; these checks turn both into an IoError.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace gpix::io::detail {

// Before ReadImageInformation: the container's own structure (PNG chunks and CRCs, JPEG
// markers through the end-of-image marker). Returns an empty string when the file looks whole,
// otherwise what is wrong.
std::string check_structure(const std::string& format, const std::filesystem::path& path);

// After ReadImageInformation: whether the file (or its detached data file) holds the
// data_bytes of pixels the header claims. Empty when it does, otherwise what is wrong.
std::string check_data_size(const std::string& format, const std::filesystem::path& path,
                            std::uint64_t data_bytes);

// Whether check_stream has work for this file: compressed MetaImage data, .nii.gz.
bool has_stream(const std::string& format, const std::filesystem::path& path);
// The compressed stream inflated to its end, its checksum included (the readers stop at the
// last pixel and never see it), counting at least data_bytes of pixels. Empty when whole,
// otherwise what is wrong. As long as a decompression: the reader runs it beside ITK's read.
std::string check_stream(const std::string& format, const std::filesystem::path& path,
                         std::uint64_t data_bytes);

// Where a file's pixels lie when they are stored raw (uncompressed) in one file: MetaImage
// (local or detached data) and NRRD (attached or detached, raw encoding). None for other
// formats, compressed data, lists or patterns of data files, or data shorter than data_bytes.
struct RawData {
  std::filesystem::path file;
  std::uint64_t offset = 0;
  bool big_endian = false;  // as the header says (MetaIO's reader swaps without telling ITK)
};
std::optional<RawData> raw_data(const std::string& format, const std::filesystem::path& path,
                                std::uint64_t data_bytes);

}  // namespace gpix::io::detail
