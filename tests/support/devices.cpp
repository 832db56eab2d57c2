#include "support/devices.h"

#include <QRegularExpression>
#include <QTest>
#include <algorithm>

namespace gpix::test {

const std::vector<Device>& test_devices() {
  // GPIX_TEST_DEVICES=REGEX keeps the devices whose label matches (a GPU machine's run of a
  // suite without its PoCL device, which takes the most time there). A pattern that keeps
  // none stops the suite, so that a typing error does not quietly test nothing.
  static const std::vector<Device> kept = [] {
    const QString pattern = qEnvironmentVariable("GPIX_TEST_DEVICES");
    if (pattern.isEmpty()) return devices();
    const QRegularExpression re(pattern);
    std::vector<Device> keep;
    for (const Device& d : devices()) {
      if (re.match(QString::fromStdString(d.label())).hasMatch()) keep.push_back(d);
    }
    if (keep.empty()) qFatal("GPIX_TEST_DEVICES: '%s' matches no device", qPrintable(pattern));
    return keep;
  }();
  const auto& d = kept;
  if (d.empty() && !qEnvironmentVariableIsSet("GPIX_TEST_ALLOW_NO_DEVICE")) {
    qFatal(
        "no gpix device found; install pocl-opencl-icd (see README) or set "
        "GPIX_TEST_ALLOW_NO_DEVICE=1");
  }
  return d;
}

const std::vector<Device>& all_devices() {
  (void)test_devices();
  return devices();
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
