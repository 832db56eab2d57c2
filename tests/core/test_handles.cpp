// The move-only RAII owners: move construction, move assignment (the old handle is released,
// *this is returned), self-assignment, release() and reset(); on a fake handle and on real
// OpenCL memory objects.
#include <QTest>

#include "backend/opencl/cl.h"
#include "backend/unique_handle.h"

using namespace gpix;

namespace {
int g_released[8];
void fake_release(int h) {
  ++g_released[h];
}
using Fake = detail::UniqueHandle<int, &fake_release>;

cl_uint refcount(cl_mem m) {
  cl_uint n = 0;
  clGetMemObjectInfo(m, CL_MEM_REFERENCE_COUNT, sizeof n, &n, nullptr);
  return n;
}
}  // namespace

class TestHandles : public QObject {
  Q_OBJECT
 private slots:
  void init() { std::fill(std::begin(g_released), std::end(g_released), 0); }

  void fake_moves() {
    {
      Fake a(1);
      Fake b(std::move(a));
      QCOMPARE(a.get(), 0);  // NOLINT(bugprone-use-after-move): checking the moved-from state
      QCOMPARE(b.get(), 1);
      Fake c(2);
      Fake& ret = (c = std::move(b));
      QCOMPARE(&ret, &c);
      QCOMPARE(g_released[2], 1);  // the old handle went at assignment
      QCOMPARE(g_released[1], 0);
      QCOMPARE(c.get(), 1);
      auto& self = c;
      c = std::move(self);  // self-move keeps the handle
      QCOMPARE(c.get(), 1);
      QCOMPARE(g_released[1], 0);
      Fake d(3);
      QCOMPARE(d.release(), 3);
      QVERIFY(!d);
      d.reset(4);
      d.reset(5);
      QCOMPARE(g_released[4], 1);
    }
    QCOMPARE(g_released[1], 1);  // exactly once each
    QCOMPARE(g_released[2], 1);
    QCOMPARE(g_released[3], 0);  // released by hand, not by the owner
    QCOMPARE(g_released[5], 1);
  }

  void opencl_moves() {
    cl_platform_id platform = nullptr;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, &n) != CL_SUCCESS || n == 0) QSKIP("no OpenCL platform");
    cl_device_id dev = nullptr;
    QCOMPARE(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev, nullptr), CL_SUCCESS);
    cl_int err = 0;
    detail::cl::Context ctx(clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err));
    QCOMPARE(err, CL_SUCCESS);
    detail::cl::Mem a(clCreateBuffer(ctx.get(), CL_MEM_READ_WRITE, 64, nullptr, &err));
    detail::cl::Mem b(clCreateBuffer(ctx.get(), CL_MEM_READ_WRITE, 64, nullptr, &err));
    cl_mem raw_b = b.get();
    clRetainMemObject(raw_b);  // keep it alive to watch its count
    QCOMPARE(refcount(raw_b), 2u);
    cl_mem raw_a = a.get();
    b = std::move(a);
    QCOMPARE(refcount(raw_b), 1u);  // assignment released b's old buffer
    QCOMPARE(b.get(), raw_a);
    QCOMPARE(refcount(raw_a), 1u);  // and did not add or drop a reference to a's
    detail::cl::Mem c(std::move(b));
    QCOMPARE(c.get(), raw_a);
    QVERIFY(!b);  // NOLINT(bugprone-use-after-move)
    clReleaseMemObject(raw_b);
  }
};

QTEST_APPLESS_MAIN(TestHandles)
#include "test_handles.moc"
