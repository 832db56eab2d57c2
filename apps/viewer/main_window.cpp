#include "main_window.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPromise>
#include <QPushButton>
#include <QSaveFile>
#include <QSettings>
#include <QStatusBar>
#include <QTableWidget>
#include <QToolBar>
#include <QUndoStack>
#include <QVBoxLayout>
#include <cmath>
#include <thread>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "background.h"
#include "gpix/array.h"
#include "gpix/device.h"
#include "gpix/error.h"
#include "gpix/ui/filter_help.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/stack_file.h"
#include "gpix/ui/workflow.h"
#include "session.h"
#include "stack_views.h"

namespace {

constexpr int kMaxRecent = 10;

// The saved device when it still exists, else the best one; never throws (start-up must not
// break on a device problem): with no device at all the host holds layers in host memory.
gpix::Device startup_device(QSettings& s) {
  const QString saved = s.value(QStringLiteral("device")).toString();
  if (!saved.isEmpty()) {
    for (const gpix::Device& d : gpix::devices()) {
      if (QString::fromStdString(d.label()) == saved) return d;
    }
  }
  try {
    return gpix::choose_device().device;
  } catch (const gpix::Error&) {
    return {};
  }
}

}  // namespace

MainWindow::MainWindow(QSettings* settings, QWidget* parent) : QMainWindow(parent) {
#ifdef __GLIBC__
  // Planes of file-backed stacks (MBs each) are read, rendered and dropped on several threads.
  // glibc raises its mmap threshold to the size of each freed mapping, after which such
  // buffers come from per-thread arenas that keep them when freed: the viewer's memory then
  // crept up by tens of MB beyond its plane cache (test_ui_bigstack). A fixed threshold hands
  // every buffer of 1 MiB or more back to the system when it is freed.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  if (!settings) settings = new QSettings(QStringLiteral("gpix"), QStringLiteral("gpix-viewer"));
  setWindowTitle(QStringLiteral("gpix viewer"));
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  host_ = new ViewerHost(this, startup_device(*settings), settings);
  // Plugins' opens (File > Open sample) take the reader thread too.
  host_->set_opener([this](const QStringList& paths) { open_files(paths); });

  auto* central = new QWidget;
  auto* v = new QVBoxLayout(central);
  v->setContentsMargins(0, 0, 0, 0);
  v->setSpacing(2);
  view_ = new gpix::ui::ImageView(*host_);
  view_->setObjectName(QStringLiteral("image_view"));
  v->addWidget(view_, 1);
  auto* slice_row = new QHBoxLayout;
  slice_row->setContentsMargins(6, 0, 6, 2);
  slice_ = new QSlider(Qt::Horizontal);
  slice_->setObjectName(QStringLiteral("slice_slider"));
  slice_label_ = new QLabel;
  auto* slice_title = new QLabel(tr("Slice"));
  slice_row->addWidget(slice_title);
  slice_row->addWidget(slice_, 1);
  slice_row->addWidget(slice_label_);
  v->addLayout(slice_row);
  setCentralWidget(central);
  auto update_slices = [this, slice_title](int depth) {
    slice_->setRange(0, depth - 1);
    const bool stack = depth > 1;
    slice_->setVisible(stack);
    slice_label_->setVisible(stack);
    slice_title->setVisible(stack);
    slice_label_->setText(QStringLiteral("%1 / %2").arg(view_->slice()).arg(depth - 1));
  };
  connect(view_, &gpix::ui::ImageView::depth_changed, this, update_slices);
  connect(slice_, &QSlider::valueChanged, view_, &gpix::ui::ImageView::set_slice);
  connect(view_, &gpix::ui::ImageView::slice_changed, this, [this](int z) {
    slice_->setValue(z);
    slice_label_->setText(QStringLiteral("%1 / %2").arg(z).arg(view_->depth() - 1));
  });
  update_slices(1);

  auto* layers_dock = new QDockWidget(tr("Layers"), this);
  layers_dock->setObjectName(QStringLiteral("dock_layers"));
  layers_ = new gpix::ui::LayerList(*host_);
  layers_dock->setWidget(scrolling(layers_));
  addDockWidget(Qt::LeftDockWidgetArea, layers_dock);

  // Beside the view it serves: clicks pick labels, rows centre them.
  auto* labels_dock = new QDockWidget(tr("Labels"), this);
  labels_dock->setObjectName(QStringLiteral("dock_labels"));
  labels_ = new gpix::ui::LabelPanel(*host_, view_);
  labels_dock->setWidget(scrolling(labels_));
  addDockWidget(Qt::RightDockWidgetArea, labels_dock);

  // Limits dragged on the histogram, gamma, and a composite's channels.
  auto* histogram_dock = new QDockWidget(tr("Histogram"), this);
  histogram_dock->setObjectName(QStringLiteral("dock_histogram"));
  histogram_ = new gpix::ui::HistogramPanel(*host_);
  histogram_->setObjectName(QStringLiteral("histogram_panel"));
  histogram_dock->setWidget(scrolling(histogram_));
  addDockWidget(Qt::RightDockWidgetArea, histogram_dock);

  cursor_ = new QLabel;
  cursor_->setObjectName(QStringLiteral("cursor_info"));
  statusBar()->addPermanentWidget(cursor_);
  connect(view_, &gpix::ui::ImageView::cursor_info, cursor_, &QLabel::setText);
  auto* progress_label = new QLabel;
  statusBar()->addPermanentWidget(progress_label);
  connect(host_, &gpix::plugin::HostContext::task_started, progress_label,
          [progress_label](const QString& t) { progress_label->setText(t + QStringLiteral("…")); });
  connect(host_, &gpix::plugin::HostContext::task_phase, progress_label,
          [progress_label](const QString& t) { progress_label->setText(t + QStringLiteral("…")); });
  connect(host_, &gpix::plugin::HostContext::task_finished, progress_label, &QLabel::clear);
  // What open_files is reading, with a way out of a slow or hanging file.
  read_box_ = new QWidget;
  auto* read_row = new QHBoxLayout(read_box_);
  read_row->setContentsMargins(0, 0, 0, 0);
  read_label_ = new QLabel;
  read_label_->setObjectName(QStringLiteral("read_label"));
  auto* read_bar = new QProgressBar;
  read_bar->setRange(0, 0);  // readers report no progress: a busy bar
  read_bar->setMaximumWidth(120);
  auto* cancel = new QPushButton(tr("Cancel"));
  cancel->setObjectName(QStringLiteral("cancel_read"));
  connect(cancel, &QPushButton::clicked, this, &MainWindow::cancel_reading);
  read_row->addWidget(read_label_);
  read_row->addWidget(read_bar);
  read_row->addWidget(cancel);
  read_box_->hide();
  statusBar()->addPermanentWidget(read_box_);
  // Results being written (a session's, the quit prompt's Save), one layer after another.
  saver_ = new ResultSaver(*host_, this);
  save_box_ = new QWidget;
  auto* save_row = new QHBoxLayout(save_box_);
  save_row->setContentsMargins(0, 0, 0, 0);
  save_label_ = new QLabel;
  save_label_->setObjectName(QStringLiteral("save_label"));
  auto* save_bar = new QProgressBar;
  save_bar->setMaximumWidth(120);
  save_row->addWidget(save_label_);
  save_row->addWidget(save_bar);
  save_box_->hide();
  statusBar()->addPermanentWidget(save_box_);
  connect(saver_, &ResultSaver::progress, this,
          [this, save_bar](int index, int total, const QString& name) {
            save_label_->setText(tr("Saving %1 (%2 of %3)…").arg(name).arg(index + 1).arg(total));
            save_bar->setRange(0, total);
            save_bar->setValue(index);
            save_box_->show();
          });
  connect(saver_, &ResultSaver::finished, this, [this](const QString& error) {
    save_box_->hide();
    if (!error.isEmpty()) {
      last_error_ = error;
      host_->show_status(error, 0);
    } else {
      host_->show_status(tr("Results saved"));
    }
    emit results_saved(error);
    if (close_when_saved_) {
      close_when_saved_ = false;
      if (error.isEmpty())
        QMetaObject::invokeMethod(
            this, [this] { close(); }, Qt::QueuedConnection);
    }
  });
  connect(host_, &gpix::plugin::HostContext::device_changed, this, [this] {
    host_->settings().setValue(QStringLiteral("device"),
                               QString::fromStdString(host_->device().label()));
    gpix::ui::set_large_stack_device(host_->device());
  });
  // Stacks larger than this open file-backed (stack_file.h): a setting in MB, else a quarter of
  // the host's or the device's memory, whichever is less.
  {
    gpix::ui::LargeStackPolicy p = gpix::ui::large_stack_policy();
    const QSettings& st = host_->settings();
    if (!p.threshold_bytes)
      p.threshold_bytes = st.value(QStringLiteral("large_stacks/threshold_mb")).toULongLong() << 20;
    if (!p.cache_bytes)
      p.cache_bytes = st.value(QStringLiteral("large_stacks/cache_mb")).toULongLong() << 20;
    gpix::ui::set_large_stack_policy(p);
    gpix::ui::set_large_stack_device(host_->device());
  }
  build_menus();
  build_roi_tools();
  layers_dock->toggleViewAction()->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
  host_->view_menu()->addAction(layers_dock->toggleViewAction());
  host_->view_menu()->addAction(labels_dock->toggleViewAction());
  host_->view_menu()->addAction(histogram_dock->toggleViewAction());
  resize(1280, 820);
}

