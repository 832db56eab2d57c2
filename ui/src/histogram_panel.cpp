#include "gpix/ui/histogram_panel.h"

#include <QCheckBox>
#include <QColorDialog>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QSlider>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "async.h"
#include "gpix/filters/reductions.h"
#include "gpix/stats.h"
#include "gpix/ui/composite.h"
#include "gpix/ui/layer_commands.h"
#include "gpix/ui/render.h"
#include "gpix/ui/stack_passes.h"
#include "pass_bar.h"
#include "stack_contrast_job.h"

namespace gpix::ui {

namespace {

constexpr int kBins = 256;
constexpr double kGrab = 8;  // pixels either side of a handle that grab it

// The gamma slider is logarithmic: -100..100 is 0.1..10, 0 is 1.
int slider_of(double gamma) {
  return int(std::lround(std::log10(std::clamp(gamma, 0.1, 10.0)) * 100));
}
double gamma_of(int slider) {
  return std::pow(10.0, slider / 100.0);
}

struct Computed {
  std::vector<std::uint64_t> counts;
  double min = 0, max = 1;
};

}  // namespace

// ---- the plot ----

HistogramWidget::HistogramWidget(QWidget* parent) : QWidget(parent) {
  setMinimumSize(200, 110);
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void HistogramWidget::set_histogram(std::vector<std::uint64_t> counts, double minimum,
                                    double maximum) {
  counts_ = std::move(counts);
  min_ = minimum;
  max_ = maximum > minimum ? maximum : minimum + 1;
  update();
}

void HistogramWidget::clear_histogram() {
  counts_.clear();
  update();
}

void HistogramWidget::set_limits(double low, double high) {
  low_ = low;
  high_ = std::max(low, high);
  update();
}

void HistogramWidget::set_gamma(double gamma) {
  gamma_ = gamma;
  update();
}

void HistogramWidget::set_log(bool on) {
  log_ = on;
  update();
}

std::pair<double, double> HistogramWidget::axis() const {
  const double lo = std::min(min_, low_), hi = std::max(max_, high_);
  return {lo, hi > lo ? hi : lo + 1};
}

QRectF HistogramWidget::plot() const {
  return QRectF(8, 6, std::max(1, width() - 16), std::max(1, height() - 24));
}

double HistogramWidget::x_of(double v) const {
  const auto [lo, hi] = axis();
  const QRectF r = plot();
  return r.left() + (v - lo) / (hi - lo) * r.width();
}

double HistogramWidget::value_at(double x) const {
  const auto [lo, hi] = axis();
  const QRectF r = plot();
  return lo + (x - r.left()) / r.width() * (hi - lo);
}

void HistogramWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  const QRectF r = plot();
  p.fillRect(r, QColor(30, 30, 34));
  if (!counts_.empty()) {
    const auto peak = double(*std::max_element(counts_.begin(), counts_.end()));
    const auto height_of = [&](std::uint64_t c) {
      if (peak <= 0) return 0.0;
      return log_ ? std::log1p(double(c)) / std::log1p(peak) : double(c) / peak;
    };
    const double bin = (max_ - min_) / double(counts_.size());
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(170, 170, 185));
    for (std::size_t i = 0; i < counts_.size(); ++i) {
      const double x0 = x_of(min_ + bin * double(i)), x1 = x_of(min_ + bin * double(i + 1));
      const double h = height_of(counts_[i]) * r.height();
      p.drawRect(QRectF(x0, r.bottom() - h, std::max(1.0, x1 - x0), h));
    }
  }
  // The display curve between the limits: u^gamma, as the render applies it.
  const double xl = x_of(low_), xh = x_of(high_);
  QPainterPath curve;
  curve.moveTo(r.left(), r.bottom());
  curve.lineTo(xl, r.bottom());
  for (int i = 1; i <= 64; ++i) {
    const double u = i / 64.0;
    curve.lineTo(xl + u * (xh - xl), r.bottom() - std::pow(u, gamma_) * r.height());
  }
  curve.lineTo(r.right(), r.top());
  p.setBrush(Qt::NoBrush);
  p.setPen(QPen(QColor(255, 200, 60), 1.5));
  p.drawPath(curve);
  // The handles: the limits the mouse drags.
  for (const double x : {xl, xh}) {
    p.setPen(QPen(QColor(255, 255, 255), 2));
    p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()));
    p.setBrush(QColor(255, 255, 255));
    p.drawPolygon(QPolygonF({QPointF(x - 5, r.bottom() + 9), QPointF(x + 5, r.bottom() + 9),
                             QPointF(x, r.bottom() + 2)}));
  }
  p.setPen(palette().text().color());
  const auto [lo, hi] = axis();
  p.drawText(QRectF(r.left(), r.bottom() + 3, r.width(), 16), Qt::AlignLeft,
             QString::number(lo, 'g', 6));
  p.drawText(QRectF(r.left(), r.bottom() + 3, r.width(), 16), Qt::AlignRight,
             QString::number(hi, 'g', 6));
}

