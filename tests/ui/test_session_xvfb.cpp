// Sessions and the viewer's writes in the real window on a real X display (xvfb-run, platform
// xcb):
// - a session keeps a composite's per-channel name, colour, limits, gamma and visibility and a
//   layer's gamma: saved, reopened in a new window, every field compared; version 1 sessions
//   still open; a session whose channels no longer fit its file says so and opens the rest;
// - saving a session with a 64x512x512 float32 result, the quit prompt's Save of that result,
//   and writing the drag-out file of it all run off the GUI thread: the longest event-loop
//   stall while each runs stays under 50 ms (plus the idle window's own pauses where those
//   exceed 25 ms: a loaded shared CPU, as in test_ui_viewer) (a 200 ms block on the GUI thread is
//   the control that shows the meter can fail); what was written is read back and compared;
// - a quit whose Save fails leaves the window open and the result unsaved;
// - a real drag out: xdotool moves the X pointer (press on the layer in the list, move, release
//   over another window of the same process), so Qt's own QDrag::exec runs its XDND loop; the
//   drop target gets the file URL of a written TIFF whose pixels equal the layer's.
#include <QApplication>
#include <QCheckBox>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMessageBox>
#include <QMimeData>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <cstring>

#include "gpix/io.h"
#include "gpix/ui/composite.h"
#include "gpix/ui/layer_list.h"
#include "main_window.h"
#include "stall_meter.h"
#include "support/random.h"
#include "viewer_wait.h"

using namespace gpix;

namespace {

// A window that takes file drops, as a file manager would, and keeps what it got.
class DropTarget : public QWidget {
 public:
  DropTarget() { setAcceptDrops(true); }
  QList<QUrl> urls;
  int drops = 0;

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override {
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
  }
  void dragMoveEvent(QDragMoveEvent* e) override {
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
  }
  void dropEvent(QDropEvent* e) override {
    urls = e->mimeData()->urls();
    ++drops;
    e->acceptProposedAction();
  }
};

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// Runs the event loop, moving the cursor over the view like a user, until done() or timeout.
template <class Done>
bool use_until(MainWindow& w, Done done, int timeout_ms) {
  QElapsedTimer t;
  t.start();
  int k = 0;
  while (!done()) {
    if (t.elapsed() > timeout_ms) return false;
    ++k;
    QTest::mouseMove(w.view(), QPoint(20 + (k * 13) % std::max(1, w.view()->width() - 40),
                                      20 + (k * 29) % std::max(1, w.view()->height() - 40)));
    QTest::qWait(20);
  }
  return true;
}

// The stall limit: 50 ms, plus what the machine alone gives when the idle window already
// pauses for more than 25 ms (a loaded shared CPU), as test_ui_viewer's reading test allows.
double stall_limit(MainWindow& w) {
  StallMeter idle;
  idle.start();
  QElapsedTimer t;
  t.start();
  use_until(
      w, [&] { return t.elapsed() > 600; }, 1000);
  idle.stop();
  qInfo("idle window: longest event-loop stall %.1f ms over %d ticks", idle.worst_ms(),
        idle.ticks());
  return 50.0 + (idle.worst_ms() > 25.0 ? idle.worst_ms() : 0.0);
}

}  // namespace

