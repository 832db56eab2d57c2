// Files read and written plane by plane (gpix/slab_files.h).
#include "gpix/slab_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "gpix/error.h"
#include "io_shared.h"
#include "tiff.h"
#include "validate.h"

namespace gpix::io {
namespace fs = std::filesystem;

namespace {

using detail::fail;
using detail::str;

std::string itk_text(const itk::ExceptionObject& e) {
  std::string d = e.GetDescription();
  while (!d.empty() && (d.back() == '\n' || d.back() == ' ')) d.pop_back();
  return d.empty() ? std::string(e.what()) : d;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::size_t plane_bytes(const Shape& s, DType t) {
  return s.elements() / std::max<std::size_t>(s[0], 1) * size_of(t);
}

// A file descriptor, closed with the object. `shown`: the path errors name, where `path` is
// a temporary copy of it (the user asked for `shown`).
class File {
 public:
  File(const fs::path& path, int flags, const fs::path& shown = {})
      : path_(shown.empty() ? path : shown), fd_(::open(path.c_str(), flags, 0644)) {
    if (fd_ < 0) {
      fail(path_, std::string((flags & O_WRONLY) ? "cannot be created: " : "cannot be opened: ") +
                      std::strerror(errno));
    }
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  void read_at(std::uint64_t offset, std::byte* dst, std::size_t n) const {
    while (n > 0) {
      const ssize_t got = ::pread(fd_, dst, n, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) {
        fail(path_, got == 0 ? "ends before its pixels do (truncated file?)"
                             : std::string("cannot be read: ") + std::strerror(errno));
      }
      dst += got;
      n -= static_cast<std::size_t>(got);
      offset += static_cast<std::uint64_t>(got);
    }
  }
  void append(const void* src, std::size_t n) {
    const auto* p = static_cast<const std::byte*>(src);
    while (n > 0) {
      const ssize_t put = ::write(fd_, p, n);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) fail(path_, std::string("cannot be written: ") + std::strerror(errno));
      p += put;
      n -= static_cast<std::size_t>(put);
    }
  }
  // Flushes to the file system (errors of delayed writes show here).
  void close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail(path_, std::string("cannot be written: ") + std::strerror(errno));
  }

 private:
  fs::path path_;
  int fd_;
};

// Pixels stored raw at an offset of one file: raw files, MetaImage, NRRD.
class RawFileSource final : public FileSlabSource {
 public:
  RawFileSource(const fs::path& data, std::uint64_t offset, const Shape& shape, DType t, bool swap,
                Metadata meta, std::string format)
      : file_(data, O_RDONLY), offset_(offset), shape_(shape), dtype_(t), swap_(swap) {
    meta_ = std::move(meta);
    format_ = std::move(format);
  }
  void set_warnings(std::vector<std::string> w) { warnings_ = std::move(w); }
  Shape shape() const override { return shape_; }
  DType dtype() const override { return dtype_; }
  void read(std::size_t from, std::size_t to, std::byte* dst) override {
    const std::size_t pb = plane_bytes(shape_, dtype_);
    file_.read_at(offset_ + from * pb, dst, (to - from) * pb);
    if (!swap_) return;
    const std::size_t e = size_of(dtype_), n = (to - from) * pb / e;
    for (std::size_t i = 0; i < n; ++i) std::reverse(dst + i * e, dst + (i + 1) * e);
  }

