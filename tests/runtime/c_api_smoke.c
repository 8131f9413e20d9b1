/*===- c_api_smoke.c - attnc/attnrt.h is valid C; libattnrt links from C ---===*
 *
 * Compiled as C99 (not C++): a kernel descriptor written by hand the way
 * attnc writes one, registered, found by name and invoked on two threads,
 * then one misuse, a trim of the scratch cache and one more invoke. Exits 0
 * on success.
 *
 *===----------------------------------------------------------------------===*/
#include "attnc/attnrt.h"

#include <stdio.h>
#include <string.h>

static const char *const dim_names[] = {"N"};
static const int64_t dims_n[] = {-1};
static const attnrt_arg_info inputs_info[] = {{"x", ATTNRT_F32, 1, dims_n}};
static const attnrt_arg_info outputs_info[] = {{"y", ATTNRT_F32, 1, dims_n}};

typedef struct closure {
  const float *x;
  float *y;
} closure;

static void twice(void *c, int64_t i) {
  closure *data = c;
  data->y[i] = 2.0f * data->x[i];
}

static int32_t twice_entry(attnrt_invocation *invocation, const int64_t *dims,
                           void *const *buffers) {
  closure c;
  c.x = buffers[0];
  c.y = buffers[1];
  if (!attnrt_allocate(invocation, 128))
    return ATTNRT_OUT_OF_MEMORY;
  attnrt_parallel_for(invocation, dims[0], twice, &c);
  return ATTNRT_OK;
}

static const attnrt_kernel twice_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "twice",
    .num_dims = 1,
    .dim_names = dim_names,
    .num_inputs = 1,
    .inputs = inputs_info,
    .num_outputs = 1,
    .outputs = outputs_info,
    .alignment = 4,
    .target = "x86-64",
    .manifest = "{}",
    .entry = twice_entry,
};

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "c_api_smoke.c:%d: %s failed\n", __LINE__, #condition);  \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(void) {
  attnrt_context_options options;
  attnrt_context *context = NULL;
  const attnrt_kernel *kernel = NULL;
  float x[100], y[100];
  int64_t shape[1] = {100};
  attnrt_tensor input, output;
  int i;

  attnrt_context_options_initialize(&options);
  CHECK(options.thread_pool == NULL && options.allocator.allocate == NULL &&
        options.allocator.release == NULL);
  options.threads = 2;
  CHECK(attnrt_context_create(&options, &context) == ATTNRT_OK);
  CHECK(attnrt_context_threads(context) == 2);
  CHECK(attnrt_register_kernel(context, &twice_kernel) == ATTNRT_OK);
  CHECK(attnrt_find_kernel(context, "twice", &kernel) == ATTNRT_OK);
  CHECK(kernel == &twice_kernel);

  for (i = 0; i < 100; ++i)
    x[i] = (float)i;
  input.data = x;
  input.dtype = ATTNRT_F32;
  input.rank = 1;
  input.shape = shape;
  input.strides = NULL;
  output = input;
  output.data = y;
  CHECK(attnrt_invoke(context, kernel, &input, 1, &output, 1) == ATTNRT_OK);
  for (i = 0; i < 100; ++i)
    CHECK(y[i] == 2.0f * (float)i);

  input.dtype = ATTNRT_F16;
  CHECK(attnrt_invoke(context, kernel, &input, 1, &output, 1) ==
        ATTNRT_DTYPE_MISMATCH);
  CHECK(strcmp(attnrt_context_last_error(context),
               "input x: dtype is f16, expected f32") == 0);
  CHECK(strcmp(attnrt_status_name(ATTNRT_DTYPE_MISMATCH),
               "ATTNRT_DTYPE_MISMATCH") == 0);
  CHECK(attnrt_dtype_size(ATTNRT_BF16) == 2);

  attnrt_context_trim(context);
  input.dtype = ATTNRT_F32;
  CHECK(attnrt_invoke(context, kernel, &input, 1, &output, 1) == ATTNRT_OK);
  attnrt_context_release(context);
  attnrt_context_release(NULL);
  puts("c_api_smoke: ok");
  return 0;
}