MainWindow::~MainWindow() {
  // Widgets refer to the host: remove them first, then the host (and its undo stack).
  qDeleteAll(findChildren<QDockWidget*>(Qt::FindDirectChildrenOnly));
  delete takeCentralWidget();
  delete host_;
  // The file-backed results went with their layers; the folder they were in goes too.
  gpix::ui::remove_result_folder();
}

void MainWindow::build_menus() {
  QMenu* file = host_->menu(QStringLiteral("&File"));
  file->addAction(tr("&Open…"), QKeySequence::Open, this, &MainWindow::open_dialog);
  recent_menu_ = file->addMenu(tr("Open &recent"));
  // Ctrl+Shift+S itself: QKeySequence::SaveAs has no key outside GNOME and KDE.
  file->addAction(tr("Save layer &as…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S), this,
                  &MainWindow::save_as_dialog);
  file->addAction(tr("&Export label measurements (CSV)…"), labels_,
                  &gpix::ui::LabelPanel::export_dialog);
  file->addSeparator();
  file->addAction(tr("Open s&ession…"), this, &MainWindow::open_session_dialog);
  file->addAction(tr("&Save session"), QKeySequence::Save, this,
                  [this] { save_session_dialog(false); });
  file->addAction(tr("Save session as…"), this, [this] { save_session_dialog(true); });
  file->addSeparator();
  file->addAction(tr("&Plugins…"), this, &MainWindow::show_plugins_dialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  rebuild_recent();

  QMenu* edit = host_->menu(QStringLiteral("&Edit"));
  QAction* undo = host_->undo_stack()->createUndoAction(this, tr("&Undo"));
  undo->setShortcut(QKeySequence::Undo);
  QAction* redo = host_->undo_stack()->createRedoAction(this, tr("&Redo"));
  QList<QKeySequence> redo_keys = QKeySequence::keyBindings(QKeySequence::Redo);
  if (!redo_keys.contains(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z)))
    redo_keys.prepend(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));
  redo->setShortcuts(redo_keys);
  undo->setObjectName(QStringLiteral("action_undo"));
  redo->setObjectName(QStringLiteral("action_redo"));
  edit->addAction(undo);
  edit->addAction(redo);
  edit->addSeparator();
  // Through the undo stack: Ctrl+Z after Del brings the layer back (it used to undo the
  // last filter result instead, removing another layer).
  QAction* remove = edit->addAction(tr("Remove layer"), QKeySequence::Delete, layers_,
                                    &gpix::ui::LayerList::remove_current);
  remove->setObjectName(QStringLiteral("action_remove_layer"));
  edit->addAction(tr("Rename layer"), QKeySequence(Qt::Key_F2), layers_,
                  &gpix::ui::LayerList::rename_current);
  QAction* split =
      edit->addAction(tr("Split channels"), histogram_, &gpix::ui::HistogramPanel::split_channels);
  split->setObjectName(QStringLiteral("action_split_channels"));
  split->setToolTip(tr("A colour composite becomes one grey layer per channel"));
  // The whole stack's percentiles, as the layer list's Auto and the Histogram's give them (it
  // took the plane on screen's for a stack in memory and the whole stack's for a file-backed
  // one: one key, two answers).
  QAction* auto_contrast = edit->addAction(tr("Auto contrast"), QKeySequence(Qt::CTRL | Qt::Key_A),
                                           this, [this] { layers_->auto_contrast_current(); });
  auto_contrast->setObjectName(QStringLiteral("action_auto_contrast"));

  QMenu* view = host_->menu(QStringLiteral("&View"));
  view->addAction(tr("&Fit"), QKeySequence(Qt::Key_F), view_, &gpix::ui::ImageView::fit);
  view->addAction(tr("&1:1 (one image pixel per screen pixel)"), QKeySequence(Qt::Key_1), view_,
                  &gpix::ui::ImageView::one_to_one);
  view->addAction(tr("Zoom &in"), QKeySequence::ZoomIn, view_, &gpix::ui::ImageView::zoom_in);
  view->addAction(tr("Zoom &out"), QKeySequence::ZoomOut, view_, &gpix::ui::ImageView::zoom_out);
  view->addAction(tr("Next slice"), QKeySequence(Qt::Key_PageUp), this,
                  [this] { view_->set_slice(view_->slice() + 1); });
  view->addAction(tr("Previous slice"), QKeySequence(Qt::Key_PageDown), this,
                  [this] { view_->set_slice(view_->slice() - 1); });
  QAction* bar = view->addAction(tr("&Scale bar"));
  bar->setObjectName(QStringLiteral("action_scale_bar"));
  bar->setCheckable(true);
  bar->setChecked(view_->scale_bar_visible());
  bar->setToolTip(tr("A bar of a round physical length on calibrated images"));
  connect(bar, &QAction::toggled, view_, &gpix::ui::ImageView::set_scale_bar_visible);
  view->addSeparator();
  (new StackViews(*host_, view_, this))->add_to(view);
  view->addSeparator();

  // Help comes last, after the menus plugins add (see load_plugins).
}