 private:
  File file_;
  std::uint64_t offset_;
  Shape shape_;
  DType dtype_;
  bool swap_;
};

// A TIFF through gpix's libtiff reader: a stack in pages, a 2D image in rows.
class TiffSource final : public FileSlabSource {
 public:
  explicit TiffSource(const fs::path& path) : path_(path) {
    const detail::TiffMessages messages;
    try {
      stack_.emplace(str(path));
    } catch (const itk::ExceptionObject& e) {
      // Not only a damaged header: TiffStack refuses layouts it cannot give (a hyperstack).
      fail(path, "cannot be read: " + itk_text(e) + messages.says());
    }
    const std::size_t w = stack_->width(), h = stack_->height(), pages = stack_->pages();
    shape_ = pages > 1 ? Shape{pages, h, w} : Shape{h, w};
    dtype_ = *detail::to_dtype(stack_->component(), 0);
    rows_per_plane_ = pages > 1 ? h : 1;
    format_ = "TIFF";
    // As io::read gives it (the same calibration_of).
    const detail::TiffCalibration& c = stack_->calibration();
    for (std::size_t i = shape_.ndim(); i-- > 0;) {
      meta_.spacing.push_back(c.spacing[i]);
      meta_.origin.push_back(c.origin[i]);
    }
    meta_.unit = c.unit;
    meta_.direction = Metadata{}.direction_or_default(static_cast<int>(shape_.ndim()));
    meta_.labels = stack_->labels();
    meta_.channels = static_cast<int>(c.channels);
    meta_.channel_colours = c.colours;
    warnings_ = c.notes;
  }
  Shape shape() const override { return shape_; }
  DType dtype() const override { return dtype_; }
  void read(std::size_t from, std::size_t to, std::byte* dst) override {
    const detail::TiffMessages messages;
    try {
      stack_->read(from * rows_per_plane_, to * rows_per_plane_, dst);
    } catch (const itk::ExceptionObject& e) {
      fail(path_, "cannot read the TIFF pixels (truncated or corrupt file?): " + itk_text(e) +
                      messages.says());
    }
  }

 private:
  fs::path path_;
  std::optional<detail::TiffStack> stack_;
  Shape shape_;
  DType dtype_ = DType::u8;
  std::size_t rows_per_plane_ = 1;
};

// MetaImage and NRRD with raw pixels: ITK reads the header, the pixels are read in place.
std::unique_ptr<FileSlabSource> open_raw_format(const fs::path& path, const Format& format) {
  const auto io = detail::read_header(path, format, str(path), {}, [] { return std::string(); });
  if (io->GetNumberOfComponents() != 1 || io->GetPixelType() != itk::IOPixelEnum::SCALAR) {
    return nullptr;  // the whole read applies the channel policy or says why not
  }
  std::vector<std::size_t> ext;
  for (unsigned i = 0; i < io->GetNumberOfDimensions(); ++i) ext.push_back(io->GetDimensions(i));
  while (ext.size() > 3 && ext.back() == 1) ext.pop_back();
  const auto dtype = detail::to_dtype(io->GetComponentType(), io->GetComponentSize());
  if (ext.empty() || ext.size() > 3 || !dtype ||
      std::find(ext.begin(), ext.end(), std::size_t{0}) != ext.end()) {
    return nullptr;  // the whole read says what is wrong
  }
  const std::vector<std::size_t> zyx(ext.rbegin(), ext.rend());
  const Shape shape{std::span<const std::size_t>(zyx)};
  const std::uint64_t bytes = shape.elements() * size_of(*dtype);
  const auto data = detail::raw_data(format.name, path, bytes);
  if (!data) return nullptr;
  const bool swap =
      size_of(*dtype) > 1 && data->big_endian != (std::endian::native == std::endian::big);
  std::vector<std::string> notes;
  Metadata meta = detail::metadata_of(*io, static_cast<int>(zyx.size()), format, path, &notes);
  auto source = std::make_unique<RawFileSource>(data->file, data->offset, shape, *dtype, swap,
                                                std::move(meta), format.name);
  source->set_warnings(std::move(notes));
  return source;
}

std::string numbers(const std::vector<double>& v, const char* sep = " ") {
  std::string out;
  for (double d : v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", d);
    out += (out.empty() ? "" : sep) + std::string(buf);
  }
  return out;
}

// The metadata in ITK's order (x first): spacing, origin and the direction matrix m[r * n + c]
// whose column c is axis c's direction.
struct ItkGeometry {
  std::vector<double> spacing, origin, m;
};
ItkGeometry itk_geometry(const Metadata& meta, int ndim) {
  const auto n = static_cast<std::size_t>(ndim);
  const auto sp = meta.spacing_or_default(ndim), org = meta.origin_or_default(ndim);
  const auto dir = meta.direction_or_default(ndim);
  ItkGeometry g{{sp.rbegin(), sp.rend()}, {org.rbegin(), org.rend()}, std::vector<double>(n * n)};
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t c = 0; c < n; ++c) g.m[r * n + c] = dir[(n - 1 - r) * n + (n - 1 - c)];
  }
  return g;
}

