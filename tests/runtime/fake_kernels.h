/*===- fake_kernels.h - Hand-written kernels for the runtime tests -*- C -*-===*
 *
 * Descriptors shaped like the ones attnc writes into NAME.o, with entry
 * points written by hand in C against attnc/attnrt.h.
 *
 *===----------------------------------------------------------------------===*/
#ifndef ATTNC_TESTS_RUNTIME_FAKE_KERNELS_H
#define ATTNC_TESTS_RUNTIME_FAKE_KERNELS_H

#include "attnc/attnrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* z = a[0] * x + y. Run-time dim N; inputs x f32[N], y f32[N], a f32[1];
 * output z f32[N]; 16-byte alignment. Scales x into attnrt_allocate scratch
 * in one parallel_for over chunks of FAKE_AXPY_CHUNK, adds y in a second. */
#define FAKE_AXPY_CHUNK 64
extern const attnrt_kernel fake_axpy_kernel;

/* o[b, t, c] = (q[b, t, c] + k[b, t, c]) * scale + bias[t]. Run-time dims
 * B, T; inputs q f32[B, T, 4], k f32[B, T, 4], bias i32[T], scale f32[]
 * (rank 0); output o f32[B, T, 4]; parallel_for over the B * T rows. */
extern const attnrt_kernel fake_rows_kernel;

/* Allocates scratch, then returns fake_fail_status. No run-time dims; input
 * x f32[4], output y f32[4]. */
extern const attnrt_kernel fake_fail_kernel;
extern int32_t fake_fail_status;

/* Coverage of attnrt_parallel_for: run-time dim N, no inputs, outputs
 * hits i32[N] and thread i32[N]. Each index i atomically adds 1 to hits[i]
 * and writes a small id of the thread that ran it to thread[i]. */
extern const attnrt_kernel fake_cover_kernel;

/* Hands its invocation to fake_probe_hook (when set) and counts its calls in
 * fake_probe_calls. Run-time dim N; input x i32[N]; output y i32[N]. */
typedef int32_t (*fake_probe_fn)(attnrt_invocation *invocation,
                                 const int64_t *dims, void *const *buffers);
extern const attnrt_kernel fake_probe_kernel;
extern fake_probe_fn fake_probe_hook;
extern int fake_probe_calls;

/* Scratch checked for exclusive use. Run-time dim N; input seed i32[1];
 * output y i32[N]. Takes two attnrt_allocate blocks of N int32 and one of 0
 * bytes, fills the first with seed + i and the second with ~(seed + i),
 * reads both back after both are full (a block handed to two invocations at
 * once shows another's pattern) and writes y[i] = seed + i. Returns
 * ATTNRT_OUT_OF_MEMORY when a block is null, ATTNRT_INTERNAL when one is
 * misaligned or was overwritten. */
extern const attnrt_kernel fake_scratch_kernel;

/* Calls of malloc, calloc, realloc, aligned_alloc and posix_memalign made by
 * code linked statically into the test (libattnrt.a among it), counted by
 * the linker's --wrap (heap_calls.c). */
long fake_heap_calls(void);

/* Enum values outside the enumerators, made in C where they are plain ints
 * (in C++ such values are undefined behaviour, which UBSan reports). */
const char *fake_status_name_raw(int status);
size_t fake_dtype_size_raw(int dtype);
void fake_set_raw_dtype(attnrt_tensor *tensor, int dtype);
/* One input "x" f32-shaped but of dtype 9, for descriptor checks. */
extern const attnrt_arg_info fake_bad_dtype_inputs[1];

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ATTNC_TESTS_RUNTIME_FAKE_KERNELS_H */
