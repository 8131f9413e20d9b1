/*===- invocation.c - Services the runtime offers generated code ----------===*
 *
 * An attnrt_invocation lives on attnrt_invoke's stack for one call of a
 * kernel's entry point. It carries the context's thread pool and the scratch
 * blocks the entry allocated, which are freed when the entry returns.
 *
 *===----------------------------------------------------------------------===*/
#include "internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

void attnrt_impl_invocation_begin(attnrt_invocation *invocation,
                                  pthreadpool_t pool) {
  invocation->pool = pool;
  atomic_init(&invocation->blocks, NULL);
  atomic_init(&invocation->in_parallel_for, 0);
}

void attnrt_impl_invocation_end(attnrt_invocation *invocation) {
  attnrt_block *block = atomic_exchange(&invocation->blocks, NULL);
  while (block) {
    attnrt_block *next = block->next;
    free(block);
    block = next;
  }
}

int64_t attnrt_invocation_threads(const attnrt_invocation *invocation) {
  if (!invocation || !invocation->pool)
    return 1;
  return (int64_t)pthreadpool_get_threads_count(invocation->pool);
}

/*===-- attnrt_parallel_for -----------------------------------------------===*/

typedef struct trampoline {
  void (*task)(void *closure, int64_t index);
  void *closure;
} trampoline;

static void run_task(void *context, size_t index) {
  const trampoline *t = context;
  t->task(t->closure, (int64_t)index);
}

static void run_inline(int64_t count, void (*task)(void *, int64_t),
                       void *closure) {
  for (int64_t i = 0; i < count; ++i)
    task(closure, i);
}

void attnrt_parallel_for(attnrt_invocation *invocation, int64_t count,
                         void (*task)(void *closure, int64_t index),
                         void *closure) {
  if (!task || count <= 0)
    return;
  /* Inline: one thread, one index, no invocation (generated code called
   * outside attnrt_invoke), or an index range size_t cannot hold. */
  if (!invocation || !invocation->pool || count == 1 ||
      (uint64_t)count > (uint64_t)SIZE_MAX) {
    run_inline(count, task, closure);
    return;
  }
  /* pthreadpool is not reentrant: a parallel_for called from inside a task
   * runs on that task's thread. */
  if (atomic_exchange(&invocation->in_parallel_for, 1) != 0) {
    run_inline(count, task, closure);
    return;
  }
  trampoline t = {task, closure};
  pthreadpool_parallelize_1d(invocation->pool, run_task, &t, (size_t)count, 0);
  atomic_store(&invocation->in_parallel_for, 0);
}

/*===-- attnrt_allocate ---------------------------------------------------===*/

void *attnrt_allocate(attnrt_invocation *invocation, int64_t bytes) {
  enum { align = ATTNRT_ALLOCATION_ALIGNMENT };
  _Static_assert(sizeof(attnrt_block) <= align, "block header too large");
  /* No object may be larger than PTRDIFF_MAX bytes (nor SIZE_MAX). */
  const uint64_t largest = (uint64_t)PTRDIFF_MAX < (uint64_t)SIZE_MAX
                               ? (uint64_t)PTRDIFF_MAX
                               : (uint64_t)SIZE_MAX;
  if (!invocation || bytes < 0 || (uint64_t)bytes > largest - 2 * align)
    return NULL;
  /* A header of one alignment unit, then the caller's bytes rounded up so
   * that aligned_alloc gets a multiple of the alignment. Zero bytes still
   * give a distinct non-null block. */
  size_t size = align + (((size_t)bytes + align - 1) & ~(size_t)(align - 1));
  attnrt_block *block = aligned_alloc(align, size);
  if (!block)
    return NULL;
  /* Lock-free push: tasks of a parallel_for may allocate concurrently. */
  attnrt_block *head = atomic_load(&invocation->blocks);
  do
    block->next = head;
  while (!atomic_compare_exchange_weak(&invocation->blocks, &head, block));
  return (char *)block + align;
}
