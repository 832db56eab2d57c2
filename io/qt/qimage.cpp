#include "gpix/qimage.h"

#include <cstring>
#include <string>

#include "gpix/error.h"

namespace gpix::qt {
namespace {

std::string shape_of(const QImage& im) {
  return std::to_string(im.height()) + " x " + std::to_string(im.width());
}

void copy_rows(const QImage& im, std::byte* dst, std::size_t row_bytes) {
  for (int y = 0; y < im.height(); ++y) {
    std::memcpy(dst + static_cast<std::size_t>(y) * row_bytes, im.constScanLine(y), row_bytes);
  }
}

// 16 bits per component (what Qt decodes 16-bit colour PNG and TIFF files to): the same
// policy as for 8 bits, in u16.
HostArray from_rgba64(const QImage& image, io::Channels channels, int channel) {
  const auto h = static_cast<std::size_t>(image.height());
  const auto w = static_cast<std::size_t>(image.width());
  const QImage im = image.format() == QImage::Format_RGBA64_Premultiplied
                        ? image.convertToFormat(QImage::Format_RGBA64)
                        : image;
  const int comps = im.format() == QImage::Format_RGBX64 ? 3 : 4;
  auto component = [](QRgba64 p, int c) -> std::uint16_t {
    return c == 0 ? p.red() : c == 1 ? p.green() : c == 2 ? p.blue() : p.alpha();
  };
  auto row_of = [&](std::size_t y) {
    return reinterpret_cast<const QRgba64*>(im.constScanLine(static_cast<int>(y)));
  };
  switch (channels) {
    case io::Channels::error:
      throw InvalidArgument("from_qimage(): the " + shape_of(im) + " image has " +
                            std::to_string(comps) + " 16-bit components (" +
                            (comps == 3 ? "RGB" : "RGBA") +
                            "); choose Channels::luminance (float32), Channels::channel with an "
                            "index, or Channels::split ((components, height, width) u16)");
    case io::Channels::luminance: {
      HostArray out = HostArray::empty(Shape{h, w}, DType::f32);
      float* dst = out.as<float>().data();
      for (std::size_t y = 0; y < h; ++y) {
        const QRgba64* row = row_of(y);
        for (std::size_t x = 0; x < w; ++x) {
          dst[y * w + x] = static_cast<float>(0.2126 * row[x].red() + 0.7152 * row[x].green() +
                                              0.0722 * row[x].blue());
        }
      }
      return out;
    }
    case io::Channels::channel:
    case io::Channels::split:
      break;
  }
  const bool split = channels == io::Channels::split;
  if (!split && (channel < 0 || channel >= comps)) {
    throw InvalidArgument("from_qimage(): channel " + std::to_string(channel) +
                          " does not exist in an image of " + std::to_string(comps) +
                          " components (use 0 to " + std::to_string(comps - 1) + ")");
  }
  HostArray out = split ? HostArray::empty(Shape{static_cast<std::size_t>(comps), h, w}, DType::u16)
                        : HostArray::empty(Shape{h, w}, DType::u16);
  std::uint16_t* dst = out.as<std::uint16_t>().data();
  const int c0 = split ? 0 : channel;
  const int c1 = split ? comps : channel + 1;
  for (int c = c0; c < c1; ++c) {
    std::uint16_t* plane = dst + static_cast<std::size_t>(c - c0) * h * w;
    for (std::size_t y = 0; y < h; ++y) {
      const QRgba64* row = row_of(y);
      for (std::size_t x = 0; x < w; ++x) plane[y * w + x] = component(row[x], c);
    }
  }
  return out;
}

}  // namespace

HostArray from_qimage(const QImage& image, io::Channels channels, int channel) {
  if (image.isNull()) throw InvalidArgument("from_qimage() was given a null QImage");
  const auto h = static_cast<std::size_t>(image.height());
  const auto w = static_cast<std::size_t>(image.width());
  switch (image.format()) {
    case QImage::Format_Grayscale8: {
      HostArray out = HostArray::empty(Shape{h, w}, DType::u8);
      copy_rows(image, out.data(), w);
      return out;
    }
    case QImage::Format_Grayscale16: {
      HostArray out = HostArray::empty(Shape{h, w}, DType::u16);
      copy_rows(image, out.data(), w * 2);
      return out;
    }
    case QImage::Format_RGB32:
    case QImage::Format_ARGB32:
    case QImage::Format_ARGB32_Premultiplied:
      break;
    case QImage::Format_RGBX64:
    case QImage::Format_RGBA64:
    case QImage::Format_RGBA64_Premultiplied:
      return from_rgba64(image, channels, channel);
    default:
      throw InvalidArgument(
          "from_qimage() takes Grayscale8, Grayscale16, RGB32, ARGB32(_Premultiplied) and "
          "RGBX64/RGBA64(_Premultiplied) images; this one has QImage format " +
          std::to_string(static_cast<int>(image.format())) +
          "; convert it with QImage::convertToFormat first");
  }
  const QImage im = image.format() == QImage::Format_ARGB32_Premultiplied
                        ? image.convertToFormat(QImage::Format_ARGB32)
                        : image;
  const int comps = im.format() == QImage::Format_RGB32 ? 3 : 4;
  auto component = [&](QRgb p, int c) -> std::uint8_t {
    switch (c) {
      case 0:
        return static_cast<std::uint8_t>(qRed(p));
      case 1:
        return static_cast<std::uint8_t>(qGreen(p));
      case 2:
        return static_cast<std::uint8_t>(qBlue(p));
      default:
        return static_cast<std::uint8_t>(qAlpha(p));
    }
  };
  switch (channels) {
    case io::Channels::error:
      throw InvalidArgument(
          "from_qimage(): the " + shape_of(im) + " image has " + std::to_string(comps) +
          " components (" + (comps == 3 ? "RGB" : "RGBA") +
          "); choose Channels::luminance (float32), Channels::channel with an index, "
          "or Channels::split ((components, height, width) u8)");
    case io::Channels::luminance: {
      HostArray out = HostArray::empty(Shape{h, w}, DType::f32);
      float* dst = out.as<float>().data();
      for (std::size_t y = 0; y < h; ++y) {
        const auto* row = reinterpret_cast<const QRgb*>(im.constScanLine(static_cast<int>(y)));
        for (std::size_t x = 0; x < w; ++x) {
          dst[y * w + x] = static_cast<float>(0.2126 * qRed(row[x]) + 0.7152 * qGreen(row[x]) +
                                              0.0722 * qBlue(row[x]));
        }
      }
      return out;
    }
    case io::Channels::channel:
    case io::Channels::split: {
      const bool split = channels == io::Channels::split;
      if (!split && (channel < 0 || channel >= comps)) {
        throw InvalidArgument("from_qimage(): channel " + std::to_string(channel) +
                              " does not exist in an image of " + std::to_string(comps) +
                              " components (use 0 to " + std::to_string(comps - 1) + ")");
      }
      HostArray out =
          split ? HostArray::empty(Shape{static_cast<std::size_t>(comps), h, w}, DType::u8)
                : HostArray::empty(Shape{h, w}, DType::u8);
      std::uint8_t* dst = out.as<std::uint8_t>().data();
      const int c0 = split ? 0 : channel;
      const int c1 = split ? comps : channel + 1;
      for (int c = c0; c < c1; ++c) {
        std::uint8_t* plane = dst + static_cast<std::size_t>(c - c0) * h * w;
        for (std::size_t y = 0; y < h; ++y) {
          const auto* row = reinterpret_cast<const QRgb*>(im.constScanLine(static_cast<int>(y)));
          for (std::size_t x = 0; x < w; ++x) plane[y * w + x] = component(row[x], c);
        }
      }
      return out;
    }
  }
  return {};
}

QImage to_qimage(const HostArray& pixels) {
  if (!pixels.valid()) throw InvalidArgument("to_qimage() was given an empty HostArray");
  const Shape& s = pixels.shape();
  const int w = static_cast<int>(s.width());
  const int h = static_cast<int>(s.height());
  const DType t = pixels.dtype();
  if (s.ndim() <= 2 && (t == DType::u8 || t == DType::u16)) {
    QImage im(w, h, t == DType::u8 ? QImage::Format_Grayscale8 : QImage::Format_Grayscale16);
    if (im.isNull()) throw OutOfMemory("cannot allocate a " + s.str() + " QImage", pixels.bytes());
    const std::size_t row = s.width() * size_of(t);
    for (int y = 0; y < h; ++y)
      std::memcpy(im.scanLine(y), pixels.data() + static_cast<std::size_t>(y) * row, row);
    return im;
  }
  if (s.ndim() == 3 && t == DType::u8 && (s[0] == 3 || s[0] == 4)) {
    const bool alpha = s[0] == 4;
    QImage im(w, h, alpha ? QImage::Format_ARGB32 : QImage::Format_RGB32);
    if (im.isNull()) throw OutOfMemory("cannot allocate a " + s.str() + " QImage", pixels.bytes());
    const std::size_t plane = s.width() * s.height();
    const auto* src = reinterpret_cast<const std::uint8_t*>(pixels.data());
    for (int y = 0; y < h; ++y) {
      auto* row = reinterpret_cast<QRgb*>(im.scanLine(y));
      for (int x = 0; x < w; ++x) {
        const std::size_t i = static_cast<std::size_t>(y) * s.width() + static_cast<std::size_t>(x);
        row[x] =
            qRgba(src[i], src[plane + i], src[2 * plane + i], alpha ? src[3 * plane + i] : 255);
      }
    }
    return im;
  }
  if (t != DType::u8 && t != DType::u16) {
    throw UnsupportedDType("to_qimage() takes u8 and u16 pixels; this array holds " +
                           std::string(name(t)) +
                           "; map it to 8 bits with gpix::render_rgba and use rgba_to_qimage");
  }
  throw InvalidArgument(
      "to_qimage() takes 2D gray images and (3 or 4, h, w) u8 colour stacks; this array is " +
      s.str() + " " + std::string(name(t)) + "; render a slice with gpix::render_rgba");
}

QImage rgba_to_qimage(const HostArray& rgba) {
  if (!rgba.valid()) throw InvalidArgument("rgba_to_qimage() was given an empty HostArray");
  if (rgba.dtype() != DType::u32 || rgba.shape().ndim() > 2) {
    throw InvalidArgument(
        "rgba_to_qimage() takes the (h, w) u32 output of gpix::render_rgba; this array is " +
        rgba.shape().str() + " " + std::string(name(rgba.dtype())));
  }
  const Shape& s = rgba.shape();
  QImage im(static_cast<int>(s.width()), static_cast<int>(s.height()), QImage::Format_RGBA8888);
  if (im.isNull()) throw OutOfMemory("cannot allocate a " + s.str() + " QImage", rgba.bytes());
  const std::size_t row = s.width() * 4;
  for (int y = 0; y < im.height(); ++y)
    std::memcpy(im.scanLine(y), rgba.data() + static_cast<std::size_t>(y) * row, row);
  return im;
}

}  // namespace gpix::qt
