// The CUDA loader degrades cleanly: with no driver, a missing library, a driver that fails
// cuInit, one that is too old or one that lacks functions, devices() does not throw, the CUDA
// backend says why in one line and the OpenCL devices are still listed. ctest runs this
// program several times; GPIX_TEST_CUDA_EXPECT says which case it sets up (see
// tests/CMakeLists.txt). Also: CUDA error names and checks, and the CUDA RAII owners' logic.
#include <dlfcn.h>
#include <QTest>

#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/driver.h"
#include "common.h"
#include "detail.h"
#include "programs.h"

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

// tests/core/fake_cuda_device.c's state, read through the library gpix loaded.
struct FakeState {
  int depth = -1, retains = -1, streams = -1, modules = -1;
  std::size_t allocated = 0;
};
FakeState fake_state() {
  using Fn = void (*)(int*, int*, std::size_t*, int*, int*);
  void* lib = dlopen(qgetenv("GPIX_CUDA_LIBRARY").constData(), RTLD_NOW | RTLD_NOLOAD);
  FakeState st;
  if (!lib) return st;
  if (auto fn = reinterpret_cast<Fn>(dlsym(lib, "fake_cuda_state"))) {
    fn(&st.depth, &st.retains, &st.allocated, &st.streams, &st.modules);
  }
  dlclose(lib);
  return st;
}

