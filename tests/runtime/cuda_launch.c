/*===- cuda_launch.c - libattnrt's CUDA launcher against a stand-in driver -===*
 *
 * Four graphs compiled by attnc for cuda-sm90 (decode with key splits, cross
 * attention with key lengths on the tensor-core kernel, f32 causal on the
 * SIMT kernel, a GPT-2 block whose host entry launches its projections and
 * reshapes around the attention) invoked through libattnrt with the stand-in
 *driver of fake_cuda_driver.c, which records every launch: the functions
 *chosen, the grids, the blocks and each parameter are checked against what the
 * kernels' design says (docs/design/gpu.md), and the module cache, the
 * stream, the workspace and the errors a user can meet (a host pointer,
 * another device's memory, no such device, an older GPU, PTX the driver
 * refuses, a CPU context). Run with ATTNRT_CUDA_DRIVER naming the stand-in.
 *
 *===----------------------------------------------------------------------===*/

#include "cuda_test.h"

#include "cross_attention.h"
#include "gpt2_block_attn.h"
#include "llama3_gqa_decode.h"
#include "sdpa_exporter_causal.h"

/* A dense tensor of `rank` dims in device memory of `ordinal`. */
typedef struct device_tensor {
  int64_t shape[4];
  attnrt_tensor tensor;
} device_tensor;

static void make(device_tensor *t, attnrt_dtype dtype, int ordinal, int rank,
                 const int64_t *shape) {
  size_t bytes = attnrt_dtype_size(dtype);
  for (int d = 0; d < rank; ++d) {
    t->shape[d] = shape[d];
    bytes *= (size_t)shape[d];
  }
  t->tensor = (attnrt_tensor){device_malloc(bytes, ordinal), dtype, rank,
                              t->shape, NULL};
}

/* q, k and v of `dtype`, and the output o shaped like q. */
static void make_attention(device_tensor *q, device_tensor *k, device_tensor *v,
                           device_tensor *o, attnrt_dtype dtype,
                           const int64_t *q_shape, const int64_t *kv_shape) {
  make(q, dtype, 0, 4, q_shape);
  make(k, dtype, 0, 4, kv_shape);
  make(v, dtype, 0, 4, kv_shape);
  make(o, dtype, 0, 4, q_shape);
}

static uint64_t address(const device_tensor *t) {
  return (uint64_t)(uintptr_t)t->tensor.data;
}

/* The attention kernels' blocks: 128 threads. */
static void expect_launch(int index, const char *function, unsigned gx,
                          unsigned gy, unsigned gz, int num_params,
                          const uint64_t *params, void *stream) {
  expect_launch_of(index, function, gx, gy, gz, 128, num_params, params,
                   stream);
}

