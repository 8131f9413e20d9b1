/*===- fake_cuda_driver.c - A stand-in for libcuda.so.1 in tests ----------===*
 *
 * The entry points libattnrt's driver loader resolves, behaving as the
 * environment says: FAKE_CUDA_INIT is what cuInit returns (default 0,
 * CUDA_SUCCESS), FAKE_CUDA_DEVICES what cuDeviceGetCount counts (default 2).
 * Built a second time with FAKE_CUDA_PARTIAL, lacking cuDeviceGetCount, as
 * a library that is not (or not enough of) a CUDA driver would.
 *
 *===----------------------------------------------------------------------===*/

#include <stdlib.h>

int cuInit(unsigned int flags);
int cuDriverGetVersion(int *version);
int cuDeviceGetCount(int *count);
int cuGetErrorName(int error, const char **name);
int cuGetErrorString(int error, const char **text);

int cuInit(unsigned int flags) {
  const char *result = getenv("FAKE_CUDA_INIT");
  return flags == 0 && result ? atoi(result) : 0;
}

int cuDriverGetVersion(int *version) {
  *version = 13000;
  return 0;
}

#ifndef FAKE_CUDA_PARTIAL
int cuDeviceGetCount(int *count) {
  const char *devices = getenv("FAKE_CUDA_DEVICES");
  *count = devices ? atoi(devices) : 2;
  return 0;
}
#endif

int cuGetErrorName(int error, const char **name) {
  switch (error) {
  case 0:
    *name = "CUDA_SUCCESS";
    return 0;
  case 100:
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  default:
    *name = NULL;
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  }
}

int cuGetErrorString(int error, const char **text) {
  *text = error == 100 ? "no CUDA-capable device is detected" : NULL;
  return *text ? 0 : 1;
}