template <class T>
void fake_round_trip_fill(const Device& dev) {
  const FakeState before = fake_state();
  for (const Shape& s : test::odd_shapes()) {
    const auto data = test::random_bits<T>(s.elements());
    Array a = Array::push(data, s, dev);
    const auto back = a.pull_as<T>();
    QVERIFY(std::memcmp(back.data(), data.data(), data.size() * sizeof(T)) == 0);
    QCOMPARE(fake_state().depth, 0);  // every push has its pop
  }
  Array a = Array::create(Shape{3, 5, 7}, dtype_of<T>, dev);
  for (T v : a.pull_as<T>()) QCOMPARE(v, T(0));  // the fake poisons new memory
  std::vector<T> values = {std::numeric_limits<T>::max(), std::numeric_limits<T>::lowest(), T(42)};
  if constexpr (sizeof(T) == 8 && std::is_integral_v<T>)
    values.push_back(static_cast<T>(0x0123456789abcdefULL));
  for (T v : values) {
    a.fill(v);
    for (T got : a.pull_as<T>()) QVERIFY(std::memcmp(&got, &v, sizeof(T)) == 0);
  }
  a.zero();
  for (T got : a.pull_as<T>()) QCOMPARE(got, T(0));
  const auto data = test::random_values<T>(a.elements());
  a.write(data.data(), data.size() * sizeof(T));
  Array b = a.copy();
  a.fill(T(1));
  QVERIFY(b.pull_as<T>() == data);
  a = Array();
  b = Array();
  trim(dev);  // the pool caches freed blocks; give them back to the driver
  const FakeState after = fake_state();
  QCOMPARE(after.allocated, before.allocated);  // every allocation freed
  QCOMPARE(after.depth, 0);
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
    if (e != "fake_device") {
      QVERIFY(!cuda.available);
      QCOMPARE(n_cuda, std::size_t{0});
    }
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
    } else if (e == "fake_device") {
      return;  // fake_device() below checks it
    } else if (e == "partial") {
      has("lacks functions");
      has("cuMemAlloc_v2");
      has("cuDevicePrimaryCtxRelease_v2");
    } else {
      QFAIL(("unknown GPIX_TEST_CUDA_EXPECT " + e).c_str());
    }
  }

  // The CUDA backend's own logic on tests/core/fake_cuda_device.c (host memory, no kernels
  // but fill_u64): only in the ctest case that loads it.
  void fake_device() {
    if (expect() != "fake_device") QSKIP("runs in test_cuda_loader_fake_device");
    const BackendStatus& st = status_of(Backend::cuda);
    QVERIFY2(st.available, st.detail.c_str());
    Device dev;
    for (const Device& d : devices()) {
      if (d.backend() == Backend::cuda) dev = d;
    }
    QVERIFY(dev.valid());
    const DeviceInfo& i = dev.info();
    QCOMPARE(i.name, std::string("gpix fake CUDA device"));
    QCOMPARE(i.platform, std::string("CUDA"));
    QCOMPARE(i.vendor, std::string("NVIDIA"));
    QCOMPARE(i.type, DeviceType::gpu);
    QCOMPARE(i.compute_capability, std::string("9.0"));
    QCOMPARE(i.compute_units, 4u);
    QCOMPARE(i.global_memory, std::uint64_t{256} << 20);
    QCOMPARE(i.max_allocation, i.global_memory);
    QCOMPARE(i.local_memory, std::uint64_t{49152});
    QCOMPARE(i.max_work_group, std::size_t{1024});
    QCOMPARE(i.api_version, std::string("CUDA 13.0"));
    QVERIFY(i.fp64);
    // The only GPU, so the default choice; cuda: selects it.
    QVERIFY(choose_device().device == dev);
    QVERIFY(choose_device("cuda:fake").device == dev);
    QCOMPARE(fake_state().retains, 1);
    QCOMPARE(fake_state().streams, 1);
    QCOMPARE(fake_state().depth, 0);

    for (DType t : kAllDTypes) {
      visit_dtype(t, [&](auto z) { fake_round_trip_fill<decltype(z)>(dev); });
    }
    // Beyond the limit: refused before the driver is asked.
    try {
      (void)Array::empty(Shape{i.max_allocation + 4096}, DType::u8, dev);
      QFAIL("no exception");
    } catch (const OutOfMemory& e) {
      QVERIFY2(std::string(e.what()).find("largest single allocation") != std::string::npos,
               e.what());
    }
    // The driver runs out: OutOfMemory with the driver's code and free/total memory.
    {
      std::vector<Array> held;
      try {
        for (int k = 0; k < 8; ++k) held.push_back(Array::empty(Shape{100u << 20}, DType::u8, dev));
        QFAIL("no exception");
      } catch (const OutOfMemory& e) {
        QCOMPARE(held.size(), std::size_t{2});
        QCOMPARE(e.code(), std::string("CUDA_ERROR_OUT_OF_MEMORY"));
        QCOMPARE(e.requested_bytes(), std::uint64_t{100} << 20);
        QVERIFY2(std::string(e.what()).find("free") != std::string::npos, e.what());
      }
      QCOMPARE(fake_state().depth, 0);  // the throw popped the context too
    }
    trim(dev);  // the pool caches freed blocks; give them back to the driver
    QCOMPARE(fake_state().allocated, std::size_t{0});
    // Cross-device copies with the OpenCL devices, both ways.
    const auto data = test::random_values<std::int32_t>(999);
    for (const Device& other : devices()) {
      Array a = Array::push(data, Shape{27, 37}, dev);
      Array b = Array::empty(Shape{27, 37}, DType::i32, other);
      b.copy_from(a);
      QVERIFY(b.pull_as<std::int32_t>() == data);
      Array c = Array::empty(Shape{27, 37}, DType::i32, dev);
      c.copy_from(b);
      QVERIFY(c.pull_as<std::int32_t>() == data);
    }
    // Kernel lookup: a real NVRTC build (when NVRTC is here), loaded by the fake; an unknown
    // name is a DeviceError that names it; a kernel the fake cannot run reports the driver's code.
    auto& impl = detail::Access::impl(dev);
    const detail::Defines defs = {
        {"T", "gpix_f32"}, {"ACC", "gpix_f32"}, {"IS_FLOAT", "1"}, {"WG", "256"}};
    const int modules = fake_state().modules;
    try {
      (void)impl.kernel(detail::program("stats.kernel"), "no_such_kernel", defs);
      QFAIL("no exception");
    } catch (const DeviceError& e) {
      QVERIFY2(std::string(e.what()).find("no_such_kernel") != std::string::npos, e.what());
      QCOMPARE(e.code(), std::string("CUDA_ERROR_NOT_FOUND"));
    }
    QCOMPARE(fake_state().modules, modules + 1);  // the program stays cached
    try {
      (void)stats(Array::push(std::vector<float>{1, 2, 3}, Shape{3}, dev));
      QFAIL("no exception");
    } catch (const DeviceError& e) {
      QCOMPARE(e.code(), std::string("CUDA_ERROR_NOT_SUPPORTED"));
      QVERIFY2(std::string(e.what()).find("stats_partial") != std::string::npos, e.what());
    }
    QCOMPARE(fake_state().depth, 0);
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
