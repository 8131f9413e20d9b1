// See softmax_rows.h. Possibly built with -ffast-math: all values stay finite.
#include "softmax_rows.h"

#include <cmath>
#include <limits>

// Built twice; the build names the variant (scalar_exp or vector_exp).
#ifndef ATTNC_SOFTMAX_VARIANT
#error "define ATTNC_SOFTMAX_VARIANT"
#endif
#ifndef ATTNC_SOFTMAX_FLAGS
#define ATTNC_SOFTMAX_FLAGS "unknown"
#endif
#define ATTNC_CONCAT2(a, b) a##b
#define ATTNC_CONCAT(a, b) ATTNC_CONCAT2(a, b)
#define ATTNC_VARIANT_NAME(prefix, suffix)                                      \
  ATTNC_CONCAT(ATTNC_CONCAT(prefix, ATTNC_SOFTMAX_VARIANT), suffix)

namespace attnc_bench {

void ATTNC_VARIANT_NAME(softmax_rows_, )(float *s, int64_t ld, int64_t cols,
                                        int64_t row_begin, int64_t row_end,
                                        bool causal) {
  const float lowest = std::numeric_limits<float>::lowest();
  for (int64_t i = row_begin; i < row_end; ++i) {
    float *row = s + i * ld;
    if (causal)
      for (int64_t j = i + 1; j < cols; ++j)
        row[j] = lowest;
    float max = lowest;
    for (int64_t j = 0; j < cols; ++j)
      max = row[j] > max ? row[j] : max;
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) {
      // exp(x) for x < -87 is below FLT_MIN: 0 here. Clamping the argument
      // keeps masked entries (lowest - max) off libmvec's slow scalar path for
      // out-of-range inputs, as a framework's vector exp (Sleef) does.
      const float x = row[j] - max;
      const float e = x < -87.0f ? 0.0f : expf(x < -87.0f ? -87.0f : x);
      row[j] = e;
      sum += e;
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < cols; ++j)
      row[j] *= inv;
  }
}

const char *ATTNC_VARIANT_NAME(softmax_rows_, _flags)() {
  return ATTNC_SOFTMAX_FLAGS;
}

} // namespace attnc_bench
