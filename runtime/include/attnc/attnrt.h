/*===- attnrt.h - The attnc runtime: C API for compiled kernels ---*- C -*-===*
 *
 * Applications link the objects `attnc compile` writes (NAME.o + NAME.h)
 * against this small library, libattnrt, and nothing else: no compiler, no
 * MLIR, no LLVM at run time.
 *
 *   attnrt_context *ctx;
 *   attnrt_context_options options;
 *   attnrt_context_options_initialize(&options);
 *   options.threads = 4;
 *   if (attnrt_context_create(&options, &ctx) != ATTNRT_OK) ...
 *   attnrt_tensor inputs[3] = {...}, outputs[1] = {...};
 *   if (attnrt_invoke(ctx, &gpt2_attn_kernel, inputs, 3, outputs, 1))
 *     fprintf(stderr, "%s\n", attnrt_context_last_error(ctx));
 *   attnrt_context_release(ctx);
 *
 * A kernel compiled for a CUDA target runs the same way on a context created
 * for a CUDA device (attnrt_context_create_on_device), its tensors holding
 * device pointers; attnrt_invoke_on_stream queues it on a CUDA stream.
 *
 * Every function returns ATTNRT_OK (0) on success and never crashes on a
 * wrong call it can detect: null pointers, wrong counts, shapes, dtypes,
 * strides or alignment give a status code and a message naming the argument
 * (attnrt_context_last_error).
 *
 * Embedding: a context may run on the caller's pthreadpool instead of one of
 * its own (attnrt_context_options::thread_pool) and take all its memory from
 * the caller's allocator (attnrt_context_options::allocator): the context
 * itself, its kernel registry and the scratch blocks of attnrt_allocate.
 * Scratch blocks are kept by the context when an invocation ends and reused
 * by the next, so repeated invokes of a kernel at a given size allocate
 * nothing after the first; attnrt_context_trim gives the cache back.
 *
 * Thread safety, per function below: attnrt_invoke, attnrt_find_kernel and
 * the context queries may be called from any number of threads at once on
 * one context (kernels then take turns on its thread pool, whose parallel
 * calls pthreadpool serializes; the scratch cache is shared under a lock),
 * and each thread reads its own last error. attnrt_register_kernel and
 * attnrt_context_trim belong to set-up: not while other calls on the same
 * context run. Distinct contexts are independent, also when they share a
 * caller's thread pool or allocator. Kernel descriptors are immutable: a
 * context checks a descriptor once, on first use, and trusts it from then on.
 *
 * Binary compatibility: libattnrt.so versions its symbols. Applications built
 * against the header of ATTNRT_1 (attnrt_context_options held `threads` only)
 * keep running: they bind attnrt_context_options_initialize@ATTNRT_1 and
 * attnrt_context_create@ATTNRT_1, which read and write that field only.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNC_ATTNRT_H
#define ATTNC_ATTNRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===-- Status codes ------------------------------------------------------===*/

typedef enum attnrt_status {
  ATTNRT_OK = 0,
  ATTNRT_INVALID_ARGUMENT = 1, /* null pointer, wrong count, bad option */
  ATTNRT_SHAPE_MISMATCH = 2,   /* rank, size or run-time size disagreement */
  ATTNRT_DTYPE_MISMATCH = 3,
  ATTNRT_LAYOUT_MISMATCH = 4, /* strides or alignment the kernel cannot use */
  ATTNRT_OUT_OF_MEMORY = 5,
  ATTNRT_NOT_FOUND = 6,   /* no kernel of that name */
  ATTNRT_UNAVAILABLE = 7, /* a CUDA kernel and no CUDA driver, an x86-64-amx
                             kernel and no AMX tile state granted */
  ATTNRT_INTERNAL = 8
} attnrt_status;

/* "ATTNRT_SHAPE_MISMATCH" and so on; never null. */
const char *attnrt_status_name(attnrt_status status);

/*===-- Tensors -----------------------------------------------------------===*/

