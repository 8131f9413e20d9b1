/*===- heap_calls.c - Counts the heap calls of statically linked code -----===*
 *
 * runtime-tests links with --wrap for each allocating function of the C
 * library: calls from objects linked into the executable (libattnrt.a's)
 * come here and are counted before going on to the C library. Calls from
 * shared libraries (pthreadpool, libstdc++) are not seen.
 *
 *===----------------------------------------------------------------------===*/
#include "fake_kernels.h"

#include <stdatomic.h>
#include <stddef.h>

static atomic_long heap_calls;

long fake_heap_calls(void) { return atomic_load(&heap_calls); }

static void count(void) {
  atomic_fetch_add_explicit(&heap_calls, 1, memory_order_relaxed);
}

void *__real_malloc(size_t bytes);
void *__real_calloc(size_t count, size_t bytes);
void *__real_realloc(void *pointer, size_t bytes);
void *__real_aligned_alloc(size_t alignment, size_t bytes);
int __real_posix_memalign(void **out, size_t alignment, size_t bytes);

void *__wrap_malloc(size_t bytes);
void *__wrap_calloc(size_t count, size_t bytes);
void *__wrap_realloc(void *pointer, size_t bytes);
void *__wrap_aligned_alloc(size_t alignment, size_t bytes);
int __wrap_posix_memalign(void **out, size_t alignment, size_t bytes);

void *__wrap_malloc(size_t bytes) {
  count();
  return __real_malloc(bytes);
}

void *__wrap_calloc(size_t n, size_t bytes) {
  count();
  return __real_calloc(n, bytes);
}

void *__wrap_realloc(void *pointer, size_t bytes) {
  count();
  return __real_realloc(pointer, bytes);
}

void *__wrap_aligned_alloc(size_t alignment, size_t bytes) {
  count();
  return __real_aligned_alloc(alignment, bytes);
}

int __wrap_posix_memalign(void **out, size_t alignment, size_t bytes) {
  count();
  return __real_posix_memalign(out, alignment, bytes);
}