std::string extents(const Shape& s) {
  std::string out;
  for (std::size_t i = s.ndim(); i-- > 0;)
    out += (out.empty() ? "" : " ") + std::to_string(s[static_cast<int>(i)]);
  return out;
}

const char* met_type(DType t) {
  switch (t) {
    case DType::u8:
      return "MET_UCHAR";
    case DType::i8:
      return "MET_CHAR";
    case DType::u16:
      return "MET_USHORT";
    case DType::i16:
      return "MET_SHORT";
    case DType::u32:
      return "MET_UINT";
    case DType::i32:
      return "MET_INT";
    case DType::u64:
      return "MET_ULONG_LONG";
    case DType::i64:
      return "MET_LONG_LONG";
    case DType::f32:
      return "MET_FLOAT";
    case DType::f64:
      break;
  }
  return "MET_DOUBLE";
}

const char* nrrd_type(DType t) {
  switch (t) {
    case DType::u8:
      return "uint8";
    case DType::i8:
      return "int8";
    case DType::u16:
      return "uint16";
    case DType::i16:
      return "int16";
    case DType::u32:
      return "uint32";
    case DType::i32:
      return "int32";
    case DType::u64:
      return "uint64";
    case DType::i64:
      return "int64";
    case DType::f32:
      return "float";
    case DType::f64:
      break;
  }
  return "double";
}

// The header of a MetaImage whose pixels follow it (data "LOCAL") or lie in `data`, as ITK's
// MetaImageIO writes and reads it (TransformMatrix lists each axis' direction in turn).
std::string meta_header(const Shape& s, DType t, const Metadata& meta, const std::string& data) {
  const int ndim = static_cast<int>(s.ndim());
  const auto n = static_cast<std::size_t>(ndim);
  const ItkGeometry g = itk_geometry(meta, ndim);
  std::vector<double> transform(n * n);
  for (std::size_t axis = 0; axis < n; ++axis) {
    for (std::size_t j = 0; j < n; ++j) transform[axis * n + j] = g.m[j * n + axis];
  }
  return "ObjectType = Image\nNDims = " + std::to_string(ndim) +
         "\nBinaryData = True\nBinaryDataByteOrderMSB = " +
         (std::endian::native == std::endian::big ? "True" : "False") +
         "\nCompressedData = False\nTransformMatrix = " + numbers(transform) +
         "\nOffset = " + numbers(g.origin) + "\nElementSpacing = " + numbers(g.spacing) +
         (meta.unit.empty() ? std::string() : "\nDistanceUnits = " + meta.unit) +
         (meta.labels ? "\n" + std::string(detail::kKindKey) + " = " + detail::kKindLabels : "") +
         (meta.channels > 1
              ? "\n" + std::string(detail::kChannelsKey) + " = " + std::to_string(meta.channels)
              : "") +
         (meta.channels > 1 && !meta.channel_colours.empty()
              ? "\n" + std::string(detail::kColoursKey) + " = " +
                    detail::colours_text(meta.channel_colours)
              : "") +
         "\nDimSize = " + extents(s) + "\nElementType = " + met_type(t) +
         "\nElementDataFile = " + data + "\n";
}

// The header of a NRRD with raw pixels after it (data empty) or in the file `data`; each
// axis' space direction is its direction scaled by its spacing, as ITK's NrrdImageIO reads it.
std::string nrrd_header(const Shape& s, DType t, const Metadata& meta, const std::string& data) {
  const int ndim = static_cast<int>(s.ndim());
  const auto n = static_cast<std::size_t>(ndim);
  const ItkGeometry g = itk_geometry(meta, ndim);
  std::string directions, kinds, units;
  for (std::size_t axis = 0; axis < n; ++axis) {
    std::vector<double> v(n);
    for (std::size_t j = 0; j < n; ++j) v[j] = g.m[j * n + axis] * g.spacing[axis];
    directions += (axis ? " (" : "(") + numbers(v, ",") + ")";
    kinds += axis ? " domain" : "domain";
    units += " \"" + meta.unit + "\"";
  }
  return "NRRD0004\ntype: " + std::string(nrrd_type(t)) + "\ndimension: " + std::to_string(ndim) +
         "\nspace dimension: " + std::to_string(ndim) + "\nsizes: " + extents(s) +
         "\nspace directions: " + directions + "\nkinds: " + kinds +
         "\nendian: " + (std::endian::native == std::endian::big ? "big" : "little") +
         "\nencoding: raw\nspace origin: (" + numbers(g.origin, ",") + ")\n" +
         (meta.unit.empty() ? std::string() : "space units:" + units + "\n") +
         (meta.labels ? std::string(detail::kKindKey) + ":=" + detail::kKindLabels + "\n" : "") +
         (meta.channels > 1
              ? std::string(detail::kChannelsKey) + ":=" + std::to_string(meta.channels) + "\n"
              : "") +
         (meta.channels > 1 && !meta.channel_colours.empty()
              ? std::string(detail::kColoursKey) +
                    ":=" + detail::colours_text(meta.channel_colours) + "\n"
              : "") +
         (data.empty() ? std::string() : "data file: " + data + "\n") + "\n";
}

