#pragma once
// View > Orthogonal views and View > 3D (MIP): the two views of stacks, each in a window of its
// own (made on first use, children of the main window so that they close with it). The
// orthogonal views' z and the main view's slice follow each other.
#include <QObject>

class QMenu;
class QWidget;

namespace gpix::ui {
class ImageView;
class MipView;
class OrthoViews;
class Workspace;
}  // namespace gpix::ui

class StackViews : public QObject {
  Q_OBJECT
 public:
  StackViews(gpix::ui::Workspace& workspace, gpix::ui::ImageView* view, QWidget* window);
  // Adds "Orthogonal views" and "3D (MIP)" to a menu.
  void add_to(QMenu* menu);
  // The views' windows, shown and raised (made on first call).
  gpix::ui::OrthoViews* show_ortho();
  gpix::ui::MipView* show_mip();

 private:
  gpix::ui::Workspace& workspace_;
  gpix::ui::ImageView* view_;
  QWidget* window_;
  gpix::ui::OrthoViews* ortho_ = nullptr;
  gpix::ui::MipView* mip_ = nullptr;
};
