// How long each kernel program takes to build on one device with nothing cached: which
// programs make a filter's first call slow (issue 17: "OpenCL cold first call no slower than
// pyclesperanto's"), and whether a plainer kernel that computes the same thing builds faster.
//   bench_compile [--device NAME] [--match REGEX] [--types f32,u16]
//   bench_compile [--device NAME] --first-calls [--size N] [--disk-cache]
//   bench_compile [--device NAME] --floor
// Every (file, entry, defines) of the catalog's variants (kernel_variants.h) whose
// "file:entry" matches REGEX (default: all) and whose T_IN, where it has one, is among
// --types (default f32), built once through the device's program cache, as a filter's first
// call builds it (one program per entry where the backend builds them so: OpenCL), with the
// disk cache and the prebuilt CUDA bundle off. Prints one line per program, then the list
// again from slowest. Run with CUDA_CACHE_DISABLE=1 so that NVIDIA's driver does not answer
// from its own JIT cache (its OpenCL included).
// --first-calls: the suite's five first calls (bench/suite.py: gaussian_blur sigma 2, mean_box
// and median_box radius 1, threshold_otsu on float32, connected_components on uint8; 512^2
// here) one after another in this process, as a new user's session makes them, each with
// its wall time and the programs it built (from the start of one build to the next build or
// the call's end; a build on a background thread is marked so), and a hash of each result, of
// the first call and again once the background builds are in. --size: N x N instead of 512^2
// (the suite's first calls are 2048^2); --disk-cache: programs are written to GPIX_CACHE_DIR as
// a user's first calls write them.
// --floor: what any build costs: a kernel of one store, alone and after kernels/dialect.h (the
// preamble of every catalog program), three of each in turn, each with its own source.
// --dump FILE:ENTRY [--types T]: prints the one-entry program of ENTRY (dialect.h, then the
// file with the other kernels taken out) with the catalog's first defines for it as #define
// lines: a self-contained source to edit for --sources.
// --sources F1 F2 ...: builds each file's text as one program, three rounds of all of them in
// turn (each build with its own trailing comment, so nothing is answered from a cache of
// text); a file's first line names its kernel: `// entry: NAME`, and a second line
// `// options: OPTS` adds OPTS to its build options (OpenCL only: they ride on a -D define's
// value, so that the library has no knob for options that could change a kernel's bits). What
// part of a kernel, or which compiler option, costs its build time, variant against variant, on
// the same device in the same process.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "config.h"
#include "detail.h"
#include "gpix/catalog.h"
#include "gpix/device.h"
#include "gpix/error.h"
#include "gpix/gpix.h"
#include "kernel_entry.h"
#include "kernel_variants.h"
#include "programs.h"

using namespace gpix;

