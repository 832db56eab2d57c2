#include "gpix/io.h"

#include <itkCommonEnums.h>
#include <itkImageIOBase.h>
#include <itkImageIORegion.h>
#include <itkJPEGImageIO.h>
#include <itkMetaDataObject.h>
#include <itkMetaImageIO.h>
#include <itkNiftiImageIO.h>
#include <itkNrrdImageIO.h>
#include <itkPNGImageIO.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <mutex>
#include <optional>
#include <span>
#include <system_error>
#include <vector>

#include "gpix/error.h"
#include "gpix/stats.h"
#include "io_shared.h"
#include "jpeg.h"
#include "tiff.h"
#include "validate.h"

namespace gpix::io {
namespace fs = std::filesystem;

namespace {

using Component = itk::IOComponentEnum;
using PixelKind = itk::IOPixelEnum;

using detail::fail;
using detail::str;

std::string q(const fs::path& p) {
  return "'" + str(p) + "'";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

const std::vector<DType> kAll(kAllDTypes.begin(), kAllDTypes.end());

// What each writer stores without loss, checked by tests/io/test_io_formats.cpp. TIFF is
// written with libtiff (tiff.h), the others with ITK.
std::vector<Format> make_formats() {
  using enum DType;
  using enum Kept;
  return {
      {"TIFF", {".tif", ".tiff"}, kAll, 2, 3, false, spacing_origin, true},
      {"PNG", {".png"}, {u8, u16}, 2, 2, false, spacing_yx, false},
      {"JPEG", {".jpg", ".jpeg"}, {u8}, 2, 2, true, none, false},
      {"NRRD", {".nrrd", ".nhdr"}, kAll, 1, 3, false, all, true},
      {"MetaImage", {".mha", ".mhd"}, kAll, 1, 3, false, all, true},
      {"NIfTI", {".nii", ".nii.gz"}, kAll, 1, 3, false, all, true},
  };
}

// JPEG is read by gpix's own libjpeg reader (jpeg.h says why) and written by ITK.
// teem, ITK's NRRD reader and writer, keeps its error messages in process-wide buffers (biff)
// without a lock: two NRRD files failing on two threads at once overran them (ASan
// heap-buffer-overflow in itk_biffMsgStrSet, test_io_bad concurrent_failures; a SIGSEGV in a
// release build). Every ITK call on a NRRD file holds this lock: NRRD reads and writes go one
// at a time, other formats in parallel.
std::unique_lock<std::mutex> library_lock(const std::string& format) {
  static std::mutex teem;
  if (format == "NRRD") return std::unique_lock<std::mutex>(teem);
  return {};
}

itk::ImageIOBase::Pointer make_io(const std::string& format, bool writing = false) {
  if (format == "TIFF") return detail::libtiff_io();
  if (format == "PNG") return itk::PNGImageIO::New().GetPointer();
  if (format == "JPEG")
    return writing ? itk::JPEGImageIO::New().GetPointer() : detail::jpeg_reader();
  if (format == "NRRD") return itk::NrrdImageIO::New().GetPointer();
  if (format == "MetaImage") return itk::MetaImageIO::New().GetPointer();
  return itk::NiftiImageIO::New().GetPointer();
}

std::string known_extensions() {
  std::string s;
  for (const auto& f : formats()) {
    for (const auto& e : f.extensions) s += (s.empty() ? "" : " ") + e;
  }
  return s;
}

std::string dtype_list(const std::vector<DType>& ts) {
  std::string s;
  for (DType t : ts) s += (s.empty() ? "" : ", ") + std::string(name(t));
  return s;
}

std::string itk_message(const itk::ExceptionObject& e) {
  std::string d = e.GetDescription();
  while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
  if (d.empty()) d = e.what();
  // ITK names the object that threw by its address ("NrrdImageIO(0x5627c389ec80): "): noise
  // to a user, and it makes the same failure read differently from call to call.
  for (std::size_t at = d.find("(0x"); at != std::string::npos; at = d.find("(0x", at)) {
    std::size_t end = at + 3;
    while (end < d.size() && std::isxdigit(static_cast<unsigned char>(d[end]))) ++end;
    if (end < d.size() && d[end] == ')' && end > at + 3) {
      d.erase(at, end + 1 - at);
    } else {
      at += 3;
    }
  }
  return d;
}

// Bytes the machine can still give: MemAvailable from /proc/meminfo, else physical memory.
std::uint64_t available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0
             ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page)
             : std::numeric_limits<std::uint64_t>::max();
}

// The format that can actually read p, for messages about lying extensions.
std::string sniff(const fs::path& p) {
  for (const auto& f : formats()) {
    if (!detail::check_structure(f.name, p).empty()) continue;
    auto io = make_io(f.name);
    try {
      if (io->CanReadFile(str(p).c_str())) return f.name;
    } catch (const itk::ExceptionObject&) {
    }
  }
  return {};
}

std::vector<double> reversed(const std::vector<double>& v) {
  return {v.rbegin(), v.rend()};
}

// Extracts one component, the luminance, or a (c, y, x) stack from interleaved pixels.
template <class T>
void apply_policy(const T* in, std::size_t n, int comps, const ReadOptions& o, HostArray& out) {
  switch (o.channels) {
    case Channels::channel: {
      T* dst = out.as<T>().data();
      for (std::size_t i = 0; i < n; ++i)
        dst[i] = in[i * static_cast<std::size_t>(comps) + static_cast<std::size_t>(o.channel)];
      break;
    }
    case Channels::split: {
      T* dst = out.as<T>().data();
      for (int c = 0; c < comps; ++c) {
        for (std::size_t i = 0; i < n; ++i)
          dst[static_cast<std::size_t>(c) * n + i] =
              in[i * static_cast<std::size_t>(comps) + static_cast<std::size_t>(c)];
      }
      break;
    }
    case Channels::luminance: {
      float* dst = out.as<float>().data();
      for (std::size_t i = 0; i < n; ++i) {
        const T* px = in + i * static_cast<std::size_t>(comps);
        dst[i] = static_cast<float>(0.2126 * static_cast<double>(px[0]) +
                                    0.7152 * static_cast<double>(px[1]) +
                                    0.0722 * static_cast<double>(px[2]));
      }
      break;
    }
    case Channels::error:
      break;
  }
}

std::string pixel_kind_name(PixelKind k) {
  return itk::ImageIOBase::GetPixelTypeAsString(k);
}

}  // namespace

