#include "gpix/ui/profile_panel.h"

#include <QCheckBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "async.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/roi.h"
#include "gpix/ui/roi_overlay.h"

namespace gpix::ui {
namespace {

// About `count` round ticks ({1, 2, 5} x 10^k apart) covering [lo, hi].
std::vector<double> ticks(double lo, double hi, int count) {
  std::vector<double> out;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return out;
  const double raw = (hi - lo) / count;
  const double decade = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * decade;
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * decade >= raw) {
      step = m * decade;
      break;
    }
  }
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

QString number(double v) {
  if (std::isnan(v)) return QStringLiteral("nan");
  return QString::number(v, 'g', QLocale::FloatingPointShortest);
}

}  // namespace

ProfilePlot::ProfilePlot(QWidget* parent) : QWidget(parent) {
  setObjectName(QStringLiteral("profile_plot"));
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ProfilePlot::set_data(std::vector<double> x, std::vector<double> y, const QString& x_label) {
  x_ = std::move(x);
  y_ = std::move(y);
  x_label_ = x_label;
  double lo = std::numeric_limits<double>::infinity(),
         hi = -std::numeric_limits<double>::infinity();
  for (double v : y_) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  if (!(hi >= lo)) lo = 0, hi = 1;
  if (hi == lo) lo -= 0.5, hi += 0.5;
  // A little room above and below the curve.
  const double pad = (hi - lo) * 0.05;
  y_lo_ = lo - pad;
  y_hi_ = hi + pad;
  if (hovered_ >= int(x_.size())) hovered_ = -1;
  update();
}

QRectF ProfilePlot::plot_rect() const {
  const QFontMetrics fm(font());
  const double left = fm.horizontalAdvance(QStringLiteral("-0.000e+00")) + 6;
  return QRectF(left, 8, std::max(10.0, width() - left - 12),
                std::max(10.0, height() - 8 - 2.5 * fm.height() - 6));
}

double ProfilePlot::column_of(double x) const {
  const QRectF r = plot_rect();
  const double span = x_.empty() || x_.back() <= 0 ? 1.0 : x_.back();
  return r.left() + x / span * r.width();
}

int ProfilePlot::sample_at(double px) const {
  if (x_.empty()) return -1;
  const QRectF r = plot_rect();
  if (px < r.left() - 4 || px > r.right() + 4) return -1;
  const double span = x_.back() <= 0 ? 1.0 : x_.back();
  const double x = (px - r.left()) / r.width() * span;
  const auto it = std::lower_bound(x_.begin(), x_.end(), x);
  int i = int(it - x_.begin());
  if (i >= int(x_.size())) i = int(x_.size()) - 1;
  if (i > 0 && std::abs(x_[std::size_t(i - 1)] - x) < std::abs(x_[std::size_t(i)] - x)) --i;
  return i;
}

QString ProfilePlot::hover_text() const {
  if (hovered_ < 0 || hovered_ >= int(x_.size())) return {};
  return QStringLiteral("%1 %2: %3")
      .arg(QString::number(x_[std::size_t(hovered_)], 'g', 6), x_label_,
           QString::number(y_[std::size_t(hovered_)], 'g', 8));
}

void ProfilePlot::mouseMoveEvent(QMouseEvent* e) {
  const int i = sample_at(e->position().x());
  if (i != hovered_) {
    hovered_ = i;
    emit hovered_changed(i);
    update();
  }
}

void ProfilePlot::leaveEvent(QEvent*) {
  if (hovered_ != -1) {
    hovered_ = -1;
    emit hovered_changed(-1);
    update();
  }
}

void ProfilePlot::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRectF r = plot_rect();
  const QColor text = palette().color(QPalette::Text);
  const QColor grid = palette().color(QPalette::Mid);
  const QFontMetrics fm(font());
  if (x_.empty()) {
    p.setPen(text);
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Draw a line with the line tool (L) to see the values along it."));
    return;
  }
  auto row_of = [&](double y) { return r.bottom() - (y - y_lo_) / (y_hi_ - y_lo_) * r.height(); };
  p.setPen(QPen(grid, 1, Qt::DotLine));
  for (double t : ticks(y_lo_, y_hi_, 5)) {
    const double yy = row_of(t);
    p.drawLine(QPointF(r.left(), yy), QPointF(r.right(), yy));
  }
  const double span = x_.back();
  for (double t : ticks(0, span, 6)) {
    const double xx = column_of(t);
    p.drawLine(QPointF(xx, r.top()), QPointF(xx, r.bottom()));
  }
  p.setPen(text);
  for (double t : ticks(y_lo_, y_hi_, 5)) {
    const QString s = QString::number(t, 'g', 5);
    p.drawText(QRectF(0, row_of(t) - fm.height() / 2.0, r.left() - 4, fm.height()),
               Qt::AlignRight | Qt::AlignVCenter, s);
  }
  for (double t : ticks(0, span, 6)) {
    p.drawText(QRectF(column_of(t) - 40, r.bottom() + 2, 80, fm.height()), Qt::AlignHCenter,
               QString::number(t, 'g', 5));
  }
  p.drawText(QRectF(r.left(), r.bottom() + 2 + fm.height(), r.width(), fm.height()),
             Qt::AlignHCenter, tr("distance (%1)").arg(x_label_));
  p.drawRect(r);

  p.setRenderHint(QPainter::Antialiasing);
  QPainterPath path;
  bool pen_down = false;
  for (std::size_t i = 0; i < x_.size(); ++i) {
    if (!std::isfinite(y_[i])) {
      pen_down = false;  // NaN leaves a gap
      continue;
    }
    const QPointF pt(column_of(x_[i]), row_of(y_[i]));
    if (pen_down) {
      path.lineTo(pt);
    } else {
      path.moveTo(pt);
      pen_down = true;
    }
  }
  p.setPen(QPen(QColor(220, 60, 170), 1.5));
  p.drawPath(path);
  if (hovered_ >= 0) {
    const double xx = column_of(x_[std::size_t(hovered_)]);
    p.setPen(QPen(text, 1, Qt::DashLine));
    p.drawLine(QPointF(xx, r.top()), QPointF(xx, r.bottom()));
    if (std::isfinite(y_[std::size_t(hovered_)])) {
      p.setBrush(QColor(220, 60, 170));
      p.drawEllipse(QPointF(xx, row_of(y_[std::size_t(hovered_)])), 3.5, 3.5);
    }
    p.setPen(text);
    p.drawText(r.adjusted(6, 4, -6, -4), Qt::AlignTop | Qt::AlignRight, hover_text());
  }
}

