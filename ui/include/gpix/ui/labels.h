#pragma once
// Label images on the device: per-label measurements and label borders, both composed from
// core's filters (gpix::label_statistics, box minimum/maximum), so nothing here has a kernel or
// a pixel loop of its own. Everything here talks to the device and waits for it: widgets call it
// from a worker thread (detail::run_async), never from the GUI thread.
#include <QString>
#include <QStringList>

#include "gpix/array.h"
#include "gpix/catalog.h"

namespace gpix::ui {

// One row per label present in `labels` (ids >= 1 with at least one pixel; 0 is background), in
// increasing id order. Columns, coordinates in pixels along (x, y, z) = (column, row, slice):
//   label, area (2D) or volume (3D): pixel count,
//   centroid_x, centroid_y[, centroid_z]: mean pixel coordinate (scikit-image's centroid),
//   x_min, x_max, y_min, y_max[, z_min, z_max]: the bounding box, both ends inclusive,
//   and with an intensity image mean_intensity, min_intensity, max_intensity over the label.
// The coordinates are gpix::label_statistics of the labels over a coordinate ramp per axis
// (exact integer sums: centroids are exact to double rounding), the intensities
// label_statistics over `intensity` (its NaN rules). `intensity` may be null; otherwise it
// must have the labels' shape and device.
// Throws what label_statistics throws: UnsupportedDType for float labels, InvalidArgument for
// ids above 16777216 (naming relabel_sequential), a 1D array or an intensity image of another
// shape.
gpix::Table measure_labels(const gpix::Array& labels, const gpix::Array& intensity = {});

// The borders of the labels in one plane (2D arrays, or a (1, h, w) slice): each pixel keeps its
// id where a 4-neighbour in the plane holds another id, and becomes 0 elsewhere (pixels on the
// image edge compare with the neighbours they have). A pixel's 4-neighbourhood, itself
// included, holds one id exactly when its minimum equals its maximum, so this is four box
// passes (gpix::minimum_box / maximum_box along x and along y), a subtraction and a threshold.
// Throws InvalidArgument for a 3D array with more than one plane.
gpix::Array label_outline(const gpix::Array& plane);

// The table as CSV: a header of the column names, then one line per row; numbers in their
// shortest exact form (integers without a decimal point), NaN as "nan".
QString to_csv(const gpix::Table& table);

}  // namespace gpix::ui
