#pragma once
// itk::Image <-> gpix, for every pixel type both support (the ten gpix dtypes; char, long and
// long long map by size and signedness), 1 to 3 dimensions, keeping spacing, origin and
// direction (in gpix's (z, y, x) order, see gpix/io.h). Header-only templates: include it
// from code that uses ITK itself and links gpix::io.
#include <itkImage.h>

#include <cstring>
#include <type_traits>

#include "gpix/io.h"

namespace gpix::io {

// The gpix dtype of an ITK scalar pixel type.
template <class T>
constexpr DType itk_dtype() {
  static_assert(
      std::is_arithmetic_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, long double>,
      "gpix holds scalar integer and float pixels of 8 to 64 bits");
  if constexpr (std::is_floating_point_v<T>) {
    return sizeof(T) == 4 ? DType::f32 : DType::f64;
  } else if constexpr (std::is_signed_v<T>) {
    return sizeof(T) == 1   ? DType::i8
           : sizeof(T) == 2 ? DType::i16
           : sizeof(T) == 4 ? DType::i32
                            : DType::i64;
  } else {
    return sizeof(T) == 1   ? DType::u8
           : sizeof(T) == 2 ? DType::u16
           : sizeof(T) == 4 ? DType::u32
                            : DType::u64;
  }
}

namespace detail {

template <class TPixel, unsigned D>
Shape itk_shape(const itk::ImageRegion<D>& region) {
  std::size_t dims[D];
  for (unsigned i = 0; i < D; ++i) dims[D - 1 - i] = region.GetSize()[i];
  return Shape(std::span<const std::size_t>(dims, D));
}

template <class TPixel, unsigned D>
Metadata itk_metadata(const itk::Image<TPixel, D>& image) {
  Metadata m;
  const auto& region = image.GetBufferedRegion();
  typename itk::Image<TPixel, D>::PointType first;
  image.TransformIndexToPhysicalPoint(region.GetIndex(), first);  // a cropped buffer starts here
  m.spacing.resize(D);
  m.origin.resize(D);
  m.direction.resize(D * D);
  for (unsigned i = 0; i < D; ++i) {
    m.spacing[D - 1 - i] = image.GetSpacing()[i];
    m.origin[D - 1 - i] = first[i];
    for (unsigned j = 0; j < D; ++j)
      m.direction[(D - 1 - i) * D + (D - 1 - j)] = image.GetDirection()(i, j);
  }
  return m;
}

template <class TPixel, unsigned D>
void check_itk(const itk::Image<TPixel, D>* image) {
  static_assert(D >= 1 && D <= 3, "gpix arrays have 1 to 3 dimensions");
  if (!image) throw InvalidArgument("from_itk() was given a null itk::Image");
  if (image->GetBufferedRegion().GetNumberOfPixels() == 0 || !image->GetBufferPointer()) {
    throw InvalidArgument(
        "from_itk(): the itk::Image has no pixels in memory (call Update() on its source first)");
  }
}

}  // namespace detail

// The buffered region of an itk::Image as a host Image (a copy; the ITK image is untouched).
// Throws InvalidArgument for a null image or one without a buffer.
template <class TPixel, unsigned D>
Image from_itk(const itk::Image<TPixel, D>* image) {
  detail::check_itk(image);
  Image out;
  out.pixels = HostArray::empty(detail::itk_shape<TPixel, D>(image->GetBufferedRegion()),
                                itk_dtype<TPixel>());
  std::memcpy(out.pixels.data(), image->GetBufferPointer(), out.pixels.bytes());
  out.meta = detail::itk_metadata(*image);
  out.format = "itk::Image";
  return out;
}

// The same straight onto a device: one transfer from ITK's buffer, no host copy.
template <class TPixel, unsigned D>
DeviceImage from_itk(const itk::Image<TPixel, D>* image, const Device& device) {
  detail::check_itk(image);
  DeviceImage out;
  out.pixels = Array::empty(detail::itk_shape<TPixel, D>(image->GetBufferedRegion()),
                            itk_dtype<TPixel>(), device);
  out.pixels.write(image->GetBufferPointer(), out.pixels.bytes());
  out.meta = detail::itk_metadata(*image);
  out.format = "itk::Image";
  return out;
}

namespace detail {

// An allocated itk::Image of the shape with the metadata; validates dtype, dims and metadata.
template <class TPixel, unsigned D>
typename itk::Image<TPixel, D>::Pointer make_itk(const Shape& shape, DType dtype,
                                                 const Metadata& meta) {
  static_assert(D >= 1 && D <= 3, "gpix arrays have 1 to 3 dimensions");
  if (dtype != itk_dtype<TPixel>()) {
    throw UnsupportedDType("to_itk(): the pixels are " + std::string(name(dtype)) +
                           " but an itk::Image of " + std::string(name(itk_dtype<TPixel>())) +
                           " was asked for; use the matching pixel type");
  }
  if (shape.ndim() != static_cast<int>(D)) {
    throw InvalidArgument("to_itk(): the pixels have " + std::to_string(shape.ndim()) +
                          " dimensions but a " + std::to_string(D) + "D itk::Image was asked for");
  }
  const auto n = static_cast<std::size_t>(D);
  if ((!meta.spacing.empty() && meta.spacing.size() != n) ||
      (!meta.origin.empty() && meta.origin.size() != n) ||
      (!meta.direction.empty() && meta.direction.size() != n * n)) {
    throw InvalidArgument("to_itk(): the metadata lengths do not match a " + std::to_string(D) +
                          "D image");
  }
  using ImageType = itk::Image<TPixel, D>;
  auto image = ImageType::New();
  typename ImageType::SizeType size;
  for (unsigned i = 0; i < D; ++i) size[i] = shape[static_cast<int>(D - 1 - i)];
  image->SetRegions(typename ImageType::RegionType(size));
  image->Allocate();
  const auto sp = meta.spacing_or_default(static_cast<int>(D));
  const auto org = meta.origin_or_default(static_cast<int>(D));
  const auto dir = meta.direction_or_default(static_cast<int>(D));
  typename ImageType::SpacingType spacing;
  typename ImageType::PointType origin;
  typename ImageType::DirectionType direction;
  for (unsigned i = 0; i < D; ++i) {
    spacing[i] = sp[D - 1 - i];
    origin[i] = org[D - 1 - i];
    for (unsigned j = 0; j < D; ++j) direction(i, j) = dir[(D - 1 - i) * D + (D - 1 - j)];
  }
  image->SetSpacing(spacing);
  image->SetOrigin(origin);
  image->SetDirection(direction);
  return image;
}

}  // namespace detail

// A new itk::Image holding a copy of the pixels, with the metadata (defaults where empty).
// Throws UnsupportedDType when TPixel is not the pixels' dtype and InvalidArgument when D is
// not their number of dimensions or the metadata has the wrong length.
template <class TPixel, unsigned D>
typename itk::Image<TPixel, D>::Pointer to_itk(const HostArray& pixels, const Metadata& meta = {}) {
  if (!pixels.valid()) throw InvalidArgument("to_itk() was given an empty HostArray");
  auto image = detail::make_itk<TPixel, D>(pixels.shape(), pixels.dtype(), meta);
  std::memcpy(image->GetBufferPointer(), pixels.data(), pixels.bytes());
  return image;
}

template <class TPixel, unsigned D>
typename itk::Image<TPixel, D>::Pointer to_itk(const Image& image) {
  return to_itk<TPixel, D>(image.pixels, image.meta);
}

// A device array read once straight into the new itk::Image's buffer (no host staging copy).
template <class TPixel, unsigned D>
typename itk::Image<TPixel, D>::Pointer to_itk(const Array& pixels, const Metadata& meta = {}) {
  if (!pixels.valid()) throw InvalidArgument("to_itk() was given a null Array");
  auto image = detail::make_itk<TPixel, D>(pixels.shape(), pixels.dtype(), meta);
  pixels.read(image->GetBufferPointer(), pixels.bytes());
  return image;
}

template <class TPixel, unsigned D>
typename itk::Image<TPixel, D>::Pointer to_itk(const DeviceImage& image) {
  return to_itk<TPixel, D>(image.pixels, image.meta);
}

}  // namespace gpix::io
