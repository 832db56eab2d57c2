#include "gpix/ui/layer_card.h"

#include <QFormLayout>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>

#include "gpix/error.h"
#include "gpix/stats.h"
#include "gpix/ui/render.h"

namespace gpix::ui {

namespace {
QString qs(const std::string& s) {
  return QString::fromStdString(s);
}
}  // namespace

void Histogram::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().base());
  if (counts_.empty()) return;
  const std::uint64_t peak = *std::max_element(counts_.begin(), counts_.end());
  if (peak == 0) return;
  const double w = double(width()) / double(counts_.size());
  p.setPen(Qt::NoPen);
  p.setBrush(palette().highlight());
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    // Square-root scale: the background peak would otherwise flatten everything else.
    const double h = std::sqrt(double(counts_[i]) / double(peak)) * (height() - 2);
    p.drawRect(QRectF(double(i) * w, height() - h, std::max(w, 1.0), h));
  }
}

LayerCard::LayerCard(gpix::plugin::HostContext& host, QWidget* parent)
    : QWidget(parent), host_(host) {
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  const std::pair<const char*, QString> rows[] = {
      {"name", tr("Layer")}, {"shape", tr("Shape")},   {"dtype", tr("Type")},
      {"size", tr("Size")},  {"min", tr("Min")},       {"max", tr("Max")},
      {"mean", tr("Mean")},  {"device", tr("Device")}, {"kind", tr("Memory")}};
  for (const auto& [key, label] : rows) {
    auto* l = new QLabel;
    l->setObjectName(QStringLiteral("card_") + QLatin1String(key));
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setWordWrap(true);
    form->addRow(label, l);
    fields_.insert(QLatin1String(key), l);
  }
  v->addLayout(form);
  hist_ = new Histogram;
  hist_->setMinimumHeight(50);
  v->addWidget(hist_);
  error_ = new QLabel;
  error_->setStyleSheet(QStringLiteral("color: #c03030"));
  error_->setWordWrap(true);
  error_->hide();
  v->addWidget(error_);
  v->addStretch(1);
  connect(&host_, &gpix::plugin::HostContext::current_layer_changed, this, &LayerCard::refresh);
  connect(&host_, &gpix::plugin::HostContext::layer_changed, this, [this](int id) {
    if (id == host_.current_layer()) refresh();
  });
  connect(&host_, &gpix::plugin::HostContext::device_changed, this, &LayerCard::refresh);
  refresh();
}

QString LayerCard::value(const QString& key) const {
  const QLabel* l = fields_.value(key);
  return l ? l->text() : QString();
}

void LayerCard::refresh() {
  for (QLabel* l : fields_) l->clear();
  hist_->set_counts({});
  error_->hide();
  const int id = host_.current_layer();
  if (id < 0) return;
  const gpix::plugin::Layer layer = host_.layer(id);
  fields_["name"]->setText(layer.name);
  try {
    gpix::Array a = layer.array;
    if (!a.valid()) {
      // Host-only layer (the device could not hold it): say so instead of computing on it.
      fields_["shape"]->setText(qs(layer.host.shape().str()));
      fields_["dtype"]->setText(QString::fromUtf8(gpix::name(layer.host.dtype()).data()));
      fields_["size"]->setText(qs(gpix::human_bytes(layer.host.bytes())));
      fields_["device"]->setText(tr("host memory only"));
      return;
    }
    const gpix::Card c = gpix::card(a);  // min/max/mean on the device, one pass
    fields_["shape"]->setText(qs(c.shape.str()));
    fields_["dtype"]->setText(QString::fromUtf8(gpix::name(c.dtype).data()));
    fields_["size"]->setText(qs(c.size));
    fields_["min"]->setText(qs(c.stats.min.str()));
    fields_["max"]->setText(qs(c.stats.max.str()));
    fields_["mean"]->setText(
        QString::number(c.stats.mean, 'g', 6) +
        (c.stats.nan_count ? tr(" (%1 NaN)").arg(c.stats.nan_count) : QString()));
    fields_["device"]->setText(qs(c.device));
    fields_["kind"]->setText(QString::fromUtf8(gpix::name(c.kind).data()));
    const double lo = c.stats.min.as_double(), hi = c.stats.max.as_double();
    hist_->set_counts(gpix::ui::histogram(host_.host_data(id), lo, hi > lo ? hi : lo + 1, 64));
  } catch (const gpix::Error& e) {
    error_->setText(qs(e.what()));
    error_->show();
  }
}

}  // namespace gpix::ui
