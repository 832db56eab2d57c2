// gpix-prebuild-kernels: compiles every catalog program (kernel_variants.h) with NVRTC for the
// CUDA architectures asked for and writes the prebuilt kernel bundle (kernel_bundle.h) that
// ships next to libgpix_core. Run by the build (core/CMakeLists.txt); NVRTC needs no GPU.
//
//   gpix-prebuild-kernels --out FILE --archs 80,90|native|none [--ptx 90] [--only stats.kernel]
//                         [--jobs N] [--times]
//
// --times prints each program's compile time (to find the programs that make the build and
// test_kernel_build slow).
// "native" means the architectures of the CUDA devices of the building machine (none on a
// machine without them: an empty bundle, and programs compile at run time as before).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_programs.h"
#include "backend/cuda/nvrtc.h"
#include "gpix/error.h"
#include "kernel_bundle.h"
#include "kernel_variants.h"
#include "programs.h"

using namespace gpix;

namespace {

std::vector<int> parse_archs(const std::string& text) {
  std::vector<int> out;
  std::string item;
  std::stringstream ss(text);
  while (std::getline(ss, item, text.find(';') != std::string::npos ? ';' : ',')) {
    if (item.empty()) continue;
    if (item == "none") continue;
    if (item == "native") {
      // CUDA only: the building machine's OpenCL platforms have nothing to say here.
      for (const auto& d : detail::enumerate_cuda().devices) {
        const std::string& cc = d->info().compute_capability;
        const auto dot = cc.find('.');
        if (dot != std::string::npos) {
          out.push_back(std::atoi(cc.c_str()) * 10 + std::atoi(cc.c_str() + dot + 1));
        }
      }
      continue;
    }
    const int a = std::atoi(item.c_str());
    if (a < 30 || a > 200)
      throw InvalidArgument("'" + item + "' is not a CUDA architecture (e.g. 90)");
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "gpix-prebuild-kernels: %s\nusage: gpix-prebuild-kernels --out FILE --archs "
               "80,90|native|none [--ptx ARCH] [--only FILE.kernel] [--jobs N] [--times]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, archs_text = "none", only;
  int ptx_arch = 0;
  bool times = false;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--times") {
      times = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("'" + a + "' needs a value").c_str());
    const std::string v = argv[++i];
    if (a == "--out") {
      out = v;
    } else if (a == "--archs") {
      archs_text = v;
    } else if (a == "--ptx") {
      ptx_arch = std::atoi(v.c_str());
    } else if (a == "--only") {
      only = v;
    } else if (a == "--jobs") {
      jobs = static_cast<unsigned>(std::max(1, std::atoi(v.c_str())));
    } else {
      return usage(("unknown option '" + a + "'").c_str());
    }
  }
  if (out.empty()) return usage("--out is required");
  try {
    const std::vector<int> archs = parse_archs(archs_text);
    struct Job {
      std::string file;
      detail::Defines defines;
      std::string target;  // "sm_90" or "compute_90"
    };
    std::vector<Job> work;
    std::string nvrtc_version = "none";
    if (!archs.empty() || ptx_arch > 0) {
      std::string why;
      const detail::Nvrtc* nvrtc = detail::Nvrtc::get(&why);
      if (!nvrtc) {
        std::fprintf(stderr, "gpix-prebuild-kernels: no NVRTC (%s)\n", why.c_str());
        return 1;
      }
      nvrtc_version = nvrtc->version();
      std::set<std::string> seen;  // one program per (file, defines)
      for (const auto& v : detail::all_kernel_variants()) {
        if (!only.empty() && v.file != only) continue;
        const std::string key = detail::program_key(detail::program(v.file), v.defines);
        if (!seen.insert(key).second) continue;
        for (int a : archs) work.push_back({v.file, v.defines, "sm_" + std::to_string(a)});
        if (ptx_arch > 0)
          work.push_back({v.file, v.defines, "compute_" + std::to_string(ptx_arch)});
      }
    }
    std::vector<std::pair<std::string, std::vector<char>>> entries;
    // Incremental: entries of the previous bundle whose key (source hash and defines
    // included) is unchanged are kept, so rebuilding the library after an edit that touches
    // no kernel costs a second, not minutes of NVRTC.
    if (const auto old = detail::KernelBundle::open(out, nullptr)) {
      std::vector<Job> rest;
      std::vector<std::pair<std::string, std::vector<char>>> kept;
      for (const Job& j : work) {
        const std::string key =
            j.target + "|" + detail::program_key(detail::program(j.file), j.defines);
        if (auto bin = old->find(key)) {
          kept.emplace_back(key, std::move(*bin));
        } else {
          rest.push_back(j);
        }
      }
      std::printf("gpix-prebuild-kernels: %zu programs unchanged, %zu to compile\n", kept.size(),
                  rest.size());
      work = std::move(rest);
      entries = std::move(kept);
    }
    const std::size_t first_new = entries.size();
    entries.resize(first_new + work.size());
    std::atomic<std::size_t> next{0}, done{0};
    std::mutex err_mutex;
    std::string first_error;
    const auto t0 = std::chrono::steady_clock::now();
    auto worker = [&] {
      const detail::Nvrtc* nvrtc = detail::Nvrtc::get();
      for (std::size_t i = next++; i < work.size(); i = next++) {
        const Job& j = work[i];
        const auto& src = detail::program(j.file);
        const auto c0 = std::chrono::steady_clock::now();
        try {
          const bool ptx = j.target.rfind("compute_", 0) == 0;
          const int a = std::atoi(j.target.c_str() + (ptx ? 8 : 3));
          std::vector<char> image =
              ptx ? nvrtc->compile_ptx(src, j.defines, a) : nvrtc->compile(src, j.defines, a);
          // The binary exactly as the disk cache stores it, so the device loads a bundle
          // entry through the same load() as a disk-cache file.
          entries[first_new + i] = {j.target + "|" + detail::program_key(src, j.defines),
                                    detail::cuda::tagged_binary(image, ptx)};
        } catch (const CompileError& e) {
          std::lock_guard lock(err_mutex);
          if (first_error.empty()) first_error = std::string(e.what()) + "\n" + e.log();
        }
        if (times) {
          std::string d;
          for (const auto& [k, v] : j.defines) d += " " + k + "=" + v;
          const double took =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
          std::lock_guard lock(err_mutex);
          std::printf("%8.3f s  %s %s%s\n", took, j.target.c_str(), j.file.c_str(), d.c_str());
        }
        const std::size_t n = ++done;
        if (n % 100 == 0) {
          std::lock_guard lock(err_mutex);
          std::printf("  %zu of %zu programs\n", n, work.size());
          std::fflush(stdout);
        }
      }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < std::min<std::size_t>(jobs, std::max<std::size_t>(work.size(), 1));
         ++t)
      threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    if (!first_error.empty()) {
      std::fprintf(stderr, "gpix-prebuild-kernels: %s\n", first_error.c_str());
      return 1;
    }
    std::string note = "NVRTC " + nvrtc_version + "; cubins:";
    for (int a : archs) note += " sm_" + std::to_string(a);
    if (ptx_arch > 0) note += "; PTX: compute_" + std::to_string(ptx_arch);
    detail::write_kernel_bundle(out, note, entries);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("gpix-prebuild-kernels: %zu programs (%s) in %.1f s -> %s\n", entries.size(),
                note.c_str(), s, out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpix-prebuild-kernels: %s\n", e.what());
    return 1;
  }
}
