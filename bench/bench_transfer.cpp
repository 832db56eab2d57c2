// Push/pull bandwidth from ordinary (pageable) host memory.
//   bench_transfer [--device NAME] [--mb 256] [--repeats 11]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpix/gpix.h"
#include "timing.h"

int main(int argc, char** argv) {
  std::string device;
  std::size_t mb = 256;
  int repeats = 11;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--mb")) mb = std::stoul(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
  }
  try {
    const gpix::Device dev = gpix::select_device(device);
    const std::size_t n = mb * 1000 * 1000 / 4;
    std::vector<float> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<float>(i % 1000) * 0.5f;
    auto a = gpix::Array::empty(gpix::Shape{n}, gpix::DType::f32, dev);
    const double bytes = static_cast<double>(n) * 4;
    const double push = gpix::bench::median_ms(repeats, [&] { a.write(host.data(), n * 4); });
    const double pull = gpix::bench::median_ms(repeats, [&] { a.read(host.data(), n * 4); });
    const double stats_ms = gpix::bench::median_ms(repeats, [&] { (void)gpix::stats(a); });
    std::printf("device: %s\n", dev.label().c_str());
    std::printf("%-28s %10s %10s\n", "op (float32)", "median ms", "GB/s");
    std::printf("%-28s %10.3f %10.2f\n", ("push " + std::to_string(mb) + " MB pageable").c_str(), push, gpix::bench::gbps(bytes, push));
    std::printf("%-28s %10.3f %10.2f\n", ("pull " + std::to_string(mb) + " MB pageable").c_str(), pull, gpix::bench::gbps(bytes, pull));
    std::printf("%-28s %10.3f %10.2f\n", ("stats " + std::to_string(mb) + " MB").c_str(), stats_ms, gpix::bench::gbps(bytes, stats_ms));
  } catch (const gpix::Error& e) {
    std::fprintf(stderr, "bench_transfer: %s\n", e.what());
    return 1;
  }
  return 0;
}
