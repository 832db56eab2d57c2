#include "gpix/ui/mip_view.h"

#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <chrono>
#include <cmath>

#include "async.h"
#include "gpix/ui/render.h"
#include "gpix/ui/stack_passes.h"
#include "pass_bar.h"

namespace gpix::ui {

namespace {

// Degrees per screen pixel dragged.
constexpr double kDegreesPerPixel = 0.5;
// Largest frame side: a full-screen view of a 4K display renders no more than this.
constexpr int kMaxSide = 2048;
// What a frame may take while the user drags (the resolution drops to meet it).
constexpr double kDragFrameMs = 120;

}  // namespace

MipView::MipView(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  setMinimumSize(200, 200);
  setAttribute(Qt::WA_OpaquePaintEvent);
  setFocusPolicy(Qt::StrongFocus);
  setCursor(Qt::OpenHandCursor);
  pass_ = new detail::PassBar(this);
  QPalette pal = pass_->palette();
  pal.setColor(QPalette::WindowText, QColor(220, 220, 225));
  pass_->setPalette(pal);
  connect(pass_, &detail::PassBar::retry, this, [this] {
    projection_file_.reset();
    volume_file_.reset();
    failed_ = 0;
    error_.clear();
    invalidate();
  });
  connect(&host_, &Workspace::layer_added, this, &MipView::pick_layer);
  connect(&host_, &Workspace::layer_removed, this, &MipView::pick_layer);
  connect(&host_, &Workspace::current_layer_changed, this, &MipView::pick_layer);
  connect(&host_, &Workspace::layer_changed, this, [this](int id) {
    if (id == layer_) {
      error_.clear();
      invalidate();
    } else {
      pick_layer();
    }
  });
  pick_layer();
}

void MipView::pick_layer() {
  const auto stack = [&](int i) {
    const Layer l = host_.layer(i);
    return l.valid() && l.shape().ndim() == 3;
  };
  int id = -1;
  if (stack(host_.current_layer())) {
    id = host_.current_layer();
  } else {
    const QList<int> ids = host_.layer_ids();
    for (auto it = ids.rbegin(); it != ids.rend() && id < 0; ++it) {
      if (stack(*it)) id = *it;
    }
  }
  if (id == layer_) return;
  layer_ = id;
  image_ = QImage();
  error_.clear();
  if (proj_token_) pass_->cancel();  // the old stack's projection: nobody will see it
  proj_token_.reset();
  if (!projection_.valid()) projection_file_.reset();
  // The block copy lives on the device: another stack's is let go (the pass cache keeps the
  // host copy, so coming back does not read the file again).
  if (!volume_.valid() || id < 0 || host_.layer(id).file != volume_file_.lock()) {
    volume_ = {};
    volume_file_.reset();
  }
  pass_->hide();
  if (id >= 0) fit();  // a new stack fits, whatever the last one's zoom was
  invalidate();
}

MipOptions MipView::camera() const {
  const Layer l = host_.layer(layer_);
  MipOptions o;
  if (!l.valid() || l.shape().ndim() != 3) return o;
  const std::vector<double> sp = l.spacing_or_default();
  o.spacing = {sp[0], sp[1], sp[2]};
  o.yaw = yaw_;
  o.pitch = pitch_;
  double dpr = devicePixelRatioF();
  if (dragging_) {
    // Fewer rays while turning: half the resolution, or less where the last frame says this
    // device needs it to answer within about kDragFrameMs (a CPU device takes seconds for a
    // full frame of a large stack).
    double scale = 0.5;
    const double full = double(width()) * height() * dpr * dpr;
    if (us_per_pixel_ > 0 && full > 0) {
      scale = std::min(scale, std::sqrt(kDragFrameMs * 1000.0 / us_per_pixel_ / full));
    }
    dpr *= std::max(scale, 1.0 / 8);
  }
  o.width = std::size_t(std::clamp(int(std::lround(width() * dpr)), 1, kMaxSide));
  o.height = std::size_t(std::clamp(int(std::lround(height() * dpr)), 1, kMaxSide));
  o.pixel = std::min({sp[0], sp[1], sp[2]}) / (zoom_ * dpr);
  // Label ids must not be blended into ids that are not there.
  o.interpolation = !smooth_ || canonical_colormap(l.colormap) == QLatin1String("labels")
                        ? Interpolation::nearest
                        : Interpolation::linear;
  return o;
}

void MipView::invalidate() {
  wanted_ = ++requested_ + 1;
  latest_->store(wanted_);
  QTimer::singleShot(0, this, &MipView::request);
  update();
}

bool MipView::busy() const {
  return pending_ || proj_token_ || (layer_ >= 0 && shown_ != wanted_ && failed_ != wanted_);
}

bool MipView::file_backed() const {
  return host_.layer(layer_).file_backed();
}

void MipView::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  request();  // a file-backed stack's pass waited for this
}