std::vector<double> Metadata::spacing_or_default(int ndim) const {
  if (spacing.size() == static_cast<std::size_t>(ndim)) return spacing;
  return std::vector<double>(static_cast<std::size_t>(ndim), 1.0);
}
std::vector<double> Metadata::origin_or_default(int ndim) const {
  if (origin.size() == static_cast<std::size_t>(ndim)) return origin;
  return std::vector<double>(static_cast<std::size_t>(ndim), 0.0);
}
std::vector<double> Metadata::direction_or_default(int ndim) const {
  const auto n = static_cast<std::size_t>(ndim);
  if (direction.size() == n * n) return direction;
  std::vector<double> d(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) d[i * n + i] = 1.0;
  return d;
}

const std::vector<Format>& formats() {
  static const std::vector<Format> f = make_formats();
  return f;
}

const Format& format_for(const fs::path& path) {
  const std::string name = lower(str(path.filename()));
  const Format* best = nullptr;
  std::size_t best_len = 0;
  for (const auto& f : formats()) {
    for (const auto& e : f.extensions) {
      if (name.size() > e.size() && name.ends_with(e) && e.size() > best_len) {
        best = &f;
        best_len = e.size();
      }
    }
  }
  if (!best) {
    const std::string ext = str(path.extension());
    fail(path, (ext.empty() ? std::string("has no extension")
                            : "has the unknown extension '" + ext + "'") +
                   "; gpix reads and writes these: " + known_extensions());
  }
  return *best;
}

namespace {

// The nifti library, asked for x.nii.gz, opens x.nii instead when both exist, which would
// silently give the other file's pixels. Such files are read through a symbolic link in a
// private folder where the link has no sibling.
class NiftiLink {
 public:
  explicit NiftiLink(const fs::path& path) {
    const std::string name = lower(str(path.filename()));
    if (!name.ends_with(".nii.gz")) return;
    std::error_code ec;
    fs::path sibling = path;
    sibling.replace_extension();  // drops ".gz"
    if (!fs::exists(sibling, ec)) return;
    std::string tmpl = str(fs::temp_directory_path(ec) / "gpix-nifti-XXXXXX");
    if (!mkdtemp(tmpl.data()))
      fail(path, std::string("cannot create a temporary folder: ") + std::strerror(errno));
    dir_ = fs::u8path(tmpl);
    link_ = dir_ / "image.nii.gz";
    fs::create_symlink(fs::absolute(path, ec), link_, ec);
    if (ec) fail(path, "cannot link it into a temporary folder: " + ec.message());
  }
  ~NiftiLink() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  NiftiLink(const NiftiLink&) = delete;
  NiftiLink& operator=(const NiftiLink&) = delete;
  std::string file(const fs::path& path) const { return link_.empty() ? str(path) : str(link_); }

 private:
  fs::path dir_, link_;
};

// Every exception of a library under a reader or writer (ITK's ExceptionObject, the standard
// library's) becomes gpix's IoError naming the file, wherever in the call it was raised: no
// foreign exception type reaches gpix's callers (an escaped one aborted `gpix info`).
template <class F>
auto translated(const fs::path& path, const char* doing, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const gpix::Error&) {
    throw;
  } catch (const itk::ExceptionObject& e) {
    fail(path, std::string(doing) + ": " + itk_message(e));
  } catch (const std::bad_alloc&) {
    fail(path, std::string(doing) + ": out of host memory");
  } catch (const std::exception& e) {
    fail(path, std::string(doing) + ": " + e.what());
  }
}

