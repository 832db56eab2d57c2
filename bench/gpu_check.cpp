// The core checks on every device present, for the GPU machine (which has no Qt): bit-exact
// round trips of every dtype on odd 2D/3D shapes, stats() against a CPU reference, fill, zero
// and copy, cross-device copies, the allocation-limit and out-of-memory errors, and calls from
// several threads. Prints one row per (device, check) and ends with "N passed, M failed";
// exits 1 when anything failed.
//   gpu_check [--device QUERY]    (QUERY as select_device() takes it; default: every device)
//   gpu_check --large-allocations [--device QUERY]
//       Large single buffers (issue 3, nvidia-opencl-oom). First, for each OpenCL device of an
//       NVIDIA platform, raw OpenCL in a fresh process per case (a failure can poison a context
//       for good): create 1, 4, 8, 16, 32 GiB and the largest allocation, make it resident by
//       a 1-byte write at the end, a 1-byte fill at the end or a fill of the whole buffer, read
//       the last byte back, then check the context still works. Informational rows ("probe").
//       Then through gpix on every selected GPU: the same sizes, each written and read back at
//       both ends; then the out-of-memory check and a round trip afterwards (pass/fail rows).
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "gpix/gpix.h"

namespace {

using namespace gpix;

std::mt19937_64& rng() {
  static std::mt19937_64 r = [] {
    std::uint64_t seed = std::random_device{}();
    if (const char* s = std::getenv("GPIX_TEST_SEED")) seed = std::strtoull(s, nullptr, 10);
    std::printf("GPIX_TEST_SEED=%llu\n", static_cast<unsigned long long>(seed));
    return std::mt19937_64(seed);
  }();
  return r;
}

// Random bit patterns (NaN payloads, infinities, -0 and denormals included for floats).
template <class T>
std::vector<T> random_bits(std::size_t n) {
  std::vector<T> v(n);
  for (auto& x : v) {
    const std::uint64_t bits = rng()();
    std::memcpy(&x, &bits, sizeof(T));
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T specials[] = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(), T(-0.0),
                          std::numeric_limits<T>::denorm_min()};
    for (std::size_t i = 0; i < std::min<std::size_t>(n, 5); ++i) v[(i * 7919) % n] = specials[i];
  }
  return v;
}

// Random values: full-range integers with some small ones, floats in [-1000, 1000].
template <class T>
std::vector<T> random_values(std::size_t n) {
  std::vector<T> v(n);
  if constexpr (std::is_integral_v<T>) {
    std::uniform_int_distribution<long long> small(std::is_signed_v<T> ? -1000 : 0, 1000);
    for (auto& x : v) {
      if (rng()() % 4 == 0) {
        x = static_cast<T>(small(rng()));
      } else {
        const std::uint64_t bits = rng()();
        std::memcpy(&x, &bits, sizeof(T));
      }
    }
  } else {
    std::uniform_real_distribution<double> d(-1000.0, 1000.0);
    for (auto& x : v) x = static_cast<T>(d(rng()));
  }
  return v;
}

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> s = {Shape{1},        Shape{1, 1},      Shape{1, 17},
                                       Shape{17, 1},    Shape{31, 37},    Shape{3, 5, 7},
                                       Shape{1, 1, 9},  Shape{9, 1, 1},   Shape{11, 23, 29},
                                       Shape{257, 509}, Shape{7, 131, 67}};
  return s;
}

bool has(const Device& d, DType t) {
  return t != DType::f64 || d.supports_fp64();
}

std::string where(const Shape& s, DType t) {
  return s.str() + " " + std::string(name(t));
}

// Each check returns "" when it passed, else what went wrong.
template <class T>
std::string round_trip(const Device& dev) {
  for (const Shape& s : shapes()) {
    const auto data = random_bits<T>(s.elements());
    Array a = Array::push(data, s, dev);
    const auto back = a.pull_as<T>();
    if (std::memcmp(back.data(), data.data(), data.size() * sizeof(T)) != 0) {
      return "round trip differs at " + where(s, dtype_of<T>);
    }
  }
  return {};
}

