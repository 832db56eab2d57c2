// Every catalog entry on every array layout: the same inputs stored contiguously, padded, as a
// region view of a poisoned larger array (at random origins and at the far edge) and as an
// image object give bit-identical results, and the inputs are left as they were. The category
// suites compare each layout with the CPU reference too (harness.h); this sweep needs no reference,
// so a new entry is covered here the moment it is registered.
#include <QTest>
#include <cstring>

#include "filters/harness.h"

using namespace gpix;
using namespace gpix::test;

namespace {

// The dtypes swept per entry: one of each element size the entry accepts (layout bugs are
// about byte pitches), and every dtype for entries that read layouts themselves.
std::vector<DType> sweep_dtypes(const FilterInfo& f) {
  if (f.layout == InputLayout::any) return f.dtypes;
  std::vector<DType> out;
  for (DType want : {DType::u8, DType::u16, DType::f32, DType::i64, DType::f64}) {
    if (std::find(f.dtypes.begin(), f.dtypes.end(), want) != f.dtypes.end()) out.push_back(want);
  }
  if (out.empty()) out.push_back(f.dtypes.front());
  return out;
}

Shape sweep_shape(int dims) {
  if (dims == 1) return Shape{13};
  if (dims == 2) return Shape{13, 17};
  return Shape{3, 5, 7};
}

// Host pixels for an input of this kind: labels are small ids in runs (so that labelling and
// statistics have real regions), binary masks 0/1 with some 2s, images moderate values.
HostArray host_input(InputKind kind, DType t, const Shape& s) {
  return visit_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> v;
    if (kind == InputKind::image) {
      v = moderate_values<T>(s.elements());
    } else {
      auto& r = rng();
      v.resize(s.elements());
      T cur = 0;
      for (auto& x : v) {
        if (r() % 4 == 0) cur = static_cast<T>(r() % (kind == InputKind::labels ? 6 : 3));
        x = cur;
      }
    }
    HostArray h = HostArray::empty(s, t);
    std::memcpy(h.data(), v.data(), h.bytes());
    return h;
  });
}

bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

bool same_table(const Table& a, const Table& b) {
  if (a.columns() != b.columns() || a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    for (std::size_t j = 0; j < a.width(); ++j) {
      const double x = a(i, j), y = b(i, j);
      if (!(x == y || (std::isnan(x) && std::isnan(y)))) return false;
    }
  }
  return true;
}

// What a run gave: a result, or the type of the error it raised.
struct Outcome {
  Result result;
  std::string error;  // empty when the run succeeded
};
Outcome run_caught(const std::string& filter, const std::vector<Array>& in) {
  Outcome o;
  try {
    o.result = run(filter, std::span<const Array>(in));
  } catch (const UnsupportedDType& e) {
    o.error = std::string("UnsupportedDType: ") + e.what();
  } catch (const InvalidArgument& e) {
    o.error = std::string("InvalidArgument: ") + e.what();
  } catch (const UnsupportedFeature& e) {
    o.error = std::string("UnsupportedFeature: ") + e.what();
  }
  return o;
}

}  // namespace

class TestLayouts : public QObject {
  Q_OBJECT
 private slots:
  void every_filter_data() {
    QTest::addColumn<QString>("filter");
    QTest::addColumn<int>("device");
    for (const auto& f : filters()) {
      for (const Device& d : test_devices()) {
        QTest::newRow((f.name + " " + std::to_string(d.info().index)).c_str())
            << QString::fromStdString(f.name) << d.info().index;
      }
    }
  }