static void decode(attnrt_context *context) {
  /* B = 1, T = 1000: the tensor-core kernel's rule wants 1024 rows and 256
   * keys a part, so min(ceil(1024 / 32), ceil(1000 / 256)) = 4 key splits.
   * The 4 query heads of each of 8 kv heads in one row block, its 4 parts
   * along x, then the merge. */
  const int64_t q_shape[] = {1, 32, 1, 128}, kv_shape[] = {1, 8, 1000, 128};
  device_tensor q, k, v, o;
  make_attention(&q, &k, &v, &o, ATTNRT_BF16, q_shape, kv_shape);
  attnrt_tensor inputs[] = {q.tensor, k.tensor, v.tensor};
  int syncs = driver_counts()->synchronizations;
  for (int round = 0; round < 2; ++round) {
    forget_launches();
    attnrt_status status = llama3_gqa_decode(context, inputs, &o.tensor);
    CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
    CHECK(driver_counts()->launches == 2, "%d launches",
          driver_counts()->launches);
    const uint64_t attention[] = {
        address(&q), address(&k), address(&v), address(&o), ANY, 1, 32,
        8,           1,           1000,        128,         128, 4};
    expect_launch(0, "llama3_gqa_decode_attention0_mma", 4, 8, 1, 13, attention,
                  NULL);
    uint64_t merge[] = {ANY, address(&o), 1, 32, 8, 1, 1000, 128, 128, 4};
    merge[0] = driver_launch(0) ? driver_launch(0)->params[4] : 0;
    expect_launch(1, "llama3_gqa_decode_attention0_merge", 1, 32, 1, 10, merge,
                  NULL);
    CHECK(merge[0] != 0, "no workspace");
  }
  /* f32 m, l and Dv columns per (row, split). */
  CHECK(driver_counts()->last_workspace_bytes == 4 * 32 * (4 * 128 + 8),
        "workspace of %zu bytes", driver_counts()->last_workspace_bytes);
  CHECK(driver_counts()->workspaces_live == 0, "%d workspaces left",
        driver_counts()->workspaces_live);
  /* From the context's pool, which keeps its memory: no allocation from the
   * driver on the hot path once it holds enough. */
  CHECK(driver_counts()->pools_live == 1 &&
            driver_counts()->last_pool_threshold == UINT64_MAX &&
            driver_counts()->allocations_off_pool == 0,
        "%d pools, release threshold %llu, %d workspaces off the pool",
        driver_counts()->pools_live,
        (unsigned long long)driver_counts()->last_pool_threshold,
        driver_counts()->allocations_off_pool);
  CHECK(driver_counts()->synchronizations == syncs + 2,
        "attnrt_invoke waits: %d synchronizations",
        driver_counts()->synchronizations - syncs);

  /* On a stream: passed through, not waited for. */
  forget_launches();
  void *stream = (void *)(uintptr_t)0x5e7;
  attnrt_status status =
      llama3_gqa_decode_on_stream(context, inputs, &o.tensor, stream);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  const uint64_t attention[] = {
      address(&q), address(&k), address(&v), address(&o), ANY, 1, 32,
      8,           1,           1000,        128,         128, 4};
  expect_launch(0, "llama3_gqa_decode_attention0_mma", 4, 8, 1, 13, attention,
                stream);
  CHECK(driver_counts()->synchronizations == syncs + 2,
        "attnrt_invoke_on_stream waited");

  /* B = 200: 6400 rows fill the GPU, no split; the tensor-core kernel, 64
   * rows a block: the 4 rows of each kv head. */
  const int64_t big_q[] = {200, 32, 1, 128}, big_kv[] = {200, 8, 64, 128};
  device_tensor bq, bk, bv, bo;
  make_attention(&bq, &bk, &bv, &bo, ATTNRT_BF16, big_q, big_kv);
  attnrt_tensor big_inputs[] = {bq.tensor, bk.tensor, bv.tensor};
  forget_launches();
  status = llama3_gqa_decode(context, big_inputs, &bo.tensor);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  CHECK(driver_counts()->launches == 1, "%d launches",
        driver_counts()->launches);
  const uint64_t mma[] = {address(&bq),
                          address(&bk),
                          address(&bv),
                          address(&bo),
                          0,
                          200,
                          32,
                          8,
                          1,
                          64,
                          128,
                          128,
                          1};
  expect_launch(0, "llama3_gqa_decode_attention0_mma", 1, 8, 200, 13, mma,
                NULL);

  /* What a user can get wrong. */
  void *host = aligned_alloc(64, 1 * 32 * 128 * 2);
  attnrt_tensor wrong[] = {q.tensor, k.tensor, v.tensor};
  wrong[0].data = host;
  status = llama3_gqa_decode(context, wrong, &o.tensor);
  CHECK(status == ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(context), "input q: data ") &&
            strstr(attnrt_context_last_error(context),
                   "is not memory of the CUDA driver"),
        "host pointer: %s %s", attnrt_status_name(status),
        attnrt_context_last_error(context));
  free(host);
  device_tensor other;
  make(&other, ATTNRT_BF16, 1, 4, q_shape);
  wrong[0].data = other.tensor.data;
  status = llama3_gqa_decode(context, wrong, &o.tensor);
  CHECK(status == ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(context),
                   "input q: data is memory of CUDA device 1; this context "
                   "runs on device 0"),
        "another device: %s", attnrt_context_last_error(context));
  wrong[0].data = (char *)q.tensor.data + 8;
  wrong[0].shape = (const int64_t[]){1, 32, 1, 120};
  status =
      attnrt_invoke(context, &llama3_gqa_decode_kernel, wrong, 3, &o.tensor, 1);
  CHECK(status == ATTNRT_SHAPE_MISMATCH, "%s %s", attnrt_status_name(status),
        attnrt_context_last_error(context));
  wrong[0].shape = q.shape;
  status =
      attnrt_invoke(context, &llama3_gqa_decode_kernel, wrong, 3, &o.tensor, 1);
  CHECK(status == ATTNRT_LAYOUT_MISMATCH &&
            strstr(attnrt_context_last_error(context), "16-byte aligned"),
        "misaligned: %s %s", attnrt_status_name(status),
        attnrt_context_last_error(context));
}

