#pragma once
// Regions of interest and line profiles: the shapes the viewer's ROI tools draw, which pixels
// they cover, and what is measured over them. The measurements run on the device (core's
// reductions over a masked view) and talk to it: widgets call them from a worker thread
// (detail::run_async), never from the GUI thread.
//
// Coordinates are image coordinates as ImageView::image_pos gives them: pixel (x, y) covers
// [x, x + 1) x [y, y + 1), so its centre is (x + 0.5, y + 0.5). A pixel belongs to a ROI when
// its centre lies inside the shape (polygons: even-odd rule).
#include <QJsonObject>
#include <QPolygonF>
#include <QRect>
#include <QString>
#include <cstdint>
#include <vector>

#include "gpix/array.h"
#include "gpix/catalog.h"
#include "gpix/host_array.h"
#include "gpix/shape.h"
#include "gpix/ui/layer.h"

namespace gpix::ui {

enum class RoiKind { rectangle, ellipse, polygon, line };

struct Roi {
  RoiKind kind = RoiKind::rectangle;
  // Rectangle and ellipse: two opposite corners of the bounding box (whole pixels: the tools
  // snap them to pixel edges); polygon: the vertices (3 or more); line: its two ends.
  QPolygonF points;
  // The slice of a stack the ROI belongs to, or -1 for every slice (always -1 on 2D layers).
  // Statistics and crops cover the slice, or the whole stack for -1.
  int plane = -1;
  int id = 0;  // 1, 2, ... per layer: "ROI 2"

  QRectF bounds() const { return points.boundingRect(); }
  bool operator==(const Roi&) const = default;
  // Whether image point p is inside the shape (lines: never).
  bool contains(QPointF p) const;
  QJsonObject to_json() const;
  // Throws gpix::InvalidArgument naming what is wrong.
  static Roi from_json(const QJsonObject& o);
};

// "rectangle", "ellipse", "polygon", "line".
QString kind_name(RoiKind kind);

// The box of whole pixels whose centres may lie inside the ROI, clipped to a (height, width)
// image; empty when none can.
QRect roi_box(const Roi& roi, int width, int height);
// One byte per pixel of `box` (rows of box.width()), 1 where the pixel's centre is inside.
std::vector<std::uint8_t> roi_mask(const Roi& roi, const QRect& box);

struct RoiStats {
  std::uint64_t pixels = 0;  // pixels inside (every plane the ROI covers)
  int planes = 1;            // planes it covers
  std::uint64_t count = 0;   // pixels that took part: all but NaN
  double mean = 0, std = 0, min = 0, max = 0, sum = 0;  // NaN where count is 0
};

// Mean, population standard deviation (numpy's nanstd), min, max and sum of the pixels inside
// the ROI, on the array's device; NaN pixels are left out as gpix::stats does. Rectangles are
// gpix::stats and std_of_all_pixels of a region view (exact in the dtype); other shapes multiply
// the view by a mask that is 1 inside and NaN outside (pushed as one byte per pixel, made float
// on the device), so the values are float32 for 8- and 16-bit dtypes and float32 images, float64
// otherwise (which needs fp64: UnsupportedDType names the device otherwise). Blocking. Throws
// InvalidArgument for a line, a 1D array, or a plane outside the stack.
RoiStats measure_roi(const gpix::Array& image, const Roi& roi);

// The ROI's bounding box of `image` (the ROI's plane, or every plane), a new array on the same
// device. zero_outside sets the pixels outside a non-rectangular shape to 0 (multiplied by a
// 0/1 mask), otherwise they keep their values. Blocking. Throws InvalidArgument for a line or a
// ROI that covers no pixel.
gpix::Array crop_to_roi(const gpix::Array& image, const Roi& roi, bool zero_outside);
// The parameters of core's "crop" for the ROI's box (origin_x, ..., size_z), for the workflow.
gpix::Params crop_params(const Roi& roi, const gpix::Shape& shape);

// Values along a line from a to b (image coordinates) on slice z (ignored for 2D), sampled with
// linear interpolation between pixel centres (scipy.ndimage.map_coordinates with order=1 and
// mode="nearest" at (y - 0.5, x - 0.5)) at n = max(2, ceil(length) + 1) evenly spaced points
// from a to b. width > 1 averages `width` parallel lines one pixel apart, centred on the line.
// Only the box of pixels the samples need is read (Array::read_region), so this is cheap for
// any image. Blocking. Throws InvalidArgument for an empty image or width < 1.
std::vector<double> line_profile(const gpix::Array& image, int z, QPointF a, QPointF b,
                                 int width = 1);
// The same on a host array (layers the device could not hold).
std::vector<double> line_profile(const gpix::HostArray& image, int z, QPointF a, QPointF b,
                                 int width = 1);
// The distance of each of n samples from a, in pixels or, for a calibrated layer, in its unit
// (the line's length with each axis' spacing).
std::vector<double> profile_distances(const Layer& layer, QPointF a, QPointF b, std::size_t n);

}  // namespace gpix::ui
