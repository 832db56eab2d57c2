// The ROI tools in the real viewer window (offscreen, with the gpix plugin): the Tools menu and
// tool bar, the one-key shortcuts, Delete removing the selected ROI rather than the layer, the
// line profile dock showing itself, and ROIs kept in a session and restored from it. With
// GPIX_SCREENSHOT_DIR set (and a real display: xvfb-run), the docs' roi_stats.png and
// line_profile.png go there.
#include <QDir>
#include <QDockWidget>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolBar>

#include "main_window.h"
#include "viewer_wait.h"

using gpix::ui::Roi;
using gpix::ui::RoiKind;
using Tool = gpix::ui::RoiOverlay::Tool;

class TestRoiViewer : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<MainWindow> make(const QString& ini) {
    auto w = std::make_unique<MainWindow>(new QSettings(tmp_.filePath(ini), QSettings::IniFormat));
    w->load_plugins({QStringLiteral(GPIX_PLUGIN_DIR)});
    return w;
  }
  static int open_sample(MainWindow& w) {
    QSignalSpy opened(&w, &MainWindow::files_opened);
    w.open_default();
    if (!opened.wait(120000)) return -1;
    return w.host().layer_ids().isEmpty() ? -1 : w.host().layer_ids().first();
  }

 private slots:
  void tools_menu_keys_and_delete() {
    auto w = make(QStringLiteral("a.ini"));
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const int id = open_sample(*w);
    QVERIFY(id >= 0);
    gpix::ui::RoiOverlay* overlay = w->roi_overlay();
    QVERIFY(overlay && w->roi_panel() && w->profile_panel());
    QVERIFY(w->findChild<QDockWidget*>(QStringLiteral("dock_rois")));
    QVERIFY(w->findChild<QToolBar*>(QStringLiteral("toolbar_tools")));
    QMenu* tools = nullptr;
    for (QAction* a : w->menuBar()->actions()) {
      if (a->menu() && a->menu()->title().remove(QLatin1Char('&')) == QLatin1String("Tools"))
        tools = a->menu();
    }
    QVERIFY(tools);
    QStringList names;
    for (QAction* a : tools->actions()) names << a->objectName();
    for (const char* name :
         {"tool_pointer", "tool_rectangle", "tool_ellipse", "tool_polygon", "tool_line"}) {
      QVERIFY2(names.contains(QLatin1String(name)), name);
    }
    // One key per tool, wherever the focus is in the window.
    w->view()->setFocus();
    QTest::keyClick(w->view(), Qt::Key_R);
    QCOMPARE(overlay->tool(), Tool::rectangle);
    QTest::keyClick(w->view(), Qt::Key_E);
    QCOMPARE(overlay->tool(), Tool::ellipse);
    QTest::keyClick(w->view(), Qt::Key_S);
    QCOMPARE(overlay->tool(), Tool::pointer);

    // A rectangle drawn with the mouse, selected: Delete removes it and keeps the layer.
    QTest::keyClick(w->view(), Qt::Key_R);
    const QPoint a = overlay->widget_pos({10, 10}).toPoint();
    const QPoint b = overlay->widget_pos({40, 30}).toPoint();
    QTest::mousePress(overlay, Qt::LeftButton, {}, a);
    QTest::mouseMove(overlay, b);
    QTest::mouseRelease(overlay, Qt::LeftButton, {}, b);
    QCOMPARE(overlay->rois(id).size(), 1);
    QCOMPARE(overlay->selected(), 1);
    QTRY_COMPARE_WITH_TIMEOUT(w->roi_panel()->table()->rowCount(), 1, 30000);
    QTest::keyClick(w->view(), Qt::Key_Delete);
    QCOMPARE(overlay->rois(id).size(), 0);
    QVERIFY(w->host().has_layer(id));

    // The profile dock shows itself with the first line.
    auto* dock = w->findChild<QDockWidget*>(QStringLiteral("dock_profile"));
    QVERIFY(dock);
    // Drawn with the mouse: the dock waits for the release, so the view keeps its place under
    // the cursor during the drag and the line ends where the button came up.
    QVERIFY(!dock->isVisible());
    QTest::keyClick(w->view(), Qt::Key_L);
    QCOMPARE(overlay->tool(), Tool::line);
    const QPoint from = overlay->widget_pos({5, 5}).toPoint();
    const QPoint to = overlay->widget_pos({50, 40}).toPoint();
    const QPointF to_image = overlay->image_pos(to);
    QTest::mousePress(overlay, Qt::LeftButton, {}, from);
    QTest::mouseMove(overlay, (from + to) / 2);
    QTest::mouseMove(overlay, to);
    QVERIFY2(!dock->isVisible(), "the profile dock opened during the drag");
    QTest::mouseRelease(overlay, Qt::LeftButton, {}, to);
    QVERIFY(overlay->line());
    QVERIFY2(QLineF(overlay->line()->points[1], to_image).length() < 1e-6,
             qPrintable(QStringLiteral("the line ends at %1,%2, the cursor was at %3,%4")
                            .arg(overlay->line()->points[1].x())
                            .arg(overlay->line()->points[1].y())
                            .arg(to_image.x())
                            .arg(to_image.y())));
    QVERIFY(dock->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(!w->profile_panel()->plot()->y().empty(), 30000);
    // A drag ended with Escape keeps the line drawn so far, and its dock shows.
    dock->hide();
    QTest::mousePress(overlay, Qt::LeftButton, {}, to);
    QTest::mouseMove(overlay, from);
    QVERIFY(!dock->isVisible());
    QTest::keyClick(overlay, Qt::Key_Escape);
    QVERIFY(overlay->line());
    QVERIFY2(dock->isVisible(), "Escape ended the drag and the dock stayed hidden");
    QTest::mouseRelease(overlay, Qt::LeftButton, {}, from);
  }

  // Sessions keep each layer's ROIs: kind, points, slice and id.
  void rois_in_sessions() {
    const QString session = tmp_.filePath(QStringLiteral("rois.gpix.json"));
    QList<Roi> want;
    {
      auto w = make(QStringLiteral("b.ini"));
      const int id = open_sample(*w);
      QVERIFY(id >= 0);
      Roi e;
      e.kind = RoiKind::ellipse;
      e.points = QPolygonF({QPointF(3, 4), QPointF(20, 15)});
      Roi p;
      p.kind = RoiKind::polygon;
      p.points = QPolygonF({QPointF(1.25, 2), QPointF(30.5, 4), QPointF(12, 28.75)});
      w->roi_overlay()->add_roi(id, e);
      w->roi_overlay()->add_roi(id, p);
      want = w->roi_overlay()->rois(id);
      QVERIFY2(save_session_and_wait(w.get(), session), qPrintable(w->last_error()));
    }
    auto w2 = make(QStringLiteral("c.ini"));
    // The session is read off the GUI thread; session_opened says when its layers (and their
    // ROIs) are in.
    QSignalSpy opened(w2.get(), &MainWindow::session_opened);
    QVERIFY2(w2->open_session(session), qPrintable(w2->last_error()));
    QVERIFY(opened.wait(60000));
    QVERIFY2(opened.first().first().toBool(), qPrintable(w2->last_error()));
    QVERIFY(!w2->host().layer_ids().isEmpty());
    const QList<Roi> got = w2->roi_overlay()->rois(w2->host().layer_ids().first());
    QCOMPARE(got.size(), want.size());
    for (qsizetype i = 0; i < got.size(); ++i) {
      QCOMPARE(got[i].kind, want[i].kind);
      QCOMPARE(got[i].points, want[i].points);
      QCOMPARE(got[i].plane, want[i].plane);
      QCOMPARE(got[i].id, want[i].id);
    }
  }

  // The docs' screenshot of the whole window (GPIX_SCREENSHOT_DIR): ROIs on the nuclei sample,
  // their table, and a line profile across three nuclei.
  void screenshot_window() {
    const QString dir = qEnvironmentVariable("GPIX_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("GPIX_SCREENSHOT_DIR is not set");
    auto w = make(QStringLiteral("d.ini"));
    w->resize(1600, 1000);
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const int id = open_sample(*w);
    QVERIFY(id >= 0);
    // Calibrated as a 0.65 µm camera pixel would be, so that areas and distances show in µm.
    gpix::ui::Layer l = w->host().layer(id);
    l.spacing = {0.65, 0.65};
    l.unit = QStringLiteral("um");
    w->host().replace_layer(id, l);
    for (const char* name : {"dock_labels", "dock_devices"}) {
      if (auto* d = w->findChild<QDockWidget*>(QLatin1String(name))) d->hide();
    }
    gpix::ui::RoiOverlay* overlay = w->roi_overlay();
    auto shape = [](RoiKind k, QPolygonF pts) {
      Roi r;
      r.kind = k;
      r.points = std::move(pts);
      return r;
    };
    overlay->add_roi(id, shape(RoiKind::ellipse, QPolygonF({QPointF(186, 30), QPointF(220, 66)})));
    overlay->add_roi(id,
                     shape(RoiKind::rectangle, QPolygonF({QPointF(26, 110), QPointF(66, 150)})));
    overlay->add_roi(id, shape(RoiKind::polygon,
                               QPolygonF({QPointF(88, 190), QPointF(118, 182), QPointF(128, 214),
                                          QPointF(112, 240), QPointF(90, 228)})));
    overlay->select(3);
    overlay->set_line({20, 150}, {240, 140});
    w->profile_panel()->width_box()->setValue(3);
    if (auto* d = w->findChild<QDockWidget*>(QStringLiteral("dock_profile")))
      w->resizeDocks({d}, {300}, Qt::Vertical);
    QTRY_VERIFY_WITH_TIMEOUT(!w->roi_panel()->busy() && !w->profile_panel()->busy() &&
                                 !w->view()->busy() && w->roi_panel()->table()->rowCount() == 3,
                             60000);
    // The cursor over the plot: the value readout at the first nucleus.
    gpix::ui::ProfilePlot* plot = w->profile_panel()->plot();
    QTest::mouseMove(plot, QPoint(int(plot->column_of(plot->x().back() * 0.26)), 40));
    QTRY_VERIFY(plot->hovered() >= 0);
    QTest::qWait(200);
    QVERIFY(w->grab().save(QDir(dir).filePath(QStringLiteral("roi_stats.png"))));
    QVERIFY(
        w->profile_panel()->grab().save(QDir(dir).filePath(QStringLiteral("line_profile.png"))));
  }
};

QTEST_MAIN(TestRoiViewer)
#include "test_roi_viewer.moc"
