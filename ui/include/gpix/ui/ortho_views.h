#pragma once
// Orthogonal views of a stack: the xy, xz and yz planes through one point (the cursor), laid
// out as Fiji's "Orthogonal Views" (yz to the right of xy sharing its rows, xz below it
// sharing its columns) and sized by the layer's physical spacing, so a z spacing five times
// the pixel size shows a five times deeper side view. Clicking or dragging in a pane moves the
// cursor; the other panes follow. The layer shown is the current one when it is 3D, else the
// topmost 3D layer; its contrast limits and colour map are used.
//
// The GUI thread never waits on the device: each pane's plane is cut out on the device (crop,
// and transpose for yz: never a pull of the volume), coloured by gpix::render_rgba and only
// its RGBA read back, on the display threads (as ImageView's frames). While a plane is on its
// way the pane keeps the previous one; requests made meanwhile are merged into one.
// A file-backed stack's xz and yz planes are gathered from its file in one pass of slabs
// (stack_side_planes: one row and one column of every plane) on the long passes' thread, with
// progress and Cancel under the panes; they are kept per file, so going back to a row or column
// read before shows at once (the bar says it came from the cache). A newer cursor cancels a
// pass under way.
#include <QImage>
#include <QWidget>
#include <array>
#include <atomic>
#include <cstddef>
#include <memory>

#include "gpix/array.h"
#include "gpix/host_array.h"
#include "gpix/ui/render.h"
#include "gpix/ui/workspace.h"

class QLabel;

namespace gpix::ui {

namespace detail {
class PassBar;
struct PassToken;
}  // namespace detail

// The planes through the cursor (x, y, z). xy: rows y, columns x; xz: rows z, columns x;
// yz: rows y, columns z.
enum class Plane { xy, xz, yz };

// One plane of a 3D array at `index` (z for xy, y for xz, x for yz) rendered as render() does
// a slice. A device array is cut on its device; a host array's plane is copied on the host
// and pushed to `device`. Blocking: for worker threads. Throws InvalidArgument for an array
// that is not 3D or an index outside its axis.
QImage render_plane(const gpix::Array& array, const gpix::HostArray& host,
                    const gpix::Device& device, Plane plane, int index, RenderOptions options,
                    std::size_t* pulled = nullptr);

class OrthoPane;

class OrthoViews : public QWidget {
  Q_OBJECT
 public:
  explicit OrthoViews(Workspace& host, QWidget* parent = nullptr);
  ~OrthoViews() override;

  int layer() const { return layer_; }  // the layer shown, -1 for none
  int cursor_x() const { return x_; }
  int cursor_y() const { return y_; }
  int cursor_z() const { return z_; }
  // The plane on screen in a pane (null before it arrived) and the pane widget (tests send it
  // mouse events).
  QImage frame(Plane p) const;
  QWidget* pane(Plane p) const;
  // Whether a plane is still being computed.
  bool busy() const;
  // Bytes read back from the device since construction (planes of RGBA only).
  std::size_t bytes_pulled() const { return pulled_; }

 public slots:
  // Moves the cursor (clamped to the stack); panes whose plane changed are redrawn.
  void set_cursor(int x, int y, int z);
  // The xy plane's z (the main view's slice slider).
  void set_slice(int z) { set_cursor(x_, y_, z); }

 signals:
  void cursor_changed(int x, int y, int z);
  // z changed through this widget (a click in xz or yz): the main view's slice can follow.
  void slice_changed(int z);
  void frame_ready(Plane p);

 protected:
  void resizeEvent(QResizeEvent*) override;
  // A file-backed stack's side planes are read only while the views are seen.
  void showEvent(QShowEvent*) override;

 private:
  friend class OrthoPane;
  struct State {
    QImage image;
    quint64 wanted = 1, shown = 0, pending = 0, failed = 0;
    std::shared_ptr<std::atomic<quint64>> latest = std::make_shared<std::atomic<quint64>>(1);
  };

  void pick_layer();
  void invalidate(Plane p);
  void request(Plane p);
  void layout_panes();
  void update_info();
  // The cursor from a pane's image position (column, row), for clicks and drags.
  void pane_pressed(Plane p, int column, int row);
  void pane_wheel(Plane p, int steps);
  // A file-backed stack's side planes through (y_, x_): read from the file unless cached.
  void read_side_planes(const Layer& l);
  int index_of(Plane p) const;

  Workspace& host_;
  int layer_ = -1;
  int x_ = 0, y_ = 0, z_ = 0;
  quint64 next_ = 1;
  std::array<State, 3> state_;
  std::array<OrthoPane*, 3> panes_{};
  QLabel* info_ = nullptr;
  std::size_t pulled_ = 0;
  detail::PassBar* pass_ = nullptr;
  // The side-plane pass under way (null: none), its point and file; the point last read.
  std::shared_ptr<detail::PassToken> side_token_;
  int pass_y_ = -1, pass_x_ = -1;
  const void* pass_file_ = nullptr;
  int read_y_ = -1, read_x_ = -1;
};

}  // namespace gpix::ui
