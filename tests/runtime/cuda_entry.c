/*===- cuda_entry.c - CUDA host programs against a stand-in driver --------===*
 *
 * A kernel of ABI version 4 whose graph has ops around its attention: its
 * entry, host code, takes intermediates from attnrt_allocate, launches the
 * other ops' functions by attnrt_cuda_launch and the attention op by
 * attnrt_cuda_run_attention. The descriptor and the entry are written here
 * by hand the way attnc writes them (no compiler needed); the stand-in
 * driver of fake_cuda_driver.c records what libattnrt asks of it: each
 * launch's function, grid, block, stream and parameters, and the pool's
 * memory, allocated and freed in stream order. Then the errors: a bad
 * function, word count or op, an entry's own failure, a driver that is out
 * of memory or fails a launch, descriptors these calls or their functions
 * make invalid, the calls from a CPU kernel's entry; and a descriptor of
 * version 3 still runs the old way. Run with ATTNRT_CUDA_DRIVER naming the
 * stand-in.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_test.h"

/*===-- The kernel, as attnc writes it ------------------------------------===*/

/* proj_attn: y = g_p1(attention(g_p0(x), k, v)), x and y f16[B, 4, S, 32],
 * k and v f16[B, 2, T, 32] (grouped-query attention, 2 query heads a kv
 * head). g_p0 and g_p1 each take (source, destination, elements). */
static const char *const dim_names[] = {"B", "S", "T"};
static const int64_t x_dims[] = {-1, 4, -2, 32}, kv_dims[] = {-1, 2, -3, 32};
static const attnrt_arg_info inputs_info[] = {{"x", ATTNRT_F16, 4, x_dims},
                                              {"k", ATTNRT_F16, 4, kv_dims},
                                              {"v", ATTNRT_F16, 4, kv_dims}};
static const attnrt_arg_info outputs_info[] = {{"y", ATTNRT_F16, 4, x_dims}};

/* The attention op's functions number the op's tensors q, k, v, o. */
#define SIZES                                                                  \
  ATTNRT_CUDA_SIZE(ATTNRT_CUDA_B), ATTNRT_CUDA_SIZE(ATTNRT_CUDA_HQ),           \
      ATTNRT_CUDA_SIZE(ATTNRT_CUDA_HKV), ATTNRT_CUDA_SIZE(ATTNRT_CUDA_S),      \
      ATTNRT_CUDA_SIZE(ATTNRT_CUDA_T), ATTNRT_CUDA_SIZE(ATTNRT_CUDA_DK),       \
      ATTNRT_CUDA_SIZE(ATTNRT_CUDA_DV), ATTNRT_CUDA_SIZE(ATTNRT_CUDA_SPLITS)
static const int32_t attention_params[] = {0,    1, 2, 3, ATTNRT_CUDA_WORKSPACE,
                                           SIZES};
static const int32_t merge_params[] = {ATTNRT_CUDA_WORKSPACE, 3, SIZES};

static const attnrt_cuda_attention attentions[] = {{
    {"g_attention0", 13, attention_params, 128, 4, ATTNRT_CUDA_ROWS_SPLIT},
    {"g_attention0_merge", 10, merge_params, 128, 4, 0},
    {"g_attention0_mma", 13, attention_params, 128, 64,
     ATTNRT_CUDA_ROWS_GROUPED | ATTNRT_CUDA_BLOCKS_SPLIT},
    /* B, Hq, Hkv, S, T, Dk, Dv */
    {{0, 0}, {0, 1}, {1, 1}, {0, 2}, {1, 2}, {0, 3}, {2, 3}},
    1024,
    256,
    {4, 8},
}};

static const attnrt_cuda_function functions[] = {
    {"g_p0", 3, NULL, 256, 1, 0},
    {"g_p1", 3, NULL, 128, 1, 0},
};

/* The stand-in compiles nothing: it finds each ".entry NAME(" and counts
 * its .param lines. Filled in by main. */
static char ptx[4096];

