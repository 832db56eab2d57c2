#include "gpix/ui/layer_list.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QDrag>
#include <QFormLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QMimeData>
#include <QMouseEvent>
#include <QPushButton>
#include <QSlider>
#include <QUndoStack>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>

#include "async.h"
#include "gpix/error.h"
#include "gpix/ui/layer_commands.h"
#include "gpix/ui/render.h"
#include "pass_bar.h"
#include "stack_contrast_job.h"

namespace gpix::ui {

// A QListWidget whose drag carries the layer as a file. The file is written in the background
// from the press on (DragFiles); a drag that begins before it exists starts when it does, if
// the button is still held.
class LayerListWidget : public QListWidget {
 public:
  LayerListWidget(LayerList* owner) : owner_(owner) {
    setDragEnabled(true);
    setDragDropMode(QAbstractItemView::DragOnly);
  }
  // Starts the drag of layer id with its written file; false (and the status line says why)
  // when the file is not there.
  bool drag(int id) {
    QString why;
    QMimeData* mime = owner_->mime_for(id, &why);
    if (!mime) return false;
    auto* d = new QDrag(this);
    d->setMimeData(mime);
    d->exec(Qt::CopyAction);
    return true;
  }

 protected:
  void mousePressEvent(QMouseEvent* e) override {
    if (e->button() == Qt::LeftButton) {
      if (QListWidgetItem* item = itemAt(e->position().toPoint()))
        owner_->drag_files_->prepare(item->data(Qt::UserRole).toInt());
    }
    QListWidget::mousePressEvent(e);
  }
  void startDrag(Qt::DropActions) override {
    QListWidgetItem* item = currentItem();
    if (!item) return;
    const int id = item->data(Qt::UserRole).toInt();
    if (drag(id)) return;
    const QString why = owner_->drag_files_->error(id);
    if (!why.isEmpty() && !owner_->drag_files_->preparing(id)) {
      owner_->host_.show_status(tr("Cannot drag this layer out: %1").arg(why));
      return;
    }
    owner_->pending_drag_ = id;
    owner_->host_.show_status(
        tr("Writing '%1' for the drag… (keep the button held)").arg(item->text()), 0);
  }

