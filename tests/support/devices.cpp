#include "support/devices.h"

#include <QTest>

namespace gpix::test {

const std::vector<Device>& test_devices() {
  const auto& d = devices();
  if (d.empty() && !qEnvironmentVariableIsSet("GPIX_TEST_ALLOW_NO_DEVICE")) {
    qFatal(
        "no gpix device found; install pocl-opencl-icd (see README) or set "
        "GPIX_TEST_ALLOW_NO_DEVICE=1");
  }
  return d;
}

QByteArray row_name(const Device& d) {
  return QByteArray::fromStdString(std::to_string(d.info().index) + ":" + d.label());
}

Device device_at(int index) {
  return devices().at(static_cast<std::size_t>(index));
}

void add_device_rows() {
  QTest::addColumn<int>("device");
  for (const Device& d : test_devices()) QTest::newRow(row_name(d).constData()) << d.info().index;
}

void add_device_dtype_rows(std::span<const DType> dtypes) {
  QTest::addColumn<int>("device");
  QTest::addColumn<DType>("dtype");
  for (const Device& d : test_devices()) {
    for (DType t : dtypes) {
      QTest::newRow((row_name(d) + " " + QByteArray(name(t).data())).constData())
          << d.info().index << t;
    }
  }
}

Device fetch_device() {
  QFETCH(int, device);
  return device_at(device);
}

}  // namespace gpix::test
