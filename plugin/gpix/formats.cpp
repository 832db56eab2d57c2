#include "formats.h"

#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <cstring>

#include "gpix/error.h"
#include "gpix/samples.h"
#if GPIX_FORMATS_HAVE_IO
#include <filesystem>

#include "gpix/io.h"
#endif

namespace gpix::formats {

using gpix::plugin::Layer;

namespace {

// Where a layer of any dtype and shape can go.
#if GPIX_FORMATS_HAVE_IO
constexpr const char* kAnyDtype = ".tif (every dtype, 2D and 3D), .nrrd or .raw";
#else
constexpr const char* kAnyDtype = ".raw";
#endif

std::string s(const QString& q) {
  return q.toStdString();
}

// Shape and dtype of a raw file: from PATH.json, else from the name NAME_ZxYxX_DTYPE.raw.
std::pair<gpix::Shape, gpix::DType> raw_layout(const QString& path) {
  const QString side = path + QStringLiteral(".json");
  const std::string hint =
      "give it a sidecar '" + s(QFileInfo(side).fileName()) +
      "' with {\"shape\": [Z, Y, X], \"dtype\": \"uint16\"} or name it NAME_ZxYxX_DTYPE.raw "
      "(e.g. cells_32x256x256_u16.raw)";
  QString shape_text, dtype_text;
  if (QFile f(side); f.open(QIODevice::ReadOnly)) {
    QJsonParseError err{};
    const QJsonObject o = QJsonDocument::fromJson(f.readAll(), &err).object();
    if (err.error != QJsonParseError::NoError) {
      throw gpix::IoError(
          "the sidecar '" + s(side) + "' is not valid JSON (" + s(err.errorString()) + "); " + hint,
          s(side));
    }
    QStringList dims;
    for (const QJsonValue& v : o.value(QStringLiteral("shape")).toArray()) {
      dims << QString::number(v.toInteger());
    }
    shape_text = dims.join(QLatin1Char('x'));
    dtype_text = o.value(QStringLiteral("dtype")).toString();
  } else {
    static const QRegularExpression re(QStringLiteral("_(\\d+(?:x\\d+){0,2})_([a-z0-9]+)\\.raw$"),
                                       QRegularExpression::CaseInsensitiveOption);
    const auto m = re.match(QFileInfo(path).fileName());
    if (!m.hasMatch()) {
      throw gpix::IoError(
          "'" + s(QFileInfo(path).fileName()) + "' does not say its shape and dtype; " + hint,
          s(path));
    }
    shape_text = m.captured(1);
    dtype_text = m.captured(2);
  }
  std::vector<std::size_t> dims;
  for (const QString& d : shape_text.split(QLatin1Char('x'), Qt::SkipEmptyParts)) {
    dims.push_back(d.toULongLong());
  }
  const auto dtype = gpix::parse_dtype(s(dtype_text.toLower()));
  if (!dtype) {
    throw gpix::IoError("'" + s(path) + "': unknown dtype '" + s(dtype_text) + "'; use one of " +
                            gpix::dtype_names(),
                        s(path));
  }
  try {
    return {gpix::Shape(std::span<const std::size_t>(dims)), *dtype};
  } catch (const gpix::InvalidArgument& e) {
    throw gpix::IoError("'" + s(path) + "': " + e.what() + "; " + hint, s(path));
  }
}

}  // namespace

gpix::plugin::Reader raw_reader() {
  return {
      QStringLiteral("raw"), {QStringLiteral("*.raw")}, [](const QString& path) {
        const auto [shape, dtype] = raw_layout(path);
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly)) {
          throw gpix::IoError("cannot open '" + s(path) + "': " + s(f.errorString()), s(path));
        }
        gpix::HostArray h = gpix::HostArray::empty(shape, dtype);
        if (std::uint64_t(f.size()) != h.bytes()) {
          throw gpix::IoError("'" + s(path) + "' has " + std::to_string(f.size()) + " bytes; a " +
                                  shape.str() + " " + std::string(gpix::name(dtype)) +
                                  " image needs " + std::to_string(h.bytes()),
                              s(path));
        }
        if (f.read(reinterpret_cast<char*>(h.data()), qint64(h.bytes())) != qint64(h.bytes())) {
          throw gpix::IoError("reading '" + s(path) + "' failed: " + s(f.errorString()), s(path));
        }
        Layer l;
        l.name = QFileInfo(path).completeBaseName();
        l.host = h;
        return QList<Layer>{l};
      }};
}

gpix::plugin::Writer raw_writer() {
  return {
      QStringLiteral("raw"), {QStringLiteral("*.raw")}, [](const Layer& l, const QString& path) {
        const gpix::HostArray h = l.host.valid() ? l.host : l.array.pull();
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            f.write(reinterpret_cast<const char*>(h.data()), qint64(h.bytes())) !=
                qint64(h.bytes())) {
          throw gpix::IoError("cannot write '" + s(path) + "': " + s(f.errorString()), s(path));
        }
        QJsonArray dims;
        for (std::size_t d : h.shape().dims()) dims.append(qint64(d));
        QJsonObject o{{QStringLiteral("shape"), dims},
                      {QStringLiteral("dtype"), QString::fromUtf8(gpix::name(h.dtype()).data())}};
        QFile side(path + QStringLiteral(".json"));
        if (!side.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
            side.write(QJsonDocument(o).toJson()) < 0) {
          throw gpix::IoError(
              "cannot write the sidecar of '" + s(path) + "': " + s(side.errorString()),
              s(path + QStringLiteral(".json")));
        }
      }};
}

