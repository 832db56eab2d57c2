// The gpix side of the performance suite (issue 17, bench/suite.py): runs the cases of a case
// file through gpix::run on one device and writes one JSON line per case.
//   bench_grid --device D --cases FILE [--data DIR] --json OUT [--max-reps 15] [--min-reps 3]
//              [--target-ms 200] [--max-call-s 1.5] [--deadline EPOCH_S] [--case-timeout-s 60]
//              [--prewarm | --first-call | --dump DIR | --profile]
// A case file has one case per line, tab-separated (bench/suite.py writes it):
//   id  filter  shape (z x y x x)  dtype  inputs (comma-separated)  params (k=v,...)  from  factor
// Inputs: noise / noise2 (hash noise, the same values bench/suite_peers.py makes), blob (the
// binary blob image DIR/blob_SHAPE.u8), blobimg (DIR/blobimg_SHAPE.f32, converted to the case's
// dtype), labels (connected_components of blob, full), sparse_labels (labels * 3). The filter
// "@stats" is gpix::stats (min + max + sum in one pass), not a catalog entry.
// Timing: wall clock around the call and Device::finish (tables come back to the host inside
// the call), two warm-up calls, then repetitions until --target-ms of timed work (between
// --min-reps and --max-reps); median and minimum reported. A second warm-up call longer than
// --max-call-s is reported alone (reps 1). Before the first case of each shape and dtype, the
// device copy of that array (Array::copy_from) is timed the same way. A case whose predicted
// time per call (the case named in `from`, measured earlier in this run, times `factor`)
// exceeds --max-call-s is skipped and reported as such; so are the cases left when the
// --deadline passes. Every line is flushed when written: a run cut short keeps its lines, and a
// {"start": id} line before each case names the case that was running.
// --prewarm: one call per case (fills the disk cache of compiled programs); its time, compiling
// included, serves the predictions.
// --first-call: for a new process, the epoch times (us) of main, select_device and the first
// push, then each case's first call and second call (ms) with the program cache's counters.
// --dump DIR: the cases checked against the catalog, their inputs pulled back into raw files.
// --case-timeout-s (default 60): a case running longer ends the process with status 124.
// --profile: no timing (ncu's interception slows every call); each case called twice, then once
// more (and one copy of each shape and dtype) inside a profiled range for Nsight Compute (`ncu
// --profile-from-start off --nvtx`, bench/suite.py's profile phase): cuProfilerStart/Stop around
// it, and an NVTX range named after the case id so that each kernel in ncu's report names its case.
// CUDA builds only (the NVTX header comes with the CUDA toolkit); elsewhere --profile is refused.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "gpix/gpix.h"

#if GPIX_BENCH_NVTX
#include <dlfcn.h>

#include <nvtx3/nvToolsExt.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

std::int64_t epoch_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Case {
  std::string id, filter;
  gpix::Shape shape;
  gpix::DType dtype = gpix::DType::f32;
  std::vector<std::string> inputs;
  std::vector<std::pair<std::string, std::string>> params;
  std::string from;
  double factor = 1;
};

gpix::Shape parse_shape(const std::string& s) {
  std::vector<std::size_t> dims;
  for (const auto& d : split(s, 'x')) dims.push_back(std::stoul(d));
  return gpix::Shape(std::span<const std::size_t>(dims));
}

std::vector<Case> read_cases(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw gpix::InvalidArgument("cannot read the case file " + path);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto f = split(line, '\t');
    if (f.size() < 8) throw gpix::InvalidArgument("a case line needs 8 fields: " + line);
    Case c;
    c.id = f[0];
    c.filter = f[1];
    c.shape = parse_shape(f[2]);
    const auto t = gpix::parse_dtype(f[3]);
    if (!t) throw gpix::InvalidArgument("unknown dtype in: " + line);
    c.dtype = *t;
    c.inputs = split(f[4], ',');
    for (const auto& kv : split(f[5], ',')) {
      if (kv.empty()) continue;
      const auto eq = kv.find('=');
      if (eq == std::string::npos) throw gpix::InvalidArgument("a parameter needs k=v: " + line);
      c.params.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
    }
    c.from = f[6] == "-" ? "" : f[6];
    c.factor = std::stod(f[7]);
    cases.push_back(std::move(c));
  }
  return cases;
}

// The suite's noise: a 32-bit hash of the element index (bench/suite_peers.py, hash_noise).
std::uint32_t hash32(std::uint32_t i, std::uint32_t seed) {
  std::uint32_t h = i * 2654435761u + seed * 0x85EBCA77u;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return h;
}

