// The program cache (memory and disk) and user kernels through gpix::execute.
#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "gpix/catalog.h"
#include "gpix/kernel.h"
#include "gpix/phase.h"
#include "gpix/tiled.h"
#include "program_cache.h"
#include "programs.h"
#include "support/devices.h"
#include "support/file_size_limit.h"
#include "support/random.h"

using namespace gpix;

namespace {
const char* kScale = R"(
GPIX_KERNEL void scale(GPIX_GLOBAL T* a, float f, gpix_index n) {
  const gpix_index i = gpix_global_id(0);
  if (i < n) a[i] = (T)(a[i] * f);
}
)";

ProgramCacheStats delta(const ProgramCacheStats& a, const ProgramCacheStats& b) {
  return {b.memory_hits - a.memory_hits, b.disk_hits - a.disk_hits, b.compiles - a.compiles,
          b.disk_rejected - a.disk_rejected, b.disk_writes - a.disk_writes};
}
}  // namespace

class TestKernelCache : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  // The environment is read once per process, so the folder is set through the configuration.
  void initTestCase() { detail::config_for_testing().cache_dir = dir_.path().toStdString(); }

  void stable_hash() {
    // Fixed values: the disk cache must find its files again in another process and build.
    QCOMPARE(detail::stable_hash(""), 0xcbf29ce484222325ull);
    QCOMPARE(detail::stable_hash("a"), 0xaf63dc4c8601ec8cull);
    QVERIFY(detail::stable_hash("ab") != detail::stable_hash("ba"));
  }

  // A user kernel's range past the device's work-groups on y or z runs with that axis swapped
  // with x, as the catalog's kernels do (filters/launch.h), and sees the ids it asked for:
  // every work-item writes its global id, group id, group count and global size on the three
  // axes (config().grid_groups_limit stands in for CUDA's 65535).
  void execute_swapped_grid_data() { test::add_device_rows(); }
  void execute_swapped_grid() {
    const Device dev = test::fetch_device();
    const char* ids = R"(
GPIX_KERNEL void ids(GPIX_GLOBAL gpix_u32* out, gpix_index w, gpix_index h, gpix_index d) {
  const gpix_index x = gpix_global_id(0), y = gpix_global_id(1), z = gpix_global_id(2);
  if (x >= w || y >= h || z >= d) return;
  GPIX_GLOBAL gpix_u32* o = out + ((z * h + y) * w + x) * 12;
  for (int a = 0; a < 3; ++a) {
    o[a] = (gpix_u32)gpix_global_id(a);
    o[3 + a] = (gpix_u32)gpix_group_id(a);
    o[6 + a] = (gpix_u32)gpix_num_groups(a);
    o[9 + a] = (gpix_u32)gpix_global_size(a);
  }
}
)";
    // 2D: 2 x 19 work-groups of 16 x 16; 3D: 2 x 2 x 7 and 2 x 7 x 2 of 8 x 8 x 8.
    const std::vector<std::vector<std::size_t>> ranges = {{27, 300}, {11, 9, 50}, {11, 50, 9}};
    for (const auto& range : ranges) {
      std::size_t n = 1;
      for (std::size_t e : range) n *= e;
      const auto w = std::uint64_t{range[0]}, h = std::uint64_t{range.size() > 1 ? range[1] : 1},
                 d = std::uint64_t{range.size() > 2 ? range[2] : 1};
      auto run = [&] {
        Array out = Array::empty(Shape{n * 12}, DType::u32, dev);
        out.fill(0xdeadbeefu);
        execute(ids, "ids", range, {out, w, h, d}, {}, dev);
        return out.pull_as<std::uint32_t>();
      };
      const std::vector<std::uint32_t> plain = run();
      QVERIFY(plain[12 * n - 1] != 0xdeadbeefu);
      detail::ScopedConfig scope;
      detail::config_for_testing().grid_groups_limit = 4;
      QCOMPARE(run(), plain);
    }
    // Past the limit on y and z: refused, with why.
    detail::ScopedConfig scope;
    detail::config_for_testing().grid_groups_limit = 4;
    Array out = Array::empty(Shape{12 * 50 * 50 * 11}, DType::u32, dev);
    try {
      execute(ids, "ids", {11, 50, 50},
              {out, std::uint64_t{11}, std::uint64_t{50}, std::uint64_t{50}}, {}, dev);
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      QVERIFY2(std::string(e.what()).find("ids: a grid of 2 x 7 x 7 work-groups") == 0, e.what());
    }
  }

  void execute_and_cache_data() { test::add_device_rows(); }
  void execute_and_cache() {
    const Device dev = test::fetch_device();
    auto data = test::random_values<float>(1001);
    Array a = Array::push(data, Shape{1001}, dev);
    const KernelDefines defs = {
        {"T", "gpix_f32"}, {"MARK", QByteArray::number(qulonglong(test::seed())).toStdString()}};

    clear_memory_program_cache(dev);
    auto s0 = program_cache_stats(dev);
    execute(kScale, "scale", {1001}, {a, 2.0f, std::uint64_t{1001}}, defs, dev);
    auto d1 = delta(s0, program_cache_stats(dev));
    QCOMPARE(d1.compiles, 1u);              // a fresh MARK: never seen before
    const bool disk = d1.disk_writes == 1;  // backends without binaries skip the disk
    auto got = a.pull_as<float>();
    for (std::size_t i = 0; i < data.size(); ++i) QCOMPARE(got[i], data[i] * 2.0f);

    // Same source again: a memory hit.
    auto s1 = program_cache_stats(dev);
    execute(kScale, "scale", {1001}, {a, 0.5f, std::uint64_t{1001}}, defs, dev);
    QCOMPARE(delta(s1, program_cache_stats(dev)).memory_hits, 1u);
    QVERIFY(a.pull_as<float>() == data);

    if (!disk) QSKIP("this backend writes no binaries to disk");
    // A new process would find it on disk: simulate by dropping the memory cache.
    clear_memory_program_cache(dev);
    auto s2 = program_cache_stats(dev);
    execute(kScale, "scale", {1001}, {a, 2.0f, std::uint64_t{1001}}, defs, dev);
    auto d2 = delta(s2, program_cache_stats(dev));
    QCOMPARE(d2.disk_hits, 1u);
    QCOMPARE(d2.compiles, 0u);

    // Corrupt every cache file: it is rejected, rebuilt and rewritten, never a crash.
    for (const QString& f : QDir(dir_.path()).entryList({"*.bin"}, QDir::Files)) {
      QFile file(dir_.filePath(f));
      QVERIFY(file.open(QIODevice::ReadWrite));
      QByteArray bytes = file.readAll();
      bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x5a);
      file.seek(0);
      file.write(bytes);
    }
    clear_memory_program_cache(dev);
    auto s3 = program_cache_stats(dev);
    execute(kScale, "scale", {1001}, {a, 0.5f, std::uint64_t{1001}}, defs, dev);
    auto d3 = delta(s3, program_cache_stats(dev));
    QCOMPARE(d3.disk_rejected, 1u);
    QCOMPARE(d3.compiles, 1u);
    QCOMPARE(d3.disk_writes, 1u);
    QVERIFY(a.pull_as<float>() == data);

    // Truncated and foreign files too.
    for (const QString& f : QDir(dir_.path()).entryList({"*.bin"}, QDir::Files)) {
      QFile file(dir_.filePath(f));
      QVERIFY(file.open(QIODevice::ReadWrite));
      file.resize(file.size() / 3);
    }
    clear_memory_program_cache(dev);
    auto s4 = program_cache_stats(dev);
    execute(kScale, "scale", {1001}, {a, 2.0f, std::uint64_t{1001}}, defs, dev);
    QCOMPARE(delta(s4, program_cache_stats(dev)).disk_rejected, 1u);

    // A changed source is a different program: compiled, not loaded.
    clear_memory_program_cache(dev);
    auto s5 = program_cache_stats(dev);
    const std::string changed = std::string(kScale) + "\n// changed\n";
    execute(changed, "scale", {1001}, {a, 0.5f, std::uint64_t{1001}}, defs, dev);
    auto d5 = delta(s5, program_cache_stats(dev));
    QCOMPARE(d5.compiles, 1u);
    QCOMPARE(d5.disk_hits, 0u);
  }

  // A full disk (a file-size limit below any program's size) and a cache folder where nothing
  // can be made, even by root (procfs): kernels still build and run, nothing is written, and
  // no file is left half-written (the writer closes and checks before it renames).
  void unwritable_cache_data() { test::add_device_rows(); }
  void unwritable_cache() {
    const Device dev = test::fetch_device();
    const auto data = test::random_values<float>(257);
    Array a = Array::push(data, Shape{257}, dev);
    const std::string mark = QByteArray::number(qulonglong(test::seed())).toStdString();
    // The cache's own write on a full disk (the drivers' compilers write files too, so the
    // limit cannot surround a whole build: PoCL's then fails with a CompileError): refused,
    // nothing left, and a later load finds nothing. 500 bytes stay in the stream's buffer
    // until it is closed, where only that flush meets the full disk.
    const QStringList before = QDir(dir_.path()).entryList(QDir::Files | QDir::Hidden);
    // One key per device row: the rows share the cache folder, and an earlier row's store
    // below would otherwise be found here (every row after the first failed on a machine
    // with several devices).
    const std::string key = "unwritable-cache-" + mark + "-" + std::to_string(dev.info().index);
    {
      const test::FileSizeLimit limit(256);
      QVERIFY(!detail::cache_store(key, std::vector<char>(500, 'x')));
    }
    QCOMPARE(QDir(dir_.path()).entryList(QDir::Files | QDir::Hidden), before);
    QVERIFY(!detail::cache_load(key).has_value());
    QVERIFY(detail::cache_store(key, std::vector<char>(64 * 1024, 'x')));
    QCOMPARE(detail::cache_load(key)->size(), std::size_t{64 * 1024});
    {
      const detail::ScopedConfig scope;
      detail::config_for_testing().cache_dir = "/proc/gpix-test-cache";
      clear_memory_program_cache(dev);
      const auto s0 = program_cache_stats(dev);
      execute(kScale, "scale", {257}, {a, 1.0f, std::uint64_t{257}},
              {{"T", "gpix_f32"}, {"MARK", mark + "-no-folder"}}, dev);
      const auto d = delta(s0, program_cache_stats(dev));
      QCOMPARE(d.compiles, 1u);
      QCOMPARE(d.disk_writes, 0u);
    }
    QVERIFY(a.pull_as<float>() == data);  // times 1: the kernel ran
  }

  // The cache's lock is not held while a program compiles: while one program compiles (held
  // by the test hook until the other is done), another program compiles and returns; four
  // threads asking for the same program compile it once. If the lock were held, the second
  // request would wait for the first compile, which waits for it: the hook gives up after two
  // minutes and the test fails instead of hanging.
  void concurrent_compiles_data() { execute_and_cache_data(); }
  void concurrent_compiles() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    auto& impl = detail::Access::impl(dev);
    detail::ScopedConfig scoped_config;
    detail::config_for_testing().no_disk_cache = true;  // every request below compiles
    // Counts of full builds (quick builds: test_kernel_tiers).
    detail::config_for_testing().quick_builds = false;
    const detail::ProgramSource src = detail::program("fill.kernel");
    const std::string nonce = std::to_string(test::seed()) + "_" + std::to_string(device);
    const detail::Defines a = {{"GPIX_CACHE_TEST", "a" + nonce}};
    const detail::Defines b = {{"GPIX_CACHE_TEST", "b" + nonce}};
    std::mutex m;
    std::condition_variable cv;
    bool a_compiling = false, b_done = false, blocked = false;
    std::atomic<int> hook_calls{0}, failures{0};
    impl.set_compile_hook_for_testing([&](const detail::ProgramSource&, const detail::Defines& d) {
      ++hook_calls;
      if (d != a) return;
      std::unique_lock lock(m);
      a_compiling = true;
      cv.notify_all();
      if (!cv.wait_for(lock, std::chrono::minutes(2), [&] { return b_done; })) blocked = true;
    });
    const auto before = impl.cache_counters();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        try {
          (void)impl.kernel(src, "fill_u64", a);
        } catch (...) {
          ++failures;
        }
      });
    }
    {
      std::unique_lock lock(m);
      QVERIFY(cv.wait_for(lock, std::chrono::minutes(2), [&] { return a_compiling; }));
    }
    (void)impl.kernel(src, "fill_u64", b);  // while a's compile is held
    {
      std::lock_guard lock(m);
      b_done = true;
    }
    cv.notify_all();
    for (auto& t : threads) t.join();
    impl.set_compile_hook_for_testing({});
    QVERIFY2(!blocked, "a second program waited for the compile of the first");
    QCOMPARE(failures.load(), 0);
    const auto after = impl.cache_counters();
    QCOMPARE(after.compiles - before.compiles, std::uint64_t{2});  // a once, b once
    QCOMPARE(hook_calls.load(), 2);
    QCOMPARE(after.memory_hits - before.memory_hits, std::uint64_t{3});  // a's other threads
  }

  void disk_cache_off() {
    const Device dev = test::test_devices().front();
    detail::ScopedConfig scoped_config;
    detail::config_for_testing().no_disk_cache = true;  // GPIX_NO_DISK_CACHE=1
    QVERIFY(program_cache_dir().empty());
    Array a = Array::push(std::vector<float>{1, 2}, Shape{2}, dev);
    clear_memory_program_cache(dev);
    auto s = program_cache_stats(dev);
    execute(kScale, "scale", {2}, {a, 3.0f, std::uint64_t{2}}, {{"T", "gpix_f32"}, {"OFF", "1"}},
            dev);
    auto d = delta(s, program_cache_stats(dev));
    QCOMPARE(d.disk_writes, 0u);
    QCOMPARE(d.disk_hits, 0u);
    QCOMPARE(a.pull_as<float>(), (std::vector<float>{3, 6}));
  }

  // A run says when it waits for a compile (gpix::PhaseScope), and only then; the phase
  // before the compile comes back afterwards; run_in_slabs names each slab.
  void run_reports_its_phases() {
    const Device dev = test::test_devices().front();
    detail::ScopedConfig scoped_config;
    detail::config_for_testing().no_disk_cache = true;   // a compile, not a disk load
    detail::config_for_testing().kernel_bundle = "off";  // nor a prebuilt CUDA program
    const Shape shape{12, 20, 24};
    const Array a = Array::push(test::random_values<float>(shape.elements()), shape, dev);
    std::vector<std::string> phases;
    const PhaseScope scope([&](const std::string& p) { phases.push_back(p); });
    clear_memory_program_cache(dev);
    (void)run("gaussian_blur", a, {{"sigma_z", 1.0}});
    QVERIFY(!phases.empty());
    QCOMPARE(phases.front(), std::string("compiling kernels"));
    QCOMPARE(phases.back(), std::string("running"));
    phases.clear();
    (void)run("gaussian_blur", a, {{"sigma_z", 1.0}});  // compiled now: nothing to wait for
    QVERIFY(phases.empty());
    // Slabs, in order; the slab's own phase comes back after a compile inside it.
    clear_memory_program_cache(dev);
    (void)run_in_slabs("mean_box", std::span<const Array>(&a, 1), {}, {}, 3);
    {
      // Another thread's runs are not this scope's.
      std::vector<std::string> before = phases;
      std::thread([&] { (void)run("mean_box", a); }).join();
      QCOMPARE(phases, before);
    }
    QVERIFY(phases.size() >= 3);
    QCOMPARE(phases[0], std::string("slab 1 of 3"));
    QCOMPARE(phases[1], std::string("compiling kernels"));
    QCOMPARE(phases[2], std::string("slab 1 of 3"));
    QCOMPARE(phases.back(), std::string("slab 3 of 3"));
    QVERIFY(std::find(phases.begin(), phases.end(), "slab 2 of 3") != phases.end());
  }

  void user_kernel_errors() {
    const Device dev = test::test_devices().front();
    Array a = Array::push(std::vector<float>{1, 2}, Shape{2}, dev);
    try {
      execute("GPIX_KERNEL void broken(GPIX_GLOBAL float* a) { a[0] = undefined_thing; }", "broken",
              {1}, {a}, {}, dev);
      QFAIL("no exception");
    } catch (const CompileError& e) {
      QVERIFY2(e.log().find("undefined_thing") != std::string::npos, e.log().c_str());
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument,
                             execute(kScale, "scale", {}, {a}, {{"T", "gpix_f32"}}, dev));
    QCOMPARE(a.pull_as<float>(), (std::vector<float>{1, 2}));
  }
};

QTEST_APPLESS_MAIN(TestKernelCache)
#include "test_kernel_cache.moc"
