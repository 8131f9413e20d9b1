// Tests that P·V over a packed tile (bf16 K and V converted to f32 rows once
// per key tile) is a loop LLVM must not unroll: unrolled, the next key's V
// vectors sit beside the block's accumulators and spill. f32 V read where it
// lies keeps LLVM's choice (no annotation).
// RUN: attn-opt %s --attn-build-entry="vector-width=8" | FileCheck %s --check-prefix=PACKED
// RUN: sed 's/bf16/f32/g' %s | attn-opt --attn-build-entry="vector-width=8" | FileCheck %s --check-prefix=IN-PLACE
// PACKED: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// PACKED: #[[ANNOTATION:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// PACKED: vector.fma
// PACKED: } {llvm.loop_annotation = #[[ANNOTATION]]}
// PACKED-NOT: llvm.loop_annotation
// IN-PLACE-NOT: llvm.loop_annotation
module {
  func.func @prefill(%arg0: index {attn.dim = "S"},
                     %q: tensor<1x2x?x64xbf16> {attn.dims = array<i64: 1, 2, -1, 64>, attn.input = "q"},
                     %k: tensor<1x2x?x64xbf16> {attn.dims = array<i64: 1, 2, -1, 64>, attn.input = "k"},
                     %v: tensor<1x2x?x64xbf16> {attn.dims = array<i64: 1, 2, -1, 64>, attn.input = "v"})
      -> (tensor<1x2x?x64xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16>
    return %o : tensor<1x2x?x64xbf16>
  }
}
