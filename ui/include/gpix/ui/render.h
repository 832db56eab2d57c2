#pragma once
// Array -> RGBA for display. render() is the ONE place where pixels become colours (slice,
// contrast limits, colour map), so that a device-side render_rgba can replace the CPU path in
// one spot later.
#include <QImage>
#include <QRgb>
#include <QString>
#include <QStringList>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "gpix/array.h"
#include "gpix/host_array.h"

namespace gpix::ui {

// "gray", "inverted", "hot", "cool", "green", "magenta", "labels". "labels" maps each integer
// value to its own colour (0 transparent), ignoring the contrast limits.
QStringList colormap_names();
// 256 entries from low to high; throws gpix::InvalidArgument for an unknown name.
const std::array<QRgb, 256>& colormap(const QString& name);
// The colour of label value v under the "labels" map (0 is transparent).
QRgb label_color(std::int64_t v);

struct RenderOptions {
  int slice = 0;    // z index for 3D arrays (ignored for 1D/2D)
  double low = 0;   // maps to the first LUT entry
  double high = 1;  // maps to the last LUT entry
  QString colormap = QStringLiteral("gray");
};

// One image plane (1D arrays become one row) as QImage::Format_ARGB32_Premultiplied-free
// ARGB32. NaN pixels are transparent. Throws gpix::InvalidArgument for a slice out of range.
QImage render(const gpix::HostArray& host, const RenderOptions& options);
// Same for device data (pulled first; a device-side path replaces this later).
QImage render(const gpix::Array& array, const RenderOptions& options);

// The value at (z, y, x) as a double (64-bit integers beyond 2^53 lose precision here: it is
// for display).
double value_at(const gpix::HostArray& host, std::size_t z, std::size_t y, std::size_t x);

// Contrast limits by percentiles of the finite pixels (of one slice, or all with slice < 0).
// Large arrays are sampled (about a million pixels), so this stays cheap. When the range is
// flat (low == high) it is widened by one so that a constant image still displays.
std::pair<double, double> auto_contrast(const gpix::HostArray& host, int slice = -1,
                                        double low_percent = 0.5, double high_percent = 99.5);

// Counts of finite pixels in `bins` equal bins over [low, high] (sampled for large arrays).
std::vector<std::uint64_t> histogram(const gpix::HostArray& host, double low, double high,
                                     int bins);

}  // namespace gpix::ui
