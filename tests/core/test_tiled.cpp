// gpix::run_tiled: every tileable catalog filter, cut into 8-20 slabs by a small memory
// budget, gives the whole-array result bit for bit (2D and 3D, odd sizes, the filter's
// default and larger windows, several dtypes); filters that fold their slabs (projections,
// reductions, histogram, Otsu) give it too, bit for bit except float sums and means and the
// standard deviation of all pixels (float64 sums of another grouping: within 1e-12 of the sum
// of magnitudes); sources and sinks see every plane once, writes in order; untileable filters,
// small budgets and cancel give typed errors; with two devices (POCL_DEVICES="pthread
// pthread") the slabs are shared.
#include <QTest>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "gpix/gpix.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

HostArray random_host(const Shape& s, DType t) {
  return visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    auto v = test::random_values<T>(s.elements());
    if constexpr (std::is_floating_point_v<T>) {
      for (auto& x : v) x = static_cast<T>(std::fmod(static_cast<double>(x), 100.0));
    }
    return HostArray::from(v, s);
  });
}

// Larger windows than the defaults where the filter has them, so halos of several planes.
Params wide_params(const FilterInfo& f) {
  Params p;
  for (const auto& spec : f.params) {
    if (spec.name.rfind("radius", 0) == 0) p[spec.name] = std::min(2.0, spec.max);
    if (spec.name.rfind("sigma", 0) == 0) p[spec.name] = 1.2;
  }
  if (f.name == "difference_of_gaussian") {
    p["sigma1"] = 0.8;
    p["sigma2"] = 1.6;
  }
  return p;
}

// The budget that cuts `planes` planes into about `want` slabs (same working-set rule as
// run_tiled: twice the inputs plus an output of the widest of (inputs, 4 bytes)).
std::uint64_t budget_for(const Shape& s, DType t, std::size_t inputs, std::size_t halo,
                         std::size_t want) {
  const std::size_t plane = s.elements() / s[0];
  const std::size_t cost =
      2 * (inputs * plane * size_of(t) + plane * std::max<std::size_t>(4, size_of(t)));
  const std::size_t slab = std::max<std::size_t>(1, (s[0] + want - 1) / want);
  return cost * (slab + 2 * halo);
}

bool same_bytes(const HostArray& a, const Array& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return false;
  const HostArray hb = b.pull();
  return std::memcmp(a.data(), hb.data(), a.bytes()) == 0;
}

void check_filter(const FilterInfo& f, const std::vector<Device>& devices, bool wide) {
  const DType dtypes[] = {DType::f32, DType::u16, DType::u8, DType::i32, DType::f64};
  int tested = 0;
  for (int dims : {2, 3}) {
    if (std::find(f.dims.begin(), f.dims.end(), dims) == f.dims.end()) continue;
    const Shape s = dims == 3 ? Shape{23, 9, 11} : Shape{41, 13};
    for (DType t : dtypes) {
      if (std::find(f.dtypes.begin(), f.dtypes.end(), t) == f.dtypes.end()) continue;
      if (t == DType::f64 && !devices[0].supports_fp64()) continue;
      if (tested >= 2 + dims) break;  // a few dtypes per filter keep CI short
      ++tested;
      const Params p = wide ? wide_params(f) : Params{};
      std::vector<HostArray> hosts;
      std::vector<Array> arrays;
      for (std::size_t i = 0; i < f.inputs.size(); ++i) {
        hosts.push_back(random_host(s, t));
        arrays.push_back(Array::push(hosts.back(), devices[0]));
      }
      const Result whole = run(f.name, arrays, p);
      const std::size_t halo = tile_halo(f.name, dims, p);
      TiledOptions o;
      o.devices = devices;
      o.budget_bytes = budget_for(s, t, hosts.size(), halo, 10);
      int slabs = 0;
      o.progress = [&](double) { ++slabs; };
      TiledReport report;
      o.report = &report;
      const HostArray tiled = run_tiled(f.name, hosts, p, o);
      const QByteArray where = QByteArray::fromStdString(
          f.name + " " + std::string(name(t)) + " " + s.str() + (wide ? " wide" : " defaults") +
          " halo " + std::to_string(halo) + " slabs " + std::to_string(slabs));
      QVERIFY2(slabs >= 8 && slabs <= 23, where);
      QVERIFY2(same_bytes(tiled, whole.array), where + " differs from the whole-array run");
      QCOMPARE(report.slabs, static_cast<std::size_t>(slabs));
      QCOMPARE(report.halo, halo);
      QCOMPARE(report.bytes_out, tiled.bytes());
      // Every device took slabs (two devices under POCL_DEVICES="pthread pthread").
      for (std::size_t k : report.slabs_per_device) QVERIFY2(k > 0, where + " left a device idle");
    }
  }
}

