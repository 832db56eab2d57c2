#include "tiff.h"

#include <dlfcn.h>
#include <itkMetaDataObject.h>
#include <itkTIFFImageIO.h>
#include <tiffio.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "gpix/io.h"
#include "gpix/stats.h"
#include "io_shared.h"
#include "validate.h"

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

// kLabelsTag becomes a known ASCII tag of every handle of the system libtiff (it can be neither
// written nor read by name otherwise), chained to any extender installed before ours.
TIFFExtendProc g_parent_extender = nullptr;

void extend_tags(TIFF* t) {
  // ImageJ's two tags too: libtiff reads them (no "unknown field" warning for every Fiji file)
  // and gpix writes LUTs through them.
  static const TIFFFieldInfo kField[] = {
      {kLabelsTag, TIFF_VARIABLE, TIFF_VARIABLE, TIFF_ASCII, FIELD_CUSTOM, 1, 0,
       const_cast<char*>("GpixKind")},
      {kImageJCountsTag, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_LONG, FIELD_CUSTOM, 1, 1,
       const_cast<char*>("IJMetadataByteCounts")},
      {kImageJDataTag, TIFF_VARIABLE2, TIFF_VARIABLE2, TIFF_BYTE, FIELD_CUSTOM, 1, 1,
       const_cast<char*>("IJMetadata")}};
  TIFFMergeFieldInfo(t, kField, 3);
  if (g_parent_extender) g_parent_extender(t);
}

void install_tags() {
  static std::once_flag once;
  std::call_once(once, [] { g_parent_extender = TIFFSetTagExtender(&extend_tags); });
}

TiffPtr open_tiff(const std::string& file, const char* mode, bool forward) {
  install_tags();
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

// What gpix's reader handles: grayscale of 8 to 64 bits, one sample per pixel (`single`), or
// several (channels, alpha: ExtraSamples), which it gives as components of a vector pixel for
// io.cpp's ReadOptions::channels policy. ITK's TIFFImageIO read those as one sample, every
// pixel's samples as consecutive pixels of one image (2/3 of the image lost without a word).
// RGB stored plane by plane too: ITK's reader took those through TIFFReadRGBAImage (8-bit RGBA
// whatever the file held); interleaved RGB stays with ITK, which reads it as it is.
bool gpix_reads(TIFF* t, bool single = true) {
  std::uint16_t spp = 1, bits = 1, photometric = PHOTOMETRIC_MINISBLACK,
                planar = PLANARCONFIG_CONTIG;
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photometric);
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
  const bool grey = photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE;
  const bool planar_rgb =
      photometric == PHOTOMETRIC_RGB && planar == PLANARCONFIG_SEPARATE && spp >= 3;
  return (spp == 1 || !single) && (grey || planar_rgb) &&
         (bits == 8 || bits == 16 || bits == 32 || bits == 64);
}

// Whether the current directory is a full page, not a reduced-resolution image or a mask
// (thumbnails): both readers and every check skip those, as ITK does.
bool full_page(TIFF* t) {
  std::uint32_t type = 0;
  TIFFGetField(t, TIFFTAG_SUBFILETYPE, &type);
  return !(type & (FILETYPE_REDUCEDIMAGE | FILETYPE_MASK));
}

using Page = TiffPage;

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
  TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &p.planar);
  return p;
}

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

// BitsPerSample and SampleFormat of an ITK component gpix writes.
std::pair<std::uint16_t, std::uint16_t> bits_and_format(Component c) {
  switch (c) {
    case Component::CHAR:
      return {8, SAMPLEFORMAT_INT};
    case Component::UCHAR:
      return {8, SAMPLEFORMAT_UINT};
    case Component::SHORT:
      return {16, SAMPLEFORMAT_INT};
    case Component::USHORT:
      return {16, SAMPLEFORMAT_UINT};
    case Component::INT:
      return {32, SAMPLEFORMAT_INT};
    case Component::UINT:
      return {32, SAMPLEFORMAT_UINT};
    case Component::LONGLONG:
    case Component::LONG:
      return {64, SAMPLEFORMAT_INT};
    case Component::ULONGLONG:
    case Component::ULONG:
      return {64, SAMPLEFORMAT_UINT};
    case Component::FLOAT:
      return {32, SAMPLEFORMAT_IEEEFP};
    case Component::DOUBLE:
      return {64, SAMPLEFORMAT_IEEEFP};
    default:
      fail("TIFF stores 8 to 64-bit integers and 32/64-bit floats");
  }
}

// "key=value" lines of an ImageJ description.
std::map<std::string, std::string> imagej_fields(const std::string& d) {
  std::map<std::string, std::string> f;
  std::istringstream in(d);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) f[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return f;
}

std::optional<double> number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// The value of attribute `name` in the XML start tag `tag` (text from '<' to '>').
std::optional<std::string> attribute(const std::string& tag, const std::string& name) {
  for (std::size_t at = tag.find(name + "=\""); at != std::string::npos;
       at = tag.find(name + "=\"", at + 1)) {
    // A whole name: PhysicalSizeX, not PhysicalSizeXUnit's prefix nor a suffix of another.
    const char before = at > 0 ? tag[at - 1] : ' ';
    if (!std::isspace(static_cast<unsigned char>(before))) continue;
    const std::size_t from = at + name.size() + 2;
    const std::size_t to = tag.find('"', from);
    if (to == std::string::npos) return std::nullopt;
    return tag.substr(from, to - from);
  }
  return std::nullopt;
}

// The pages' layout from the sizes of channels, slices and time points (dims: c, z, t) and
// their order in the file (`order`, fastest first, of the letters C, Z and T): a hyperstack
// where more than one of them exceeds 1 and they account for the pages; unreadable where they
// describe fewer pages than the file has (the rest would be read as slices of this image).
void hyper_layout(TiffCalibration& c, std::size_t pages, const double (&dims)[3],
                  const std::string& order, const std::string& source, const std::string& what) {
  std::size_t n[3];
  for (int i = 0; i < 3; ++i) {
    if (!(dims[i] >= 1 && dims[i] < 1e9)) return;  // not a count: the description is ignored
    n[i] = static_cast<std::size_t>(dims[i]);
  }
  const std::size_t planes = n[0] * n[1] * n[2];
  if (planes < pages) {
    c.unreadable = "its " + source + " describes " + std::to_string(planes) + " plane(s) (" +
                   std::to_string(n[0]) + " channel(s), " + std::to_string(n[1]) + " slice(s), " +
                   std::to_string(n[2]) + " time point(s)) but the file has " +
                   std::to_string(pages) +
                   " pages: it holds more than one image (series), which gpix would read as one "
                   "stack; save the image you want on its own (in Fiji: Bio-Formats' importer, "
                   "then File > Save As > Tiff)";
    return;
  }
  if (planes != pages || (n[0] > 1) + (n[1] > 1) + (n[2] > 1) < 2) return;
  c.hyper = true;
  std::size_t step = 1;
  for (const char axis : order) {
    const int i = axis == 'C' ? 0 : axis == 'Z' ? 1 : 2;
    c.steps[i] = step;
    step *= n[i];
  }
  for (int i = 0; i < 3; ++i) c.sizes[i] = n[i];
  c.kind = what;
}

// tifffile's description of the array it wrote ({"shape": [...]}): dimensions above y and x
// (and the samples) beyond one are an array gpix would read as one z stack.
void shaped_layout(TIFF* t, const std::string& d, std::size_t pages, TiffCalibration& c) {
  std::vector<std::size_t> shape;
  const std::size_t open = d.find('['), close = d.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return;
  std::string list = d.substr(open + 1, close - open - 1);
  for (std::size_t at = 0; at < list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const auto v = number(list.substr(at, comma - at));
    if (!v || *v < 1) return;
    shape.push_back(static_cast<std::size_t>(*v));
    at = comma + 1;
  }
  std::uint16_t spp = 1;
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  const std::size_t inner = spp > 1 ? 3 : 2;  // (y, x) or (y, x, samples)
  if (shape.size() <= inner) return;
  std::size_t above = 0, planes = 1;
  std::string text;
  for (std::size_t i = 0; i + inner < shape.size(); ++i) {
    above += shape[i] > 1;
    planes *= shape[i];
  }
  for (std::size_t i = 0; i < shape.size(); ++i)
    text += (i ? " x " : "") + std::to_string(shape[i]);
  if (above > 1 && planes == pages) {
    c.unreadable = "tifffile wrote it as an array of " + text +
                   " (its description): " + std::to_string(above) +
                   " dimensions above y and x, where gpix reads one (z); save one 3D part "
                   "of it per file, e.g. tifffile.imwrite(path, array[0])";
  }
}

