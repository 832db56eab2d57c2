// Tiled execution (gpix::run_tiled) of a float32 volume much larger than the slab budget,
// against the PCIe floor measured in the same run: floor = max(bytes pushed / push rate,
// bytes pulled / pull rate), the two directions being able to overlap. Gaussian sigma 2 and
// the 3x3x3 median, one to three workers per device; the first case is also checked bit for
// bit against the whole-array run.
// Per phase (TiledReport, summed over the workers, of the best repeat): push, run and pull
// seconds, the rates the pushes and pulls reached while the run went on, and the overlap,
// (push + pull) / wall: 1 when the transfers ran one after the other (or the run is not
// bound by them), towards 2 when every push travelled beside a pull.
//   bench_tiled [--device NAME[,NAME...]] [--gb 4] [--budget-mb 512] [--repeats 3]
//               [--workers 1,2,3]
//   bench_tiled ... --median-radius 2   the median's radius (default 1: 3x3x3); radius 2 (125
//               values a voxel) makes the run compute-bound rather than bus-bound
//   bench_tiled ... --pinned 1   the volume and the output in pinned host memory (HostArray::
//               pinned), which the slabs travel from and to by DMA without gpix's staging copy;
//               the floor then uses pinned rates
//   bench_tiled --beyond-gb 96 [--device ...] [--budget-mb 4096] [--workers 2] [--pinned 1]
// --beyond-gb: a volume larger than the device's whole memory (and than this host could hold
// twice), generated plane by plane by a SlabSource and checked by a SlabSink that keeps a
// checksum per plane instead of the planes; the run is repeated at a second budget (other slab
// boundaries) and every plane's checksum must agree.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpix/gpix.h"