// Devices of the first test device's kind (two with POCL_DEVICES="pthread pthread"). Devices
// of different backends round some float operations differently (OpenCL's divide and sqrt are
// not correctly rounded, CUDA's are), so only devices of one kind promise the whole-array
// bytes.
std::vector<Device> same_kind_devices() {
  std::vector<Device> devs;
  const Device& first = test::test_devices().front();
  for (const Device& d : test::test_devices()) {
    if (d.info().backend == first.info().backend && d.info().name == first.info().name)
      devs.push_back(d);
  }
  return devs;
}

// NaN in some pixels and in every pixel of one column along z (floats only).
void add_nans(HostArray& h) {
  visit_dtype(h.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      auto v = h.as<T>();
      for (std::size_t i = 0; i < v.size(); i += 7) v[i] = std::numeric_limits<T>::quiet_NaN();
      const std::size_t plane = h.elements() / h.shape()[0];
      for (std::size_t z = 0; z < h.shape()[0]; ++z)
        v[z * plane + 3] = std::numeric_limits<T>::quiet_NaN();
    }
  });
}

double magnitude_sum(const HostArray& h) {
  return visit_dtype(h.dtype(), [&](auto zero) {
    using T = decltype(zero);
    double s = 0;
    for (T x : h.as<T>()) {
      if (!std::isnan(static_cast<double>(x))) s += std::fabs(static_cast<double>(x));
    }
    return s;
  });
}

// A source that records what is read (and serves it from a HostArray).
class CountingSource final : public SlabSource {
 public:
  explicit CountingSource(HostArray h) : h_(std::move(h)) {}
  Shape shape() const override { return h_.shape(); }
  DType dtype() const override { return h_.dtype(); }
  void read(std::size_t from, std::size_t to, std::byte* dst) override {
    QVERIFY(from < to && to <= h_.shape()[0]);
    const std::size_t pb = h_.bytes() / h_.shape()[0];
    std::memcpy(dst, h_.data() + from * pb, (to - from) * pb);
    for (std::size_t z = from; z < to; ++z) seen.insert(z);
    planes_read += to - from;
  }
  std::set<std::size_t> seen;
  std::size_t planes_read = 0;

 private:
  HostArray h_;
};

// A sink that keeps no memory of its own for run_tiled to pull into: it gets write() calls,
// which must come in order and cover every plane once.
class OrderedSink final : public SlabSink {
 public:
  void start(const Shape& shape, DType dtype) override {
    QVERIFY(!started);
    started = true;
    out = HostArray::empty(shape, dtype);
    std::memset(out.data(), 0xA5, out.bytes());  // poison
  }
  void write(std::size_t from, std::size_t to, const std::byte* src) override {
    QVERIFY(started);
    if (from != next) in_order = false;
    next = to;
    const std::size_t pb = out.bytes() / out.shape()[0];
    std::memcpy(out.data() + from * pb, src, (to - from) * pb);
  }
  void finish() override { finished = true; }
  HostArray out;
  bool started = false, finished = false, in_order = true;
  std::size_t next = 0;
};