static void write_ptx(void) {
  static const struct {
    const char *name;
    int params;
  } entries[] = {{"g_p0", 3},
                 {"g_p1", 3},
                 {"g_attention0", 13},
                 {"g_attention0_merge", 10},
                 {"g_attention0_mma", 13}};
  size_t length = (size_t)snprintf(ptx, sizeof ptx,
                                   ".version 8.0\n.target sm_90\n"
                                   ".address_size 64\n");
  for (size_t e = 0; e < sizeof entries / sizeof entries[0]; ++e) {
    length += (size_t)snprintf(ptx + length, sizeof ptx - length,
                               "\n.visible .entry %s(\n", entries[e].name);
    for (int p = 0; p < entries[e].params; ++p)
      length += (size_t)snprintf(
          ptx + length, sizeof ptx - length, "\t.param .u64 %s_param_%d%s\n",
          entries[e].name, p, p + 1 < entries[e].params ? "," : "");
    length += (size_t)snprintf(ptx + length, sizeof ptx - length,
                               ")\n{\n\tret;\n}\n");
  }
}

static const attnrt_cuda_code code = {ptx, 1, attentions, 2, functions};

/* What the entry does beyond the graph (the errors a test provokes). */
typedef enum mode {
  RUN,
  BAD_FUNCTION,
  WRONG_WORDS,
  NEGATIVE_THREADS,
  ZERO_THREADS,
  HUGE_THREADS,
  OWN_ERROR,
  OWN_OUT_OF_MEMORY,
  NOT_A_STATUS,
  TOO_FEW_TENSORS,
  BAD_OP,
  BAD_AXIS,
  MANY_ALLOCATIONS,
} mode;

static mode entry_mode;
/* What the last entry saw: its intermediates, and the pool's live
 * allocations once it had them. */
static void *seen_q, *seen_a;
static int live_in_entry;

static int64_t word(const void *pointer) { return (int64_t)(uintptr_t)pointer; }

/* What attnc generates for proj_attn, with the test's detours. */
static int32_t proj_attn_entry(attnrt_invocation *invocation,
                               const int64_t *dims, void *const *buffers) {
  int64_t b = dims[0], s = dims[1], t = dims[2];
  int64_t elements = b * 4 * s * 32;
  void *z = attnrt_allocate(invocation, 0); /* a distinct block too */
  if (!z)
    return ATTNRT_OUT_OF_MEMORY;
  void *q = attnrt_allocate(invocation, elements * 2);
  if (!q)
    return ATTNRT_OUT_OF_MEMORY;
  void *a = attnrt_allocate(invocation, elements * 2);
  if (!a)
    return ATTNRT_OUT_OF_MEMORY;
  seen_q = q;
  seen_a = a;
  live_in_entry = driver_counts()->workspaces_live;
  if (entry_mode == MANY_ALLOCATIONS)
    for (int n = 0; n < 40; ++n)
      if (!attnrt_allocate(invocation, 8 + n))
        return ATTNRT_OUT_OF_MEMORY;

  int64_t threads = entry_mode == ZERO_THREADS       ? 0
                    : entry_mode == NEGATIVE_THREADS ? -1
                    : entry_mode == HUGE_THREADS     ? INT64_MAX
                                                     : elements;
  int64_t p0_words[] = {word(buffers[0]), word(q), elements};
  int32_t status =
      attnrt_cuda_launch(invocation, entry_mode == BAD_FUNCTION ? 2 : 0,
                         threads, p0_words, entry_mode == WRONG_WORDS ? 2 : 3);
  if (status != ATTNRT_OK)
    return status;
  if (entry_mode == OWN_ERROR)
    return ATTNRT_SHAPE_MISMATCH;
  if (entry_mode == OWN_OUT_OF_MEMORY)
    return ATTNRT_OUT_OF_MEMORY;
  if (entry_mode == NOT_A_STATUS)
    return 42;

  int64_t q_shape[] = {b, 4, s, 32}, kv_shape[] = {b, 2, t, 32};
  attnrt_tensor tensors[] = {
      {q, ATTNRT_F16, entry_mode == BAD_AXIS ? 3 : 4, q_shape, NULL},
      {buffers[1], ATTNRT_F16, 4, kv_shape, NULL},
      {buffers[2], ATTNRT_F16, 4, kv_shape, NULL},
      {a, ATTNRT_F16, 4, q_shape, NULL}};
  status =
      attnrt_cuda_run_attention(invocation, entry_mode == BAD_OP ? 1 : 0,
                                tensors, entry_mode == TOO_FEW_TENSORS ? 3 : 4);
  if (status != ATTNRT_OK)
    return status;

  int64_t p1_words[] = {word(a), word(buffers[3]), elements};
  return attnrt_cuda_launch(invocation, 1, elements, p1_words, 3);
}