// OME-XML's channel colours: the Color of each Channel of the first Pixels element (a signed
// 32-bit RGBA number, -16776961 for opaque red), as 0xRRGGBB in the channels' order. Empty
// unless every one of `channels` channels has one.
std::vector<std::uint32_t> ome_colours(const std::string& xml, std::size_t channels) {
  std::size_t at = xml.find("<Pixels ");
  if (at == std::string::npos) at = xml.find(":Pixels ");
  if (at == std::string::npos) return {};
  const std::size_t stop = xml.find("Pixels>", at);  // </Pixels> or </ome:Pixels>
  std::vector<std::uint32_t> colours;
  for (std::size_t pos = xml.find("Channel ", at); pos < stop;
       pos = xml.find("Channel ", pos + 1)) {
    // A start tag <Channel or <prefix:Channel, not a name ending in Channel.
    if (pos == 0 || (xml[pos - 1] != '<' && xml[pos - 1] != ':')) continue;
    const std::size_t end = xml.find('>', pos);
    if (end == std::string::npos) return {};
    const auto colour = attribute(xml.substr(pos, end - pos), "Color");
    if (!colour) return {};
    std::int64_t v = 0;
    const char* first = colour->data();
    const char* last = first + colour->size();
    const auto parsed = std::from_chars(first, last, v);
    if (parsed.ec != std::errc() || parsed.ptr != last || v < INT32_MIN || v > UINT32_MAX)
      return {};
    colours.push_back(static_cast<std::uint32_t>(v) >> 8);  // RGBA: the alpha goes
  }
  return colours.size() == channels ? colours : std::vector<std::uint32_t>{};
}

// OME-XML: the first Pixels element's PhysicalSize{X,Y,Z} and units (µm by the schema's
// default), all in X's unit.
bool ome_calibration(const std::string& xml, std::size_t pages, TiffCalibration& c) {
  std::size_t at = xml.find("<Pixels ");
  if (at == std::string::npos) at = xml.find(":Pixels ");
  if (at == std::string::npos) return false;
  const std::size_t end = xml.find('>', at);
  if (end == std::string::npos) return false;
  const std::string tag = xml.substr(at, end - at);
  // Pages that are channels: SizeC of them, one z and one time point.
  const auto size_c = number(attribute(tag, "SizeC").value_or(""));
  if (size_c && *size_c > 1 && static_cast<std::size_t>(*size_c) == pages &&
      number(attribute(tag, "SizeZ").value_or("1")).value_or(0) == 1 &&
      number(attribute(tag, "SizeT").value_or("1")).value_or(0) == 1) {
    c.channels = pages;
    c.colours = ome_colours(xml, pages);
  }
  // Channels and slices (or time points) together: their order is DimensionOrder's after XY
  // (XYZCT by the schema's default), the first varying fastest.
  {
    const double dims[3] = {number(attribute(tag, "SizeC").value_or("1")).value_or(1),
                            number(attribute(tag, "SizeZ").value_or("1")).value_or(1),
                            number(attribute(tag, "SizeT").value_or("1")).value_or(1)};
    std::string order = attribute(tag, "DimensionOrder").value_or("XYZCT");
    if (order.size() == 5 && order.rfind("XY", 0) == 0) {
      order = order.substr(2);
    } else {
      order = "ZCT";
    }
    hyper_layout(c, pages, dims, order, "OME-XML", "an OME image");
  }
  const char* axes[3] = {"X", "Y", "Z"};
  std::string units[3];
  bool given[3] = {false, false, false};  // a spacing of exactly 1 is given too
  bool any = false;
  for (int i = 0; i < 3; ++i) {
    const auto v = attribute(tag, std::string("PhysicalSize") + axes[i]);
    units[i] = normalise_unit(
        attribute(tag, std::string("PhysicalSize") + axes[i] + "Unit").value_or("\xc2\xb5m"));
    if (!v) continue;
    const auto n = number(*v);
    if (!n || *n <= 0) {
      c.notes.push_back("OME-XML PhysicalSize" + std::string(axes[i]) + "=\"" + *v +
                        "\" is not a positive number; that axis' spacing is 1");
      continue;
    }
    if (i == 2 && !c.hyper) {  // a hyperstack's: for one channel's slices
      const auto size_z = number(attribute(tag, "SizeZ").value_or(""));
      if (pages > 1 && (!size_z || static_cast<std::size_t>(*size_z) != pages)) {
        c.notes.push_back("the OME-XML SizeZ is " + attribute(tag, "SizeZ").value_or("missing") +
                          " but the file has " + std::to_string(pages) +
                          " pages (channels or time points): the z spacing is 1, not the "
                          "PhysicalSizeZ " +
                          *v);
        continue;
      }
    }
    c.spacing[i] = *n;
    given[i] = true;
    any = true;
  }
  if (!any) return false;
  c.unit = units[0];
  for (int i = 1; i < 3; ++i) {
    if (units[i] == c.unit || !given[i]) continue;
    const double from = metres_per(units[i]), to = metres_per(c.unit);
    if (from > 0 && to > 0) {
      c.spacing[i] *= from / to;
    } else {
      c.notes.push_back(std::string("OME-XML PhysicalSize") + axes[i] + "Unit '" + units[i] +
                        "' cannot be converted to PhysicalSizeXUnit '" + c.unit +
                        "'; the number is taken as it is");
    }
  }
  return true;
}

// ImageJ's metadata entry kinds, as 32-bit numbers in the file's byte order.
constexpr std::uint32_t kImageJMagic = 0x494a494a;  // "IJIJ"
constexpr std::uint32_t kImageJLuts = 0x6c757473;   // "luts"

std::uint32_t load_u32(const std::uint8_t* p, bool big) {
  return big ? std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 |
                   std::uint32_t{p[3]}
             : std::uint32_t{p[3]} << 24 | std::uint32_t{p[2]} << 16 | std::uint32_t{p[1]} << 8 |
                   std::uint32_t{p[0]};
}

void store_u32(std::vector<std::uint8_t>& out, std::uint32_t v, bool big) {
  for (int i = 0; i < 4; ++i) {
    const int shift = big ? 24 - 8 * i : 8 * i;
    out.push_back(static_cast<std::uint8_t>(v >> shift));
  }
}

// The channel colours of ImageJ's LUTs (the IJMetadata "luts" entries, 768 bytes each: 256
// reds, greens, blues): each LUT's last entry, the colour of the brightest value. Empty where
// the tags are absent, damaged, or do not hold `channels` LUTs.
std::vector<std::uint32_t> imagej_colours(TIFF* t, std::size_t channels) {
  std::uint32_t n_counts = 0, n_bytes = 0;
  const std::uint32_t* counts = nullptr;
  const std::uint8_t* data = nullptr;
  if (!TIFFGetField(t, kImageJCountsTag, &n_counts, &counts) ||
      !TIFFGetField(t, kImageJDataTag, &n_bytes, &data) || !counts || !data || n_counts < 1 ||
      counts[0] < 4 || counts[0] > n_bytes || (counts[0] - 4) % 8 != 0) {
    return {};
  }
  bool big = false;
  if (std::memcmp(data, "IJIJ", 4) == 0) {
    big = true;
  } else if (std::memcmp(data, "JIJI", 4) != 0) {
    return {};
  }
  if (load_u32(data, big) != kImageJMagic) return {};
  std::vector<std::uint32_t> colours;
  std::uint64_t offset = counts[0];
  std::uint32_t entry = 1;
  for (std::uint32_t h = 4; h + 8 <= counts[0]; h += 8) {
    const std::uint32_t kind = load_u32(data + h, big), n = load_u32(data + h + 4, big);
    for (std::uint32_t k = 0; k < n; ++k, ++entry) {
      if (entry >= n_counts) return {};
      const std::uint32_t size = counts[entry];
      if (offset + size > n_bytes) return {};
      if (kind == kImageJLuts && size == 768) {
        const std::uint8_t* lut = data + offset;
        colours.push_back(std::uint32_t{lut[255]} << 16 | std::uint32_t{lut[511]} << 8 |
                          std::uint32_t{lut[767]});
      }
      offset += size;
    }
  }
  return colours.size() == channels ? colours : std::vector<std::uint32_t>{};
}

// ImageJ's metadata tags holding one LUT a colour, black to the colour, in the file's byte
// order (ImageJ reads the entries in it).
void write_imagej_luts(TIFF* t, const std::vector<std::uint32_t>& colours) {
  const bool big = TIFFIsBigEndian(t) != 0;
  std::vector<std::uint8_t> data;
  store_u32(data, kImageJMagic, big);
  store_u32(data, kImageJLuts, big);
  store_u32(data, static_cast<std::uint32_t>(colours.size()), big);
  std::vector<std::uint32_t> counts = {static_cast<std::uint32_t>(data.size())};
  for (const std::uint32_t c : colours) {
    for (const int shift : {16, 8, 0}) {
      const double top = (c >> shift) & 0xffu;
      for (int i = 0; i < 256; ++i)
        data.push_back(static_cast<std::uint8_t>(std::lround(top * i / 255.0)));
    }
    counts.push_back(768);
  }
  TIFFSetField(t, kImageJCountsTag, static_cast<std::uint32_t>(counts.size()), counts.data());
  TIFFSetField(t, kImageJDataTag, static_cast<std::uint32_t>(data.size()), data.data());
}

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

bool TiffCalibration::calibrated() const {
  for (int i = 0; i < 3; ++i) {
    if (spacing[i] != 1.0 || origin[i] != 0.0) return true;
  }
  return !unit.empty();
}

namespace {

TiffCalibration calibration_of_page(TIFF* t, std::size_t pages);

}  // namespace

