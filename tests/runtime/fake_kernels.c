/*===- fake_kernels.c - Hand-written kernels for the runtime tests --------===*/
#include "fake_kernels.h"

#include <stdint.h>

/*===-- axpy --------------------------------------------------------------===*/

static const char *const axpy_dim_names[] = {"N"};
static const int64_t axpy_n[] = {-1};
static const int64_t axpy_one[] = {1};
static const attnrt_arg_info axpy_inputs[] = {
    {"x", ATTNRT_F32, 1, axpy_n},
    {"y", ATTNRT_F32, 1, axpy_n},
    {"a", ATTNRT_F32, 1, axpy_one},
};
static const attnrt_arg_info axpy_outputs[] = {{"z", ATTNRT_F32, 1, axpy_n}};

typedef struct axpy_closure {
  int64_t n;
  const float *x, *y;
  float a;
  float *scratch, *z;
} axpy_closure;

static void axpy_scale(void *closure, int64_t chunk) {
  axpy_closure *c = closure;
  int64_t end = (chunk + 1) * FAKE_AXPY_CHUNK;
  for (int64_t i = chunk * FAKE_AXPY_CHUNK; i < end && i < c->n; ++i)
    c->scratch[i] = c->a * c->x[i];
}

static void axpy_add(void *closure, int64_t chunk) {
  axpy_closure *c = closure;
  int64_t end = (chunk + 1) * FAKE_AXPY_CHUNK;
  for (int64_t i = chunk * FAKE_AXPY_CHUNK; i < end && i < c->n; ++i)
    c->z[i] = c->scratch[i] + c->y[i];
}

static int32_t axpy_entry(attnrt_invocation *invocation, const int64_t *dims,
                          void *const *buffers) {
  axpy_closure c;
  c.n = dims[0];
  c.x = buffers[0];
  c.y = buffers[1];
  c.a = *(const float *)buffers[2];
  c.z = buffers[3];
  c.scratch = attnrt_allocate(invocation, c.n * (int64_t)sizeof(float));
  if (!c.scratch)
    return ATTNRT_OUT_OF_MEMORY;
  if ((uintptr_t)c.scratch % 64 != 0)
    return ATTNRT_INTERNAL;
  int64_t chunks = (c.n + FAKE_AXPY_CHUNK - 1) / FAKE_AXPY_CHUNK;
  attnrt_parallel_for(invocation, chunks, axpy_scale, &c);
  attnrt_parallel_for(invocation, chunks, axpy_add, &c);
  return ATTNRT_OK;
}

const attnrt_kernel fake_axpy_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "axpy",
    .num_dims = 1,
    .dim_names = axpy_dim_names,
    .num_inputs = 3,
    .inputs = axpy_inputs,
    .num_outputs = 1,
    .outputs = axpy_outputs,
    .alignment = 16,
    .target = "x86-64",
    .manifest = "{\"name\": \"axpy\"}",
    .entry = axpy_entry,
};

/*===-- rows --------------------------------------------------------------===*/

static const char *const rows_dim_names[] = {"B", "T"};
static const int64_t rows_btc[] = {-1, -2, 4};
static const int64_t rows_t[] = {-2};
static const attnrt_arg_info rows_inputs[] = {
    {"q", ATTNRT_F32, 3, rows_btc},
    {"k", ATTNRT_F32, 3, rows_btc},
    {"bias", ATTNRT_I32, 1, rows_t},
    {"scale", ATTNRT_F32, 0, NULL},
};
static const attnrt_arg_info rows_outputs[] = {{"o", ATTNRT_F32, 3, rows_btc}};

typedef struct rows_closure {
  int64_t t;
  const float *q, *k;
  const int32_t *bias;
  float scale;
  float *o;
} rows_closure;

static void rows_row(void *closure, int64_t row) {
  rows_closure *c = closure;
  int32_t bias = c->bias[row % c->t];
  for (int64_t i = row * 4; i < row * 4 + 4; ++i)
    c->o[i] = (c->q[i] + c->k[i]) * c->scale + (float)bias;
}

