#include "gpix/ui/roi_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QSaveFile>
#include <QTableWidget>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>
#include <cmath>
#include <stdexcept>

#include "async.h"
#include "gpix/ui/render.h"
#include "gpix/ui/roi_overlay.h"
#include "gpix/ui/stack_passes.h"
#include "gpix/ui/workflow.h"
#include "pass_bar.h"

namespace gpix::ui {
namespace {

QString number(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (v == std::floor(v) && std::abs(v) < 9007199254740992.0) {
    return QString::number(static_cast<qint64>(v));
  }
  return QString::number(v, 'g', QLocale::FloatingPointShortest);
}

// What the table shows: six significant digits.
QString shown(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString::number(v, 'g', 6);
}

double pixel_area(const Layer& l) {
  const std::vector<double> sp = l.spacing_or_default();
  return sp.size() >= 2 ? sp[sp.size() - 1] * sp[sp.size() - 2] : 1.0;
}

}  // namespace

RoiPanel::RoiPanel(Workspace& host, RoiOverlay* overlay, QWidget* parent)
    : QWidget(parent), host_(host), overlay_(overlay) {
  setObjectName(QStringLiteral("roi_panel"));
  auto* v = new QVBoxLayout(this);
  auto* tools = new QHBoxLayout;
  for (QAction* a : overlay_->tool_actions()) {
    auto* b = new QToolButton;
    b->setDefaultAction(a);
    tools->addWidget(b);
  }
  tools->addStretch(1);
  v->addLayout(tools);

  all_planes_ = new QCheckBox(tr("All slices"));
  all_planes_->setObjectName(QStringLiteral("roi_all_planes"));
  all_planes_->setToolTip(
      tr("On stacks: new ROIs (and the selected one) cover every slice; otherwise a ROI belongs "
         "to the slice it was drawn on. Statistics and crops cover the slices a ROI covers."));
  v->addWidget(all_planes_);

  table_ = new QTableWidget(0, 10);
  table_->setObjectName(QStringLiteral("roi_table"));
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->hide();
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  v->addWidget(table_, 1);

  auto* crop_row = new QHBoxLayout;
  crop_ = new QPushButton(tr("Crop to ROI"));
  crop_->setObjectName(QStringLiteral("roi_crop"));
  crop_->setToolTip(
      tr("A new layer of the selected ROI's bounding box (one undo step). Plain bounding-box "
         "crops are recorded in the workflow as 'crop'; crops that set the outside to 0 are not."));
  outside_ = new QComboBox;
  outside_->setObjectName(QStringLiteral("roi_outside"));
  outside_->addItem(tr("outside the shape: keep values"));
  outside_->addItem(tr("outside the shape: set to 0"));
  crop_row->addWidget(crop_);
  crop_row->addWidget(outside_, 1);
  v->addLayout(crop_row);

  auto* row = new QHBoxLayout;
  status_ = new QLabel;
  status_->setWordWrap(true);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  delete_ = new QPushButton(tr("Delete"));
  delete_->setObjectName(QStringLiteral("roi_delete"));
  export_ = new QPushButton(tr("Export CSV…"));
  export_->setObjectName(QStringLiteral("roi_export"));
  row->addWidget(status_, 1);
  row->addWidget(delete_);
  row->addWidget(export_);
  v->addLayout(row);
  pass_ = new detail::PassBar;
  v->addWidget(pass_);
  connect(pass_, &detail::PassBar::retry, this, &RoiPanel::refresh);

  connect(crop_, &QPushButton::clicked, this, [this] { crop(); });
  connect(delete_, &QPushButton::clicked, this, &RoiPanel::delete_selected);
  connect(export_, &QPushButton::clicked, this, &RoiPanel::export_dialog);
  connect(all_planes_, &QCheckBox::toggled, this, [this](bool on) {
    overlay_->set_all_planes(on);
    if (updating_) return;
    // The selected ROI follows: all slices, or back to the slice on screen.
    const int layer = overlay_->roi_layer();
    if (auto r = overlay_->roi(layer, overlay_->selected())) {
      const Layer l = host_.layer(layer);
      if (l.valid() && l.shape().ndim() == 3) {
        r->plane = overlay_->new_plane();
        overlay_->edit_roi(layer, *r,
                           on ? tr("Put ROI %1 on all slices").arg(r->id)
                              : tr("Put ROI %1 on slice %2").arg(r->id).arg(r->plane));
      }
    }
  });
  connect(table_, &QTableWidget::itemSelectionChanged, this, [this] {
    if (updating_) return;
    const QList<QTableWidgetItem*> items = table_->selectedItems();
    if (!items.isEmpty()) overlay_->select(table_->item(items.first()->row(), 0)->text().toInt());
  });
  connect(overlay_, &RoiOverlay::selection_changed, this, [this](int id) {
    updating_ = true;
    table_->clearSelection();
    for (int r = 0; r < table_->rowCount(); ++r) {
      if (table_->item(r, 0)->text().toInt() == id) table_->selectRow(r);
    }
    if (auto roi = overlay_->roi(overlay_->roi_layer(), id)) {
      all_planes_->setChecked(roi->plane < 0 && host_.layer(layer_).shape().ndim() == 3);
    }
    updating_ = false;
  });
  connect(overlay_, &RoiOverlay::rois_changed, this, [this](int layer) {
    if (layer == overlay_->roi_layer()) refresh();
  });
  connect(&host_, &Workspace::current_layer_changed, this, &RoiPanel::refresh);
  connect(&host_, &Workspace::layer_changed, this, &RoiPanel::on_layer_changed);
  refresh();
}

RoiPanel::~RoiPanel() {
  latest_->store(0);  // a measurement that has not started yet need not run
}

bool RoiPanel::zero_outside() const {
  return outside_->currentIndex() == 1;
}

void RoiPanel::set_zero_outside(bool on) {
  outside_->setCurrentIndex(on ? 1 : 0);
}

QString RoiPanel::area_header() const {
  const Layer l = host_.layer(layer_);
  if (!l.valid() || !l.calibrated()) return tr("area (px)");
  return tr("area (%1)").arg(display_unit(l.unit) + QStringLiteral("\u00b2"));
}

void RoiPanel::on_layer_changed(int id) {
  if (id != layer_) return;
  const Layer l = host_.layer(id);
  // Display settings (contrast, colour map) do not change what is measured.
  const bool same = l.array.valid()
                        ? l.array.same_memory(measured_.array)
                        : l.host.data() == measured_.host.data() && l.file == measured_.file;
  if (!same || l.spacing != measured_.spacing || l.unit != measured_.unit) refresh();
}

void RoiPanel::refresh() {
  layer_ = overlay_->roi_layer();
  const Layer l = host_.layer(layer_);
  QList<Roi> rois = overlay_->rois(layer_);
  std::sort(rois.begin(), rois.end(), [](const Roi& a, const Roi& b) { return a.id < b.id; });
  const quint64 req = ++request_;
  latest_->store(req);
  if (!l.valid() || rois.isEmpty()) {
    measured_ = l;
    rois_ = rois;
    stats_.clear();
    errors_.clear();
    measuring_ = false;
    show_table();
    emit measured();
    return;
  }
  if (l.file_backed()) {
    measure_file(l, rois, req);
    return;
  }
  if (pass_->running()) pass_->cancel();
  pass_->hide();
  measuring_ = true;
  status_->setText(tr("Measuring…"));
  struct Result {
    std::vector<RoiStats> stats;
    QStringList errors;
    bool skipped = false;
  };
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, dev = host_.device(), rois,
       req, latest = latest_]() {
        Result r;
        if (latest->load() != req) {
          r.skipped = true;  // a newer request (the ROI moved on) replaces this one
          return r;
        }
        const gpix::Array image = a.valid() ? a : display_copy(h, dev);
        for (const Roi& roi : rois) {
          try {
            r.stats.push_back(measure_roi(image, roi));
            r.errors << QString();
          } catch (const std::exception& e) {
            r.stats.push_back(RoiStats{});
            r.errors << QString::fromUtf8(e.what());
          }
        }
        return r;
      },
      [this, req, l, rois](const detail::Outcome<Result>& out) {
        if (req != request_) return;  // superseded
        measuring_ = false;
        if (out.value && out.value->skipped) return;
        measured_ = l;
        rois_ = rois;
        stats_ = out.value ? out.value->stats : std::vector<RoiStats>(std::size_t(rois.size()));
        errors_ = out.value ? out.value->errors : QStringList();
        if (!out.value) {
          for (qsizetype i = 0; i < rois.size(); ++i) errors_ << out.error;
        }
        show_table();
        emit measured();
      });
}

