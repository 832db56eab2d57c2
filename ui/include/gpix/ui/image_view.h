#pragma once
// The image view: every visible layer composited bottom to top (each with its own contrast
// limits, colour map and opacity), zoom, pan, fit, 1:1 and a slice for 3D stacks.
//
// The GUI thread never waits on the device: frames (gpix::render_rgba of the plane on screen,
// only its RGBA read back), automatic contrast limits and pixel values for the readout are
// computed on worker threads and land through queued signals. Until a layer's new frame
// arrives the view keeps showing its previous one and says "computing".
#include <QHash>
#include <QImage>
#include <QPointF>
#include <QRect>
#include <QWidget>
#include <atomic>
#include <cstddef>
#include <memory>

#include "gpix/ui/workspace.h"

namespace gpix::ui {

class ImageView : public QWidget {
  Q_OBJECT
 public:
  explicit ImageView(Workspace& host, QWidget* parent = nullptr);

  double zoom() const { return zoom_; }  // screen (logical) pixels per image pixel
  int slice() const { return slice_; }
  // Whether the view fits the image to the widget and follows its size (until the user zooms
  // or pans; fit() again).
  bool fitted() const { return auto_fit_; }
  int depth() const;  // slices of the deepest layer (1 for 2D)
  // The image pixel (x, y) under a widget position.
  QPointF image_pos(QPointF widget_pos) const;
  // "x 12  y 40  z 3  value 1234 (layer)" for a widget position; empty outside the image.
  // The value comes from a small tile of pixels read in the background: until it arrives
  // the text says "value ..." and cursor_info() is emitted again with the value.
  QString describe(QPointF widget_pos);
  QSize image_size() const;

  // Whether a frame, contrast limits or pixel values are still being computed.
  bool busy() const;
  // The box (image pixels) drawn over the image on slices z_first..z_last, e.g. a picked label's
  // bounding box; an empty box draws nothing.
  QRectF highlight() const { return highlight_; }
  // The frame shown for a layer (null before the first one arrived).
  QImage frame(int id) const { return frames_.value(id).image; }
  // The scale bar: a round physical length ({1, 2, 5} x 10^k of the layer's unit) drawn
  // 60 to 150 screen pixels long at the bottom right, for the current layer where it is
  // calibrated, else the topmost visible calibrated layer. `pixels` is its length in widget
  // (logical) pixels; an empty label when no shown layer has a unit or the bar is off.
  struct ScaleBar {
    double length = 0;  // in the layer's unit
    double pixels = 0;
    QString label;  // "10 µm"
  };
  ScaleBar scale_bar() const;
  bool scale_bar_visible() const { return scale_bar_on_; }

  // Bytes read back from the device for display since construction (frames and readout
  // tiles): what the view costs in transfers, for diagnostics and tests.
  std::size_t bytes_pulled() const { return bytes_pulled_; }

 public slots:
  void set_slice(int z);
  void set_zoom(double zoom, QPointF anchor = QPointF(-1, -1));
  void fit();
  void one_to_one();  // one image pixel per device pixel (HiDPI-correct)
  void zoom_in() { set_zoom(zoom_ * 1.25); }
  void zoom_out() { set_zoom(zoom_ / 1.25); }
  void set_scale_bar_visible(bool on);
  // Pans (zoom unchanged) so that image position (x, y) is at the centre of the view.
  void center_on(QPointF image_pos);
  void set_highlight(const QRectF& box, int z_first = 0, int z_last = 0);
  void clear_highlight() { set_highlight(QRectF()); }

 signals:
  void cursor_info(const QString& text);
  void slice_changed(int z);
  void depth_changed(int depth);
  void zoom_changed(double zoom);
  // A layer's new frame is on screen.
  void frame_ready(int id);
  // A left click (press and release without dragging) on image pixel (x, y) of slice z; may be
  // outside the image.
  void pixel_clicked(int x, int y, int z);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void resizeEvent(QResizeEvent*) override;

 private:
  // What the view holds per layer. `wanted` is bumped by every change of the layer or the
  // slice; a frame is requested when `shown` lags behind it and no request for it is out.
  struct Frame {
    QImage image;         // the last frame that arrived, shown until a newer one does
    quint64 shown = 0;    // request number of `image`
    quint64 wanted = 1;   // request number the current settings need
    quint64 pending = 0;  // newest request in flight (0: none)
    quint64 failed = 0;   // request number that failed (not retried until a change)
    quint64 data = 1;     // bumped on every change of the layer (the readout tile's key)
    bool contrast_pending = false;
    // The newest request, read by workers so that frames nobody will see are skipped.
    std::shared_ptr<std::atomic<quint64>> latest = std::make_shared<std::atomic<quint64>>(1);
  };
  // Pixel values around the cursor, read in the background for the readout.
  struct Tile {
    int id = -1;
    quint64 data = 0;
    int z = 0;
    QRect box;               // in image pixels
    gpix::HostArray values;  // (box.height(), box.width())
  };

  void on_layer_changed(int id);
  // The readout again for the last cursor position, after what it shows changed without the
  // mouse moving: the slice (keys, Ctrl+wheel, the slider), the zoom, the current layer or a
  // layer's pixels. Nothing before the cursor has been over the view.
  void refresh_readout();
  void invalidate(int id);
  void request_frame(int id);
  void ensure_contrast(int id);
  void request_tile(int id, int z, int x, int y);
  void update_depth();
  int slice_of(const Layer& l) const;

  Workspace& host_;
  QHash<int, Frame> frames_;
  quint64 next_request_ = 1;
  Tile tile_;
  bool tile_pending_ = false;
  QPointF last_cursor_{-1, -1};
  std::size_t bytes_pulled_ = 0;
  double zoom_ = 1.0;
  QImage compose_;  // paintEvent's layers put together where one is additive
  QPointF offset_;  // widget position of image pixel (0, 0)
  int slice_ = 0;
  int depth_ = 1;
  bool fitted_ = false;
  bool auto_fit_ = true;  // follow the widget's size until the user zooms or pans
  bool panning_ = false;
  bool scale_bar_on_ = true;
  QPointF last_mouse_;
  QPointF press_pos_;
  bool dragged_ = false;
  QRectF highlight_;
  int highlight_z0_ = 0, highlight_z1_ = 0;
};

}  // namespace gpix::ui
