/*===- internal.h - Private state shared by the libattnrt sources -*- C -*-===*
 *
 * Nothing here is part of the C API (attnc/attnrt.h). Functions shared
 * between the sources carry the attnrt_impl_ prefix and hidden visibility;
 * the shared library exports only the functions of the header.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNRT_INTERNAL_H
#define ATTNRT_INTERNAL_H

#include "attnc/attnrt.h"

#include <pthread.h>
#include <pthreadpool.h>
#include <stdarg.h>
#include <stdatomic.h>

#if defined(__GNUC__)
#define ATTNRT_HIDDEN __attribute__((visibility("hidden")))
#define ATTNRT_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define ATTNRT_HIDDEN
#define ATTNRT_PRINTF(fmt, args)
#endif

/* Bytes of attnrt_context_last_error; longer messages are cut short. */
#define ATTNRT_MESSAGE_CAPACITY 1024

/* Descriptors a context remembers as validated, so that repeated invokes of
 * a kernel check its arguments only (beyond, a descriptor is checked on
 * every call, which is correct, only slower). */
#define ATTNRT_VALIDATED_CAPACITY 64

/* Alignment of attnrt_allocate blocks. */
#define ATTNRT_ALLOCATION_ALIGNMENT 64

/* The alignment the context struct and the registry ask the allocator for
 * (a cache line: the scratch lock and the validated table are hot). */
#define ATTNRT_CONTEXT_ALIGNMENT 64

/* One scratch block of attnrt_allocate; the caller's bytes start
 * ATTNRT_ALLOCATION_ALIGNMENT bytes after it. */
typedef struct attnrt_block {
  struct attnrt_block *next;
  size_t capacity; /* the caller's bytes it holds */
} attnrt_block;

struct attnrt_context {
  pthreadpool_t pool; /* null when threads == 1: everything runs inline */
  int owns_pool;      /* 0: the caller's (attnrt_context_options) */
  size_t threads;
  attnrt_allocator allocator;    /* never with null functions */
  const attnrt_kernel **kernels; /* registry, in registration order */
  size_t num_kernels;
  size_t kernel_capacity;
  /* Scratch blocks of ended invocations, by capacity ascending, for the
   * next attnrt_allocate: invokes on one context may run concurrently, so
   * the list is under a lock (statically initialized: it allocates
   * nothing). */
  pthread_mutex_t cache_lock;
  attnrt_block *cache;
  /* Descriptors that passed attnrt_impl_check_descriptor: filled once each,
   * lock-free, by whichever thread validates first. */
  _Atomic(const attnrt_kernel *) validated[ATTNRT_VALIDATED_CAPACITY];
  /* Where CUDA kernels run (attnrt_context_create_on_device), and the
   * driver state the first CUDA invoke sets up (cuda_launch.c). */
  attnrt_device_kind device_kind;
  int32_t device_ordinal;
  pthread_mutex_t cuda_lock;
  struct attnrt_cuda_state *cuda;
};

/* What the entry of a CUDA kernel works with (cuda_launch.c). */
struct attnrt_cuda_invocation;

struct attnrt_invocation {
  attnrt_context *context;        /* its allocator and scratch cache */
  pthreadpool_t pool;             /* null: run parallel_for inline */
  _Atomic(attnrt_block *) blocks; /* pushed lock-free, cached at the end */
  atomic_int in_parallel_for;     /* nested parallel_for runs inline */
  /* In the entry of a CUDA kernel: its device, functions, stream and
   * device allocations; null in a CPU kernel's entry. */
  struct attnrt_cuda_invocation *cuda;
};

/* Replaces the calling thread's last error on `context` with the formatted
 * message (per thread, so that threads sharing a context never read each
 * other's). */
ATTNRT_HIDDEN void attnrt_impl_set_error(const attnrt_context *context,
                                         const char *format, ...)
    ATTNRT_PRINTF(2, 3);

/* Memory from the context's allocator: null when out of memory (or for a
 * size no object may have). `alignment`: a power of two, at most 4096. */
ATTNRT_HIDDEN void *attnrt_impl_allocate(const attnrt_context *context,
                                         size_t bytes, size_t alignment);
ATTNRT_HIDDEN void attnrt_impl_release(const attnrt_context *context,
                                       void *pointer);

/* Sets up and tears down an invocation on `context` (its scratch blocks go
 * back to the context's cache). */
ATTNRT_HIDDEN void attnrt_impl_invocation_begin(attnrt_invocation *invocation,
                                                attnrt_context *context);
ATTNRT_HIDDEN void attnrt_impl_invocation_end(attnrt_invocation *invocation);

