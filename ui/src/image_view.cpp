#include "gpix/ui/image_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "async.h"
#include "gpix/error.h"
#include "gpix/ui/composite.h"
#include "gpix/ui/render.h"

namespace gpix::ui {

namespace {

// Side of the square of pixel values read around the cursor: moving within it needs no read.
constexpr int kTile = 64;

// The box (z, then rows y0.., columns x0..) of a host array as a new (1, h, w) array, or
// (w) / (h, w) for 1D / 2D arrays as read_region gives them.
gpix::HostArray host_box(const gpix::HostArray& h, std::size_t z, const QRect& box) {
  const gpix::Shape& s = h.shape();
  std::vector<std::size_t> extent;
  if (s.ndim() == 3) extent.push_back(1);
  if (s.ndim() >= 2) extent.push_back(std::size_t(box.height()));
  extent.push_back(std::size_t(box.width()));
  gpix::HostArray out =
      gpix::HostArray::empty(gpix::Shape(std::span<const std::size_t>(extent)), h.dtype());
  const std::size_t e = gpix::size_of(h.dtype());
  const std::size_t row = std::size_t(box.width()) * e;
  for (int y = 0; y < box.height(); ++y) {
    const std::size_t src =
        ((z * s.height() + std::size_t(box.y() + y)) * s.width() + std::size_t(box.x())) * e;
    std::memcpy(out.data() + std::size_t(y) * row, h.data() + src, row);
  }
  return out;
}

}  // namespace

ImageView::ImageView(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  setMouseTracking(true);
  setMinimumSize(200, 200);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  connect(&host_, &Workspace::layer_added, this, [this](int id) {
    frames_[id];
    ensure_contrast(id);
    update_depth();
    // An image opened from a file is fitted to the window, as is any layer while the view
    // follows the window's size; a filter result keeps the zoom the user chose.
    if (!fitted_ || auto_fit_ || !host_.layer(id).source.isEmpty()) fit();
    invalidate(id);
  });
  connect(&host_, &Workspace::layer_changed, this, &ImageView::on_layer_changed);
  connect(&host_, &Workspace::layer_removed, this, [this](int id) {
    frames_.remove(id);
    if (tile_.id == id) tile_ = Tile{};
    update_depth();
    if (host_.layer_ids().isEmpty()) fitted_ = false;
    refresh_readout();
    update();
  });
  connect(&host_, &Workspace::layers_reordered, this, qOverload<>(&QWidget::update));
  connect(&host_, &Workspace::current_layer_changed, this, [this] {
    refresh_readout();
    update();
  });
}

void ImageView::on_layer_changed(int id) {
  ++frames_[id].data;
  ensure_contrast(id);
  update_depth();
  invalidate(id);
  refresh_readout();
}

void ImageView::refresh_readout() {
  if (last_cursor_.x() >= 0) emit cursor_info(describe(last_cursor_));
}

int ImageView::slice_of(const Layer& l) const {
  // A composite's first axis holds its channels, all shown at once.
  if (l.composite()) return 0;
  return l.shape().ndim() == 3 ? std::min(slice_, int(l.shape().depth()) - 1) : 0;
}

void ImageView::invalidate(int id) {
  Frame& f = frames_[id];
  f.wanted = ++next_request_;
  f.latest->store(f.wanted);
  // Ask on the next turn of the event loop, so that several changes in a row (a layer and
  // its contrast, a slider drag) make one request, and hidden views still get their frames.
  QTimer::singleShot(0, this, [this, id] { request_frame(id); });
  update();
}

void ImageView::request_frame(int id) {
  auto it = frames_.find(id);
  if (it == frames_.end()) return;
  Frame& f = *it;
  if (f.shown == f.wanted || f.pending == f.wanted || f.failed == f.wanted) return;
  const Layer l = host_.layer(id);
  if (!l.valid() || !l.visible) return;
  if (!l.has_contrast()) {
    ensure_contrast(id);  // lands as a layer change, which asks for the frame again
    return;
  }
  // The outline is a way of drawing labels; other colour maps show every pixel.
  const RenderOptions o{slice_of(l),
                        l.contrast_min,
                        l.contrast_max,
                        l.colormap,
                        l.outline && canonical_colormap(l.colormap) == QLatin1String("labels"),
                        l.gamma};
  const quint64 req = f.wanted;
  f.pending = req;
  struct Result {
    QImage image;
    std::size_t pulled = 0;
    bool skipped = false;
  };
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, file = l.file,
       dev = host_.device(), o, req, latest = f.latest, channels = l.channels]() {
        Result r;
        // A newer request exists (the slider moved on): nobody would see this frame.
        if (latest->load() != req) {
          r.skipped = true;
          return r;
        }
        if (!a.valid() && !h.valid() && file) {
          // File-backed: the plane on screen is read from the file (or the plane cache).
          RenderOptions one = o;
          one.slice = 0;
          r.image = gpix::ui::render(file->plane(std::size_t(o.slice)), dev, one, &r.pulled);
          return r;
        }
        if (!channels.empty()) {
          r.image = a.valid() ? render_composite(a, channels, &r.pulled)
                              : render_composite(h, dev, channels, &r.pulled);
        } else {
          r.image = a.valid() ? gpix::ui::render(a, o, &r.pulled)
                              : gpix::ui::render(h, dev, o, &r.pulled);
        }
        return r;
      },
      [this, id, req](const detail::Outcome<Result>& out) {
        auto found = frames_.find(id);
        if (found == frames_.end()) return;
        Frame& fr = *found;
        if (fr.pending == req) fr.pending = 0;
        if (!out.value) {
          // An unknown colour map or a failed read: show nothing for this layer until it
          // changes, and say why.
          if (req >= fr.shown) fr.image = QImage();
          fr.failed = req;
          host_.show_status(tr("Cannot display '%1': %2").arg(host_.layer(id).name, out.error));
        } else if (!out.value->skipped) {
          bytes_pulled_ += out.value->pulled;
          if (req > fr.shown) {
            fr.image = out.value->image;
            fr.shown = req;
            emit frame_ready(id);
          }
        }
        update();
        if (fr.shown != fr.wanted) request_frame(id);
      });
}

