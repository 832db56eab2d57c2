// The CUDA loader degrades cleanly: with no driver, a missing library, a driver that fails
// cuInit, one that is too old or one that lacks functions, devices() does not throw, the CUDA
// backend says why in one line and the OpenCL devices are still listed. ctest runs this
// program several times; GPIX_TEST_CUDA_EXPECT says which case it sets up (see
// tests/CMakeLists.txt). Also: CUDA error names and checks, and the CUDA RAII owners' logic.
#include <QTest>

#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/driver.h"
#include "common.h"

using namespace gpix;

namespace {

std::string expect() {
  return qEnvironmentVariable("GPIX_TEST_CUDA_EXPECT").toStdString();
}

const BackendStatus& status_of(Backend b) {
  for (const auto& s : backend_status()) {
    if (s.backend == b) return s;
  }
  qFatal("no status for a backend");
}

int g_released[4];
detail::cuda::PrimaryContext g_last;
void fake_release(detail::cuda::PrimaryContext p) {
  ++g_released[p.device];
  g_last = p;
}

}  // namespace

class TestCudaLoader : public QObject {
  Q_OBJECT
 private slots:
  void degrades_cleanly() {
    // The first call in this process: the environment set by ctest is what the loader sees.
    const std::vector<Device>* devs = nullptr;
    try {
      devs = &devices();
    } catch (...) {
      QFAIL("devices() threw");
    }
    const BackendStatus& cuda = status_of(Backend::cuda);
    const BackendStatus& opencl = status_of(Backend::opencl);
    qInfo("cuda: %s", cuda.detail.c_str());
    QVERIFY(!cuda.detail.empty());
    QVERIFY2(cuda.detail.find('\n') == std::string::npos, cuda.detail.c_str());  // one line
    std::size_t n_cuda = 0, n_opencl = 0;
    for (const Device& d : *devs) (d.backend() == Backend::cuda ? n_cuda : n_opencl)++;
    QCOMPARE(n_cuda, cuda.devices);
    QCOMPARE(n_opencl, opencl.devices);
    // OpenCL is unaffected by whatever happened to CUDA (CI has PoCL).
    if (opencl.available) QVERIFY(n_opencl > 0);

    const std::string e = expect();
    auto has = [&](const char* part) {
      QVERIFY2(cuda.detail.find(part) != std::string::npos,
               ("'" + std::string(part) + "' not in: " + cuda.detail).c_str());
    };
    if (e.empty()) {
      // The machine as it is: no driver in CI, a working one on the GPU machine.
      if (cuda.available) {
        QVERIFY(n_cuda > 0);
        for (const Device& d : *devs) {
          if (d.backend() != Backend::cuda) continue;
          QCOMPARE(d.info().platform, std::string("CUDA"));
          QVERIFY(!d.info().compute_capability.empty());
          QCOMPARE(d.info().max_allocation, d.info().global_memory);
        }
      } else {
        QCOMPARE(n_cuda, std::size_t{0});
        if (qEnvironmentVariableIsSet("GPIX_REQUIRE_CUDA")) QFAIL(cuda.detail.c_str());
        if (cuda.detail.find("libcuda") == std::string::npos) {
          // A driver exists but is unusable; the reason must still say which part failed.
          QVERIFY2(cuda.detail.find("cuInit") != std::string::npos ||
                       cuda.detail.find("NVRTC") != std::string::npos ||
                       cuda.detail.find("driver") != std::string::npos,
                   cuda.detail.c_str());
        }
      }
      return;
    }
    QVERIFY(!cuda.available);
    QCOMPARE(n_cuda, std::size_t{0});
    if (e == "missing") {
      has(qgetenv("GPIX_CUDA_LIBRARY").constData());
      has("not found");
    } else if (e == "no_device") {
      has("cuInit failed");
      has("CUDA_ERROR_NO_DEVICE");
      has("sees no NVIDIA GPU");
    } else if (e == "stub") {
      has("CUDA_ERROR_STUB_LIBRARY");
      has("stub library");
    } else if (e == "old") {
      has("CUDA 10.2");
      has("update the NVIDIA driver");
    } else if (e == "partial") {
      has("lacks functions");
      has("cuMemAlloc_v2");
      has("cuDevicePrimaryCtxRelease_v2");
    } else {
      QFAIL(("unknown GPIX_TEST_CUDA_EXPECT " + e).c_str());
    }
  }

