#pragma once
// A check that test_core_memory (SVM) and test_cuda_loader (the fake CUDA device) both run.
#include "gpix/gpix.h"

namespace gpix::test {

// A 33 x 17 int32 SharedBuffer on `dev`: written through a mapping, copied to an array and
// back after a fill, read through a mapping. Failures are reported through QVERIFY/QCOMPARE.
void shared_buffer_round_trip(const Device& dev);

}  // namespace gpix::test