void ImageView::ensure_contrast(int id) {
  Frame& f = frames_[id];
  const Layer l = host_.layer(id);
  if (!l.valid() || l.has_contrast() || f.contrast_pending) return;
  f.contrast_pending = true;
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, file = l.file,
       dev = host_.device(), z = slice_of(l), n = l.channels.size()]() {
        std::vector<std::pair<double, double>> limits;
        // A file-backed stack takes its limits from the plane on screen: the whole stack is a
        // pass over the file (the card's statistics), too long to wait for before showing it.
        if (!a.valid() && !h.valid() && file) {
          limits.push_back(auto_contrast(display_copy(file->plane(std::size_t(z)), dev), -1));
          return limits;
        }
        // A composite's channels each get their own limits, from their own plane.
        const gpix::Array d = a.valid() ? a : display_copy(h, dev);
        if (n == 0) limits.push_back(auto_contrast(d, -1));
        for (std::size_t c = 0; c < n; ++c) limits.push_back(auto_contrast(d, int(c)));
        return limits;
      },
      [this, id,
       data = f.data](const detail::Outcome<std::vector<std::pair<double, double>>>& out) {
        auto found = frames_.find(id);
        if (found == frames_.end()) return;
        found->contrast_pending = false;
        Layer cur = host_.layer(id);
        if (!cur.valid() || cur.has_contrast()) return;
        if (found->data != data) {
          ensure_contrast(id);  // the data changed meanwhile: its own limits
          return;
        }
        if (!out.value) {
          // Keep the layer visible with a plain range rather than asking again and again.
          host_.show_status(tr("No automatic contrast for '%1': %2").arg(cur.name, out.error));
        }
        const auto limits = [&](std::size_t i) {
          return out.value && i < out.value->size() ? (*out.value)[i]
                                                    : std::pair<double, double>(0, 1);
        };
        if (!cur.composite()) {
          std::tie(cur.contrast_min, cur.contrast_max) = limits(0);
        }
        for (std::size_t c = 0; c < cur.channels.size(); ++c) {
          Channel& ch = cur.channels[c];
          if (!ch.has_contrast()) std::tie(ch.contrast_min, ch.contrast_max) = limits(c);
        }
        host_.replace_layer(id, cur);  // emits layer_changed: the frame follows
      });
}

