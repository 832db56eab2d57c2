#include "gpix/ui/roi.h"

#include <QJsonArray>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "gpix/error.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/geometry.h"
#include "gpix/filters/reductions.h"
#include "gpix/stats.h"
#include "gpix/ui/render.h"

namespace gpix::ui {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The planes a ROI covers in an array: [first, first + count).
struct Planes {
  std::size_t first = 0;
  std::size_t count = 1;
};

Planes planes_of(const Roi& roi, const Shape& s, const char* what) {
  if (s.ndim() < 2) {
    throw InvalidArgument(std::string(what) + " needs a 2D or 3D image; got " + s.str());
  }
  if (s.ndim() == 2 || roi.plane < 0) return {0, s.ndim() == 3 ? s.depth() : 1};
  if (std::size_t(roi.plane) >= s.depth()) {
    throw InvalidArgument(std::string(what) + ": the ROI lies on slice " +
                          std::to_string(roi.plane) + " but the image has " +
                          std::to_string(s.depth()) + " slices (0.." +
                          std::to_string(s.depth() - 1) + ")");
  }
  return {std::size_t(roi.plane), 1};
}

void refuse_line(const Roi& roi, const char* what) {
  if (roi.kind == RoiKind::line) {
    throw InvalidArgument(std::string(what) +
                          " takes a rectangle, ellipse or polygon; a line has no area (use its "
                          "profile)");
  }
}

// The box's pixels of the planes, as a region of the array.
Region region_of(const Shape& s, const QRect& box, Planes p) {
  Region r;
  if (s.ndim() == 3) {
    r.origin.push_back(p.first);
    r.extent.push_back(p.count);
  }
  r.origin.insert(r.origin.end(), {std::size_t(box.y()), std::size_t(box.x())});
  r.extent.insert(r.extent.end(), {std::size_t(box.height()), std::size_t(box.width())});
  return r;
}

// The mask repeated on every plane of a region's shape, one byte per pixel.
HostArray mask_array(const std::vector<std::uint8_t>& mask, const Shape& shape) {
  HostArray m = HostArray::empty(shape, DType::u8);
  const std::size_t planes = shape.ndim() == 3 ? shape.depth() : 1;
  for (std::size_t z = 0; z < planes; ++z) {
    std::memcpy(m.data() + z * mask.size(), mask.data(), mask.size());
  }
  return m;
}

bool all_set(const std::vector<std::uint8_t>& mask) {
  return std::all_of(mask.begin(), mask.end(), [](std::uint8_t v) { return v != 0; });
}

// Linear interpolation between pixel centres along a line; `get(y, x)` reads a pixel of a
// (height, width) plane. Positions outside take the nearest edge pixel's value.
template <class Get>
std::vector<double> sample_line(const Get& get, int width, int height, QPointF a, QPointF b,
                                int line_width) {
  const QPointF d = b - a;
  const double length = std::hypot(d.x(), d.y());
  const std::size_t n = std::max<std::size_t>(2, std::size_t(std::ceil(length)) + 1);
  // The unit normal: parallel lines of a wide profile lie one pixel apart along it.
  const QPointF normal = length > 0 ? QPointF(-d.y() / length, d.x() / length) : QPointF(0, 1);
  std::vector<double> out(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const QPointF p = a + d * (double(i) / double(n - 1));
    double sum = 0;
    for (int k = 0; k < line_width; ++k) {
      const QPointF q = p + normal * (k - (line_width - 1) / 2.0);
      // Pixel centres sit at half-integers.
      const double u = std::clamp(q.x() - 0.5, 0.0, double(width - 1));
      const double v = std::clamp(q.y() - 0.5, 0.0, double(height - 1));
      const int x0 = int(std::floor(u)), y0 = int(std::floor(v));
      const int x1 = std::min(x0 + 1, width - 1), y1 = std::min(y0 + 1, height - 1);
      const double fx = u - x0, fy = v - y0;
      // Weights of zero skip their pixel, so a NaN neighbour that does not contribute stays out.
      auto term = [&](int y, int x, double w) { return w == 0 ? 0.0 : w * get(y, x); };
      sum += term(y0, x0, (1 - fx) * (1 - fy)) + term(y0, x1, fx * (1 - fy)) +
             term(y1, x0, (1 - fx) * fy) + term(y1, x1, fx * fy);
    }
    out[i] = sum / line_width;
  }
  return out;
}

void check_profile(const Shape& s, int z, int line_width) {
  if (s.ndim() < 2 || s.elements() == 0) {
    throw InvalidArgument("line_profile needs a 2D or 3D image; got " + s.str());
  }
  if (line_width < 1) {
    throw InvalidArgument("line_profile: the width is " + std::to_string(line_width) +
                          " pixels; it must be 1 or more");
  }
  if (s.ndim() == 3 && (z < 0 || std::size_t(z) >= s.depth())) {
    throw InvalidArgument("line_profile: slice " + std::to_string(z) + " of a stack of " +
                          std::to_string(s.depth()) + " slices");
  }
}

}  // namespace

