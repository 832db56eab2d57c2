// DLPack export and import on the host, with a counting deleter on every path, and the
// device paths that work without CUDA (push of a CPU tensor, rejection of OpenCL export).
#include <QTest>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/dlpack.h"
#include "moments.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

// A producer's tensor over a vector it owns, counting deleter calls.
struct Producer {
  static inline int deleted = 0;
  struct Ctx {
    DLManagedTensor t{};
    std::vector<std::byte> bytes;
    std::vector<std::int64_t> shape, strides;
  };
  static DLManagedTensor* make(std::vector<std::byte> bytes, std::vector<std::int64_t> shape,
                               DLDataType dt, std::vector<std::int64_t> strides = {},
                               std::uint64_t offset = 0, DLDeviceType dev = kDLCPU) {
    auto* c = new Ctx;
    c->bytes = std::move(bytes);
    c->shape = std::move(shape);
    c->strides = std::move(strides);
    c->t.dl_tensor.data = c->bytes.data();
    c->t.dl_tensor.device = {dev, 0};
    c->t.dl_tensor.ndim = static_cast<int>(c->shape.size());
    c->t.dl_tensor.dtype = dt;
    c->t.dl_tensor.shape = c->shape.data();
    c->t.dl_tensor.strides = c->strides.empty() ? nullptr : c->strides.data();
    c->t.dl_tensor.byte_offset = offset;
    c->t.manager_ctx = c;
    c->t.deleter = [](DLManagedTensor* self) {
      ++deleted;
      delete static_cast<Ctx*>(self->manager_ctx);
    };
    return &c->t;
  }
};

std::vector<std::byte> random_bytes(std::size_t n) {
  const auto v = test::random_bits<std::uint8_t>(n);
  std::vector<std::byte> b(n);
  std::memcpy(b.data(), v.data(), n);
  return b;
}

}  // namespace

class TestDlpack : public QObject {
  Q_OBJECT
 private slots:
  void init() { Producer::deleted = 0; }

  void dtypes() {
    for (DType t : kAllDTypes)
      QCOMPARE(from_dlpack_dtype(to_dlpack_dtype(t)), std::optional<DType>(t));
    QVERIFY(!from_dlpack_dtype({kDLFloat, 16, 1}));
    QVERIFY(!from_dlpack_dtype({kDLBfloat, 16, 1}));
    QVERIFY(!from_dlpack_dtype({kDLComplex, 64, 1}));
    QVERIFY(!from_dlpack_dtype({6, 8, 1}));  // kDLBool in DLPack 0.8+
    QVERIFY(!from_dlpack_dtype({kDLFloat, 32, 4}));
  }

  void export_import_host_data() {
    QTest::addColumn<DType>("dtype");
    for (DType t : kAllDTypes) QTest::newRow(name(t).data()) << t;
  }
  void export_import_host() {
    QFETCH(DType, dtype);
    for (const Shape& s : test::odd_shapes()) {
      HostArray h = HostArray::empty(s, dtype);
      const auto bytes = random_bytes(h.bytes());
      std::memcpy(h.data(), bytes.data(), h.bytes());
      DLManagedTensor* t = to_dlpack(h);
      QCOMPARE(t->dl_tensor.device.device_type, kDLCPU);
      QCOMPARE(t->dl_tensor.ndim, s.ndim());
      QCOMPARE(t->dl_tensor.data, static_cast<void*>(h.data()));  // shared, no copy
      for (int i = 0; i < s.ndim(); ++i)
        QCOMPARE(t->dl_tensor.shape[i], static_cast<std::int64_t>(s[i]));
      QCOMPARE(t->dl_tensor.strides[s.ndim() - 1], std::int64_t{1});
      // Copy import: same bytes, own memory; the export's deleter runs inside.
      const HostArray back = host_from_dlpack(t, DlpackImport::copy);
      QCOMPARE(back.shape(), s);
      QCOMPARE(back.dtype(), dtype);
      QVERIFY(back.data() != h.data());
      QVERIFY(std::memcmp(back.data(), bytes.data(), back.bytes()) == 0);
      // Wrap import: shares memory until the last HostArray copy dies.
      DLManagedTensor* t2 = to_dlpack(h);
      {
        HostArray w = host_from_dlpack(t2, DlpackImport::wrap);
        QCOMPARE(w.data(), h.data());
      }
    }
  }

