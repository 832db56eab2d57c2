// The catalog itself: every entry well-formed, every category covered by a reference suite,
// params parsed and validated as documented.
#include <QTest>
#include <set>

#include "common.h"

using namespace gpix;

// Category -> the test executable whose rows walk it (tests/filters/harness.h). A category
// with no suite here fails: a new category needs its reference suite.
static const std::map<std::string, std::string> kSuites = {
    {"Arithmetic", "test_filters_arithmetic"},
    {"Types", "test_filters_arithmetic"},
    {"Neighbourhood", "test_filters_neighbourhood"},
    {"Segmentation", "test_filters_segmentation"},
    {"Geometry", "test_filters_geometry"},
    {"Projections", "test_filters_geometry"},
    {"Reductions", "test_filters_geometry"},
};

class TestCatalog : public QObject {
  Q_OBJECT
 private slots:
  void well_formed() {
    const auto& list = filters();
    QVERIFY(!list.empty());
    std::set<std::string> names;
    for (const auto& f : list) {
      const QByteArray n = QByteArray::fromStdString(f.name);
      QVERIFY2(names.insert(f.name).second, n + " is listed twice");
      QVERIFY2(
          kSuites.count(f.category),
          n + " has category '" + QByteArray::fromStdString(f.category) + "' with no test suite");
      QVERIFY2(!f.doc.empty() && !f.output_dtype.empty(), n);
      QVERIFY2(!f.inputs.empty() && !f.dims.empty() && !f.dtypes.empty(), n);
      for (int d : f.dims) QVERIFY2(d >= 1 && d <= 3, n);
      for (const auto& p : f.params) {
        const QByteArray pn = n + "." + QByteArray::fromStdString(p.name);
        QVERIFY2(!p.doc.empty(), pn + " has no doc");
        QVERIFY2(f.param(p.name) == &p, pn);
        if (p.type == ParamType::choice) {
          QVERIFY2(
              std::find(p.choices.begin(), p.choices.end(), p.default_choice) != p.choices.end(),
              pn);
        } else {
          QVERIFY2(p.min <= p.default_value && p.default_value <= p.max,
                   pn + " default outside its range");
        }
      }
      QVERIFY(&filter(f.name) != nullptr);
    }
  }

  void parse_params() {
    const FilterInfo& g = filter("gaussian_blur");
    QCOMPARE(std::get<double>(parse_param(*g.param("sigma_x"), " 2.5 ")), 2.5);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_param(*g.param("sigma_x"), "2.5px"));
    ParamSpec b;
    b.name = "flag";
    b.type = ParamType::boolean;
    QCOMPARE(std::get<double>(parse_param(b, "true")), 1.0);
    QCOMPARE(std::get<double>(parse_param(b, "OFF")), 0.0);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, parse_param(b, "maybe"));
  }

  void validation_before_work() {
    const Device dev = test::test_devices().front();
    const Array a = Array::push(std::vector<float>{1, 2, 3, 4}, Shape{2, 2}, dev);
    try {
      run("gaussian_blur", a, {{"sigma_x", 1000.0}});
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("sigma_x") != std::string::npos && m.find("0 to 100 px") != std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("gaussian_blur", a, {{"sigma_x", std::nan("")}}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run("gaussian_blur", Array(), {}));
    // Cancellation is honoured before any work and reported as Cancelled.
    std::atomic<bool> cancel{true};
    RunOptions o;
    o.cancel = &cancel;
    QVERIFY_THROWS_EXCEPTION(Cancelled, run("gaussian_blur", a, {}, o));
    // Progress reaches 1 on success.
    double last = -1;
    o.cancel = nullptr;
    o.progress = [&](double p) { last = p; };
    run("gaussian_blur", a, {}, o);
    QCOMPARE(last, 1.0);
  }
};

QTEST_APPLESS_MAIN(TestCatalog)
#include "test_catalog.moc"