typedef enum attnrt_dtype {
  ATTNRT_F32 = 0,
  ATTNRT_F16 = 1,
  ATTNRT_BF16 = 2, /* stored as its uint16 bit pattern */
  ATTNRT_I32 = 3,
  ATTNRT_BOOL = 4 /* one byte, 0 or 1 */
} attnrt_dtype;

/* Bytes per element; 0 for an unknown dtype. */
size_t attnrt_dtype_size(attnrt_dtype dtype);

/* A non-owning view of caller memory (like halide_buffer_t). `strides` are
 * in elements; null means dense C order. The kernels of this version accept
 * dense C order only and report anything else as ATTNRT_LAYOUT_MISMATCH. */
typedef struct attnrt_tensor {
  void *data;
  attnrt_dtype dtype;
  int32_t rank;
  const int64_t *shape;   /* rank entries, each >= 1 */
  const int64_t *strides; /* rank entries, or null */
} attnrt_tensor;

/*===-- Kernel descriptors (written by attnc into NAME.o) -----------------===*/

/* One argument of a kernel. dims[d] > 0 is a fixed size; dims[d] < 0 names
 * run-time size number -(dims[d] + 1) of the kernel (see dim_names). */
typedef struct attnrt_arg_info {
  const char *name;
  attnrt_dtype dtype;
  int32_t rank;
  const int64_t *dims;
} attnrt_arg_info;

/* A relation between sizes that the arguments' shapes do not express:
 * `multiple` must be a multiple of `divisor`, each a size encoded as in
 * attnrt_arg_info::dims (the query and kv heads of grouped-query attention
 * when either is a run-time size). */
typedef struct attnrt_divisibility {
  int64_t multiple;
  int64_t divisor;
  const char *what; /* "attention o: query heads Hq must be a multiple of
                       kv heads Hkv" */
} attnrt_divisibility;

/* Handed by the runtime to the generated code for one invocation. */
typedef struct attnrt_invocation attnrt_invocation;

/* The generated entry point: dims holds the run-time sizes (in dim_names
 * order), buffers the data pointers of the inputs then the outputs, all
 * already validated. Returns 0, or a nonzero attnrt_status. */
typedef int32_t (*attnrt_entry_fn)(attnrt_invocation *invocation,
                                   const int64_t *dims, void *const *buffers);

/* The device code of a CUDA kernel (a descriptor whose target starts with
 * "cuda-"): its PTX, and per fused attention op the functions that compute
 * it and how to launch them. Every launch parameter is 64 bits: a device
 * pointer or an int64 size. */

/* The sizes a CUDA attention op's functions take, in this order. */
typedef enum attnrt_cuda_size {
  ATTNRT_CUDA_B = 0,      /* batch */
  ATTNRT_CUDA_HQ = 1,     /* query heads */
  ATTNRT_CUDA_HKV = 2,    /* key/value heads */
  ATTNRT_CUDA_S = 3,      /* query rows */
  ATTNRT_CUDA_T = 4,      /* keys */
  ATTNRT_CUDA_DK = 5,     /* query/key head dim */
  ATTNRT_CUDA_DV = 6,     /* value head dim */
  ATTNRT_CUDA_SPLITS = 7, /* key splits, chosen by the launcher */
  ATTNRT_CUDA_NUM_SIZES = 8
} attnrt_cuda_size;

/* A launch parameter (attnrt_cuda_function::params): n >= 0 is argument n
 * of the kernel (its inputs, then its outputs), ATTNRT_CUDA_WORKSPACE the
 * key splits' workspace, ATTNRT_CUDA_SIZE(s) size s. */
#define ATTNRT_CUDA_WORKSPACE (-1)
#define ATTNRT_CUDA_SIZE(size) (-2 - (int32_t)(size))

/* attnrt_cuda_function::row_flags: how a function's blocks map to rows. */
typedef enum attnrt_cuda_rows {
  /* Each row a (query row, key split) pair: rows = S * splits. */
  ATTNRT_CUDA_ROWS_SPLIT = 1,
  /* The Hq / Hkv query heads of a kv head together: rows = S * Hq / Hkv,
   * Hkv blocks along y. */
  ATTNRT_CUDA_ROWS_GROUPED = 2,
  /* splits times the blocks along x, the key splits of a row block side by
   * side; such a tensor_core function runs whatever the splits. */
  ATTNRT_CUDA_BLOCKS_SPLIT = 4
} attnrt_cuda_rows;