  void error_names() {
    using detail::cuda::error_name;
    QCOMPARE(error_name(CUDA_SUCCESS), std::string("CUDA_SUCCESS"));
    QCOMPARE(error_name(CUDA_ERROR_ILLEGAL_ADDRESS), std::string("CUDA_ERROR_ILLEGAL_ADDRESS"));
    QCOMPARE(error_name(CUDA_ERROR_OUT_OF_MEMORY), std::string("CUDA_ERROR_OUT_OF_MEMORY"));
    QCOMPARE(error_name(CUDA_ERROR_NO_DEVICE), std::string("CUDA_ERROR_NO_DEVICE"));
    QCOMPARE(error_name(CUDA_ERROR_UNSUPPORTED_PTX_VERSION),
             std::string("CUDA_ERROR_UNSUPPORTED_PTX_VERSION"));
    QCOMPARE(error_name(static_cast<CUresult>(998)), std::string("CUDA_ERROR(998)"));
    QCOMPARE(detail::cuda::version_text(13000), std::string("13.0"));
    QCOMPARE(detail::cuda::version_text(12040), std::string("12.4"));
    QCOMPARE(detail::cuda::version_text(11020), std::string("11.2"));
  }

  void checks_throw_typed_errors() {
    detail::cuda::check(CUDA_SUCCESS, "nothing");
    try {
      detail::cuda::check(CUDA_ERROR_ILLEGAL_ADDRESS, "launching kernel k");
      QFAIL("no exception");
    } catch (const OutOfMemory&) {
      QFAIL("an illegal address is not out of memory");
    } catch (const DeviceError& e) {
      QCOMPARE(e.code(), std::string("CUDA_ERROR_ILLEGAL_ADDRESS"));
      const std::string m = e.what();
      QVERIFY2(m.find("launching kernel k") != std::string::npos, e.what());
      QVERIFY2(m.find("restarts") != std::string::npos, e.what());  // sticky: says so
    }
    try {
      detail::cuda::check(CUDA_ERROR_OUT_OF_MEMORY, "allocating 1 GB");
      QFAIL("no exception");
    } catch (const OutOfMemory& e) {
      QCOMPARE(e.code(), std::string("CUDA_ERROR_OUT_OF_MEMORY"));
      QVERIFY2(std::string(e.what()).find("allocating 1 GB") != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(DeviceError, detail::cuda::check(static_cast<CUresult>(998), "x"));
  }

  void primary_context_owner() {
    // Device 0 with a context is a handle (not the empty value); the release gets the device.
    using Owner = detail::UniqueHandle<detail::cuda::PrimaryContext, &fake_release>;
    std::fill(std::begin(g_released), std::end(g_released), 0);
    auto* ctx_a = reinterpret_cast<CUcontext>(std::uintptr_t{0x1000});
    auto* ctx_b = reinterpret_cast<CUcontext>(std::uintptr_t{0x2000});
    {
      Owner a(detail::cuda::PrimaryContext{0, ctx_a});
      QVERIFY(static_cast<bool>(a));
      Owner b(detail::cuda::PrimaryContext{1, ctx_b});
      Owner& ret = (b = std::move(a));
      QCOMPARE(&ret, &b);
      QCOMPARE(g_released[1], 1);  // b's old context released at assignment
      QCOMPARE(g_last.context, ctx_b);
      QCOMPARE(g_released[0], 0);
      QVERIFY(!a);  // NOLINT(bugprone-use-after-move)
      QCOMPARE(b.get().device, 0);
      QCOMPARE(b.get().context, ctx_a);
    }
    QCOMPARE(g_released[0], 1);  // exactly once
    QCOMPARE(g_released[1], 1);
    // Empty owners of every CUDA handle type release nothing (and need no driver).
    detail::cuda::Module m;
    detail::cuda::DevicePtr p;
    detail::cuda::Stream s;
    detail::cuda::Event ev;
    QVERIFY(!m && !p && !s && !ev);
    detail::cuda::DevicePtr q(std::move(p));
    QVERIFY(!q);
  }
};

QTEST_APPLESS_MAIN(TestCudaLoader)
#include "test_cuda_loader.moc"