void RoiPanel::measure_file(const Layer& l, const QList<Roi>& rois, quint64 req) {
  measuring_ = true;
  status_->setText(tr("Measuring…"));
  bool whole = false;                                      // an all-slices ROI reads the whole file
  for (const Roi& r : rois) whole = whole || r.plane < 0;  // 2D: the rows of its box
  const auto token =
      pass_->start(whole ? tr("ROI statistics over every slice") : tr("ROI statistics"));
  struct Result {
    std::vector<RoiStats> stats;
    QStringList errors;
    int cached = 0;  // ROIs whose numbers came from the cache
    bool skipped = false;
  };
  // A pass over the whole file takes the long passes' thread; a slice's plane is a display read.
  detail::run_async(
      this, whole ? detail::long_pool() : detail::display_pool(),
      [file = l.file, dev = host_.device(), rois, req, latest = latest_, token]() {
        Result r;
        if (latest->load() != req) {
          r.skipped = true;
          return r;
        }
        for (const Roi& roi : rois) {
          if (token->cancel) throw Cancelled("the ROI statistics were cancelled");
          try {
            bool cached = false;
            r.stats.push_back(stack_roi_stats(file, roi, dev, &token->cancel,
                                              detail::PassToken::progress_of(token), &cached));
            r.cached += cached ? 1 : 0;
            r.errors << QString();
          } catch (const Cancelled&) {
            throw;  // nothing half-made: no table at all
          } catch (const std::exception& e) {
            r.stats.push_back(RoiStats{});
            r.errors << QString::fromUtf8(e.what());
          }
        }
        return r;
      },
      [this, req, l, rois, token](const detail::Outcome<Result>& out) {
        if (req != request_) return;  // superseded (its pass was cancelled)
        measuring_ = false;
        if (out.value && out.value->skipped) return;
        if (!out.value && token->cancel) {
          // Cancelled: the table keeps no half-measured numbers.
          measured_ = Layer{};
          rois_ = rois;
          stats_.assign(std::size_t(rois.size()), RoiStats{});
          errors_.clear();
          for (qsizetype i = 0; i < rois.size(); ++i) errors_ << tr("cancelled");
          show_table();
          emit measured();
          return;
        }
        measured_ = l;
        rois_ = rois;
        stats_ = out.value ? out.value->stats : std::vector<RoiStats>(std::size_t(rois.size()));
        errors_ = out.value ? out.value->errors : QStringList();
        if (!out.value) {
          for (qsizetype i = 0; i < rois.size(); ++i) errors_ << out.error;
        }
        const int cached = out.value ? out.value->cached : 0;
        pass_->finish(
            token,
            !out.value ? tr("ROI statistics: %1").arg(out.error)
            : cached ? tr("%n ROI(s) from the cache (the file was not read again)", nullptr, cached)
                     : QString(),
            !out.value);
        show_table();
        emit measured();
      });
}