std::size_t MipView::volume_factor() const {
  const Layer l = host_.layer(layer_);
  if (!l.file_backed() || !turned() || !volume_.valid() || volume_file_.lock() != l.file) return 0;
  return volume_factor_;
}

QString MipView::note() const {
  const std::size_t f = volume_factor();
  if (f == 0) return {};
  if (f == 1) return tr("3D from the whole stack (it fits the 3D view's copy)");
  return tr("3D from a 1/%1-resolution copy (maximum of %1 x %1 x %1 blocks); yaw 0, pitch 0 "
            "shows the exact maximum over z")
      .arg(f);
}

void MipView::read_volume(const Layer& l) {
  if (proj_token_) return;  // one pass at a time; request() asks again when it lands
  if (!isVisible()) return;
  const auto token = pass_->start(tr("3D copy (maximum of blocks)"));
  proj_token_ = token;
  struct Copy {
    gpix::Array volume;
    std::size_t factor = 1;
    bool cached = false;
  };
  detail::run_async(
      this, detail::long_pool(),
      [file = l.file, dev = host_.device(), token]() {
        const StackVolume v = stack_block_max(file, stack_volume_bound(), &token->cancel,
                                              detail::PassToken::progress_of(token));
        // Pushed once here: turning renders from the device copy without moving it again.
        return Copy{gpix::Array::push(v.volume, dev), v.factor, v.cached};
      },
      [this, token,
       file = std::weak_ptr<const StackFile>(l.file)](const detail::Outcome<Copy>& out) {
        if (token != proj_token_) return;  // another layer since
        proj_token_.reset();
        volume_file_ = file;
        if (!out.value) {
          volume_ = {};
          failed_ = wanted_;
          error_ = token->cancel ? tr("The 3D copy was cancelled: Retry reads the file again")
                                 : out.error;
          if (!token->cancel) pass_->finish(token, tr("3D copy: %1").arg(out.error), true);
          update();
          return;
        }
        volume_ = out.value->volume;
        volume_factor_ = out.value->factor;
        const QString what = out.value->factor == 1
                                 ? tr("3D copy: the whole stack")
                                 : tr("3D copy at 1/%1 resolution (maximum of %1 x %1 x %1 blocks)")
                                       .arg(out.value->factor);
        pass_->finish(token, out.value->cached
                                 ? tr("%1, from the cache (the file was not read again)").arg(what)
                                 : tr("%1, read from the file").arg(what));
        request();
      });
}

void MipView::read_projection(const Layer& l) {
  if (proj_token_) return;   // one pass at a time; request() asks again when it lands
  if (!isVisible()) return;  // a hidden window must not read the file; showEvent asks again
  const auto token = pass_->start(tr("Maximum over z"));
  proj_token_ = token;
  detail::run_async(
      this, detail::long_pool(),
      [file = l.file, dev = host_.device(), token]() {
        return stack_max_projection(file, dev, &token->cancel,
                                    detail::PassToken::progress_of(token));
      },
      [this, token,
       file = std::weak_ptr<const StackFile>(l.file)](const detail::Outcome<StackProjection>& out) {
        if (token != proj_token_) return;  // another layer since
        proj_token_.reset();
        if (!out.value) {
          projection_ = {};
          projection_file_ = file;
          failed_ = wanted_;
          error_ = token->cancel ? tr("The projection was cancelled: Retry reads the file again")
                                 : out.error;
          if (!token->cancel) pass_->finish(token, tr("Maximum over z: %1").arg(out.error), true);
          update();
          return;
        }
        projection_ = out.value->image;
        projection_file_ = file;
        if (turned()) {
          // Turned while it read: the block copy's pass is next and shows its own bar.
          pass_->finish(token);
          request();
          return;
        }
        pass_->finish(token, out.value->cached
                                 ? tr("Maximum over z, from the cache (the file was not read "
                                      "again)")
                                 : tr("Maximum over z, read from the file"));
        request();
      });
}

