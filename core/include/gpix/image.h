#pragma once
// Image objects (Array with MemoryKind::image) and how kernels read them.
#include <cstdint>

#include "gpix/array.h"

namespace gpix {

// How an image is sampled. Addressing is always clamp-to-edge: a coordinate outside the
// image reads the nearest edge pixel. Pixel coordinates follow OpenCL and CUDA: pixel i
// covers [i, i + 1) and its centre is i + 0.5; normalised coordinates divide by the extent.
struct Sampler {
  enum class Filter : std::uint8_t { nearest, linear };
  enum class Coordinates : std::uint8_t { pixel, normalized };
  Filter filter = Filter::nearest;
  Coordinates coordinates = Coordinates::pixel;
};

// Reads image at n points. coords is an f32 buffer array of shape (n, 2) with columns x, y
// for a 2D image (a 1D image counts as 2D with height 1), or (n, 3) with x, y, z for 3D.
// The result has shape (n) and the image's dtype for nearest sampling; linear sampling needs
// an f32 image (OpenCL and CUDA filter only float formats) and returns f32.
// Throws InvalidArgument (not an image, wrong coords shape or dtype, devices differ) or
// UnsupportedDType (linear on a non-f32 image).
Array resample(const Array& image, const Array& coords, Sampler sampler = {});

}  // namespace gpix
