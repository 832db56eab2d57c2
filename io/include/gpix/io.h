#pragma once
// gpix_io: image files through ITK and libtiff. Reads and writes TIFF (multi-page as a 3D
// stack; every dtype, through libtiff), PNG, JPEG, NRRD, MetaImage and NIfTI (through ITK),
// keeping spacing, origin and direction where the format has them. Nothing of ITK appears
// here; see gpix/itk.h for itk::Image interop.
//
// Axis order: everything is in (z, y, x) order like gpix::Shape: spacing[0] is the spacing of
// the first (slowest) axis. ITK's own order is (x, y, z); gpix reverses it on the way in and
// out.
//
// Errors: every failure is a gpix::IoError whose path() is the file and whose message says
// what was asked, what was found and what would work. A failed write leaves no file behind
// (writes go to a temporary folder next to the target and are renamed into place).
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "gpix/array.h"
#include "gpix/device.h"
#include "gpix/host_array.h"
#include "gpix/kept_axes.h"

namespace gpix::io {

// Physical placement of the pixel grid, in (z, y, x) order. Empty vectors mean "not known"
// (spacing 1, origin 0, identity direction) and are what formats without metadata give.
struct Metadata {
  std::vector<double> spacing;  // ndim entries, physical units per pixel
  std::vector<double> origin;   // ndim entries, physical position of the first pixel
  // ndim x ndim, row-major: direction[r * ndim + c] is ITK's matrix with rows (physical axes)
  // and columns (index axes) both reversed into (z, y, x) order.
  std::vector<double> direction;
  // The length unit of spacing and origin, one for every axis, as normalise_unit() names it
  // ("um", "mm", ...). Empty when the file does not say: the numbers then have no known unit.
  // Where they come from and go to, per format:
  //  - TIFF: an ImageJ description (unit=, spacing= for z, x/y/zorigin in pixels; yunit= and
  //    zunit= where y or z has a unit of its own, converted to unit=) with
  //    XResolution/YResolution in pixels per unit; OME-XML (PhysicalSizeX/Y/Z and their
  //    units, µm when absent); else a resolution in inches or centimetres, as millimetres
  //    (what ITK reads). gpix writes the ImageJ form (ResolutionUnit NONE, inch or centimetre
  //    as ImageJ does).
  //  - NRRD: "space units" (or "units" with "spacings"); any unit.
  //  - MetaImage: DistanceUnits (MetaIO knows um, mm and cm; other lengths are converted).
  //  - NIfTI: xyzt_units (m, mm or um; other lengths are converted).
  //  - JPEG: mm, where its density is in inches or centimetres (as ITK converts it).
  //  - PNG: none.
  std::string unit;
  // The pixels are label ids (0 background, objects 1..n), not intensities. gpix marks the
  // label images it writes where the format has room (Format::labels_marker: a private TIFF
  // tag, a NRRD/MetaImage key `gpix_kind` = labels, the NIfTI aux_file "gpix_kind=labels") and
  // reads that mark back; NIfTI files of other software with intent NIFTI_INTENT_LABEL (1002)
  // read as labels too. Everything else reads as false. See docs/LABELS.md.
  bool labels = false;
  // More than 1: the first axis holds this many channels (fluorescence channels, colours), not
  // z slices. TIFF only: an ImageJ hyperstack with channels=C (slices and frames 1) or OME-XML
  // with SizeC=C (SizeZ and SizeT 1), whose C pages are the channels; 1 everywhere else
  // (colour pixels read with Channels::split say so through Image::file_components).
  // write() keeps it (more than 1 only for a 3D image of that many planes, else IoError): TIFF
  // as an ImageJ composite (channels=C), NRRD and MetaImage as a key `gpix_channels`; NIfTI,
  // PNG and JPEG have no room for it. The channel axis is written with spacing 1 and origin 0
  // in every format. A key that does not match the planes when read is a warning, and z.
  int channels = 1;
  // Each channel's colour as 0xRRGGBB (the colour of its brightest value), one per channel, or
  // empty where the file does not say. TIFF: ImageJ's LUTs (the IJMetadata tag, which Fiji
  // writes for composites; a LUT's last entry is its colour); NRRD and MetaImage: a key
  // `gpix_channel_colours` ("#00ff00 #ff00ff"). write() keeps it where it keeps the channels
  // (a count other than `channels` is an IoError), TIFF as ImageJ LUTs from black to the colour.
  std::vector<std::uint32_t> channel_colours = {};

