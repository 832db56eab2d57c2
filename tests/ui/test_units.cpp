// Physical units in the widgets, offscreen: the layer card's spacing, the scale bar's length in
// screen pixels for a known spacing and zoom (and its pixels on screen), lengths entered in µm
// converted per axis to pixels on an anisotropic stack (what the workflow records), sigma_z's
// default on stacks, results that inherit the calibration, and save + reopen through every
// format that keeps it. With GPIX_SCREENSHOT_DIR set, a screenshot of the scale bar and the
// card goes there (docs/screenshot_scale_bar.png is one).
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <cmath>

#include "formats.h"
#include "gpix/basic_host.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/image_view.h"
#include "gpix/ui/layer_card.h"
#include "gpix/ui/workflow.h"
#include "support/random.h"

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::plugin::Layer;

namespace {

// A calibrated stack as the biologist's ImageJ file gives it: 1.5 µm in z, 0.25 and 0.2 µm in
// y and x (anisotropic in every axis, so a mixed-up axis shows).
Layer stack(const Shape& s = Shape{9, 40, 50}) {
  Layer l;
  l.name = QStringLiteral("cells");
  l.host = HostArray::from(test::random_values<float>(s.elements()), s);
  l.spacing = {1.5, 0.25, 0.2};
  l.origin = {3.0, -1.0, 2.5};
  l.unit = QStringLiteral("um");
  return l;
}

}  // namespace