gpix::HostArray noise(const gpix::Shape& s, gpix::DType t, std::uint32_t seed) {
  gpix::HostArray h(s, t);
  gpix::visit_dtype(t, [&](auto z) {
    using T = decltype(z);
    auto v = h.as<T>();
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::uint32_t x = hash32(static_cast<std::uint32_t>(i), seed);
      // Signed types take the top bits as non-negative values; float64 has float32's values.
      if constexpr (std::is_same_v<T, float>) {
        v[i] = static_cast<float>(x >> 8) * (1000.0f / 16777216.0f);
      } else if constexpr (std::is_same_v<T, double>) {
        v[i] = static_cast<double>(x >> 8) * (1000.0 / 16777216.0);
      } else if constexpr (std::is_same_v<T, std::uint8_t>) {
        v[i] = static_cast<T>(x >> 24);
      } else if constexpr (std::is_same_v<T, std::int8_t>) {
        v[i] = static_cast<T>(x >> 25);
      } else if constexpr (std::is_same_v<T, std::uint16_t>) {
        v[i] = static_cast<T>(x >> 16);
      } else if constexpr (std::is_same_v<T, std::int16_t>) {
        v[i] = static_cast<T>(x >> 17);
      } else if constexpr (std::is_same_v<T, std::uint32_t>) {
        v[i] = x;
      } else if constexpr (std::is_same_v<T, std::int32_t>) {
        v[i] = static_cast<T>(x >> 1);
      } else {
        throw gpix::InvalidArgument(
            "bench_grid makes noise of uint8, int8, uint16, int16, uint32, int32, float32 and "
            "float64");
      }
    }
  });
  return h;
}

std::string shape_key(const gpix::Shape& s) {
  std::string k;
  for (const std::size_t d : s.dims()) k += (k.empty() ? "" : "x") + std::to_string(d);
  return k;
}

gpix::HostArray read_raw(const std::string& path, const gpix::Shape& s, gpix::DType t) {
  gpix::HostArray h(s, t);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw gpix::InvalidArgument("cannot read " + path + " (bench/suite.py writes it)");
  in.read(reinterpret_cast<char*>(h.data()), static_cast<std::streamsize>(h.bytes()));
  if (static_cast<std::size_t>(in.gcount()) != h.bytes()) {
    throw gpix::InvalidArgument(path + " is shorter than " + std::to_string(h.bytes()) + " bytes");
  }
  return h;
}

// The inputs of the current shape, made once and kept until the shape changes.
class Inputs {
 public:
  Inputs(gpix::Device dev, std::string data) : dev_(std::move(dev)), data_(std::move(data)) {}

  const gpix::Array& get(const std::string& spec, const gpix::Shape& s, gpix::DType t) {
    if (!(s == shape_)) {
      cache_.clear();
      shape_ = s;
    }
    const std::string key = spec + "/" + std::string(gpix::name(t));
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, make(spec, s, t)).first;
    return it->second;
  }

 private:
  gpix::Array make(const std::string& spec, const gpix::Shape& s, gpix::DType t) {
    const std::string base = data_ + "/";
    if (spec == "noise") return gpix::Array::push(noise(s, t, 1), dev_);
    if (spec == "noise2") return gpix::Array::push(noise(s, t, 2), dev_);
    if (spec == "blob") {
      return gpix::Array::push(read_raw(base + "blob_" + shape_key(s) + ".u8", s, gpix::DType::u8),
                               dev_);
    }
    if (spec == "blobimg") {
      const auto f = read_raw(base + "blobimg_" + shape_key(s) + ".f32", s, gpix::DType::f32);
      if (t == gpix::DType::f32) return gpix::Array::push(f, dev_);
      // The file holds whole numbers in [0, 65535]: exact in uint16 (numpy's astype agrees).
      if (t != gpix::DType::u16) throw gpix::InvalidArgument("blobimg is float32 or uint16");
      gpix::HostArray h(s, t);
      const auto src = f.as<float>();
      auto dst = h.as<std::uint16_t>();
      for (std::size_t i = 0; i < dst.size(); ++i) dst[i] = static_cast<std::uint16_t>(src[i]);
      return gpix::Array::push(h, dev_);
    }
    if (spec == "labels") {
      auto l = gpix::connected_components(get("blob", s, gpix::DType::u8), "full");
      dev_.finish();
      return l;
    }
    if (spec == "sparse_labels") {
      auto l = gpix::multiply_scalar(get("labels", s, gpix::DType::u32), 3);
      dev_.finish();
      return l;
    }
    throw gpix::InvalidArgument("unknown input '" + spec + "'");
  }

  gpix::Device dev_;
  std::string data_;
  gpix::Shape shape_;
  std::map<std::string, gpix::Array> cache_;
};

