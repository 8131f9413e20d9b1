/*===- fake_cuda_driver.c - A stand-in for libcuda.so.1 in tests ----------===*
 *
 * The entry points libattnrt's driver loader resolves, behaving as the
 * environment says, read at each call: FAKE_CUDA_INIT is what cuInit
 * returns (default 0, CUDA_SUCCESS), FAKE_CUDA_DEVICES what
 * cuDeviceGetCount counts (default 2), FAKE_CUDA_COMPUTE each device's
 * compute capability (default 90), FAKE_CUDA_JIT_ERROR set makes
 * cuModuleLoadDataEx refuse the PTX, FAKE_CUDA_POOL_LIMIT makes
 * cuMemAllocFromPoolAsync fail (out of memory) for more bytes than it says,
 * FAKE_CUDA_LAUNCH_ERROR makes cuLaunchKernel fail (invalid value) for the
 * function it names. Launches run nothing: they are
 * recorded (fake_cuda_driver.h), with each function's parameter count read
 * from the PTX. Built a second time with FAKE_CUDA_PARTIAL, lacking
 * cuDeviceGetCount, as a library that is not (or not enough of) a CUDA
 * driver would, and a third time with FAKE_CUDA_PROBE_ONLY, with the
 * probe's entry points only (a driver too old to launch).
 *
 *===----------------------------------------------------------------------===*/

#include "fake_cuda_driver.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_NOT_FOUND = 500
};

static int env(const char *name, int otherwise) {
  const char *value = getenv(name);
  return value && *value ? atoi(value) : otherwise;
}

EXPORT int cuInit(unsigned int flags) {
  return flags == 0 ? env("FAKE_CUDA_INIT", 0) : CUDA_ERROR_INVALID_VALUE;
}

EXPORT int cuDriverGetVersion(int *version) {
  *version = 13000;
  return 0;
}

#ifndef FAKE_CUDA_PARTIAL
EXPORT int cuDeviceGetCount(int *count) {
  *count = env("FAKE_CUDA_DEVICES", 2);
  return 0;
}
#endif

EXPORT int cuGetErrorName(int error, const char **name) {
  switch (error) {
  case CUDA_SUCCESS:
    *name = "CUDA_SUCCESS";
    return 0;
  case CUDA_ERROR_INVALID_VALUE:
    *name = "CUDA_ERROR_INVALID_VALUE";
    return 0;
  case CUDA_ERROR_OUT_OF_MEMORY:
    *name = "CUDA_ERROR_OUT_OF_MEMORY";
    return 0;
  case CUDA_ERROR_NO_DEVICE:
    *name = "CUDA_ERROR_NO_DEVICE";
    return 0;
  case CUDA_ERROR_INVALID_DEVICE:
    *name = "CUDA_ERROR_INVALID_DEVICE";
    return 0;
  case CUDA_ERROR_INVALID_PTX:
    *name = "CUDA_ERROR_INVALID_PTX";
    return 0;
  case CUDA_ERROR_NOT_FOUND:
    *name = "CUDA_ERROR_NOT_FOUND";
    return 0;
  default:
    *name = NULL;
    return CUDA_ERROR_INVALID_VALUE;
  }
}

EXPORT int cuGetErrorString(int error, const char **text) {
  *text = error == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected"
                                        : NULL;
  return *text ? 0 : CUDA_ERROR_INVALID_VALUE;
}

#if !defined(FAKE_CUDA_PARTIAL) && !defined(FAKE_CUDA_PROBE_ONLY)

/* Everything below under one lock: libattnrt may call from many threads. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static fake_cuda_counts counts;
enum { MAX_LAUNCHES = 256, MAX_FUNCTIONS = 64, MAX_ALLOCATIONS = 256 };
static fake_cuda_launch launches[MAX_LAUNCHES];

typedef struct function {
  char name[128];
  int num_params;
} function;
static function functions[MAX_FUNCTIONS];
static int num_functions;

static struct {
  char *start;
  size_t bytes;
  int ordinal;
} allocations[MAX_ALLOCATIONS];

static int primary_context; /* what a CUcontext points at */

EXPORT int cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= env("FAKE_CUDA_DEVICES", 2))
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return 0;
}

