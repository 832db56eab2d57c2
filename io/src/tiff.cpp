#include "tiff.h"

#include <dlfcn.h>
#include <itkTIFFImageIO.h>
#include <tiffio.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>

namespace gpix::io::detail {

namespace {

thread_local TiffMessages* t_current = nullptr;

std::string format_message(const char* module, const char* fmt, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  char buf[512];
  const int n = std::vsnprintf(buf, sizeof buf, fmt, copy);
  va_end(copy);
  std::string text;
  if (n < 0) {
    text = fmt;
  } else if (static_cast<std::size_t>(n) < sizeof buf) {
    text.assign(buf, static_cast<std::size_t>(n));
  } else {
    text.resize(static_cast<std::size_t>(n) + 1);
    std::vsnprintf(text.data(), text.size(), fmt, ap);
    text.resize(static_cast<std::size_t>(n));
  }
  return module && *module ? std::string(module) + ": " + text : text;
}

void collect(bool error, const char* module, const char* fmt, va_list ap) {
  TiffMessages* m = TiffMessages::current();
  if (!m) return;
  // A file is opened more than once per read (the header, then the pixels): say things once.
  std::vector<std::string>& to = error ? m->errors : m->warnings;
  std::string text = format_message(module, fmt, ap);
  if (std::find(to.begin(), to.end(), text) == to.end()) to.push_back(std::move(text));
}

// Per-file handlers of gpix's own TIFF handles; user_data is non-null when the messages
// should reach the thread's TiffMessages (a probe passes null and stays silent). Returning 1
// keeps libtiff from calling the global handlers, which print to stderr.
int file_warning(TIFF*, void* forward, const char* module, const char* fmt, va_list ap) {
  if (forward) collect(false, module, fmt, ap);
  return 1;
}
int file_error(TIFF*, void* forward, const char* module, const char* fmt, va_list ap) {
  if (forward) collect(true, module, fmt, ap);
  return 1;
}

// Global handlers of a libtiff (ITK's private itk_TIFF* copy, which ITK's TIFFImageIO uses,
// or the system one for messages without a TIFF handle): collected while gpix reads or
// writes on this thread, otherwise handed to whatever handler was there before.
using LegacyHandler = void (*)(const char*, const char*, va_list);
using SetLegacyHandler = LegacyHandler (*)(LegacyHandler);
LegacyHandler g_previous[2][2] = {};  // [library][error]

template <int Library, bool Error>
void global_handler(const char* module, const char* fmt, va_list ap) {
  if (TiffMessages::current()) {
    collect(Error, module, fmt, ap);
  } else if (LegacyHandler prev = g_previous[Library][Error]) {
    prev(module, fmt, ap);
  }
}

template <int Library>
void install(SetLegacyHandler set_warning, SetLegacyHandler set_error) {
  g_previous[Library][0] = set_warning(&global_handler<Library, false>);
  g_previous[Library][1] = set_error(&global_handler<Library, true>);
}

SetLegacyHandler find(const char* symbol) {
  void* p = dlsym(RTLD_DEFAULT, symbol);
  SetLegacyHandler f = nullptr;
  static_assert(sizeof f == sizeof p);
  std::memcpy(&f, &p, sizeof f);  // POSIX: dlsym's object pointer is the function's address
  return f;
}

void install_global_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    install<0>(&TIFFSetWarningHandler, &TIFFSetErrorHandler);
    // ITK 5.2 as Debian builds it bundles libtiff under an itk_ prefix; where ITK uses the
    // system libtiff instead, the handlers above already cover it.
    const SetLegacyHandler w = find("itk_TIFFSetWarningHandler");
    const SetLegacyHandler e = find("itk_TIFFSetErrorHandler");
    if (w && e) install<1>(w, e);
  });
}

