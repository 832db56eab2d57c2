// Device listing and selection rules, on the devices present.
#include <QTest>

#include "support/devices.h"

using namespace gpix;

class TestDevice : public QObject {
  Q_OBJECT
 private slots:
  void listing() {
    const auto& devs = test::all_devices();
    for (std::size_t i = 0; i < devs.size(); ++i) {
      const DeviceInfo& info = devs[i].info();
      QCOMPARE(info.index, static_cast<int>(i));
      QVERIFY(!info.name.empty());
      QVERIFY(info.compute_units > 0);
      QVERIFY(info.global_memory > 0);
      QVERIFY(info.max_allocation > 0 && info.max_allocation <= info.global_memory);
      QVERIFY(info.local_memory > 0);
      QVERIFY(info.max_work_group > 0);
      QVERIFY(!info.api_version.empty());
      QVERIFY(devs[i] == devs[i]);
      if (i > 0) QVERIFY(!(devs[i] == devs[0]));
    }
    // Both backends report a status, with a reason where they are unavailable.
    bool saw_cuda = false, saw_opencl = false;
    for (const auto& s : backend_status()) {
      saw_cuda |= s.backend == Backend::cuda;
      saw_opencl |= s.backend == Backend::opencl;
      QVERIFY(!s.detail.empty());
      QCOMPARE(s.available, s.devices > 0);
    }
    QVERIFY(saw_cuda && saw_opencl);
  }

  // A device whose work-groups hold fewer than 256 work-items is not listed, and the OpenCL
  // backend's status says why (every filter would fail a launch on it). Runs where PoCL is
  // told a lower limit (POCL_MAX_WORK_GROUP_SIZE, test_core_device_small_groups); skips
  // elsewhere.
  void small_work_groups_refused() {
    const QByteArray limit = qgetenv("POCL_MAX_WORK_GROUP_SIZE");
    if (limit.isEmpty() || limit.toInt() >= 256) QSKIP("PoCL's work-group limit is not lowered");
    for (const Device& d : test::all_devices()) {
      QVERIFY2(d.info().platform != "Portable Computing Language", d.info().name.c_str());
    }
    bool said = false;
    for (const auto& s : backend_status()) {
      if (s.backend == Backend::opencl) {
        said = s.detail.find("work-groups hold at most " + limit.toStdString() +
                             " work-items; gpix needs 256") != std::string::npos;
      }
    }
    QVERIFY(said);
  }

  void default_choice() {
    const auto& devs = test::all_devices();
    if (devs.empty()) QSKIP("no device");
    const DeviceChoice c = choose_device();
    QVERIFY(c.device.valid());
    QVERIFY(!c.reason.empty());
    bool any_gpu = false;
    std::uint64_t best_gpu_mem = 0;
    for (const auto& d : devs) {
      if (d.info().type == DeviceType::gpu) {
        any_gpu = true;
        best_gpu_mem = std::max(best_gpu_mem, d.info().global_memory);
      }
    }
    if (any_gpu) {
      QCOMPARE(c.device.info().type, DeviceType::gpu);
      // The card with the most memory; CUDA and OpenCL may report it slightly differently, so
      // a same-named twin may hold the figure. CUDA is preferred for the same card.
      std::uint64_t card_mem = 0;
      bool cuda_twin = false;
      for (const auto& d : devs) {
        if (d.info().type == DeviceType::gpu && d.name() == c.device.name()) {
          card_mem = std::max(card_mem, d.info().global_memory);
          cuda_twin |= d.backend() == Backend::cuda;
        }
      }
      QCOMPARE(card_mem, best_gpu_mem);
      if (cuda_twin) QCOMPARE(c.device.backend(), Backend::cuda);
    } else {
      QVERIFY2(c.reason.find("no GPU") != std::string::npos, c.reason.c_str());
    }
    QVERIFY(select_device() == c.device);
    QVERIFY(default_device() == c.device);
  }

  void by_index_and_name() {
    const auto& devs = test::all_devices();
    for (const Device& d : devs) {
      QVERIFY(choose_device(std::to_string(d.info().index)).device == d);
      const std::string& n = d.name();
      // Case-insensitive substring from the middle of the name.
      std::string part = n.substr(n.size() / 3, std::max<std::size_t>(1, n.size() / 3));
      std::string upper = part;
      for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
      const Device by_part = choose_device(upper).device;
      QVERIFY(by_part.name().find(part) != std::string::npos ||
              [&] {  // another device may match the same part; it must contain it too
                std::string lo = by_part.name();
                for (auto& ch : lo)
                  ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                std::string lp = part;
                for (auto& ch : lp)
                  ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                return lo.find(lp) != std::string::npos;
              }());
      // The full label selects exactly this device (or an identical twin on the same backend).
      const Device by_label = choose_device(d.label()).device;
      QCOMPARE(by_label.name(), d.name());
      QCOMPARE(by_label.backend(), d.backend());
    }
  }

  void errors() {
    const auto& devs = test::all_devices();
    if (devs.empty()) QSKIP("no device");
    try {
      choose_device("no-such-device-xyz");
      QFAIL("no exception");
    } catch (const DeviceError& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("no-such-device-xyz") != std::string::npos, e.what());
      for (const auto& d : devs) QVERIFY2(m.find(d.name()) != std::string::npos, e.what());
    }
    QVERIFY_THROWS_EXCEPTION(DeviceError, choose_device(std::to_string(devs.size())));
    QVERIFY_THROWS_EXCEPTION(DeviceError, choose_device("-1"));
    // A backend prefix restricts the search.
    for (const auto& d : devs) {
      const std::string other = d.backend() == Backend::cuda ? "opencl:" : "cuda:";
      bool twin = false;
      for (const auto& e : devs) twin |= e.backend() != d.backend() && e.name() == d.name();
      if (!twin) QVERIFY_THROWS_EXCEPTION(DeviceError, choose_device(other + d.name()));
    }
    QVERIFY_THROWS_EXCEPTION(InvalidArgument, Device().info());
  }
};

QTEST_APPLESS_MAIN(TestDevice)
#include "test_device.moc"
