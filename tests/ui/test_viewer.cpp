// The real viewer window (gpix-viewer's MainWindow) under QT_QPA_PLATFORM=offscreen with the
// real gpix plugin: start-up on the sample, a synthetic drop of several files, the end-to-end
// run of gaussian_blur through the plugin's filter panel, the value under the cursor, the slice
// slider for 3D, recent files and settings that persist, and files read off the GUI thread
// (the event loop keeps turning while a large stack is read; a cancelled read adds nothing).
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QListWidget>
#include <QMap>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QTextBrowser>
#if GPIX_TEST_HAVE_IO
#include "gpix/io.h"
#endif
#include <QElapsedTimer>
#include <QPointer>
#include <QPushButton>
#include <QScopeGuard>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUrl>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <thread>

#include "gpix/filters.h"
#include "gpix/samples.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/label_panel.h"
#include "gpix/ui/layer_card.h"
#include "gpix/ui/render.h"
#include "gpix/version.h"
#include "help_dialogs.h"
#include "main_window.h"
#include "support/random.h"
#include "viewer_wait.h"

using namespace gpix;

namespace {

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// Writes pixels as NAME_ZxYxX_DTYPE.raw (the name carries shape and dtype).
template <class T>
QString write_raw(const QString& dir, const QString& stem, const std::vector<T>& v,
                  const Shape& s) {
  QString dims;
  for (std::size_t d : s.dims()) dims += (dims.isEmpty() ? "" : "x") + QString::number(d);
  const QString path =
      dir + QStringLiteral("/%1_%2_%3.raw")
                .arg(stem, dims, QString::fromUtf8(short_name(dtype_of<T>).data()));
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly)) return {};
  f.write(reinterpret_cast<const char*>(v.data()), qint64(v.size() * sizeof(T)));
  return path;
}

// Drags files onto the window as a file manager does: the enter must be accepted, then the
// drop delivered.
void drop_files(QWidget* w, const QStringList& paths) {
  QMimeData mime;
  QList<QUrl> urls;
  for (const QString& p : paths) urls << QUrl::fromLocalFile(p);
  mime.setUrls(urls);
  const QPointF pos(w->width() / 2.0, w->height() / 2.0);
  QDragEnterEvent enter(pos.toPoint(), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w, &enter);
  QVERIFY(enter.isAccepted());
  QDropEvent drop(pos, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w, &drop);
}

// Opens paths in the window and waits until they are read; the new layer ids.
QList<int> open_and_wait(MainWindow* w, const QStringList& paths) {
  QSignalSpy opened(w, &MainWindow::files_opened);
  w->open_files(paths);
  if (!opened.wait(120000)) return {};
  return opened.first().first().value<QList<int>>();
}

// Opens a session and waits until it is read (open_session returns at once); whether its
// layers replaced the work.
bool open_session_and_wait(MainWindow* w, const QString& path) {
  QSignalSpy opened(w, &MainWindow::session_opened);
  if (!w->open_session(path)) return false;
  if (!opened.wait(120000)) return false;
  return opened.first().first().toBool();
}

// The longest time between two ticks of a 5 ms timer while `busy()` holds (the event loop's
// longest stall), and how many ticks there were.
struct Stall {
  qint64 longest_ms = 0;
  int ticks = 0;
};
template <class Busy>
Stall watch_event_loop(Busy busy, int timeout_ms) {
  Stall s;
  QElapsedTimer clock, since;
  clock.start();
  since.start();
  QTimer tick;
  tick.setTimerType(Qt::PreciseTimer);
  QObject::connect(&tick, &QTimer::timeout, [&] {
    const qint64 gap = since.restart();
    if (qEnvironmentVariableIsSet("GPIX_TEST_GAPS") && gap > 20)
      qInfo("gap %lld ms at %lld ms", gap, clock.elapsed());
    s.longest_ms = std::max(s.longest_ms, gap);
    ++s.ticks;
  });
  tick.start(5);
  while (busy() && clock.elapsed() < timeout_ms) QTest::qWait(1);
  return s;
}

}  // namespace