struct TiffCloser {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using TiffPtr = std::unique_ptr<TIFF, TiffCloser>;

TiffPtr open_tiff(const std::string& file, const char* mode, bool forward) {
  TIFFOpenOptions* o = TIFFOpenOptionsAlloc();
  // Any non-null pointer says "forward"; the handlers never dereference it.
  void* user = forward ? static_cast<void*>(o) : nullptr;
  TIFFOpenOptionsSetErrorHandlerExtR(o, &file_error, user);
  TIFFOpenOptionsSetWarningHandlerExtR(o, &file_warning, user);
  TIFF* t = TIFFOpenExt(file.c_str(), mode, o);
  TIFFOpenOptionsFree(o);  // the handle keeps its own copy of the handlers
  return TiffPtr(t);
}

[[noreturn]] void fail(const std::string& what) {
  throw itk::ExceptionObject(__FILE__, __LINE__, what, "gpix libtiff");
}

using Component = itk::IOComponentEnum;

// The ITK component for libtiff's BitsPerSample and SampleFormat, if gpix has that dtype.
std::optional<Component> component_of(std::uint16_t bits, std::uint16_t format) {
  const bool is_unsigned = format == SAMPLEFORMAT_UINT || format == SAMPLEFORMAT_VOID;
  if (is_unsigned || format == SAMPLEFORMAT_INT) {
    switch (bits) {
      case 8:
        return is_unsigned ? Component::UCHAR : Component::CHAR;
      case 16:
        return is_unsigned ? Component::USHORT : Component::SHORT;
      case 32:
        return is_unsigned ? Component::UINT : Component::INT;
      case 64:
        return is_unsigned ? Component::ULONGLONG : Component::LONGLONG;
      default:
        return std::nullopt;
    }
  }
  if (format == SAMPLEFORMAT_IEEEFP && bits == 32) return Component::FLOAT;
  if (format == SAMPLEFORMAT_IEEEFP && bits == 64) return Component::DOUBLE;
  return std::nullopt;
}

std::string sample_name(std::uint16_t bits, std::uint16_t format) {
  const std::string b = std::to_string(bits) + "-bit ";
  switch (format) {
    case SAMPLEFORMAT_INT:
      return b + "signed integer";
    case SAMPLEFORMAT_IEEEFP:
      return b + "floating-point";
    case SAMPLEFORMAT_COMPLEXINT:
      return b + "complex integer";
    case SAMPLEFORMAT_COMPLEXIEEEFP:
      return b + "complex floating-point";
    default:
      return b + "unsigned integer";
  }
}

// What gpix's reader handles: one sample per pixel, grayscale, 8 to 64 bits.
bool gpix_reads(TIFF* t) {
  std::uint16_t spp = 1, bits = 1, photometric = PHOTOMETRIC_MINISBLACK;
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photometric);
  return spp == 1 &&
         (photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE) &&
         (bits == 8 || bits == 16 || bits == 32 || bits == 64);
}

// One page's layout; every page of a stack must have the same.
struct Page {
  std::uint32_t width = 0, height = 0;
  std::uint16_t spp = 1, bits = 1, format = SAMPLEFORMAT_UINT, photometric = 0;
  std::uint16_t orientation = ORIENTATION_TOPLEFT;
  std::uint32_t depth = 1;  // SGI's volumetric tiles
  bool operator==(const Page&) const = default;

  std::string str() const {
    return std::to_string(width) + " x " + std::to_string(height) + ", " + std::to_string(spp) +
           " sample(s) of " + sample_name(bits, format);
  }
};

Page describe(TIFF* t) {
  Page p;
  TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &p.width);
  TIFFGetField(t, TIFFTAG_IMAGELENGTH, &p.height);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &p.spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &p.bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &p.format);
  TIFFGetFieldDefaulted(t, TIFFTAG_ORIENTATION, &p.orientation);
  TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &p.photometric);
  TIFFGetField(t, TIFFTAG_IMAGEDEPTH, &p.depth);
  return p;
}

