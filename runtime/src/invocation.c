/*===- invocation.c - Services the runtime offers generated code ----------===*
 *
 * An attnrt_invocation lives on attnrt_invoke's stack for one call of a
 * kernel's entry point. It carries the context's thread pool and the scratch
 * blocks the entry allocated, which go back to the context's cache when the
 * entry returns: the next invocation takes them from there, so steady-state
 * invokes call no allocator. In the entry of a CUDA kernel it carries the
 * device's state instead (cuda_launch.c), and attnrt_allocate gives device
 * memory.
 *
 *===----------------------------------------------------------------------===*/
#include "internal.h"

#include <stddef.h>
#include <stdint.h>

void attnrt_impl_invocation_begin(attnrt_invocation *invocation,
                                  attnrt_context *context) {
  invocation->context = context;
  invocation->pool = context->pool;
  atomic_init(&invocation->blocks, NULL);
  atomic_init(&invocation->in_parallel_for, 0);
  invocation->cuda = NULL;
}

/* Puts a block into the cache, which stays sorted by capacity ascending (so
 * that the first block that fits is the smallest). Under cache_lock. */
static void cache_insert(attnrt_context *context, attnrt_block *block) {
  attnrt_block **link = &context->cache;
  while (*link && (*link)->capacity < block->capacity)
    link = &(*link)->next;
  block->next = *link;
  *link = block;
}

void attnrt_impl_invocation_end(attnrt_invocation *invocation) {
  attnrt_block *block = atomic_exchange(&invocation->blocks, NULL);
  if (!block)
    return;
  attnrt_context *context = invocation->context;
  pthread_mutex_lock(&context->cache_lock);
  while (block) {
    attnrt_block *next = block->next;
    cache_insert(context, block);
    block = next;
  }
  pthread_mutex_unlock(&context->cache_lock);
}

void attnrt_impl_release_cache(attnrt_context *context) {
  pthread_mutex_lock(&context->cache_lock);
  attnrt_block *block = context->cache;
  context->cache = NULL;
  pthread_mutex_unlock(&context->cache_lock);
  while (block) {
    attnrt_block *next = block->next;
    attnrt_impl_release(context, block);
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

/* The smallest cached block of at least `capacity` bytes, taken out of the
 * cache; null if none. */
static attnrt_block *take_cached(attnrt_context *context, size_t capacity) {
  pthread_mutex_lock(&context->cache_lock);
  attnrt_block **link = &context->cache;
  while (*link && (*link)->capacity < capacity)
    link = &(*link)->next;
  attnrt_block *block = *link;
  if (block)
    *link = block->next;
  pthread_mutex_unlock(&context->cache_lock);
  return block;
}

/* After a miss for `capacity` bytes: the largest cached block smaller than
 * that, taken out of the cache (null if none). Releasing it keeps the cache
 * from growing without bound when a kernel's scratch grows from call to
 * call (decoding over a growing key sequence): it holds about as many blocks
 * as invocations use at once, not one per size ever seen. */
static attnrt_block *take_outgrown(attnrt_context *context, size_t capacity) {
  pthread_mutex_lock(&context->cache_lock);
  attnrt_block **link = &context->cache, **last_smaller = NULL;
  while (*link && (*link)->capacity < capacity) {
    last_smaller = link;
    link = &(*link)->next;
  }
  attnrt_block *block = last_smaller ? *last_smaller : NULL;
  if (block)
    *last_smaller = block->next;
  pthread_mutex_unlock(&context->cache_lock);
  return block;
}

void *attnrt_allocate(attnrt_invocation *invocation, int64_t bytes) {
  enum { align = ATTNRT_ALLOCATION_ALIGNMENT };
  _Static_assert(sizeof(attnrt_block) <= align, "block header too large");
  /* No object may be larger than PTRDIFF_MAX bytes (nor SIZE_MAX). */
  const uint64_t largest = (uint64_t)PTRDIFF_MAX < (uint64_t)SIZE_MAX
                               ? (uint64_t)PTRDIFF_MAX
                               : (uint64_t)SIZE_MAX;
  if (invocation && invocation->cuda)
    return attnrt_impl_cuda_allocate(invocation, bytes);
  if (!invocation || !invocation->context || bytes < 0 ||
      (uint64_t)bytes > largest - 2 * align)
    return NULL;
  attnrt_context *context = invocation->context;
  /* A header of one alignment unit, then the caller's bytes rounded up to
   * the alignment. Zero bytes still give a distinct non-null block. */
  size_t capacity = ((size_t)bytes + align - 1) & ~(size_t)(align - 1);
  attnrt_block *block = take_cached(context, capacity);
  if (!block) {
    block = attnrt_impl_allocate(context, align + capacity, align);
    if (!block)
      return NULL;
    block->capacity = capacity;
    attnrt_impl_release(context, take_outgrown(context, capacity));
  }
  /* Lock-free push: tasks of a parallel_for may allocate concurrently. */
  attnrt_block *head = atomic_load(&invocation->blocks);
  do
    block->next = head;
  while (!atomic_compare_exchange_weak(&invocation->blocks, &head, block));
  return (char *)block + align;
}
