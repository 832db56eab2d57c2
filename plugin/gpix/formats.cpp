#include "formats.h"

#include <QColor>
#include <QFile>
#include <QFileInfo>
#include <QImage>

#include <cstring>
#include <filesystem>
#include <optional>

#include "gpix/error.h"
#include "gpix/io.h"
#include "gpix/qimage.h"
#include "gpix/raw.h"
#include "gpix/render.h"
#include "gpix/samples.h"
#include "gpix/slab_files.h"
#include "gpix/ui/composite.h"
#include "gpix/ui/render.h"
#include "gpix/ui/stack_file.h"

namespace gpix::formats {

using gpix::plugin::Layer;

namespace {

// Where a layer of any dtype and shape can go.
constexpr const char* kAnyDtype = ".tif (every dtype, 2D and 3D), .nrrd or .raw";

std::string s(const QString& q) {
  return q.toStdString();
}

std::filesystem::path fs(const QString& q) {
  return std::filesystem::u8path(q.toStdString());
}

// A layer's pixels on the host: its host copy, else pulled (a writer was asked to save them).
// A file-backed layer is too large for that: only the streaming writers take it.
gpix::HostArray pixels_of(const Layer& l, const QString& path) {
  if (l.file_backed()) {
    throw gpix::IoError("'" + s(l.name) + "' (" + l.file->shape().str() +
                            ", file-backed) is larger than memory and is saved plane by plane; "
                            "the formats that can: .tif, .mha, .mhd, .nrrd, .nhdr, .raw",
                        s(path));
  }
  return l.host.valid() ? l.host : l.array.pull();
}

// The metadata a layer's calibration gives (none where its vectors do not match its axes).
gpix::io::Metadata metadata_of(const std::vector<double>& spacing,
                               const std::vector<double>& origin, const QString& unit, bool labels,
                               std::size_t ndim) {
  gpix::io::Metadata m;
  if (spacing.size() == ndim) m.spacing = spacing;
  if (origin.size() == ndim) m.origin = origin;
  m.unit = unit.toStdString();
  m.labels = labels;
  return m;
}

// A sink that makes its file once the output's shape is known (start), with the input's
// calibration on the axes the output keeps (io::carried, as `gpix run --tiled` does).
class CarriedSink final : public gpix::SlabSink {
 public:
  CarriedSink(std::filesystem::path path, gpix::io::Metadata in_meta, gpix::Shape in_shape)
      : path_(std::move(path)), meta_(std::move(in_meta)), in_(in_shape) {}
  void start(const gpix::Shape& shape, gpix::DType dtype) override {
    sink_ = gpix::io::create_slabs(path_, gpix::io::carried(meta_, in_, shape));
    if (!sink_) {
      throw gpix::IoError("cannot write '" + path_.string() + "' plane by plane", path_.string());
    }
    sink_->start(shape, dtype);
  }
  void write(std::size_t from, std::size_t to, const std::byte* src) override {
    sink_->write(from, to, src);
  }
  void finish() override { sink_->finish(); }

