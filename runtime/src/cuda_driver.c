/*===- cuda_driver.c - The CUDA driver, opened at run time ----------------===*
 *
 * libattnrt never links against CUDA: the driver (libcuda.so.1, installed
 * with NVIDIA's kernel module, not with the toolkit) is opened with dlopen
 * the first time something asks for it, so the library and every
 * application build, link and run CPU kernels on machines without it. What
 * the loader found (the driver, or why there is none) is decided once per
 * process and kept.
 *
 * ATTNRT_CUDA_DRIVER names another file to open instead (a driver outside
 * the loader's search path; the tests' stand-ins).
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cuda_driver {
  void *library;
  cuda_result (*init)(unsigned int flags);
  cuda_result (*driver_get_version)(int *version);
  cuda_result (*device_get_count)(int *count);
  cuda_result (*get_error_name)(cuda_result error, const char **name);
  cuda_result (*get_error_string)(cuda_result error, const char **text);
} cuda_driver;

static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static cuda_driver driver;
/* Empty when the driver loaded and initialised; else why not. */
static char driver_problem[512];
/* The launcher's entry points, and why not when the driver lacks one. */
static attnrt_cuda_api launcher;
static char launcher_problem[512];

/* What cuInit says most often, for drivers that cannot name their errors
 * (the toolkit's stub library fails those calls too). */
static const struct {
  cuda_result error;
  const char *name, *text;
} known_errors[] = {
    {34, "CUDA_ERROR_STUB_LIBRARY",
     "the CUDA toolkit's stub library, not NVIDIA's driver"},
    {35, "CUDA_ERROR_INSUFFICIENT_DRIVER",
     "the driver is older than the CUDA version it is asked for"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {999, "CUDA_ERROR_UNKNOWN", "an unknown internal error"},
};

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)", or the
 * number when neither the driver nor known_errors names it. */
void attnrt_impl_cuda_describe(cuda_result error, char *out, size_t capacity) {
  const char *name = NULL, *text = NULL;
  if (driver.get_error_name && driver.get_error_name(error, &name) != 0)
    name = NULL;
  if (driver.get_error_string && driver.get_error_string(error, &text) != 0)
    text = NULL;
  for (size_t i = 0; !name && i < sizeof known_errors / sizeof known_errors[0];
       ++i) {
    if (known_errors[i].error == error) {
      name = known_errors[i].name;
      text = known_errors[i].text;
    }
  }
  if (name && text)
    snprintf(out, capacity, "%s (%s)", name, text);
  else if (name)
    snprintf(out, capacity, "%s", name);
  else
    snprintf(out, capacity, "CUresult %d", error);
}

typedef struct symbol {
  const char *name;
  void **slot;
} symbol;

/* Looks every symbol up in the driver; the first one it lacks, or null. */
static const char *resolve(const symbol *symbols, size_t count) {
  const char *missing = NULL;
  for (size_t i = 0; i < count; ++i) {
    *symbols[i].slot = dlsym(driver.library, symbols[i].name);
    if (!*symbols[i].slot && !missing)
      missing = symbols[i].name;
  }
  return missing;
}

