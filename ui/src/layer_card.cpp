#include "gpix/ui/layer_card.h"

#include <QFormLayout>
#include <QLabel>
#include <QPainter>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <string_view>

#include "async.h"
#include "gpix/error.h"
#include "gpix/filters/reductions.h"
#include "gpix/stats.h"
#include "gpix/ui/composite.h"

namespace gpix::ui {

namespace {
QString qs(const std::string& s) {
  return QString::fromStdString(s);
}

// The layer's name, shortened in the middle to the width it is given (whole in its tooltip).
// A word-wrapped label cannot break a name without spaces, so a 200-character file name made
// the card ask for its whole width and the dock area opened that much wider (a GUI
// walk-through, 2026-12-02); this one asks for at most about 24 characters.
class NameLabel : public QLabel {
 public:
  void set_name(const QString& name) {
    name_ = name;
    setToolTip(name);
    elide();
  }
  const QString& name() const { return name_; }
  QSize sizeHint() const override {
    QSize s = QLabel::sizeHint();
    s.setWidth(std::min(s.width(), fontMetrics().averageCharWidth() * 24));
    return s;
  }
  QSize minimumSizeHint() const override {
    return {fontMetrics().averageCharWidth() * 4, QLabel::minimumSizeHint().height()};
  }

 protected:
  void resizeEvent(QResizeEvent* e) override {
    QLabel::resizeEvent(e);
    elide();
  }

