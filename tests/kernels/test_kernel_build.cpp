// Every kernel variant the library can request compiles: under NVRTC for sm_90 (a sample and
// the architecture-dependent files for sm_80 too; no GPU needed) and, on each device present, under
// its own compiler.
#include <QTest>
#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#if defined(GPIX_HAVE_CUDA)
#include "backend/cuda/nvrtc.h"
#endif
#include "detail.h"
#include "kernel_variants.h"
#include "programs.h"
#include "support/devices.h"

using namespace gpix;

#if defined(GPIX_HAVE_CUDA)
// `name`: NVRTC, or the test skipped where it is missing (failed where GPIX_REQUIRE_NVRTC says
// it must be there). A macro: QSKIP and QFAIL return from the test function.
#define GPIX_NVRTC_OR_SKIP(name)                                                    \
  std::string name##_why;                                                           \
  const detail::Nvrtc* name = detail::Nvrtc::get(&name##_why);                      \
  if (!name) {                                                                      \
    if (qEnvironmentVariableIsSet("GPIX_REQUIRE_NVRTC")) QFAIL(name##_why.c_str()); \
    QSKIP(name##_why.c_str());                                                      \
  }
#endif

class TestKernelBuild : public QObject {
  Q_OBJECT
 private slots:
  void nvrtc_all_variants() {
#if !defined(GPIX_HAVE_CUDA)
    QSKIP("built with GPIX_WITH_CUDA=OFF");
#else
    GPIX_NVRTC_OR_SKIP(nvrtc);
    qInfo("NVRTC %s", nvrtc->version().c_str());
    const auto variants = detail::all_kernel_variants();
    QVERIFY(!variants.empty());
    // Entries of one (file, defines) pair are one program: compile each program once, for
    // sm_90. The kernels' text depends on the architecture only through __CUDA_ARCH__, so
    // sm_80 compiles every program of a file that reads it and every 8th of the rest: the
    // second architecture doubled this test's time (~760 s on 2 cores) and found nothing the
    // first did not. Most compiles use NVRTC's fast-compile level (where it has one): the same
    // front end and ptxas limits (nvrtc_reports_errors checks the shared-memory one) in about
    // 40% of the time, which made this CI's longest suite (375 s); every 8th sm_90 program is
    // compiled at full optimisation, as the bundle ships them.
    using Opt = detail::Nvrtc::Opt;
    struct Job {
      const detail::KernelVariant* v;
      int arch;
      Opt opt;
    };
    std::vector<Job> jobs;
    std::set<std::string> seen;
    for (const auto& v : variants) {
      std::string key = v.file;
      for (const auto& [k, val] : v.defines) key += "|" + k + "=" + val;
      if (!seen.insert(key).second) continue;
      jobs.push_back({&v, 90, seen.size() % 8 == 0 ? Opt::full : Opt::fast_compile});
      const bool reads_arch =
          detail::program(v.file).text.find("__CUDA_ARCH__") != std::string::npos;
      if (reads_arch || seen.size() % 8 == 1) jobs.push_back({&v, 80, Opt::fast_compile});
    }
    // NVRTC compiles on several threads at once (gpix-prebuild-kernels does the same).
    std::atomic<std::size_t> next{0};
    std::mutex mutex;
    std::string first_error;
    std::size_t bad_size = 0;
    auto worker = [&] {
      for (std::size_t i = next++; i < jobs.size(); i = next++) {
        const Job& j = jobs[i];
        try {
          const auto cubin =
              nvrtc->compile(detail::program(j.v->file), j.v->defines, j.arch, j.opt);
          if (cubin.size() <= 100) {
            std::lock_guard lock(mutex);
            ++bad_size;
          }
        } catch (const CompileError& e) {
          std::lock_guard lock(mutex);
          if (first_error.empty()) {
            first_error =
                j.v->file + " sm_" + std::to_string(j.arch) + ": " + e.what() + "\n" + e.log();
          }
        }
      }
    };
    std::vector<std::thread> threads;
    const unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    for (unsigned t = 0; t < n; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    qInfo("%zu programs, %zu compiles on %u threads (fast-compile level: %s)", seen.size(),
          jobs.size(), n, nvrtc->has_fast_compile() ? "yes" : "no, all at full optimisation");
    if (!first_error.empty()) QFAIL(first_error.c_str());
    QCOMPARE(bad_size, std::size_t{0});
#endif
  }

  // The swapped grids (dialect.h's GPIX_GRID_SWAP, which no prebuilt program carries: they
  // compile at run time for images past CUDA's 65535 work-groups on y or z) compile too: for
  // every file that reads a y or z id, its first variant with y swapped and its last with z.
  // test_catalog's swapped_grids checks what they compute, on the devices present.
  void nvrtc_swapped_grids() {
#if !defined(GPIX_HAVE_CUDA)
    QSKIP("built with GPIX_WITH_CUDA=OFF");
#else
    GPIX_NVRTC_OR_SKIP(nvrtc);
    std::map<std::string, std::vector<const detail::KernelVariant*> > by_file;
    const auto variants = detail::all_kernel_variants();
    for (const auto& v : variants) by_file[v.file].push_back(&v);
    std::size_t files = 0;
    for (const auto& [file, list] : by_file) {
      const std::string& text = detail::program(file).text;
      bool reads_yz = false;
      for (const char* id :
           {"_id(1)", "_id(2)", "_groups(1)", "_groups(2)", "_size(1)", "_size(2)"}) {
        reads_yz = reads_yz || text.find(id) != std::string::npos;
      }
      if (!reads_yz) continue;
      ++files;
      for (const auto& [v, axis] : {std::pair{list.front(), "1"}, std::pair{list.back(), "2"}}) {
        detail::Defines d = v->defines;
        d.emplace_back("GPIX_GRID_SWAP", axis);
        try {
          const auto cubin =
              nvrtc->compile(detail::program(file), d, 90, detail::Nvrtc::Opt::fast_compile);
          QVERIFY(cubin.size() > 100);
        } catch (const CompileError& e) {
          QFAIL((file + " with GPIX_GRID_SWAP=" + axis + ": " + e.what() + "\n" + e.log()).c_str());
        }
      }
    }
    qInfo("%zu files with y or z ids", files);
    QVERIFY(files >= 8);
#endif
  }

  void nvrtc_reports_errors() {
#if !defined(GPIX_HAVE_CUDA)
    QSKIP("built with GPIX_WITH_CUDA=OFF");
#else
    const detail::Nvrtc* nvrtc = detail::Nvrtc::get();
    if (!nvrtc) QSKIP("no NVRTC");
    detail::ProgramSource bad{
        "bad.kernel", "extern \"C\" __global__ void f() { undeclared(); }", "x", false, {}};
    // Both levels: the front end's errors, and ptxas's limits (80 KB of static shared memory
    // where sm_90 allows 48), which the fast-compile level must still enforce.
    detail::ProgramSource too_big{"too_big.kernel",
                                  "extern \"C\" __global__ void f(float* o) {\n"
                                  "  __shared__ float t[20480];\n"
                                  "  t[threadIdx.x] = o[threadIdx.x];\n"
                                  "  __syncthreads();\n"
                                  "  o[threadIdx.x] = t[(threadIdx.x * 7) % 20480];\n"
                                  "}\n",
                                  "y",
                                  false,
                                  {}};
    for (const auto opt : {detail::Nvrtc::Opt::full, detail::Nvrtc::Opt::fast_compile}) {
      try {
        nvrtc->compile(bad, {}, 90, opt);
        QFAIL("no exception");
      } catch (const CompileError& e) {
        QVERIFY2(e.log().find("undeclared") != std::string::npos, e.log().c_str());
        QCOMPARE(e.code(), std::string("NVRTC_ERROR_COMPILATION"));
      }
      try {
        nvrtc->compile(too_big, {}, 90, opt);
        QFAIL("no exception for 80 KB of shared memory");
      } catch (const CompileError& e) {
        QVERIFY2(e.log().find("too much shared data") != std::string::npos, e.log().c_str());
      }
    }
#endif
  }

  void device_all_variants_data() {
    test::add_device_rows();
  }
  void device_all_variants() {
    QFETCH(int, device);
    const Device dev = test::device_at(device);
    auto& impl = detail::Access::impl(dev);
    // Every filter test builds the variants it uses; here a spread sample (all with
    // GPIX_TEST_ALL_VARIANTS=1) catches the ones no test reaches, without compiling hundreds
    // of programs on a slow CPU compiler.
    const auto variants = detail::all_kernel_variants();
    const std::size_t stride = qEnvironmentVariableIsSet("GPIX_TEST_ALL_VARIANTS") ? 1 : 9;
    for (std::size_t i = 0; i < variants.size(); i += stride) {
      const auto& v = variants[i];
      bool needs_fp64 = false;
      for (const auto& [k, val] : v.defines) needs_fp64 |= k == "GPIX_NEED_FP64";
      if (needs_fp64 && !dev.supports_fp64()) continue;
      try {
        (void)impl.kernel(detail::program(v.file), v.entry, v.defines);
      } catch (const CompileError& e) {
        QFAIL((std::string(e.what()) + "\n" + e.log()).c_str());
      }
    }
    // A compile error carries the device compiler's log. The error comes first: NVRTC stops
    // at the first errors of a file (stats.kernel without its defines has its own).
    detail::ProgramSource bad{"bad.kernel",
                              "#error gpix-test-marker\n" + detail::program("stats.kernel").text,
                              "bad-hash",
                              false,
                              {}};
    try {
      (void)impl.kernel(bad, "stats_partial", {});
      QFAIL("no exception");
    } catch (const CompileError& e) {
      QVERIFY2(e.log().find("gpix-test-marker") != std::string::npos, e.log().c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestKernelBuild)
#include "test_kernel_build.moc"