  void import_counts_deleter() {
    const std::vector<float> vals = test::random_values<float>(2 * 3 * 4 + 2);
    std::vector<std::byte> bytes(vals.size() * 4);
    std::memcpy(bytes.data(), vals.data(), bytes.size());
    const DLDataType f32{kDLFloat, 32, 1};
    {
      // NULL strides, byte_offset of two elements.
      const HostArray h = host_from_dlpack(Producer::make(bytes, {2, 3, 4}, f32, {}, 8));
      QCOMPARE(Producer::deleted, 1);  // copy: at once
      QCOMPARE(h.shape(), (Shape{2, 3, 4}));
      QVERIFY(std::memcmp(h.data(), vals.data() + 2, h.bytes()) == 0);
    }
    {
      // Explicit compact strides with an arbitrary stride on an extent-1 axis.
      HostArray w = host_from_dlpack(Producer::make(bytes, {1, 3, 4}, f32, {99, 4, 1}, 4),
                                     DlpackImport::wrap);
      QCOMPARE(Producer::deleted, 1);  // wrap: still alive
      QVERIFY(std::memcmp(w.data(), vals.data() + 1, w.bytes()) == 0);
      HostArray copy_of_handle = w;
      w = HostArray();
      QCOMPARE(Producer::deleted, 1);
      copy_of_handle = HostArray();
      QCOMPARE(Producer::deleted, 2);
    }
    // Every rejection calls the deleter exactly once.
    int expected = 2;
    auto rejects = [&](auto exception_tag, DLManagedTensor* t) {
      using E = decltype(exception_tag);
      bool thrown = false;
      try {
        (void)host_from_dlpack(t, DlpackImport::wrap);
      } catch (const E&) {
        thrown = true;
      }
      QVERIFY(thrown);
      QCOMPARE(Producer::deleted, ++expected);
    };
    rejects(InvalidArgument{""}, Producer::make(bytes, {2, 3, 4}, f32, {1, 2, 6}));  // column-major
    rejects(InvalidArgument{""}, Producer::make(bytes, {2, 3, 2}, f32, {12, 4, 2}));    // a view
    rejects(UnsupportedDType{""}, Producer::make(bytes, {2, 3}, {kDLFloat, 32, 4}));    // lanes
    rejects(UnsupportedDType{""}, Producer::make(bytes, {2, 3}, {kDLFloat, 16, 1}));    // f16
    rejects(UnsupportedDType{""}, Producer::make(bytes, {2, 3}, {kDLBfloat, 16, 1}));   // bf16
    rejects(UnsupportedDType{""}, Producer::make(bytes, {2, 3}, {kDLComplex, 64, 1}));  // complex
    rejects(UnsupportedDType{""}, Producer::make(bytes, {2, 3}, {6, 8, 1}));            // bool
    rejects(InvalidArgument{""}, Producer::make(bytes, {2, 2, 2, 2}, f32));             // 4D
    rejects(InvalidArgument{""}, Producer::make(bytes, {}, f32));                       // 0-d
    rejects(InvalidArgument{""}, Producer::make(bytes, {3, 0}, f32));                   // empty
    rejects(InvalidArgument{""}, Producer::make(bytes, {2, 3}, f32, {}, 0, kDLCUDA));   // device
    rejects(InvalidArgument{""}, Producer::make(bytes, {2, 3}, f32, {}, 2));  // misaligned wrap
    // Extents whose product no memory holds (fuzz_dlpack: the compact-stride check multiplied
    // them in signed 64 bits and overflowed, undefined behaviour), with and without strides.
    rejects(InvalidArgument{""}, Producer::make(bytes, {5348261237081915970, 7}, f32, {7, 1}));
    rejects(InvalidArgument{""}, Producer::make(bytes, {std::int64_t{1} << 40, 1 << 22}, f32));
    rejects(InvalidArgument{""}, Producer::make(bytes, {std::int64_t{1} << 61, 1}, f32));
    DLManagedTensor* null_data = Producer::make(bytes, {2}, f32);
    null_data->dl_tensor.data = nullptr;
    rejects(InvalidArgument{""}, null_data);
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, host_from_dlpack(nullptr));
  }

  void device_paths_data() { test::add_device_rows(); }
  void device_paths() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    const auto vals = test::random_values<std::int16_t>(5 * 7);
    std::vector<std::byte> bytes(vals.size() * 2);
    std::memcpy(bytes.data(), vals.data(), bytes.size());
    const Array a = array_from_dlpack(Producer::make(bytes, {5, 7}, {kDLInt, 16, 1}), dev);
    QCOMPARE(Producer::deleted, 1);
    QCOMPARE(a.shape(), (Shape{5, 7}));
    QVERIFY(a.pull_as<std::int16_t>() == vals);
    if (dev.backend() == Backend::opencl) {
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, to_dlpack(a));
      // A CUDA tensor offered to an OpenCL device is refused, and freed.
      QVERIFY_THROWS_EXCEPTION(
          InvalidArgument,
          array_from_dlpack(Producer::make(bytes, {5, 7}, {kDLInt, 16, 1}, {}, 0, kDLCUDA), dev));
      QCOMPARE(Producer::deleted, 2);
    } else {
      // CUDA: export shares device memory, import wraps it back (deleter when the Array dies).
      DLManagedTensor* t = to_dlpack(a);
      QCOMPARE(t->dl_tensor.device.device_type, kDLCUDA);
      {
        const Array b = array_from_dlpack(t, dev);
        QVERIFY(b.pull_as<std::int16_t>() == vals);
      }
      // A tensor that starts between 4-byte words (a row of a view, one or two elements in):
      // kernels that read words (stats()) must not take its alignment for granted.
      for (const std::size_t x0 : {std::size_t{1}, std::size_t{2}}) {
        const Array c = array_from_dlpack(to_dlpack(a.view(Region{{2, x0}, {1, 7 - x0}})), dev);
        const std::vector<std::int16_t> row(vals.begin() + 2 * 7 + static_cast<long>(x0),
                                            vals.begin() + 3 * 7);
        QVERIFY(c.pull_as<std::int16_t>() == row);
        const Stats s = stats(c);
        QCOMPARE(s.min.exact_as<std::int16_t>(), *std::min_element(row.begin(), row.end()));
        QCOMPARE(s.max.exact_as<std::int16_t>(), *std::max_element(row.begin(), row.end()));
        QCOMPARE(s.sum.exact_as<std::int64_t>(),
                 std::accumulate(row.begin(), row.end(), std::int64_t{0}));
        // extrema() reads 16-byte words after the elements before the first word boundary.
        const Stats e = detail::extrema(c);
        QCOMPARE(e.min.exact_as<std::int16_t>(), s.min.exact_as<std::int16_t>());
        QCOMPARE(e.max.exact_as<std::int16_t>(), s.max.exact_as<std::int16_t>());
      }
      // The same past a misaligned start over many words: the view's first element (read
      // alone, before the first 16-byte boundary, where x0 leaves one) holds the minimum and
      // its last (read alone after the last whole word) the maximum.
      for (const std::size_t x0 : {std::size_t{1}, std::size_t{3}, std::size_t{7}}) {
        auto wide = test::random_values<std::int16_t>(3 * 1001);
        wide[1001 + x0] = std::numeric_limits<std::int16_t>::lowest();
        wide[2001] = std::numeric_limits<std::int16_t>::max();
        const Array w = Array::push(wide, Shape{3, 1001}, dev);
        const Array c = array_from_dlpack(to_dlpack(w.view(Region{{1, x0}, {1, 1001 - x0}})), dev);
        const Stats e = detail::extrema(c);
        QCOMPARE(e.min.exact_as<std::int16_t>(), std::numeric_limits<std::int16_t>::lowest());
        QCOMPARE(e.max.exact_as<std::int16_t>(), std::numeric_limits<std::int16_t>::max());
        // Flat passes move 2-byte data as four-element vectors only from aligned buffers
        // (flat_v4_ok): this view takes the element path, and its every element comes out.
        const std::vector<std::int16_t> in(wide.begin() + 1001 + static_cast<long>(x0),
                                           wide.begin() + 2002);
        std::vector<std::int16_t> inverted(in.size());
        std::vector<std::uint8_t> zero(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) {
          inverted[i] = static_cast<std::int16_t>(-1 - in[i]);
          zero[i] = in[i] == 0 ? 1 : 0;
        }
        QVERIFY(run("invert", c).array.pull_as<std::int16_t>() == inverted);
        QVERIFY(run("binary_not", c).array.pull_as<std::uint8_t>() == zero);
      }
      // 4-byte elements from a start between 16-byte boundaries (these leave two, one, none
      // and three elements before the first), as a kernel that loads whole vectors would
      // meet them: the minimum first, the maximum last, a NaN between; quarters, whose sums
      // are exact in any order.
      for (const std::size_t x0 :
           {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{4}}) {
        std::vector<float> wide(3 * 1001);
        for (std::size_t i = 0; i < wide.size(); ++i)
          wide[i] = static_cast<float>(i % 97) * 0.25f - 10.0f;
        wide[1001 + x0] = -500.0f;
        wide[2001] = 500.0f;
        wide[1500] = std::numeric_limits<float>::quiet_NaN();
        const Array w = Array::push(wide, Shape{3, 1001}, dev);
        const Array c = array_from_dlpack(to_dlpack(w.view(Region{{1, x0}, {1, 1001 - x0}})), dev);
        double sum = 0;
        for (std::size_t i = 1001 + x0; i < 2002; ++i) {
          if (i != 1500) sum += wide[i];
        }
        const Stats e = detail::extrema(c), full = stats(c);
        for (const Stats& r : {e, full}) {
          QCOMPARE(r.min.as_double(), -500.0);
          QCOMPARE(r.max.as_double(), 500.0);
          QCOMPARE(r.nan_count, std::uint64_t{1});
          QCOMPARE(r.count, std::uint64_t{1001 - x0 - 1});
        }
        QCOMPARE(full.sum.as_double(), sum);
      }
    }
    QVERIFY_THROWS_EXCEPTION(
        InvalidArgument,
        array_from_dlpack(Producer::make(bytes, {5, 7}, {kDLInt, 16, 1}, {}, 0, kDLMetal), dev));
  }
};

QTEST_GUILESS_MAIN(TestDlpack)
#include "test_dlpack.moc"
