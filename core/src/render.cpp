#include "gpix/render.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>

#include "detail.h"
#include "gpix/error.h"
#include "kernel_variants.h"
#include "memory_pool.h"
#include "programs.h"

namespace gpix {
namespace {

using detail::Access;
using detail::KernelArg;

constexpr std::size_t kGroup = 64;

std::uint8_t to_byte(double v) {
  return static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

// HSV (all 0..1) to RGB bytes.
std::uint32_t hsv(double h, double s, double v) {
  const double i = std::floor(h * 6.0);
  const double f = h * 6.0 - i;
  const double p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
  double r = v, g = t, b = p;
  switch (static_cast<int>(i) % 6) {
    case 0:
      r = v, g = t, b = p;
      break;
    case 1:
      r = q, g = v, b = p;
      break;
    case 2:
      r = p, g = v, b = t;
      break;
    case 3:
      r = p, g = q, b = v;
      break;
    case 4:
      r = t, g = p, b = v;
      break;
    default:
      r = v, g = p, b = q;
      break;
  }
  return rgba(to_byte(r * 255), to_byte(g * 255), to_byte(b * 255));
}

}  // namespace

std::uint32_t rgba(std::uint8_t r, std::uint8_t g, std::uint8_t b, std::uint8_t a) {
  const std::uint8_t bytes[4] = {r, g, b, a};
  std::uint32_t v;
  std::memcpy(&v, bytes, 4);
  return v;
}

Lut Lut::gray() {
  Lut l;
  l.name = "gray";
  for (int i = 0; i < 256; ++i) {
    const auto c = static_cast<std::uint8_t>(i);
    l.table[static_cast<std::size_t>(i)] = rgba(c, c, c);
  }
  return l;
}

Lut Lut::inverted_gray() {
  Lut l;
  l.name = "inverted_gray";
  for (int i = 0; i < 256; ++i) {
    const auto c = static_cast<std::uint8_t>(255 - i);
    l.table[static_cast<std::size_t>(i)] = rgba(c, c, c);
  }
  return l;
}

namespace {
// A contrast table whose entry i is f(i / 255.0) with components 0..1.
template <class F>
Lut ramp(std::string name, F&& f) {
  Lut l;
  l.name = std::move(name);
  for (int i = 0; i < 256; ++i) {
    const auto [r, g, b] = f(i / 255.0);
    l.table[static_cast<std::size_t>(i)] =
        rgba(to_byte(r * 255), to_byte(g * 255), to_byte(b * 255));
  }
  return l;
}
using Rgb = std::array<double, 3>;
}  // namespace

Lut Lut::hot() {
  return ramp("hot", [](double t) { return Rgb{3 * t, 3 * t - 1, 3 * t - 2}; });
}

Lut Lut::cool() {
  return ramp("cool", [](double t) { return Rgb{t, 1 - t, 1}; });
}

Lut Lut::green() {
  return ramp("green", [](double t) { return Rgb{0, t, 0}; });
}

Lut Lut::magenta() {
  return ramp("magenta", [](double t) { return Rgb{t, 0, t}; });
}

Lut Lut::colour(std::uint8_t r, std::uint8_t g, std::uint8_t b) {
  Lut l;
  char name[32];
  std::snprintf(name, sizeof name, "colour_%02x%02x%02x", r, g, b);
  l.name = name;
  for (int i = 0; i < 256; ++i) {
    const auto part = [i](std::uint8_t c) { return to_byte(i * c / 255.0); };
    l.table[static_cast<std::size_t>(i)] = rgba(part(r), part(g), part(b));
  }
  return l;
}

Lut Lut::viridis() {
  // Nine samples along viridis (dark purple, blue, teal, green, yellow), linearly interpolated.
  static const double stops[9][3] = {{68, 1, 84},    {72, 40, 120},  {59, 82, 139},
                                     {44, 113, 142}, {33, 145, 140}, {39, 173, 129},
                                     {94, 201, 98},  {170, 220, 50}, {253, 231, 37}};
  Lut l;
  l.name = "viridis";
  for (int i = 0; i < 256; ++i) {
    const double x = i / 255.0 * 8.0;
    const int k = std::min(static_cast<int>(x), 7);
    const double f = x - k;
    double c[3];
    for (int j = 0; j < 3; ++j) c[j] = stops[k][j] + (stops[k + 1][j] - stops[k][j]) * f;
    l.table[static_cast<std::size_t>(i)] = rgba(to_byte(c[0]), to_byte(c[1]), to_byte(c[2]));
  }
  return l;
}

Lut Lut::labels() {
  Lut l;
  l.name = "labels";
  l.mode = Mode::labels;
  l.table[0] = rgba(0, 0, 0, 0);
  // Golden-ratio hue steps, with saturation and value varied too, keep neighbours distinct.
  for (int i = 1; i < 256; ++i) {
    const double h = std::fmod(i * 0.6180339887498949, 1.0);
    const double s = (i % 3 == 0) ? 0.55 : ((i % 3 == 1) ? 0.85 : 1.0);
    const double v = (i % 2 == 0) ? 0.8 : 1.0;
    l.table[static_cast<std::size_t>(i)] = hsv(h, s, v);
  }
  return l;
}

const std::vector<Lut>& builtin_luts() {
  // Black to one colour: ImageJ's channel LUTs besides green and magenta (Fiji saves a
  // multi-channel stack's channels with them, and gpix-viewer shows each channel in its own).
  const auto named = [](Lut l, const char* name) {
    l.name = name;
    return l;
  };
  static const std::vector<Lut> luts = {Lut::gray(),
                                        Lut::inverted_gray(),
                                        Lut::hot(),
                                        Lut::cool(),
                                        Lut::green(),
                                        Lut::magenta(),
                                        named(Lut::colour(255, 0, 0), "red"),
                                        named(Lut::colour(0, 0, 255), "blue"),
                                        named(Lut::colour(0, 255, 255), "cyan"),
                                        named(Lut::colour(255, 255, 0), "yellow"),
                                        Lut::viridis(),
                                        Lut::labels()};
  return luts;
}

const Lut& lut(std::string_view name) {
  std::string names;
  for (const auto& l : builtin_luts()) {
    if (l.name == name) return l;
    names += (names.empty() ? "" : ", ") + l.name;
  }
  throw InvalidArgument("no lookup table named '" + std::string(name) +
                        "'; the built-in ones are " + names);
}

namespace {

// Steps between two table entries in the contrast kernel: the gamma curve is applied to the
// value at 1/16 of an entry, so that a steep curve (gamma 0.1 near black) still spreads over
// many entries, and with integer arithmetic after the kernel's one float step the host
// reference is exact.
constexpr int kFine = 4096;

// The kFine entries of a contrast table with its gamma curve in them. A viewer draws frame
// after frame with the same table and gamma, so each thread keeps the last one it made: a frame
// neither allocates it nor evaluates 4096 pow() calls again.
const std::array<std::uint32_t, kFine>& fine_table(const Lut& lut, double gamma) {
  struct Last {
    std::array<std::uint32_t, 256> source{};
    double gamma = 0;  // 0: none made yet (render_rgba() takes gamma > 0 only)
    std::array<std::uint32_t, kFine> fine{};
  };
  thread_local Last last;
  if (last.gamma == gamma && last.source == lut.table) return last.fine;
  for (int f = 0; f < kFine; ++f) {
    const int e = gamma == 1.0
                      ? f / 16
                      : static_cast<int>(std::min(
                            255.0, std::floor(256.0 * std::pow(f / double(kFine), gamma))));
    last.fine[static_cast<std::size_t>(f)] = lut.table[static_cast<std::size_t>(e)];
  }
  last.source = lut.table;
  last.gamma = gamma;
  return last.fine;
}

}  // namespace

namespace detail {

Defines render_defines(DType t, bool contrast) {
  Defines d = {{"T", std::string(kernel_type(t))}};
  if (contrast) {
    d.emplace_back("CT", t == DType::f64 ? "gpix_f64" : "gpix_f32");
    d.emplace_back("IS_FLOAT", is_float(t) ? "1" : "0");
  }
  if (t == DType::f64) d.emplace_back("GPIX_NEED_FP64", "1");
  return d;
}

void add_render_variants(std::vector<KernelVariant>& out) {
  for (DType t : kAllDTypes) {
    out.push_back({"render.kernel", "render_contrast", render_defines(t, true)});
    if (!is_float(t)) out.push_back({"render.kernel", "render_labels", render_defines(t, false)});
  }
}

}  // namespace detail

Array render_rgba(const Array& a, double lo, double hi, const Lut& lut, std::size_t slice,
                  double gamma) {
  const Shape& s = a.shape();
  Array out = Array::empty(Shape{s.height(), s.width()}, DType::u32, a.device());
  render_rgba(a, lo, hi, lut, slice, out, {.gamma = gamma});
  return out;
}

void render_rgba(const Array& a, double lo, double hi, const Lut& lut, std::size_t slice,
                 Array& out, const RenderStyle& style) {
  // The kernels read one flat slice: of padded arrays, images and region views that slice is
  // copied into a contiguous buffer first.
  if (!a.is_contiguous() && a.valid() && (a.ndim() != 3 || slice < a.shape()[0])) {
    const Shape& s = a.shape();
    std::vector<std::size_t> origin(static_cast<std::size_t>(s.ndim()), 0), extent;
    for (int i = 0; i < s.ndim(); ++i) extent.push_back(s[i]);
    if (s.ndim() == 3) {
      origin[0] = slice;
      extent[0] = 1;
    }
    Array flat = Array::empty(Shape(std::span<const std::size_t>(extent)), a.dtype(), a.device());
    copy_region(a, origin, flat, std::vector<std::size_t>(extent.size(), 0), extent);
    render_rgba(flat, lo, hi, lut, 0, out, style);
    return;
  }
  auto& impl = Access::impl(a);
  const Shape& s = impl.shape;
  const bool contrast = lut.mode == Lut::Mode::contrast;
  if (s.ndim() == 3 ? slice >= s[0] : slice != 0) {
    throw InvalidArgument(
        "render_rgba(): slice " + std::to_string(slice) + " does not exist in a " + s.str() +
        " array (" +
        (s.ndim() == 3 ? "use 0 to " + std::to_string(s[0] - 1) : std::string("use 0")) + ")");
  }
  if (contrast) {
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) {
      throw InvalidArgument("render_rgba(): contrast limits lo=" + Scalar(lo).str() +
                            ", hi=" + Scalar(hi).str() + " must be finite with lo <= hi");
    }
    if (!std::isfinite(style.gamma) || !(style.gamma > 0)) {
      throw InvalidArgument("render_rgba(): gamma " + Scalar(style.gamma).str() +
                            " must be finite and greater than 0 (1 is linear)");
    }
  } else if (is_float(impl.dtype)) {
    throw UnsupportedDType(
        "render_rgba(): the label colormap takes integer label ids; this array holds " +
        std::string(name(impl.dtype)) + " (convert it to an integer dtype first)");
  } else if (style.gamma != 1.0 || style.blend != Blend::replace) {
    throw InvalidArgument(
        "render_rgba(): the label colormap draws each id in its own colour; gamma (here " +
        Scalar(style.gamma).str() +
        ") and additive blending apply to contrast tables only (use gamma 1, Blend::replace)");
  }
  auto& dev = *impl.device;
  const std::size_t n = s.width() * s.height();
  const Shape out_shape{s.height(), s.width()};
  if (!out.valid() || out.shape() != out_shape || out.dtype() != DType::u32 ||
      !(out.device() == a.device())) {
    throw InvalidArgument("render_rgba(): the output must be a " + out_shape.str() +
                          " uint32 array on '" + a.device().label() + "'");
  }
  // The kernels write the frame from the allocation's first byte, row after row.
  if (!out.is_contiguous()) {
    throw InvalidArgument(
        "render_rgba(): the output must be contiguous (not a region view or a padded array); "
        "render into a " +
        out_shape.str() + " array and copy it into place with copy_region()");
  }
  // Labels read the 256 entries; contrast the 4096 steps with the gamma curve in them.
  const std::span<const std::uint32_t> entries =
      contrast ? std::span<const std::uint32_t>(fine_table(lut, style.gamma))
               : std::span<const std::uint32_t>(lut.table);
  // From the pool: a frame's 16 kB table took a device allocation (and its touch) per frame.
  auto table = dev.pool().allocate(entries.size_bytes());
  dev.write(*table, 0, entries.data(), entries.size_bytes());
  const std::int32_t add = style.blend == Blend::add ? 1 : 0;
  const std::uint64_t offset = slice * n;
  detail::Launch l;
  l.local[0] = std::min(kGroup, dev.info().max_work_group);
  l.global[0] = detail::round_up(n, l.local[0]);
  const auto& kernel =
      dev.kernel(detail::program("render.kernel"), contrast ? "render_contrast" : "render_labels",
                 detail::render_defines(impl.dtype, contrast));
  auto& out_mem = *Access::impl(out).memory;
  if (!contrast) {
    const KernelArg args[] = {
        KernelArg::mem(*impl.memory), KernelArg::scalar<std::uint64_t>(offset),
        KernelArg::scalar<std::uint64_t>(n), KernelArg::mem(*table), KernelArg::mem(out_mem)};
    dev.launch(*kernel, l, args);
  } else {
    // +inf when hi == lo: a step at lo. 4096 = 16 x 256 (exact), so f / 16 is the entry
    // (v - lo) * 256 / (hi - lo) gives in the same arithmetic.
    const double scale = double(kFine) / (hi - lo);
    if (impl.dtype == DType::f64) {
      const KernelArg args[] = {KernelArg::mem(*impl.memory),
                                KernelArg::scalar<std::uint64_t>(offset),
                                KernelArg::scalar<std::uint64_t>(n),
                                KernelArg::scalar<double>(lo),
                                KernelArg::scalar<double>(scale),
                                KernelArg::mem(*table),
                                KernelArg::mem(out_mem),
                                KernelArg::scalar<std::int32_t>(add)};
      dev.launch(*kernel, l, args);
    } else {
      const KernelArg args[] = {KernelArg::mem(*impl.memory),
                                KernelArg::scalar<std::uint64_t>(offset),
                                KernelArg::scalar<std::uint64_t>(n),
                                KernelArg::scalar<float>(static_cast<float>(lo)),
                                KernelArg::scalar<float>(static_cast<float>(scale)),
                                KernelArg::mem(*table),
                                KernelArg::mem(out_mem),
                                KernelArg::scalar<std::int32_t>(add)};
      dev.launch(*kernel, l, args);
    }
  }
  // The table must outlive the launch; finishing here also makes errors show up in this call.
  dev.finish();
}

}  // namespace gpix
