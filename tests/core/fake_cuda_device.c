/* A host-memory stand-in for libcuda.so.1 with one device, so that CI (no NVIDIA driver) runs
 * the CUDA backend's own logic: allocation and out-of-memory, transfers with offsets, 1/2/4-byte
 * memsets, the fill_u64 kernel's launch and arguments, module and kernel lookup, and the
 * context discipline (every call that needs a context fails with CUDA_ERROR_INVALID_CONTEXT
 * unless one was pushed, and pushes and pops must balance). Kernels other than fill_u64 fail
 * with CUDA_ERROR_NOT_SUPPORTED: it runs no GPU code. Single-threaded use only. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
enum {
  OK = 0,
  INVALID_VALUE = 1,
  OUT_OF_MEMORY = 2,
  INVALID_CONTEXT = 201,
  NOT_FOUND = 500,
  NOT_SUPPORTED = 801
};

#define TOTAL_BYTES (256u << 20)
static const uintptr_t kContext = 0xc0;
static int g_depth, g_retains, g_streams, g_modules;
static size_t g_allocated;

/* For the test: the state it checks after each operation. */
void fake_cuda_state(int* depth, int* retains, size_t* allocated, int* streams, int* modules) {
  *depth = g_depth;
  *retains = g_retains;
  *allocated = g_allocated;
  *streams = g_streams;
  *modules = g_modules;
}

#define NEED_CONTEXT \
  if (g_depth == 0) return INVALID_CONTEXT

CUresult cuDriverGetVersion(int* v) {
  *v = 13000;
  return OK;
}
CUresult cuInit(unsigned flags) {
  return flags == 0 ? OK : INVALID_VALUE;
}
CUresult cuGetErrorName(int code, const char** name) {
  (void)code;
  *name = NULL;
  return INVALID_VALUE;
}
CUresult cuDeviceGetCount(int* n) {
  *n = 1;
  return OK;
}
CUresult cuDeviceGet(int* d, int ordinal) {
  if (ordinal != 0) return 101;
  *d = 0;
  return OK;
}
CUresult cuDeviceGetName(char* name, int len, int dev) {
  (void)dev;
  strncpy(name, "gpix fake CUDA device", (size_t)len);
  return OK;
}
CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
  (void)dev;
  switch (attr) {
    case 1:
      *v = 1024;
      return OK; /* MAX_THREADS_PER_BLOCK */
    case 8:
      *v = 49152;
      return OK; /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 16:
      *v = 4;
      return OK; /* MULTIPROCESSOR_COUNT */
    case 75:
      *v = 9;
      return OK; /* COMPUTE_CAPABILITY_MAJOR */
    case 76:
      *v = 0;
      return OK; /* COMPUTE_CAPABILITY_MINOR */
    default:
      return INVALID_VALUE;
  }
}
CUresult cuDeviceTotalMem_v2(size_t* bytes, int dev) {
  (void)dev;
  *bytes = TOTAL_BYTES;
  return OK;
}
CUresult cuDevicePrimaryCtxRetain(void** ctx, int dev) {
  (void)dev;
  ++g_retains;
  *ctx = (void*)kContext;
  return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  (void)dev;
  if (g_retains == 0) return INVALID_CONTEXT;
  --g_retains;
  return OK;
}
CUresult cuCtxPushCurrent_v2(void* ctx) {
  if ((uintptr_t)ctx != kContext || g_retains == 0) return INVALID_CONTEXT;
  ++g_depth;
  return OK;
}
CUresult cuCtxPopCurrent_v2(void** ctx) {
  NEED_CONTEXT;
  --g_depth;
  if (ctx) *ctx = (void*)kContext;
  return OK;
}
CUresult cuStreamCreate(void** s, unsigned flags) {
  NEED_CONTEXT;
  if (flags != 1) return INVALID_VALUE;
  ++g_streams;
  *s = (void*)0x5;
  return OK;
}
CUresult cuStreamDestroy_v2(void* s) {
  NEED_CONTEXT;
  (void)s;
  --g_streams;
  return OK;
}
CUresult cuStreamSynchronize(void* s) {
  NEED_CONTEXT;
  return s == (void*)0x5 ? OK : INVALID_VALUE;
}
CUresult cuEventCreate(void** e, unsigned flags) {
  (void)e;
  (void)flags;
  return NOT_SUPPORTED;
}
CUresult cuEventDestroy_v2(void* e) {
  (void)e;
  return NOT_SUPPORTED;
}