class TestViewer : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  QString ini() const { return tmp_.filePath(QStringLiteral("viewer.ini")); }
  std::unique_ptr<MainWindow> make() {
    auto w = std::make_unique<MainWindow>(new QSettings(ini(), QSettings::IniFormat));
    w->load_plugins({QStringLiteral(GPIX_PLUGIN_DIR)});
    return w;
  }

 private slots:
  void starts_on_the_sample_with_the_plugin() {
    auto w = make();
    QCOMPARE(w->plugins().records().size(), 1);
    QVERIFY2(w->plugins().records().first().loaded,
             qPrintable(w->plugins().records().first().reason));
    for (const char* id :
         {"dock_devices", "dock_layer_card", "dock_filters", "dock_workflow", "dock_layers"}) {
      QVERIFY2(w->findChild<QDockWidget*>(QLatin1String(id)), id);
    }
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    w->open_default();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QVERIFY(opened.wait(60000));
    QCOMPARE(w->host().layer_ids().size(), 1);
    const int id = w->host().layer_ids().first();
    const HostArray want = sample().image;
    QCOMPARE(w->host().layer(id).name, QString::fromStdString(sample().name));
    QVERIFY(same_bytes(w->host().layer(id).array.pull(), want));
    QTRY_VERIFY_WITH_TIMEOUT(w->host().layer(id).has_contrast(),
                             30000);  // auto contrast, first show
    // The layer card of the plugin shows the layer.
    auto* card = qobject_cast<ui::LayerCard*>(w->host().dock_widget(QStringLiteral("layer_card")));
    QVERIFY(card);
    QCOMPARE(card->value(QStringLiteral("shape")), QString::fromStdString(want.shape().str()));
    // Pixel value under the cursor: the centre of image pixel (x=5, y=7).
    ui::ImageView* view = w->view();
    view->set_zoom(2.0);
    const QPointF at = view->image_pos(QPointF(0, 0));
    const QPointF widget_pos = (QPointF(5.5, 7.5) - at) * view->zoom();
    // The value arrives from a tile read in the background ("value ..." until then).
    const double v = double(want.as<std::uint16_t>()[7 * want.shape().width() + 5]);
    QTRY_VERIFY_WITH_TIMEOUT(
        view->describe(widget_pos).startsWith(QStringLiteral("x 5  y 7  value %1").arg(v)), 30000);
  }

  // The window fits a 1920 x 1080 screen with room for a title bar and a panel: every dock
  // scrolls rather than growing the window (it asked for at least 1178 px of height, so the
  // slice slider and the status bar fell off a 1080-pixel screen), also once a stack, a
  // labels image and results are open.
  void fits_a_1080p_screen() {
    auto w = make();
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    w->open_default();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QVERIFY(opened.wait(60000));
    for (QDockWidget* d : w->findChildren<QDockWidget*>()) d->show();
    QApplication::processEvents();
    const QSize least = w->minimumSizeHint().expandedTo(w->minimumSize());
    QVERIFY2(least.height() <= 960 && least.width() <= 1800,
             qPrintable(QStringLiteral("%1 x %2").arg(least.width()).arg(least.height())));
  }

  // At 1600 x 1000 (the window's first size) the right dock area gives each place room: the
  // layer card shares one with the devices and the ROIs one with the labels, as tabs, so three
  // places share the height instead of five (about 180 px each before). Every dock is still
  // reachable: hidden behind a tab, not closed.
  void right_docks_have_room() {
    auto w = make();
    w->resize(1600, 1000);
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    w->open_default();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QVERIFY(opened.wait(60000));
    QApplication::processEvents();
    QList<QDockWidget*> right;
    for (QDockWidget* d : w->findChildren<QDockWidget*>()) {
      if (d->isVisible() && w->dockWidgetArea(d) == Qt::RightDockWidgetArea) right << d;
    }
    QVERIFY(right.size() >= 5);
    QString small;
    for (QDockWidget* d : right) {
      // A dock behind a tab is "visible" with no area on screen (visibleRegion empty).
      if (d->visibleRegion().isEmpty()) continue;
      if (d->height() < 250)
        small += QStringLiteral(" %1 %2").arg(d->objectName()).arg(d->height());
    }
    QVERIFY2(small.isEmpty(), qPrintable(QStringLiteral("cramped:") + small));
    const auto tabbed = [&](const char* a, const char* b) {
      auto* da = w->findChild<QDockWidget*>(QLatin1String(a));
      auto* db = w->findChild<QDockWidget*>(QLatin1String(b));
      return da && db && w->tabifiedDockWidgets(da).contains(db);
    };
    QVERIFY(tabbed("dock_layer_card", "dock_devices"));
    QVERIFY(tabbed("dock_rois", "dock_labels"));
    // The layer card is the tab in front.
    QVERIFY(
        !w->findChild<QDockWidget*>(QStringLiteral("dock_layer_card"))->visibleRegion().isEmpty());
  }

  // The pixel readout in the status bar follows what changes under a still mouse: the slice
  // by key (Page Up / Page Down) and by the slider, and the layer's pixels (a filter result
  // replacing them); it used to keep the old slice's value until the mouse moved.
  void readout_follows_slice_and_pixels() {
    auto w = make();
    const Shape s{3, 10, 12};
    std::vector<float> v(s.elements());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = float(i) + 0.5f;  // every voxel its own
    const QString path = write_raw(tmp_.path(), QStringLiteral("slices"), v, s);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const QList<int> ids = open_and_wait(w.get(), {path});
    QCOMPARE(ids.size(), 1);
    ui::ImageView* view = w->view();
    auto* label = w->findChild<QLabel*>(QStringLiteral("cursor_info"));
    QVERIFY(label);
    const int x = 4, y = 6;
    const auto value = [&](int z) { return double(v[(std::size_t(z) * 10 + y) * 12 + x]); };
    const auto expect = [&](int z, double val) {
      return QStringLiteral("x %1  y %2  z %3  value %4").arg(x).arg(y).arg(z).arg(val);
    };
    const QPointF at = view->image_pos(QPointF(0, 0));
    const QPoint pos = ((QPointF(x + 0.5, y + 0.5) - at) * view->zoom()).toPoint();
    QTest::mouseMove(view, pos);
    QTRY_VERIFY2_WITH_TIMEOUT(label->text().startsWith(expect(0, value(0))),
                              qPrintable(label->text()), 30000);
    view->setFocus();
    QTest::keyClick(w.get(), Qt::Key_PageUp);
    QCOMPARE(view->slice(), 1);
    QTRY_VERIFY2_WITH_TIMEOUT(label->text().startsWith(expect(1, value(1))),
                              qPrintable(label->text()), 30000);
    w->slice_slider()->setValue(2);
    QTRY_VERIFY2_WITH_TIMEOUT(label->text().startsWith(expect(2, value(2))),
                              qPrintable(label->text()), 30000);
    QTest::keyClick(w.get(), Qt::Key_PageDown);
    QTRY_VERIFY2_WITH_TIMEOUT(label->text().startsWith(expect(1, value(1))),
                              qPrintable(label->text()), 30000);
    // New pixels in the layer (as a filter's result replaces them): the readout reads again.
    ui::Layer l = w->host().layer(ids.first());
    std::vector<float> doubled(v);
    for (float& d : doubled) d *= 2;
    l.array = Array::push(doubled, s, l.array.device());
    w->host().replace_layer(ids.first(), l);
    QTRY_VERIFY2_WITH_TIMEOUT(label->text().startsWith(expect(1, 2 * value(1))),
                              qPrintable(label->text()), 30000);
  }

  // A layer with a very long name (over 200 characters: a generated file name, a chain of filter
  // results) leaves every dock as wide as it was and the window's minimum as it was; the name
  // is shortened where it is shown and whole in its tooltip.
  void long_layer_name_keeps_the_docks() {
    auto w = make();
    w->resize(1600, 1000);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const Shape s{9, 11};
    const auto a = test::random_values<float>(s.elements());
    QVERIFY(
        !open_and_wait(w.get(), {write_raw(tmp_.path(), QStringLiteral("short"), a, s)}).isEmpty());
    QTest::qWait(200);
    QMap<QString, int> widths;
    for (QDockWidget* d : w->findChildren<QDockWidget*>()) {
      if (d->isVisible()) widths[d->objectName()] = d->width();
    }
    const int least = w->minimumSizeHint().width();
    // " name before -> after" for each dock of `win` wider than `widths` says (2 px of slack).
    const auto grown = [&](MainWindow* win) {
      QString out;
      for (QDockWidget* d : win->findChildren<QDockWidget*>()) {
        if (!widths.contains(d->objectName())) continue;
        if (d->width() > widths[d->objectName()] + 2) {
          out += QStringLiteral(" %1 %2 -> %3")
                     .arg(d->objectName())
                     .arg(widths[d->objectName()])
                     .arg(d->width());
        }
      }
      return out;
    };
    const QString stem = QStringLiteral("long").repeated(50);
    const QList<int> ids = open_and_wait(w.get(), {write_raw(tmp_.path(), stem, a, s)});
    QCOMPARE(ids.size(), 1);
    w->host().set_current_layer(ids.first());
    QTest::qWait(200);
    const QString grew = grown(w.get());
    QVERIFY2(grew.isEmpty(), qPrintable(QStringLiteral("docks grew:") + grew));
    QVERIFY2(w->minimumSizeHint().width() <= least + 2,
             qPrintable(QStringLiteral("%1 -> %2").arg(least).arg(w->minimumSizeHint().width())));
    // A new window whose first layer has the long name lays its docks out as for a short one.
    auto w2 = make();
    w2->resize(1600, 1000);
    QVERIFY(open_and_wait(w2.get(), {write_raw(tmp_.path(), stem, a, s)}).size() == 1);
    w2->show();
    QVERIFY(QTest::qWaitForWindowExposed(w2.get()));
    QTest::qWait(200);
    const QString wider = grown(w2.get());
    QVERIFY2(wider.isEmpty(), qPrintable(QStringLiteral("docks of a new window wider:") + wider));
    // The layer card shortens the name to its width; the whole name is its value and tooltip.
    auto* card = qobject_cast<ui::LayerCard*>(w2->host().dock_widget(QStringLiteral("layer_card")));
    QVERIFY(card);
    const QString full = w2->host().layer(w2->host().layer_ids().first()).name;
    QVERIFY(full.size() > 200);
    QCOMPARE(card->value(QStringLiteral("name")), full);
    auto* shown = card->findChild<QLabel*>(QStringLiteral("card_name"));
    QVERIFY(shown);
    QCOMPARE(shown->toolTip(), full);
    QVERIFY2(shown->text().contains(QChar(0x2026)) && shown->text().size() < full.size(),
             qPrintable(shown->text()));
  }

  void drop_several_files_opens_layers() {
    auto w = make();
    const Shape s2{13, 21}, s3{4, 9, 11};
    const auto a = test::random_values<std::uint16_t>(s2.elements());
    const auto b = test::random_values<float>(s3.elements());
    const QString pa = write_raw(tmp_.path(), QStringLiteral("plane"), a, s2);
    const QString pb = write_raw(tmp_.path(), QStringLiteral("stack"), b, s3);
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    drop_files(w.get(), {pa, pb});
    if (QTest::currentTestFailed()) return;
    QVERIFY(opened.wait(60000));
    QVERIFY2(w->last_error().isEmpty(), qPrintable(w->last_error()));
    const QList<int> ids = w->host().layer_ids();
    QCOMPARE(ids.size(), 2);
    QVERIFY(same_bytes(w->host().layer(ids[0]).array.pull(), HostArray::from(a, s2)));
    QVERIFY(same_bytes(w->host().layer(ids[1]).array.pull(), HostArray::from(b, s3)));
    // The 3D stack gets a slice slider.
    QCOMPARE(w->view()->depth(), 4);
    QCOMPARE(w->slice_slider()->maximum(), 3);
    w->slice_slider()->setValue(2);
    QCOMPARE(w->view()->slice(), 2);
    // Recent files, newest first, persist in the settings.
    QCOMPARE(w->recent_files().mid(0, 2), (QStringList{pb, pa}));
    // One named relative to the working folder is kept by its whole path (Open recent from
    // another folder said "no such file").
    {
      const QString before = QDir::currentPath();
      QVERIFY(QDir::setCurrent(tmp_.path()));
      const auto back = qScopeGuard([&] { QDir::setCurrent(before); });
      QVERIFY2(open_and_wait(w.get(), {QFileInfo(pa).fileName()}).size() == 1,
               qPrintable(w->last_error()));
    }
    QCOMPARE(w->recent_files().first(), QFileInfo(pa).absoluteFilePath());
    QCOMPARE(w->recent_files().count(QFileInfo(pa).absoluteFilePath()), 1);
    QCOMPARE(w->host().layer_ids().size(), 3);
    w->host().remove_layer(w->host().layer_ids().last());
    // A file no reader takes is reported, not fatal: in the status bar and in a message box
    // that does not hold the window (not modal); a second failure while it is open adds to it.
    QVERIFY(!w->error_box());
    QVERIFY(open_and_wait(w.get(), {tmp_.filePath(QStringLiteral("x.unknown"))}).isEmpty());
    QVERIFY(w->last_error().contains(QStringLiteral("no reader")));
    QCOMPARE(w->host().layer_ids().size(), 2);
    QVERIFY(w->statusBar()->currentMessage().contains(QStringLiteral("no reader")));
    QPointer<QMessageBox> box = w->error_box();
    QVERIFY(box);
    QVERIFY(box->isVisible());
    QVERIFY(!box->isModal());
    QCOMPARE(box->windowModality(), Qt::NonModal);
    QVERIFY2(box->text().contains(QStringLiteral("x.unknown")), qPrintable(box->text()));
    QVERIFY(open_and_wait(w.get(), {tmp_.filePath(QStringLiteral("y.unknown"))}).isEmpty());
    QCOMPARE(w->error_box(), box.data());
    QVERIFY2(box->text().contains(QStringLiteral("x.unknown")) &&
                 box->text().contains(QStringLiteral("y.unknown")),
             qPrintable(box->text()));
    // The window still works behind it: the slice slider moves the view.
    w->slice_slider()->setValue(1);
    QCOMPARE(w->view()->slice(), 1);
    box->close();
    QTRY_VERIFY(!box);
    QVERIFY(!w->error_box());
    // A good file afterwards opens without a box.
    QVERIFY(!open_and_wait(w.get(), {pa}).isEmpty());
    QVERIFY(!w->error_box());
  }