// A fold filter tiled against its whole-array run: arrays and tables equal, except float
// sums, means and standard deviations (see the file's comment).
void check_fold(const FilterInfo& f, const std::vector<Device>& devices) {
  const DType dtypes[] = {DType::f32, DType::u16, DType::u8, DType::i32, DType::f64};
  for (int dims : {2, 3}) {
    if (std::find(f.dims.begin(), f.dims.end(), dims) == f.dims.end()) continue;
    const Shape s = dims == 3 ? Shape{23, 9, 11} : Shape{41, 13};
    for (DType t : dtypes) {
      if (std::find(f.dtypes.begin(), f.dtypes.end(), t) == f.dtypes.end()) continue;
      if (t == DType::f64 && !devices[0].supports_fp64()) continue;
      HostArray h = random_host(s, t);
      add_nans(h);
      const QByteArray where =
          QByteArray::fromStdString(f.name + " " + std::string(name(t)) + " " + s.str());
      Result whole;
      bool whole_refused = false;
      try {
        whole = run(f.name, Array::push(h, devices[0]));
      } catch (const InvalidArgument&) {
        whole_refused = true;  // Otsu on a range of more than 2^24 integers
      }
      TiledOptions o;
      o.devices = devices;
      // About 10 slabs, with room for a projection's state (at most 40 bytes a column).
      o.budget_bytes = budget_for(s, t, 1, 0, 10) + s.elements() / s[0] * 40;
      TiledReport report;
      o.report = &report;
      CountingSource src(h);
      SlabSource* in[] = {&src};
      OrderedSink sink;
      Table table;
      try {
        table = run_tiled(f.name, in, &sink, {}, o);
      } catch (const InvalidArgument& e) {
        QVERIFY2(whole_refused, where + " refused tiled only: " + e.what());
        continue;
      }
      QVERIFY2(!whole_refused, where + " refused whole but ran tiled");
      QVERIFY2(report.slabs >= 4,
               where + " ran in " + QByteArray::number(qulonglong(report.slabs)) + " slabs");
      QCOMPARE(src.seen.size(), s[0]);
      // Every pass reads every plane once; no halo.
      QCOMPARE(src.planes_read, s[0] * report.passes);
      if (f.output == OutputKind::table) {
        QVERIFY2(!sink.started, where);
        QCOMPARE(table.columns, whole.table.columns);
        QCOMPARE(table.rows.size(), whole.table.rows.size());
        // Float sums and means, and every standard deviation (float64 moments), are float64
        // sums grouped by slab here and by work-group there.
        const bool rounded =
            f.name == "std_of_all_pixels" ||
            (is_float(t) && (f.name == "sum_of_all_pixels" || f.name == "mean_of_all_pixels"));
        const double mag = magnitude_sum(h);
        for (std::size_t r = 0; r < table.rows.size(); ++r) {
          for (std::size_t c = 0; c < table.rows[r].size(); ++c) {
            const double a = table.rows[r][c], b = whole.table.rows[r][c];
            if (!rounded) {
              QVERIFY2(std::memcmp(&a, &b, sizeof a) == 0,
                       where + ": " + QByteArray::number(a, 'g', 17) + " vs whole " +
                           QByteArray::number(b, 'g', 17));
            } else {
              // sum: |error| <= 1e-12 of the sum of magnitudes; mean and std the same / count.
              const double scale = f.name == "sum_of_all_pixels" ? mag : mag / double(h.elements());
              QVERIFY2(std::fabs(a - b) <= 1e-12 * scale,
                       where + ": " + QByteArray::number(a, 'g', 17) + " vs whole " +
                           QByteArray::number(b, 'g', 17));
            }
          }
        }
      } else {
        QVERIFY2(sink.finished && sink.in_order, where);
        QVERIFY2(same_bytes(sink.out, whole.array), where + " differs from the whole-array run");
      }
    }
  }
}

}  // namespace

class TestTiled : public QObject {
  Q_OBJECT
 private slots:
  // Every catalog filter says how it tiles, and untileable ones say why.
  void every_filter_says() {
    int tileable = 0;
    for (const FilterInfo& f : filters()) {
      const TileInfo ti = tile_info(f.name);
      if (ti.tileable) {
        ++tileable;
        QVERIFY2(ti.reason.empty(), f.name.c_str());
      } else {
        QVERIFY2(!ti.reason.empty(), f.name.c_str());
        try {
          (void)tile_halo(f.name, 3);
          QFAIL(("no error for untileable " + f.name).c_str());
        } catch (const InvalidArgument& e) {
          QVERIFY2(std::string(e.what()).find(ti.reason) != std::string::npos, e.what());
        }
      }
    }
    QVERIFY(tileable >= 40);
  }

