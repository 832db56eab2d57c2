#include "gpix/ui/label_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QPushButton>
#include <QSaveFile>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

#include "async.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/labels.h"
#include "gpix/ui/render.h"

namespace gpix::ui {
namespace {

QString number_text(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  if (v == std::floor(v) && std::abs(v) < 1e15) return QString::number(static_cast<qint64>(v));
  return QString::number(v, 'g', 6);
}

// Whether a layer is offered as labels: marked so, or shown with the labels colour map.
bool holds_labels(const Layer& l) {
  return l.valid() && (l.labels || canonical_colormap(l.colormap) == QLatin1String("labels"));
}

// The layer's data on `device` for a measurement (a host-only layer is pushed for it).
gpix::Array device_data(const gpix::Array& a, const gpix::HostArray& h, const gpix::Device& d) {
  if (a.valid()) return a;
  if (h.valid()) return display_copy(h, d);
  return {};
}

bool same_data(const Layer& a, const Layer& b) {
  if (a.array.valid() != b.array.valid() || a.host.valid() != b.host.valid()) return false;
  if (a.array.valid()) return a.array.same_memory(b.array) && a.array.shape() == b.array.shape();
  return !a.host.valid() || a.host.data() == b.host.data();
}

}  // namespace

// ---- LabelTableModel

void LabelTableModel::set_table(gpix::Table table) {
  beginResetModel();
  table_ = std::move(table);
  if (sort_column_ >= int(table_.width())) sort_column_ = 0;
  sort_rows();
  endResetModel();
}

int LabelTableModel::column(const QString& name) const {
  for (std::size_t c = 0; c < table_.width(); ++c) {
    if (QString::fromStdString(table_.columns()[c]) == name) return int(c);
  }
  return -1;
}

int LabelTableModel::row_of(double label) const {
  if (table_.width() == 0) return -1;
  const std::span<const double> labels = table_.column(0);
  const auto it = std::find(labels.begin(), labels.end(), label);
  return it == labels.end() ? -1 : int(it - labels.begin());
}

double LabelTableModel::value(int row, int column) const {
  if (row < 0 || column < 0 || row >= rowCount() || column >= columnCount()) return std::nan("");
  return table_(std::size_t(row), std::size_t(column));
}

int LabelTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(table_.size());
}

int LabelTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(table_.width());
}

QVariant LabelTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  const double v = value(index.row(), index.column());
  if (role == Qt::DisplayRole) return number_text(v);
  if (role == Qt::UserRole) return v;
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant LabelTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  if (section < 0 || section >= columnCount()) return {};
  return QString::fromStdString(table_.columns()[std::size_t(section)]);
}

void LabelTableModel::sort(int column, Qt::SortOrder order) {
  if (column < 0 || column >= columnCount()) return;
  emit layoutAboutToBeChanged({}, QAbstractItemModel::VerticalSortHint);
  const QModelIndexList before = persistentIndexList();
  std::vector<double> labels_before;
  for (const QModelIndex& i : before) labels_before.push_back(value(i.row(), 0));
  sort_column_ = column;
  order_ = order;
  sort_rows();
  // Selections and the current cell follow their labels.
  QModelIndexList after;
  for (std::size_t k = 0; k < std::size_t(before.size()); ++k) {
    after << index(row_of(labels_before[k]), before[qsizetype(k)].column());
  }
  changePersistentIndexList(before, after);
  emit layoutChanged({}, QAbstractItemModel::VerticalSortHint);
}

void LabelTableModel::sort_rows() {
  if (table_.width() == 0) return;
  // Sorted as a permutation of the sort column, then every column gathered once.
  const std::span<const double> key = table_.column(std::size_t(sort_column_));
  const bool ascending = order_ == Qt::AscendingOrder;
  std::vector<std::size_t> order(table_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [key, ascending](std::size_t a, std::size_t b) {
    const double x = key[a], y = key[b];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(x) && std::isnan(y);
    return ascending ? x < y : x > y;
  });
  table_ = table_.select(order);
}

// ---- LabelPanel

