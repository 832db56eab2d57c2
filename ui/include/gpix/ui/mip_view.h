#pragma once
// A 3D view of a stack: its maximum-intensity projection (gpix::render_mip) seen from a
// direction the user turns with the mouse (drag: yaw left/right, pitch up/down), zoomed with
// the wheel, in the layer's physical proportions (its spacing) and with its contrast limits
// and colour map. The layer shown is the current one when it is 3D, else the topmost 3D layer.
//
// The GUI thread never waits: a frame is projected, coloured and read back (RGBA only) on
// the display threads. One frame is in flight at a time; camera changes meanwhile only
// update the wanted camera, and when the frame lands the newest camera is rendered next, so a
// fast drag never builds a queue. While the mouse button is held frames are rendered at half
// resolution, or lower where the last frame shows that the device needs it to keep up (down
// to an eighth), and at full resolution once the button is released.
// A file-backed stack (larger than memory) is seen from the top, at yaw = pitch = 0, through its
// exact maximum over z, computed by core's tiled maximum_z_projection from the file in slabs
// (stack_max_projection). Turned, it is seen through a reduced-resolution copy: the maximum of
// blocks of f x f x f voxels, f the smallest that makes the copy fit stack_volume_bound()
// (stack_block_max), rendered with the spacing times f so that its geometry is the stack's.
// The copy takes one pass over the file the first time the view turns; turning further renders
// from it (kept on the device) without reading the file again. Both passes run on the long
// passes' thread, with progress and Cancel at the bottom of the view, and are kept per file in
// the pass cache.
#include <QImage>
#include <QPointF>
#include <QWidget>
#include <atomic>
#include <cstddef>
#include <memory>

#include "gpix/mip.h"
#include "gpix/ui/workspace.h"

namespace gpix::ui {

namespace detail {
class PassBar;
struct PassToken;
}  // namespace detail

class MipView : public QWidget {
  Q_OBJECT
 public:
  explicit MipView(Workspace& host, QWidget* parent = nullptr);

  int layer() const { return layer_; }
  double yaw() const { return yaw_; }
  double pitch() const { return pitch_; }
  // Screen pixels per the layer's smallest voxel spacing.
  double zoom() const { return zoom_; }
  // Whether samples between voxel centres are trilinear blends (the default: smooth when
  // zoomed in and turned) or the voxel they fall in, which makes the view along an axis
  // exactly the maximum projection along it at any zoom. Labels always take the voxel.
  bool smooth() const { return smooth_; }
  // The last frame (null before the first); one image pixel per device pixel of the widget
  // (fewer while dragging), the volume's centre at the image's centre.
  QImage frame() const { return image_; }
  // The camera that frame() shows.
  gpix::MipOptions frame_camera() const { return frame_camera_; }
  bool busy() const;
  // Frames rendered and frames asked for since construction: a drag asks for many and
  // renders few.
  int frames_rendered() const { return rendered_; }
  int frames_requested() const { return requested_; }
  // A file-backed stack turned: f of the block copy the frames come from (1 for the stack
  // itself), 0 when no copy is shown.
  std::size_t volume_factor() const;

 public slots:
  void set_angles(double yaw, double pitch);
  void set_zoom(double zoom);  // kept when the window resizes
  void set_smooth(bool smooth);
  // Zoom so that the volume fits whatever way it is turned (its bounding sphere).
  void fit();
  void reset();  // angles 0 (looking down z) and fit

 signals:
  void frame_ready();
  void camera_changed(double yaw, double pitch, double zoom);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  // A file-backed stack's projection is read only while the view is seen.
  void showEvent(QShowEvent*) override;

 private:
  void pick_layer();
  void invalidate();
  void request();
  void apply_zoom(double zoom);
  bool file_backed() const;
  // Reads a file-backed stack's projection (unless a pass is under way), then renders.
  void read_projection(const Layer& l);
  // Reads a file-backed stack's block copy for turned views (likewise).
  void read_volume(const Layer& l);
  // A file-backed stack seen turned: from the block copy, not the projection.
  bool turned() const { return yaw_ != 0 || pitch_ != 0; }
  QString note() const;
  gpix::MipOptions camera() const;

  Workspace& host_;
  int layer_ = -1;
  double yaw_ = 0, pitch_ = 0, zoom_ = 1;
  bool user_zoom_ = false;  // the user zoomed: resizing keeps the zoom
  bool smooth_ = true;
  bool dragging_ = false;
  QPointF last_;
  QImage image_;
  gpix::MipOptions frame_camera_;
  quint64 wanted_ = 1, shown_ = 0, pending_ = 0, failed_ = 0;
  std::shared_ptr<std::atomic<quint64>> latest_ = std::make_shared<std::atomic<quint64>>(1);
  int rendered_ = 0, requested_ = 0;
  double us_per_pixel_ = 0;  // the last frame's cost: sets the resolution while dragging
  QString error_;
  detail::PassBar* pass_ = nullptr;
  std::shared_ptr<detail::PassToken> proj_token_;   // the projection pass under way
  gpix::HostArray projection_;                      // a file-backed stack's maximum over z
  std::weak_ptr<const StackFile> projection_file_;  // whose it is
  gpix::Array volume_;                              // a file-backed stack's block copy
  std::size_t volume_factor_ = 1;                   // its f
  std::weak_ptr<const StackFile> volume_file_;      // whose it is
};

}  // namespace gpix::ui
