#pragma once
// Display helpers over core's device path: colour maps are core's tables (gpix::builtin_luts),
// pixels become colours in gpix::render_rgba on the device, and contrast limits and histograms
// come from gpix::stats / gpix::histogram. Everything here that takes an Array talks to the
// device and may wait behind a running kernel: widgets call it from a worker thread (see
// ImageView), never from the GUI thread.
#include <QImage>
#include <QString>
#include <QStringList>
#include <cstddef>
#include <utility>

#include "gpix/array.h"
#include "gpix/device.h"
#include "gpix/host_array.h"
#include "gpix/render.h"

namespace gpix::ui {

// The colour maps the viewer offers: the names of gpix::builtin_luts(), in core's order.
// "labels" maps integer label ids to distinct colours (0 transparent), ignoring the limits.
QStringList colormap_names();
// Core's name for a colour map name: earlier viewers called inverted_gray "inverted", and
// layers, workflows and settings saved then still say so. Other names are returned unchanged.
QString canonical_colormap(const QString& name);
// Core's table for a name or an old alias; throws gpix::InvalidArgument naming the maps.
const gpix::Lut& colormap(const QString& name);
// The built-in colour map that runs from black to `colour` (gray, red, green, blue, cyan,
// magenta, yellow), or an empty name where none does.
QString colour_map_of(QRgb colour);

struct RenderOptions {
  int slice = 0;   // z index for 3D arrays (ignored for 1D/2D)
  double low = 0;  // contrast limits as gpix::render_rgba takes them
  double high = 1;
  QString colormap = QStringLiteral("gray");
  // Only the label borders of the plane (label_outline, labels.h), the rest transparent; needs
  // the "labels" colour map.
  bool outline = false;
  // The normalised value shown as u^gamma (gpix::RenderStyle); not used by "labels".
  double gamma = 1.0;
};

// One plane (1D arrays become one row) rendered by gpix::render_rgba on the array's device;
// only its RGBA crosses to the host, straight into the QImage (Format_RGBA8888, NaN
// transparent). `pulled` (optional) receives the bytes read back. Float arrays shown with
// "labels" are converted to int64 on the device first (ids are whole numbers). Blocking.
// Throws gpix::InvalidArgument for a slice out of range, limits render_rgba refuses, or the
// outline mode with a colour map other than "labels".
QImage render(const gpix::Array& array, const RenderOptions& options,
              std::size_t* pulled = nullptr);
// A host array (a layer the device could not hold): its plane is pushed to `device` (float64
// as float32 where the device has no fp64; this is for display) and rendered there.
QImage render(const gpix::HostArray& host, const gpix::Device& device, const RenderOptions& options,
              std::size_t* pulled = nullptr);

// A host array on `device` for the display computations (contrast, histogram): as it is, or
// float64 as float32 where the device has no fp64.
gpix::Array display_copy(const gpix::HostArray& host, const gpix::Device& device);

// Contrast limits at the low/high percentiles of the non-NaN pixels (of one z slice, or all
// with slice < 0), on the device: gpix::stats gives the range, gpix::histogram with
// kContrastBins bins over it the ranks; low is the lower edge of the bin holding the low
// rank, high the upper edge of the bin holding the high rank (for integer dtypes rounded
// inwards to whole values, so ranges narrower than kContrastBins are exact). A flat range is
// widened so that a constant image still displays; no pixels or infinite extremes give (0, 1).
inline constexpr int kContrastBins = 4096;
std::pair<double, double> auto_contrast(const gpix::Array& array, int slice = -1,
                                        double low_percent = 0.5, double high_percent = 99.5);

// The value at (z, y, x) of a host array as a double (64-bit integers beyond 2^53 lose
// precision here: it is for display); NaN outside.
double value_at(const gpix::HostArray& host, std::size_t z, std::size_t y, std::size_t x);

}  // namespace gpix::ui
