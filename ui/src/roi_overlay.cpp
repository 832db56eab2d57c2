#include "gpix/ui/roi_overlay.h"

#include <QAction>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QUndoStack>
#include <algorithm>
#include <cmath>

#include "gpix/ui/image_view.h"
#include "gpix/ui/roi_commands.h"

namespace gpix::ui {
namespace {

constexpr double kHandle = 6;  // screen pixels within which a press takes a handle

const QColor kRoiColour(255, 210, 0);
const QColor kSelectedColour(0, 220, 255);
const QColor kLineColour(255, 80, 200);

QPointF snapped(QPointF p) {
  return {std::round(p.x()), std::round(p.y())};
}

double distance_to_segment(QPointF p, QPointF a, QPointF b) {
  const QPointF d = b - a;
  const double l2 = QPointF::dotProduct(d, d);
  const double t = l2 > 0 ? std::clamp(QPointF::dotProduct(p - a, d) / l2, 0.0, 1.0) : 0.0;
  const QPointF q = a + d * t - p;
  return std::hypot(q.x(), q.y());
}

}  // namespace

RoiOverlay::RoiOverlay(Workspace& host, ImageView* view)
    : QWidget(view), host_(host), view_(view), tools_(new QActionGroup(this)) {
  setObjectName(QStringLiteral("roi_overlay"));
  setAttribute(Qt::WA_TranslucentBackground);
  setAttribute(Qt::WA_NoSystemBackground);
  setMouseTracking(true);
  resize(view->size());
  view->installEventFilter(this);

  struct ToolInfo {
    Tool tool;
    QString text;
    QString short_text;
    Qt::Key key;
    const char* name;
  };
  const ToolInfo infos[] = {
      {Tool::pointer, tr("&Pointer (select, move, pan)"), tr("Pointer"), Qt::Key_S, "tool_pointer"},
      {Tool::rectangle, tr("&Rectangle ROI"), tr("Rectangle"), Qt::Key_R, "tool_rectangle"},
      {Tool::ellipse, tr("&Ellipse ROI"), tr("Ellipse"), Qt::Key_E, "tool_ellipse"},
      {Tool::polygon, tr("P&olygon ROI (double-click or Enter closes)"), tr("Polygon"), Qt::Key_P,
       "tool_polygon"},
      {Tool::line, tr("&Line profile"), tr("Line"), Qt::Key_L, "tool_line"},
  };
  for (const ToolInfo& t : infos) {
    QAction* a = tools_->addAction(t.text);
    a->setObjectName(QString::fromLatin1(t.name));
    a->setIconText(t.short_text);  // tool bars and buttons
    a->setToolTip(QStringLiteral("%1 (%2)").arg(QString(t.text).remove(QLatin1Char('&')),
                                                QKeySequence(t.key).toString()));
    a->setCheckable(true);
    a->setShortcut(QKeySequence(t.key));
    a->setData(int(t.tool));
    a->setChecked(t.tool == Tool::pointer);
    connect(a, &QAction::triggered, this, [this, tool = t.tool] { set_tool(tool); });
  }
  // The shortcuts work in any window that shows the view, with or without a menu.
  addActions(tools_->actions());

  connect(view_, &ImageView::slice_changed, this, [this] {
    cancel_drawing();
    update();
  });
  connect(view_, &ImageView::zoom_changed, this, qOverload<>(&QWidget::update));
  connect(&host_, &Workspace::current_layer_changed, this, [this] {
    cancel_drawing();
    select(0);
    update();
  });
  // Layer ids are never reused, so a layer that comes back under its id (its removal undone)
  // is the one whose ROIs were kept.
  connect(&host_, &Workspace::layer_removed, this, [this](int id) {
    if (rois_.contains(id)) {
      removed_.insert(id, rois_.take(id));
      emit rois_changed(id);
    }
    update();
  });
  connect(&host_, &Workspace::layer_added, this, [this](int id) {
    if (removed_.contains(id)) set_rois(id, removed_.take(id));
  });
}

QAction* RoiOverlay::tool_action(Tool t) const {
  for (QAction* a : tools_->actions()) {
    if (a->data().toInt() == int(t)) return a;
  }
  return nullptr;
}

void RoiOverlay::set_tool(Tool tool) {
  cancel_drawing();
  tool_ = tool;
  if (QAction* a = tool_action(tool)) a->setChecked(true);
  if (tool == Tool::pointer) {
    unsetCursor();
  } else {
    setCursor(Qt::CrossCursor);
  }
  emit tool_changed(tool);
}

int RoiOverlay::roi_layer() const {
  int id = host_.current_layer();
  if (id < 0 && !host_.layer_ids().isEmpty()) id = host_.layer_ids().last();
  return id;
}

int RoiOverlay::add_roi(int layer, Roi roi) {
  QList<Roi>& list = rois_[layer];
  int id = 1;
  for (const Roi& r : list) id = std::max(id, r.id + 1);
  roi.id = id;
  list.append(roi);
  emit rois_changed(layer);
  update();
  return id;
}

void RoiOverlay::set_rois(int layer, const QList<Roi>& rois) {
  rois_[layer] = rois;
  if (layer == roi_layer()) select(0);
  emit rois_changed(layer);
  update();
}

void RoiOverlay::update_roi(int layer, const Roi& roi) {
  for (Roi& r : rois_[layer]) {
    if (r.id == roi.id) r = roi;
  }
  emit rois_changed(layer);
  update();
}

void RoiOverlay::remove_roi(int layer, int id) {
  QList<Roi>& list = rois_[layer];
  list.removeIf([id](const Roi& r) { return r.id == id; });
  if (layer == roi_layer() && selected_ == id) select(0);
  emit rois_changed(layer);
  update();
}

std::optional<Roi> RoiOverlay::roi(int layer, int id) const {
  for (const Roi& r : rois_.value(layer)) {
    if (r.id == id) return r;
  }
  return std::nullopt;
}

void RoiOverlay::commit(int layer, const QList<Roi>& before, int roi, const QString& text) {
  const QList<Roi> after = rois_.value(layer);
  if (after == before) return;  // a click that moved nothing
  host_.undo_stack()->push(new RoiCommand(this, layer, before, after, roi, text));
}

void RoiOverlay::delete_roi(int layer, int id) {
  const QList<Roi> before = rois(layer);
  remove_roi(layer, id);
  commit(layer, before, id, tr("Delete ROI %1").arg(id));
}

void RoiOverlay::edit_roi(int layer, const Roi& roi, const QString& what) {
  const QList<Roi> before = rois(layer);
  update_roi(layer, roi);
  commit(layer, before, roi.id, what);
}

void RoiOverlay::select(int id) {
  if (id == selected_) return;
  selected_ = id;
  emit selection_changed(id);
  update();
}

void RoiOverlay::set_line(QPointF a, QPointF b) {
  Roi r;
  r.kind = RoiKind::line;
  r.points = QPolygonF({a, b});
  line_ = r;
  emit line_changed();
  update();
}

void RoiOverlay::set_line_width(int width) {
  line_width_ = std::max(1, width);
  update();
}

void RoiOverlay::clear_line() {
  line_.reset();
  emit line_changed();
  update();
}

QPointF RoiOverlay::image_pos(QPointF widget_pos) const {
  return view_->image_pos(widget_pos);
}

QPointF RoiOverlay::widget_pos(QPointF image_pos) const {
  // image_pos(w) = (w - offset) / zoom, so offset = -image_pos(0) * zoom.
  const double zoom = view_->zoom();
  return image_pos * zoom - view_->image_pos(QPointF(0, 0)) * zoom;
}

int RoiOverlay::new_plane() const {
  const Layer l = host_.layer(roi_layer());
  if (all_planes_ || !l.valid() || l.shape().ndim() != 3) return -1;
  return std::min(view_->slice(), int(l.shape().depth()) - 1);
}

bool RoiOverlay::visible_here(const Roi& r) const {
  if (r.plane < 0) return true;
  const Layer l = host_.layer(roi_layer());
  const int depth = l.valid() && l.shape().ndim() == 3 ? int(l.shape().depth()) : 1;
  return r.plane == std::min(view_->slice(), depth - 1);
}

void RoiOverlay::cancel_drawing() {
  if (!drawing_) return;
  const bool line = drawing_->kind == RoiKind::line;
  drawing_.reset();
  // A line's drag set the line as it went: it stays, and says so now that no drag is on
  // (the main window opens the profile dock then).
  if (line && line_) emit line_changed();
  update();
}

void RoiOverlay::add_drawn(const Roi& r) {
  const int layer = roi_layer();
  const QList<Roi> before = rois(layer);
  const int id = add_roi(layer, r);
  select(id);
  commit(layer, before, id, tr("Draw %1 ROI %2").arg(kind_name(r.kind)).arg(id));
}

void RoiOverlay::finish_polygon() {
  if (!drawing_ || drawing_->kind != RoiKind::polygon) return;
  Roi r = *drawing_;
  drawing_.reset();
  // A double-click's first click already placed its vertex; drop repeats of one point.
  QPolygonF pts;
  for (const QPointF& p : r.points) {
    if (pts.isEmpty() || QLineF(pts.last(), p).length() > 1e-9) pts << p;
  }
  r.points = pts;
  if (r.points.size() >= 3 && roi_layer() >= 0) add_drawn(r);
  update();
}

std::optional<RoiOverlay::Grab> RoiOverlay::grab_at(QPointF w) const {
  const QPointF ip = image_pos(w);
  auto near = [&](QPointF image_point) {
    const QPointF d = widget_pos(image_point) - w;
    return std::hypot(d.x(), d.y()) <= kHandle;
  };
  if (line_) {
    for (int i = 0; i < 2; ++i) {
      if (near(line_->points[i])) return Grab{0, true, i, ip, line_->points, {}};
    }
    if (distance_to_segment(w, widget_pos(line_->points[0]), widget_pos(line_->points[1])) <=
        kHandle)
      return Grab{0, true, -1, ip, line_->points, {}};
  }
  const QList<Roi> list = rois_.value(roi_layer());
  // Handles of the selected ROI first, then the topmost ROI under the cursor.
  for (const Roi& r : list) {
    if (r.id != selected_ || !visible_here(r)) continue;
    for (int i = 0; i < r.points.size(); ++i) {
      if (near(r.points[i])) return Grab{r.id, false, i, ip, r.points, {}};
    }
  }
  for (auto it = list.rbegin(); it != list.rend(); ++it) {
    if (visible_here(*it) && it->contains(ip)) return Grab{it->id, false, -1, ip, it->points, {}};
  }
  return std::nullopt;
}

void RoiOverlay::apply_grab(QPointF ip) {
  const Grab& g = *grab_;
  QPolygonF pts = g.points;
  const bool snap = !g.line && g.roi != 0 && [&] {
    const auto r = roi(roi_layer(), g.roi);
    return r && (r->kind == RoiKind::rectangle || r->kind == RoiKind::ellipse);
  }();
  QPointF delta = ip - g.start;
  if (snap) delta = snapped(delta);  // boxes stay on pixel edges
  if (g.handle >= 0) {
    pts[g.handle] = snap ? snapped(ip) : ip;
  } else {
    pts.translate(delta);
  }
  if (g.line) {
    set_line(pts[0], pts[1]);
    return;
  }
  if (auto r = roi(roi_layer(), g.roi)) {
    r->points = pts;
    update_roi(roi_layer(), *r);
  }
}

void RoiOverlay::mousePressEvent(QMouseEvent* e) {
  const QPointF ip = image_pos(e->position());
  if (e->button() != Qt::LeftButton) {
    e->ignore();  // the view pans with the middle button
    return;
  }
  switch (tool_) {
    case Tool::pointer:
      grab_ = grab_at(e->position());
      if (grab_) grab_->before = rois(roi_layer());
      if (!grab_) {
        select(0);
        e->ignore();  // the view pans and picks
        return;
      }
      if (!grab_->line) select(grab_->roi);
      return;
    case Tool::rectangle:
    case Tool::ellipse:
    case Tool::line: {
      if (roi_layer() < 0) return;
      Roi r;
      r.kind = tool_ == Tool::rectangle ? RoiKind::rectangle
               : tool_ == Tool::ellipse ? RoiKind::ellipse
                                        : RoiKind::line;
      const QPointF p = r.kind == RoiKind::line ? ip : snapped(ip);
      r.points = QPolygonF({p, p});
      r.plane = new_plane();
      drawing_ = r;
      update();
      return;
    }
    case Tool::polygon:
      if (roi_layer() < 0) return;
      if (!drawing_) {
        Roi r;
        r.kind = RoiKind::polygon;
        r.plane = new_plane();
        drawing_ = r;
      }
      drawing_->points << ip;
      hover_ = ip;
      update();
      return;
  }
}

void RoiOverlay::mouseMoveEvent(QMouseEvent* e) {
  const QPointF ip = image_pos(e->position());
  hover_ = ip;
  if (grab_) {
    apply_grab(ip);
    return;
  }
  if (drawing_ && drawing_->kind != RoiKind::polygon) {
    drawing_->points[1] = drawing_->kind == RoiKind::line ? ip : snapped(ip);
    if (drawing_->kind == RoiKind::line) set_line(drawing_->points[0], drawing_->points[1]);
    update();
    return;
  }
  if (drawing_ && drawing_->kind == RoiKind::polygon) update();
  e->ignore();  // the view's readout follows the cursor
}

void RoiOverlay::mouseReleaseEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) {
    e->ignore();
    return;
  }
  if (grab_) {
    const Grab g = *grab_;
    grab_.reset();
    // The whole drag is one step.
    if (!g.line) {
      commit(roi_layer(), g.before, g.roi,
             g.handle >= 0 ? tr("Reshape ROI %1").arg(g.roi) : tr("Move ROI %1").arg(g.roi));
    }
    return;
  }
  if (!drawing_ || drawing_->kind == RoiKind::polygon) {
    if (!drawing_) e->ignore();
    return;
  }
  Roi r = *drawing_;
  drawing_.reset();
  const QPointF ip = image_pos(e->position());
  r.points[1] = r.kind == RoiKind::line ? ip : snapped(ip);
  if (r.kind == RoiKind::line) {
    set_line(r.points[0], r.points[1]);
  } else if (r.bounds().width() >= 1 && r.bounds().height() >= 1 && roi_layer() >= 0) {
    add_drawn(r);
  }
  update();
}