static void cross(attnrt_context *context) {
  /* B = 2, S = 300: 7200 rows, no split; key lengths the fourth input. */
  const int64_t q_shape[] = {2, 12, 300, 64}, kv_shape[] = {2, 12, 77, 64},
                lengths_shape[] = {2};
  device_tensor q, k, v, lengths, o;
  make(&q, ATTNRT_F16, 0, 4, q_shape);
  make(&k, ATTNRT_F16, 0, 4, kv_shape);
  make(&v, ATTNRT_F16, 0, 4, kv_shape);
  make(&lengths, ATTNRT_I32, 0, 1, lengths_shape);
  make(&o, ATTNRT_F16, 0, 4, q_shape);
  attnrt_tensor inputs[] = {q.tensor, k.tensor, v.tensor, lengths.tensor};
  forget_launches();
  attnrt_status status = cross_attention(context, inputs, &o.tensor);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  const uint64_t mma[] = {address(&q), address(&k),
                          address(&v), address(&lengths),
                          address(&o), 0,
                          2,           12,
                          12,          300,
                          77,          64,
                          64,          1};
  expect_launch(0, "cross_attention_attention0_mma", 5, 12, 2, 14, mma, NULL);
}

static void causal(attnrt_context *context) {
  /* f32, B = 1, S = T = 7: 84 rows would split, but 7 keys make one
   * split; no tensor-core kernel for f32, so the SIMT kernel. */
  const int64_t shape[] = {1, 12, 7, 64};
  device_tensor q, k, v, o;
  make_attention(&q, &k, &v, &o, ATTNRT_F32, shape, shape);
  attnrt_tensor inputs[] = {q.tensor, k.tensor, v.tensor};
  forget_launches();
  attnrt_status status = sdpa_exporter_causal(context, inputs, &o.tensor);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  CHECK(driver_counts()->launches == 1, "%d launches",
        driver_counts()->launches);
  const uint64_t simt[] = {
      address(&q), address(&k), address(&v), address(&o), 0,  1, 12,
      12,          7,           7,           64,          64, 1};
  expect_launch(0, "sdpa_exporter_causal_attention0", 2, 12, 1, 13, simt, NULL);
}

/* A GPT-2 block (projections, reshapes, causal attention, output
 * projection) at B = 1, S = 5: its host entry launches a kernel per
 * projection (256 threads a block, a warp per 4 x 4 tile of the result:
 * 2 x 192 tiles, 12288 threads, 48 blocks), each taking its tensors'
 * addresses and sizes;
 * the reshapes are views (no kernel: the attention reads the projections'
 * results, the output projection the attention's); the attention op runs
 * through the launcher (60 rows and 5 keys: one split); every intermediate
 * comes from the pool and is freed after. */