bool ImageView::busy() const {
  if (tile_pending_) return true;
  for (auto it = frames_.begin(); it != frames_.end(); ++it) {
    const Frame& f = *it;
    if (f.pending || f.contrast_pending) return true;
    const Layer l = host_.layer(it.key());
    if (l.valid() && l.visible && f.shown != f.wanted && f.failed != f.wanted) return true;
  }
  return false;
}

int ImageView::depth() const {
  return depth_;
}

void ImageView::update_depth() {
  int d = 1;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (l.valid() && l.shape().ndim() == 3 && !l.composite())
      d = std::max(d, int(l.shape().depth()));
  }
  if (d != depth_) {
    depth_ = d;
    emit depth_changed(d);
  }
  if (slice_ >= depth_) set_slice(depth_ - 1);
}

QSize ImageView::image_size() const {
  int w = 0, h = 0;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (!l.valid()) continue;
    w = std::max(w, int(l.shape().width()));
    h = std::max(h, int(l.shape().height()));
  }
  return {w, h};
}

void ImageView::set_slice(int z) {
  z = std::clamp(z, 0, depth_ - 1);
  if (z == slice_) return;
  slice_ = z;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (l.valid() && l.shape().ndim() == 3 && !l.composite()) invalidate(id);
  }
  emit slice_changed(z);
  refresh_readout();
  update();
}

void ImageView::set_zoom(double zoom, QPointF anchor) {
  zoom = std::clamp(zoom, 1.0 / 64, 256.0);
  if (anchor.x() < 0) anchor = QPointF(width() / 2.0, height() / 2.0);
  const QPointF img = image_pos(anchor);
  zoom_ = zoom;
  offset_ = anchor - img * zoom_;
  fitted_ = true;
  auto_fit_ = false;  // the user chose a zoom: keep it when the window resizes
  emit zoom_changed(zoom_);
  refresh_readout();
  update();
}

void ImageView::fit() {
  const QSize s = image_size();
  if (s.isEmpty()) return;
  zoom_ = std::min(width() / double(s.width()), height() / double(s.height()));
  offset_ = QPointF((width() - s.width() * zoom_) / 2, (height() - s.height() * zoom_) / 2);
  fitted_ = true;
  auto_fit_ = true;
  emit zoom_changed(zoom_);
  refresh_readout();
  update();
}

void ImageView::one_to_one() {
  // One image pixel per device pixel: on a 2x screen that is half a logical pixel.
  set_zoom(1.0 / devicePixelRatioF());
}

