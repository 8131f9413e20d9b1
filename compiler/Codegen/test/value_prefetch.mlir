// Tests the schedule's value-prefetch-bytes: a decode tile (one query row
// of 4 heads sharing a kv head, depth in lanes) prefetches the next step's
// K rows, and this step's V rows only when a V element has at most that
// many bytes. D = 16 f32 is one 64-byte line per row and the step loop
// holds 2 keys (vector-width 8), so 2 K prefetches, and 2 more for V.
// RUN: attn-opt %s --attn-build-entry="vector-width=8 value-prefetch-bytes=4" | grep -c memref.prefetch | FileCheck %s --check-prefix=BOTH
// RUN: attn-opt %s --attn-build-entry="vector-width=8 value-prefetch-bytes=2" | grep -c memref.prefetch | FileCheck %s --check-prefix=KEYS
// RUN: attn-opt %s --attn-build-entry="vector-width=8 value-prefetch-bytes=0" | grep -c memref.prefetch | FileCheck %s --check-prefix=KEYS
// bf16 rows of 16 are half a line: one prefetch per row still.
// RUN: sed 's/f32/bf16/g' %s | attn-opt --attn-build-entry="vector-width=8 value-prefetch-bytes=2" | grep -c memref.prefetch | FileCheck %s --check-prefix=BOTH
// RUN: sed 's/f32/bf16/g' %s | attn-opt --attn-build-entry="vector-width=8 value-prefetch-bytes=0" | grep -c memref.prefetch | FileCheck %s --check-prefix=KEYS
// BOTH: {{^4$}}
// KEYS: {{^2$}}
module {
  func.func @decode(%arg0: index {attn.dim = "T"},
                    %q: tensor<1x4x1x16xf32> {attn.dims = array<i64: 1, 4, 1, 16>, attn.input = "q"},
                    %k: tensor<1x2x?x16xf32> {attn.dims = array<i64: 1, 2, -1, 16>, attn.input = "k"},
                    %v: tensor<1x2x?x16xf32> {attn.dims = array<i64: 1, 2, -1, 16>, attn.input = "v"})
      -> (tensor<1x4x1x16xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v : (tensor<1x4x1x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>) -> tensor<1x4x1x16xf32>
    return %o : tensor<1x4x1x16xf32>
  }
}
