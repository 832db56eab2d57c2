// Length units as the image formats spell them (gpix/io.h: normalise_unit, metres_per).
#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>

#include "gpix/io.h"
#include "gpix/kept_axes.h"

namespace gpix::io {

namespace {

struct Unit {
  std::string_view name;
  double metres;
  std::array<std::string_view, 8> spellings;  // lower case; UTF-8 for µ (U+00B5) and μ (U+03BC)
};

// ImageJ writes "micron" (and "\u00B5m" escaped in some versions), OME-XML "µm", NRRD and
// MetaIO "um", the nifti library's names are "micron", "mm" and "meter".
constexpr Unit kUnits[] = {
    {"nm", 1e-9, {"nm", "nanometer", "nanometers", "nanometre", "nanometres"}},
    {"um",
     1e-6,
     {"um", "\xc2\xb5m", "\xce\xbcm", "micron", "microns", "micrometer", "micrometre", "\\u00b5m"}},
    {"mm", 1e-3, {"mm", "millimeter", "millimeters", "millimetre", "millimetres"}},
    {"cm", 1e-2, {"cm", "centimeter", "centimeters", "centimetre", "centimetres"}},
    {"m", 1.0, {"m", "meter", "meters", "metre", "metres"}},
    {"in", 0.0254, {"in", "inch", "inches"}},
};

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string normalise_unit(std::string_view name) {
  const std::string_view t = trimmed(name);
  std::string low(t);
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (low.empty() || low == "pixel" || low == "pixels" || low == "px") return {};
  for (const Unit& u : kUnits) {
    for (std::string_view s : u.spellings) {
      if (!s.empty() && low == s) return std::string(u.name);
    }
  }
  return std::string(t);
}

double metres_per(std::string_view unit) {
  for (const Unit& u : kUnits) {
    if (unit == u.name) return u.metres;
  }
  return 0.0;
}

bool placed(const Metadata& meta, int ndim) {
  if (!meta.unit.empty()) return true;
  const auto n = static_cast<std::size_t>(ndim);
  const auto sp = meta.spacing_or_default(ndim), org = meta.origin_or_default(ndim);
  const auto dir = meta.direction_or_default(ndim);
  for (std::size_t i = 0; i < n; ++i) {
    if (sp[i] != 1.0 || org[i] != 0.0) return true;
    for (std::size_t k = 0; k < n; ++k) {
      if (dir[i * n + k] != (i == k ? 1.0 : 0.0)) return true;
    }
  }
  return false;
}

Metadata carried(const Metadata& meta, const Shape& in, const Shape& out) {
  Metadata c = carried(meta, in, axis_maps(in, out));
  // Channels stay channels where the output keeps the first axis whole (a filter run channel
  // by channel, a pointwise one); a crop or a resample of that axis makes it something else.
  if (!(meta.channels > 1 && in.ndim() == 3 && out.ndim() == 3 && out.depth() == in.depth())) {
    c.channels = 1;
    c.channel_colours.clear();
  }
  return c;
}

Metadata carried(const Metadata& meta, const Shape& in, const std::vector<AxisMap>& axes) {
  if (axes.empty() || axes.front().axis < 0) return {};
  // An image that says nothing of its placement (no unit, spacing 1, origin 0, no rotation:
  // every TIFF or PNG without calibration reads so) stays so where its grid moves: a resample's
  // spacing of 0.5 "pixels of the input" would be taken for a calibration (the viewer measured
  // an ROI of 100 pixels as 25).
  const bool moved = std::any_of(
      axes.begin(), axes.end(), [](const AxisMap& m) { return m.scale != 1.0 || m.offset != 0.0; });
  if (moved && !placed(meta, in.ndim())) return {};
  const auto sp = meta.spacing_or_default(in.ndim()), org = meta.origin_or_default(in.ndim());
  const auto dir = meta.direction_or_default(in.ndim());
  const auto n = static_cast<std::size_t>(in.ndim()), m = axes.size();
  Metadata c;
  c.unit = meta.unit;
  c.direction.resize(m * m);
  // Output index q lies at input index scale q + offset on its axis: physical position
  // origin + direction (spacing (scale q + offset)) over the axes, so the output's spacing is
  // spacing x scale and its origin moves by direction (spacing x offset).
  std::vector<double> origin(n);
  for (std::size_t r = 0; r < n; ++r) origin[r] = org[r];
  for (std::size_t r = 0; r < m; ++r) {
    const auto a = static_cast<std::size_t>(axes[r].axis);
    c.spacing.push_back(sp[a] * axes[r].scale);
    for (std::size_t k = 0; k < n; ++k) origin[k] += dir[k * n + a] * sp[a] * axes[r].offset;
    for (std::size_t k = 0; k < m; ++k)
      c.direction[r * m + k] = dir[a * n + static_cast<std::size_t>(axes[k].axis)];
  }
  for (std::size_t r = 0; r < m; ++r)
    c.origin.push_back(origin[static_cast<std::size_t>(axes[r].axis)]);
  // Channels stay where the first axis stays first (a transpose of z and x moves them).
  if (meta.channels > 1 && in.ndim() == 3 && m == 3 && axes.front().axis == 0 &&
      in.depth() == static_cast<std::size_t>(meta.channels)) {
    c.channels = meta.channels;
    c.channel_colours = meta.channel_colours;
  }
  return c;
}

}  // namespace gpix::io