QPointF ImageView::image_pos(QPointF p) const {
  return (p - offset_) / zoom_;
}

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 24, 28));
  bool computing = false;
  // The layers shown, read once (a Layer is a copy of the host's).
  struct Shown {
    int id;
    bool additive;
    double opacity;
  };
  std::vector<Shown> shown;
  bool additive = false;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (!l.visible || !l.valid()) continue;
    shown.push_back({id, l.additive, l.opacity});
    additive = additive || l.additive;
  }
  // Additive layers add to the layers below them, never to the canvas's grey (black would show
  // grey): the layers are then put together on a transparent image first (kept between paints,
  // made again when the widget's size changes), which is drawn over the canvas. Without one,
  // straight onto the widget.
  if (additive) {
    const qreal dpr = devicePixelRatioF();
    const QSize size = (QSizeF(this->size()) * dpr).toSize();
    if (compose_.size() != size || compose_.devicePixelRatio() != dpr) {
      compose_ = QImage(size, QImage::Format_ARGB32_Premultiplied);
      compose_.setDevicePixelRatio(dpr);
    }
    compose_.fill(Qt::transparent);
  } else {
    compose_ = QImage();  // the memory back while nothing adds
  }
  {
    QPainter lp;
    QPainter& q = additive ? lp : p;
    if (additive) lp.begin(&compose_);
    // Nearest neighbour when magnifying, so pixels stay pixels; smooth when shrinking.
    q.setRenderHint(QPainter::SmoothPixmapTransform, zoom_ * devicePixelRatioF() < 1.0);
    for (const Shown& l : shown) {
      const Frame& f = frames_[l.id];
      computing = computing || (f.shown != f.wanted && f.failed != f.wanted);
      if (f.image.isNull()) continue;
      q.setCompositionMode(l.additive ? QPainter::CompositionMode_Plus
                                      : QPainter::CompositionMode_SourceOver);
      q.setOpacity(std::clamp(l.opacity, 0.0, 1.0));
      q.drawImage(QRectF(offset_, QSizeF(f.image.width() * zoom_, f.image.height() * zoom_)),
                  f.image);
    }
  }
  if (additive) p.drawImage(QPointF(0, 0), compose_);
  // The overlays below at full strength, whatever the top layer's opacity.
  p.setOpacity(1.0);
  p.setCompositionMode(QPainter::CompositionMode_SourceOver);
  if (!highlight_.isEmpty() && slice_ >= highlight_z0_ && slice_ <= highlight_z1_) {
    const QRectF box(offset_ + highlight_.topLeft() * zoom_, highlight_.size() * zoom_);
    p.setPen(QPen(QColor(255, 255, 255), 2));
    p.drawRect(box.adjusted(-1, -1, 1, 1));
    p.setPen(QPen(QColor(0, 0, 0), 1, Qt::DashLine));
    p.drawRect(box.adjusted(-1, -1, 1, 1));
  }
  // The scale bar after the highlight: it stays readable over a picked label's box.
  if (const ScaleBar bar = scale_bar(); !bar.label.isEmpty()) {
    // White with a dark rim and a dark halo under the text: readable on any image.
    const QRectF r(width() - 16 - bar.pixels, height() - 20, bar.pixels, 5);
    p.fillRect(r.adjusted(-1, -1, 1, 1), QColor(0, 0, 0, 200));
    p.fillRect(r, Qt::white);
    QFont font = p.font();
    font.setBold(true);
    p.setFont(font);
    const double h = p.fontMetrics().height();
    const QRectF text(r.left() - 40, r.top() - 4 - h, r.width() + 80, h);
    p.setPen(QColor(0, 0, 0, 220));
    for (const QPointF d : {QPointF(1, 1), QPointF(-1, 1), QPointF(1, -1), QPointF(-1, -1)})
      p.drawText(text.translated(d), Qt::AlignHCenter | Qt::AlignBottom, bar.label);
    p.setPen(Qt::white);
    p.drawText(text, Qt::AlignHCenter | Qt::AlignBottom, bar.label);
    p.setFont(QFont());
  }
  p.setPen(QColor(160, 160, 170));
  if (host_.layer_ids().isEmpty()) {
    p.drawText(rect(), Qt::AlignCenter, tr("Drop image files here, or File > Open"));
  } else if (computing) {
    // The previous frame stays on screen meanwhile; a long filter may hold the device.
    p.drawText(rect().adjusted(8, 8, -8, -8), Qt::AlignLeft | Qt::AlignBottom, tr("computing…"));
  }
}

void ImageView::set_scale_bar_visible(bool on) {
  scale_bar_on_ = on;
  update();
}

