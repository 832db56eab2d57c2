#include "session_display.h"

#include <QColor>
#include <QJsonArray>
#include <QJsonDocument>
#include <QObject>
#include <vector>

#include "gpix/error.h"
#include "gpix/ui/composite.h"

namespace session {

namespace {

constexpr int kCompositeVersion = 1;

QJsonObject channel_to_json(const gpix::ui::Channel& c) {
  return {
      {QStringLiteral("name"), c.name},
      {QStringLiteral("colour"), QColor(c.colour).name(QColor::HexRgb)},
      {QStringLiteral("contrast"), QJsonArray{c.contrast_min, c.contrast_max}},
      {QStringLiteral("gamma"), c.gamma},
      {QStringLiteral("visible"), c.visible},
  };
}

// Gamma as the display takes it (gpix::RenderStyle: 0.1 to 10); anything else is not ours.
bool valid_gamma(double g) {
  return g >= 0.1 && g <= 10;
}

}  // namespace

QJsonObject display_to_json(const gpix::ui::Layer& layer) {
  QJsonObject out{{QStringLiteral("gamma"), layer.gamma}};
  if (layer.composite()) {
    QJsonArray channels;
    for (const gpix::ui::Channel& c : layer.channels) channels.append(channel_to_json(c));
    out.insert(QStringLiteral("composite"),
               QJsonObject{{QStringLiteral("version"), kCompositeVersion},
                           {QStringLiteral("channels"), channels}});
  }
  return out;
}

QString display_from_json(const QJsonObject& entry, gpix::ui::Layer& layer) {
  QStringList problems;
  if (entry.contains(QStringLiteral("gamma"))) {
    const double g = entry.value(QStringLiteral("gamma")).toDouble(-1);
    if (valid_gamma(g)) {
      layer.gamma = g;
    } else {
      problems << QObject::tr("gamma %1 is outside 0.1 to 10; kept %2")
                      .arg(entry.value(QStringLiteral("gamma")).toVariant().toString())
                      .arg(layer.gamma);
    }
  }
  if (!entry.contains(QStringLiteral("composite"))) return problems.join(QStringLiteral("; "));
  const QJsonObject comp = entry.value(QStringLiteral("composite")).toObject();
  const int version = comp.value(QStringLiteral("version")).toInt();
  const QJsonArray list = comp.value(QStringLiteral("channels")).toArray();
  if (version < 1 || version > kCompositeVersion) {
    problems << QObject::tr(
                    "its channel settings are of version %1; this viewer reads version "
                    "1 to %2: the file's defaults are shown")
                    .arg(version)
                    .arg(kCompositeVersion);
    return problems.join(QStringLiteral("; "));
  }
  // A composite saved by the viewer is a plain (C, y, x) stack in its file (TIFF and the ITK
  // formats keep no channel colours): the session makes it a composite again.
  const gpix::Shape shape = layer.valid() ? layer.shape() : gpix::Shape{};
  if (!layer.composite() && !layer.file_backed() && shape.ndim() == 3 &&
      qsizetype(shape.depth()) == list.size()) {
    try {
      gpix::ui::make_composite(layer, false);
    } catch (const gpix::Error&) {
      // Left to the check below, which says what the file gives.
    }
  }
  if (!layer.composite() || layer.channels.size() != std::size_t(list.size())) {
    problems << QObject::tr(
                    "the session has %1 channel(s), the file now gives %2: the file's "
                    "channel settings are shown")
                    .arg(list.size())
                    .arg(layer.channels.size());
  } else {
    std::vector<gpix::ui::Channel> channels = layer.channels;
    for (qsizetype i = 0; i < list.size(); ++i) {
      const QJsonObject o = list[i].toObject();
      gpix::ui::Channel& c = channels[std::size_t(i)];
      c.name = o.value(QStringLiteral("name")).toString(c.name);
      const QColor colour = QColor::fromString(o.value(QStringLiteral("colour")).toString());
      const QJsonArray lim = o.value(QStringLiteral("contrast")).toArray();
      const double g = o.value(QStringLiteral("gamma")).toDouble(1.0);
      if (!colour.isValid() || lim.size() != 2 || !valid_gamma(g)) {
        problems << QObject::tr(
                        "channel %1 has a bad colour, contrast or gamma (%2): the "
                        "file's channel settings are shown")
                        .arg(i + 1)
                        .arg(QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact)));
        return problems.join(QStringLiteral("; "));
      }
      c.colour = colour.rgb();
      c.contrast_min = lim[0].toDouble();
      c.contrast_max = lim[1].toDouble();
      c.gamma = g;
      c.visible = o.value(QStringLiteral("visible")).toBool(true);
    }
    layer.channels = std::move(channels);
  }
  return problems.join(QStringLiteral("; "));
}

}  // namespace session
