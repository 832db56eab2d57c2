// gpix::run_tiled: every tileable catalog filter, cut into 8-20 slabs by a small memory
// budget, gives the whole-array result bit for bit (2D and 3D, odd sizes, the filter's
// default and larger windows, several dtypes); filters that fold their slabs (projections,
// reductions, histogram, Otsu) give it too, bit for bit except float sums and means and the
// standard deviation of all pixels (float64 sums of another grouping: within 1e-12 of the sum
// of magnitudes); sources and sinks see every plane once, writes in order; untileable filters,
// small budgets and cancel give typed errors; with two devices (POCL_DEVICES="pthread
// pthread") the slabs are shared, and each device's budget covers the slabs of all its
// workers (a memory limit of the budget on every device). connected_components, labelled per
// slab and joined across slab faces, equals the whole-array labelling and a plain flood fill
// on the host, numbers included, on blobs, spirals, stripes and objects that cross every slab.
#include <QTest>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <numbers>
#include <random>
#include <set>

#include "backend/backend.h"
#include "detail.h"
#include "filters/registry.h"
#include "gpix/gpix.h"
#include "memory_pool.h"
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

// What `planes` planes of `plane_cost` bytes take in the pool, whose blocks round each array
// up to its size class (as run_tiled plans them: every array of a slab is its pixels times a
// power of two bytes).
std::uint64_t rounded_up(std::uint64_t plane_cost, std::uint64_t planes, std::uint64_t plane_px) {
  const std::uint64_t bytes = planes * plane_px * 8;
  const std::uint64_t cls = detail::MemoryPool::size_class(bytes);
  return (plane_cost * planes * cls + bytes - 1) / bytes;
}

