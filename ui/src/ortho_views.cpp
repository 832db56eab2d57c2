#include "gpix/ui/ortho_views.h"

#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QTimer>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <cstring>

#include "async.h"
#include "gpix/error.h"
#include "gpix/filters/geometry.h"
#include "gpix/ui/stack_passes.h"
#include "pass_bar.h"

namespace gpix::ui {

namespace {

constexpr int kGap = 6;  // pixels between panes

std::size_t at(Plane p) {
  return static_cast<std::size_t>(p);
}

const char* plane_name(Plane p) {
  return p == Plane::xy ? "xy" : (p == Plane::xz ? "xz" : "yz");
}

// The plane of a host volume, copied on the host (a layer the device could not hold).
HostArray host_plane(const HostArray& h, Plane p, std::size_t i) {
  const Shape& s = h.shape();
  const std::size_t nz = s.depth(), ny = s.height(), nx = s.width(), e = size_of(h.dtype());
  const Shape out_shape =
      p == Plane::xy ? Shape{ny, nx} : (p == Plane::xz ? Shape{nz, nx} : Shape{ny, nz});
  HostArray out = HostArray::empty(out_shape, h.dtype());
  const std::byte* src = h.data();
  std::byte* dst = out.data();
  if (p == Plane::xy) {
    std::memcpy(dst, src + i * ny * nx * e, ny * nx * e);
  } else if (p == Plane::xz) {
    for (std::size_t z = 0; z < nz; ++z)
      std::memcpy(dst + z * nx * e, src + (z * ny + i) * nx * e, nx * e);
  } else {
    for (std::size_t y = 0; y < ny; ++y)
      for (std::size_t z = 0; z < nz; ++z)
        std::memcpy(dst + (y * nz + z) * e, src + ((z * ny + y) * nx + i) * e, e);
  }
  return out;
}

}  // namespace

QImage render_plane(const Array& array, const HostArray& host, const Device& device, Plane plane,
                    int index, RenderOptions o, std::size_t* pulled) {
  const Shape s = array.valid() ? array.shape() : host.shape();
  if (s.ndim() != 3) {
    throw InvalidArgument("orthogonal views need a 3D (z, y, x) layer; this one is " + s.str());
  }
  const std::size_t extent =
      plane == Plane::xy ? s.depth() : (plane == Plane::xz ? s.height() : s.width());
  if (index < 0 || static_cast<std::size_t>(index) >= extent) {
    throw InvalidArgument(std::string("orthogonal views: the ") + plane_name(plane) + " plane at " +
                          std::to_string(index) + " is outside 0.." + std::to_string(extent - 1) +
                          " of a " + s.str() + " layer");
  }
  const auto i = static_cast<std::size_t>(index);
  o.slice = 0;
  if (!array.valid()) return render(host_plane(host, plane, i), device, o, pulled);
  if (plane == Plane::xy) {
    o.slice = index;
    return render(array, o, pulled);
  }
  // The plane is a strided box of the volume: crop makes it contiguous on the device (one
  // kernel over the plane's pixels), yz is then turned so that its rows are y.
  if (plane == Plane::xz) {
    return render(crop(array, 0, i, 0, 0, 1, 0).reshape(Shape{s.depth(), s.width()}), o, pulled);
  }
  const Array zy = crop(array, i, 0, 0, 1, 0, 0).reshape(Shape{s.depth(), s.height()});
  return render(transpose(zy, "xy"), o, pulled);
}

// One pane: the plane's image stretched over the widget (the parent sizes it to the plane's
// physical aspect), the crosshair, and mouse input handed to the parent.
class OrthoPane : public QWidget {
 public:
  OrthoPane(OrthoViews* owner, Plane plane) : QWidget(owner), owner_(owner), plane_(plane) {
    setObjectName(QStringLiteral("ortho_%1").arg(QLatin1String(plane_name(plane))));
    setAttribute(Qt::WA_OpaquePaintEvent);
    setCursor(Qt::CrossCursor);
  }

