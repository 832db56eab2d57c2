#pragma once
// Several threads doing the same job at once, for the concurrency tests: job(thread, k) for
// k = 0 .. iterations - 1 on each thread; what the jobs report (non-empty strings) is
// collected and returned after every thread has ended, in no particular order.
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gpix::test {

inline std::vector<std::string> on_threads(int threads, int iterations,
                                           const std::function<std::string(int, int)>& job) {
  std::mutex m;
  std::vector<std::string> reports;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int k = 0; k < iterations; ++k) {
        std::string report = job(t, k);
        if (report.empty()) continue;
        const std::lock_guard<std::mutex> lock(m);
        reports.push_back(std::move(report));
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return reports;
}

}  // namespace gpix::test
