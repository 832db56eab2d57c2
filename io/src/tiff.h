#pragma once
// TIFF through libtiff, for what ITK 5.2's TIFFImageIO cannot do: it writes only u8 i8 u16 i16
// f32 and reads 32-bit integer, 64-bit and f64 samples wrongly. gpix writes every TIFF with
// libtiff and reads single-sample grayscale files with it; ITK keeps colour, palette and
// other bit depths. Both present themselves as an itk::ImageIOBase, so io.cpp keeps one path
// for dimensions, metadata and errors.
//
// libtiff reports through handlers that print to stderr by default. gpix's own files use
// per-file handlers (TIFFOpenOptions, thread-safe); ITK's private copy of libtiff
// (itk_TIFF*) and the system one also get global handlers, installed once, that collect into
// the thread's TiffMessages while gpix reads or writes and pass everything else on.
#include <itkImageIOBase.h>
#include <tiffio.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

namespace gpix::io::detail {

// Collects what libtiff says on this thread while it lives (instances nest).
class TiffMessages {
 public:
  TiffMessages();
  ~TiffMessages();
  TiffMessages(const TiffMessages&) = delete;
  TiffMessages& operator=(const TiffMessages&) = delete;

  std::vector<std::string> warnings;
  std::vector<std::string> errors;

  // " (libtiff: a; b)" for the errors from the n-th on, or "" when there are none.
  std::string says(std::size_t from = 0) const;
  // Warnings then errors (errors that did not stop a read are worth a look too).
  std::vector<std::string> all() const;

  static TiffMessages* current();

 private:
  TiffMessages* outer_;
};

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

// Where an ImageIO's MetaDataDictionary holds the unit of its spacing (ITK's own key, which
// MetaImageIO reads and writes; gpix's libtiff reader and writer use it too), and gpix's
// libtiff reader what it did not take of a calibration (lines).
inline constexpr const char* kUnitKey = "ITK_VoxelUnits";
inline constexpr const char* kNotesKey = "gpix_calibration_notes";

// What a TIFF says about its pixel size, in (x, y, z) order (see io::Metadata::unit for the
// rules and their order: OME-XML, an ImageJ description, the resolution tags).
struct TiffCalibration {
  double spacing[3] = {1, 1, 1};
  double origin[3] = {0, 0, 0};
  std::string unit;                // normalised; "" when the file does not say
  std::vector<std::string> notes;  // what was not taken, and why (for Image::warnings)
  std::size_t channels = 1;        // pages that are channels (io::Metadata::channels)
  // Pages that hold more than one of channels, z slices and time points (an ImageJ hyperstack,
  // an OME-TIFF of several channels and slices): how many of each (c, z, t), and the page of
  // (c, z, t) = c * steps[0] + z * steps[1] + t * steps[2]. gpix images have 3 dimensions, so
  // such a file is read one channel at a time (TiffStack's channel).
  bool hyper = false;
  std::size_t sizes[3] = {1, 1, 1};
  std::size_t steps[3] = {1, 1, 1};
  double z_spacing = 1;  // a hyperstack's slice spacing and z origin, for one channel's stack
  double z_origin = 0;
  std::string kind;  // "an ImageJ hyperstack", "an OME image"
  // The channels' colours (0xRRGGBB), one a channel, from ImageJ's LUTs; written as LUTs.
  std::vector<std::uint32_t> colours;
  // Pages the metadata places in no image gpix can give (several OME images, a tifffile array
  // of 4 or more dimensions): why; the reader refuses the file with it.
  std::string unreadable;
  // Whether anything differs from "no calibration" (unit spacing, origin 0, no unit).
  bool calibrated() const;
};
// The calibration on the directory `t` is on (the first page), for a file of `pages` pages.
TiffCalibration calibration_of(TIFF* t, std::size_t pages);
// The same for a file (a silent probe); no calibration when libtiff cannot open it.
TiffCalibration tiff_calibration(const std::string& file, std::size_t pages);
// The channels of a hyperstack that reads one channel at a time (channels and slices, or
// channels and time points; TiffStack's channel), 0 for other files (a silent probe).
std::size_t tiff_hyperstack_channels(const std::string& file);
std::vector<std::uint32_t> tiff_hyperstack_colours(const std::string& file, std::size_t channels);
// The ImageJ description gpix writes for this calibration (unit=, spacing= for a stack,
// x/y/zorigin in pixels; images= and channels= for a stack of channels, without the z keys).
std::string imagej_description(const TiffCalibration& c, bool stack, std::size_t pages);

// One page's layout; every page of a stack must have the same.
struct TiffPage {
  std::uint32_t width = 0, height = 0;
  std::uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, photometric = 0;
  std::uint16_t orientation = ORIENTATION_TOPLEFT;
  std::uint32_t depth = 1;  // SGI's volumetric tiles
  std::uint16_t planar = PLANARCONFIG_CONTIG;
  bool operator==(const TiffPage&) const = default;
  std::string str() const;
};

// A TIFF stack as gpix's libtiff reader reads it (grayscale pages of 8 to 64 bits, one sample a
// pixel or several, interleaved or plane by plane, and RGB plane by plane, equal, strips or tiles,
// any codec libtiff has, top-left or bottom-left rows; thumbnails and masks skipped), read in rows:
// row r of page p is row p * height() + r, so a 2D image reads in rows and a stack in pages. Errors
// are itk::ExceptionObjects, as the ImageIO's are (io.cpp turns them into IoErrors).
class TiffStack {
 public:
  // `channel` (0 the first; -1 none) picks one channel's pages of a file whose pages are
  // channels (a composite: one page) or a hyperstack (its slices, or its frames where it has
  // one slice); ignored for other files. A hyperstack without a channel is refused, saying
  // its layout and how to read it.
  explicit TiffStack(const std::string& file, int channel = -1);
  ~TiffStack();
  TiffStack(const TiffStack&) = delete;
  TiffStack& operator=(const TiffStack&) = delete;

