// gpix::ui::render and its helpers against plain references on random data: LUT mapping with
// contrast limits for every dtype, slices of 3D stacks, NaN transparency, the label map,
// percentile auto-contrast and the histogram.
#include <QGuiApplication>
#include <QTest>
#include <algorithm>

#include "common.h"
#include "gpix/ui/render.h"

using namespace gpix;
using namespace gpix::ui;

Q_DECLARE_METATYPE(gpix::DType)

namespace {

template <class T>
HostArray random_host(const Shape& s) {
  return HostArray::from(test::random_values<T>(s.elements()), s);
}

}  // namespace

class TestRender : public QObject {
  Q_OBJECT
 private slots:
  void lut_mapping_data() {
    QTest::addColumn<DType>("dtype");
    for (DType t : kAllDTypes) QTest::newRow(name(t).data()) << t;
  }
  void lut_mapping() {
    QFETCH(DType, dtype);
    visit_dtype(dtype, [&](auto z) {
      using T = decltype(z);
      for (const Shape& s : {Shape{13, 17}, Shape{1, 1}, Shape{7}, Shape{3, 5, 4}}) {
        const HostArray h = random_host<T>(s);
        const auto [lo, hi] = auto_contrast(h);
        for (const QString& cmap : {QStringLiteral("gray"), QStringLiteral("hot")}) {
          const int z_last = int(s.depth()) - 1;
          RenderOptions o{z_last, lo, hi, cmap};
          const QImage img = render(h, o);
          QCOMPARE(img.width(), int(s.width()));
          QCOMPARE(img.height(), int(s.height()));
          const auto& lut = colormap(cmap);
          const auto px = h.as<T>();
          for (std::size_t y = 0; y < s.height(); ++y) {
            for (std::size_t x = 0; x < s.width(); ++x) {
              const double v = double(px[(std::size_t(z_last) * s.height() + y) * s.width() + x]);
              const double t = std::clamp((v - lo) * (255.0 / (hi - lo)) + 0.5, 0.0, 255.0);
              const QRgb want = std::isnan(v) ? qRgba(0, 0, 0, 0) : lut[std::size_t(t)];
              QCOMPARE(img.pixel(int(x), int(y)), want);
            }
          }
        }
      }
    });
  }

  void nan_is_transparent_and_labels() {
    const std::vector<float> v = {1.f, std::nanf(""), 3.f, 0.f};
    const QImage img = render(HostArray::from(v, Shape{2, 2}), {0, 0, 3, QStringLiteral("gray")});
    QCOMPARE(qAlpha(img.pixel(1, 0)), 0);
    QCOMPARE(img.pixel(0, 1), colormap(QStringLiteral("gray"))[255]);
    const std::vector<std::uint16_t> labels = {0, 1, 2, 1};
    const QImage li =
        render(HostArray::from(labels, Shape{2, 2}), {0, 0, 1, QStringLiteral("labels")});
    QCOMPARE(qAlpha(li.pixel(0, 0)), 0);
    QCOMPARE(li.pixel(1, 0), li.pixel(1, 1));   // same label, same colour
    QVERIFY(li.pixel(1, 0) != li.pixel(0, 1));  // neighbouring labels differ
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, colormap(QStringLiteral("nope")));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, render(HostArray(Shape{2, 3, 3}, DType::u8),
                                                     {2, 0, 1, QStringLiteral("gray")}));
  }

  void auto_contrast_is_percentiles() {
    const Shape s{101, 57};
    auto v = test::random_values<float>(s.elements());
    v[3] = std::nanf("");
    const auto [lo, hi] = auto_contrast(HostArray::from(v, s), -1, 1.0, 99.0);
    std::vector<double> sorted;
    for (float f : v) {
      if (std::isfinite(f)) sorted.push_back(f);
    }
    std::sort(sorted.begin(), sorted.end());
    const auto at = [&](double p) {
      return sorted[std::size_t(p / 100.0 * double(sorted.size() - 1))];
    };
    QCOMPARE(lo, at(1.0));
    QCOMPARE(hi, at(99.0));
    // A flat image still gets a usable range.
    const auto [flo, fhi] =
        auto_contrast(HostArray::from(std::vector<std::uint8_t>(9, 7), Shape{3, 3}));
    QCOMPARE(flo, 7.0);
    QCOMPARE(fhi, 8.0);
  }

  void histogram_counts() {
    const Shape s{37, 41};
    const auto v = test::random_values<std::int16_t>(s.elements());
    const auto h = histogram(HostArray::from(v, s), -1000, 1000, 20);
    std::vector<std::uint64_t> want(20, 0);
    for (auto x : v) {
      if (x < -1000 || x > 1000) continue;
      want[std::min<std::size_t>(std::size_t((x + 1000) * 20.0 / 2000.0), 19)]++;
    }
    QCOMPARE(h, want);
  }
};

int main(int argc, char** argv) {
  QGuiApplication app(argc, argv);
  TestRender t;
  return QTest::qExec(&t, argc, argv);
}
#include "test_render.moc"
