#pragma once
// The metadata card of the current layer: shape, dtype, size, min, max, mean, device, memory
// kind (gpix::card, computed on the device) and a small histogram.
#include <QLabel>
#include <QMap>
#include <QWidget>
#include <vector>

#include "gpix/plugin_api.h"

namespace gpix::ui {

class Histogram : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  void set_counts(std::vector<std::uint64_t> counts) {
    counts_ = std::move(counts);
    update();
  }
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  QSize sizeHint() const override { return {200, 60}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  std::vector<std::uint64_t> counts_;
};

class LayerCard : public QWidget {
  Q_OBJECT
 public:
  explicit LayerCard(gpix::plugin::HostContext& host, QWidget* parent = nullptr);
  // The shown value of a field: "name", "shape", "dtype", "size", "min", "max", "mean",
  // "device", "kind"; empty when no layer is shown.
  QString value(const QString& key) const;
  const Histogram* histogram() const { return hist_; }

 public slots:
  void refresh();

 private:
  gpix::plugin::HostContext& host_;
  QMap<QString, QLabel*> fields_;
  Histogram* hist_ = nullptr;
  QLabel* error_ = nullptr;
};

}  // namespace gpix::ui