  std::size_t width() const { return page_.width; }
  std::size_t height() const { return page_.height; }
  std::size_t pages() const { return offsets_.size(); }
  itk::IOComponentEnum component() const;
  std::size_t samples() const { return page_.spp; }  // per pixel, interleaved as read
  std::size_t row_bytes() const;
  // The first page's calibration (calibration_of).
  const TiffCalibration& calibration() const { return calibration_; }
  // Whether the first page carries gpix's label mark (kLabelsTag).
  bool labels() const { return labels_; }
  // Rows [from, to) into out, top row first. The Deflate strips or tiles they come from are
  // inflated to their end (their Adler-32) on a thread beside the decode (StreamChecker):
  // libtiff stops once it has a strip's pixels, so a damaged strip gave wrong pixels.
  void read(std::size_t from, std::size_t to, std::byte* out);

 private:
  void go_to(std::size_t page);
  void pick_channel(int channel);
  void read_file_rows(std::size_t page, std::uint32_t f0, std::uint32_t f1, std::byte* out);
  // File rows [f0, f1) of one sample plane (0 where the samples are interleaved), packed.
  void read_plane_rows(std::size_t page, std::uint16_t sample_plane, std::uint32_t f0,
                       std::uint32_t f1, std::byte* out);
  std::uint32_t rows_per_strip() const;
  // The stream check of the Deflate strips or tiles holding file rows [f0, f1) of `page`
  // (the handle is on it), started on a thread of its own; empty when whole.
  std::future<std::string> check_rows(std::size_t page, std::uint32_t f0, std::uint32_t f1);