// A file written plane by plane into a temporary folder, moved into place by finish().
class FileSink final : public SlabSink {
 public:
  enum class Kind { tiff, raw, meta_local, meta_detached, nrrd_attached, nrrd_detached };
  FileSink(const fs::path& path, Kind kind, Metadata meta, bool compress)
      : path_(path), kind_(kind), meta_(std::move(meta)), compress_(compress), tmp_(path) {}

  void start(const Shape& shape, DType dtype) override {
    const int ndim = static_cast<int>(shape.ndim());
    if (kind_ != Kind::raw) {
      detail::check_writable(path_, dtype, shape, meta_);
      // MetaImage names um, mm and cm only: spacing and origin in the unit it can name.
      const detail::StoredUnit u = detail::stored_unit(path_, format_for(path_), meta_.unit);
      meta_.spacing = meta_.spacing_or_default(ndim);
      meta_.origin = meta_.origin_or_default(ndim);
      for (auto* v : {&meta_.spacing, &meta_.origin}) {
        for (double& x : *v) x *= u.factor;
      }
      meta_.unit = u.unit;
      // Planes that are channels have no z (as io::write writes them).
      if (meta_.channels > 1) {
        meta_.spacing[0] = 1.0;
        meta_.origin[0] = 0.0;
      }
    }
    shape_ = shape;
    dtype_ = dtype;
    if (kind_ == Kind::tiff) {
      detail::TiffWriter::Layout l;
      l.width = shape.width();
      l.height = shape.height();
      l.pages = ndim == 3 ? shape.depth() : 1;
      l.stack = ndim == 3;
      l.component = detail::to_component(dtype);
      const auto sp = meta_.spacing_or_default(ndim), org = meta_.origin_or_default(ndim);
      for (std::size_t i = 0; i < sp.size(); ++i) {
        l.calibration.spacing[i] = sp[sp.size() - 1 - i];
        l.calibration.origin[i] = org[org.size() - 1 - i];
      }
      l.calibration.unit = meta_.unit;
      l.compress = compress_;
      l.labels = meta_.labels;
      l.calibration.channels = static_cast<std::size_t>(std::max(1, meta_.channels));
      l.calibration.colours = meta_.channel_colours;
      rows_per_plane_ = ndim == 3 ? shape.height() : 1;
      tiff([&] { writer_.emplace(str(tmp_.file()), l); });
      return;
    }
    const bool detached = kind_ == Kind::meta_detached || kind_ == Kind::nrrd_detached;
    const fs::path data_name = fs::path(path_.filename()).replace_extension(".raw");
    if (detached) detail::check_side_file(path_, path_.parent_path() / data_name);
    std::string header;
    if (kind_ == Kind::meta_local || kind_ == Kind::meta_detached) {
      header = meta_header(shape, dtype, meta_, detached ? str(data_name) : "LOCAL");
    } else if (kind_ != Kind::raw) {
      header = nrrd_header(shape, dtype, meta_, detached ? str(data_name) : std::string());
    }
    if (detached) {
      File h(tmp_.file(), O_WRONLY | O_CREAT | O_TRUNC, path_);
      h.append(header.data(), header.size());
      h.close();
      data_.emplace(tmp_.folder() / data_name, O_WRONLY | O_CREAT | O_TRUNC, path_);
    } else {
      data_.emplace(tmp_.file(), O_WRONLY | O_CREAT | O_TRUNC, path_);
      data_->append(header.data(), header.size());
    }
  }

