#pragma once
// The ROI panel: the tools, a table of the current layer's ROIs with their statistics (pixels,
// area in the layer's unit, mean, standard deviation, min, max, sum; measure_roi on the device),
// Crop to ROI (a new layer, one undo step; recorded in the workflow as core's "crop" when the
// result is the plain bounding box), deleting ROIs and CSV export.
//
// Measurements, crops and the CSV write run in the background (detail::run_async): the GUI
// thread never waits. A newer measurement supersedes an older one; only the newest is shown.
// On a file-backed layer a ROI on one slice reads that plane, an all-slices ROI the whole file
// in slabs (stack_roi_stats), with progress and Cancel; such results are kept per file.
#include <QString>
#include <QWidget>
#include <atomic>
#include <memory>
#include <vector>

#include "gpix/ui/roi.h"
#include "gpix/ui/workspace.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QTableWidget;

namespace gpix::ui {

class RoiOverlay;
namespace detail {
class PassBar;
}

class RoiPanel : public QWidget {
  Q_OBJECT
 public:
  RoiPanel(Workspace& host, RoiOverlay* overlay, QWidget* parent = nullptr);
  ~RoiPanel() override;

  QTableWidget* table() const { return table_; }
  // The ROIs and statistics shown (the layer's ROIs in id order), once measured.
  const QList<Roi>& rois() const { return rois_; }
  const std::vector<RoiStats>& stats() const { return stats_; }
  // Per ROI: why it could not be measured (empty where it was).
  const QStringList& errors() const { return errors_; }
  bool busy() const { return measuring_ || cropping_; }
  // The table as CSV: roi, shape, slice ("all" or the index on stacks, empty in 2D), pixels, area,
  // unit, mean, std, min, max, sum; numbers in their shortest exact form, NaN as "nan".
  QString csv() const;
  // The header text of the area column ("area (µm²)", "area (px)").
  QString area_header() const;
  // Pixels outside a non-rectangular ROI become 0 in crops (else they keep their values).
  bool zero_outside() const;
  void set_zero_outside(bool on);

 public slots:
  void refresh();
  // Crops the current layer to a ROI (the selected one when id is 0); crop_done tells the new
  // layer's id (-1 and the reason on failure).
  void crop(int id = 0);
  void delete_selected();
  void export_csv(const QString& path);
  void export_dialog();

 signals:
  void measured();
  void crop_done(int layer, const QString& error);
  void exported(const QString& path, const QString& error);

 private:
  void show_table();
  void on_layer_changed(int id);
  void measure_file(const Layer& l, const QList<Roi>& rois, quint64 req);

  Workspace& host_;
  RoiOverlay* overlay_;
  QTableWidget* table_ = nullptr;
  QCheckBox* all_planes_ = nullptr;
  QComboBox* outside_ = nullptr;
  QPushButton* crop_ = nullptr;
  QPushButton* delete_ = nullptr;
  QPushButton* export_ = nullptr;
  QLabel* status_ = nullptr;

  int layer_ = -1;
  Layer measured_;  // the data the table measured: a change of it measures again
  QList<Roi> rois_;
  std::vector<RoiStats> stats_;
  QStringList errors_;
  detail::PassBar* pass_ = nullptr;  // a file-backed layer's pass: progress, Cancel
  bool measuring_ = false;
  bool cropping_ = false;
  bool updating_ = false;
  quint64 request_ = 0;
  std::shared_ptr<std::atomic<quint64>> latest_ = std::make_shared<std::atomic<quint64>>(0);
};

}  // namespace gpix::ui
