#pragma once
// The layer list: top layer first, a checkbox for visibility, names edited in place, and for
// the current layer its opacity, blending, colour map and contrast limits (with auto-contrast by
// percentiles), order buttons, and dragging a layer out as a file (written by a registered
// writer into a temporary folder before the drag starts, off the GUI thread: drag_file.h). Every
// change is an undo step (gpix/ui/layer_commands.h).
#include <QListWidget>
#include <QWidget>

#include "gpix/ui/drag_file.h"
#include "gpix/ui/workspace.h"

class QSlider;
class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QPushButton;
class QMimeData;

namespace gpix::ui {

class LayerListWidget;
namespace detail {
class PassBar;
}

class LayerList : public QWidget {
  Q_OBJECT
 public:
  explicit LayerList(Workspace& host, QWidget* parent = nullptr);
  QListWidget* list() const;
  // A QMimeData with the URL of the layer's drag file (drag_file.h: written in the background
  // with the newest writer that takes it) when that file is written for the layer as it is;
  // otherwise nullptr, the reason in *why, and the write is started (see drag_files()).
  QMimeData* mime_for(int id, QString* why = nullptr);
  // The files layers are dragged out as: written when a layer is pressed in the list.
  DragFiles* drag_files() const { return drag_files_; }
  // Sets the current layer's limits from its 0.5 and 99.5 percentiles (of the shown slice),
  // computed on the device in the background (gpix::ui::auto_contrast); the layer changes when
  // they arrive. A file-backed layer's are the whole stack's, whatever the slice: one streamed
  // pass over its file (stack_auto_contrast) with progress and Cancel under the controls.
  void auto_contrast_current(int slice = -1);

 public slots:
  void rebuild();
  void refresh_controls();
  // Through the workspace's undo stack, as every change made here.
  void remove_current();
  void rename_current();  // opens the current layer's name for editing

 private:
  void apply_controls();
  Workspace& host_;
  LayerListWidget* list_ = nullptr;
  QSlider* opacity_ = nullptr;
  QCheckBox* additive_ = nullptr;
  QComboBox* colormap_ = nullptr;
  QDoubleSpinBox* low_ = nullptr;
  QDoubleSpinBox* high_ = nullptr;
  QPushButton* auto_ = nullptr;
  detail::PassBar* contrast_pass_ = nullptr;  // a file-backed layer's automatic contrast
  DragFiles* drag_files_ = nullptr;
  int pending_drag_ = -1;  // a layer dragged before its file was written
  bool updating_ = false;
  bool contrast_pending_ = false;  // an automatic contrast is being computed
  friend class LayerListWidget;
};

}  // namespace gpix::ui