  // Rows and columns of the plane for the current layer (0 x 0 without one).
  QSize plane_size() const {
    const Layer l = owner_->host_.layer(owner_->layer_);
    if (!l.valid() || l.shape().ndim() != 3) return {};
    const Shape s = l.shape();
    const int nx = int(s.width()), ny = int(s.height()), nz = int(s.depth());
    return plane_ == Plane::xy ? QSize(nx, ny)
                               : (plane_ == Plane::xz ? QSize(nx, nz) : QSize(nz, ny));
  }

 protected:
  void paintEvent(QPaintEvent*) override {
    QPainter p(this);
    p.fillRect(rect(), QColor(24, 24, 28));
    const QImage& img = owner_->state_[at(plane_)].image;
    const QSize n = plane_size();
    if (!img.isNull()) {
      if (width() >= img.width()) {
        p.drawImage(QRectF(rect()), img);  // magnified: nearest, pixels stay pixels
      } else {
        // Shrunk smoothly once per frame and size, not on every crosshair move: a 512 x 512
        // plane filtered down on each paint cost the event loop tens of ms during a drag.
        if (scaled_key_ != img.cacheKey() || scaled_.size() != size()) {
          scaled_ = img.scaled(size(), Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
          scaled_key_ = img.cacheKey();
        }
        p.drawImage(0, 0, scaled_);
      }
    }
    if (n.isEmpty()) return;
    const double sx = width() / double(n.width()), sy = height() / double(n.height());
    int col = owner_->x_, row = owner_->y_;
    if (plane_ == Plane::xz) row = owner_->z_;
    if (plane_ == Plane::yz) col = owner_->z_;
    const double cx = (col + 0.5) * sx, cy = (row + 0.5) * sy;
    p.setPen(QPen(QColor(255, 220, 0, 170), 1));
    p.drawLine(QPointF(cx, 0), QPointF(cx, height()));
    p.drawLine(QPointF(0, cy), QPointF(width(), cy));
    p.setPen(QColor(230, 230, 235));
    const QString title = QString::fromLatin1(plane_name(plane_)) + QStringLiteral("  ") +
                          (plane_ == Plane::xy   ? QStringLiteral("z %1").arg(owner_->z_)
                           : plane_ == Plane::xz ? QStringLiteral("y %1").arg(owner_->y_)
                                                 : QStringLiteral("x %1").arg(owner_->x_));
    p.drawText(rect().adjusted(4, 2, -4, -2), Qt::AlignLeft | Qt::AlignTop, title);
  }
  void mousePressEvent(QMouseEvent* e) override {
    if (e->button() == Qt::LeftButton) pick(e->position());
  }
  void mouseMoveEvent(QMouseEvent* e) override {
    if (e->buttons() & Qt::LeftButton) pick(e->position());
  }
  void wheelEvent(QWheelEvent* e) override {
    const int steps = e->angleDelta().y() > 0 ? 1 : (e->angleDelta().y() < 0 ? -1 : 0);
    if (steps) owner_->pane_wheel(plane_, steps);
    e->accept();
  }

 private:
  void pick(QPointF pos) {
    const QSize n = plane_size();
    if (n.isEmpty() || width() <= 0 || height() <= 0) return;
    owner_->pane_pressed(plane_, int(std::floor(pos.x() / width() * n.width())),
                         int(std::floor(pos.y() / height() * n.height())));
  }

  OrthoViews* owner_;
  Plane plane_;
  QImage scaled_;  // the plane shrunk to the pane
  qint64 scaled_key_ = 0;
};

OrthoViews::OrthoViews(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  setMinimumSize(240, 240);
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, QColor(40, 40, 46));
  pal.setColor(QPalette::WindowText, QColor(220, 220, 225));
  setPalette(pal);
  for (Plane p : {Plane::xy, Plane::xz, Plane::yz}) panes_[at(p)] = new OrthoPane(this, p);
  info_ = new QLabel(this);
  info_->setObjectName(QStringLiteral("ortho_info"));
  info_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  info_->setWordWrap(true);
  pass_ = new detail::PassBar(this);
  connect(pass_, &detail::PassBar::retry, this, [this] {
    invalidate(Plane::xz);
    invalidate(Plane::yz);
  });
  connect(&host_, &Workspace::layer_added, this, &OrthoViews::pick_layer);
  connect(&host_, &Workspace::layer_removed, this, &OrthoViews::pick_layer);
  connect(&host_, &Workspace::current_layer_changed, this, &OrthoViews::pick_layer);
  connect(&host_, &Workspace::layer_changed, this, [this](int id) {
    const Layer l = host_.layer(id);
    if (id != layer_ || !l.valid() || l.shape().ndim() != 3) {
      pick_layer();
      return;
    }
    // New data or display settings of the layer shown: the planes keep showing until the new
    // ones arrive; the cursor stays inside a changed shape.
    const Shape s = l.shape();
    x_ = std::min(x_, int(s.width()) - 1);
    y_ = std::min(y_, int(s.height()) - 1);
    z_ = std::min(z_, int(s.depth()) - 1);
    layout_panes();
    update_info();
    for (Plane p : {Plane::xy, Plane::xz, Plane::yz}) invalidate(p);
  });
  pick_layer();
}

OrthoViews::~OrthoViews() = default;

QImage OrthoViews::frame(Plane p) const {
  return state_[at(p)].image;
}

QWidget* OrthoViews::pane(Plane p) const {
  return panes_[at(p)];
}

bool OrthoViews::busy() const {
  for (const State& s : state_) {
    if (s.pending || (layer_ >= 0 && s.shown != s.wanted && s.failed != s.wanted)) return true;
  }
  return side_token_ != nullptr;
}

void OrthoViews::pick_layer() {
  int id = -1;
  const auto stack = [&](int i) {
    const Layer l = host_.layer(i);
    return l.valid() && l.shape().ndim() == 3;
  };
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
  for (State& s : state_) s.image = QImage();
  if (side_token_) pass_->cancel();  // the old stack's pass: nobody will see it
  side_token_.reset();
  pass_file_ = nullptr;
  read_y_ = read_x_ = -1;
  pass_->hide();
  if (id >= 0) {
    // A new stack starts at its centre, or keeps the cursor where it fits.
    const Shape s = host_.layer(id).shape();
    const int nx = int(s.width()), ny = int(s.height()), nz = int(s.depth());
    if (x_ >= nx || y_ >= ny || z_ >= nz || (x_ == 0 && y_ == 0 && z_ == 0)) {
      x_ = nx / 2;
      y_ = ny / 2;
      z_ = std::min(z_, nz - 1);
    }
    for (Plane p : {Plane::xy, Plane::xz, Plane::yz}) invalidate(p);
  }
  layout_panes();
  update_info();
}

int OrthoViews::index_of(Plane p) const {
  return p == Plane::xy ? z_ : (p == Plane::xz ? y_ : x_);
}

void OrthoViews::invalidate(Plane p) {
  State& s = state_[at(p)];
  s.wanted = ++next_;
  s.latest->store(s.wanted);
  // On the next turn of the event loop: a drag's many moves make one request per pane.
  QTimer::singleShot(0, this, [this, p] { request(p); });
  panes_[at(p)]->update();
}

void OrthoViews::request(Plane p) {
  State& s = state_[at(p)];
  if (s.shown == s.wanted || s.pending || s.failed == s.wanted) return;
  const Layer l = host_.layer(layer_);
  if (!l.valid() || l.shape().ndim() != 3) return;
  if (!l.has_contrast()) return;  // the image view computes it; layer_changed follows
  const RenderOptions o{0, l.contrast_min, l.contrast_max, l.colormap,
                        l.outline && canonical_colormap(l.colormap) == QLatin1String("labels")};
  HostArray side;  // a file-backed stack's xz or yz plane, from the pass's cache
  if (l.file_backed() && p != Plane::xy) {
    const auto index = std::size_t(index_of(p));
    side = cached_side_plane(l.file, p == Plane::xz, index);
    if (!side.valid()) {
      read_side_planes(l);  // request() again once it is read
      return;
    }
    if (!side_token_ && int(index) != (p == Plane::xz ? read_y_ : read_x_)) {
      pass_->note(tr("%1 at %2 %3: from the cache (the file was not read again)")
                      .arg(QLatin1String(plane_name(p)))
                      .arg(QLatin1String(p == Plane::xz ? "y" : "x"))
                      .arg(index));
    }
  }
  const quint64 req = s.wanted;
  s.pending = req;
  struct Result {
    QImage image;
    std::size_t pulled = 0;
    bool skipped = false;
  };
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? HostArray{} : l.host, file = l.file, dev = host_.device(),
       p, index = index_of(p), o, req, latest = s.latest, side]() {
        Result r;
        if (latest->load() != req) {  // superseded before it started: nobody would see it
          r.skipped = true;
          return r;
        }
        if (side.valid()) {
          r.image = gpix::ui::render(side, dev, o, &r.pulled);
          return r;
        }
        if (!a.valid() && !h.valid() && file) {
          // A file-backed stack's xy plane is one plane of the file.
          r.image = gpix::ui::render(file->plane(std::size_t(index)), dev, o, &r.pulled);
          return r;
        }
        r.image = render_plane(a, h, dev, p, index, o, &r.pulled);
        return r;
      },
      [this, p, req](const detail::Outcome<Result>& out) {
        State& st = state_[at(p)];
        st.pending = 0;
        if (!out.value) {
          st.failed = req;
          host_.show_status(tr("Orthogonal views: %1").arg(out.error));
        } else if (!out.value->skipped && req > st.shown) {
          pulled_ += out.value->pulled;
          st.image = out.value->image;
          st.shown = req;
          panes_[at(p)]->update();
          emit frame_ready(p);
        }
        if (st.shown != st.wanted) request(p);
      });
}

