#include "gpix/ui/render.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "gpix/error.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/reductions.h"
#include "gpix/queue.h"
#include "gpix/stats.h"
#include "gpix/ui/labels.h"
#include "gpix/ui/stack_contrast.h"

namespace gpix::ui {
namespace {

// The (height, width) of the plane that render_rgba draws.
std::pair<std::size_t, std::size_t> plane_size(const Shape& s) {
  return {s.height(), s.width()};
}

void check_slice(const Shape& s, int slice) {
  if (s.ndim() == 3 && (slice < 0 || static_cast<std::size_t>(slice) >= s.depth())) {
    throw InvalidArgument("render: slice " + std::to_string(slice) + " is outside 0.." +
                          std::to_string(s.depth() - 1) + " of a " + s.str() + " array");
  }
}

// Array `a` (already on its device) through render_rgba, read back into a QImage.
QImage render_on_device(const Array& a, std::size_t slice, const RenderOptions& o,
                        std::size_t* pulled) {
  const Lut& lut = colormap(o.colormap);
  if (o.outline && lut.mode != Lut::Mode::labels) {
    throw InvalidArgument(
        "render: the outline mode draws label borders and needs the labels "
        "colour map; '" +
        o.colormap.toStdString() + "' maps intensities");
  }
  Array src = a;
  std::size_t z = slice;
  const auto one_plane = [&] {
    if (src.ndim() == 3) {
      const Shape& s = src.shape();
      src = src.view(Region{{z, 0, 0}, {1, s.height(), s.width()}});
      z = 0;
    }
  };
  if (lut.mode == Lut::Mode::labels && is_float(a.dtype())) {
    // Label ids stored as floats (a user's choice of map): whole numbers on the device, one
    // plane only, as the old host path cast them.
    one_plane();
    src = gpix::convert(src, DType::i64);
  }
  if (o.outline) {
    one_plane();
    src = label_outline(src);
  }
  const double lo = o.low, hi = std::max(o.low, o.high);
  Array rgba = render_rgba(src, lo, hi, lut, z, lut.mode == Lut::Mode::labels ? 1.0 : o.gamma);
  const auto [h, w] = plane_size(a.shape());
  QImage img(static_cast<int>(w), static_cast<int>(h), QImage::Format_RGBA8888);
  // Format_RGBA8888 rows are exactly 4 * width bytes (32-bit pixels need no padding), the
  // layout render_rgba writes: the pull lands in the image without a second copy.
  const auto bytes = static_cast<std::size_t>(img.sizeInBytes());
  pull_async(rgba, img.bits(), bytes).wait();
  if (pulled) *pulled += bytes;
  return img;
}

}  // namespace

QStringList colormap_names() {
  QStringList names;
  for (const Lut& l : builtin_luts()) names << QString::fromStdString(l.name);
  return names;
}

QString canonical_colormap(const QString& name) {
  if (name == QLatin1String("inverted")) return QStringLiteral("inverted_gray");
  return name;
}

const Lut& colormap(const QString& name) {
  return gpix::lut(canonical_colormap(name).toStdString());
}

QString colour_map_of(QRgb colour) {
  const Lut want = Lut::colour(std::uint8_t(qRed(colour)), std::uint8_t(qGreen(colour)),
                               std::uint8_t(qBlue(colour)));
  for (const Lut& l : builtin_luts()) {
    if (l.table == want.table) return QString::fromStdString(l.name);
  }
  return {};
}

QImage render(const Array& array, const RenderOptions& o, std::size_t* pulled) {
  if (!array.valid()) throw InvalidArgument("render: the array is null");
  check_slice(array.shape(), o.slice);
  return render_on_device(array, array.ndim() == 3 ? static_cast<std::size_t>(o.slice) : 0, o,
                          pulled);
}

QImage render(const HostArray& host, const Device& device, const RenderOptions& o,
              std::size_t* pulled) {
  if (!host.valid()) throw InvalidArgument("render: the host array is empty");
  const Shape& s = host.shape();
  check_slice(s, o.slice);
  if (s.ndim() != 3) return render_on_device(display_copy(host, device), 0, o, pulled);
  // Only the plane on screen goes to the device.
  const Shape plane{s.height(), s.width()};
  HostArray one = HostArray::empty(plane, host.dtype());
  std::memcpy(one.data(), host.data() + static_cast<std::size_t>(o.slice) * one.bytes(),
              one.bytes());
  return render_on_device(display_copy(one, device), 0, o, pulled);
}

Array display_copy(const HostArray& host, const Device& device) {
  if (host.dtype() != DType::f64 || device.supports_fp64()) return Array::push(host, device);
  HostArray f = HostArray::empty(host.shape(), DType::f32);
  const auto in = host.as<double>();
  auto out = f.as<float>();
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = static_cast<float>(in[i]);
  return Array::push(f, device);
}

std::pair<double, double> auto_contrast(const Array& array, int slice, double low_percent,
                                        double high_percent) {
  if (!array.valid()) return {0, 1};
  Array a = array;
  if (slice >= 0 && array.ndim() == 3) {
    check_slice(array.shape(), slice);
    const Shape& s = array.shape();
    a = array.view(Region{{static_cast<std::size_t>(slice), 0, 0}, {1, s.height(), s.width()}});
  }
  const Stats st = gpix::stats(a);
  const double mn = st.min.as_double(), mx = st.max.as_double();
  if (st.count == 0 || !std::isfinite(mn) || !std::isfinite(mx)) return {0, 1};
  if (!(mx > mn)) return contrast_from_histogram({}, {}, mn, mx, false, 0, 100);  // flat: widened
  const Histogram h = gpix::histogram(a, kContrastBins, mn, mx);
  return contrast_from_histogram(h.counts, h.edges, mn, mx, !is_float(array.dtype()), low_percent,
                                 high_percent);
}

double value_at(const HostArray& host, std::size_t z, std::size_t y, std::size_t x) {
  const Shape& s = host.shape();
  const std::size_t i = (z * s.height() + y) * s.width() + x;
  if (!host.valid() || i >= host.elements()) return std::nan("");
  return visit_dtype(host.dtype(), [&](auto t) {
    using T = decltype(t);
    return static_cast<double>(reinterpret_cast<const T*>(host.data())[i]);
  });
}

}  // namespace gpix::ui