TiffCalibration calibration_of(TIFF* t, std::size_t pages) {
  TiffCalibration c = calibration_of_page(t, pages);
  // A hyperstack's z numbers (in the x unit by now) are its slices', for one channel's stack
  // (TiffStack::pick_channel); the pages as a whole have no z.
  if (c.hyper) {
    c.z_spacing = c.spacing[2];
    c.z_origin = c.origin[2];
    c.spacing[2] = 1;
    c.origin[2] = 0;
  }
  return c;
}

namespace {

// The spacing an ImageJ resolution (pixels per unit) stands for. libtiff keeps resolutions as
// float32, so a spacing of 1.5 came back as 1 / float(1 / 1.5) = 1.49999996 (and an origin of
// 4.5 as 4.49999987): the shortest decimal, up to 9 significant digits, whose reciprocal is
// the same float is what was written; float32 cannot tell it from the others that share it.
double spacing_of_resolution(float res) {
  const double exact = 1.0 / static_cast<double>(res);
  for (int digits = 1; digits <= 9; ++digits) {
    std::array<char, 40> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), exact,
                                         std::chars_format::general, digits);
    if (ec != std::errc()) break;
    double d = 0;
    const auto parsed = std::from_chars(buf.data(), end, d);
    if (parsed.ec == std::errc() && d > 0 && static_cast<float>(1.0 / d) == res) return d;
  }
  return exact;
}

TiffCalibration calibration_of_page(TIFF* t, std::size_t pages) {
  TiffCalibration c;
  const char* text = nullptr;
  const std::string d =
      TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &text) && text ? std::string(text) : std::string();
  if (d.find("<OME") != std::string::npos && ome_calibration(d, pages, c)) return c;
  if (d.rfind("{\"shape\":", 0) == 0) shaped_layout(t, d, pages, c);

  float xres = 0, yres = 0;
  std::uint16_t res_unit = RESUNIT_NONE;
  const bool has_res = TIFFGetField(t, TIFFTAG_XRESOLUTION, &xres) &&
                       TIFFGetField(t, TIFFTAG_YRESOLUTION, &yres) && xres > 0 && yres > 0 &&
                       std::isfinite(xres) && std::isfinite(yres);
  const bool has_unit = TIFFGetField(t, TIFFTAG_RESOLUTIONUNIT, &res_unit) != 0;
  const bool imagej = d.rfind("ImageJ=", 0) == 0;
  const auto f = imagej ? imagej_fields(d) : std::map<std::string, std::string>{};
  const auto field = [&](const char* k) {
    const auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  };
  if (imagej) c.unit = normalise_unit(field("unit"));
  std::array<bool, 3> given{};  // the axes an ImageJ description's numbers calibrate
  if (has_res && (!c.unit.empty() || (imagej && (!has_unit || res_unit == RESUNIT_NONE)))) {
    given[0] = given[1] = imagej;
    // ImageJ: pixels per unit of the description (also without one: the unit is then unknown).
    c.spacing[0] = spacing_of_resolution(xres);
    c.spacing[1] = spacing_of_resolution(yres);
  } else if (has_res && has_unit && (res_unit == RESUNIT_INCH || res_unit == RESUNIT_CENTIMETER)) {
    // As ITK's TIFF reader gives it, so files read the same through either reader.
    const double per_unit = res_unit == RESUNIT_INCH ? 25.4 : 10.0;
    c.spacing[0] = per_unit / static_cast<double>(xres);
    c.spacing[1] = per_unit / static_cast<double>(yres);
    c.unit = "mm";
  }
  if (!imagej) return c;
  if (pages > 1) {
    const auto z = number(field("spacing"));
    const auto slices = number(field("slices"));
    const double channels = number(field("channels")).value_or(1);
    const double frames = number(field("frames")).value_or(1);
    const bool z_pages =
        slices ? static_cast<std::size_t>(*slices) == pages : channels <= 1 && frames <= 1;
    if (channels > 1 && static_cast<std::size_t>(channels) == pages && frames <= 1 &&
        slices.value_or(1) <= 1) {
      c.channels = pages;
    }
    // A time series (frames only): gpix images have z, not t. Read as z planes, which the
    // user is told: a z radius or sigma then reaches across time, and the frame interval is
    // not a z spacing (it went unsaid, and a saved result called its frames slices).
    if (frames > 1 && static_cast<std::size_t>(frames) == pages && channels <= 1 &&
        slices.value_or(1) <= 1) {
      const std::string interval = field("finterval");
      c.notes.push_back("its " + std::to_string(pages) +
                        " pages are time points (ImageJ frames=" + field("frames") +
                        (interval.empty() ? std::string()
                                          : ", finterval=" + interval + " " +
                                                (field("tunit").empty() ? "s" : field("tunit"))) +
                        "): gpix reads them as z planes, so a filter's z radius or sigma reaches "
                        "across time, and a result saved is a z stack");
    }
    // ImageJ's hyperstacks keep their pages in CZT order, channels varying fastest. Counts
    // that do not account for the pages are left as they were read before (z, with a note).
    const double dims[3] = {channels, slices.value_or(1), frames};
    if (channels * slices.value_or(1) * frames == static_cast<double>(pages))
      hyper_layout(c, pages, dims, "CZT", "ImageJ's description", "an ImageJ hyperstack");
    if (z && !(*z > 0)) {
      c.notes.push_back("the ImageJ spacing=" + field("spacing") +
                        " is not a length: the z spacing is 1");
    } else if (z && (z_pages || c.hyper)) {  // a hyperstack's: for one channel's slices
      c.spacing[2] = *z;
      given[2] = true;
    } else if (z) {
      c.notes.push_back("the ImageJ description says " + number_text(channels) + " channel(s), " +
                        number_text(slices.value_or(1)) + " slice(s) and " + number_text(frames) +
                        " frame(s) in " + std::to_string(pages) +
                        " pages: the z spacing is 1, not its spacing " + field("spacing"));
    }
  }
  // ImageJ writes yunit= and zunit= where y or z has a unit of its own (its Calibration's
  // getYUnit, getZUnit): their numbers are in that unit, converted here to unit='s. They were
  // read as unit='s (a z spacing of 1500 nm as 1500 um).
  const char* unit_keys[3] = {"", "yunit", "zunit"};
  for (int i = 1; i < 3; ++i) {
    const std::string own = normalise_unit(field(unit_keys[i]));
    if (own.empty() || own == c.unit || !given[static_cast<std::size_t>(i)]) continue;
    const double from = io::metres_per(own), to = io::metres_per(c.unit);
    if (from > 0 && to > 0) {
      c.spacing[i] *= from / to;
    } else {
      c.notes.push_back(std::string("the ImageJ ") + unit_keys[i] + "=" + field(unit_keys[i]) +
                        " cannot be converted to its unit=" +
                        (c.unit.empty() ? std::string("(none)") : field("unit")) +
                        "; the number is taken as it is");
    }
  }
  if (c.channels > 1) c.colours = imagej_colours(t, c.channels);
  // ImageJ's origin is the pixel position of 0 (xorigin=10: pixel 10 is at 0).
  const char* keys[3] = {"xorigin", "yorigin", "zorigin"};
  for (int i = 0; i < 3; ++i) {
    if (const auto o = number(field(keys[i]))) c.origin[i] = *o == 0 ? 0.0 : -*o * c.spacing[i];
  }
  return c;
}

}  // namespace

TiffCalibration tiff_calibration(const std::string& file, std::size_t pages) {
  const TiffPtr t = open_tiff(file, "r", false);
  return t ? calibration_of(t.get(), pages) : TiffCalibration{};
}

namespace {

// A hyperstack read one channel at a time: its channel count (0 for other files) and the open
// file, at its first directory.
std::size_t hyperstack_of(TIFF* t) {
  std::size_t pages = 0;
  do {
    pages += full_page(t) ? 1 : 0;
  } while (!TIFFLastDirectory(t) && TIFFReadDirectory(t));
  if (!TIFFSetDirectory(t, 0)) return 0;
  const TiffCalibration c = calibration_of(t, pages);
  return c.hyper && c.sizes[0] > 1 && (c.sizes[1] == 1 || c.sizes[2] == 1) ? c.sizes[0] : 0;
}

}  // namespace

std::size_t tiff_hyperstack_channels(const std::string& file) {
  const TiffPtr tiff = open_tiff(file, "r", false);
  return tiff ? hyperstack_of(tiff.get()) : 0;
}

std::vector<std::uint32_t> tiff_hyperstack_colours(const std::string& file, std::size_t channels) {
  const TiffPtr tiff = open_tiff(file, "r", false);
  if (!tiff) return {};
  const char* text = nullptr;
  if (TIFFGetField(tiff.get(), TIFFTAG_IMAGEDESCRIPTION, &text) && text &&
      std::strstr(text, "<OME") != nullptr)
    return ome_colours(text, channels);
  return imagej_colours(tiff.get(), channels);
}

