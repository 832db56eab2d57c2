// The program cache's bound (least recently used programs dropped, kernels in use kept alive)
// and tiered compilation (DeviceImpl::kernel_if_ready): a filter whose fast kernel is still
// compiling runs a plain one meanwhile, and the two give bit-identical results.
#include <QCoreApplication>
#include <QDateTime>
#include <QProcess>
#include <QTest>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <latch>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "gpix/catalog.h"
#include "gpix/error.h"
#include "gpix/filters/arithmetic.h"
#include "gpix/filters/neighbourhood.h"
#include "gpix/filters/reductions.h"
#include "programs.h"
#include "support/compare.h"
#include "support/devices.h"
#include "support/random.h"

using namespace gpix;

namespace {

std::string nonce() {
  return std::to_string(QDateTime::currentMSecsSinceEpoch()) + "_" + std::to_string(test::rng()());
}

// The programs that filters may leave to a background compile: held back by the compile hook
// until release(), so that the first calls surely run the plain kernels.
class HoldFastPrograms {
 public:
  explicit HoldFastPrograms(detail::DeviceImpl& impl) : impl_(impl) {
    impl_.set_compile_hook_for_testing(
        [this](const detail::ProgramSource& src, const detail::Defines&) {
          if (!fast(src.name)) return;
          std::unique_lock lock(m_);
          // Bounded: a test that fails before release() must not hang the suite.
          cv_.wait_for(lock, std::chrono::minutes(5), [this] { return released_; });
        });
  }
  ~HoldFastPrograms() {
    release();
    impl_.wait_for_background_compiles();
    impl_.set_compile_hook_for_testing({});
  }
  HoldFastPrograms(const HoldFastPrograms&) = delete;
  HoldFastPrograms& operator=(const HoldFastPrograms&) = delete;
  void release() {
    {
      std::lock_guard lock(m_);
      released_ = true;
    }
    cv_.notify_all();
  }
  // One-entry programs are named "<file> (entry <name>)" (kernel_cache.cpp).
  // separable.kernel's passes other than sep_<op>_simple are fast ones too: the simple passes
  // serve while any of them compiles.
  static bool fast(const std::string& name) {
    for (const char* f : {"entry tile_", "entry r1_median", "entry median_fixed",
                          "entry stats_final", "entry histogram_edges"}) {
      if (name.find(f) != std::string::npos) return true;
    }
    // So are the 2D radius-1 box kernels, with r1_<op>_2d_plain serving (the 3D ones do not
    // tier: holding them would hold the test).
    const auto has = [&](const char* part) { return name.find(part) != std::string::npos; };
    return (has("entry sep_") && !has("_simple)")) ||
           (has("entry r1_") && has("_2d") && !has("_plain)"));
  }

 private:
  detail::DeviceImpl& impl_;
  std::mutex m_;
  std::condition_variable cv_;
  bool released_ = false;
};

template <class T>
Array random_array(const Shape& s, const Device& d, bool with_specials) {
  std::vector<T> v = test::random_values<T>(s.elements());
  if constexpr (std::is_floating_point_v<T>) {
    if (!with_specials) return Array::push(v, s, d);
    // Values a sort must place: NaNs of both signs, infinities, signed zeros.
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(),
                          -std::numeric_limits<T>::quiet_NaN(),
                          std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),
                          T(0),
                          -T(0)};
    for (std::size_t i = 0; i < v.size(); i += 7) v[i] = specials[(i / 7) % 6];
  }
  return Array::push(v, s, d);
}

// Runs fill.kernel's fill_u64 (k) over the 1000 uint64 values of a and waits.
void fill_u64(detail::DeviceImpl& impl, const detail::Kernel& k, Array& a, std::uint64_t value) {
  const detail::KernelArg args[] = {detail::KernelArg::mem(*detail::Access::impl(a).memory),
                                    detail::KernelArg::scalar<std::uint64_t>(1000),
                                    detail::KernelArg::scalar(value)};
  detail::Launch l;
  l.global[0] = 1024;
  l.local[0] = 64;
  impl.launch(k, l, args);
  impl.finish();
}

// exit_during_background_compile_child's sentinel: set when the exit reaches the statics made
// after the child's builds.
std::atomic<bool> g_sentinel_gone{false};

// For the quick-build tests, inside their ScopedConfig: quick builds and tiers on, nothing
// cached on disk, in the bundle or in memory, so that every program below is built.
void start_quick_builds(detail::DeviceImpl& impl) {
  detail::config_for_testing().no_disk_cache = true;
  detail::config_for_testing().kernel_bundle = "off";
  detail::config_for_testing().program_unit = "entry";
  detail::config_for_testing().tiered_compile = 1;
  detail::config_for_testing().quick_builds = true;
  impl.wait_for_background_compiles();
  impl.clear_memory_cache();
}