LabelPanel::LabelPanel(Workspace& host, ImageView* view, QWidget* parent)
    : QWidget(parent), host_(host), view_(view) {
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  labels_box_ = new QComboBox;
  labels_box_->setObjectName(QStringLiteral("labels_layer"));
  intensity_box_ = new QComboBox;
  intensity_box_->setObjectName(QStringLiteral("intensity_layer"));
  intensity_box_->setToolTip(tr("Mean, minimum and maximum of this layer over each label"));
  outline_ = new QCheckBox(tr("Outline only"));
  outline_->setObjectName(QStringLiteral("outline"));
  outline_->setToolTip(
      tr("Draw only the label borders (pixels whose 4-neighbour holds another "
         "label), so the image below shows through"));
  form->addRow(tr("Labels"), labels_box_);
  form->addRow(tr("Intensity"), intensity_box_);
  form->addRow(QString(), outline_);
  v->addLayout(form);
  details_ = new QLabel;
  details_->setObjectName(QStringLiteral("label_details"));
  // Short lines; wrapping would let the layout squeeze the label to its first line.
  details_->setWordWrap(false);
  details_->setTextFormat(Qt::RichText);
  details_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  details_->setText(tr("Click a label in the image to see its measurements."));
  v->addWidget(details_);
  model_ = new LabelTableModel(this);
  table_ = new QTableView;
  table_->setObjectName(QStringLiteral("label_table"));
  table_->setModel(model_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(0, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->verticalHeader()->setVisible(false);
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  v->addWidget(table_, 1);
  auto* row = new QHBoxLayout;
  status_ = new QLabel;
  status_->setObjectName(QStringLiteral("label_status"));
  status_->setWordWrap(true);
  export_ = new QPushButton(tr("Export CSV…"));
  export_->setObjectName(QStringLiteral("export_csv"));
  export_->setEnabled(false);
  row->addWidget(status_, 1);
  row->addWidget(export_);
  v->addLayout(row);

  connect(export_, &QPushButton::clicked, this, &LabelPanel::export_dialog);
  connect(labels_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) set_labels_layer(labels_box_->currentData().toInt());
  });
  connect(intensity_box_, &QComboBox::currentIndexChanged, this, [this] {
    if (!updating_) set_intensity_layer(intensity_box_->currentData().toInt());
  });
  connect(outline_, &QCheckBox::toggled, this, [this](bool on) {
    if (updating_ || !host_.has_layer(labels_id_)) return;
    Layer l = host_.layer(labels_id_);
    if (l.outline == on) return;
    l.outline = on;
    host_.replace_layer(labels_id_, l);
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const QModelIndexList rows = table_->selectionModel()->selectedRows();
    if (!rows.isEmpty()) show_row(rows.first().row());
  });

  connect(&host_, &Workspace::layer_added, this, [this](int id) {
    rebuild_layer_lists();
    if (holds_labels(host_.layer(id))) set_labels_layer(id);
  });
  connect(&host_, &Workspace::layer_removed, this, [this](int id) {
    if (id == labels_id_) set_labels_layer(-1);
    if (id == intensity_id_) set_intensity_layer(-1);
    rebuild_layer_lists();
  });
  connect(&host_, &Workspace::layer_changed, this, &LabelPanel::on_layer_changed);
  connect(&host_, &Workspace::current_layer_changed, this, [this](int id) {
    if (id != labels_id_ && holds_labels(host_.layer(id))) set_labels_layer(id);
  });
  if (view_) connect(view_, &ImageView::pixel_clicked, this, &LabelPanel::pick);

  rebuild_layer_lists();
  for (int id : host_.layer_ids()) {
    if (holds_labels(host_.layer(id))) set_labels_layer(id);
  }
}

LabelPanel::~LabelPanel() = default;

QString LabelPanel::details() const {
  return details_->text();
}

QString LabelPanel::csv() const {
  return to_csv(model_->table());
}

void LabelPanel::rebuild_layer_lists() {
  updating_ = true;
  labels_box_->clear();
  labels_box_->addItem(tr("(none)"), -1);
  const Layer lab = host_.layer(labels_id_);
  intensity_box_->clear();
  intensity_box_->addItem(tr("(none)"), -1);
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (holds_labels(l)) labels_box_->addItem(l.name, id);
    if (id != labels_id_ && lab.valid() && l.valid() && l.shape() == lab.shape()) {
      intensity_box_->addItem(l.name, id);
    }
  }
  labels_box_->setCurrentIndex(std::max(0, labels_box_->findData(labels_id_)));
  intensity_box_->setCurrentIndex(std::max(0, intensity_box_->findData(intensity_id_)));
  outline_->setEnabled(lab.valid());
  outline_->setChecked(lab.valid() && lab.outline);
  updating_ = false;
}