static void load_driver(void) {
  const char *path = getenv("ATTNRT_CUDA_DRIVER");
  if (!path || !*path)
    path = "libcuda.so.1";
  driver.library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!driver.library) {
    const char *why = dlerror();
    snprintf(driver_problem, sizeof driver_problem,
             "no CUDA driver: cannot open %s (%s); it comes with NVIDIA's "
             "GPU driver, not with the CUDA toolkit",
             path, why ? why : "unknown reason");
    return;
  }
  const symbol symbols[] = {
      {"cuInit", (void **)&driver.init},
      {"cuDriverGetVersion", (void **)&driver.driver_get_version},
      {"cuDeviceGetCount", (void **)&driver.device_get_count},
      {"cuGetErrorName", (void **)&driver.get_error_name},
      {"cuGetErrorString", (void **)&driver.get_error_string},
  };
  const char *missing = resolve(symbols, sizeof symbols / sizeof symbols[0]);
  if (missing) {
    snprintf(driver_problem, sizeof driver_problem,
             "the CUDA driver %s has no %s: it is not a CUDA driver, or "
             "one too old for libattnrt",
             path, missing);
    return;
  }
  /* The launcher's, by the names cuda.h maps its API to (_v2 where the
   * first version was replaced); looked for after the probe's, which a
   * driver too old for the launcher still answers. */
  const symbol launches[] = {
      {"cuDeviceGet", (void **)&launcher.device_get},
      {"cuDeviceGetAttribute", (void **)&launcher.device_get_attribute},
      {"cuDevicePrimaryCtxRetain", (void **)&launcher.primary_context_retain},
      {"cuDevicePrimaryCtxRelease_v2",
       (void **)&launcher.primary_context_release},
      {"cuCtxPushCurrent_v2", (void **)&launcher.context_push},
      {"cuCtxPopCurrent_v2", (void **)&launcher.context_pop},
      {"cuModuleLoadDataEx", (void **)&launcher.module_load},
      {"cuModuleUnload", (void **)&launcher.module_unload},
      {"cuModuleGetFunction", (void **)&launcher.module_function},
      {"cuLaunchKernel", (void **)&launcher.launch},
      {"cuMemFreeAsync", (void **)&launcher.free_async},
      {"cuMemPoolCreate", (void **)&launcher.pool_create},
      {"cuMemPoolSetAttribute", (void **)&launcher.pool_set_attribute},
      {"cuMemPoolDestroy", (void **)&launcher.pool_destroy},
      {"cuMemAllocFromPoolAsync", (void **)&launcher.allocate_from_pool},
      {"cuStreamSynchronize", (void **)&launcher.stream_synchronize},
      {"cuPointerGetAttribute", (void **)&launcher.pointer_attribute},
      {"cuMemAlloc_v2", (void **)&launcher.allocate},
      {"cuMemFree_v2", (void **)&launcher.free},
      {"cuMemcpyHtoD_v2", (void **)&launcher.upload},
      {"cuMemcpyDtoH_v2", (void **)&launcher.download},
      {"cuEventCreate", (void **)&launcher.event_create},
      {"cuEventRecord", (void **)&launcher.event_record},
      {"cuEventSynchronize", (void **)&launcher.event_synchronize},
      {"cuEventElapsedTime", (void **)&launcher.event_elapsed},
      {"cuEventDestroy_v2", (void **)&launcher.event_destroy},
  };
  missing = resolve(launches, sizeof launches / sizeof launches[0]);
  if (missing)
    snprintf(launcher_problem, sizeof launcher_problem,
             "the CUDA driver %s has no %s: libattnrt launches kernels "
             "with a driver of CUDA 11.2 or later",
             path, missing);
  cuda_result result = driver.init(0);
  if (result != 0) {
    char reason[256];
    attnrt_impl_cuda_describe(result, reason, sizeof reason);
    snprintf(driver_problem, sizeof driver_problem,
             "the CUDA driver %s did not start: cuInit failed with %s", path,
             reason);
  }
}

ATTNRT_HIDDEN attnrt_status attnrt_impl_cuda_driver(char *problem,
                                                    size_t capacity) {
  pthread_once(&driver_once, load_driver);
  if (driver_problem[0]) {
    if (capacity > 0)
      snprintf(problem, capacity, "%s", driver_problem);
    return ATTNRT_UNAVAILABLE;
  }
  if (capacity > 0)
    problem[0] = '\0';
  return ATTNRT_OK;
}

attnrt_status attnrt_impl_cuda_api(const attnrt_cuda_api **api, char *problem,
                                   size_t capacity) {
  *api = NULL;
  attnrt_status status = attnrt_impl_cuda_driver(problem, capacity);
  if (status != ATTNRT_OK)
    return status;
  if (launcher_problem[0]) {
    if (capacity > 0)
      snprintf(problem, capacity, "%s", launcher_problem);
    return ATTNRT_UNAVAILABLE;
  }
  *api = &launcher;
  return ATTNRT_OK;
}

attnrt_status attnrt_device_count(attnrt_device_kind kind, int32_t *out_count,
                                  char *message, size_t message_capacity) {
  char scratch[1];
  if (!message) {
    message = scratch;
    message_capacity = sizeof scratch;
  }
  if (message_capacity > 0)
    message[0] = '\0';
  if (!out_count) {
    snprintf(message, message_capacity, "out_count is null");
    return ATTNRT_INVALID_ARGUMENT;
  }
  *out_count = 0;
  switch (kind) {
  case ATTNRT_DEVICE_CPU:
    *out_count = 1;
    return ATTNRT_OK;
  case ATTNRT_DEVICE_CUDA: {
    attnrt_status status = attnrt_impl_cuda_driver(message, message_capacity);
    if (status != ATTNRT_OK)
      return status;
    int count = 0;
    cuda_result result = driver.device_get_count(&count);
    if (result != 0) {
      char reason[256];
      attnrt_impl_cuda_describe(result, reason, sizeof reason);
      snprintf(message, message_capacity, "cuDeviceGetCount failed with %s",
               reason);
      return ATTNRT_UNAVAILABLE;
    }
    *out_count = count;
    return ATTNRT_OK;
  }
  }
  snprintf(message, message_capacity, "unknown device kind %d", (int)kind);
  return ATTNRT_INVALID_ARGUMENT;
}
