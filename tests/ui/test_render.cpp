// gpix::ui's display helpers against core: ui::render gives exactly gpix::render_rgba's pixels
// (every dtype, slices of 3D stacks, host-only arrays, the old "inverted" alias), the colour
// maps are core's tables, and auto_contrast is the percentiles that gpix::stats and
// gpix::histogram give (exact for integer ranges narrower than the bins).
#include <QGuiApplication>
#include <QTest>
#include <algorithm>
#include <cstring>

#include "gpix/filters/reductions.h"
#include "gpix/stats.h"
#include "gpix/ui/render.h"
#include "support/devices.h"
#include "support/random.h"
#include "ui/image_words.h"

using namespace gpix;
using namespace gpix::ui;

namespace {

template <class T>
HostArray random_host(const Shape& s) {
  return HostArray::from(test::random_values<T>(s.elements()), s);
}

using gpix::test::words;

// The pixel of rank floor(p * (n - 1)) among the sorted non-NaN values.
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::size_t(p / 100.0 * double(v.size() - 1))];
}

}  // namespace

class TestRender : public QObject {
  Q_OBJECT
 private slots:
  void colour_maps_are_cores() {
    QStringList names;
    for (const Lut& l : builtin_luts()) names << QString::fromStdString(l.name);
    QCOMPARE(colormap_names(), names);
    // Every name the viewer offered before still resolves (saved layers and workflows).
    for (const char* old : {"gray", "inverted", "hot", "cool", "green", "magenta", "labels"}) {
      QVERIFY2(!colormap(QLatin1String(old)).name.empty(), old);
    }
    QCOMPARE(canonical_colormap(QStringLiteral("inverted")), QStringLiteral("inverted_gray"));
    QCOMPARE(&colormap(QStringLiteral("inverted")), &lut("inverted_gray"));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, colormap(QStringLiteral("nope")));
  }

  void render_is_render_rgba_data() {
    QTest::addColumn<DType>("dtype");
    for (DType t : kAllDTypes) QTest::newRow(name(t).data()) << t;
  }
  void render_is_render_rgba() {
    QFETCH(DType, dtype);
    const Device dev = default_device();
    if (dtype == DType::f64 && !dev.supports_fp64()) QSKIP("no fp64 on the default device");
    visit_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      for (const Shape& s : {Shape{13, 17}, Shape{1, 1}, Shape{7}, Shape{3, 5, 4}}) {
        const HostArray h = random_host<T>(s);
        const Array a = Array::push(h, dev);
        const auto [lo, hi] = auto_contrast(a);
        const int z_last = int(s.depth()) - 1;
        for (const QString& cmap : {QStringLiteral("gray"), QStringLiteral("hot"),
                                    QStringLiteral("inverted"), QStringLiteral("labels")}) {
          const RenderOptions o{z_last, lo, hi, cmap};
          const bool labels = cmap == QLatin1String("labels");
          // Labels of a float array: core renders integer ids, the view converts first.
          if (labels && is_float(dtype)) continue;
          std::size_t pulled = 0;
          const QImage img = render(a, o, &pulled);
          QCOMPARE(img.width(), int(s.width()));
          QCOMPARE(img.height(), int(s.height()));
          QCOMPARE(pulled, s.width() * s.height() * 4);  // one plane of RGBA, nothing else
          const auto want =
              render_rgba(a, lo, hi, colormap(cmap), std::size_t(z_last)).pull_as<std::uint32_t>();
          QCOMPARE(words(img), want);
          // A host-only array (a layer the device could not hold) renders the same way.
          QCOMPARE(words(render(h, dev, o)), want);
        }
      }
    });
  }

  void nan_is_transparent_and_labels() {
    const std::vector<float> v = {1.f, std::nanf(""), 3.f, 0.f};
    const Array a = Array::push(v, Shape{2, 2});
    const QImage img = render(a, {0, 0, 3, QStringLiteral("gray")});
    QCOMPARE(qAlpha(img.pixel(1, 0)), 0);
    QCOMPARE(img.pixel(0, 1), qRgb(255, 255, 255));
    const std::vector<std::uint16_t> labels = {0, 1, 2, 1};
    const QImage li = render(Array::push(labels, Shape{2, 2}), {0, 0, 1, QStringLiteral("labels")});
    QCOMPARE(qAlpha(li.pixel(0, 0)), 0);
    QCOMPARE(li.pixel(1, 0), li.pixel(1, 1));   // same label, same colour
    QVERIFY(li.pixel(1, 0) != li.pixel(0, 1));  // neighbouring labels differ
    // Label ids held as floats show the colours of the same integer ids.
    const std::vector<float> flabels = {0.f, 1.f, 2.f, 1.f};
    const QImage fi =
        render(Array::push(flabels, Shape{2, 2}), {0, 0, 1, QStringLiteral("labels")});
    QCOMPARE(words(fi), words(li));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render(Array::create(Shape{2, 3, 3}, DType::u8),
                                                     {2, 0, 1, QStringLiteral("gray")}));
  }

  // Integer ranges narrower than the bins: exactly the host percentiles of old.
  void auto_contrast_is_exact_for_integers() {
    const Shape s{101, 57};
    auto v = test::random_values<std::uint16_t>(s.elements());
    for (auto& x : v) x = std::uint16_t(x % 3000);
    const Array a = Array::push(v, s);
    std::vector<double> d(v.begin(), v.end());
    const auto [lo, hi] = auto_contrast(a, -1, 1.0, 99.0);
    QCOMPARE(lo, percentile(d, 1.0));
    QCOMPARE(hi, percentile(d, 99.0));
    // A flat image still gets a usable range.
    const auto [flo, fhi] =
        auto_contrast(Array::push(std::vector<std::uint8_t>(9, 7), Shape{3, 3}));
    QCOMPARE(flo, 7.0);
    QCOMPARE(fhi, 8.0);
  }

  // Floats: the edges of gpix::histogram's bins (over gpix::stats' range) around the ranks,
  // so within one bin of the exact percentile; NaN is ignored; one slice of a stack.
  void auto_contrast_matches_stats_and_histogram() {
    const Shape s{3, 41, 37};
    auto v = test::random_values<float>(s.elements());
    v[3] = std::nanf("");
    const Array a = Array::push(v, s);
    for (int slice : {-1, 1}) {
      const std::size_t begin = slice < 0 ? 0 : std::size_t(slice) * 41 * 37;
      const std::size_t end = slice < 0 ? v.size() : begin + 41 * 37;
      std::vector<double> d;
      for (std::size_t i = begin; i < end; ++i) {
        if (!std::isnan(v[i])) d.push_back(v[i]);
      }
      const Array part =
          slice < 0
              ? a
              : Array::push(std::vector<float>(v.begin() + long(begin), v.begin() + long(end)),
                            Shape{41, 37});
      const Stats st = stats(part);
      const Histogram h = histogram(part, kContrastBins, st.min.as_double(), st.max.as_double());
      const auto [lo, hi] = auto_contrast(a, slice);
      const auto edge_index = [&](double x) {
        return std::find(h.edges.begin(), h.edges.end(), x) - h.edges.begin();
      };
      QVERIFY2(edge_index(lo) < long(h.edges.size()), "low limit is a bin edge");
      QVERIFY2(edge_index(hi) < long(h.edges.size()), "high limit is a bin edge");
      const double width = (st.max.as_double() - st.min.as_double()) / kContrastBins;
      QVERIFY(std::abs(lo - percentile(d, 0.5)) <= width * 1.01);
      QVERIFY(std::abs(hi - percentile(d, 99.5)) <= width * 1.01);
      QVERIFY(lo <= percentile(d, 0.5) && hi >= percentile(d, 99.5));
    }
  }
};

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  TestRender t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_render.moc"