// One call of the case, ended by Device::finish (what it returns is dropped afterwards).
std::function<void()> make_call(const Case& c, Inputs& inputs, const gpix::Device& dev) {
  std::vector<gpix::Array> in;
  for (const auto& spec : c.inputs) {
    in.push_back(inputs.get(spec, c.shape, c.dtype));
  }
  if (c.filter == "@stats") {
    return [in, dev] {
      (void)gpix::stats(in.at(0));
      dev.finish();
    };
  }
  const gpix::FilterInfo& info = gpix::filter(c.filter);
  gpix::Params params;
  for (const auto& [k, v] : c.params) {
    const gpix::ParamSpec* spec = info.param(k);
    if (!spec) throw gpix::InvalidArgument(c.filter + " has no parameter " + k);
    params[k] = gpix::parse_param(*spec, v);
  }
  return [in, params, name = c.filter, dev] {
    gpix::Result r = gpix::run(name, std::span<const gpix::Array>(in), params);
    dev.finish();
  };
}

struct Timing {
  double median = 0, min = 0, first = 0;
  int reps = 0;
};

struct Options {
  int max_reps = 15, min_reps = 3;
  double target_ms = 200, max_call_s = 1.5;
  double deadline_s = 0;       // epoch seconds; 0 = none
  double case_timeout_s = 60;  // one case (inputs, copy, calls) longer than this ends the run
};

// Ends the process with status 124 when one case runs longer than --case-timeout-s (a call that
// never returns would hold the whole suite): the suite then restarts the runner with the cases
// left and reports this one as timed out.
class Watchdog {
 public:
  explicit Watchdog(double limit_s)
      : thread_([this, limit_s](const std::stop_token& stop) {
          while (!stop.stop_requested()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const std::int64_t start = start_us_.load();
            if (limit_s > 0 && start > 0 &&
                static_cast<double>(epoch_us() - start) * 1e-6 > limit_s) {
              std::fprintf(stderr, "bench_grid: a case ran longer than %.0f s: giving up\n",
                           limit_s);
              std::fflush(stderr);
              std::_Exit(124);
            }
          }
        }) {}
  void start() { start_us_ = epoch_us(); }
  void stop() { start_us_ = 0; }

 private:
  std::atomic<std::int64_t> start_us_{0};
  std::jthread thread_;
};

double seconds_left(const Options& o) {
  return o.deadline_s > 0 ? o.deadline_s - static_cast<double>(epoch_us()) * 1e-6 : 1e30;
}

Timing time_it(const std::function<void()>& f, const Options& o) {
  Timing t;
  auto a = Clock::now();
  f();
  t.first = ms_since(a);
  a = Clock::now();
  f();
  const double second = ms_since(a);
  if (second > o.max_call_s * 1e3) {
    // Too slow to repeat: the second call (the first one compiles) is all there is.
    t.median = t.min = second;
    t.reps = 1;
    return t;
  }
  const int reps =
      std::clamp(static_cast<int>(o.target_ms / std::max(second, 1e-3)), o.min_reps, o.max_reps);
  std::vector<double> v;
  for (int i = 0; i < reps; ++i) {
    a = Clock::now();
    f();
    v.push_back(ms_since(a));
    if (seconds_left(o) < 0) break;
  }
  std::sort(v.begin(), v.end());
  t.median = v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  t.min = v.front();
  t.reps = static_cast<int>(v.size());
  return t;
}

class Out {
 public:
  explicit Out(const std::string& path) : f_(std::fopen(path.c_str(), "a")) {
    if (!f_) throw gpix::InvalidArgument("cannot write " + path);
  }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;
  ~Out() { std::fclose(f_); }
  void line(const std::string& s) {
    std::fputs(s.c_str(), f_);
    std::fputc('\n', f_);
    std::fflush(f_);
  }

 private:
  std::FILE* f_;
};

std::string record(const Case& c, const std::string& status, const std::string& extra) {
  return "{\"id\": " + json_string(c.id) + ", \"status\": " + json_string(status) + extra + "}";
}