template <class T>
std::string check_stats(const Device& dev) {
  for (const Shape& s : shapes()) {
    auto data = random_values<T>(s.elements());
    if constexpr (std::is_floating_point_v<T>) {
      if (data.size() >= 4) {
        data[rng()() % data.size()] = std::numeric_limits<T>::quiet_NaN();
        data[rng()() % data.size()] = std::numeric_limits<T>::quiet_NaN();
      }
    }
    long double mn = 0, mx = 0, sum = 0, abs_sum = 0;
    std::uint64_t count = 0, nans = 0, isum = 0;
    for (T x : data) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x)) {
          ++nans;
          continue;
        }
      }
      const auto lx = static_cast<long double>(x);
      if (count == 0 || lx < mn) mn = lx;
      if (count == 0 || lx > mx) mx = lx;
      sum += lx;
      abs_sum += std::fabs(lx);
      if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>) {
          isum += static_cast<std::uint64_t>(static_cast<std::int64_t>(x));
        } else {
          isum += static_cast<std::uint64_t>(x);
        }
      }
      ++count;
    }
    const Stats st = stats(Array::push(data, s, dev));
    const std::string w = where(s, dtype_of<T>);
    if (st.count != count || st.nan_count != nans) return "count/NaN count wrong at " + w;
    if (count > 0) {
      if (static_cast<long double>(st.min.exact_as<T>()) != mn) return "min wrong at " + w;
      if (static_cast<long double>(st.max.exact_as<T>()) != mx) return "max wrong at " + w;
    }
    if constexpr (std::is_integral_v<T>) {
      if (st.sum.is_float()) {
        // A sum past 64 bits comes back as a double (gpix/stats.h): within its rounding of the
        // exact sum (full-range 64-bit values reach it; this check threw before it knew that).
        const auto exact = static_cast<double>(sum);
        if (std::fabs(st.sum.as_double() - exact) > 1e-15 * std::fabs(exact) ||
            std::fabs(exact) < 9.2e18) {
          return "sum wrong at " + w + ": " + st.sum.str();
        }
      } else {
        const std::uint64_t got = st.sum.is_signed_int()
                                      ? static_cast<std::uint64_t>(st.sum.exact_as<std::int64_t>())
                                      : st.sum.exact_as<std::uint64_t>();
        if (got != isum) return "sum wrong at " + w + ": " + st.sum.str();
      }
    } else {
      const double tol =
          (dev.supports_fp64() ? 1e-12 : 1e-5) * static_cast<double>(abs_sum) + 1e-30;
      if (std::fabs(st.sum.as_double() - static_cast<double>(sum)) > tol) {
        return "sum wrong at " + w + ": " + st.sum.str();
      }
    }
  }
  return {};
}

template <class T>
std::string fill_zero_copy(const Device& dev) {
  const Shape s{7, 13, 5};
  const DType t = dtype_of<T>;
  Array a = Array::empty(s, t, dev);
  a.fill(std::numeric_limits<T>::max());  // poison before create() must zero
  a = Array();
  a = Array::create(s, t, dev);
  for (T v : a.pull_as<T>()) {
    if (v != T(0)) return "create() did not zero";
  }
  // Values whose bytes differ, so a fill that repeats the wrong part of the pattern shows.
  std::vector<T> values = {std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(42)};
  if constexpr (std::is_same_v<T, std::uint64_t> || std::is_same_v<T, std::int64_t>) {
    values.push_back(static_cast<T>(0x0123456789abcdefULL));
  }
  if constexpr (std::is_floating_point_v<T>) values.push_back(T(-1.5));
  for (T v : values) {
    a.fill(v);
    for (T got : a.pull_as<T>()) {
      if (std::memcmp(&got, &v, sizeof(T)) != 0) return "fill(" + Scalar(v).str() + ") wrong";
    }
  }
  a.zero();
  for (T got : a.pull_as<T>()) {
    if (got != T(0)) return "zero() left a non-zero";
  }
  const auto data = random_values<T>(s.elements());
  a.write(data.data(), data.size() * sizeof(T));
  Array b = a.copy();
  a.fill(T(1));
  if (b.pull_as<T>() != data) return "copy() is not an independent deep copy";
  Array c = Array::empty(s, t, dev);
  c.copy_from(b);
  if (c.pull_as<T>() != data) return "copy_from() wrong";
  // An odd byte count takes the 1-byte fill path in zero().
  if constexpr (sizeof(T) == 1) {
    Array odd = Array::empty(Shape{3, 7}, t, dev);
    odd.fill(T(5));
    odd.zero();
    for (T got : odd.pull_as<T>()) {
      if (got != T(0)) return "zero() on an odd byte count wrong";
    }
  }
  return {};
}