std::string imagej_description(const TiffCalibration& c, bool stack, std::size_t pages) {
  std::string d = "ImageJ=1.11a\n";
  // ImageJ's own words for the units that have one; "in" is TIFF's inch.
  if (c.unit == "um") {
    d += "unit=micron\n";
  } else if (c.unit == "in") {
    d += "unit=inch\n";
  } else if (!c.unit.empty()) {
    d += "unit=" + c.unit + "\n";
  }
  // Pages that are channels have no z: no spacing= or zorigin= (what ImageJ writes for a
  // composite of one slice).
  const bool z = stack && c.channels <= 1;
  if (stack && c.channels > 1) {
    d += "images=" + std::to_string(c.channels) + "\nchannels=" + std::to_string(c.channels) +
         "\nmode=composite\n";
  }
  // A z stack says so as ImageJ does (images=N, slices=N): without it tifffile, and napari
  // through it, read the pages as an unnamed axis (IYX), not as z.
  if (z) d += "images=" + std::to_string(pages) + "\nslices=" + std::to_string(pages) + "\n";
  if (z && c.calibrated()) d += "spacing=" + number_text(c.spacing[2]) + "\n";
  const char* keys[3] = {"xorigin", "yorigin", "zorigin"};
  for (int i = 0; i < (z ? 3 : 2); ++i) {
    if (c.origin[i] != 0.0)
      d += std::string(keys[i]) + "=" + number_text(-c.origin[i] / c.spacing[i]) + "\n";
  }
  return d;
}

std::string TiffPage::str() const {
  return std::to_string(width) + " x " + std::to_string(height) + ", " + std::to_string(spp) +
         " sample(s) of " + sample_name(bits, format);
}

// "m": read(), not a memory map: mapped pages that were read stay in the process's resident
// memory until the file is closed, so a stack read in slabs would end up resident whole.
TiffStack::TiffStack(const std::string& file, int channel)
    : file_(file), tiff_(open_tiff(file, "rm", true)) {
  TIFF* t = tiff_.get();
  if (!t) fail("libtiff cannot open it");
  // Reduced-resolution images and masks (thumbnails) are skipped, as ITK does.
  for (tdir_t d = 0;; ++d) {
    if (full_page(t)) {
      const Page p = describe(t);
      if (offsets_.empty()) {
        check(p);
        page_ = p;
      } else if (p != page_) {
        fail("page " + std::to_string(offsets_.size()) + " is " + p.str() + " but page 0 is " +
             page_.str() + "; gpix reads the pages of a TIFF as one 3D stack of equal pages");
      }
      offsets_.push_back(TIFFCurrentDirOffset(t));
    }
    if (TIFFLastDirectory(t)) break;
    if (!TIFFReadDirectory(t))
      fail("directory " + std::to_string(d + 1) + " cannot be read (corrupt file?)");
  }
  if (offsets_.empty()) fail("it holds only reduced-resolution images or masks, no full page");
  go_to(0);
  // ImageJ writes a stack past 4 GB as one page and its other images raw after it, saying
  // images=N in the description: read as pages it would be its first image alone.
  if (const char* text = nullptr; TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &text) && text &&
                                  std::string_view(text).starts_with("ImageJ=")) {
    const auto f = imagej_fields(text);
    const auto it = f.find("images");
    const auto images = it == f.end() ? std::nullopt : number(it->second);
    if (images && *images > static_cast<double>(offsets_.size())) {
      fail("ImageJ's description says it holds " + it->second + " images but the file has " +
           std::to_string(offsets_.size()) +
           " page(s): ImageJ stored the rest raw after the first page (its format for stacks "
           "over 4 GB), which gpix does not read; save the stack as a BigTIFF (tifffile, or "
           "Bio-Formats' exporter in Fiji)");
    }
  }
  calibration_ = calibration_of(t, offsets_.size());
  const char* kind = nullptr;
  labels_ = TIFFGetField(t, kLabelsTag, &kind) && kind && std::strcmp(kind, kLabelsText) == 0;
  pick_channel(channel);
}

void TiffStack::pick_channel(int channel) {
  TiffCalibration& c = calibration_;
  if (!c.unreadable.empty()) fail(c.unreadable);
  const auto wanted = static_cast<std::size_t>(channel);
  if (c.hyper) {
    const std::size_t nc = c.sizes[0], nz = c.sizes[1], nt = c.sizes[2];
    const std::string layout = std::to_string(nc) + " channel(s), " + std::to_string(nz) +
                               " slice(s) and " + std::to_string(nt) + " time point(s)";
    const bool one = nc > 1 && (nz == 1 || nt == 1);  // one channel is a 3D image
    if (!one || channel < 0) {
      fail("it is " + c.kind + " of " + layout +
           ", where gpix images have 3 dimensions (the pages as z slices would mix them): " +
           (one ? "read one channel at a time, as a stack of its " +
                      std::string(nz > 1 ? "slices" : "time points") +
                      " (gpix run --channels N, io::Channels::channel; 0 the first)"
                : "save one channel of one time point per file (in Fiji: Image > Hyperstacks > "
                  "Reduce Dimensionality)"));
    }
    if (wanted >= nc) {
      fail("it has channels 0 to " + std::to_string(nc - 1) + ", not " + std::to_string(channel));
    }
    const int along = nz > 1 ? 1 : 2;
    std::vector<std::uint64_t> picked;
    for (std::size_t i = 0; i < c.sizes[along]; ++i)
      picked.push_back(offsets_[wanted * c.steps[0] + i * c.steps[along]]);
    offsets_ = std::move(picked);
    // Slices keep their spacing and origin; time points have none (1, as any stack of frames).
    c.spacing[2] = along == 1 ? c.z_spacing : 1.0;
    c.origin[2] = along == 1 ? c.z_origin : 0.0;
  } else if (c.channels > 1 && channel >= 0) {
    if (wanted >= c.channels) {
      fail("it has channels 0 to " + std::to_string(c.channels - 1) + ", not " +
           std::to_string(channel));
    }
    offsets_ = {offsets_[wanted]};
  } else {
    // One sample a pixel and no channels marked: channel 0 is the image itself, any other
    // picks nothing (it read the whole stack as if no channel had been asked for).
    if (channel > 0 && page_.spp == 1) fail("it " + no_such_channel(channel));
    return;
  }
  c.channels = 1;
  current_ = static_cast<std::size_t>(-1);
}

TiffStack::~TiffStack() = default;

Component TiffStack::component() const {
  return *component_of(page_.bits, page_.format);
}

std::size_t TiffStack::row_bytes() const {
  return std::size_t{page_.width} * page_.spp * (page_.bits / 8);
}

void TiffStack::go_to(std::size_t page) {
  if (page == current_) return;
  if (!TIFFSetSubDirectory(tiff_.get(), offsets_[page]))
    fail("page " + std::to_string(page) + " cannot be read (corrupt file?)");
  if (describe(tiff_.get()) != page_) fail("the file changed while it was read");
  current_ = page;
}

void TiffStack::read(std::size_t from, std::size_t to, std::byte* out) {
  const std::size_t h = page_.height, row = row_bytes();
  // The Deflate streams of the rows read, checked on one thread per page while the pages
  // decode here; collected at the end (a failed decode throws first, the futures wait).
  std::vector<std::future<std::string>> checks;
  while (from < to) {
    const std::size_t page = from / h, y0 = from % h;
    const std::size_t y1 = std::min(h, y0 + (to - from));
    go_to(page);
    // Bottom-left pages hold their rows upwards: image rows [y0, y1) are file rows
    // [h - y1, h - y0), read in file order and then reversed.
    const bool up = page_.orientation == ORIENTATION_BOTLEFT;
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tiff_.get(), TIFFTAG_COMPRESSION, &compression);
    if (compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_DEFLATE) {
      checks.push_back(check_rows(page, static_cast<std::uint32_t>(up ? h - y1 : y0),
                                  static_cast<std::uint32_t>(up ? h - y0 : y1)));
    }
    read_file_rows(page, static_cast<std::uint32_t>(up ? h - y1 : y0),
                   static_cast<std::uint32_t>(up ? h - y0 : y1), out);
    if (up) {
      std::vector<std::byte> tmp(row);
      for (std::size_t a = 0, b = y1 - y0 - 1; a < b; ++a, --b) {
        std::memcpy(tmp.data(), out + a * row, row);
        std::memcpy(out + a * row, out + b * row, row);
        std::memcpy(out + b * row, tmp.data(), row);
      }
    }
    out += (y1 - y0) * row;
    from += y1 - y0;
  }
  for (auto& c : checks) {
    if (std::string broken = c.get(); !broken.empty()) fail(broken);
  }
}