void RoiOverlay::mouseDoubleClickEvent(QMouseEvent* e) {
  if (tool_ == Tool::polygon && e->button() == Qt::LeftButton && drawing_) {
    finish_polygon();
    return;
  }
  e->ignore();
}

bool RoiOverlay::eventFilter(QObject* watched, QEvent* event) {
  if (watched != view_) return false;
  if (event->type() == QEvent::Resize) {
    resize(view_->size());
    return false;
  }
  if (event->type() != QEvent::KeyPress && event->type() != QEvent::ShortcutOverride) return false;
  auto* k = static_cast<QKeyEvent*>(event);
  const bool removes = (k->key() == Qt::Key_Delete || k->key() == Qt::Key_Backspace) && selected_;
  const bool draws = drawing_ && (k->key() == Qt::Key_Escape || k->key() == Qt::Key_Return ||
                                  k->key() == Qt::Key_Enter);
  const bool deselects = k->key() == Qt::Key_Escape && selected_;
  if (event->type() == QEvent::ShortcutOverride) {
    // Take these keys before the window's shortcuts (Delete removes the layer there).
    if (removes || draws || deselects) {
      event->accept();
      return true;
    }
    return false;
  }
  if (draws) {
    if (k->key() == Qt::Key_Escape) {
      cancel_drawing();
    } else {
      finish_polygon();
    }
    return true;
  }
  if (removes) {
    delete_roi(roi_layer(), selected_);
    return true;
  }
  if (deselects) {
    select(0);
    return true;
  }
  return false;
}

