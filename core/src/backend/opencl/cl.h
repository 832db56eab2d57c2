#pragma once
// The OpenCL headers at the API level gpix targets (1.2 is the floor on every vendor), with
// RAII owners for each handle and error checking that names the API's code.
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <string>
#include <string_view>

#include "backend/unique_handle.h"

namespace gpix::detail::cl {

using Context = UniqueHandle<cl_context, &clReleaseContext>;
using Queue = UniqueHandle<cl_command_queue, &clReleaseCommandQueue>;
using Mem = UniqueHandle<cl_mem, &clReleaseMemObject>;
using ProgramHandle = UniqueHandle<cl_program, &clReleaseProgram>;
using KernelHandle = UniqueHandle<cl_kernel, &clReleaseKernel>;
using EventHandle = UniqueHandle<cl_event, &clReleaseEvent>;
using Sampler = UniqueHandle<cl_sampler, &clReleaseSampler>;

// "CL_INVALID_WORK_GROUP_SIZE" for -54; "CL_ERROR(-9999)" for codes it does not know.
std::string error_name(cl_int code);

// Throws DeviceError (OutOfMemory for the allocation codes) saying what was being done.
void check(cl_int code, std::string_view what);

// check() for calls made per transfer: what() builds the message only on failure (a message
// with the size and device name costs allocations on every call otherwise).
template <class What>
void check_lazy(cl_int code, const What& what) {
  if (code != CL_SUCCESS) check(code, what());
}

}  // namespace gpix::detail::cl
