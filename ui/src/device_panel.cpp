#include "gpix/ui/device_panel.h"
#include "gpix/memory.h"
#include "gpix/ui/stack_file.h"

#include <QFrame>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include "gpix/device.h"
#include "gpix/error.h"
#include "gpix/stats.h"

namespace gpix::ui {

namespace {
QString qs(std::string_view s) {
  return QString::fromUtf8(s.data(), qsizetype(s.size()));
}
}  // namespace

DevicePanel::DevicePanel(Workspace& host, QWidget* parent) : QWidget(parent), host_(host) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(4, 4, 4, 4);
  auto* scroll = new QScrollArea;
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // labels wrap instead
  auto* inner = new QWidget;
  auto* layout = new QVBoxLayout(inner);
  layout->setContentsMargins(0, 0, 0, 0);
  const auto& devs = gpix::devices();
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const gpix::Device dev = devs[i];
    const gpix::DeviceInfo& info = dev.info();
    auto* frame = new QFrame;
    frame->setFrameShape(QFrame::StyledPanel);
    frame->setObjectName(QStringLiteral("device_card_%1").arg(i));
    auto* v = new QVBoxLayout(frame);
    Card c;
    c.title = new QLabel;
    c.title->setWordWrap(true);
    QStringList d;
    d << QStringLiteral("%1 %2 · %3")
             .arg(qs(gpix::name(info.backend)).toUpper(), qs(gpix::name(info.type)),
                  qs(info.vendor));
    d << QStringLiteral("Memory %1 (largest block %2) · %3 compute units")
             .arg(qs(gpix::human_bytes(info.global_memory)),
                  qs(gpix::human_bytes(info.max_allocation)))
             .arg(info.compute_units);
    QString caps = dev.supports_fp64() ? QStringLiteral("fp64") : QStringLiteral("no fp64");
    if (!info.compute_capability.empty())
      caps += QStringLiteral(" · sm ") + qs(info.compute_capability);
    d << caps;
    d << QStringLiteral("%1 · driver %2").arg(qs(info.api_version), qs(info.driver_version));
    c.details = new QLabel(d.join(QLatin1Char('\n')));
    c.details->setWordWrap(true);
    c.details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    c.memory = new QLabel;
    c.memory->setWordWrap(true);
    c.memory->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Labels wrap to the dock's width instead of asking for their longest line, so that the
    // dock can be narrow and nothing is cut; the tooltip has the whole text as well.
    for (QLabel* l : {c.title, c.details, c.memory}) {
      l->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
      l->setMinimumWidth(0);
    }
    c.details->setToolTip(c.details->text());
    c.use = new QPushButton(tr("Use this device"));
    c.use->setObjectName(QStringLiteral("use_device_%1").arg(i));
    // The layers move on a worker (the host refuses while a task runs); the panel follows
    // device_changed.
    connect(c.use, &QPushButton::clicked, this, [this, dev] {
      host_.request_device(dev);
      refresh();
    });
    v->addWidget(c.title);
    v->addWidget(c.details);
    v->addWidget(c.memory);
    v->addWidget(c.use);
    layout->addWidget(frame);
    cards_.append(c);
  }
  // Backends that did not load say why (no NVIDIA driver, ...).
  for (const gpix::BackendStatus& s : gpix::backend_status()) {
    if (s.available && s.devices > 0) continue;
    auto* l =
        new QLabel(QStringLiteral("%1: %2").arg(qs(gpix::name(s.backend)).toUpper(), qs(s.detail)));
    l->setWordWrap(true);
    l->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    l->setToolTip(l->text());
    l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->setStyleSheet(QStringLiteral("color: gray"));
    layout->addWidget(l);
  }
  if (devs.empty()) layout->addWidget(new QLabel(tr("No device found.")));
  host_memory_ = new QLabel;
  host_memory_->setObjectName(QStringLiteral("host_memory"));
  host_memory_->setWordWrap(true);
  host_memory_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  host_memory_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(host_memory_);
  layout->addStretch(1);
  scroll->setWidget(inner);
  outer->addWidget(scroll);
  connect(&host_, &Workspace::device_changed, this, &DevicePanel::refresh);
  connect(&host_, &Workspace::layer_added, this, &DevicePanel::refresh);
  connect(&host_, &Workspace::layer_removed, this, &DevicePanel::refresh);
  timer_.setInterval(2000);  // memory changes as filters run: refresh live
  connect(&timer_, &QTimer::timeout, this, &DevicePanel::refresh);
  timer_.start();
  refresh();
}

