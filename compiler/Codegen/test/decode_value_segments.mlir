// Tests how a decode tile's P·V reads f32 V rows that do not fit the
// accumulators (D = 128 at vector-width 8: 16 vectors, a [4, 3] block holds
// 12): one row at a time in two segments of 8 vectors, each read in order,
// so two P·V loops carry 8 accumulators (the third such loop is Q·Kᵀ's block
// of 4 rows × 2 keys). Converted values (bf16) keep column blocks of 4 rows
// (12 and 4 accumulators), so that one conversion feeds four FMAs.
// RUN: attn-opt %s --attn-build-entry="vector-width=8 pv-rows=4 pv-vectors=3" | grep -c ':8 = scf.for' | FileCheck %s --check-prefix=SEGMENTS
// RUN: sed 's/f32/bf16/g' %s | attn-opt --attn-build-entry="vector-width=8 pv-rows=4 pv-vectors=3" | grep -c ':8 = scf.for' | FileCheck %s --check-prefix=COLUMNS
// SEGMENTS: {{^3$}}
// COLUMNS: {{^1$}}
module {
  func.func @decode(%arg0: index {attn.dim = "T"},
                    %q: tensor<1x4x1x128xf32> {attn.dims = array<i64: 1, 4, 1, 128>, attn.input = "q"},
                    %k: tensor<1x2x?x128xf32> {attn.dims = array<i64: 1, 2, -1, 128>, attn.input = "k"},
                    %v: tensor<1x2x?x128xf32> {attn.dims = array<i64: 1, 2, -1, 128>, attn.input = "v"})
      -> (tensor<1x4x1x128xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v : (tensor<1x4x1x128xf32>, tensor<1x2x?x128xf32>, tensor<1x2x?x128xf32>) -> tensor<1x4x1x128xf32>
    return %o : tensor<1x4x1x128xf32>
  }
}
