// Copies between two devices (Array::copy_from across devices, issue 20): GB/s of each
// direction alone and of both directions at once, by gpix's default path (CUDA peer to peer
// where the driver allows it) and through pinned host memory (GPIX_NO_PEER_COPY), with the
// contents checked after every path. Every ordered pair of the devices given.
//   bench_devices [--device A,B[,...]] [--mb 1024] [--repeats 5]
// Default devices: every GPU.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "config.h"
#include "gpix/gpix.h"

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Pair {
  gpix::Array a, b;  // a on the first device, b on the second
};

// Best GB/s of f over repeats, where f moves `bytes`.
double best_rate(int repeats, double bytes, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) best = std::min(best, seconds_of(f));
  return bytes / best / 1e9;
}

// The contents after a copy equal the source's (a device-side pattern, checked on the host).
bool same(const gpix::Array& x, const gpix::Array& y) {
  const gpix::HostArray hx = x.pull();
  const gpix::HostArray hy = y.pull();
  return std::memcmp(hx.data(), hy.data(), hx.bytes()) == 0;
}

}  // namespace

std::string tag(const gpix::Device& d) {
  return "[" + std::to_string(d.info().index) + "] " + d.label();
}

int main(int argc, char** argv) {
  std::string list;
  double mb = 1024;
  int repeats = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) list = argv[i + 1];
    if (!std::strcmp(argv[i], "--mb")) mb = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
  }
  try {
    std::vector<gpix::Device> devs;
    if (list.empty()) {
      for (const auto& d : gpix::devices()) {
        if (d.info().type == gpix::DeviceType::gpu) devs.push_back(d);
      }
    } else {
      std::string rest = list;
      do {
        const auto comma = rest.find(',');
        devs.push_back(gpix::choose_device(rest.substr(0, comma)).device);
        rest = comma == std::string::npos ? std::string() : rest.substr(comma + 1);
      } while (!rest.empty());
    }
    if (devs.size() < 2) {
      std::printf("bench_devices: fewer than two devices; nothing to copy between\n");
      return 0;
    }
    // float32 planes of 1024 x 1024 (4 MiB each).
    const auto planes = std::max<std::size_t>(1, static_cast<std::size_t>(mb / 4));
    const gpix::Shape shape{planes, 1024, 1024};
    const double bytes = static_cast<double>(shape.elements()) * 4;
    gpix::HostArray pattern = gpix::HostArray::empty(shape, gpix::DType::f32);
    {
      auto v = pattern.as<float>();
      std::uint32_t s = 2463534242u;
      for (auto& x : v) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x = static_cast<float>(s >> 8);
      }
    }
    std::printf("%.0f MB float32 per copy, best of %d\n", bytes / 1e6, repeats);
    for (const auto& d : devs)
      std::printf("device: %s (PCI %s)\n", tag(d).c_str(), d.pci_address().c_str());
    std::printf("%-44s %-44s %-10s %9s %9s %11s %s\n", "from", "to", "path", "a->b GB/s",
                "b->a GB/s", "both GB/s", "contents");
    int failures = 0;
    for (std::size_t i = 0; i < devs.size(); ++i) {
      for (std::size_t j = i + 1; j < devs.size(); ++j) {
        Pair p{gpix::Array::push(pattern, devs[i]),
               gpix::Array::empty(shape, gpix::DType::f32, devs[j])};
        gpix::Array back = gpix::Array::empty(shape, gpix::DType::f32, devs[i]);
        for (const bool host : {false, true}) {
          gpix::detail::config_for_testing().no_peer_copy = host;
          p.b.fill(-1.0);
          back.fill(-1.0);
          const double ab = best_rate(repeats, bytes, [&] { p.b.copy_from(p.a); });
          const double ba = best_rate(repeats, bytes, [&] { back.copy_from(p.b); });
          // Both directions at once: a -> b on this thread, b -> a on another.
          gpix::Array b2 = gpix::Array::empty(shape, gpix::DType::f32, devs[j]);
          b2.copy_from(p.a);
          const double both = best_rate(repeats, 2 * bytes, [&] {
            std::thread t([&] { back.copy_from(b2); });
            p.b.copy_from(p.a);
            t.join();
          });
          const bool ok = same(p.a, p.b) && same(p.a, back);
          failures += ok ? 0 : 1;
          std::printf("%-44.44s %-44.44s %-10s %9.1f %9.1f %11.1f %s\n", tag(devs[i]).c_str(),
                      tag(devs[j]).c_str(), host ? "host" : "default", ab, ba, both,
                      ok ? "equal" : "DIFFER");
          std::fflush(stdout);
        }
        gpix::detail::config_for_testing().no_peer_copy = false;
      }
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_devices: %s\n", e.what());
    return 1;
  }
}