std::string large(const Device& dev) {
  const Shape s{4099, 4093};  // 67 MB of float32, odd extents
  const auto data = random_bits<float>(s.elements());
  Array a = Array::push(data, s, dev);
  const auto back = a.pull_as<float>();
  if (std::memcmp(back.data(), data.data(), data.size() * 4) != 0)
    return "64 MB round trip differs";
  return {};
}

std::string works_after(const Device& dev) {
  const auto data = random_values<std::int32_t>(1001);
  if (Array::push(data, Shape{7, 11, 13}, dev).pull_as<std::int32_t>() != data) {
    return "the device no longer round-trips after the error";
  }
  return {};
}

std::string allocation_limit(const Device& dev) {
  const std::uint64_t too_big = dev.info().max_allocation + 4096;
  try {
    (void)Array::empty(Shape{too_big}, DType::u8, dev);
    return "allocating " + human_bytes(too_big) + " (beyond the limit) did not throw";
  } catch (const OutOfMemory& e) {
    if (e.requested_bytes() != too_big) return "OutOfMemory::requested_bytes() wrong";
    if (std::string(e.what()).find("largest single allocation") == std::string::npos) {
      return std::string("message does not name the limit: ") + e.what();
    }
  }
  return works_after(dev);
}

// Allocates large blocks until the device runs out: a typed OutOfMemory, then everything is
// freed and the device works. GPUs only (on a CPU device this would exhaust host memory).
std::string exhaust(const Device& dev, std::string& note) {
  const std::uint64_t block =
      std::min<std::uint64_t>(dev.info().max_allocation, dev.info().global_memory / 3);
  std::vector<Array> held;
  try {
    for (int i = 0; i < 64; ++i) held.push_back(Array::empty(Shape{block}, DType::u8, dev));
    return "allocated 64 x " + human_bytes(block) + " without running out";
  } catch (const OutOfMemory& e) {
    note =
        "OOM after " + std::to_string(held.size()) + " x " + human_bytes(block) + ": " + e.what();
  }
  held.clear();
  trim(dev);  // hand the freed blocks back, so the next device on this card can use them
  return works_after(dev);
}

