// RUN: attn-opt %s --attn-build-entry="vector-width=16 bf16-dot=true" | FileCheck %s
// RUN: attn-opt %s --attn-build-entry="vector-width=16" | FileCheck %s --check-prefix=CONVERT

// Tests that a decode tile with bf16 q and k on AVX512-BF16 (bf16-dot) takes
// 32 depths of a key row as they lie in memory, vector<32xbf16>, into
// vdpbf16ps against 16 words of a query row's pairs, and that without
// bf16-dot the same rows are converted to f32 (16 depths a load).
// CHECK-LABEL: func.func @decode_k0(
//       CHECK:   vector.load %{{.+}}[%{{.+}}] : memref<?xbf16>, vector<32xbf16>
//       CHECK:   vector.bitcast %{{.+}} : vector<16xi32> to vector<32xbf16>
//       CHECK:   llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// CONVERT-LABEL: func.func @decode_k0(
//   CONVERT-NOT:   llvm.x86.avx512bf16.dpbf16ps.512
//       CONVERT:   vector.load %{{.+}}[%{{.+}}] : memref<?xbf16>, vector<16xbf16>
//   CONVERT-NOT:   llvm.x86.avx512bf16.dpbf16ps.512
module {
  func.func @decode(%arg0: index {attn.dim = "T"},
                    %q: tensor<1x4x1x128xbf16> {attn.dims = array<i64: 1, 4, 1, 128>, attn.input = "q"},
                    %k: tensor<1x1x?x128xbf16> {attn.dims = array<i64: 1, 1, -1, 128>, attn.input = "k"},
                    %v: tensor<1x1x?x128xbf16> {attn.dims = array<i64: 1, 1, -1, 128>, attn.input = "v"})
      -> (tensor<1x4x1x128xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v : (tensor<1x4x1x128xbf16>, tensor<1x1x?x128xbf16>, tensor<1x1x?x128xbf16>) -> tensor<1x4x1x128xbf16>
    return %o : tensor<1x4x1x128xbf16>
  }
}
