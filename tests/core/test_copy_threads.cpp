// The staging copy threads (core/src/copy_threads.h), without a device: every index of a
// batch runs exactly once, index 0 on the caller, batches in a row and from several callers
// at once, with polling and with sleeping workers.
#include <QTest>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "copy_threads.h"

using gpix::detail::CopyThreads;

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
};

QTEST_APPLESS_MAIN(TestCopyThreads)
#include "test_copy_threads.moc"
