// gpix::Table (columns stored column by column) and label_statistics' host half
// (label_stats_table) on buffers encoded here by hand, every key and sum encoding included:
// the float32 sums of a device without fp64 are never produced by the devices CI has.
// No device needed.
#include <QtTest>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "filters/label_stats_table.h"
#include "gpix/error.h"
#include "gpix/table.h"

using namespace gpix;

namespace {

bool is_unsigned_int(DType t) {
  return !is_float(t) && !is_signed(t);
}

// label_statistics.kernel's order-preserving keys, written from its header: unsigned as is,
// signed with the sign bit flipped, floats with every bit flipped when negative and the sign
// bit set when not.
template <class Key, class V>
Key encode_key(V v) {
  constexpr Key sign = Key{1} << (sizeof(Key) * 8 - 1);
  if constexpr (std::is_floating_point_v<V>) {
    Key bits;
    std::memcpy(&bits, &v, sizeof bits);
    return (bits & sign) ? static_cast<Key>(~bits) : static_cast<Key>(bits | sign);
  } else if constexpr (std::is_signed_v<V>) {
    return static_cast<Key>(static_cast<Key>(static_cast<std::make_signed_t<Key>>(v)) ^ sign);
  } else {
    return static_cast<Key>(v);
  }
}

template <class V>
void check_encoding(DType dtype, int sum_mode, std::size_t rows, std::size_t reps) {
  using Key = std::conditional_t<sizeof(V) == 8, std::uint64_t, std::uint32_t>;
  std::mt19937_64 rng(rows * 131 + reps);
  std::vector<std::uint32_t> area(rows), nans(rows, 0);
  std::vector<Key> mins(rows), maxs(rows);
  std::vector<std::uint32_t> s32(rows * reps);
  std::vector<std::uint64_t> s64(rows * reps);
  std::vector<double> want_sum(rows), want_min(rows), want_max(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    area[r] = static_cast<std::uint32_t>(rng() % 4);  // some labels absent
    if (rng() % 7 == 0) nans[r] = 1;
    V lo, hi;
    if constexpr (std::is_floating_point_v<V>) {
      lo = static_cast<V>(static_cast<double>(rng() % 2000001) / 1000.0 - 1000.0);
      hi = static_cast<V>(lo + static_cast<V>(rng() % 1000));
    } else {
      lo = static_cast<V>(rng());
      hi = static_cast<V>(rng());
      if (hi < lo) std::swap(lo, hi);
    }
    mins[r] = static_cast<Key>(~encode_key<Key>(lo));  // stored complemented
    maxs[r] = encode_key<Key>(hi);
    want_min[r] = static_cast<double>(lo);
    want_max[r] = static_cast<double>(hi);
    double sum = 0;
    std::int64_t isum = 0;
    for (std::size_t j = 0; j < reps; ++j) {
      // Unsigned images sum to unsigned totals: negative parts only for signed and floats.
      const std::int64_t part =
          static_cast<std::int64_t>(rng() % 100000) - (is_unsigned_int(dtype) ? 0 : 50000);
      isum += part;
      sum += static_cast<double>(part) / 4;
      if (sum_mode == 0) s64[r * reps + j] = static_cast<std::uint64_t>(part);
      if (sum_mode == 1) {
        const float f = static_cast<float>(part) / 4;
        std::memcpy(&s32[r * reps + j], &f, 4);
      }
      if (sum_mode == 2) {
        const double d = static_cast<double>(part) / 4;
        std::memcpy(&s64[r * reps + j], &d, 8);
      }
    }
    want_sum[r] = sum_mode == 0 ? static_cast<double>(isum) : sum;
  }
  detail::LabelStatsBuffers b;
  b.rows = rows;
  b.reps = reps;
  b.value_dtype = dtype;
  b.key_bits = sizeof(Key) * 8;
  b.key_mode = is_float(dtype) ? 2 : (is_signed(dtype) ? 1 : 0);
  b.sum_mode = sum_mode;
  b.area = area.data();
  b.nan_flags = nans.data();
  b.mins_complement = mins.data();
  b.maxs = maxs.data();
  b.sums = sum_mode == 1 ? static_cast<const void*>(s32.data()) : s64.data();
  const Table t = detail::label_stats_table(b);
  QCOMPARE(t.columns(), (std::vector<std::string>{"label", "area", "mean_intensity",
                                                  "min_intensity", "max_intensity"}));
  QCOMPARE(t.size(), rows);
  const std::span<const double> mean = t.column("mean_intensity");
  for (std::size_t r = 0; r < rows; ++r) {
    const QByteArray where = QByteArray(std::string(name(dtype)).c_str()) + " sum mode " +
                             QByteArray::number(sum_mode) + " row " + QByteArray::number(r);
    QVERIFY2(t(r, 0) == double(r + 1) && t.row(r)["area"] == area[r], where);
    if (area[r] == 0 || nans[r]) {
      QVERIFY2(std::isnan(mean[r]) && std::isnan(t(r, 3)) && std::isnan(t(r, 4)), where);
      continue;
    }
    QVERIFY2(mean[r] == want_sum[r] / area[r], where);
    QVERIFY2(t(r, 3) == want_min[r] && t(r, 4) == want_max[r], where);
  }
}

}  // namespace