  // The values for an image of ndim dimensions, defaults filled in.
  std::vector<double> spacing_or_default(int ndim) const;
  std::vector<double> origin_or_default(int ndim) const;
  std::vector<double> direction_or_default(int ndim) const;
};

// gpix's name for a length unit: "um" for um, µm, μm, micron, microns, micrometre...; "nm",
// "mm", "cm", "m" and "in" (inch) likewise; "" for no unit ("", "pixel", "pixels", "px").
// Other names come back trimmed, as they are.
std::string normalise_unit(std::string_view name);
// Metres in one unit (a normalised name), or 0 for a unit gpix cannot convert ("" included).
double metres_per(std::string_view unit);

// The metadata of a filter's output whose input had `meta` (gpix/kept_axes.h): spacing,
// origin and direction of the axes the output keeps, the unit, and `channels` where the
// output keeps the channel axis whole (same extent, first axis); empty when it keeps none.
// Not the label mark: whether an output holds labels is the filter's to say.
Metadata carried(const Metadata& meta, const Shape& in, const Shape& out);
// The same with the output's grid given (axis_maps(filter, params, in, out): a transpose's
// axes, a crop's shifted origin, a resample's spacing). An image whose metadata says nothing
// (placed() false) keeps saying nothing where the grid moves.
Metadata carried(const Metadata& meta, const Shape& in, const std::vector<AxisMap>& axes);
// Whether `meta` says anything of an image of `ndim` dimensions' placement: a unit, or a
// spacing, origin or direction other than the defaults.
bool placed(const Metadata& meta, int ndim);

// Pixels in host memory with their metadata.
struct Image {
  HostArray pixels;
  Metadata meta;
  std::string format;       // "TIFF", "PNG", ... (the reader that was used)
  int file_components = 1;  // components per pixel in the file (3 for RGB) before the policy
  // What the decoder said about a file it could still read (libtiff's "Bogus
  // StripByteCounts", unknown tags...), instead of printing it on stderr. TIFF only for now.
  std::vector<std::string> warnings;
};

// The same on a device.
struct DeviceImage {
  Array pixels;
  Metadata meta;
  std::string format;
  int file_components = 1;
  std::vector<std::string> warnings;
};

// What to do with files whose pixels have several components (RGB, RGBA, vectors). gpix
// arrays hold one value per pixel, so the choice is never made silently:
//  - error (default): IoError naming the file, its pixel type and these options.
//  - luminance: RGB/RGBA only; float32 0.2126 R + 0.7152 G + 0.0722 B (Rec. 709 weights,
//    alpha ignored, values not rescaled).
//  - channel: one component, ReadOptions::channel (0 = R), in the file's dtype. Of a file whose
//    planes are channels (Metadata::channels), that channel's plane; of a TIFF hyperstack
//    (ImageJ or OME: channels and z slices, or channels and time points), that channel's
//    slices (or time points) as a 3D stack. A hyperstack read without it is an IoError that
//    says its layout, as is one of slices and time points (gpix images have 3 dimensions),
//    an OME-TIFF of several images and a tifffile array of 4 or more dimensions.
//  - split: a 2D file becomes a 3D (components, y, x) stack in the file's dtype; a 3D file
//    with several components is an error (gpix arrays have at most 3 dimensions).
// Palette (indexed) PNG/TIFF files are expanded to RGB by ITK and then follow this policy;
// set palette_indices to read the raw palette indices instead (u8 or u16).
// 1-bit palette images (as Qt writes them) read as RGB with 0/255, or as u8 indices 0/1 with
// palette_indices; 1-bit grayscale PNGs are expanded to 8 bits by libpng as ITK does. 1-bit
// (and 2-, 4-, 12-bit) TIFFs go to ITK's reader, which gives them as RGBA with the photometric
// applied (MinIsWhite's 0 reads 255): read them with Channels::channel, channel 0.
enum class Channels { error, luminance, channel, split };

struct ReadOptions {
  Channels channels = Channels::error;
  int channel = 0;               // for Channels::channel
  bool palette_indices = false;  // read palette files as their index values
  // The most bytes of pixels (every component, in the file's dtype) a header may declare, 0
  // for no limit other than the machine's available memory. A header that claims more is refused
  // before anything is allocated or decoded (IoError naming both sizes): a guard for files from
  // elsewhere, whose few hundred bytes may declare gigabytes that the decoder then allocates before
  // it finds the damage.
  std::uint64_t max_bytes = 0;
};

struct WriteOptions {
  bool compress = false;  // where the format supports lossless compression (NRRD, MHA, NII...)
};

// Which metadata a format keeps through write() and read().
enum class Kept {
  none,        // JPEG: spacing 1, origin 0, identity direction on reading
  spacing_yx,  // PNG: x and y spacing; unit, z spacing, origin and direction lost
  // TIFF: spacing, origin and unit (x/y spacing as a rational resolution, about 1e-7 relative);
  // direction lost
  spacing_origin,
  all,  // NRRD, MetaImage, NIfTI (NIfTI in float32 precision), unit included
};

// The formats gpix reads and writes, as checked by tests/io/test_io_formats.cpp.
struct Format {
  std::string name;                     // "TIFF"
  std::vector<std::string> extensions;  // {".tif", ".tiff"}
  std::vector<DType> write_dtypes;      // dtypes write() accepts for this format
  int min_write_dims = 1;               // 2 for TIFF, PNG and JPEG
  int max_write_dims = 3;               // 2 for PNG and JPEG (ITK would drop other slices)
  bool lossy = false;                   // JPEG
  Kept metadata = Kept::all;
  bool labels_marker = false;  // keeps Metadata::labels (TIFF, NRRD, MetaImage, NIfTI)
};
const std::vector<Format>& formats();
// The format for a path's extension (case-insensitive, ".nii.gz" included). Throws IoError
// for unknown extensions, listing the known ones.
const Format& format_for(const std::filesystem::path& path);

// The channels of a file read one channel at a time (ReadOptions::channel): a TIFF hyperstack
// of channels and z slices, or of channels and time points. 0 for every other file, and for
// one that cannot be read (read() says why).
std::size_t hyperstack_channels(const std::filesystem::path& path);
// The colours (0xRRGGBB, one a channel) of a hyperstack of `channels` channels (what
// hyperstack_channels said) where it has ImageJ's LUTs (the last entry of each, as
// Metadata::channel_colours); empty where it has none, or not `channels` of them, and for other
// files. Reads the first page's tags only (hyperstack_channels went through the pages).
std::vector<std::uint32_t> hyperstack_colours(const std::filesystem::path& path,
                                              std::size_t channels);

// Removes the temporary folders of writes under way (a file is written into a hidden
// `.gpix-write-XXXXXX` folder beside its target and moved into place when whole): for a
// program's SIGINT/SIGTERM handler, which gpix's writes do not install. Async-signal-safe
// (unlink and rmdir of paths prepared when each write began); the files being written are lost,
// the targets stay as they were.
void remove_unfinished_writes() noexcept;

// Reads a file. Throws IoError (missing, folder, empty, truncated or corrupt file, content
// that does not match the extension, unsupported pixel type such as complex or 4D, a header
// that claims more memory than the machine has, multi-component pixels without a policy).
Image read(const std::filesystem::path& path, const ReadOptions& options = {});
// Reads a file straight into a device array: the file is decoded into one host buffer that is
// pushed as is (no further host copies). Throws what read() and Array::push() throw.
DeviceImage read_to_device(const std::filesystem::path& path,
                           const Device& device = default_device(),
                           const ReadOptions& options = {});

// Writes pixels with metadata; the format comes from the extension. Throws IoError for an
// unknown extension, a dtype or dimensionality the format cannot store (the message lists
// what it can), or an unwritable path. The target is replaced only when the write succeeded.
void write(const std::filesystem::path& path, const Image& image, const WriteOptions& options = {});
void write(const std::filesystem::path& path, const HostArray& pixels, const Metadata& meta = {},
           const WriteOptions& options = {});
// Whether write() could store pixels of dtype t and ndim dimensions under this path, asked
// before the work that makes them: throws the IoError write() would throw for an unknown
// extension, a dtype or dimensionality the format cannot store, a folder that does not exist
// or takes no files, or a header whose data file is another file. Writes nothing.
void check_can_write(const std::filesystem::path& path, DType t, int ndim,
                     const WriteOptions& options = {});
// Pulls a device array once into host memory and writes it.
void write(const std::filesystem::path& path, const Array& pixels, const Metadata& meta = {},
           const WriteOptions& options = {});
void write(const std::filesystem::path& path, const DeviceImage& image,
           const WriteOptions& options = {});

}  // namespace gpix::io