// ROIs and the line profile (roi_overlay.h): the overlay over the view, their two docks, the
// Tools menu and a tool bar with the same actions.
void MainWindow::build_roi_tools() {
  rois_ = new gpix::ui::RoiOverlay(*host_, view_);
  auto* roi_dock = new QDockWidget(tr("ROIs"), this);
  roi_dock->setObjectName(QStringLiteral("dock_rois"));
  roi_panel_ = new gpix::ui::RoiPanel(*host_, rois_);
  roi_dock->setWidget(scrolling(roi_panel_));
  addDockWidget(Qt::RightDockWidgetArea, roi_dock);
  auto* profile_dock = new QDockWidget(tr("Line profile"), this);
  profile_dock->setObjectName(QStringLiteral("dock_profile"));
  profile_ = new gpix::ui::ProfilePanel(*host_, view_, rois_);
  profile_dock->setWidget(scrolling(profile_));
  addDockWidget(Qt::BottomDockWidgetArea, profile_dock);
  // The dock shows itself when a line is drawn; until then it would be empty. Once the line
  // is drawn, not during the drag: the dock takes room from the view, which fits the image
  // anew, and the line's end jumped away from the cursor (ending outside the image).
  profile_dock->hide();
  connect(rois_, &gpix::ui::RoiOverlay::line_changed, profile_dock, [this, profile_dock] {
    if (rois_->line() && !rois_->drawing()) profile_dock->show();
  });

  QMenu* tools = host_->menu(QStringLiteral("&Tools"));
  tools->addActions(rois_->tool_actions());
  tools->addSeparator();
  tools->addAction(tr("&Crop to selected ROI"), roi_panel_, [this] { roi_panel_->crop(); });
  tools->addAction(tr("Export ROI statistics…"), roi_panel_, &gpix::ui::RoiPanel::export_dialog);
  tools->addAction(tr("Export line profile…"), profile_, &gpix::ui::ProfilePanel::export_dialog);
  tools->addAction(tr("Clear the profile line"), rois_, &gpix::ui::RoiOverlay::clear_line);
  QToolBar* bar = addToolBar(tr("Tools"));
  bar->setObjectName(QStringLiteral("toolbar_tools"));
  bar->addActions(rois_->tool_actions());
  host_->view_menu()->addAction(roi_dock->toggleViewAction());
  host_->view_menu()->addAction(profile_dock->toggleViewAction());
}

QStringList MainWindow::recent_files() const {
  return host_->settings().value(QStringLiteral("recent_files")).toStringList();
}

void MainWindow::rebuild_recent() {
  recent_menu_->clear();
  const QStringList files = recent_files();
  for (qsizetype i = 0; i < files.size(); ++i) {
    const QString path = files[i];
    QAction* a = recent_menu_->addAction(QStringLiteral("&%1 %2").arg(i + 1).arg(path), this,
                                         [this, path] { open_files({path}); });
    a->setToolTip(path);
  }
  recent_menu_->setEnabled(!files.isEmpty());
}