static int32_t rows_entry(attnrt_invocation *invocation, const int64_t *dims,
                          void *const *buffers) {
  rows_closure c = {
      dims[1],   buffers[0], buffers[1], buffers[2], *(const float *)buffers[3],
      buffers[4]};
  attnrt_parallel_for(invocation, dims[0] * dims[1], rows_row, &c);
  return ATTNRT_OK;
}

const attnrt_kernel fake_rows_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "rows",
    .num_dims = 2,
    .dim_names = rows_dim_names,
    .num_inputs = 4,
    .inputs = rows_inputs,
    .num_outputs = 1,
    .outputs = rows_outputs,
    .alignment = 4,
    .target = "x86-64",
    .manifest = "{\"name\": \"rows\"}",
    .entry = rows_entry,
};

/*===-- fail --------------------------------------------------------------===*/

static const int64_t fail_four[] = {4};
static const attnrt_arg_info fail_inputs[] = {{"x", ATTNRT_F32, 1, fail_four}};
static const attnrt_arg_info fail_outputs[] = {{"y", ATTNRT_F32, 1, fail_four}};

int32_t fake_fail_status = ATTNRT_OUT_OF_MEMORY;

static int32_t fail_entry(attnrt_invocation *invocation, const int64_t *dims,
                          void *const *buffers) {
  (void)dims;
  (void)buffers;
  /* Scratch that the runtime must free although the kernel fails. */
  if (!attnrt_allocate(invocation, 1000) || !attnrt_allocate(invocation, 24))
    return ATTNRT_OUT_OF_MEMORY;
  return fake_fail_status;
}

const attnrt_kernel fake_fail_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "fail",
    .num_dims = 0,
    .dim_names = NULL,
    .num_inputs = 1,
    .inputs = fail_inputs,
    .num_outputs = 1,
    .outputs = fail_outputs,
    .alignment = 1,
    .target = "x86-64",
    .manifest = "{}",
    .entry = fail_entry,
};

/*===-- cover -------------------------------------------------------------===*/

static const char *const cover_dim_names[] = {"N"};
static const int64_t cover_n[] = {-1};
static const attnrt_arg_info cover_outputs[] = {
    {"hits", ATTNRT_I32, 1, cover_n},
    {"thread", ATTNRT_I32, 1, cover_n},
};

static int32_t next_thread_id;
static _Thread_local int32_t thread_id = -1;

typedef struct cover_closure {
  int32_t *hits, *thread;
} cover_closure;

static void cover_index(void *closure, int64_t i) {
  cover_closure *c = closure;
  if (thread_id < 0)
    thread_id = __atomic_fetch_add(&next_thread_id, 1, __ATOMIC_RELAXED);
  __atomic_fetch_add(&c->hits[i], 1, __ATOMIC_RELAXED);
  c->thread[i] = thread_id;
  /* A little work, so that every worker wakes up before the range is done. */
  volatile uint32_t sink = (uint32_t)i;
  for (int k = 0; k < 2000; ++k)
    sink = sink * 1664525u + 1013904223u;
}

static int32_t cover_entry(attnrt_invocation *invocation, const int64_t *dims,
                           void *const *buffers) {
  cover_closure c = {buffers[0], buffers[1]};
  attnrt_parallel_for(invocation, dims[0], cover_index, &c);
  return ATTNRT_OK;
}

const attnrt_kernel fake_cover_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "cover",
    .num_dims = 1,
    .dim_names = cover_dim_names,
    .num_inputs = 0,
    .inputs = NULL,
    .num_outputs = 2,
    .outputs = cover_outputs,
    .alignment = 4,
    .target = "x86-64",
    .manifest = "{}",
    .entry = cover_entry,
};

/*===-- probe -------------------------------------------------------------===*/