static const attnrt_kernel proj_attn_kernel = {
    4,  "proj_attn", 3,    dim_names,       3, inputs_info, 1,    outputs_info,
    16, "cuda-sm90", "{}", proj_attn_entry, 0, NULL,        &code};

/*===-- Tensors and checks ------------------------------------------------===*/

typedef struct device_tensor {
  int64_t shape[4];
  attnrt_tensor tensor;
} device_tensor;

static void make(device_tensor *t, int64_t b, int64_t heads, int64_t rows) {
  const int64_t shape[] = {b, heads, rows, 32};
  memcpy(t->shape, shape, sizeof shape);
  t->tensor = (attnrt_tensor){device_malloc((size_t)(b * heads * rows * 64), 0),
                              ATTNRT_F16, 4, t->shape, NULL};
}

static uint64_t address(const void *pointer) {
  return (uint64_t)(uintptr_t)pointer;
}

/* The tensors of proj_attn at B = 2, S = 5, T = 300. */
typedef struct arguments {
  device_tensor x, k, v, y;
  attnrt_tensor inputs[3];
} arguments;

static void make_arguments(arguments *args) {
  make(&args->x, 2, 4, 5);
  make(&args->k, 2, 2, 300);
  make(&args->v, 2, 2, 300);
  make(&args->y, 2, 4, 5);
  args->inputs[0] = args->x.tensor;
  args->inputs[1] = args->k.tensor;
  args->inputs[2] = args->v.tensor;
}

/* The launches of one run of proj_attn on `stream`: 1280 elements, 40 query
 * rows, so min(ceil(1024 / 40), ceil(300 / 256)) = 2 key splits, on the
 * tensor-core function (it takes split blocks) and the merge. */
static void expect_graph(const arguments *args, void *stream) {
  CHECK(driver_counts()->launches == 4, "%d launches",
        driver_counts()->launches);
  const uint64_t p0[] = {address(args->x.tensor.data), address(seen_q), 1280};
  expect_launch_of(0, "g_p0", 5, 1, 1, 256, 3, p0, stream);
  const uint64_t mma[] = {address(seen_q),
                          address(args->k.tensor.data),
                          address(args->v.tensor.data),
                          address(seen_a),
                          ANY,
                          2,
                          4,
                          2,
                          5,
                          300,
                          32,
                          32,
                          2};
  /* 5 rows of 2 query heads a kv head: one block of 64 rows, 2 splits. */
  expect_launch_of(1, "g_attention0_mma", 2, 2, 2, 128, 13, mma, stream);
  uint64_t merge[] = {ANY, address(seen_a), 2, 4, 2, 5, 300, 32, 32, 2};
  const fake_cuda_launch *first = driver_launch(1);
  merge[0] = first ? first->params[4] : 0;
  CHECK(merge[0] != 0, "no workspace");
  expect_launch_of(2, "g_attention0_merge", 2, 4, 2, 128, 10, merge, stream);
  const uint64_t p1[] = {address(seen_a), address(args->y.tensor.data), 1280};
  expect_launch_of(3, "g_p1", 10, 1, 1, 128, 3, p1, stream);
}

/*===-- The graph runs ----------------------------------------------------===*/