// Two results with the same bits: arrays byte for byte, tables value for value (NaN equal to
// NaN).
bool same_result(const Result& a, const Result& b) {
  if (a.is_table() != b.is_table()) return false;
  if (!a.is_table()) return test::same_bits(a.array, b.array);
  if (a.table.columns() != b.table.columns() || a.table.size() != b.table.size()) return false;
  for (std::size_t i = 0; i < a.table.size(); ++i) {
    for (std::size_t j = 0; j < a.table.width(); ++j) {
      const double x = a.table(i, j), y = b.table(i, j);
      if (std::memcmp(&x, &y, sizeof x) != 0 && !(std::isnan(x) && std::isnan(y))) return false;
    }
  }
  return true;
}

// gpix::stats() of a as an array of five 64-bit patterns: min, max, sum, mean (as doubles) and
// the NaN count.
Array stats_bits(const Array& a) {
  const Stats s = stats(a);
  std::vector<std::uint64_t> bits(5);
  const double v[4] = {s.min.as_double(), s.max.as_double(), s.sum.as_double(), s.mean};
  std::memcpy(bits.data(), v, sizeof v);
  bits[4] = s.nan_count;
  return Array::push(bits, Shape{5}, a.device());
}

// gpix::histogram() of a as an array of 64-bit patterns: the edges (as doubles), then the
// counts; where it refuses the range, a marker and a hash of its message.
Array histogram_bits(const Array& a, int bins, double lo, double hi) {
  std::vector<std::uint64_t> bits;
  try {
    const Histogram h = histogram(a, bins, lo, hi);
    bits.resize(h.edges.size());
    std::memcpy(bits.data(), h.edges.data(), h.edges.size() * sizeof(double));
    bits.insert(bits.end(), h.counts.begin(), h.counts.end());
  } catch (const InvalidArgument& e) {
    bits = {0xbadull, std::hash<std::string>{}(e.what())};
  }
  return Array::push(bits, Shape{bits.size()}, a.device());
}

struct Case {
  std::string name;
  std::function<Array(const Array&)> run;
  bool nan_safe;  // selects only: inputs may hold NaN and infinities
};

std::vector<Case> cases(int ndim) {
  std::vector<Case> c = {
      // The separable passes: tiled.kernel's, and separable.kernel's fused and local-tile
      // passes, against separable.kernel's simple ones. Radius 4, 6 and 8 (Gaussians of sigma
      // 1, 1.6 and 2: every tap of their buckets on; 8-byte accumulators' 16-row tiles and 17
      // tap words above bucket 4), 2 and 3 (maximum 3x2x1's y pass with taps switched off), 5
      // and 7 (minimum 5x7x5: bucket 7's xy tile with the x pass's taps switched off, bucket 5
      // along z).
      {"gaussian 1", [](const Array& a) { return gaussian_blur(a, 1.0); }, false},
      {"gaussian 1.6", [](const Array& a) { return gaussian_blur(a, 1.6); }, false},
      {"gaussian 2", [](const Array& a) { return gaussian_blur(a, 2.0); }, false},
      {"mean 2x1x2", [](const Array& a) { return mean_box(a, 2, 1, 2); }, false},
      {"minimum 5x7x5", [](const Array& a) { return minimum_box(a, 5, 7, 5); }, true},
      {"minimum 2x2x2", [](const Array& a) { return minimum_box(a, 2, 2, 2); }, true},
      {"maximum 3x2x1", [](const Array& a) { return maximum_box(a, 3, 2, 1); }, true},
      // Bucket 4 with the y pass's outer taps switched off (the largest 8-byte tiles: 44 kB).
      {"mean 4x3x1", [](const Array& a) { return mean_box(a, 4, 3, 1); }, false},
      // separable.kernel's fused pass (radius 10: past the tiles) and, in 3D, its z pass; radius
      // 20: its x and y passes one at a time. Each against the simple passes.
      {"gaussian 2.5", [](const Array& a) { return gaussian_blur(a, 2.5); }, false},
      {"gaussian 5", [](const Array& a) { return gaussian_blur(a, 5.0); }, false},
      // A radius of 0 along y: the fused kernels pass y with one tap, the simple passes skip it.
      {"mean 3x0x2", [](const Array& a) { return mean_box(a, 3, 0, 2); }, false},
      {"gaussian 1.5x0x0", [](const Array& a) { return gaussian_blur(a, 1.5, 0.0, 0.0); }, false},
      {"minimum 11x0x1", [](const Array& a) { return minimum_box(a, 11, 0, 1); }, true},
      // The radius-1 boxes: r1_<op>_2d, its four-column kernels (v4 where rows are whole
      // vectors, c4 for float32 minima and maxima) against r1_<op>_2d_plain; in 3D each runs
      // its one kernel.
      {"mean r1", [](const Array& a) { return mean_box(a, 1, 1, 1); }, false},
      {"minimum r1", [](const Array& a) { return minimum_box(a, 1, 1, 1); }, true},
      {"maximum r1", [](const Array& a) { return maximum_box(a, 1, 1, 1); }, true},
      // The medians: the r1 sorting networks and median_fixed (up to 49 values) against
      // median_radix.
      {"median r1", [](const Array& a) { return median_box(a, 1, 1, 1); }, true},
      {"median 2x1x1", [](const Array& a) { return median_box(a, 2, 1, 1); }, true},
      // Whole-image statistics: the partials combined on the host (stats_final held back)
      // against stats.kernel's stats_final, as the bits of min, max, sum, mean and NaN count.
      {"stats", [](const Array& a) { return stats_bits(a); }, true},
      // rescale_intensity: the extrema read back and the scale computed on the host (stats_final
      // held back) against pointwise.kernel's rescale reading them on the device.
      {"rescale", [](const Array& a) { return rescale_intensity(a, -1, 2); }, true},
      // The histogram: its range and head (edges, scale, one_step) settled on the host
      // (stats_final and histogram_edges held back) against histogram_edges on the device,
      // with the image's own range (refused with infinities) and a given one.
      {"histogram own range", [](const Array& a) { return histogram_bits(a, 16, 0, 0); }, true},
      {"histogram 300 bins", [](const Array& a) { return histogram_bits(a, 300, 0, 0); }, true},
      {"histogram [-0.3, 0.7]", [](const Array& a) { return histogram_bits(a, 7, -0.3, 0.7); },
       true},
  };
  if (ndim == 2) {
    c.push_back({"maximum 8x7", [](const Array& a) { return maximum_box(a, 8, 7); }, true});
    c.push_back({"median 3x3", [](const Array& a) { return median_box(a, 3, 3); }, true});
    c.push_back({"maximum 12x9", [](const Array& a) { return maximum_box(a, 12, 9); }, true});
  }
  return c;
}

}  // namespace