void OrthoViews::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  request(Plane::xz);  // a file-backed stack's pass waited for this
  request(Plane::yz);
}

void OrthoViews::read_side_planes(const Layer& l) {
  if (side_token_ && pass_file_ == l.file.get() && pass_y_ == y_ && pass_x_ == x_) return;
  if (!isVisible()) return;  // a hidden window must not read the file; showEvent asks again
  // A newer point: the pass for the old one stops at its next slab (start() cancels it).
  pass_y_ = y_;
  pass_x_ = x_;
  pass_file_ = l.file.get();
  const auto token = pass_->start(tr("xz and yz planes (y %1, x %2)").arg(y_).arg(x_));
  side_token_ = token;
  const int y = y_, x = x_;
  detail::run_async(
      this, detail::long_pool(),
      [file = l.file, y, x, token]() {
        stack_side_planes(file, std::size_t(y), std::size_t(x), &token->cancel,
                          detail::PassToken::progress_of(token));
        return true;
      },
      [this, token, y, x](const detail::Outcome<bool>& out) {
        if (token != side_token_) return;  // a newer pass replaced it
        side_token_.reset();
        pass_file_ = nullptr;
        if (!out.value) {
          // Cancelled or failed: the side panes keep what they showed and wait for a new point
          // (or Retry).
          for (Plane p : {Plane::xz, Plane::yz}) state_[at(p)].failed = state_[at(p)].wanted;
          if (!token->cancel) {
            pass_->finish(token, tr("xz and yz planes: %1").arg(out.error), true);
            host_.show_status(tr("Orthogonal views: %1").arg(out.error));
          }
          for (OrthoPane* pane : panes_) pane->update();
          return;
        }
        read_y_ = y;
        read_x_ = x;
        pass_->finish(token, tr("xz and yz planes read from the file"));
        request(Plane::xz);
        request(Plane::yz);
      });
}

