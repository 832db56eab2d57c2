#include "gpix/ui/filter_panel.h"

#include <QAbstractSpinBox>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressBar>
#include <QPushButton>
#include <QScopeGuard>
#include <QSpinBox>
#include <QTreeWidget>
#include <QUndoStack>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <QtConcurrent/QtConcurrentRun>
#include <algorithm>
#include <cmath>
#include <limits>

#include "gpix/error.h"
#include "gpix/kept_axes.h"
#include "gpix/phase.h"
#include "gpix/scalar.h"
#include "gpix/tiled.h"
#include "gpix/ui/composite.h"
#include "gpix/ui/filter_help.h"

namespace gpix::ui {

namespace {

QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

// Decimals that show the spec's range and default without rounding them away.
int decimals_for(const gpix::ParamSpec& s) {
  int d = 2;
  for (double v : {s.min, s.max, s.default_value}) {
    for (int k = 0; k < 8 && std::abs(v * std::pow(10, k) - std::round(v * std::pow(10, k))) > 1e-9;
         ++k) {
      d = std::max(d, k + 1);
    }
  }
  return std::min(d, 6);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// ParamForm

ParamForm::ParamForm(const gpix::FilterInfo& info, Workspace& host, QWidget* parent)
    : QWidget(parent), info_(info), host_(host) {
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  for (std::size_t i = 0; i < info_.inputs.size(); ++i) {
    const gpix::InputSpec& in = info_.inputs[i];
    auto* picker = new QComboBox;
    picker->setObjectName(QStringLiteral("input_") + qs(in.name));
    picker->setToolTip(qs(in.doc));
    picker->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    picker->setMinimumContentsLength(12);
    connect(picker, &QComboBox::currentIndexChanged, this, &ParamForm::changed);
    form->addRow(qs(in.name) + QStringLiteral(" (%1)").arg(qs(gpix::name(in.kind))), picker);
    pickers_ << picker;
  }
  for (const gpix::ParamSpec& p : info_.params) {
    QWidget* w = nullptr;
    const QString unit = p.unit.empty() ? QString() : QLatin1Char(' ') + qs(p.unit);
    switch (p.type) {
      case gpix::ParamType::integer: {
        auto* s = new QSpinBox;
        // QSpinBox is int: ranges wider than int are clamped to what it can show.
        const double lo = std::max(p.min, double(std::numeric_limits<int>::min()));
        const double hi = std::min(p.max, double(std::numeric_limits<int>::max()));
        s->setRange(int(lo), int(hi));
        s->setValue(int(std::clamp(p.default_value, lo, hi)));
        s->setSuffix(unit);
        connect(s, &QSpinBox::valueChanged, this, &ParamForm::changed);
        w = s;
        break;
      }
      case gpix::ParamType::real: {
        auto* s = new QDoubleSpinBox;
        s->setDecimals(decimals_for(p));
        s->setRange(p.min, p.max);
        s->setValue(p.default_value);
        s->setSuffix(unit);
        const double span = p.max - p.min;
        s->setSingleStep(std::isfinite(span) && span > 0 && span <= 10 ? 0.1 : 1.0);
        connect(s, &QDoubleSpinBox::valueChanged, this, &ParamForm::changed);
        w = s;
        break;
      }
      case gpix::ParamType::boolean: {
        auto* c = new QCheckBox;
        c->setChecked(p.default_value != 0);
        connect(c, &QCheckBox::toggled, this, &ParamForm::changed);
        w = c;
        break;
      }
      case gpix::ParamType::choice: {
        auto* c = new QComboBox;
        for (const std::string& ch : p.choices) c->addItem(qs(ch));
        c->setCurrentText(qs(p.default_choice));
        connect(c, &QComboBox::currentIndexChanged, this, &ParamForm::changed);
        w = c;
        break;
      }
    }
    w->setObjectName(QStringLiteral("param_") + qs(p.name));
    w->setToolTip(qs(p.doc));
    const bool length = p.unit == "px" &&
                        (p.name.rfind("sigma", 0) == 0 || p.name.rfind("radius", 0) == 0) &&
                        (p.type == gpix::ParamType::real || p.type == gpix::ParamType::integer);
    QDoubleSpinBox* phys = nullptr;
    if (auto* d = qobject_cast<QDoubleSpinBox*>(w); d && length) {
      // Pixels converted from physical lengths (and sigma_z's default) are rarely round.
      d->setDecimals(std::max(d->decimals(), 4));
    }
    if (length) {
      // A row of both editors, one of them shown (show_lengths).
      auto* row = new QWidget;
      auto* h = new QHBoxLayout(row);
      h->setContentsMargins(0, 0, 0, 0);
      h->addWidget(w);
      phys = new QDoubleSpinBox;
      phys->setObjectName(QStringLiteral("physical_") + qs(p.name));
      phys->setDecimals(4);
      phys->setRange(0, 1e9);
      phys->setToolTip(qs(p.doc) + tr("; converted to pixels with the spacing of its axis"));
      phys->hide();
      h->addWidget(phys);
      const int i = int(editors_.size());
      connect(phys, &QDoubleSpinBox::valueChanged, this, [this, i] { physical_changed(i); });
      connect(this, &ParamForm::changed, phys, [this, i] { sync_physical(i); });
      form->addRow(qs(p.name), row);
    } else {
      form->addRow(qs(p.name), w);
    }
    const std::string& n = p.name;
    axis_ << (n.ends_with("_z") ? 0 : n.ends_with("_y") ? 1 : 2);
    physical_ << phys;
    editors_ << w;
  }
  if (std::any_of(physical_.begin(), physical_.end(), [](auto* e) { return e != nullptr; })) {
    length_unit_ = new QComboBox;
    length_unit_->setObjectName(QStringLiteral("length_unit"));
    length_unit_->setToolTip(tr("Enter lengths in pixels or in the input layer's unit"));
    connect(length_unit_, &QComboBox::currentIndexChanged, this, &ParamForm::show_lengths);
    form->insertRow(int(pickers_.size()), tr("lengths in"), length_unit_);
  }
  connect(&host_, &Workspace::layer_added, this, &ParamForm::refresh_layers);
  connect(&host_, &Workspace::layer_removed, this, &ParamForm::refresh_layers);
  connect(&host_, &Workspace::layer_changed, this, &ParamForm::refresh_layers);
  // The first input is the layer the user works on: it follows the layer list's selection.
  // Not to this panel's own result or preview, which add_layer selects: Run again then tries
  // other parameters on the same input, and a live preview does not start over on the result.
  // Other inputs (a mask, a second image) stay where the user put them.
  connect(&host_, &Workspace::current_layer_changed, this, [this](int id) {
    if (!follow_ || pickers_.isEmpty() || id < 0) return;
    const int index = pickers_.front()->findData(id);
    if (index >= 0) pickers_.front()->setCurrentIndex(index);
  });
  for (QComboBox* picker : pickers_)
    connect(picker, &QComboBox::currentIndexChanged, this, &ParamForm::update_calibration);
  refresh_layers();
  update_calibration();
  // The wheel over a field without the focus scrolls the panel (a long form) instead of
  // changing the field: scrolling through the form switched the input layer, or a parameter,
  // and started a preview.
  for (QWidget* w : findChildren<QWidget*>()) {
    if (!qobject_cast<QComboBox*>(w) && !qobject_cast<QAbstractSpinBox*>(w)) continue;
    w->setFocusPolicy(Qt::StrongFocus);  // not WheelFocus: the wheel does not take the focus
    w->installEventFilter(this);
  }
}

bool ParamForm::eventFilter(QObject* watched, QEvent* event) {
  if (event->type() == QEvent::Wheel) {
    const auto* w = qobject_cast<QWidget*>(watched);
    if (w && !w->hasFocus()) {
      // Ignored and filtered: QApplication hands the wheel to the parents (the scroll area).
      event->ignore();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

QDoubleSpinBox* ParamForm::physical_editor(const QString& param) const {
  for (qsizetype i = 0; i < editors_.size(); ++i) {
    if (qs(info_.params[std::size_t(i)].name) == param) return physical_[i];
  }
  return nullptr;
}

bool ParamForm::physical() const {
  return length_unit_ && length_unit_->currentIndex() == 1;
}

// The first input's spacing and unit; a stack's sigma_z default.
void ParamForm::update_calibration() {
  const QList<int> ids = inputs();
  const Layer l = ids.isEmpty() ? Layer{} : host_.layer(ids.front());
  const std::vector<double> sp = l.spacing_or_default();
  spacing_ = {1, 1, 1};
  for (std::size_t i = 0; i < sp.size() && i < 3; ++i) spacing_[3 - sp.size() + i] = sp[i];
  unit_ = l.calibrated() ? l.unit : QString();
  if (length_unit_) {
    const QSignalBlocker block(length_unit_);
    const bool was_physical = length_unit_->currentIndex() == 1;
    length_unit_->clear();
    length_unit_->addItem(QStringLiteral("px"));
    if (!unit_.isEmpty()) length_unit_->addItem(display_unit(unit_));
    length_unit_->setCurrentIndex(was_physical && !unit_.isEmpty() ? 1 : 0);
    length_unit_->setEnabled(!unit_.isEmpty());
  }
  // sigma_z 0 would blur a stack in x and y only; the same physical size as x is what a
  // Gaussian "of sigma 2" means to most people. Kept once the user changes it.
  auto* z = qobject_cast<QDoubleSpinBox*>(editor(QStringLiteral("sigma_z")));
  auto* x = qobject_cast<QDoubleSpinBox*>(editor(QStringLiteral("sigma_x")));
  // Not for a composite: its first axis holds channels, filtered one by one as 2D images.
  if (z && x && l.valid() && l.shape().ndim() == 3 && !l.composite() &&
      (auto_sigma_z_ < 0 ? z->value() == 0 : z->value() == auto_sigma_z_)) {
    const double v = x->value() * spacing_[2] / spacing_[0];
    auto_sigma_z_ = std::round(std::clamp(v, z->minimum(), z->maximum()) * 1e4) / 1e4;
    z->setValue(auto_sigma_z_);
  }
  show_lengths();
}

void ParamForm::show_lengths() {
  const bool phys = length_unit_ && length_unit_->currentIndex() == 1;
  for (qsizetype i = 0; i < editors_.size(); ++i) {
    if (!physical_[i]) continue;
    editors_[i]->setVisible(!phys);
    physical_[i]->setVisible(phys);
    sync_physical(int(i));
  }
}

// The physical editor follows its pixel editor (set_param, the sigma_z default).
void ParamForm::sync_physical(int i) {
  QDoubleSpinBox* phys = physical_[i];
  if (!phys) return;
  const double s = spacing_[std::size_t(axis_[i])];
  double px = 0;
  if (auto* sb = qobject_cast<QSpinBox*>(editors_[i])) px = sb->value();
  if (auto* db = qobject_cast<QDoubleSpinBox*>(editors_[i])) px = db->value();
  phys->setSuffix(QStringLiteral(" %1 (= %2 px)").arg(display_unit(unit_)).arg(px));
  // Left alone while it converts to the same pixels (an integer radius rounds).
  if (phys->hasFocus() && std::abs(phys->value() / s - px) < 0.5) return;
  const QSignalBlocker block(phys);
  phys->setValue(px * s);
}

// A physical length typed in: its pixels go to the pixel editor.
void ParamForm::physical_changed(int i) {
  const double px = physical_[i]->value() / spacing_[std::size_t(axis_[i])];
  if (auto* sb = qobject_cast<QSpinBox*>(editors_[i])) sb->setValue(int(std::lround(px)));
  if (auto* db = qobject_cast<QDoubleSpinBox*>(editors_[i])) db->setValue(px);
}

void ParamForm::refresh_layers() {
  const QList<int> ids = host_.layer_ids();
  for (QComboBox* picker : pickers_) {
    const QVariant keep = picker->currentData();
    const QSignalBlocker block(picker);
    picker->clear();
    for (auto it = ids.rbegin(); it != ids.rend(); ++it) {  // top layer first
      if (exclude_.contains(*it)) continue;
      picker->addItem(host_.layer(*it).name, *it);
    }
    int index = keep.isValid() ? picker->findData(keep) : -1;
    if (index < 0) index = picker->findData(host_.current_layer());
    picker->setCurrentIndex(index < 0 && picker->count() ? 0 : index);
  }
}

gpix::Params ParamForm::params() const {
  gpix::Params out;
  for (qsizetype i = 0; i < editors_.size(); ++i) {
    const gpix::ParamSpec& p = info_.params[std::size_t(i)];
    QWidget* w = editors_[i];
    gpix::ParamValue v;
    if (auto* s = qobject_cast<QSpinBox*>(w))
      v = double(s->value());
    else if (auto* d = qobject_cast<QDoubleSpinBox*>(w))
      v = d->value();
    else if (auto* c = qobject_cast<QCheckBox*>(w))
      v = c->isChecked() ? 1.0 : 0.0;
    else if (auto* b = qobject_cast<QComboBox*>(w))
      v = b->currentText().toStdString();
    out.emplace(p.name, v);
  }
  return out;
}

QList<int> ParamForm::inputs() const {
  QList<int> ids;
  for (QComboBox* p : pickers_) ids << (p->currentIndex() >= 0 ? p->currentData().toInt() : -1);
  return ids;
}

QWidget* ParamForm::editor(const QString& param) const {
  for (qsizetype i = 0; i < editors_.size(); ++i) {
    if (qs(info_.params[std::size_t(i)].name) == param) return editors_[i];
  }
  return nullptr;
}

QComboBox* ParamForm::input_picker(int index) const {
  return pickers_.value(index);
}

bool ParamForm::set_param(const QString& name, const gpix::ParamValue& value) {
  QWidget* w = editor(name);
  if (!w) return false;
  const double* d = std::get_if<double>(&value);
  const std::string* s = std::get_if<std::string>(&value);
  if (auto* sb = qobject_cast<QSpinBox*>(w); sb && d)
    sb->setValue(int(*d));
  else if (auto* db = qobject_cast<QDoubleSpinBox*>(w); db && d)
    db->setValue(*d);
  else if (auto* cb = qobject_cast<QCheckBox*>(w); cb && d)
    cb->setChecked(*d != 0);
  else if (auto* co = qobject_cast<QComboBox*>(w); co && s) {
    const int i = co->findText(qs(*s));
    if (i < 0) return false;
    co->setCurrentIndex(i);
  } else {
    return false;
  }
  return true;
}

void ParamForm::set_input(int index, int layer_id) {
  if (QComboBox* p = pickers_.value(index)) p->setCurrentIndex(p->findData(layer_id));
}

// ---------------------------------------------------------------------------------------------
// FilterPanel

FilterPanel::FilterPanel(Workspace& host, Workflow* workflow, QWidget* parent)
    : QWidget(parent), host_(host), workflow_(workflow) {
  auto* v = new QVBoxLayout(this);
  v->setContentsMargins(4, 4, 4, 4);
  search_ = new QLineEdit;
  search_->setObjectName(QStringLiteral("filter_search"));
  search_->setPlaceholderText(tr("Search filters (name, category, description)"));
  search_->setClearButtonEnabled(true);
  v->addWidget(search_);
  tree_ = new QTreeWidget;
  tree_->setObjectName(QStringLiteral("filter_tree"));
  tree_->setHeaderHidden(true);
  tree_->setMinimumHeight(120);
  v->addWidget(tree_, 2);
  box_ = new QGroupBox(tr("No filter selected"));
  auto* bv = new QVBoxLayout(box_);
  doc_ = new QLabel;
  doc_->setWordWrap(true);
  doc_->setStyleSheet(QStringLiteral("color: palette(mid)"));
  bv->addWidget(doc_);
  v->addWidget(box_, 1);
  auto* buttons = new QHBoxLayout;
  preview_ = new QCheckBox(tr("Live preview"));
  preview_->setObjectName(QStringLiteral("preview"));
  run_ = new QPushButton(tr("Run"));
  run_->setObjectName(QStringLiteral("run"));
  run_->setDefault(true);
  cancel_ = new QPushButton(tr("Cancel"));
  cancel_->setObjectName(QStringLiteral("cancel"));
  cancel_->setEnabled(false);
  buttons->addWidget(preview_);
  buttons->addStretch(1);
  buttons->addWidget(cancel_);
  buttons->addWidget(run_);
  v->addLayout(buttons);
  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setTextVisible(false);
  progress_->setMaximumHeight(8);
  progress_->hide();
  v->addWidget(progress_);
  phase_ = new QLabel;
  phase_->setObjectName(QStringLiteral("filter_phase"));
  phase_->setWordWrap(true);
  phase_->hide();
  v->addWidget(phase_);
  error_ = new QLabel;
  error_->setObjectName(QStringLiteral("filter_error"));
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->setStyleSheet(QStringLiteral("color: #c03030"));
  error_->hide();
  v->addWidget(error_);

  debounce_.setSingleShot(true);
  debounce_.setInterval(300);
  connect(&debounce_, &QTimer::timeout, this, [this] { start(true); });
  connect(search_, &QLineEdit::textChanged, this, &FilterPanel::set_search);
  connect(tree_, &QTreeWidget::currentItemChanged, this,
          [this](QTreeWidgetItem* item, QTreeWidgetItem*) { on_item(item); });
  connect(run_, &QPushButton::clicked, this, &FilterPanel::run);
  connect(cancel_, &QPushButton::clicked, this, &FilterPanel::cancel);
  connect(preview_, &QCheckBox::toggled, this, &FilterPanel::set_preview);
  connect(&host_, &Workspace::task_progress, this,
          [this](double f) { progress_->setValue(int(std::clamp(f, 0.0, 1.0) * 1000)); });
  connect(&host_, &Workspace::task_phase, this, [this](const QString& text) {
    if (running_ == 0 || cancelling_) return;  // a late report: keep saying what happens now
    phase_->setText(text);
    phase_->show();
  });
  connect(&host_, &Workspace::layer_removed, this, [this](int id) {
    if (id == preview_id_) preview_id_ = -1;
  });
  build_tree();
}

FilterPanel::~FilterPanel() {
  // Workers hold only shared handles; ask them to stop and let them finish on their own.
  if (preview_task_) preview_task_->cancel();
  if (run_task_) run_task_->cancel();
  QThreadPool::globalInstance()->waitForDone();
}

void FilterPanel::build_tree() {
  tree_->clear();
  QHash<QString, QTreeWidgetItem*> categories;
  for (const gpix::FilterInfo& f : gpix::filters()) {  // generic: whatever the catalog holds
    const QString cat = qs(gpix::name(f.category));
    QTreeWidgetItem*& parent = categories[cat];
    if (!parent) {
      parent = new QTreeWidgetItem(tree_, QStringList(cat));
      parent->setFlags(Qt::ItemIsEnabled);
      QFont font = parent->font(0);
      font.setBold(true);
      parent->setFont(0, font);
    }
    auto* item = new QTreeWidgetItem(parent, QStringList(qs(f.name)));
    item->setData(0, Qt::UserRole, qs(f.name));
    item->setToolTip(0, qs(f.doc));
  }
  tree_->expandAll();
}

void FilterPanel::set_search(const QString& text) {
  if (search_->text() != text) search_->setText(text);  // re-enters via textChanged
  const QString t = text.trimmed();
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* cat = tree_->topLevelItem(i);
    int shown = 0;
    const bool cat_match = cat->text(0).contains(t, Qt::CaseInsensitive);
    for (int j = 0; j < cat->childCount(); ++j) {
      QTreeWidgetItem* item = cat->child(j);
      const bool match = t.isEmpty() || cat_match ||
                         item->text(0).contains(t, Qt::CaseInsensitive) ||
                         item->toolTip(0).contains(t, Qt::CaseInsensitive);
      item->setHidden(!match);
      shown += match;
    }
    cat->setHidden(shown == 0);
  }
}

QStringList FilterPanel::visible_filters() const {
  QStringList out;
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* cat = tree_->topLevelItem(i);
    if (cat->isHidden()) continue;
    for (int j = 0; j < cat->childCount(); ++j) {
      if (!cat->child(j)->isHidden()) out << cat->child(j)->text(0);
    }
  }
  return out;
}

bool FilterPanel::select_filter(const QString& name) {
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* cat = tree_->topLevelItem(i);
    for (int j = 0; j < cat->childCount(); ++j) {
      if (cat->child(j)->text(0) == name) {
        tree_->setCurrentItem(cat->child(j));
        return true;
      }
    }
  }
  return false;
}

QString FilterPanel::selected_filter() const {
  return form_ ? qs(form_->info().name) : QString();
}

void FilterPanel::on_item(QTreeWidgetItem* item) {
  if (!item || !item->data(0, Qt::UserRole).isValid()) return;
  const QString name = item->data(0, Qt::UserRole).toString();
  if (form_ && qs(form_->info().name) == name) return;
  drop_preview();
  if (form_) kept_.insert(qs(form_->info().name), form_->params());
  delete form_;
  form_ = nullptr;
  const gpix::FilterInfo& info = gpix::filter(name.toStdString());
  box_->setTitle(name);
  // Plain words first; the catalog's exact definition is the tooltip (and in Help).
  const QString when = filter_when(info);
  doc_->setText(filter_summary(info) + (when.isEmpty() ? QString() : QLatin1Char(' ') + when) +
                QStringLiteral("\n") +
                tr("Output: %1, %2.").arg(qs(gpix::name(info.output)), qs(info.output_dtype)));
  doc_->setToolTip(qs(info.doc));
  form_ = new ParamForm(info, host_, box_);
  for (const auto& [k, v] : kept_.value(name)) form_->set_param(qs(k), v);
  box_->layout()->addWidget(form_);
  connect(form_, &ParamForm::changed, this, [this] {
    if (preview_->isChecked()) debounce_.start();
  });
  error_->hide();
  if (preview_->isChecked()) debounce_.start();
}

void FilterPanel::set_preview(bool on) {
  if (preview_->isChecked() != on) preview_->setChecked(on);  // re-enters via toggled
  if (on) {
    debounce_.start();
  } else {
    debounce_.stop();
    ++preview_generation_;  // results still on their way are dropped
    if (preview_task_) preview_task_->cancel();
    drop_preview();
  }
}

QString FilterPanel::error_text() const {
  return error_->isHidden() ? QString() : error_->text();
}

QString FilterPanel::phase_text() const {
  return running_ > 0 ? phase_->text() : QString();
}

bool FilterPanel::busy() const {
  return running_ > 0;
}

void FilterPanel::show_error(const QString& text) {
  error_->setText(text);
  error_->setVisible(!text.isEmpty());
}

void FilterPanel::cancel() {
  if (run_task_) run_task_->cancel();
  if (preview_task_) preview_task_->cancel();
  if (running_ > 0) {
    // The device finishes the slab or pass it is in: a kernel cannot be stopped half-way.
    // Said here, on the button and in the status bar (which kept reading "slab 1 of 2" for
    // the minute a CPU device took to reach the end of the slab).
    cancelling_ = true;
    cancel_->setEnabled(false);
    phase_->setText(tr("Cancelling: stops after the current slab or pass…"));
    phase_->show();
    if (run_task_) {
      run_task_->set_phase(
          tr("%1: cancelling, stops after the current slab or pass").arg(run_title_));
    }
  }
}

void FilterPanel::run() {
  start(false);
}

void FilterPanel::start(bool preview) {
  if (!form_) {
    show_error(tr("Select a filter first."));
    if (!preview) emit finished(false);
    return;
  }
  // A filter started now would run on the device the layers are leaving, and its result would
  // be copied on the GUI thread when it lands.
  if (host_.switching_device()) {
    show_error(
        tr("The layers are moving to another device; run the filter when the switch is "
           "done."));
    if (!preview) emit finished(false);
    return;
  }
  const gpix::FilterInfo& info = form_->info();
  WorkflowStep step;
  step.operation = qs(info.name);
  step.params = form_->params();
  std::vector<gpix::Array> arrays;
  std::vector<std::shared_ptr<StackFile>> files;
  // Composites (colour, channels) are filtered channel by channel (run_per_channel).
  std::vector<bool> per_channel;
  const QList<int> ids = form_->inputs();
  for (qsizetype i = 0; i < ids.size(); ++i) {
    const Layer l = host_.layer(ids[i]);
    if (l.file_backed()) {
      files.push_back(l.file);
      step.inputs << l.name;
      continue;
    }
    if (!l.array.valid()) {
      show_error(
          l.valid() ? tr("Layer '%1' is not on the device (%2); switch to a device that "
                         "can hold it.")
                          .arg(l.name, qs(host_.device().label()))
                    : tr("Pick a layer for input '%1'.").arg(qs(info.inputs[std::size_t(i)].name)));
      if (!preview) emit finished(false);
      return;
    }
    arrays.push_back(l.array);
    per_channel.push_back(l.composite());
    step.inputs << l.name;
  }
  // Recorded, so that the exports and sessions run the step channel by channel as well.
  if (std::find(per_channel.begin(), per_channel.end(), true) != per_channel.end())
    step.per_channel = QList<bool>(per_channel.begin(), per_channel.end());
  if (!files.empty()) {
    // Stacks larger than memory run slab by slab from their files (stack_file.h).
    QString why;
    if (files.size() != std::size_t(ids.size())) {
      why = tr("'%1' mixes file-backed layers with layers in memory; give it file-backed "
               "layers only, or layers in memory only.")
                .arg(step.operation);
    } else if (preview) {
      why =
          tr("No live preview on a file-backed layer (the whole file would be read for each "
             "change): press Run.");
    } else if (const gpix::TileInfo t = gpix::tile_info(info.name); !t.tileable) {
      why = tr("'%1' cannot run on the file-backed layer '%2' (read from its file in slabs): %3")
                .arg(step.operation, step.inputs.front(), qs(t.reason));
    }
    if (!why.isEmpty()) {
      show_error(why);
      if (!preview) emit finished(false);
      return;
    }
  }
  // Latest wins: a new run makes older previews stale and asks them to stop.
  if (preview_task_) preview_task_->cancel();
  const quint64 generation = ++preview_generation_;
  auto task =
      host_.begin_task(tr("%1%2").arg(step.operation, preview ? tr(" (preview)") : QString()));
  (preview ? preview_task_ : run_task_) = task;
  if (!preview) run_title_ = step.operation;
  ++running_;
  cancel_->setEnabled(true);
  progress_->setValue(0);
  progress_->show();
  const QString title = step.operation + (preview ? tr(" (preview)") : QString());
  cancelling_ = false;
  phase_->setText(tr("%1: starting").arg(title));
  phase_->show();
  const std::string name = info.name;
  const gpix::Params params = step.params;
  const std::function<void()> gate = gate_;
  Layer first = host_.layer(ids.front());
  first.host = {};  // only its shape and calibration are wanted: no host pixels held longer
  auto* watcher = new QFutureWatcher<Outcome>(this);
  connect(watcher, &QFutureWatcher<Outcome>::finished, this,
          [this, watcher, generation, preview, task, step] {
            --running_;
            task->finish();
            // A finished run is no longer the one Cancel speaks of (a later preview's).
            if (run_task_ == task) run_task_.reset();
            if (running_ == 0) {
              cancel_->setEnabled(false);
              progress_->hide();
              phase_->clear();
              phase_->hide();
              cancelling_ = false;
            }
            on_done(generation, preview, watcher->result(), step);
            watcher->deleteLater();
          });
  watcher->setFuture(
      QtConcurrent::run([name, arrays, per_channel, files, params, task, gate, title, first,
                         input_id = ids.front(), device = host_.device(),
                         stem = result_name(step.operation, step.params, step.inputs,
                                            int(first.shape().ndim()))]() -> Outcome {
        Outcome o;
        o.input = first;
        o.input_id = input_id;
        try {
          if (gate) gate();
          gpix::RunOptions opts;
          opts.cancel = task->cancel_flag();
          opts.progress = [task](double f) { task->set_progress(f); };
          const auto phase = [task, title](const std::string& what) {
            // Once cancelled, the status keeps saying so (FilterPanel::cancel).
            if (task->cancelled()) return;
            task->set_phase(title + QStringLiteral(": ") + QString::fromStdString(what));
          };
          const gpix::PhaseScope phases(phase);
          phase("running");
          if (!files.empty()) {
            // From the files to a temporary file, slab by slab; the result stays in it.
            const bool labels = gpix::filter(name).output == gpix::OutputKind::labels;
            FileRunResult r =
                run_on_files(name, files, params, device, stem, first.spacing, first.origin,
                             first.unit, labels, opts.cancel, opts.progress);
            o.file = std::move(r.file);
            o.result.table = std::move(r.table);
            return o;
          }
          // Slab by slab on the device where the filter tiles, so that Cancel takes effect
          // within a fraction of a long run and the bar advances per slab (same result).
          if (std::find(per_channel.begin(), per_channel.end(), true) != per_channel.end()) {
            o.result = run_per_channel(name, arrays, per_channel, params, opts);
          } else {
            o.result = gpix::run_in_slabs(name, arrays, params, opts);
          }
          // Kernels run after their launch returns: the task ends (and the bar reaches its end)
          // when the device has done the work, not when it was queued.
          if (o.result.array.valid()) {
            phase("finishing on the device");
            o.result.array.device().finish();
          }
          // A run of one slab cannot stop inside its kernels: a cancel during them still
          // discards the result, as the dialog promises.
          if (opts.cancel->load()) throw gpix::Cancelled(name + " was cancelled");
        } catch (const gpix::Cancelled& e) {
          o.cancelled = true;
          o.error = QString::fromStdString(e.what());
        } catch (const std::exception& e) {  // gpix::Error and std::bad_alloc alike
          o.error = QString::fromStdString(e.what());
        }
        return o;
      }));
}

void FilterPanel::on_done(quint64 generation, bool preview, const Outcome& o, WorkflowStep step) {
  if (preview && (generation != preview_generation_ || !preview_->isChecked())) return;  // stale
  if (o.cancelled) {
    show_error(tr("Cancelled: nothing was added and the input is unchanged."));
    if (!preview) {
      host_.show_status(
          tr("%1 cancelled: nothing was added and the input is unchanged").arg(step.operation));
      emit finished(false);
    }
    return;
  }
  if (!o.error.isEmpty()) {
    show_error(o.error);
    if (!preview) emit finished(false);
    return;
  }
  show_error({});
  if (o.result.is_table() && !o.file) {
    const gpix::Table& t = o.result.table;
    QStringList cols;
    for (const auto& c : t.columns()) cols << qs(c);
    QString text = cols.join(QStringLiteral("\t"));
    for (std::size_t r = 0; r < t.size(); ++r) {
      QStringList cells;
      for (double d : t.row(r)) cells << QString::number(d, 'g', 8);
      text += QLatin1Char('\n') + cells.join(QStringLiteral("\t"));
    }
    error_->setText(text);
    error_->setVisible(true);
    if (!preview) emit finished(true);
    return;
  }
  Layer out;
  out.array = o.result.array;
  out.file = o.file;
  inherit_calibration(
      o.input, out,
      gpix::axis_maps(step.operation.toStdString(), step.params, o.input.shape(), out.shape()));
  const gpix::OutputKind kind = gpix::filter(step.operation.toStdString()).output;
  if (kind == gpix::OutputKind::labels) out.mark_labels();
  // A composite's result, made channel by channel, is a composite in the same colours (its
  // limits computed anew); labels stay one label image per channel, shown slice by slice.
  const bool composite = o.input.composite() && kind != gpix::OutputKind::labels;
  if (composite) {
    out.channels = o.input.channels;
    for (Channel& c : out.channels) c.contrast_min = c.contrast_max = 0;
  }
  // The result of a channel shown with the others (an additive layer, a hyperstack's channel)
  // is shown as that channel: gray and opaque on top, it hid the whole hyperstack.
  const bool as_channel = show_as_channel_of(o.input, out, kind == gpix::OutputKind::labels);
  if (preview) {
    out.name = step.operation + tr(" (preview)");
    out.metadata.insert(QStringLiteral("preview"), true);  // not a result to save
    if (preview_id_ >= 0 && host_.has_layer(preview_id_)) {
      const Layer old = host_.layer(preview_id_);
      out.visible = old.visible;
      out.opacity = old.opacity;
      out.additive = old.additive;
      host_.replace_layer(preview_id_, out);
    } else {
      const int keep = host_.current_layer();
      // The preview is selected for a moment by add_layer: the input stays where it is.
      form_->follow_ = false;
      const auto follow_again = qScopeGuard([this] { form_->follow_ = true; });
      preview_id_ = host_.add_layer(out);
      form_->exclude_ = {preview_id_};
      form_->refresh_layers();
      host_.set_current_layer(keep);
    }
    emit preview_updated();
    return;
  }
  drop_preview();
  // A composite's channels were filtered as 2D images: no z parameters in its name.
  out.name = result_name(step.operation, step.params, step.inputs,
                         out.composite() ? 2 : int(out.shape().ndim()));
  bool hid_input = false;
  {
    // The result is selected; the form stays on its input.
    const QPointer<ParamForm> form = form_;
    if (form) form->follow_ = false;
    const auto follow_again = qScopeGuard([form] {
      if (form) form->follow_ = true;
    });
    auto* add = new AddLayerCommand(host_, out, workflow_, step);
    // In the channel's place: above it (not above other images' layers, to which it would
    // add), the channel hidden (else counted twice).
    if (as_channel && host_.has_layer(o.input_id)) add->show_in_place_of(o.input_id);
    host_.undo_stack()->push(add);
    hid_input = add->hid_input();
  }
  QString done = o.input.composite() ? tr("%1 done, channel by channel").arg(out.name)
                                     : tr("%1 done").arg(out.name);
  if (hid_input)
    done += tr("; shown in place of '%1', which is hidden (Edit > Undo brings it back)")
                .arg(o.input.name);
  host_.show_status(done);
  emit finished(true);
}

void FilterPanel::drop_preview() {
  if (preview_id_ >= 0 && host_.has_layer(preview_id_)) host_.remove_layer(preview_id_);
  preview_id_ = -1;
}

}  // namespace gpix::ui
