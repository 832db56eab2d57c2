// The staging copy threads (core/src/copy_threads.h), without a device: every index of a
// batch runs exactly once, index 0 on the caller, batches in a row and from several callers
// at once, with polling and with sleeping workers; pools sharing a ThreadShare stay within
// it. With two devices (POCL_DEVICES="pthread pthread", test_core_copy_threads_two_devices):
// pushes from pageable memory to two devices copy at once, each on its device's pool.
#include <QTest>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "copy_threads.h"
#include "gpix/gpix.h"

using gpix::detail::CopyThreads;
using gpix::detail::ThreadShare;

namespace {

// The batch hook of two_devices: counts the pools with a batch running, and holds each batch
// (up to 20 s) until two pools run one at once, so that the count shows whether two pushes
// can overlap at all rather than whether they happened to.
struct Overlap {
  std::mutex mutex;
  std::condition_variable changed;
  std::set<const CopyThreads*> active;
  std::size_t most = 0;
  bool armed = false;
};
Overlap& overlap() {
  static Overlap o;
  return o;
}
void overlap_hook(const CopyThreads& pool, bool start, unsigned) {
  Overlap& o = overlap();
  std::unique_lock lock(o.mutex);
  if (!o.armed) return;
  if (!start) {
    o.active.erase(&pool);
    return;
  }
  o.active.insert(&pool);
  o.most = std::max(o.most, o.active.size());
  o.changed.notify_all();
  o.changed.wait_for(lock, std::chrono::seconds(20), [&] { return o.most >= 2; });
}

}  // namespace

class TestCopyThreads : public QObject {
  Q_OBJECT
 private slots:
  void every_index_once_data() {
    QTest::addColumn<int>("spin_us");
    QTest::newRow("polling") << 50;
    QTest::newRow("sleeping") << 0;
  }
  void every_index_once() {
    QFETCH(int, spin_us);
    CopyThreads pool{std::chrono::microseconds(spin_us)};
    for (unsigned n : {1u, 2u, 3u, 8u, 5u, 1u, 16u, 2u}) {
      std::vector<std::atomic<int>> runs(n);
      std::atomic<bool> zero_on_caller{false};
      const auto caller = std::this_thread::get_id();
      pool.run(n, [&](unsigned i) {
        runs[i].fetch_add(1);
        if (i == 0) zero_on_caller = std::this_thread::get_id() == caller;
      });
      for (unsigned i = 0; i < n; ++i) QCOMPARE(runs[i].load(), 1);
      QVERIFY(zero_on_caller.load());
    }
    // Workers are made on demand and kept: the largest batch needed 15 besides the caller.
    QCOMPARE(pool.threads(), std::size_t{15});
  }

  // Many batches in a row (workers that just finished must notice the next one).
  void batches_in_a_row() {
    CopyThreads pool{std::chrono::microseconds(20)};
    std::atomic<long> sum{0};
    for (int b = 0; b < 2000; ++b) pool.run(4, [&](unsigned i) { sum += i + 1; });
    QCOMPARE(sum.load(), 2000L * 10);
  }

  // Two callers at once take turns (one batch at a time), and neither loses work.
  void two_callers() {
    CopyThreads pool{std::chrono::microseconds(10)};
    std::atomic<long> a{0}, b{0};
    std::thread other([&] {
      for (int k = 0; k < 500; ++k) pool.run(3, [&](unsigned) { ++a; });
    });
    for (int k = 0; k < 500; ++k) pool.run(5, [&](unsigned) { ++b; });
    other.join();
    QCOMPARE(a.load(), 1500L);
    QCOMPARE(b.load(), 2500L);
  }

  // Pools sharing a ThreadShare of 3 threads: a batch gets what is free (at least its caller),
  // runs each granted index once, and the threads of batches at once stay within the share
  // plus one caller per batch beyond it.
  void shared_threads() {
    ThreadShare share(3);
    CopyThreads a{std::chrono::microseconds(10), &share}, b{std::chrono::microseconds(10), &share};
    std::atomic<int> running{0}, most{0};
    std::atomic<long> runs{0}, granted{0};
    auto job = [&](unsigned) {
      const int now = ++running;
      int m = most.load();
      while (now > m && !most.compare_exchange_weak(m, now)) {
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      --running;
      ++runs;
    };
    std::thread other([&] {
      for (int k = 0; k < 200; ++k) granted += a.run(3, job);
    });
    for (int k = 0; k < 200; ++k) {
      const unsigned n = b.run(3, job);
      QVERIFY(n >= 1 && n <= 3);
      granted += n;
    }
    other.join();
    QCOMPARE(runs.load(), granted.load());
    QVERIFY2(most.load() <= 4, QByteArray::number(most.load()));
    // Alone, a batch gets all it asks for.
    QCOMPARE(a.run(3, [](unsigned) {}), 3u);
  }

  // Two large pushes from pageable memory to two devices at once: each device's pool copies its
  // own, so both batches run at the same time (with one pool per direction for the process,
  // the second waited for the first: max 1).
  void two_devices() {
    std::vector<gpix::Device> devs;
    for (const gpix::Device& d : gpix::devices()) {
      if (d.info().backend == gpix::Backend::opencl &&
          d.info().name == gpix::devices()[0].info().name)
        devs.push_back(d);
    }
    if (devs.size() < 2) QSKIP("needs two devices of one kind (POCL_DEVICES=\"pthread pthread\")");
    const std::size_t n = std::size_t{48} << 20;  // staged: well above GPIX_STAGING_MIN_MB
    gpix::HostArray h = gpix::HostArray::empty(gpix::Shape{n}, gpix::DType::u8);  // pageable
    std::memset(h.data(), 0x5a, n);
    Overlap& o = overlap();
    {
      std::lock_guard lock(o.mutex);
      o.armed = true;
      o.most = 0;
    }
    CopyThreads::set_hook(&overlap_hook);
    gpix::Array a, b;
    std::thread other([&] { a = gpix::Array::push(h, devs[1]); });
    b = gpix::Array::push(h, devs[0]);
    other.join();
    CopyThreads::set_hook(nullptr);
    {
      std::lock_guard lock(o.mutex);
      o.armed = false;
    }
    QCOMPARE(o.most, std::size_t{2});
    QVERIFY(std::memcmp(a.pull().data(), h.data(), n) == 0);
    QVERIFY(std::memcmp(b.pull().data(), h.data(), n) == 0);
  }
};

QTEST_APPLESS_MAIN(TestCopyThreads)
#include "test_copy_threads.moc"