void HistogramWidget::mousePressEvent(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton) return;
  const double x = e->position().x();
  const double dl = std::abs(x - x_of(low_)), dh = std::abs(x - x_of(high_));
  // The nearer handle; a press away from both moves the nearer one there.
  dragging_ = dl <= dh ? 1 : 2;
  if (std::min(dl, dh) > kGrab) mouseMoveEvent(e);
}

void HistogramWidget::mouseMoveEvent(QMouseEvent* e) {
  if (!dragging_) {
    const double x = e->position().x();
    const bool near = std::abs(x - x_of(low_)) <= kGrab || std::abs(x - x_of(high_)) <= kGrab;
    setCursor(near ? Qt::SizeHorCursor : Qt::ArrowCursor);
    return;
  }
  const double v = value_at(std::clamp(e->position().x(), plot().left(), plot().right()));
  if (dragging_ == 1) {
    low_ = std::min(v, high_);
  } else {
    high_ = std::max(v, low_);
  }
  update();
  emit limits_dragged(low_, high_);
}

void HistogramWidget::mouseReleaseEvent(QMouseEvent*) {
  dragging_ = 0;
}

// ---- the dock ----

HistogramPanel::HistogramPanel(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  auto* v = new QVBoxLayout(this);
  title_ = new QLabel;
  title_->setWordWrap(true);
  v->addWidget(title_);
  auto* row = new QHBoxLayout;
  channel_ = new QComboBox;
  channel_->setObjectName(QStringLiteral("histogram_channel"));
  channel_->setToolTip(tr("The channel of the composite whose limits, gamma and colour to set"));
  visible_ = new QCheckBox(tr("Visible"));
  visible_->setObjectName(QStringLiteral("channel_visible"));
  colour_ = new QPushButton(tr("Colour…"));
  colour_->setObjectName(QStringLiteral("channel_colour"));
  row->addWidget(channel_, 1);
  row->addWidget(visible_);
  row->addWidget(colour_);
  v->addLayout(row);
  plot_ = new HistogramWidget;
  plot_->setObjectName(QStringLiteral("histogram_plot"));
  plot_->setToolTip(tr("Drag the white handles to set the contrast limits"));
  v->addWidget(plot_, 1);
  pass_ = new detail::PassBar;
  v->addWidget(pass_);
  auto_pass_ = new detail::PassBar;
  auto_pass_->setObjectName(QStringLiteral("auto_pass_bar"));
  v->addWidget(auto_pass_);
  limits_ = new QLabel;
  limits_->setObjectName(QStringLiteral("histogram_limits"));
  v->addWidget(limits_);
  auto* g = new QHBoxLayout;
  g->addWidget(new QLabel(tr("Gamma")));
  gamma_slider_ = new QSlider(Qt::Horizontal);
  gamma_slider_->setRange(-100, 100);
  gamma_slider_->setObjectName(QStringLiteral("gamma_slider"));
  gamma_ = new QDoubleSpinBox;
  gamma_->setRange(0.1, 10.0);
  gamma_->setDecimals(2);
  gamma_->setSingleStep(0.05);
  gamma_->setValue(1.0);
  gamma_->setObjectName(QStringLiteral("gamma"));
  gamma_->setToolTip(
      tr("Shows the normalised value u as u^gamma: below 1 brightens dark "
         "pixels, above 1 darkens them; 1 is linear"));
  g->addWidget(gamma_slider_, 1);
  g->addWidget(gamma_);
  v->addLayout(g);
  auto* b = new QHBoxLayout;
  log_ = new QCheckBox(tr("Log scale"));
  log_->setObjectName(QStringLiteral("histogram_log"));
  // Microscopy images are mostly background: on a linear scale its peak flattens the rest.
  log_->setChecked(true);
  plot_->set_log(true);
  auto_ = new QPushButton(tr("Auto"));
  auto_->setObjectName(QStringLiteral("histogram_auto"));
  auto_->setToolTip(tr("Limits at the 0.5 and 99.5 percentiles"));
  split_ = new QPushButton(tr("Split channels"));
  split_->setObjectName(QStringLiteral("split_channels"));
  split_->setToolTip(tr("One grey layer per channel (undoable)"));
  b->addWidget(log_);
  b->addStretch(1);
  b->addWidget(auto_);
  b->addWidget(split_);
  v->addLayout(b);
  auto* note = new QLabel(tr("Filters run on a composite channel by channel."));
  note->setObjectName(QStringLiteral("composite_note"));
  note->setWordWrap(true);
  v->addWidget(note);
  connect(split_, &QPushButton::clicked, this, &HistogramPanel::split_channels);
  connect(pass_, &detail::PassBar::retry, this, [this] {
    file_.reset();
    request_histogram();
  });

  connect(plot_, &HistogramWidget::limits_dragged, this,
          [this](double lo, double hi) { apply(lo, hi, gamma_->value(), tr("contrast")); });
  connect(gamma_, &QDoubleSpinBox::valueChanged, this, [this](double gamma) {
    if (updating_) return;
    updating_ = true;
    gamma_slider_->setValue(slider_of(gamma));
    updating_ = false;
    const auto [lo, hi] = plot_->limits();
    apply(lo, hi, gamma, tr("gamma"));
  });
  connect(gamma_slider_, &QSlider::valueChanged, this, [this](int s) {
    if (!updating_) gamma_->setValue(gamma_of(s));
  });
  connect(log_, &QCheckBox::toggled, plot_, &HistogramWidget::set_log);
  connect(auto_, &QPushButton::clicked, this, &HistogramPanel::auto_limits);
  connect(auto_pass_, &detail::PassBar::retry, this, &HistogramPanel::auto_limits);
  connect(channel_, &QComboBox::currentIndexChanged, this, [this] {
    if (updating_) return;
    refresh_controls();
    request_histogram();
  });
  connect(visible_, &QCheckBox::toggled, this, [this](bool on) {
    if (updating_ || channel() < 0) return;
    Layer l = host_.layer(layer_);
    LayerDisplay d = LayerDisplay::of(l);
    d.channels[std::size_t(channel())].visible = on;
    set_layer_display(host_, layer_, d, tr("channel visibility"));
  });
  connect(colour_, &QPushButton::clicked, this, [this] {
    if (channel() < 0) return;
    const Layer l = host_.layer(layer_);
    const QColor c = QColorDialog::getColor(QColor(l.channels[std::size_t(channel())].colour), this,
                                            tr("Channel colour"));
    if (!c.isValid() || !host_.has_layer(layer_)) return;
    LayerDisplay d = LayerDisplay::of(host_.layer(layer_));
    d.channels[std::size_t(channel())].colour = c.rgb();
    set_layer_display(host_, layer_, d, tr("channel colour"));
  });

  connect(&host_, &Workspace::current_layer_changed, this, &HistogramPanel::show_layer);
  connect(&host_, &Workspace::layer_changed, this, [this](int id) {
    if (id != layer_) return;
    refresh_controls();
    request_histogram();  // only when the data changed (checked there)
  });
  connect(&host_, &Workspace::layer_removed, this, [this](int id) {
    if (id == layer_) show_layer(host_.current_layer());
  });
  show_layer(host_.current_layer());
}