ImageView::ScaleBar ImageView::scale_bar() const {
  if (!scale_bar_on_) return {};
  const auto shown = [&](int id) {
    const Layer l = host_.layer(id);
    return l.valid() && l.visible && l.calibrated() ? l : Layer{};
  };
  // The current layer's own calibration, or none: another layer's pixel size says nothing
  // about this one's (an uncalibrated image over a calibrated stack showed the stack's µm).
  // Without a visible current layer, the topmost visible calibrated one.
  const Layer current = host_.layer(host_.current_layer());
  Layer l;
  if (current.valid() && current.visible) {
    if (current.calibrated()) l = current;
  } else {
    const QList<int> ids = host_.layer_ids();
    for (auto it = ids.rbegin(); !l.valid() && it != ids.rend(); ++it) l = shown(*it);
  }
  if (!l.valid()) return {};
  const double sx = l.spacing_or_default().back();  // x: the screen's horizontal
  if (!(sx > 0) || !(zoom_ > 0)) return {};
  // The largest round length no longer than 150 screen pixels: at least 60 (the next round
  // length up is at most 2.5 times longer), whatever the zoom.
  const double most = 150.0 * sx / zoom_;
  const double decade = std::pow(10.0, std::floor(std::log10(most)));
  double length = decade;
  for (double m : {5.0, 2.0, 1.0}) {
    if (m * decade <= most) {
      length = m * decade;
      break;
    }
  }
  return {length, length / sx * zoom_,
          QString::number(length, 'g', 6) + QLatin1Char(' ') + display_unit(l.unit)};
}

void ImageView::request_tile(int id, int z, int x, int y) {
  if (tile_pending_) return;  // one read at a time; describe() asks again when it lands
  const Layer l = host_.layer(id);
  const gpix::Shape s = l.shape();
  const QRect box =
      QRect(x - kTile / 2, y - kTile / 2, kTile, kTile)
          .intersected(QRect(0, 0, int(s.width()), s.ndim() >= 2 ? int(s.height()) : 1));
  tile_pending_ = true;
  // A composite's readout shows every channel: the box of all its planes.
  const std::size_t planes = l.composite() ? l.channels.size() : 1;
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, file = l.file, z, box,
       planes]() {
        // A file-backed layer's values come from the displayed plane (the plane cache).
        if (!a.valid() && !h.valid() && file) return host_box(file->plane(std::size_t(z)), 0, box);
        if (!a.valid() && planes > 1) {
          const gpix::Shape& hs = h.shape();
          gpix::HostArray all = gpix::HostArray::empty(
              gpix::Shape{planes, std::size_t(box.height()), std::size_t(box.width())}, h.dtype());
          for (std::size_t c = 0; c < planes && c < hs.depth(); ++c) {
            const gpix::HostArray one = host_box(h, c, box);
            std::memcpy(all.data() + c * one.bytes(), one.data(), one.bytes());
          }
          return all;
        }
        if (!a.valid()) return host_box(h, std::size_t(z), box);
        gpix::Region r;
        if (a.ndim() == 3) {
          r.origin.push_back(planes > 1 ? 0 : std::size_t(z));
          r.extent.push_back(planes);
        }
        if (a.ndim() >= 2) {
          r.origin.push_back(std::size_t(box.y()));
          r.extent.push_back(std::size_t(box.height()));
        }
        r.origin.push_back(std::size_t(box.x()));
        r.extent.push_back(std::size_t(box.width()));
        return a.read_region(r);
      },
      [this, id, z, box, data = frames_[id].data,
       from_device = l.array.valid()](const detail::Outcome<gpix::HostArray>& out) {
        tile_pending_ = false;
        tile_ = Tile{id, data, z, box, out.value ? *out.value : gpix::HostArray{}};
        if (out.value && from_device) bytes_pulled_ += out.value->bytes();
        if (last_cursor_.x() >= 0) emit cursor_info(describe(last_cursor_));
      });
}