void MainWindow::add_recent(const QString& given) {
  // A file named relative to where the viewer started is kept by its whole path: Open recent
  // from another folder failed ("no such file"), and one file could stand there twice. The
  // samples ("sample", "sample:NAME") are names, not files.
  const QFileInfo info(given);
  const QString path = info.isRelative() && info.exists() ? info.absoluteFilePath() : given;
  QStringList files = recent_files();
  files.removeAll(path);
  files.prepend(path);
  while (files.size() > kMaxRecent) files.removeLast();
  host_->settings().setValue(QStringLiteral("recent_files"), files);
  rebuild_recent();
}

void MainWindow::load_plugins(const QStringList& paths) {
  const QList<gpix::plugin::PluginRecord> records = loader_.load_all(paths, *host_);
  QStringList refused;
  for (const auto& r : records) {
    if (!r.loaded) refused << QStringLiteral("%1 (%2)").arg(r.name, r.reason);
  }
  if (!refused.isEmpty()) {
    host_->show_status(
        tr("Plugins not loaded: %1 — see File > Plugins").arg(refused.join(QStringLiteral("; "))),
        0);
  }
  QMenu* help = host_->menu(QStringLiteral("&Help"));
  help->addAction(tr("&Quick start"), QKeySequence::HelpContents, this,
                  &MainWindow::show_quick_start);
  help->addAction(tr("&Filter help"), this, [this] { show_filter_help(); });
  help->addSeparator();
  help->addAction(tr("&About gpix viewer"), this, &MainWindow::show_about);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
  tabify_default_docks();
  QSettings& s = host_->settings();
  restoreGeometry(s.value(QStringLiteral("window/geometry")).toByteArray());
  restoreState(s.value(QStringLiteral("window/state")).toByteArray());
}

void MainWindow::tabify_default_docks() {
  // Five docks stacked in the right area left each about 180 px at a 1000 px window (a GUI
  // walk-through, 2026-12-02): the ones used together less often share a place as tabs. A
  // saved layout (restoreState, after this) keeps the user's own arrangement.
  const auto dock = [this](const char* name) {
    return findChild<QDockWidget*>(QLatin1String(name), Qt::FindDirectChildrenOnly);
  };
  const std::pair<const char*, const char*> pairs[] = {{"dock_layer_card", "dock_devices"},
                                                       {"dock_rois", "dock_labels"}};
  for (const auto& [first, second] : pairs) {
    QDockWidget* a = dock(first);
    QDockWidget* b = dock(second);
    if (!a || !b || dockWidgetArea(a) != dockWidgetArea(b)) continue;
    tabifyDockWidget(a, b);
    a->raise();  // the first of each pair is the tab in front
  }
}

void MainWindow::open_files(const QStringList& paths) {
  batches_.append({paths, int(paths.size()), {}, {}});
  // Always from the event loop, so that files_opened never comes before open_files returns.
  if (batches_.size() == 1)
    QMetaObject::invokeMethod(this, &MainWindow::read_next, Qt::QueuedConnection);
}

void MainWindow::read_next() {
  while (!read_ && !batches_.isEmpty()) {
    OpenBatch& b = batches_.first();
    if (b.paths.isEmpty()) {
      end_batch(batches_.takeFirst());
      continue;
    }
    const QString path = b.paths.takeFirst();
    std::function<QList<gpix::plugin::Layer>()> call;
    try {
      call = host_->read_call(path);
    } catch (const std::exception& e) {
      b.errors << QString::fromUtf8(e.what());
      continue;
    }
    // A thread per file rather than a pool: a reader that never returns (a file that sends a
    // library into an endless loop) keeps only its own thread, and exit does not wait for it.
    QPromise<ReadOutcome> promise;
    read_ = new QFutureWatcher<ReadOutcome>(this);
    read_path_ = path;
    auto* watcher = read_;
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, path] {
      watcher->deleteLater();
      if (watcher != read_) return;  // cancelled
      read_ = nullptr;
      ReadOutcome o = watcher->future().resultCount() ? watcher->result() : ReadOutcome{};
      read_done(path, std::move(o.layers), o.error);
      read_next();
    });
    watcher->setFuture(promise.future());
    ++*running_;
    std::thread([promise = std::move(promise), call = std::move(call), device = host_->device(),
                 running = running_]() mutable {
      promise.start();
      ReadOutcome o;
      try {
        o.layers = call();
      } catch (const std::exception& e) {  // gpix errors and allocation failures alike
        o.error = QString::fromUtf8(e.what());
      } catch (...) {
        o.error = QStringLiteral("the reader failed with an exception that is not std::exception");
      }
      // The push too, so that the GUI thread waits on neither disk nor device. A layer that does
      // not fit stays on the host: add_layer tries again and says why.
      for (gpix::plugin::Layer& l : o.layers) {
        if (!device.valid() || !l.host.valid() || l.array.valid()) continue;
        try {
          l.array = gpix::Array::push(l.host, device);
        } catch (const std::exception&) {
        }
      }
      promise.addResult(std::move(o));
      promise.finish();
      --*running;
    }).detach();
  }
  show_reading();
}

void MainWindow::read_done(const QString& path, QList<gpix::plugin::Layer> layers,
                           const QString& error) {
  OpenBatch& b = batches_.first();
  if (!error.isEmpty()) {
    b.errors << error;
    return;
  }
  try {
    b.ids << host_->add_read_layers(path, std::move(layers));
    add_recent(path);
  } catch (const std::exception& e) {
    b.errors << QString::fromUtf8(e.what());
  }
}

void MainWindow::end_batch(const OpenBatch& b) {
  last_error_ = b.errors.join(QLatin1Char('\n'));
  if (!b.errors.isEmpty()) {
    host_->show_status(b.errors.join(QStringLiteral("; ")), 0);
    show_error(tr("Open"), b.errors.join(QStringLiteral("\n\n")));
  } else if (!b.ids.isEmpty()) {
    host_->show_status(tr("Opened %n layer(s)", nullptr, int(b.ids.size())));
  }
  emit files_opened(b.ids);
}