int HistogramPanel::channel() const {
  const Layer l = host_.layer(layer_);
  return l.composite() ? std::clamp(channel_->currentIndex(), 0, int(l.channels.size()) - 1) : -1;
}

void HistogramPanel::set_channel(int c) {
  channel_->setCurrentIndex(c);
}

void HistogramPanel::show_layer(int id) {
  layer_ = host_.has_layer(id) ? id : -1;
  array_ = {};
  host_data_ = {};
  file_.reset();
  histogram_channel_ = -2;
  if (pass_->running()) pass_->cancel();
  pass_->hide();
  updating_ = true;
  channel_->clear();
  const Layer l = host_.layer(layer_);
  for (const Channel& c : l.channels) {
    QPixmap swatch(12, 12);
    swatch.fill(QColor(c.colour));
    channel_->addItem(QIcon(swatch), c.name);
  }
  updating_ = false;
  plot_->clear_histogram();
  refresh_controls();
  request_histogram();
}

void HistogramPanel::refresh_controls() {
  const Layer l = host_.layer(layer_);
  const bool composite = l.composite();
  const int c = channel();
  updating_ = true;
  // Colour swatches follow the channels' colours.
  for (int i = 0; composite && i < channel_->count() && i < int(l.channels.size()); ++i) {
    QPixmap swatch(12, 12);
    swatch.fill(QColor(l.channels[std::size_t(i)].colour));
    channel_->setItemIcon(i, QIcon(swatch));
  }
  channel_->setVisible(composite);
  visible_->setVisible(composite);
  colour_->setVisible(composite);
  split_->setVisible(composite);
  findChild<QLabel*>(QStringLiteral("composite_note"))->setVisible(composite);
  const bool labels = !composite && canonical_colormap(l.colormap) == QLatin1String("labels");
  for (QWidget* w : std::initializer_list<QWidget*>{plot_, gamma_, gamma_slider_, auto_})
    w->setEnabled(l.valid() && !labels);
  double lo = l.contrast_min, hi = l.contrast_max, gamma = l.gamma;
  if (c >= 0) {
    const Channel& ch = l.channels[std::size_t(c)];
    lo = ch.contrast_min;
    hi = ch.contrast_max;
    gamma = ch.gamma;
    visible_->setChecked(ch.visible);
  }
  const QString name = shown_name(l.name);
  title_->setText(!l.valid() ? tr("No layer")
                  : c >= 0   ? tr("%1, channel %2").arg(name, l.channels[std::size_t(c)].name)
                  : labels   ? tr("%1 (labels: no contrast)").arg(name)
                             : name);
  title_->setToolTip(l.valid() ? l.name : QString());
  plot_->set_limits(lo, hi);
  plot_->set_gamma(gamma);
  gamma_->setValue(gamma);
  gamma_slider_->setValue(slider_of(gamma));
  limits_->setText(tr("Limits %1 – %2").arg(lo, 0, 'g', 6).arg(hi, 0, 'g', 6));
  updating_ = false;
}