Image read_unchecked(const fs::path& path, const ReadOptions& options) {
  const Format& format = format_for(path);
  detail::check_input_file(path);
  const NiftiLink nifti_link(path);
  const std::string p = nifti_link.file(path);
  // What libtiff says (gpix's reader or ITK's) goes into the IoError or Image::warnings,
  // never to stderr.
  std::optional<detail::TiffMessages> tiff;
  if (format.name == "TIFF") tiff.emplace();
  auto libtiff = [&] { return tiff ? tiff->says() : std::string(); };
  const auto io = detail::read_header(path, format, p, options, libtiff);

  // Dimensions in ITK order (x first); trailing extents of 1 beyond three are dropped (NIfTI
  // writes 3D volumes as 4D with one time point on request).
  const unsigned itk_dims = io->GetNumberOfDimensions();
  std::vector<std::size_t> ext;
  for (unsigned i = 0; i < itk_dims; ++i) ext.push_back(io->GetDimensions(i));
  while (ext.size() > 3 && ext.back() == 1) ext.pop_back();
  if (ext.empty() || ext.size() > 3) {
    std::string dims;
    for (auto e : ext) dims += (dims.empty() ? "" : " x ") + std::to_string(e);
    fail(path, "has " + std::to_string(ext.size()) + " dimensions (" + dims +
                   ", x first); gpix arrays have 1 to 3 dimensions");
  }
  const int ndim = static_cast<int>(ext.size());
  for (auto e : ext) {
    if (e == 0) fail(path, "has an axis of extent 0 in its header");
  }

  const PixelKind kind = io->GetPixelType();
  if (io->GetComponentType() == Component::UNKNOWNCOMPONENTTYPE) {
    // ITK throws from GetComponentSize() for it; say what the header lacks instead.
    fail(path,
         "has a header whose pixel type is unknown or misspelt (a MetaImage ElementType "
         "such as MET_USHORT, a NIfTI datatype code); gpix reads " +
             dtype_names());
  }
  const auto dtype = detail::to_dtype(io->GetComponentType(), io->GetComponentSize());
  if (!dtype || kind == PixelKind::COMPLEX || kind == PixelKind::SYMMETRICSECONDRANKTENSOR ||
      kind == PixelKind::DIFFUSIONTENSOR3D || kind == PixelKind::MATRIX ||
      kind == PixelKind::VARIABLESIZEMATRIX) {
    fail(path, "holds " + pixel_kind_name(kind) + " pixels of " +
                   itk::ImageIOBase::GetComponentTypeAsString(io->GetComponentType()) +
                   "; gpix reads scalar pixels (" + dtype_names() +
                   ") and RGB/RGBA/vector pixels through ReadOptions::channels");
  }
  const int comps = static_cast<int>(io->GetNumberOfComponents());
  const bool rgb = kind == PixelKind::RGB || kind == PixelKind::RGBA || (comps == 3 || comps == 4);
  if (comps > 1) {
    const std::string what =
        std::to_string(comps) + "-component " + pixel_kind_name(kind) + " pixels";
    switch (options.channels) {
      case Channels::error:
        fail(path, "holds " + what +
                       "; choose what to read with ReadOptions::channels (on the command line "
                       "`--channels`, which gpix run and gpix info take): "
                       "luminance (RGB/RGBA "
                       "to float32), channel N (one component), or split (components as the first "
                       "axis of a "
                       "3D stack; 2D files only)");
      case Channels::luminance:
        if (!rgb || comps < 3) fail(path, "holds " + what + "; luminance needs RGB or RGBA pixels");
        break;
      case Channels::channel:
        if (options.channel < 0 || options.channel >= comps) {
          fail(path, "holds " + what + "; channel " + std::to_string(options.channel) +
                         " does not exist (use 0 to " + std::to_string(comps - 1) + ")");
        }
        break;
      case Channels::split:
        if (ndim > 2)
          fail(path,
               "holds 3D " + what + "; split would need 4 dimensions: read one channel instead");
        break;
    }
  }

  // The size the header claims, checked before any allocation.
  std::uint64_t elements = 1;
  const std::uint64_t csize = size_of(*dtype);
  const std::uint64_t limit =
      std::numeric_limits<std::uint64_t>::max() / csize / static_cast<std::uint64_t>(comps);
  for (auto e : ext) {
    if (e > limit / elements)
      fail(path, "has a header that claims more pixels than 64-bit sizes can count");
    elements *= e;
  }
  const std::uint64_t claimed = elements * csize * static_cast<std::uint64_t>(comps);
  if (options.max_bytes != 0 && claimed > options.max_bytes) {
    fail(path, "has a header that claims " + human_bytes(claimed) + " (" + std::to_string(claimed) +
                   " bytes) of pixels, more than the " + human_bytes(options.max_bytes) + " (" +
                   std::to_string(options.max_bytes) +
                   " bytes) this read allows (ReadOptions::max_bytes)");
  }
  const std::uint64_t avail = available_memory();
  if (claimed > avail) {
    fail(path, "has a header that claims " + human_bytes(claimed) +
                   " of pixels but this machine has " + human_bytes(avail) +
                   " of memory available; the file is corrupt or too large to load whole");
  }

  if (const std::string why = detail::check_data_size(format.name, path, claimed); !why.empty()) {
    fail(path, "is not a readable " + format.name + " file: " + why);
  }

  // The compressed stream checked to its end beside ITK's read (a second decompression: on
  // another core it costs no time); its finding wins over the pixels ITK returns.
  std::future<std::string> stream_check;
  if (detail::has_stream(format.name, path)) {
    stream_check = std::async(std::launch::async, [name = format.name, path, claimed] {
      try {
        return detail::check_stream(name, path, claimed);
      } catch (const std::exception& e) {
        return std::string("its compressed data could not be checked: ") + e.what();
      }
    });
  }

  std::vector<std::size_t> zyx(ext.rbegin(), ext.rend());
  Image img;
  img.format = format.name;
  img.file_components = comps;
  try {
    itk::ImageIORegion region(itk_dims);
    for (unsigned i = 0; i < itk_dims; ++i) {
      region.SetIndex(i, 0);
      region.SetSize(i, io->GetDimensions(i));
    }
    io->SetIORegion(region);
    const auto one_teem = library_lock(format.name);
    if (comps == 1) {
      img.pixels = HostArray::empty(Shape(std::span<const std::size_t>(zyx)), *dtype);
      io->Read(img.pixels.data());  // straight into the array: no staging copy
    } else {
      std::vector<std::byte> staging(static_cast<std::size_t>(claimed));
      io->Read(staging.data());
      const std::size_t n = static_cast<std::size_t>(elements);
      if (options.channels == Channels::split)
        zyx.insert(zyx.begin(), static_cast<std::size_t>(comps));
      const DType out_t = options.channels == Channels::luminance ? DType::f32 : *dtype;
      img.pixels = HostArray::empty(Shape(std::span<const std::size_t>(zyx)), out_t);
      visit_dtype(*dtype, [&](auto z) {
        using T = decltype(z);
        apply_policy<T>(reinterpret_cast<const T*>(staging.data()), n, comps, options, img.pixels);
      });
    }
  } catch (const itk::ExceptionObject& e) {
    fail(path, "cannot read the " + format.name +
                   " pixels (truncated or corrupt file?): " + itk_message(e) + libtiff());
  } catch (const OutOfMemory& e) {
    fail(path, std::string("does not fit in host memory: ") + e.what());
  } catch (const std::bad_alloc&) {
    fail(path, "does not fit in host memory (" + human_bytes(claimed) + ")");
  }
  if (stream_check.valid()) {
    if (const std::string why = stream_check.get(); !why.empty()) {
      fail(path, "is not a readable " + format.name + " file: " + why);
    }
  }

  // Metadata, reversed into (z, y, x) order; split stacks get a unit channel axis.
  std::vector<std::string> notes;
  img.meta = detail::metadata_of(*io, ndim, format, path, &notes);
  const auto n = static_cast<std::size_t>(ndim);
  const std::vector<double>& dir = img.meta.direction;
  if (img.pixels.shape().ndim() != ndim) {
    // split: the channel axis comes first, with unit spacing and no rotation.
    const std::size_t m = n + 1;
    img.meta.spacing.insert(img.meta.spacing.begin(), 1.0);
    img.meta.origin.insert(img.meta.origin.begin(), 0.0);
    std::vector<double> d(m * m, 0.0);
    d[0] = 1.0;
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t c = 0; c < n; ++c) d[(r + 1) * m + c + 1] = dir[r * n + c];
    }
    img.meta.direction = d;
  }
  if (tiff) img.warnings = tiff->all();
  img.warnings.insert(img.warnings.end(), notes.begin(), notes.end());
  // One channel of a stack of channels (a NRRD or MetaImage marked so; a TIFF's reader picks
  // its pages itself, leaving no mark): its plane.
  if (options.channels == Channels::channel && comps == 1 && img.meta.channels > 1) {
    const auto c = static_cast<std::size_t>(options.channel);
    const Shape whole = img.pixels.shape();
    if (options.channel < 0 || c >= whole.depth()) {
      fail(path, "has channels 0 to " + std::to_string(whole.depth() - 1) + ", not " +
                     std::to_string(options.channel));
    }
    HostArray plane = HostArray::empty(Shape{whole.height(), whole.width()}, *dtype);
    std::memcpy(plane.data(), img.pixels.data() + c * plane.bytes(), plane.bytes());
    img.pixels = std::move(plane);
    img.meta = carried(img.meta, whole, img.pixels.shape());
  } else if (options.channels == Channels::channel && comps == 1 && options.channel > 0 &&
             format.name != "TIFF") {
    // (A TIFF's reader says so itself, where it knows hyperstacks from plain stacks.)
    fail(path, detail::no_such_channel(options.channel));
  } else if ((options.channels == Channels::split || options.channels == Channels::luminance) &&
             comps == 1 && img.meta.channels <= 1) {
    // Read as it is, as a plain image is for channel 0 (a batch of colour and grey files
    // takes one option), but said: the option asked for something this file does not have.
    img.warnings.push_back(
        std::string("it has one sample a pixel: ") +
        (options.channels == Channels::split ? "split has no channels to split"
                                             : "luminance has no RGB to combine") +
        ", so it is read as it is (" + std::string(name(*dtype)) + ")");
  }
  return img;
}

}  // namespace

