#pragma once
// The line profile: the values along the view's profile line (RoiOverlay's line tool) on the
// current layer and slice, plotted with QPainter (ProfilePlot), in pixels or the layer's unit,
// with the value under the cursor, an averaging width and CSV export.
//
// The values come from line_profile (roi.h) on a worker thread: only the box of pixels the line
// needs is read from the device. They follow the line while it is dragged, the slice and the
// layer; a newer request supersedes an older one and only the newest result is shown.
#include <QString>
#include <QWidget>
#include <atomic>
#include <memory>
#include <vector>

#include "gpix/ui/workspace.h"

class QCheckBox;
class QLabel;
class QPushButton;
class QSpinBox;

namespace gpix::ui {

class ImageView;
class RoiOverlay;

// A line plot of y over x with axes, round ticks and a marker at the hovered sample.
class ProfilePlot : public QWidget {
  Q_OBJECT
 public:
  explicit ProfilePlot(QWidget* parent = nullptr);
  void set_data(std::vector<double> x, std::vector<double> y, const QString& x_label);
  const std::vector<double>& x() const { return x_; }
  const std::vector<double>& y() const { return y_; }
  // The sample nearest to widget column `px` (-1: none), as the hover marker uses it.
  int sample_at(double px) const;
  // The widget column of distance x.
  double column_of(double x) const;
  int hovered() const { return hovered_; }
  // "12.5 µm: 431" for the hovered sample, empty when none.
  QString hover_text() const;

  QSize sizeHint() const override { return {360, 200}; }
  QSize minimumSizeHint() const override { return {160, 100}; }

 signals:
  void hovered_changed(int index);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void leaveEvent(QEvent*) override;

 private:
  QRectF plot_rect() const;
  std::vector<double> x_, y_;
  QString x_label_;
  double y_lo_ = 0, y_hi_ = 1;
  int hovered_ = -1;
};

class ProfilePanel : public QWidget {
  Q_OBJECT
 public:
  ProfilePanel(Workspace& host, ImageView* view, RoiOverlay* overlay, QWidget* parent = nullptr);
  ~ProfilePanel() override;

  ProfilePlot* plot() const { return plot_; }
  QSpinBox* width_box() const { return width_; }
  // Distances in pixels even on a calibrated layer (otherwise in its unit).
  QCheckBox* pixels_box() const { return in_pixels_; }
  bool busy() const { return pending_; }
  QString error_text() const { return error_; }
  // "distance_<unit>,value" lines (unit "px" when not calibrated).
  QString csv() const;

 public slots:
  void refresh();
  void export_csv(const QString& path);
  void export_dialog();

 signals:
  void profiled();  // a profile landed (or failed: error_text())
  void exported(const QString& path, const QString& error);

 private:
  Workspace& host_;
  ImageView* view_;
  RoiOverlay* overlay_;
  ProfilePlot* plot_ = nullptr;
  QSpinBox* width_ = nullptr;
  QCheckBox* in_pixels_ = nullptr;
  QLabel* info_ = nullptr;
  QLabel* hover_ = nullptr;
  QPushButton* export_ = nullptr;
  QString unit_;  // of the distances shown
  QString error_;
  bool pending_ = false;
  quint64 request_ = 0;
  std::shared_ptr<std::atomic<quint64>> latest_ = std::make_shared<std::atomic<quint64>>(0);
};

}  // namespace gpix::ui
