// The real viewer window (gpix-viewer's MainWindow) under QT_QPA_PLATFORM=offscreen with the
// real gpix plugin: start-up on the sample, a synthetic drop of several files, the end-to-end
// run of gaussian_blur through the plugin's filter panel, the value under the cursor, the slice
// slider for 3D, recent files and settings that persist.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QDropEvent>
#include <QFile>
#include <QMimeData>
#if GPIX_TEST_HAVE_IO
#include "gpix/io.h"
#endif
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>
#include <QUrl>
#include <algorithm>

#include "gpix/filters.h"
#include "gpix/samples.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/layer_card.h"
#include "main_window.h"
#include "support/random.h"

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
    w->open_default();
    w->show();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
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

  void drop_several_files_opens_layers() {
    auto w = make();
    const Shape s2{13, 21}, s3{4, 9, 11};
    const auto a = test::random_values<std::uint16_t>(s2.elements());
    const auto b = test::random_values<float>(s3.elements());
    const QString pa = write_raw(tmp_.path(), QStringLiteral("plane"), a, s2);
    const QString pb = write_raw(tmp_.path(), QStringLiteral("stack"), b, s3);
    drop_files(w.get(), {pa, pb});
    if (QTest::currentTestFailed()) return;
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
    // A file no reader takes is reported, not fatal.
    w->open_files({tmp_.filePath(QStringLiteral("x.unknown"))});
    QVERIFY(w->last_error().contains(QStringLiteral("no reader")));
    QCOMPARE(w->host().layer_ids().size(), 2);
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
    drop_files(w.get(), {path});
    if (QTest::currentTestFailed()) return;
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
    // Saving as NRRD goes through gpix_io too, the calibration with it.
    const QString out = tmp_.filePath(QStringLiteral("cells.nrrd"));
    w->host().save_layer(ids[0], out);
    const io::Image back = io::read(out.toStdString());
    QVERIFY(same_bytes(back.pixels, HostArray::from(v, s)));
    QCOMPARE(back.meta.unit, std::string("um"));
    QCOMPARE(back.meta.spacing, m.spacing);
  }

  // Filter results of any dtype save as TIFF through the host's writer (File > Save layer
  // as) and open again bit for bit: connected_components' uint32 labels, an int64 stack and
  // a float64 plane with NaN and infinities.
  void results_of_any_dtype_save_as_tiff() {
    auto w = make();
    const Shape s{23, 31};
    std::vector<std::uint8_t> mask(s.elements());
    for (auto& m : mask) m = test::rng()() % 3 == 0 ? 1 : 0;
    const QList<int> ids = w->open_files({write_raw(tmp_.path(), QStringLiteral("mask"), mask, s)});
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
      const QList<int> back = w->open_files({out});
      QCOMPARE(back.size(), 1);
      const plugin::Layer& l = w->host().layer(back.first());
      QVERIFY2(same_bytes(l.array.valid() ? l.array.pull() : l.host, want), qPrintable(out));
    }
  }
#endif

  void gaussian_end_to_end() {
    auto w = make();
    const Shape s{37, 45};
    const auto v = test::random_values<float>(s.elements());
    const QString path = write_raw(tmp_.path(), QStringLiteral("e2e"), v, s);
    const QList<int> ids = w->open_files({path});
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
    QCOMPARE(out.name, QStringLiteral("gaussian_blur"));
    const Array input = Array::push(HostArray::from(v, s), w->host().device());
    const Array want = gaussian_blur(input, 2.0, 1.5);
    QVERIFY(same_bytes(out.array.pull(), want.pull()));
    // The input layer is untouched.
    QVERIFY(same_bytes(w->host().layer(ids.first()).array.pull(), HostArray::from(v, s)));
  }

  void settings_persist() {
    {
      auto w = make();
      w->open_default();
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