void OrthoViews::set_cursor(int x, int y, int z) {
  const Layer l = host_.layer(layer_);
  if (!l.valid() || l.shape().ndim() != 3) return;
  const Shape s = l.shape();
  x = std::clamp(x, 0, int(s.width()) - 1);
  y = std::clamp(y, 0, int(s.height()) - 1);
  z = std::clamp(z, 0, int(s.depth()) - 1);
  if (x == x_ && y == y_ && z == z_) return;
  const bool dx = x != x_, dy = y != y_, dz = z != z_;
  x_ = x;
  y_ = y;
  z_ = z;
  if (dz) invalidate(Plane::xy);
  if (dy) invalidate(Plane::xz);
  if (dx) invalidate(Plane::yz);
  for (OrthoPane* pane : panes_) pane->update();  // the crosshair moved everywhere
  update_info();
  emit cursor_changed(x, y, z);
  if (dz) emit slice_changed(z);
}

void OrthoViews::pane_pressed(Plane p, int column, int row) {
  if (p == Plane::xy) set_cursor(column, row, z_);
  if (p == Plane::xz) set_cursor(column, y_, row);
  if (p == Plane::yz) set_cursor(x_, row, column);
}

void OrthoViews::pane_wheel(Plane p, int steps) {
  if (p == Plane::xy) set_cursor(x_, y_, z_ + steps);
  if (p == Plane::xz) set_cursor(x_, y_ + steps, z_);
  if (p == Plane::yz) set_cursor(x_ + steps, y_, z_);
}