void LabelPanel::set_labels_layer(int id) {
  const Layer lab = host_.layer(id);
  if (!lab.valid()) id = -1;
  if (id == labels_id_) return;
  labels_id_ = id;
  // Keep the intensity layer where it still fits; otherwise the first image layer that does.
  const Layer old = host_.layer(intensity_id_);
  if (id < 0 || !old.valid() || old.shape() != lab.shape() || intensity_id_ == id) {
    intensity_id_ = -1;
    if (id >= 0) {
      for (int other : host_.layer_ids()) {
        const Layer l = host_.layer(other);
        if (other != id && !holds_labels(l) && l.valid() && l.shape() == lab.shape()) {
          intensity_id_ = other;
          break;
        }
      }
    }
  }
  rebuild_layer_lists();
  if (view_) view_->clear_highlight();
  details_->setText(tr("Click a label in the image to see its measurements."));
  refresh();
}

void LabelPanel::set_intensity_layer(int id) {
  if (id >= 0) {
    const Layer l = host_.layer(id);
    const Layer lab = host_.layer(labels_id_);
    if (!l.valid() || !lab.valid() || l.shape() != lab.shape() || id == labels_id_) {
      set_error(tr("'%1' cannot be the intensity image: it needs the labels' shape %2")
                    .arg(l.name, QString::fromStdString(lab.valid() ? lab.shape().str() : "")));
      rebuild_layer_lists();
      return;
    }
  }
  if (id == intensity_id_) return;
  intensity_id_ = id;
  rebuild_layer_lists();
  refresh();
}

void LabelPanel::on_layer_changed(int id) {
  if (id != labels_id_ && id != intensity_id_) {
    // A layer may have become labels (its colour map) or changed shape.
    const Layer l = host_.layer(id);
    if (labels_id_ < 0 && holds_labels(l)) {
      set_labels_layer(id);
    } else {
      rebuild_layer_lists();
    }
    return;
  }
  const Layer lab = host_.layer(labels_id_);
  updating_ = true;
  outline_->setChecked(lab.valid() && lab.outline);
  updating_ = false;
  // Display settings (contrast, colour map, outline) change nothing measured.
  if (!same_data(lab, measured_labels_) ||
      !same_data(host_.layer(intensity_id_), measured_intensity_)) {
    rebuild_layer_lists();
    refresh();
  }
}

void LabelPanel::set_error(const QString& text) {
  error_ = text;
  status_->setText(text);
}

void LabelPanel::refresh() {
  const Layer lab = host_.layer(labels_id_);
  Layer inten = host_.layer(intensity_id_);
  if (inten.valid() && inten.shape() != lab.shape()) inten = Layer{};
  measured_labels_ = lab;
  measured_intensity_ = inten;
  const quint64 req = ++request_;
  latest_->store(req);
  if (!lab.valid()) {
    measuring_ = false;
    model_->set_table({});
    export_->setEnabled(false);
    error_.clear();
    status_->setText(
        tr("No labels layer: run a labelling filter (connected_components, "
           "voronoi_otsu_labeling) or open labels saved by gpix."));
    emit measured();
    return;
  }
  measuring_ = true;
  status_->setText(tr("Measuring '%1'…").arg(lab.name));
  struct Work {
    gpix::Table table;
    bool skipped = false;
  };
  detail::run_async(
      this,
      [a = lab.array, h = lab.array.valid() ? gpix::HostArray{} : lab.host, ia = inten.array,
       ih = inten.array.valid() ? gpix::HostArray{} : inten.host, dev = host_.device(), req,
       latest = latest_]() {
        Work w;
        if (latest->load() != req) {  // superseded before it started: nobody would see it
          w.skipped = true;
          return w;
        }
        w.table = measure_labels(device_data(a, h, dev), device_data(ia, ih, dev));
        return w;
      },
      [this, req, name = lab.name, iname = inten.name](const detail::Outcome<Work>& out) {
        if (req != request_) return;
        measuring_ = false;
        if (!out.value) {
          model_->set_table({});
          export_->setEnabled(false);
          set_error(tr("Cannot measure '%1': %2").arg(name, out.error));
        } else if (!out.value->skipped) {
          error_.clear();
          intensity_name_ = iname;
          model_->set_table(out.value->table);
          export_->setEnabled(true);
          status_->setText(tr("%n label(s) in '%1'", nullptr, model_->rowCount()).arg(name));
          if (pending_label_ > 0) {
            const double label = pending_label_;
            pending_label_ = 0;
            select_label(label);
          }
        }
        emit measured();
      });
}

