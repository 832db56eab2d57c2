#include "gpix/ui/layer.h"

#include "gpix/kept_axes.h"

namespace gpix::ui {

QString display_unit(const QString& unit) {
  if (unit.isEmpty()) return QStringLiteral("px");
  return unit == QLatin1String("um") ? QStringLiteral("\u00b5m") : unit;
}

QString spacing_text(const Layer& layer) {
  QStringList parts;
  for (double s : layer.spacing_or_default()) parts << QString::number(s, 'g', 6);
  const QString axes = layer.shape().ndim() == 3   ? QStringLiteral(" (z, y, x)")
                       : layer.shape().ndim() == 2 ? QStringLiteral(" (y, x)")
                                                   : QString();
  return parts.join(QStringLiteral(" \u00d7 ")) + QLatin1Char(' ') + display_unit(layer.unit) +
         (layer.calibrated() ? axes : axes + QStringLiteral(", not calibrated"));
}

void inherit_calibration(const Layer& input, Layer& result) {
  const std::vector<int> axes = gpix::kept_axes(input.shape(), result.shape());
  if (axes.empty() || axes.front() < 0 || !input.valid()) return;
  const auto n = static_cast<std::size_t>(input.shape().ndim());
  const auto sp = input.spacing_or_default();
  const bool origin = input.origin.size() == n;
  result.spacing.clear();
  result.origin.clear();
  for (int a : axes) {
    result.spacing.push_back(sp[std::size_t(a)]);
    if (origin) result.origin.push_back(input.origin[std::size_t(a)]);
  }
  result.unit = input.unit;
}

}  // namespace gpix::ui
