#pragma once
// The display path: an array (or one z slice of it) mapped to 8-bit RGBA on the device, so
// a viewer pulls 4 bytes per pixel instead of the raw data.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpix/array.h"

namespace gpix {

// A 256-entry colour table. Each entry is one std::uint32_t whose bytes in memory are
// R, G, B, A (QImage::Format_RGBA8888 order); rgba() builds one.
struct Lut {
  enum class Mode : std::uint8_t {
    contrast,  // pixel -> entry floor((v - lo) * 256 / (hi - lo)), clamped to 0..255
    labels,    // label id -> entry 0 for 0, else 1 + (id - 1) % 255; lo and hi are ignored
  };
  std::string name;
  Mode mode = Mode::contrast;
  std::array<std::uint32_t, 256> table{};

  static Lut gray();
  static Lut inverted_gray();
  static Lut hot();    // black, red, yellow, white (R rises over the first third, G the second...)
  static Lut cool();   // cyan to magenta
  static Lut green();  // black to green
  static Lut magenta();  // black to magenta
  static Lut viridis();  // a perceptually ordered blue-green-yellow ramp in the style of viridis
  // Black to (r, g, b): the table of one channel of a colour composite (entry i is
  // round(i * c / 255) per component), blended additively (Blend::add).
  static Lut colour(std::uint8_t r, std::uint8_t g, std::uint8_t b);
  // Distinct colours for label ids; entry 0 (background) is transparent black.
  static Lut labels();
};

// The entry whose bytes in memory are r, g, b, a.
std::uint32_t rgba(std::uint8_t r, std::uint8_t g, std::uint8_t b, std::uint8_t a = 255);

// The built-in tables: gray, inverted_gray, hot, cool, green, magenta, red, blue, cyan,
// yellow, viridis, labels (the one set of colour tables: gpix-viewer offers exactly these).
const std::vector<Lut>& builtin_luts();
// A built-in table by name; throws InvalidArgument listing the names.
const Lut& lut(std::string_view name);

// How a rendered plane lands in the output array.
enum class Blend : std::uint8_t {
  replace,  // each output pixel becomes the pixel's colour
  add,      // the colour is added byte by byte (R, G, B, A), each saturating at 255: additive
            // blending of the channels of a colour composite into one zero-filled target
};

// Display settings beyond the limits and the table.
struct RenderStyle {
  // Contrast mode only: the normalised value u = (v - lo) / (hi - lo) in 0..1 is shown as
  // u^gamma (below 1 brightens the dark end, above 1 darkens it). Any finite gamma > 0.
  double gamma = 1.0;
  Blend blend = Blend::replace;
};

// Renders array `a` (its z slice `slice` when 3D) to a new (height, width) u32 array on the
// same device, one RGBA pixel per element (bytes R, G, B, A; 1D arrays give height 1).
// Contrast mode: every dtype. The device computes the fine step
//   f = floor((v - lo) * 4096 / (hi - lo)), clamped to 0..4095
// in float32 (float64 for f64 arrays; a subtraction, then a multiplication by the host's
// 4096 / (hi - lo)), and the entry is floor(256 * (f / 4096)^gamma) clamped to 0..255, taken
// from a 4096-step table the host builds in double. With gamma 1 that is exactly the entry
// documented on Lut::Mode (f / 16). NaN pixels become transparent black (0), and add nothing
// with Blend::add. Labels mode: integer dtypes only (UnsupportedDType otherwise), gamma 1 and
// Blend::replace only.
// Throws InvalidArgument for a slice outside the array, 2D/1D arrays with slice != 0, hi < lo,
// non-finite limits, a gamma that is not finite and > 0, or a style the labels mode lacks.
Array render_rgba(const Array& a, double lo, double hi, const Lut& lut, std::size_t slice = 0,
                  double gamma = 1.0);
// The same into an existing (height, width) u32 array on a's device (a viewer reuses one per
// frame; composites add channel after channel into one); throws InvalidArgument when out
// does not fit.
void render_rgba(const Array& a, double lo, double hi, const Lut& lut, std::size_t slice,
                 Array& out, const RenderStyle& style = {});

}  // namespace gpix