/* One __global__ function of the PTX, launched with blocks of block_threads
 * threads on the grid (ceil(rows / block_rows), Hq, B), where rows is S,
 * changed by row_flags (attnrt_cuda_rows). */
typedef struct attnrt_cuda_function {
  const char *name; /* null: no such function */
  int32_t num_params;
  const int32_t *params;
  int32_t block_threads;
  int32_t block_rows;
  int32_t row_flags;
} attnrt_cuda_function;

/* One fused attention op. With splits == 1 the tensor_core function runs
 * when there is one, else `attention`; with splits > 1 `attention` (or
 * tensor_core when its row_flags has ATTNRT_CUDA_BLOCKS_SPLIT) leaves
 * each part in a workspace of splits * B * Hq * S * (workspace_row_bytes[0]
 * * Dv + workspace_row_bytes[1]) bytes, and `merge` combines them. splits is
 * 1 when B * Hq * S >= split_target_warps, else min(ceil(split_target_warps
 * / (B * Hq * S)), ceil(T / split_min_keys)). */
typedef struct attnrt_cuda_attention {
  attnrt_cuda_function attention;
  attnrt_cuda_function merge;
  attnrt_cuda_function tensor_core;
  /* Sizes B .. Dv: {argument, axis} of the tensor each is read from. */
  int32_t size_sources[ATTNRT_CUDA_SPLITS][2];
  int64_t split_target_warps;
  int64_t split_min_keys;
  int64_t workspace_row_bytes[2];
} attnrt_cuda_attention;

/* A CUDA kernel whose graph has nodes outside its fused attention ops
 * (projections, reshapes, ...) also has an entry (ABI version 4): host code
 * that runs the graph's ops in order on the invocation's stream. It takes
 * device memory for intermediates from attnrt_allocate, launches each other
 * op's function by attnrt_cuda_launch and each attention op by
 * attnrt_cuda_run_attention. In such a kernel the attention functions' params
 * and size_sources number the op's own tensors (its operands, then its
 * results), which the entry hands to attnrt_cuda_run_attention, not the
 * kernel's arguments. */
typedef struct attnrt_cuda_code {
  const char *ptx; /* NUL-terminated; the driver compiles it for its GPU */
  int32_t num_attentions;
  const attnrt_cuda_attention *attentions;
  /* ABI version 4 (version-3 descriptors end before): the functions the
   * entry launches by attnrt_cuda_launch, each taking num_params 64-bit
   * words (params is null, block_rows 1, row_flags 0). */
  int32_t num_functions;
  const attnrt_cuda_function *functions;
} attnrt_cuda_code;

typedef struct attnrt_kernel {
  uint32_t abi_version; /* ATTNRT_ABI_VERSION of the attnc that wrote it */
  const char *name;
  int32_t num_dims;
  const char *const *dim_names;
  int32_t num_inputs;
  const attnrt_arg_info *inputs;
  int32_t num_outputs;
  const attnrt_arg_info *outputs;
  uint32_t alignment;    /* required byte alignment of every buffer (>= 1) */
  const char *target;    /* "x86-64-avx512", "cuda-sm90", ... */
  const char *manifest;  /* the NAME.json manifest text, schedule included */
  attnrt_entry_fn entry; /* a CUDA kernel's: null, or its host program */
  int32_t num_divisibilities; /* checked once the run-time sizes are bound */
  const attnrt_divisibility *divisibilities;
  /* ABI version 3: the device code of a CUDA kernel (entry is then null,
   * or from version 4 the host program of attnrt_cuda_code); null for CPU
   * kernels. Descriptors of version 2 end before it. */
  const attnrt_cuda_code *cuda;
} attnrt_kernel;

#define ATTNRT_ABI_VERSION 4u

/*===-- Contexts ----------------------------------------------------------===*/

typedef struct attnrt_context attnrt_context;