void MainWindow::show_error(const QString& title, const QString& text) {
  if (error_box_ && error_box_->isVisible()) {
    error_box_->setText(error_box_->text() + QStringLiteral("\n\n") + text);
    return;
  }
  error_box_ = new QMessageBox(QMessageBox::Warning, title, text, QMessageBox::Ok, this);
  error_box_->setObjectName(QStringLiteral("error_box"));
  error_box_->setAttribute(Qt::WA_DeleteOnClose);
  error_box_->setWindowModality(Qt::NonModal);
  error_box_->show();  // not exec(): no nested event loop, and the window stays usable
}

void MainWindow::cancel_reading() {
  if (batches_.isEmpty()) return;
  const QString name = QFileInfo(read_path_).fileName();
  if (read_) {
    read_ = nullptr;  // its watcher deletes itself when the thread ends; nothing is added
  }
  // Taken out first: a slot of files_opened may call open_files again.
  QList<OpenBatch> batches;
  batches.swap(batches_);
  for (const OpenBatch& b : batches) end_batch(b);
  host_->show_status(tr("Reading %1 cancelled").arg(name));
  show_reading();
}

void MainWindow::show_reading() {
  read_box_->setVisible(read_ != nullptr);
  if (!read_ || batches_.isEmpty()) return;
  const OpenBatch& b = batches_.first();
  const int done = b.total - int(b.paths.size());
  read_label_->setText(b.total > 1 ? tr("Reading %1 (%2 of %3)…")
                                         .arg(QFileInfo(read_path_).fileName())
                                         .arg(done)
                                         .arg(b.total)
                                   : tr("Reading %1…").arg(QFileInfo(read_path_).fileName()));
}

void MainWindow::open_default() {
  open_files({QStringLiteral("sample")});
}

void MainWindow::open_dialog() {
  const QString dir = host_->settings().value(QStringLiteral("last_dir")).toString();
  const QStringList files =
      QFileDialog::getOpenFileNames(this, tr("Open images"), dir, host_->reader_filter());
  if (files.isEmpty()) return;
  host_->settings().setValue(QStringLiteral("last_dir"), QFileInfo(files.first()).absolutePath());
  open_files(files);
}

QString MainWindow::suggested_file_name(int id) const {
  // The layer's name as a file name that a writer takes: a result's name ("stack · crop
  // origin_x=322 ...") had no extension, and saving it as suggested was refused.
  QString name = host_->layer(id).name;
  name.replace(QLatin1Char('/'), QLatin1Char('-'));
  if (name.isEmpty()) name = QStringLiteral("layer");
  return host_->writer_for(name) ? name : name + QStringLiteral(".tif");
}

void MainWindow::save_as_dialog() {
  const int id = host_->current_layer();
  if (id < 0) {
    host_->show_status(tr("No layer to save"));
    return;
  }
  const QString dir = host_->settings().value(QStringLiteral("last_dir")).toString();
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Save layer"), QDir(dir).filePath(suggested_file_name(id)), host_->writer_filter());
  if (path.isEmpty()) return;
  save_layer_as(id, path);
}

void MainWindow::save_layer_as(int id, const QString& path) {
  std::function<void()> call;
  try {
    call = host_->save_call(id, path);
  } catch (const std::exception& e) {
    last_error_ = QString::fromUtf8(e.what());
    host_->show_status(last_error_, 0);
    show_error(tr("Save layer"), last_error_);
    emit layer_saved(id, path, last_error_);
    return;
  }
  ++saves_;
  host_->show_status(tr("Saving %1…").arg(QFileInfo(path).fileName()), 0);
  in_background(
      this,
      [call] {
        call();
        return true;
      },
      [this, id, path](bool, const QString& error) {
        --saves_;
        if (!error.isEmpty()) {
          close_when_saved_ = false;  // not written: the window stays, saying why
          last_error_ = error;
          host_->show_status(last_error_, 0);
          show_error(tr("Save layer"), last_error_);
          emit layer_saved(id, path, error);
          return;
        }
        // The layer now has a file: a session refers to it, and quitting does not ask about it.
        if (host_->has_layer(id)) {
          gpix::ui::Layer l = host_->layer(id);
          l.source = path;
          l.metadata.insert(QStringLiteral("index_in_file"), 0);
          host_->replace_layer(id, l);
        }
        add_recent(path);
        host_->show_status(tr("Saved %1").arg(path));
        emit layer_saved(id, path, {});
        close_if_asked();
      });
}

void MainWindow::close_if_asked() {
  if (!close_when_saved_ || saving_results() || saving_session_ || saves_ > 0) return;
  close_when_saved_ = false;
  QMetaObject::invokeMethod(
      this, [this] { close(); }, Qt::QueuedConnection);
}

void MainWindow::show_plugins_dialog() {
  QDialog d(this);
  d.setWindowTitle(tr("Plugins"));
  auto* v = new QVBoxLayout(&d);
  auto* table = new QTableWidget(int(loader_.records().size()), 5);
  table->setHorizontalHeaderLabels(
      {tr("Plugin"), tr("Version"), tr("API"), tr("Status"), tr("File")});
  for (int i = 0; i < loader_.records().size(); ++i) {
    const auto& r = loader_.records()[i];
    const QString status = r.loaded ? tr("loaded") : tr("not loaded: ") + r.reason;
    const QStringList cells = {r.name, r.version,
                               r.api_version < 0 ? QString() : QString::number(r.api_version),
                               status, r.path};
    for (int c = 0; c < cells.size(); ++c) table->setItem(i, c, new QTableWidgetItem(cells[c]));
  }
  table->horizontalHeader()->setStretchLastSection(true);
  table->resizeColumnsToContents();
  v->addWidget(new QLabel(
      tr("Searched: %1")
          .arg(gpix::plugin::PluginLoader::default_search_paths(QApplication::applicationDirPath())
                   .join(QStringLiteral(", ")))));
  v->addWidget(table);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Close);
  connect(box, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  v->addWidget(box);
  d.resize(900, 300);
  d.exec();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  QStringList files;
  for (const QUrl& u : e->mimeData()->urls()) {
    if (u.isLocalFile()) files << u.toLocalFile();
  }
  if (files.isEmpty()) return;
  e->acceptProposedAction();
  open_files(files);
}