QString kind_name(RoiKind kind) {
  switch (kind) {
    case RoiKind::rectangle:
      return QStringLiteral("rectangle");
    case RoiKind::ellipse:
      return QStringLiteral("ellipse");
    case RoiKind::polygon:
      return QStringLiteral("polygon");
    case RoiKind::line:
      return QStringLiteral("line");
  }
  return {};
}

bool Roi::contains(QPointF p) const {
  const QRectF r = bounds();
  switch (kind) {
    case RoiKind::rectangle:
      return p.x() >= r.left() && p.x() < r.right() && p.y() >= r.top() && p.y() < r.bottom();
    case RoiKind::ellipse: {
      if (r.width() <= 0 || r.height() <= 0) return false;
      const double u = (p.x() - r.center().x()) / (r.width() / 2);
      const double v = (p.y() - r.center().y()) / (r.height() / 2);
      return u * u + v * v <= 1.0;
    }
    case RoiKind::polygon:
      return points.size() >= 3 && points.containsPoint(p, Qt::OddEvenFill);
    case RoiKind::line:
      return false;
  }
  return false;
}

QJsonObject Roi::to_json() const {
  QJsonArray pts;
  for (const QPointF& p : points) pts.append(QJsonArray{p.x(), p.y()});
  return {{QStringLiteral("kind"), kind_name(kind)},
          {QStringLiteral("points"), pts},
          {QStringLiteral("plane"), plane},
          {QStringLiteral("id"), id}};
}

Roi Roi::from_json(const QJsonObject& o) {
  Roi r;
  const QString kind = o.value(QStringLiteral("kind")).toString();
  bool known = false;
  for (RoiKind k : {RoiKind::rectangle, RoiKind::ellipse, RoiKind::polygon, RoiKind::line}) {
    if (kind == kind_name(k)) {
      r.kind = k;
      known = true;
    }
  }
  if (!known) {
    throw InvalidArgument("ROI kind '" + kind.toStdString() +
                          "' is not one of rectangle, ellipse, polygon, line");
  }
  for (const QJsonValue v : o.value(QStringLiteral("points")).toArray()) {
    const QJsonArray xy = v.toArray();
    if (xy.size() != 2 || !xy[0].isDouble() || !xy[1].isDouble()) {
      throw InvalidArgument("ROI points are [x, y] pairs of numbers");
    }
    r.points << QPointF(xy[0].toDouble(), xy[1].toDouble());
  }
  const qsizetype need = r.kind == RoiKind::polygon ? 3 : 2;
  if (r.points.size() < need || (r.kind != RoiKind::polygon && r.points.size() != 2)) {
    throw InvalidArgument("a " + kind.toStdString() + " ROI needs " +
                          (r.kind == RoiKind::polygon ? "3 or more" : "2") + " points; got " +
                          std::to_string(r.points.size()));
  }
  r.plane = o.value(QStringLiteral("plane")).toInt(-1);
  r.id = o.value(QStringLiteral("id")).toInt(0);
  return r;
}

QRect roi_box(const Roi& roi, int width, int height) {
  const QRectF b = roi.bounds();
  // Pixels whose centre x + 0.5 can lie in [left, right].
  const int x0 = std::max(0, int(std::ceil(b.left() - 0.5)));
  const int y0 = std::max(0, int(std::ceil(b.top() - 0.5)));
  const int x1 = std::min(width - 1, int(std::floor(b.right() - 0.5)));
  const int y1 = std::min(height - 1, int(std::floor(b.bottom() - 0.5)));
  if (x1 < x0 || y1 < y0) return {};
  return QRect(QPoint(x0, y0), QPoint(x1, y1));
}

std::vector<std::uint8_t> roi_mask(const Roi& roi, const QRect& box) {
  std::vector<std::uint8_t> mask(std::size_t(std::max(0, box.width())) *
                                 std::size_t(std::max(0, box.height())));
  std::size_t i = 0;
  for (int y = box.top(); y <= box.bottom(); ++y) {
    for (int x = box.left(); x <= box.right(); ++x) {
      mask[i++] = roi.contains(QPointF(x + 0.5, y + 0.5)) ? 1 : 0;
    }
  }
  return mask;
}

RoiStats measure_roi(const Array& image, const Roi& roi) {
  if (!image.valid()) throw InvalidArgument("measure_roi: the image is null");
  refuse_line(roi, "measure_roi");
  const Shape& s = image.shape();
  const Planes p = planes_of(roi, s, "measure_roi");
  RoiStats r;
  r.planes = int(p.count);
  r.mean = r.std = r.min = r.max = r.sum = kNaN;
  const QRect box = roi_box(roi, int(s.width()), int(s.height()));
  if (box.isEmpty()) return r;
  const std::vector<std::uint8_t> mask = roi_mask(roi, box);
  r.pixels = std::uint64_t(std::count(mask.begin(), mask.end(), 1)) * p.count;
  if (r.pixels == 0) return r;
  Array values = image.view(region_of(s, box, p));
  if (!all_set(mask)) {
    // 1 inside and NaN (0 / 0) outside, so that the reductions leave the outside out. 8- and
    // 16-bit integers are exact in float32; wider ones need float64.
    const DType dt = image.dtype();
    const DType ft = size_of(dt) <= 2 || dt == DType::f32 ? DType::f32 : DType::f64;
    const Array m = convert(Array::push(mask_array(mask, values.shape()), image.device()), ft);
    values = multiply_images(divide_images(m, m), values);
  }
  const Stats st = stats(values);
  r.count = st.count;
  if (r.count == 0) return r;  // every pixel inside is NaN
  r.min = st.min.as_double();
  r.max = st.max.as_double();
  r.sum = st.sum.as_double();
  r.mean = st.mean;
  r.std = std_of_all_pixels(values);
  return r;
}