void HistogramPanel::request_histogram() {
  const Layer l = host_.layer(layer_);
  if (!l.valid()) return;
  if (l.file_backed()) {
    request_file_histogram(l);
    return;
  }
  const int c = channel();
  // Limits, gamma and colours change without the data: keep the histogram.
  const bool same =
      c == histogram_channel_ &&
      (l.array.valid() ? array_.same_memory(l.array) : l.host.data() == host_data_.data());
  if (same && (array_.valid() || host_data_.valid())) return;
  array_ = l.array;
  host_data_ = l.array.valid() ? gpix::HostArray{} : l.host;
  histogram_channel_ = c;
  const quint64 req = ++request_;
  ++pending_;
  detail::run_async(
      this,
      [a = l.array, h = host_data_, dev = host_.device(), c]() {
        gpix::Array d = a.valid() ? a : display_copy(h, dev);
        if (c >= 0) d = channel_plane(d, std::size_t(c));
        const gpix::Stats st = gpix::stats(d);
        Computed out;
        out.min = st.min.as_double();
        out.max = st.max.as_double();
        if (st.count == 0 || !std::isfinite(out.min) || !std::isfinite(out.max)) return out;
        if (!(out.max > out.min)) out.max = out.min + 1;
        out.counts = gpix::histogram(d, kBins, out.min, out.max).counts;
        return out;
      },
      [this, req](const detail::Outcome<Computed>& out) {
        --pending_;
        if (req != request_) return;  // another layer or channel since
        if (!out.value) {
          host_.show_status(tr("No histogram: %1").arg(out.error));
          plot_->clear_histogram();
          return;
        }
        plot_->set_histogram(out.value->counts, out.value->min, out.value->max);
      });
}

