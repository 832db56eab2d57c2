// The backend front's argument checks, once for every backend: the same misuse gives the same
// error type on every device present (PoCL here; CUDA and NVIDIA's OpenCL on the GPU machine)
// and, run as test_core_backend_errors_fake_cuda, on the fake CUDA device
// (tests/core/fake_cuda_device.c). Each message must name what was asked and the device.
#include <QTest>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "detail.h"
#include "programs.h"
#include "support/devices.h"

using namespace gpix;

namespace {

struct Misuse {
  const char* name;
  // Runs the misuse on a device with a 64-byte buffer m.
  std::function<void(detail::DeviceImpl&, detail::Memory&)> run;
  enum Kind { invalid_argument, out_of_memory, unsupported_dtype } kind;
  std::vector<std::string> words;  // in the message, besides the device's name
};

std::vector<Misuse> misuses() {
  using detail::DeviceImpl;
  using detail::Memory;
  static std::array<std::byte, 256> host{};
  const auto linear = [](std::size_t offset, std::size_t bytes) {
    return detail::Pitched{{offset, 0, 0}, bytes, bytes};
  };
  return {
      {"write past the end",
       [](DeviceImpl& d, Memory& m) { d.write(m, 60, host.data(), 8); },
       Misuse::invalid_argument,
       {"write", "8 bytes", "offset 60", "64 bytes"}},
      {"read past the end",
       [](DeviceImpl& d, Memory& m) { d.read(m, 0, host.data(), 65); },
       Misuse::invalid_argument,
       {"read", "65 bytes", "64 bytes"}},
      {"copy past the end",
       [](DeviceImpl& d, Memory& m) { d.copy(m, 0, m, 40, 32); },
       Misuse::invalid_argument,
       {"copy to", "32 bytes", "offset 40"}},
      {"fill pattern of 3 bytes",
       [](DeviceImpl& d, Memory& m) { d.fill(m, 0, 6, host.data(), 3); },
       Misuse::invalid_argument,
       {"1, 2, 4 or 8 bytes", "not 3"}},
      {"fill not whole patterns",
       [](DeviceImpl& d, Memory& m) { d.fill(m, 2, 8, host.data(), 4); },
       Misuse::invalid_argument,
       {"8 bytes", "offset 2", "4-byte"}},
      {"fill past the end",
       [](DeviceImpl& d, Memory& m) {
         d.fill_async(d.default_queue(), m, 32, 64, host.data(), 4, {})->wait();
       },
       Misuse::invalid_argument,
       {"fill", "64 bytes", "offset 32"}},
      {"write an empty box",
       [=](DeviceImpl& d, Memory& m) {
         d.write_rect(d.default_queue(), m, linear(0, 8), host.data(), linear(0, 8), {8, 0, 1}, {})
             ->wait();
       },
       Misuse::invalid_argument,
       {"write", "empty box"}},
      {"read a box past the end",
       [=](DeviceImpl& d, Memory& m) {
         d.read_rect(d.default_queue(), m, detail::Pitched{{0, 0, 0}, 16, 64}, host.data(),
                     linear(0, 16), {16, 5, 1}, {})
             ->wait();
       },
       Misuse::invalid_argument,
       {"read", "80 bytes", "64 bytes"}},
      {"map past the end",
       [](DeviceImpl& d, Memory& m) { d.map(m, 48, 32, detail::MapAccess::read); },
       Misuse::invalid_argument,
       {"map", "32 bytes", "offset 48"}},
      {"unmap a pointer never mapped",
       [](DeviceImpl& d, Memory& m) { d.unmap(m, host.data()); },
       Misuse::invalid_argument,
       {"unmap", "not mapped"}},
      {"launch with a ragged work-group",
       [](DeviceImpl& d, Memory& m) {
         const auto& k = d.kernel(detail::program("fill.kernel"), "fill_u64", {});
         detail::Launch l;
         l.global = {100, 1, 1};
         l.local = {64, 1, 1};
         const std::array<detail::KernelArg, 3> args = {
             detail::KernelArg::mem(m), detail::KernelArg::scalar<std::uint64_t>(8),
             detail::KernelArg::scalar<std::uint64_t>(0)};
         d.launch(*k, l, args);
       },
       Misuse::invalid_argument,
       {"global size 100", "work-group size 64"}},
      {"allocate more than the largest allocation",
       [](DeviceImpl& d, Memory&) { (void)d.allocate(d.info().max_allocation + 1); },
       Misuse::out_of_memory,
       {"largest single allocation"}},
      {"an image of float64",
       [](DeviceImpl& d, Memory&) {
         detail::ImageFormat f;
         f.width = f.height = 4;
         f.dtype = DType::f64;
         (void)d.allocate_image(f);
       },
       Misuse::unsupported_dtype,
       {"2D image", "float64"}},
  };
}

}  // namespace

class TestBackendErrors : public QObject {
  Q_OBJECT
 private slots:
  void initTestCase() {
    if (qEnvironmentVariableIsSet("GPIX_TEST_EXPECT_CUDA")) {
      bool cuda = false;
      // Whether the fake driver loaded, GPIX_TEST_DEVICES or not.
      for (const Device& d : test::all_devices()) cuda = cuda || d.backend() == Backend::cuda;
      QVERIFY2(cuda, "the fake CUDA device did not load (GPIX_CUDA_LIBRARY)");
    }
  }

  void same_error_everywhere_data() {
    QTest::addColumn<int>("device");
    QTest::addColumn<int>("misuse");
    const auto all = misuses();
    for (const Device& d : test::test_devices()) {
      for (std::size_t i = 0; i < all.size(); ++i) {
        QTest::newRow((test::row_name(d) + ": " + all[i].name).constData())
            << d.info().index << static_cast<int>(i);
      }
    }
  }
  void same_error_everywhere() {
    QFETCH(int, device);
    QFETCH(int, misuse);
    const Device dev = test::device_at(device);
    auto& impl = detail::Access::impl(dev);
    const Misuse m = misuses()[static_cast<std::size_t>(misuse)];
    auto mem = impl.allocate(64);
    std::string what;
    bool right_type = false;
    try {
      m.run(impl, *mem);
      QFAIL("no exception");
    } catch (const InvalidArgument& e) {
      right_type = m.kind == Misuse::invalid_argument;
      what = e.what();
    } catch (const UnsupportedDType& e) {
      right_type = m.kind == Misuse::unsupported_dtype;
      what = e.what();
    } catch (const OutOfMemory& e) {
      right_type = m.kind == Misuse::out_of_memory;
      what = e.what();
    } catch (const Error& e) {
      what = std::string("another gpix::Error: ") + e.what();
    }
    QVERIFY2(right_type, what.c_str());
    QVERIFY2(what.find(dev.name()) != std::string::npos, what.c_str());
    for (const std::string& w : m.words) QVERIFY2(what.find(w) != std::string::npos, what.c_str());
    // The device still works afterwards.
    const std::uint32_t v = 0x01020304u;
    impl.fill(*mem, 0, 64, &v, 4);
    std::array<std::uint32_t, 16> back{};
    impl.read(*mem, 0, back.data(), 64);
    for (std::uint32_t b : back) QCOMPARE(b, v);
  }
};

QTEST_GUILESS_MAIN(TestBackendErrors)
#include "test_backend_errors.moc"
