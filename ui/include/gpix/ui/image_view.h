#pragma once
// The image view: every visible layer composited bottom to top (each with its own contrast
// limits, colour map and opacity), zoom, pan, fit, 1:1 and a slice for 3D stacks.
#include <QHash>
#include <QImage>
#include <QPointF>
#include <QWidget>

#include "gpix/plugin_api.h"

namespace gpix::ui {

class ImageView : public QWidget {
  Q_OBJECT
 public:
  explicit ImageView(gpix::plugin::HostContext& host, QWidget* parent = nullptr);

  double zoom() const { return zoom_; }  // screen (logical) pixels per image pixel
  int slice() const { return slice_; }
  int depth() const;  // slices of the deepest layer (1 for 2D)
  // The image pixel (x, y) under a widget position.
  QPointF image_pos(QPointF widget_pos) const;
  // "x 12  y 40  z 3  value 1234 (layer)" for a widget position; empty outside the image.
  QString describe(QPointF widget_pos);
  QSize image_size() const;

 public slots:
  void set_slice(int z);
  void set_zoom(double zoom, QPointF anchor = QPointF(-1, -1));
  void fit();
  void one_to_one();  // one image pixel per device pixel (HiDPI-correct)
  void zoom_in() { set_zoom(zoom_ * 1.25); }
  void zoom_out() { set_zoom(zoom_ / 1.25); }

 signals:
  void cursor_info(const QString& text);
  void slice_changed(int z);
  void depth_changed(int depth);
  void zoom_changed(double zoom);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  void on_layer_changed(int id);
  void ensure_contrast(int id);
  void update_depth();
  QImage image_of(int id);

  gpix::plugin::HostContext& host_;
  QHash<int, QImage> cache_;  // rendered slice per layer; cleared when anything changes
  double zoom_ = 1.0;
  QPointF offset_;  // widget position of image pixel (0, 0)
  int slice_ = 0;
  int depth_ = 1;
  bool fitted_ = false;
  bool auto_fit_ = true;  // follow the widget's size until the user zooms or pans
  bool panning_ = false;
  QPointF last_mouse_;
};

}  // namespace gpix::ui