/* Allocations carry their size in a 16-byte header. */
CUresult cuMemAlloc_v2(uint64_t* p, size_t n) {
  NEED_CONTEXT;
  if (n == 0) return INVALID_VALUE;
  if (n > TOTAL_BYTES - g_allocated) return OUT_OF_MEMORY;
  unsigned char* m = malloc(n + 16);
  if (!m) return OUT_OF_MEMORY;
  memcpy(m, &n, sizeof n);
  memset(m + 16, 0xa5, n); /* poison: never zero by accident */
  g_allocated += n;
  *p = (uint64_t)(uintptr_t)(m + 16);
  return OK;
}
CUresult cuMemFree_v2(uint64_t p) {
  NEED_CONTEXT;
  unsigned char* m = (unsigned char*)(uintptr_t)p - 16;
  size_t n;
  memcpy(&n, m, sizeof n);
  g_allocated -= n;
  free(m);
  return OK;
}
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  NEED_CONTEXT;
  *free_bytes = TOTAL_BYTES - g_allocated;
  *total = TOTAL_BYTES;
  return OK;
}
CUresult cuMemcpyHtoDAsync_v2(uint64_t dst, const void* src, size_t n, void* s) {
  NEED_CONTEXT;
  (void)s;
  memcpy((void*)(uintptr_t)dst, src, n);
  return OK;
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, uint64_t src, size_t n, void* s) {
  NEED_CONTEXT;
  (void)s;
  memcpy(dst, (const void*)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t n, void* s) {
  NEED_CONTEXT;
  (void)s;
  memmove((void*)(uintptr_t)dst, (const void*)(uintptr_t)src, n);
  return OK;
}
CUresult cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void* s) {
  NEED_CONTEXT;
  (void)s;
  memset((void*)(uintptr_t)dst, v, n);
  return OK;
}
CUresult cuMemsetD16Async(uint64_t dst, unsigned short v, size_t n, void* s) {
  NEED_CONTEXT;
  (void)s;
  if (dst % 2) return INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) ((unsigned short*)(uintptr_t)dst)[i] = v;
  return OK;
}
CUresult cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void* s) {
  NEED_CONTEXT;
  (void)s;
  if (dst % 4) return INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) ((unsigned*)(uintptr_t)dst)[i] = v;
  return OK;
}

/* Modules: any image is accepted; two kernel names are known. */
static const char* const kKernels[] = {"fill_u64", "stats_partial"};
CUresult cuModuleLoadData(void** m, const void* image) {
  NEED_CONTEXT;
  if (!image) return INVALID_VALUE;
  ++g_modules;
  *m = (void*)0x3;
  return OK;
}
CUresult cuModuleUnload(void* m) {
  NEED_CONTEXT;
  (void)m;
  --g_modules;
  return OK;
}
CUresult cuModuleGetFunction(void** f, void* m, const char* name) {
  NEED_CONTEXT;
  (void)m;
  for (size_t i = 0; i < sizeof kKernels / sizeof kKernels[0]; ++i) {
    if (strcmp(name, kKernels[i]) == 0) {
      *f = (void*)&kKernels[i];
      return OK;
    }
  }
  return NOT_FOUND;
}
CUresult cuFuncGetAttribute(int* v, int attr, void* f) {
  (void)f;
  if (attr != 0) return INVALID_VALUE;
  *v = 1024;
  return OK;
}
CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, void* s, void** params, void** extra) {
  NEED_CONTEXT;
  (void)s;
  if (!gx || !gy || !gz || !bx || !by || !bz || (size_t)bx * by * bz > 1024 || shared || extra)
    return INVALID_VALUE;
  if (f != (void*)&kKernels[0]) return NOT_SUPPORTED;
  /* fill_u64(gpix_u64* out, gpix_index n, gpix_u64 value) */
  uint64_t out, n, value;
  memcpy(&out, params[0], 8);
  memcpy(&n, params[1], 8);
  memcpy(&value, params[2], 8);
  if (out % 8) return 716; /* CUDA_ERROR_MISALIGNED_ADDRESS */
  for (uint64_t i = 0; i < n; ++i) ((uint64_t*)(uintptr_t)out)[i] = value;
  return OK;
}
