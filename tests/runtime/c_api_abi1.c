/*===- c_api_abi1.c - libattnrt.so still serves ATTNRT_1 applications -----===*
 *
 * An application built against the first attnrt.h passed an
 * attnrt_context_options of one field, `threads`, and bound
 * attnrt_context_options_initialize and attnrt_context_create at version
 * ATTNRT_1. This program binds those versions explicitly (.symver on the
 * references) and hands them the old layout followed by bytes that would be
 * garbage as the new fields: the old entry points must neither write nor
 * read past `threads`. Linked with libattnrt.so only. Exits 0 on success.
 *
 *===----------------------------------------------------------------------===*/
#include "attnc/attnrt.h"

#include <stdio.h>
#include <string.h>

/* The options of ATTNRT_1. */
typedef struct old_options {
  size_t threads;
} old_options;

void old_initialize(old_options *options);
attnrt_status old_create(const old_options *options,
                         attnrt_context **out_context);
__asm__(".symver old_initialize, attnrt_context_options_initialize@ATTNRT_1");
__asm__(".symver old_create, attnrt_context_create@ATTNRT_1");

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "c_api_abi1.c:%d: %s failed\n", __LINE__, #condition);   \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  /* The old struct, then what the new layout would read as thread_pool and
   * allocator: a wild pool and half an allocator. */
  struct {
    old_options options;
    unsigned char after[64];
  } memory;
  attnrt_context *context = NULL;
  size_t i;

  memset(&memory, 0xa5, sizeof memory);
  old_initialize(&memory.options);
  CHECK(memory.options.threads == 0);
  for (i = 0; i < sizeof memory.after; ++i)
    CHECK(memory.after[i] == 0xa5);

  memory.options.threads = 2;
  CHECK(old_create(&memory.options, &context) == ATTNRT_OK);
  CHECK(attnrt_context_threads(context) == 2);
  attnrt_context_release(context);

  memory.options.threads = ATTNRT_MAX_THREADS + 1;
  CHECK(old_create(&memory.options, &context) == ATTNRT_INVALID_ARGUMENT);
  CHECK(context == NULL);
  CHECK(old_create(NULL, &context) == ATTNRT_INVALID_ARGUMENT);
  puts("c_api_abi1: ok");
  return 0;
}