std::future<std::string> TiffStack::check_rows(std::size_t page, std::uint32_t f0,
                                               std::uint32_t f1) {
  TIFF* t = tiff_.get();
  struct Strile {
    std::uint32_t index;
    std::uint64_t offset, bytes;
  };
  std::vector<Strile> striles;
  const auto add = [&](std::uint32_t i) {
    int err = 0;
    const std::uint64_t offset = TIFFGetStrileOffsetWithErr(t, i, &err);
    const std::uint64_t bytes = err ? 0 : TIFFGetStrileByteCountWithErr(t, i, &err);
    if (!err && bytes > 0) striles.push_back({i, offset, bytes});  // the decode reports others
  };
  const bool tiled = TIFFIsTiled(t) != 0;
  // Samples stored plane by plane: each plane's striles of those rows.
  const std::uint16_t planes = page_.planar == PLANARCONFIG_SEPARATE ? page_.spp : 1;
  std::uint64_t full = 0;
  if (tiled) {
    std::uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    full = static_cast<std::uint64_t>(std::max<tmsize_t>(TIFFTileSize(t), 0));
    if (tw > 0 && th > 0) {
      for (std::uint16_t p = 0; p < planes; ++p) {
        for (std::uint32_t y = f0 / th * th; y < f1; y += th) {
          for (std::uint32_t x = 0; x < page_.width; x += tw) add(TIFFComputeTile(t, x, y, 0, p));
        }
      }
    }
  } else {
    const std::uint32_t rows = rows_per_strip();
    full = std::uint64_t{rows} * row_bytes();
    const std::uint32_t per_plane = (page_.height + rows - 1) / rows;
    for (std::uint16_t p = 0; p < planes; ++p) {
      for (std::uint32_t s = f0 / rows; s * rows < f1; ++s) add(p * per_plane + s);
    }
  }
  return std::async(std::launch::async, [file = file_, page, tiled, full, striles] {
    try {
      StreamChecker checker(file);
      for (const Strile& s : striles) {
        // The last strip of a page may hold fewer rows: no least size, only a whole stream.
        const std::string broken = checker.check(s.offset, s.bytes, 0, 2 * full + (1 << 20));
        if (!broken.empty()) {
          return "page " + std::to_string(page) + "'s " + (tiled ? "tile " : "strip ") +
                 std::to_string(s.index) + ": " + broken;
        }
      }
      return std::string();
    } catch (const std::exception& e) {
      return std::string("its compressed data could not be checked: ") + e.what();
    }
  });
}

void TiffStack::read_file_rows(std::size_t page, std::uint32_t f0, std::uint32_t f1,
                               std::byte* out) {
  if (page_.spp == 1 || page_.planar == PLANARCONFIG_CONTIG) {
    read_plane_rows(page, 0, f0, f1, out);
    return;
  }
  // Samples stored plane by plane (PlanarConfiguration 2: tifffile's default for a (3, y, x)
  // RGB array, some cameras'): each sample's rows, then interleaved as the pixels' components.
  // ITK's reader took RGB ones through TIFFReadRGBAImage: 16-bit samples came back as 8-bit,
  // with an alpha channel the file does not have.
  const std::size_t sample = page_.bits / 8, spp = page_.spp, w = page_.width;
  const std::size_t rows = f1 - f0, row = row_bytes();
  std::vector<std::byte> plane(rows * w * sample);
  for (std::size_t s = 0; s < spp; ++s) {
    read_plane_rows(page, static_cast<std::uint16_t>(s), f0, f1, plane.data());
    for (std::size_t r = 0; r < rows; ++r) {
      const std::byte* from = plane.data() + r * w * sample;
      std::byte* to = out + r * row + s * sample;
      for (std::size_t x = 0; x < w; ++x)
        std::memcpy(to + x * spp * sample, from + x * sample, sample);
    }
  }
}

std::uint32_t TiffStack::rows_per_strip() const {
  std::uint32_t rows = 0;
  TIFFGetFieldDefaulted(tiff_.get(), TIFFTAG_ROWSPERSTRIP, &rows);
  return rows == 0 || rows > page_.height ? page_.height : rows;
}

void TiffStack::read_plane_rows(std::size_t page, std::uint16_t sample_plane, std::uint32_t f0,
                                std::uint32_t f1, std::byte* out) {
  TIFF* t = tiff_.get();
  const bool separate = page_.spp > 1 && page_.planar == PLANARCONFIG_SEPARATE;
  // A pixel's bytes in what is read: all its samples, or one of a separate plane's.
  const std::size_t bytes = (separate ? 1 : std::size_t{page_.spp}) * (page_.bits / 8);
  const std::size_t row = std::size_t{page_.width} * bytes;
  const std::string where =
      (separate ? " of sample plane " + std::to_string(sample_plane) : std::string()) +
      " of page " + std::to_string(page);
  if (TIFFIsTiled(t)) {
    std::uint32_t tw = 0, th = 0;
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
    const tmsize_t tile_bytes = TIFFTileSize(t);
    if (tw == 0 || th == 0 || tile_bytes <= 0) fail("the tile size" + where + " is invalid");
    scratch_.resize(static_cast<std::size_t>(tile_bytes));
    for (std::uint32_t y = f0 / th * th; y < f1; y += th) {
      for (std::uint32_t x = 0; x < page_.width; x += tw) {
        const std::uint32_t index = TIFFComputeTile(t, x, y, 0, sample_plane);
        if (TIFFReadEncodedTile(t, index, scratch_.data(), tile_bytes) != tile_bytes)
          fail("tile " + std::to_string(index) + where + " cannot be read (truncated file?)");
        const std::size_t cols = std::min(tw, page_.width - x) * bytes;
        const std::uint32_t r0 = std::max(f0, y), r1 = std::min({f1, y + th, page_.height});
        for (std::uint32_t r = r0; r < r1; ++r) {
          std::memcpy(out + (r - f0) * row + x * bytes,
                      scratch_.data() + std::size_t{r - y} * tw * bytes, cols);
        }
      }
    }
    return;
  }
  const std::uint32_t rows_per_strip = this->rows_per_strip();
  // A separate plane's strips follow the plane before's (libtiff numbers them so).
  const std::uint32_t first = sample_plane * ((page_.height + rows_per_strip - 1) / rows_per_strip);
  for (std::uint32_t s = f0 / rows_per_strip; s * rows_per_strip < f1; ++s) {
    const std::uint32_t y = s * rows_per_strip;
    const std::uint32_t end = std::min(page_.height, y + rows_per_strip);
    const std::size_t n = std::size_t{end - y} * row;
    // A strip wholly inside the rows asked for decodes in place; others through scratch.
    const bool whole = y >= f0 && end <= f1;
    if (!whole) scratch_.resize(n);
    std::byte* dst = whole ? out + std::size_t{y - f0} * row : scratch_.data();
    const tmsize_t got = TIFFReadEncodedStrip(t, first + s, dst, static_cast<tmsize_t>(n));
    if (got != static_cast<tmsize_t>(n)) {
      fail("strip " + std::to_string(first + s) + where +
           (got < 0 ? std::string(" cannot be read")
                    : " holds " + std::to_string(got) + " of " + std::to_string(n) + " bytes") +
           " (truncated or corrupt file?)");
    }
    if (!whole) {
      const std::uint32_t a = std::max(f0, y), b = std::min(f1, end);
      std::memcpy(out + std::size_t{a - f0} * row, scratch_.data() + std::size_t{a - y} * row,
                  std::size_t{b - a} * row);
    }
  }
}

TiffWriter::TiffWriter(const std::string& file, const Layout& layout) : layout_(layout) {
  constexpr auto kMax = std::numeric_limits<std::uint32_t>::max();
  if (layout.width > kMax || layout.height > kMax)
    fail("TIFF pages are at most 4294967295 pixels wide and high");
  std::tie(bits_, format_) = bits_and_format(layout.component);
  row_ = layout.width * (bits_ / 8);
  // Classic TIFF addresses 4 GiB with 32-bit offsets; like ITK, BigTIFF from 2 GiB up.
  const char* mode = row_ * layout.height * layout.pages > (std::size_t{2} << 30) ? "w8" : "w";
  tiff_ = open_tiff(file, mode, true);
  if (!tiff_) fail("libtiff cannot create it");
  // Strips of about 1 MiB, as ITK writes them.
  rows_per_strip_ =
      static_cast<std::uint32_t>(std::clamp<std::size_t>((1u << 20) / row_, 1, layout.height));
  // Every page's directory first, its strip arrays deferred (libtiff fills them in place as the
  // strips are written), so that the pixels of all pages follow one another in the file, as
  // ImageJ and tifffile write stacks. Both read a stack whose description says images=N as one
  // block from the first page's data on (ImageJ ignores the other directories of an
  // uncompressed stack): with each page's directory after its pixels, as libtiff writes pages
  // one by one, they read every page after the first shifted by a directory.
  TIFF* f = tiff_.get();
  for (page_ = 0; page_ < layout.pages; ++page_) {
    set_fields();
    if (!TIFFDeferStrileArrayWriting(f) || !TIFFWriteCheck(f, 0, "gpix") ||
        !TIFFWriteDirectory(f)) {
      fail("writing the directory of page " + std::to_string(page_) + " failed (disk full?)");
    }
  }
  // The strip arrays of every page next (still before any pixels), at the offsets the
  // directories now point to; the directories' own offsets for the pages' turns.
  directories_.reserve(layout.pages);
  for (std::size_t p = 0; p < layout.pages; ++p) {
    if (!(p == 0 ? TIFFSetDirectory(f, 0) : TIFFReadDirectory(f)) ||
        !TIFFForceStrileArrayWriting(f)) {
      fail("writing the strip offsets of page " + std::to_string(p) + " failed (disk full?)");
    }
    directories_.push_back(TIFFCurrentDirOffset(f));
  }
  page_ = 0;
}

TiffWriter::~TiffWriter() = default;

void TiffWriter::begin_page() {
  // O(1) where TIFFSetDirectory would walk the chain of directories from the first.
  if (!TIFFSetSubDirectory(tiff_.get(), directories_[page_]))
    fail("going back to the directory of page " + std::to_string(page_) + " failed");
}