static void runs(attnrt_context *context, arguments *args) {
  int syncs = driver_counts()->synchronizations;
  int frees = driver_counts()->pool_frees;
  entry_mode = RUN;
  for (int round = 0; round < 2; ++round) {
    forget_launches();
    attnrt_status status = attnrt_invoke(context, &proj_attn_kernel,
                                         args->inputs, 3, &args->y.tensor, 1);
    CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
    expect_graph(args, NULL);
    CHECK(live_in_entry == 3, "%d allocations live in the entry",
          live_in_entry);
  }
  /* Per round: the three intermediates and the splits' workspace, each
   * from the pool and freed in stream order once queued launches use
   * them. */
  CHECK(driver_counts()->workspaces_live == 0 &&
            driver_counts()->pool_frees == frees + 8 &&
            driver_counts()->allocations_off_pool == 0,
        "%d allocations live, %d freed, %d off the pool",
        driver_counts()->workspaces_live, driver_counts()->pool_frees - frees,
        driver_counts()->allocations_off_pool);
  CHECK(driver_counts()->launches_before_last_free == 4,
        "the intermediates were freed after %d launches",
        driver_counts()->launches_before_last_free);
  CHECK(driver_counts()->synchronizations == syncs + 2,
        "attnrt_invoke waits: %d synchronizations",
        driver_counts()->synchronizations - syncs);
  CHECK(driver_counts()->last_pool_threshold == UINT64_MAX,
        "release threshold %llu",
        (unsigned long long)driver_counts()->last_pool_threshold);

  /* On a stream: everything queued there, nothing waited for. */
  void *stream = (void *)(uintptr_t)0x5e7;
  forget_launches();
  attnrt_status status = attnrt_invoke_on_stream(
      context, &proj_attn_kernel, args->inputs, 3, &args->y.tensor, 1, stream);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  expect_graph(args, stream);
  CHECK(driver_counts()->last_allocation_stream == stream &&
            driver_counts()->last_free_stream == stream &&
            driver_counts()->launches_before_last_free == 4,
        "allocated on %p, freed on %p after %d launches",
        driver_counts()->last_allocation_stream,
        driver_counts()->last_free_stream,
        driver_counts()->launches_before_last_free);
  CHECK(driver_counts()->workspaces_live == 0, "%d allocations live",
        driver_counts()->workspaces_live);
  CHECK(driver_counts()->synchronizations == syncs + 2,
        "attnrt_invoke_on_stream waited");

  /* Timed: four launches of 0.25 ms on the stand-in's clock. */
  double milliseconds = -1;
  forget_launches();
  status = attnrt_invoke_timed(context, &proj_attn_kernel, args->inputs, 3,
                               &args->y.tensor, 1, &milliseconds);
  CHECK(status == ATTNRT_OK && milliseconds == 1.0, "timed: %s %g ms",
        attnrt_context_last_error(context), milliseconds);
  expect_graph(args, NULL);

  /* No threads: no launch. All of them: CUDA's most blocks, which the
   * function's grid-stride loop makes enough. */
  entry_mode = ZERO_THREADS;
  forget_launches();
  status = attnrt_invoke(context, &proj_attn_kernel, args->inputs, 3,
                         &args->y.tensor, 1);
  CHECK(status == ATTNRT_OK && driver_counts()->launches == 3 &&
            driver_launch(0) &&
            strcmp(driver_launch(0)->function, "g_attention0_mma") == 0,
        "no threads: %s, %d launches", attnrt_context_last_error(context),
        driver_counts()->launches);
  entry_mode = HUGE_THREADS;
  forget_launches();
  status = attnrt_invoke(context, &proj_attn_kernel, args->inputs, 3,
                         &args->y.tensor, 1);
  CHECK(status == ATTNRT_OK && driver_launch(0) &&
            driver_launch(0)->grid[0] == 2147483647u,
        "INT64_MAX threads: %s, grid %u", attnrt_context_last_error(context),
        driver_launch(0) ? driver_launch(0)->grid[0] : 0);

  /* More intermediates than the invocation records in place. */
  entry_mode = MANY_ALLOCATIONS;
  frees = driver_counts()->pool_frees;
  forget_launches();
  status = attnrt_invoke(context, &proj_attn_kernel, args->inputs, 3,
                         &args->y.tensor, 1);
  CHECK(status == ATTNRT_OK && driver_counts()->launches == 4,
        "43 intermediates: %s", attnrt_context_last_error(context));
  CHECK(driver_counts()->workspaces_live == 0 &&
            driver_counts()->pool_frees == frees + 44,
        "%d allocations live, %d freed", driver_counts()->workspaces_live,
        driver_counts()->pool_frees - frees);
  entry_mode = RUN;
}