static void block(attnrt_context *context, void *stream) {
  const int64_t x_shape[] = {1, 5, 768}, w_shape[] = {768, 768},
                b_shape[] = {768};
  device_tensor x, w[4], b[4], y;
  make(&x, ATTNRT_F32, 0, 3, x_shape);
  make(&y, ATTNRT_F32, 0, 3, x_shape);
  attnrt_tensor inputs[9] = {x.tensor};
  for (int p = 0; p < 4; ++p) {
    make(&w[p], ATTNRT_F32, 0, 2, w_shape);
    make(&b[p], ATTNRT_F32, 0, 1, b_shape);
    inputs[1 + 2 * p] = w[p].tensor;
    inputs[2 + 2 * p] = b[p].tensor;
  }
  forget_launches();
  int frees = driver_counts()->pool_frees;
  attnrt_status status =
      gpt2_block_attn_on_stream(context, inputs, &y.tensor, stream);
  CHECK(status == ATTNRT_OK, "%s", attnrt_context_last_error(context));
  CHECK(driver_counts()->launches == 5, "%d launches",
        driver_counts()->launches);
  /* q, k, v and the attention's output. */
  CHECK(driver_counts()->pool_frees - frees == 4 &&
            driver_counts()->workspaces_live == 0 &&
            driver_counts()->last_free_stream == stream &&
            driver_counts()->launches_before_last_free == 5,
        "%d intermediates freed, %d live", driver_counts()->pool_frees - frees,
        driver_counts()->workspaces_live);
  /* linear: x, w, b, its result; their sizes. */
  uint64_t result[3];
  for (int p = 0; p < 3; ++p) {
    const uint64_t linear[] = {address(&x),
                               address(&w[p]),
                               address(&b[p]),
                               ANY,
                               1,
                               5,
                               768,
                               768,
                               768,
                               768,
                               1,
                               5,
                               768};
    char name[64];
    snprintf(name, sizeof name, "gpt2_block_attn_p%d", p);
    expect_launch_of(p, name, 48, 1, 1, 256, 13, linear, stream);
    result[p] = driver_launch(p) ? driver_launch(p)->params[3] : 0;
  }
  CHECK(result[0] != result[1] && result[1] != result[2] &&
            result[0] != result[2],
        "q, k and v share memory");
  /* bshd: B 1, Hq = Hkv = 12, S = T = 5, D 64; 60 rows, one split. */
  const uint64_t attention[] = {result[0], result[1], result[2], ANY, 0,  1, 12,
                                12,        5,         5,         64,  64, 1};
  expect_launch(3, "gpt2_block_attn_attention0", 2, 12, 1, 13, attention,
                stream);
  uint64_t attended = driver_launch(3) ? driver_launch(3)->params[3] : 0;
  const uint64_t projection[] = {attended,
                                 address(&w[3]),
                                 address(&b[3]),
                                 address(&y),
                                 1,
                                 5,
                                 768,
                                 768,
                                 768,
                                 768,
                                 1,
                                 5,
                                 768};
  expect_launch_of(4, "gpt2_block_attn_p3", 48, 1, 1, 256, 13, projection,
                   stream);
}

/* attnrt_device_allocate, upload, download and attnrt_invoke_timed. */
/* A descriptor whose tensor-core function says its rows are both (row,
 * part) pairs and split blocks: refused before anything launches. */
