// Issue 16's remaining gaps in the real viewer window (offscreen, with the gpix plugin):
// - ROI edits are undo steps on the window's undo stack, driven with the mouse and keys like a
//   user (draw, move, reshape, All slices, Delete), and Ctrl+Z / Ctrl+Shift+Z give back exactly
//   each earlier state (shape, slice, id); a removed layer comes back with its ROIs;
// - the layer card shows a composite's channels as channels (count, names, colours) and its
//   spacing for the spatial axes only;
// - File > Open sample reads the sample on the reader thread, not in the menu's handler;
// - Quit while a session is being saved (with a 64x512x512 float32 result written first, or
//   with nothing but the session file), or while File > Save layer as writes a layer, waits:
//   the window closes only once the file is written, and what was written is whole (read back,
//   it equals the layer).
#include <QAction>
#include <QCheckBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocument>
#include <QUndoStack>
#include <cstring>

#include "gpix/ui/composite.h"
#if GPIX_TEST_HAVE_IO
#include "gpix/io.h"
#endif
#include "gpix/ui/layer_card.h"
#include "gpix/ui/roi_panel.h"
#include "main_window.h"
#include "support/random.h"

using namespace gpix;
using ui::Roi;
using ui::RoiKind;
using Tool = ui::RoiOverlay::Tool;

namespace {

// Records, when the window hides, whether anything was still being written.
class HideWatch : public QObject {
 public:
  HideWatch(MainWindow* w, QString session) : w_(w), session_(std::move(session)) {
    w->installEventFilter(this);
  }
  bool hidden = false;
  bool saving_at_hide = true;
  bool session_at_hide = false;  // the file watched existed
  bool eventFilter(QObject* o, QEvent* e) override {
    if (o == w_ && e->type() == QEvent::Hide && !hidden) {
      hidden = true;
      saving_at_hide = w_->saving_session() || w_->saving_results() || w_->saves_running() > 0;
      session_at_hide = QFileInfo::exists(session_);
    }
    return false;
  }

 private:
  MainWindow* w_;
  QString session_;
};

QString plain(const QString& html) {
  QTextDocument d;
  d.setHtml(html);
  return d.toPlainText();
}

// What a ROI list is, for messages.
QString describe(const QList<Roi>& rois) {
  QStringList out;
  for (const Roi& r : rois) {
    QStringList pts;
    for (const QPointF& p : r.points) pts << QStringLiteral("(%1,%2)").arg(p.x()).arg(p.y());
    out << QStringLiteral("#%1 %2 plane %3 %4")
               .arg(r.id)
               .arg(ui::kind_name(r.kind))
               .arg(r.plane)
               .arg(pts.join(QLatin1Char(' ')));
  }
  return out.join(QStringLiteral("; "));
}

}  // namespace