/* The most worker threads a context accepts (attnrt_context_create fails
 * with ATTNRT_INVALID_ARGUMENT beyond). pthreadpool does not report a failed
 * pthread_create (it waits for the thread forever), so absurd counts are
 * refused up front. */
#define ATTNRT_MAX_THREADS 1024

/* pthreadpool's pthreadpool_t is `struct pthreadpool *`; declared here so
 * that this header needs no pthreadpool.h. */
struct pthreadpool;

/* Where a context takes its memory from. `allocate` returns `bytes` bytes
 * aligned to `alignment` (a power of two, at most 4096), or null when out of
 * memory (the call that needed them then fails with ATTNRT_OUT_OF_MEMORY);
 * `release` gives back a pointer `allocate` returned, never null. Both are
 * called with `self`, which must outlive the context, from any thread that
 * invokes kernels, also from several at once: they must be thread-safe. */
typedef struct attnrt_allocator {
  void *self;
  void *(*allocate)(void *self, size_t bytes, size_t alignment);
  void (*release)(void *self, void *pointer);
} attnrt_allocator;

typedef struct attnrt_context_options {
  size_t threads; /* worker threads; 0 = one per core (or the thread_pool's
                     count); at most ATTNRT_MAX_THREADS */
  /* A caller's pthreadpool to run kernels on instead of a pool of the
   * context's own; null = the context creates one. Not owned: it must
   * outlive the context. `threads` must then be 0 or its thread count. Its
   * other users take turns with the context's kernels (pthreadpool runs one
   * parallel call at a time), so do not invoke from a task running on it. */
  struct pthreadpool *thread_pool;
  /* Both functions null = the heap (aligned_alloc, free); one of them null is
   * ATTNRT_INVALID_ARGUMENT. */
  attnrt_allocator allocator;
} attnrt_context_options;

/* Sets the defaults (threads = 0, no thread_pool, the heap allocator). */
void attnrt_context_options_initialize(attnrt_context_options *options);

/* Creates a context with its thread pool (or on the caller's). The context
 * must be released by the caller with attnrt_context_release, when no other
 * call on it runs. Thread-safe (contexts are independent). A pool the context
 * creates itself is allocated by pthreadpool from the heap; everything else
 * the context allocates comes from options->allocator. */
attnrt_status attnrt_context_create(const attnrt_context_options *options,
                                    attnrt_context **out_context);
/* Releases the context, its registry and its cached scratch blocks; a
 * caller's thread pool stays as it is. */
void attnrt_context_release(attnrt_context *context);

/* Gives the scratch blocks the context keeps for reuse back to its
 * allocator (after a burst of invokes at a size that will not come again).
 * Set-up: not while other calls on the context run. */
void attnrt_context_trim(attnrt_context *context);

/* The threads the context runs kernels on (>= 1). Thread-safe. */
size_t attnrt_context_threads(const attnrt_context *context);

/* The message of the calling thread's last call on this context that
 * failed, naming the argument at fault ("input q: shape [2, 5] does not
 * match [2, 4]"); "" if none failed. Per thread, so threads sharing a
 * context never read each other's; valid until the calling thread's next
 * failing call on any context. Thread-safe. */
const char *attnrt_context_last_error(const attnrt_context *context);

/*===-- Devices -----------------------------------------------------------===*/

/* Where kernels run. CUDA kernels (a descriptor whose target starts with
 * "cuda-") go through NVIDIA's driver, libcuda.so.1, which libattnrt opens at
 * run time (never links): libattnrt and every application build, link and
 * run CPU kernels on machines without it. The environment variable
 * ATTNRT_CUDA_DRIVER names another file to open instead. */
typedef enum attnrt_device_kind {
  ATTNRT_DEVICE_CPU = 0,
  ATTNRT_DEVICE_CUDA = 1
} attnrt_device_kind;

/* The number of devices of `kind` this process can use, in *out_count: 1 for
 * the CPU; for CUDA the driver's device count, or ATTNRT_UNAVAILABLE when
 * there is no driver, it does not start (cuInit fails) or cannot count.
 * On failure `message` (when not null) receives why, cut to
 * `message_capacity` bytes with its NUL: "no CUDA driver: cannot open
 * libcuda.so.1 (...)". The driver is opened once per process. Thread-safe. */
