/*===- cuda_driver.h - The driver entry points the launcher calls -*- C -*-===*
 *
 * What cuda_driver.c resolves from libcuda.so.1 for cuda_launch.c, with the
 * driver API's types as cuda.h declares them (its ABI is stable): CUresult
 * an int, CUdevice an int, CUdeviceptr 64 bits, every handle a pointer.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNRT_CUDA_DRIVER_H
#define ATTNRT_CUDA_DRIVER_H

#include "internal.h"

typedef int cuda_result;       /* CUresult; 0 = CUDA_SUCCESS */
typedef uint64_t cuda_pointer; /* CUdeviceptr */

/* The values of cuda.h this runtime passes. */
enum {
  CUDA_DEVICE_COMPUTE_MAJOR = 75, /* CU_DEVICE_ATTRIBUTE_COMPUTE_... */
  CUDA_DEVICE_COMPUTE_MINOR = 76,
  CUDA_POINTER_MEMORY_TYPE = 2, /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */
  CUDA_POINTER_DEVICE_ORDINAL = 9,
  CUDA_MEMORY_HOST = 1, /* CU_MEMORYTYPE_HOST */
  CUDA_JIT_ERROR_LOG_BUFFER = 5,
  CUDA_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CUDA_MEM_ALLOCATION_PINNED = 1,    /* CU_MEM_ALLOCATION_TYPE_PINNED */
  CUDA_MEM_LOCATION_DEVICE = 1,      /* CU_MEM_LOCATION_TYPE_DEVICE */
  CUDA_MEMPOOL_RELEASE_THRESHOLD = 4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
};

/* CUmemPoolProps (88 bytes; the fields after the location zero). */
typedef struct cuda_pool_props {
  int allocation_type;
  int handle_types;
  int location_type;
  int location_id;
  void *win32_security_attributes;
  unsigned char reserved[64];
} cuda_pool_props;

typedef struct attnrt_cuda_api {
  cuda_result (*device_get)(int *device, int ordinal);
  cuda_result (*device_get_attribute)(int *value, int attribute, int device);
  cuda_result (*primary_context_retain)(void **context, int device);
  cuda_result (*primary_context_release)(int device);
  cuda_result (*context_push)(void *context);
  cuda_result (*context_pop)(void **context);
  cuda_result (*module_load)(void **module, const void *image,
                             unsigned int num_options, int *options,
                             void **values);
  cuda_result (*module_unload)(void *module);
  cuda_result (*module_function)(void **function, void *module,
                                 const char *name);
  cuda_result (*launch)(void *function, unsigned int grid_x,
                        unsigned int grid_y, unsigned int grid_z,
                        unsigned int block_x, unsigned int block_y,
                        unsigned int block_z, unsigned int shared_bytes,
                        void *stream, void **params, void **extra);
  cuda_result (*free_async)(cuda_pointer pointer, void *stream);
  cuda_result (*pool_create)(void **pool, const cuda_pool_props *props);
  cuda_result (*pool_set_attribute)(void *pool, int attribute, void *value);
  cuda_result (*pool_destroy)(void *pool);
  cuda_result (*allocate_from_pool)(cuda_pointer *pointer, size_t bytes,
                                    void *pool, void *stream);
  cuda_result (*stream_synchronize)(void *stream);
  cuda_result (*pointer_attribute)(void *value, int attribute,
                                   cuda_pointer pointer);
  cuda_result (*allocate)(cuda_pointer *pointer, size_t bytes);
  cuda_result (*free)(cuda_pointer pointer);
  cuda_result (*upload)(cuda_pointer device, const void *host, size_t bytes);
  cuda_result (*download)(void *host, cuda_pointer device, size_t bytes);
  cuda_result (*event_create)(void **event, unsigned int flags);
  cuda_result (*event_record)(void *event, void *stream);
  cuda_result (*event_synchronize)(void *event);
  cuda_result (*event_elapsed)(float *milliseconds, void *start, void *end);
  cuda_result (*event_destroy)(void *event);
} attnrt_cuda_api;

/* The driver's launcher entry points: ATTNRT_OK, or ATTNRT_UNAVAILABLE with
 * why in `problem` (no driver, or one without them). */
ATTNRT_HIDDEN attnrt_status attnrt_impl_cuda_api(const attnrt_cuda_api **api,
                                                 char *problem,
                                                 size_t capacity);

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)". */
ATTNRT_HIDDEN void attnrt_impl_cuda_describe(cuda_result error, char *out,
                                             size_t capacity);

#endif /* ATTNRT_CUDA_DRIVER_H */