std::size_t hyperstack_channels(const fs::path& path) {
  try {
    if (format_for(path).name != "TIFF") return 0;
    return detail::tiff_hyperstack_channels(str(path));
  } catch (const std::exception&) {
    return 0;  // read() reports the file's trouble
  }
}

std::vector<std::uint32_t> hyperstack_colours(const fs::path& path, std::size_t channels) {
  try {
    if (format_for(path).name != "TIFF" || channels < 2) return {};
    return detail::tiff_hyperstack_colours(str(path), channels);
  } catch (const std::exception&) {
    return {};  // read() reports the file's trouble
  }
}

Image read(const fs::path& path, const ReadOptions& options) {
  return translated(path, "cannot be read", [&] { return read_unchecked(path, options); });
}

DeviceImage read_to_device(const fs::path& path, const Device& device, const ReadOptions& options) {
  Image img = read(path, options);
  DeviceImage d;
  d.pixels = Array::push(img.pixels, device);
  d.meta = std::move(img.meta);
  d.format = std::move(img.format);
  d.file_components = img.file_components;
  d.warnings = std::move(img.warnings);
  return d;
}

namespace {

// ITK's PNG writer crashes the process (a double free in PNGImageIO::WriteSlice after libpng's
// error) when a write fails on a full disk or past a file-size limit: so before a PNG is
// written, the room for its worst case (the raw rows, a filter byte each, zlib's stored-block
// overhead, the chunks) must be there, on the disk and under RLIMIT_FSIZE. A disk that fills
// from elsewhere during the write is not covered.
void check_png_room(const fs::path& path, const fs::path& folder, const HostArray& pixels) {
  const std::uint64_t rows = pixels.shape().height();
  const std::uint64_t raw = pixels.bytes() + rows;
  const std::uint64_t worst = raw + raw / 1000 + 64 * 1024;
  std::uint64_t room = std::numeric_limits<std::uint64_t>::max();
  std::error_code ec;
  const fs::space_info sp = fs::space(folder, ec);
  if (!ec) room = sp.available;
  rlimit lim{};
  if (getrlimit(RLIMIT_FSIZE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    room = std::min<std::uint64_t>(room, lim.rlim_cur);
  }
  if (worst > room) {
    fail(path, "cannot be written as PNG: it may take up to " + human_bytes(worst) + " and " +
                   human_bytes(room) +
                   " can be written there (a full disk would crash ITK's PNG writer, so gpix "
                   "checks first); free some space, or write elsewhere or as TIFF");
  }
}

// A .mhd or .nhdr header's data file, named after it by ITK (X.raw, or compressed X.zraw /
// X.raw.gz), must be its own or not exist (detail::check_side_file).
void check_header_data_file(const fs::path& path, const WriteOptions& options) {
  if (const std::string ext = lower(str(path.extension())); ext == ".mhd" || ext == ".nhdr") {
    fs::path side = path;
    side.replace_extension(!options.compress ? ".raw" : ext == ".mhd" ? ".zraw" : ".raw.gz");
    detail::check_side_file(path, side);
  }
}

void write_unchecked(const fs::path& path, const HostArray& pixels, const Metadata& meta,
                     const WriteOptions& options) {
  const Format& format = format_for(path);
  if (!pixels.valid()) fail(path, "cannot be written from an empty HostArray");
  const DType t = pixels.dtype();
  const int ndim = pixels.shape().ndim();
  detail::check_writable(path, t, pixels.shape(), meta);
  if (format.name == "NIfTI" && is_float(t)) {
    // The nifti library replaces NaN and infinities by 0 when reading: refuse rather than lose
    // them.
    const bool finite = visit_dtype(t, [&](auto z) {
      using T = decltype(z);
      if constexpr (std::is_floating_point_v<T>) {
        for (T v : pixels.as<T>()) {
          if (!std::isfinite(v)) return false;
        }
      }
      return true;
    });
    if (!finite) {
      fail(path,
           "holds NaN or infinite pixels, which NIfTI readers (the nifti library) turn into 0; "
           "use NRRD or MetaImage to keep them");
    }
  }
  const auto n = static_cast<std::size_t>(ndim);
  const detail::StoredUnit unit = detail::stored_unit(path, format, meta.unit);
  auto sp = reversed(meta.spacing_or_default(ndim));
  auto org = reversed(meta.origin_or_default(ndim));
  for (std::size_t i = 0; i < n; ++i) {
    sp[i] *= unit.factor;
    org[i] *= unit.factor;
  }
  // Planes that are channels have no z: spacing 1 and origin 0 on that axis in every format,
  // as TIFF (an ImageJ composite has no z spacing) reads back.
  if (meta.channels > 1) {
    sp[n - 1] = 1.0;
    org[n - 1] = 0.0;
  }
  const auto dir = meta.direction_or_default(ndim);

  // A header's data file, named after it by ITK, is checked now as well as at the commit: the
  // refusal comes before the work.
  check_header_data_file(path, options);
  detail::TempFolder tmp(path);
  if (format.name == "PNG") check_png_room(path, tmp.file().parent_path(), pixels);
  std::optional<detail::TiffMessages> tiff;
  if (format.name == "TIFF") tiff.emplace();
  auto io = make_io(format.name, true);
  try {
    io->SetNumberOfDimensions(static_cast<unsigned>(ndim));
    itk::ImageIORegion region(static_cast<unsigned>(ndim));
    for (std::size_t i = 0; i < n; ++i) {
      const auto u = static_cast<unsigned>(i);
      io->SetDimensions(
          u, static_cast<itk::SizeValueType>(pixels.shape()[ndim - 1 - static_cast<int>(i)]));
      io->SetSpacing(u, sp[i]);
      io->SetOrigin(u, org[i]);
      std::vector<double> col(n);
      for (std::size_t r = 0; r < n; ++r) col[r] = dir[(n - 1 - r) * n + (n - 1 - i)];
      io->SetDirection(u, col);
      region.SetIndex(u, 0);
      region.SetSize(u, io->GetDimensions(u));
    }
    io->SetComponentType(detail::to_component(t));
    io->SetPixelType(PixelKind::SCALAR);
    io->SetNumberOfComponents(1);
    io->SetIORegion(region);
    io->SetUseCompression(options.compress);
    if (meta.labels && format.labels_marker) detail::mark_labels(*io, format.name);
    if (meta.channels > 1 && detail::keeps_channels(format.name)) {
      itk::MetaDataDictionary d = io->GetMetaDataDictionary();
      itk::EncapsulateMetaData<std::string>(d, detail::kChannelsKey, std::to_string(meta.channels));
      if (!meta.channel_colours.empty()) {
        itk::EncapsulateMetaData<std::string>(d, detail::kColoursKey,
                                              detail::colours_text(meta.channel_colours));
      }
      io->SetMetaDataDictionary(d);
    }
    io->SetFileName(str(tmp.file()));
    detail::prepare_unit(*io, format, unit.unit);
    const auto one_teem = library_lock(format.name);
    io->Write(pixels.data());
  } catch (const itk::ExceptionObject& e) {
    fail(path, "cannot be written as " + format.name + ": " + itk_message(e) +
                   (tiff ? tiff->says() : std::string()));
  }
  detail::finish_unit(tmp.file(), path, format, unit.unit, ndim);
  // ITK's MetaImage and NIfTI writers report a failed write (a full disk, a file-size limit)
  // on stderr and return, leaving the file short ("M_WriteElementsData: file stream is fail
  // after write", "NWAD: wrote only ..."; `gpix run` exited 0 with a truncated .mha or .nii).
  // So the written file's size is checked as a reader checks it before it replaces anything:
  // header against data, CompressedDataSize, a .gz's recorded length in its last bytes. A
  // short file fails these; the compressed stream is not inflated again (0.1 s of a 2.2 s
  // 32 MB .nii.gz write, bench/RESULTS.md).
  const std::string short_file = detail::check_data_size(format.name, tmp.file(), pixels.bytes());
  if (!short_file.empty()) {
    fail(path, "cannot be written as " + format.name +
                   ": the file written is incomplete (is the disk full?): " + short_file +
                   "; nothing was replaced");
  }
  tmp.commit();
}

}  // namespace

void write(const fs::path& path, const HostArray& pixels, const Metadata& meta,
           const WriteOptions& options) {
  translated(path, "cannot be written", [&] { write_unchecked(path, pixels, meta, options); });
}

void check_can_write(const fs::path& path, DType t, int ndim, const WriteOptions& options) {
  translated(path, "cannot be written", [&] {
    if (ndim < 1 || ndim > 3) fail(path, "cannot be written: gpix writes 1D to 3D images");
    const std::vector<std::size_t> ones(static_cast<std::size_t>(ndim), 1);
    detail::check_writable(path, t, Shape(std::span<const std::size_t>(ones)), Metadata{});
    check_header_data_file(path, options);
    // The folder exists and takes files: write() makes the same temporary folder there.
    const detail::TempFolder probe(path);
  });
}

void write(const fs::path& path, const Image& image, const WriteOptions& options) {
  write(path, image.pixels, image.meta, options);
}

void write(const fs::path& path, const Array& pixels, const Metadata& meta,
           const WriteOptions& options) {
  format_for(path);  // an unknown extension fails before the transfer
  if (!pixels.valid()) fail(path, "cannot be written from a null Array");
  write(path, pixels.pull(), meta, options);
}

void write(const fs::path& path, const DeviceImage& image, const WriteOptions& options) {
  write(path, image.pixels, image.meta, options);
}

namespace detail {

// The dtype of an ITK component, by kind and size (ITK's LONG is 8 bytes on LP64 systems).
std::optional<DType> to_dtype(Component c, std::size_t size) {
  switch (c) {
    case Component::UCHAR:
      return DType::u8;
    case Component::CHAR:
      return DType::i8;
    case Component::USHORT:
      return DType::u16;
    case Component::SHORT:
      return DType::i16;
    case Component::UINT:
      return DType::u32;
    case Component::INT:
      return DType::i32;
    case Component::ULONG:
    case Component::ULONGLONG:
      return size == 4 ? DType::u32 : DType::u64;
    case Component::LONG:
    case Component::LONGLONG:
      return size == 4 ? DType::i32 : DType::i64;
    case Component::FLOAT:
      return DType::f32;
    case Component::DOUBLE:
      return DType::f64;
    default:
      return std::nullopt;
  }
}

Component to_component(DType t) {
  switch (t) {
    case DType::u8:
      return Component::UCHAR;
    case DType::i8:
      return Component::CHAR;
    case DType::u16:
      return Component::USHORT;
    case DType::i16:
      return Component::SHORT;
    case DType::u32:
      return Component::UINT;
    case DType::i32:
      return Component::INT;
    case DType::u64:
      return Component::ULONGLONG;
    case DType::i64:
      return Component::LONGLONG;
    case DType::f32:
      return Component::FLOAT;
    case DType::f64:
      break;
  }
  return Component::DOUBLE;
}

itk::ImageIOBase::Pointer read_header(const fs::path& path, const Format& format,
                                      const std::string& p, const ReadOptions& options,
                                      const std::function<std::string()>& libtiff) {
  // The one place that picks a TIFF's reader: libtiff for grayscale, ITK for colour.
  auto io = format.name == "TIFF"
                ? tiff_reader(p, options.channels == Channels::channel ? options.channel : -1)
                : make_io(format.name);
  try {
    // libpng and libjpeg abort or crash on some truncated files, even in CanReadFile: their
    // structure is checked first.
    const std::string broken = check_structure(format.name, path);
    if (!broken.empty() || !io->CanReadFile(p.c_str())) {
      const std::string why = libtiff();  // before sniff() tries the other formats
      const std::string actual = sniff(path);
      if (!actual.empty() && actual != format.name) {
        fail(path, "is named like a " + format.name + " file but its content is " + actual +
                       "; rename it with the right extension");
      }
      fail(path,
           "is not a readable " + format.name + " file" +
               (broken.empty() ? " (corrupt, truncated or another format)" + why : ": " + broken));
    }
    io->SetFileName(p);
    io->SetExpandRGBPalette(!options.palette_indices);
    // ITK 5.2's NiftiImageIO::ReadImageInformation keeps the last file name it read in a
    // function-static std::string, written without a lock: two NIfTI headers read at once
    // raced on it (ThreadSanitizer, test_io_formats concurrent_reads_and_writes), a heap
    // corruption waiting to happen when the viewer opens several files. One at a time.
    static std::mutex nifti_header;
    std::unique_lock<std::mutex> one_nifti(nifti_header, std::defer_lock);
    if (format.name == "NIfTI") one_nifti.lock();
    const auto one_teem = library_lock(format.name);
    io->ReadImageInformation();
  } catch (const itk::ExceptionObject& e) {
    // gpix's TIFF reader refuses through here what it cannot give as one image (a hyperstack
    // without a channel) as well as damaged headers: not "cannot read the TIFF header" then.
    fail(path, (format.name == "TIFF" ? std::string("cannot be read: ")
                                      : "cannot read the " + format.name + " header: ") +
                   itk_message(e) + libtiff());
  }
  return io;
}

// NIfTI's own label intent would be the natural mark, but ITK 5.2's NIfTI writer keeps neither
// intent_code nor descrip from the dictionary; it does keep aux_file (up to 23 characters).
constexpr const char* kNiftiAux = "aux_file";
constexpr const char* kNiftiLabels = "gpix_kind=labels";

void mark_labels(itk::ImageIOBase& io, const std::string& format) {
  itk::MetaDataDictionary d = io.GetMetaDataDictionary();
  if (format == "NIfTI") {
    itk::EncapsulateMetaData<std::string>(d, kNiftiAux, kNiftiLabels);
  } else {
    itk::EncapsulateMetaData<std::string>(d, kKindKey, kKindLabels);
  }
  io.SetMetaDataDictionary(d);
}

bool marked_labels(const itk::MetaDataDictionary& d) {
  std::string v;
  if (itk::ExposeMetaData<std::string>(d, kKindKey, v) && v == kKindLabels) return true;
  if (itk::ExposeMetaData<std::string>(d, kNiftiAux, v) && v == kNiftiLabels) return true;
  // NIFTI_INTENT_LABEL: the NIfTI standard's mark of a label map, which other software writes.
  return itk::ExposeMetaData<std::string>(d, "intent_code", v) && v == "1002";
}

namespace {

// The temporary folders of writes under way, for remove_unfinished_writes (a signal handler):
// fixed slots of NUL-separated paths, the files a write can leave (its target's name, a
// header's data files, a raw file's sidecar) and last the folder, written before the slot is
// marked ready and never freed, so the handler reads only memory that stays valid.
struct UnfinishedWrite {
  std::atomic<bool> used{false};
  std::atomic<bool> ready{false};
  char paths[4096];
  std::size_t size = 0;
};
UnfinishedWrite g_unfinished[64];

int register_unfinished(const fs::path& dir, const fs::path& target) {
  std::vector<std::string> paths;
  const std::string name = str(target.filename());
  fs::path base = target.filename();
  base.replace_extension();
  // The target, a raw file's sidecar, a header's data files, and finish_unit's rewrite of a
  // NRRD or NIfTI header (<name>.units, as large as the file for an attached NRRD).
  for (const std::string& f : {name, name + ".json", name + ".units", str(base) + ".raw",
                               str(base) + ".zraw", str(base) + ".raw.gz"})
    paths.push_back(str(dir / f));
  paths.push_back(str(dir));
  std::size_t total = 0;
  for (const auto& p : paths) total += p.size() + 1;
  if (total > sizeof(UnfinishedWrite::paths)) return -1;  // left to the next run's eyes
  for (int i = 0; i < 64; ++i) {
    UnfinishedWrite& w = g_unfinished[i];
    bool expected = false;
    if (!w.used.compare_exchange_strong(expected, true)) continue;
    std::size_t at = 0;
    for (const auto& p : paths) {
      std::memcpy(w.paths + at, p.c_str(), p.size() + 1);
      at += p.size() + 1;
    }
    w.size = at;
    w.ready.store(true);
    return i;
  }
  return -1;
}

void unregister_unfinished(int slot) {
  if (slot < 0) return;
  g_unfinished[slot].ready.store(false);
  g_unfinished[slot].used.store(false);
}

}  // namespace

}  // namespace detail

void remove_unfinished_writes() noexcept {
  using detail::g_unfinished;
  using detail::UnfinishedWrite;
  for (UnfinishedWrite& w : g_unfinished) {
    if (!w.ready.load()) continue;
    // Every path but the last is a file that may exist; the last is the folder.
    const char* last = nullptr;
    for (std::size_t at = 0; at < w.size;) {
      const char* p = w.paths + at;
      const std::size_t n = std::strlen(p);
      if (at + n + 1 >= w.size) {
        last = p;
      } else {
        ::unlink(p);
      }
      at += n + 1;
    }
    if (last) ::rmdir(last);
  }
}

namespace detail {

TempFolder::TempFolder(const fs::path& target) : target_(target) {
  fs::path parent = target.parent_path();
  if (parent.empty()) parent = ".";
  std::error_code ec;
  const auto st = fs::status(parent, ec);
  if (!fs::exists(st))
    fail(target, "cannot be written: the folder " + q(parent) + " does not exist");
  if (!fs::is_directory(st)) fail(target, "cannot be written: " + q(parent) + " is not a folder");
  if (fs::is_directory(fs::status(target, ec)))
    fail(target, "is a folder; give a file name to write");
  std::string tmpl = str(parent / ".gpix-write-XXXXXX");
  if (!mkdtemp(tmpl.data())) {
    fail(target, std::string("cannot be written: creating a temporary folder in ") + q(parent) +
                     " failed: " + std::strerror(errno));
  }
  dir_ = fs::u8path(tmpl);
  slot_ = register_unfinished(dir_, target_);
}

TempFolder::~TempFolder() {
  unregister_unfinished(slot_);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void check_side_file(const fs::path& target, const fs::path& side) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(side, ec))) return;
  const auto named = detail::detached_data_file(target);
  if (named && fs::equivalent(*named, side, ec)) return;
  fail(target, "cannot be written: its pixels would go to " + q(side) +
                   ", which exists and is not the data file of an earlier " + q(target.filename()) +
                   " (it may be this run's input); give the output another "
                   "name, or write a one-file format (.mha, .nrrd, .tif)");
}

