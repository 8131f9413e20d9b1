/*===- context.c - Contexts, the kernel registry and status names ---------===*
 *
 * A context owns a pthreadpool thread pool (or borrows the caller's), a
 * registry of kernel descriptors (name -> descriptor, the descriptors
 * themselves are borrowed: they live in the caller's NAME.o for the whole
 * program), the cache of attnrt_allocate's scratch blocks and a one-line
 * last-error buffer. All its memory comes from the caller's allocator, or
 * the heap.
 *
 *===----------------------------------------------------------------------===*/
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include "internal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*===-- Status codes and dtypes -------------------------------------------===*/

const char *attnrt_status_name(attnrt_status status) {
  switch (status) {
  case ATTNRT_OK:
    return "ATTNRT_OK";
  case ATTNRT_INVALID_ARGUMENT:
    return "ATTNRT_INVALID_ARGUMENT";
  case ATTNRT_SHAPE_MISMATCH:
    return "ATTNRT_SHAPE_MISMATCH";
  case ATTNRT_DTYPE_MISMATCH:
    return "ATTNRT_DTYPE_MISMATCH";
  case ATTNRT_LAYOUT_MISMATCH:
    return "ATTNRT_LAYOUT_MISMATCH";
  case ATTNRT_OUT_OF_MEMORY:
    return "ATTNRT_OUT_OF_MEMORY";
  case ATTNRT_NOT_FOUND:
    return "ATTNRT_NOT_FOUND";
  case ATTNRT_UNAVAILABLE:
    return "ATTNRT_UNAVAILABLE";
  case ATTNRT_INTERNAL:
    return "ATTNRT_INTERNAL";
  }
  return "ATTNRT_UNKNOWN_STATUS";
}

size_t attnrt_dtype_size(attnrt_dtype dtype) {
  switch (dtype) {
  case ATTNRT_F32:
  case ATTNRT_I32:
    return 4;
  case ATTNRT_F16:
  case ATTNRT_BF16:
    return 2;
  case ATTNRT_BOOL:
    return 1;
  }
  return 0;
}

/*===-- Errors ------------------------------------------------------------===*/

/* The calling thread's last error, and the context it belongs to. */
static _Thread_local struct {
  const attnrt_context *context;
  char message[ATTNRT_MESSAGE_CAPACITY];
} last_error;

void attnrt_impl_set_error(const attnrt_context *context, const char *format,
                           ...) {
  va_list args;
  va_start(args, format);
  last_error.context = context;
  /* vsnprintf cuts long messages short and always terminates. */
  if (vsnprintf(last_error.message, sizeof last_error.message, format, args) <
      0)
    strcpy(last_error.message, "(message could not be formatted)");
  va_end(args);
}

const char *attnrt_context_last_error(const attnrt_context *context) {
  return context && last_error.context == context ? last_error.message : "";
}

/*===-- Allocation --------------------------------------------------------===*/

/* The heap, when the caller names no allocator. */
static void *heap_allocate(void *self, size_t bytes, size_t alignment) {
  (void)self;
  /* C11 wants a size that is a multiple of the alignment; 0 bytes still get
   * a block of their own. */
  if (bytes > SIZE_MAX - alignment)
    return NULL;
  size_t size = bytes ? (bytes + alignment - 1) & ~(alignment - 1) : alignment;
  return aligned_alloc(alignment, size);
}

static void heap_release(void *self, void *pointer) {
  (void)self;
  free(pointer);
}

void *attnrt_impl_allocate(const attnrt_context *context, size_t bytes,
                           size_t alignment) {
  if (bytes > (size_t)PTRDIFF_MAX)
    return NULL;
  return context->allocator.allocate(context->allocator.self, bytes, alignment);
}

void attnrt_impl_release(const attnrt_context *context, void *pointer) {
  if (pointer)
    context->allocator.release(context->allocator.self, pointer);
}

/*===-- Contexts ----------------------------------------------------------===*/

void attnrt_context_options_initialize(attnrt_context_options *options) {
  if (!options)
    return;
  memset(options, 0, sizeof *options);
  options->thread_pool = NULL;
  options->allocator.allocate = NULL;
  options->allocator.release = NULL;
}

/* The cores this process may run on: its affinity mask (which honours
 * taskset and container cpusets), else the online processors, else 1. */
static size_t available_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int count = CPU_COUNT(&set);
    if (count > 0)
      return (size_t)count;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (size_t)online : 1;
}

/* attnrt_context_create of either ABI (a call within the library, so that
 * it never goes through the dynamic symbol table). */
