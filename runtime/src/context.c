/*===- context.c - Contexts, the kernel registry and status names ---------===*
 *
 * A context owns a pthreadpool thread pool, a registry of kernel descriptors
 * (name -> descriptor, the descriptors themselves are borrowed: they live in
 * the caller's NAME.o for the whole program) and a one-line last-error
 * buffer.
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

/*===-- Contexts ----------------------------------------------------------===*/

void attnrt_context_options_initialize(attnrt_context_options *options) {
  if (!options)
    return;
  memset(options, 0, sizeof *options);
  options->threads = 0;
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

attnrt_status attnrt_context_create(const attnrt_context_options *options,
                                    attnrt_context **out_context) {
  if (!out_context)
    return ATTNRT_INVALID_ARGUMENT;
  *out_context = NULL;
  if (!options || options->threads > ATTNRT_MAX_THREADS)
    return ATTNRT_INVALID_ARGUMENT;

  size_t threads = options->threads;
  if (threads == 0) {
    threads = available_cores();
    if (threads > ATTNRT_MAX_THREADS)
      threads = ATTNRT_MAX_THREADS;
  }

  attnrt_context *context = calloc(1, sizeof *context);
  if (!context)
    return ATTNRT_OUT_OF_MEMORY;
  context->threads = threads;
  if (threads > 1) {
    /* The calling thread works too: the pool starts threads - 1 workers. */
    context->pool = pthreadpool_create(threads);
    if (!context->pool) {
      free(context);
      return ATTNRT_OUT_OF_MEMORY;
    }
    context->threads = pthreadpool_get_threads_count(context->pool);
  }
  *out_context = context;
  return ATTNRT_OK;
}

void attnrt_context_release(attnrt_context *context) {
  if (!context)
    return;
  /* A later context at the same address must not show this one's error. */
  if (last_error.context == context)
    last_error.context = NULL;
  if (context->pool)
    pthreadpool_destroy(context->pool);
  free(context->kernels);
  free(context);
}

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
    const attnrt_kernel **kernels =
        realloc((void *)context->kernels, capacity * sizeof *kernels);
    if (!kernels) {
      attnrt_impl_set_error(context,
                            "kernel %s: out of memory growing the "
                            "registry",
                            kernel->name);
      return ATTNRT_OUT_OF_MEMORY;
    }
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
