// The only file that sees the OpenCL 2.0 API (see opencl_svm.h).
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#include "backend/opencl/opencl_svm.h"

#include <cstdlib>
#include <string>

namespace gpix::detail::clsvm {

bool svm_coarse_grain(cl_device_id device) {
  char version[256] = {};
  if (clGetDeviceInfo(device, CL_DEVICE_VERSION, sizeof version - 1, version, nullptr) !=
      CL_SUCCESS) {
    return false;
  }
  // "OpenCL <major>.<minor> ...": SVM needs 2.0 or later.
  const int major = std::atoi(version + 7);
  if (major < 2) return false;
  cl_device_svm_capabilities caps = 0;
  if (clGetDeviceInfo(device, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps, nullptr) !=
      CL_SUCCESS) {
    return false;
  }
  return (caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
}

void* alloc(cl_context ctx, std::size_t bytes) {
  return clSVMAlloc(ctx, CL_MEM_READ_WRITE, bytes, 0);
}

void free(cl_context ctx, void* p) {
  clSVMFree(ctx, p);
}

cl_int map(cl_command_queue q, void* p, std::size_t bytes, bool read, bool write) {
  cl_map_flags flags = 0;
  if (read) flags |= CL_MAP_READ;
  if (write) flags |= read ? CL_MAP_WRITE : CL_MAP_WRITE_INVALIDATE_REGION;
  return clEnqueueSVMMap(q, CL_TRUE, flags, p, bytes, 0, nullptr, nullptr);
}

cl_int unmap(cl_command_queue q, void* p) {
  cl_int err = clEnqueueSVMUnmap(q, p, 0, nullptr, nullptr);
  if (err == CL_SUCCESS) err = clFinish(q);
  return err;
}

}  // namespace gpix::detail::clsvm