// Medians (ms) of the cases an earlier, cut-short run wrote into the same --json file (the
// suite restarts a runner that died, with the cases left); -1 for skipped cases.
std::map<std::string, double> earlier_results(const std::string& path) {
  std::map<std::string, double> m;
  std::ifstream in(path);
  std::string line;
  const std::string id_key = "{\"id\": \"", med_key = "\"median_ms\": ";
  while (std::getline(in, line)) {
    if (line.rfind(id_key, 0) != 0) continue;
    const auto end = line.find('"', id_key.size());
    if (end == std::string::npos) continue;
    const std::string id = line.substr(id_key.size(), end - id_key.size());
    if (line.find("\"status\": \"skipped\"") != std::string::npos) {
      m[id] = -1;
    } else if (const auto k = line.find(med_key); k != std::string::npos) {
      m[id] = std::stod(line.substr(k + med_key.size()));
    }
  }
  return m;
}

#if GPIX_BENCH_NVTX
// One profiled range: ncu (--profile-from-start off) collects the kernels launched between
// cuProfilerStart and cuProfilerStop, and names their range after `name` (--nvtx). Both act on
// the calling thread's current context, and gpix pushes its device's primary context only
// around its own calls: the range holds the first CUDA device's primary context (the one gpix
// uses for "cuda:") current for its length. The driver's entry points come from the libcuda
// gpix has already loaded.
class ProfileRange {
 public:
  explicit ProfileRange(const std::string& name) {
    nvtxRangePushA(name.c_str());
    const Driver& d = driver();
    pushed_ =
        d.ok && d.device_get(&dev_, 0) == 0 && d.retain(&ctx_, dev_) == 0 && d.push(ctx_) == 0;
    if (pushed_ && d.start() != 0) std::fprintf(stderr, "bench_grid: cuProfilerStart failed\n");
  }
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;
  ~ProfileRange() {
    const Driver& d = driver();
    if (pushed_) {
      d.stop();
      void* popped = nullptr;
      d.pop(&popped);
      d.release(dev_);
    }
    nvtxRangePop();
  }
  static bool available() { return driver().ok; }

 private:
  struct Driver {
    int (*device_get)(int*, int) = nullptr;
    int (*retain)(void**, int) = nullptr;
    int (*release)(int) = nullptr;
    int (*push)(void*) = nullptr;
    int (*pop)(void**) = nullptr;
    int (*start)() = nullptr;
    int (*stop)() = nullptr;
    bool ok = false;
  };
  static const Driver& driver() {
    static const Driver d = [] {
      Driver r;
      void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (!h) return r;
      const auto get = [h](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
        return fn != nullptr;
      };
      r.ok = get(r.device_get, "cuDeviceGet") && get(r.retain, "cuDevicePrimaryCtxRetain") &&
             get(r.release, "cuDevicePrimaryCtxRelease_v2") && get(r.push, "cuCtxPushCurrent_v2") &&
             get(r.pop, "cuCtxPopCurrent_v2") && get(r.start, "cuProfilerStart") &&
             get(r.stop, "cuProfilerStop");
      return r;
    }();
    return d;
  }
  int dev_ = 0;
  void* ctx_ = nullptr;
  bool pushed_ = false;
};
#else
struct ProfileRange {
  explicit ProfileRange(const std::string&) {}
  static bool available() { return false; }
};
#endif