gpix::plugin::Reader png_reader() {
  return {QStringLiteral("png"), {QStringLiteral("*.png")}, [](const QString& path) {
            QImage img(path);
            if (img.isNull()) {
              throw gpix::IoError("cannot read '" + s(path) + "' as PNG", s(path));
            }
            const QString base = QFileInfo(path).completeBaseName();
            const gpix::Shape shape{std::size_t(img.height()), std::size_t(img.width())};
            QList<Layer> out;
            auto plane = [&](auto zero, const QString& suffix, auto&& value) {
              using T = decltype(zero);
              std::vector<T> v(shape.elements());
              for (int y = 0; y < img.height(); ++y) {
                for (int x = 0; x < img.width(); ++x) {
                  v[std::size_t(y) * shape.width() + std::size_t(x)] = static_cast<T>(value(x, y));
                }
              }
              Layer l;
              l.name = base + suffix;
              l.host = gpix::HostArray::from(v, shape);
              out << l;
            };
            const bool deep = img.depth() > 32 || img.format() == QImage::Format_Grayscale16;
            if (img.isGrayscale()) {
              if (deep) {
                img = img.convertToFormat(QImage::Format_Grayscale16);
                plane(std::uint16_t{}, QString(), [&](int x, int y) {
                  return reinterpret_cast<const std::uint16_t*>(img.constScanLine(y))[x];
                });
              } else {
                img = img.convertToFormat(QImage::Format_Grayscale8);
                plane(std::uint8_t{}, QString(),
                      [&](int x, int y) { return img.constScanLine(y)[x]; });
              }
              return out;
            }
            // Colour: one layer per channel, nothing mixed or dropped silently but alpha.
            if (deep) {
              img = img.convertToFormat(QImage::Format_RGBA64);
              const char* names[] = {" R", " G", " B"};
              for (int c = 0; c < 3; ++c) {
                plane(std::uint16_t{}, QLatin1String(names[c]), [&](int x, int y) {
                  const QRgba64 p = reinterpret_cast<const QRgba64*>(img.constScanLine(y))[x];
                  return c == 0 ? p.red() : c == 1 ? p.green() : p.blue();
                });
              }
            } else {
              img = img.convertToFormat(QImage::Format_RGB32);
              for (int c = 0; c < 3; ++c) {
                plane(std::uint8_t{},
                      QLatin1String(c == 0   ? " R"
                                    : c == 1 ? " G"
                                             : " B"),
                      [&](int x, int y) {
                        const QRgb p = reinterpret_cast<const QRgb*>(img.constScanLine(y))[x];
                        return c == 0 ? qRed(p) : c == 1 ? qGreen(p) : qBlue(p);
                      });
              }
            }
            return out;
          }};
}

gpix::plugin::Writer png_writer() {
  return {
      QStringLiteral("png"), {QStringLiteral("*.png")}, [](const Layer& l, const QString& path) {
        const gpix::HostArray h = l.host.valid() ? l.host : l.array.pull();
        if (h.shape().ndim() != 2 ||
            (h.dtype() != gpix::DType::u8 && h.dtype() != gpix::DType::u16)) {
          throw gpix::IoError("PNG holds 2D uint8 or uint16 images; '" + s(l.name) + "' is " +
                                  h.shape().str() + " " + std::string(gpix::name(h.dtype())) +
                                  ": save it as " + kAnyDtype +
                                  ", or convert it first (filter 'convert')",
                              s(path));
        }
        const bool wide = h.dtype() == gpix::DType::u16;
        QImage img(int(h.shape().width()), int(h.shape().height()),
                   wide ? QImage::Format_Grayscale16 : QImage::Format_Grayscale8);
        const std::size_t row = h.shape().width() * gpix::size_of(h.dtype());
        for (int y = 0; y < img.height(); ++y) {
          std::memcpy(img.scanLine(y), h.data() + std::size_t(y) * row, row);
        }
        if (!img.save(path, "PNG")) {
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

#if GPIX_FORMATS_HAVE_IO
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
        const gpix::io::Image img = gpix::io::read(std::filesystem::u8path(s(path)), o);
        Layer l;
        l.name = QFileInfo(path).completeBaseName();
        l.host = img.pixels;
        l.source = path;
        l.metadata.insert(QStringLiteral("format"), QString::fromStdString(img.format));
        QStringList sp;
        for (double v : img.meta.spacing_or_default(img.pixels.shape().ndim()))
          sp << QString::number(v);
        l.metadata.insert(QStringLiteral("spacing"), sp.join(QStringLiteral(", ")));
        if (!img.warnings.empty()) {
          QStringList w;
          for (const auto& m : img.warnings) w << QString::fromStdString(m);
          l.metadata.insert(QStringLiteral("warnings"), w.join(QLatin1Char('\n')));
        }
        if (img.file_components > 1) {
          l.metadata.insert(
              QStringLiteral("channels"),
              QStringLiteral("%1 components split along the first axis").arg(img.file_components));
        }
        return QList<Layer>{l};
      }};
}

gpix::plugin::Writer io_writer() {
  return {QStringLiteral("itk"), io_patterns(true), [](const Layer& l, const QString& path) {
            const gpix::HostArray h = l.host.valid() ? l.host : l.array.pull();
            gpix::io::write(std::filesystem::u8path(s(path)), h);
          }};
}
#endif

void register_all(gpix::plugin::HostContext& host) {
  host.register_reader(sample_reader());
  host.register_reader(raw_reader());
  host.register_writer(raw_writer());
  host.register_reader(png_reader());
  host.register_writer(png_writer());
#if GPIX_FORMATS_HAVE_IO
  host.register_reader(io_reader());
  host.register_writer(io_writer());
#endif
}

}  // namespace gpix::formats