  void halos() {
    QCOMPARE(tile_halo("add_scalar", 3), std::size_t{0});
    QCOMPARE(tile_halo("median_box", 3, {{"radius_z", 3.0}}), std::size_t{3});
    QCOMPARE(tile_halo("median_box", 2, {{"radius_y", 2.0}, {"radius_z", 5.0}}), std::size_t{2});
    QCOMPARE(tile_halo("top_hat_box", 3, {{"radius_z", 2.0}}), std::size_t{4});
    QCOMPARE(tile_halo("gaussian_blur", 3, {{"sigma_z", 2.0}}), std::size_t{8});
    QCOMPARE(tile_halo("difference_of_gaussian", 2, {{"sigma1", 1.0}, {"sigma2", 3.0}}),
             std::size_t{12});
    QCOMPARE(tile_halo("binary_closing", 3, {{"radius", 2.0}}), std::size_t{4});
    QCOMPARE(tile_halo("sobel", 2), std::size_t{1});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, tile_halo("gausian_blur", 2));  // typo
  }

  void whole_array_equal_data() {
    QTest::addColumn<QString>("filter");
    QTest::addColumn<bool>("wide");
    for (const FilterInfo& f : filters()) {
      if (!tile_info(f.name).tileable || tile_info(f.name).folds) continue;
      QTest::newRow((f.name + " defaults").c_str()) << QString::fromStdString(f.name) << false;
      if (tile_halo(f.name, 3, wide_params(f)) != tile_halo(f.name, 3))
        QTest::newRow((f.name + " wide").c_str()) << QString::fromStdString(f.name) << true;
    }
  }
  void whole_array_equal() {
    QFETCH(QString, filter);
    QFETCH(bool, wide);
    check_filter(gpix::filter(filter.toStdString()), same_kind_devices(), wide);
  }

  // Filters whose output depends on the whole input fold their slabs into it.
  void folds_data() {
    QTest::addColumn<QString>("filter");
    int folds = 0;
    for (const FilterInfo& f : filters()) {
      if (!tile_info(f.name).folds) continue;
      ++folds;
      QTest::newRow(f.name.c_str()) << QString::fromStdString(f.name);
    }
    QVERIFY(folds >= 12);  // 5 projections, 5 reductions, histogram, Otsu
  }
  void folds() {
    QFETCH(QString, filter);
    check_fold(gpix::filter(filter.toStdString()), same_kind_devices());
  }

  // A histogram over a given range reads the input once, over its own range twice; Otsu
  // three times (range, counts, threshold); a wrong output dtype or a missing sink is refused.
  void fold_passes() {
    const Device dev = test::test_devices().front();
    const HostArray h = random_host(Shape{30, 8, 9}, DType::u16);
    TiledOptions o;
    o.devices = {dev};
    o.budget_bytes = budget_for(h.shape(), DType::u16, 1, 0, 6);
    TiledReport report;
    o.report = &report;
    CountingSource src(h);
    SlabSource* in[] = {&src};
    (void)run_tiled("histogram", in, nullptr, {{"minimum", 0.0}, {"maximum", 70000.0}}, o);
    QCOMPARE(report.passes, std::size_t{1});
    QCOMPARE(src.planes_read, std::size_t{30});
    (void)run_tiled("histogram", in, nullptr, {}, o);
    QCOMPARE(report.passes, std::size_t{2});
    OrderedSink sink;
    (void)run_tiled("threshold_otsu", in, &sink, {}, o);
    QCOMPARE(report.passes, std::size_t{3});
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_tiled("threshold_otsu", in, nullptr, {}, o));
    // Projections are 3D only, as their whole-array checks say.
    const HostArray flat = random_host(Shape{30, 8}, DType::u16);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_tiled("sum_z_projection", flat, {}, o));
    // The HostArray overload: image outputs only.
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_tiled("sum_of_all_pixels", h, {}, o));
  }

  // Sources and sinks: every plane read (halos again), writes in order and each plane once,
  // with one and several workers, 2D (rows) and 3D.
  void sources_and_sinks() {
    for (const Shape& s : {Shape{37, 6, 7}, Shape{53, 9}}) {
      for (std::size_t workers : {1, 3}) {
        const HostArray h = random_host(s, DType::f32);
        const Params p = {{"radius_x", 1.0}, {"radius_y", 1.0}, {"radius_z", 1.0}};
        const Result whole = run("mean_box", Array::push(h, test::test_devices().front()), p);
        TiledOptions o;
        o.devices = same_kind_devices();
        o.workers_per_device = workers;
        o.budget_bytes = budget_for(s, DType::f32, 1, 1, 9) * workers;
        TiledReport report;
        o.report = &report;
        CountingSource src(h);
        SlabSource* in[] = {&src};
        OrderedSink sink;
        const Table t = run_tiled("mean_box", in, &sink, p, o);
        const QByteArray where = QByteArray::fromStdString(s.str()) + " workers " +
                                 QByteArray::number(qulonglong(workers));
        QVERIFY2(t.columns.empty(), where);
        QVERIFY2(sink.finished && sink.in_order && sink.next == s[0], where);
        QVERIFY2(same_bytes(sink.out, whole.array), where);
        QCOMPARE(src.seen.size(), s[0]);
        QCOMPARE(src.planes_read, static_cast<std::size_t>(report.bytes_in / (h.bytes() / s[0])));
        QVERIFY2(report.slabs >= 8, where);
        QVERIFY(report.push_seconds > 0 && report.pull_seconds > 0 && report.read_seconds > 0);
      }
    }
  }

  // On the device, slab by slab into one output: the same bytes as gpix::run, progress per
  // slab, cancel between slabs with the input intact.
  void device_slabs() {
    const Device dev = test::test_devices().front();
    for (const char* f : {"median_box", "gaussian_blur", "top_hat_box", "add_scalar", "sobel"}) {
      for (const Shape& s : {Shape{29, 7, 9}, Shape{37, 11}}) {
        const HostArray h = random_host(s, DType::f32);
        const Array a = Array::push(h, dev);
        const Params p = wide_params(gpix::filter(f));
        const Result whole = run(f, a, p);
        int calls = 0;
        RunOptions o;
        o.progress = [&](double) { ++calls; };
        const Array in[] = {a};
        const Result slabbed = run_in_slabs(f, in, p, o, 6);
        QVERIFY2(same_bytes(slabbed.array.pull(), whole.array),
                 (std::string(f) + " " + s.str()).c_str());
        QVERIFY(calls >= 6);
      }
    }
    // Untileable filters run whole.
    const HostArray h = random_host(Shape{12, 10, 10}, DType::f32);
    const Array a = Array::push(h, dev);
    const Array in[] = {a};
    QVERIFY(same_bytes(run_in_slabs("connected_components", in, {}, {}, 4).array.pull(),
                       run("connected_components", a).array));
    // So do folds (each slab's projection is not the whole one's).
    QVERIFY(same_bytes(run_in_slabs("threshold_otsu", in, {}, {}, 4).array.pull(),
                       run("threshold_otsu", a).array));
    QVERIFY(same_bytes(run_in_slabs("sum_z_projection", in, {}, {}, 4).array.pull(),
                       run("sum_z_projection", a).array));
    // Cancel between slabs.
    std::atomic<bool> cancel{false};
    RunOptions o;
    o.cancel = &cancel;
    int slabs = 0;
    o.progress = [&](double f) {
      if (f >= 0.5 && ++slabs == 1) cancel = true;
    };
    QVERIFY_THROWS_EXCEPTION(Cancelled, run_in_slabs("mean_box", in, {{"radius_z", 1.0}}, o, 6));
    QVERIFY(std::memcmp(a.pull().data(), h.data(), h.bytes()) == 0);
  }

  void errors() {
    const Device dev = test::test_devices().front();
    const HostArray h = random_host(Shape{20, 8, 8}, DType::f32);
    const HostArray before = h.clone();
    // Untileable: the reason, not a wrong answer.
    try {
      (void)run_tiled("connected_components", h);
      QFAIL("connected_components ran tiled");
    } catch (const InvalidArgument& e) {
      QVERIFY2(
          std::string(e.what()).find(tile_info("connected_components").reason) != std::string::npos,
          e.what());
    }
    // A budget below one plane and its halo says what one slab needs.
    TiledOptions tiny;
    tiny.devices = {dev};
    tiny.budget_bytes = 1000;
    try {
      (void)run_tiled("median_box", h, {{"radius_z", 2.0}}, tiny);
      QFAIL("no error for a tiny budget");
    } catch (const InvalidArgument& e) {
      QVERIFY2(std::string(e.what()).find("budget") != std::string::npos, e.what());
    }
    // A given output: filled in place; one of another dtype is refused.
    HostArray given = HostArray::empty(h.shape(), DType::f32);
    TiledOptions go;
    go.devices = {dev};
    go.output = &given;
    (void)run_tiled("add_scalar", h, {{"value", 1.0}}, go);
    QCOMPARE(given.as<float>()[5], h.as<float>()[5] + 1.0f);
    HostArray wrong = HostArray::empty(h.shape(), DType::u8);
    go.output = &wrong;
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_tiled("add_scalar", h, {{"value", 1.0}}, go));
    // Inputs of different shapes.
    const HostArray other = random_host(Shape{20, 8, 9}, DType::f32);
    const HostArray pair[] = {h, other};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, run_tiled("add_images", pair));
    // Cancel between slabs: Cancelled, nothing returned.
    std::atomic<bool> cancel{false};
    TiledOptions o;
    o.devices = {dev};
    o.budget_bytes = budget_for(h.shape(), DType::f32, 1, 1, 10);
    o.cancel = &cancel;
    int slabs = 0;
    o.progress = [&](double) {
      if (++slabs == 3) cancel = true;
    };
    QVERIFY_THROWS_EXCEPTION(Cancelled, run_tiled("mean_box", h, {{"radius_z", 1.0}}, o));
    QVERIFY(slabs == 3);
    QVERIFY(std::memcmp(h.data(), before.data(), h.bytes()) == 0);
  }
};

QTEST_APPLESS_MAIN(TestTiled)
#include "test_tiled.moc"