 private:
  LayerList* owner_;
};

LayerList::LayerList(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  drag_files_ = new DragFiles(host_, this);
  connect(drag_files_, &DragFiles::prepared, this,
          [this](int id, const QString& path, const QString& error) {
            if (id != pending_drag_) return;
            pending_drag_ = -1;
            if (path.isEmpty()) {
              host_.show_status(tr("Cannot drag this layer out: %1").arg(error));
              return;
            }
            // A drag asked for while the file was written goes on if the button is still held.
            host_.show_status(tr("'%1' is ready to drag").arg(host_.layer(id).name));
            if (QGuiApplication::mouseButtons() & Qt::LeftButton) list_->drag(id);
          });
  list_ = new LayerListWidget(this);
  list_->setObjectName(QStringLiteral("layer_list"));
  v->addWidget(list_, 1);
  auto* order = new QHBoxLayout;
  auto* up = new QPushButton(tr("Up"));
  auto* down = new QPushButton(tr("Down"));
  auto* remove = new QPushButton(tr("Remove"));
  order->addWidget(up);
  order->addWidget(down);
  order->addWidget(remove);
  v->addLayout(order);
  auto* form = new QFormLayout;
  opacity_ = new QSlider(Qt::Horizontal);
  opacity_->setObjectName(QStringLiteral("opacity"));
  opacity_->setRange(0, 100);
  additive_ = new QCheckBox(tr("Additive"));
  additive_->setObjectName(QStringLiteral("additive"));
  additive_->setToolTip(
      tr("Add this layer's colours to the layers below it instead of covering them (a "
         "hyperstack's channels open so, as in Fiji's composite mode)"));
  colormap_ = new QComboBox;
  colormap_->setObjectName(QStringLiteral("colormap"));
  colormap_->addItems(colormap_names());
  low_ = new QDoubleSpinBox;
  high_ = new QDoubleSpinBox;
  for (QDoubleSpinBox* s : {low_, high_}) {
    s->setRange(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
    s->setDecimals(4);
    s->setKeyboardTracking(false);
  }
  low_->setObjectName(QStringLiteral("contrast_low"));
  high_->setObjectName(QStringLiteral("contrast_high"));
  auto_ = new QPushButton(tr("Auto"));
  auto_->setObjectName(QStringLiteral("auto_contrast"));
  auto_->setToolTip(tr("Contrast limits from the 0.5 and 99.5 percentiles"));
  auto* limits = new QHBoxLayout;
  limits->addWidget(low_);
  limits->addWidget(high_);
  limits->addWidget(auto_);
  form->addRow(tr("Opacity"), opacity_);
  form->addRow(tr("Blending"), additive_);
  form->addRow(tr("Colour map"), colormap_);
  form->addRow(tr("Contrast"), limits);
  v->addLayout(form);
  contrast_pass_ = new detail::PassBar;
  contrast_pass_->setObjectName(QStringLiteral("contrast_pass_bar"));
  v->addWidget(contrast_pass_);
  connect(contrast_pass_, &detail::PassBar::retry, this, [this] { auto_contrast_current(); });

  connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
    if (updating_ || row < 0) return;
    host_.set_current_layer(list_->item(row)->data(Qt::UserRole).toInt());
  });
  // Every change goes through the undo stack (gpix/ui/layer_commands.h).
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    if (updating_) return;
    const int id = item->data(Qt::UserRole).toInt();
    const Layer l = host_.layer(id);
    if (!l.valid()) return;
    const QString name = item->text().trimmed();
    if (!name.isEmpty() && name != l.name) {
      host_.undo_stack()->push(new RenameLayerCommand(host_, id, name));
      return;
    }
    if (name != l.name) {  // an empty name is refused: show the old one again
      QMetaObject::invokeMethod(this, &LayerList::rebuild, Qt::QueuedConnection);
      return;
    }
    LayerDisplay d = LayerDisplay::of(l);
    d.visible = item->checkState() == Qt::Checked;
    set_layer_display(host_, id, d,
                      d.visible ? tr("visibility (shown)") : tr("visibility (hidden)"));
  });
  auto move = [this](int delta) {
    const int id = host_.current_layer();
    const int pos = int(host_.layer_ids().indexOf(id));
    const int to = pos + delta;
    if (pos >= 0 && to >= 0 && to < host_.layer_ids().size())
      host_.undo_stack()->push(new MoveLayerCommand(host_, id, to));
  };
  connect(up, &QPushButton::clicked, this, [move] { move(+1); });
  connect(down, &QPushButton::clicked, this, [move] { move(-1); });
  connect(remove, &QPushButton::clicked, this, &LayerList::remove_current);
  connect(opacity_, &QSlider::valueChanged, this, &LayerList::apply_controls);
  connect(additive_, &QCheckBox::toggled, this, &LayerList::apply_controls);
  connect(colormap_, &QComboBox::currentIndexChanged, this, &LayerList::apply_controls);
  connect(low_, &QDoubleSpinBox::valueChanged, this, &LayerList::apply_controls);
  connect(high_, &QDoubleSpinBox::valueChanged, this, &LayerList::apply_controls);
  connect(auto_, &QPushButton::clicked, this, [this] { auto_contrast_current(); });

  connect(&host_, &Workspace::layer_added, this, &LayerList::rebuild);
  connect(&host_, &Workspace::layer_removed, this, &LayerList::rebuild);
  connect(&host_, &Workspace::layers_reordered, this, &LayerList::rebuild);
  connect(&host_, &Workspace::current_layer_changed, this, &LayerList::rebuild);
  connect(&host_, &Workspace::layer_changed, this, &LayerList::rebuild);
  rebuild();
}

QListWidget* LayerList::list() const {
  return list_;
}

void LayerList::rebuild() {
  updating_ = true;
  list_->clear();
  const QList<int> ids = host_.layer_ids();
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) {
    const Layer l = host_.layer(*it);
    auto* item = new QListWidgetItem(l.name);
    item->setData(Qt::UserRole, *it);
    item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable |
                   Qt::ItemIsDragEnabled | Qt::ItemIsEditable);
    item->setCheckState(l.visible ? Qt::Checked : Qt::Unchecked);
    item->setToolTip(QStringLiteral("%1, %2%3")
                         .arg(QString::fromStdString(l.shape().str()),
                              QString::fromUtf8(gpix::name(l.dtype()).data()),
                              l.source.isEmpty() ? QString() : QStringLiteral("\n") + l.source));
    list_->addItem(item);
    if (*it == host_.current_layer()) list_->setCurrentItem(item);
  }
  updating_ = false;
  refresh_controls();
}

void LayerList::refresh_controls() {
  const Layer l = host_.layer(host_.current_layer());
  updating_ = true;
  for (QWidget* w : {static_cast<QWidget*>(opacity_), static_cast<QWidget*>(additive_),
                     static_cast<QWidget*>(colormap_), static_cast<QWidget*>(low_),
                     static_cast<QWidget*>(high_), static_cast<QWidget*>(auto_)}) {
    // A composite's colours and limits are its channels' (the Histogram dock sets them).
    w->setEnabled(l.valid() && (w == opacity_ || w == additive_ || !l.composite()));
  }
  const QString composite_tip =
      tr("A colour composite: set each channel's colour, limits and gamma in the Histogram dock");
  colormap_->setToolTip(l.composite() ? composite_tip : QString());
  low_->setToolTip(l.composite() ? composite_tip : QString());
  high_->setToolTip(l.composite() ? composite_tip : QString());
  auto_->setToolTip(l.composite() ? composite_tip
                                  : tr("Contrast limits from the 0.5 and 99.5 percentiles"));
  if (l.valid()) {
    opacity_->setValue(int(std::lround(l.opacity * 100)));
    additive_->setChecked(l.additive);
    // Layers saved by earlier viewers may name a map by its old alias ("inverted").
    colormap_->setCurrentText(canonical_colormap(l.colormap));
    low_->setValue(l.contrast_min);
    high_->setValue(l.contrast_max);
  }
  updating_ = false;
}