namespace {

struct Row {
  double ms = 0;
  std::string what;
};

std::string describe(const detail::KernelVariant& v) {
  std::string s = v.file + ":" + v.entry;
  for (const auto& [k, val] : v.defines) s += " " + k + "=" + val;
  return s;
}

using Clock = std::chrono::steady_clock;

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// FNV-1a of a result's pixels: whether two builds of a filter give the same bits.
std::uint64_t fnv(const Result& r) {
  std::uint64_t h = 14695981039346656037ull;
  if (r.is_table()) return h;
  const HostArray host = r.array.pull();
  const auto* p = reinterpret_cast<const unsigned char*>(host.data());
  for (std::size_t i = 0; i < host.bytes(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void floor_builds(const Device& dev) {
  auto& impl = detail::Access::impl(dev);
  for (int round = 0; round < 3; ++round) {
    for (const bool preamble : {false, true}) {
      detail::ProgramSource src;
      src.name = "floor" + std::to_string(round) + (preamble ? "-dialect" : "");
      // A different constant each time: nothing cached by text.
      const std::string body = "GPIX_KERNEL void floor_k(GPIX_GLOBAL int* a) { a[0] = " +
                               std::to_string(1000 + round * 2 + (preamble ? 1 : 0)) + "; }\n";
      src.text = preamble ? detail::dialect_text() + "\n" + body
                          : "#define GPIX_KERNEL __kernel\n#define GPIX_GLOBAL __global\n" + body;
      src.hash = src.name;
      const auto t0 = Clock::now();
      (void)impl.kernel(src, "floor_k", {});
      std::printf("%9.1f  one store%s\n", ms(t0, Clock::now()), preamble ? " after dialect.h" : "");
    }
  }
}

void first_calls(const Device& dev, std::size_t n) {
  struct Built {
    std::string what;
    Clock::time_point at;
    bool background;
  };
  std::mutex m;
  std::vector<Built> built;
  const std::thread::id main_thread = std::this_thread::get_id();
  auto& impl = detail::Access::impl(dev);
  impl.set_compile_hook_for_testing(
      [&](const detail::ProgramSource& src, const detail::Defines& d) {
        std::string what = src.name;
        for (const auto& [k, v] : d) what += " " + k + "=" + v;
        std::lock_guard lock(m);
        built.push_back({what, Clock::now(), std::this_thread::get_id() != main_thread});
      });
  std::vector<float> img(n * n);
  std::vector<std::uint8_t> mask(n * n);
  for (std::size_t i = 0; i < img.size(); ++i) {
    img[i] = static_cast<float>((i * 2654435761u) % 1000) / 10.0f;
    mask[i] = ((i / n / 16 + i % n / 16) % 3) == 0 ? 1 : 0;
  }
  const Array a = Array::push(img, Shape{n, n}, dev);
  const Array b = Array::push(mask, Shape{n, n}, dev);
  struct Call {
    const char* filter;
    Params params;
    const Array* in;
  };
  const Call calls[] = {
      {"gaussian_blur", {{"sigma_x", 2.0}, {"sigma_y", 2.0}}, &a},
      {"mean_box", {{"radius_x", 1.0}, {"radius_y", 1.0}}, &a},
      {"median_box", {{"radius_x", 1.0}, {"radius_y", 1.0}}, &a},
      {"threshold_otsu", {}, &a},
      {"connected_components", {{"connectivity", std::string("full")}}, &b},
  };
  for (const Call& c : calls) {
    std::size_t first = 0;
    {
      std::lock_guard lock(m);
      first = built.size();
    }
    const auto t0 = Clock::now();
    const Result r = run(c.filter, *c.in, c.params);
    dev.finish();
    const auto t1 = Clock::now();
    std::printf("%9.1f  %s (first call, result %016llx)\n", ms(t0, t1), c.filter,
                static_cast<unsigned long long>(fnv(r)));
    std::lock_guard lock(m);
    for (std::size_t i = first; i < built.size(); ++i) {
      const auto end = i + 1 < built.size() ? built[i + 1].at : t1;
      std::printf("%9s  %7.1f  %s%s\n", "", ms(built[i].at, end), built[i].what.c_str(),
                  built[i].background ? " (background)" : "");
    }
  }
  impl.set_compile_hook_for_testing({});
  // The same calls again at once: where a filter's fast kernel (tiers) or a program's full
  // build (quick builds) has not landed yet, what the plain or quick programs take to run
  // (with GPIX_TIER_QUIET_MS=60000 none lands before wait_for_background_compiles()).
  for (const Call& c : calls) {
    const auto t0 = Clock::now();
    (void)run(c.filter, *c.in, c.params);
    dev.finish();
    std::printf("%9.2f  %s (second call)\n", ms(t0, Clock::now()), c.filter);
  }
  // The same calls once every background build is in: a first call's plain kernel (tiered
  // compilation) and its build options must give the steady state's bits.
  impl.wait_for_background_compiles();
  for (const Call& c : calls) {
    const std::uint64_t hash = fnv(run(c.filter, *c.in, c.params));
    dev.finish();
    const auto t0 = Clock::now();
    (void)run(c.filter, *c.in, c.params);
    dev.finish();
    std::printf("%9.2f  %s (steady state, result %016llx)\n", ms(t0, Clock::now()), c.filter,
                static_cast<unsigned long long>(hash));
  }
}

// The catalog's defines of FILE:ENTRY for the type asked, as #define lines.
std::string dump_entry(const std::string& spec, const std::string& type) {
  const std::size_t colon = spec.find(':');
  const std::string file = spec.substr(0, colon), entry = spec.substr(colon + 1);
  std::string defines;
  for (const detail::KernelVariant& v : detail::all_kernel_variants()) {
    if (v.file != file || v.entry != entry) continue;
    const auto t_in = std::find_if(v.defines.begin(), v.defines.end(),
                                   [](const auto& d) { return d.first == "T_IN"; });
    if (t_in != v.defines.end() && t_in->second != "gpix_" + type) continue;
    for (const auto& [k, val] : v.defines) defines += "#define " + k + " " + val + "\n";
    break;
  }
  return "// entry: " + entry + "\n" + defines +
         detail::single_entry_source(detail::program(file).text, entry);
}

void build_sources(const Device& dev, const std::vector<std::string>& files) {
  auto& impl = detail::Access::impl(dev);
  struct Source {
    std::string entry, text;
    detail::Defines defines;
  };
  std::vector<Source> sources;
  for (const std::string& f : files) {
    std::FILE* fp = std::fopen(f.c_str(), "rb");
    if (!fp) throw std::runtime_error("cannot read " + f);
    std::string text;
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, fp)) > 0;) text.append(buf, n);
    std::fclose(fp);
    const std::string tag = "// entry: ";
    if (text.rfind(tag, 0) != 0) throw std::runtime_error(f + ": no '// entry: NAME' line");
    const std::size_t eol = text.find('\n');
    Source s{text.substr(tag.size(), eol - tag.size()), text, {}};
    const std::string opt = "// options: ";
    if (eol != std::string::npos && text.compare(eol + 1, opt.size(), opt) == 0) {
      const std::size_t start = eol + 1 + opt.size();
      s.defines.emplace_back("GPIX_PROBE_OPTIONS",
                             "1 " + text.substr(start, text.find('\n', start) - start));
    }
    sources.push_back(std::move(s));
  }
  {
    // The process's first build loads the compiler (424 ms on NVIDIA's OpenCL): not a file's.
    detail::ProgramSource warm;
    warm.name = warm.hash = "warm-up";
    warm.text = "__kernel void warm_up(__global int* a) { a[0] = 1; }\n";
    (void)impl.kernel(warm, "warm_up", {});
  }
  std::vector<std::vector<double>> times(files.size());
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < files.size(); ++i) {
      detail::ProgramSource src;
      src.name = files[i];
      src.text = sources[i].text + "\n// round " + std::to_string(round) + "\n";
      src.hash = files[i] + "#" + std::to_string(round);
      const auto t0 = Clock::now();
      try {
        (void)impl.kernel(src, sources[i].entry, sources[i].defines);
      } catch (const Error& e) {
        std::printf("%9s  %s: %s\n", "failed", files[i].c_str(), e.what());
        continue;
      }
      times[i].push_back(ms(t0, Clock::now()));
      std::printf("%9.1f  %s (round %d)\n", times[i].back(), files[i].c_str(), round);
      std::fflush(stdout);
    }
  }
  std::printf("\nmedian of the rounds:\n");
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::vector<double> t = times[i];
    if (t.empty()) continue;
    std::sort(t.begin(), t.end());
    std::printf("%9.1f  %s\n", t[t.size() / 2], files[i].c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string device, match = ".*", types = "f32";
  bool first = false, floor = false, disk = false;
  std::size_t size = 512;
  std::string dump;
  std::vector<std::string> sources;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--sources")) {
      for (int j = i + 1; j < argc && std::strncmp(argv[j], "--", 2) != 0; ++j) {
        sources.emplace_back(argv[j]);
      }
    }
    if (!std::strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[i + 1];
  }
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--first-calls")) first = true;
    if (!std::strcmp(argv[i], "--floor")) floor = true;
    if (!std::strcmp(argv[i], "--disk-cache")) disk = true;
    if (!std::strcmp(argv[i], "--size") && i + 1 < argc) size = std::stoul(argv[i + 1]);
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device = argv[i + 1];
    if (!std::strcmp(argv[i], "--match")) match = argv[i + 1];
    if (!std::strcmp(argv[i], "--types")) types = argv[i + 1];
  }
  try {
    if (!dump.empty()) {
      std::fputs(dump_entry(dump, types).c_str(), stdout);
      return 0;
    }
    detail::config_for_testing().no_disk_cache = !disk;
    detail::config_for_testing().kernel_bundle = "off";
    const Device dev = select_device(device);
    auto& impl = detail::Access::impl(dev);
    std::printf("device: %s; programs %s\n", dev.label().c_str(),
                impl.programs_per_entry() ? "per entry" : "per file");
    if (first) {
      first_calls(dev, size);
      return 0;
    }
    if (floor) {
      floor_builds(dev);
      return 0;
    }
    if (!sources.empty()) {
      build_sources(dev, sources);
      return 0;
    }
    std::set<std::string> wanted;
    for (std::size_t p = 0; p <= types.size();) {
      const std::size_t c = std::min(types.find(',', p), types.size());
      wanted.insert("gpix_" + types.substr(p, c - p));
      p = c + 1;
    }
    const std::regex re(match);
    std::vector<Row> rows;
    std::set<std::string> seen;
    for (const detail::KernelVariant& v : detail::all_kernel_variants()) {
      if (!std::regex_search(v.file + ":" + v.entry, re)) continue;
      const auto t_in = std::find_if(v.defines.begin(), v.defines.end(),
                                     [](const auto& d) { return d.first == "T_IN"; });
      if (t_in != v.defines.end() && !wanted.count(t_in->second)) continue;
      // Entries of one per-file program build once.
      const std::string key =
          impl.programs_per_entry() ? describe(v) : describe({v.file, "", v.defines});
      if (!seen.insert(key).second) continue;
      const auto t0 = std::chrono::steady_clock::now();
      try {
        (void)impl.kernel(detail::program(v.file), v.entry, v.defines);
      } catch (const Error& e) {
        std::printf("%9s  %s: %s\n", "failed", describe(v).c_str(), e.what());
        continue;
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::printf("%9.1f  %s\n", ms, describe(v).c_str());
      std::fflush(stdout);
      rows.push_back({ms, describe(v)});
    }
    std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.ms > b.ms; });
    double total = 0;
    for (const Row& r : rows) total += r.ms;
    std::printf("\n%zu programs, %.0f ms in all; slowest first:\n", rows.size(), total);
    for (const Row& r : rows) std::printf("%9.1f  %s\n", r.ms, r.what.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_compile: %s\n", e.what());
    return 1;
  }
  return 0;
}