class TestViewerGaps : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<MainWindow> make(const QString& ini) {
    auto w = std::make_unique<MainWindow>(new QSettings(tmp_.filePath(ini), QSettings::IniFormat));
    w->load_plugins({QStringLiteral(GPIX_PLUGIN_DIR)});
    return w;
  }

 private slots:
  void roi_edits_undo_and_redo_exactly() {
    auto w = make(QStringLiteral("a.ini"));
    w->resize(1200, 800);
    w->show();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    // A stack, so that ROIs have a slice scope.
    const Shape shape{5, 48, 64};
    ui::Layer l;
    l.name = QStringLiteral("stack");
    l.host = HostArray::from(test::random_values<float>(shape.elements()), shape);
    const int id = w->host().add_layer(l);
    w->view()->fit();
    w->slice_slider()->setValue(2);
    QCOMPARE(w->view()->slice(), 2);
    QUndoStack* undo = w->host().undo_stack();
    undo->clear();
    ui::RoiOverlay* overlay = w->roi_overlay();
    auto at = [&](QPointF p) { return overlay->widget_pos(p).toPoint(); };
    auto drag = [&](QPointF a, QPointF b) {
      QTest::mousePress(overlay, Qt::LeftButton, {}, at(a));
      QTest::mouseMove(overlay, at((a + b) / 2));
      QTest::mouseMove(overlay, at(b));
      QTest::mouseRelease(overlay, Qt::LeftButton, {}, at(b));
    };
    QList<QList<Roi>> states{overlay->rois(id)};
    QList<int> steps{undo->count()};
    auto record = [&] {
      states << overlay->rois(id);
      steps << undo->count();
    };
    w->view()->setFocus();

    QTest::keyClick(w->view(), Qt::Key_R);  // rectangle on slice 2
    drag({10, 10}, {30, 20});
    record();
    QTest::keyClick(w->view(), Qt::Key_E);  // ellipse on slice 2
    drag({35, 25}, {55, 40});
    record();
    QTest::keyClick(w->view(), Qt::Key_P);  // polygon: clicks, Enter closes
    for (QPointF p : {QPointF(5.5, 30.5), QPointF(20.5, 44.5), QPointF(8.5, 46.5)})
      QTest::mouseClick(overlay, Qt::LeftButton, {}, at(p));
    QTest::keyClick(w->view(), Qt::Key_Return);
    record();
    QTest::keyClick(w->view(), Qt::Key_S);  // pointer: move the rectangle by its body
    drag({20, 15}, {26, 19});
    record();
    QTest::mouseClick(overlay, Qt::LeftButton, {}, at({45, 32}));  // select the ellipse
    QCOMPARE(overlay->selected(), 2);
    QCOMPARE(undo->count(), steps.last());  // selecting is no step
    drag({55, 40}, {60, 45});               // its corner handle: reshape
    record();
    auto* all = w->roi_panel()->findChild<QCheckBox*>(QStringLiteral("roi_all_planes"));
    QVERIFY(all);
    all->click();  // the selected ellipse on every slice
    record();
    QTest::mouseClick(overlay, Qt::LeftButton, {}, at({27, 20}));  // select the rectangle
    QCOMPARE(overlay->selected(), 1);
    QTest::keyClick(w->view(), Qt::Key_Delete);  // deletes the ROI, not the layer
    record();
    QVERIFY(w->host().has_layer(id));

    // What each gesture did, and one undo step for each (a drag's moves merge into one).
    const QList<Roi>& end = states.last();
    QCOMPARE(end.size(), 2);
    QCOMPARE(end[0].id, 2);
    QCOMPARE(end[0].kind, RoiKind::ellipse);
    QCOMPARE(end[0].plane, -1);
    QCOMPARE(end[1].id, 3);
    QCOMPARE(end[1].kind, RoiKind::polygon);
    QCOMPARE(end[1].plane, 2);
    QCOMPARE(states[4][0].points, QPolygonF({QPointF(16, 14), QPointF(36, 24)}));  // moved
    QCOMPARE(states[5][1].points, QPolygonF({QPointF(35, 25), QPointF(60, 45)}));  // reshaped
    for (int i = 1; i < steps.size(); ++i) QVERIFY(steps[i] > steps[i - 1]);

    // Ctrl+Z back to the start, comparing every state; Ctrl+Shift+Z forward again.
    for (int i = int(states.size()) - 1; i > 0; --i) {
      QTest::keyClick(w->view(), Qt::Key_Z, Qt::ControlModifier);
      while (undo->index() > steps[i - 1])
        QTest::keyClick(w->view(), Qt::Key_Z, Qt::ControlModifier);
      QVERIFY2(overlay->rois(id) == states[i - 1],
               qPrintable(QStringLiteral("after undo to state %1: %2, want %3")
                              .arg(i - 1)
                              .arg(describe(overlay->rois(id)), describe(states[i - 1]))));
    }
    QVERIFY(overlay->rois(id).isEmpty());
    for (int i = 1; i < states.size(); ++i) {
      while (undo->index() < steps[i])
        QTest::keyClick(w->view(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
      QVERIFY2(overlay->rois(id) == states[i],
               qPrintable(QStringLiteral("after redo to state %1: %2, want %3")
                              .arg(i)
                              .arg(describe(overlay->rois(id)), describe(states[i]))));
    }

    // A removed layer comes back with its ROIs.
    overlay->select(0);
    QTest::keyClick(w->view(), Qt::Key_Delete);
    QVERIFY(!w->host().has_layer(id));
    QVERIFY(overlay->rois(id).isEmpty());
    QTest::keyClick(w->view(), Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(w->host().has_layer(id));
    QCOMPARE(overlay->rois(id), states.last());
    // And the ROI steps before the removal still undo on it.
    QTest::keyClick(w->view(), Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(overlay->rois(id), states[states.size() - 2]);
  }

  void card_shows_channels_as_channels() {
    auto w = make(QStringLiteral("b.ini"));
    auto* card = qobject_cast<ui::LayerCard*>(w->host().dock_widget(QStringLiteral("layer_card")));
    QVERIFY(card);
    auto* channels_label = card->findChild<QLabel*>(QStringLiteral("card_channels"));
    QVERIFY(channels_label);
    // Three fluorescence channels at 0.16 µm, as an ImageJ hyperstack opens.
    const Shape cs{3, 32, 40};
    ui::Layer c;
    c.name = QStringLiteral("cells");
    c.host = HostArray::from(test::random_values<std::uint16_t>(cs.elements()), cs);
    c.spacing = {1, 0.16, 0.16};
    c.unit = QStringLiteral("um");
    ui::make_composite(c, false);
    c.channels[2].visible = false;
    w->host().add_layer(c);
    QCOMPARE(card->value(QStringLiteral("spacing")), QStringLiteral("0.16 × 0.16 µm (y, x)"));
    QCOMPARE(plain(card->value(QStringLiteral("channels"))),
             QStringLiteral("3 channels: ■ C1 (green), ■ C2 (magenta), ■ C3 (cyan, hidden)"));
    for (const char* colour : {"#00ff00", "#ff00ff", "#00ffff"})
      QVERIFY2(card->value(QStringLiteral("channels")).contains(QLatin1String(colour)), colour);
    QVERIFY(!channels_label->isHidden());
    // RGB, not calibrated.
    ui::Layer rgb;
    rgb.name = QStringLiteral("photo");
    const Shape rs{3, 20, 30};
    rgb.host = HostArray::from(test::random_values<std::uint8_t>(rs.elements()), rs);
    ui::make_composite(rgb, true);
    rgb.channels[1].colour = qRgb(10, 20, 30);  // a colour of the user's: its hex
    w->host().add_layer(rgb);
    QCOMPARE(card->value(QStringLiteral("spacing")),
             QStringLiteral("1 × 1 px (y, x), not calibrated"));
    QCOMPARE(plain(card->value(QStringLiteral("channels"))),
             QStringLiteral("3 channels: ■ R (red), ■ G (#0a141e), ■ B (blue)"));
    // A plain stack: its z spacing is a spacing, and there is no channel row.
    ui::Layer s;
    s.name = QStringLiteral("stack");
    const Shape ss{4, 8, 8};
    s.host = HostArray::from(test::random_values<float>(ss.elements()), ss);
    s.spacing = {1.5, 0.2, 0.2};
    s.unit = QStringLiteral("um");
    w->host().add_layer(s);
    QCOMPARE(card->value(QStringLiteral("spacing")),
             QStringLiteral("1.5 × 0.2 × 0.2 µm (z, y, x)"));
    QVERIFY(card->value(QStringLiteral("channels")).isEmpty());
    QVERIFY(channels_label->isHidden());
  }

  // Save layer as suggests a name that a writer takes: a result's name had no extension, and
  // pressing Save on the suggestion was refused ("no writer for ...").
  void save_as_suggests_a_name_a_writer_takes() {
    auto w = make(QStringLiteral("s.ini"));
    QTemporaryDir dir;
    const std::pair<QString, QString> names[] = {
        {QStringLiteral("stack · crop origin_x=3 origin_y=4"),
         QStringLiteral("stack · crop origin_x=3 origin_y=4.tif")},
        {QStringLiteral("cells.png"), QStringLiteral("cells.png")},
        {QStringLiteral("a/b"), QStringLiteral("a-b.tif")},
        {QStringLiteral("gaussian_blur(sigma=2.5)"),
         QStringLiteral("gaussian_blur(sigma=2.5).tif")},
    };
    for (const auto& [name, want] : names) {
      ui::Layer l;
      l.name = name;
      l.array = Array::push(HostArray::from(std::vector<std::uint8_t>(12, 7), Shape{3, 4}),
                            w->host().device());
      const int id = w->host().add_layer(l);
      QCOMPARE(w->suggested_file_name(id), want);
      QSignalSpy saved(w.get(), &MainWindow::layer_saved);
      w->save_layer_as(id, dir.filePath(w->suggested_file_name(id)));
      QVERIFY(saved.wait(60000));
      QCOMPARE(saved.first().at(2).toString(), QString());
    }
  }

  void open_sample_reads_on_the_reader_thread() {
    auto w = make(QStringLiteral("c.ini"));
    QAction* sample = nullptr;
    for (QAction* m : w->menuBar()->actions()) {
      if (!m->menu() || m->menu()->title().remove(QLatin1Char('&')) != QLatin1String("File"))
        continue;
      for (QAction* a : m->menu()->actions()) {
        if (a->menu() && a->menu()->title() == QLatin1String("Open sample") &&
            !a->menu()->actions().isEmpty())
          sample = a->menu()->actions().first();
      }
    }
    QVERIFY2(sample, "File > Open sample has an entry");
    QSignalSpy opened(w.get(), &MainWindow::files_opened);
    sample->trigger();
    // The handler returned without the layer: it is read (and pushed) on the reader thread.
    QVERIFY(w->host().layer_ids().isEmpty());
    QVERIFY(w->reading());
    QVERIFY(opened.wait(120000));
    QCOMPARE(opened.first().first().value<QList<int>>().size(), 1);
    const ui::Layer l = w->host().layer(w->host().layer_ids().first());
    QVERIFY(l.source.startsWith(QLatin1String("sample:")));
    QVERIFY2(l.array.valid() && l.array.device() == w->host().device(), "on the device");
  }

  // Quit right after Save session: the window stays until the session file is written (the
  // unsaved result first, then the JSON), then closes by itself; nothing is half-written.
  void quit_during_a_session_save_waits_for_it() {
    QTemporaryDir dir;
    auto w = make(QStringLiteral("q.ini"));
    w->resize(900, 600);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const Shape shape{64, 512, 512};
    const std::vector<float> values = test::random_values<float>(shape.elements());
    ui::Layer l;
    l.name = QStringLiteral("big result");
    l.array = Array::push(HostArray::from(values, shape), w->host().device());
    const int id = w->host().add_layer(l);
    QTRY_VERIFY_WITH_TIMEOUT(!w->view()->busy(), 120000);
    const QString session = dir.filePath(QStringLiteral("quit.gpix.json"));
    QSignalSpy saved(w.get(), &MainWindow::session_saved);
    HideWatch watch(w.get(), session);
    w->save_session(session);
    QVERIFY(w->saving_session());
    QVERIFY(!w->close());  // the result and the session are being written: not yet
    QVERIFY(w->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!w->isVisible(), 300000);
    QVERIFY(watch.hidden);
    QVERIFY2(!watch.saving_at_hide, "the window closed while the session was being written");
    QVERIFY(watch.session_at_hide);
    QCOMPARE(saved.size(), 1);
    QCOMPARE(saved.first().at(1).toString(), QString());
    QFile f(session);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &err);
    QVERIFY2(err.error == QJsonParseError::NoError && doc.isObject(),
             qPrintable(err.errorString()));
    const QString result = w->host().layer(id).source;
    QCOMPARE(QFileInfo(result).absolutePath(), dir.filePath(QStringLiteral("quit_data")));
#if GPIX_TEST_HAVE_IO
    const HostArray back = io::read(result.toStdString()).pixels;
    QCOMPARE(back.shape(), shape);
    QVERIFY(std::memcmp(back.data(), values.data(), back.bytes()) == 0);
#endif
    // No temporary file left beside them (QSaveFile's, or a half-written result).
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files),
             QStringList{QStringLiteral("quit.gpix.json")});
    QCOMPARE(QDir(dir.filePath(QStringLiteral("quit_data"))).entryList(QDir::Files).size(), 1);

    // Nothing unsaved: Save session writes the JSON alone; Quit at once still waits for it.
    auto w2 = make(QStringLiteral("q2.ini"));
    w2->show();
    QVERIFY(QTest::qWaitForWindowExposed(w2.get()));
    ui::Layer saved_layer;
    saved_layer.name = QStringLiteral("from a file");
    saved_layer.source = result;
    saved_layer.array = Array::push(std::vector<float>(4 * 8 * 8, 1.0f), Shape{4, 8, 8});
    w2->host().add_layer(saved_layer);
    QVERIFY(w2->unsaved_layers().isEmpty());
    const QString session2 = dir.filePath(QStringLiteral("quit2.gpix.json"));
    HideWatch watch2(w2.get(), session2);
    w2->save_session(session2);
    QVERIFY(!w2->close());
    QTRY_VERIFY_WITH_TIMEOUT(!w2->isVisible(), 60000);
    QVERIFY2(!watch2.saving_at_hide, "the window closed while the session was being written");
    QVERIFY(watch2.session_at_hide);

    // Save layer as of a layer that has a file (so Quit does not ask): Quit waits for the write.
    auto w3 = make(QStringLiteral("q3.ini"));
    w3->show();
    QVERIFY(QTest::qWaitForWindowExposed(w3.get()));
    ui::Layer big;
    big.name = QStringLiteral("opened");
    big.source = result;
    big.array = Array::push(HostArray::from(values, shape), w3->host().device());
    const int big_id = w3->host().add_layer(big);
    QVERIFY(w3->unsaved_layers().isEmpty());
    const QString copy = dir.filePath(QStringLiteral("copy.tif"));
    QSignalSpy layer_saved(w3.get(), &MainWindow::layer_saved);
    HideWatch watch3(w3.get(), copy);
    w3->save_layer_as(big_id, copy);
    QCOMPARE(w3->saves_running(), 1);
    QVERIFY(!w3->close());
    QVERIFY(w3->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!w3->isVisible(), 300000);
    QVERIFY2(!watch3.saving_at_hide, "the window closed while the layer was being written");
    QVERIFY(watch3.session_at_hide);
    QCOMPARE(layer_saved.size(), 1);
    QCOMPARE(layer_saved.first().at(2).toString(), QString());
#if GPIX_TEST_HAVE_IO
    const HostArray copied = io::read(copy.toStdString()).pixels;
    QCOMPARE(copied.shape(), shape);
    QVERIFY(std::memcmp(copied.data(), values.data(), copied.bytes()) == 0);
#endif
  }
};

QTEST_MAIN(TestViewerGaps)
#include "test_viewer_gaps.moc"