void LayerList::apply_controls() {
  if (updating_) return;
  const int id = host_.current_layer();
  const Layer l = host_.layer(id);
  if (!l.valid()) return;
  LayerDisplay d = LayerDisplay::of(l);
  // A control takes the layer's setting only where it shows another value than the layer's
  // (rounded to whole percent, 4 decimals): ticking Additive set the limits of a float layer
  // to their 4-decimal rounding (1.2e-5 became 0) and the opacity to whole percent.
  const auto shown = [](const QDoubleSpinBox* box, double v) {
    return box->valueFromText(box->textFromValue(v));
  };
  if (opacity_->value() != int(std::lround(l.opacity * 100))) d.opacity = opacity_->value() / 100.0;
  d.additive = additive_->isChecked();
  if (colormap_->currentText() != canonical_colormap(l.colormap))
    d.colormap = colormap_->currentText();
  const bool limits_moved = low_->value() != shown(low_, l.contrast_min) ||
                            high_->value() != shown(high_, l.contrast_max);
  if (limits_moved && high_->value() > low_->value()) {
    d.contrast_min = low_->value();
    d.contrast_max = high_->value();
  }
  const LayerDisplay was = LayerDisplay::of(l);
  const QString what = d.opacity != was.opacity     ? tr("opacity")
                       : d.additive != was.additive ? tr("blending")
                       : d.colormap != was.colormap ? tr("colour map")
                                                    : tr("contrast");
  set_layer_display(host_, id, d, what);
}

void LayerList::remove_current() {
  const int id = host_.current_layer();
  if (id >= 0) host_.undo_stack()->push(new RemoveLayerCommand(host_, id));
}

void LayerList::rename_current() {
  for (int i = 0; i < list_->count(); ++i) {
    if (list_->item(i)->data(Qt::UserRole).toInt() == host_.current_layer()) {
      list_->editItem(list_->item(i));
      return;
    }
  }
}

void LayerList::auto_contrast_current(int slice) {
  const int id = host_.current_layer();
  const Layer l = host_.layer(id);
  if (!l.valid() || contrast_pending_) return;  // one at a time, like the disabled button
  contrast_pending_ = true;
  auto_->setEnabled(false);
  if (l.file_backed()) {
    // The whole stack's percentiles, as a stack in memory gets from the Auto button, not the
    // plane on screen's: a dim first plane must not clip the bright planes.
    detail::start_stack_auto_contrast(
        this, host_, id, contrast_pass_,
        [this, id](double lo, double hi) {
          LayerDisplay d = LayerDisplay::of(host_.layer(id));
          d.contrast_min = lo;
          d.contrast_max = hi;
          set_layer_display(host_, id, d, tr("contrast (automatic)"));
        },
        [this] {
          contrast_pending_ = false;
          auto_->setEnabled(host_.layer(host_.current_layer()).valid());
        });
    return;
  }
  // On the device, off the GUI thread: a running filter may hold the device for a while.
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, dev = host_.device(),
       slice]() { return auto_contrast(a.valid() ? a : display_copy(h, dev), slice); },
      [this, id](const detail::Outcome<std::pair<double, double>>& out) {
        contrast_pending_ = false;
        auto_->setEnabled(host_.layer(host_.current_layer()).valid());
        Layer cur = host_.layer(id);
        if (!cur.valid()) return;
        if (!out.value) {
          host_.show_status(tr("Automatic contrast failed: %1").arg(out.error));
          return;
        }
        LayerDisplay d = LayerDisplay::of(cur);
        d.contrast_min = out.value->first;
        d.contrast_max = out.value->second;
        set_layer_display(host_, id, d, tr("contrast (automatic)"));
      });
}

QMimeData* LayerList::mime_for(int id, QString* why) {
  if (!host_.layer(id).valid()) {
    if (why) *why = tr("no such layer");
    return nullptr;
  }
  const QString path = drag_files_->ready(id);
  if (path.isEmpty()) {
    if (!drag_files_->preparing(id)) drag_files_->prepare(id);
    if (why) {
      *why = drag_files_->preparing(id) ? tr("its file is being written") : drag_files_->error(id);
    }
    return nullptr;
  }
  auto* mime = new QMimeData;
  mime->setUrls({QUrl::fromLocalFile(path)});
  return mime;
}

}  // namespace gpix::ui