class TestKernelTiers : public QObject {
  Q_OBJECT

 private slots:
  // With a limit of two programs: the least recently used goes, a recent one stays, a dropped
  // one compiles again, and a kernel handed out before its program was dropped still runs.
  void evicts_least_recently_used_data() { test::add_device_rows(); }
  void evicts_least_recently_used() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().program_cache_entries = 2;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().kernel_bundle = "off";
    impl.clear_memory_cache();
    const detail::ProgramSource& src = detail::program("fill.kernel");
    const std::string id = nonce();
    const auto variant = [&](int i) {
      return detail::Defines{{"GPIX_LRU_TEST", id + "_" + std::to_string(i)}};
    };
    const auto c0 = impl.cache_counters();
    const detail::DeviceImpl::KernelPtr k0 = impl.kernel(src, "fill_u64", variant(0));
    (void)impl.kernel(src, "fill_u64", variant(1));
    (void)impl.kernel(src, "fill_u64", variant(0));  // 0 is now the most recent
    (void)impl.kernel(src, "fill_u64", variant(2));  // drops 1
    const auto c1 = impl.cache_counters();
    QCOMPARE(c1.evictions - c0.evictions, std::uint64_t{1});
    QCOMPARE(c1.compiles - c0.compiles, std::uint64_t{3});
    QVERIFY(impl.programs_in_memory() <= 2);
    (void)impl.kernel(src, "fill_u64", variant(0));  // kept: a memory hit
    const auto c2 = impl.cache_counters();
    QCOMPARE(c2.compiles, c1.compiles);
    QCOMPARE(c2.memory_hits - c1.memory_hits, std::uint64_t{1});
    (void)impl.kernel(src, "fill_u64", variant(1));  // dropped: compiles again, drops 2
    (void)impl.kernel(src, "fill_u64", variant(3));  // drops 0, which k0 still holds
    const auto c3 = impl.cache_counters();
    QCOMPARE(c3.compiles - c2.compiles, std::uint64_t{2});
    QCOMPARE(c3.evictions - c2.evictions, std::uint64_t{2});
    QVERIFY(impl.programs_in_memory() <= 2);