static const char *const probe_dim_names[] = {"N"};
static const int64_t probe_n[] = {-1};
static const attnrt_arg_info probe_inputs[] = {{"x", ATTNRT_I32, 1, probe_n}};
static const attnrt_arg_info probe_outputs[] = {{"y", ATTNRT_I32, 1, probe_n}};

fake_probe_fn fake_probe_hook;
int fake_probe_calls;

static int32_t probe_entry(attnrt_invocation *invocation, const int64_t *dims,
                           void *const *buffers) {
  ++fake_probe_calls;
  return fake_probe_hook ? fake_probe_hook(invocation, dims, buffers)
                         : ATTNRT_OK;
}

const attnrt_kernel fake_probe_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "probe",
    .num_dims = 1,
    .dim_names = probe_dim_names,
    .num_inputs = 1,
    .inputs = probe_inputs,
    .num_outputs = 1,
    .outputs = probe_outputs,
    .alignment = 4,
    .target = "x86-64",
    .manifest = "{}",
    .entry = probe_entry,
};

/*===-- scratch -----------------------------------------------------------===*/

static const char *const scratch_dim_names[] = {"N"};
static const int64_t scratch_n[] = {-1};
static const int64_t scratch_one[] = {1};
static const attnrt_arg_info scratch_inputs[] = {
    {"seed", ATTNRT_I32, 1, scratch_one}};
static const attnrt_arg_info scratch_outputs[] = {
    {"y", ATTNRT_I32, 1, scratch_n}};

static int32_t scratch_entry(attnrt_invocation *invocation, const int64_t *dims,
                             void *const *buffers) {
  int64_t n = dims[0];
  int32_t seed = *(const int32_t *)buffers[0];
  int32_t *y = buffers[1];
  int32_t *first = attnrt_allocate(invocation, n * (int64_t)sizeof(int32_t));
  int32_t *second = attnrt_allocate(invocation, n * (int64_t)sizeof(int32_t));
  void *empty = attnrt_allocate(invocation, 0);
  if (!first || !second || !empty)
    return ATTNRT_OUT_OF_MEMORY;
  if ((uintptr_t)first % 64 || (uintptr_t)second % 64 ||
      (uintptr_t)empty % 64 || first == second || empty == first ||
      empty == second)
    return ATTNRT_INTERNAL;
  /* Unsigned arithmetic: the patterns may wrap. */
  for (int64_t i = 0; i < n; ++i)
    first[i] = (int32_t)((uint32_t)seed + (uint32_t)i);
  for (int64_t i = 0; i < n; ++i)
    second[i] = (int32_t) ~((uint32_t)seed + (uint32_t)i);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t expected = (uint32_t)seed + (uint32_t)i;
    if ((uint32_t)first[i] != expected || (uint32_t)second[i] != ~expected)
      return ATTNRT_INTERNAL;
    y[i] = first[i];
  }
  return ATTNRT_OK;
}

const attnrt_kernel fake_scratch_kernel = {
    .abi_version = ATTNRT_ABI_VERSION,
    .name = "scratch",
    .num_dims = 1,
    .dim_names = scratch_dim_names,
    .num_inputs = 1,
    .inputs = scratch_inputs,
    .num_outputs = 1,
    .outputs = scratch_outputs,
    .alignment = 4,
    .target = "x86-64",
    .manifest = "{}",
    .entry = scratch_entry,
};

/*===-- Out-of-range enum values ------------------------------------------===*/

const char *fake_status_name_raw(int status) {
  return attnrt_status_name((attnrt_status)status);
}

size_t fake_dtype_size_raw(int dtype) {
  return attnrt_dtype_size((attnrt_dtype)dtype);
}

void fake_set_raw_dtype(attnrt_tensor *tensor, int dtype) {
  tensor->dtype = (attnrt_dtype)dtype;
}

static const int64_t bad_dtype_dims[] = {-1};
const attnrt_arg_info fake_bad_dtype_inputs[1] = {
    {"x", (attnrt_dtype)9, 1, bad_dtype_dims}};
