#include "stack_views.h"

#include <QAction>
#include <QMenu>
#include <QVBoxLayout>
#include <QWidget>

#include "gpix/ui/image_view.h"
#include "gpix/ui/mip_view.h"
#include "gpix/ui/ortho_views.h"

namespace {

// A top-level window (not a dock: these views want room) holding one view.
QWidget* view_window(QWidget* owner, QWidget* content, const QString& title, const QString& name) {
  auto* w = new QWidget(owner, Qt::Window);
  w->setObjectName(name);
  w->setWindowTitle(title);
  auto* layout = new QVBoxLayout(w);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(content);
  w->resize(900, 760);
  return w;
}

void raise(QWidget* content) {
  QWidget* w = content->window();
  w->show();
  w->raise();
  w->activateWindow();
}

}  // namespace

StackViews::StackViews(gpix::ui::Workspace& workspace, gpix::ui::ImageView* view, QWidget* window)
    : QObject(window), workspace_(workspace), view_(view), window_(window) {}

void StackViews::add_to(QMenu* menu) {
  QAction* ortho = menu->addAction(tr("&Orthogonal views"), this, [this] { show_ortho(); });
  ortho->setObjectName(QStringLiteral("action_ortho_views"));
  ortho->setToolTip(tr("The xy, xz and yz planes through one point of a stack"));
  QAction* mip = menu->addAction(tr("3D (&MIP)"), this, [this] { show_mip(); });
  mip->setObjectName(QStringLiteral("action_mip_3d"));
  mip->setToolTip(tr("A maximum-intensity projection of a stack that turns with the mouse"));
}

gpix::ui::OrthoViews* StackViews::show_ortho() {
  if (!ortho_) {
    ortho_ = new gpix::ui::OrthoViews(workspace_);
    view_window(window_, ortho_, tr("Orthogonal views"), QStringLiteral("window_ortho_views"));
    ortho_->set_slice(view_->slice());
    connect(view_, &gpix::ui::ImageView::slice_changed, ortho_, &gpix::ui::OrthoViews::set_slice);
    connect(ortho_, &gpix::ui::OrthoViews::slice_changed, view_, &gpix::ui::ImageView::set_slice);
  }
  raise(ortho_);
  return ortho_;
}

gpix::ui::MipView* StackViews::show_mip() {
  if (!mip_) {
    mip_ = new gpix::ui::MipView(workspace_);
    view_window(window_, mip_, tr("3D (maximum-intensity projection)"),
                QStringLiteral("window_mip_3d"));
  }
  raise(mip_);
  return mip_;
}