void LabelPanel::pick(int x, int y, int z) {
  const Layer lab = host_.layer(labels_id_);
  if (!lab.valid()) return;
  const gpix::Shape s = lab.shape();
  if (x < 0 || y < 0 || std::size_t(x) >= s.width() || std::size_t(y) >= s.height()) return;
  const std::size_t zz =
      s.ndim() == 3 ? std::min<std::size_t>(std::size_t(std::max(z, 0)), s.depth() - 1) : 0;
  const quint64 req = ++pick_request_;
  picking_ = true;
  detail::run_async(
      this,
      [a = lab.array, h = lab.array.valid() ? gpix::HostArray{} : lab.host, x, y, zz]() {
        if (!a.valid()) return value_at(h, zz, std::size_t(y), std::size_t(x));
        gpix::Region r;
        if (a.ndim() == 3) {
          r.origin.push_back(zz);
          r.extent.push_back(1);
        }
        if (a.ndim() >= 2) {
          r.origin.push_back(std::size_t(y));
          r.extent.push_back(1);
        }
        r.origin.push_back(std::size_t(x));
        r.extent.push_back(1);
        return value_at(a.read_region(r), 0, 0, 0);
      },
      [this, req, x, y](const detail::Outcome<double>& out) {
        if (req != pick_request_) return;
        picking_ = false;
        if (!out.value) {
          details_->setText(tr("Cannot read the label at x %1, y %2: %3")
                                .arg(x)
                                .arg(y)
                                .arg(out.error.toHtmlEscaped()));
          return;
        }
        picked_ = *out.value;
        if (picked_ == 0) {
          table_->clearSelection();
          if (view_) view_->clear_highlight();
          details_->setText(tr("Background (label 0) at x %1, y %2").arg(x).arg(y));
        } else {
          select_label(picked_);
        }
        emit picked(picked_);
      });
}

void LabelPanel::select_label(double label) {
  const int row = model_->row_of(label);
  if (row < 0) {
    if (measuring_) {
      pending_label_ = label;  // selected when the table lands
      details_->setText(tr("Label %1: measuring…").arg(number_text(label)));
    } else {
      details_->setText(tr("Label %1 is not in the table").arg(number_text(label)));
    }
    return;
  }
  const QModelIndex index = model_->index(row, 0);
  table_->selectionModel()->setCurrentIndex(
      index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  table_->scrollTo(index);
  show_row(row);  // also when the row was selected already
}

void LabelPanel::show_row(int row) {
  if (row < 0 || row >= model_->rowCount()) return;
  const auto v = [&](const char* name) { return model_->value(row, model_->column(name)); };
  const auto n = [&](const char* name) { return number_text(v(name)); };
  const bool stack = model_->column(QStringLiteral("volume")) >= 0;
  QString text =
      tr("<b>Label %1</b>: %2 %3")
          .arg(n("label"), stack ? n("volume") : n("area"), stack ? tr("voxels") : tr("pixels"));
  text +=
      tr("<br>centroid x %1, y %2")
          .arg(QString::number(v("centroid_x"), 'f', 2), QString::number(v("centroid_y"), 'f', 2));
  if (stack) text += tr(", z %1").arg(QString::number(v("centroid_z"), 'f', 2));
  text += tr("<br>box x %1–%2, y %3–%4").arg(n("x_min"), n("x_max"), n("y_min"), n("y_max"));
  if (stack) text += tr(", z %1–%2").arg(n("z_min"), n("z_max"));
  if (model_->column(QStringLiteral("mean_intensity")) >= 0) {
    text += tr("<br>'%1': mean %2, min %3, max %4")
                .arg(intensity_name_.toHtmlEscaped(), n("mean_intensity"), n("min_intensity"),
                     n("max_intensity"));
  }
  details_->setText(text);
  if (!view_) return;
  const double x0 = v("x_min"), y0 = v("y_min");
  const QRectF box(x0, y0, v("x_max") - x0 + 1, v("y_max") - y0 + 1);
  if (stack) {
    view_->set_slice(int(std::lround(v("centroid_z"))));
    view_->set_highlight(box, int(v("z_min")), int(v("z_max")));
  } else {
    view_->set_highlight(box);
  }
  // Pixel i covers [i, i + 1) in the view: its centre is i + 0.5.
  view_->center_on(QPointF(v("centroid_x") + 0.5, v("centroid_y") + 0.5));
}

void LabelPanel::export_csv(const QString& path) {
  if (model_->rowCount() == 0) {
    const QString why = tr("there are no label measurements to export");
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
        host_.show_status(out.value ? tr("Exported the label measurements to %1").arg(path)
                                    : tr("Cannot write %1: %2").arg(path, out.error));
        emit exported(path, out.error);
      });
}

void LabelPanel::export_dialog() {
  const Layer lab = host_.layer(labels_id_);
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export label measurements"),
      (lab.valid() ? lab.name : QStringLiteral("labels")) + QStringLiteral(".csv"),
      tr("CSV (*.csv)"));
  if (!path.isEmpty()) export_csv(path);
}

}  // namespace gpix::ui