std::string threads(const Device& dev) {
  std::vector<std::string> errors(4);
  std::vector<std::thread> ts;
  for (std::size_t t = 0; t < errors.size(); ++t) {
    ts.emplace_back([&, t] {
      try {
        std::mt19937_64 r(t + 1);
        for (int i = 0; i < 20; ++i) {
          std::vector<std::uint32_t> data(10007);
          for (auto& x : data) x = static_cast<std::uint32_t>(r());
          Array a = Array::push(data, Shape{10007}, dev);
          std::uint32_t mx = 0;
          for (auto x : data) mx = std::max(mx, x);
          if (a.pull_as<std::uint32_t>() != data) errors[t] = "round trip differs";
          if (stats(a).max.exact_as<std::uint32_t>() != mx) errors[t] = "stats differ";
        }
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& th : ts) th.join();
  for (const auto& e : errors) {
    if (!e.empty()) return "a thread failed: " + e;
  }
  return {};
}

// ---- --large-allocations

// The child of one probe case: raw OpenCL on the first GPU of an NVIDIA platform. Prints one
// line and returns 0 when everything worked.
int cl_probe(const std::string& method, std::uint64_t bytes) {
  cl_uint np = 0;
  clGetPlatformIDs(0, nullptr, &np);
  std::vector<cl_platform_id> ps(np);
  clGetPlatformIDs(np, ps.data(), nullptr);
  cl_device_id dev = nullptr;
  cl_platform_id plat = nullptr;
  for (cl_platform_id p : ps) {
    char name[256] = {};
    clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name - 1, name, nullptr);
    if (std::string(name).find("NVIDIA") == std::string::npos) continue;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_GPU, 1, &dev, nullptr) == CL_SUCCESS) {
      plat = p;
      break;
    }
  }
  if (!dev) {
    std::printf("no NVIDIA OpenCL GPU\n");
    return 1;
  }
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(plat), 0};
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(props, 1, &dev, nullptr, nullptr, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
  std::string line = method + " " + human_bytes(bytes) + ":";
  bool ok = true;
  auto step = [&](const char* what, cl_int e) {
    line += std::string(" ") + what + "=" + std::to_string(e);
    if (e != CL_SUCCESS) ok = false;
    return e == CL_SUCCESS;
  };
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
  if (step("create", err)) {
    const unsigned char v = 0x5a;
    cl_event ev = nullptr;
    if (method == "write-end") {
      err = clEnqueueWriteBuffer(q, m, CL_FALSE, bytes - 1, 1, &v, 0, nullptr, &ev);
    } else if (method == "fill-end") {
      err = clEnqueueFillBuffer(q, m, &v, 1, bytes - 1, 1, 0, nullptr, &ev);
    } else {
      err = clEnqueueFillBuffer(q, m, &v, 1, 0, bytes, 0, nullptr, &ev);
    }
    if (step("enqueue", err)) {
      step("finish", clFinish(q));
      cl_int status = CL_COMPLETE;
      clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
      step("status", status);
      clReleaseEvent(ev);
      unsigned char back = 0;
      if (step("read_end",
               clEnqueueReadBuffer(q, m, CL_TRUE, bytes - 1, 1, &back, 0, nullptr, nullptr))) {
        line += back == v ? " value=ok" : " value=WRONG";
        ok = ok && back == v;
      }
    }
    clReleaseMemObject(m);
  }
  // Does the context still work? A fresh buffer round trip on a fresh queue.
  cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &err);
  if (step("after_queue", err)) {
    std::vector<std::uint32_t> in(1024), out(1024, 0);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i * 2654435761u);
    cl_mem s = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, nullptr, &err);
    if (step("after_create", err)) {
      step("after_write",
           clEnqueueWriteBuffer(q2, s, CL_TRUE, 0, 4096, in.data(), 0, nullptr, nullptr));
      step("after_read",
           clEnqueueReadBuffer(q2, s, CL_TRUE, 0, 4096, out.data(), 0, nullptr, nullptr));
      line += in == out ? " after=ok" : " after=WRONG";
      ok = ok && in == out;
      clReleaseMemObject(s);
    }
    clReleaseCommandQueue(q2);
  }
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  std::printf("%s%s\n", line.c_str(), ok ? "" : "  <- failed");
  return ok ? 0 : 1;
}

std::vector<std::uint64_t> large_sizes(std::uint64_t max_allocation) {
  std::vector<std::uint64_t> v;
  for (std::uint64_t gib : {1, 4, 8, 16, 32}) {
    const std::uint64_t b = gib << 30;
    if (b < max_allocation) v.push_back(b);
  }
  v.push_back(max_allocation);
  return v;
}