int run_grid(const std::vector<Case>& cases, const gpix::Device& dev, const std::string& data,
             const std::string& json, const Options& o, bool prewarm, bool profile = false) {
  Inputs inputs(dev, data);
  // id -> median ms (-1: skipped), for the predictions.
  std::map<std::string, double> measured = earlier_results(json);
  std::map<std::string, bool> copied;  // shape/dtype whose copy was timed
  Out out(json);
  Watchdog watchdog(o.case_timeout_s);
  out.line(
      "{\"header\": {\"peer\": \"gpix\", \"version\": " + json_string("gpix " GPIX_VERSION_STRING) +
      ", \"device\": " + json_string(dev.label()) + "}}");
  int ok = 0;
  for (const Case& c : cases) {
    watchdog.stop();
    if (seconds_left(o) < 0) {
      measured[c.id] = -1;
      out.line(record(c, "skipped", ", \"note\": \"time budget\""));
      continue;
    }
    if (const auto p = measured.find(c.from); !c.from.empty() && p != measured.end()) {
      // A case whose predictor was skipped would be at least as slow: skipped too.
      if (p->second < 0) {
        measured[c.id] = -1;
        out.line(record(c, "skipped", ", \"note\": " + json_string("skipped with " + c.from)));
        continue;
      }
      if (p->second * c.factor > o.max_call_s * 1e3) {
        measured[c.id] = -1;
        out.line(record(
            c, "skipped",
            ", \"note\": " + json_string("predicted " + json_number(p->second * c.factor * 1e-3) +
                                         " s per call from " + c.from)));
        continue;
      }
    }
    out.line("{\"start\": " + json_string(c.id) + "}");
    watchdog.start();
    try {
      const auto before = gpix::program_cache_stats(dev);
      const auto f = make_call(c, inputs, dev);
      if (prewarm) {
        // One call (compilation included), recorded for the predictions of the cases after it.
        const auto a0 = Clock::now();
        f();
        measured[c.id] = ms_since(a0);
        out.line(record(c, "ok", ", \"median_ms\": " + json_number(measured[c.id])));
        ++ok;
        continue;
      }
      // The device copy of the case's first input, once per shape and dtype.
      const gpix::Array& a = inputs.get(c.inputs.at(0), c.shape, c.dtype);
      const std::string key = shape_key(c.shape) + "/" + std::string(gpix::name(a.dtype()));
      if (profile) {
        // Under ncu every API call is intercepted, so nothing here is timed (the grid's
        // timings stand): two calls to compile and fill the pool, then one in its range.
        if (!copied[key]) {
          copied[key] = true;
          auto b = gpix::Array::empty(c.shape, a.dtype(), dev);
          b.copy_from(a);
          dev.finish();
          const ProfileRange range("copy:" + key);
          b.copy_from(a);
          dev.finish();
        }
        f();
        f();
        {
          const ProfileRange range(c.id);
          f();
        }
        out.line(record(c, "ok", ", \"profiled\": true, \"copy\": " + json_string(key)));
        ++ok;
        continue;
      }
      if (!copied[key]) {
        copied[key] = true;
        auto b = gpix::Array::empty(c.shape, a.dtype(), dev);
        const Timing t = time_it(
            [&] {
              b.copy_from(a);
              dev.finish();
            },
            o);
        out.line("{\"copy\": " + json_string(key) + ", \"median_ms\": " + json_number(t.median) +
                 ", \"min_ms\": " + json_number(t.min) + ", \"reps\": " + std::to_string(t.reps) +
                 ", \"bytes\": " + std::to_string(a.bytes()) + "}");
      }
      const Timing t = time_it(f, o);
      const auto after = gpix::program_cache_stats(dev);
      measured[c.id] = t.median;
      out.line(record(
          c, "ok",
          ", \"median_ms\": " + json_number(t.median) + ", \"min_ms\": " + json_number(t.min) +
              ", \"first_ms\": " + json_number(t.first) + ", \"reps\": " + std::to_string(t.reps) +
              ", \"copy\": " + json_string(key) +
              ", \"compiles\": " + std::to_string(after.compiles - before.compiles) +
              ", \"disk_hits\": " + std::to_string(after.disk_hits - before.disk_hits)));
      ++ok;
    } catch (const gpix::InvalidArgument& e) {
      // gpix refuses these parameters (e.g. a median window of more than 125 pixels).
      out.line(record(c, "unsupported", ", \"note\": " + json_string(e.what())));
    } catch (const std::exception& e) {
      out.line(record(c, "error", ", \"note\": " + json_string(e.what())));
    }
  }
  return ok;
}

int run_first_call(const std::vector<Case>& cases, const std::string& query,
                   const std::string& data, const std::string& json, std::int64_t main_us) {
  // The first push's data is made before the device is touched: its making is not counted.
  const Case& c0 = cases.at(0);
  auto t = Clock::now();
  const gpix::HostArray host = noise(c0.shape, c0.dtype, 1);
  const double gen_ms = ms_since(t);
  const gpix::Device dev = gpix::select_device(query);
  const std::int64_t selected_us = epoch_us();
  const gpix::Array first = gpix::Array::push(host, dev);
  dev.finish();
  const std::int64_t ready_us = epoch_us();
  Inputs inputs(dev, data);
  std::string per_case;
  for (const Case& c : cases) {
    const auto before = gpix::program_cache_stats(dev);
    const auto f = make_call(c, inputs, dev);
    t = Clock::now();
    f();
    const double first_ms = ms_since(t);
    t = Clock::now();
    f();
    const double second_ms = ms_since(t);
    const auto after = gpix::program_cache_stats(dev);
    per_case += std::string(per_case.empty() ? "" : ", ") + "{\"id\": " + json_string(c.id) +
                ", \"first_ms\": " + json_number(first_ms) +
                ", \"second_ms\": " + json_number(second_ms) +
                ", \"compiles\": " + std::to_string(after.compiles - before.compiles) +
                ", \"disk_hits\": " + std::to_string(after.disk_hits - before.disk_hits) + "}";
  }
  Out out(json);
  out.line("{\"peer\": \"gpix\", \"device\": " + json_string(dev.label()) +
           ", \"main_us\": " + std::to_string(main_us) + ", \"gen_ms\": " + json_number(gen_ms) +
           ", \"selected_us\": " + std::to_string(selected_us) +
           ", \"ready_us\": " + std::to_string(ready_us) + ", \"cases\": [" + per_case + "]}");
  return 0;
}