void RoiPanel::show_table() {
  updating_ = true;
  const Layer l = host_.layer(layer_);
  table_->setHorizontalHeaderLabels({tr("ROI"), tr("shape"), tr("slice"), tr("pixels"),
                                     area_header(), tr("mean"), tr("std"), tr("min"), tr("max"),
                                     tr("sum")});
  table_->setRowCount(int(rois_.size()));
  const double pa = pixel_area(l);
  const bool stack = l.valid() && l.shape().ndim() == 3;  // 2D layers have no slice to show
  QStringList problems;
  for (int i = 0; i < int(rois_.size()); ++i) {
    const Roi& r = rois_[i];
    const RoiStats s = std::size_t(i) < stats_.size() ? stats_[std::size_t(i)] : RoiStats{};
    const bool ok = i < errors_.size() && errors_[i].isEmpty();
    if (!ok && i < errors_.size()) problems << tr("ROI %1: %2").arg(r.id).arg(errors_[i]);
    const double area = double(s.pixels) / std::max(1, s.planes) * pa;
    const QStringList cells = {QString::number(r.id),
                               kind_name(r.kind),
                               !stack        ? QString()
                               : r.plane < 0 ? tr("all")
                                             : QString::number(r.plane),
                               ok ? QString::number(s.pixels) : QStringLiteral("?"),
                               ok ? shown(area) : QStringLiteral("?"),
                               ok ? shown(s.mean) : QString(),
                               ok ? shown(s.std) : QString(),
                               ok ? shown(s.min) : QString(),
                               ok ? shown(s.max) : QString(),
                               ok ? shown(s.sum) : QString()};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      if (c >= 3) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
      if (!ok && i < errors_.size()) item->setToolTip(errors_[i]);
      table_->setItem(i, c, item);
    }
    if (r.id == overlay_->selected()) table_->selectRow(i);
  }
  if (!problems.isEmpty()) {
    status_->setText(problems.join(QLatin1Char('\n')));
  } else if (rois_.isEmpty()) {
    status_->setText(
        l.valid() ? tr("No ROIs on '%1': draw one with a tool above.").arg(shown_name(l.name))
                  : tr("No layer."));
  } else {
    status_->setText(tr("%n ROI(s) on '%1'", nullptr, int(rois_.size())).arg(shown_name(l.name)));
  }
  status_->setToolTip(l.valid() ? l.name : QString());
  all_planes_->setEnabled(stack);
  crop_->setEnabled(!rois_.isEmpty());
  delete_->setEnabled(!rois_.isEmpty());
  export_->setEnabled(!rois_.isEmpty());
  updating_ = false;
}

