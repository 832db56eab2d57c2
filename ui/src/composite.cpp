#include "gpix/ui/composite.h"

#include <QColor>
#include <QImage>
#include <QObject>
#include <QUndoStack>
#include <algorithm>
#include <cstring>
#include <memory>

#include "async.h"
#include "gpix/error.h"
#include "gpix/queue.h"
#include "gpix/render.h"
#include "gpix/ui/render.h"

namespace gpix::ui {

namespace {

constexpr std::size_t kMostChannels = 16;

std::string str(const QString& s) {
  return s.toStdString();
}

// The display copy of a host composite, all planes (they are 2D: small).
gpix::Array on_device(const gpix::HostArray& host, const gpix::Device& device) {
  return display_copy(host, device);
}

}  // namespace

QRgb default_channel_colour(int index, int count, bool rgb) {
  if (rgb && count <= 4) {
    static const QRgb colour[] = {qRgb(255, 0, 0), qRgb(0, 255, 0), qRgb(0, 0, 255),
                                  qRgb(255, 255, 255)};
    return colour[index];
  }
  static const QRgb fluo[] = {qRgb(0, 255, 0),   qRgb(255, 0, 255), qRgb(0, 255, 255),
                              qRgb(255, 255, 0), qRgb(255, 0, 0),   qRgb(0, 0, 255)};
  return index < 6 ? fluo[index] : qRgb(200, 200, 200);
}

QString channels_text(const Layer& layer) {
  if (!layer.composite()) return {};
  static const std::pair<QRgb, const char*> names[] = {
      {qRgb(255, 0, 0), "red"},       {qRgb(0, 255, 0), "green"},   {qRgb(0, 0, 255), "blue"},
      {qRgb(255, 0, 255), "magenta"}, {qRgb(0, 255, 255), "cyan"},  {qRgb(255, 255, 0), "yellow"},
      {qRgb(255, 255, 255), "white"}, {qRgb(200, 200, 200), "grey"}};
  QStringList parts;
  for (const Channel& c : layer.channels) {
    const QRgb rgb = c.colour | 0xff000000u;
    QString colour = QColor(rgb).name();
    for (const auto& [value, name] : names) {
      if (value == rgb) colour = QObject::tr(name);
    }
    if (!c.visible) colour += QObject::tr(", hidden");
    parts << QStringLiteral("<span style=\"color:%1\">\u25a0</span> %2 (%3)")
                 .arg(QColor(rgb).name(), c.name.toHtmlEscaped(), colour);
  }
  const int n = int(layer.channels.size());
  return (n == 1 ? QObject::tr("1 channel: ") : QObject::tr("%1 channels: ").arg(n)) +
         parts.join(QStringLiteral(", "));
}

void make_composite(Layer& layer, bool rgb) {
  const gpix::Shape s = layer.shape();
  if (s.ndim() != 3 || s.depth() < 2 || s.depth() > kMostChannels) {
    throw gpix::InvalidArgument(
        "a composite needs its channels on the first axis of (C, y, x) data with 2 to " +
        std::to_string(kMostChannels) + " channels; '" + str(layer.name) + "' is " + s.str());
  }
  const int n = int(s.depth());
  layer.channels.clear();
  for (int c = 0; c < n; ++c) {
    Channel ch;
    ch.name = rgb && n <= 4 ? QString(QLatin1Char("RGBA"[c])) : QStringLiteral("C%1").arg(c + 1);
    ch.colour = default_channel_colour(c, n, rgb);
    ch.visible = !(rgb && c == 3);  // alpha is not a colour to add
    layer.channels.push_back(ch);
  }
}

QImage render_composite(const gpix::Array& a, const std::vector<Channel>& channels,
                        std::size_t* pulled) {
  if (!a.valid() || a.ndim() != 3 || a.shape().depth() != channels.size()) {
    throw gpix::InvalidArgument("render_composite: " + std::to_string(channels.size()) +
                                " channels need (" + std::to_string(channels.size()) +
                                ", y, x) data; this is " +
                                (a.valid() ? a.shape().str() : std::string("no array")));
  }
  const gpix::Shape& s = a.shape();
  // Zero is transparent black: a pixel that no visible channel reaches stays see-through.
  gpix::Array target =
      gpix::Array::create(gpix::Shape{s.height(), s.width()}, gpix::DType::u32, a.device());
  for (std::size_t c = 0; c < channels.size(); ++c) {
    const Channel& ch = channels[c];
    if (!ch.visible) continue;
    const gpix::Lut lut =
        gpix::Lut::colour(std::uint8_t(qRed(ch.colour)), std::uint8_t(qGreen(ch.colour)),
                          std::uint8_t(qBlue(ch.colour)));
    gpix::render_rgba(a, ch.contrast_min, std::max(ch.contrast_min, ch.contrast_max), lut, c,
                      target, {.gamma = ch.gamma, .blend = gpix::Blend::add});
  }
  QImage img(int(s.width()), int(s.height()), QImage::Format_RGBA8888);
  const auto bytes = std::size_t(img.sizeInBytes());
  gpix::pull_async(target, img.bits(), bytes).wait();
  if (pulled) *pulled += bytes;
  return img;
}

QImage render_composite(const gpix::HostArray& host, const gpix::Device& device,
                        const std::vector<Channel>& channels, std::size_t* pulled) {
  return render_composite(on_device(host, device), channels, pulled);
}

std::vector<Layer> split_channels(const Layer& l) {
  std::vector<Layer> out;
  const gpix::Shape s = l.shape();
  for (std::size_t c = 0; c < l.channels.size(); ++c) {
    const Channel& ch = l.channels[c];
    Layer one;
    one.name = QStringLiteral("%1 [%2]").arg(l.name, ch.name);
    if (l.array.valid()) {
      one.array = channel_plane(l.array, c);
    } else {
      one.host = gpix::HostArray::empty(gpix::Shape{s.height(), s.width()}, l.host.dtype());
      std::memcpy(one.host.data(), l.host.data() + c * one.host.bytes(), one.host.bytes());
    }
    one.contrast_min = ch.contrast_min;
    one.contrast_max = ch.contrast_max;
    one.gamma = ch.gamma;
    one.visible = ch.visible;
    // The channel's colour where a colour map is black to it, the others added over the first:
    // split, the composite looks as it did (gray and opaque, C2 hid C1).
    const QString map = colour_map_of(ch.colour);
    if (!map.isEmpty()) one.colormap = map;
    one.additive = c > 0 || l.additive;
    // The plane keeps y and x.
    if (l.spacing.size() == 3) one.spacing = {l.spacing[1], l.spacing[2]};
    if (l.origin.size() == 3) one.origin = {l.origin[1], l.origin[2]};
    one.unit = l.unit;
    out.push_back(std::move(one));
  }
  return out;
}

SplitChannelsCommand::SplitChannelsCommand(Workspace& host, int id, std::vector<Layer> channels)
    : host_(host), id_(id), channels_(std::move(channels)) {
  setText(QObject::tr("Split channels of %1").arg(host.layer(id).name));
}

void SplitChannelsCommand::redo() {
  if (!host_.has_layer(id_)) return;
  composite_ = host_.layer(id_);
  index_ = int(host_.layer_ids().indexOf(id_));
  host_.remove_layer(id_);
  const bool first = ids_.empty();
  for (std::size_t c = 0; c < channels_.size(); ++c) {
    if (first) {
      ids_.push_back(host_.add_layer(channels_[c]));
      host_.move_layer(ids_.back(), index_ + int(c));
    } else {
      host_.restore_layer(ids_[c], channels_[c], index_ + int(c));
    }
  }
}

void SplitChannelsCommand::undo() {
  for (std::size_t c = 0; c < ids_.size(); ++c) {
    if (!host_.has_layer(ids_[c])) continue;
    channels_[c] = host_.layer(ids_[c]);  // renamed or restyled meanwhile: redo gives that back
    host_.remove_layer(ids_[c]);
  }
  if (composite_.valid() && !host_.has_layer(id_)) host_.restore_layer(id_, composite_, index_);
  composite_ = {};
}

void request_split_channels(Workspace& host, int id, QObject* context) {
  const Layer l = host.layer(id);
  if (!l.composite()) {
    host.show_status(QObject::tr("'%1' is not a colour composite: nothing to split").arg(l.name));
    return;
  }
  Workspace* h = &host;
  detail::run_async(
      context, [l]() { return split_channels(l); },
      [h, id](const detail::Outcome<std::vector<Layer>>& out) {
        if (!out.value) {
          h->show_status(QObject::tr("Cannot split the channels: %1").arg(out.error));
          return;
        }
        if (!h->has_layer(id)) return;  // removed while the planes were copied
        h->undo_stack()->push(new SplitChannelsCommand(*h, id, *out.value));
      });
}

}  // namespace gpix::ui
