// gpix_ui widgets on a BasicHost, on the default device: device panel contents and device
// switching, the layer card against CPU statistics, a form generated and run for EVERY catalog
// entry (compared with gpix::run), cancel, undo/redo, preview (latest wins), failing filters
// (input untouched, error shown), workflow export and re-run, and dragging a layer out as a file.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollArea>
#include <QSemaphore>
#include <QSettings>
#include <QSignalSpy>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QUndoStack>
#include <QUrl>
#include <QWheelEvent>

#include "formats.h"
#include "gpix/basic_host.h"
#include "gpix/memory.h"
#include "gpix/queue.h"
#include "gpix/ui/device_panel.h"
#include "gpix/ui/filter_help.h"
#include "gpix/ui/filter_panel.h"
#include "gpix/ui/layer.h"
#include "gpix/ui/layer_card.h"
#include "gpix/ui/layer_commands.h"
#include "gpix/ui/layer_list.h"
#include "gpix/ui/workflow.h"
#include "gpix/ui/workflow_panel.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;
using gpix::plugin::BasicHost;
using gpix::plugin::Layer;

namespace {

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

template <class T>
HostArray random_host(const Shape& s) {
  return HostArray::from(test::random_values<T>(s.elements()), s);
}

HostArray random_of(DType t, const Shape& s) {
  return visit_dtype(t, [&](auto z) { return random_host<decltype(z)>(s); });
}

int add(BasicHost& host, const QString& name, const HostArray& h) {
  Layer l;
  l.name = name;
  l.host = h;
  return host.add_layer(l);
}

bool wait_finished(ui::FilterPanel& panel, QSignalSpy& spy, int timeout_ms = 60000) {
  if (spy.isEmpty() && !spy.wait(timeout_ms)) return false;
  Q_UNUSED(panel);
  return true;
}

}  // namespace

class TestWidgets : public QObject {
  Q_OBJECT
  QTemporaryDir tmp_;
  std::unique_ptr<BasicHost> host_;
  std::unique_ptr<ui::Workflow> workflow_;

  BasicHost& host() { return *host_; }

  // A run that ended cancelled: finished(false), the panel says so, and nothing was added,
  // recorded or changed (layer `id` still holds h).
  void expect_cancelled(const QSignalSpy& done, const ui::FilterPanel& panel, int id,
                        const HostArray& h) {
    QCOMPARE(done.first().first().toBool(), false);
    QVERIFY2(panel.error_text().contains(QStringLiteral("ancel")), qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids().size(), 1);
    QVERIFY(same_bytes(host().layer(id).array.pull(), h));
    QVERIFY(workflow_->steps().isEmpty());
    QVERIFY(host().undo_stack()->count() == 0);
  }

 private slots:
  // Panels shorten long layer names in their sentences: 40 characters at most, the start and
  // the end kept around an ellipsis, never half of a surrogate pair.
  void shown_name_cuts_long_names() {
    QCOMPARE(ui::shown_name(QStringLiteral("cells")), QStringLiteral("cells"));
    const QString forty(40, QLatin1Char('a'));
    QCOMPARE(ui::shown_name(forty), forty);
    const QString longer =
        QStringLiteral("start_") + QString(200, QLatin1Char('x')) + QStringLiteral("_the_end.tif");
    const QString cut = ui::shown_name(longer);
    QCOMPARE(cut.size(), 40);
    QVERIFY(cut.startsWith(QStringLiteral("start_")));
    QVERIFY(cut.endsWith(QStringLiteral("_the_end.tif")));
    QVERIFY(cut.contains(QChar(0x2026)));
    // An emoji (two UTF-16 units) across either cut stays whole or goes whole.
    const QString emoji = QString::fromUtf8("\xF0\x9F\x94\xAC");  // microscope
    for (int at = 20; at < 28; ++at) {
      QString n = QString(at, QLatin1Char('b')) + emoji + QString(60, QLatin1Char('c')) + emoji +
                  QString(at % 17, QLatin1Char('d'));
      const QString c = ui::shown_name(n);
      QVERIFY(c.size() <= 40);
      QCOMPARE(QString::fromUtf8(c.toUtf8()), c);  // no lone surrogate (it would become U+FFFD)
    }
  }

  void init() {
    host_ = std::make_unique<BasicHost>(
        default_device(),
        new QSettings(tmp_.filePath(QStringLiteral("s.ini")), QSettings::IniFormat));
    workflow_ = std::make_unique<ui::Workflow>();
    formats::register_all(*host_);
  }
  void cleanup() {
    workflow_.reset();
    host_.reset();
  }

  void device_panel_lists_every_device() {
    ui::DevicePanel panel(host());
    const auto& devs = devices();
    QCOMPARE(panel.card_count(), int(devs.size()));
    int current = 0;
    for (int i = 0; i < panel.card_count(); ++i) {
      const QString text = panel.card_text(i);
      const DeviceInfo& info = devs[std::size_t(i)].info();
      QVERIFY2(text.contains(QString::fromStdString(info.name).toHtmlEscaped()), qPrintable(text));
      QVERIFY(text.contains(QString::fromStdString(human_bytes(info.global_memory))));
      QVERIFY(text.contains(QString::number(info.compute_units)));
      QVERIFY(text.contains(QString::fromUtf8(name(info.backend).data()).toUpper()));
      if (panel.card_is_current(i)) {
        ++current;
        QVERIFY(devs[std::size_t(i)] == host().device());
        QVERIFY(!panel.use_button(i)->isEnabled());
      }
    }
    QCOMPARE(current, 1);
    // Memory held by layers is attributed to their device.
    const int cur = host().device().info().index;
    const std::uint64_t before = panel.layer_bytes(cur);
    add(host(), QStringLiteral("m"), random_host<float>(Shape{33, 65}));
    QCOMPARE(panel.layer_bytes(cur), before + 33u * 65u * 4u);
  }

