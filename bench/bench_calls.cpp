// Per-call times at realistic sizes of the calls whose fixed costs and index arithmetic issue 17
// measured on 2026-11-28 (bench/RESULTS.md): whole-image statistics (gpix::stats and the
// catalog's maximum_of_all_pixels and sum_of_all_pixels, up to 512^3), read-backs of 40 B to
// 42 kB into pageable and pinned memory (a stats() call's partials were 42 kB on an H100), and
// resample by 2 and by 0.5 beside affine_transform of the same size, sheared (sample_affine)
// and scale-only (sample_scale). Medians of 51 calls (7 for resample and affine, each ended by
// Device::finish), after two warm-up calls.
//   bench_calls [DEVICE]          e.g. cuda:, opencl:NVIDIA
//   BENCH_CALLS_STATS_ONLY=1      statistics only
//   BENCH_CALLS_CASE="512^3 u16"  one statistics case only (for ncu)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "gpix/catalog.h"
#include "gpix/gpix.h"

namespace {

using Clock = std::chrono::steady_clock;

// The median of `reps` calls of f in microseconds, after two warm-up calls.
template <class F>
double med_us(int reps, F&& f) {
  std::vector<double> t;
  f();
  f();
  for (int i = 0; i < reps; ++i) {
    const auto a = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int run(int argc, char** argv) {
  const gpix::Device dev = gpix::select_device(argc > 1 ? argv[1] : "");
  std::printf("device %s\n", dev.label().c_str());
  struct C {
    const char* n;
    gpix::Shape s;
    gpix::DType t;
  };
  const C cases[] = {{"8x8 f32", gpix::Shape{8, 8}, gpix::DType::f32},
                     {"2048^2 f32", gpix::Shape{2048, 2048}, gpix::DType::f32},
                     {"2048^2 u16", gpix::Shape{2048, 2048}, gpix::DType::u16},
                     {"256^3 f32", gpix::Shape{256, 256, 256}, gpix::DType::f32},
                     {"256^3 u16", gpix::Shape{256, 256, 256}, gpix::DType::u16},
                     {"8192^2 f32", gpix::Shape{8192, 8192}, gpix::DType::f32},
                     {"8192^2 u16", gpix::Shape{8192, 8192}, gpix::DType::u16},
                     {"512^3 u16", gpix::Shape{512, 512, 512}, gpix::DType::u16},
                     {"512^3 u8", gpix::Shape{512, 512, 512}, gpix::DType::u8},
                     {"512^3 f32", gpix::Shape{512, 512, 512}, gpix::DType::f32}};
  for (const C& c : cases) {
    if (const char* only = std::getenv("BENCH_CALLS_CASE"); only && std::string(only) != c.n)
      continue;
    gpix::HostArray h = gpix::HostArray::empty(c.s, c.t);
    std::memset(h.data(), 1, h.bytes());
    gpix::Array a = gpix::Array::empty(c.s, c.t, dev);
    a.write(h);
    dev.finish();
    const double st = med_us(51, [&] { (void)gpix::stats(a); });
    const double mx = med_us(51, [&] { (void)gpix::run("maximum_of_all_pixels", a, {}); });
    const double sm = med_us(51, [&] { (void)gpix::run("sum_of_all_pixels", a, {}); });
    std::printf("%-12s stats %7.1f us  run(max) %7.1f  run(sum) %7.1f\n", c.n, st, mx, sm);
  }
  if (std::getenv("BENCH_CALLS_STATS_ONLY")) return 0;
  for (std::size_t bytes : {std::size_t{40}, std::size_t{8448}, std::size_t{42240}}) {
    gpix::Array a = gpix::Array::empty(gpix::Shape{bytes}, gpix::DType::u8, dev);
    std::vector<std::byte> host(bytes);
    gpix::HostArray pin = gpix::HostArray::pinned(gpix::Shape{bytes}, gpix::DType::u8, dev);
    const double pg = med_us(201, [&] { a.read(host.data(), host.size()); });
    const double pn = med_us(201, [&] { a.read(pin); });
    std::printf("read %6zu B: pageable %6.1f us, pinned %6.1f us\n", bytes, pg, pn);
  }
  std::printf("finish() alone %6.1f us\n", med_us(201, [&] { dev.finish(); }));
  // resample x2, and an equivalent-size non-diagonal affine for the old kernel
  struct R {
    const char* n;
    gpix::Shape s;
    gpix::DType t;
  };
  const R rs[] = {{"512^3 f32", gpix::Shape{512, 512, 512}, gpix::DType::f32},
                  {"256^3 u16", gpix::Shape{256, 256, 256}, gpix::DType::u16},
                  {"8192^2 f32", gpix::Shape{8192, 8192}, gpix::DType::f32},
                  {"2048^2 u16", gpix::Shape{2048, 2048}, gpix::DType::u16}};
  for (const R& r : rs) {
    gpix::Array a = gpix::Array::empty(r.s, r.t, dev);
    gpix::HostArray h = gpix::HostArray::empty(r.s, r.t);
    std::memset(h.data(), 3, h.bytes());
    a.write(h);
    // One filter call ended by Device::finish, median of 7.
    const auto time_of = [&](const char* filter, const gpix::Params& p) {
      return med_us(7, [&] {
        (void)gpix::run(filter, a, p);
        dev.finish();
      });
    };
    for (const char* interp : {"linear", "nearest"}) {
      const gpix::ParamValue how = std::string(interp);
      const auto zoom = [&](double f) {
        return gpix::Params{
            {"factor_x", f}, {"factor_y", f}, {"factor_z", f}, {"interpolation", how}};
      };
      const double up = time_of("resample", zoom(2.0));
      const double down = time_of("resample", zoom(0.5));
      const double aff = time_of(
          "affine_transform",
          {{"m00", 0.5}, {"m01", 0.001}, {"m11", 0.5}, {"m22", 0.5}, {"interpolation", how}});
      const double afd = time_of(
          "affine_transform", {{"m00", 0.5}, {"m11", 0.5}, {"m22", 0.5}, {"interpolation", how}});
      std::printf(
          "%-11s %-7s resample x2 %9.1f us, x0.5 %8.1f us; affine same-size sheared %9.1f, "
          "scale-only %9.1f\n",
          r.n, interp, up, down, aff, afd);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_calls: %s\n", e.what());
    return 1;
  }
}