void HistogramPanel::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  request_histogram();  // a file-backed layer's pass waited for this
}

void HistogramPanel::request_file_histogram(const Layer& l) {
  // Display changes (limits, gamma) come as layer changes too: the file's histogram stays.
  if (file_.lock() == l.file) return;
  if (!isVisible()) return;  // showEvent asks again
  file_ = l.file;
  array_ = {};
  host_data_ = {};
  histogram_channel_ = -1;
  plot_->clear_histogram();
  const quint64 req = ++request_;
  ++pending_;
  const auto token = pass_->start(tr("Histogram of the whole stack"));
  detail::run_async(
      this, detail::long_pool(),
      [file = l.file, dev = host_.device(), token]() {
        return stack_histogram(file, dev, kBins, &token->cancel,
                               detail::PassToken::progress_of(token));
      },
      [this, req, token](const detail::Outcome<StackHistogram>& out) {
        --pending_;
        if (req != request_) return;  // another layer since (its pass was cancelled)
        if (!out.value) {
          // Cancel said so already; Retry reads the file again.
          if (!token->cancel) pass_->finish(token, tr("No histogram: %1").arg(out.error), true);
          return;
        }
        if (out.value->counts.empty()) {
          plot_->clear_histogram();
        } else {
          plot_->set_histogram(out.value->counts, out.value->min, out.value->max);
        }
        pass_->finish(token, out.value->cached
                                 ? tr("Histogram of the whole stack, from the cache (the file "
                                      "was not read again)")
                                 : tr("Histogram of the whole stack, read from the file"));
      });
}

void HistogramPanel::apply(double low, double high, double gamma, const QString& what) {
  if (updating_ || !host_.has_layer(layer_)) return;
  const Layer l = host_.layer(layer_);
  LayerDisplay d = LayerDisplay::of(l);
  const int c = channel();
  if (c >= 0) {
    Channel& ch = d.channels[std::size_t(c)];
    ch.contrast_min = low;
    ch.contrast_max = high;
    ch.gamma = gamma;
  } else {
    d.contrast_min = low;
    d.contrast_max = high;
    d.gamma = gamma;
  }
  limits_->setText(tr("Limits %1 – %2").arg(low, 0, 'g', 6).arg(high, 0, 'g', 6));
  set_layer_display(host_, layer_, d, what);
}

void HistogramPanel::auto_limits() {
  const Layer l = host_.layer(layer_);
  if (!l.valid()) return;
  const int c = channel();
  const int id = layer_;
  if (l.file_backed()) {
    ++pending_;
    detail::start_stack_auto_contrast(
        this, host_, id, auto_pass_,
        [this, id](double lo, double hi) {
          if (id != layer_) return;  // the user moved on
          plot_->set_limits(lo, hi);
          apply(lo, hi, gamma_->value(), tr("contrast"));
        },
        [this] { --pending_; });
    return;
  }
  ++pending_;
  detail::run_async(
      this,
      [a = l.array, h = l.array.valid() ? gpix::HostArray{} : l.host, dev = host_.device(), c]() {
        const gpix::Array d = a.valid() ? a : display_copy(h, dev);
        return auto_contrast(d, c);  // c = -1: the whole layer
      },
      [this, id, c](const detail::Outcome<std::pair<double, double>>& out) {
        --pending_;
        if (!out.value) {
          host_.show_status(tr("No automatic limits: %1").arg(out.error));
          return;
        }
        if (id != layer_ || c != channel()) return;  // the user moved on
        plot_->set_limits(out.value->first, out.value->second);
        apply(out.value->first, out.value->second, gamma_->value(), tr("contrast"));
      });
}

void HistogramPanel::split_channels() {
  if (layer_ >= 0) request_split_channels(host_, layer_, this);
}

}  // namespace gpix::ui