/* What an entry's return value means (invoke.c): ATTNRT_OK, else its status
 * with the context's error set ("kernel K failed: ...") unless `reported`
 * (a runtime service the entry called already said why); a value that is
 * no attnrt_status is ATTNRT_INTERNAL. */
ATTNRT_HIDDEN attnrt_status attnrt_impl_entry_status(
    const attnrt_context *context, const attnrt_kernel *kernel, int32_t result,
    int reported);

/* Releases every cached scratch block to the context's allocator. */
ATTNRT_HIDDEN void attnrt_impl_release_cache(attnrt_context *context);

/* Checks a descriptor's own consistency; on a problem sets the context's
 * error and returns ATTNRT_INVALID_ARGUMENT. */
ATTNRT_HIDDEN attnrt_status attnrt_impl_check_descriptor(
    const attnrt_context *context, const attnrt_kernel *kernel);

/* attnrt_impl_check_descriptor once per descriptor and context: later calls
 * with a descriptor that passed return ATTNRT_OK at once. */
ATTNRT_HIDDEN attnrt_status
attnrt_impl_validate_once(attnrt_context *context, const attnrt_kernel *kernel);

/* Opens the CUDA driver once per process (cuda_driver.c): ATTNRT_OK, or
 * ATTNRT_UNAVAILABLE with why in `problem` (cut to `capacity` bytes). */
ATTNRT_HIDDEN attnrt_status attnrt_impl_cuda_driver(char *problem,
                                                    size_t capacity);

/* Argument `argument` of a kernel: its inputs, then its outputs. */
ATTNRT_HIDDEN const attnrt_arg_info *
attnrt_impl_arg_info(const attnrt_kernel *kernel, size_t argument);

/* Bytes of attnrt_impl_arg_label's text. */
#define ATTNRT_LABEL_CAPACITY 160

/* "input q", or "input 2" for an unnamed argument, into `out`
 * (ATTNRT_LABEL_CAPACITY bytes). */
ATTNRT_HIDDEN void attnrt_impl_arg_label(char *out, const attnrt_kernel *kernel,
                                         size_t argument);

/* Whether a kernel runs on a CUDA device: its target starts with "cuda-". */
ATTNRT_HIDDEN int attnrt_impl_is_cuda(const attnrt_kernel *kernel);

/* A CUDA kernel's descriptor: the ABI version 3 field, null for CPU
 * kernels and descriptors of version 2. */
ATTNRT_HIDDEN const attnrt_cuda_code *
attnrt_impl_cuda_code(const attnrt_kernel *kernel);

/* Whether a kernel is a CUDA kernel with a host program (ABI version 4):
 * its entry runs on the host and launches the device code itself. */
ATTNRT_HIDDEN int attnrt_impl_is_cuda_program(const attnrt_kernel *kernel);

/* Checks a CUDA kernel's device code against its descriptor (every name,
 * parameter and size source in range); sets the context's error. */
ATTNRT_HIDDEN attnrt_status attnrt_impl_check_cuda_code(
    const attnrt_context *context, const attnrt_kernel *kernel);

/* Asks the operating system for the processor state a CPU kernel's target
 * needs (the AMX tiles of x86-64-amx), once per process; sets the
 * context's error and returns ATTNRT_UNAVAILABLE when it is refused. */
ATTNRT_HIDDEN attnrt_status attnrt_impl_grant_cpu_state(
    const attnrt_context *context, const attnrt_kernel *kernel);

/* Runs the validated CUDA kernel on the context's device: `buffers` the
 * data of the inputs then the outputs, whose shapes give the sizes, `dims`
 * the bound run-time sizes (for the entry of a host program). Waits for the
 * launches when `wait`; with `milliseconds`, times them between CUDA
 * events. */
ATTNRT_HIDDEN attnrt_status attnrt_impl_cuda_launch(
    attnrt_context *context, const attnrt_kernel *kernel,
    const attnrt_tensor *inputs, const attnrt_tensor *outputs,
    void *const *buffers, const int64_t *dims, void *stream, int wait,
    double *milliseconds);

/* attnrt_allocate in the entry of a CUDA kernel (invocation->cuda set):
 * device memory, in the order of the invocation's stream, freed when the
 * entry returns; null with the context's error set. */
ATTNRT_HIDDEN void *attnrt_impl_cuda_allocate(attnrt_invocation *invocation,
                                              int64_t bytes);

/* Unloads the context's modules and releases its device. */
ATTNRT_HIDDEN void attnrt_impl_cuda_release(attnrt_context *context);

#endif /* ATTNRT_INTERNAL_H */
