#pragma once
// The interactive histogram: the current layer's (or a composite channel's) histogram computed
// on the device, two handles dragged with the mouse that set the contrast limits live, gamma,
// a log scale and automatic (percentile) limits; for composites also the channel's colour and
// visibility. Every change is a LayerDisplayCommand (a drag is one undo step). A file-backed
// layer's histogram is a pass over its file in slabs, with progress and Cancel, kept per file.
#include <QWidget>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "gpix/array.h"
#include "gpix/host_array.h"
#include "gpix/ui/workspace.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPushButton;
class QSlider;

namespace gpix::ui {

namespace detail {
class PassBar;
}

// Bars over a value range with two vertical handles at the limits. Dragging a handle (or the
// nearest one to a press inside the plot) moves it; limits_dragged is emitted on every move.
class HistogramWidget : public QWidget {
  Q_OBJECT
 public:
  explicit HistogramWidget(QWidget* parent = nullptr);
  // Counts of equal bins over [minimum, maximum].
  void set_histogram(std::vector<std::uint64_t> counts, double minimum, double maximum);
  void clear_histogram();
  void set_limits(double low, double high);
  void set_gamma(double gamma);
  void set_log(bool on);
  bool log_scale() const { return log_; }
  std::pair<double, double> limits() const { return {low_, high_}; }
  // The axis: the data's range widened to hold the limits.
  std::pair<double, double> axis() const;
  // Widget x of a value and the value at a widget x (on the axis).
  double x_of(double value) const;
  double value_at(double x) const;
  const std::vector<std::uint64_t>& counts() const { return counts_; }
  QSize sizeHint() const override { return {320, 160}; }

 signals:
  void limits_dragged(double low, double high);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;

 private:
  QRectF plot() const;
  std::vector<std::uint64_t> counts_;
  double min_ = 0, max_ = 1;
  double low_ = 0, high_ = 1;
  double gamma_ = 1;
  bool log_ = false;
  int dragging_ = 0;  // 0 none, 1 low, 2 high
};

class HistogramPanel : public QWidget {
  Q_OBJECT
 public:
  explicit HistogramPanel(Workspace& host, QWidget* parent = nullptr);

  HistogramWidget* histogram() const { return plot_; }
  // The layer shown (-1 none) and its channel (-1 for a layer that is not a composite).
  int layer() const { return layer_; }
  int channel() const;
  // Whether a histogram or automatic limits are being computed.
  bool busy() const { return pending_ > 0; }

 public slots:
  void set_channel(int channel);
  void auto_limits();
  void split_channels();

 protected:
  // A file-backed layer's histogram is read only while the dock is seen (a hidden dock must not
  // read a 200 GB file in the background); showing it asks again.
  void showEvent(QShowEvent*) override;

 private:
  void show_layer(int id);
  void refresh_controls();
  void request_histogram();
  void request_file_histogram(const Layer& l);
  // Pushes the display change (one merged undo step per kind in a row).
  void apply(double low, double high, double gamma, const QString& what);

  Workspace& host_;
  int layer_ = -1;
  // What the shown histogram was computed from, so that a change of limits or colour alone
  // does not recompute it.
  gpix::Array array_;
  gpix::HostArray host_data_;
  // A file-backed layer's file: its histogram is a pass over the file (stack_passes.h), shown
  // with its progress and Cancel in pass_.
  std::weak_ptr<StackFile> file_;
  detail::PassBar* pass_ = nullptr;
  // Auto on a file-backed layer: the whole stack's percentiles, its own pass (the histogram's
  // may be under way in pass_).
  detail::PassBar* auto_pass_ = nullptr;
  int histogram_channel_ = -2;
  quint64 request_ = 0;
  int pending_ = 0;
  bool updating_ = false;
  HistogramWidget* plot_;
  QLabel* title_;
  QComboBox* channel_;
  QCheckBox* visible_;
  QPushButton* colour_;
  QDoubleSpinBox* gamma_;
  QSlider* gamma_slider_;
  QCheckBox* log_;
  QPushButton* auto_;
  QPushButton* split_;
  QLabel* limits_;
};

}  // namespace gpix::ui
