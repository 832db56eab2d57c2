#pragma once
// The label panel: per-label measurements of a labels layer (measure_labels, labels.h) in a
// sortable table, the measurements of the label clicked in the image view, CSV export, and the
// outline mode of the layer. Selecting a row centres the view on that label and draws its
// bounding box.
//
// Measurements run on the device in the background (detail::run_async), as do the pixel reads
// of a click and the CSV file's write: the GUI thread never waits. A newer request supersedes
// an older one; only the newest result is shown.
#include <QAbstractTableModel>
#include <QWidget>
#include <atomic>
#include <memory>

#include "gpix/catalog.h"
#include "gpix/ui/workspace.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QTableView;

namespace gpix::ui {

class ImageView;

// A gpix::Table (measure_labels' columns) as a Qt model: DisplayRole is the text shown,
// Qt::UserRole the number. sort() reorders the rows themselves, so table() and to_csv(table())
// follow the order on screen.
class LabelTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  // Replaces the rows, sorted as the last sort() asked.
  void set_table(gpix::Table table);
  const gpix::Table& table() const { return table_; }
  // The column of a name ("area", "centroid_x"...), -1 when absent.
  int column(const QString& name) const;
  // The row holding label id `label`, -1 when none does.
  int row_of(double label) const;
  double value(int row, int column) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;
  // Numeric, stable; NaN after every number in either order.
  void sort(int column, Qt::SortOrder order = Qt::AscendingOrder) override;

 private:
  void sort_rows();

  gpix::Table table_;
  int sort_column_ = 0;
  Qt::SortOrder order_ = Qt::AscendingOrder;
};

class LabelPanel : public QWidget {
  Q_OBJECT
 public:
  // view (optional): clicks in it pick labels, and selected labels are centred and boxed in it.
  explicit LabelPanel(Workspace& host, ImageView* view = nullptr, QWidget* parent = nullptr);
  ~LabelPanel() override;

  int labels_layer() const { return labels_id_; }
  int intensity_layer() const { return intensity_id_; }
  LabelTableModel* model() const { return model_; }
  QTableView* table() const { return table_; }
  QCheckBox* outline_box() const { return outline_; }
  // Whether a measurement or a pick is still running.
  bool busy() const { return measuring_ || picking_; }
  // Why the last measurement failed (empty when it did not).
  QString error_text() const { return error_; }
  // The measurements of the picked or selected label as shown, empty when none.
  QString details() const;
  // The label id of the last pick (0: background), -1 before any.
  double picked_label() const { return picked_; }
  // The table as CSV, in the order on screen.
  QString csv() const;

 public slots:
  // Measures this layer (-1: none); it follows the current layer when that holds labels. The
  // intensity layer is kept when it has the same shape, else the first image layer that does.
  void set_labels_layer(int id);
  // -1: no intensity columns. A layer of another shape is refused (error_text says so).
  void set_intensity_layer(int id);
  void refresh();
  // The label under image pixel (x, y) of slice z (clamped to the layer's depth): its row is
  // selected once its id is read (and measured).
  void pick(int x, int y, int z);
  // Selects the row of a label, shows its measurements and boxes it in the view.
  void select_label(double label);
  // Writes csv() to path off the GUI thread; exported() says how it went.
  void export_csv(const QString& path);
  void export_dialog();

 signals:
  void measured();            // a measurement landed, or failed (error_text())
  void picked(double label);  // a pick's id was read (0: background)
  void exported(const QString& path, const QString& error);

 private:
  void rebuild_layer_lists();
  void on_layer_changed(int id);
  void show_row(int row);
  void set_error(const QString& text);

  Workspace& host_;
  ImageView* view_;
  QComboBox* labels_box_ = nullptr;
  QComboBox* intensity_box_ = nullptr;
  QCheckBox* outline_ = nullptr;
  QLabel* status_ = nullptr;
  QLabel* details_ = nullptr;
  QTableView* table_ = nullptr;
  QPushButton* export_ = nullptr;
  LabelTableModel* model_ = nullptr;

  int labels_id_ = -1;
  int intensity_id_ = -1;
  // The data last measured: a change of these (not of display settings) measures again.
  Layer measured_labels_, measured_intensity_;
  QString intensity_name_;  // of the intensity layer the table's intensities came from
  bool measuring_ = false;
  bool picking_ = false;
  quint64 request_ = 0;
  std::shared_ptr<std::atomic<quint64>> latest_ = std::make_shared<std::atomic<quint64>>(0);
  quint64 pick_request_ = 0;
  double picked_ = -1;
  double pending_label_ = 0;  // picked while measuring: selected when the table lands
  QString error_;
  bool updating_ = false;  // the combo boxes are being filled: ignore their signals
};

}  // namespace gpix::ui
