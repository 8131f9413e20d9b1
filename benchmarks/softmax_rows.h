// Row softmax of the unfused attention baseline (benchmarks/attention_baseline.cpp).
//
// Kept in its own translation unit because it is compiled with its own flags
// (see benchmarks/CMakeLists.txt), which must not leak into the naive loops
// or the accuracy check. Under -ffast-math no infinity may reach
// it: masked scores are written as the lowest finite float, as HF transformers
// does with torch.finfo(dtype).min.
#ifndef ATTNC_BENCHMARKS_SOFTMAX_ROWS_H
#define ATTNC_BENCHMARKS_SOFTMAX_ROWS_H

#include <cstdint>

namespace attnc_bench {

// For rows [row_begin, row_end) of the rows x cols matrix `s` (row-major,
// leading dimension ld): when `causal`, set s[i][j] for j > i to the lowest
// finite float (the mask); then replace each row by its softmax: row max,
// exp(s - max), row sum, multiply by 1/sum.
//
// Two builds of one source (softmax_rows.cpp, see CMakeLists.txt):
// - scalar_exp: -O3, one expf call per score, what the targets and
//   docs/design/cpu-codegen-notes.md measured as "unfused" (33 GFLOP/s at
//   H=8 L=2048 D=64);
// - vector_exp: -O3 -ffast-math for the host ISA, expf vectorised through
//   glibc's libmvec, what a framework's vectorised softmax does (~2x faster).
using SoftmaxRows = void (*)(float *s, int64_t ld, int64_t cols,
                             int64_t row_begin, int64_t row_end, bool causal);
void softmax_rows_scalar_exp(float *s, int64_t ld, int64_t cols,
                             int64_t row_begin, int64_t row_end, bool causal);
void softmax_rows_vector_exp(float *s, int64_t ld, int64_t cols,
                             int64_t row_begin, int64_t row_end, bool causal);

// The compiler flags each variant was built with, for the report.
const char *softmax_rows_scalar_exp_flags();
const char *softmax_rows_vector_exp_flags();

} // namespace attnc_bench

#endif
