#pragma once
// The CUDA driver API, loaded at run time from libcuda.so.1: a table of function pointers
// typed from the toolkit's cuda.h (which is the only build-time CUDA dependency), error names,
// and error checks that throw gpix errors.
#include <cuda.h>

#include <string>
#include <string_view>

#include "backend/cuda/dynlib.h"

namespace gpix::detail::cuda {

// The oldest driver gpix accepts (cuDriverGetVersion encoding: 1000 * major + 10 * minor).
// 11.0 brought cuDevicePrimaryCtxRelease_v2, the newest symbol gpix resolves.
inline constexpr int kMinDriverVersion = 11000;

// Each entry: the member (named as the API function, which cuda.h may #define to a _v2 name)
// and the versioned symbol that libcuda exports for the ABI that cuda.h declares.
#define GPIX_CUDA_DRIVER_FUNCTIONS(X)                          \
  X(cuDeviceGet, "cuDeviceGet")                                \
  X(cuDeviceGetCount, "cuDeviceGetCount")                      \
  X(cuDeviceGetName, "cuDeviceGetName")                        \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute")              \
  X(cuDeviceTotalMem, "cuDeviceTotalMem_v2")                   \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")      \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2")                   \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2")                     \
  X(cuStreamCreate, "cuStreamCreate")                          \
  X(cuStreamDestroy, "cuStreamDestroy_v2")                     \
  X(cuStreamSynchronize, "cuStreamSynchronize")                \
  X(cuEventCreate, "cuEventCreate")                            \
  X(cuEventDestroy, "cuEventDestroy_v2")                       \
  X(cuMemAlloc, "cuMemAlloc_v2")                               \
  X(cuMemFree, "cuMemFree_v2")                                 \
  X(cuMemGetInfo, "cuMemGetInfo_v2")                           \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")                 \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")                 \
  X(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")                 \
  X(cuMemsetD8Async, "cuMemsetD8Async")                        \
  X(cuMemsetD16Async, "cuMemsetD16Async")                      \
  X(cuMemsetD32Async, "cuMemsetD32Async")                      \
  X(cuModuleLoadData, "cuModuleLoadData")                      \
  X(cuModuleUnload, "cuModuleUnload")                          \
  X(cuModuleGetFunction, "cuModuleGetFunction")                \
  X(cuFuncGetAttribute, "cuFuncGetAttribute")                  \
  X(cuLaunchKernel, "cuLaunchKernel")                          \
  X(cuCtxSynchronize, "cuCtxSynchronize")                      \
  X(cuStreamWaitEvent, "cuStreamWaitEvent")                    \
  X(cuStreamQuery, "cuStreamQuery")                            \
  X(cuEventRecord, "cuEventRecord")                            \
  X(cuEventQuery, "cuEventQuery")                              \
  X(cuEventSynchronize, "cuEventSynchronize")                  \
  X(cuLaunchHostFunc, "cuLaunchHostFunc")                      \
  X(cuMemHostAlloc, "cuMemHostAlloc")                          \
  X(cuMemFreeHost, "cuMemFreeHost")                            \
  X(cuMemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2") \
  X(cuPointerGetAttribute, "cuPointerGetAttribute")            \
  X(cuMemcpy3DAsync, "cuMemcpy3DAsync_v2")                     \
  X(cuArray3DCreate, "cuArray3DCreate_v2")                     \
  X(cuArrayDestroy, "cuArrayDestroy")                          \
  X(cuTexObjectCreate, "cuTexObjectCreate")                    \
  X(cuTexObjectDestroy, "cuTexObjectDestroy")                  \
  X(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer")            \
  X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess")            \
  X(cuMemcpyPeerAsync, "cuMemcpyPeerAsync")                    \
  X(cuMemAllocManaged, "cuMemAllocManaged")

// Functions newer than kMinDriverVersion: resolved where the driver has them, nullptr
// otherwise (the feature that needs one then reports that the driver is too old).
// cuStreamWaitValue32_v2 arrived with CUDA 11.7; user events need it.
#define GPIX_CUDA_OPTIONAL_FUNCTIONS(X) X(cuStreamWaitValue32, "cuStreamWaitValue32_v2")

struct Driver {
  DynLib lib;
  int version = 0;  // cuDriverGetVersion, e.g. 13000
  // Resolved first, before cuInit, so that a failing cuInit can be named.
  decltype(&::cuGetErrorName) cuGetErrorName = nullptr;
  decltype(&::cuInit) cuInit = nullptr;
  decltype(&::cuDriverGetVersion) cuDriverGetVersion = nullptr;
#define GPIX_CUDA_MEMBER(fn, sym) decltype(&::fn) fn = nullptr;
  GPIX_CUDA_DRIVER_FUNCTIONS(GPIX_CUDA_MEMBER)
  GPIX_CUDA_OPTIONAL_FUNCTIONS(GPIX_CUDA_MEMBER)
#undef GPIX_CUDA_MEMBER
};

// The process-wide driver, loaded and initialised (cuInit) on first use; nullptr with *why
// set to one line saying what is missing (no libcuda, cuInit failed, driver too old, a
// function missing). GPIX_CUDA_LIBRARY names the library file to load instead of searching.
const Driver* driver(std::string* why = nullptr);

// "CUDA_ERROR_ILLEGAL_ADDRESS" for 700. Known names come from a table (so they do not need
// the driver), others from cuGetErrorName where the driver is loaded, else "CUDA_ERROR(n)".
std::string error_name(CUresult code);

// "1.2" style text of a cuDriverGetVersion number: 12040 -> "12.4".
std::string version_text(int version);

// Throws OutOfMemory for CUDA_ERROR_OUT_OF_MEMORY, DeviceError otherwise, with code() set to
// the error's name and the message saying what was being done.
void check(CUresult code, std::string_view what);

}  // namespace gpix::detail::cuda
