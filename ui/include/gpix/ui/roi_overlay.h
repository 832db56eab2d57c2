#pragma once
// The ROI tools over an ImageView: a transparent child widget of the same size that draws the
// ROIs of the current layer and, while a tool is chosen, takes the left mouse button.
//
// Tools: pointer (select, move, drag a handle; a press on no ROI falls through to the view,
// which pans), rectangle and ellipse (drag; corners snap to pixel edges), polygon (a click per
// vertex; double-click or Enter closes it, Esc cancels) and line (drag; the line profile's
// line, one per view). The middle button and the wheel always reach the view (pan, zoom).
// Delete or Backspace removes the selected ROI (Delete without a selected ROI is left to the
// window, where it removes the layer).
//
// ROIs are kept per layer (by layer id) and per slice: a ROI drawn on a stack belongs to the
// slice it was drawn on and is shown there only, unless "all slices" is on when it is drawn
// (or set later), in which case it covers every slice (its statistics and crops the whole
// stack). Everything here runs on the GUI thread and touches no device.
//
// What a user does to ROIs (drawing, dragging, deleting, the panel's "All slices") is an undo
// step on the workspace's undo stack (roi_commands.h), one per gesture; add_roi, set_rois,
// update_roi and remove_roi change the ROIs directly (sessions, the undo steps themselves).
// A removed layer's ROIs are kept while its removal can be undone, and come back with it.
#include <QActionGroup>
#include <QHash>
#include <QList>
#include <QWidget>
#include <optional>

#include "gpix/ui/roi.h"
#include "gpix/ui/workspace.h"

class QAction;

namespace gpix::ui {

class ImageView;

class RoiOverlay : public QWidget {
  Q_OBJECT
 public:
  enum class Tool { pointer, rectangle, ellipse, polygon, line };

  // Becomes a child of `view`, covering it.
  RoiOverlay(Workspace& host, ImageView* view);

  Tool tool() const { return tool_; }
  // The checkable actions for the tools (one group; shortcuts S, R, E, P, L), for menus and
  // tool bars.
  QList<QAction*> tool_actions() const { return tools_->actions(); }
  QAction* tool_action(Tool t) const;

  // The layer whose ROIs are shown and drawn: the current layer, else the topmost (-1: none).
  int roi_layer() const;
  QList<Roi> rois(int layer) const { return rois_.value(layer); }
  // Adds a ROI (its id is assigned: the next free one of the layer); returns the id.
  int add_roi(int layer, Roi roi);
  void set_rois(int layer, const QList<Roi>& rois);
  // Replaces the ROI of the same id.
  void update_roi(int layer, const Roi& roi);
  void remove_roi(int layer, int id);
  std::optional<Roi> roi(int layer, int id) const;
  // The same as one undo step each (what the tools and the ROI panel call).
  void delete_roi(int layer, int id);
  void edit_roi(int layer, const Roi& roi, const QString& what);
  // Every layer's ROIs (sessions).
  const QHash<int, QList<Roi>>& all_rois() const { return rois_; }

  int selected() const { return selected_; }  // ROI id in roi_layer(), 0 when none
  void select(int id);

  // New ROIs on stacks cover every slice.
  bool all_planes() const { return all_planes_; }
  // A shape or the line is being drawn (the mouse button is down).
  bool drawing() const { return drawing_.has_value(); }
  void set_all_planes(bool on) { all_planes_ = on; }
  // The plane a ROI drawn now gets: -1 with all_planes() or on a 2D layer, else the slice shown.
  int new_plane() const;

  // The profile line (kind line), if any; it belongs to the view, not to a layer.
  std::optional<Roi> line() const { return line_; }
  // The profile's width in pixels, drawn as a band around the line.
  void set_line_width(int width);
  void set_line(QPointF a, QPointF b);
  void clear_line();

  // Image position <-> widget position (the view's zoom and pan).
  QPointF widget_pos(QPointF image_pos) const;
  QPointF image_pos(QPointF widget_pos) const;

 public slots:
  void set_tool(Tool tool);
  // Drops the shape being drawn (Esc).
  void cancel_drawing();

 signals:
  void rois_changed(int layer);
  void selection_changed(int id);
  void line_changed();
  void tool_changed(Tool tool);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  // What a press in the pointer tool took hold of.
  struct Grab {
    int roi = 0;        // ROI id (0: the line when `line` is set)
    bool line = false;  // the profile line
    int handle = -1;    // point index dragged, -1: the whole shape moves
    QPointF start;      // image position of the press
    QPolygonF points;   // the shape's points at the press
    QList<Roi> before;  // the layer's ROIs at the press, for the undo step
  };
  // Pushes the undo step from `before` to the layer's ROIs now, when they differ.
  void commit(int layer, const QList<Roi>& before, int roi, const QString& text);
  bool visible_here(const Roi& r) const;
  std::optional<Grab> grab_at(QPointF widget_pos) const;
  void finish_polygon();
  // Adds a ROI the user drew, selects it and records the undo step.
  void add_drawn(const Roi& r);
  void apply_grab(QPointF image_pos);
  void draw_roi(QPainter& p, const Roi& r, bool selected) const;

  Workspace& host_;
  ImageView* view_;
  QActionGroup* tools_;
  Tool tool_ = Tool::pointer;
  QHash<int, QList<Roi>> rois_;
  QHash<int, QList<Roi>> removed_;  // the ROIs of removed layers, by the layer's id
  int selected_ = 0;
  bool all_planes_ = false;
  std::optional<Roi> line_;
  int line_width_ = 1;
  // Being drawn: rectangle/ellipse/line drags and the polygon's vertices so far.
  std::optional<Roi> drawing_;
  QPointF hover_;  // image position of the cursor, for the polygon's rubber band
  std::optional<Grab> grab_;
};

}  // namespace gpix::ui
