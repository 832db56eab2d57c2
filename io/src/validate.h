#pragma once
// Structural checks that run before ITK touches a file. Some of ITK's readers (through libpng,
// libjpeg, MetaIO and the nifti library) crash on truncated files or fill the missing part
// with zeros without a word; these checks turn both into an IoError.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace gpix::io::detail {

// Before ReadImageInformation: the container's own structure (PNG chunks and CRCs, JPEG
// markers through the end-of-image marker). Returns an empty string when the file looks whole,
// otherwise what is wrong.
std::string check_structure(const std::string& format, const std::filesystem::path& path);

// After ReadImageInformation: whether the file (or its detached data file) holds the
// data_bytes of pixels the header claims. Empty when it does, otherwise what is wrong.
std::string check_data_size(const std::string& format, const std::filesystem::path& path,
                            std::uint64_t data_bytes);

// Inflates compressed streams of one file to their end, their checksum included (zlib or
// gzip): the readers stop inflating once they have their pixels and never see it, so flipped
// bytes inside a .nii.gz, a compressed .mha or a Deflate TIFF strip gave an image of wrong
// values without an error (MetaIO printed "Uncompress failed" to stderr and went on).
class StreamChecker {
 public:
  explicit StreamChecker(const std::filesystem::path& file);
  // The stream of `bytes` bytes at `offset`: empty when it ends whole after at least `want`
  // bytes of output, otherwise what is wrong. A stream still going after `limit` bytes out is
  // taken as whole (what came out was checked; a decompression bomb costs no more).
  std::string check(std::uint64_t offset, std::uint64_t bytes, std::uint64_t want,
                    std::uint64_t limit);

 private:
  std::ifstream f_;
  std::vector<unsigned char> in_, out_;
};

// Whether check_stream has work for this file: compressed MetaImage data, .nii.gz, TIFF.
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

// The one detached data file a MetaImage or NRRD header names (its ElementDataFile, its "data
// file"), in the header's folder; none for data in the header's own file, lists and patterns of
// files, other formats, or a header that cannot be read.
std::optional<std::filesystem::path> detached_data_file(const std::filesystem::path& header);

}  // namespace gpix::io::detail