attnrt_status attnrt_device_count(attnrt_device_kind kind, int32_t *out_count,
                                  char *message, size_t message_capacity);

/* Creates a context whose CUDA kernels run on CUDA device `ordinal` (in the
 * driver's numbering) with the device's primary context; its CPU kernels
 * run as on any context. ATTNRT_DEVICE_CPU with ordinal 0 is
 * attnrt_context_create. The driver is not asked until the first CUDA
 * kernel runs: a context for a device this machine lacks is created, and
 * its CUDA invokes fail with ATTNRT_UNAVAILABLE saying why (no driver, no
 * such device, a GPU older than the kernel's target). Tensors of a CUDA
 * kernel hold device pointers (CUdeviceptr, as from cuMemAlloc) of that
 * device, aligned as the descriptor says. Thread-safe. */
attnrt_status
attnrt_context_create_on_device(const attnrt_context_options *options,
                                attnrt_device_kind kind, int32_t ordinal,
                                attnrt_context **out_context);

/*===-- Registry and invocation -------------------------------------------===*/

/* Makes `kernel` findable by name in this context. Fails with
 * ATTNRT_INVALID_ARGUMENT for a descriptor of another ABI version or a name
 * already registered. Set-up: not while other calls on the context run. */
attnrt_status attnrt_register_kernel(attnrt_context *context,
                                     const attnrt_kernel *kernel);
/* The registered kernel called `name` (ATTNRT_NOT_FOUND, naming those
 * registered, when there is none). Thread-safe. */
attnrt_status attnrt_find_kernel(const attnrt_context *context,
                                 const char *name,
                                 const attnrt_kernel **out_kernel);

/* Validates every tensor against the descriptor (count, rank, dtype, fixed
 * sizes, run-time sizes consistent across arguments, >= 1 and meeting the
 * kernel's divisibilities, dense strides,
 * alignment, non-null data), binds the run-time sizes, and runs the kernel on
 * the context's threads (a CUDA kernel: on the context's device, returning
 * once its launches finished; see attnrt_invoke_on_stream). Outputs must not
 * alias inputs. The descriptor itself is checked on its first use with the
 * context only. The call allocates nothing for kernels of up to 64 run-time
 * sizes and 64 arguments (beyond, its bookkeeping comes from the context's
 * allocator; so does the record of a CUDA host program's intermediates past
 * 16 of them), and the kernel's scratch comes from the context's cache once
 * an invoke at that size has run. Thread-safe. */
attnrt_status attnrt_invoke(attnrt_context *context,
                            const attnrt_kernel *kernel,
                            const attnrt_tensor *inputs, size_t num_inputs,
                            attnrt_tensor *outputs, size_t num_outputs);

/* attnrt_invoke with a CUDA stream (a CUstream; null is the default
 * stream): a CUDA kernel's launches are queued on it and the call returns
 * without waiting for them (attnrt_invoke waits). The module of a kernel is
 * loaded once per context, on its first invoke, and its functions kept; the
 * key splits' workspace, when the sizes call for one, and a host program's
 * intermediates are allocated and freed in stream order from the context's
 * memory pool, which keeps what it got (so invokes on different streams
 * never share one, and once the pool holds enough, none asks the driver for
 * memory). A CPU kernel takes a null stream only, and runs as with
 * attnrt_invoke. Thread-safe. */
attnrt_status attnrt_invoke_on_stream(attnrt_context *context,
                                      const attnrt_kernel *kernel,
                                      const attnrt_tensor *inputs,
                                      size_t num_inputs, attnrt_tensor *outputs,
                                      size_t num_outputs, void *stream);

/* attnrt_invoke, timed: *out_milliseconds receives the kernel's time, for
 * a CUDA kernel the device time between CUDA events recorded around its
 * launches (on the default stream), for a CPU kernel the wall time of its
 * entry. Argument checks are not counted. For benchmarks and `attnc run
 * --repeat`. Thread-safe. */