QString RoiPanel::csv() const {
  const Layer l = host_.layer(layer_);
  const QString unit = l.calibrated() ? l.unit + QStringLiteral("^2") : QStringLiteral("px");
  const double pa = pixel_area(l);
  QStringList lines = {
      QStringLiteral("roi,shape,slice,pixels,area,area_unit,mean,std,min,max,sum")};
  for (int i = 0; i < int(rois_.size()) && std::size_t(i) < stats_.size(); ++i) {
    const Roi& r = rois_[i];
    const RoiStats& s = stats_[std::size_t(i)];
    const QString slice = l.shape().ndim() != 3 ? QString()
                          : r.plane < 0         ? QStringLiteral("all")
                                                : QString::number(r.plane);
    lines << QStringList{QString::number(r.id),
                         kind_name(r.kind),
                         slice,
                         QString::number(s.pixels),
                         number(double(s.pixels) / std::max(1, s.planes) * pa),
                         unit,
                         number(s.mean),
                         number(s.std),
                         number(s.min),
                         number(s.max),
                         number(s.sum)}
                 .join(QLatin1Char(','));
  }
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

void RoiPanel::crop(int id) {
  const int layer = overlay_->roi_layer();
  const Layer l = host_.layer(layer);
  if (id == 0) id = overlay_->selected();
  const QList<Roi> rois = overlay_->rois(layer);
  if (id == 0 && rois.size() == 1) id = rois.first().id;
  const std::optional<Roi> roi = overlay_->roi(layer, id);
  auto fail = [this](const QString& why) {
    status_->setText(why);
    host_.show_status(why);
    emit crop_done(-1, why);
  };
  if (!roi) return fail(tr("Select the ROI to crop to (click it, or its row)."));
  if (!l.array.valid()) {
    return fail(tr("'%1' is not on the device (%2): it cannot be cropped here")
                    .arg(l.name, QString::fromStdString(host_.device().label())));
  }
  const bool zero = zero_outside() && roi->kind != RoiKind::rectangle;
  cropping_ = true;
  status_->setText(tr("Cropping…"));
  detail::run_async(
      this, [a = l.array, r = *roi, zero]() { return crop_to_roi(a, r, zero); },
      [this, l, r = *roi, zero, fail](const detail::Outcome<gpix::Array>& out) {
        cropping_ = false;
        if (!out.value) return fail(tr("Cannot crop to ROI %1: %2").arg(r.id).arg(out.error));
        Layer result;
        result.array = *out.value;
        result.colormap = l.colormap;
        result.additive = l.additive;  // a crop of a channel shows as the channel did
        result.contrast_min = l.contrast_min;
        result.contrast_max = l.contrast_max;
        result.labels = l.labels;
        const gpix::Params params = crop_params(r, l.shape());
        // The crop's first pixel lies at the box's origin in the original's frame.
        inherit_calibration(l, result, gpix::axis_maps("crop", params, l.shape(), result.shape()));
        WorkflowStep step;
        Workflow* workflow = nullptr;
        if (!zero) {
          // Core's crop makes the same array: the workflow can replay it.
          step.operation = QStringLiteral("crop");
          step.inputs = {l.name};
          step.params = params;
          result.name = result_name(step.operation, params, step.inputs, l.shape().ndim());
          step.output = result.name;
          workflow = &host_.workflow();
        } else {
          result.name = tr("%1 · crop ROI %2 (outside 0)").arg(l.name).arg(r.id);
        }
        auto* cmd = new AddLayerCommand(host_, result, workflow, step);
        cmd->setText(tr("Crop to ROI %1").arg(r.id));
        host_.undo_stack()->push(cmd);
        status_->setText(
            tr("Cropped to ROI %1: '%2'").arg(r.id).arg(host_.layer(cmd->layer_id()).name));
        emit crop_done(cmd->layer_id(), QString());
      });
}

void RoiPanel::delete_selected() {
  const int layer = overlay_->roi_layer();
  int id = overlay_->selected();
  if (id == 0 && overlay_->rois(layer).size() == 1) id = overlay_->rois(layer).first().id;
  if (id != 0) overlay_->delete_roi(layer, id);
}

void RoiPanel::export_csv(const QString& path) {
  if (rois_.isEmpty()) {
    const QString why = tr("there are no ROIs to export");
    host_.show_status(tr("Cannot export %1: %2").arg(path, why));
    emit exported(path, why);
    return;
  }
  detail::run_async(
      this,
      [path, text = csv()]() {
        QSaveFile f(path);
        const QByteArray bytes = text.toUtf8();
        // Unbuffered: see save_text in ui/src/workflow_panel.cpp (a full disk).
        if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered) ||
            f.write(bytes) != bytes.size() || !f.commit()) {
          throw std::runtime_error(f.errorString().toStdString());
        }
        return true;
      },
      [this, path](const detail::Outcome<bool>& out) {
        host_.show_status(out.value ? tr("Exported the ROI statistics to %1").arg(path)
                                    : tr("Cannot write %1: %2").arg(path, out.error));
        emit exported(path, out.error);
      });
}

void RoiPanel::export_dialog() {
  const Layer l = host_.layer(layer_);
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export ROI statistics"),
      (l.valid() ? l.name : QStringLiteral("rois")) + QStringLiteral(" ROIs.csv"),
      tr("CSV (*.csv)"));
  if (!path.isEmpty()) export_csv(path);
}

}  // namespace gpix::ui