void MainWindow::save_settings() {
  QSettings& s = host_->settings();
  s.setValue(QStringLiteral("window/geometry"), saveGeometry());
  s.setValue(QStringLiteral("window/state"), saveState());
  if (host_->device().valid()) {
    s.setValue(QStringLiteral("device"), QString::fromStdString(host_->device().label()));
  }
  s.sync();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (saving_results() || saving_session_ || saves_ > 0) {
    // Results, a session or a layer (Save layer as) are being written: the window closes when
    // they are, and stays when they could not be. A session writes its results first and its
    // JSON after, so closing when the results are done would end the process before the
    // session file exists.
    e->ignore();
    close_when_saved_ = true;
    host_->show_status(tr("Still saving the results; the window closes when they are written"), 0);
    return;
  }
  // With Save the results are written in the background while the window keeps working; it
  // closes once they are all written (close() asks again, and finds none unsaved), and stays
  // open, saying why, when one could not be written.
  switch (confirm_discard(tr("quitting"), [this] { close(); })) {
    case Discard::go_on:
      save_settings();
      QMainWindow::closeEvent(e);
      return;
    case Discard::stop:
    case Discard::saving:
      e->ignore();
      return;
  }
}

QStringList MainWindow::unsaved_layers() const {
  QStringList out;
  for (int id : host_->layer_ids()) {
    const gpix::ui::Layer l = host_->layer(id);
    if (l.source.isEmpty() && !l.metadata.value(QStringLiteral("preview")).toBool()) out << l.name;
  }
  return out;
}

bool MainWindow::save_unsaved(const QString& folder) {
  if (!saver_->start(folder)) {
    last_error_ = tr("Results are being saved already; wait until they are written");
    host_->show_status(last_error_, 0);
    return false;
  }
  return true;
}

bool MainWindow::saving_results() const {
  return saver_->busy();
}

void MainWindow::set_prompts_for_testing(std::function<int(const QStringList&)> ask,
                                         std::function<QString()> folder) {
  ask_unsaved_ = std::move(ask);
  ask_folder_ = std::move(folder);
}

MainWindow::Discard MainWindow::confirm_discard(const QString& action,
                                                std::function<void()> after_save) {
  const QStringList unsaved = unsaved_layers();
  // Filters still running would add their results after the question (a second question) and
  // the saves would queue behind them on the device: going on stops them first, and says so.
  const QStringList running = host_->running_tasks();
  if (unsaved.isEmpty()) {
    host_->cancel_tasks();
    return Discard::go_on;
  }
  int answer = QMessageBox::Cancel;
  if (ask_unsaved_) {
    answer = ask_unsaved_(unsaved);
  } else {
    QString text = tr("%n layer(s) exist only in memory and would be lost by %1:", nullptr,
                      int(unsaved.size()))
                       .arg(action) +
                   QStringLiteral("\n\n• ") + unsaved.join(QStringLiteral("\n• "));
    if (!running.isEmpty()) {
      text += QStringLiteral("\n\n") +
              tr("Running now, stopped by %1 (their results are not kept):").arg(action) +
              QStringLiteral("\n\n• ") + running.join(QStringLiteral("\n• "));
    }
    QMessageBox box(QMessageBox::Warning, tr("Unsaved results"), text,
                    QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, this);
    box.setInformativeText(tr("Save them into a folder first?"));
    box.setDefaultButton(QMessageBox::Save);
    answer = box.exec();
  }
  if (answer == QMessageBox::Discard) {
    host_->cancel_tasks();
    return Discard::go_on;
  }
  if (answer != QMessageBox::Save) return Discard::stop;
  const QString folder = ask_folder_
                             ? ask_folder_()
                             : QFileDialog::getExistingDirectory(
                                   this, tr("Save the results into"),
                                   host_->settings().value(QStringLiteral("last_dir")).toString());
  if (folder.isEmpty()) return Discard::stop;
  // Saves already under way refuse the new ones (save_unsaved says so): the filters then keep
  // running too. Otherwise they stop before the saves, which would wait behind them on the
  // device; a save that fails later leaves the window open with them stopped.
  if (saving_results()) {
    (void)save_unsaved(folder);  // refused, saying why
    return Discard::stop;
  }
  host_->cancel_tasks();
  if (!save_unsaved(folder)) return Discard::stop;
  // Once written, what was asked goes on; on an error the window says why and stays as it is.
  auto* once = new QObject(this);
  connect(this, &MainWindow::results_saved, once,
          [this, once, action, after_save = std::move(after_save)](const QString& error) {
            once->deleteLater();
            if (error.isEmpty()) {
              if (after_save) after_save();
              return;
            }
            if (ask_unsaved_) return;  // tests read last_error()
            auto* box = new QMessageBox(
                QMessageBox::Warning, tr("Unsaved results"),
                tr("Not everything could be saved, so %1 did not go on:\n\n%2").arg(action, error),
                QMessageBox::Ok, this);
            box->setAttribute(Qt::WA_DeleteOnClose);
            box->open();  // not exec(): no nested event loop
          });
  return Discard::saving;
}

void MainWindow::clear_workspace() {
  // Files still being read belong to the work being replaced: they must not arrive in the new
  // one (a session opened while the sample loads).
  cancel_reading();
  host_->undo_stack()->clear();
  for (int id : host_->layer_ids()) host_->remove_layer(id);
  host_->workflow().clear();
}