 private:
  void elide() {
    const QString shown = fontMetrics().elidedText(name_, Qt::ElideMiddle, width());
    if (shown != text()) setText(shown);
  }
  QString name_;
};
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

LayerCard::LayerCard(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  auto* v = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  const std::pair<const char*, QString> rows[] = {
      {"name", tr("Layer")},      {"shape", tr("Shape")},      {"dtype", tr("Type")},
      {"size", tr("Size")},       {"min", tr("Min")},          {"max", tr("Max")},
      {"mean", tr("Mean")},       {"device", tr("Device")},    {"kind", tr("Memory")},
      {"spacing", tr("Spacing")}, {"channels", tr("Channels")}};
  for (const auto& [key, label] : rows) {
    const bool name = std::string_view(key) == "name";
    QLabel* l = name ? new NameLabel : new QLabel;
    l->setObjectName(QStringLiteral("card_") + QLatin1String(key));
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setWordWrap(!name);
    form->addRow(label, l);
    fields_.insert(QLatin1String(key), l);
  }
  form_ = form;
  fields_["channels"]->setTextFormat(Qt::RichText);  // colour squares
  form_->setRowVisible(fields_["channels"], false);
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
  connect(&host_, &Workspace::current_layer_changed, this, &LayerCard::refresh);
  connect(&host_, &Workspace::layer_changed, this, [this](int id) {
    if (id == host_.current_layer()) refresh();
  });
  connect(&host_, &Workspace::device_changed, this, &LayerCard::refresh);
  stats_timer_ = new QTimer(this);
  stats_timer_->setInterval(250);
  connect(stats_timer_, &QTimer::timeout, this, [this] {
    const Layer l = host_.layer(host_.current_layer());
    if (!l.file_backed() || l.file->known_stats()) {
      stats_timer_->stop();
      return;
    }
    const QString text = tr("computing… %1%").arg(int(l.file->stats_progress() * 100));
    for (const char* key : {"min", "max", "mean"}) fields_[QLatin1String(key)]->setText(text);
  });
  refresh();
}

LayerCard::~LayerCard() {
  stop_->store(true);
}

void LayerCard::show_file(const Layer& layer) {
  const std::shared_ptr<StackFile> file = layer.file;
  fields_["shape"]->setText(qs(file->shape().str()));
  fields_["dtype"]->setText(QString::fromUtf8(gpix::name(file->dtype()).data()));
  fields_["size"]->setText(qs(gpix::human_bytes(file->bytes())));
  // Where the file is (a result's lives in the viewer's cache folder) is the tooltip.
  fields_["device"]->setText(tr("none: planes read on demand"));
  fields_["device"]->setToolTip(file->path());
  fields_["kind"]->setToolTip(file->path());
  fields_["kind"]->setText(tr("file-backed %1").arg(file->format()));
  if (const auto st = file->known_stats(); st && file->stats_progress() >= 1) {
    fields_["min"]->setText(QString::number(st->min, 'g', 8));
    fields_["max"]->setText(QString::number(st->max, 'g', 8));
    fields_["mean"]->setText(QString::number(st->mean, 'g', 6) +
                             (st->nan_count ? tr(" (%1 NaN)").arg(st->nan_count) : QString()));
    emit refreshed();
    return;
  }
  for (const char* key : {"min", "max", "mean"}) {
    fields_[QLatin1String(key)]->setText(tr("computing…"));
  }
  stats_timer_->start();
  if (stats_for_.lock() == file) return;  // its pass is under way; it refreshes when done
  stats_for_ = file;
  // One pass per file (StackFile::stats keeps the result), on a thread of its own.
  detail::run_async(
      this, detail::long_pool(),
      [file, dev = host_.device(), stop = stop_]() { return file->stats(dev, stop.get()); },
      [this, req = request_](const detail::Outcome<StackStats>& out) {
        stats_for_.reset();
        if (req != request_) {
          refresh();  // another layer is shown, or this one again: show what is known now
          return;
        }
        stats_timer_->stop();
        if (!out.value) {
          for (const char* key : {"min", "max", "mean"}) fields_[QLatin1String(key)]->clear();
          error_->setText(out.error);
          error_->show();
          emit refreshed();
          return;
        }
        refresh();
      });
}

QString LayerCard::value(const QString& key) const {
  const QLabel* l = fields_.value(key);
  if (const auto* n = dynamic_cast<const NameLabel*>(l)) return n->name();
  return l ? l->text() : QString();
}

void LayerCard::refresh() {
  for (QLabel* l : fields_) {
    l->clear();
    l->setToolTip({});
  }
  static_cast<NameLabel*>(fields_["name"])->set_name({});
  hist_->set_counts({});
  form_->setRowVisible(fields_["channels"], false);
  error_->hide();
  ++request_;
  const int id = host_.current_layer();
  if (id < 0) return;
  const Layer layer = host_.layer(id);
  static_cast<NameLabel*>(fields_["name"])->set_name(layer.name);
  fields_["spacing"]->setText(spacing_text(layer));
  // A composite's first axis is its channels: said here, not as a spacing. A layer that is one
  // channel of a file (a hyperstack's) says which, and a colour of the file no map has.
  if (layer.composite()) {
    fields_["channels"]->setText(channels_text(layer));
    form_->setRowVisible(fields_["channels"], true);
  } else {
    QStringList notes;
    for (const char* key : {"channels", "colour"}) {
      const QString v = layer.metadata.value(QLatin1String(key)).toString();
      if (!v.isEmpty()) notes << v.toHtmlEscaped();
    }
    fields_["channels"]->setText(notes.join(QStringLiteral("; ")));
    form_->setRowVisible(fields_["channels"], !notes.isEmpty());
  }
  const gpix::Array a = layer.array;
  if (layer.file_backed()) {
    show_file(layer);
    return;
  }
  if (!a.valid()) {
    // Host-only layer (the device could not hold it): say so instead of computing on it.
    fields_["shape"]->setText(qs(layer.host.shape().str()));
    fields_["dtype"]->setText(QString::fromUtf8(gpix::name(layer.host.dtype()).data()));
    fields_["size"]->setText(qs(gpix::human_bytes(layer.host.bytes())));
    fields_["device"]->setText(tr("host memory only"));
    return;
  }
  // What the handle knows at once; the statistics wait for the device, off this thread.
  fields_["shape"]->setText(qs(a.shape().str()));
  fields_["dtype"]->setText(QString::fromUtf8(gpix::name(a.dtype()).data()));
  fields_["size"]->setText(qs(gpix::human_bytes(a.shape().elements() * gpix::size_of(a.dtype()))));
  fields_["device"]->setText(qs(a.device().label()));
  for (const char* key : {"min", "max", "mean"}) fields_[QLatin1String(key)]->setText(tr("…"));
  struct Result {
    gpix::Card card;
    std::vector<std::uint64_t> counts;
    bool skipped = false;
  };
  latest_->store(request_);
  detail::run_async(
      this,
      [a, req = request_, latest = latest_]() {
        Result r;
        // Superseded while it waited (display tweaks refresh the card): nobody would see it.
        if (latest->load() != req) {
          r.skipped = true;
          return r;
        }
        r.card = gpix::card(a);  // min/max/mean on the device, one pass
        const double lo = r.card.stats.min.as_double(), hi = r.card.stats.max.as_double();
        if (std::isfinite(lo) && std::isfinite(hi)) {
          r.counts = gpix::histogram(a, kBins, lo, hi > lo ? hi : lo + 1).counts;
        }
        return r;
      },
      [this, req = request_](const detail::Outcome<Result>& out) {
        if (req != request_ || (out.value && out.value->skipped)) return;
        if (!out.value) {
          for (const char* key : {"min", "max", "mean"}) fields_[QLatin1String(key)]->clear();
          error_->setText(out.error);
          error_->show();
        } else {
          const gpix::Card& c = out.value->card;
          fields_["size"]->setText(qs(c.size));
          fields_["min"]->setText(qs(c.stats.min.str()));
          fields_["max"]->setText(qs(c.stats.max.str()));
          fields_["mean"]->setText(
              QString::number(c.stats.mean, 'g', 6) +
              (c.stats.nan_count ? tr(" (%1 NaN)").arg(c.stats.nan_count) : QString()));
          fields_["kind"]->setText(QString::fromUtf8(gpix::name(c.kind).data()));
          hist_->set_counts(out.value->counts);
        }
        emit refreshed();
      });
}

}  // namespace gpix::ui
