// RUN: attn-opt %s --split-input-file --attn-build-entry="vector-width=16 query-tile=64 key-tile=64 score-vectors=4 score-keys=4 pv-rows=4 pv-vectors=4 matrix-tiles=amx" | FileCheck %s
// RUN: attn-opt %s --split-input-file --attn-build-entry="vector-width=16 query-tile=64 key-tile=64 score-vectors=4 score-keys=4 pv-rows=4 pv-vectors=4 matrix-tiles=amx" --attn-lower-to-llvm | FileCheck %s --check-prefix=LLVM
// RUN: attn-opt %s --split-input-file --attn-build-entry="vector-width=8 matrix-tiles=emulated" | FileCheck %s --check-prefix=EMULATED
// RUN: attn-opt %s --split-input-file --attn-build-entry="vector-width=16" | FileCheck %s --check-prefix=NONE
// RUN: not attn-opt %s --split-input-file --attn-build-entry="matrix-tiles=sparse" 2>&1 | FileCheck %s --check-prefix=BAD

// Tests that bf16 prefill with matrix tiles computes Q·Kᵀ and P·V on AMX
// tiles: 16 × 32 bf16 operands (K rows, query pairs; probability rows,
// value pairs) into 16 × 16 f32 results, in product blocks of 2 × 2 tiles
// whose four products follow the loads of one step; the scores stored to
// SC, the probabilities rounded to bf16 two halves at a time by
// vcvtne2ps2bf16 and the output block loaded from and stored to O; that a
// row's max is kept unless it grew by more than 8; that they lower to the
// LLVM dialect's AMX intrinsics; that `emulated` keeps the tiling with no
// AMX op, its products calls of one internal function; that without matrix
// tiles no tile op appears; and that a head dim the tiles do not divide
// (Dk = 80) keeps the vector code.
// CHECK-LABEL: func.func @prefill_k0(
//       CHECK:   arith.constant dense<8.000000e+00> : vector<16xf32>
//       CHECK:   amx.tile_zero : vector<16x16xf32>
//       CHECK:   amx.tile_load %{{.+}}[%{{.+}}, %{{.+}}] : memref<16x?xbf16, strided<[?, 1], offset: ?>> into vector<16x32xbf16>
//       CHECK:   amx.tile_load
//       CHECK:   amx.tile_load
//       CHECK:   amx.tile_load
//  CHECK-NEXT:   amx.tile_mulf %{{.+}}, %{{.+}}, %{{.+}} : vector<16x32xbf16>, vector<16x32xbf16>, vector<16x16xf32>
//  CHECK-NEXT:   amx.tile_mulf
//  CHECK-NEXT:   amx.tile_mulf
//  CHECK-NEXT:   amx.tile_mulf
//       CHECK:   amx.tile_store %{{.+}}[%{{.+}}, %{{.+}}], %{{.+}} : memref<16x?xf32, strided<[?, 1], offset: ?>>, vector<16x16xf32>
//       CHECK:   llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"(%{{.+}}, %{{.+}}) : (vector<16xf32>, vector<16xf32>) -> vector<32xbf16>
//       CHECK:   amx.tile_load %{{.+}} : memref<16x?xf32, strided<[?, 1], offset: ?>> into vector<16x16xf32>
//       CHECK:   amx.tile_mulf
//       CHECK:   amx.tile_store
// CHECK-LABEL: func.func @odd_depth_k0(
//   CHECK-NOT:   amx.
//       CHECK:   return
// LLVM: amx.tdpbf16ps
// EMULATED-LABEL: func.func @prefill_k0(
//   EMULATED-NOT:   amx.
//   EMULATED-NOT:   cvtne2ps2bf16
//       EMULATED:   call @attnc_emulated_tdpbf16ps
//       EMULATED:   arith.truncf %{{.+}} : vector<16xf32> to vector<16xbf16>
//       EMULATED:   call @attnc_emulated_tdpbf16ps
//   EMULATED-NOT:   amx.
//       EMULATED:   return
//       EMULATED: func.func private @attnc_emulated_tdpbf16ps(%{{.+}}: vector<16x32xi16>, %{{.+}}: vector<16x32xi16>, %{{.+}}: vector<16x16xf32>) -> vector<16x16xf32> attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// NONE-NOT: amx.
// NONE-NOT: cvtne2ps2bf16
// BAD: matrix-tiles must be none, amx or emulated
module {
  func.func @prefill(%arg0: index {attn.dim = "L"},
                     %q: tensor<1x2x?x64xbf16> {attn.dims = array<i64: 1, 2, -1, 64>, attn.input = "q"},
                     %k: tensor<1x2x?x64xbf16> {attn.dims = array<i64: 1, 2, -1, 64>, attn.input = "k"},
                     %v: tensor<1x2x?x64xbf16> {attn.dims = array<i64: 1, 2, -1, 64>, attn.input = "v"})
      -> (tensor<1x2x?x64xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v : (tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>, tensor<1x2x?x64xbf16>) -> tensor<1x2x?x64xbf16>
    return %o : tensor<1x2x?x64xbf16>
  }
}

// -----

module {
  func.func @odd_depth(%arg0: index {attn.dim = "L"},
                       %q: tensor<1x2x?x80xbf16> {attn.dims = array<i64: 1, 2, -1, 80>, attn.input = "q"},
                       %k: tensor<1x2x?x80xbf16> {attn.dims = array<i64: 1, 2, -1, 80>, attn.input = "k"},
                       %v: tensor<1x2x?x80xbf16> {attn.dims = array<i64: 1, 2, -1, 80>, attn.input = "v"})
      -> (tensor<1x2x?x80xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v : (tensor<1x2x?x80xbf16>, tensor<1x2x?x80xbf16>, tensor<1x2x?x80xbf16>) -> tensor<1x2x?x80xbf16>
    return %o : tensor<1x2x?x80xbf16>
  }
}
