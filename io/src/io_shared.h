#pragma once
// What io.cpp's whole-file reads and writes and slab_files.cpp's plane-by-plane ones share:
// ITK's types for gpix's dtypes, the header read, the metadata, the checks before a write, and
// the temporary folder a write goes through.
#include <itkImageIOBase.h>

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpix/dtype.h"
#include "gpix/error.h"
#include "gpix/io.h"
#include "gpix/shape.h"

namespace gpix::io::detail {

// A path as UTF-8 text, for messages and IoError's path.
inline std::string str(const std::filesystem::path& p) {
  const std::u8string u = p.u8string();
  return {reinterpret_cast<const char*>(u.data()), u.size()};
}

// IoError "'PATH': why" about p.
[[noreturn]] inline void fail(const std::filesystem::path& p, const std::string& why) {
  throw IoError("'" + str(p) + "': " + why, str(p));
}

// The dtype of an ITK component, by kind and size (ITK's LONG is 8 bytes on LP64 systems).
std::optional<DType> to_dtype(itk::IOComponentEnum c, std::size_t size);
itk::IOComponentEnum to_component(DType t);

// The ImageIO for `path` (in `format`) with its header read, the file's structure checked
// first. `p` is the name handed to ITK (NIfTI's private link); libtiff() says what libtiff
// said. Throws IoError: unreadable file, another format than the extension says.
itk::ImageIOBase::Pointer read_header(const std::filesystem::path& path, const Format& format,
                                      const std::string& p, const ReadOptions& options,
                                      const std::function<std::string()>& libtiff);

// The header's spacing, origin, direction (in (z, y, x) order), unit (calibration.cpp: the
// unit and what ITK leaves out per format) and label mark. What was not taken goes to notes.
Metadata metadata_of(itk::ImageIOBase& io, int ndim, const Format& format,
                     const std::filesystem::path& path, std::vector<std::string>* notes);

// The unit a file of `format` stores for `unit`, and the factor spacing and origin are
// multiplied by for it: MetaImage names um, mm and cm, NIfTI um, mm and m; other lengths are
// converted (nm -> um, cm -> mm). Throws IoError for a unit that is no length gpix knows
// where the format cannot name it, and for units no header can hold (quotes, control bytes).
struct StoredUnit {
  std::string unit;
  double factor = 1.0;
};
StoredUnit stored_unit(const std::filesystem::path& path, const Format& format,
                       const std::string& unit);
// Before ITK writes: the unit where the format's ImageIO takes it (TIFF, MetaImage).
void prepare_unit(itk::ImageIOBase& io, const Format& format, const std::string& unit);
// After ITK wrote `file`: the unit where ITK cannot put it (NRRD's space units, NIfTI's
// xyzt_units, also when there is no unit). Throws IoError naming `target` (the path the user
// asked for; `file` is its temporary copy) when the file cannot be amended.
void finish_unit(const std::filesystem::path& file, const std::filesystem::path& target,
                 const Format& format, const std::string& unit, int ndim);

// The label mark (Metadata::labels) passes through the ImageIO's dictionary: NRRD and MetaImage
// write string entries as key/value fields; gpix's TIFF ImageIO turns this one into its
// private tag (tiff.h).
inline constexpr const char* kKindKey = "gpix_kind";
inline constexpr const char* kKindLabels = "labels";
// Marks the image `io` is about to write (in `format`, a Format::name) as labels.
void mark_labels(itk::ImageIOBase& io, const std::string& format);
// Whether a header that was read carries gpix's mark, or NIfTI's label intent.
bool marked_labels(const itk::MetaDataDictionary& dictionary);

// Throws IoError unless path's format stores this dtype and dimensionality, the metadata has
// ndim values where it has any, and its channels (more than 1) are the planes of a 3D image.
void check_writable(const std::filesystem::path& path, DType t, const Shape& shape,
                    const Metadata& meta);

// The channel mark (Metadata::channels, more than 1) passes through the dictionary as the label
// mark does: NRRD and MetaImage keep the key; gpix's TIFF ImageIO writes an ImageJ hyperstack
// description (channels=C), and reads either into this key (tiff.h).
inline constexpr const char* kChannelsKey = "gpix_channels";
// Metadata::channel_colours through the dictionary (and as the NRRD/MetaImage key):
// "#rrggbb #rrggbb ...".
inline constexpr const char* kColoursKey = "gpix_channel_colours";
std::string colours_text(const std::vector<std::uint32_t>& colours);
// The colours of colours_text, or empty for text that is not such a list.
std::vector<std::uint32_t> parse_colours(const std::string& text);
// Whether `format` (a Format::name) keeps the channel mark.
bool keeps_channels(const std::string& format);
// What a file of one sample a pixel, not marked as a stack of channels, says to channel N > 0.
std::string no_such_channel(int channel);

// Writes the sidecar `side` ({"shape": [...], "dtype": "..."}) of the raw file `raw`.
void write_raw_sidecar(const std::filesystem::path& raw, const std::filesystem::path& side,
                       const Shape& shape, DType dtype);

// Throws IoError unless path is a regular, non-empty, readable file.
void check_input_file(const std::filesystem::path& path);

// A folder next to the target that takes the output, renamed into place on success and
// removed on failure, so that a failed write leaves nothing behind. Throws IoError when the
// target's folder is missing or not writable.
// Whether writing `target` (a .mhd or .nhdr header) may put its data file `side` in place: an
// existing file of that name may be replaced only where it is the data file an existing
// `target` names (a header written again). Otherwise IoError: `gpix run add_scalar
// cells.raw cells.mhd` replaced its own input, cells.raw, with the result.
void check_side_file(const std::filesystem::path& target, const std::filesystem::path& side);

class TempFolder {
 public:
  explicit TempFolder(const std::filesystem::path& target);
  ~TempFolder();
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;

  std::filesystem::path file() const { return dir_ / target_.filename(); }
  std::filesystem::path folder() const { return dir_; }
  // Moves every file written into place, the named target last (side files such as the .raw
  // of a .mhd first, so the header never points at missing data). Checks a header's data files
  // with check_side_file first: nothing moves when one would replace a file of the user's.
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path dir_;
  int slot_ = -1;  // its entry for remove_unfinished_writes, or -1
};

}  // namespace gpix::io::detail