// --dump DIR: every case's filter and parameters checked against the catalog, and its inputs
// as made on the device pulled back into DIR/N-K.raw (case N, input K), for the suite's test
// that the grid names what gpix has and that gpix and the peers see the same data.
int run_dump(const std::vector<Case>& cases, const std::string& query, const std::string& data,
             const std::string& dir) {
  const gpix::Device dev = gpix::select_device(query);
  Inputs inputs(dev, data);
  for (std::size_t n = 0; n < cases.size(); ++n) {
    const Case& c = cases[n];
    // The filter and its parameters as gpix::run will take them (nothing runs).
    (void)make_call(c, inputs, dev);
    for (std::size_t k = 0; k < c.inputs.size(); ++k) {
      const gpix::HostArray h = inputs.get(c.inputs[k], c.shape, c.dtype).pull();
      const std::string path = dir + "/" + std::to_string(n) + "-" + std::to_string(k) + ".raw";
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(h.data()), static_cast<std::streamsize>(h.bytes()));
      if (!f) throw gpix::InvalidArgument("cannot write " + path);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::int64_t main_us = epoch_us();
  std::string device, cases_path, data = ".", json;
  Options o;
  bool prewarm = false, first_call = false, profile = false;
  std::string dump;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_grid: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--device") {
      device = value();
    } else if (a == "--cases") {
      cases_path = value();
    } else if (a == "--data") {
      data = value();
    } else if (a == "--json") {
      json = value();
    } else if (a == "--max-reps") {
      o.max_reps = std::stoi(value());
    } else if (a == "--min-reps") {
      o.min_reps = std::stoi(value());
    } else if (a == "--target-ms") {
      o.target_ms = std::stod(value());
    } else if (a == "--max-call-s") {
      o.max_call_s = std::stod(value());
    } else if (a == "--deadline") {
      o.deadline_s = std::stod(value());
    } else if (a == "--case-timeout-s") {
      o.case_timeout_s = std::stod(value());
    } else if (a == "--dump") {
      dump = value();
    } else if (a == "--prewarm") {
      prewarm = true;
    } else if (a == "--first-call") {
      first_call = true;
    } else if (a == "--profile") {
      profile = true;
    } else {
      std::fprintf(stderr,
                   "usage: bench_grid --device D --cases FILE [--data DIR] --json OUT [--max-reps "
                   "N] [--min-reps N] [--target-ms MS] [--max-call-s S] [--deadline EPOCH_S] "
                   "[--case-timeout-s S] [--prewarm | --first-call | --dump DIR | --profile]\n");
      return 2;
    }
  }
  if (cases_path.empty() || (json.empty() && dump.empty())) {
    std::fprintf(stderr, "bench_grid: --cases and --json (or --dump) are required\n");
    return 2;
  }
  try {
    const auto cases = read_cases(cases_path);
    if (first_call) return run_first_call(cases, device, data, json, main_us);
    if (!dump.empty()) return run_dump(cases, device, data, dump);
    const gpix::Device dev = gpix::select_device(device);
    std::printf("bench_grid: %zu cases on %s%s\n", cases.size(), dev.label().c_str(),
                prewarm ? " (prewarm)" : "");
    if (profile && !ProfileRange::available()) {
      std::fprintf(stderr,
                   "bench_grid: --profile needs a CUDA device and a build with the CUDA "
                   "toolkit's NVTX header (this one: %s)\n",
                   dev.label().c_str());
      return 2;
    }
    const int ok = run_grid(cases, dev, data, json, o, prewarm, profile);
    std::printf("bench_grid: %d of %zu cases ran\n", ok, cases.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_grid: %s\n", e.what());
    return 1;
  }
  return 0;
}