  void every_filter() {
    QFETCH(QString, filter);
    QFETCH(int, device);
    const std::string fname = filter.toStdString();
    const FilterInfo& info = gpix::filter(fname);
    const Device dev = test::device_at(device);
    for (DType t : sweep_dtypes(info)) {
      if (t == DType::f64 && !dev.supports_fp64()) continue;
      for (int dims : info.dims) {
        const Shape s = sweep_shape(dims);
        std::vector<HostArray> hosts;
        std::vector<Array> plain;
        for (const auto& spec : info.inputs) {
          hosts.push_back(host_input(spec.kind, t, s));
          plain.push_back(Array::push(hosts.back(), dev));
        }
        const Outcome want = run_caught(fname, plain);
        for (Layout l : kLayouts) {
          if (l == Layout::contiguous || (l == Layout::image && !image_layout_possible(dev, t))) {
            continue;
          }
          const QByteArray where = QByteArray::fromStdString(fname + " " + std::string(name(t))) +
                                   " " + QByteArray::fromStdString(s.str()) + " " + name(l) + ": ";
          // Every input in this layout, then only the first (mixed layouts).
          for (bool all : {true, false}) {
            std::vector<Array> in;
            for (std::size_t i = 0; i < plain.size(); ++i) {
              in.push_back(all || i == 0 ? in_layout(plain[i], l) : plain[i]);
            }
            const Outcome got = run_caught(fname, in);
            QVERIFY2(got.error == want.error,
                     where + "contiguous gave '" + QByteArray::fromStdString(want.error) +
                         "', this layout '" + QByteArray::fromStdString(got.error) + "'");
            if (want.error.empty()) {
              if (want.result.is_table()) {
                QVERIFY2(got.result.is_table(), where + "no table");
                QVERIFY2(same_table(want.result.table, got.result.table), where + "tables differ");
              } else {
                QVERIFY2(got.result.array.valid(), where + "no array");
                QVERIFY2(same_bytes(want.result.array.pull(), got.result.array.pull()),
                         where + "results differ");
              }
            }
            for (std::size_t i = 0; i < in.size(); ++i) {
              QVERIFY2(same_bytes(in[i].pull(), hosts[i]), where + "an input was changed");
            }
          }
        }
      }
    }
  }

  // A region view shares its parent's memory: writes through it land at its origin and
  // nowhere else, fills and zeroes stay inside it, and it reads back what is there.
  void region_view_semantics() {
    for (const Device& dev : test_devices()) {
      const Shape ps{4, 6, 9};
      std::vector<std::int16_t> base(ps.elements());
      for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<std::int16_t>(i);
      Array parent = Array::push(base, ps, dev);
      Array v = parent.view({{1, 2, 3}, {2, 3, 5}});
      QVERIFY(v.is_view() && !v.is_contiguous() && v.same_memory(parent));
      QCOMPARE(v.shape(), (Shape{2, 3, 5}));
      auto expect_view = [&] {
        std::vector<std::int16_t> e;
        for (std::size_t z = 1; z < 3; ++z)
          for (std::size_t y = 2; y < 5; ++y)
            for (std::size_t x = 3; x < 8; ++x) e.push_back(base[(z * 6 + y) * 9 + x]);
        return e;
      };
      QVERIFY(v.pull_as<std::int16_t>() == expect_view());
      // A view of a view adds the origins.
      Array vv = v.view({{1, 1, 1}, {1, 2, 3}});
      QCOMPARE(vv.pull_as<std::int16_t>().front(), base[(2 * 6 + 3) * 9 + 4]);
      v.fill(-7);
      for (std::size_t z = 0; z < 4; ++z)
        for (std::size_t y = 0; y < 6; ++y)
          for (std::size_t x = 0; x < 9; ++x) {
            const bool inside = z >= 1 && z < 3 && y >= 2 && y < 5 && x >= 3 && x < 8;
            if (inside) base[(z * 6 + y) * 9 + x] = -7;
          }
      QVERIFY(parent.pull_as<std::int16_t>() == base);
      v.zero();
      const auto zeroed = v.pull_as<std::int16_t>();
      QVERIFY(std::all_of(zeroed.begin(), zeroed.end(), [](std::int16_t x) { return x == 0; }));
      QCOMPARE(parent.pull_as<std::int16_t>()[0], std::int16_t(0));  // outside: kept
      QCOMPARE(stats(v).max.as_double(), 0.0);
      QCOMPARE(stats(vv).count, std::uint64_t(6));
      QVERIFY_THROWS_EXCEPTION(OutOfRange, (void)parent.view({{3, 0, 0}, {2, 1, 1}}));
      // A mapping of a view starts at its first pixel.
      {
        Mapping m = v.map(MapMode::read);
        const auto* p = reinterpret_cast<const std::int16_t*>(m.data());
        QCOMPARE(p[0], std::int16_t(0));
        QCOMPARE(p[-1], parent.pull_as<std::int16_t>()[(1 * 6 + 2) * 9 + 2]);
      }
      // Kernels of gpix::execute take no pitches: a view is refused with what works.
      QVERIFY_THROWS_EXCEPTION(
          InvalidArgument, execute("GPIX_KERNEL void k(GPIX_GLOBAL short* a) { a[0] = 1; }", "k",
                                   {1}, {v}, {}, dev));
    }
  }
};

QTEST_GUILESS_MAIN(TestLayouts)
#include "test_layouts.moc"
