// Every catalog filter on every device present, on the same random inputs, compared with
// the first device's output: CUDA, NVIDIA OpenCL and PoCL must agree within the stated
// tolerance (integers within 1, floats within 1e-4 relative to max(|x|, 1); NaN matches NaN).
// Core only (no Qt): it runs on the GPU machine. Ends with "N passed, M failed".
//   cross_backend [--devices 0,2,3]
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpix/gpix.h"

using namespace gpix;

namespace {

HostArray random_input(const InputSpec& in, DType t, const Shape& s, std::mt19937_64& r) {
  HostArray h(s, t);
  visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    auto v = h.as<T>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (in.kind == InputKind::binary) {
        v[i] = static_cast<T>(r() % 3 == 0);
      } else if (in.kind == InputKind::labels) {
        v[i] = static_cast<T>(r() % 4 == 0 ? 0 : 1 + r() % 9);
      } else if constexpr (std::is_floating_point_v<T>) {
        v[i] = static_cast<T>(std::uniform_real_distribution<double>(0, 100)(r));
      } else {
        v[i] = static_cast<T>(r() % 100);
      }
    }
  });
  return h;
}

// The worst difference between two results, as a count of elements out of tolerance.
std::size_t differences(const HostArray& a, const HostArray& b, double& worst) {
  std::size_t bad = 0;
  worst = 0;
  visit_dtype(a.dtype(), [&](auto z) {
    using T = decltype(z);
    const auto x = a.as<T>(), y = b.as<T>();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double p = static_cast<double>(x[i]), q = static_cast<double>(y[i]);
      if (std::isnan(p) || std::isnan(q)) {
        if (std::isnan(p) != std::isnan(q)) ++bad;
        continue;
      }
      const double d = std::fabs(p - q);
      const double tol = std::is_floating_point_v<T> ? 1e-4 * std::max(std::fabs(p), 1.0) : 1.0;
      worst = std::max(worst, d);
      if (d > tol) ++bad;
    }
  });
  return bad;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Device> devs;
  if (argc > 2 && !std::strcmp(argv[1], "--devices")) {
    std::string list = argv[2];
    for (std::size_t p = 0; p <= list.size();) {
      const std::size_t c = std::min(list.find(',', p), list.size());
      devs.push_back(devices().at(std::stoul(list.substr(p, c - p))));
      p = c + 1;
    }
  } else {
    devs = devices();
  }
  std::printf("devices:");
  for (const auto& d : devs) std::printf(" [%d] %s;", d.info().index, d.label().c_str());
  std::printf("\n");
  int passed = 0, failed = 0;
  std::mt19937_64 rng(20261121);
  for (const FilterInfo& f : filters()) {
    for (int dims : {2, 3}) {
      if (std::find(f.dims.begin(), f.dims.end(), dims) == f.dims.end()) continue;
      const Shape s = dims == 2 ? Shape{67, 93} : Shape{9, 31, 37};
      DType t = f.dtypes.front();
      for (DType pref : {DType::f32, DType::u16, DType::u8, DType::u32}) {
        if (std::find(f.dtypes.begin(), f.dtypes.end(), pref) != f.dtypes.end()) {
          t = pref;
          break;
        }
      }
      std::vector<HostArray> host;
      for (const auto& in : f.inputs) {
        host.push_back(random_input(in, in.kind == InputKind::labels ? DType::u32 : t, s, rng));
      }
      HostArray ref;
      Table ref_table;
      std::string line = f.name + " " + std::to_string(dims) + "D " + std::string(name(t));
      bool ok = true;
      std::string detail;
      for (std::size_t k = 0; k < devs.size(); ++k) {
        try {
          std::vector<Array> inputs;
          for (const auto& h : host) inputs.push_back(Array::push(h, devs[k]));
          const Result r = run(f.name, inputs);
          if (r.is_table()) {
            if (k == 0) {
              ref_table = r.table;
            } else {
              if (r.table.size() != ref_table.size() || r.table.columns() != ref_table.columns()) {
                ok = false;
                detail = "table shape differs on [" + std::to_string(devs[k].info().index) + "]";
              }
              for (std::size_t i = 0; i < r.table.size() && ok; ++i) {
                for (std::size_t j = 0; j < r.table.width(); ++j) {
                  const double p = ref_table(i, j), q = r.table(i, j);
                  if (!(std::isnan(p) && std::isnan(q)) &&
                      std::fabs(p - q) > 1e-4 * std::max(std::fabs(p), 1.0)) {
                    ok = false;
                    detail = "table differs on [" + std::to_string(devs[k].info().index) + "]";
                  }
                }
              }
            }
            continue;
          }
          const HostArray out = r.array.pull();
          if (k == 0) {
            ref = out;
            continue;
          }
          if (!(out.shape() == ref.shape()) || out.dtype() != ref.dtype()) {
            ok = false;
            detail = "shape/dtype differ on [" + std::to_string(devs[k].info().index) + "]";
            continue;
          }
          double worst = 0;
          const std::size_t bad = differences(ref, out, worst);
          if (bad) {
            ok = false;
            detail = std::to_string(bad) + " elements differ on [" +
                     std::to_string(devs[k].info().index) + "], worst " + std::to_string(worst);
          }
        } catch (const Error& e) {
          ok = false;
          detail = "[" + std::to_string(devs[k].info().index) + "] " + e.what();
        }
      }
      std::printf("%-4s %-44s %s\n", ok ? "ok" : "FAIL", line.c_str(), detail.c_str());
      (ok ? passed : failed)++;
    }
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