class TestUnits : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<BasicHost> host_;
  BasicHost& host() { return *host_; }

 private slots:
  void init() {
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
    formats::register_all(*host_);
  }
  void cleanup() { host_.reset(); }

  void card_shows_spacing_and_unit() {
    ui::LayerCard card(host());
    host().add_layer(stack());
    QCOMPARE(card.value(QStringLiteral("spacing")),
             QStringLiteral("1.5 \u00d7 0.25 \u00d7 0.2 \u00b5m (z, y, x)"));
    Layer plain;
    plain.name = QStringLiteral("plain");
    plain.host = HostArray::from(test::random_values<std::uint8_t>(12), Shape{3, 4});
    host().add_layer(plain);
    QCOMPARE(card.value(QStringLiteral("spacing")),
             QStringLiteral("1 \u00d7 1 px (y, x), not calibrated"));
  }

  // 0.2 µm per pixel in x: at zoom 2 a screen pixel is 0.1 µm, 150 of them 15 µm, so the bar
  // is 10 µm = 50 image pixels = 100 screen pixels; at zoom 0.5, 50 µm = 125 screen pixels.
  void scale_bar_length() {
    ui::ImageView view(host());
    view.resize(400, 300);
    QVERIFY(view.scale_bar().label.isEmpty());  // nothing shown
    host().add_layer(stack());
    view.set_zoom(2.0);
    ui::ImageView::ScaleBar bar = view.scale_bar();
    QCOMPARE(bar.length, 10.0);
    QCOMPARE(bar.pixels, 100.0);
    QCOMPARE(bar.label, QStringLiteral("10 \u00b5m"));
    view.set_zoom(0.5);
    bar = view.scale_bar();
    QCOMPARE(bar.length, 50.0);
    QCOMPARE(bar.pixels, 125.0);
    // Readable at any zoom: between 60 and 150 screen pixels.
    for (double z = 0.01; z < 200; z *= 1.37) {
      view.set_zoom(z);
      const double px = view.scale_bar().pixels;
      QVERIFY2(px >= 60 - 1e-9 && px <= 150 + 1e-9, qPrintable(QString::number(px)));
    }
    // On screen: white where the bar is (the bottom right), in the image's dark background.
    view.set_zoom(0.5);
    view.show();
    const QImage shot = view.grab().toImage();
    const int y = view.height() - 18;
    const int right = view.width() - 16;
    QCOMPARE(shot.pixelColor(right - 5, y), QColor(Qt::white));
    QCOMPARE(shot.pixelColor(right - 120, y), QColor(Qt::white));
    QVERIFY(shot.pixelColor(right - 132, y) != QColor(Qt::white));
    view.set_scale_bar_visible(false);
    QVERIFY(view.scale_bar().label.isEmpty());
    QVERIFY(view.grab().toImage().pixelColor(right - 5, y) != QColor(Qt::white));
    // An uncalibrated layer made current has no bar, not the stack's (the GUI walk-through
    // saw "200 µm" on a 1 x 1 px image); the stack current again has its own.
    view.set_scale_bar_visible(true);
    const int cells = host().layer_ids().front();
    Layer plain;
    plain.name = QStringLiteral("plain");
    plain.host = HostArray::from(test::random_values<float>(40 * 50), Shape{40, 50});
    const int other = host().add_layer(plain);
    host().set_current_layer(other);
    QVERIFY2(view.scale_bar().label.isEmpty(), qPrintable(view.scale_bar().label));
    host().set_current_layer(cells);
    QCOMPARE(view.scale_bar().label, QStringLiteral("50 \u00b5m"));
  }

  // Lengths in µm convert per axis with that axis' spacing; the pixels are what runs and what
  // the workflow records; the result keeps the calibration.
  void micrometres_to_pixels_per_axis() {
    ui::Workflow workflow;
    ui::FilterPanel panel(host(), &workflow);
    const int in = host().add_layer(stack());
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    ui::ParamForm* form = panel.form();
    // A stack's sigma_z starts at sigma_x's size: 2 px * 0.2 µm = 0.4 µm = 0.2667 px of z.
    auto* z = qobject_cast<QDoubleSpinBox*>(form->editor(QStringLiteral("sigma_z")));
    QCOMPARE(z->value(), 0.2667);
    QVERIFY(form->length_unit());
    QCOMPARE(form->length_unit()->count(), 2);
    QCOMPARE(form->length_unit()->itemText(1), QStringLiteral("\u00b5m"));
    form->length_unit()->setCurrentIndex(1);
    QVERIFY(form->physical());
    form->physical_editor(QStringLiteral("sigma_x"))->setValue(1.0);  // 5 px of 0.2 µm
    form->physical_editor(QStringLiteral("sigma_y"))->setValue(1.0);  // 4 px of 0.25 µm
    form->physical_editor(QStringLiteral("sigma_z"))->setValue(3.0);  // 2 px of 1.5 µm
    const Params p = form->params();
    QCOMPARE(std::get<double>(p.at("sigma_x")), 5.0);
    QCOMPARE(std::get<double>(p.at("sigma_y")), 4.0);
    QCOMPARE(std::get<double>(p.at("sigma_z")), 2.0);
    QVERIFY(form->physical_editor(QStringLiteral("sigma_z"))->suffix().contains("= 2 px"));
    // 0 stays available.
    form->physical_editor(QStringLiteral("sigma_z"))->setValue(0.0);
    QCOMPARE(z->value(), 0.0);
    form->physical_editor(QStringLiteral("sigma_z"))->setValue(3.0);
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(60000));
    QCOMPARE(workflow.steps().size(), 1);
    QCOMPARE(std::get<double>(workflow.steps()[0].params.at("sigma_x")), 5.0);
    QCOMPARE(std::get<double>(workflow.steps()[0].params.at("sigma_z")), 2.0);
    QVERIFY2(workflow.to_cli_script().contains(QStringLiteral("--sigma_x '5'")),
             qPrintable(workflow.to_cli_script()));
    const Layer out = host().layer(host().current_layer());
    QCOMPARE(out.unit, QStringLiteral("um"));
    QCOMPARE(out.spacing, (std::vector<double>{1.5, 0.25, 0.2}));
    QCOMPARE(out.origin, (std::vector<double>{3.0, -1.0, 2.5}));
    const Array want = run("gaussian_blur", host().layer(in).array,
                           {{"sigma_x", 5.0}, {"sigma_y", 4.0}, {"sigma_z", 2.0}})
                           .array;
    const HostArray a = want.pull(), b = out.array.pull();
    QVERIFY(std::memcmp(a.data(), b.data(), a.bytes()) == 0);
    // Re-running the workflow on another calibrated stack keeps that stack's calibration.
    Layer other = stack();
    other.spacing = {2.0, 0.5, 0.5};
    other.unit = QStringLiteral("mm");
    const QList<int> made = workflow.rerun(host(), host().add_layer(other));
    QCOMPARE(made.size(), 1);
    QCOMPARE(host().layer(made.front()).unit, QStringLiteral("mm"));
    QCOMPARE(host().layer(made.front()).spacing, (std::vector<double>{2.0, 0.5, 0.5}));

    // Integer radii round: 1 µm in x is 5 px, 1 µm in y 4 px, 2.5 µm in z 1.67 -> 2 px.
    QVERIFY(panel.select_filter(QStringLiteral("mean_box")));
    form = panel.form();
    form->set_input(0, in);
    form->length_unit()->setCurrentIndex(1);
    form->physical_editor(QStringLiteral("radius_x"))->setValue(1.0);
    form->physical_editor(QStringLiteral("radius_y"))->setValue(1.0);
    form->physical_editor(QStringLiteral("radius_z"))->setValue(2.5);
    QCOMPARE(qobject_cast<QSpinBox*>(form->editor(QStringLiteral("radius_x")))->value(), 5);
    QCOMPARE(qobject_cast<QSpinBox*>(form->editor(QStringLiteral("radius_y")))->value(), 4);
    QCOMPARE(qobject_cast<QSpinBox*>(form->editor(QStringLiteral("radius_z")))->value(), 2);

    // An uncalibrated input offers pixels only, and a 2D one keeps sigma_z at its default.
    Layer plain;
    plain.name = QStringLiteral("plain");
    plain.host = HostArray::from(test::random_values<float>(12), Shape{3, 4});
    host().add_layer(plain);
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QCOMPARE(panel.form()->length_unit()->count(), 1);
    QVERIFY(!panel.form()->physical());
    const auto sigma_z = [](ui::FilterPanel& fp) {
      return qobject_cast<QDoubleSpinBox*>(fp.form()->editor(QStringLiteral("sigma_z")))->value();
    };
    // This panel keeps the gaussian's parameters as last set (2 px, in pixels whatever the box
    // showed); a fresh panel starts from the default.
    QCOMPARE(sigma_z(panel), 2.0);
    ui::FilterPanel fresh(host(), &workflow);
    QVERIFY(fresh.select_filter(QStringLiteral("gaussian_blur")));
    QCOMPARE(fresh.form()->length_unit()->count(), 1);
    QCOMPARE(sigma_z(fresh), 0.0);
  }

  // A z projection keeps y and x; a change of shape keeps nothing.
  void results_inherit_what_holds() {
    const Layer in = stack();
    Layer mip;
    mip.host = HostArray::empty(Shape{40, 50}, DType::f32);
    ui::inherit_calibration(in, mip);
    QCOMPARE(mip.spacing, (std::vector<double>{0.25, 0.2}));
    QCOMPARE(mip.unit, QStringLiteral("um"));
    Layer resampled;
    resampled.host = HostArray::empty(Shape{9, 20, 25}, DType::f32);
    ui::inherit_calibration(in, resampled);
    QVERIFY(resampled.spacing.empty());
    QVERIFY(resampled.unit.isEmpty());
    // The filter's parameters say how the grid moved: a resample keeps the physical extent
    // (its pixels at (o + 0.5) in / out - 0.5), a crop starts at its box's corner.
    ui::inherit_calibration(
        in, resampled,
        gpix::axis_maps("resample", {{"factor_x", 0.5}, {"factor_y", 0.5}, {"factor_z", 1.0}},
                        in.shape(), resampled.shape()));
    QCOMPARE(resampled.spacing, (std::vector<double>{1.5, 0.5, 0.4}));
    QCOMPARE(resampled.origin, (std::vector<double>{3.0, -1.0 + 0.125, 2.5 + 0.1}));
    QCOMPARE(resampled.unit, QStringLiteral("um"));
    Layer cropped;
    cropped.host = HostArray::empty(Shape{4, 10, 20}, DType::f32);
    ui::inherit_calibration(in, cropped,
                            gpix::axis_maps("crop",
                                            {{"origin_x", 7.0},
                                             {"origin_y", 30.0},
                                             {"origin_z", 5.0},
                                             {"size_x", 20.0},
                                             {"size_y", 10.0},
                                             {"size_z", 4.0}},
                                            in.shape(), cropped.shape()));
    QCOMPARE(cropped.spacing, in.spacing);
    QCOMPARE(cropped.origin,
             (std::vector<double>{3.0 + 1.5 * 5.0, -1.0 + 0.25 * 30.0, 2.5 + 0.2 * 7.0}));
    // A layer that says nothing of its placement says nothing after a resample either (its
    // ROI areas stay in its own pixels).
    Layer bare;
    bare.host = in.host;
    bare.spacing = {1.0, 1.0, 1.0};
    bare.origin = {0.0, 0.0, 0.0};
    Layer bare_result;
    bare_result.host = resampled.host;
    ui::inherit_calibration(
        bare, bare_result,
        gpix::axis_maps("resample", {{"factor_x", 0.5}, {"factor_y", 0.5}, {"factor_z", 1.0}},
                        bare.shape(), bare_result.shape()));
    QVERIFY(bare_result.spacing.empty() && bare_result.origin.empty());
    // A box that does not fit the shapes given moves nothing it cannot vouch for.
    Layer odd;
    odd.host = HostArray::empty(Shape{4, 10, 20}, DType::f32);
    ui::inherit_calibration(in, odd,
                            gpix::axis_maps("crop", {{"origin_x", 45.0}}, in.shape(), odd.shape()));
    QVERIFY(odd.spacing.empty());
  }

  void save_and_reopen_keep_the_calibration() {
#if GPIX_TEST_HAVE_IO
    const int id = host().add_layer(stack(Shape{4, 17, 23}));
    for (const char* ext : {".tif", ".nrrd", ".mha", ".nii.gz"}) {
      const QString path = tmp_.filePath(QStringLiteral("cal") + QLatin1String(ext));
      host().save_layer(id, path);
      const QList<int> ids = host().open_file(path);
      QCOMPARE(ids.size(), 1);
      const Layer back = host().layer(ids.front());
      QCOMPARE(back.unit, QStringLiteral("um"));
      for (std::size_t i = 0; i < 3; ++i) {
        QVERIFY2(std::abs(back.spacing[i] - stack().spacing[i]) < 1e-6, ext);
        QVERIFY2(std::abs(back.origin[i] - stack().origin[i]) < 1e-6, ext);
      }
    }
#else
    QSKIP("built without gpix_io");
#endif
  }

  // The view with its scale bar and the card of a calibrated stack, as one picture.
  void screenshot() {
    const QString dir = qEnvironmentVariable("GPIX_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("set GPIX_SCREENSHOT_DIR to write the screenshot");
    // Rings of a cell-like pattern, 0.2 µm pixels: the bar should read a few µm.
    const Shape s{12, 256, 320};
    std::vector<float> v(s.elements());
    for (std::size_t z = 0; z < s[0]; ++z) {
      for (std::size_t y = 0; y < s[1]; ++y) {
        for (std::size_t x = 0; x < s[2]; ++x) {
          const double r = std::hypot(double(x) - 150.0, double(y) - 120.0);
          v[(z * s[1] + y) * s[2] + x] =
              float(1000 * std::exp(-r / 60.0) * (1 + 0.5 * std::cos(r / 6.0)) + 50);
        }
      }
    }
    Layer l = stack();
    l.name = QStringLiteral("cells (ImageJ, 0.2 \u00b5m x/y, 1.5 \u00b5m z)");
    l.host = HostArray::from(v, s);
    l.spacing = {1.5, 0.2, 0.2};
    QWidget w;
    auto* h = new QHBoxLayout(&w);
    auto* view = new ui::ImageView(host());
    view->setMinimumSize(480, 400);
    h->addWidget(view, 1);
    auto* card = new ui::LayerCard(host());
    card->setFixedWidth(300);
    h->addWidget(card);
    QSignalSpy refreshed(card, &ui::LayerCard::refreshed);
    host().add_layer(l);
    w.resize(800, 420);
    w.show();
    QTRY_VERIFY_WITH_TIMEOUT(!refreshed.isEmpty(), 30000);
    view->fit();
    QTRY_VERIFY_WITH_TIMEOUT(!view->busy(), 30000);
    QVERIFY(w.grab().save(dir + QStringLiteral("/screenshot_scale_bar.png")));
  }
};

QTEST_MAIN(TestUnits)
#include "test_units.moc"
