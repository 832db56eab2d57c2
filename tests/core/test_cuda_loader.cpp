// The CUDA loader degrades cleanly: with no driver, a missing library, a driver that fails
// cuInit, one that is too old or one that lacks functions, devices() does not throw, the CUDA
// backend says why in one line and the OpenCL devices are still listed. ctest runs this
// program several times; GPIX_TEST_CUDA_EXPECT says which case it sets up (see
// tests/CMakeLists.txt). Also: CUDA error names and checks, and the CUDA RAII owners' logic.
#include <dlfcn.h>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>

#include "backend/cuda/cuda_handles.h"
#include "backend/cuda/cuda_programs.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "config.h"
#include "detail.h"
#include "gpix/dlpack.h"
#include "gpix/image.h"
#include "gpix/memory.h"
#include "gpix/queue.h"
#include "gpix/svm.h"
#include "kernel_bundle.h"
#include "programs.h"
#include "support/random.h"
#include "support/shared_buffer.h"

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
// The CUDA backend's device (the fake one in test_cuda_loader_fake_device); invalid if none.
Device cuda_device() {
  Device dev;
  for (const Device& d : devices()) {
    if (d.backend() == Backend::cuda) dev = d;
  }
  return dev;
}

// tests/core/fake_cuda_device.c's fake_cuda_vanish (the device drops off the bus, or comes
// back), called through the library gpix loaded; false where it has none.
bool fake_vanish(int on) {
  using Fn = void (*)(int);
  void* lib = dlopen(qgetenv("GPIX_CUDA_LIBRARY").constData(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return false;
  const auto fn = reinterpret_cast<Fn>(dlsym(lib, "fake_cuda_vanish"));
  if (fn) fn(on);
  dlclose(lib);
  return fn != nullptr;
}

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

// The fake's pinned host memory, arrays, texture objects and events alive, and its last
// texture object's descriptor.
struct FakeState2 {
  std::size_t host = 0;
  int arrays = -1, textures = -1, events = -1;
};
template <class Fn>
Fn fake_fn(const char* name) {
  void* lib = dlopen(qgetenv("GPIX_CUDA_LIBRARY").constData(), RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return nullptr;
  auto fn = reinterpret_cast<Fn>(dlsym(lib, name));
  dlclose(lib);  // gpix keeps the library loaded
  return fn;
}
FakeState2 fake_state2() {
  FakeState2 st;
  if (auto fn = fake_fn<void (*)(std::size_t*, int*, int*, int*)>("fake_cuda_state2"))
    fn(&st.host, &st.arrays, &st.textures, &st.events);
  return st;
}
struct FakeTexture {
  void* array = nullptr;
  int filter = -1, address = -1;
  unsigned flags = 0;
};
FakeTexture fake_texture() {
  FakeTexture t;
  if (auto fn = fake_fn<void (*)(void**, int*, unsigned*, int*)>("fake_cuda_last_texture"))
    fn(&t.array, &t.filter, &t.flags, &t.address);
  return t;
}

HostArray host_random_u32(const Shape& s) {
  return HostArray::from(test::random_bits<std::uint32_t>(s.elements()), s);
}
bool same_bytes(const HostArray& a, const HostArray& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}
// The box (z, y, x origin and extent) of src copied into dst, on the host.
void ref_copy(const HostArray& src, const std::vector<std::size_t>& so, HostArray& dst,
              const std::vector<std::size_t>& dorg, const std::vector<std::size_t>& e) {
  const std::size_t es = size_of(src.dtype());
  const Shape ss = src.shape(), ds = dst.shape();
  for (std::size_t z = 0; z < e[0]; ++z)
    for (std::size_t y = 0; y < e[1]; ++y)
      std::memcpy(dst.data() + (((dorg[0] + z) * ds[1] + dorg[1] + y) * ds[2] + dorg[2]) * es,
                  src.data() + (((so[0] + z) * ss[1] + so[1] + y) * ss[2] + so[2]) * es, e[2] * es);
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
    const Device dev = cuda_device();
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

  // The memory model on the fake (issue 3 through CudaDevice): queues and events, user events,
  // pitched and region copies, pinned and staged transfers, mapping, images as CUDA arrays with
  // texture objects, DLPack adoption, the program disk cache, managed memory.
  void fake_memory_model() {
    if (expect() != "fake_device") QSKIP("runs in test_cuda_loader_fake_device");
    const Device dev = cuda_device();
    QVERIFY(dev.valid());
    // Small staging chunks, so that transfers of a few MB run through the pinned ring.
    detail::ScopedConfig scoped_config;
    detail::StagingConfig& staging = detail::config_for_testing().staging;
    staging.max_piece = std::size_t{1} << 20;
    staging.min_bytes = std::size_t{1} << 20;
    // The fake driver is single-threaded (one global context stack): stage on the caller.
    staging.threads = 1;

    // Queues and events: each step on another queue, ordered only by events.
    {
      const Shape s{37, 41};
      HostArray in = HostArray::from(test::random_bits<std::uint16_t>(s.elements()), s);
      Queue q1 = Queue::create(dev), q2 = Queue::create(dev);
      QCOMPARE(fake_state().streams, 3);
      Array a = Array::empty(s, DType::u16, dev), b = Array::empty(s, DType::u16, dev);
      Array c = Array::padded(s, Shape{40, 64}, DType::u16, dev);
      Event e1 = push_async(in, a, q1);
      Event e2 = fill_async(b, 7, q2, {e1});
      Event e3 = copy_async(a, c, q2, {e2});
      Event e4 = copy_async(c, b, q1, {e3});
      HostArray out = HostArray::pinned(s, DType::u16, dev);
      QVERIFY(out.is_pinned());
      std::memset(out.data(), 0xEE, out.bytes());
      Event e5 = pull_async(b, out, q2, {e4});
      e5.wait();
      QVERIFY(e5.done() && e1.done());
      QVERIFY(same_bytes(out, in));
      Event m = q1.marker({e5});
      m.wait();
      q1.finish();
      q2.finish();
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, e5.complete());
    }
    QCOMPARE(fake_state().streams, 1);
    QCOMPARE(fake_state().depth, 0);

    // A user event holds work back; pageable host memory must not make the thread wait for
    // the gated stream (the fake reports that as a hang).
    {
      const Shape s{5, 17, 9};
      HostArray in = HostArray::from(test::random_bits<std::int32_t>(s.elements()), s);
      Array a = Array::empty(s, DType::i32, dev);
      a.fill(-123456);
      Queue q1 = Queue::create(dev), q2 = Queue::create(dev);
      Event gate = Event::user(dev);
      Event pushed = push_async(in, a, q1, {gate});
      QVERIFY(!pushed.done());
      HostArray wrong = HostArray::empty(s, DType::i32);
      pull_async(a, wrong, q2).wait();  // no wait: the old contents
      for (std::int32_t v : wrong.as<std::int32_t>()) QCOMPARE(v, -123456);
      HostArray right = HostArray::empty(s, DType::i32);
      std::memset(right.data(), 0, right.bytes());
      Event pulled = pull_async(a, right, q2, {pushed});
      QVERIFY(!pulled.done());
      for (std::int32_t v : right.as<std::int32_t>()) QCOMPARE(v, 0);  // not landed yet
      gate.complete();
      pulled.wait();
      QVERIFY(same_bytes(right, in));
      // A user event dropped without complete() releases its waiters.
      Array b = Array::create(s, DType::i32, dev);
      {
        Event g2 = Event::user(dev);
        push_async(in, b, q1, {g2});
      }
      q1.finish();
      QVERIFY(same_bytes(b.pull(), in));
    }
    QCOMPARE(fake_state().streams, 1);

    // Regions and padding, 3D, against a CPU reference.
    {
      const Shape s{6, 13, 11};
      HostArray h = host_random_u32(s);
      Array a = Array::padded(s, Shape{7, 16, 17}, DType::u32, dev);
      a.write(h);
      QVERIFY(same_bytes(a.pull(), h));
      const std::vector<std::size_t> o{1, 2, 3}, e{5, 11, 8};
      HostArray r = a.read_region(Region{o, e});
      HostArray want = HostArray::empty(Shape{5, 11, 8}, DType::u32);
      ref_copy(h, o, want, {0, 0, 0}, e);
      QVERIFY(same_bytes(r, want));
      HostArray patch = host_random_u32(Shape{2, 3, 4});
      a.write_region(Region{{4, 10, 7}, {2, 3, 4}}, patch);
      ref_copy(patch, {0, 0, 0}, h, {4, 10, 7}, {2, 3, 4});
      QVERIFY(same_bytes(a.pull(), h));
      Array b = Array::create(Shape{9, 9, 9}, DType::u32, dev);
      HostArray hb = b.pull();
      copy_region(a, {0, 1, 2}, b, {3, 0, 1}, {6, 9, 8});
      ref_copy(h, {0, 1, 2}, hb, {3, 0, 1}, {6, 9, 8});
      QVERIFY(same_bytes(b.pull(), hb));
    }

    // Pinned and staged: ~3 MB pageable transfers go through 1 MB pinned chunks; pushes up to
    // GPIX_STAGING_KERNEL_MB through the staging kernel (the fake runs it once every slice is
    // flagged), larger ones, or all with 0, through DMA pieces.
    const std::size_t kernel_default = staging.kernel_max;
    for (const char* kernel_mb : {"16", "1", "0"}) {
      staging.kernel_max = static_cast<std::size_t>(std::atoi(kernel_mb)) << 20;
      const auto launches = fake_fn<int (*)()>("fake_cuda_stage_launches");
      QVERIFY(launches);
      const int before = launches();
      const Shape s{3, 501, 523};
      HostArray in = host_random_u32(s);
      Array a = Array::empty(s, DType::u32, dev);
      a.fill(0xA5A5A5A5u);  // poison
      a.write(in);
      QCOMPARE(launches() - before, std::strcmp(kernel_mb, "16") == 0 ? 1 : 0);
      HostArray out = HostArray::empty(s, DType::u32);
      a.read(out);
      QVERIFY(same_bytes(out, in));
      HostArray p = empty_like(a);
      QVERIFY(p.is_pinned());
      a.read(p);
      QVERIFY(same_bytes(p, in));
      QVERIFY(fake_state2().host >= 4u << 20);  // the ring's four chunks
    }
    staging.kernel_max = kernel_default;

    // Mapping: write, read_write, read.
    {
      const Shape s{13, 29};
      const auto data = test::random_values<float>(s.elements());
      Array a = Array::create(s, DType::f32, dev);
      {
        Mapping m = a.map(MapMode::write);
        std::copy(data.begin(), data.end(), m.as<float>().begin());
      }
      QVERIFY(a.pull_as<float>() == data);
      {
        Mapping m = a.map(MapMode::read_write);
        for (float& x : m.as<float>()) x = -x;
      }
      const auto neg = a.pull_as<float>();
      for (std::size_t i = 0; i < data.size(); ++i) QCOMPARE(neg[i], -data[i]);
      {
        const Mapping m = a.map(MapMode::read);
        QCOMPARE(m.as<float>()[5], -data[5]);
      }
    }

    // Images: CUDA arrays; round trips and buffer <-> image copies; texture objects take the
    // sampler (read as integer for integer images, linear only for f32).
    {
      const Shape s{5, 7, 9};
      HostArray h = HostArray::from(test::random_bits<std::uint16_t>(s.elements()), s);
      Array img = Array::empty_image(s, DType::u16, dev);
      QCOMPARE(fake_state2().arrays, 1);
      img.write(h);
      QVERIFY(same_bytes(img.pull(), h));
      Array buf = img.to_buffer();
      QVERIFY(same_bytes(buf.pull(), h));
      QVERIFY(same_bytes(buf.to_image().pull(), h));
      HostArray want = buf.pull();
      Array img2 = Array::empty_image(Shape{4, 6, 8}, DType::u16, dev);
      img2.write(HostArray::from(test::random_bits<std::uint16_t>(4 * 6 * 8), Shape{4, 6, 8}));
      HostArray want2 = img2.pull();
      copy_region(img, {1, 1, 1}, img2, {0, 2, 3}, {3, 4, 5});
      ref_copy(h, {1, 1, 1}, want2, {0, 2, 3}, {3, 4, 5});
      QVERIFY(same_bytes(img2.pull(), want2));
      const Array coords = Array::create(Shape{4, 3}, DType::f32, dev);
      try {
        (void)resample(img, coords, Sampler{Sampler::Filter::nearest, Sampler::Coordinates::pixel});
        QFAIL("no exception");
      } catch (const DeviceError& e) {
        QCOMPARE(e.code(), std::string("CUDA_ERROR_NOT_SUPPORTED"));  // the fake runs no kernel
      }
      FakeTexture t = fake_texture();
      QCOMPARE(t.filter, 0);   // CU_TR_FILTER_MODE_POINT
      QCOMPARE(t.address, 1);  // CU_TR_ADDRESS_MODE_CLAMP
      QCOMPARE(t.flags, 1u);   // CU_TRSF_READ_AS_INTEGER, pixel coordinates
      Array f = Array::empty_image(Shape{3, 4}, DType::f32, dev);
      QVERIFY_THROWS_EXCEPTION(DeviceError, resample(f, Array::create(Shape{4, 2}, DType::f32, dev),
                                                     Sampler{Sampler::Filter::linear,
                                                             Sampler::Coordinates::normalized}));
      t = fake_texture();
      QCOMPARE(t.filter, 1);  // CU_TR_FILTER_MODE_LINEAR
      QCOMPARE(t.flags, 2u);  // CU_TRSF_NORMALIZED_COORDINATES, read as float
      QVERIFY(fake_state2().textures >= 2);
      QVERIFY_THROWS_EXCEPTION(UnsupportedDType, Array::empty_image(Shape{4, 4}, DType::f64, dev));
    }
    QCOMPARE(fake_state2().arrays, 0);
    QCOMPARE(fake_state2().textures, 0);  // destroyed with their arrays

    // DLPack: export shares the device pointer; import adopts it (the deleter runs once, when
    // the adopting array dies); memory the driver does not know is refused, and freed.
    {
      const auto vals = test::random_values<std::int16_t>(35);
      const Array a = Array::push(vals, Shape{5, 7}, dev);
      DLManagedTensor* t = to_dlpack(a);
      QCOMPARE(t->dl_tensor.device.device_type, kDLCUDA);
      QCOMPARE(t->dl_tensor.device.device_id, 0);
      {
        const Array b = array_from_dlpack(t, dev);
        QVERIFY(b.pull_as<std::int16_t>() == vals);
      }
      static int deleted = 0;
      static std::vector<std::int16_t> host_bytes;
      static std::int64_t shape[2] = {5, 7};
      host_bytes = vals;
      static DLManagedTensor fake{};
      fake.dl_tensor.data = host_bytes.data();
      fake.dl_tensor.device = {kDLCUDA, 0};
      fake.dl_tensor.ndim = 2;
      fake.dl_tensor.dtype = {kDLInt, 16, 1};
      fake.dl_tensor.shape = shape;
      fake.deleter = [](DLManagedTensor*) { ++deleted; };
      QVERIFY_THROWS_EXCEPTION(InvalidArgument, array_from_dlpack(&fake, dev));
      QCOMPARE(deleted, 1);
    }

    // The program disk cache: a cubin stored with its tag loads back through load().
    {
      QTemporaryDir dir;
      detail::ScopedConfig scoped_cache;
      detail::config_for_testing().cache_dir = dir.path().toStdString();
      detail::config_for_testing().no_disk_cache = false;
      // The build's own prebuilt bundle (which has sm_90, the fake's architecture, where the
      // build was configured for it) would answer before the disk cache.
      detail::config_for_testing().kernel_bundle = "off";
      auto& impl = detail::Access::impl(dev);
      impl.clear_memory_cache();
      const auto c0 = impl.cache_counters();
      (void)impl.kernel(detail::program("fill.kernel"), "fill_u64", {});
      const auto c1 = impl.cache_counters();
      QCOMPARE(c1.compiles, c0.compiles + 1);
      QCOMPARE(c1.disk_writes, c0.disk_writes + 1);
      impl.clear_memory_cache();
      (void)impl.kernel(detail::program("fill.kernel"), "fill_u64", {});
      const auto c2 = impl.cache_counters();
      QCOMPARE(c2.disk_hits, c1.disk_hits + 1);
      QCOMPARE(c2.compiles, c1.compiles);
      Array a = Array::create(Shape{3, 5}, DType::u64, dev);
      a.fill(std::uint64_t{0x0123456789abcdefULL});  // the kernel from the cache runs
      for (std::uint64_t v : a.pull_as<std::uint64_t>()) QCOMPARE(v, 0x0123456789abcdefULL);
    }

    // The prebuilt kernel bundle: a program in it loads without NVRTC and without the disk
    // cache; a corrupt entry or a foreign file is a miss, compiled as before.
    {
      const detail::Nvrtc* nvrtc = detail::Nvrtc::get();
      if (!nvrtc) QSKIP("no NVRTC to make the bundle with");
      QTemporaryDir dir;
      const std::string path = dir.path().toStdString() + "/cuda-kernels.bin";
      const auto& src = detail::program("fill.kernel");
      const std::string key = detail::program_key(src, {});
      const std::vector<char> image = nvrtc->compile(src, {}, 90);
      const std::vector<char> bin = detail::cuda::tagged_binary(image, false);
      // The fake is compute capability 9.0: an sm_80 cubin is of another major, never used.
      // sm_90's entry is last in the file, where the damage below goes.
      detail::write_kernel_bundle(path, "test", {{"sm_80|" + key, bin}, {"sm_90|" + key, bin}});

      detail::ScopedConfig scoped;
      detail::config_for_testing().no_disk_cache = true;
      detail::config_for_testing().kernel_bundle = path;
      auto& impl = detail::Access::impl(dev);
      auto run_fill = [&] {
        impl.clear_memory_cache();
        (void)impl.kernel(src, "fill_u64", {});
      };
      auto c0 = impl.cache_counters();
      run_fill();
      auto c1 = impl.cache_counters();
      QCOMPARE(c1.prebuilt_hits, c0.prebuilt_hits + 1);
      QCOMPARE(c1.compiles, c0.compiles);
      QCOMPARE(program_cache_stats(dev).prebuilt_hits, c1.prebuilt_hits);
      Array a = Array::create(Shape{4, 3}, DType::u64, dev);
      a.fill(std::uint64_t{42});  // the kernel from the bundle runs
      for (std::uint64_t v : a.pull_as<std::uint64_t>()) QCOMPARE(v, std::uint64_t{42});

      // One byte of the cubin flipped: the checksum refuses it, the program compiles.
      {
        QFile f(QString::fromStdString(path));
        QVERIFY(f.open(QIODevice::ReadWrite));
        QByteArray all = f.readAll();
        const qsizetype at = all.size() - 100;
        all[at] = static_cast<char>(all[at] ^ 0x5a);
        f.seek(0);
        f.write(all);
      }
      // The bundle is reopened when its configured path changes.
      detail::config_for_testing().kernel_bundle = "off";
      QVERIFY(!detail::KernelBundle::process_bundle());
      detail::config_for_testing().kernel_bundle = path;
      run_fill();
      auto c2 = impl.cache_counters();
      QCOMPARE(c2.prebuilt_hits, c1.prebuilt_hits);
      QCOMPARE(c2.prebuilt_rejected, c1.prebuilt_rejected + 1);
      QCOMPARE(c2.compiles, c1.compiles + 1);

      // Not a bundle at all: ignored.
      {
        QFile f(QString::fromStdString(path));
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write("GPIXKB01 but nothing else");
      }
      detail::config_for_testing().kernel_bundle = "off";
      (void)detail::KernelBundle::process_bundle();
      detail::config_for_testing().kernel_bundle = path;
      std::string why;
      QVERIFY(!detail::KernelBundle::open(path, &why));
      QVERIFY2(why.find("truncated") != std::string::npos, why.c_str());
      run_fill();
      auto c3 = impl.cache_counters();
      QCOMPARE(c3.prebuilt_hits, c2.prebuilt_hits);
      QCOMPARE(c3.compiles, c2.compiles + 1);
      impl.clear_memory_cache();
    }

    // Memory report and managed memory (never more than is free).
    {
      const MemoryReport r = memory_report(dev);
      QVERIFY(r.device_known);
      QCOMPARE(r.device_total, std::uint64_t{256} << 20);
      QVERIFY(supports_svm(dev));
      test::shared_buffer_round_trip(dev);
      if (QTest::currentTestFailed()) return;
      QVERIFY_THROWS_EXCEPTION(OutOfMemory, SharedBuffer::allocate(std::size_t{300} << 20, dev));
    }

    trim(dev);
    QCOMPARE(fake_state().allocated, std::size_t{0});
    QCOMPARE(fake_state().depth, 0);
    // The device's own streams only: its default stream and the push and pull queues that
    // its staged pushes and pulls made (transfer.cpp); every Queue of the test has gone.
    QCOMPARE(fake_state().streams, 3);
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

  // A device that disappears between listing and use (the fake device drops off the bus):
  // every call on it is a typed error naming the device, nothing crashes (arrays made before
  // are released without a throw from a destructor), and the other devices keep working.
  void device_vanishes() {
    if (expect() != "fake_device") QSKIP("runs in test_cuda_loader_fake_device");
    const Device dev = cuda_device();
    QVERIFY(dev.valid());
    const auto values = test::random_values<std::uint16_t>(4096);
    std::optional<Array> before = Array::push(values, Shape{64, 64}, dev);
    QVERIFY(fake_vanish(1));
    const auto device_error = [&](const std::function<void()>& f) {
      try {
        f();
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find("gpix fake CUDA device") != std::string::npos,
                 e.what());
        return;
      }
      QFAIL("no error from a device that is gone");
    };
    device_error([&] { (void)Array::push(values, Shape{64, 64}, dev); });
    device_error([&] { (void)before->pull(); });
    device_error([&] { (void)Array::empty(Shape{1000}, DType::f32, dev); });
    before.reset();  // released on a device that is gone: no throw, no crash
    // The other devices go on.
    for (const Device& d : devices()) {
      if (d.backend() != Backend::opencl) continue;
      const Array a = Array::push(values, Shape{64, 64}, d);
      QVERIFY(a.pull_as<std::uint16_t>() == values);
    }
    QVERIFY(fake_vanish(0));
    const Array back = Array::push(values, Shape{64, 64}, dev);
    QVERIFY(back.pull_as<std::uint16_t>() == values);
  }
};

QTEST_APPLESS_MAIN(TestCudaLoader)
#include "test_cuda_loader.moc"