  void device_switch_keeps_layers() {
    const auto& devs = devices();
    if (devs.size() < 2)
      QSKIP("one device only: the switch is tested where two exist (ctest test_ui_device_switch)");
    ui::DevicePanel panel(host());
    const HostArray a = random_host<std::uint16_t>(Shape{17, 23});
    const HostArray b = random_host<float>(Shape{3, 5, 7});
    const int ia = add(host(), QStringLiteral("a"), a);
    const int ib = add(host(), QStringLiteral("b"), b);
    for (std::size_t k = 0; k < devs.size(); ++k) {
      const int target = int((std::size_t(host().device().info().index) + 1) % devs.size());
      QSignalSpy changed(&host(), &plugin::HostContext::device_changed);
      const Device before = host().device();
      panel.use_button(target)->click();
      // The copies run on a worker: the click returns with the old device still in use (the
      // GUI thread waited behind a running filter's queue for the copies before).
      QVERIFY2(host().switching_device(), qPrintable(host().last_status()));
      QVERIFY(host().device() == before);
      if (k == 0) {
        // A filter asked for meanwhile waits for the switch (it would run on the old device).
        ui::FilterPanel filters(host(), workflow_.get());
        QVERIFY(filters.select_filter(QStringLiteral("invert")));
        QSignalSpy finished(&filters, &ui::FilterPanel::finished);
        filters.run();
        QCOMPARE(finished.size(), 1);
        QCOMPARE(finished.first().first().toBool(), false);
        QVERIFY2(filters.error_text().contains(QStringLiteral("moving to another device")),
                 qPrintable(filters.error_text()));
      }
      QVERIFY(changed.wait(60000));
      QCOMPARE(changed.size(), 1);
      QVERIFY(!host().switching_device());
      QVERIFY(host().device() == devs[std::size_t(target)]);
      QVERIFY(panel.card_is_current(target));
      for (auto [id, want] : {std::pair{ia, a}, std::pair{ib, b}}) {
        const Layer l = host().layer(id);
        QVERIFY(l.array.valid());
        QVERIFY(l.array.device() == devs[std::size_t(target)]);
        QVERIFY(same_bytes(l.array.pull(), want));
      }
    }
    // While a task runs (a filter queued on the device) the switch is refused, saying so; the
    // same click works once it is done.
    const int other = int((std::size_t(host().device().info().index) + 1) % devs.size());
    {
      const std::shared_ptr<ui::Task> task = host().begin_task(QStringLiteral("a long filter"));
      panel.use_button(other)->click();
      QVERIFY(!host().switching_device());
      QVERIFY(!(host().device() == devs[std::size_t(other)]));
      QVERIFY2(host().last_status().contains(QStringLiteral("A task is running")),
               qPrintable(host().last_status()));
    }
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
          panel.use_button(other)->click();
          return host().switching_device() || host().device() == devs[std::size_t(other)];
        }(),
        10000);
    // A layer replaced while the copies run is copied at the switch: the new pixels arrive.
    const HostArray c = random_host<float>(Shape{9, 4});
    Layer replaced = host().layer(ib);
    replaced.array = Array::push(c, host().device());
    replaced.host = {};
    host().replace_layer(ib, replaced);
    QTRY_VERIFY_WITH_TIMEOUT(!host().switching_device(), 60000);
    QVERIFY(host().device() == devs[std::size_t(other)]);
    QVERIFY(host().layer(ib).array.device() == devs[std::size_t(other)]);
    QVERIFY(same_bytes(host().layer(ib).array.pull(), c));
    QVERIFY(same_bytes(host().layer(ia).array.pull(), a));
  }

  void layer_card_matches_cpu_stats_data() {
    QTest::addColumn<DType>("dtype");
    for (DType t : {DType::u8, DType::i16, DType::u16, DType::i32, DType::f32})
      QTest::newRow(name(t).data()) << t;
  }
  void layer_card_matches_cpu_stats() {
    QFETCH(DType, dtype);
    ui::LayerCard card(host());
    const Shape s{19, 31};
    const HostArray h = random_of(dtype, s);
    QSignalSpy refreshed(&card, &ui::LayerCard::refreshed);
    add(host(), QStringLiteral("card"), h);
    QCOMPARE(card.value(QStringLiteral("name")), QStringLiteral("card"));
    // The statistics are computed off the GUI thread.
    QTRY_VERIFY_WITH_TIMEOUT(!refreshed.isEmpty(), 30000);
    QCOMPARE(card.value(QStringLiteral("shape")), QString::fromStdString(s.str()));
    QCOMPARE(card.value(QStringLiteral("dtype")), QString::fromUtf8(name(dtype).data()));
    QCOMPARE(card.value(QStringLiteral("size")), QString::fromStdString(human_bytes(h.bytes())));
    QCOMPARE(card.value(QStringLiteral("device")), QString::fromStdString(host().device().label()));
    QCOMPARE(card.value(QStringLiteral("kind")), QStringLiteral("buffer"));
    visit_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      const auto v = h.as<T>();
      const T mn = *std::min_element(v.begin(), v.end());
      const T mx = *std::max_element(v.begin(), v.end());
      QCOMPARE(card.value(QStringLiteral("min")), QString::fromStdString(Scalar(mn).str()));
      QCOMPARE(card.value(QStringLiteral("max")), QString::fromStdString(Scalar(mx).str()));
      double sum = 0;
      for (T x : v) sum += double(x);
      QVERIFY(std::abs(card.value(QStringLiteral("mean")).toDouble() - sum / double(v.size())) <=
              1e-5 * std::max(1.0, std::abs(sum / double(v.size()))));
      // The histogram covers every pixel (small arrays are not sampled).
      std::uint64_t total = 0;
      for (auto c : card.histogram()->counts()) total += c;
      QCOMPARE(total, std::uint64_t(s.elements()));
    });
  }

  // Every catalog entry: the generated form has the right editors with the descriptor's
  // ranges and defaults, and Run gives exactly what gpix::run gives with those parameters.
  void form_and_run_for_every_filter_data() {
    QTest::addColumn<QString>("filter");
    for (const FilterInfo& f : filters())
      QTest::newRow(f.name.c_str()) << QString::fromStdString(f.name);
  }
  void form_and_run_for_every_filter() {
    QFETCH(QString, filter);
    const FilterInfo& info = gpix::filter(filter.toStdString());
    ui::FilterPanel panel(host(), workflow_.get());
    QVERIFY(panel.select_filter(filter));
    QCOMPARE(panel.selected_filter(), filter);
    ui::ParamForm* form = panel.form();
    QVERIFY(form);
    for (std::size_t i = 0; i < info.inputs.size(); ++i) QVERIFY(form->input_picker(int(i)));
    QVERIFY(!form->input_picker(int(info.inputs.size())));
    for (const ParamSpec& p : info.params) {
      QWidget* w = form->editor(QString::fromStdString(p.name));
      QVERIFY2(w, p.name.c_str());
      QCOMPARE(w->objectName(), QStringLiteral("param_") + QString::fromStdString(p.name));
      switch (p.type) {
        case ParamType::integer: {
          auto* s = qobject_cast<QSpinBox*>(w);
          QVERIFY(s);
          QCOMPARE(double(s->value()), p.default_value);
          QVERIFY(double(s->minimum()) >= p.min && double(s->maximum()) <= p.max);
          if (!p.unit.empty()) QVERIFY(s->suffix().contains(QString::fromStdString(p.unit)));
          break;
        }
        case ParamType::real: {
          auto* s = qobject_cast<QDoubleSpinBox*>(w);
          QVERIFY(s);
          QCOMPARE(s->value(), p.default_value);
          QCOMPARE(s->minimum(), p.min);
          QCOMPARE(s->maximum(), p.max);
          if (!p.unit.empty()) QVERIFY(s->suffix().contains(QString::fromStdString(p.unit)));
          break;
        }
        case ParamType::boolean:
          QVERIFY(qobject_cast<QCheckBox*>(w));
          QCOMPARE(qobject_cast<QCheckBox*>(w)->isChecked(), p.default_value != 0);
          break;
        case ParamType::choice: {
          auto* c = qobject_cast<QComboBox*>(w);
          QVERIFY(c);
          QCOMPARE(c->count(), int(p.choices.size()));
          QCOMPARE(c->currentText(), QString::fromStdString(p.default_choice));
          break;
        }
      }
    }
    // Inputs: a fresh random layer per input, of a dtype and dimensionality the filter takes.
    DType t = info.dtypes.front();
    for (DType c : {DType::f32, DType::u16, DType::i32}) {
      if (std::find(info.dtypes.begin(), info.dtypes.end(), c) != info.dtypes.end()) {
        t = c;
        break;
      }
    }
    const int nd =
        std::find(info.dims.begin(), info.dims.end(), 2) != info.dims.end() ? 2 : info.dims.front();
    const Shape s = nd == 3 ? Shape{3, 11, 13} : nd == 2 ? Shape{11, 13} : Shape{29};
    std::vector<Array> arrays;
    std::vector<HostArray> before;
    // Added first, then picked: a new layer is selected, and the first input follows the
    // selection.
    std::vector<int> ids;
    for (std::size_t i = 0; i < info.inputs.size(); ++i)
      ids.push_back(add(host(), QStringLiteral("in%1").arg(i), random_of(t, s)));
    for (std::size_t i = 0; i < info.inputs.size(); ++i) {
      form->set_input(int(i), ids[i]);
      arrays.push_back(host().layer(ids[i]).array);
      before.push_back(arrays.back().pull());
    }
    // Parameters: a non-default value where the range allows, to prove the form is read.
    for (const ParamSpec& p : info.params) {
      if (p.type == ParamType::real && p.max > p.default_value + 0.25) {
        QVERIFY(form->set_param(QString::fromStdString(p.name), p.default_value + 0.25));
      }
    }
    const Params params = form->params();
    QCOMPARE(params.size(), info.params.size());
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    const int layers = int(host().layer_ids().size());
    panel.run();
    QVERIFY(wait_finished(panel, done));
    Result want;
    QString want_error;
    try {
      want = run(info.name, arrays, params);
    } catch (const Error& e) {
      want_error = QString::fromStdString(e.what());
    }
    for (std::size_t i = 0; i < arrays.size(); ++i)
      QVERIFY(same_bytes(arrays[i].pull(), before[i]));
    if (!want_error.isEmpty()) {
      QCOMPARE(done.first().first().toBool(), false);
      QCOMPARE(panel.error_text(), want_error);
      QCOMPARE(int(host().layer_ids().size()), layers);
      return;
    }
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.error_text()));
    if (want.is_table()) return;
    QCOMPARE(int(host().layer_ids().size()), layers + 1);
    const Layer out = host().layer(host().layer_ids().last());
    // Named after its input, the filter and its parameters.
    QStringList input_names;
    for (std::size_t i = 0; i < info.inputs.size(); ++i)
      input_names << QStringLiteral("in%1").arg(i);
    QCOMPARE(out.name, ui::result_name(filter, params, input_names, int(s.ndim())));
    QVERIFY2(out.name.startsWith(QStringLiteral("in0 · ") + filter), qPrintable(out.name));
    QVERIFY(same_bytes(out.array.pull(), want.array.pull()));
    // Recorded in the workflow with every parameter.
    QCOMPARE(workflow_->steps().size(), 1);
    QCOMPARE(workflow_->steps().first().operation, filter);
    QCOMPARE(workflow_->steps().first().params.size(), info.params.size());
  }

  void search_filters_the_tree() {
    ui::FilterPanel panel(host(), workflow_.get());
    QCOMPARE(panel.visible_filters().size(), int(filters().size()));
    panel.set_search(QStringLiteral("GAUSS"));
    QVERIFY(panel.visible_filters().contains(QStringLiteral("gaussian_blur")));
    for (const QString& f : panel.visible_filters()) {
      const FilterInfo& info = gpix::filter(f.toStdString());
      const QString all = QString::fromStdString(info.name + " " +
                                                 std::string(name(info.category)) + " " + info.doc);
      QVERIFY2(all.contains(QStringLiteral("gauss"), Qt::CaseInsensitive), qPrintable(f));
    }
    panel.set_search(QStringLiteral("zzzz-nothing"));
    QVERIFY(panel.visible_filters().isEmpty());
  }

  void cancel_stops_and_leaves_input() {
    ui::FilterPanel panel(host(), workflow_.get());
    const HostArray h = random_host<float>(Shape{5, 33, 35});
    const int id = add(host(), QStringLiteral("stack"), h);
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    // The gate holds the worker until Cancel has been pressed, so the test does not race it.
    QSemaphore entered, release;
    panel.set_worker_gate([&] {
      entered.release();
      release.acquire();
    });
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(entered.tryAcquire(1, 10000));
    QVERIFY(panel.busy());
    panel.findChild<QPushButton*>(QStringLiteral("cancel"))->click();
    release.release();
    QVERIFY(done.wait(30000));
    expect_cancelled(done, panel, id, h);
  }

  // A run of one slab cannot stop inside its kernels; a cancel pressed while the device does
  // them must still add nothing (the viewer added such a result after a 12-minute median).
  // The gate holds the device (a marker waiting on a user event heads its queue), so the
  // worker waits in "finishing on the device" until the test has pressed Cancel.
  void cancel_during_the_device_work_adds_nothing() {
    ui::FilterPanel panel(host(), workflow_.get());
    const HostArray h = random_host<float>(Shape{5, 33, 35});
    const int id = add(host(), QStringLiteral("stack"), h);
    const gpix::Device dev = host().device();
    gpix::Event hold;
    try {
      hold = gpix::Event::user(dev);
    } catch (const gpix::UnsupportedFeature&) {
      QSKIP("this backend has no user events");
    }
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    panel.set_worker_gate([&] { (void)gpix::Queue::default_for(dev).marker({hold}); });
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QTRY_VERIFY_WITH_TIMEOUT(panel.phase_text().contains(QStringLiteral("finishing on the device")),
                             60000);
    QVERIFY(done.isEmpty());
    panel.findChild<QPushButton*>(QStringLiteral("cancel"))->click();
    hold.complete();
    QVERIFY(done.wait(60000));
    expect_cancelled(done, panel, id, h);
  }

  // A real long filter, no gate: a 3D median on a 64 x 256 x 256 stack runs slab by slab
  // (gpix::run_in_slabs); Cancel pressed once the bar has moved stops it before the end,
  // adds nothing and leaves the input as it was.
  void cancel_stops_a_long_filter() {
    ui::FilterPanel panel(host(), workflow_.get());
    const HostArray h = random_host<float>(Shape{64, 256, 256});
    const int id = add(host(), QStringLiteral("stack"), h);
    QVERIFY(panel.select_filter(QStringLiteral("median_box")));
    QVERIFY(panel.form()->set_param(QStringLiteral("radius_x"), 2.0));
    QVERIFY(panel.form()->set_param(QStringLiteral("radius_y"), 2.0));
    QVERIFY(panel.form()->set_param(QStringLiteral("radius_z"), 1.0));
    auto* bar = panel.findChild<QProgressBar*>();
    QVERIFY(bar);
    QStringList phases;
    connect(&host(), &ui::Workspace::task_phase, this,
            [&phases](const QString& t) { phases << t; });
    const std::uint64_t held = memory_report(host().device()).gpix.bytes_in_use;
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QTRY_VERIFY_WITH_TIMEOUT(bar->value() > 0 || !done.isEmpty(), 180000);
    QVERIFY2(done.isEmpty(), "the filter ended before its progress moved");
    const int at = bar->value();
    QVERIFY(at < 1000);
    // It says which slab it is in (the panel and the host's status).
    QTRY_VERIFY_WITH_TIMEOUT(panel.phase_text().contains(QStringLiteral("slab ")), 30000);
    QVERIFY2(panel.phase_text().startsWith(QStringLiteral("median_box: ")),
             qPrintable(panel.phase_text()));
    auto* cancel = panel.findChild<QPushButton*>(QStringLiteral("cancel"));
    cancel->click();
    QVERIFY2(panel.phase_text().contains(QStringLiteral("Cancelling")),
             qPrintable(panel.phase_text()));
    // Pressed once: the button says it was taken, and the status bar says what happens.
    QVERIFY(!cancel->isEnabled());
    QTRY_VERIFY_WITH_TIMEOUT(
        !phases.isEmpty() && phases.last().contains(QStringLiteral("median_box: cancelling")),
        10000);
    QVERIFY(done.wait(180000));
    // No later phase took the status bar back to "slab k of n".
    QVERIFY2(phases.last().contains(QStringLiteral("cancelling")),
             qPrintable(phases.join(QStringLiteral(" | "))));
    QVERIFY2(phases.filter(QStringLiteral("median_box: slab 1 of ")).size() == 1,
             qPrintable(phases.join(QStringLiteral(" | "))));
    QVERIFY(panel.phase_text().isEmpty());
    // What the run held on the device (its output, the slabs) is free again.
    QTRY_COMPARE_WITH_TIMEOUT(memory_report(host().device()).gpix.bytes_in_use, held, 10000);
    QCOMPARE(done.first().first().toBool(), false);
    QVERIFY2(panel.error_text().contains(QStringLiteral("ancel")), qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids().size(), 1);
    QVERIFY(same_bytes(host().layer(id).array.pull(), h));
    QVERIFY(workflow_->steps().isEmpty());
  }

  void undo_redo() {
    ui::FilterPanel panel(host(), workflow_.get());
    const HostArray h = random_host<std::uint16_t>(Shape{21, 19});
    const int id = add(host(), QStringLiteral("img"), h);
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QVERIFY(panel.form()->set_param(QStringLiteral("sigma_x"), 1.5));
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(60000));
    QVERIFY(done.first().first().toBool());
    QCOMPARE(host().layer_ids().size(), 2);
    const HostArray result = host().layer(host().layer_ids().last()).array.pull();
    QCOMPARE(workflow_->steps().size(), 1);
    QUndoStack* undo = host().undo_stack();
    QVERIFY(undo->canUndo());
    undo->undo();
    QCOMPARE(host().layer_ids(), QList<int>{id});
    QVERIFY(workflow_->steps().isEmpty());
    undo->redo();
    QCOMPARE(host().layer_ids().size(), 2);
    const Layer again = host().layer(host().layer_ids().last());
    const QString name = QStringLiteral("img · gaussian_blur sigma_x=1.5 sigma_y=2");
    QCOMPARE(again.name, name);
    QVERIFY(same_bytes(again.array.pull(), result));
    QCOMPARE(workflow_->steps().size(), 1);
    QCOMPARE(workflow_->steps().first().output, name);
    QVERIFY(same_bytes(host().layer(id).array.pull(), h));
  }

  void failing_filter_shows_error_and_keeps_input() {
    ui::FilterPanel panel(host(), workflow_.get());
    const HostArray h = random_host<float>(Shape{9, 14});
    const int id = add(host(), QStringLiteral("img"), h);
    // A bad parameter combination: clip's minimum above its maximum.
    QVERIFY(panel.select_filter(QStringLiteral("clip")));
    QVERIFY(panel.form()->set_param(QStringLiteral("minimum"), 10.0));
    QVERIFY(panel.form()->set_param(QStringLiteral("maximum"), 5.0));
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(60000));
    QCOMPARE(done.first().first().toBool(), false);
    QVERIFY2(panel.error_text().contains(QStringLiteral("minimum 10 is above maximum 5")),
             qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids(), QList<int>{id});
    QVERIFY(same_bytes(host().layer(id).array.pull(), h));
    // Inputs of different shapes for a two-input filter.
    const int other = add(host(), QStringLiteral("other"), random_host<float>(Shape{9, 15}));
    QVERIFY(panel.select_filter(QStringLiteral("add_images")));
    panel.form()->set_input(0, id);
    panel.form()->set_input(1, other);
    done.clear();
    panel.run();
    QVERIFY(done.wait(60000));
    QCOMPARE(done.first().first().toBool(), false);
    QVERIFY(!panel.error_text().isEmpty());
    QCOMPARE(host().layer_ids().size(), 2);
    QVERIFY(same_bytes(host().layer(id).array.pull(), h));
    // A good run clears the error.
    QVERIFY(panel.select_filter(QStringLiteral("invert")));
    done.clear();
    panel.run();
    QVERIFY(done.wait(60000));
    QVERIFY(done.first().first().toBool());
    QVERIFY(panel.error_text().isEmpty());
  }

  // A filter too large for the device (a memory limit that holds the image but not the
  // filter's output and intermediates): the panel shows gpix's out-of-memory error, the image
  // stays, and the same filter runs once the memory is there.
  void filter_too_large_for_the_device() {
    ui::FilterPanel panel(host(), workflow_.get());
    const HostArray h = random_host<float>(Shape{24, 256, 256});  // 6 MiB
    const int id = add(host(), QStringLiteral("stack"), h);
    const Device dev = host().device();
    trim(dev);  // the limit counts the cache too
    set_memory_limit(dev, memory_stats(dev).bytes_in_use + h.bytes() / 2);
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(60000));
    set_memory_limit(dev, 0);
    QCOMPARE(done.first().first().toBool(), false);
    QVERIFY2(panel.error_text().contains(QStringLiteral("memory")), qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids(), QList<int>{id});
    QVERIFY(same_bytes(host().layer(id).array.pull(), h));
    done.clear();
    panel.run();
    QVERIFY(done.wait(60000));
    QVERIFY2(done.first().first().toBool(), qPrintable(panel.error_text()));
    QCOMPARE(host().layer_ids().size(), 2);
  }

  void preview_is_debounced_and_latest_wins() {
    ui::FilterPanel panel(host(), workflow_.get());
    panel.set_debounce(50);
    const HostArray h = random_host<float>(Shape{40, 44});
    const int id = add(host(), QStringLiteral("img"), h);
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QSignalSpy updated(&panel, &ui::FilterPanel::preview_updated);
    panel.set_preview(true);
    QVERIFY(updated.wait(60000));
    QVERIFY(panel.preview_layer() >= 0);
    QCOMPARE(host().current_layer(), id);  // the preview does not steal the selection
    // Three quick changes: one debounced run with the last value.
    updated.clear();
    for (double s : {0.5, 1.0, 2.5}) panel.form()->set_param(QStringLiteral("sigma_x"), s);
    QVERIFY(updated.wait(60000));
    QTest::qWait(300);
    QCOMPARE(updated.size(), 1);
    const Array in = host().layer(id).array;
    const Array want = run("gaussian_blur", in, panel.form()->params()).array;
    QVERIFY(same_bytes(host().layer(panel.preview_layer()).array.pull(), want.pull()));
    QCOMPARE(host().layer_ids().size(), 2);
    // The input picker does not offer the preview layer.
    QCOMPARE(panel.form()->input_picker(0)->findData(panel.preview_layer()), -1);
    // Turning preview off removes its layer; nothing was recorded.
    panel.set_preview(false);
    QCOMPARE(host().layer_ids(), QList<int>{id});
    QVERIFY(workflow_->steps().isEmpty());
  }

  // The first input follows the layer list's selection (selecting a layer, then Run, filters
  // that layer); a second input stays where the user put it; the panel's own result and
  // preview, which are selected when added, do not move it (Run again tries other parameters
  // on the same input; a live preview does not start over on the result).
  // The result of a channel shown with the others (additive, or a hyperstack's channel) is
  // shown as that channel, in its colour map and added; a plain layer's result stays gray and
  // opaque, a label result opaque in the labels map.
  void channel_results_show_as_their_channel() {
    ui::FilterPanel panel(host(), workflow_.get());
    const int plain = add(host(), QStringLiteral("plain"), random_host<float>(Shape{9, 11}));
    const int c2 = add(host(), QStringLiteral("h [C2]"), random_host<float>(Shape{9, 11}));
    Layer l = host().layer(c2);
    l.additive = true;
    l.colormap = QStringLiteral("magenta");
    host().replace_layer(c2, l);
    const int c1 = add(host(), QStringLiteral("h [C1]"), random_host<float>(Shape{9, 11}));
    l = host().layer(c1);
    l.colormap = QStringLiteral("green");
    l.metadata.insert(QStringLiteral("channel"), 1);
    host().replace_layer(c1, l);
    int made = -1;  // the last result's id
    const auto result_of = [&](int input, const QString& filter) {
      host().set_current_layer(input);
      if (!panel.select_filter(filter)) return Layer{};
      const QList<int> before = host().layer_ids();
      QSignalSpy finished(&panel, &ui::FilterPanel::finished);
      panel.run();
      if (!wait_finished(panel, finished)) return Layer{};
      for (int id : host().layer_ids()) {
        if (!before.contains(id)) made = id;
      }
      return host().layer(made);
    };
    const auto index = [&](int id) { return int(host().layer_ids().indexOf(id)); };
    // Shown as the channel and in its place: just above it (on top of every layer, additive, it
    // added to other images' layers above the hyperstack), the channel hidden (else counted
    // twice); Undo brings the channel back, Redo puts the result in its place again.
    Layer r = result_of(c2, QStringLiteral("gaussian_blur"));
    QVERIFY(r.valid());
    QVERIFY(r.additive);
    QCOMPARE(r.colormap, QStringLiteral("magenta"));
    const int r2 = made;
    QCOMPARE(index(r2), index(c2) + 1);
    QVERIFY(index(r2) < index(c1));
    QVERIFY(!host().layer(c2).visible);
    QVERIFY(host().layer(c1).visible);
    QVERIFY2(host().last_status().contains(QStringLiteral("which is hidden (Edit > Undo")),
             qPrintable(host().last_status()));
    host().undo_stack()->undo();
    QVERIFY(!host().has_layer(r2));
    QVERIFY(host().layer(c2).visible);
    host().undo_stack()->redo();
    QCOMPARE(index(r2), index(c2) + 1);
    QVERIFY(!host().layer(c2).visible);
    // Again on c2, hidden already: in its place, and the status promises no Undo of a hiding
    // that this run did not do.
    r = result_of(c2, QStringLiteral("mean_box"));
    QVERIFY(r.valid());
    QCOMPARE(index(made), index(c2) + 1);
    QVERIFY2(!host().last_status().contains(QStringLiteral("Edit > Undo")),
             qPrintable(host().last_status()));
    host().undo_stack()->undo();
    QVERIFY(!host().has_layer(made));
    QVERIFY(!host().layer(c2).visible);
    r = result_of(c1, QStringLiteral("mean_box"));
    QVERIFY(r.valid());
    QVERIFY(r.additive);
    QCOMPARE(r.colormap, QStringLiteral("green"));
    QCOMPARE(index(made), index(c1) + 1);
    QVERIFY(!host().layer(c1).visible);
    // Other results: on top, their input left as it was.
    r = result_of(plain, QStringLiteral("gaussian_blur"));
    QVERIFY(r.valid());
    QVERIFY(!r.additive);
    QCOMPARE(r.colormap, QStringLiteral("gray"));
    QCOMPARE(index(made), int(host().layer_ids().size()) - 1);
    QVERIFY(host().layer(plain).visible);
    Layer shown = host().layer(c2);
    shown.visible = true;
    host().replace_layer(c2, shown);
    r = result_of(c2, QStringLiteral("voronoi_otsu_labeling"));
    QVERIFY(r.valid());
    QVERIFY(!r.additive);
    QCOMPARE(r.colormap, QStringLiteral("labels"));
    QCOMPARE(index(made), int(host().layer_ids().size()) - 1);
    QVERIFY(host().layer(c2).visible);
  }

  void first_input_follows_the_current_layer() {
    ui::FilterPanel panel(host(), workflow_.get());
    const int a = add(host(), QStringLiteral("a"), random_host<float>(Shape{21, 23}));
    const int b = add(host(), QStringLiteral("b"), random_host<float>(Shape{21, 23}));
    QVERIFY(panel.select_filter(QStringLiteral("add_images")));
    QComboBox* first = panel.form()->input_picker(0);
    QComboBox* second = panel.form()->input_picker(1);
    QVERIFY(first && second);
    QCOMPARE(first->currentData().toInt(), b);  // the current layer when the form was made
    second->setCurrentIndex(second->findData(b));
    host().set_current_layer(a);
    QCOMPARE(first->currentData().toInt(), a);
    QCOMPARE(second->currentData().toInt(), b);
    host().set_current_layer(b);
    QCOMPARE(first->currentData().toInt(), b);
    host().set_current_layer(a);
    QSignalSpy finished(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(wait_finished(panel, finished));
    const QList<int> ids = host().layer_ids();
    QCOMPARE(ids.size(), 3);
    const int result = ids.back();
    const Array inputs[] = {host().layer(a).array, host().layer(b).array};
    QVERIFY(same_bytes(host().layer(result).array.pull(), run("add_images", inputs).array.pull()));
    QCOMPARE(host().current_layer(), result);
    QCOMPARE(first->currentData().toInt(), a);
    QCOMPARE(second->currentData().toInt(), b);
    host().set_current_layer(b);  // the user selects another layer, then the result
    host().set_current_layer(result);
    QCOMPARE(first->currentData().toInt(), result);
    // A preview is added and selected for a moment: the input stays where the user put it
    // (here not the selected layer, so that following the selection back would show).
    host().set_current_layer(a);
    first->setCurrentIndex(first->findData(b));
    panel.set_debounce(0);
    QSignalSpy updated(&panel, &ui::FilterPanel::preview_updated);
    panel.set_preview(true);
    QVERIFY(updated.wait(60000));
    QCOMPARE(host().current_layer(), a);
    QCOMPARE(first->currentData().toInt(), b);
    // One preview only: adding it did not change the input and start another.
    QTest::qWait(300);
    QCOMPARE(updated.size(), 1);
    panel.set_preview(false);
  }

  // A layer that is one channel of a file (a hyperstack's) says which, and the file's colour
  // where no colour map has it; other plain layers show no channels row.
  void layer_card_says_which_channel() {
    ui::LayerCard card(host());
    Layer l;
    l.name = QStringLiteral("h [C3]");
    l.host = random_host<std::uint16_t>(Shape{3, 5, 7});
    l.metadata.insert(QStringLiteral("channels"), QStringLiteral("channel 3 of 4 of a hyperstack"));
    l.metadata.insert(QStringLiteral("colour"),
                      QStringLiteral("#ff8000 in the file (ImageJ's LUT): no colour map is "
                                     "black to it, shown in gray"));
    host().set_current_layer(host().add_layer(l));
    card.refresh();
    QVERIFY2(card.value(QStringLiteral("channels")).contains(QStringLiteral("channel 3 of 4")) &&
                 card.value(QStringLiteral("channels")).contains(QStringLiteral("#ff8000")),
             qPrintable(card.value(QStringLiteral("channels"))));
    Layer plain;
    plain.name = QStringLiteral("plain");
    plain.host = random_host<std::uint16_t>(Shape{5, 7});
    host().set_current_layer(host().add_layer(plain));
    card.refresh();
    QVERIFY(card.value(QStringLiteral("channels")).isEmpty());
  }

  // The wheel over a form field without the focus leaves it alone (it scrolls the panel):
  // scrolling through a long form switched the input layer and re-ran the preview.
  void wheel_scrolls_past_form_fields() {
    ui::FilterPanel panel(host(), workflow_.get());
    add(host(), QStringLiteral("a"), random_host<float>(Shape{21, 23}));
    const int b = add(host(), QStringLiteral("b"), random_host<float>(Shape{21, 23}));
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QComboBox* input = panel.form()->input_picker(0);
    auto* sigma = qobject_cast<QDoubleSpinBox*>(panel.form()->editor(QStringLiteral("sigma_x")));
    QVERIFY(input && sigma);
    QCOMPARE(input->currentData().toInt(), b);
    const double before = sigma->value();
    for (QWidget* w : {static_cast<QWidget*>(input), static_cast<QWidget*>(sigma)}) {
      QVERIFY(!w->hasFocus());
      QCOMPARE(w->focusPolicy(), Qt::StrongFocus);
      for (const int delta : {-120, 120, -120}) {
        const QPointF at(w->width() / 2.0, w->height() / 2.0);
        QWheelEvent wheel(at, w->mapToGlobal(at), QPoint(), QPoint(0, delta), Qt::NoButton,
                          Qt::NoModifier, Qt::NoScrollPhase, false);
        QApplication::sendEvent(w, &wheel);
      }
    }
    QCOMPARE(input->currentData().toInt(), b);
    QCOMPARE(sigma->value(), before);
  }

  // The Workflow dock's Undo and Redo keep their short texts (the step goes to the tooltip):
  // "Undo Add <a long layer name>" widened the dock until Re-run went behind a scroll bar.
  void workflow_undo_buttons_stay_short() {
    ui::WorkflowPanel panel(host(), *workflow_);
    auto* undo = panel.findChild<QToolButton*>(QStringLiteral("workflow_undo"));
    auto* redo = panel.findChild<QToolButton*>(QStringLiteral("workflow_redo"));
    QVERIFY(undo && redo);
    QVERIFY(!undo->isEnabled() && !redo->isEnabled());
    const QString long_name =
        QStringLiteral("stack · gaussian_blur sigma_xy=2 sigma_z=3 · median_box radius=4");
    Layer l;
    l.name = long_name;
    l.host = random_host<float>(Shape{4, 5});
    host().undo_stack()->push(new ui::AddLayerCommand(host(), l));
    QCOMPARE(undo->text(), QStringLiteral("Undo"));
    QVERIFY(undo->isEnabled());
    QVERIFY2(undo->toolTip().contains(long_name), qPrintable(undo->toolTip()));
    const int before = panel.sizeHint().width();
    undo->click();
    QCOMPARE(host().layer_ids().size(), qsizetype(0));
    QVERIFY(redo->isEnabled() && !undo->isEnabled());
    QCOMPARE(redo->text(), QStringLiteral("Redo"));
    QVERIFY(redo->toolTip().contains(long_name));
    redo->click();
    QCOMPARE(host().layer_ids().size(), qsizetype(1));
    QCOMPARE(panel.sizeHint().width(), before);
  }

  void workflow_export_and_rerun() {
    ui::FilterPanel panel(host(), workflow_.get());
    const int a = add(host(), QStringLiteral("cells 1"), random_host<float>(Shape{12, 16}));
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QVERIFY(panel.form()->set_param(QStringLiteral("sigma_y"), 2.0));
    QSignalSpy done(&panel, &ui::FilterPanel::finished);
    panel.run();
    QVERIFY(done.wait(60000));
    QVERIFY(panel.select_filter(QStringLiteral("multiply_scalar")));
    const QString blurred = QStringLiteral("cells 1 · gaussian_blur sigma=2");
    QVERIFY(host().find_layer(blurred) >= 0);
    panel.form()->set_input(0, host().find_layer(blurred));
    done.clear();
    panel.run();
    QVERIFY(done.wait(60000));
    QCOMPARE(workflow_->steps().size(), 2);
    QCOMPARE(workflow_->sources(), QStringList{QStringLiteral("cells 1")});
    const QString sh = workflow_->to_cli_script();
    // The `gpix run FILTER IN... OUT --param value` form the CLI takes (test_io_cli runs it).
    const QString var = QStringLiteral("cells_1_gaussian_blur_sigma_2");
    QVERIFY2(
        sh.contains(QStringLiteral("\"$GPIX\" run gaussian_blur \"$cells_1\" \"$%1\" --").arg(var)),
        qPrintable(sh));
    QVERIFY2(sh.contains(QStringLiteral("%1='%1.nrrd'").arg(var)), qPrintable(sh));
    QVERIFY2(sh.contains(QStringLiteral("--sigma_y '2'")), qPrintable(sh));
    QVERIFY2(sh.contains(QStringLiteral("\"$GPIX\" run multiply_scalar \"$%1\"").arg(var)),
             qPrintable(sh));
    const QString cpp = workflow_->to_cpp();
    QVERIFY2(cpp.contains(QStringLiteral("gpix::Array workflow(const gpix::Array& cells_1)")),
             qPrintable(cpp));
    QVERIFY2(cpp.contains(QStringLiteral("gpix::run(\"gaussian_blur\", cells_1, {")),
             qPrintable(cpp));
    QVERIFY2(cpp.contains(QStringLiteral("{\"sigma_y\", 2.0}")), qPrintable(cpp));
    QVERIFY2(cpp.contains(QStringLiteral("return %1_multiply_scalar_factor_2;").arg(var)),
             qPrintable(cpp));
    // Re-run on another image gives what the two calls give directly.
    const HostArray other = random_host<float>(Shape{7, 9});
    const int b = add(host(), QStringLiteral("other"), other);
    const QList<int> made = workflow_->rerun(host(), b);
    QCOMPARE(made.size(), 2);
    const auto st = workflow_->steps();
    const Array ob = host().layer(b).array;
    const Array r1 = run("gaussian_blur", ob, st[0].params).array;
    const Array r2 = run("multiply_scalar", r1, st[1].params).array;
    QVERIFY(same_bytes(host().layer(made.last()).array.pull(), r2.pull()));
    // On a channel shown additively, the re-run's results show as that channel, as the
    // Filters panel's do (channel_results_show_as_their_channel).
    Layer c = host().layer(b);
    c.additive = true;
    c.colormap = QStringLiteral("cyan");
    host().replace_layer(b, c);
    const QList<int> again = workflow_->rerun(host(), b);
    QVERIFY(!again.isEmpty());
    QVERIFY(host().layer(again.first()).additive);  // the blur of b
    QCOMPARE(host().layer(again.first()).colormap, QStringLiteral("cyan"));
    // In b's place (below the results that were on top), b hidden; each step's result in its
    // input's place (the last one of a chain shows).
    const QList<int> order = host().layer_ids();
    QCOMPARE(again.size(), 4);  // the workflow's four steps, two chains from b
    for (int id : again) QVERIFY(order.indexOf(id) < order.indexOf(made.first()));
    QCOMPARE(order.indexOf(again[1]), order.indexOf(again[0]) + 1);
    QVERIFY(!host().layer(b).visible);
    QVERIFY(!host().layer(again[0]).visible);
    QVERIFY(host().layer(again[1]).visible);
    host().undo_stack()->undo();  // one step: this re-run only
    QVERIFY(host().layer(b).visible);
    QCOMPARE(workflow_->steps().size(), 4);
    c.additive = false;
    c.colormap = QStringLiteral("gray");
    host().replace_layer(b, c);
    // The re-run is recorded: two more steps on the new layers, with the names they got.
    QCOMPARE(st.size(), 4);
    QCOMPARE(st[2].operation, QStringLiteral("gaussian_blur"));
    QCOMPARE(st[2].inputs, QStringList{QStringLiteral("other")});
    QCOMPARE(st[2].params, st[0].params);
    QCOMPARE(st[2].output, QStringLiteral("other · gaussian_blur sigma=2"));
    QCOMPARE(st[3].inputs, QStringList{st[2].output});
    QCOMPARE(host().layer(made.first()).name, st[2].output);
    QCOMPARE(host().layer(made.last()).name, st[3].output);
    QVERIFY(workflow_->to_cli_script().contains(QStringLiteral("\"$other\"")));
    // One undo step takes the whole re-run back, layers and steps.
    host().undo_stack()->undo();
    QCOMPARE(workflow_->steps().size(), 2);
    QVERIFY(!host().has_layer(made.first()) && !host().has_layer(made.last()));
    host().undo_stack()->redo();
    QCOMPARE(workflow_->steps().size(), 4);
    QVERIFY(host().has_layer(made.first()) && host().has_layer(made.last()));
    Q_UNUSED(a);
  }

  void result_names_say_what_made_them() {
    using ui::result_name;
    const auto p = [](std::initializer_list<std::pair<const char*, ParamValue>> l) {
      Params out;
      for (const auto& [k, v] : l) out.emplace(k, v);
      return out;
    };
    const Params blur = p({{"sigma_x", 2.0}, {"sigma_y", 2.0}, {"sigma_z", 0.0}});
    QCOMPARE(result_name("gaussian_blur", blur, {"cells"}, 2),
             QStringLiteral("cells · gaussian_blur sigma=2"));
    QCOMPARE(result_name("gaussian_blur", blur, {"cells"}, 3),
             QStringLiteral("cells · gaussian_blur sigma_xy=2 sigma_z=0"));
    QCOMPARE(result_name("median_box", p({{"radius_x", 2.0}, {"radius_y", 2.0}, {"radius_z", 2.0}}),
                         {"stack"}, 3),
             QStringLiteral("stack · median_box radius=2"));
    QCOMPARE(result_name("absolute", {}, {"a"}, 2), QStringLiteral("a · absolute"));
    QCOMPARE(result_name("add_images", {}, {"a", "b"}, 2), QStringLiteral("a · add_images"));
    // Many parameters: only those that differ from their defaults.
    QCOMPARE(result_name("affine_transform", p({{"m03", 5.0}}), {"img"}, 2),
             QStringLiteral("img · affine_transform m03=5"));
    QCOMPARE(result_name("convert", p({{"dtype", std::string("uint8")}}), {"x"}, 3),
             QStringLiteral("x · convert dtype=uint8"));
    // Long chains keep their newest part.
    const QString long_name = result_name("invert", {}, {QString(200, QLatin1Char('a'))}, 2);
    QVERIFY(long_name.size() <= 90);
    QVERIFY(long_name.endsWith(QStringLiteral(" · invert")));
  }

  void parameters_are_kept_per_filter() {
    ui::FilterPanel panel(host(), workflow_.get());
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QVERIFY(panel.form()->set_param(QStringLiteral("sigma_x"), 3.5));
    QVERIFY(panel.select_filter(QStringLiteral("median_box")));
    QCOMPARE(std::get<double>(panel.form()->params().at("radius_x")), 1.0);  // its default
    QVERIFY(panel.form()->set_param(QStringLiteral("radius_x"), 4.0));
    QVERIFY(panel.select_filter(QStringLiteral("threshold")));
    QVERIFY(panel.form()->set_param(QStringLiteral("value"), -7.25));
    QVERIFY(panel.select_filter(QStringLiteral("gaussian_blur")));
    QCOMPARE(std::get<double>(panel.form()->params().at("sigma_x")), 3.5);
    QCOMPARE(std::get<double>(panel.form()->params().at("sigma_y")), 2.0);
    QVERIFY(panel.select_filter(QStringLiteral("median_box")));
    QCOMPARE(std::get<double>(panel.form()->params().at("radius_x")), 4.0);
    QVERIFY(panel.select_filter(QStringLiteral("threshold")));
    QCOMPARE(std::get<double>(panel.form()->params().at("value")), -7.25);
  }

  // Every change to layers is one undo step; undoing all of it and redoing all of it gives
  // the same layers (ids, order, names, display), and Ctrl+Z after Del brings the removed
  // layer back (it used to undo the last filter result instead).
  void every_layer_action_undoes() {
    ui::LayerList list(host());
    QUndoStack* undo = host().undo_stack();
    const HostArray ha = random_host<float>(Shape{8, 9});
    const int a = add(host(), QStringLiteral("a"), ha);
    Layer r;
    r.name = QStringLiteral("a · invert");
    r.array = run("invert", host().layer(a).array).array;
    auto* cmd = new ui::AddLayerCommand(
        host(), r, workflow_.get(),
        ui::WorkflowStep{QStringLiteral("invert"), {QStringLiteral("a")}, {}, {}});
    undo->push(cmd);
    const int b = cmd->layer_id();
    QCOMPARE(host().layer_ids(), (QList<int>{a, b}));

    // Del on 'a', then Ctrl+Z.
    host().set_current_layer(a);
    list.remove_current();
    QCOMPARE(host().layer_ids(), QList<int>{b});
    undo->undo();
    QCOMPARE(host().layer_ids(), (QList<int>{a, b}));  // same id, same place
    QVERIFY(same_bytes(host().layer(a).array.pull(), ha));
    QCOMPARE(workflow_->steps().size(), 1);  // the result and its step are still there

    // Rename in place.
    host().set_current_layer(a);
    QListWidgetItem* item = nullptr;
    for (int i = 0; i < list.list()->count(); ++i) {
      if (list.list()->item(i)->data(Qt::UserRole).toInt() == a) item = list.list()->item(i);
    }
    QVERIFY(item);
    QVERIFY(item->flags() & Qt::ItemIsEditable);
    item->setText(QStringLiteral("cells"));
    QTRY_COMPARE(host().layer(a).name, QStringLiteral("cells"));
    // Reorder.
    host().set_current_layer(a);
    for (QPushButton* btn : list.findChildren<QPushButton*>()) {
      if (btn->text() == QStringLiteral("Up")) btn->click();
    }
    QCOMPARE(host().layer_ids(), (QList<int>{b, a}));
    // Display: an opacity drag is one step; colour map; visibility; contrast.
    const int before = undo->count();
    auto* opacity = list.findChild<QSlider*>(QStringLiteral("opacity"));
    for (int v : {90, 70, 50}) opacity->setValue(v);
    QCOMPARE(undo->count(), before + 1);
    QCOMPARE(host().layer(a).opacity, 0.5);
    list.findChild<QComboBox*>(QStringLiteral("colormap"))->setCurrentText(QStringLiteral("hot"));
    QCOMPARE(undo->count(), before + 2);
    list.list()
        ->findItems(QStringLiteral("cells"), Qt::MatchExactly)
        .first()
        ->setCheckState(Qt::Unchecked);
    QTRY_COMPARE(undo->count(), before + 3);
    QCOMPARE(host().layer(a).visible, false);
    list.findChild<QDoubleSpinBox*>(QStringLiteral("contrast_high"))->setValue(12.5);
    QCOMPARE(host().layer(a).contrast_max, 12.5);
    undo->undo();
    QCOMPARE(host().layer(a).contrast_max, 0.0);
    undo->undo();
    QCOMPARE(host().layer(a).visible, true);
    undo->undo();
    QCOMPARE(host().layer(a).colormap, QStringLiteral("gray"));
    undo->undo();
    QCOMPARE(host().layer(a).opacity, 1.0);
    undo->redo();
    undo->redo();
    undo->redo();
    QCOMPARE(host().layer(a).opacity, 0.5);
    QCOMPARE(host().layer(a).colormap, QStringLiteral("hot"));
    QCOMPARE(host().layer(a).visible, false);
    // A display change on the result, then everything undone and redone.
    host().set_current_layer(b);
    list.findChild<QComboBox*>(QStringLiteral("colormap"))->setCurrentText(QStringLiteral("hot"));
    const auto snapshot = [&] {
      QStringList out;
      for (int id : host().layer_ids()) {
        const Layer l = host().layer(id);
        out << QStringLiteral("%1:%2:%3:%4:%5")
                   .arg(id)
                   .arg(l.name, l.colormap)
                   .arg(l.opacity)
                   .arg(l.visible);
      }
      return out;
    };
    const QStringList end = snapshot();
    undo->setIndex(0);
    QCOMPARE(host().layer_ids(), QList<int>{a});
    QCOMPARE(host().layer(a).name, QStringLiteral("a"));
    QCOMPARE(host().layer(a).opacity, 1.0);
    QVERIFY(workflow_->steps().isEmpty());
    undo->setIndex(undo->count());
    QCOMPARE(snapshot(), end);
    QCOMPARE(workflow_->steps().size(), 1);
    QVERIFY(same_bytes(host().layer(b).array.pull(), r.array.pull()));
  }

  void filter_help_covers_every_filter() {
    QVERIFY2(ui::filter_help_orphans().isEmpty(),
             qPrintable(ui::filter_help_orphans().join(QStringLiteral(", "))));
    int with_user_text = 0;
    for (const FilterInfo& f : filters()) {
      const QString html = ui::filter_help_html(f);
      QVERIFY2(!ui::filter_summary(f).isEmpty(), f.name.c_str());
      QVERIFY2(html.contains(QString::fromStdString(f.doc).toHtmlEscaped()), f.name.c_str());
      for (const ParamSpec& p : f.params) {
        QVERIFY2(html.contains(QStringLiteral("<b>%1</b>").arg(QString::fromStdString(p.name))),
                 (f.name + " " + p.name).c_str());
        if (!p.unit.empty())
          QVERIFY2(html.contains(QString::fromStdString(p.unit)), (f.name + " " + p.name).c_str());
      }
      with_user_text += ui::filter_when(f).isEmpty() ? 0 : 1;
    }
    QCOMPARE(with_user_text, int(filters().size()));
    QVERIFY(ui::quick_start_html().contains(QStringLiteral("Ctrl+Z")));
  }

  // The device panel shows every line whole at a narrow width: labels wrap, none asks for
  // more width than the dock has, and each has its whole text as a tooltip.
  void device_panel_text_is_whole() {
    ui::DevicePanel panel(host());
    panel.resize(230, 600);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    auto* scroll = panel.findChild<QScrollArea*>();
    QVERIFY(scroll);
    QTRY_VERIFY(scroll->widget()->width() <= scroll->viewport()->width());
    int checked = 0;
    for (QLabel* l : scroll->widget()->findChildren<QLabel*>()) {
      if (l->text().isEmpty()) continue;
      QVERIFY2(l->wordWrap(), qPrintable(l->text()));
      QVERIFY2(l->geometry().right() <= scroll->viewport()->width(), qPrintable(l->text()));
      QVERIFY2(l->height() >= l->heightForWidth(l->width()) - 1, qPrintable(l->text()));
      ++checked;
    }
    QVERIFY(checked >= 3 * panel.card_count());
  }

  void drag_layer_out_as_file() {
    ui::LayerList list(host());
    const HostArray h16 = random_host<std::uint16_t>(Shape{10, 12});
    const HostArray f3 = random_host<float>(Shape{2, 3, 4});
    const int a = add(host(), QStringLiteral("two d"), h16);
    const int b = add(host(), QStringLiteral("stack"), f3);
    const HostArray u32 = random_host<std::uint32_t>(Shape{7, 9});
    const int c = add(host(), QStringLiteral("labels"), u32);
    QCOMPARE(list.list()->count(), 3);
    QCOMPARE(list.list()->item(0)->text(), QStringLiteral("labels"));  // top first
#if GPIX_TEST_HAVE_IO
    // gpix_io's writer is registered last and preferred: TIFF keeps every dtype, stacks,
    // spacing.
    const QString s2 = QStringLiteral(".tif"), s3 = QStringLiteral(".tif");
#else
    const QString s2 = QStringLiteral(".png"), s3 = QStringLiteral(".raw");
#endif
    for (auto [id, want, suffix] :
         {std::tuple{a, h16, s2}, std::tuple{b, f3, s3}, std::tuple{c, u32, s3}}) {
      QString why;
      // The file is written in the background before a drag can carry it.
      QSignalSpy prepared(list.drag_files(), &ui::DragFiles::prepared);
      QVERIFY(!list.mime_for(id, &why));
      QVERIFY(list.drag_files()->preparing(id));
      QVERIFY(prepared.wait(30000));
      std::unique_ptr<QMimeData> mime(list.mime_for(id, &why));
      QVERIFY2(mime, qPrintable(why));
      QCOMPARE(mime->urls().size(), 1);
      const QString path = mime->urls().first().toLocalFile();
      QVERIFY2(path.endsWith(suffix), qPrintable(path));
      const QList<int> ids = host().open_file(path);
      QCOMPARE(ids.size(), 1);
      QVERIFY(same_bytes(host().host_data(ids.first()), want));
    }
  }

  void layer_list_controls_edit_the_layer() {
    ui::LayerList list(host());
    const int a = add(host(), QStringLiteral("a"), random_host<float>(Shape{8, 8}));
    list.findChild<QComboBox*>(QStringLiteral("colormap"))->setCurrentText(QStringLiteral("hot"));
    QCOMPARE(host().layer(a).colormap, QStringLiteral("hot"));
    list.list()->item(0)->setCheckState(Qt::Unchecked);
    QTRY_COMPARE(host().layer(a).visible, false);  // applied from the event loop
    list.auto_contrast_current();
    QTRY_VERIFY_WITH_TIMEOUT(host().layer(a).has_contrast(), 30000);  // computed in the background
  }
};

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  TestWidgets t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_widgets.moc"
