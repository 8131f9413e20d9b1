/*===- scratch.c - Per-thread reuse of a kernel's own scratch blocks ------===*
 *
 * Code that allocates and frees the same sizes on every call (a Halide
 * pipeline, called once per task, mallocs its score tiles each time) would
 * otherwise make glibc grow and trim the heap, or mmap and unmap, on every
 * call: page faults that cost more than the arithmetic. Freed blocks are kept
 * in a small per-thread cache and handed out again; a thread's cache is freed
 * when the thread exits.
 *
 *===----------------------------------------------------------------------===*/
#include "internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

enum { kAlignment = ATTNRT_ALLOCATION_ALIGNMENT, kCachedBlocks = 8 };

/* Each block starts with one alignment unit holding its usable size. */
typedef struct scratch_header {
  size_t size;
} scratch_header;

typedef struct scratch_cache {
  void *blocks[kCachedBlocks]; /* Usable pointers, or NULL. */
  size_t sizes[kCachedBlocks];
} scratch_cache;

static pthread_key_t cache_key;
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;

static void release_block(void *pointer) { free((char *)pointer - kAlignment); }

static void free_cache(void *opaque) {
  scratch_cache *cache = opaque;
  for (int n = 0; n < kCachedBlocks; ++n)
    if (cache->blocks[n])
      release_block(cache->blocks[n]);
  free(cache);
}

static void create_cache_key(void) {
  (void)pthread_key_create(&cache_key, free_cache);
}

static scratch_cache *thread_cache(void) {
  pthread_once(&cache_key_once, create_cache_key);
  scratch_cache *cache = pthread_getspecific(cache_key);
  if (!cache) {
    cache = calloc(1, sizeof(scratch_cache));
    if (cache && pthread_setspecific(cache_key, cache) != 0) {
      free(cache);
      cache = NULL;
    }
  }
  return cache;
}

void *attnrt_scratch_allocate(size_t bytes) {
  _Static_assert(sizeof(scratch_header) <= kAlignment, "header too large");
  if (bytes > SIZE_MAX - 2 * kAlignment)
    return NULL;
  size_t size = ((bytes + kAlignment - 1) & ~(size_t)(kAlignment - 1));
  scratch_cache *cache = thread_cache();
  if (cache) {
    /* The smallest cached block that fits. */
    int best = -1;
    for (int n = 0; n < kCachedBlocks; ++n)
      if (cache->blocks[n] && cache->sizes[n] >= size &&
          (best < 0 || cache->sizes[n] < cache->sizes[best]))
        best = n;
    if (best >= 0) {
      void *block = cache->blocks[best];
      cache->blocks[best] = NULL;
      return block;
    }
  }
  scratch_header *header = aligned_alloc(kAlignment, kAlignment + size);
  if (!header)
    return NULL;
  header->size = size;
  return (char *)header + kAlignment;
}

void attnrt_scratch_release(void *pointer) {
  if (!pointer)
    return;
  size_t size = ((scratch_header *)((char *)pointer - kAlignment))->size;
  scratch_cache *cache = thread_cache();
  if (!cache) {
    release_block(pointer);
    return;
  }
  /* An empty slot, else the smallest block if it is smaller than this one. */
  int slot = -1;
  for (int n = 0; n < kCachedBlocks; ++n) {
    if (!cache->blocks[n]) {
      slot = n;
      break;
    }
    if (cache->sizes[n] < size &&
        (slot < 0 || cache->sizes[n] < cache->sizes[slot]))
      slot = n;
  }
  if (slot < 0) {
    release_block(pointer);
    return;
  }
  if (cache->blocks[slot])
    release_block(cache->blocks[slot]);
  cache->blocks[slot] = pointer;
  cache->sizes[slot] = size;
}