QString DevicePanel::host_memory_text() const {
  std::uint64_t in_memory = 0, on_disk = 0;
  int files = 0;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (l.host.valid()) in_memory += l.host.bytes();
    if (l.file_backed()) {
      ++files;
      on_disk += l.file->bytes();
    }
  }
  const std::uint64_t cache = plane_cache_bytes(), limit = plane_cache_limit();
  return tr("Host memory: layers hold %1; plane cache %2 of %3 (%4%)")
             .arg(qs(gpix::human_bytes(in_memory)), qs(gpix::human_bytes(cache)),
                  qs(gpix::human_bytes(limit)))
             .arg(limit ? 100.0 * double(cache) / double(limit) : 0.0, 0, 'f', 1) +
         (files ? tr("; %n file-backed layer(s) (%1 in their files, planes read on demand)",
                     nullptr, files)
                      .arg(qs(gpix::human_bytes(on_disk)))
                : QString());
}

std::uint64_t DevicePanel::layer_bytes(int i) const {
  const auto& devs = gpix::devices();
  if (i < 0 || std::size_t(i) >= devs.size()) return 0;
  std::uint64_t sum = 0;
  for (int id : host_.layer_ids()) {
    const Layer l = host_.layer(id);
    if (l.array.valid() && l.array.device() == devs[std::size_t(i)]) sum += l.array.bytes();
  }
  return sum;
}

void DevicePanel::refresh() {
  const auto& devs = gpix::devices();
  for (qsizetype i = 0; i < cards_.size(); ++i) {
    const gpix::Device& dev = devs[std::size_t(i)];
    const bool current = dev == host_.device();
    Card& c = cards_[i];
    c.title->setText(
        QStringLiteral("<b>%1%2</b>")
            .arg(current ? QStringLiteral("● ") : QString(), qs(dev.name()).toHtmlEscaped()) +
        (current ? tr(" <i>(current)</i>") : QString()));
    c.use->setEnabled(!current);
    const std::uint64_t held = layer_bytes(int(i));
    const std::uint64_t total = dev.info().global_memory;
    // gpix's pool accounting, and the driver's free memory where the API reports it.
    const gpix::MemoryReport m = gpix::memory_report(dev);
    const QString driver = m.device_known ? tr("driver: %1 free of %2")
                                                .arg(qs(gpix::human_bytes(m.device_free)),
                                                     qs(gpix::human_bytes(m.device_total)))
                                          : tr("driver: free memory unknown (%1)").arg(qs(m.note));
    c.memory->setText(tr("Layers hold %1 of %2 (%3%)")
                          .arg(qs(gpix::human_bytes(held)), qs(gpix::human_bytes(total)))
                          .arg(total ? 100.0 * double(held) / double(total) : 0.0, 0, 'f', 1) +
                      QLatin1Char('\n') +
                      tr("gpix: %1 in use, %2 cached, peak %3; %4")
                          .arg(qs(gpix::human_bytes(m.gpix.bytes_in_use)),
                               qs(gpix::human_bytes(m.gpix.bytes_cached)),
                               qs(gpix::human_bytes(m.gpix.peak_bytes_in_use)), driver));
    c.memory->setToolTip(c.memory->text());
    c.title->setToolTip(qs(dev.label()));
  }
  if (host_memory_) {
    host_memory_->setText(host_memory_text());
    host_memory_->setToolTip(host_memory_->text());
  }
}

QString DevicePanel::card_text(int i) const {
  if (i < 0 || i >= cards_.size()) return {};
  const Card& c = cards_[i];
  return c.title->text() + QLatin1Char('\n') + c.details->text() + QLatin1Char('\n') +
         c.memory->text();
}

bool DevicePanel::card_is_current(int i) const {
  return i >= 0 && i < cards_.size() && cards_[i].title->text().contains(QStringLiteral("●"));
}

QPushButton* DevicePanel::use_button(int i) const {
  return i >= 0 && i < cards_.size() ? cards_[i].use : nullptr;
}

}  // namespace gpix::ui