class TestSessionXvfb : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  int window_ = 0;

  std::unique_ptr<MainWindow> make() {
    auto w = std::make_unique<MainWindow>(new QSettings(
        tmp_.filePath(QStringLiteral("v%1.ini").arg(++window_)), QSettings::IniFormat));
    w->load_plugins({QStringLiteral(GPIX_PLUGIN_DIR)});
    w->resize(1200, 800);
    w->show();
    [&] { QVERIFY(QTest::qWaitForWindowExposed(w.get())); }();
    return w;
  }
  // A 64x512x512 float32 result on the device, never saved (64 MiB).
  static int add_big_result(MainWindow& w, std::vector<float>* values = nullptr) {
    const Shape shape{64, 512, 512};
    auto v = test::random_values<float>(shape.elements());
    ui::Layer l;
    l.name = QStringLiteral("big result");
    l.array = Array::push(HostArray::from(v, shape), w.host().device());
    if (values) *values = std::move(v);
    return w.host().add_layer(l);
  }
  static HostArray read_back(const QString& path) { return io::read(path.toStdString()).pixels; }

 private slots:
  void initTestCase() {
    if (const QString why = needs_x_display(); !why.isEmpty()) QFAIL(qPrintable(why));
  }

  void composite_and_gamma_round_trip() {
    QTemporaryDir dir;
    auto w = make();
    // A three-channel 16-bit composite (a result: saved with the session, marked as channels)
    // and a grey layer, every display field away from its default.
    const Shape cs{3, 96, 128};
    const auto cv = test::random_values<std::uint16_t>(cs.elements());
    ui::Layer c;
    c.name = QStringLiteral("cells");
    c.host = HostArray::from(cv, cs);
    c.spacing = {1, 0.16, 0.16};
    c.unit = QStringLiteral("um");
    ui::make_composite(c, false);
    c.channels[0] = {QStringLiteral("DAPI"), qRgb(0, 90, 255), 120, 3100, 0.45, true};
    c.channels[1] = {QStringLiteral("actin"), qRgb(255, 128, 0), 7, 65000, 2.5, false};
    c.channels[2] = {QStringLiteral("spots"), qRgb(250, 250, 250), 1000.5, 1200.25, 1.0, true};
    c.gamma = 1.7;  // the layer's own, unused while it is a composite: kept anyway
    c.opacity = 0.8;
    const int cid = w->host().add_layer(c);
    const Shape gs{40, 50};
    const auto gv = test::random_values<float>(gs.elements());
    ui::Layer g;
    g.name = QStringLiteral("grey");
    g.host = HostArray::from(gv, gs);
    g.colormap = QStringLiteral("hot");
    g.contrast_min = 0.1;
    g.contrast_max = 0.9;
    g.gamma = 0.35;
    const int gid = w->host().add_layer(g);
    const QString session = dir.filePath(QStringLiteral("s.gpix.json"));
    QVERIFY2(save_session_and_wait(w.get(), session), qPrintable(w->last_error()));
    QVERIFY(w->unsaved_layers().isEmpty());

    QFile f(session);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
    f.close();
    QCOMPARE(root.value(QStringLiteral("version")).toInt(), 2);
    const QJsonObject jc = root.value(QStringLiteral("layers")).toArray()[0].toObject();
    QCOMPARE(
        jc.value(QStringLiteral("composite")).toObject().value(QStringLiteral("version")).toInt(),
        1);
    QCOMPARE(jc.value(QStringLiteral("composite"))
                 .toObject()
                 .value(QStringLiteral("channels"))
                 .toArray()[1]
                 .toObject()
                 .value(QStringLiteral("colour"))
                 .toString(),
             QStringLiteral("#ff8000"));

    auto w2 = make();
    QSignalSpy opened(w2.get(), &MainWindow::session_opened);
    QVERIFY(w2->open_session(session));
    QVERIFY(opened.wait(120000));
    QVERIFY(opened.first().first().toBool());
    QVERIFY2(w2->last_error().isEmpty(), qPrintable(w2->last_error()));
    const QList<int> ids = w2->host().layer_ids();
    QCOMPARE(ids.size(), 2);
    const ui::Layer c2 = w2->host().layer(ids[0]);
    const ui::Layer c1 = w->host().layer(cid);
    QVERIFY(c2.composite());
    QCOMPARE(c2.channels.size(), c1.channels.size());
    for (std::size_t i = 0; i < c1.channels.size(); ++i) {
      const ui::Channel& a = c1.channels[i];
      const ui::Channel& b = c2.channels[i];
      QCOMPARE(b.name, a.name);
      QCOMPARE(b.colour, a.colour);
      QCOMPARE(b.contrast_min, a.contrast_min);
      QCOMPARE(b.contrast_max, a.contrast_max);
      QCOMPARE(b.gamma, a.gamma);
      QCOMPARE(b.visible, a.visible);
    }
    QCOMPARE(c2.gamma, c1.gamma);
    QCOMPARE(c2.opacity, c1.opacity);
    QCOMPARE(c2.name, c1.name);
    QVERIFY(same_bytes(c2.array.valid() ? c2.array.pull() : c2.host, HostArray::from(cv, cs)));
    const ui::Layer g2 = w2->host().layer(ids[1]);
    const ui::Layer g1 = w->host().layer(gid);
    QCOMPARE(g2.gamma, g1.gamma);
    QCOMPARE(g2.colormap, g1.colormap);
    QCOMPARE(g2.contrast_min, g1.contrast_min);
    QCOMPARE(g2.contrast_max, g1.contrast_max);
    QVERIFY(!g2.composite());

    // Version 1 (no gamma, no composite section) still opens, with the file's defaults.
    QJsonObject v1 = root;
    v1.insert(QStringLiteral("version"), 1);
    QJsonArray layers = v1.value(QStringLiteral("layers")).toArray();
    for (qsizetype i = 0; i < layers.size(); ++i) {
      QJsonObject o = layers[i].toObject();
      o.remove(QStringLiteral("gamma"));
      o.remove(QStringLiteral("composite"));
      layers[i] = o;
    }
    v1.insert(QStringLiteral("layers"), layers);
    const QString old = dir.filePath(QStringLiteral("v1.gpix.json"));
    QFile fo(old);
    QVERIFY(fo.open(QIODevice::WriteOnly));
    fo.write(QJsonDocument(v1).toJson());
    fo.close();
    auto w3 = make();
    QSignalSpy opened3(w3.get(), &MainWindow::session_opened);
    QVERIFY(w3->open_session(old));
    QVERIFY(opened3.wait(120000));
    QVERIFY(opened3.first().first().toBool());
    QVERIFY2(w3->last_error().isEmpty(), qPrintable(w3->last_error()));
    QCOMPARE(w3->host().layer_ids().size(), 2);
    QCOMPARE(w3->host().layer(w3->host().layer_ids()[1]).gamma, 1.0);
    // The file the session saved says its planes are channels: a composite again, with the
    // file's channel colours, which are the ones the user chose (the file keeps them as ImageJ
    // LUTs, without the session's version-2 section).
    const ui::Layer c3 = w3->host().layer(w3->host().layer_ids()[0]);
    QVERIFY(c3.composite());
    QCOMPARE(c3.channels.size(), std::size_t{3});
    QCOMPARE(c3.channels[1].colour | 0xff000000u, qRgb(255, 128, 0));

    // Channels that no longer fit the file: said, and the layer opens with the file's view.
    QJsonObject bad = root;
    QJsonArray bl = bad.value(QStringLiteral("layers")).toArray();
    QJsonObject b0 = bl[0].toObject();
    QJsonObject comp = b0.value(QStringLiteral("composite")).toObject();
    QJsonArray chans = comp.value(QStringLiteral("channels")).toArray();
    chans.removeLast();
    comp.insert(QStringLiteral("channels"), chans);
    b0.insert(QStringLiteral("composite"), comp);
    bl[0] = b0;
    bad.insert(QStringLiteral("layers"), bl);
    const QString badp = dir.filePath(QStringLiteral("bad.gpix.json"));
    QFile fb(badp);
    QVERIFY(fb.open(QIODevice::WriteOnly));
    fb.write(QJsonDocument(bad).toJson());
    fb.close();
    auto w4 = make();
    QSignalSpy opened4(w4.get(), &MainWindow::session_opened);
    QVERIFY(w4->open_session(badp));
    QVERIFY(opened4.wait(120000));
    QVERIFY(opened4.first().first().toBool());
    QVERIFY2(w4->last_error().contains(QStringLiteral("the session has 2 channel(s)")),
             qPrintable(w4->last_error()));
    QCOMPARE(w4->host().layer_ids().size(), 2);
  }

  void session_save_of_a_large_result_never_blocks() {
    QTemporaryDir dir;
    auto w = make();
    std::vector<float> values;
    const int id = add_big_result(*w, &values);
    QTRY_VERIFY_WITH_TIMEOUT(!w->view()->busy(), 120000);  // first frame and contrast shown
    const QString session = dir.filePath(QStringLiteral("big.gpix.json"));
    QSignalSpy saved(w.get(), &MainWindow::session_saved);
    const double limit = stall_limit(*w);
    StallMeter meter;
    meter.start();
    QElapsedTimer took;
    took.start();
    w->save_session(session);
    QVERIFY(w->saving_session());
    QVERIFY(use_until(
        *w, [&] { return !saved.isEmpty(); }, 300000));
    const qint64 saved_after = took.elapsed();
    // And a while after: the layer's new source makes the widgets look at it again.
    use_until(
        *w, [&] { return took.elapsed() > saved_after + 500; }, 1000);
    meter.stop();
    qInfo(
        "session with a 64x512x512 float32 result saved in %lld ms; longest event-loop stall "
        "until 500 ms after that %.1f ms (ending %.0f ms after the start) over %d ticks",
        saved_after, meter.worst_ms(), meter.worst_end_ms(), meter.ticks());
    QCOMPARE(saved.first().at(1).toString(), QString());
    QVERIFY2(meter.worst_ms() < limit,
             qPrintable(QStringLiteral("the event loop stalled for %1 ms (limit %2 ms)")
                            .arg(meter.worst_ms())
                            .arg(limit)));
    const QString file = w->host().layer(id).source;
    QCOMPARE(QFileInfo(file).absolutePath(), dir.filePath(QStringLiteral("big_data")));
    QVERIFY(same_bytes(read_back(file), HostArray::from(values, Shape{64, 512, 512})));
    QVERIFY(QFileInfo::exists(session));

    // The control: 200 ms of work on the GUI thread shows as a stall.
    meter.start();
    QTimer::singleShot(20, w.get(), [] { QThread::msleep(200); });
    QTest::qWait(300);
    meter.stop();
    qInfo("control (200 ms block on the GUI thread): %.1f ms", meter.worst_ms());
    QVERIFY(meter.worst_ms() >= 150.0);
  }

  void quit_save_keeps_the_window_responsive() {
    QTemporaryDir dir;
    auto w = make();
    std::vector<float> values;
    const int id = add_big_result(*w, &values);
    QTRY_VERIFY_WITH_TIMEOUT(!w->view()->busy(), 120000);
    // Save into a folder that cannot be made: the window stays, the result stays unsaved.
    QFile blocker(dir.filePath(QStringLiteral("file")));
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    w->set_prompts_for_testing([](const QStringList&) { return int(QMessageBox::Save); },
                               [&] { return dir.filePath(QStringLiteral("file/sub")); });
    QSignalSpy results(w.get(), &MainWindow::results_saved);
    QVERIFY(!w->close());
    QVERIFY(results.wait(120000));
    QVERIFY2(!results.first().first().toString().isEmpty(), "the failed write is reported");
    QTest::qWait(100);
    QVERIFY(w->isVisible());
    QCOMPARE(w->unsaved_layers(), QStringList{QStringLiteral("big result")});
    QVERIFY2(w->last_error().contains(QStringLiteral("big result")), qPrintable(w->last_error()));

    // Save into a good folder: the window keeps turning while it writes, then closes.
    const QString folder = dir.filePath(QStringLiteral("results"));
    w->set_prompts_for_testing([](const QStringList&) { return int(QMessageBox::Save); },
                               [folder] { return folder; });
    results.clear();
    const double limit = stall_limit(*w);
    StallMeter meter;
    meter.start();
    QVERIFY(!w->close());  // not yet: it closes when the result is written
    QVERIFY(w->saving_results());
    QVERIFY(!w->close());  // a second Quit meanwhile waits too, without asking again
    QVERIFY(use_until(
        *w, [&] { return !w->isVisible(); }, 300000));
    meter.stop();
    qInfo("quit with Save of a 64x512x512 float32 result: longest event-loop stall %.1f ms",
          meter.worst_ms());
    QCOMPARE(results.size(), 1);
    QCOMPARE(results.first().first().toString(), QString());
    QVERIFY2(meter.worst_ms() < limit,
             qPrintable(QStringLiteral("the event loop stalled for %1 ms (limit %2 ms)")
                            .arg(meter.worst_ms())
                            .arg(limit)));
    const QString file = w->host().layer(id).source;
    QCOMPARE(QFileInfo(file).absolutePath(), folder);
    QVERIFY(same_bytes(read_back(file), HostArray::from(values, Shape{64, 512, 512})));
  }

  void drag_file_is_written_in_the_background() {
    auto w = make();
    std::vector<float> values;
    const int id = add_big_result(*w, &values);
    QTRY_VERIFY_WITH_TIMEOUT(!w->view()->busy(), 120000);
    ui::DragFiles* files = w->layer_list()->drag_files();
    QSignalSpy prepared(files, &ui::DragFiles::prepared);
    const double limit = stall_limit(*w);
    StallMeter meter;
    meter.start();
    // What a press on the layer in the list does.
    auto* list = w->layer_list()->list();
    QListWidgetItem* item = list->item(0);
    QTest::mousePress(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(item).center());
    QTest::mouseRelease(list->viewport(), Qt::LeftButton, {}, list->visualItemRect(item).center());
    QVERIFY(files->preparing(id));
    QString why;
    QVERIFY(!w->layer_list()->mime_for(id, &why));  // no drag before the file exists
    QVERIFY2(why.contains(QStringLiteral("being written")), qPrintable(why));
    QVERIFY(use_until(
        *w, [&] { return !prepared.isEmpty(); }, 300000));
    meter.stop();
    qInfo("drag file of a 64x512x512 float32 layer written; longest event-loop stall %.1f ms",
          meter.worst_ms());
    QVERIFY2(meter.worst_ms() < limit,
             qPrintable(QStringLiteral("the event loop stalled for %1 ms (limit %2 ms)")
                            .arg(meter.worst_ms())
                            .arg(limit)));
    const QString path = prepared.first().at(1).toString();
    QVERIFY2(!path.isEmpty(), qPrintable(prepared.first().at(2).toString()));
    std::unique_ptr<QMimeData> mime(w->layer_list()->mime_for(id, &why));
    QVERIFY2(mime, qPrintable(why));
    QCOMPARE(mime->urls().first().toLocalFile(), path);
    QVERIFY(same_bytes(read_back(path), HostArray::from(values, Shape{64, 512, 512})));
    // A display change keeps the file; a rename makes a new one.
    ui::Layer l = w->host().layer(id);
    l.contrast_min = 0.2;
    l.contrast_max = 0.4;
    w->host().replace_layer(id, l);
    QCOMPARE(files->ready(id), path);
    l.name = QStringLiteral("renamed");
    w->host().replace_layer(id, l);
    QVERIFY(files->ready(id).isEmpty());
  }

  // The real drag: the X server's pointer, driven by xdotool while Qt runs QDrag::exec.
  void drag_out_with_the_x_pointer() {
    const QString xdotool = QStandardPaths::findExecutable(QStringLiteral("xdotool"));
    if (xdotool.isEmpty()) QSKIP("xdotool is not installed (deps.sh installs it)");
    auto w = make();
    w->move(0, 0);
    const Shape shape{3, 37, 41};
    const auto values = test::random_values<std::uint16_t>(shape.elements());
    ui::Layer l;
    l.name = QStringLiteral("dragged");
    l.array = Array::push(HostArray::from(values, shape), w->host().device());
    const int id = w->host().add_layer(l);
    QTRY_VERIFY_WITH_TIMEOUT(!w->view()->busy(), 120000);
    DropTarget target;
    target.setWindowTitle(QStringLiteral("drop here"));
    target.resize(300, 300);
    target.move(1250, 300);
    target.show();
    QVERIFY(QTest::qWaitForWindowExposed(&target));
    auto* list = w->layer_list()->list();
    QListWidgetItem* item = list->item(0);
    QVERIFY(item);
    const QPoint from = list->viewport()->mapToGlobal(list->visualItemRect(item).center());
    const QPoint to = target.mapToGlobal(target.rect().center());
    // Press, move past the drag distance, travel to the target, hover, release: a user's drag,
    // with pauses so that each X event is handled before the next (the file is written from
    // the press on; the first moves wait for it).
    QStringList args;
    const auto move = [&](QPoint p) {
      args << QStringLiteral("mousemove") << QString::number(p.x()) << QString::number(p.y())
           << QStringLiteral("sleep") << QStringLiteral("0.15");
    };
    move(from);
    args << QStringLiteral("mousedown") << QStringLiteral("1") << QStringLiteral("sleep")
         << QStringLiteral("0.5");
    for (int k = 1; k <= 4; ++k) move(from + QPoint(k * 8, k * 4));
    for (int k = 1; k <= 8; ++k) move(from + (to - from) * k / 8);
    move(to + QPoint(4, 4));
    move(to);
    args << QStringLiteral("mouseup") << QStringLiteral("1");
    QProcess driver;
    driver.start(xdotool, args);
    QVERIFY2(driver.waitForStarted(10000), qPrintable(driver.errorString()));
    // QDrag::exec's own loop runs inside this wait while the button is held.
    QTRY_VERIFY_WITH_TIMEOUT(target.drops > 0 || driver.state() == QProcess::NotRunning, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(target.drops > 0, 5000);
    driver.waitForFinished(10000);
    QCOMPARE(target.drops, 1);
    QCOMPARE(target.urls.size(), 1);
    QVERIFY(target.urls.first().isLocalFile());
    const QString path = target.urls.first().toLocalFile();
    QCOMPARE(path, w->layer_list()->drag_files()->ready(id));
    QVERIFY2(path.endsWith(QLatin1String(".tif")), qPrintable(path));
    QVERIFY(same_bytes(read_back(path), HostArray::from(values, shape)));
  }
};

// Names every event that holds the GUI thread for more than 30 ms, so that a stall says where
// it came from.
class TimedApplication : public QApplication {
 public:
  using QApplication::QApplication;
  bool notify(QObject* receiver, QEvent* e) override {
    QElapsedTimer t;
    t.start();
    // Taken first: the receiver may be gone once the event was delivered.
    const int type = int(e->type());
    const char* cls = receiver->metaObject()->className();
    const QString name = receiver->objectName();
    const bool r = QApplication::notify(receiver, e);
    if (t.elapsed() > 30) {
      qInfo("slow event: %lld ms delivering event type %d to %s '%s'", t.elapsed(), type, cls,
            qPrintable(name));
    }
    return r;
  }
};

int main(int argc, char** argv) {
  TimedApplication app(argc, argv);
  TestSessionXvfb t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_session_xvfb.moc"