void TiffWriter::set_fields() {
  TIFF* f = tiff_.get();
  const auto width = static_cast<std::uint32_t>(layout_.width);
  const auto height = static_cast<std::uint32_t>(layout_.height);
  TIFFSetField(f, TIFFTAG_IMAGEWIDTH, width);
  TIFFSetField(f, TIFFTAG_IMAGELENGTH, height);
  TIFFSetField(f, TIFFTAG_SAMPLESPERPIXEL, 1);
  TIFFSetField(f, TIFFTAG_BITSPERSAMPLE, bits_);
  TIFFSetField(f, TIFFTAG_SAMPLEFORMAT, format_);
  TIFFSetField(f, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
  TIFFSetField(f, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(f, TIFFTAG_ORIENTATION, ORIENTATION_TOPLEFT);
  // Deflate without a predictor: libtiff's horizontal predictor would difference the
  // caller's buffer in place.
  TIFFSetField(f, TIFFTAG_COMPRESSION,
               layout_.compress ? COMPRESSION_ADOBE_DEFLATE : COMPRESSION_NONE);
  TIFFSetField(f, TIFFTAG_ROWSPERSTRIP, rows_per_strip_);
  TIFFSetField(f, TIFFTAG_SOFTWARE, "gpix");
  const TiffCalibration& c = layout_.calibration;
  if (c.calibrated()) {
    const double xres = 1.0 / c.spacing[0], yres = 1.0 / c.spacing[1];
    if (!(xres > 0 && yres > 0 && std::isfinite(xres) && std::isfinite(yres)))
      fail("the x and y spacing must be positive and finite to be stored as a resolution");
    // As ImageJ writes it: pixels per unit, the unit named in the description unless TIFF has
    // a code for it.
    TIFFSetField(f, TIFFTAG_XRESOLUTION, xres);
    TIFFSetField(f, TIFFTAG_YRESOLUTION, yres);
    TIFFSetField(
        f, TIFFTAG_RESOLUTIONUNIT,
        c.unit == "cm" ? RESUNIT_CENTIMETER : (c.unit == "in" ? RESUNIT_INCH : RESUNIT_NONE));
  }
  // The description says what ImageJ (and gpix's reader) need: the calibration's unit and z
  // spacing, pages that are z slices, and pages that are channels (a hyperstack of C
  // channels, one slice, one frame).
  if (page_ == 0 && (c.calibrated() || c.channels > 1 || layout_.stack)) {
    TIFFSetField(f, TIFFTAG_IMAGEDESCRIPTION,
                 imagej_description(c, layout_.stack, layout_.pages).c_str());
  }
  if (layout_.labels && page_ == 0) TIFFSetField(f, kLabelsTag, kLabelsText);
  if (page_ == 0 && c.channels > 1 && c.colours.size() == c.channels)
    write_imagej_luts(f, c.colours);
  if (layout_.stack) {
    TIFFSetField(f, TIFFTAG_SUBFILETYPE, FILETYPE_PAGE);
    if (layout_.pages <= 0xffff)
      TIFFSetField(f, TIFFTAG_PAGENUMBER, static_cast<std::uint16_t>(page_),
                   static_cast<std::uint16_t>(layout_.pages));
  }
}

void TiffWriter::strip(const std::byte* src, std::uint32_t rows) {
  const std::size_t n = std::size_t{rows} * row_;
  const std::uint32_t s = static_cast<std::uint32_t>(y_ / rows_per_strip_);
  // libtiff takes a non-const buffer; without a predictor or byte swapping it only reads it.
  if (TIFFWriteEncodedStrip(tiff_.get(), s, const_cast<std::byte*>(src),
                            static_cast<tmsize_t>(n)) != static_cast<tmsize_t>(n)) {
    fail("writing strip " + std::to_string(s) + " of page " + std::to_string(page_) +
         " failed (disk full?)");
  }
  y_ += rows;
  if (y_ == layout_.height) {
    // The page's strip offsets and byte counts, in place in the arrays written up front.
    if (!TIFFFlush(tiff_.get()))
      fail("writing the directory of page " + std::to_string(page_) + " failed (disk full?)");
    ++page_;
    y_ = 0;
  }
}

void TiffWriter::append(const std::byte* rows, std::size_t n) {
  while (n > 0) {
    if (page_ >= layout_.pages) fail("more rows were given than the stack holds");
    if (y_ == 0 && pending_ == 0) begin_page();
    const std::uint32_t strip_rows =
        static_cast<std::uint32_t>(std::min<std::size_t>(rows_per_strip_, layout_.height - y_));
    if (pending_ == 0 && n >= strip_rows) {
      strip(rows, strip_rows);  // a whole strip straight from the caller's rows
      rows += std::size_t{strip_rows} * row_;
      n -= strip_rows;
      continue;
    }
    // Part of a strip: gathered until it is whole.
    buffer_.resize(std::size_t{rows_per_strip_} * row_);
    const std::size_t take = std::min<std::size_t>(n, strip_rows - pending_);
    std::memcpy(buffer_.data() + pending_ * row_, rows, take * row_);
    pending_ += take;
    rows += take * row_;
    n -= take;
    if (pending_ == strip_rows) {
      pending_ = 0;
      strip(buffer_.data(), strip_rows);
    }
  }
}

void TiffWriter::close() {
  if (page_ != layout_.pages || pending_ != 0) {
    fail("the stack was closed after " + std::to_string(page_) + " of " +
         std::to_string(layout_.pages) + " pages");
  }
  if (TIFFFlush(tiff_.get()) != 1) fail("flushing the file failed (disk full?)");
  tiff_.reset();
}

namespace {

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

  // The channel TiffStack picks (-1: none).
  void set_channel(int channel) { channel_ = channel; }

  void ReadImageInformation() override {
    stack_ = std::make_unique<TiffStack>(m_FileName, channel_);
    const bool stack = stack_->pages() > 1;
    SetNumberOfDimensions(stack ? 3 : 2);
    m_Dimensions[0] = stack_->width();
    m_Dimensions[1] = stack_->height();
    if (stack) m_Dimensions[2] = stack_->pages();
    const TiffCalibration& c = stack_->calibration();
    for (unsigned i = 0; i < GetNumberOfDimensions(); ++i) {
      m_Spacing[i] = c.spacing[i];
      m_Origin[i] = c.origin[i];
      std::vector<double> axis(GetNumberOfDimensions(), 0.0);
      axis[i] = 1.0;
      SetDirection(i, axis);
    }
    // Several samples a pixel: a vector, which io.cpp splits or picks from as it does ITK's.
    SetPixelType(stack_->samples() > 1 ? itk::IOPixelEnum::VECTOR : itk::IOPixelEnum::SCALAR);
    SetNumberOfComponents(static_cast<unsigned>(stack_->samples()));
    SetComponentType(stack_->component());
    // The unit goes where MetaImageIO keeps it, so io.cpp reads both alike.
    itk::MetaDataDictionary& dict = GetMetaDataDictionary();
    dict.Clear();
    if (!c.unit.empty()) itk::EncapsulateMetaData<std::string>(dict, kUnitKey, c.unit);
    std::string notes;
    for (const auto& n : c.notes) notes += (notes.empty() ? "" : "\n") + n;
    if (!notes.empty()) itk::EncapsulateMetaData<std::string>(dict, kNotesKey, notes);
    if (stack_->labels()) itk::EncapsulateMetaData<std::string>(dict, kKindKey, kKindLabels);
    if (c.channels > 1)
      itk::EncapsulateMetaData<std::string>(dict, kChannelsKey, std::to_string(c.channels));
    if (c.channels > 1 && !c.colours.empty())
      itk::EncapsulateMetaData<std::string>(dict, kColoursKey, colours_text(c.colours));
  }

  void Read(void* buffer) override {
    if (!stack_) fail("the header was not read");
    stack_->read(0, stack_->pages() * stack_->height(), static_cast<std::byte*>(buffer));
  }

  void Write(const void* buffer) override {
    const unsigned ndim = GetNumberOfDimensions();
    if (ndim != 2 && ndim != 3) fail("TIFF stores 2D images and 3D stacks");
    if (GetNumberOfComponents() != 1 ||
        GetComponentSize() * 8 != std::size_t{bits_and_format(GetComponentType()).first})
      fail("gpix writes one sample per pixel of 8, 16, 32 or 64 bits");
    TiffWriter::Layout l;
    l.width = m_Dimensions[0];
    l.height = m_Dimensions[1];
    l.pages = ndim == 3 ? m_Dimensions[2] : 1;
    l.stack = ndim == 3;
    l.component = GetComponentType();
    for (unsigned i = 0; i < ndim; ++i) {
      l.calibration.spacing[i] = m_Spacing[i];
      l.calibration.origin[i] = m_Origin[i];
    }
    itk::ExposeMetaData<std::string>(GetMetaDataDictionary(), kUnitKey, l.calibration.unit);
    l.compress = m_UseCompression;
    std::string kind;
    l.labels = itk::ExposeMetaData<std::string>(GetMetaDataDictionary(), kKindKey, kind) &&
               kind == kKindLabels;
    std::string channels;
    if (itk::ExposeMetaData<std::string>(GetMetaDataDictionary(), kChannelsKey, channels))
      l.calibration.channels = static_cast<std::size_t>(std::max(1, std::atoi(channels.c_str())));
    std::string colours;
    if (itk::ExposeMetaData<std::string>(GetMetaDataDictionary(), kColoursKey, colours))
      l.calibration.colours = parse_colours(colours);
    TiffWriter w(m_FileName, l);
    w.append(static_cast<const std::byte*>(buffer), l.pages * l.height);
    w.close();
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
  std::unique_ptr<TiffStack> stack_;
  int channel_ = -1;
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

itk::ImageIOBase::Pointer tiff_reader(const std::string& file, int channel) {
  // A silent probe: the reader that is chosen opens the file again and reports.
  const TiffPtr t = open_tiff(file, "r", false);
  if (t && !gpix_reads(t.get(), false)) {
    install_global_handlers();
    return itk::TIFFImageIO::New().GetPointer();
  }
  auto io = LibTiffImageIO::New();
  io->set_channel(channel);
  return io.GetPointer();
}

bool libtiff_reads(const std::string& file) {
  const TiffPtr t = open_tiff(file, "r", false);
  return t && gpix_reads(t.get());
}

namespace {

// The most one byte of a codec's data can decode to; 0 where no useful bound is known.
std::uint64_t max_ratio(std::uint16_t compression) {
  switch (compression) {
    case COMPRESSION_NONE:
      return 1;
    case COMPRESSION_PACKBITS:
      return 64;  // a run of 128 bytes in 2
    case COMPRESSION_LZW:
      return 4096;  // one code of 9 bits or more gives a string shorter than the 4096-entry table
    case COMPRESSION_ADOBE_DEFLATE:
    case COMPRESSION_DEFLATE:
      return 1032;  // deflate's limit: 258 bytes per match of at least 2 bits
    case COMPRESSION_PIXARLOG:
      return 4 * 1032;  // deflate of 11-bit codes that decode to floats of up to 4 bytes
    case COMPRESSION_ZSTD:
      return 32768;  // an RLE block: 128 KiB from 4 bytes
    case COMPRESSION_JPEG:
    case COMPRESSION_OJPEG:
      // Every 8 x 8 block of a component costs at least one bit of Huffman code and decodes
      // to at most 128 bytes (12-bit samples kept in 16); chroma subsampling at most doubles
      // the output per coded block: 2048:1, taken twice over.
      return 4096;
    default:
      return 0;
  }
}

std::string codec_name(std::uint16_t compression) {
  const TIFFCodec* c = TIFFFindCODEC(compression);
  return c && c->name ? c->name : "codec " + std::to_string(compression);
}

// Bytes of one value of a TIFF field type; 0 for a type TIFF does not define (libtiff skips
// such entries).
std::uint64_t type_bytes(std::uint16_t type) {
  switch (type) {
    case 1:
    case 2:
    case 6:
    case 7:
      return 1;  // BYTE ASCII SBYTE UNDEFINED
    case 3:
    case 8:
      return 2;  // SHORT SSHORT
    case 4:
    case 9:
    case 11:
    case 13:
      return 4;  // LONG SLONG FLOAT IFD
    case 5:
    case 10:
    case 12:
    case 16:
    case 17:
    case 18:
      return 8;  // RATIONAL ... IFD8
    default:
      return 0;
  }
}

// The directory entries of every page, read from the file's bytes (classic and BigTIFF): an
// entry whose values lie beyond the end of the file. ITK 5.2's bundled libtiff allocates what
// an entry claims before it reads it: an 868-byte file with an unknown ASCII tag claiming
// 1.6 GB took 5-12 s of page faults under ASan (a timeout in fuzz_read_tiff); the system's
// libtiff, which gpix's reader uses, checks this itself.
// ASCII entries whose bytes hold no NUL go to *unterminated (page, tag): libtiff ends the text
// of the tags it knows, not of others, which ITK then reads with strlen past their end.
struct AsciiEntry {
  std::size_t page = 0;
  std::uint64_t tag = 0, count = 0;
};
std::string check_tiff_entries(const std::string& file, std::vector<AsciiEntry>* unterminated) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  in.seekg(0, std::ios::end);
  const auto size = static_cast<std::uint64_t>(std::streamoff(in.tellg()));
  auto bytes = [&](std::uint64_t at, std::size_t n) -> std::optional<std::vector<unsigned char>> {
    if (at > size || n > size - at) return std::nullopt;
    std::vector<unsigned char> b(n);
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(n))) {
      return std::nullopt;
    }
    return b;
  };
  const auto head = bytes(0, 16);
  if (!head) return {};  // too short for a header: libtiff says so
  const bool little = (*head)[0] == 'I';
  auto num = [little](const unsigned char* p, int n) {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i) {
      const int k = little ? n - 1 - i : i;
      v = (v << 8) | p[k];
    }
    return v;
  };
  const std::uint64_t magic = num(head->data() + 2, 2);
  if (magic != 42 && magic != 43) return {};
  const bool big = magic == 43;
  const int count_bytes = big ? 8 : 2;  // entries per directory
  const int entry_bytes = big ? 20 : 12;
  const int inline_bytes = big ? 8 : 4;  // values that fit in the entry itself
  std::uint64_t ifd = big ? num(head->data() + 8, 8) : num(head->data() + 4, 4);
  std::vector<std::uint64_t> seen;
  for (std::size_t page = 0; ifd != 0 && seen.size() < 65536; ++page) {
    // A chain of directories that comes back to one already seen: the system's libtiff stops
    // there, ITK's bundled copy counts pages round the loop for ever (TIFFNumberOfDirectories
    // from ITK's CanReadFile: a directory pointing at itself, a timeout of fuzz_read_tiff).
    if (const auto again = std::find(seen.begin(), seen.end(), ifd); again != seen.end()) {
      return "its chain of pages loops: page " + std::to_string(page - 1) +
             "'s next-directory offset " + std::to_string(ifd) + " leads back to page " +
             std::to_string(again - seen.begin()) + " (the file is corrupt)";
    }
    seen.push_back(ifd);
    const auto c = bytes(ifd, static_cast<std::size_t>(count_bytes));
    if (!c) break;  // libtiff reports a directory beyond the file
    const std::uint64_t n = num(c->data(), count_bytes);
    // More entries than the rest of the file holds (a BigTIFF count near 2^64 also wrapped the
    // size below round): libtiff reports the directory as truncated.
    if (n > (size - ifd - static_cast<std::uint64_t>(count_bytes)) / entry_bytes) break;
    // Only the entries: a directory whose next-directory offset is cut off by the end of the
    // file still has its entries read by ITK's bundled libtiff (CI's fuzz run: an unterminated
    // 1-byte text there overran ITK's strlen while this scan had skipped the directory).
    const auto entries = bytes(ifd + static_cast<std::uint64_t>(count_bytes),
                               static_cast<std::size_t>(n) * entry_bytes);
    if (!entries) break;
    for (std::uint64_t i = 0; i < n; ++i) {
      const unsigned char* e = entries->data() + i * static_cast<std::uint64_t>(entry_bytes);
      const auto tag = num(e, 2);
      const auto type = static_cast<std::uint16_t>(num(e + 2, 2));
      const auto per = type_bytes(type);
      const std::uint64_t count = num(e + 4, big ? 8 : 4);
      const unsigned char* value = e + (big ? 12 : 8);
      if (type == 2 && count > 0 && count <= static_cast<std::uint64_t>(inline_bytes)) {
        if (!std::memchr(value, 0, static_cast<std::size_t>(count))) {
          unterminated->push_back({page, tag, count});
        }
      }
      if (per == 0 || count <= static_cast<std::uint64_t>(inline_bytes) / per) continue;
      const std::uint64_t at = num(value, inline_bytes);
      if (count > size / per || at > size - count * per) {
        return "page " + std::to_string(page) + "'s tag " + std::to_string(tag) + " claims " +
               std::to_string(count) + " values (" + std::to_string(count) + " x " +
               std::to_string(per) + " bytes) at offset " + std::to_string(at) +
               ", beyond the end of this " + std::to_string(size) +
               "-byte file (the file is corrupt or truncated)";
      }
      if (type == 2) {
        // The text is in the file (checked above); look for its NUL a piece at a time.
        bool ended = false;
        for (std::uint64_t off = 0; off < count && !ended; off += 65536) {
          const auto piece = bytes(
              at + off, static_cast<std::size_t>(std::min<std::uint64_t>(65536, count - off)));
          if (!piece) break;
          ended = std::memchr(piece->data(), 0, piece->size()) != nullptr;
        }
        if (!ended) unterminated->push_back({page, tag, count});
      }
    }
    const auto next =
        bytes(ifd + count_bytes + n * entry_bytes, static_cast<std::size_t>(inline_bytes));
    if (!next) break;
    ifd = num(next->data(), inline_bytes);
  }
  return {};
}

}  // namespace

