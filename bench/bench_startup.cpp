// Where process start -> first device ready goes (issue 17's "under 200 ms warm"): each step
// of what select_device() and a first push do, timed separately in a fresh process. Run it
// twice in new processes; the second has the driver's caches warm.
//   bench_startup [cuda|opencl|steps|opencl-alone]
// opencl-alone: the OpenCL platforms enumerated and the first GPU pushed to, the CUDA driver
// never started in the process (what an `opencl:` query could cost without CUDA's start).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/nvrtc.h"
#include "detail.h"
#include "gpix/array.h"
#include "gpix/device.h"

using namespace gpix;
using Clock = std::chrono::steady_clock;

namespace {
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "cuda";
  auto t = Clock::now();
  const auto t0 = t;
  if (which == "steps") {
#if defined(GPIX_HAVE_CUDA)
    (void)detail::Nvrtc::get();
    std::printf("nvrtc load          %8.1f ms\n", ms_since(t));
    t = Clock::now();
#endif
    auto cu = detail::enumerate_cuda();
    std::printf("enumerate cuda      %8.1f ms (%zu devices)\n", ms_since(t), cu.devices.size());
    t = Clock::now();
    auto cl = detail::enumerate_opencl();
    std::printf("enumerate opencl    %8.1f ms (%zu devices)\n", ms_since(t), cl.devices.size());
    std::printf("total               %8.1f ms\n", ms_since(t0));
    return 0;
  }
  if (which == "opencl-alone") {
    auto cl = detail::enumerate_opencl();
    std::printf("enumerate opencl    %8.1f ms (%zu devices, no CUDA)\n", ms_since(t),
                cl.devices.size());
    for (auto& impl : cl.devices) {
      if (impl->info().type != DeviceType::gpu) continue;
      const Device d = detail::Access::device(impl);
      t = Clock::now();
      std::vector<float> host(2048 * 2048, 1.0f);
      Array a = Array::push(host, Shape{2048, 2048}, d);
      d.finish();
      std::printf("first push 16 MB    %8.1f ms  %s\n", ms_since(t), d.label().c_str());
      break;
    }
    std::printf("total               %8.1f ms\n", ms_since(t0));
    return 0;
  }
  const Device d = select_device(which + ":");
  std::printf("select_device(%s:) %8.1f ms  %s\n", which.c_str(), ms_since(t), d.label().c_str());
  t = Clock::now();
  std::vector<float> host(2048 * 2048, 1.0f);
  Array a = Array::push(host, Shape{2048, 2048}, d);
  d.finish();
  std::printf("first push 16 MB    %8.1f ms\n", ms_since(t));
  std::printf("total               %8.1f ms\n", ms_since(t0));
  return 0;
}