static attnrt_status create_context(const attnrt_context_options *options,
                                    attnrt_context **out_context) {
  if (!out_context)
    return ATTNRT_INVALID_ARGUMENT;
  *out_context = NULL;
  if (!options || options->threads > ATTNRT_MAX_THREADS)
    return ATTNRT_INVALID_ARGUMENT;
  attnrt_allocator allocator = options->allocator;
  if (!allocator.allocate != !allocator.release)
    return ATTNRT_INVALID_ARGUMENT;
  if (!allocator.allocate) {
    allocator.self = NULL;
    allocator.allocate = heap_allocate;
    allocator.release = heap_release;
  }

  pthreadpool_t caller_pool = options->thread_pool;
  size_t threads = options->threads;
  if (caller_pool) {
    size_t pool_threads = pthreadpool_get_threads_count(caller_pool);
    if (threads != 0 && threads != pool_threads)
      return ATTNRT_INVALID_ARGUMENT;
    threads = pool_threads ? pool_threads : 1;
  } else if (threads == 0) {
    threads = available_cores();
    if (threads > ATTNRT_MAX_THREADS)
      threads = ATTNRT_MAX_THREADS;
  }

  attnrt_context *context = allocator.allocate(allocator.self, sizeof *context,
                                               ATTNRT_CONTEXT_ALIGNMENT);
  if (!context)
    return ATTNRT_OUT_OF_MEMORY;
  memset(context, 0, sizeof *context);
  context->allocator = allocator;
  context->cache_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
  context->cuda_lock = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
  context->device_kind = ATTNRT_DEVICE_CPU;
  context->threads = threads;
  for (size_t i = 0; i < ATTNRT_VALIDATED_CAPACITY; ++i)
    atomic_init(&context->validated[i], NULL);
  if (caller_pool) {
    /* A pool of one thread would run everything on the caller anyway. */
    context->pool = threads > 1 ? caller_pool : NULL;
  } else if (threads > 1) {
    /* The calling thread works too: the pool starts threads - 1 workers. */
    context->pool = pthreadpool_create(threads);
    if (!context->pool) {
      allocator.release(allocator.self, context);
      return ATTNRT_OUT_OF_MEMORY;
    }
    context->owns_pool = 1;
    context->threads = pthreadpool_get_threads_count(context->pool);
  }
  *out_context = context;
  return ATTNRT_OK;
}

attnrt_status attnrt_context_create(const attnrt_context_options *options,
                                    attnrt_context **out_context) {
  return create_context(options, out_context);
}

attnrt_status
attnrt_context_create_on_device(const attnrt_context_options *options,
                                attnrt_device_kind kind, int32_t ordinal,
                                attnrt_context **out_context) {
  if (out_context)
    *out_context = NULL;
  if ((kind != ATTNRT_DEVICE_CPU && kind != ATTNRT_DEVICE_CUDA) ||
      ordinal < 0 || (kind == ATTNRT_DEVICE_CPU && ordinal != 0))
    return ATTNRT_INVALID_ARGUMENT;
  attnrt_status status = create_context(options, out_context);
  if (status == ATTNRT_OK) {
    (*out_context)->device_kind = kind;
    (*out_context)->device_ordinal = ordinal;
  }
  return status;
}

void attnrt_context_release(attnrt_context *context) {
  if (!context)
    return;
  /* A later context at the same address must not show this one's error. */
  if (last_error.context == context)
    last_error.context = NULL;
  if (context->owns_pool)
    pthreadpool_destroy(context->pool);
  attnrt_impl_release_cache(context);
  attnrt_impl_cuda_release(context);
  pthread_mutex_destroy(&context->cache_lock);
  pthread_mutex_destroy(&context->cuda_lock);
  attnrt_impl_release(context, (void *)context->kernels);
  attnrt_allocator allocator = context->allocator;
  allocator.release(allocator.self, context);
}

void attnrt_context_trim(attnrt_context *context) {
  if (context)
    attnrt_impl_release_cache(context);
}

/*===-- Symbol versions of libattnrt.so ----------------------------------===*
 *
 * Applications built against the first header pass an
 * attnrt_context_options of one field, `threads`. libattnrt.so keeps two
 * entry points for them at version ATTNRT_1, reading and writing that field
 * only; the functions above are the default version, ATTNRT_1.2 (`@@@`
 * renames them, so that no unversioned name is left to bind). The static
 * library has the current ABI only: whoever links it compiles against this
 * header. GCC and Clang both assemble these directives.
 */
#ifdef ATTNRT_SYMBOL_VERSIONS

typedef struct attnrt_context_options_1 {
  size_t threads;
} attnrt_context_options_1;

void attnrt_impl_context_options_initialize_1(
    attnrt_context_options_1 *options);