std::string check_tiff_capacity(const std::string& file) {
  const TiffPtr tiff = open_tiff(file, "rm", false);
  if (!tiff) return {};  // the reader says what is wrong
  TIFF* t = tiff.get();
  const std::uint64_t file_size = TIFFGetSizeProc(t)(TIFFClientdata(t));
  std::size_t page = 0;
  for (tdir_t d = 0;; ++d) {
    const bool full = full_page(t);
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &compression);
    // A codec libtiff lacks cannot give a pixel: said before anything is allocated (a 258-byte
    // file with codec 15 and a 5 GB page made the reader allocate the page first, the long
    // fuzz run of the eighth session).
    if (full && !TIFFIsCODECConfigured(compression)) {
      return "page " + std::to_string(page) + " is compressed with " + codec_name(compression) +
             ", which this build of libtiff cannot decode (convert the file to an uncompressed, "
             "LZW or Deflate TIFF)";
    }
    const std::uint64_t ratio = max_ratio(compression);
    if (full && ratio > 0) {
      std::uint32_t height = 0;
      std::uint16_t planar = PLANARCONFIG_CONTIG, spp = 1;
      TIFFGetField(t, TIFFTAG_IMAGELENGTH, &height);
      TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
      TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
      const std::uint64_t line = TIFFScanlineSize64(t);  // 0 when the size overflows
      const std::uint64_t planes = planar == PLANARCONFIG_SEPARATE ? spp : 1;
      const std::uint32_t striles = TIFFIsTiled(t) ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
      const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max();
      const bool sized = height > 0 && line > 0 && line <= limit / height / planes;
      const std::uint64_t want = sized ? line * height * planes : 0;
      // Summing stops once the strips hold enough, and after as many strips as the file has
      // room for offsets (4 bytes each): a header claiming 4 billion one-row strips took
      // minutes of TIFFGetStrileOffset calls here (a timeout in the long fuzz run).
      const std::uint64_t most = std::min<std::uint64_t>(striles, file_size / 4 + 2);
      std::uint64_t stored = 0;
      for (std::uint32_t i = 0; i < most; ++i) {
        const std::uint64_t offset = TIFFGetStrileOffset(t, i);
        const std::uint64_t count = TIFFGetStrileByteCount(t, i);
        if (offset < file_size) stored += std::min(count, file_size - offset);
        if (stored > limit / ratio || stored * ratio >= want) break;
      }
      const bool fits = sized && stored <= limit / ratio;
      const std::uint64_t need = fits ? want : 0;
      if (fits && need > stored * ratio) {
        const std::string codec =
            compression == COMPRESSION_NONE ? "uncompressed" : codec_name(compression);
        return "page " + std::to_string(page) + " claims " + human_bytes(need) + " (" +
               std::to_string(need) + " bytes) of pixels, but its " +
               (TIFFIsTiled(t) ? "tiles" : "strips") + " hold " + std::to_string(stored) +
               " bytes of " + codec + " data in this " + std::to_string(file_size) +
               "-byte file, which decode to at most " + std::to_string(stored * ratio) + " bytes" +
               (ratio > 1 ? " (" + std::to_string(ratio) + ":1)" : std::string()) +
               ": the file is truncated or its header is corrupt";
      }
    }
    if (full) ++page;
    if (TIFFLastDirectory(t) || !TIFFReadDirectory(t)) break;  // the reader reports bad chains
  }
  return {};
}

