/*===- fake_cuda_driver.h - What the stand-in driver records ---*- C -*-===*
 *
 * The stand-in libcuda.so.1 (fake_cuda_driver.c) keeps what libattnrt asked
 * of it; tests reach these functions with dlsym on the driver libattnrt
 * opened (dlopen of the same path with RTLD_NOLOAD).
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNC_TESTS_FAKE_CUDA_DRIVER_H
#define ATTNC_TESTS_FAKE_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

enum { FAKE_CUDA_MAX_PARAMS = 64 };

typedef struct fake_cuda_launch {
  char function[128];
  unsigned grid[3], block[3], shared_bytes;
  void *stream;
  int num_params; /* counted in the PTX's .entry */
  uint64_t params[FAKE_CUDA_MAX_PARAMS];
} fake_cuda_launch;

typedef struct fake_cuda_counts {
  int module_loads, module_unloads;
  int primary_retained; /* retains minus releases */
  int current_depth;    /* pushes minus pops */
  int synchronizations;
  int workspaces_live; /* cuMemAllocFromPoolAsync minus cuMemFreeAsync */
  size_t last_workspace_bytes;
  int pools_live;               /* cuMemPoolCreate minus cuMemPoolDestroy */
  uint64_t last_pool_threshold; /* its CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
  int allocations_off_pool;     /* workspaces from no pool the driver made */
  int launches;
  /* Stream order of the pool's memory: the stream of the last
   * cuMemAllocFromPoolAsync and of the last cuMemFreeAsync, and how many
   * launches had been queued when that free came. */
  void *last_allocation_stream, *last_free_stream;
  int launches_before_last_free;
  int pool_frees; /* cuMemFreeAsync of memory the driver gave */
} fake_cuda_counts;

/* Memory the driver counts as device `ordinal`'s. */
typedef void *(*fake_cuda_malloc_fn)(size_t bytes, int ordinal);
/* The counts so far, and launch `index` (null past the last). */
typedef const fake_cuda_counts *(*fake_cuda_counts_fn)(void);
typedef const fake_cuda_launch *(*fake_cuda_launch_fn)(int index);
/* Forgets the launches (the counts stay). */
typedef void (*fake_cuda_forget_fn)(void);

#endif /* ATTNC_TESTS_FAKE_CUDA_DRIVER_H */
