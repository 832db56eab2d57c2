#include "gpix/ui/image_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "gpix/error.h"
#include "gpix/ui/render.h"

namespace gpix::ui {

using gpix::plugin::HostContext;
using gpix::plugin::Layer;

ImageView::ImageView(HostContext& host, QWidget* parent) : QWidget(parent), host_(host) {
  setMouseTracking(true);
  setMinimumSize(200, 200);
  setFocusPolicy(Qt::StrongFocus);
  setAttribute(Qt::WA_OpaquePaintEvent);
  connect(&host_, &HostContext::layer_added, this, [this](int id) {
    ensure_contrast(id);
    update_depth();
    if (!fitted_) fit();
    update();
  });
  connect(&host_, &HostContext::layer_changed, this, &ImageView::on_layer_changed);
  connect(&host_, &HostContext::layer_removed, this, [this](int id) {
    cache_.remove(id);
    update_depth();
    if (host_.layer_ids().isEmpty()) fitted_ = false;
    update();
  });
  connect(&host_, &HostContext::layers_reordered, this, qOverload<>(&QWidget::update));
  connect(&host_, &HostContext::current_layer_changed, this, qOverload<>(&QWidget::update));
}

void ImageView::on_layer_changed(int id) {
  cache_.remove(id);
  ensure_contrast(id);
  update_depth();
  update();
}

void ImageView::ensure_contrast(int id) {
  Layer l = host_.layer(id);
  if (!l.valid() || l.has_contrast()) return;
  const gpix::HostArray h = host_.host_data(id);
  const auto [lo, hi] = auto_contrast(h, -1);
  l = host_.layer(id);  // host_data() may have cached the pull
  l.contrast_min = lo;
  l.contrast_max = hi;
  host_.replace_layer(id, l);  // emits layer_changed again, now with limits set
}

int ImageView::depth() const {
  return depth_;
}

void ImageView::update_depth() {
  int d = 1;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (l.valid() && l.shape().ndim() == 3) d = std::max(d, int(l.shape().depth()));
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
  cache_.clear();
  emit slice_changed(z);
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
  update();
}

void ImageView::one_to_one() {
  // One image pixel per device pixel: on a 2x screen that is half a logical pixel.
  set_zoom(1.0 / devicePixelRatioF());
}

QPointF ImageView::image_pos(QPointF p) const {
  return (p - offset_) / zoom_;
}

QImage ImageView::image_of(int id) {
  auto it = cache_.find(id);
  if (it != cache_.end()) return *it;
  const Layer l = host_.layer(id);
  QImage img;
  try {
    RenderOptions o;
    o.slice = l.shape().ndim() == 3 ? std::min(slice_, int(l.shape().depth()) - 1) : 0;
    o.low = l.contrast_min;
    o.high = l.contrast_max;
    o.colormap = l.colormap;
    img = gpix::ui::render(host_.host_data(id), o);
  } catch (const gpix::Error&) {
    // An unknown colour map or a failed pull: show nothing for this layer.
  }
  cache_.insert(id, img);
  return img;
}

void ImageView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(24, 24, 28));
  // Nearest neighbour when magnifying, so pixels stay pixels; smooth when shrinking.
  p.setRenderHint(QPainter::SmoothPixmapTransform, zoom_ * devicePixelRatioF() < 1.0);
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (!l.visible || !l.valid()) continue;
    const QImage img = image_of(id);
    if (img.isNull()) continue;
    p.setOpacity(std::clamp(l.opacity, 0.0, 1.0));
    p.drawImage(QRectF(offset_, QSizeF(img.width() * zoom_, img.height() * zoom_)), img);
  }
  p.setOpacity(1.0);
  if (host_.layer_ids().isEmpty()) {
    p.setPen(QColor(160, 160, 170));
    p.drawText(rect(), Qt::AlignCenter, tr("Drop image files here, or File > Open"));
  }
}

QString ImageView::describe(QPointF widget_pos) {
  const QPointF ip = image_pos(widget_pos);
  const long x = std::lround(std::floor(ip.x())), y = std::lround(std::floor(ip.y()));
  int id = host_.current_layer();
  if (id < 0 && !host_.layer_ids().isEmpty()) id = host_.layer_ids().last();
  if (id < 0) return {};
  const Layer l = host_.layer(id);
  if (!l.valid()) return {};
  const gpix::Shape s = l.shape();
  if (x < 0 || y < 0 || x >= long(s.width()) || y >= long(s.height())) return {};
  const int z = s.ndim() == 3 ? std::min(slice_, int(s.depth()) - 1) : 0;
  const double v = value_at(host_.host_data(id), std::size_t(z), std::size_t(y), std::size_t(x));
  QString text = QStringLiteral("x %1  y %2").arg(x).arg(y);
  if (s.ndim() == 3) text += QStringLiteral("  z %1").arg(z);
  text += QStringLiteral("  value %1  (%2)").arg(QString::number(v, 'g', 8), l.name);
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
    setCursor(Qt::ClosedHandCursor);
  }
}

void ImageView::mouseMoveEvent(QMouseEvent* e) {
  if (panning_) {
    offset_ += e->position() - last_mouse_;
    auto_fit_ = false;
    last_mouse_ = e->position();
    update();
  }
  emit cursor_info(describe(e->position()));
}

void ImageView::mouseReleaseEvent(QMouseEvent*) {
  panning_ = false;
  unsetCursor();
}

void ImageView::resizeEvent(QResizeEvent*) {
  if (!fitted_ || auto_fit_) fit();
}

}  // namespace gpix::ui