/*===-- Errors ------------------------------------------------------------===*/

/* Runs proj_attn in `m`: `expected`, a message with `message` in it, and no
 * allocation left behind. */
static void expect_failure(attnrt_context *context, arguments *args, mode m,
                           attnrt_status expected, const char *message) {
  entry_mode = m;
  forget_launches();
  attnrt_status status = attnrt_invoke(context, &proj_attn_kernel, args->inputs,
                                       3, &args->y.tensor, 1);
  CHECK(status == expected &&
            strstr(attnrt_context_last_error(context), message),
        "mode %d: %s %s (wanted %s: %s)", (int)m, attnrt_status_name(status),
        attnrt_context_last_error(context), attnrt_status_name(expected),
        message);
  CHECK(driver_counts()->workspaces_live == 0 &&
            driver_counts()->current_depth == 0,
        "mode %d: %d allocations live, context depth %d", (int)m,
        driver_counts()->workspaces_live, driver_counts()->current_depth);
  entry_mode = RUN;
}

static void errors(attnrt_context *context, arguments *args) {
  expect_failure(context, args, BAD_FUNCTION, ATTNRT_INVALID_ARGUMENT,
                 "kernel proj_attn: attnrt_cuda_launch of function 2; the "
                 "kernel has 2");
  expect_failure(context, args, WRONG_WORDS, ATTNRT_INVALID_ARGUMENT,
                 "kernel proj_attn: attnrt_cuda_launch of g_p0 with 2 words; "
                 "it takes 3");
  expect_failure(context, args, NEGATIVE_THREADS, ATTNRT_INVALID_ARGUMENT,
                 "kernel proj_attn: attnrt_cuda_launch of g_p0 for -1 "
                 "threads");
  expect_failure(context, args, OWN_ERROR, ATTNRT_SHAPE_MISMATCH,
                 "kernel proj_attn failed: ATTNRT_SHAPE_MISMATCH");
  expect_failure(context, args, OWN_OUT_OF_MEMORY, ATTNRT_OUT_OF_MEMORY,
                 "kernel proj_attn failed: ATTNRT_OUT_OF_MEMORY");
  expect_failure(context, args, NOT_A_STATUS, ATTNRT_INTERNAL,
                 "kernel proj_attn failed: status 42 (not an attnrt_status");
  expect_failure(context, args, TOO_FEW_TENSORS, ATTNRT_INVALID_ARGUMENT,
                 "kernel proj_attn: attention 0: parameter 3 of g_attention0 "
                 "is tensor 3, but 3 tensors were given");
  expect_failure(context, args, BAD_OP, ATTNRT_INVALID_ARGUMENT,
                 "kernel proj_attn: attnrt_cuda_run_attention of op 1; the "
                 "kernel has 1 attention ops");
  expect_failure(context, args, BAD_AXIS, ATTNRT_INVALID_ARGUMENT,
                 "kernel proj_attn: attention 0: size Dk is read from axis 3 "
                 "of tensor 0, which has rank 3");

  /* The driver out of memory: the zero-byte block it gave is freed. */
  setenv("FAKE_CUDA_POOL_LIMIT", "1000", 1);
  int frees = driver_counts()->pool_frees;
  expect_failure(context, args, RUN, ATTNRT_OUT_OF_MEMORY,
                 "kernel proj_attn: cannot allocate 2560 bytes for an "
                 "intermediate on CUDA device 0: CUDA_ERROR_OUT_OF_MEMORY");
  CHECK(driver_counts()->pool_frees == frees + 1, "%d freed",
        driver_counts()->pool_frees - frees);
  unsetenv("FAKE_CUDA_POOL_LIMIT");

  /* A launch the driver refuses, after the attention op's. */
  setenv("FAKE_CUDA_LAUNCH_ERROR", "g_p1", 1);
  expect_failure(context, args, RUN, ATTNRT_INTERNAL,
                 "kernel proj_attn: launching g_p1 failed: "
                 "CUDA_ERROR_INVALID_VALUE");
  unsetenv("FAKE_CUDA_LAUNCH_ERROR");

  /* Without an invocation there is no context to say why in. */
  int64_t words[3] = {0, 0, 0};
  attnrt_tensor none[1];
  memset(none, 0, sizeof none);
  CHECK(attnrt_cuda_launch(NULL, 0, 1, words, 3) == ATTNRT_INVALID_ARGUMENT,
        "attnrt_cuda_launch(NULL)");
  CHECK(attnrt_cuda_run_attention(NULL, 0, none, 1) == ATTNRT_INVALID_ARGUMENT,
        "attnrt_cuda_run_attention(NULL)");
  CHECK(attnrt_allocate(NULL, 8) == NULL, "attnrt_allocate(NULL)");
}

