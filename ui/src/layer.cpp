#include "gpix/ui/layer.h"

#include <algorithm>

#include "gpix/kept_axes.h"
#include "gpix/ui/render.h"

namespace gpix::ui {

bool Layer::saves_as_labels() const {
  if (labels) return true;
  // A composite's colour map is not used (its channels have their own colours).
  return valid() && !composite() && !gpix::is_float(dtype()) &&
         canonical_colormap(colormap) == QLatin1String("labels");
}

bool show_as_channel_of(const Layer& input, Layer& out, bool labels_result) {
  if (labels_result) return false;
  if (!input.additive && !input.metadata.contains(QStringLiteral("channel"))) return false;
  out.additive = true;
  if (!out.composite() && !input.labels &&
      canonical_colormap(input.colormap) != QLatin1String("labels"))
    out.colormap = input.colormap;
  return true;
}

QString display_unit(const QString& unit) {
  if (unit.isEmpty()) return QStringLiteral("px");
  return unit == QLatin1String("um") ? QStringLiteral("\u00b5m") : unit;
}

QString spacing_text(const Layer& layer) {
  std::vector<double> sp = layer.spacing_or_default();
  int ndim = layer.valid() ? layer.shape().ndim() : 0;
  // A composite's first axis holds its channels, which have no spacing (channels_text()).
  if (layer.composite() && ndim == 3) {
    sp.erase(sp.begin());
    ndim = 2;
  }
  QStringList parts;
  for (double s : sp) parts << QString::number(s, 'g', 6);
  const QString axes = ndim == 3   ? QStringLiteral(" (z, y, x)")
                       : ndim == 2 ? QStringLiteral(" (y, x)")
                                   : QString();
  return parts.join(QStringLiteral(" \u00d7 ")) + QLatin1Char(' ') + display_unit(layer.unit) +
         (layer.calibrated() ? axes : axes + QStringLiteral(", not calibrated"));
}

void inherit_calibration(const Layer& input, Layer& result) {
  inherit_calibration(input, result, gpix::axis_maps(input.shape(), result.shape()));
}

void inherit_calibration(const Layer& input, Layer& result,
                         const std::vector<gpix::AxisMap>& axes) {
  if (axes.empty() || axes.front().axis < 0 || !input.valid()) return;
  const auto n = static_cast<std::size_t>(input.shape().ndim());
  result.unit = input.unit;
  result.spacing.clear();
  result.origin.clear();
  const bool moved = std::any_of(axes.begin(), axes.end(), [](const gpix::AxisMap& m) {
    return m.scale != 1.0 || m.offset != 0.0;
  });
  // A layer that says nothing of its placement (no unit, spacing 1, origin 0) stays so where
  // its grid moves (as io::carried): a resample's spacing of 0.5 input pixels measured an ROI
  // of 100 pixels as 25 "px".
  const bool said =
      input.calibrated() ||
      std::any_of(input.spacing.begin(), input.spacing.end(), [](double v) { return v != 1.0; }) ||
      std::any_of(input.origin.begin(), input.origin.end(), [](double v) { return v != 0.0; });
  if (moved && !said) return;
  const auto sp = input.spacing_or_default();
  // Output index q lies at input index scale q + offset: spacing x scale, and the first
  // pixel offset input pixels in (layers have no direction: the axes are the physical ones).
  const bool origin = input.origin.size() == n || moved;
  for (const gpix::AxisMap& m : axes) {
    const auto a = static_cast<std::size_t>(m.axis);
    result.spacing.push_back(sp[a] * m.scale);
    if (origin) {
      const double o = input.origin.size() == n ? input.origin[a] : 0.0;
      result.origin.push_back(o + sp[a] * m.offset);
    }
  }
}

QString shown_name(const QString& name) {
  constexpr qsizetype kMax = 40;
  if (name.size() <= kMax) return name;
  // Cut between characters, never inside a surrogate pair (an emoji in a file name).
  qsizetype head = 24, tail = 15;
  if (name.at(head - 1).isHighSurrogate()) --head;
  if (name.at(name.size() - tail).isLowSurrogate()) --tail;
  return name.left(head) + QChar(0x2026) + name.right(tail);
}

}  // namespace gpix::ui