  std::string file_;
  TiffPtr tiff_;
  TiffPage page_;
  std::vector<std::uint64_t> offsets_;  // of the directories that are pages of the image
  std::size_t current_ = static_cast<std::size_t>(-1);  // the page the handle is on
  std::vector<std::byte> scratch_;
  TiffCalibration calibration_;
  bool labels_ = false;
};

// gpix's mark of a label image (Metadata::labels): an ASCII tag "gpix_kind=labels" on the
// first page. A private tag from the range TIFF 6.0 leaves reusable (65000-65535), so that the
// ImageDescription stays free for ImageJ's metadata; other programs skip it, and a file of
// another program that uses the number reads as labels only with exactly this text.
inline constexpr std::uint32_t kLabelsTag = 65011;
// ImageJ's private tags (registered with Adobe): the byte counts of its metadata entries and
// the entries (a header naming their kinds, then LUTs, display ranges, labels...).
inline constexpr std::uint32_t kImageJCountsTag = 50838;
inline constexpr std::uint32_t kImageJDataTag = 50839;
inline constexpr const char* kLabelsText = "gpix_kind=labels";

// A TIFF written page by page in rows, as gpix writes every TIFF: one sample of 8/16/32/64
// bits with SampleFormat UINT, INT or IEEEFP, strips of about 1 MiB, Deflate on request,
// BigTIFF from 2 GiB; the directories of all pages first, then the pixels of all pages in one
// block (as ImageJ and tifffile lay stacks out, and read them); a calibration as ImageJ writes it:
// x/y resolution in pixels per unit (ResolutionUnit NONE unless the unit is inch or centimetre)
// and, on the first page, an ImageJ description with the unit, the z spacing and the origin.
// Uncalibrated images get neither.
class TiffWriter {
 public:
  struct Layout {
    std::size_t width = 0, height = 0, pages = 1;
    bool stack = false;  // pages are z slices (a 3D stack), also with one page
    itk::IOComponentEnum component = itk::IOComponentEnum::UCHAR;
    TiffCalibration calibration;
    bool compress = false;
    bool labels = false;  // marks the first page with kLabelsTag
  };
  TiffWriter(const std::string& file, const Layout& layout);
  ~TiffWriter();
  TiffWriter(const TiffWriter&) = delete;
  TiffWriter& operator=(const TiffWriter&) = delete;
  // The next n rows (across pages), top row first.
  void append(const std::byte* rows, std::size_t n);
  // After the last row; throws when rows are missing or the file cannot be flushed.
  void close();

 private:
  void set_fields();  // the tags of page page_
  void begin_page();
  void strip(const std::byte* src, std::uint32_t rows);

  Layout layout_;
  TiffPtr tiff_;
  std::uint16_t bits_ = 8, format_ = 1;
  std::size_t row_ = 0;
  std::uint32_t rows_per_strip_ = 1;
  std::size_t page_ = 0, y_ = 0, pending_ = 0;
  std::vector<std::byte> buffer_;
  std::vector<std::uint64_t> directories_;  // each page's directory offset
};

// The reader for a TIFF file: gpix's libtiff reader for single-sample grayscale files of 8,
// 16, 32 or 64 bits (what gpix and most microscopy software write), ITK's TIFFImageIO for
// the rest (RGB, palette, 1-bit...). A file libtiff cannot open gets the libtiff reader,
// whose CanReadFile says no.
itk::ImageIOBase::Pointer tiff_reader(const std::string& file, int channel = -1);

// Whether tiff_reader gives gpix's libtiff reader for the file and libtiff opens it (a silent
// probe: the reader reports what is wrong).
bool libtiff_reads(const std::string& file);

// Whether the strips or tiles of every page can hold the pixels the page claims, before
// anything is allocated for them: the bytes each strip or tile has in the file (its byte count,
// cut at the end of the file) times the most its codec can expand data. Empty when they can,
// or when the codec has no useful bound (JPEG, CCITT, LZMA and others: then the available
// memory is the only limit); otherwise what is wrong, with the sizes. A 222-byte file whose
// header claimed a 5 GB page was allocated in full before its first strip failed
// (fuzz_read_tiff).
std::string check_tiff_capacity(const std::string& file);

// Before ITK's TIFFImageIO reads a file (colour, palette and other TIFFs gpix's reader leaves
// to it): the ASCII tags whose length the TIFF specification fixes (DateTime: 20 bytes with
// its NUL) must hold that many. ITK 5.2's ReadTIFFTags copies the fixed length from libtiff's
// value, which libtiff sizes by the string it found, so a short DateTime made it read past the
// buffer (an ASan heap overflow, fuzz_read_tiff). Also no directory entry's values may lie
// beyond the end of the file: ITK's bundled libtiff allocates what an entry claims first (a
// 1.6 GB ASCII tag in an 868-byte file, fuzz_read_tiff). Empty when the tags are whole or gpix's
// own reader takes the file; otherwise which tag is wrong and (for a short one) how to mend it.
std::string check_tiff_tags(const std::string& file);

// Every Deflate-compressed strip and tile of every page inflated to its end (its Adler-32
// included; validate.h, StreamChecker): libtiff stops once a strip's pixels are out, so bytes
// flipped inside a strip gave wrong pixels without an error. Empty when whole (or when the
// system's libtiff cannot open the file: the reader says why), otherwise which strip is
// damaged and how.
std::string check_tiff_streams(const std::string& file);

// The libtiff reader and writer (every gpix dtype, 2D, or 3D as one page per z slice).
itk::ImageIOBase::Pointer libtiff_io();

}  // namespace gpix::io::detail