void MipView::request() {
  if (shown_ == wanted_ || pending_ || failed_ == wanted_) return;
  const Layer l = host_.layer(layer_);
  if (!l.valid() || l.shape().ndim() != 3 || !l.has_contrast()) return;
  gpix::HostArray projection;
  gpix::Array source = l.array;
  double factor = 1;
  if (l.file_backed() && turned()) {
    if (volume_file_.lock() == l.file && !volume_.valid()) {
      failed_ = wanted_;  // cancelled or failed: Retry reads the file again
      update();
      return;
    }
    // Another stack's copy, or one made under another bound (the policy changed): read again
    // (from the pass cache where it holds that copy).
    if (volume_file_.lock() != l.file ||
        volume_factor_ !=
            block_max_factor(l.file->shape(), l.file->dtype(), stack_volume_bound())) {
      read_volume(l);
      return;
    }
    source = volume_;
    factor = double(volume_factor_);
  } else if (l.file_backed()) {
    if (projection_file_.lock() == l.file && !projection_.valid()) {
      // Its pass was cancelled or failed: camera and contrast changes do not read the file
      // again; Retry (or choosing the layer again) does.
      failed_ = wanted_;
      update();
      return;
    }
    if (projection_file_.lock() != l.file) {
      read_projection(l);
      return;
    }
    projection = projection_;
    // Shown again after another layer (pick_layer hid the bar): the projection was kept.
    if (pass_->isHidden()) {
      pass_->note(tr("Maximum over z, from the cache (the file was not read again)"));
    }
  } else if (!l.array.valid()) {
    error_ = tr("'%1' is not on the device (%2): the 3D view projects on the device")
                 .arg(l.name, QString::fromStdString(host_.device().label()));
    failed_ = wanted_;
    update();
    return;
  }
  const quint64 req = wanted_;
  pending_ = req;
  MipOptions cam = camera();
  // The block copy's voxels are f voxels of the stack: the same physical volume, so the same
  // framing and zoom. Its extent rounds up to whole blocks (at most f - 1 voxels more per axis,
  // shifting the centre by under half a block).
  for (double& sp : cam.spacing) sp *= factor;
  const RenderOptions o{0, l.contrast_min, l.contrast_max, l.colormap, false};
  struct Frame {
    QImage image;
    double us = 0;  // how long it took
  };
  detail::run_async(
      this,
      [a = source, projection, dev = host_.device(), cam, o, req, latest = latest_]() {
        Frame f;
        // A newer camera exists: skip this one, the newest follows at once.
        if (latest->load() != req) return f;
        const auto start = std::chrono::steady_clock::now();
        // A file-backed stack from the top: its projection as a one-slice volume (the same zoom
        // and framing as a stack in memory); turned, `a` is its block copy.
        const gpix::Array volume =
            a.valid() ? a
                      : gpix::Array::push(projection, dev)
                            .reshape(gpix::Shape{1, projection.shape()[0], projection.shape()[1]});
        f.image = gpix::ui::render(render_mip(volume, cam), o);
        f.us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                   .count();
        return f;
      },
      [this, req, cam](const detail::Outcome<Frame>& out) {
        pending_ = 0;
        if (!out.value) {
          failed_ = req;
          error_ = out.error;
        } else if (!out.value->image.isNull() && req > shown_) {
          us_per_pixel_ = out.value->us / double(cam.width * cam.height);
          image_ = out.value->image;
          frame_camera_ = cam;
          shown_ = req;
          ++rendered_;
          error_.clear();
          setToolTip(note());  // where a file-backed stack's turned frame comes from
          emit frame_ready();
        }
        update();
        if (shown_ != wanted_) request();
      });
}

void MipView::set_angles(double yaw, double pitch) {
  // Yaw wraps; pitch stops at straight up and down, so "up" on screen keeps its meaning.
  yaw = std::remainder(yaw, 360.0);
  pitch = std::clamp(pitch, -90.0, 90.0);
  if (yaw == yaw_ && pitch == pitch_) return;
  yaw_ = yaw;
  pitch_ = pitch;
  emit camera_changed(yaw_, pitch_, zoom_);
  invalidate();
}