EXPORT int cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  int compute = env("FAKE_CUDA_COMPUTE", 90);
  if (attribute == 75) /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
    *value = compute / 10;
  else if (attribute == 76)
    *value = compute % 10;
  else
    return CUDA_ERROR_INVALID_VALUE;
  return 0;
}

EXPORT int cuDevicePrimaryCtxRetain(void **context, int device) {
  (void)device;
  pthread_mutex_lock(&lock);
  ++counts.primary_retained;
  pthread_mutex_unlock(&lock);
  *context = &primary_context;
  return 0;
}

EXPORT int cuDevicePrimaryCtxRelease_v2(int device) {
  (void)device;
  pthread_mutex_lock(&lock);
  --counts.primary_retained;
  pthread_mutex_unlock(&lock);
  return 0;
}

/* The depth of pushes is per thread in CUDA; counted over all here, which
 * the tests, one thread at a time, do not mind. */
EXPORT int cuCtxPushCurrent_v2(void *context) {
  if (context != &primary_context)
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  ++counts.current_depth;
  pthread_mutex_unlock(&lock);
  return 0;
}

EXPORT int cuCtxPopCurrent_v2(void **context) {
  pthread_mutex_lock(&lock);
  --counts.current_depth;
  pthread_mutex_unlock(&lock);
  if (context)
    *context = &primary_context;
  return 0;
}

EXPORT int cuModuleLoadDataEx(void **module, const void *image,
                              unsigned int num_options, int *options,
                              void **values) {
  if (getenv("FAKE_CUDA_JIT_ERROR")) {
    for (unsigned int i = 0; i < num_options; ++i)
      if (options[i] == 5) /* CU_JIT_ERROR_LOG_BUFFER */
        strcpy((char *)values[i], "ptxas fatal   : fake JIT failure");
    return CUDA_ERROR_INVALID_PTX;
  }
  if (!strstr((const char *)image, ".version"))
    return CUDA_ERROR_INVALID_PTX;
  pthread_mutex_lock(&lock);
  ++counts.module_loads;
  pthread_mutex_unlock(&lock);
  *module = (void *)image;
  return 0;
}

EXPORT int cuModuleUnload(void *module) {
  (void)module;
  pthread_mutex_lock(&lock);
  ++counts.module_unloads;
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Finds ".entry NAME(" in the PTX and counts its .param lines. */
EXPORT int cuModuleGetFunction(void **handle, void *module, const char *name) {
  char pattern[160];
  size_t length = strlen(name);
  if (length + 9 >= sizeof pattern)
    return CUDA_ERROR_NOT_FOUND;
  memcpy(pattern, ".entry ", 7);
  memcpy(pattern + 7, name, length);
  memcpy(pattern + 7 + length, "(", 2);
  const char *entry = strstr((const char *)module, pattern);
  if (!entry)
    return CUDA_ERROR_NOT_FOUND;
  const char *end = strchr(entry, ')');
  int params = 0;
  for (const char *p = strstr(entry, ".param"); p && end && p < end;
       p = strstr(p + 1, ".param"))
    ++params;
  pthread_mutex_lock(&lock);
  function *found = NULL;
  for (int i = 0; i < num_functions && !found; ++i)
    if (strcmp(functions[i].name, name) == 0)
      found = &functions[i];
  if (!found && num_functions < MAX_FUNCTIONS) {
    found = &functions[num_functions++];
    strcpy(found->name, name);
    found->num_params = params;
  }
  pthread_mutex_unlock(&lock);
  if (!found)
    return CUDA_ERROR_INVALID_VALUE;
  *handle = found;
  return 0;
}

EXPORT int cuLaunchKernel(void *handle, unsigned grid_x, unsigned grid_y,
                          unsigned grid_z, unsigned block_x, unsigned block_y,
                          unsigned block_z, unsigned shared_bytes, void *stream,
                          void **params, void **extra) {
  const function *f = handle;
  const char *failing = getenv("FAKE_CUDA_LAUNCH_ERROR");
  if (!f || extra || grid_x == 0 || grid_y == 0 || grid_z == 0 ||
      (failing && strcmp(failing, f->name) == 0))
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  if (counts.launches < MAX_LAUNCHES) {
    fake_cuda_launch *launch = &launches[counts.launches];
    memset(launch, 0, sizeof *launch);
    strcpy(launch->function, f->name);
    launch->grid[0] = grid_x;
    launch->grid[1] = grid_y;
    launch->grid[2] = grid_z;
    launch->block[0] = block_x;
    launch->block[1] = block_y;
    launch->block[2] = block_z;
    launch->shared_bytes = shared_bytes;
    launch->stream = stream;
    launch->num_params = f->num_params;
    for (int p = 0; p < f->num_params && p < FAKE_CUDA_MAX_PARAMS; ++p)
      memcpy(&launch->params[p], params[p], sizeof(uint64_t));
  }
  ++counts.launches;
  pthread_mutex_unlock(&lock);
  return 0;
}

static void *remember(size_t bytes, int ordinal) {
  char *start = malloc(bytes ? bytes : 1);
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < MAX_ALLOCATIONS && allocations[i].start)
    ++i;
  if (i < MAX_ALLOCATIONS && start) {
    allocations[i].start = start;
    allocations[i].bytes = bytes;
    allocations[i].ordinal = ordinal;
  } else {
    free(start);
    start = NULL;
  }
  pthread_mutex_unlock(&lock);
  return start;
}