void MainWindow::save_session(const QString& path) {
  if (saving_session_ || saving_results()) {
    // Reported from the event loop like every outcome of save_session.
    const QString error = tr("A session or results are being saved; wait until they are written");
    QMetaObject::invokeMethod(
        this, [this, path, error] { session_failed(path, error); }, Qt::QueuedConnection);
    return;
  }
  saving_session_ = true;
  if (unsaved_layers().isEmpty()) {
    QMetaObject::invokeMethod(
        this, [this, path] { write_session_file(path); }, Qt::QueuedConnection);
    return;
  }
  const QFileInfo info(path);
  auto* once = new QObject(this);
  connect(this, &MainWindow::results_saved, once, [this, once, path](const QString& error) {
    once->deleteLater();
    if (!error.isEmpty()) {
      session_failed(path, error);
      return;
    }
    write_session_file(path);
  });
  save_unsaved(info.absoluteDir().filePath(info.baseName() + QStringLiteral("_data")));
}

void MainWindow::session_failed(const QString& path, const QString& error) {
  saving_session_ = false;
  last_error_ = error;
  host_->show_status(last_error_, 0);
  emit session_saved(path, error);
}

void MainWindow::write_session_file(const QString& path) {
  // The JSON is made here (it reads the layers), the file written on a worker.
  QByteArray json;
  try {
    QJsonObject root = session::to_json(*host_, path, [this](int id) {
      // The layer's ROIs (roi.h's JSON), where it has any.
      QJsonArray rois;
      for (const gpix::ui::Roi& r : rois_->rois(id)) rois.append(r.to_json());
      return rois.isEmpty() ? QJsonObject{} : QJsonObject{{QStringLiteral("rois"), rois}};
    });
    root.insert(QStringLiteral("view"), view_state());
    json = QJsonDocument(root).toJson(QJsonDocument::Indented);
  } catch (const std::exception& e) {
    close_when_saved_ = false;  // not written: the window stays, saying why
    session_failed(path, QString::fromUtf8(e.what()));
    return;
  }
  host_->show_status(tr("Writing the session %1…").arg(QFileInfo(path).fileName()), 0);
  in_background(
      this,
      [path, json] {
        QSaveFile f(path);
        // Unbuffered: see save_text in ui/src/workflow_panel.cpp (a full disk).
        if (!f.open(QIODevice::WriteOnly | QIODevice::Unbuffered) || f.write(json) != json.size() ||
            !f.commit()) {
          throw gpix::IoError(QObject::tr("Cannot write the session %1: %2")
                                  .arg(path, f.errorString())
                                  .toStdString(),
                              path.toStdString());
        }
        return true;
      },
      [this, path](bool, const QString& error) {
        if (!error.isEmpty()) {
          close_when_saved_ = false;  // not written: the window stays, saying why
          session_failed(path, error);
          return;
        }
        saving_session_ = false;
        session_path_ = path;
        last_error_.clear();
        add_recent(path);
        host_->show_status(tr("Session saved to %1").arg(path));
        emit session_saved(path, {});
        close_if_asked();
      });
}

bool MainWindow::open_session(const QString& path) {
  switch (confirm_discard(tr("opening a session"), [this, path] { open_session(path); })) {
    case Discard::go_on:
      break;
    case Discard::stop:
      return false;
    case Discard::saving:
      return true;  // it opens once the results are written
  }
  struct Read {
    QJsonObject root;
    session::Preread files;
  };
  opening_session_ = true;
  host_->show_status(tr("Reading the session %1…").arg(QFileInfo(path).fileName()), 0);
  // The session and its files are read (and pushed to the device) off the GUI thread, before
  // anything is cleared: a bad session leaves the work as it was.
  in_background(
      this,
      [path, readers = host_->readers(), device = host_->device()] {
        Read r;
        r.root = session::read(path);
        r.files = session::read_files(r.root, path, readers, device);
        return r;
      },
      [this, path](Read r, const QString& error) {
        opening_session_ = false;
        if (!error.isEmpty()) {
          session_not_opened(path, error);
          return;
        }
        if (const QStringList why = session::none_would_open(r.root, path, r.files);
            !why.isEmpty()) {
          session_not_opened(path, tr("none of its layers can be opened (the work is left as it "
                                      "was): %1")
                                       .arg(why.join(QStringLiteral("; "))));
          return;
        }
        session::Opened opened;
        try {
          clear_workspace();
          QStringList roi_errors;
          opened = session::open(
              *host_, r.root, path, &r.files,
              [&](int id, const QJsonObject& layer) { restore_rois(id, layer, roi_errors); });
          opened.errors << roi_errors;
        } catch (const std::exception& e) {
          session_not_opened(path, QString::fromUtf8(e.what()));
          return;
        }
        finish_session_open(path, opened, r.root.value(QStringLiteral("view")).toObject());
      });
  return true;
}

// The view a session keeps: the slice, the zoom and the image point at the view's centre, so
// that a session of a stack reopens where the user left it (it reopened fitted, on slice 1).
// A fitted view is kept as fitted (its zoom belongs to the window's size: in a smaller window
// it would be too large, and it would no longer follow the window).
QJsonObject MainWindow::view_state() const {
  if (view_->fitted()) {
    return QJsonObject{{QStringLiteral("slice"), view_->slice()}, {QStringLiteral("fitted"), true}};
  }
  const QPointF centre = view_->image_pos(QPointF(view_->width() / 2.0, view_->height() / 2.0));
  return QJsonObject{{QStringLiteral("slice"), view_->slice()},
                     {QStringLiteral("zoom"), view_->zoom()},
                     {QStringLiteral("centre"), QJsonArray{centre.x(), centre.y()}}};
}