#if GPIX_TEST_HAVE_IO
  // A microscope-style 16-bit TIFF stack dropped on the window opens as one 3D layer through
  // gpix_io (ITK), pixels and spacing intact.
  void tiff_stack_opens() {
    auto w = make();
    const Shape s{5, 19, 23};
    const auto v = test::random_values<std::uint16_t>(s.elements());
    const QString path = tmp_.filePath(QStringLiteral("cells.tif"));
    io::Metadata m;
    m.spacing = {1.5, 0.25, 0.2};
    m.unit = "um";
    io::write(path.toStdString(), HostArray::from(v, s), m);
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    drop_files(w.get(), {path});
    if (QTest::currentTestFailed()) return;
    QVERIFY(opened.wait(60000));
    QVERIFY2(w->last_error().isEmpty(), qPrintable(w->last_error()));
    const QList<int> ids = w->host().layer_ids();
    QCOMPARE(ids.size(), 1);
    const auto& layer = w->host().layer(ids[0]);
    QVERIFY(
        same_bytes(layer.array.valid() ? layer.array.pull() : layer.host, HostArray::from(v, s)));
    QCOMPARE(layer.metadata.value(QStringLiteral("format")).toString(), QStringLiteral("TIFF"));
    QCOMPARE(w->view()->depth(), 5);
    // The calibration: on the card, a scale bar that View > Scale bar turns off and on.
    auto* card = qobject_cast<ui::LayerCard*>(w->host().dock_widget(QStringLiteral("layer_card")));
    QVERIFY(card);
    QCOMPARE(card->value(QStringLiteral("spacing")),
             QStringLiteral("1.5 \u00d7 0.25 \u00d7 0.2 \u00b5m (z, y, x)"));
    QVERIFY(w->view()->scale_bar().label.endsWith(QStringLiteral("\u00b5m")));
    auto* bar = w->findChild<QAction*>(QStringLiteral("action_scale_bar"));
    QVERIFY(bar);
    bar->trigger();
    QVERIFY(w->view()->scale_bar().label.isEmpty());
    bar->trigger();
    QVERIFY(!w->view()->scale_bar().label.isEmpty());
    // Edit > Auto contrast on slice 3 takes the whole stack's percentiles, as the Auto buttons
    // (and Ctrl+A on a file-backed stack) do; it took slice 3's.
    w->slice_slider()->setValue(3);
    auto* autoc = w->findChild<QAction*>(QStringLiteral("action_auto_contrast"));
    QVERIFY(autoc);
    ui::Layer marked = w->host().layer(ids[0]);  // limits no Auto gives: the new ones are seen
    marked.contrast_min = 1.0;
    marked.contrast_max = 2.0;
    w->host().replace_layer(ids[0], marked);
    autoc->trigger();
    const gpix::Array pixels = w->host().layer(ids[0]).array.valid()
                                   ? w->host().layer(ids[0]).array
                                   : gpix::Array::push(w->host().layer(ids[0]).host);
    const auto whole = ui::auto_contrast(pixels);
    QVERIFY(whole != ui::auto_contrast(pixels, 3));  // the two answers differ on this data
    QTRY_VERIFY_WITH_TIMEOUT(w->host().layer(ids[0]).contrast_max != 2.0, 30000);
    QCOMPARE(w->host().layer(ids[0]).contrast_min, whole.first);
    QCOMPARE(w->host().layer(ids[0]).contrast_max, whole.second);
    // Saving as NRRD goes through gpix_io too, the calibration with it.
    const QString out = tmp_.filePath(QStringLiteral("cells.nrrd"));
    w->host().save_layer(ids[0], out);
    const io::Image back = io::read(out.toStdString());
    QVERIFY(same_bytes(back.pixels, HostArray::from(v, s)));
    QCOMPARE(back.meta.unit, std::string("um"));
    QCOMPARE(back.meta.spacing, m.spacing);
  }

  // A label TIFF that gpix saved opens as labels in the labels colour map, the Labels dock
  // measures it, and File offers the CSV export.
  void labels_file_opens_in_the_labels_dock() {
    auto w = make();
    QVERIFY(w->findChild<QDockWidget*>(QStringLiteral("dock_labels")));
    std::vector<std::uint32_t> v(40 * 30, 0);
    for (std::size_t i = 0; i < 200; ++i) v[i] = 1;
    for (std::size_t i = 600; i < 700; ++i) v[i] = 2;
    v[1199] = 5;
    const QString path = tmp_.filePath(QStringLiteral("cells_labels.tif"));
    io::Metadata m;
    m.labels = true;
    io::write(path.toStdString(), HostArray::from(v, Shape{40, 30}), m);
    const QList<int> ids = open_and_wait(w.get(), {path});
    QCOMPARE(ids.size(), 1);
    QVERIFY(w->host().layer(ids[0]).labels);
    QCOMPARE(w->host().layer(ids[0]).colormap, QStringLiteral("labels"));
    ui::LabelPanel* panel = w->label_panel();
    QCOMPARE(panel->labels_layer(), ids[0]);
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy() && panel->model()->rowCount() == 3, 30000);
    QCOMPARE(panel->model()->value(1, panel->model()->column(QStringLiteral("area"))), 100.0);
    bool found = false;
    for (QAction* a : w->host().menu(QStringLiteral("File"))->actions())
      found = found || a->text().contains(QStringLiteral("Export label measurements"));
    QVERIFY(found);
  }

  // Filter results of any dtype save as TIFF through the host's writer (File > Save layer
  // as) and open again bit for bit: connected_components' uint32 labels, an int64 stack and
  // a float64 plane with NaN and infinities.
  void results_of_any_dtype_save_as_tiff() {
    auto w = make();
    const Shape s{23, 31};
    std::vector<std::uint8_t> mask(s.elements());
    for (auto& m : mask) m = test::rng()() % 3 == 0 ? 1 : 0;
    const QList<int> ids =
        open_and_wait(w.get(), {write_raw(tmp_.path(), QStringLiteral("mask"), mask, s)});
    QCOMPARE(ids.size(), 1);
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel);
    QVERIFY(panel->select_filter(QStringLiteral("connected_components")));
    QSignalSpy done(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel->error_text()));
    const int labels_id = w->host().layer_ids().last();
    const HostArray labels = w->host().layer(labels_id).array.pull();
    QCOMPARE(labels.dtype(), DType::u32);
    const auto lv = labels.as<std::uint32_t>();
    QVERIFY2(*std::max_element(lv.begin(), lv.end()) > 1, "expected several labels");

    const Shape s3{3, 7, 5};
    plugin::Layer wide;
    wide.name = QStringLiteral("wide");
    wide.host = HostArray::from(test::random_bits<std::int64_t>(s3.elements()), s3);
    plugin::Layer dbl;
    dbl.name = QStringLiteral("double");
    dbl.host = HostArray::from(test::random_bits<double>(s.elements()), s);
    const std::vector<std::pair<int, HostArray>> cases = {{labels_id, labels},
                                                          {w->host().add_layer(wide), wide.host},
                                                          {w->host().add_layer(dbl), dbl.host}};
    for (const auto& [id, want] : cases) {
      const QString out = tmp_.filePath(QStringLiteral("saved_%1.tif").arg(id));
      w->host().save_layer(id, out);
      const io::Image file = io::read(out.toStdString());
      QCOMPARE(file.pixels.dtype(), want.dtype());
      QVERIFY2(same_bytes(file.pixels, want), qPrintable(out));
      // Opened again in the viewer, through the plugin's reader.
      const QList<int> back = open_and_wait(w.get(), {out});
      QCOMPARE(back.size(), 1);
      const plugin::Layer& l = w->host().layer(back.first());
      QVERIFY2(same_bytes(l.array.valid() ? l.array.pull() : l.host, want), qPrintable(out));
    }
  }

  // A 64 x 512 x 512 float32 stack (64 MiB) is read on a worker thread: the event loop keeps
  // turning (no gap between ticks of a 5 ms timer reaches 50 ms) until the layer is in, with
  // "Reading NAME…" and a Cancel button shown meanwhile, and the pixels arrive whole. Where the
  // read ends too soon to tell a stall from none (a fast machine, a warm page cache: 100 ms
  // under ASan in one CI run), the stack doubles, up to 256 planes.
  void reading_keeps_the_window_responsive() {
    auto w = make();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    // What this machine's scheduler alone gives (other processes on few cores stall any
    // thread now and then): the same measure on the idle window first.
    const Stall idle = watch_event_loop([] { return true; }, 500);
    const qint64 limit = 50 + (idle.longest_ms > 25 ? idle.longest_ms : 0);
    Shape s{64, 512, 512};
    std::vector<float> v;
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    for (std::size_t planes = 64;; planes *= 2) {
      s = Shape{planes, 512, 512};
      v = test::random_values<float>(s.elements());
      const QString path = tmp_.filePath(QStringLiteral("large.tif"));
      io::write(path.toStdString(), HostArray::from(v, s));
      opened.clear();
      QElapsedTimer clock;
      clock.start();
      w->open_files({path});
      QVERIFY(w->reading());
      bool shown = false;
      const Stall stall = watch_event_loop(
          [&] {
            auto* label = w->findChild<QLabel*>(QStringLiteral("read_label"));
            shown = shown || (label && label->isVisible() &&
                              label->text() == QStringLiteral("Reading large.tif…"));
            return opened.isEmpty();
          },
          120000);
      const qint64 took = clock.elapsed();
      QCOMPARE(opened.size(), 1);
      QVERIFY(shown);
      qInfo(
          "read %s (%zu planes) in %lld ms: %d timer ticks, the longest gap %lld ms (idle: %lld "
          "ms)",
          qPrintable(path), planes, took, stall.ticks, stall.longest_ms, idle.longest_ms);
      if (took <= 2 * limit && planes < 256) continue;
      QVERIFY2(took > 2 * limit, "the read was too quick to tell a stall from none");
      QVERIFY2(stall.longest_ms < limit,
               qPrintable(QStringLiteral("the event loop stalled for %1 ms (limit %2 ms)")
                              .arg(stall.longest_ms)
                              .arg(limit)));
      break;
    }
    const QList<int> ids = opened.first().first().value<QList<int>>();
    QCOMPARE(ids.size(), 1);
    const plugin::Layer& l = w->host().layer(ids.first());
    QVERIFY(same_bytes(l.array.valid() ? l.array.pull() : l.host, HostArray::from(v, s)));
  }