 private:
  std::filesystem::path path_;
  gpix::io::Metadata meta_;
  gpix::Shape in_;
  std::unique_ptr<gpix::SlabSink> sink_;
};

// A stack left in its file (gpix_io's streamed formats: TIFF, raw MetaImage/NRRD, raw).
class IoStackFile final : public gpix::ui::StackFile {
 public:
  IoStackFile(const QString& path, const gpix::io::FileSlabSource& src)
      : StackFile(path, QString::fromStdString(src.format()), src.shape(), src.dtype()) {}
  std::unique_ptr<gpix::SlabSource> open() const override {
    auto src = gpix::io::open_slabs(fs(path()));
    if (!src) {
      throw gpix::IoError("'" + s(path()) + "' can no longer be read plane by plane", s(path()));
    }
    if (!(src->shape() == shape()) || src->dtype() != dtype()) {
      throw gpix::IoError("'" + s(path()) + "' changed since it was opened: it holds " +
                              src->shape().str() + " " + std::string(gpix::name(src->dtype())) +
                              ", the layer " + shape().str() + " " +
                              std::string(gpix::name(dtype())),
                          s(path()));
    }
    return src;
  }
  std::unique_ptr<gpix::SlabSink> create(const QString& path, const std::vector<double>& spacing,
                                         const std::vector<double>& origin, const QString& unit,
                                         bool labels) const override {
    return std::make_unique<CarriedSink>(
        fs(path), metadata_of(spacing, origin, unit, labels, std::size_t(shape().ndim())), shape());
  }
  std::shared_ptr<gpix::ui::StackFile> open_result(const QString& path) const override {
    return open_stack(path);
  }
  static std::shared_ptr<gpix::ui::StackFile> open_stack(const QString& path) {
    auto src = gpix::io::open_slabs(fs(path));
    if (!src) throw gpix::IoError("'" + s(path) + "' cannot be read plane by plane", s(path));
    return std::make_shared<IoStackFile>(path, *src);
  }
};

// The layer of a stack larger than the viewer's threshold (gpix::ui::large_stack_policy) that
// its format lets us read in planes: left in its file, only its header read. Empty otherwise
// (the caller reads the file whole).
std::optional<Layer> file_backed_layer(const QString& path) {
  auto src = gpix::io::open_slabs(fs(path));
  if (!src ||
      src->shape().elements() * gpix::size_of(src->dtype()) <= gpix::ui::large_stack_threshold())
    return std::nullopt;
  const gpix::io::Metadata& m = src->metadata();
  Layer l;
  l.name = QFileInfo(path).completeBaseName();
  l.file = std::make_shared<IoStackFile>(path, *src);
  l.source = path;
  if (m.labels) l.mark_labels();
  l.metadata.insert(QStringLiteral("format"), QString::fromStdString(src->format()));
  l.metadata.insert(QStringLiteral("file_backed"), true);
  const int ndim = src->shape().ndim();
  l.spacing = m.spacing_or_default(ndim);
  l.origin = m.origin_or_default(ndim);
  l.unit = QString::fromStdString(m.unit);
  return l;
}

// A layer of the pixels gpix_io read from `path`: named after the file, its format, calibration
// and the reader's warnings.
Layer layer_of(const QString& path, const gpix::io::Image& img) {
  Layer l;
  l.name = QFileInfo(path).completeBaseName();
  l.host = img.pixels;
  l.source = path;
  l.metadata.insert(QStringLiteral("format"), QString::fromStdString(img.format));
  const int ndim = img.pixels.shape().ndim();
  l.spacing = img.meta.spacing_or_default(ndim);
  l.origin = img.meta.origin_or_default(ndim);
  l.unit = QString::fromStdString(img.meta.unit);
  if (!img.warnings.empty()) {
    QStringList w;
    for (const auto& m : img.warnings) w << QString::fromStdString(m);
    l.metadata.insert(QStringLiteral("warnings"), w.join(QLatin1Char('\n')));
  }
  return l;
}

// One layer per channel of a hyperstack (gpix::io::hyperstack_channels): "<name> [C1]"..., the
// channel's slices (or time points) as its stack.
QList<Layer> hyperstack_layers(const QString& path, std::size_t channels) {
  QList<Layer> layers;
  // Fiji's LUTs, one a channel, where the file has them.
  const std::vector<std::uint32_t> colours = gpix::io::hyperstack_colours(fs(path), channels);
  for (std::size_t c = 0; c < channels; ++c) {
    gpix::io::ReadOptions o;
    o.channels = gpix::io::Channels::channel;
    o.channel = static_cast<int>(c);
    const gpix::io::Image img = gpix::io::read(fs(path), o);
    Layer l = layer_of(path, img);
    l.name = QStringLiteral("%1 [C%2]").arg(l.name).arg(c + 1);
    l.metadata.insert(QStringLiteral("channel"), int(c + 1));
    // Shown together, each in its colour, as Fiji shows a composite hyperstack: opaque, the
    // top channel hid the others. C1, the lowest, covers what lies below the hyperstack.
    l.additive = c > 0;
    l.metadata.insert(QStringLiteral("channels"),
                      QStringLiteral("channel %1 of %2 of a hyperstack").arg(c + 1).arg(channels));
    // Without LUTs: a composite's channel colours (green, magenta, cyan, yellow, red, blue,
    // then grey).
    const QRgb fallback = gpix::ui::default_channel_colour(int(c), int(channels), false);
    l.colormap = gpix::ui::colour_map_of(fallback);
    if (l.colormap.isEmpty()) l.colormap = QStringLiteral("gray");
    if (!colours.empty()) {
      // The channel's own colour where a colour map is black to it (ImageJ's Grays, Red,
      // Green, Blue, Cyan, Magenta, Yellow); another colour is said, and shown in grey.
      const std::uint32_t v = colours[c];
      const QString mapped = gpix::ui::colour_map_of(QRgb(v) | 0xff000000u);
      l.colormap = mapped.isEmpty() ? QStringLiteral("gray") : mapped;
      if (mapped.isEmpty()) {
        l.metadata.insert(
            QStringLiteral("colour"),
            QStringLiteral("%1 in the file (ImageJ's LUT): no colour map is black to it, shown "
                           "in gray")
                .arg(QColor(QRgb(v)).name()));
      }
    }
    layers << l;
  }
  return layers;
}

}  // namespace

// Raw files through gpix_io's one implementation (a sidecar or a NAME_ZxYxX_DTYPE.raw name),
// the same that `gpix info FILE.raw` uses.
gpix::plugin::Reader raw_reader() {
  return {QStringLiteral("raw"), {QStringLiteral("*.raw")}, [](const QString& path) {
            if (auto big = file_backed_layer(path)) return QList<Layer>{*big};
            Layer l;
            l.name = QFileInfo(path).completeBaseName();
            l.host = gpix::io::read_raw(fs(path));
            return QList<Layer>{l};
          }};
}

gpix::plugin::Writer raw_writer() {
  return {
      QStringLiteral("raw"), {QStringLiteral("*.raw")}, [](const Layer& l, const QString& path) {
        if (l.file_backed()) {
          auto sink = gpix::io::create_slabs(fs(path));
          if (!sink) (void)pixels_of(l, path);
          gpix::ui::stream_to(*l.file, *sink);
          return;
        }
        gpix::io::write_raw(fs(path), pixels_of(l, path));
      }};
}

// PNG through Qt's decoder and gpix_qt's QImage conversion. Colour files become one composite
// layer of their R, G and B planes (8 or 16 bits; (3, y, x) data shown in colour): nothing is
// mixed, and nothing but alpha is dropped.
gpix::plugin::Reader png_reader() {
  return {
      QStringLiteral("png"), {QStringLiteral("*.png")}, [](const QString& path) {
        QImage img(path);
        if (img.isNull()) {
          throw gpix::IoError("cannot read '" + s(path) + "' as PNG", s(path));
        }
        const QString base = QFileInfo(path).completeBaseName();
        const bool deep = img.depth() > 32 || img.format() == QImage::Format_Grayscale16;
        QList<Layer> out;
        if (img.isGrayscale()) {
          Layer l;
          l.name = base;
          l.host = gpix::qt::from_qimage(
              img.convertToFormat(deep ? QImage::Format_Grayscale16 : QImage::Format_Grayscale8));
          out << l;
          return out;
        }
        const QImage rgb = img.convertToFormat(deep ? QImage::Format_RGBX64 : QImage::Format_RGB32);
        Layer l;
        l.name = base;
        for (int c = 0; c < 3; ++c) {
          const gpix::HostArray plane = gpix::qt::from_qimage(rgb, gpix::io::Channels::channel, c);
          if (c == 0) {
            const gpix::Shape& p = plane.shape();
            l.host = gpix::HostArray::empty(gpix::Shape{3, p.height(), p.width()}, plane.dtype());
          }
          std::memcpy(l.host.data() + std::size_t(c) * plane.bytes(), plane.data(), plane.bytes());
        }
        gpix::ui::make_composite(l, true);
        out << l;
        return out;
      }};
}

gpix::plugin::Writer png_writer() {
  return {
      QStringLiteral("png"), {QStringLiteral("*.png")}, [](const Layer& l, const QString& path) {
        const gpix::HostArray h = pixels_of(l, path);
        if (h.shape().ndim() != 2 ||
            (h.dtype() != gpix::DType::u8 && h.dtype() != gpix::DType::u16)) {
          throw gpix::IoError("PNG holds 2D uint8 or uint16 images; '" + s(l.name) + "' is " +
                                  h.shape().str() + " " + std::string(gpix::name(h.dtype())) +
                                  ": save it as " + kAnyDtype +
                                  ", or convert it first (filter 'convert')",
                              s(path));
        }
        if (!gpix::qt::to_qimage(h).save(path, "PNG")) {
          throw gpix::IoError("cannot write '" + s(path) + "'", s(path));
        }
      }};
}

gpix::plugin::Reader sample_reader() {
  return {QStringLiteral("samples"),
          {QStringLiteral("sample"), QStringLiteral("sample:*")},
          [](const QString& path) {
            const QString name = path.section(QLatin1Char(':'), 1);
            gpix::Sample smp = name.isEmpty() ? gpix::sample() : gpix::sample(s(name));
            Layer l;
            l.name = QString::fromStdString(smp.name);
            l.host = smp.image;
            l.metadata.insert(QStringLiteral("description"),
                              QString::fromStdString(smp.description));
            return QList<Layer>{l};
          }};
}

// Every format of gpix_io (libtiff, ITK): TIFF stacks of every dtype, NRRD, MetaImage, NIfTI,
// JPEG. PNG stays with
// the Qt reader above (it splits colour into one layer per channel). Colour files in the ITK
// formats open as a (channel, y, x) stack, never mixed silently into one value.
QStringList io_patterns(bool writing) {
  QStringList p;
  for (const auto& f : gpix::io::formats()) {
    if (f.name == "PNG" || (writing && f.lossy)) continue;
    for (const auto& e : f.extensions) p << QStringLiteral("*") + QString::fromStdString(e);
  }
  return p;
}

gpix::plugin::Reader io_reader() {
  return {
      QStringLiteral("itk"), io_patterns(false), [](const QString& path) {
        // A hyperstack of channels and slices (Fiji's multi-channel z stacks): one z stack a
        // channel, each in its default colour, as layers are 3D at most.
        if (const std::size_t channels = gpix::io::hyperstack_channels(fs(path)); channels > 0)
          return hyperstack_layers(path, channels);
        if (auto big = file_backed_layer(path)) return QList<Layer>{*big};
        gpix::io::ReadOptions o;
        o.channels = gpix::io::Channels::split;
        const gpix::io::Image img = gpix::io::read(fs(path), o);
        Layer l = layer_of(path, img);
        if (img.meta.labels) l.mark_labels();
        const int ndim = img.pixels.shape().ndim();
        // Colour pixels (split along the first axis) and the channels of a multi-channel TIFF
        // open as one composite; other vector pixels stay a stack.
        const int planes = ndim == 3 ? int(img.pixels.shape().depth()) : 1;
        const bool colour =
            (img.file_components == 3 || img.file_components == 4) && planes == img.file_components;
        if (img.file_components > 1) {
          l.metadata.insert(
              QStringLiteral("channels"),
              QStringLiteral("%1 components split along the first axis").arg(img.file_components));
        }
        // Labels stay one label image per channel, shown with the label colours (as the
        // Filters panel makes them from a composite).
        if (colour || (img.meta.channels > 1 && planes == img.meta.channels && planes <= 16 &&
                       !img.meta.labels)) {
          gpix::ui::make_composite(l, colour);
          // The file's own colours where it has them (Fiji's LUTs, gpix's saved composites).
          if (img.meta.channel_colours.size() == l.channels.size()) {
            for (std::size_t c = 0; c < l.channels.size(); ++c) {
              const std::uint32_t v = img.meta.channel_colours[c];
              l.channels[c].colour = qRgb(int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff));
            }
          }
        }
        return QList<Layer>{l};
      }};
}