/* The allocation holding [address, address + bytes), or -1. Under `lock`. */
static int allocation_of(const char *address, size_t bytes) {
  for (int i = 0; i < MAX_ALLOCATIONS; ++i)
    if (allocations[i].start && address >= allocations[i].start &&
        address + bytes <= allocations[i].start + allocations[i].bytes)
      return i;
  return -1;
}

/* Frees the allocation that starts at `pointer`: 1 if there was one. */
static int forget(uint64_t pointer) {
  int found = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < MAX_ALLOCATIONS; ++i)
    if (allocations[i].start == (char *)(uintptr_t)pointer) {
      free(allocations[i].start);
      allocations[i].start = NULL;
      found = 1;
    }
  pthread_mutex_unlock(&lock);
  return found;
}

/* Pools are numbered handles; the workspace remembers nothing of its pool
 * but counts allocations from a handle this driver never made. */
static int pools_made;

EXPORT int cuMemPoolCreate(void **pool, const int *props) {
  /* CUmemPoolProps: pinned (1) on a device (1). */
  if (props[0] != 1 || props[2] != 1 || props[3] < 0)
    return 1; /* CUDA_ERROR_INVALID_VALUE */
  pthread_mutex_lock(&lock);
  ++counts.pools_live;
  *pool = (void *)(uintptr_t)(0x9001 + pools_made++);
  pthread_mutex_unlock(&lock);
  return 0;
}

EXPORT int cuMemPoolSetAttribute(void *pool, int attribute, void *value) {
  (void)pool;
  if (attribute != 4) /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
    return 1;
  pthread_mutex_lock(&lock);
  counts.last_pool_threshold = *(uint64_t *)value;
  pthread_mutex_unlock(&lock);
  return 0;
}

EXPORT int cuMemPoolDestroy(void *pool) {
  (void)pool;
  pthread_mutex_lock(&lock);
  --counts.pools_live;
  pthread_mutex_unlock(&lock);
  return 0;
}

EXPORT int cuMemAllocFromPoolAsync(uint64_t *pointer, size_t bytes, void *pool,
                                   void *stream) {
  const char *limit = getenv("FAKE_CUDA_POOL_LIMIT");
  if (limit && *limit && bytes > (size_t)atoll(limit))
    return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t handle = (uintptr_t)pool;
  if (handle < 0x9001 || handle >= 0x9001 + (uintptr_t)pools_made) {
    pthread_mutex_lock(&lock);
    ++counts.allocations_off_pool;
    pthread_mutex_unlock(&lock);
  }
  void *start = remember(bytes, 0);
  if (!start)
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  pthread_mutex_lock(&lock);
  ++counts.workspaces_live;
  counts.last_workspace_bytes = bytes;
  counts.last_allocation_stream = stream;
  pthread_mutex_unlock(&lock);
  *pointer = (uint64_t)(uintptr_t)start;
  return 0;
}

