#include "formats.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>

#include <cstring>
#include <filesystem>

#include "gpix/error.h"
#include "gpix/io.h"
#include "gpix/qimage.h"
#include "gpix/raw.h"
#include "gpix/samples.h"
#include "gpix/ui/composite.h"

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
gpix::HostArray pixels_of(const Layer& l) {
  return l.host.valid() ? l.host : l.array.pull();
}

}  // namespace

// Raw files through gpix_io's one implementation (a sidecar or a NAME_ZxYxX_DTYPE.raw name),
// the same that `gpix info FILE.raw` uses.
gpix::plugin::Reader raw_reader() {
  return {QStringLiteral("raw"), {QStringLiteral("*.raw")}, [](const QString& path) {
            Layer l;
            l.name = QFileInfo(path).completeBaseName();
            l.host = gpix::io::read_raw(fs(path));
            return QList<Layer>{l};
          }};
}

gpix::plugin::Writer raw_writer() {
  return {QStringLiteral("raw"),
          {QStringLiteral("*.raw")},
          [](const Layer& l, const QString& path) { gpix::io::write_raw(fs(path), pixels_of(l)); }};
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
        const gpix::HostArray h = pixels_of(l);
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
        gpix::io::ReadOptions o;
        o.channels = gpix::io::Channels::split;
        const gpix::io::Image img = gpix::io::read(fs(path), o);
        Layer l;
        l.name = QFileInfo(path).completeBaseName();
        l.host = img.pixels;
        l.source = path;
        if (img.meta.labels) l.mark_labels();
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
        if (colour || (img.meta.channels > 1 && planes == img.meta.channels && planes <= 16)) {
          gpix::ui::make_composite(l, colour);
        }
        return QList<Layer>{l};
      }};
}

gpix::plugin::Writer io_writer() {
  return {QStringLiteral("itk"), io_patterns(true), [](const Layer& l, const QString& path) {
            const gpix::HostArray h = pixels_of(l);
            // The calibration goes back into the file; a layer whose vectors do not match its
            // dimensions (none) is written without one.
            gpix::io::Metadata m;
            const auto n = static_cast<std::size_t>(h.shape().ndim());
            if (l.spacing.size() == n) m.spacing = l.spacing;
            if (l.origin.size() == n) m.origin = l.origin;
            m.unit = l.unit.toStdString();
            // Labels stay labels when the file is opened again (where the format keeps the mark).
            m.labels = l.labels;
            gpix::io::write(fs(path), h, m);
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
