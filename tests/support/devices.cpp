#include "support/devices.h"

#include <QTest>
#include <algorithm>

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

namespace {

// GPIX_TEST_DTYPES as dtypes; empty when unset. A name it does not know stops the suite, so
// that a typing error does not quietly test nothing.
std::vector<DType> dtype_subset() {
  std::vector<DType> keep;
  const QString text = qEnvironmentVariable("GPIX_TEST_DTYPES");
  for (const QString& n : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    const auto t = parse_dtype(n.trimmed().toStdString());
    if (!t) {
      qFatal("GPIX_TEST_DTYPES: '%s' is not a dtype; use %s", qPrintable(n), dtype_names().c_str());
    }
    keep.push_back(*t);
  }
  return keep;
}

}  // namespace

void add_device_dtype_rows(std::span<const DType> dtypes) {
  QTest::addColumn<int>("device");
  QTest::addColumn<DType>("dtype");
  static const std::vector<DType> subset = dtype_subset();
  for (const Device& d : test_devices()) {
    for (DType t : dtypes) {
      if (!subset.empty() && std::find(subset.begin(), subset.end(), t) == subset.end()) continue;
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