void RoiOverlay::draw_roi(QPainter& p, const Roi& r, bool selected) const {
  const QColor colour = r.kind == RoiKind::line ? kLineColour
                        : selected              ? kSelectedColour
                                                : kRoiColour;
  QPolygonF w;
  for (const QPointF& pt : r.points) w << widget_pos(pt);
  QPainterPath path;
  switch (r.kind) {
    case RoiKind::rectangle:
      path.addRect(w.boundingRect());
      break;
    case RoiKind::ellipse:
      path.addEllipse(w.boundingRect());
      break;
    case RoiKind::polygon:
      path.addPolygon(w);
      if (r.id != 0) path.closeSubpath();  // drawn ones are closed; the one being drawn is open
      break;
    case RoiKind::line:
      path.moveTo(w[0]);
      path.lineTo(w[1]);
      break;
  }
  // A dark rim under the colour: visible on any image.
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(QColor(0, 0, 0, 180), 3.5));
  p.drawPath(path);
  p.setPen(QPen(colour, 1.5, r.id == 0 && r.kind != RoiKind::line ? Qt::DashLine : Qt::SolidLine));
  p.drawPath(path);
  if (selected || r.kind == RoiKind::line) {
    p.setPen(QPen(Qt::black, 1));
    p.setBrush(colour);
    for (const QPointF& pt : w) p.drawRect(QRectF(pt - QPointF(3, 3), QSizeF(6, 6)));
  }
  if (r.id != 0) {
    const QRectF b = w.boundingRect();
    const QString label = QString::number(r.id);
    const QPointF at = b.topLeft() + QPointF(2, -4);
    p.setPen(QColor(0, 0, 0, 220));
    for (const QPointF d : {QPointF(1, 1), QPointF(-1, -1), QPointF(1, -1), QPointF(-1, 1)})
      p.drawText(at + d, label);
    p.setPen(colour);
    p.drawText(at, label);
  }
}

void RoiOverlay::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  QFont f = p.font();
  f.setBold(true);
  p.setFont(f);
  for (const Roi& r : rois_.value(roi_layer())) {
    if (visible_here(r)) draw_roi(p, r, r.id == selected_);
  }
  if (line_) {
    if (line_width_ > 1) {
      // The band the profile averages over.
      QPen band(QColor(255, 80, 200, 70), line_width_ * view_->zoom(), Qt::SolidLine, Qt::FlatCap);
      p.setPen(band);
      p.drawLine(widget_pos(line_->points[0]), widget_pos(line_->points[1]));
    }
    draw_roi(p, *line_, false);
  }
  if (drawing_ && drawing_->kind != RoiKind::line) {
    Roi r = *drawing_;
    if (r.kind == RoiKind::polygon) r.points << hover_;  // the rubber band to the cursor
    draw_roi(p, r, false);
  }
}

}  // namespace gpix::ui
