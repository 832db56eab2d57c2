#pragma once
// The devices a test runs on and the data rows that walk them.
#include <QByteArray>
#include <QMetaType>
#include <span>
#include <vector>

#include "gpix/gpix.h"

namespace gpix::test {

// The devices the suites' rows run on: every device present, or those whose label matches
// GPIX_TEST_DEVICES (a regular expression). A run with none fails unless
// GPIX_TEST_ALLOW_NO_DEVICE is set, so that a CI machine that lost its OpenCL driver does not
// pass by testing nothing.
const std::vector<Device>& test_devices();

// Every device gpix lists (devices()), GPIX_TEST_DEVICES or not, with test_devices()' check
// that there is one: for the tests of the listing itself (indices, choice rules, the CLI's list).
const std::vector<Device>& all_devices();

// "index:label", the row name of a device.
QByteArray row_name(const Device& d);

// The device of a row's "device" column (its index in devices()).
Device device_at(int index);

// Data rows, one per device: an int column "device".
void add_device_rows();
// Data rows, one per device and dtype: columns "device" (int) and "dtype" (DType), named
// "<device row name> <dtype>". GPIX_TEST_DTYPES (a comma-separated list such as "u8,f32")
// keeps only those dtypes, for runs that cannot afford all ten (the sanitizer stage of CI).
void add_device_dtype_rows(std::span<const DType> dtypes = kAllDTypes);

// The current row's device (the "device" column above).
Device fetch_device();

}  // namespace gpix::test

// The "dtype" column's type, declared once for every suite.
Q_DECLARE_METATYPE(gpix::DType)