static void bad_row_flags(attnrt_context *context) {
  const attnrt_cuda_code *code = llama3_gqa_decode_kernel.cuda;
  attnrt_cuda_attention attention = code->attentions[0];
  attention.tensor_core.row_flags =
      ATTNRT_CUDA_ROWS_SPLIT | ATTNRT_CUDA_BLOCKS_SPLIT;
  attnrt_cuda_code broken_code = *code;
  broken_code.attentions = &attention;
  attnrt_kernel broken = llama3_gqa_decode_kernel;
  broken.cuda = &broken_code;
  const int64_t q_shape[] = {1, 32, 1, 128}, kv_shape[] = {1, 8, 100, 128};
  device_tensor q, k, v, o;
  make_attention(&q, &k, &v, &o, ATTNRT_BF16, q_shape, kv_shape);
  attnrt_tensor inputs[] = {q.tensor, k.tensor, v.tensor};
  forget_launches();
  attnrt_status status =
      attnrt_invoke(context, &broken, inputs, 3, &o.tensor, 1);
  CHECK(status == ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(context),
                   "llama3_gqa_decode_attention0_mma has a bad launch") &&
            strstr(attnrt_context_last_error(context), "row flags 5"),
        "%s: %s", attnrt_status_name(status),
        attnrt_context_last_error(context));
  CHECK(driver_counts()->launches == 0, "%d launches",
        driver_counts()->launches);
}

static void memory_and_timing(attnrt_context *context) {
  const int64_t q_shape[] = {1, 32, 1, 128}, kv_shape[] = {1, 8, 300, 128};
  attnrt_tensor tensors[4];
  const int64_t *shapes[] = {q_shape, kv_shape, kv_shape, q_shape};
  size_t bytes[4];
  for (int t = 0; t < 4; ++t) {
    bytes[t] = 2 * (size_t)shapes[t][1] * (size_t)shapes[t][2] * 128;
    void *data = NULL;
    attnrt_status status = attnrt_device_allocate(context, bytes[t], &data);
    CHECK(status == ATTNRT_OK && data, "allocate: %s",
          attnrt_context_last_error(context));
    tensors[t] = (attnrt_tensor){data, ATTNRT_BF16, 4, shapes[t], NULL};
  }
  unsigned char host[2 * 32 * 128], back[2 * 32 * 128];
  for (size_t i = 0; i < sizeof host; ++i)
    host[i] = (unsigned char)(i * 7);
  CHECK(attnrt_device_upload(context, tensors[0].data, host, sizeof host) ==
            ATTNRT_OK,
        "upload: %s", attnrt_context_last_error(context));
  CHECK(attnrt_device_download(context, back, tensors[0].data, sizeof back) ==
                ATTNRT_OK &&
            memcmp(host, back, sizeof host) == 0,
        "download: %s", attnrt_context_last_error(context));
  CHECK(attnrt_device_upload(context, tensors[0].data, host, sizeof host + 1) ==
                ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(context),
                   "attnrt_device_upload of 8193 bytes: "
                   "CUDA_ERROR_INVALID_VALUE"),
        "upload past the end: %s", attnrt_context_last_error(context));

  /* 32 rows, 300 keys: ceil(300 / 256) = 2 splits, two launches, each 0.25
   * ms on the stand-in's clock. */
  double milliseconds = -1;
  forget_launches();
  attnrt_status status =
      attnrt_invoke_timed(context, &llama3_gqa_decode_kernel, tensors, 3,
                          &tensors[3], 1, &milliseconds);
  CHECK(status == ATTNRT_OK && milliseconds == 0.5, "timed: %s %g ms",
        attnrt_context_last_error(context), milliseconds);
  const fake_cuda_launch *first = driver_launch(0);
  CHECK(first && first->params[12] == 2, "splits %llu",
        first ? (unsigned long long)first->params[12] : 0ull);
  for (int t = 0; t < 4; ++t)
    attnrt_device_release(context, tensors[t].data);
}

/* A context whose setup or module load fails says why, per invoke. */
static void expect_unavailable(int ordinal, const char *variable,
                               const char *value, const char *message) {
  if (variable)
    setenv(variable, value, 1);
  attnrt_context *context = context_on(ordinal);
  const int64_t shape[] = {1, 12, 7, 64};
  device_tensor q, k, v, o;
  make_attention(&q, &k, &v, &o, ATTNRT_F32, shape, shape);
  attnrt_tensor inputs[] = {q.tensor, k.tensor, v.tensor};
  attnrt_status status = sdpa_exporter_causal(context, inputs, &o.tensor);
  CHECK(status == ATTNRT_UNAVAILABLE &&
            strstr(attnrt_context_last_error(context), message),
        "%s %s (wanted: %s)", attnrt_status_name(status),
        attnrt_context_last_error(context), message);
  attnrt_context_release(context);
  if (variable)
    unsetenv(variable);
}