ProfilePanel::ProfilePanel(Workspace& host, ImageView* view, RoiOverlay* overlay, QWidget* parent)
    : QWidget(parent), host_(host), view_(view), overlay_(overlay) {
  setObjectName(QStringLiteral("profile_panel"));
  auto* v = new QVBoxLayout(this);
  plot_ = new ProfilePlot;
  v->addWidget(plot_, 1);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Width")));
  width_ = new QSpinBox;
  width_->setObjectName(QStringLiteral("profile_width"));
  width_->setRange(1, 101);
  width_->setSuffix(tr(" px"));
  width_->setToolTip(tr("Average this many parallel lines, one pixel apart"));
  row->addWidget(width_);
  in_pixels_ = new QCheckBox(tr("in px"));
  in_pixels_->setObjectName(QStringLiteral("profile_in_pixels"));
  in_pixels_->setToolTip(tr("Distances in pixels rather than the layer's unit"));
  row->addWidget(in_pixels_);
  info_ = new QLabel;
  info_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  row->addWidget(info_, 1);
  export_ = new QPushButton(tr("Export CSV…"));
  export_->setObjectName(QStringLiteral("profile_export"));
  export_->setEnabled(false);
  row->addWidget(export_);
  v->addLayout(row);

  connect(width_, &QSpinBox::valueChanged, this, [this](int w) {
    overlay_->set_line_width(w);
    refresh();
  });
  connect(in_pixels_, &QCheckBox::toggled, this, &ProfilePanel::refresh);
  connect(export_, &QPushButton::clicked, this, &ProfilePanel::export_dialog);
  connect(overlay_, &RoiOverlay::line_changed, this, &ProfilePanel::refresh);
  connect(view_, &ImageView::slice_changed, this, &ProfilePanel::refresh);
  connect(&host_, &Workspace::current_layer_changed, this, &ProfilePanel::refresh);
  connect(&host_, &Workspace::layer_changed, this, [this](int id) {
    if (id == overlay_->roi_layer()) refresh();
  });
}