// One gpix buffer of `bytes`: allocated (resident at once), written and read back at both ends.
std::string large_buffer(const Device& dev, std::uint64_t bytes, std::string& note) {
  try {
    Array a = Array::empty(Shape{bytes}, DType::u8, dev);
    const auto data = random_bits<std::uint8_t>(4096);
    for (std::uint64_t at : {std::uint64_t{0}, bytes - 4096}) {
      HostArray h = HostArray::from(data, Shape{4096});
      a.write_region({{at}, {4096}}, h);
      HostArray back = a.read_region({{at}, {4096}});
      if (std::memcmp(back.data(), data.data(), 4096) != 0)
        return "data differs at offset " + std::to_string(at);
    }
    // A fill over the whole buffer (NVIDIA's OpenCL fill is wrong past 4 GB: gpix works
    // around it with its own kernel, nvidia-opencl-fill-4g), checked at both ends.
    a.fill(0x5a);
    for (std::uint64_t at : {std::uint64_t{0}, bytes - 4096}) {
      HostArray back = a.read_region({{at}, {4096}});
      const auto* p = reinterpret_cast<const std::uint8_t*>(back.data());
      if (std::any_of(p, p + 4096, [](std::uint8_t v) { return v != 0x5a; }))
        return "fill wrong at offset " + std::to_string(at);
    }
    const MemoryReport r = memory_report(dev);
    note = "ok; " + (r.device_known ? human_bytes(r.device_free) + " free of " +
                                          human_bytes(r.device_total) + " while held"
                                    : std::string("free memory unknown"));
  } catch (const OutOfMemory& e) {
    note = std::string("OutOfMemory: ") + e.what();
    // On an idle card a buffer within the reported largest allocation should fit, except
    // where the driver reports the whole card as the largest allocation (CUDA): the driver
    // keeps part of it, and a typed refusal is the right answer.
    if (bytes >= dev.info().global_memory / 100 * 95) return {};
    return "refused: " + std::string(e.what());
  }
  trim(dev);
  return {};
}

struct Row {
  std::string device, check, result;
  bool ok;
};

}  // namespace

