#pragma once
// Structural checks that run before ITK touches a file. Some of ITK's readers (through libpng,
// libjpeg, MetaIO and the nifti library) crash on truncated files or fill the missing part
// with zeros without a word; these checks turn both into an IoError.
#include <cstdint>
#include <filesystem>
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

}  // namespace gpix::io::detail
