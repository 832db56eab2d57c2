#include "gpix/ui/render.h"

#include <QColor>
#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

#include "gpix/error.h"

namespace gpix::ui {
namespace {

int clamp255(double v) {
  return static_cast<int>(std::clamp(std::lround(v * 255.0), 0L, 255L));
}

std::array<QRgb, 256> make_lut(const QString& name) {
  std::array<QRgb, 256> lut{};
  for (int i = 0; i < 256; ++i) {
    const double t = i / 255.0;
    QRgb c = qRgb(i, i, i);
    if (name == QLatin1String("inverted")) {
      c = qRgb(255 - i, 255 - i, 255 - i);
    } else if (name == QLatin1String("hot")) {
      c = qRgb(clamp255(3 * t), clamp255(3 * t - 1), clamp255(3 * t - 2));
    } else if (name == QLatin1String("cool")) {
      c = qRgb(i, 255 - i, 255);
    } else if (name == QLatin1String("green")) {
      c = qRgb(0, i, 0);
    } else if (name == QLatin1String("magenta")) {
      c = qRgb(i, 0, i);
    } else if (name == QLatin1String("labels")) {
      c = label_color(i);
    }
    lut[static_cast<std::size_t>(i)] = c;
  }
  return lut;
}

// Plane pointer and extents of one slice.
struct Plane {
  std::size_t width = 0, height = 0, offset = 0;  // offset in elements
};

Plane plane_of(const Shape& s, int slice) {
  Plane p;
  p.width = s.width();
  p.height = s.height();
  if (s.ndim() == 3) {
    if (slice < 0 || static_cast<std::size_t>(slice) >= s.depth()) {
      throw InvalidArgument("render: slice " + std::to_string(slice) + " is outside 0.." +
                            std::to_string(s.depth() - 1) + " of a " + s.str() + " array");
    }
    p.offset = static_cast<std::size_t>(slice) * p.width * p.height;
  }
  return p;
}

// Calls f(double value) for a sample of at most ~limit pixels of [begin, end).
template <class F>
void sample_values(const HostArray& h, std::size_t begin, std::size_t end, std::size_t limit,
                   F&& f) {
  const std::size_t n = end - begin;
  const std::size_t step = std::max<std::size_t>(1, n / std::max<std::size_t>(1, limit));
  visit_dtype(h.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* d = reinterpret_cast<const T*>(h.data());
    for (std::size_t i = begin; i < end; i += step) f(static_cast<double>(d[i]));
  });
}

}  // namespace

QStringList colormap_names() {
  return {QStringLiteral("gray"),  QStringLiteral("inverted"), QStringLiteral("hot"),
          QStringLiteral("cool"),  QStringLiteral("green"),    QStringLiteral("magenta"),
          QStringLiteral("labels")};
}

const std::array<QRgb, 256>& colormap(const QString& name) {
  static std::mutex m;
  static std::map<QString, std::array<QRgb, 256>> cache;
  std::lock_guard lock(m);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  if (!colormap_names().contains(name)) {
    throw InvalidArgument("there is no colour map '" + name.toStdString() +
                          "'; the maps are: " + colormap_names().join(", ").toStdString());
  }
  return cache.emplace(name, make_lut(name)).first->second;
}

QRgb label_color(std::int64_t v) {
  if (v == 0) return qRgba(0, 0, 0, 0);
  // A fixed hash spreads neighbouring labels over the hue circle; bright, saturated colours.
  std::uint64_t x = static_cast<std::uint64_t>(v) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  const int hue = static_cast<int>(x % 360);
  const int sat = 160 + static_cast<int>((x >> 12) % 96);
  const int val = 200 + static_cast<int>((x >> 20) % 56);
  return QColor::fromHsv(hue, sat, val).rgb();
}

QImage render(const HostArray& host, const RenderOptions& o) {
  if (!host.valid()) throw InvalidArgument("render: the host array is empty");
  const Plane p = plane_of(host.shape(), o.slice);
  const bool labels = o.colormap == QLatin1String("labels");
  const auto& lut = colormap(o.colormap);
  QImage img(static_cast<int>(p.width), static_cast<int>(p.height), QImage::Format_ARGB32);
  const double range = o.high - o.low;
  const double scale = range > 0 ? 255.0 / range : 0.0;
  visit_dtype(host.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* d = reinterpret_cast<const T*>(host.data()) + p.offset;
    for (std::size_t y = 0; y < p.height; ++y) {
      auto* line = reinterpret_cast<QRgb*>(img.scanLine(static_cast<int>(y)));
      const T* row = d + y * p.width;
      for (std::size_t x = 0; x < p.width; ++x) {
        const double v = static_cast<double>(row[x]);
        if (std::isnan(v)) {
          line[x] = qRgba(0, 0, 0, 0);
        } else if (labels) {
          line[x] = label_color(static_cast<std::int64_t>(row[x]));
        } else {
          const double t = range > 0 ? (v - o.low) * scale : (v >= o.high ? 255.0 : 0.0);
          line[x] = lut[static_cast<std::size_t>(std::clamp(t + 0.5, 0.0, 255.0))];
        }
      }
    }
  });
  return img;
}

QImage render(const Array& array, const RenderOptions& options) {
  if (!array.valid()) throw InvalidArgument("render: the array is null");
  return render(array.pull(), options);
}

double value_at(const HostArray& host, std::size_t z, std::size_t y, std::size_t x) {
  const Shape& s = host.shape();
  const std::size_t i = (z * s.height() + y) * s.width() + x;
  if (i >= host.elements()) return std::nan("");
  return visit_dtype(host.dtype(), [&](auto t) {
    using T = decltype(t);
    return static_cast<double>(reinterpret_cast<const T*>(host.data())[i]);
  });
}

std::pair<double, double> auto_contrast(const HostArray& host, int slice, double low_percent,
                                        double high_percent) {
  if (!host.valid()) return {0, 1};
  std::size_t begin = 0, end = host.elements();
  if (slice >= 0 && host.shape().ndim() == 3) {
    const Plane p = plane_of(host.shape(), slice);
    begin = p.offset;
    end = p.offset + p.width * p.height;
  }
  std::vector<double> v;
  v.reserve(std::min<std::size_t>(end - begin, 1u << 20));
  sample_values(host, begin, end, 1u << 20, [&](double x) {
    if (std::isfinite(x)) v.push_back(x);
  });
  if (v.empty()) return {0, 1};
  auto at = [&](double pct) {
    const auto k = static_cast<std::size_t>(std::clamp(
        pct / 100.0 * static_cast<double>(v.size() - 1), 0.0, static_cast<double>(v.size() - 1)));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  double lo = at(low_percent), hi = at(high_percent);
  // Widen a flat range so it maps; relative to the value, as +1 vanishes beyond 2^53.
  if (!(hi > lo)) hi = lo + std::max(1.0, std::abs(lo) * 1e-9);
  return {lo, hi};
}

std::vector<std::uint64_t> histogram(const HostArray& host, double low, double high, int bins) {
  std::vector<std::uint64_t> h(static_cast<std::size_t>(std::max(bins, 1)), 0);
  if (!host.valid() || !(high > low)) return h;
  const double scale = static_cast<double>(h.size()) / (high - low);
  sample_values(host, 0, host.elements(), 1u << 20, [&](double x) {
    if (!std::isfinite(x) || x < low || x > high) return;
    const auto b = std::min(static_cast<std::size_t>((x - low) * scale), h.size() - 1);
    ++h[b];
  });
  return h;
}

}  // namespace gpix::ui