// gpix's libtiff reader and writer as an ITK ImageIO (see tiff.h).
class LibTiffImageIO final : public itk::ImageIOBase {
 public:
  ITK_DISALLOW_COPY_AND_MOVE(LibTiffImageIO);
  using Self = LibTiffImageIO;
  using Superclass = itk::ImageIOBase;
  using Pointer = itk::SmartPointer<Self>;
  // What itkNewMacro would write (its trailing semicolons trip -Wpedantic).
  static Pointer New() {
    Pointer p = new Self;
    p->UnRegister();  // ITK objects are born with one reference, now held by p
    return p;
  }
  itk::LightObject::Pointer CreateAnother() const override { return New().GetPointer(); }
  const char* GetNameOfClass() const override { return "LibTiffImageIO"; }

  bool CanReadFile(const char* file) override { return open_tiff(file, "r", true) != nullptr; }
  bool CanWriteFile(const char*) override { return true; }
  void WriteImageInformation() override {}

  void ReadImageInformation() override {
    TiffPtr t = open_tiff(m_FileName, "r", true);
    if (!t) fail("libtiff cannot open it");
    pages_.clear();
    // Reduced-resolution images and masks (thumbnails) are skipped, as ITK does.
    for (tdir_t d = 0;; ++d) {
      std::uint32_t type = 0;
      TIFFGetField(t.get(), TIFFTAG_SUBFILETYPE, &type);
      if (!(type & (FILETYPE_REDUCEDIMAGE | FILETYPE_MASK))) {
        const Page p = describe(t.get());
        if (pages_.empty()) {
          check(p);
          page_ = p;
        } else if (p != page_) {
          fail("page " + std::to_string(pages_.size()) + " is " + p.str() + " but page 0 is " +
               page_.str() + "; gpix reads the pages of a TIFF as one 3D stack of equal pages");
        }
        pages_.push_back(d);
      }
      if (TIFFLastDirectory(t.get())) break;
      if (!TIFFReadDirectory(t.get()))
        fail("directory " + std::to_string(d + 1) + " cannot be read (corrupt file?)");
    }
    if (pages_.empty()) fail("it holds only reduced-resolution images or masks, no full page");

    const bool stack = pages_.size() > 1;
    SetNumberOfDimensions(stack ? 3 : 2);
    m_Dimensions[0] = page_.width;
    m_Dimensions[1] = page_.height;
    if (stack) m_Dimensions[2] = pages_.size();
    for (unsigned i = 0; i < GetNumberOfDimensions(); ++i) {
      m_Spacing[i] = 1.0;
      m_Origin[i] = 0.0;
      std::vector<double> axis(GetNumberOfDimensions(), 0.0);
      axis[i] = 1.0;
      SetDirection(i, axis);
    }
    // The spacing as ITK's TIFF reader gives it (millimetres from a resolution in inches or
    // centimetres; 1 without a unit), so files read the same through either reader.
    float xres = 0, yres = 0;
    std::uint16_t unit = RESUNIT_NONE;
    TIFFSetDirectory(t.get(), pages_.front());
    if (TIFFGetField(t.get(), TIFFTAG_XRESOLUTION, &xres) &&
        TIFFGetField(t.get(), TIFFTAG_YRESOLUTION, &yres) &&
        TIFFGetField(t.get(), TIFFTAG_RESOLUTIONUNIT, &unit) && xres > 0 && yres > 0 &&
        (unit == RESUNIT_INCH || unit == RESUNIT_CENTIMETER)) {
      const double per_unit = unit == RESUNIT_INCH ? 25.4 : 10.0;
      m_Spacing[0] = per_unit / static_cast<double>(xres);
      m_Spacing[1] = per_unit / static_cast<double>(yres);
    }
    SetPixelType(itk::IOPixelEnum::SCALAR);
    SetNumberOfComponents(1);
    SetComponentType(*component_of(page_.bits, page_.format));
  }