std::string check_tiff_streams(const std::string& file) {
  const TiffPtr tiff = open_tiff(file, "rm", false);
  if (!tiff) return {};
  TIFF* t = tiff.get();
  if (gpix_reads(t, false)) return {};  // TiffStack::read checks the strips it decodes
  std::optional<StreamChecker> checker;
  for (tdir_t d = 0;; ++d) {
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetField(t, TIFFTAG_COMPRESSION, &compression);
    if (compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_DEFLATE) {
      if (!checker) checker.emplace(file);
      const bool tiled = TIFFIsTiled(t) != 0;
      const std::uint32_t n = tiled ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
      const std::uint64_t full = tiled ? TIFFTileSize64(t) : TIFFStripSize64(t);
      for (std::uint32_t i = 0; i < n; ++i) {
        int err = 0;
        const std::uint64_t offset = TIFFGetStrileOffsetWithErr(t, i, &err);
        const std::uint64_t bytes = err ? 0 : TIFFGetStrileByteCountWithErr(t, i, &err);
        if (err || bytes == 0) continue;  // missing or sparse: the reader deals with it
        // The last strip of a page may hold fewer rows: no least size, only a whole stream.
        const std::string broken = checker->check(offset, bytes, 0, 2 * full + (1 << 20));
        if (!broken.empty()) {
          return "page " + std::to_string(d) + "'s " + (tiled ? "tile " : "strip ") +
                 std::to_string(i) + ": " + broken;
        }
      }
    }
    if (TIFFLastDirectory(t) || !TIFFReadDirectory(t)) break;
  }
  return {};
}

std::string check_tiff_tags(const std::string& file) {
  const TiffPtr tiff = open_tiff(file, "r", false);
  if (tiff && gpix_reads(tiff.get(), false))
    return {};  // not ITK's: the system's libtiff checks this
  std::vector<AsciiEntry> unterminated;
  if (std::string bad = check_tiff_entries(file, &unterminated); !bad.empty()) return bad;
  TIFF* t = tiff.get();
  for (const AsciiEntry& a : unterminated) {
    // Tags libtiff knows as plain text (ImageDescription, Software, ...) get their NUL from
    // libtiff; unknown and counted ones (an anonymous field) do not, and ITK's ReadTIFFTags
    // takes every ASCII value as a C string (fuzz_read_tiff: a 1-byte tag, ASan
    // heap-buffer-overflow in strlen). Where the system's libtiff cannot open the file, ITK's
    // own copy may still read it (CI's fuzz run: a 1-byte tag 769 beside an ImageDescription
    // past the end of the file), so every unterminated text is refused then.
    const TIFFField* field = t ? TIFFFieldWithTag(t, static_cast<ttag_t>(a.tag)) : nullptr;
    if (field && !TIFFFieldPassCount(field)) continue;
    return "page " + std::to_string(a.page) + "'s tag " + std::to_string(a.tag) + " holds " +
           std::to_string(a.count) +
           " bytes of ASCII text without the NUL byte that ends TIFF text, and ITK's reader of "
           "colour and palette TIFFs would read past it (the tag is corrupt: remove it, or end "
           "its text with a NUL byte)";
  }
  if (!t) return {};  // ITK's reader says what is wrong
  std::optional<Page> first;
  std::size_t page = 0;
  for (tdir_t d = 0;; ++d) {
    // ITK's reader of colour and palette TIFFs reads every full page (thumbnails and masks
    // skipped) with page 0's width and each page's own scanline size: a narrower later page
    // overflowed its buffer (ASan: heap-buffer-overflow), a wider one came out cropped. As
    // gpix's own reader, pages that differ are refused.
    if (full_page(t)) {
      const Page p = describe(t);
      if (!first) {
        first = p;
      } else if (p.width != first->width || p.height != first->height || p.spp != first->spp ||
                 p.bits != first->bits || p.format != first->format ||
                 p.photometric != first->photometric) {
        const auto said = [](const Page& q) {  // str() leaves the photometric out
          return q.str() + " (photometric " + std::to_string(q.photometric) + ")";
        };
        return "page " + std::to_string(page) + " is " + said(p) + " but page 0 is " +
               said(*first) + "; gpix reads the pages of a TIFF as one 3D stack of equal pages";
      }
      ++page;
    }
    for (int i = 0, n = TIFFGetTagListCount(t); i < n; ++i) {
      const std::uint32_t tag = TIFFGetTagListEntry(t, i);
      const TIFFField* field = TIFFFieldWithTag(t, tag);
      if (!field || TIFFFieldDataType(field) != TIFF_ASCII || TIFFFieldPassCount(field)) continue;
      const int fixed = TIFFFieldReadCount(field);  // TIFF_VARIABLE and friends are negative
      const char* value = nullptr;
      if (fixed <= 1 || TIFFGetField(t, tag, &value) != 1 || !value) continue;
      const std::size_t length = std::strlen(value);  // libtiff keeps length + 1 bytes
      if (length + 1 < static_cast<std::size_t>(fixed)) {
        const std::string name = TIFFFieldName(field);
        const bool date = tag == TIFFTAG_DATETIME;
        return "page " + std::to_string(d) + "'s " + name + " tag (" + std::to_string(tag) +
               ") holds " + std::to_string(length) + " characters where TIFF fixes " +
               std::to_string(fixed - 1) + (date ? " (\"YYYY:MM:DD HH:MM:SS\")" : "") +
               ", and ITK's reader of colour and palette TIFFs would read past it (the tag is "
               "corrupt; mend it, e.g. tiffset -d " +
               std::to_string(d) + " -s " + std::to_string(tag) + " '" +
               (date ? "2026:01:31 12:00:00"
                     : std::string(static_cast<std::size_t>(fixed - 1), 'x')) +
               "' FILE, or remove it)";
      }
    }
    if (TIFFLastDirectory(t) || !TIFFReadDirectory(t)) break;
  }
  return {};
}

itk::ImageIOBase::Pointer libtiff_io() {
  return LibTiffImageIO::New().GetPointer();
}

}  // namespace gpix::io::detail