/* A CPU kernel's entry that calls the CUDA services. */
static attnrt_context *cpu_entry_context;
static int32_t cpu_launch_status, cpu_attention_status;
static char cpu_launch_error[512], cpu_attention_error[512];

static int32_t cpu_entry(attnrt_invocation *invocation, const int64_t *dims,
                         void *const *buffers) {
  (void)dims;
  int64_t words[1] = {word(buffers[0])};
  cpu_launch_status = attnrt_cuda_launch(invocation, 0, 1, words, 1);
  snprintf(cpu_launch_error, sizeof cpu_launch_error, "%s",
           attnrt_context_last_error(cpu_entry_context));
  attnrt_tensor tensor = {buffers[0], ATTNRT_F32, 0, NULL, NULL};
  cpu_attention_status = attnrt_cuda_run_attention(invocation, 0, &tensor, 1);
  snprintf(cpu_attention_error, sizeof cpu_attention_error, "%s",
           attnrt_context_last_error(cpu_entry_context));
  /* Host memory as ever. */
  return attnrt_allocate(invocation, 16) ? ATTNRT_OK : ATTNRT_OUT_OF_MEMORY;
}

static void from_a_cpu_kernel(void) {
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  attnrt_context *context = NULL;
  CHECK(attnrt_context_create(&options, &context) == ATTNRT_OK, "context");
  static const int64_t dims[] = {4};
  static const attnrt_arg_info info[] = {{"a", ATTNRT_F32, 1, dims}};
  const attnrt_kernel kernel = {
      ATTNRT_ABI_VERSION, "cpu_entry", 0,         NULL, 1,    info, 0, NULL, 4,
      "x86-64",           "{}",        cpu_entry, 0,    NULL, NULL};
  float data[4] = {0};
  const int64_t shape[] = {4};
  attnrt_tensor input = {data, ATTNRT_F32, 1, shape, NULL};
  cpu_entry_context = context;
  attnrt_status status = attnrt_invoke(context, &kernel, &input, 1, NULL, 0);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  CHECK(cpu_launch_status == ATTNRT_INVALID_ARGUMENT &&
            strcmp(cpu_launch_error,
                   "attnrt_cuda_launch: the invocation is not of a CUDA "
                   "kernel's entry (its kernel runs on the CPU)") == 0,
        "%d %s", cpu_launch_status, cpu_launch_error);
  CHECK(cpu_attention_status == ATTNRT_INVALID_ARGUMENT &&
            strstr(cpu_attention_error, "attnrt_cuda_run_attention: the "
                                        "invocation is not of a CUDA"),
        "%d %s", cpu_attention_status, cpu_attention_error);
  attnrt_context_release(context);
}

/*===-- Descriptors -------------------------------------------------------===*/

/* The variants below are copies on the stack, changed between invokes: each
 * runs on a context of its own, which has neither checked nor loaded a
 * descriptor at that address (a context trusts a descriptor once it
 * passed, and keeps its module). */
static void expect_invalid(const attnrt_kernel *kernel, arguments *args,
                           const char *message) {
  attnrt_context *context = context_on(0);
  forget_launches();
  attnrt_status status =
      attnrt_invoke(context, kernel, args->inputs, 3, &args->y.tensor, 1);
  CHECK(status == ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(context), message),
        "%s %s (wanted: %s)", attnrt_status_name(status),
        attnrt_context_last_error(context), message);
  CHECK(driver_counts()->launches == 0, "%d launches",
        driver_counts()->launches);
  attnrt_context_release(context);
}