gpix::plugin::Writer io_writer() {
  return {QStringLiteral("itk"), io_patterns(true), [](const Layer& l, const QString& path) {
            // The calibration goes back into the file; a layer whose vectors do not match its
            // dimensions (none) is written without one. Labels (marked, or integers shown
            // with the labels colour map) stay labels when the file is opened again (where the
            // format keeps the mark).
            gpix::io::Metadata m = metadata_of(l.spacing, l.origin, l.unit, l.saves_as_labels(),
                                               std::size_t(l.shape().ndim()));
            // A composite's planes are channels: the file says so (TIFF as an ImageJ
            // hyperstack), so that it opens as a composite again, here and in ImageJ.
            if (l.composite() && l.shape().ndim() == 3 && l.shape().depth() == l.channels.size()) {
              m.channels = static_cast<int>(l.channels.size());
              // And their colours (TIFF as ImageJ LUTs, so Fiji shows the same colours).
              for (const gpix::ui::Channel& c : l.channels)
                m.channel_colours.push_back(std::uint32_t(c.colour) & 0xffffffu);
            }
            if (l.file_backed()) {
              // Plane by plane from its file: the stack never is in memory whole.
              auto sink = gpix::io::create_slabs(fs(path), m);
              if (!sink) (void)pixels_of(l, path);  // throws, naming the formats that stream
              gpix::ui::stream_to(*l.file, *sink);
              return;
            }
            gpix::io::write(fs(path), pixels_of(l, path), m);
          }};
}

void register_all(gpix::plugin::HostContext& host) {
  host.register_reader(sample_reader());
  host.register_reader(raw_reader());
  host.register_writer(raw_writer());
  host.register_reader(png_reader());
  host.register_writer(png_writer());
  host.register_reader(io_reader());
  host.register_writer(io_writer());
}

}  // namespace gpix::formats