    // The evicted program's kernel fills 1000 values (poisoned first).
    Array a = Array::push(std::vector<std::uint64_t>(1000, 0xdeadbeefull), Shape{1000}, dev);
    const std::uint64_t value = 0x0123456789abcdefull;
    fill_u64(impl, *k0, a, value);
    for (std::uint64_t v : a.pull_as<std::uint64_t>()) QCOMPARE(v, value);
  }

  // A process asking for many more variants than the limit keeps at most the limit in memory.
  void stays_bounded_data() { test::add_device_rows(); }
  void stays_bounded() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().program_cache_entries = 3;
    detail::config_for_testing().kernel_bundle = "off";
    impl.clear_memory_cache();
    const std::string id = nonce();
    const detail::ProgramSource& src = detail::program("fill.kernel");
    for (int i = 0; i < 12; ++i) {
      (void)impl.kernel(src, "fill_u64", {{"GPIX_LRU_BOUND", id + std::to_string(i)}});
      QVERIFY(impl.programs_in_memory() <= 3);
    }
  }

  // Every filter with a tiered kernel, first with its fast program held back (the plain
  // kernel runs, and a background compile starts), then with it: the same bits, on random
  // data with NaN, infinities and signed zeros; 2D and 3D, odd extents and a 1-pixel axis,
  // float32 and uint16.
  void tiers_are_bit_identical_data() { test::add_device_rows(); }
  void tiers_are_bit_identical() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().kernel_bundle = "off";
    detail::config_for_testing().program_unit = "entry";
    detail::config_for_testing().tiered_compile = true;
    impl.clear_memory_cache();

    struct Input {
      std::string name;
      Array a;
      bool specials;  // NaN, infinities, signed zeros: only for the filters that select
    };
    std::vector<Input> inputs = {
        {"f32 37x29", random_array<float>(Shape{37, 29}, dev, false), false},
        {"f32 37x29 with specials", random_array<float>(Shape{37, 29}, dev, true), true},
        {"f32 19x11x7", random_array<float>(Shape{19, 11, 7}, dev, false), false},
        {"f32 1x23x5 with specials", random_array<float>(Shape{1, 23, 5}, dev, true), true},
        {"u16 40x33", random_array<std::uint16_t>(Shape{40, 33}, dev, false), false},
    };
    // float64 sums round where float32 data summed in double mostly does not: the order in
    // which the partials add up shows.
    // float64 (and int32, summed in float64) take tiled.kernel's 8-byte tiles: 32-row tiles
    // (16 above bucket 4), some clear of the border at 150 x 141, and the z pass of a volume.
    if (dev.supports_fp64()) {
      inputs.push_back({"f64 67x61", random_array<double>(Shape{67, 61}, dev, false), false});
      inputs.push_back({"f64 150x141", random_array<double>(Shape{150, 141}, dev, false), false});
      inputs.push_back({"f64 13x37x9", random_array<double>(Shape{13, 37, 9}, dev, false), false});
      inputs.push_back(
          {"f64 37x29 with specials", random_array<double>(Shape{37, 29}, dev, true), true});
      inputs.push_back({"i32 70x45", random_array<std::int32_t>(Shape{70, 45}, dev, false), false});
    }
    const auto runs = [&](const Input& in, const Case& c) { return c.nan_safe || !in.specials; };
    std::vector<std::vector<HostArray>> first(inputs.size());
    {
      HoldFastPrograms hold(impl);
      const auto c0 = impl.cache_counters();
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        const HostArray before = inputs[i].a.pull();
        for (const Case& c : cases(inputs[i].a.ndim())) {
          first[i].push_back(runs(inputs[i], c) ? c.run(inputs[i].a).pull() : HostArray());
        }
        QVERIFY(std::memcmp(before.data(), inputs[i].a.pull().data(), before.bytes()) == 0);
      }
      const auto c1 = impl.cache_counters();
      QVERIFY2(c1.background_compiles > c0.background_compiles,
               "no filter left its fast kernel to a background compile");
      hold.release();
      impl.wait_for_background_compiles();
      const auto c2 = impl.cache_counters();
      QCOMPARE(c2.background_compiles, c1.background_compiles);
    }
    const auto c3 = impl.cache_counters();
    std::string differ;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto cs = cases(inputs[i].a.ndim());
      for (std::size_t k = 0; k < cs.size(); ++k) {
        if (!runs(inputs[i], cs[k])) continue;
        const Array fast = cs[k].run(inputs[i].a);
        const Array plain = Array::push(first[i][k], dev);
        if (!test::same_bits(fast, plain)) differ += "; " + cs[k].name + " on " + inputs[i].name;
      }
    }
    QVERIFY2(differ.empty(), ("the tiers differ:" + differ).c_str());
    // Every fast program was ready: nothing more went to the background.
    QCOMPARE(impl.cache_counters().background_compiles, c3.background_compiles);
  }

  // Quick builds (config().quick_builds, opt-in): every catalog filter's
  // first call in a process with nothing cached runs programs built with the compiler's
  // optimisations off, and once their full builds have replaced them the same call must give
  // the same bits. 2D and 3D, odd extents, every dtype the filter takes, uint32 labels, 0/1
  // masks; each filter's defaults. On CPU devices (PoCL: CI) the mechanism is what is tested,
  // on 2D float32 only (GPIX_TEST_ALL_VARIANTS=1: all), which keeps the suite's time there.
  void quick_builds_are_bit_identical_data() { test::add_device_rows(); }
  void quick_builds_are_bit_identical() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    start_quick_builds(impl);
    struct Run {
      std::string what;
      std::vector<Array> inputs;
      Result first;
    };
    std::vector<Run> list;
    std::mt19937_64 r(test::seed());
    const auto c0 = impl.cache_counters();
    const bool all =
        dev.info().type == DeviceType::gpu || qEnvironmentVariableIsSet("GPIX_TEST_ALL_VARIANTS");
    for (const FilterInfo& f : filters()) {
      for (const int dims : {2, 3}) {
        if (std::find(f.dims.begin(), f.dims.end(), dims) == f.dims.end()) continue;
        if (dims == 3 && !all) continue;
        const Shape s = dims == 2 ? Shape{37, 29} : Shape{19, 11, 7};
        // Every dtype the filter takes; elsewhere float32 (else its first dtype).
        std::vector<DType> types = f.dtypes;
        if (!all) {
          const bool f32 = std::find(types.begin(), types.end(), DType::f32) != types.end();
          types = {f32 ? DType::f32 : f.dtypes.front()};
        }
        for (const DType t : types) {
          Run run{f.name + " " + std::string(name(t)) + " " + s.str(), {}, {}};
          // label_statistics adds its float sums by atomics in no fixed order, so two runs of
          // one build differ in the last bits (PoCL and NVIDIA alike, on uniform float64 data):
          // its values here are eighths, whose sums are exact in any order and in float32 too,
          // so that a difference is the compiler's.
          const bool exact_sums = f.name == "label_statistics";
          for (const InputSpec& in : f.inputs) {
            HostArray h(s, in.kind == InputKind::labels ? DType::u32 : t);
            visit_dtype(h.dtype(), [&](auto z) {
              using T = decltype(z);
              auto v = h.as<T>();
              for (auto& x : v) {
                if (in.kind == InputKind::binary) {
                  x = static_cast<T>(r() % 3 == 0);
                } else if (in.kind == InputKind::labels) {
                  x = static_cast<T>(r() % 4 == 0 ? 0 : 1 + r() % 9);
                } else if constexpr (std::is_floating_point_v<T>) {
                  const double u = std::uniform_real_distribution<double>(-50, 150)(r);
                  x = static_cast<T>(exact_sums ? std::round(u * 8) / 8 : u);
                } else {
                  x = static_cast<T>(r() % 1000);
                }
              }
            });
            run.inputs.push_back(Array::push(h, dev));
          }
          try {
            run.first = gpix::run(f.name, run.inputs);
          } catch (const UnsupportedDType&) {
            continue;  // float64 work on a device without it
          }
          list.push_back(std::move(run));
        }
      }
    }
    const auto c1 = impl.cache_counters();
    if (c1.quick_compiles == c0.quick_compiles) {
      QCOMPARE(c1.upgrades, c0.upgrades);
      QSKIP("this device's backend has no quick builds");
    }
    impl.wait_for_background_compiles();
    const auto c2 = impl.cache_counters();
    // Every quick program was replaced (none was evicted: the catalog fits the cache).
    QCOMPARE(c2.upgrades - c0.upgrades, c1.quick_compiles - c0.quick_compiles);
    QCOMPARE(c2.upgrade_failures, c0.upgrade_failures);
    std::string differ;
    for (const Run& run : list) {
      const Result again = gpix::run(run.what.substr(0, run.what.find(' ')), run.inputs);
      if (!same_result(run.first, again)) differ += "; " + run.what;
    }
    QVERIFY2(differ.empty(), ("quick and full builds differ:" + differ).c_str());
    qInfo("%zu calls, %llu quick programs", list.size(),
          static_cast<unsigned long long>(c1.quick_compiles - c0.quick_compiles));
  }

  // A quick program launched over more than kQuickLaunchLimit work-items runs its full build
  // instead, built at once (a quick program ran a large image many times slower than its full
  // build took to compile): the first Gaussian of a 4200 x 4100 image upgrades its simple
  // passes' program before its background upgrade starts, and gives the steady state's bits.
  void quick_builds_upgrade_for_large_launches_data() { test::add_device_rows(); }
  void quick_builds_upgrade_for_large_launches() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    start_quick_builds(impl);
    detail::config_for_testing().tier_quiet_ms = 60000;  // no upgrade starts by itself
    QVERIFY(std::size_t{4200} * 4100 > detail::kQuickLaunchLimit);
    const Array big = random_array<float>(Shape{4200, 4100}, dev, false);
    const Array small = random_array<float>(Shape{37, 29}, dev, false);
    const auto c0 = impl.cache_counters();
    const Array first_small = gaussian_blur(small, 2.0);
    const auto c1 = impl.cache_counters();
    if (c1.quick_compiles == c0.quick_compiles) QSKIP("this device's backend has no quick builds");
    QCOMPARE(c1.upgrades, c0.upgrades);  // a small launch runs the quick program
    const Array first_big = gaussian_blur(big, 2.0);
    const auto c2 = impl.cache_counters();
    QVERIFY2(c2.upgrades > c1.upgrades, "the large launch ran the quick program");
    QCOMPARE(c2.quick_compiles, c1.quick_compiles);
    impl.wait_for_background_compiles();
    QCOMPARE(impl.cache_counters().upgrade_failures, c0.upgrade_failures);
    QVERIFY(test::same_bits(first_big, gaussian_blur(big, 2.0)));
    QVERIFY(test::same_bits(first_small, gaussian_blur(small, 2.0)));
  }

  // A background compile waits for a quiet compiler: while the caller goes on building
  // (its plain kernel, the next filter's), it does not start; once the compiler has rested
  // for config().tier_quiet_ms it starts by itself, and wait_for_background_compiles() starts
  // it at once.
  void background_waits_for_quiet_compiler_data() { test::add_device_rows(); }
  void background_waits_for_quiet_compiler() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().kernel_bundle = "off";
    detail::config_for_testing().program_unit = "entry";
    detail::config_for_testing().tiered_compile = true;
    detail::config_for_testing().tier_quiet_ms = 60000;
    std::mutex m;
    std::set<std::string> started;  // the GPIX_QUIET_TEST values whose compile began
    impl.set_compile_hook_for_testing(
        [&](const detail::ProgramSource&, const detail::Defines& defines) {
          for (const auto& [k, v] : defines) {
            if (k != "GPIX_QUIET_TEST") continue;
            std::lock_guard lock(m);
            started.insert(v);
          }
        });
    const auto began = [&](const std::string& id) {
      std::lock_guard lock(m);
      return started.count(id) > 0;
    };
    const detail::ProgramSource& src = detail::program("fill.kernel");
    const std::string id = nonce();
    const detail::Defines fast = {{"GPIX_QUIET_TEST", id}};
    QVERIFY(impl.kernel_if_ready(src, "fill_u64", fast) == nullptr);
    for (int i = 0; i < 2; ++i) {
      (void)impl.kernel(src, "fill_u64", {{"GPIX_QUIET_OTHER", id + std::to_string(i)}});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    QVERIFY2(!began(id), "the background compile did not wait for a quiet compiler");
    QVERIFY(impl.kernel_if_ready(src, "fill_u64", fast) == nullptr);
    impl.wait_for_background_compiles();
    QVERIFY2(began(id), "wait_for_background_compiles() did not start the waiting compile");
    QVERIFY(impl.kernel_if_ready(src, "fill_u64", fast) != nullptr);

    // A short quiet time: it starts by itself, with nobody waiting for it.
    detail::config_for_testing().tier_quiet_ms = 50;
    const std::string id2 = nonce() + "b";
    const detail::Defines fast2 = {{"GPIX_QUIET_TEST", id2}};
    QVERIFY(impl.kernel_if_ready(src, "fill_u64", fast2) == nullptr);
    detail::DeviceImpl::KernelPtr k;
    for (int i = 0; i < 1200 && !k; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      k = impl.kernel_if_ready(src, "fill_u64", fast2);
    }
    impl.set_compile_hook_for_testing({});
    QVERIFY2(k != nullptr, "the background compile did not start after the quiet time");
    QVERIFY(began(id2));
    // The kernel it built works.
    Array a = Array::push(std::vector<std::uint64_t>(1000, 0), Shape{1000}, dev);
    fill_u64(impl, *k, a, 42);
    QCOMPARE(a.pull_as<std::uint64_t>()[999], std::uint64_t{42});
  }

  // A process that ends while a background compile waits for a quiet compiler, or while one
  // runs, exits cleanly: the waiting one never starts and the running one finishes first. A
  // compile started at the device's teardown ran into PoCL's clang after its static objects
  // were gone (`gpix run median_box` with tiers on: SIGSEGV at exit). Fresh processes: this
  // binary, run for exit_during_background_compile_child.
  // "300 sentinel": the quiet time runs out during the exit itself, after the statics made
  // since the build that preceded the queued compile are gone (a stand-in for the compiler's
  // own, which NVIDIA's OpenCL destroys: test_core_stats crashed so there after its last
  // test); the compile must not begin then.
  void exit_during_background_compile() {
    // "0 slow": the compile is still running when the exit's handler starts to wait for it
    // (a hook holds it for a second); it must finish without waiting for the handler (with
    // one lock for both, a fresh clone's CI hung here for 5 minutes).
    for (const char* quiet : {"60000", "0", "300 sentinel", "0 slow"}) {
      QProcess child;
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("GPIX_TIERS_CHILD", "1");
      const QString q = QString(quiet).section(' ', 0, 0);
      env.insert("GPIX_TIER_QUIET_MS", q);
      if (QString(quiet).contains("sentinel")) env.insert("GPIX_TIERS_SENTINEL", "1");
      if (QString(quiet).contains("slow")) env.insert("GPIX_TIERS_SLOW", "1");
      child.setProcessEnvironment(env);
      child.setProcessChannelMode(QProcess::MergedChannels);
      child.start(QCoreApplication::applicationFilePath(),
                  {"exit_during_background_compile_child"});
      QVERIFY(child.waitForStarted());
      QVERIFY2(child.waitForFinished(300000), "the child did not finish in 5 minutes");
      const QByteArray output = child.readAll();
      QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0,
               QByteArray("quiet ") + quiet + " ms: the child failed (exit status " +
                   QByteArray::number(child.exitStatus()) + ", code " +
                   QByteArray::number(child.exitCode()) + "):\n" + output);
      QVERIFY2(output.contains("PASS   : TestKernelTiers::exit_during_background_compile_child"),
               QByteArray("quiet ") + quiet + " ms: the child did not pass:\n" + output);
    }
  }
  void exit_during_background_compile_child() {
    if (qEnvironmentVariableIsEmpty("GPIX_TIERS_CHILD")) {
      QSKIP("runs in the child processes of exit_during_background_compile");
    }
    // The configuration as the environment set it (GPIX_TIER_QUIET_MS), tiers on everywhere,
    // nothing cached: the programs below compile.
    detail::config_for_testing().tiered_compile = 1;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().kernel_bundle = "off";
    detail::config_for_testing().program_unit = "entry";
    const std::string id = nonce();
    if (!qEnvironmentVariableIsEmpty("GPIX_TIERS_SENTINEL")) {
      for (const Device& dev : test::test_devices()) {
        auto& impl = detail::Access::impl(dev);
        const detail::ProgramSource& src = detail::program("fill.kernel");
        (void)impl.kernel(src, "fill_u64", {{"GPIX_EXIT_PLAIN", id}});
      }
      // Made after the builds, so destroyed before anything they made: its destructor marks
      // the point after which no compile may begin, and holds the exit there past the quiet
      // time.
      struct Sentinel {
        ~Sentinel() {
          g_sentinel_gone = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        }
      };
      static Sentinel sentinel;
      for (const Device& dev : test::test_devices()) {
        auto& impl = detail::Access::impl(dev);
        impl.set_compile_hook_for_testing([](const detail::ProgramSource&, const detail::Defines&) {
          if (!g_sentinel_gone) return;
          std::fputs(
              "a background compile began during the exit, after the statics made since "
              "the last build were destroyed\n",
              stderr);
          std::_Exit(3);
        });
        QVERIFY(impl.kernel_if_ready(detail::program("fill.kernel"), "fill_u64",
                                     {{"GPIX_EXIT_TEST", id}}) == nullptr);
      }
      return;  // the process exits while the compile waits out its 300 ms
    }
    const bool slow = !qEnvironmentVariableIsEmpty("GPIX_TIERS_SLOW");
    for (const Device& dev : test::test_devices()) {
      auto& impl = detail::Access::impl(dev);
      if (slow) {
        impl.set_compile_hook_for_testing(
            [](const detail::ProgramSource&, const detail::Defines& d) {
              for (const auto& [k, v] : d) {
                if (k == "GPIX_EXIT_TEST") std::this_thread::sleep_for(std::chrono::seconds(1));
              }
            });
      }
      const detail::ProgramSource& src = detail::program("fill.kernel");
      QVERIFY(impl.kernel_if_ready(src, "fill_u64", {{"GPIX_EXIT_TEST", id}}) == nullptr);
      // A foreground build (the plain kernel's, in a filter): the compiler's statics exist.
      Array a = Array::push(std::vector<std::uint64_t>(1000, 0), Shape{1000}, dev);
      fill_u64(impl, *impl.kernel(src, "fill_u64", {{"GPIX_EXIT_PLAIN", id}}), a, 7);
      QCOMPARE(a.pull_as<std::uint64_t>()[999], std::uint64_t{7});
    }
    // Returns, and the process exits with the background compile waiting or running.
  }

  // A fast program whose background compile fails is not left behind for ever: the next
  // request compiles it in the foreground and throws the compile error to the caller.
  void failed_background_compile_reaches_the_caller_data() { test::add_device_rows(); }
  void failed_background_compile_reaches_the_caller() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().tiered_compile = true;
    detail::ProgramSource bad;
    bad.name = "broken.kernel";
    bad.text = "GPIX_KERNEL void broken(GPIX_GLOBAL int* o) { o[0] = missing_name; }\n";
    bad.hash = nonce();
    bad.splittable = true;  // tiers are for one-entry programs
    detail::config_for_testing().program_unit = "entry";
    const detail::Defines d = {};
    QVERIFY(impl.kernel_if_ready(bad, "broken", d) == nullptr);
    impl.wait_for_background_compiles();
    QVERIFY_THROWS_EXCEPTION(CompileError, (void)impl.kernel_if_ready(bad, "broken", d));
    // With tiers off, the call waits and throws at once.
    detail::config_for_testing().tiered_compile = false;
    bad.hash = nonce();
    QVERIFY_THROWS_EXCEPTION(CompileError, (void)impl.kernel_if_ready(bad, "broken", d));
  }

  // With tiers off, or programs built per file, kernel_if_ready() waits for the program like
  // kernel().
  void tiers_off_waits_data() { test::add_device_rows(); }
  void tiers_off_waits() {
    const Device dev = test::fetch_device();
    auto& impl = detail::Access::impl(dev);
    const detail::ScopedConfig scope;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().kernel_bundle = "off";
    const auto c0 = impl.cache_counters();
    for (const bool tiered : {false, true}) {
      detail::config_for_testing().tiered_compile = tiered;
      detail::config_for_testing().program_unit = tiered ? "file" : "entry";
      const auto k = impl.kernel_if_ready(detail::program("fill.kernel"), "fill_u64",
                                          {{"GPIX_TIER_OFF", nonce()}});
      QVERIFY(k != nullptr);
    }
    QCOMPARE(impl.cache_counters().background_compiles, c0.background_compiles);
  }

  // The "pocl-serial-build" workaround: two threads' first builds at once in a fresh process,
  // which PoCL 3.1 answered with abort() ("Failed to create kernel compiler pass
  // inline-kernels") before builds on PoCL took one lock. Fresh processes: this binary, run
  // for concurrent_first_builds_child, several times.
  void concurrent_first_builds() {
    for (int run = 0; run < 4; ++run) {
      QProcess child;
      QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
      env.insert("GPIX_TIERS_CHILD", "1");
      child.setProcessEnvironment(env);
      child.setProcessChannelMode(QProcess::MergedChannels);
      child.start(QCoreApplication::applicationFilePath(), {"concurrent_first_builds_child"});
      QVERIFY(child.waitForStarted());
      QVERIFY2(child.waitForFinished(300000), "the child did not finish in 5 minutes");
      const QByteArray output = child.readAll();
      QVERIFY2(child.exitStatus() == QProcess::NormalExit && child.exitCode() == 0,
               "run " + QByteArray::number(run) + ": the child failed (exit status " +
                   QByteArray::number(child.exitStatus()) + ", code " +
                   QByteArray::number(child.exitCode()) + "):\n" + output);
    }
  }
  void concurrent_first_builds_child() {
    if (qEnvironmentVariableIsEmpty("GPIX_TIERS_CHILD")) {
      QSKIP("runs in the child processes of concurrent_first_builds");
    }
    const detail::ScopedConfig scope;
    detail::config_for_testing().no_disk_cache = true;
    detail::config_for_testing().kernel_bundle = "off";
    const std::string id = nonce();
    for (const Device& dev : test::test_devices()) {
      auto& impl = detail::Access::impl(dev);
      const detail::ProgramSource& src = detail::program("fill.kernel");
      std::latch start(2);
      std::atomic<int> built{0};
      const auto build = [&](int thread) {
        Array a = Array::push(std::vector<std::uint64_t>(1000, 0), Shape{1000}, dev);
        start.arrive_and_wait();
        for (int i = 0; i < 2; ++i) {
          const detail::Defines d = {
              {"GPIX_FIRST_BUILDS", id + "_" + std::to_string(thread) + "_" + std::to_string(i)}};
          // PoCL compiles a kernel's work-group function at its first launch.
          fill_u64(impl, *impl.kernel(src, "fill_u64", d), a, std::uint64_t(thread * 10 + i));
          if (a.pull_as<std::uint64_t>()[999] == std::uint64_t(thread * 10 + i)) ++built;
        }
      };
      std::thread other(build, 1);
      build(0);
      other.join();
      QCOMPARE(built.load(), 4);
    }
  }
};

QTEST_GUILESS_MAIN(TestKernelTiers)
#include "test_kernel_tiers.moc"