Params crop_params(const Roi& roi, const Shape& s) {
  const Planes p = planes_of(roi, s, "crop_to_roi");
  const QRect box = roi_box(roi, int(s.width()), int(s.height()));
  return {{"origin_x", double(box.x())},
          {"origin_y", double(box.y())},
          {"origin_z", double(s.ndim() == 3 ? p.first : 0)},
          {"size_x", double(box.width())},
          {"size_y", double(box.height())},
          {"size_z", double(s.ndim() == 3 ? p.count : 0)}};
}

Array crop_to_roi(const Array& image, const Roi& roi, bool zero_outside) {
  if (!image.valid()) throw InvalidArgument("crop_to_roi: the image is null");
  refuse_line(roi, "crop_to_roi");
  const Shape& s = image.shape();
  const Planes p = planes_of(roi, s, "crop_to_roi");
  const QRect box = roi_box(roi, int(s.width()), int(s.height()));
  const std::vector<std::uint8_t> mask = roi_mask(roi, box);
  if (box.isEmpty() || std::count(mask.begin(), mask.end(), 1) == 0) {
    throw InvalidArgument("crop_to_roi: the ROI covers no pixel of the " + s.str() +
                          " image (draw it over the image)");
  }
  Array out =
      crop(image, std::size_t(box.x()), std::size_t(box.y()), s.ndim() == 3 ? p.first : 0,
           std::size_t(box.width()), std::size_t(box.height()), s.ndim() == 3 ? p.count : 0);
  if (!zero_outside || all_set(mask)) return out;
  // Multiplied in the crop's own dtype rules: exact for integers, NaN and inf stay NaN.
  return multiply_images(out, Array::push(mask_array(mask, out.shape()), image.device()));
}

std::vector<double> line_profile(const Array& image, int z, QPointF a, QPointF b, int width) {
  if (!image.valid()) throw InvalidArgument("line_profile: the image is null");
  const Shape& s = image.shape();
  check_profile(s, z, width);
  const int w = int(s.width()), h = int(s.height());
  // Only the pixels the samples can touch: the line's box widened by half the line width and
  // one pixel for the interpolation's neighbours.
  const double reach = (width - 1) / 2.0 + 1.5;
  const QRectF lb = QRectF(a, b).normalized().adjusted(-reach, -reach, reach, reach);
  const int x0 = std::clamp(int(std::floor(lb.left())), 0, w - 1);
  const int y0 = std::clamp(int(std::floor(lb.top())), 0, h - 1);
  const int x1 = std::clamp(int(std::ceil(lb.right())), 0, w - 1);
  const int y1 = std::clamp(int(std::ceil(lb.bottom())), 0, h - 1);
  const QRect box(QPoint(x0, y0), QPoint(x1, y1));
  const HostArray tile =
      image.read_region(region_of(s, box, {std::size_t(s.ndim() == 3 ? z : 0), 1}));
  auto get = [&](int y, int x) {
    // Samples outside the box clamp to the image's edge, which the box reaches wherever a
    // sample can; inside the image a clamped index is within the box.
    const int yy = std::clamp(y, y0, y1) - y0, xx = std::clamp(x, x0, x1) - x0;
    return value_at(tile, 0, std::size_t(yy), std::size_t(xx));
  };
  return sample_line(get, w, h, a, b, width);
}

std::vector<double> line_profile(const HostArray& image, int z, QPointF a, QPointF b, int width) {
  if (!image.valid()) throw InvalidArgument("line_profile: the image is null");
  const Shape& s = image.shape();
  check_profile(s, z, width);
  const std::size_t zz = s.ndim() == 3 ? std::size_t(z) : 0;
  auto get = [&](int y, int x) { return value_at(image, zz, std::size_t(y), std::size_t(x)); };
  return sample_line(get, int(s.width()), int(s.height()), a, b, width);
}

std::vector<double> profile_distances(const Layer& layer, QPointF a, QPointF b, std::size_t n) {
  const std::vector<double> sp = layer.spacing_or_default();
  const double sx = sp.empty() ? 1.0 : sp.back();
  const double sy = sp.size() >= 2 ? sp[sp.size() - 2] : 1.0;
  const double length = std::hypot((b.x() - a.x()) * sx, (b.y() - a.y()) * sy);
  std::vector<double> d(n, 0.0);
  for (std::size_t i = 1; i < n; ++i) d[i] = length * double(i) / double(n - 1);
  return d;
}

}  // namespace gpix::ui
