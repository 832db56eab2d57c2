/* A stand-in for libcuda.so.1 that fails the way real systems do, so that CI (which has no
 * NVIDIA driver) can check how gpix reports each failure. FAKE_CUDA_MODE picks one:
 *   no_device  cuInit returns CUDA_ERROR_NO_DEVICE (100), as on a machine without a GPU
 *   stub       cuInit returns CUDA_ERROR_STUB_LIBRARY (34), as the toolkit's stub library does
 *   old        the driver reports CUDA 10.2
 *   partial    cuInit succeeds but every other function is missing */
#include <stdlib.h>
#include <string.h>

static const char* mode(void) {
  const char* m = getenv("FAKE_CUDA_MODE");
  return m ? m : "no_device";
}

int cuDriverGetVersion(int* v) {
  *v = strcmp(mode(), "old") == 0 ? 10020 : 13000;
  return 0;
}

int cuInit(unsigned flags) {
  (void)flags;
  if (strcmp(mode(), "no_device") == 0) return 100;
  if (strcmp(mode(), "stub") == 0) return 34;
  return 0;
}

int cuGetErrorName(int code, const char** name) {
  (void)code;
  *name = NULL;
  return 1;
}