static void descriptors(arguments *args) {
  /* An entry in a CUDA kernel before version 4. */
  attnrt_kernel old = proj_attn_kernel;
  old.abi_version = 3;
  expect_invalid(&old, args,
                 "kernel proj_attn targets cuda-sm90 with an entry, which "
                 "needs ABI version 4 (a host program); this descriptor has "
                 "version 3");

  attnrt_cuda_function bad_functions[2] = {functions[0], functions[1]};
  attnrt_cuda_code bad_code = code;
  bad_code.functions = bad_functions;
  attnrt_kernel bad = proj_attn_kernel;
  bad.cuda = &bad_code;
  bad_functions[1].block_threads = 0;
  expect_invalid(&bad, args,
                 "kernel proj_attn: function g_p1 has a bad launch (3 params, "
                 "block of 0 threads)");
  bad_functions[1] = functions[1];
  bad_functions[1].num_params = 65;
  expect_invalid(&bad, args,
                 "kernel proj_attn: function g_p1 has a bad launch (65 "
                 "params");
  bad_functions[1] = functions[1];
  bad_functions[1].name = NULL;
  expect_invalid(&bad, args, "kernel proj_attn: function 1 has no name");
  bad_functions[1] = functions[1];
  bad_code.num_functions = -1;
  expect_invalid(&bad, args,
                 "kernel proj_attn: its CUDA code has -1 functions");
  bad_code.num_functions = 2;
  /* A name the PTX lacks: found out when the module loads. */
  bad_functions[1].name = "g_missing";
  expect_invalid(&bad, args,
                 "kernel proj_attn: its PTX has no function g_missing");
  bad_functions[1] = functions[1];

  /* The op's tensors are counted when the entry hands them over, but a
   * parameter past the most a function takes names none. */
  attnrt_cuda_attention bad_attention = attentions[0];
  int32_t far_params[13];
  memcpy(far_params, attention_params, sizeof far_params);
  far_params[3] = 64;
  bad_attention.attention.params = far_params;
  bad_code.attentions = &bad_attention;
  expect_invalid(&bad, args,
                 "kernel proj_attn: function g_attention0: parameter 3 is 64, "
                 "which names nothing");
  bad_attention = attentions[0];
  bad_attention.size_sources[ATTNRT_CUDA_DK][1] = -1;
  expect_invalid(&bad, args,
                 "kernel proj_attn: attention 0: size 5 is read from no "
                 "tensor axis");
  /* Numbering beyond the kernel's 4 arguments is fine in a program... */
  bad_attention = attentions[0];
  bad_attention.size_sources[ATTNRT_CUDA_DK][0] = 7;
  forget_launches();
  entry_mode = RUN;
  attnrt_context *context = context_on(0);
  attnrt_status status =
      attnrt_invoke(context, &bad, args->inputs, 3, &args->y.tensor, 1);
  CHECK(status == ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(context),
                   "kernel proj_attn: attention 0: size Dk is read from "
                   "tensor 7, but 4 tensors were given"),
        "...until the entry hands 4 over: %s %s", attnrt_status_name(status),
        attnrt_context_last_error(context));
  attnrt_context_release(context);
  /* ...but not without an entry. */
  attnrt_kernel plain = bad;
  plain.entry = NULL;
  expect_invalid(&plain, args,
                 "kernel proj_attn: attention 0: size 5 is read from no "
                 "tensor axis");

  /* A program of no attention op; a kernel without one has nothing to run. */
  attnrt_cuda_code no_attention = code;
  no_attention.num_attentions = 0;
  no_attention.attentions = NULL;
  attnrt_kernel copy = proj_attn_kernel;
  copy.name = "copy_only";
  copy.cuda = &no_attention;
  entry_mode = OWN_ERROR; /* returns after g_p0 */
  forget_launches();
  context = context_on(0);
  status = attnrt_invoke(context, &copy, args->inputs, 3, &args->y.tensor, 1);
  CHECK(status == ATTNRT_SHAPE_MISMATCH && driver_counts()->launches == 1,
        "a program without attention: %s %s, %d launches",
        attnrt_status_name(status), attnrt_context_last_error(context),
        driver_counts()->launches);
  attnrt_context_release(context);
  entry_mode = RUN;
  copy.entry = NULL;
  expect_invalid(&copy, args,
                 "kernel copy_only: its CUDA code has no PTX or no attention "
                 "ops");
}

