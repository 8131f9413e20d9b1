// RUN: attn-opt %s --split-input-file --attn-build-entry="query-tile=16 key-tile=12" --canonicalize --cse | FileCheck %s

// attn-build-entry runs an attention op's tasks as the iterations of
// attn-tile-attention's packed scf.forall (query-tile rows, key-tile keys):
// the task count is the forall's B · Hkv · ceil(G·S / 16), a task is
// (batch, kv head, row tile), and the key loop, its bounds and the
// partial-tile test are the tiled IR's; the tile ops become the vector code.

// Tests a sliding window (4 keys back) with G = 2 query heads per kv head:
// 40 packed rows in 3 tiles, 6 tasks; task t is row tile t mod 3 of kv head
// (t / 3) mod 2; the key loop runs from the first key the tile's first
// position sees, (r0 mod 20, or 0 when the tile spans two heads) + 20 - 4,
// to the last key of its last position + 1, in steps of 12.
// With fewer tasks than threads the entry splits each task's key tiles into
// P parts (the closure's word after the tensors' sizes): task index t is
// part t mod P of iteration t / P, and part p runs the tiles
// [LB + 12·floor(tiles·p/P), min(UB, LB + 12·floor(tiles·(p+1)/P))), tiles
// = ceil((UB - LB) / 12); a merge task per iteration follows.
// CHECK-LABEL: func.func @window_k0(
//       CHECK:   %[[TASK:.+]] = arith.index_cast %arg1 : i64 to index
//       CHECK:   %[[PARTS:.+]] = arith.index_cast %{{.+}} : i64 to index
//       CHECK:   %[[ITER:.+]] = arith.divui %[[TASK]], %[[PARTS]] : index
//       CHECK:   %[[TILE:.+]] = arith.remui %[[ITER]], %c3 : index
//       CHECK:   %[[BK:.+]] = arith.divui %[[ITER]], %c3 : index
//       CHECK:   arith.remui %[[BK]], %c2 : index
//       CHECK:   %[[R0:.+]] = arith.muli %[[TILE]], %c16 : index
//       CHECK:   %[[PART:.+]] = arith.remui %[[TASK]], %[[PARTS]] : index
//       CHECK:   %[[FIRSTI:.+]] = arith.remui %[[R0]], %c20 : index
//       CHECK:   %[[FIRSTQ:.+]] = arith.select %{{.+}}, %[[FIRSTI]], %c0 : index
//       CHECK:   %[[FROM:.+]] = arith.addi %[[FIRSTQ]], %c16 : index
//       CHECK:   %[[LB:.+]] = arith.maxsi %[[FROM]], %c0 : index
//       CHECK:   %[[UB:.+]] = arith.maxsi %{{.+}}, %[[LB]] : index
//       CHECK:   %[[SPAN:.+]] = arith.subi %[[UB]], %[[LB]] : index
//       CHECK:   %[[NEXT:.+]] = arith.addi %[[PART]], %c1 : index
//       CHECK:   %[[PARTUB:.+]] = arith.minsi %[[UB]], %{{.+}} : index
//       CHECK:   %[[PARTLB:.+]] = arith.addi %[[LB]], %{{.+}} : index
//       CHECK:   scf.for %[[J0:.+]] = %[[PARTLB]] to %[[PARTUB]] step %c12 {
//       CHECK:     arith.minsi %{{.+}}, %c12 : index
// CHECK-LABEL: func.func @window_k0_merge(
// CHECK-LABEL: func.func @window_entry(
//       CHECK:   llvm.call @attnrt_invocation_threads(%arg0)
//       CHECK:   llvm.call @attnrt_parallel_for(%arg0, %{{.+}}, %{{.+}}, %{{.+}})
//       CHECK:   llvm.call @attnrt_parallel_for(%arg0, %{{.+}}, %{{.+}}, %{{.+}})
module {
  func.func @window(%q: tensor<1x4x20x16xf32> {attn.dims = array<i64: 1, 4, 20, 16>, attn.input = "q"},
                    %k: tensor<1x2x40x16xf32> {attn.dims = array<i64: 1, 2, 40, 16>, attn.input = "k"},
                    %v: tensor<1x2x40x16xf32> {attn.dims = array<i64: 1, 2, 40, 16>, attn.input = "v"})
      -> (tensor<1x4x20x16xf32> {attn.output = "y"}) {
    %o = attn.attention %q, %k, %v {window = array<i64: 4, 0>} : (tensor<1x4x20x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x4x20x16xf32>
    return %o : tensor<1x4x20x16xf32>
  }
}

// -----

// Tests causal decode-like sizes (S = 3, T = 40, one tile of 6 packed
// rows): the keys are [0, 40), and the max pass takes the masked branch
// only where the tiled IR's blockFullyVisible test fails (key tile inside
// [0, 38) and past its first key).
// CHECK-LABEL: func.func @causal_k0(
//       CHECK:   scf.for %[[J0:.+]] = %{{.+}} to %{{.+}} step %c12 {
//       CHECK:     %[[NK:.+]] = arith.minsi %{{.+}}, %c12 : index
//       CHECK:     %[[FROM:.+]] = arith.cmpi sge, %[[J0]], %c0 : index
//       CHECK:     %[[END:.+]] = arith.addi %[[J0]], %[[NK]] : index
//       CHECK:     %[[LASTKEY:.+]] = arith.subi %[[END]], %c1 : index
//       CHECK:     %[[BOUND:.+]] = arith.minsi %[[END]], %c38 : index
//       CHECK:     %[[BEFORE:.+]] = arith.cmpi slt, %[[LASTKEY]], %[[BOUND]] : index
//       CHECK:     %[[WHOLE:.+]] = arith.andi %[[FROM]], %[[BEFORE]] : i1
//       CHECK:     scf.if %[[WHOLE]] -> (vector<8xf32>)
module {
  func.func @causal(%q: tensor<1x4x3x16xf32> {attn.dims = array<i64: 1, 4, 3, 16>, attn.input = "q"},
                    %k: tensor<1x2x40x16xf32> {attn.dims = array<i64: 1, 2, 40, 16>, attn.input = "k"},
                    %v: tensor<1x2x40x16xf32> {attn.dims = array<i64: 1, 2, 40, 16>, attn.input = "v"})
      -> (tensor<1x4x3x16xf32> {attn.output = "y"}) {
    %o = attn.attention %q, %k, %v {causal} : (tensor<1x4x3x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x4x3x16xf32>
    return %o : tensor<1x4x3x16xf32>
  }
}
