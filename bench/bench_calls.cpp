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
//   BENCH_CALLS_LABELS=1          label_statistics on blobs only (label_stats_calls); with
//                                 BENCH_CALLS_CASE="256 x 256 x 256", that shape only
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

// label_statistics on the suite's blobs (bench/suite_peers.py make_blobs, made here with
// gpix's own filters: hashed noise smoothed by sigma 4 (2D) or 2.5 (3D) and thresholded at its
// 75th percentile, labelled with full connectivity; the intensity 200 + 3000 x the mask smoothed
// by sigma 1): the whole call and its parts, so that a profile can say where the time goes.
void label_stats_calls(const gpix::Device& dev) {
  for (const gpix::Shape s : {gpix::Shape{2048, 2048}, gpix::Shape{8192, 8192},
                              gpix::Shape{256, 256, 256}, gpix::Shape{512, 512, 512}}) {
    if (const char* only = std::getenv("BENCH_CALLS_CASE"); only && s.str() != only) continue;
    gpix::HostArray h = gpix::HostArray::empty(s, gpix::DType::f32);
    auto* f = reinterpret_cast<float*>(h.data());
    for (std::size_t i = 0; i < s.elements(); ++i) {
      f[i] = static_cast<float>(((i + 7) * 2654435761ull >> 7) % 1000) / 1000.0f;
    }
    const gpix::Array noise = gpix::Array::push(h, dev);
    const double sigma = s.depth() > 1 ? 2.5 : 4.0;
    const gpix::Array smooth = gpix::gaussian_blur(noise, sigma, sigma, s.depth() > 1 ? sigma : 0);
    const gpix::HostArray sh = smooth.pull();
    std::vector<float> v(reinterpret_cast<const float*>(sh.data()),
                         reinterpret_cast<const float*>(sh.data()) + s.elements());
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() * 3 / 4), v.end());
    const gpix::Array mask = gpix::threshold(smooth, v[v.size() * 3 / 4]);
    const gpix::Array labels = gpix::connected_components(mask, "full");
    const gpix::Array soft = gpix::gaussian_blur(gpix::convert(mask, gpix::DType::f32), 1.0, 1.0,
                                                 s.depth() > 1 ? 1.0 : 0);
    const gpix::Array img = gpix::add_scalar(gpix::multiply_scalar(soft, 3000), 200);
    dev.finish();
    const gpix::Stats ls = gpix::stats(labels);
    const double all = med_us(21, [&] { (void)gpix::label_statistics(labels, img); });
    const double st = med_us(21, [&] { (void)gpix::stats(labels); });
    // The call's other parts as label_stats makes them: its five tables' allocations (four
    // zeroed, one filled) and their five queued pulls into pageable memory with one wait.
    const auto rows = static_cast<std::size_t>(ls.max.as_double());
    const std::size_t reps = std::clamp<std::size_t>(65536 / rows, 1, 32);
    const double make = med_us(21, [&] {
      gpix::Array t1 = gpix::Array::create(gpix::Shape{rows}, gpix::DType::u32, dev);
      gpix::Array t2 = gpix::Array::create(gpix::Shape{rows * reps}, gpix::DType::u64, dev);
      gpix::Array t3 = gpix::Array::empty(gpix::Shape{rows}, gpix::DType::u32, dev);
      t3.fill(gpix::Scalar(std::uint32_t{0xffffffffu}));
      gpix::Array t4 = gpix::Array::create(gpix::Shape{rows}, gpix::DType::u32, dev);
      gpix::Array t5 = gpix::Array::create(gpix::Shape{rows}, gpix::DType::u32, dev);
      dev.finish();
    });
    const gpix::Array t1 = gpix::Array::create(gpix::Shape{rows}, gpix::DType::u32, dev);
    const gpix::Array t2 = gpix::Array::create(gpix::Shape{rows * reps}, gpix::DType::u64, dev);
    std::vector<std::byte> b1(t1.bytes()), b2(t2.bytes()), b3(t1.bytes()), b4(t1.bytes()),
        b5(t1.bytes());
    const double pulls = med_us(21, [&] {
      std::vector<gpix::Event> e;
      e.push_back(gpix::pull_async(t1, b1.data(), b1.size()));
      e.push_back(gpix::pull_async(t1, b3.data(), b3.size()));
      e.push_back(gpix::pull_async(t1, b4.data(), b4.size()));
      e.push_back(gpix::pull_async(t1, b5.data(), b5.size()));
      e.push_back(gpix::pull_async(t2, b2.data(), b2.size()));
      for (const gpix::Event& x : e) x.wait();
    });
    std::printf(
        "label_statistics %-14s %s labels: %8.1f us (stats of the labels %6.1f us, five tables "
        "made %6.1f us, pulled %6.1f us)\n",
        s.str().c_str(), ls.max.str().c_str(), all, st, make, pulls);
  }
}

int run(int argc, char** argv) {
  const gpix::Device dev = gpix::select_device(argc > 1 ? argv[1] : "");
  std::printf("device %s\n", dev.label().c_str());
  if (std::getenv("BENCH_CALLS_LABELS")) {
    label_stats_calls(dev);
    return 0;
  }
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