attnrt_status attnrt_invoke_timed(attnrt_context *context,
                                  const attnrt_kernel *kernel,
                                  const attnrt_tensor *inputs,
                                  size_t num_inputs, attnrt_tensor *outputs,
                                  size_t num_outputs, double *out_milliseconds);

/*===-- Device memory -----------------------------------------------------===*/

/* Memory of a CUDA context's device (cuMemAlloc: aligned for every kernel),
 * for applications without an allocator of their own; `bytes` 0 gets a
 * block too. A CPU context has none (ATTNRT_INVALID_ARGUMENT): its kernels
 * take host memory. Thread-safe. */
attnrt_status attnrt_device_allocate(attnrt_context *context, size_t bytes,
                                     void **out_data);
/* Frees what attnrt_device_allocate returned (null: nothing). */
void attnrt_device_release(attnrt_context *context, void *data);
/* Copies `bytes` from host memory to the context's device, or back; returns
 * once the copy is done. Thread-safe. */
attnrt_status attnrt_device_upload(attnrt_context *context, void *device_data,
                                   const void *host_data, size_t bytes);
attnrt_status attnrt_device_download(attnrt_context *context, void *host_data,
                                     const void *device_data, size_t bytes);

/*===-- Services for generated code ---------------------------------------===*/

/* Calls task(closure, i) for every i in [0, count), spread over the
 * invocation's threads; returns when all are done. */
void attnrt_parallel_for(attnrt_invocation *invocation, int64_t count,
                         void (*task)(void *closure, int64_t index),
                         void *closure);

/* The threads attnrt_parallel_for spreads this invocation's tasks over
 * (>= 1; 1 for a null invocation): a kernel with fewer tasks than threads
 * may split them further (attention over a long key sequence splits it). */
int64_t attnrt_invocation_threads(const attnrt_invocation *invocation);

/* Scratch memory for intermediates of one invocation, aligned to 64 bytes;
 * handed back to the context when the invocation ends. Null when out of
 * memory. Blocks come from the context's cache (the smallest block that
 * fits) before its allocator; tasks of one parallel_for may call it at
 * once. */
void *attnrt_allocate(attnrt_invocation *invocation, int64_t bytes);
/* In the entry of a CUDA kernel (attnrt_cuda_code) attnrt_allocate gives
 * memory of the context's device instead, allocated in the order of the
 * invocation's stream and freed in that order when the entry returns. The
 * entry calls it, attnrt_cuda_launch and attnrt_cuda_run_attention on its
 * own thread (where the device is current), never from parallel_for tasks. */

/* For the entry of a CUDA kernel: launches its function `function`
 * (attnrt_cuda_code::functions) on the invocation's stream with the
 * num_words 64-bit words as its parameters, in blocks of its block_threads,
 * enough of them for `threads` threads (the functions loop over their work
 * by the grid's stride, so fewer blocks are correct too). ATTNRT_OK, or a
 * status with the context's error set. */
int32_t attnrt_cuda_launch(attnrt_invocation *invocation, int32_t function,
                           int64_t threads, const int64_t *words,
                           int32_t num_words);

/* For the entry of a CUDA kernel: runs its attention op `op` on `tensors`,
 * the op's operands then results (num_tensors of them, device memory), as
 * attnrt_invoke runs a kernel of attention alone: its key splits, workspace
 * and functions. ATTNRT_OK, or a status with the context's error set. */
int32_t attnrt_cuda_run_attention(attnrt_invocation *invocation, int32_t op,
                                  const attnrt_tensor *tensors,
                                  int32_t num_tensors);

/* Scratch memory a kernel's own code allocates and releases, often the same
 * sizes on every call (the Halide backend's pipelines, one call per task):
 * released blocks are kept for reuse by the same thread (a few per thread,
 * freed when the thread exits), so steady-state calls fault no new pages.
 * Aligned to 64 bytes; null when out of memory. Release from the thread that
 * allocated, or any thread. These calls have no context: their blocks come
 * from the heap (aligned_alloc), never from a context's allocator. */
void *attnrt_scratch_allocate(size_t bytes);
void attnrt_scratch_release(void *pointer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_ATTNRT_H */