#endif

  // A reader that hangs until released (as an ITK reader spinning on a corrupt header would):
  // the window stays usable, Cancel ends the wait at once, and when the reader finally returns
  // its layer is dropped. A file asked for after the cancel opens normally.
  void cancelled_read_adds_nothing() {
    auto w = make();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    auto release = std::make_shared<std::atomic<bool>>(false);
    w->host().register_reader(
        {QStringLiteral("slow"), {QStringLiteral("*.slow")}, [release](const QString& path) {
           while (!release->load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
           plugin::Layer l;
           l.name = QFileInfo(path).completeBaseName();
           l.host = HostArray::from(std::vector<float>{1, 2, 3}, Shape{3});
           return QList<plugin::Layer>{l};
         }});
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    w->open_files({tmp_.filePath(QStringLiteral("hangs.slow")),
                   tmp_.filePath(QStringLiteral("never_read.slow"))});
    QTRY_COMPARE(w->reads_running(), 1);
    const Stall stall = watch_event_loop([] { return true; }, 300);
    QVERIFY(w->reading());
    QVERIFY(opened.isEmpty());
    QCOMPARE(w->reads_running(), 1);
    qInfo("a hanging reader: %d ticks in 300 ms, the longest gap %lld ms", stall.ticks,
          stall.longest_ms);
    QVERIFY2(stall.ticks >= 20, "the event loop stalled while a reader hung");
    auto* cancel = w->findChild<QPushButton*>(QStringLiteral("cancel_read"));
    QVERIFY(cancel && cancel->isVisible());
    QTest::mouseClick(cancel, Qt::LeftButton);
    QCOMPARE(opened.size(), 1);  // at once, not when the reader returns
    QVERIFY(opened.first().first().value<QList<int>>().isEmpty());
    QVERIFY(!w->reading());
    QVERIFY(!cancel->isVisible());
    release->store(true);
    QTRY_COMPARE_WITH_TIMEOUT(w->reads_running(), 0, 10000);
    QTest::qWait(100);  // the finished read's result, had it been kept, would arrive now
    QVERIFY(w->host().layer_ids().isEmpty());
    QCOMPARE(opened.size(), 1);
    // The next file asked for is read as usual.
    const QList<int> ids = open_and_wait(w.get(), {tmp_.filePath(QStringLiteral("later.slow"))});
    QCOMPARE(ids.size(), 1);
    QCOMPARE(w->host().layer(ids.first()).name, QStringLiteral("later"));
  }

  void gaussian_end_to_end() {
    auto w = make();
    const Shape s{37, 45};
    const auto v = test::random_values<float>(s.elements());
    const QString path = write_raw(tmp_.path(), QStringLiteral("e2e"), v, s);
    const QList<int> ids = open_and_wait(w.get(), {path});
    QCOMPARE(ids.size(), 1);
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel);
    QVERIFY(panel->select_filter(QStringLiteral("gaussian_blur")));
    QVERIFY(panel->form()->set_param(QStringLiteral("sigma_x"), 2.0));
    QVERIFY(panel->form()->set_param(QStringLiteral("sigma_y"), 1.5));
    QSignalSpy done(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel->error_text()));
    QCOMPARE(w->host().layer_ids().size(), 2);
    const plugin::Layer out = w->host().layer(w->host().layer_ids().last());
    QCOMPARE(out.name, w->host().layer(ids.first()).name +
                           QStringLiteral(" · gaussian_blur sigma_x=2 sigma_y=1.5"));
    const Array input = Array::push(HostArray::from(v, s), w->host().device());
    const Array want = gaussian_blur(input, 2.0, 1.5);
    QVERIFY(same_bytes(out.array.pull(), want.pull()));
    // The input layer is untouched.
    QVERIFY(same_bytes(w->host().layer(ids.first()).array.pull(), HostArray::from(v, s)));
  }

  void fits_a_newly_opened_image() {
    auto w = make();
    w->resize(1000, 700);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QSignalSpy sample(w.get(), &MainWindow::files_opened);
    w->open_default();
    QVERIFY(sample.wait(60000));  // files are read off the GUI thread
    w->view()->set_zoom(7.0);     // the user zoomed in on the sample
    const Shape s{300, 900};
    const QString path = write_raw(tmp_.path(), QStringLiteral("wide"),
                                   test::random_values<std::uint8_t>(s.elements()), s);
    QCOMPARE(open_and_wait(w.get(), {path}).size(), 1);
    const QSize image = w->view()->image_size();
    const double fit = std::min(w->view()->width() / double(image.width()),
                                w->view()->height() / double(image.height()));
    QVERIFY2(std::abs(w->view()->zoom() - fit) < 1e-9,
             qPrintable(QStringLiteral("zoom %1, fit %2").arg(w->view()->zoom()).arg(fit)));
    // A filter result keeps the zoom the user chose.
    w->view()->set_zoom(3.0);
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel->select_filter(QStringLiteral("invert")));
    QSignalSpy done(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done.wait(60000));
    QCOMPARE(w->view()->zoom(), 3.0);
  }

  // Two files and a filter result with display settings: saved as a session (the result
  // written beside it), reopened in another window with the same layers, data, settings and
  // workflow.
  void session_round_trip() {
    QTemporaryDir dir;
    const Shape s2{13, 21}, s3{4, 9, 11};
    const auto a = test::random_values<std::uint16_t>(s2.elements());
    const auto b = test::random_values<float>(s3.elements());
    const QString pa = write_raw(dir.path(), QStringLiteral("plane"), a, s2);
    const QString pb = write_raw(dir.path(), QStringLiteral("stack"), b, s3);
    auto w = make();
    const QList<int> ids = open_and_wait(w.get(), {pa, pb});
    QCOMPARE(ids.size(), 2);
    plugin::Layer la = w->host().layer(ids[0]);
    la.colormap = QStringLiteral("hot");
    la.opacity = 0.5;
    la.additive = true;
    la.visible = false;
    la.contrast_min = 10;
    la.contrast_max = 2000;
    w->host().replace_layer(ids[0], la);
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel->select_filter(QStringLiteral("gaussian_blur")));
    panel->form()->set_input(0, ids[1]);
    QSignalSpy done(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel->error_text()));
    const int result = w->host().layer_ids().last();
    QCOMPARE(w->unsaved_layers(), QStringList{w->host().layer(result).name});
    QTRY_VERIFY_WITH_TIMEOUT(!w->view()->busy(), 30000);  // automatic contrast arrived
    // The view: slice 3 of the stack's 4, zoomed in on a point that is not the centre.
    ui::ImageView* view = w->view();
    const auto centre = [](ui::ImageView* v) {
      return v->image_pos(QPointF(v->width() / 2.0, v->height() / 2.0));
    };
    view->set_slice(2);
    view->set_zoom(6.5);
    view->center_on(QPointF(3.25, 5.5));
    QCOMPARE(view->slice(), 2);
    const QPointF centre_was = centre(view);
    const QString session = dir.filePath(QStringLiteral("work.gpix.json"));
    QVERIFY2(save_session_and_wait(w.get(), session), qPrintable(w->last_error()));
    QVERIFY(w->unsaved_layers().isEmpty());
    QCOMPARE(QFileInfo(w->host().layer(result).source).absolutePath(),
             dir.filePath(QStringLiteral("work_data")));
    // Paths inside the session's folder are stored relative to it.
    QFile f(session);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
    QCOMPARE(json.value(QStringLiteral("format")).toString(), QStringLiteral("gpix-session"));
    const QJsonArray jl = json.value(QStringLiteral("layers")).toArray();
    QCOMPARE(jl.size(), 3);
    QCOMPARE(jl[0].toObject().value(QStringLiteral("file")).toString(), QFileInfo(pa).fileName());
    QVERIFY(jl[2]
                .toObject()
                .value(QStringLiteral("file"))
                .toString()
                .startsWith(QStringLiteral("work_data/")));

    auto w2 = make();
    w2->open_default();  // still queued for reading: the session cancels it and replaces it
    QVERIFY2(open_session_and_wait(w2.get(), session), qPrintable(w2->last_error()));
    QVERIFY2(w2->last_error().isEmpty(), qPrintable(w2->last_error()));
    QVERIFY(!w2->error_box());
    QTRY_VERIFY_WITH_TIMEOUT(!w2->view()->busy(), 30000);
    const QList<int> now = w2->host().layer_ids();
    QCOMPARE(now.size(), 3);
    const QList<int> was = w->host().layer_ids();
    for (int i = 0; i < 3; ++i) {
      const plugin::Layer x = w->host().layer(was[i]);
      const plugin::Layer y = w2->host().layer(now[i]);
      QCOMPARE(y.name, x.name);
      QCOMPARE(y.colormap, x.colormap);
      QCOMPARE(y.opacity, x.opacity);
      QCOMPARE(y.additive, x.additive);
      QCOMPARE(y.visible, x.visible);
      QCOMPARE(y.contrast_min, x.contrast_min);
      QCOMPARE(y.contrast_max, x.contrast_max);
      QVERIFY2(same_bytes(y.array.pull(), x.array.pull()), qPrintable(x.name));
    }
    QCOMPARE(w2->host().current_layer(), now[2]);
    QCOMPARE(w2->view()->slice(), 2);
    QCOMPARE(w2->view()->zoom(), 6.5);
    const QPointF centre_now = centre(w2->view());
    QVERIFY2(std::abs(centre_now.x() - centre_was.x()) < 1e-9 &&
                 std::abs(centre_now.y() - centre_was.y()) < 1e-9,
             qPrintable(QStringLiteral("centre (%1, %2), saved (%3, %4)")
                            .arg(centre_now.x())
                            .arg(centre_now.y())
                            .arg(centre_was.x())
                            .arg(centre_was.y())));
    const auto& s1 = w->host().workflow().steps();
    const auto& st = w2->host().workflow().steps();
    QCOMPARE(st.size(), 1);
    QCOMPARE(st[0].operation, s1[0].operation);
    QCOMPARE(st[0].inputs, s1[0].inputs);
    QCOMPARE(st[0].params, s1[0].params);
    QCOMPARE(st[0].output, s1[0].output);
    QVERIFY(w2->unsaved_layers().isEmpty());
  }

  void session_names_missing_files() {
    QTemporaryDir dir;
    const Shape s{6, 7};
    const auto a = test::random_values<float>(s.elements());
    const QString pa = write_raw(dir.path(), QStringLiteral("kept"), a, s);
    const QString pb = write_raw(dir.path(), QStringLiteral("gone"), a, s);
    const QString session = dir.filePath(QStringLiteral("s.gpix.json"));
    {
      auto w = make();
      QCOMPARE(open_and_wait(w.get(), {pa, pb}).size(), 2);
      QVERIFY2(save_session_and_wait(w.get(), session), qPrintable(w->last_error()));
    }
    // A session of the other file alone.
    const QString only_gone = dir.filePath(QStringLiteral("gone.gpix.json"));
    {
      auto w2 = make();
      QCOMPARE(open_and_wait(w2.get(), {pb}).size(), 1);
      QVERIFY2(save_session_and_wait(w2.get(), only_gone), qPrintable(w2->last_error()));
    }
    QVERIFY(QFile::remove(pb));
    auto w = make();
    QVERIFY(open_session_and_wait(w.get(), session));
    QVERIFY2(w->last_error().contains(QStringLiteral("does not exist")),
             qPrintable(w->last_error()));
    QVERIFY2(w->last_error().contains(pb), qPrintable(w->last_error()));
    // Said in the window's message box too (not modal), whoever opened the session.
    QPointer<QMessageBox> box = w->error_box();
    QVERIFY(box);
    QVERIFY(!box->isModal());
    QVERIFY2(
        box->text().contains(QStringLiteral("opened with problems")) && box->text().contains(pb),
        qPrintable(box->text()));
    box->close();
    QTRY_VERIFY(!w->error_box());
    QCOMPARE(w->host().layer_ids().size(), 1);
    QVERIFY(same_bytes(w->host().layer(w->host().layer_ids().first()).array.pull(),
                       HostArray::from(a, s)));
    // No layer of the session can open (its one file is gone): refused before anything is
    // cleared, as a session that cannot be read (it emptied the window).
    QVERIFY(!open_session_and_wait(w.get(), only_gone));
    QVERIFY2(w->last_error().contains(QStringLiteral("none of its layers can be opened")) &&
                 w->last_error().contains(QStringLiteral("does not exist")),
             qPrintable(w->last_error()));
    QCOMPARE(w->host().layer_ids().size(), 1);
    QVERIFY2(w->error_box() && w->error_box()->text().contains(QStringLiteral("was not opened")),
             qPrintable(w->error_box() ? w->error_box()->text() : QString()));
    w->error_box()->close();
    QTRY_VERIFY(!w->error_box());
    // Not a session: refused before anything is cleared.
    const QString bad = dir.filePath(QStringLiteral("bad.json"));
    QFile f(bad);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"layers\": []}");
    f.close();
    QVERIFY(!open_session_and_wait(w.get(), bad));
    QVERIFY2(w->last_error().contains(QStringLiteral("not a gpix session")),
             qPrintable(w->last_error()));
    QVERIFY(w->error_box());
    QVERIFY2(w->error_box()->text().contains(QStringLiteral("was not opened")) &&
                 w->error_box()->text().contains(QStringLiteral("not a gpix session")),
             qPrintable(w->error_box()->text()));
    QCOMPARE(w->host().layer_ids().size(), 1);
  }

  // A session saved before the view was kept opens fitted on slice 1; an unsound view opens the
  // layers, fitted, and says so; a slice past the layers' depth (the file changed) is the last.
  void session_view_old_bad_and_past_the_end() {
    QTemporaryDir dir;
    const Shape s{5, 7, 6};  // 5 slices
    const auto a = test::random_values<float>(s.elements());
    const QString pa = write_raw(dir.path(), QStringLiteral("stack"), a, s);
    const QString session = dir.filePath(QStringLiteral("s.gpix.json"));
    double fitted = 0, zoomed = 0;
    {
      auto w = make();
      QCOMPARE(open_and_wait(w.get(), {pa}).size(), 1);
      w->view()->fit();
      fitted = w->view()->zoom();
      w->view()->set_slice(3);
      w->view()->set_zoom(fitted * 1.5);
      zoomed = w->view()->zoom();
      QVERIFY(zoomed > fitted);
      QVERIFY2(save_session_and_wait(w.get(), session), qPrintable(w->last_error()));
    }
    const auto rewrite = [&](const std::function<void(QJsonObject&)>& edit) {
      QFile f(session);
      QVERIFY(f.open(QIODevice::ReadOnly));
      QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
      f.close();
      QVERIFY(root.contains(QStringLiteral("view")));
      edit(root);
      QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
      f.write(QJsonDocument(root).toJson());
    };
    const auto reopen = [&](const QString& problem, int slice, double zoom) {
      auto w = make();
      QVERIFY(open_session_and_wait(w.get(), session));
      QCOMPARE(w->host().layer_ids().size(), 1);
      if (problem.isEmpty()) {
        QVERIFY2(w->last_error().isEmpty(), qPrintable(w->last_error()));
      } else {
        QVERIFY2(w->last_error().contains(problem), qPrintable(w->last_error()));
      }
      QCOMPARE(w->view()->slice(), slice);
      QCOMPARE(w->view()->zoom(), zoom);
    };
    reopen(QString(), 3, zoomed);
    if (QTest::currentTestFailed()) return;
    rewrite([](QJsonObject& root) {
      QJsonObject v = root.value(QStringLiteral("view")).toObject();
      v.insert(QStringLiteral("slice"), 40);
      root.insert(QStringLiteral("view"), v);
    });
    reopen(QString(), 4, zoomed);
    rewrite([](QJsonObject& root) {
      root.insert(QStringLiteral("view"),
                  QJsonObject{{QStringLiteral("zoom"), QStringLiteral("x")}});
    });
    reopen(QStringLiteral("the view's zoom, centre, slice were not restored"), 0, fitted);
    // Each sound part is restored, the others named: the slice here.
    rewrite([](QJsonObject& root) {
      root.insert(QStringLiteral("view"),
                  QJsonObject{{QStringLiteral("slice"), 3},
                              {QStringLiteral("zoom"), -5},
                              {QStringLiteral("centre"), QJsonArray{1e308, QStringLiteral("x")}}});
    });
    reopen(QStringLiteral("the view's zoom, centre were not restored"), 3, fitted);
    rewrite([](QJsonObject& root) { root.remove(QStringLiteral("view")); });
    reopen(QString(), 0, fitted);
    // A fitted view is kept as fitted, not as its zoom: reopened in a smaller window it fits
    // that window and follows its size.
    {
      auto w = make();
      QCOMPARE(open_and_wait(w.get(), {pa}).size(), 1);
      w->view()->fit();
      w->view()->set_slice(2);
      QVERIFY(w->view()->fitted());
      QVERIFY2(save_session_and_wait(w.get(), session), qPrintable(w->last_error()));
    }
    {
      QFile f(session);
      QVERIFY(f.open(QIODevice::ReadOnly));
      const QJsonObject v =
          QJsonDocument::fromJson(f.readAll()).object().value(QStringLiteral("view")).toObject();
      QVERIFY(v.value(QStringLiteral("fitted")).toBool());
      QVERIFY(!v.contains(QStringLiteral("zoom")));
    }
    auto small = make();
    small->view()->resize(small->view()->width() / 2, small->view()->height() / 2);
    QVERIFY(open_session_and_wait(small.get(), session));
    QVERIFY2(small->last_error().isEmpty(), qPrintable(small->last_error()));
    QCOMPARE(small->view()->slice(), 2);
    QVERIFY(small->view()->fitted());
    const double zoom = small->view()->zoom();
    small->view()->fit();
    QCOMPARE(small->view()->zoom(), zoom);
  }

  void quit_asks_about_unsaved_results() {
    QTemporaryDir dir;
    const Shape s{9, 10};
    const auto v = test::random_values<float>(s.elements());
    auto w = make();
    QCOMPARE(open_and_wait(w.get(), {write_raw(dir.path(), QStringLiteral("in"), v, s)}).size(), 1);
    w->show();
    QVERIFY(w->unsaved_layers().isEmpty());
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel->select_filter(QStringLiteral("invert")));
    QSignalSpy done(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done.wait(60000));
    const int result = w->host().layer_ids().last();
    const QString name = w->host().layer(result).name;
    int asked = 0;
    QStringList told;
    // Cancel: the window stays.
    w->set_prompts_for_testing(
        [&](const QStringList& names) {
          ++asked;
          told = names;
          return int(QMessageBox::Cancel);
        },
        [] { return QString(); });
    QVERIFY(!w->close());
    QCOMPARE(asked, 1);
    QCOMPARE(told, QStringList{name});
    QVERIFY(w->isVisible());
    // Save: written into the chosen folder, then it closes.
    const QString folder = dir.filePath(QStringLiteral("results"));
    w->set_prompts_for_testing(
        [&](const QStringList&) {
          ++asked;
          return int(QMessageBox::Save);
        },
        [folder] { return folder; });
    const HostArray want = w->host().layer(result).array.pull();
    // The results are written in the background: the window stays until they are, then closes.
    QSignalSpy written(w.get(), &MainWindow::results_saved);
    QVERIFY(!w->close());
    QVERIFY(w->saving_results());
    QVERIFY(w->isVisible());
    QVERIFY(written.wait(60000));
    QCOMPARE(written.first().first().toString(), QString());
    QTRY_VERIFY(!w->isVisible());
    QCOMPARE(asked, 2);
    const QString saved = w->host().layer(result).source;
    QCOMPARE(QFileInfo(saved).absolutePath(), folder);
    auto back = make();
    const QList<int> reread = open_and_wait(back.get(), {saved});
    QCOMPARE(reread.size(), 1);
    QVERIFY(same_bytes(back->host().layer(reread.first()).array.pull(), want));
    // Discard: nothing is written, it closes.
    panel = qobject_cast<ui::FilterPanel*>(back->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel->select_filter(QStringLiteral("invert")));
    QSignalSpy done2(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done2.wait(60000));
    back->show();
    back->set_prompts_for_testing([](const QStringList&) { return int(QMessageBox::Discard); },
                                  [] { return QStringLiteral("/nonexistent/never"); });
    QVERIFY(back->close());
    QCOMPARE(QDir(folder).entryList(QDir::Files).size(), 1);
  }

  // Quitting while a filter runs stops it: with results to save, after the folder is chosen
  // and before the saves (which would wait behind it on the device, and its result would ask a
  // second time); with none, at once. Cancel keeps it running.
  void quit_stops_running_filters() {
    QTemporaryDir dir;
    const Shape s{9, 10};
    const auto v = test::random_values<float>(s.elements());
    auto w = make();
    QCOMPARE(open_and_wait(w.get(), {write_raw(dir.path(), QStringLiteral("in"), v, s)}).size(), 1);
    w->show();
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel->select_filter(QStringLiteral("invert")));
    QSignalSpy done(panel, &ui::FilterPanel::finished);
    panel->run();
    QVERIFY(done.wait(60000));
    const std::shared_ptr<ui::Task> filter = w->host().begin_task(QStringLiteral("median_box"));
    QCOMPARE(w->host().running_tasks(), QStringList{QStringLiteral("median_box")});
    int asked = 0;
    w->set_prompts_for_testing(
        [&](const QStringList&) {
          ++asked;
          return int(QMessageBox::Cancel);
        },
        [] { return QString(); });
    QVERIFY(!w->close());
    QVERIFY(!filter->cancelled());  // the window stays, and so does the filter
    const QString folder = dir.filePath(QStringLiteral("results"));
    w->set_prompts_for_testing(
        [&](const QStringList&) {
          ++asked;
          return int(QMessageBox::Save);
        },
        [folder] { return folder; });
    QSignalSpy written(w.get(), &MainWindow::results_saved);
    QVERIFY(!w->close());
    QVERIFY(filter->cancelled());
    filter->finish();  // as the filter does once it stops
    QVERIFY(written.wait(60000));
    QTRY_VERIFY(!w->isVisible());
    QCOMPARE(asked, 2);
    // Nothing to save: the filter is stopped and the window closes without a question.
    auto quiet = make();
    quiet->show();
    const std::shared_ptr<ui::Task> other =
        quiet->host().begin_task(QStringLiteral("gaussian_blur"));
    quiet->set_prompts_for_testing(
        [&](const QStringList&) {
          ++asked;
          return int(QMessageBox::Cancel);
        },
        [] { return QString(); });
    QVERIFY(quiet->close());
    QVERIFY(other->cancelled());
    QCOMPARE(asked, 2);
  }

  void help_menu() {
    auto w = make();
    QMenu* help = nullptr;
    const QList<QAction*> menus = w->menuBar()->actions();
    for (QAction* a : menus) {
      if (a->menu() && a->text().remove(QLatin1Char('&')) == QStringLiteral("Help"))
        help = a->menu();
    }
    QVERIFY(help);
    QCOMPARE(menus.last()->menu(), help);  // the last menu, after the plugin's
    QStringList texts;
    for (QAction* a : help->actions()) texts << a->text().remove(QLatin1Char('&'));
    for (const char* t : {"Quick start", "Filter help", "About gpix viewer"})
      QVERIFY2(texts.contains(QLatin1String(t)), qPrintable(texts.join(QStringLiteral(", "))));
    FilterHelpDialog* d = w->show_filter_help(QStringLiteral("gaussian_blur"));
    QVERIFY(d);
    QCOMPARE(d->list()->count(), int(filters().size()));
    QCOMPARE(d->list()->currentItem()->text(), QStringLiteral("gaussian_blur"));
    const QString html = d->current_html();
    QVERIFY(html.contains(QStringLiteral("sigma_x")));
    QVERIFY(html.contains(QStringLiteral("When to use it")));
    // The selected filter's help by default.
    auto* panel = qobject_cast<ui::FilterPanel*>(w->host().dock_widget(QStringLiteral("filters")));
    QVERIFY(panel->select_filter(QStringLiteral("median_box")));
    QCOMPARE(w->show_filter_help()->list()->currentItem()->text(), QStringLiteral("median_box"));
    w->show_quick_start();
    auto* quick = w->findChild<QDialog*>(QStringLiteral("quick_start"));
    QVERIFY(quick);
    QVERIFY(
        quick->findChild<QTextBrowser*>()->toPlainText().contains(QStringLiteral("Quick start")));
    QVERIFY(about_html().contains(QStringLiteral(GPIX_VERSION_STRING)));
  }

  void settings_persist() {
    {
      auto w = make();
      QSignalSpy opened(w.get(), &MainWindow::files_opened);
      w->open_default();
      QVERIFY(opened.wait(60000));
      w->close();  // saves layout and device
    }
    QSettings s(ini(), QSettings::IniFormat);
    QVERIFY(
        s.value(QStringLiteral("recent_files")).toStringList().contains(QStringLiteral("sample")));
    QCOMPARE(s.value(QStringLiteral("device")).toString(),
             QString::fromStdString(choose_device().device.label()));
    QVERIFY(!s.value(QStringLiteral("window/state")).toByteArray().isEmpty());
    auto w = make();
    QVERIFY(w->recent_files().contains(QStringLiteral("sample")));
  }
};

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  TestViewer t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_viewer.moc"
