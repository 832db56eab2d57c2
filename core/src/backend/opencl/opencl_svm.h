#pragma once
// OpenCL 2.0 shared virtual memory calls, compiled in their own file at
// CL_TARGET_OPENCL_VERSION 200 so the rest of the backend stays at the 1.2 floor. Call them
// only on devices for which svm_coarse_grain() is true.
#include "backend/opencl/cl.h"

namespace gpix::detail::clsvm {

// The device reports OpenCL 2.0+ and CL_DEVICE_SVM_COARSE_GRAIN_BUFFER.
bool svm_coarse_grain(cl_device_id device);
void* alloc(cl_context ctx, std::size_t bytes);  // nullptr on failure
void free(cl_context ctx, void* p);
cl_int map(cl_command_queue q, void* p, std::size_t bytes, bool read, bool write);  // blocking
cl_int unmap(cl_command_queue q, void* p);                                          // blocking

}  // namespace gpix::detail::clsvm