  void Read(void* buffer) override {
    TiffPtr t = open_tiff(m_FileName, "r", true);
    if (!t) fail("libtiff cannot open it");
    const std::size_t bytes = page_.bits / 8;
    const std::size_t page_bytes = std::size_t{page_.width} * page_.height * bytes;
    auto* out = static_cast<std::byte*>(buffer);
    // Directories are walked in order: TIFFSetDirectory starts from the first each time.
    tdir_t d = 0;
    for (std::size_t i = 0; i < pages_.size(); ++i) {
      while (d < pages_[i]) {
        if (!TIFFReadDirectory(t.get()))
          fail("directory " + std::to_string(d + 1) + " cannot be read (corrupt file?)");
        ++d;
      }
      if (describe(t.get()) != page_) fail("the file changed while it was read");
      read_page(t.get(), out + i * page_bytes, i);
    }
  }

  void Write(const void* buffer) override {
    const unsigned ndim = GetNumberOfDimensions();
    if (ndim != 2 && ndim != 3) fail("TIFF stores 2D images and 3D stacks");
    constexpr auto kMax = std::numeric_limits<std::uint32_t>::max();
    if (m_Dimensions[0] > kMax || m_Dimensions[1] > kMax)
      fail("TIFF pages are at most 4294967295 pixels wide and high");
    const auto width = static_cast<std::uint32_t>(m_Dimensions[0]);
    const auto height = static_cast<std::uint32_t>(m_Dimensions[1]);
    const std::size_t pages = ndim == 3 ? m_Dimensions[2] : 1;
    std::uint16_t bits = 0, format = SAMPLEFORMAT_UINT;
    switch (GetComponentType()) {
      case Component::CHAR:
        format = SAMPLEFORMAT_INT;
        [[fallthrough]];
      case Component::UCHAR:
        bits = 8;
        break;
      case Component::SHORT:
        format = SAMPLEFORMAT_INT;
        [[fallthrough]];
      case Component::USHORT:
        bits = 16;
        break;
      case Component::INT:
        format = SAMPLEFORMAT_INT;
        [[fallthrough]];
      case Component::UINT:
        bits = 32;
        break;
      case Component::LONGLONG:
      case Component::LONG:
        format = SAMPLEFORMAT_INT;
        [[fallthrough]];
      case Component::ULONGLONG:
      case Component::ULONG:
        bits = 64;
        break;
      case Component::FLOAT:
        format = SAMPLEFORMAT_IEEEFP;
        bits = 32;
        break;
      case Component::DOUBLE:
        format = SAMPLEFORMAT_IEEEFP;
        bits = 64;
        break;
      default:
        fail("TIFF stores 8 to 64-bit integers and 32/64-bit floats");
    }
    if (GetNumberOfComponents() != 1 || GetComponentSize() * 8 != std::size_t{bits})
      fail("gpix writes one sample per pixel of 8, 16, 32 or 64 bits");

    // Classic TIFF addresses 4 GiB with 32-bit offsets; like ITK, BigTIFF from 2 GiB up.
    const std::size_t row = std::size_t{width} * (bits / 8);
    const std::size_t page_bytes = row * height;
    const char* mode = page_bytes * pages > (std::size_t{2} << 30) ? "w8" : "w";
    TiffPtr t = open_tiff(m_FileName, mode, true);
    if (!t) fail("libtiff cannot create it");
    // Strips of about 1 MiB, as ITK writes them.
    const auto rows_per_strip =
        static_cast<std::uint32_t>(std::clamp<std::size_t>((1u << 20) / row, 1, height));
    const double xres = m_Spacing[0] > 0 ? 25.4 / m_Spacing[0] : 0;
    const double yres = m_Spacing[1] > 0 ? 25.4 / m_Spacing[1] : 0;
    const auto* in = static_cast<const std::byte*>(buffer);
    for (std::size_t p = 0; p < pages; ++p) {
      TIFF* f = t.get();
      TIFFSetField(f, TIFFTAG_IMAGEWIDTH, width);
      TIFFSetField(f, TIFFTAG_IMAGELENGTH, height);
      TIFFSetField(f, TIFFTAG_SAMPLESPERPIXEL, 1);
      TIFFSetField(f, TIFFTAG_BITSPERSAMPLE, bits);
      TIFFSetField(f, TIFFTAG_SAMPLEFORMAT, format);
      TIFFSetField(f, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
      TIFFSetField(f, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
      TIFFSetField(f, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
      // Deflate without a predictor: libtiff's horizontal predictor would difference the
      // caller's buffer in place.
      TIFFSetField(f, TIFFTAG_COMPRESSION,
                   m_UseCompression ? COMPRESSION_ADOBE_DEFLATE : COMPRESSION_NONE);
      TIFFSetField(f, TIFFTAG_ROWSPERSTRIP, rows_per_strip);
      TIFFSetField(f, TIFFTAG_SOFTWARE, "gpix");
      if (xres > 0 && yres > 0 && std::isfinite(xres) && std::isfinite(yres)) {
        // As ITK writes it: dots per inch for a spacing in millimetres.
        TIFFSetField(f, TIFFTAG_XRESOLUTION, xres);
        TIFFSetField(f, TIFFTAG_YRESOLUTION, yres);
        TIFFSetField(f, TIFFTAG_RESOLUTIONUNIT, RESUNIT_INCH);
      }
      if (ndim == 3) {
        TIFFSetField(f, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
        if (pages <= 0xffff)
          TIFFSetField(f, TIFFTAG_PAGENUMBER, static_cast<std::uint16_t>(p),
                       static_cast<std::uint16_t>(pages));
      }
      const std::byte* src = in + p * page_bytes;
      for (std::uint32_t s = 0, y = 0; y < height; ++s, y += rows_per_strip) {
        const std::size_t n = std::min<std::size_t>(rows_per_strip, height - y) * row;
        // libtiff takes a non-const buffer; without a predictor or byte swapping it only
        // reads it.
        if (TIFFWriteEncodedStrip(f, s, const_cast<std::byte*>(src + std::size_t{y} * row),
                                  static_cast<tmsize_t>(n)) != static_cast<tmsize_t>(n)) {
          fail("writing strip " + std::to_string(s) + " of page " + std::to_string(p) +
               " failed (disk full?)");
        }
      }
      if (!TIFFWriteDirectory(f))
        fail("writing the directory of page " + std::to_string(p) + " failed (disk full?)");
    }
    if (TIFFFlush(t.get()) != 1) fail("flushing the file failed (disk full?)");
  }

 protected:
  LibTiffImageIO() {
    for (const char* e : {".tif", ".TIF", ".tiff", ".TIFF"}) {
      AddSupportedReadExtension(e);
      AddSupportedWriteExtension(e);
    }
  }
  ~LibTiffImageIO() override = default;

 private:
  // A first page gpix's reader takes (tiff_reader chose it) but cannot decode: say why.
  void check(const Page& p) {
    if (p.width == 0 || p.height == 0) fail("its first page has no pixels (width or height 0)");
    if (!component_of(p.bits, p.format)) {
      fail("it holds " + sample_name(p.bits, p.format) +
           " samples; gpix reads 8 to 64-bit integers and 32/64-bit floats (convert float16 to "
           "float32, complex to its real part, first)");
    }
    if (p.orientation != ORIENTATION_TOPLEFT && p.orientation != ORIENTATION_BOTLEFT) {
      fail("its Orientation tag is " + std::to_string(p.orientation) +
           "; gpix reads top-left (1) and bottom-left (4) row orders");
    }
    if (p.depth != 1) fail("it is a tiled volume (ImageDepth " + std::to_string(p.depth) + ")");
  }

  void read_page(TIFF* t, std::byte* out, std::size_t page) {
    const std::size_t bytes = page_.bits / 8;
    const std::size_t row = std::size_t{page_.width} * bytes;
    const std::string where = " of page " + std::to_string(page);
    if (TIFFIsTiled(t)) {
      std::uint32_t tw = 0, th = 0;
      TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
      TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
      const tmsize_t tile_bytes = TIFFTileSize(t);
      if (tw == 0 || th == 0 || tile_bytes <= 0) fail("the tile size" + where + " is invalid");
      std::vector<std::byte> tile(static_cast<std::size_t>(tile_bytes));
      for (std::uint32_t y = 0; y < page_.height; y += th) {
        for (std::uint32_t x = 0; x < page_.width; x += tw) {
          const std::uint32_t index = TIFFComputeTile(t, x, y, 0, 0);
          if (TIFFReadEncodedTile(t, index, tile.data(), tile_bytes) != tile_bytes)
            fail("tile " + std::to_string(index) + where + " cannot be read (truncated file?)");
          const std::size_t rows = std::min(th, page_.height - y);
          const std::size_t cols = std::min(tw, page_.width - x) * bytes;
          for (std::size_t r = 0; r < rows; ++r) {
            std::memcpy(out + (y + r) * row + x * bytes, tile.data() + r * tw * bytes, cols);
          }
        }
      }
    } else {
      std::uint32_t rows_per_strip = 0;
      TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &rows_per_strip);
      if (rows_per_strip == 0 || rows_per_strip > page_.height) rows_per_strip = page_.height;
      for (std::uint32_t s = 0, y = 0; y < page_.height; ++s, y += rows_per_strip) {
        const std::size_t n = std::min(rows_per_strip, page_.height - y) * row;
        const tmsize_t got =
            TIFFReadEncodedStrip(t, s, out + std::size_t{y} * row, static_cast<tmsize_t>(n));
        if (got != static_cast<tmsize_t>(n)) {
          fail("strip " + std::to_string(s) + where +
               (got < 0 ? std::string(" cannot be read")
                        : " holds " + std::to_string(got) + " of " + std::to_string(n) + " bytes") +
               " (truncated or corrupt file?)");
        }
      }
    }
    if (page_.orientation == ORIENTATION_BOTLEFT) {
      std::vector<std::byte> tmp(row);
      for (std::size_t a = 0, b = page_.height - 1; a < b; ++a, --b) {
        std::memcpy(tmp.data(), out + a * row, row);
        std::memcpy(out + a * row, out + b * row, row);
        std::memcpy(out + b * row, tmp.data(), row);
      }
    }
  }

  Page page_;
  std::vector<tdir_t> pages_;  // the directories that are pages of the image
};

}  // namespace

TiffMessages::TiffMessages() : outer_(t_current) {
  install_global_handlers();
  t_current = this;
}

TiffMessages::~TiffMessages() {
  t_current = outer_;
}

TiffMessages* TiffMessages::current() {
  return t_current;
}

std::string TiffMessages::says(std::size_t from) const {
  std::string s;
  for (std::size_t i = from; i < errors.size(); ++i) s += (s.empty() ? "" : "; ") + errors[i];
  return s.empty() ? s : " (libtiff: " + s + ")";
}

std::vector<std::string> TiffMessages::all() const {
  std::vector<std::string> v = warnings;
  v.insert(v.end(), errors.begin(), errors.end());
  return v;
}

itk::ImageIOBase::Pointer tiff_reader(const std::string& file) {
  // A silent probe: the reader that is chosen opens the file again and reports.
  const TiffPtr t = open_tiff(file, "r", false);
  if (t && !gpix_reads(t.get())) {
    install_global_handlers();
    return itk::TIFFImageIO::New().GetPointer();
  }
  return LibTiffImageIO::New().GetPointer();
}

itk::ImageIOBase::Pointer libtiff_io() {
  return LibTiffImageIO::New().GetPointer();
}

}  // namespace gpix::io::detail
