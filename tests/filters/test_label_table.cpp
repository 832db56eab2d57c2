// label_statistics' table (gpix::Table, stored column by column) against a plain per-label
// reference computed here: random blobs whose ids leave gaps, one label present at a single
// pixel, every label dtype the filter accepts, 2D and 3D, odd shapes, 1-pixel extents and a
// realistic 64 x 512 x 512 stack with ~100000 labels (one sum slot per label, as on large
// label images). Each value is read both by column name and by row.
#include <QtTest>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "gpix/filters.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;
using namespace gpix::test;

namespace {

std::size_t irand(std::size_t n) {
  return n == 0 ? 0 : static_cast<std::size_t>(rng()() % n);
}

// Box blobs of random extent (about elements / blobs pixels each) labelled with ids drawn
// from 1..max_id (max_id >= 3), so that some label several blobs; one id below `once` is
// never drawn (a gap), and `once` is put at a single pixel after the blobs.
std::vector<std::uint64_t> blob_labels(const Shape& s, std::uint64_t max_id, std::size_t blobs) {
  const std::size_t w = s.width(), h = s.height(), d = s.depth();
  std::vector<std::uint64_t> v(s.elements(), 0);
  const double side = std::pow(double(s.elements()) / double(blobs), d > 1 ? 1.0 / 3 : 0.5);
  const auto extent = [&](std::size_t len) {
    return std::min(len, 1 + irand(std::size_t(2 * side) + 1));
  };
  const std::uint64_t once = 2 + irand(max_id - 1), gap = 1 + irand(once - 1);
  for (std::size_t k = 0; k < blobs; ++k) {
    std::uint64_t id = 0;
    while (id == 0 || id == once || id == gap) id = 1 + irand(max_id);
    const std::size_t bw = extent(w), bh = extent(h), bd = extent(d);
    const std::size_t x0 = irand(w - bw + 1), y0 = irand(h - bh + 1), z0 = irand(d - bd + 1);
    for (std::size_t z = z0; z < z0 + bd; ++z) {
      for (std::size_t y = y0; y < y0 + bh; ++y) {
        for (std::size_t x = x0; x < x0 + bw; ++x) v[(z * h + y) * w + x] = id;
      }
    }
  }
  v[irand(v.size())] = once;
  return v;
}

struct RefRow {
  std::size_t area = 0;
  long double sum = 0;
  double lo = 0, hi = 0;
};

template <class L, class V>
void check_case(const Device& dev, const Shape& s, std::uint64_t max_id, std::size_t blobs) {
  const DType lt = dtype_of<L>, vt = dtype_of<V>;
  const QByteArray where =
      QByteArray(s.str().c_str()) + " labels " + name(lt).data() + " intensity " + name(vt).data();
  const std::vector<std::uint64_t> ids = blob_labels(s, max_id, blobs);
  const std::vector<L> lab(ids.begin(), ids.end());
  std::vector<V> val(ids.size());
  {
    // Small values: sums of integers stay exact in float64 and floats keep their precision.
    std::uniform_int_distribution<int> dist(std::is_signed_v<V> ? -1000 : 0, 1000);
    for (auto& x : val) x = static_cast<V>(dist(rng()));
  }
  std::uint64_t rows = 0;
  for (std::uint64_t id : ids) rows = std::max(rows, id);
  std::vector<RefRow> ref(rows + 1);
  std::size_t once = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    RefRow& r = ref[ids[i]];
    const double x = static_cast<double>(val[i]);
    if (r.area == 0 || x < r.lo) r.lo = x;
    if (r.area == 0 || x > r.hi) r.hi = x;
    ++r.area;
    r.sum += x;
  }
  for (std::size_t id = 1; id <= rows; ++id) once += ref[id].area == 1;

  const Table t = label_statistics(Array::push(lab, s, dev), Array::push(val, s, dev));
  QVERIFY2(t.size() == rows, where + " rows " + QByteArray::number(qulonglong(t.size())));
  const std::span<const double> label = t.column("label"), area = t.column("area"),
                                mean = t.column("mean_intensity"), lo = t.column("min_intensity"),
                                hi = t.column("max_intensity");
  const double rel = std::is_same_v<V, float> && !dev.supports_fp64() ? 1e-6 : 1e-13;
  std::size_t gaps = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    const RefRow& want = ref[r + 1];
    const Table::Row row = t.row(r);
    const QByteArray at = where + " label " + QByteArray::number(qulonglong(r + 1));
    QVERIFY2(label[r] == double(r + 1) && row[0] == label[r], at);
    QVERIFY2(area[r] == double(want.area) && row["area"] == area[r], at);
    if (want.area == 0) {
      ++gaps;
      QVERIFY2(std::isnan(mean[r]) && std::isnan(lo[r]) && std::isnan(hi[r]), at);
      continue;
    }
    const double m = static_cast<double>(want.sum / static_cast<long double>(want.area));
    QVERIFY2(std::fabs(mean[r] - m) <= rel * std::max(1000.0, std::fabs(m)),
             at + " mean " + QByteArray::number(mean[r]) + " want " + QByteArray::number(m));
    QVERIFY2(row[2] == mean[r], at);
    QVERIFY2(lo[r] == want.lo && hi[r] == want.hi && row[3] == lo[r] && row[4] == hi[r], at);
  }
  // The data holds what the test is about.
  QVERIFY2(gaps > 0 && once > 0, where + " no gap or no single pixel");
}

template <class L>
void check_label_dtype(const Device& dev, std::uint64_t id_cap) {
  const std::vector<Shape> shapes = {
      Shape{1, 1},    Shape{1, 97},     Shape{97, 1},     Shape{37, 53},  Shape{257, 129},
      Shape{1, 1, 1}, Shape{1, 33, 17}, Shape{13, 1, 29}, Shape{7, 9, 1}, Shape{31, 45, 23}};
  for (const Shape& s : shapes) {
    const std::size_t blobs = std::max<std::size_t>(1, s.elements() / 40);
    const std::uint64_t max_id = std::min<std::uint64_t>(id_cap, 2 * blobs + 3);
    check_case<L, float>(dev, s, max_id, blobs);
    check_case<L, std::uint16_t>(dev, s, max_id, blobs);
    check_case<L, std::int32_t>(dev, s, max_id, blobs);
    if (dev.supports_fp64()) check_case<L, double>(dev, s, max_id, blobs);
    if (QTest::currentTestFailed()) return;
  }
}

}  // namespace

class TestLabelTable : public QObject {
  Q_OBJECT
 private slots:
  void label_dtypes_data() { add_device_rows(); }
  void label_dtypes() {
    const Device dev = fetch_device();
    check_label_dtype<std::uint8_t>(dev, 255);
    check_label_dtype<std::int8_t>(dev, 127);
    check_label_dtype<std::uint16_t>(dev, 65535);
    check_label_dtype<std::int16_t>(dev, 32767);
    check_label_dtype<std::uint32_t>(dev, 1u << 24);
    check_label_dtype<std::int32_t>(dev, 1u << 24);
    check_label_dtype<std::uint64_t>(dev, 1u << 24);
    check_label_dtype<std::int64_t>(dev, 1u << 24);
  }

  // Many labels, as label images of cells and nuclei have: one sum slot per label.
  void many_labels_data() { add_device_rows(); }
  void many_labels() {
    const Device dev = fetch_device();
    check_case<std::uint32_t, float>(dev, Shape{1023, 1025}, 90000, 120000);
    check_case<std::uint32_t, float>(dev, Shape{64, 512, 512}, 100000, 150000);
  }
};

QTEST_APPLESS_MAIN(TestLabelTable)
#include "test_label_table.moc"