void TempFolder::commit() {
  fs::path parent = target_.parent_path();
  if (parent.empty()) parent = ".";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir_)) files.push_back(e.path());
  std::stable_partition(files.begin(), files.end(),
                        [&](const fs::path& f) { return f.filename() != target_.filename(); });
  // A raw file's sidecar (X.raw.json) is its own by its name; a header's data file is not.
  if (const std::string ext = lower(str(target_.extension())); ext == ".mhd" || ext == ".nhdr") {
    for (const auto& f : files) {
      if (f.filename() != target_.filename()) check_side_file(target_, parent / f.filename());
    }
  }
  for (const auto& f : files) {
    std::error_code ec;
    fs::rename(f, parent / f.filename(), ec);
    if (ec) fail(target_, "cannot be moved into place: " + ec.message());
  }
}

std::string no_such_channel(int channel) {
  return "has one sample a pixel and is not a stack of channels: there is no channel " +
         std::to_string(channel) + " (channel 0 is the image itself)";
}

bool keeps_channels(const std::string& format) {
  return format == "TIFF" || format == "NRRD" || format == "MetaImage";
}

std::string colours_text(const std::vector<std::uint32_t>& colours) {
  std::string text;
  for (const std::uint32_t c : colours) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "#%06x", c & 0xffffffu);
    text += (text.empty() ? "" : " ") + std::string(hex);
  }
  return text;
}