// A session's view (view_state), where it has one and it is sound; else the layers fitted.
// The slice is clamped to the layers' depth (a file may have changed since).
QStringList MainWindow::restore_view(const QJsonObject& view) {
  view_->fit();
  if (view.isEmpty()) return {};  // sessions saved before the view was kept
  // Each part that is sound is restored; the others are named.
  QStringList bad;
  if (!view.value(QStringLiteral("fitted")).toBool()) {
    const QJsonValue z = view.value(QStringLiteral("zoom"));
    if (z.isDouble() && z.toDouble() > 0 && std::isfinite(z.toDouble())) {
      view_->set_zoom(z.toDouble());
      // Past the view's zoom range (a fit of a tiny or huge image, then panned): clamped.
      if (view_->zoom() != z.toDouble()) bad << QStringLiteral("zoom");
    } else {
      bad << QStringLiteral("zoom");
    }
    // A centre within 10^7 pixels of the image's origin (further, nothing would be on screen,
    // and 1e308 overflows the drawing's coordinates).
    const QJsonArray c = view.value(QStringLiteral("centre")).toArray();
    const auto near = [](const QJsonValue& v) {
      return v.isDouble() && std::abs(v.toDouble()) < 1e7;
    };
    if (c.size() == 2 && near(c[0]) && near(c[1])) {
      view_->center_on(QPointF(c[0].toDouble(), c[1].toDouble()));
    } else {
      bad << QStringLiteral("centre");
    }
  }
  const QJsonValue s = view.value(QStringLiteral("slice"));
  const double slice = s.toDouble(-1);
  if (s.isDouble() && slice >= 0 && slice == std::floor(slice) && slice < 2147483647.0) {
    view_->set_slice(int(slice));
  } else {
    bad << QStringLiteral("slice");
  }
  if (bad.isEmpty()) return {};
  return {tr("the view's %1 not restored: not a usable value in the session's 'view'")
              .arg(bad.join(QStringLiteral(", ")) + (bad.size() == 1 ? tr(" was") : tr(" were")))};
}

// Said in the status bar and in the window's message box (show_error: not modal), whoever
// asked: File > Open session, `gpix-viewer NAME.gpix.json` (where the status bar alone was easy
// to miss) or a dropped session.
void MainWindow::session_not_opened(const QString& path, const QString& error) {
  last_error_ = error;
  host_->show_status(last_error_, 0);
  show_error(tr("Session"), tr("The session %1 was not opened:\n\n%2").arg(path, error));
  emit session_opened(false);
}

// The layer's ROIs from its session entry (roi.h's JSON); a bad one is reported, not fatal.
void MainWindow::restore_rois(int id, const QJsonObject& layer, QStringList& errors) {
  QList<gpix::ui::Roi> rois;
  try {
    for (const QJsonValue v : layer.value(QStringLiteral("rois")).toArray())
      rois << gpix::ui::Roi::from_json(v.toObject());
  } catch (const gpix::Error& e) {
    errors << tr("the ROIs of '%1' were not restored: %2")
                  .arg(host_->layer(id).name, QString::fromUtf8(e.what()));
    return;
  }
  if (!rois.isEmpty()) rois_->set_rois(id, rois);
}

void MainWindow::finish_session_open(const QString& path, const session::Opened& opened,
                                     const QJsonObject& view) {
  session_path_ = path;
  host_->undo_stack()->clear();  // the layers were opened, not made: nothing to undo
  QStringList problems;
  if (!opened.missing.isEmpty())
    problems << tr("Missing files: %1").arg(opened.missing.join(QStringLiteral("; ")));
  problems << opened.errors;
  problems << restore_view(view);
  last_error_ = problems.join(QLatin1Char('\n'));
  if (problems.isEmpty()) {
    host_->show_status(tr("Session %1: %n layer(s)", nullptr, int(opened.layers.size())).arg(path));
  } else {
    host_->show_status(problems.join(QStringLiteral("; ")), 0);
    show_error(tr("Session"),
               tr("The session %1 opened with problems:\n\n%2").arg(path, last_error_));
  }
  emit session_opened(true);
}

void MainWindow::open_session_dialog() {
  const QString dir = host_->settings().value(QStringLiteral("last_dir")).toString();
  const QString path = QFileDialog::getOpenFileName(this, tr("Open session"), dir,
                                                    tr("gpix sessions (*.gpix.json *.json)"));
  if (path.isEmpty()) return;
  open_session(path);  // what went wrong, if anything, it says itself
}

void MainWindow::save_session_dialog(bool ask_name) {
  QString path = session_path_;
  if (ask_name || path.isEmpty()) {
    const QString dir = host_->settings().value(QStringLiteral("last_dir")).toString();
    path = QFileDialog::getSaveFileName(this, tr("Save session"),
                                        QDir(dir).filePath(QStringLiteral("session.gpix.json")),
                                        tr("gpix sessions (*.gpix.json *.json)"));
    if (path.isEmpty()) return;
  }
  auto* once = new QObject(this);
  connect(this, &MainWindow::session_saved, once, [this, once](const QString&, const QString& e) {
    once->deleteLater();
    if (e.isEmpty()) return;
    auto* box = new QMessageBox(QMessageBox::Warning, tr("Session"), e, QMessageBox::Ok, this);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
  });
  save_session(path);
}

void MainWindow::show_quick_start() {
  QDialog* d = make_text_dialog(this, tr("Quick start"), gpix::ui::quick_start_html());
  d->setObjectName(QStringLiteral("quick_start"));
  d->setAttribute(Qt::WA_DeleteOnClose);
  d->show();
}

FilterHelpDialog* MainWindow::show_filter_help(const QString& name) {
  QString wanted = name;
  if (wanted.isEmpty()) {
    if (auto* filters =
            qobject_cast<gpix::ui::FilterPanel*>(host_->dock_widget(QStringLiteral("filters"))))
      wanted = filters->selected_filter();
  }
  if (!filter_help_) {
    filter_help_ = new FilterHelpDialog(this);
    filter_help_->setAttribute(Qt::WA_DeleteOnClose);
  }
  if (!wanted.isEmpty()) filter_help_->show_filter(wanted);
  filter_help_->show();
  filter_help_->raise();
  return filter_help_;
}

void MainWindow::show_about() {
  QMessageBox::about(this, tr("About gpix viewer"), about_html());
}