ProfilePanel::~ProfilePanel() {
  latest_->store(0);
}

void ProfilePanel::refresh() {
  const std::optional<Roi> line = overlay_->line();
  const Layer l = host_.layer(overlay_->roi_layer());
  const quint64 req = ++request_;
  latest_->store(req);
  if (!line || !l.valid()) {
    pending_ = false;
    error_.clear();
    plot_->set_data({}, {}, {});
    info_->clear();
    export_->setEnabled(false);
    emit profiled();
    return;
  }
  pending_ = true;
  const QPointF a = line->points[0], b = line->points[1];
  const int z = l.shape().ndim() == 3 ? std::min(view_->slice(), int(l.shape().depth()) - 1) : 0;
  const int width = width_->value();
  struct Result {
    std::vector<double> values;
    bool skipped = false;
  };
  detail::run_async(
      this,
      [arr = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, file = l.file, z, a, b,
       width, req, latest = latest_]() {
        Result r;
        if (latest->load() != req) {
          r.skipped = true;  // the line moved on meanwhile
          return r;
        }
        if (!arr.valid() && !h.valid() && file) {
          // A file-backed stack: the plane on screen, from the plane cache or its file.
          r.values = line_profile(file->plane(std::size_t(z)), 0, a, b, width);
          return r;
        }
        r.values =
            arr.valid() ? line_profile(arr, z, a, b, width) : line_profile(h, z, a, b, width);
        return r;
      },
      [this, req, l, a, b, z](const detail::Outcome<Result>& out) {
        if (req != request_) return;
        pending_ = false;
        if (out.value && out.value->skipped) return;
        if (!out.value) {
          error_ = out.error;
          info_->setText(out.error);
          plot_->set_data({}, {}, {});
          export_->setEnabled(false);
          emit profiled();
          return;
        }
        error_.clear();
        const bool physical = l.calibrated() && !in_pixels_->isChecked();
        unit_ = physical ? display_unit(l.unit) : QStringLiteral("px");
        Layer geometry = l;
        if (!physical) geometry.spacing.clear();  // spacing 1: distances in pixels
        std::vector<double> d = profile_distances(geometry, a, b, out.value->values.size());
        const double length = d.back();
        plot_->set_data(std::move(d), out.value->values, unit_);
        QString where = l.name;
        if (l.shape().ndim() == 3) where += tr(", slice %1").arg(z);
        info_->setText(tr("%1 %2 on %3").arg(QString::number(length, 'g', 4), unit_, where));
        export_->setEnabled(true);
        emit profiled();
      });
}

QString ProfilePanel::csv() const {
  QStringList lines = {QStringLiteral("distance_%1,value").arg(unit_)};
  const std::vector<double>& x = plot_->x();
  const std::vector<double>& y = plot_->y();
  for (std::size_t i = 0; i < x.size(); ++i)
    lines << number(x[i]) + QLatin1Char(',') + number(y[i]);
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

void ProfilePanel::export_csv(const QString& path) {
  if (plot_->x().empty()) {
    const QString why = tr("there is no profile to export: draw a line first");
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
        host_.show_status(out.value ? tr("Exported the line profile to %1").arg(path)
                                    : tr("Cannot write %1: %2").arg(path, out.error));
        emit exported(path, out.error);
      });
}

void ProfilePanel::export_dialog() {
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export line profile"), QStringLiteral("profile.csv"), tr("CSV (*.csv)"));
  if (!path.isEmpty()) export_csv(path);
}

}  // namespace gpix::ui