std::vector<std::uint32_t> parse_colours(const std::string& text) {
  std::vector<std::uint32_t> colours;
  std::size_t at = 0;
  while (at < text.size()) {
    if (text[at] == ' ') {
      ++at;
      continue;
    }
    if (text[at] != '#' || at + 7 > text.size()) return {};
    std::uint32_t v = 0;
    for (std::size_t i = at + 1; i < at + 7; ++i) {
      const char c = text[i];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return {};
      v = v * 16 + static_cast<std::uint32_t>(d);
    }
    colours.push_back(v);
    at += 7;
  }
  return colours;
}

void check_writable(const fs::path& path, DType t, const Shape& shape, const Metadata& meta) {
  const Format& format = format_for(path);
  const int ndim = shape.ndim();
  if (meta.channels > 1 &&
      (ndim != 3 || shape.depth() != static_cast<std::size_t>(meta.channels))) {
    fail(path, "cannot be written: the metadata says " + std::to_string(meta.channels) +
                   " channels, which are the planes of a (C, y, x) stack, and the image is " +
                   shape.str() + "; set its channels to 1 or give it as many planes");
  }
  if (!meta.channel_colours.empty() &&
      meta.channel_colours.size() != static_cast<std::size_t>(meta.channels)) {
    fail(path, "cannot be written: the metadata gives " +
                   std::to_string(meta.channel_colours.size()) + " channel colours for " +
                   std::to_string(meta.channels) +
                   " channel(s); give one colour a channel, or none");
  }
  if (std::find(format.write_dtypes.begin(), format.write_dtypes.end(), t) ==
      format.write_dtypes.end()) {
    fail(path, "cannot store " + std::string(name(t)) + " pixels as " + format.name +
                   "; it stores " + dtype_list(format.write_dtypes) +
                   " (TIFF, NRRD, MetaImage and NIfTI store every dtype)");
  }
  if (ndim < format.min_write_dims) {
    fail(path, "cannot store a 1D image as " + format.name +
                   "; give it the shape (1, x) or use NRRD, MetaImage or NIfTI");
  }
  if (ndim > format.max_write_dims) {
    fail(path, "cannot store a " + std::to_string(ndim) + "D image as " + format.name +
                   " (at most " + std::to_string(format.max_write_dims) +
                   "D); use TIFF, NRRD, MetaImage or NIfTI for stacks");
  }
  const auto n = static_cast<std::size_t>(ndim);
  auto check_len = [&](const std::vector<double>& v, std::size_t want, const char* what) {
    if (!v.empty() && v.size() != want) {
      fail(path, std::string("cannot be written: the metadata has ") + std::to_string(v.size()) +
                     " " + what + " values for a " + std::to_string(ndim) + "D image (needs " +
                     std::to_string(want) + ")");
    }
  };
  check_len(meta.spacing, n, "spacing");
  check_len(meta.origin, n, "origin");
  check_len(meta.direction, n * n, "direction");
}

void check_input_file(const fs::path& p) {
  std::error_code ec;
  const auto st = fs::status(p, ec);
  if (ec || !fs::exists(st)) fail(p, "no such file; check the path");
  if (fs::is_directory(st)) fail(p, "is a folder, not an image file; give a file inside it");
  if (!fs::is_regular_file(st)) fail(p, "is not a regular file (a device, pipe or socket)");
  const auto size = fs::file_size(p, ec);
  if (ec) fail(p, "cannot read its size: " + ec.message());
  if (size == 0) fail(p, "is empty (0 bytes); it holds no image");
  std::ifstream f(p, std::ios::binary);
  if (!f) fail(p, std::string("cannot be opened for reading: ") + std::strerror(errno));
}

}  // namespace detail

}  // namespace gpix::io
