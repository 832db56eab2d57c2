#pragma once
// The filter panel: categories and a search box over gpix::filters(), a parameter form
// generated from the selected descriptor, Run, live preview (debounced, latest wins), work on a
// worker thread with progress, its phase in words ("compiling kernels", "slab 2 of 4") and
// Cancel, errors shown in place. Results become new layers named after their input, the
// operation and its parameters (result_name), through the host's undo stack and the workflow.
// Each filter's parameters are kept while another filter is selected.
#include <QFutureWatcher>
#include <QHash>
#include <QPointer>
#include <QTimer>
#include <QWidget>
#include <functional>
#include <memory>

#include "gpix/catalog.h"
#include "gpix/ui/workflow.h"
#include "gpix/ui/workspace.h"

class QLineEdit;
class QTreeWidget;
class QTreeWidgetItem;
class QLabel;
class QPushButton;
class QCheckBox;
class QProgressBar;
class QFormLayout;
class QComboBox;
class QGroupBox;
class QDoubleSpinBox;

namespace gpix::ui {

// The form of one filter: a layer picker per input, then one editor per parameter
// (QSpinBox / QDoubleSpinBox with range and unit, QCheckBox, QComboBox). Widgets are named
// "input_<name>" and "param_<name>".
//
// Lengths in pixels (sigma*, radius* parameters whose unit is "px") can be entered in the
// first input's physical unit when it is calibrated: the "length_unit" box switches between
// "px" and that unit, and each length then shows a physical editor ("physical_<name>") whose
// value converts to pixels with the spacing of the parameter's axis (_x, _y, _z; x for
// parameters of every axis), rounded for integer radii. The pixel editors stay the truth:
// params(), and so the workflow and its CLI export, give the pixels used. On a stack, a
// Gaussian's sigma_z starts at sigma_x's physical size (in pixels of z), not at 0.
class ParamForm : public QWidget {
  Q_OBJECT
 public:
  ParamForm(const gpix::FilterInfo& info, Workspace& host, QWidget* parent = nullptr);
  const gpix::FilterInfo& info() const { return info_; }
  gpix::Params params() const;
  QList<int> inputs() const;  // layer ids, -1 where none is picked
  // Sets an editor's value (tests, re-running); false when the name or value does not fit.
  bool set_param(const QString& name, const gpix::ParamValue& value);
  void set_input(int index, int layer_id);
  QWidget* editor(const QString& param) const;
  QComboBox* input_picker(int index) const;
  // The physical editor of a length parameter (null for others).
  QDoubleSpinBox* physical_editor(const QString& param) const;
  QComboBox* length_unit() const { return length_unit_; }
  // Whether lengths are entered in the input's unit.
  bool physical() const;

 public slots:
  void refresh_layers();

 signals:
  void changed();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  gpix::FilterInfo info_;
  Workspace& host_;
  QList<QComboBox*> pickers_;
  QList<QWidget*> editors_;  // in info_.params order
  QList<int> exclude_;       // layers not offered as inputs (the preview layer)
  bool follow_ = true;       // the first input follows the current layer
  // Per parameter: the physical editor of a length (null for others) and its axis (0 z,
  // 1 y, 2 x).
  QList<QDoubleSpinBox*> physical_;
  QList<int> axis_;
  QComboBox* length_unit_ = nullptr;
  std::vector<double> spacing_{1, 1, 1};  // (z, y, x) of the first input
  QString unit_;
  double auto_sigma_z_ = -1;  // the value sigma_z was given for a stack (kept while untouched)

  void update_calibration();
  void show_lengths();
  void sync_physical(int i);
  void physical_changed(int i);
  friend class FilterPanel;
};

class FilterPanel : public QWidget {
  Q_OBJECT
 public:
  FilterPanel(Workspace& host, Workflow* workflow, QWidget* parent = nullptr);
  ~FilterPanel() override;

  // Shows the form of a catalog entry; false when there is none of that name.
  bool select_filter(const QString& name);
  QString selected_filter() const;
  ParamForm* form() const { return form_; }
  QString error_text() const;
  // What the running filter is doing ("median_box: compiling kernels", "... slab 2 of 4");
  // empty when nothing runs.
  QString phase_text() const;
  bool busy() const;
  int preview_layer() const { return preview_id_; }
  // Filters shown after the search box is applied (for tests).
  QStringList visible_filters() const;
  void set_search(const QString& text);
  void set_preview(bool on);
  // Milliseconds between the last parameter change and the preview run.
  void set_debounce(int ms) { debounce_.setInterval(ms); }
  // Test hook: called on the worker thread before the filter starts.
  void set_worker_gate(std::function<void()> gate) { gate_ = std::move(gate); }

 public slots:
  void run();  // commit: the result becomes a new layer
  void cancel();

 signals:
  void finished(bool ok);  // after each commit run (not previews)
  void preview_updated();

 private:
  struct Outcome {
    gpix::Result result;
    QString error;
    bool cancelled = false;
    Layer input;        // the first input (its shape and calibration go to the result)
    int input_id = -1;  // its id
    std::shared_ptr<StackFile> file;  // the result of a run on file-backed layers
  };
  void build_tree();
  void on_item(QTreeWidgetItem* item);
  void start(bool preview);
  void on_done(quint64 generation, bool preview, const Outcome& o, WorkflowStep step);
  void drop_preview();
  void show_error(const QString& text);

  Workspace& host_;
  Workflow* workflow_;
  QLineEdit* search_ = nullptr;
  QTreeWidget* tree_ = nullptr;
  QGroupBox* box_ = nullptr;
  QLabel* doc_ = nullptr;
  ParamForm* form_ = nullptr;
  QPushButton* run_ = nullptr;
  QPushButton* cancel_ = nullptr;
  QCheckBox* preview_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QLabel* error_ = nullptr;
  QLabel* phase_ = nullptr;
  QHash<QString, gpix::Params> kept_;  // each filter's parameters as last set, by filter name
  QTimer debounce_;
  quint64 preview_generation_ = 0;  // latest preview wins; older results are dropped
  int running_ = 0;
  bool cancelling_ = false;  // Cancel pressed: later phase reports do not replace its message
  std::shared_ptr<Task> preview_task_;
  std::shared_ptr<Task> run_task_;
  QString run_title_;  // what run_task_ runs, for its phase when cancelled
  int preview_id_ = -1;
  std::function<void()> gate_;
};

}  // namespace gpix::ui
