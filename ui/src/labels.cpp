#include "gpix/ui/labels.h"

#include <QLocale>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "gpix/error.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/neighbourhood.h"
#include "gpix/filters/segmentation.h"
#include "gpix/host_array.h"

namespace gpix::ui {
namespace {

// Each pixel's index along `axis` (0 x, 1 y, 2 z) in the smallest unsigned dtype that holds it.
// Built on the host and pushed once: core has no generator, and label_statistics reads it as
// an intensity image whose per-label mean, min and max are the centroid and bounding box.
Array coordinate_ramp(const Shape& s, int axis, const Device& device) {
  const std::size_t w = s.width(), h = s.height(), d = s.depth();
  const std::size_t extent = axis == 0 ? w : axis == 1 ? h : d;
  const DType t = extent <= 256 ? DType::u8 : extent <= 65536 ? DType::u16 : DType::u32;
  HostArray ramp = HostArray::empty(s, t);
  visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      const std::span<T> v = ramp.as<T>();
      for (std::size_t z = 0; z < d; ++z) {
        for (std::size_t y = 0; y < h; ++y) {
          T* row = v.data() + (z * h + y) * w;
          if (axis == 0) {
            for (std::size_t x = 0; x < w; ++x) row[x] = static_cast<T>(x);
          } else {
            std::fill(row, row + w, static_cast<T>(axis == 1 ? y : z));
          }
        }
      }
    }
  });
  return Array::push(ramp, device);
}

QString csv_number(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (v == std::floor(v) && std::abs(v) < 9007199254740992.0) {
    return QString::number(static_cast<qint64>(v));
  }
  return QString::number(v, 'g', QLocale::FloatingPointShortest);
}

}  // namespace

Table measure_labels(const Array& labels, const Array& intensity) {
  if (!labels.valid()) throw InvalidArgument("measure_labels: the labels array is null");
  const Shape& s = labels.shape();
  const int nd = s.ndim() == 3 ? 3 : 2;
  // label_statistics checks dtypes and dimensions and names what would work.
  std::vector<Table> axes;
  for (int axis = 0; axis < nd; ++axis) {
    axes.push_back(label_statistics(labels, coordinate_ramp(s, axis, labels.device())));
  }
  const bool with_intensity = intensity.valid();
  const Table values = with_intensity ? label_statistics(labels, intensity) : Table{};

  const char* axis_names[] = {"x", "y", "z"};
  std::vector<std::string> columns = {"label", nd == 3 ? "volume" : "area"};
  for (int a = 0; a < nd; ++a) columns.push_back(std::string("centroid_") + axis_names[a]);
  for (int a = 0; a < nd; ++a) {
    columns.push_back(std::string(axis_names[a]) + "_min");
    columns.push_back(std::string(axis_names[a]) + "_max");
  }
  if (with_intensity) {
    for (const char* c : {"mean_intensity", "min_intensity", "max_intensity"})
      columns.emplace_back(c);
  }
  // label_statistics' columns: label, area, mean, min, max; one row per id 1..max. Only the
  // ids the image holds are kept, each column gathered in one pass.
  const std::span<const double> area = axes[0].column(1);
  std::vector<std::size_t> held;
  held.reserve(area.size());
  for (std::size_t r = 0; r < area.size(); ++r) {
    if (area[r] != 0) held.push_back(r);
  }
  Table t = Table::for_overwrite(std::move(columns), held.size());
  std::size_t out = 0;
  const auto gather = [&](std::span<const double> from) {
    const std::span<double> to = t.column(out++);
    for (std::size_t i = 0; i < held.size(); ++i) to[i] = from[held[i]];
  };
  gather(axes[0].column(0));
  gather(area);
  for (int a = 0; a < nd; ++a) gather(axes[std::size_t(a)].column(2));
  for (int a = 0; a < nd; ++a) {
    gather(axes[std::size_t(a)].column(3));
    gather(axes[std::size_t(a)].column(4));
  }
  if (with_intensity) {
    for (std::size_t c = 2; c < 5; ++c) gather(values.column(c));
  }
  return t;
}

Array label_outline(const Array& plane) {
  if (!plane.valid()) throw InvalidArgument("label_outline: the array is null");
  if (plane.ndim() == 3 && plane.shape().depth() != 1) {
    throw InvalidArgument("label_outline takes one plane (2D, or a (1, h, w) slice); got " +
                          plane.shape().str());
  }
  const Array low = minimum_images(minimum_box(plane, 1, 0), minimum_box(plane, 0, 1));
  const Array high = maximum_images(maximum_box(plane, 1, 0), maximum_box(plane, 0, 1));
  // high >= low everywhere, so the difference neither wraps nor saturates.
  return multiply_images(plane, threshold(subtract_images(high, low), 0));
}

QString to_csv(const Table& table) {
  QStringList lines;
  QStringList head;
  for (const std::string& c : table.columns()) head << QString::fromStdString(c);
  lines << head.join(QLatin1Char(','));
  for (std::size_t r = 0; r < table.size(); ++r) {
    QStringList cells;
    for (double v : table.row(r)) cells << csv_number(v);
    lines << cells.join(QLatin1Char(','));
  }
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

}  // namespace gpix::ui
