/*===- cuda_test.h - What the tests against the stand-in driver share -*- C -*-===*
 *
 * CHECK, the stand-in driver's recorder (fake_cuda_driver.h), reached from
 * the library libattnrt opened, a launch's expectation and a context for a
 * CUDA device: cuda_launch.c and cuda_entry.c, each one translation unit.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNC_TESTS_CUDA_TEST_H
#define ATTNC_TESTS_CUDA_TEST_H

#include "fake_cuda_driver.h"

#include <attnc/attnrt.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(condition, ...)                                                  \
  do {                                                                         \
    if (!(condition)) {                                                        \
      printf("FAILED line %d: %s: ", __LINE__, #condition);                    \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

static fake_cuda_malloc_fn device_malloc;
static fake_cuda_counts_fn driver_counts;
static fake_cuda_launch_fn driver_launch;
static fake_cuda_forget_fn forget_launches;

/* Finds the recorder in the driver ATTNRT_CUDA_DRIVER names, which
 * libattnrt must have opened; 0, or 1 after saying why not. */
static inline int attach_stand_in(void) {
  const char *path = getenv("ATTNRT_CUDA_DRIVER");
  int32_t count = 0;
  char message[256];
  attnrt_status status =
      attnrt_device_count(ATTNRT_DEVICE_CUDA, &count, message, sizeof message);
  void *driver = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (status != ATTNRT_OK || !driver) {
    printf("FAILED: needs ATTNRT_CUDA_DRIVER naming the stand-in driver (%s)\n",
           message);
    return 1;
  }
  device_malloc = (fake_cuda_malloc_fn)dlsym(driver, "fake_cuda_malloc");
  driver_counts = (fake_cuda_counts_fn)dlsym(driver, "fake_cuda_get_counts");
  driver_launch = (fake_cuda_launch_fn)dlsym(driver, "fake_cuda_get_launch");
  forget_launches = (fake_cuda_forget_fn)dlsym(driver, "fake_cuda_forget");
  if (!device_malloc || !driver_counts || !driver_launch || !forget_launches) {
    printf("FAILED: %s is not the recording stand-in\n", path);
    return 1;
  }
  return 0;
}

/* Any value: a workspace's or an intermediate's address, which the driver
 * chose. */
#define ANY UINT64_MAX

/* Launch `index` ran `function` on `grid` with blocks of `block` threads,
 * no dynamic shared memory, on `stream`, with these parameters. */
static inline void expect_launch_of(int index, const char *function,
                                    unsigned gx, unsigned gy, unsigned gz,
                                    unsigned block, int num_params,
                                    const uint64_t *params, void *stream) {
  const fake_cuda_launch *launch = driver_launch(index);
  CHECK(launch != NULL, "no launch %d (%s)", index, function);
  if (!launch)
    return;
  CHECK(strcmp(launch->function, function) == 0, "launch %d ran %s, not %s",
        index, launch->function, function);
  CHECK(launch->grid[0] == gx && launch->grid[1] == gy && launch->grid[2] == gz,
        "%s: grid (%u, %u, %u), not (%u, %u, %u)", function, launch->grid[0],
        launch->grid[1], launch->grid[2], gx, gy, gz);
  CHECK(launch->block[0] == block && launch->block[1] == 1 &&
            launch->block[2] == 1 && launch->shared_bytes == 0,
        "%s: block (%u, %u, %u), %u shared bytes", function, launch->block[0],
        launch->block[1], launch->block[2], launch->shared_bytes);
  CHECK(launch->stream == stream, "%s: stream %p, not %p", function,
        launch->stream, stream);
  CHECK(launch->num_params == num_params, "%s: %d params in the PTX, not %d",
        function, launch->num_params, num_params);
  for (int p = 0; p < num_params && p < launch->num_params; ++p)
    CHECK(launch->params[p] == params[p] || params[p] == ANY,
          "%s: param %d is %llu, not %llu", function, p,
          (unsigned long long)launch->params[p], (unsigned long long)params[p]);
}

/* A context of one thread on CUDA device `ordinal`. */
static inline attnrt_context *context_on(int ordinal) {
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  options.threads = 1;
  attnrt_context *context = NULL;
  attnrt_status status = attnrt_context_create_on_device(
      &options, ATTNRT_DEVICE_CUDA, ordinal, &context);
  CHECK(status == ATTNRT_OK, "%s", attnrt_status_name(status));
  return context;
}

#endif /* ATTNC_TESTS_CUDA_TEST_H */