  void write(std::size_t from, std::size_t to, const std::byte* src) override {
    if (writer_) {
      tiff([&] { writer_->append(src, (to - from) * rows_per_plane_); });
    } else {
      data_->append(src, (to - from) * plane_bytes(shape_, dtype_));
    }
  }

  void finish() override {
    if (writer_) {
      tiff([&] { writer_->close(); });
    } else {
      data_->close();
      if (kind_ == Kind::raw) {
        detail::write_raw_sidecar(path_, fs::path(tmp_.file()).concat(".json"), shape_, dtype_);
      }
    }
    tmp_.commit();
  }

 private:
  // libtiff's failures as IoErrors, with what libtiff said.
  template <class F>
  void tiff(F&& f) {
    const detail::TiffMessages messages;
    try {
      f();
    } catch (const itk::ExceptionObject& e) {
      fail(path_, "cannot be written as TIFF: " + itk_text(e) + messages.says());
    }
  }

  fs::path path_;
  Kind kind_;
  Metadata meta_;
  bool compress_;
  detail::TempFolder tmp_;
  Shape shape_;
  DType dtype_ = DType::u8;
  std::size_t rows_per_plane_ = 1;
  std::optional<detail::TiffWriter> writer_;
  std::optional<File> data_;
};

bool is_raw(const fs::path& path) {
  return lower(str(path.filename())).ends_with(".raw");
}

}  // namespace

std::unique_ptr<FileSlabSource> open_raw_slabs(const fs::path& path, const RawLayout& layout) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  const std::uint64_t want = layout.shape.elements() * size_of(layout.dtype);
  if (ec || size != want) {
    fail(path, "has " + (ec ? std::string("an unknown number of") : std::to_string(size)) +
                   " bytes but a " + layout.shape.str() + " " + std::string(name(layout.dtype)) +
                   " image needs " + std::to_string(want));
  }
  return std::make_unique<RawFileSource>(path, 0, layout.shape, layout.dtype, false, Metadata{},
                                         "raw");
}

std::unique_ptr<FileSlabSource> open_slabs(const fs::path& path) {
  if (is_raw(path)) return open_raw_slabs(path, raw_layout(path));
  const Format& format = format_for(path);
  detail::check_input_file(path);
  if (format.name == "TIFF") {
    // The checks io::read makes before anything is allocated: a 768-byte file claiming a
    // 20 GB page opened in the viewer as an empty file-backed layer instead of being refused.
    for (const std::string& why : {detail::check_structure(format.name, path),
                                   detail::check_data_size(format.name, path, 0)}) {
      if (!why.empty()) fail(path, "is not a readable TIFF file: " + why);
    }
    if (!detail::libtiff_reads(str(path))) return nullptr;  // colour, palette: ITK, whole
    return std::make_unique<TiffSource>(path);
  }
  if (format.name == "MetaImage" || format.name == "NRRD") return open_raw_format(path, format);
  return nullptr;
}

std::unique_ptr<SlabSink> create_slabs(const fs::path& path, const Metadata& meta,
                                       const WriteOptions& options) {
  using Kind = FileSink::Kind;
  if (is_raw(path)) return std::make_unique<FileSink>(path, Kind::raw, meta, false);
  const Format& format = format_for(path);
  const std::string name = lower(str(path.filename()));
  if (format.name == "TIFF") {
    return std::make_unique<FileSink>(path, Kind::tiff, meta, options.compress);
  }
  if (options.compress) return nullptr;  // zlib streams of MetaImage and NRRD: written whole
  if (format.name == "MetaImage") {
    return std::make_unique<FileSink>(
        path, name.ends_with(".mhd") ? Kind::meta_detached : Kind::meta_local, meta, false);
  }
  if (format.name == "NRRD") {
    return std::make_unique<FileSink>(
        path, name.ends_with(".nhdr") ? Kind::nrrd_detached : Kind::nrrd_attached, meta, false);
  }
  return nullptr;
}

}  // namespace gpix::io