void OrthoViews::resizeEvent(QResizeEvent*) {
  layout_panes();
}

void OrthoViews::layout_panes() {
  const Layer l = host_.layer(layer_);
  const bool shown = l.valid() && l.shape().ndim() == 3;
  for (OrthoPane* p : panes_) p->setVisible(shown);
  if (!shown) {
    info_->setGeometry(rect().adjusted(12, 12, -12, -12));
    pass_->hide();
    return;
  }
  // Physical extents: one screen scale for all three panes keeps shared axes aligned.
  const Shape s = l.shape();
  const std::vector<double> sp = l.spacing_or_default();
  const double px = double(s.width()) * sp[2], py = double(s.height()) * sp[1],
               pz = double(s.depth()) * sp[0];
  const double k =
      std::max(1e-9, std::min((width() - kGap - 8) / (px + pz), (height() - kGap - 8) / (py + pz)));
  const int wx = std::max(1, int(std::lround(px * k))), hy = std::max(1, int(std::lround(py * k)));
  const int dz = std::max(1, int(std::lround(pz * k)));
  panes_[at(Plane::xy)]->setGeometry(4, 4, wx, hy);
  panes_[at(Plane::yz)]->setGeometry(4 + wx + kGap, 4, dz, hy);
  panes_[at(Plane::xz)]->setGeometry(4, 4 + hy + kGap, wx, dz);
  info_->setGeometry(4 + wx + kGap + 4, 4 + hy + kGap, std::max(10, width() - wx - kGap - 12),
                     std::max(10, height() - hy - kGap - 8));
  // The file-backed pass's line: at the bottom of the corner beside xz, under the point.
  const int ix = 4 + wx + kGap + 4;
  pass_->setGeometry(ix, std::max(4 + hy + kGap + 40, height() - 44),
                     std::max(10, width() - ix - 4), 40);
  pass_->raise();
}

void OrthoViews::update_info() {
  const Layer l = host_.layer(layer_);
  if (!l.valid()) {
    info_->setText(
        tr("Orthogonal views need a 3D layer (a stack); open one or pick it in the "
           "layer list."));
    return;
  }
  QString text = QStringLiteral("%1\nx %2  y %3  z %4").arg(l.name).arg(x_).arg(y_).arg(z_);
  if (l.calibrated()) {
    const std::vector<double> sp = l.spacing_or_default();
    text += QStringLiteral("\n%1, %2, %3 %4")
                .arg(x_ * sp[2], 0, 'g', 5)
                .arg(y_ * sp[1], 0, 'g', 5)
                .arg(z_ * sp[0], 0, 'g', 5)
                .arg(display_unit(l.unit));
  }
  info_->setText(text);
}

}  // namespace gpix::ui