void MipView::set_smooth(bool smooth) {
  if (smooth == smooth_) return;
  smooth_ = smooth;
  invalidate();
}

void MipView::set_zoom(double zoom) {
  user_zoom_ = true;
  apply_zoom(zoom);
}

void MipView::apply_zoom(double zoom) {
  zoom = std::clamp(zoom, 1.0 / 64, 64.0);
  if (zoom == zoom_) return;
  zoom_ = zoom;
  emit camera_changed(yaw_, pitch_, zoom_);
  invalidate();
}

void MipView::fit() {
  const Layer l = host_.layer(layer_);
  if (!l.valid() || l.shape().ndim() != 3) return;
  const Shape s = l.shape();
  const std::vector<double> sp = l.spacing_or_default();
  const double smallest = std::min({sp[0], sp[1], sp[2]});
  const double diameter =
      std::hypot(double(s.width()) * sp[2], double(s.height()) * sp[1], double(s.depth()) * sp[0]);
  user_zoom_ = false;
  apply_zoom(std::min(width(), height()) * smallest / diameter);
}

void MipView::reset() {
  set_angles(0, 0);
  fit();
}

void MipView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), QColor(12, 12, 16));
  if (!image_.isNull()) {
    p.setRenderHint(QPainter::SmoothPixmapTransform, true);
    p.drawImage(QRectF(rect()), image_);
  }
  p.setPen(QColor(170, 170, 180));
  const QRect text = rect().adjusted(8, 6, -8, -6);
  if (layer_ < 0) {
    p.drawText(rect(), Qt::AlignCenter, tr("The 3D view needs a 3D layer (a stack)"));
    return;
  }
  if (file_backed() && !turned()) {
    p.drawText(text, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
               tr("%1\nfile-backed: the exact maximum over z; drag to turn (from a reduced copy), "
                  "wheel to zoom")
                   .arg(host_.layer(layer_).name));
  } else if (file_backed()) {
    p.drawText(text, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap,
               tr("%1\nyaw %2°  pitch %3°   %4")
                   .arg(host_.layer(layer_).name)
                   .arg(yaw_, 0, 'f', 0)
                   .arg(pitch_, 0, 'f', 0)
                   .arg(volume_factor() ? note() : tr("file-backed: reading the 3D copy")));
  } else {
    p.drawText(text, Qt::AlignLeft | Qt::AlignTop,
               tr("%1\nyaw %2°  pitch %3°   drag to turn, wheel to zoom, double-click to reset")
                   .arg(host_.layer(layer_).name)
                   .arg(yaw_, 0, 'f', 0)
                   .arg(pitch_, 0, 'f', 0));
  }
  if (!error_.isEmpty()) {
    p.drawText(text, Qt::AlignLeft | Qt::AlignBottom | Qt::TextWordWrap, error_);
  } else if (busy()) {
    p.drawText(text, Qt::AlignLeft | Qt::AlignBottom, tr("computing…"));
  }
}

void MipView::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  dragging_ = true;
  last_ = e->position();
  setCursor(Qt::ClosedHandCursor);
}

void MipView::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) return;
  const QPointF d = e->position() - last_;
  last_ = e->position();
  set_angles(yaw_ + d.x() * kDegreesPerPixel, pitch_ - d.y() * kDegreesPerPixel);
}

void MipView::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || !dragging_) return;
  dragging_ = false;
  setCursor(Qt::OpenHandCursor);
  invalidate();  // the full-resolution frame
}

void MipView::mouseDoubleClickEvent(QMouseEvent*) {
  reset();
}

void MipView::wheelEvent(QWheelEvent* e) {
  set_zoom(zoom_ * std::pow(1.25, e->angleDelta().y() / 120.0));
  e->accept();
}

void MipView::resizeEvent(QResizeEvent*) {
  pass_->setGeometry(8, height() - 58, std::max(10, width() - 16), 30);
  if (!user_zoom_) {
    fit();  // follows the window until the user zooms
  } else {
    invalidate();
  }
}

}  // namespace gpix::ui