// The budget that cuts `planes` planes into about `want` slabs (same working-set rule as
// run_tiled: twice the inputs plus an output of the widest of (inputs, 4 bytes), or the
// filter's own peak per pixel (`filter_bytes`, its WorkingSetFn) where more, one more output
// on its way back, one more slab of inputs where the device pushes the next slab beside the
// filter, and the pool's rounding of each array up to its size class). Every test runs on
// devices of the first device's kind.
std::size_t plane_cost_for(const Shape& s, DType t, std::size_t inputs,
                           std::size_t filter_bytes = 0) {
  const std::size_t plane = s.elements() / s[0];
  const std::size_t out = plane * std::max<std::size_t>(4, size_of(t));
  const bool pipelined = detail::Access::impl(test::test_devices().front()).tiled_pipeline();
  return std::max(2 * (inputs * plane * size_of(t) + out), plane * filter_bytes) + out +
         (pipelined ? inputs * plane * size_of(t) : 0);
}
std::uint64_t budget_for(const Shape& s, DType t, std::size_t inputs, std::size_t halo,
                         std::size_t want, std::size_t filter_bytes = 0) {
  const std::size_t slab = std::max<std::size_t>(1, (s[0] + want - 1) / want);
  return rounded_up(plane_cost_for(s, t, inputs, filter_bytes), slab + 2 * halo,
                    s.elements() / s[0]);
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
    const Params p = wide ? wide_params(f) : Params{};
    // Deep enough for several slabs of planes and halo that are not the whole image (a slab
    // that holds every plane is the whole image: one slab).
    const std::size_t halo = tile_halo(f.name, dims, p);
    const std::size_t deep = 3 * halo + 8;
    // Planes large enough that the slabs' arrays, not a kernel's few bytes of scratch, fill
    // the budget that is the device's memory limit below.
    const Shape s = dims == 3 ? Shape{std::max<std::size_t>(23, deep), 48, 61}
                              : Shape{std::max<std::size_t>(41, deep), 3001};
    for (DType t : dtypes) {
      if (std::find(f.dtypes.begin(), f.dtypes.end(), t) == f.dtypes.end()) continue;
      if (t == DType::f64 && !devices[0].supports_fp64()) continue;
      if (tested >= 2 + dims) break;  // a few dtypes per filter keep CI short
      ++tested;
      std::vector<HostArray> hosts;
      std::vector<Array> arrays;
      for (std::size_t i = 0; i < f.inputs.size(); ++i) {
        hosts.push_back(random_host(s, t));
        arrays.push_back(Array::push(hosts.back(), devices[0]));
      }
      const Result whole = run(f.name, arrays, p);
      TiledOptions o;
      o.devices = devices;
      // 14: the pool's rounding may let the planner fit a plane or two more than asked.
      o.budget_bytes =
          budget_for(s, t, hosts.size(), halo, 14, detail::entry(f.name).working_set(p, dims, t));
      int slabs = 0;
      o.progress = [&](double) { ++slabs; };
      TiledReport report;
      o.report = &report;
      // The budget is what the slabs may hold on the device: with it as the device's memory
      // limit (beside what this test holds) the run must not run out of memory.
      for (const Device& d : devices) {
        trim(d);
        set_memory_limit(d, memory_stats(d).bytes_in_use + o.budget_bytes + (64u << 10));
      }
      HostArray tiled;
      try {
        tiled = run_tiled(f.name, hosts, p, o);
      } catch (const OutOfMemory& e) {
        for (const Device& d : devices) set_memory_limit(d, 0);
        QFAIL((f.name + " " + std::string(name(t)) + " " + s.str() + ": " + e.what()).c_str());
      }
      for (const Device& d : devices) set_memory_limit(d, 0);
      const QByteArray where = QByteArray::fromStdString(
          f.name + " " + std::string(name(t)) + " " + s.str() + (wide ? " wide" : " defaults") +
          " halo " + std::to_string(halo) + " slabs " + std::to_string(slabs));
      QVERIFY2(slabs >= 5 && slabs <= 23, where);
      QVERIFY2(same_bytes(tiled, whole.array), where + " differs from the whole-array run");
      QCOMPARE(report.slabs, static_cast<std::size_t>(slabs));
      QCOMPARE(report.halo, halo);
      QCOMPARE(report.bytes_out, tiled.bytes());
      if (devices.size() == 1) {
        // One worker takes the slabs in order and keeps the planes two slabs share on the
        // device: every input plane crosses the bus once, halos included.
        std::uint64_t in_bytes = 0;
        for (const HostArray& h : hosts) in_bytes += h.bytes();
        QVERIFY2(report.bytes_in == in_bytes,
                 where + " pushed " + QByteArray::number(qulonglong(report.bytes_in)) +
                     " bytes for " + QByteArray::number(qulonglong(in_bytes)));
      }
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
  // Every dtype: the integer projections take paths of their own by size and sign.
  const DType dtypes[] = {DType::f32, DType::u16, DType::u8,  DType::i32, DType::f64,
                          DType::i8,  DType::i16, DType::u32, DType::i64, DType::u64};
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
        QCOMPARE(table.columns(), whole.table.columns());
        QCOMPARE(table.size(), whole.table.size());
        // Sums and means of floats and of 64-bit integers, and every standard deviation
        // (float64 moments), are float64 sums grouped by slab here and by work-group there.
        const bool rounded = f.name == "std_of_all_pixels" ||
                             ((is_float(t) || size_of(t) == 8) &&
                              (f.name == "sum_of_all_pixels" || f.name == "mean_of_all_pixels"));
        const double mag = magnitude_sum(h);
        for (std::size_t r = 0; r < table.size(); ++r) {
          for (std::size_t c = 0; c < table.width(); ++c) {
            const double a = table(r, c), b = whole.table(r, c);
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

// ---- connected components

// A binary image of n0 planes of n1 x n2 (2D: n1 == 1, shape {n0, n2}) from f(i0, i1, i2).
template <class F>
HostArray binary(std::size_t n0, std::size_t n1, std::size_t n2, F f) {
  const Shape s = n1 == 1 ? Shape{n0, n2} : Shape{n0, n1, n2};
  HostArray h = HostArray::empty(s, DType::u8);
  auto v = h.as<std::uint8_t>();
  std::size_t i = 0;
  for (std::size_t a = 0; a < n0; ++a)
    for (std::size_t b = 0; b < n1; ++b)
      for (std::size_t c = 0; c < n2; ++c) v[i++] = f(long(a), long(b), long(c)) ? 1 : 0;
  return h;
}

// Uniform noise box-smoothed (radius 2 on every axis of the image), above `level`: blobs of
// every size, near level 0.5 some spanning the image.
HostArray blobs(std::size_t n0, std::size_t n1, std::size_t n2, double level, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  const std::size_t n = n0 * n1 * n2;
  std::vector<float> a(n), b(n);
  for (float& x : a) x = u(rng);
  const std::size_t dims[] = {n0, n1, n2}, strides[] = {n1 * n2, n2, 1};
  for (int axis = 0; axis < 3; ++axis) {
    if (dims[axis] == 1) continue;
    for (std::size_t i = 0; i < n; ++i) {
      const long p = long(i / strides[axis] % dims[axis]);
      float sum = 0;
      int cnt = 0;
      for (long d = -2; d <= 2; ++d) {
        if (p + d < 0 || p + d >= long(dims[axis])) continue;
        sum += a[std::size_t(long(i) + d * long(strides[axis]))];
        ++cnt;
      }
      b[i] = sum / float(cnt);
    }
    std::swap(a, b);
  }
  std::size_t i = 0;
  return binary(n0, n1, n2, [&](long, long, long) { return a[i++] > level; });
}

// The images the tiled labelling is checked on, each of n0 planes of n1 x n2.
std::vector<std::pair<std::string, HostArray>> component_images(std::size_t n0, std::size_t n1,
                                                                std::size_t n2) {
  std::vector<std::pair<std::string, HostArray>> out;
  out.emplace_back("blobs 0.5", blobs(n0, n1, n2, 0.5, 7));
  out.emplace_back("blobs 0.56", blobs(n0, n1, n2, 0.56, 8));
  // A spiral band in the (axis 0, axis 2) plane around the image's centre (a sheet in 3D,
  // tilted along axis 1 so that it also crosses slab faces diagonally).
  out.emplace_back("spiral", binary(n0, n1, n2, [&](long a, long b, long c) {
                     const double y = double(a) - double(n0) / 2,
                                  x = double(c) - double(n2) / 2 + 0.3 * double(b);
                     const double r = std::hypot(x, y), t = std::atan2(y, x) + std::numbers::pi;
                     const double turn = (r - 1.3 * t) / (2 * std::numbers::pi * 1.3);
                     return turn - std::floor(turn) < 0.35;
                   }));
  // Diagonal lines one pixel wide: joined only by full connectivity across faces.
  out.emplace_back("diagonals", binary(n0, n1, n2, [](long a, long b, long c) {
                     return (a + b + c) % 5 == 0 || (a - c + 1000) % 7 == 0;
                   }));
  // One object through every slab (a spine along axis 0 with teeth), and U shapes whose two
  // arms start apart in the first slab and meet only in the last plane.
  out.emplace_back("spine and arms", binary(n0, n1, n2, [&](long a, long b, long c) {
                     const long last = long(n0) - 1;
                     if (c == 1 && b == 0) return true;                          // the spine
                     if (a % 6 == 0 && c < long(n2) / 3 && b == 0) return true;  // its teeth
                     const bool arm = (c == long(n2) - 2 || c == long(n2) / 2 + 1) && a >= 1;
                     const bool bottom = a == last && c > long(n2) / 2 && c < long(n2) - 1;
                     return (arm || bottom) && b < 2;
                   }));
  // Noise of one pixel in three.
  std::mt19937 rng(11);
  out.emplace_back("noise", binary(n0, n1, n2, [&](long, long, long) { return rng() % 3 == 0; }));
  return out;
}

// The labelling by a flood fill in raster order (components numbered by their first pixel).
std::vector<std::uint32_t> flood_labels(const HostArray& h, bool full) {
  const Shape& s = h.shape();
  const long n0 = long(s[0]), n1 = s.ndim() == 3 ? long(s[1]) : 1, n2 = long(s[s.ndim() - 1]);
  const auto v = h.as<std::uint8_t>();
  std::vector<std::uint32_t> out(v.size(), 0);
  std::uint32_t next = 0;
  std::deque<long> todo;
  for (long start = 0; start < long(v.size()); ++start) {
    if (!v[std::size_t(start)] || out[std::size_t(start)]) continue;
    out[std::size_t(start)] = ++next;
    todo.push_back(start);
    while (!todo.empty()) {
      const long i = todo.front();
      todo.pop_front();
      const long a = i / (n1 * n2), b = i / n2 % n1, c = i % n2;
      for (long da = -1; da <= 1; ++da)
        for (long db = -1; db <= 1; ++db)
          for (long dc = -1; dc <= 1; ++dc) {
            if (!full && std::abs(da) + std::abs(db) + std::abs(dc) != 1) continue;
            const long aa = a + da, bb = b + db, cc = c + dc;
            if (aa < 0 || bb < 0 || cc < 0 || aa >= n0 || bb >= n1 || cc >= n2) continue;
            const long j = (aa * n1 + bb) * n2 + cc;
            if (v[std::size_t(j)] && !out[std::size_t(j)]) {
              out[std::size_t(j)] = next;
              todo.push_back(j);
            }
          }
    }
  }
  return out;
}

// connected_components tiled into about `want` slabs (a budget of its own working set: 18
// bytes a uint8 pixel, 19 with the next slab's input), from a counting source into an ordered sink,
// on `devices`, against the whole-array run and the flood fill.
void check_components(const std::string& what, const HostArray& h, bool full,
                      const std::vector<Device>& devices, std::size_t want) {
  const std::string conn = full ? "full" : "face";
  const Params p = {{"connectivity", conn}};
  const QByteArray where = QByteArray::fromStdString(what + " " + h.shape().str() + " " + conn);
  const Array whole = run("connected_components", Array::push(h, devices[0]), p).array;
  const std::size_t plane = h.elements() / h.shape()[0];
  const std::size_t per = (h.shape()[0] + want - 1) / want;
  TiledOptions o;
  o.devices = devices;
  // One more byte a pixel where the next slab's input is pushed beside the filter.
  const bool pipelined = detail::Access::impl(devices[0]).tiled_pipeline();
  o.budget_bytes = rounded_up(plane * (pipelined ? 19 : 18), per, plane);
  TiledReport report;
  o.report = &report;
  CountingSource src(h);
  SlabSource* in[] = {&src};
  OrderedSink sink;
  (void)run_tiled("connected_components", in, &sink, p, o);
  // `per` planes a slab, or a plane more where the pool's rounding of the next count is less.
  QVERIFY2(report.planes_per_slab >= per && report.planes_per_slab <= per + 1 &&
               report.slabs == (h.shape()[0] + report.planes_per_slab - 1) / report.planes_per_slab,
           where + " slabs " + QByteArray::number(qulonglong(report.slabs)));
  QCOMPARE(report.passes, std::size_t{2});
  QCOMPARE(src.planes_read, 2 * h.shape()[0]);  // no halo: every plane twice
  QVERIFY2(sink.finished && sink.in_order && sink.next == h.shape()[0], where);
  QCOMPARE(sink.out.dtype(), DType::u32);
  for (std::size_t k : report.slabs_per_device) QVERIFY2(k > 0, where + " left a device idle");
  const auto tiled = sink.out.as<std::uint32_t>();
  const HostArray wh = whole.pull();
  const auto ref = flood_labels(h, full);
  const auto w = wh.as<std::uint32_t>();
  std::size_t first_diff = ref.size();
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (w[i] != ref[i] || tiled[i] != ref[i]) {
      first_diff = i;
      break;
    }
  }
  QVERIFY2(first_diff == ref.size(),
           where + ": pixel " + QByteArray::number(qulonglong(first_diff)) + " flood fill " +
               QByteArray::number(first_diff < ref.size() ? ref[first_diff] : 0) + ", whole " +
               QByteArray::number(first_diff < ref.size() ? w[first_diff] : 0) + ", tiled " +
               QByteArray::number(first_diff < ref.size() ? tiled[first_diff] : 0));
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

  // Every tileable filter's peak device memory, measured (the pool's peak over a whole-array
  // run, on shapes whose arrays fill their size classes exactly), is within what run_tiled
  // plans a slab's pixel with: twice the inputs and an output of the widest of the inputs and
  // 4 bytes, or the filter's WorkingSetFn where it says more. Defaults, wide and large
  // parameters (large windows switch exact means to int64 sums), every dtype, 2D and 3D.
  void working_sets_data() {
    QTest::addColumn<QString>("filter");
    for (const FilterInfo& f : filters()) {
      if (tile_info(f.name).tileable && !tile_info(f.name).folds)
        QTest::newRow(f.name.c_str()) << QString::fromStdString(f.name);
    }
  }
  void working_sets() {
    QFETCH(QString, filter);
    const FilterInfo& f = gpix::filter(filter.toStdString());
    const Device d = test::test_devices().front();
    int measured = 0;
    for (int dims : {2, 3}) {
      if (std::find(f.dims.begin(), f.dims.end(), dims) == f.dims.end()) continue;
      const Shape s = dims == 3 ? Shape{16, 64, 128} : Shape{64, 2048};
      for (DType t : f.dtypes) {
        if (size_of(t) == 8 && !d.supports_fp64()) continue;
        for (int which = 0; which < 3; ++which) {
          Params p = which == 0 ? Params{} : wide_params(f);
          if (which == 2) {
            // Medians of large windows take minutes on PoCL; their working set does not grow.
            const double big = f.name == "median_box" ? 3.0 : dims == 3 ? 16.0 : 128.0;
            for (const auto& spec : f.params) {
              if (spec.name.rfind("radius", 0) == 0) p[spec.name] = std::min(big, spec.max);
              if (spec.name.rfind("sigma", 0) == 0) p[spec.name] = 8.0;
            }
            if (f.name == "difference_of_gaussian") p["sigma2"] = 8.0;
          }
          trim(d);
          std::vector<Array> arrays;
          std::size_t in_px = 0;
          for (std::size_t i = 0; i < f.inputs.size(); ++i) {
            arrays.push_back(Array::push(random_host(s, t), d));
            in_px += size_of(t);
          }
          reset_peak_memory(d);
          const std::uint64_t base = memory_stats(d).bytes_in_use;
          try {
            (void)run(f.name, arrays, p);
          } catch (const InvalidArgument&) {
            continue;  // parameters this filter refuses for this image (e.g. 64-bit integers)
          }
          ++measured;
          const double px = static_cast<double>(s.elements());
          const double used = static_cast<double>(memory_stats(d).peak_bytes_in_use - base) / px +
                              static_cast<double>(in_px);
          const double rule =
              2.0 * static_cast<double>(in_px + std::max<std::size_t>(4, size_of(t)));
          const double planned =
              std::max(rule, static_cast<double>(detail::entry(f.name).working_set(p, dims, t)));
          const QByteArray where = QByteArray::fromStdString(
              f.name + " " + std::string(name(t)) + " " + s.str() + " params " +
              std::to_string(which) + ": " + std::to_string(used) + " bytes a pixel, " +
              std::to_string(planned) + " planned");
          // A few kB of scratch (a kernel's constants) beside the image-sized arrays.
          QVERIFY2(used <= planned + 8192.0 / px, where);
        }
      }
    }
    QVERIFY(measured > 0);
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
        QVERIFY2(t.columns().empty(), where);
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

  // run_in_slabs's progress follows the device: while the device is held (a marker waiting on
  // a user event heads the queue) the call reports no progress and has not returned; a cancel
  // then stops it after the slab in flight. It passed on the filter's own progress, which
  // comes as passes are queued, so the bar moved through a slab the device had not begun.
  void device_slabs_follow_the_device() {
    const Device dev = test::test_devices().front();
    Event hold;
    try {
      hold = Event::user(dev);
    } catch (const UnsupportedFeature&) {
      QSKIP("this backend has no user events");
    }
    const HostArray h = random_host(Shape{16, 9, 11}, DType::f32);
    const Array a = Array::push(h, dev);
    const Array in[] = {a};
    const Params p = {{"radius_z", 1.0}};
    (void)run("mean_box", a, p);  // compiled before the queue is held
    dev.finish();
    (void)Queue::default_for(dev).marker({hold});
    std::atomic<bool> cancel{false};
    std::atomic<int> reports{0};
    RunOptions o;
    o.cancel = &cancel;
    o.progress = [&](double) { ++reports; };
    auto call =
        std::async(std::launch::async, [&] { return run_in_slabs("mean_box", in, p, o, 4); });
    const bool returned =
        call.wait_for(std::chrono::milliseconds(300)) == std::future_status::ready;
    const int early = reports.load();
    cancel = true;
    hold.complete();
    QVERIFY2(!returned, "run_in_slabs returned while the device was held");
    QCOMPARE(early, 0);
    QVERIFY_THROWS_EXCEPTION(Cancelled, (void)call.get());
    QVERIFY2(reports.load() <= 1, qPrintable(QString::number(reports.load())));
    dev.finish();
    QVERIFY(std::memcmp(a.pull().data(), h.data(), h.bytes()) == 0);
  }

  // Pinned input and output arrays: slabs of several MB go to and from the device by DMA
  // without the staging copy (SlabSource::pinned_for), with the whole-array bytes; a fold
  // writes its plane into a pinned output too. On two devices the second one's slabs are
  // staged (another OpenCL context does not know the first one's page-locked memory).
  void pinned_host_memory() {
    const std::vector<Device> devs = same_kind_devices();
    const Device& d0 = devs.front();
    const Shape s{37, 192, 160};  // 4.5 MB of float32, slabs of ~1 MB (over the staging size)
    HostArray in = HostArray::pinned(s, DType::f32, d0);
    {
      const HostArray r = random_host(s, DType::f32);
      std::memcpy(in.data(), r.data(), r.bytes());
    }
    const HostArraySource src(in);
    QVERIFY(src.pinned_for(d0));
    QVERIFY(!HostArraySource(random_host(s, DType::f32)).pinned_for(d0));
    for (std::size_t k = 1; k < devs.size(); ++k) {
      QCOMPARE(src.pinned_for(devs[k]), devs[k].info().backend == Backend::cuda);
    }
    const std::pair<const char*, Params> cases[] = {
        {"gaussian_blur", {{"sigma_x", 2.0}, {"sigma_y", 1.0}, {"sigma_z", 2.0}}},
        {"median_box", {{"radius_x", 1.0}, {"radius_y", 1.0}, {"radius_z", 1.0}}},
        {"sum_z_projection", {}}};
    for (const auto& [f, p] : cases) {
      const Result whole = run(f, Array::push(in, d0), p);
      HostArray out = HostArray::pinned(whole.array.shape(), whole.array.dtype(), d0);
      std::memset(out.data(), 0xff, out.bytes());  // poison
      TiledOptions o;
      o.devices = devs;
      o.budget_bytes = budget_for(s, DType::f32, 1, tile_halo(f, 3, p), 8);
      o.output = &out;
      TiledReport report;
      o.report = &report;
      const HostArray tiled = run_tiled(f, std::span<const HostArray>(&in, 1), p, o);
      QVERIFY2(tiled.data() == out.data(), f);
      QVERIFY2(same_bytes(out, whole.array), f);
      if (std::string_view(f) != "sum_z_projection") QVERIFY2(report.slabs >= 6, f);
    }
  }

  // connected_components joins its slabs across their faces: the whole-array labelling
  // exactly, 2D and 3D, odd sizes, both connectivities, 8-20 slabs, on every test device
  // (two under POCL_DEVICES="pthread pthread"), several workers per device too.
  void components_data() {
    QTest::addColumn<int>("dims");
    QTest::newRow("2D") << 2;
    QTest::newRow("3D") << 3;
  }
  void components() {
    QFETCH(int, dims);
    const auto devices = same_kind_devices();
    const auto images = dims == 3 ? component_images(47, 23, 29) : component_images(223, 1, 131);
    for (const auto& [what, h] : images) {
      for (bool full : {false, true}) {
        check_components(what, h, full, devices, 12);
        if (QTest::currentTestFailed()) return;
      }
    }
    // Slabs of one plane (a face on every plane), and 19 slabs.
    check_components("blobs", images[0].second, true, devices, dims == 3 ? 47 : 223);
    check_components("blobs", images[0].second, false, devices, 19);
  }

  // A realistic stack: 64 x 512 x 512 blobs (16 M voxels) over 16 slabs, full connectivity.
  void components_large() {
    check_components("blobs", blobs(64, 512, 512, 0.52, 3), true, same_kind_devices(), 16);
  }

  // Each device's budget covers every slab in flight on it: its workers' slabs fit it
  // together, and with the budget as the device's memory limit (the pool's size classes round
  // a block up by at most a quarter) two workers per device run without running out of memory
  // (where their slabs overlap in time, which the scheduler decides).
  void budget_covers_workers() {
    const auto devices = same_kind_devices();
    const HostArray h = blobs(40, 31, 37, 0.5, 5);
    const HostArray f = random_host(Shape{40, 31, 37}, DType::f32);
    for (std::size_t workers : {1, 2}) {
      for (const char* name : {"connected_components", "gaussian_blur", "median_box"}) {
        const bool cc = std::string(name) == "connected_components";
        const HostArray& in = cc ? h : f;
        const Params p = cc ? Params{} : wide_params(gpix::filter(name));
        // About 8 slabs of 5 planes (and the halo) per worker (11 asked: the pool's rounding
        // may let the planner fit a plane or two more).
        const std::uint64_t budget =
            workers *
            (cc ? rounded_up(in.elements() / in.shape()[0] * 18, 5, in.elements() / in.shape()[0])
                : budget_for(in.shape(), DType::f32, 1, tile_halo(name, 3, p), 11));
        for (const Device& d : devices) {
          trim(d);
          set_memory_limit(d, budget + (64u << 10));
        }
        TiledOptions o;
        o.devices = devices;
        o.workers_per_device = workers;
        o.budget_bytes = budget;
        TiledReport report;
        o.report = &report;
        const QByteArray where =
            QByteArray(name) + " workers " + QByteArray::number(qulonglong(workers));
        try {
          const HostArray out = run_tiled(name, in, p, o);
          // The slabs of all of a device's workers, halos included, fit its budget (working
          // set per plane: connected components' 18 bytes a pixel, else the rule above).
          const std::size_t plane = in.elements() / in.shape()[0];
          const std::uint64_t cost = cc ? plane * 18 : 2 * (plane * 4 + plane * 4);
          QVERIFY2((report.planes_per_slab + 2 * report.halo) * cost * workers <= budget, where);
          QVERIFY2(report.slabs >= 6, where);
        } catch (const OutOfMemory& e) {
          for (const Device& d : devices) set_memory_limit(d, 0);
          QFAIL(where + ": " + e.what());
        }
        for (const Device& d : devices) set_memory_limit(d, 0);
      }
    }
  }

  // An output wider than the rule's 4 bytes (convert into a 64-bit dtype) counts as wide,
  // for the slab's output and for the previous one on its way back: the budget as the memory
  // limit holds. uint8 into float64 was planned at 14 bytes a pixel and held 17.
  // The planner takes the largest slab whose arrays fit the budget in the pool's blocks, for
  // every budget: a size class that rounds a count up by a quarter must not make it settle on
  // a count that rounds less but is several planes short (which refused runs that fit).
  void largest_slab_that_fits() {
    const Device d = test::test_devices().front();
    const Shape s{56, 64, 64};  // 32768 bytes a plane at 8 bytes a pixel: classes step at 2^k
    const std::size_t plane = s.elements() / s[0];
    const Params p = {{"radius_x", 1.0}, {"radius_y", 1.0}, {"radius_z", 5.0}};
    const std::size_t halo = tile_halo("minimum_box", 3, p);
    QCOMPARE(halo, std::size_t{5});
    const std::size_t cost = plane_cost_for(
        s, DType::f32, 1, detail::entry("minimum_box").working_set(p, 3, DType::f32));
    const HostArray h = random_host(s, DType::f32);
    const HostArray whole = run("minimum_box", Array::push(h, d), p).array.pull();
    int shorter_than_the_step = 0;
    for (std::uint64_t k = 2 * (2 * halo + 1); k < 2 * s[0]; ++k) {
      // Between n's blocks and n + 1's (even k), and half a plane above n planes' bytes
      // before the pool's rounding (odd k).
      const std::size_t n = k / 2;
      const std::uint64_t budget =
          k % 2 ? n * cost + cost / 2 : rounded_up(cost, n, plane) + cost / 3;
      std::size_t best = s[0];
      while (rounded_up(cost, best, plane) > budget) --best;
      if (best < 2 * halo + 1) continue;  // refused (errors() tests the refusal)
      TiledOptions o;
      o.devices = {d};
      o.budget_bytes = budget;
      TiledReport report;
      o.report = &report;
      HostArray out;
      try {
        out = run_tiled("minimum_box", std::span<const HostArray>(&h, 1), p, o);
      } catch (const InvalidArgument& e) {
        QFAIL((std::to_string(n) + " planes' budget: " + e.what()).c_str());
      }
      const QByteArray where = QByteArray::fromStdString(
          "budget " + std::to_string(budget) + " (" + std::to_string(n) +
          " planes): " + std::to_string(report.planes_per_slab) + " planes a slab, " +
          std::to_string(best) + " with the halo fit");
      QVERIFY2(report.planes_per_slab == (best >= s[0] ? s[0] : best - 2 * halo), where);
      QVERIFY2(std::memcmp(out.data(), whole.data(), whole.bytes()) == 0, where);
      // The cases the proportional step alone (the planner before the bisection) missed.
      std::uint64_t step = std::min<std::uint64_t>(budget / cost, s[0]);
      while (step > 0 && rounded_up(cost, step, plane) > budget)
        step = std::min(step - 1, step * budget / rounded_up(cost, step, plane));
      if (step < best) ++shorter_than_the_step;
    }
    QVERIFY(shorter_than_the_step > 0);
  }

  void output_wider_than_the_rule() {
    const auto devices = same_kind_devices();
    if (!devices[0].supports_fp64()) QSKIP("no float64 on this device");
    const Shape s{60, 64, 128};
    const std::size_t plane = s.elements() / s[0];
    for (const char* to : {"float64", "int64"}) {
      const HostArray in = random_host(s, DType::u8);
      const Params p = {{"dtype", std::string(to)}};
      const Result whole = run("convert", Array::push(in, devices[0]), p);
      TiledOptions o;
      o.devices = devices;
      o.budget_bytes = rounded_up(plane * 40, 6, plane);
      TiledReport report;
      o.report = &report;
      for (const Device& d : devices) {
        trim(d);
        set_memory_limit(d, memory_stats(d).bytes_in_use + o.budget_bytes + (64u << 10));
      }
      HostArray out;
      try {
        out = run_tiled("convert", std::span<const HostArray>(&in, 1), p, o);
      } catch (const OutOfMemory& e) {
        for (const Device& d : devices) set_memory_limit(d, 0);
        QFAIL((std::string(to) + ": " + e.what()).c_str());
      }
      for (const Device& d : devices) set_memory_limit(d, 0);
      QVERIFY2(report.slabs >= 8, to);
      QVERIFY2(same_bytes(out, whole.array), to);
    }
  }

  void errors() {
    const Device dev = test::test_devices().front();
    const HostArray h = random_host(Shape{20, 8, 8}, DType::f32);
    const HostArray before = h.clone();
    // Untileable: the reason, not a wrong answer.
    try {
      (void)run_tiled("relabel_sequential", h);
      QFAIL("relabel_sequential ran tiled");
    } catch (const InvalidArgument& e) {
      QVERIFY2(
          std::string(e.what()).find(tile_info("relabel_sequential").reason) != std::string::npos,
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
    // A halo deeper than the image needs no more than the image: a budget for its 20 planes
    // (not the 2 * 40 + 1 of a Gaussian of sigma_z 10) runs it in one slab, the whole result.
    {
      TiledOptions whole;
      whole.devices = {dev};
      whole.budget_bytes = budget_for(h.shape(), DType::f32, 1, 0, 1);
      TiledReport report;
      whole.report = &report;
      const HostArray got = run_tiled("gaussian_blur", h, {{"sigma_z", 10.0}}, whole);
      QCOMPARE(report.slabs, std::size_t{1});
      const Array want = run("gaussian_blur", Array::push(h, dev), {{"sigma_z", 10.0}}).array;
      QVERIFY(same_bytes(got, want));
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