namespace {

double seconds_of(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The PCIe rates in this run, GB/s: one 256 MB push and pull from pageable (or pinned) host
// memory, as the slabs travel (best of 5).
std::pair<double, double> host_rates(const gpix::Device& device, bool pinned = false) {
  const gpix::Shape probe{64, 1024, 1024};
  gpix::HostArray ph = pinned ? gpix::HostArray::pinned(probe, gpix::DType::f32, device)
                              : gpix::HostArray::empty(probe, gpix::DType::f32);
  std::memset(ph.data(), 0, ph.bytes());
  gpix::Array pa = gpix::Array::empty(probe, gpix::DType::f32, device);
  double push_s = 1e9, pull_s = 1e9;
  for (int r = 0; r < 5; ++r) {
    push_s = std::min(push_s, seconds_of([&] { pa.write(ph); }));
    pull_s = std::min(pull_s, seconds_of([&] { pa.read(ph); }));
  }
  const double push_gbps = static_cast<double>(ph.bytes()) / push_s / 1e9;
  const double pull_gbps = static_cast<double>(ph.bytes()) / pull_s / 1e9;
  std::printf("%s push %.1f GB/s, pull %.1f GB/s (256 MB, best of 5)\n",
              pinned ? "pinned" : "pageable", push_gbps, pull_gbps);
  return {push_gbps, pull_gbps};
}

// A tiled run over devs with a budget of budget_mb per device, reporting into rep.
gpix::TiledOptions options(const std::vector<gpix::Device>& devs, double budget_mb,
                           std::size_t workers, gpix::TiledReport& rep) {
  gpix::TiledOptions o;
  o.devices = devs;
  o.budget_bytes = static_cast<std::uint64_t>(budget_mb * 1e6);
  o.workers_per_device = workers;
  o.report = &rep;
  return o;
}

// Runs f(i) for i in [0, n) on up to `threads` threads: the generated source and the checking
// sink must keep up with PCIe (one core copies ~10 GB/s).
void parallel_for(std::size_t n, unsigned threads, const std::function<void(std::size_t)>& f) {
  std::vector<std::future<void>> jobs;
  const std::size_t per = (n + threads - 1) / threads;
  for (std::size_t b = 0; b < n; b += per) {
    jobs.push_back(std::async(std::launch::async, [&, b] {
      for (std::size_t i = b; i < std::min(n, b + per); ++i) f(i);
    }));
  }
  for (auto& j : jobs) j.get();
}

// Plane z is one of 61 random planes, picked by z: cheap to make, never constant along z.
// planes() hands out memory, as a source of planes already in memory does (a HostArray or a
// mapped file), so the run measures the transfers rather than a generator: the 61 planes are
// followed by copies of the first `span` of them, so that any run of up to `span` planes from
// any z is contiguous.
class GeneratedSource final : public gpix::SlabSource {
 public:
  // pin_for: valid to keep the planes in memory page-locked for that device (--pinned 1).
  GeneratedSource(std::size_t planes, std::size_t h, std::size_t w, std::size_t span,
                  const gpix::Device* pin_for = nullptr)
      : shape_{planes, h, w},
        plane_(h * w),
        pattern_(pin_for ? gpix::HostArray::pinned({61 + span, h, w}, gpix::DType::f32, *pin_for)
                         : gpix::HostArray::empty({61 + span, h, w}, gpix::DType::f32)) {
    auto p = pattern_.as<float>();
    std::uint32_t state = 987654321u;
    for (std::size_t i = 0; i < 61 * plane_; ++i) {
      state = state * 1664525u + 1013904223u;
      p[i] = static_cast<float>(state >> 8) * (1.0f / 16777216.0f);
    }
    for (std::size_t i = 61 * plane_; i < p.size(); ++i) p[i] = p[i % (61 * plane_)];
    span_ = span;
    if (pin_for) pinned_for_ = *pin_for;
  }
  gpix::Shape shape() const override { return shape_; }
  gpix::DType dtype() const override { return gpix::DType::f32; }
  void read(std::size_t from, std::size_t to, std::byte* dst) override {
    std::memcpy(dst, planes(from), (to - from) * plane_ * 4);
  }
  const std::byte* planes(std::size_t from) const override {
    return static_cast<const std::byte*>(pattern_.data()) + (from % 61) * plane_ * 4;
  }
  bool pinned_for(const gpix::Device& d) const override {
    return pattern_.is_pinned() && d == pinned_for_;
  }
  std::size_t span() const { return span_; }

 private:
  gpix::Shape shape_;
  std::size_t plane_;
  gpix::HostArray pattern_;
  gpix::Device pinned_for_;
  std::size_t span_ = 0;
};

// Keeps one 64-bit checksum per output plane.
class ChecksumSink final : public gpix::SlabSink {
 public:
  void start(const gpix::Shape& shape, gpix::DType dtype) override {
    plane_bytes_ = shape.elements() / shape[0] * gpix::size_of(dtype);
    sums_.assign(shape[0], 0);
  }
  // Every 8th plane (the run's speed, not the checksum's, is measured): 12 GB of a 96 GB run.
  void write(std::size_t from, std::size_t to, const std::byte* src) override {
    parallel_for(to - from, 8, [&](std::size_t i) {
      if ((from + i) % 8 != 0) return;
      const auto* w = reinterpret_cast<const std::uint64_t*>(src + i * plane_bytes_);
      std::uint64_t a = 0, b = 0;
      for (std::size_t k = 0; k < plane_bytes_ / 8; ++k) {
        a += w[k];
        b += a;  // order-sensitive (Fletcher-like)
      }
      sums_[from + i] = a ^ (b * 0x9e3779b97f4a7c15ull);
    });
  }
  const std::vector<std::uint64_t>& sums() const { return sums_; }

 private:
  std::size_t plane_bytes_ = 0;
  std::vector<std::uint64_t> sums_;
};

int beyond(const std::vector<gpix::Device>& devs, double gb, double budget_mb,
           std::size_t workers, bool pinned) {
  const std::size_t planes = static_cast<std::size_t>(gb * 1e9 / (1024.0 * 1024.0 * 4.0));
  // Room for the largest slab the budget allows, halos included (20 bytes a pixel at least).
  const auto span = static_cast<std::size_t>(budget_mb * 1e6 / (1024.0 * 1024.0 * 20.0)) + 64;
  GeneratedSource src(planes, 1024, 1024, span, pinned ? &devs[0] : nullptr);
  const double bytes = static_cast<double>(planes) * 1024 * 1024 * 4;
  std::uint64_t total = 0;
  for (const auto& d : devs) total += d.info().global_memory;
  std::printf(
      "generated volume %s float32, %.1f GB (devices' memory %.1f GB) from %s memory; budget "
      "%.0f MB\n",
      src.shape().str().c_str(), bytes / 1e9, static_cast<double>(total) / 1e9,
      pinned ? "pinned" : "pageable", budget_mb);
  // Slabs are pushed from the source's memory and pulled through the workers' pinned buffers;
  // the floor takes the pull rate of pinned memory where the pushes come from pinned memory.
  const auto [push_gbps, pull_gbps] = host_rates(devs[0], pinned);
  const std::pair<const char*, gpix::Params> cases[] = {
      {"gaussian_blur", {{"sigma_x", 2.0}, {"sigma_y", 2.0}, {"sigma_z", 2.0}}},
      {"median_box", {{"radius_x", 1.0}, {"radius_y", 1.0}, {"radius_z", 1.0}}}};
  for (const auto& [filter, params] : cases) {
    std::vector<std::uint64_t> first;
    for (double b : {budget_mb, budget_mb * 0.6}) {
      gpix::TiledReport rep;
      gpix::TiledOptions o = options(devs, b, workers, rep);
      ChecksumSink sink;
      gpix::SlabSource* in[] = {&src};
      gpix::run_tiled(filter, in, &sink, params, o);
      const double floor_s = std::max(bytes / (push_gbps * 1e9), bytes / (pull_gbps * 1e9)) /
                             static_cast<double>(devs.size());
      std::printf(
          "%-14s budget %6.0f MB: %zu slabs of %zu planes, %.2f s, %.1f GB/s in, floor %.2f s "
          "(volume bytes), x floor %.2f; push %.2f s run %.2f s pull %.2f s read %.2f s write "
          "%.2f s, overlap %.2f\n",
          filter, b, rep.slabs, rep.planes_per_slab, rep.seconds, bytes / rep.seconds / 1e9,
          floor_s, rep.seconds / floor_s, rep.push_seconds, rep.run_seconds, rep.pull_seconds,
          rep.read_seconds, rep.write_seconds, (rep.push_seconds + rep.pull_seconds) / rep.seconds);
      std::fflush(stdout);
      if (first.empty()) {
        first = sink.sums();
      } else if (first != sink.sums()) {
        std::printf("  planes DIFFER between the two budgets\n");
        return 1;
      } else {
        std::printf("  every plane's checksum equals the other budget's run\n");
      }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device;
  double gb = 4;
  double budget_mb = 512;
  int repeats = 3;
  std::vector<std::size_t> workers = {1, 2, 3};
  double beyond_gb = 0;
  bool pinned = false;
  double mr = 1;  // the median's radius
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--gb")) gb = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--budget-mb")) budget_mb = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--repeats")) repeats = std::stoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--beyond-gb")) beyond_gb = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--pinned")) pinned = std::stoi(argv[i + 1]) != 0;
    if (!std::strcmp(argv[i], "--median-radius")) mr = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--workers")) {
      workers.clear();
      std::stringstream list(argv[i + 1]);
      for (std::string w; std::getline(list, w, ',');) workers.push_back(std::stoul(w));
    }
  }
  try {
    std::vector<gpix::Device> devs;
    std::string rest = device;
    do {
      const auto comma = rest.find(',');
      devs.push_back(gpix::select_device(rest.substr(0, comma)));
      rest = comma == std::string::npos ? std::string() : rest.substr(comma + 1);
    } while (!rest.empty());
    for (const auto& d : devs) std::printf("device: %s\n", d.label().c_str());
    if (beyond_gb > 0) return beyond(devs, beyond_gb, budget_mb, workers.front(), pinned);
    // A cube-ish volume of about `gb` GB: 1024 x 1024 planes.
    const std::size_t planes =
        std::max<std::size_t>(8, static_cast<std::size_t>(gb * 1e9 / (1024.0 * 1024.0 * 4.0)));
    const gpix::Shape shape{planes, 1024, 1024};
    gpix::HostArray in = pinned ? gpix::HostArray::pinned(shape, gpix::DType::f32, devs[0])
                                : gpix::HostArray::empty(shape, gpix::DType::f32);
    {
      // One generator per plane, on every core (12 GB by one thread took seconds a run).
      auto v = in.as<float>();
      const std::size_t plane = 1024 * 1024;
      parallel_for(planes, std::max(1u, std::thread::hardware_concurrency()), [&](std::size_t z) {
        std::uint32_t state = 12345u + 2654435761u * static_cast<std::uint32_t>(z);
        for (std::size_t i = z * plane; i < (z + 1) * plane; ++i) {
          state = state * 1664525u + 1013904223u;
          v[i] = static_cast<float>(state >> 8) * (1.0f / 16777216.0f);
        }
      });
    }
    const double bytes = static_cast<double>(in.bytes());
    std::printf("volume %s float32, %.2f GB in %s host memory; budget %.0f MB per device\n",
                shape.str().c_str(), bytes / 1e9, pinned ? "pinned" : "pageable", budget_mb);

    const auto [push_gbps, pull_gbps] = host_rates(devs[0], pinned);

    struct Case {
      const char* filter;
      gpix::Params params;
    };
    const Case cases[] = {{"gaussian_blur", {{"sigma_x", 2.0}, {"sigma_y", 2.0}, {"sigma_z", 2.0}}},
                          {"median_box", {{"radius_x", mr}, {"radius_y", mr}, {"radius_z", mr}}}};
    std::printf("%-14s %7s %6s %5s %8s %8s %8s %8s %8s %7s %7s %9s %9s %8s %8s\n", "filter",
                "workers", "slabs", "halo", "best s", "GB/s in", "floor s", "x floor", "push s",
                "run s", "pull s", "push GB/s", "pull GB/s", "overlap", "fresh s");
    bool checked = false;
    for (const Case& c : cases) {
      for (std::size_t w : workers) {
        gpix::TiledReport rep;
        gpix::TiledOptions o = options(devs, budget_mb, w, rep);
        // The first run writes a fresh output (first-touch page faults included); the repeats
        // reuse it through TiledOptions::output.
        gpix::HostArray out;
        if (pinned) {
          out = gpix::HostArray::pinned(shape, gpix::DType::f32, devs[0]);
          o.output = &out;
        }
        try {
          out = gpix::run_tiled(c.filter, in, c.params, o);
        } catch (const gpix::InvalidArgument& e) {
          // More workers than the budget holds slabs for: say so, go on with the next case.
          std::printf("%-14s %7zu skipped: %s\n", c.filter, w, e.what());
          continue;
        }
        const double fresh = rep.seconds;
        o.output = &out;
        double best = 1e9;
        gpix::TiledReport best_rep;
        for (int r = 0; r < repeats; ++r) {
          gpix::run_tiled(c.filter, in, c.params, o);
          if (rep.seconds < best) {
            best = rep.seconds;
            best_rep = rep;
          }
        }
        const double floor_s = std::max(static_cast<double>(rep.bytes_in) / (push_gbps * 1e9),
                                        static_cast<double>(rep.bytes_out) / (pull_gbps * 1e9)) /
                               static_cast<double>(devs.size());
        const gpix::TiledReport& b = best_rep;
        std::printf(
            "%-14s %7zu %6zu %5zu %8.3f %8.1f %8.3f %8.2f %8.3f %7.3f %7.3f %9.1f %9.1f "
            "%8.2f %8.3f\n",
            c.filter, w, b.slabs, b.halo, best, bytes / best / 1e9, floor_s, best / floor_s,
            b.push_seconds, b.run_seconds, b.pull_seconds,
            static_cast<double>(b.bytes_in) / b.push_seconds / 1e9,
            static_cast<double>(b.bytes_out) / b.pull_seconds / 1e9,
            (b.push_seconds + b.pull_seconds) / best, fresh);
        std::fflush(stdout);
        if (!checked) {
          // Bit for bit against the whole-array run (the volume fits on the GPU here).
          const gpix::Array whole =
              gpix::run(c.filter, gpix::Array::push(in, devs[0]), c.params).array;
          const gpix::HostArray wh = whole.pull();
          const bool same = std::memcmp(wh.data(), out.data(), wh.bytes()) == 0;
          std::printf("  whole-array run: %s\n", same ? "identical" : "DIFFERENT");
          checked = true;
          if (!same) return 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tiled: %s\n", e.what());
    return 1;
  }
  return 0;
}
