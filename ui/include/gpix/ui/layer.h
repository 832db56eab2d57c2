#pragma once
// One image as the widgets show it: its data and its display settings.
#include <QColor>
#include <QString>
#include <QVariantMap>
#include <memory>
#include <vector>

#include "gpix/array.h"
#include "gpix/host_array.h"
#include "gpix/kept_axes.h"
#include "gpix/ui/stack_file.h"

namespace gpix::ui {

// One channel of a colour composite: how its plane of the layer's data is shown. The frame is
// the sum of the visible channels' colours (black to `colour` over the channel's limits),
// each byte saturating (gpix::Blend::add on the device).
struct Channel {
  QString name;                       // "R", "C2", ...
  QRgb colour = qRgb(255, 255, 255);  // at and above the upper limit
  double contrast_min = 0;            // as Layer's: max <= min means "not set yet"
  double contrast_max = 0;
  double gamma = 1.0;
  bool visible = true;
  bool has_contrast() const { return contrast_max > contrast_min; }
  bool operator==(const Channel&) const = default;
};

// `array` is the data on the workspace's device; `host` a host copy that the workspace keeps for
// display and as the safety net when a device switch cannot take the array (for example f64
// onto a device without fp64). `file` is a stack larger than the memory it would go to, left in
// its file (stack_file.h): then array and host are both empty and the planes shown are read on
// demand. At least one of the three is valid.
struct Layer {
  QString name;
  gpix::Array array;
  gpix::HostArray host;
  std::shared_ptr<StackFile> file;
  bool visible = true;
  double opacity = 1.0;
  // Drawn added to the layers below it (each colour component, saturating; never to the
  // canvas's grey) instead of over them:
  // the channels of a hyperstack, each a layer in its own colour, show together as in Fiji's
  // composite mode instead of the top one alone.
  bool additive = false;
  QString colormap = QStringLiteral("gray");  // see colormap_names() (render.h)
  // Display range. contrast_max <= contrast_min means "not set yet": the view computes an
  // automatic range (percentiles) the first time the layer is shown.
  double contrast_min = 0;
  double contrast_max = 0;
  QString source;        // file the layer came from, if any
  QVariantMap metadata;  // free-form (format, warnings, reader-specific keys)
  // Physical calibration in (z, y, x) order, as files give it (gpix::io::Metadata): the size of
  // a pixel and the position of the first one, in `unit` ("um", "mm"; empty when unknown).
  // Empty vectors mean spacing 1 and origin 0. Results of filters that keep the input's axes
  // inherit it; saving writes it back.
  std::vector<double> spacing;
  std::vector<double> origin;
  QString unit;
  // The pixels are label ids (0 background), not intensities: set for the results of filters
  // whose catalog output is labels and for files that gpix marked as labels when it saved them
  // (gpix::io::Metadata::labels). Saving such a layer marks the file again; the label panel
  // measures it.
  bool labels = false;
  // With the "labels" colour map: draw only the label borders (pixels whose 4-neighbour in
  // the plane holds another id); the rest is transparent.
  bool outline = false;
  // Contrast mode: the normalised value shown as u^gamma (gpix::RenderStyle), 0.1 to 10.
  double gamma = 1.0;
  // Non-empty: a colour composite. The data's first axis holds one plane per channel, (C, y, x),
  // shown together in colour (channels' own limits, gamma and visibility, additive
  // blending); colormap and the layer's own limits are not used then. Composites are 2D images:
  // the view does not slice them.
  std::vector<Channel> channels;

  bool valid() const { return array.valid() || host.valid() || file != nullptr; }
  bool file_backed() const { return !array.valid() && !host.valid() && file != nullptr; }
  gpix::Shape shape() const {
    return array.valid()  ? array.shape()
           : host.valid() ? host.shape()
           : file         ? file->shape()
                          : gpix::Shape{};
  }
  gpix::DType dtype() const {
    return array.valid()  ? array.dtype()
           : host.valid() ? host.dtype()
           : file         ? file->dtype()
                          : gpix::DType::u8;
  }
  bool composite() const { return !channels.empty(); }
  // Every limit the display needs is set (the layer's, or every channel's for a composite).
  bool has_contrast() const {
    if (!composite()) return contrast_max > contrast_min;
    for (const Channel& c : channels)
      if (!c.has_contrast()) return false;
    return true;
  }
  // The spacing of each axis (1 where none is known).
  std::vector<double> spacing_or_default() const {
    const auto n = static_cast<std::size_t>(valid() ? shape().ndim() : 0);
    return spacing.size() == n ? spacing : std::vector<double>(n, 1.0);
  }
  // Whether the layer knows its pixels' physical size.
  bool calibrated() const { return !unit.isEmpty(); }
  // Whether saving marks the file as labels: the layer is marked so, or it holds integers
  // the user shows with the "labels" colour map (a label image made elsewhere, or one whose
  // mark a format without it lost). Float pixels under that map stay intensities on disk.
  bool saves_as_labels() const;
  // Marks the layer as labels, shown with the "labels" colour map.
  void mark_labels() {
    labels = true;
    colormap = QStringLiteral("labels");
  }
};

// A filter's result `out` on `input` (its first input), shown as a channel of the input where
// the input is one shown with others (additive, or a hyperstack's channel: metadata
// "channel"): additive, in the input's colour map (not for composites, whose channels carry
// their colours, nor a label image's map). Label results (`labels_result`) stay opaque. The
// Filters panel and a workflow's re-run both make results so (and put such a result just above
// its input, in its place: AddLayerCommand::show_in_place_of). True where it did.
bool show_as_channel_of(const Layer& input, Layer& out, bool labels_result);

// A unit as people read it ("µm" for "um"); "px" for none.
QString display_unit(const QString& unit);
// "1.5 × 0.2 × 0.2 µm (z, y, x)", or "1 × 1 px (not calibrated)" without a unit. Spatial axes
// only: a composite's channel axis is left out (channels_text() in composite.h says it).
QString spacing_text(const Layer& layer);

// A layer's name as a panel shows it inside a sentence or a title: names longer than 40
// characters keep their first 24 and last 15 around an ellipsis, so that a generated
// 200-character file name does not make its panel (and the dock area) that wide. The caller
// puts the whole name in the widget's tooltip.
QString shown_name(const QString& name);

// Gives `result` (a filter's output) the calibration of `input` on the axes it keeps
// (gpix::axis_maps: same shape, or a projection along z); none when it keeps none.
void inherit_calibration(const Layer& input, Layer& result);
// The same with the output's grid given (gpix::axis_maps(filter, params, ...): a transpose's
// axes, a crop's shifted origin, a resample's spacing); a layer that says nothing of its
// placement keeps saying nothing where the grid moves.
void inherit_calibration(const Layer& input, Layer& result, const std::vector<gpix::AxisMap>& axes);

}  // namespace gpix::ui