QString ImageView::describe(QPointF widget_pos) {
  last_cursor_ = widget_pos;
  const QPointF ip = image_pos(widget_pos);
  const long x = std::lround(std::floor(ip.x())), y = std::lround(std::floor(ip.y()));
  int id = host_.current_layer();
  if (id < 0 && !host_.layer_ids().isEmpty()) id = host_.layer_ids().last();
  if (id < 0) return {};
  const Layer l = host_.layer(id);
  if (!l.valid()) return {};
  const gpix::Shape s = l.shape();
  if (x < 0 || y < 0 || x >= long(s.width()) || y >= long(s.height())) return {};
  const int z = slice_of(l);
  QString value = QStringLiteral("...");
  if (tile_.id == id && tile_.data == frames_[id].data && tile_.z == z &&
      tile_.box.contains(int(x), int(y))) {
    const auto at = [&](std::size_t plane) {
      return QString::number(value_at(tile_.values, plane, std::size_t(y - tile_.box.y()),
                                      std::size_t(x - tile_.box.x())),
                             'g', 8);
    };
    if (!tile_.values.valid()) {
      value = QStringLiteral("?");
    } else if (l.composite()) {
      QStringList parts;  // "R 12, G 40, B 200"
      for (std::size_t c = 0; c < l.channels.size(); ++c)
        parts << l.channels[c].name + QLatin1Char(' ') + at(c);
      value = parts.join(QStringLiteral(", "));
    } else {
      value = at(0);
    }
  } else {
    request_tile(id, z, int(x), int(y));
  }
  QString text = QStringLiteral("x %1  y %2").arg(x).arg(y);
  if (s.ndim() == 3 && !l.composite()) text += QStringLiteral("  z %1").arg(z);
  text += QStringLiteral("  value %1  (%2)").arg(value, l.name);
  return text;
}

void ImageView::wheelEvent(QWheelEvent* e) {
  const double steps = e->angleDelta().y() / 120.0;
  if (e->modifiers() & Qt::ControlModifier && depth_ > 1) {
    set_slice(slice_ + (steps > 0 ? 1 : -1));
  } else {
    set_zoom(zoom_ * std::pow(1.25, steps), e->position());
  }
  e->accept();
}

void ImageView::mousePressEvent(QMouseEvent* e) {
  if (e->button() == Qt::LeftButton || e->button() == Qt::MiddleButton) {
    panning_ = true;
    last_mouse_ = e->position();
    press_pos_ = e->position();
    dragged_ = false;
    setCursor(Qt::ClosedHandCursor);
  }
}

void ImageView::mouseMoveEvent(QMouseEvent* e) {
  if (panning_) {
    // A few pixels of jitter still count as a click.
    dragged_ = dragged_ || (e->position() - press_pos_).manhattanLength() > 4;
    offset_ += e->position() - last_mouse_;
    auto_fit_ = false;
    last_mouse_ = e->position();
    update();
  }
  emit cursor_info(describe(e->position()));
}

void ImageView::mouseReleaseEvent(QMouseEvent* e) {
  const bool click = panning_ && !dragged_ && e->button() == Qt::LeftButton;
  panning_ = false;
  unsetCursor();
  if (click) {
    const QPointF ip = image_pos(e->position());
    emit pixel_clicked(int(std::floor(ip.x())), int(std::floor(ip.y())), slice_);
  }
}

void ImageView::center_on(QPointF image_pos) {
  offset_ = QPointF(width() / 2.0, height() / 2.0) - image_pos * zoom_;
  fitted_ = true;
  auto_fit_ = false;  // the user asked for this place: keep it when the window resizes
  refresh_readout();
  update();
}

void ImageView::set_highlight(const QRectF& box, int z_first, int z_last) {
  highlight_ = box;
  highlight_z0_ = z_first;
  highlight_z1_ = z_last;
  update();
}

void ImageView::resizeEvent(QResizeEvent*) {
  if (!fitted_ || auto_fit_) fit();
}

}  // namespace gpix::ui
