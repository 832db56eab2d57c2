#pragma once
// The metadata card of the current layer: shape, dtype, size, min, max, mean, device, memory
// kind (gpix::card, computed on the device) and a small histogram (gpix::histogram, kBins bins
// between min and max). The statistics are computed off the GUI thread: the fields show "…"
// until refreshed() says they arrived.
#include <QFormLayout>
#include <QLabel>
#include <QMap>
#include <QTimer>
#include <QWidget>
#include <atomic>
#include <memory>
#include <vector>

#include "gpix/ui/workspace.h"

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
  explicit LayerCard(Workspace& host, QWidget* parent = nullptr);
  // Stops a statistics pass over a file-backed stack at its next slab.
  ~LayerCard() override;
  // The shown value of a field: "name", "shape", "dtype", "size", "min", "max", "mean",
  // "device", "kind", "spacing" (per spatial axis with the unit, spacing_text()), "channels"
  // (a composite's count, names and colours as rich text, channels_text(); for a layer that
  // is one channel of a file, which one and a file colour no colour map has, from its
  // metadata "channels" and "colour"; the row is hidden for other layers); empty when no layer
  // is shown.
  QString value(const QString& key) const;
  const Histogram* histogram() const { return hist_; }
  static constexpr int kBins = 64;

 public slots:
  void refresh();

 signals:
  // The statistics and histogram of the shown layer arrived (or their error).
  void refreshed();

 private:
  // A file-backed layer (stack_file.h): what its header says at once, its statistics from a
  // pass over the file in the background ("computing… 40%" meanwhile).
  void show_file(const Layer& layer);

  Workspace& host_;
  QFormLayout* form_ = nullptr;
  QMap<QString, QLabel*> fields_;
  QTimer* stats_timer_ = nullptr;       // updates the pass's percentage
  std::weak_ptr<StackFile> stats_for_;  // the file whose pass this card waits for
  std::shared_ptr<std::atomic<bool>> stop_ = std::make_shared<std::atomic<bool>>(false);
  Histogram* hist_ = nullptr;
  QLabel* error_ = nullptr;
  quint64 request_ = 0;  // the newest refresh; older results are dropped
  // The same for the workers, which skip refreshes that were superseded before they ran.
  std::shared_ptr<std::atomic<quint64>> latest_ = std::make_shared<std::atomic<quint64>>(0);
};

}  // namespace gpix::ui