class TestTable : public QObject {
  Q_OBJECT
 private slots:
  void rows_columns_and_names() {
    Table t({"a", "b", "c"}, {{1, 2, 3}, {4, 5, 6}});
    QCOMPARE(t.size(), std::size_t(2));
    QCOMPARE(t.width(), std::size_t(3));
    QCOMPARE(t(1, 2), 6.0);
    QCOMPARE(t.row(0).values(), (std::vector<double>{1, 2, 3}));
    QCOMPARE(t.row(1)["b"], 5.0);
    const std::span<const double> b = t.column("b");
    QCOMPARE(std::vector<double>(b.begin(), b.end()), (std::vector<double>{2, 5}));
    QVERIFY(t.has_column("c") && !t.has_column("d"));
    std::vector<double> seen;
    for (double v : t.row(1)) seen.push_back(v);
    QCOMPARE(seen, (std::vector<double>{4, 5, 6}));
    t.column("c")[0] = 30;
    t(1, 0) = 40;
    QCOMPARE(t.row(0).values(), (std::vector<double>{1, 2, 30}));
    QCOMPARE(t(1, 0), 40.0);
    // Zero rows keep their columns (an image without labels).
    const Table empty({"label", "area"});
    QCOMPARE(empty.size(), std::size_t(0));
    QCOMPARE(empty.column("area").size(), std::size_t(0));
    QVERIFY(Table({"x"}, 3) == Table({"x"}, {{0}, {0}, {0}}));
  }

  void errors_name_what_would_work() {
    Table t({"label", "area"}, 1);
    try {
      (void)t.column("volume");
      QFAIL("no error for an unknown column");
    } catch (const InvalidArgument& e) {
      QVERIFY2(std::string(e.what()).find("volume") != std::string::npos &&
                   std::string(e.what()).find("label, area") != std::string::npos,
               e.what());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, t.push_back({1, 2, 3}));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (void)t.row(0)["mean"]);
    const std::size_t bad[] = {0, 1};
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, (void)t.select(bad));
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Table({"a", "b"}, {{1, 2}, {3}}));
  }

  // Growth keeps every value in place; copies are deep and drop the spare capacity; moves
  // leave the source empty; select gathers rows in the order given.
  void growth_copies_and_select() {
    Table t({"i", "sq"});
    for (int i = 0; i < 1000; ++i) t.push_back({double(i), double(i) * i});
    QCOMPARE(t.size(), std::size_t(1000));
    for (std::size_t i = 0; i < 1000; ++i)
      QVERIFY(t(i, 0) == double(i) && t(i, 1) == double(i * i));
    Table c = t;
    QVERIFY(c == t);
    c(5, 1) = -1;
    QCOMPARE(t(5, 1), 25.0);
    QVERIFY(!(c == t));
    c = t;
    QVERIFY(c == t);
    c = c;  // self-assignment keeps it
    QVERIFY(c == t);
    Table m = std::move(c);
    QVERIFY(m == t);
    QCOMPARE(c.size(), std::size_t(0));  // NOLINT(bugprone-use-after-move): moved-from is empty
    const std::vector<std::size_t> order = {999, 0, 500, 500};
    const Table s = t.select(order);
    QCOMPARE(s.size(), std::size_t(4));
    QCOMPARE(s.column("sq")[0], 999.0 * 999);
    QCOMPARE(s.row(2).values(), (std::vector<double>{500, 250000}));
    QCOMPARE(s.row(3).values(), s.row(2).values());
    const Table nan({"x"}, {{std::nan("")}});
    QVERIFY(!(nan == nan));  // as doubles compare
  }

  void label_stats_encodings() {
    for (std::size_t rows : {std::size_t{1}, std::size_t{37}, std::size_t{3000}}) {
      for (std::size_t reps : {std::size_t{1}, std::size_t{3}, std::size_t{32}}) {
        check_encoding<std::uint8_t>(DType::u8, 0, rows, reps);
        check_encoding<std::int16_t>(DType::i16, 0, rows, reps);
        check_encoding<std::uint32_t>(DType::u32, 0, rows, reps);
        check_encoding<std::int32_t>(DType::i32, 0, rows, reps);
        check_encoding<std::uint64_t>(DType::u64, 2, rows, reps);
        check_encoding<std::int64_t>(DType::i64, 2, rows, reps);
        check_encoding<float>(DType::f32, 1, rows, reps);
        check_encoding<float>(DType::f32, 2, rows, reps);
        check_encoding<double>(DType::f64, 2, rows, reps);
        if (QTest::currentTestFailed()) return;
      }
    }
    // No labels: the columns, no rows.
    const Table none = detail::label_stats_table({});
    QCOMPARE(none.width(), std::size_t(5));
    QCOMPARE(none.size(), std::size_t(0));
  }
};

QTEST_APPLESS_MAIN(TestTable)
#include "test_table.moc"
