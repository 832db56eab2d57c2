// A repeated catalog call allocates nothing on the host (issue 17: "no allocation on the hot
// path of a repeated call"): its output's handle, the pool block's control block, the defines,
// the kernel arguments, the program lookup and the taps come from recycled blocks or buffers
// kept between calls, and so do a table result's values (its column names are shared). This
// binary counts the global operator new; the allocation, not its time, is what the test checks
// (bench_launch reports both).
#include <QTest>
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/gpix.h"
#include "recycling.h"
#include "support/counted_new.h"
#include "support/devices.h"

using namespace gpix;

class TestAllocations : public QObject {
  Q_OBJECT
 private slots:
  // Every catalog filter, with its defaults, on a 2D image of float32 (or its first dtype;
  // uint8 for masks and labels), plus 3D rows of the neighbourhood filters with parameters that
  // take other code paths (tiles, several passes), histograms of other bin counts and ranges,
  // and the dtypes below.
  void repeated_calls_data() {
    QTest::addColumn<int>("device");
    QTest::addColumn<QString>("filter");
    QTest::addColumn<int>("ndim");
    QTest::addColumn<int>("dtype");
    QTest::addColumn<QString>("params");  // "name=value ..." (numbers), else the 3D defaults below
    struct Row {
      std::string filter;
      int ndim;
      DType dtype;
      std::string params;
    };
    std::vector<Row> rows;
    for (const FilterInfo& f : filters()) {
      const bool has2d = std::find(f.dims.begin(), f.dims.end(), 2) != f.dims.end();
      DType t = f.dtypes.front();
      const bool masks = std::any_of(f.inputs.begin(), f.inputs.end(),
                                     [](const InputSpec& i) { return i.kind != InputKind::image; });
      for (DType c : f.dtypes) {
        if (c == (masks ? DType::u8 : DType::f32)) t = c;
      }
      rows.push_back({f.name, has2d ? 2 : 3, t, ""});
    }
    for (const char* f : {"gaussian_blur", "mean_box", "minimum_box", "median_box", "variance_box"})
      rows.push_back({f, 3, DType::u16, ""});
    // The largest bin count (the largest table), a range given, and uint16's own range in 3D.
    rows.push_back({"histogram", 2, DType::f32, "n_bins=4096 minimum=0 maximum=1"});
    rows.push_back({"histogram", 3, DType::u16, "n_bins=1000"});
    rows.push_back({"std_of_all_pixels", 3, DType::u16, ""});
    // Dtypes with host paths of their own: 64-bit integers take the exact wide operations,
    // and labels other than u8/u16/u32 are converted (signed ones with saturation). Their
    // defines once held expressions too long for a string's inline storage.
    for (const char* f : {"absolute", "add_images", "divide_images"}) {
      rows.push_back({f, 2, DType::u64, ""});
      rows.push_back({f, 2, DType::i64, ""});
    }
    rows.push_back({"label_statistics", 2, DType::i16, ""});
    rows.push_back({"label_statistics", 2, DType::i64, ""});
    // Otsu's threshold of a 16-bit image that spans its whole range (a camera's): one bin per
    // value, 65536 of them, whose counts and class means (512 kB each) the host keeps.
    rows.push_back({"threshold_otsu", 2, DType::u16, "span=65535"});
    rows.push_back({"threshold_otsu", 2, DType::i16, "span=65535"});
    for (const Device& d : test::test_devices()) {
      for (const Row& r : rows) {
        const std::string tag = test::row_name(d).toStdString() + " " + r.filter + " " +
                                std::to_string(r.ndim) + "D " + std::string(name(r.dtype)) +
                                (r.params.empty() ? "" : " " + r.params);
        QTest::newRow(tag.c_str()) << static_cast<int>(&d - test::test_devices().data())
                                   << QString::fromStdString(r.filter) << r.ndim
                                   << static_cast<int>(r.dtype) << QString::fromStdString(r.params);
      }
    }
  }
  void repeated_calls() {
    QFETCH(int, device);
    QFETCH(QString, filter);
    QFETCH(int, ndim);
    QFETCH(int, dtype);
    QFETCH(QString, params);
    if (!detail::kRecycling) QSKIP("an AddressSanitizer build: gpix recycles no blocks there");
    const Device dev = test::device_at(device);
    const auto t = static_cast<DType>(dtype);
    const Shape shape = ndim == 2 ? Shape{9, 13} : Shape{5, 9, 13};
    // Values 0 to 4 in a pattern, not a constant: data-dependent filters (Otsu's threshold,
    // labelling) settle a constant image before their counting passes. "span=S" (not a filter
    // parameter) spreads the five values over S steps, from the dtype's lowest value.
    double span = 4;
    QStringList kept;
    for (const QString& kv : params.split(' ', Qt::SkipEmptyParts)) {
      if (kv.startsWith(QStringLiteral("span="))) {
        span = kv.section('=', 1).toDouble();
      } else {
        kept << kv;
      }
    }
    Array a = visit_dtype(t, [&](auto zero) {
      using T = decltype(zero);
      const double low = span > 4 ? static_cast<double>(std::numeric_limits<T>::lowest()) : 0.0;
      std::vector<T> v(shape.elements());
      for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<T>(low + static_cast<double>((i * 7) % 5) * span / 4);
      }
      return Array::push(v, shape, dev);
    });
    const std::string f = filter.toStdString();
    std::vector<Array> inputs(gpix::filter(f).inputs.size(), a);
    Params p;
    if (ndim == 3 && f == "gaussian_blur")
      p = {{"sigma_x", 1.5}, {"sigma_y", 1.0}, {"sigma_z", 3.0}};
    if (ndim == 3 && f.ends_with("_box"))
      p = {{"radius_x", 1.0}, {"radius_y", 2.0}, {"radius_z", 1.0}};
    for (const QString& kv : kept)
      p[kv.section('=', 0, 0).toStdString()] = kv.section('=', 1).toDouble();
    // Warm: compiles, the pool's blocks, the recycled blocks and the lookup buffer.
    for (int i = 0; i < 10; ++i) (void)run(f, inputs, p);
    dev.finish();
    const std::uint64_t before = gpix::test::news();
    for (int i = 0; i < 20; ++i) (void)run(f, inputs, p);
    const std::uint64_t news = gpix::test::news() - before;
    dev.finish();
    QVERIFY2(news == 0, qPrintable(QString("%1 host allocations in 20 calls").arg(news)));
  }

  // A viewer's frame: render_rgba() into the frame's buffer, with a gamma curve, additive
  // blending (a composite's channels) and the label colours. The contrast table with its curve
  // is kept between frames; a change of table or gamma makes it again (test_core_render).
  void rendered_frames_data() {
    QTest::addColumn<int>("device");
    QTest::addColumn<int>("dtype");
    for (const Device& d : test::test_devices()) {
      for (DType t : {DType::u16, DType::f32}) {
        const std::string tag = test::row_name(d).toStdString() + " " + std::string(name(t));
        QTest::newRow(tag.c_str())
            << static_cast<int>(&d - test::test_devices().data()) << static_cast<int>(t);
      }
    }
  }
  void rendered_frames() {
    QFETCH(int, device);
    QFETCH(int, dtype);
    if (!detail::kRecycling) QSKIP("an AddressSanitizer build: gpix recycles no blocks there");
    const Device dev = test::device_at(device);
    const auto t = static_cast<DType>(dtype);
    Array a = Array::empty(Shape{3, 9, 13}, t, dev);
    a.fill(Scalar(7.0));
    Array out = Array::empty(Shape{9, 13}, DType::u32, dev);
    const Lut hot = Lut::hot(), green = Lut::colour(0, 255, 0), labels = Lut::labels();
    auto frame = [&] {
      render_rgba(a, 0.0, 100.0, hot, 1, out, {.gamma = 2.2});
      render_rgba(a, 0.0, 100.0, hot, 2, out, {.gamma = 2.2});
      render_rgba(a, 5.0, 50.0, green, 0, out, {.gamma = 1.0, .blend = Blend::add});
      if (!is_float(t)) render_rgba(a, 0.0, 0.0, labels, 0, out, {});
    };
    for (int i = 0; i < 10; ++i) frame();
    dev.finish();
    const std::uint64_t before = gpix::test::news();
    for (int i = 0; i < 20; ++i) frame();
    const std::uint64_t news = gpix::test::news() - before;
    dev.finish();
    QVERIFY2(news == 0, qPrintable(QString("%1 host allocations in 20 frames").arg(news)));
  }
};

QTEST_GUILESS_MAIN(TestAllocations)
#include "test_allocations.moc"