int main(void) {
  if (attach_stand_in())
    return 1;

  /* A CPU context does not run CUDA kernels. */
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  attnrt_context *cpu = NULL;
  CHECK(attnrt_context_create(&options, &cpu) == ATTNRT_OK, "cpu context");
  const int64_t shape[] = {1, 12, 7, 64};
  device_tensor q;
  make(&q, ATTNRT_F32, 0, 4, shape);
  attnrt_tensor inputs[] = {q.tensor, q.tensor, q.tensor};
  device_tensor o;
  make(&o, ATTNRT_F32, 0, 4, shape);
  attnrt_status status = sdpa_exporter_causal(cpu, inputs, &o.tensor);
  CHECK(status == ATTNRT_INVALID_ARGUMENT &&
            strstr(attnrt_context_last_error(cpu),
                   "this context runs kernels on the CPU"),
        "%s", attnrt_context_last_error(cpu));
  void *data = &data;
  status = attnrt_device_allocate(cpu, 64, &data);
  CHECK(status == ATTNRT_INVALID_ARGUMENT && data == NULL &&
            strstr(attnrt_context_last_error(cpu),
                   "attnrt_device_allocate of 64 bytes: this context runs "
                   "kernels on the CPU"),
        "allocate on a CPU context: %s", attnrt_context_last_error(cpu));
  attnrt_context_release(cpu);
  CHECK(attnrt_context_create_on_device(&options, ATTNRT_DEVICE_CPU, 1, &cpu) ==
            ATTNRT_INVALID_ARGUMENT,
        "CPU device 1");
  CHECK(attnrt_context_create_on_device(&options, ATTNRT_DEVICE_CUDA, -1,
                                        &cpu) == ATTNRT_INVALID_ARGUMENT,
        "CUDA device -1");

  attnrt_context *context = context_on(0);
  decode(context);
  cross(context);
  causal(context);
  bad_row_flags(context);
  memory_and_timing(context);
  block(context, (void *)&failures);
  CHECK(driver_counts()->module_loads == 4,
        "%d module loads for 4 kernels on one context",
        driver_counts()->module_loads);
  CHECK(driver_counts()->current_depth == 0, "context stack depth %d",
        driver_counts()->current_depth);
  attnrt_context_release(context);
  CHECK(driver_counts()->module_unloads == 4, "%d modules unloaded",
        driver_counts()->module_unloads);
  CHECK(driver_counts()->primary_retained == 0,
        "primary context retained %d times after release",
        driver_counts()->primary_retained);
  CHECK(driver_counts()->pools_live == 0, "%d pools left after release",
        driver_counts()->pools_live);

  expect_unavailable(5, NULL, NULL,
                     "no CUDA device 5 (the driver counts 2): "
                     "CUDA_ERROR_INVALID_DEVICE");
  expect_unavailable(0, "FAKE_CUDA_COMPUTE", "80",
                     "kernel sdpa_exporter_causal targets cuda-sm90; CUDA "
                     "device 0 is sm_80, which runs --target cuda-sm80");
  expect_unavailable(0, "FAKE_CUDA_JIT_ERROR", "1",
                     "the CUDA driver cannot load its PTX for sm_90: "
                     "CUDA_ERROR_INVALID_PTX: ptxas fatal   : fake JIT "
                     "failure");
  CHECK(driver_counts()->primary_retained == 0 &&
            driver_counts()->current_depth == 0,
        "after failures: retained %d, depth %d",
        driver_counts()->primary_retained, driver_counts()->current_depth);

  printf("%s\n", failures ? "cuda launch: FAILED" : "cuda launch: ok");
  return failures != 0;
}