EXPORT int cuMemFreeAsync(uint64_t pointer, void *stream) {
  if (forget(pointer)) {
    pthread_mutex_lock(&lock);
    --counts.workspaces_live;
    ++counts.pool_frees;
    counts.last_free_stream = stream;
    counts.launches_before_last_free = counts.launches;
    pthread_mutex_unlock(&lock);
  }
  return 0;
}

EXPORT int cuStreamSynchronize(void *stream) {
  (void)stream;
  pthread_mutex_lock(&lock);
  ++counts.synchronizations;
  pthread_mutex_unlock(&lock);
  return 0;
}

EXPORT int cuPointerGetAttribute(void *value, int attribute, uint64_t pointer) {
  if (attribute != 9) /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
    return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&lock);
  int i = allocation_of((const char *)(uintptr_t)pointer, 1);
  if (i >= 0)
    *(int *)value = allocations[i].ordinal;
  pthread_mutex_unlock(&lock);
  return i >= 0 ? 0 : CUDA_ERROR_INVALID_VALUE;
}

EXPORT int cuMemAlloc_v2(uint64_t *pointer, size_t bytes) {
  void *start = bytes ? remember(bytes, 0) : NULL;
  if (!start)
    return bytes ? 2 /* CUDA_ERROR_OUT_OF_MEMORY */ : CUDA_ERROR_INVALID_VALUE;
  *pointer = (uint64_t)(uintptr_t)start;
  return 0;
}

EXPORT int cuMemFree_v2(uint64_t pointer) {
  return forget(pointer) ? 0 : CUDA_ERROR_INVALID_VALUE;
}

/* Copies within an allocation only, as the driver checks. */
static int copy(char *destination, const char *source, size_t bytes,
                const char *device) {
  pthread_mutex_lock(&lock);
  int inside = allocation_of(device, bytes) >= 0;
  pthread_mutex_unlock(&lock);
  if (!inside)
    return CUDA_ERROR_INVALID_VALUE;
  memcpy(destination, source, bytes);
  return 0;
}

EXPORT int cuMemcpyHtoD_v2(uint64_t device, const void *host, size_t bytes) {
  char *to = (char *)(uintptr_t)device;
  return copy(to, host, bytes, to);
}

EXPORT int cuMemcpyDtoH_v2(void *host, uint64_t device, size_t bytes) {
  const char *from = (const char *)(uintptr_t)device;
  return copy(host, from, bytes, from);
}

/* An event's time: the number of launches when it was recorded, each
 * launch taking 0.25 ms. */
EXPORT int cuEventCreate(void **event, unsigned int flags) {
  (void)flags;
  *event = calloc(1, sizeof(int));
  return *event ? 0 : 2;
}

EXPORT int cuEventRecord(void *event, void *stream) {
  (void)stream;
  pthread_mutex_lock(&lock);
  *(int *)event = counts.launches;
  pthread_mutex_unlock(&lock);
  return 0;
}

EXPORT int cuEventSynchronize(void *event) {
  (void)event;
  return 0;
}

EXPORT int cuEventElapsedTime(float *milliseconds, void *start, void *end) {
  *milliseconds = 0.25f * (float)(*(int *)end - *(int *)start);
  return 0;
}

EXPORT int cuEventDestroy_v2(void *event) {
  free(event);
  return 0;
}

/* The tests' side (fake_cuda_driver.h). */
EXPORT void *fake_cuda_malloc(size_t bytes, int ordinal) {
  return remember(bytes, ordinal);
}

EXPORT const fake_cuda_counts *fake_cuda_get_counts(void) { return &counts; }

EXPORT const fake_cuda_launch *fake_cuda_get_launch(int index) {
  return index >= 0 && index < counts.launches && index < MAX_LAUNCHES
             ? &launches[index]
             : NULL;
}

EXPORT void fake_cuda_forget(void) {
  pthread_mutex_lock(&lock);
  counts.launches = 0;
  pthread_mutex_unlock(&lock);
}

#endif /* !FAKE_CUDA_PARTIAL && !FAKE_CUDA_PROBE_ONLY */