attnrt_status
attnrt_impl_context_create_1(const attnrt_context_options_1 *options,
                             attnrt_context **out_context);

__asm__(".symver attnrt_context_options_initialize,"
        "attnrt_context_options_initialize@@@ATTNRT_1.2");
__asm__(".symver attnrt_context_create,"
        "attnrt_context_create@@@ATTNRT_1.2");
__asm__(".symver attnrt_impl_context_options_initialize_1,"
        "attnrt_context_options_initialize@ATTNRT_1");
__asm__(".symver attnrt_impl_context_create_1,"
        "attnrt_context_create@ATTNRT_1");

void attnrt_impl_context_options_initialize_1(
    attnrt_context_options_1 *options) {
  if (options)
    options->threads = 0;
}

attnrt_status
attnrt_impl_context_create_1(const attnrt_context_options_1 *options,
                             attnrt_context **out_context) {
  if (!options) {
    if (out_context)
      *out_context = NULL;
    return ATTNRT_INVALID_ARGUMENT;
  }
  attnrt_context_options current;
  memset(&current, 0, sizeof current);
  current.threads = options->threads;
  return create_context(&current, out_context);
}

#endif /* ATTNRT_SYMBOL_VERSIONS */

size_t attnrt_context_threads(const attnrt_context *context) {
  return context ? context->threads : 0;
}

/*===-- Registry ----------------------------------------------------------===*/

static const attnrt_kernel *lookup(const attnrt_context *context,
                                   const char *name) {
  for (size_t i = 0; i < context->num_kernels; ++i)
    if (strcmp(context->kernels[i]->name, name) == 0)
      return context->kernels[i];
  return NULL;
}

attnrt_status attnrt_register_kernel(attnrt_context *context,
                                     const attnrt_kernel *kernel) {
  if (!context)
    return ATTNRT_INVALID_ARGUMENT;
  attnrt_status status = attnrt_impl_validate_once(context, kernel);
  if (status != ATTNRT_OK)
    return status;
  if (lookup(context, kernel->name)) {
    attnrt_impl_set_error(context,
                          "kernel %s: a kernel of that name is "
                          "already registered in this context",
                          kernel->name);
    return ATTNRT_INVALID_ARGUMENT;
  }
  if (context->num_kernels == context->kernel_capacity) {
    size_t capacity =
        context->kernel_capacity ? 2 * context->kernel_capacity : 8;
    const attnrt_kernel **kernels = attnrt_impl_allocate(
        context, capacity * sizeof *kernels, ATTNRT_CONTEXT_ALIGNMENT);
    if (!kernels) {
      attnrt_impl_set_error(context,
                            "kernel %s: out of memory growing the "
                            "registry",
                            kernel->name);
      return ATTNRT_OUT_OF_MEMORY;
    }
    if (context->num_kernels)
      memcpy((void *)kernels, (const void *)context->kernels,
             context->num_kernels * sizeof *kernels);
    attnrt_impl_release(context, (void *)context->kernels);
    context->kernels = kernels;
    context->kernel_capacity = capacity;
  }
  context->kernels[context->num_kernels++] = kernel;
  return ATTNRT_OK;
}

attnrt_status attnrt_find_kernel(const attnrt_context *context,
                                 const char *name,
                                 const attnrt_kernel **out_kernel) {
  if (!context)
    return ATTNRT_INVALID_ARGUMENT;
  if (!out_kernel) {
    attnrt_impl_set_error(context, "attnrt_find_kernel: out_kernel is null");
    return ATTNRT_INVALID_ARGUMENT;
  }
  *out_kernel = NULL;
  if (!name) {
    attnrt_impl_set_error(context, "attnrt_find_kernel: name is null");
    return ATTNRT_INVALID_ARGUMENT;
  }
  const attnrt_kernel *kernel = lookup(context, name);
  if (!kernel) {
    /* Name what is there, as far as the line allows. */
    char known[ATTNRT_MESSAGE_CAPACITY / 2] = "";
    size_t used = 0;
    for (size_t i = 0; i < context->num_kernels && used < sizeof known; ++i) {
      int n = snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
                       context->kernels[i]->name);
      if (n < 0)
        break;
      used += (size_t)n;
    }
    if (context->num_kernels == 0)
      attnrt_impl_set_error(context,
                            "no kernel named '%s': none is "
                            "registered in this context",
                            name);
    else
      attnrt_impl_set_error(context, "no kernel named '%s' (registered: %s)",
                            name, known);
    return ATTNRT_NOT_FOUND;
  }
  *out_kernel = kernel;
  return ATTNRT_OK;
}
