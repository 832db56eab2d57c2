#pragma once
// One image as the widgets show it: its data and its display settings.
#include <QString>
#include <QVariantMap>

#include "gpix/array.h"
#include "gpix/host_array.h"

namespace gpix::ui {

// `array` is the data on the workspace's device; `host` a host copy that the workspace keeps for
// display and as the safety net when a device switch cannot take the array (for example f64
// onto a device without fp64). At least one of them is valid.
struct Layer {
  QString name;
  gpix::Array array;
  gpix::HostArray host;
  bool visible = true;
  double opacity = 1.0;
  QString colormap = QStringLiteral("gray");  // see colormap_names() (render.h)
  // Display range. contrast_max <= contrast_min means "not set yet": the view computes an
  // automatic range (percentiles) the first time the layer is shown.
  double contrast_min = 0;
  double contrast_max = 0;
  QString source;        // file the layer came from, if any
  QVariantMap metadata;  // free-form (spacing, units, reader-specific keys)
  // The pixels are label ids (0 background), not intensities: set for the results of filters
  // whose catalog output is labels and for files that gpix marked as labels when it saved them
  // (gpix::io::Metadata::labels). Saving such a layer marks the file again; the label panel
  // measures it.
  bool labels = false;
  // With the "labels" colour map: draw only the label borders (pixels whose 4-neighbour in
  // the plane holds another id); the rest is transparent.
  bool outline = false;

  bool valid() const { return array.valid() || host.valid(); }
  gpix::Shape shape() const { return array.valid() ? array.shape() : host.shape(); }
  gpix::DType dtype() const { return array.valid() ? array.dtype() : host.dtype(); }
  bool has_contrast() const { return contrast_max > contrast_min; }
  // Marks the layer as labels, shown with the "labels" colour map.
  void mark_labels() {
    labels = true;
    colormap = QStringLiteral("labels");
  }
};

}  // namespace gpix::ui