int main(int argc, char** argv) {
  std::string query;
  bool large_mode = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--cl-probe") && i + 2 < argc) {
      return cl_probe(argv[i + 1], std::strtoull(argv[i + 2], nullptr, 10));
    }
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) query = argv[++i];
    if (!std::strcmp(argv[i], "--large-allocations")) large_mode = true;
  }
  std::printf("gpix %s\n", GPIX_VERSION_STRING);
  std::printf("Backends:\n");
  for (const auto& s : backend_status()) {
    std::printf("  %-7s %s: %s\n", std::string(name(s.backend)).c_str(),
                s.available ? "available" : "unavailable", s.detail.c_str());
  }
  std::vector<Device> devs;
  try {
    if (query.empty()) {
      devs = devices();
    } else {
      devs.push_back(choose_device(query).device);
    }
  } catch (const Error& e) {
    std::printf("gpu_check: %s\n", e.what());
    return 1;
  }
  if (devs.empty()) {
    std::printf("no device found\n0 passed, 1 failed\n");
    return 1;
  }
  rng();  // prints the seed first

  std::vector<Row> rows;
  auto run = [&](const Device& dev, const std::string& check, auto&& f) {
    std::string result;
    bool ok = false;
    try {
      result = f();
      ok = result.empty();
    } catch (const std::exception& e) {
      result = std::string("exception: ") + e.what();
    }
    rows.push_back(
        {"[" + std::to_string(dev.info().index) + "] " + dev.label(), check, result, ok});
    std::printf("%-4s %-44.44s %-22s %s\n", ok ? "ok" : "FAIL", rows.back().device.c_str(),
                check.c_str(), result.c_str());
    std::fflush(stdout);
  };

  if (large_mode) {
    // The raw OpenCL probes, one process per case.
    for (const Device& dev : devices()) {
      if (dev.backend() != Backend::opencl ||
          dev.info().platform.find("NVIDIA") == std::string::npos)
        continue;
      std::printf("\n== raw OpenCL probes on %s (largest allocation %s)\n", dev.label().c_str(),
                  human_bytes(dev.info().max_allocation).c_str());
      for (const char* method : {"write-end", "fill-end", "fill-all"}) {
        for (std::uint64_t bytes : large_sizes(dev.info().max_allocation)) {
          // The shell that popen starts would read its own /proc/self/exe: resolve ours here.
          static const std::string self = [] {
            char path[4096];
            const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
            return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string();
          }();
          const std::string cmd = "'" + self + "' --cl-probe " + std::string(method) + " " +
                                  std::to_string(bytes) + " 2>&1";
          std::fflush(stdout);
          std::FILE* p = popen(cmd.c_str(), "r");
          char buf[1024];
          std::string out;
          while (p && std::fgets(buf, sizeof buf, p)) out += buf;
          const int rc = p ? pclose(p) : -1;
          std::printf("probe %s%s", out.c_str(), out.empty() || out.back() != '\n' ? "\n" : "");
          if (rc != 0 && out.find("<- failed") == std::string::npos)
            std::printf("probe %s %s: the child ended with status %d\n", method,
                        human_bytes(bytes).c_str(), rc);
        }
      }
      break;  // one card's driver is enough
    }
    for (const Device& dev : devs) {
      if (dev.info().type != DeviceType::gpu) continue;
      std::printf("\n== gpix large buffers on [%d] %s (PCI %s)\n", dev.info().index,
                  dev.label().c_str(), dev.pci_address().c_str());
      for (std::uint64_t bytes : large_sizes(dev.info().max_allocation)) {
        std::string note;
        run(dev, "buffer " + human_bytes(bytes), [&] { return large_buffer(dev, bytes, note); });
        if (!note.empty()) std::printf("     (%s)\n", note.c_str());
      }
      std::string note;
      run(dev, "out of memory", [&] { return exhaust(dev, note); });
      if (!note.empty()) std::printf("     (%s)\n", note.c_str());
      run(dev, "works after", [&] { return works_after(dev); });
    }
    devs.clear();  // only these checks
  }

  for (const Device& dev : devs) {
    const DeviceInfo& i = dev.info();
    std::printf("\n[%d] %s: %s, %u CUs, %s, largest allocation %s, fp64 %s, %s, driver %s%s%s\n",
                i.index, dev.label().c_str(), std::string(name(i.type)).c_str(), i.compute_units,
                human_bytes(i.global_memory).c_str(), human_bytes(i.max_allocation).c_str(),
                i.fp64 ? "yes" : "no", i.api_version.c_str(), i.driver_version.c_str(),
                i.compute_capability.empty() ? "" : ", compute capability ",
                i.compute_capability.c_str());
    for (DType t : kAllDTypes) {
      if (!has(dev, t)) continue;
      const std::string tn(name(t));
      visit_dtype(t, [&](auto z) {
        using T = decltype(z);
        run(dev, "round trip " + tn, [&] { return round_trip<T>(dev); });
        run(dev, "stats " + tn, [&] { return check_stats<T>(dev); });
        run(dev, "fill/zero/copy " + tn, [&] { return fill_zero_copy<T>(dev); });
      });
    }
    run(dev, "64 MB round trip", [&] { return large(dev); });
    run(dev, "allocation limit", [&] { return allocation_limit(dev); });
    if (i.type == DeviceType::gpu) {
      std::string note;
      run(dev, "out of memory", [&] { return exhaust(dev, note); });
      if (!note.empty()) std::printf("     (%s)\n", note.c_str());
    }
    run(dev, "4 threads", [&] { return threads(dev); });
  }
  // Every ordered pair, the same device included.
  const auto data = random_values<std::int32_t>(27 * 37);
  for (const Device& from : devs) {
    for (const Device& to : devs) {
      run(from, "copy to [" + std::to_string(to.info().index) + "]", [&]() -> std::string {
        Array a = Array::push(data, Shape{27, 37}, from);
        Array b = Array::empty(Shape{27, 37}, DType::i32, to);
        b.fill(-1);
        b.copy_from(a);
        return b.pull_as<std::int32_t>() == data ? "" : "cross-device copy differs";
      });
    }
  }

  std::size_t passed = 0, failed = 0;
  std::printf("\n%-48s %-22s %s\n", "device", "check", "result");
  for (const Row& r : rows) {
    std::printf("%-48.48s %-22s %s\n", r.device.c_str(), r.check.c_str(),
                r.ok ? "pass" : ("FAIL: " + r.result).c_str());
    (r.ok ? passed : failed)++;
  }
  std::printf("%zu passed, %zu failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