/* Kernels without an entry, of version 3 (whose code ends before the
 * functions: here garbage the runtime must not read) and 4: the runtime
 * launches the attention op on the kernel's arguments q, k, v, o. */
static void without_entry(void) {
  attnrt_context *context = context_on(0);
  device_tensor q, k, v, o;
  make(&q, 2, 4, 5);
  make(&k, 2, 2, 300);
  make(&v, 2, 2, 300);
  make(&o, 2, 4, 5);
  attnrt_tensor inputs[] = {q.tensor, k.tensor, v.tensor};
  static const attnrt_arg_info plain_inputs[] = {{"q", ATTNRT_F16, 4, x_dims},
                                                 {"k", ATTNRT_F16, 4, kv_dims},
                                                 {"v", ATTNRT_F16, 4, kv_dims}};
  static const attnrt_arg_info plain_outputs[] = {{"o", ATTNRT_F16, 4, x_dims}};
  attnrt_cuda_code v3_code = {
      ptx, 1, attentions, -1,
      (const attnrt_cuda_function *)(uintptr_t)1 /* not to be read */};
  attnrt_cuda_code v4_code = {ptx, 1, attentions, 0, NULL};
  const attnrt_kernel kernels[] = {
      {3, "plain_v3", 3, dim_names, 3, plain_inputs, 1, plain_outputs, 16,
       "cuda-sm90", "{}", NULL, 0, NULL, &v3_code},
      {4, "plain_v4", 3, dim_names, 3, plain_inputs, 1, plain_outputs, 16,
       "cuda-sm90", "{}", NULL, 0, NULL, &v4_code}};
  for (int n = 0; n < 2; ++n) {
    forget_launches();
    attnrt_status status =
        attnrt_invoke(context, &kernels[n], inputs, 3, &o.tensor, 1);
    CHECK(status == ATTNRT_OK, "%s: %s", kernels[n].name,
          attnrt_context_last_error(context));
    CHECK(driver_counts()->launches == 2, "%s: %d launches", kernels[n].name,
          driver_counts()->launches);
    const uint64_t mma[] = {address(q.tensor.data),
                            address(k.tensor.data),
                            address(v.tensor.data),
                            address(o.tensor.data),
                            ANY,
                            2,
                            4,
                            2,
                            5,
                            300,
                            32,
                            32,
                            2};
    expect_launch_of(0, "g_attention0_mma", 2, 2, 2, 128, 13, mma, NULL);
    uint64_t merge[] = {ANY, address(o.tensor.data), 2, 4, 2, 5, 300, 32, 32,
                        2};
    expect_launch_of(1, "g_attention0_merge", 2, 4, 2, 128, 10, merge, NULL);
  }
  CHECK(driver_counts()->workspaces_live == 0, "%d allocations live",
        driver_counts()->workspaces_live);
  attnrt_context_release(context);
}

int main(void) {
  if (attach_stand_in())
    return 1;
  write_ptx();

  attnrt_context *context = context_on(0);
  arguments args;
  make_arguments(&args);
  runs(context, &args);
  errors(context, &args);
  CHECK(driver_counts()->module_loads == 1, "%d module loads",
        driver_counts()->module_loads);
  attnrt_context_release(context);
  from_a_cpu_kernel();
  descriptors(&args);
  without_entry();
  CHECK(driver_counts()->current_depth == 0, "context stack depth %d",
        driver_counts()->current_depth);
  CHECK(driver_counts()->primary_retained == 0 &&
            driver_counts()->pools_live == 0,
        "after release: retained %d, %d pools",
        driver_counts()->primary_retained, driver_counts()->pools_live);

  printf("%s\n", failures ? "cuda entry: FAILED" : "cuda entry: ok");
  return failures != 0;
}
