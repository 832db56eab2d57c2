#include "stack_views.h"

#include <QAction>
#include <QCheckBox>
#include <QHBoxLayout>
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
    // The view with one switch above it: smooth blends between voxels (the default), or each
    // ray's voxels themselves, so that the view from the top is exactly maximum_z_projection
    // at any zoom (a GUI walk-through, 2026-12-02, found them apart off 1:1).
    auto* content = new QWidget;
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* smooth = new QCheckBox(tr("Smooth between voxels"));
    smooth->setObjectName(QStringLiteral("mip_smooth"));
    smooth->setChecked(mip_->smooth());
    smooth->setToolTip(
        tr("On: samples between voxel centres are blended (smooth when zoomed in or turned). "
           "Off: each ray takes the voxels it passes through, so the view along an axis is "
           "exactly the maximum projection along it."));
    connect(smooth, &QCheckBox::toggled, mip_, &gpix::ui::MipView::set_smooth);
    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(6, 4, 6, 0);
    bar->addWidget(smooth);
    bar->addStretch();
    layout->addLayout(bar);
    layout->addWidget(mip_, 1);
    view_window(window_, content, tr("3D (maximum-intensity projection)"),
                QStringLiteral("window_mip_3d"));
  }
  raise(mip_);
  return mip_;
}
