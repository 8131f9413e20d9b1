// RUN: attn-opt %s --split-input-file --attn-tile-attention="row-tile=8 key-tile=16 pack-query-heads=1" --cse | FileCheck %s

// attn-tile-attention with pack-query-heads: the G = Hq / Hkv query heads of
// a kv head share the row tiles (row R = g·S + i), as a decode step wants.

// Tests, for GQA decode-like sizes (Hq = 8, Hkv = 2, so G = 4, S = 3, 12
// packed rows in tiles of 8): q gathered as [B, Hkv, G·S, D] (head
// k·G + R / S, query R mod S), the forall over (b, kv head, row tile), K
// and V read at the kv head itself, the key range of the tile's positions
// (a tile straddling two heads spans every query: 37 + 0 to 37 + 2), the
// mask's packed rows, and the output scattered back (row (h mod G)·S + i
// of kv head h / G).
// CHECK-LABEL: func.func @packed_gqa_causal
//       CHECK:   %[[C3:.+]] = arith.constant 3 : index
//       CHECK:   %[[PACKED:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<1x2x12x16xf32>)
//       CHECK:     %[[ROW:.+]] = linalg.index 2 : index
//       CHECK:     %[[KV:.+]] = linalg.index 1 : index
//       CHECK:     %[[G:.+]] = arith.divui %[[ROW]], %[[C3]] : index
//       CHECK:     %[[BASE:.+]] = arith.muli %[[KV]], %[[C4:.+]] : index
//       CHECK:     %[[HEAD:.+]] = arith.addi %[[BASE]], %[[G]] : index
//       CHECK:     %[[I:.+]] = arith.remui %[[ROW]], %[[C3]] : index
//       CHECK:     tensor.extract %arg0[%{{.+}}, %[[HEAD]], %[[I]], %{{.+}}] : tensor<1x8x3x16xf32>
//       CHECK:   %[[RES:.+]] = scf.forall (%[[B:.+]], %[[K:.+]], %[[TI:.+]]) in (1, 2, 2)
//       CHECK:     %[[R0:.+]] = arith.muli %[[TI]], %{{.+}} : index
//       CHECK:     tensor.extract_slice %[[PACKED]][%[[B]], %[[K]], %[[R0]], 0]
//       CHECK:     %[[ONE:.+]] = arith.cmpi eq, %{{.+}}, %{{.+}} : index
//       CHECK:     %[[FIRSTI:.+]] = arith.select %[[ONE]], %{{.+}}, %[[C0:.+]] : index
//       CHECK:     %[[LASTI:.+]] = arith.select %[[ONE]], %{{.+}}, %[[C2:.+]] : index
//       CHECK:     %[[PFIRST:.+]] = arith.addi %[[FIRSTI]], %[[C37:.+]] : index
//       CHECK:     %[[PLAST:.+]] = arith.addi %[[LASTI]], %[[C37]] : index
//       CHECK:     scf.for %[[J0:.+]] = %[[C0]] to %{{.+}} step
//       CHECK:       tensor.extract_slice %arg1[%[[B]], %[[K]], %[[J0]], 0]
//       CHECK:       tensor.extract_slice %arg2[%[[B]], %[[K]], %[[J0]], 0]
//       CHECK:       attn.tile_mask %{{.+}}[%[[C37]], %[[J0]]] rows %[[R0]] mod %[[C3]] {causal} : tensor<?x?xf32>
//       CHECK:     tensor.parallel_insert_slice %{{.+}} into %{{.+}}[%[[B]], %[[K]], %[[R0]], 0]
//       CHECK:   linalg.generic {{.+}} outs(%{{.+}} : tensor<1x8x3x16xf32>)
//       CHECK:     %[[H:.+]] = linalg.index 1 : index
//       CHECK:     %[[KVH:.+]] = arith.divui %[[H]], %[[C4]] : index
//       CHECK:     %[[Q:.+]] = linalg.index 2 : index
//       CHECK:     %[[GH:.+]] = arith.remui %[[H]], %[[C4]] : index
//       CHECK:     %[[RB:.+]] = arith.muli %[[GH]], %[[C3]] : index
//       CHECK:     %[[R:.+]] = arith.addi %[[RB]], %[[Q]] : index
//       CHECK:     tensor.extract %[[RES]][%{{.+}}, %[[KVH]], %[[R]], %{{.+}}] : tensor<1x2x12x16xf32>
func.func @packed_gqa_causal(%q: tensor<1x8x3x16xf32>, %k: tensor<1x2x40x16xf32>, %v: tensor<1x2x40x16xf32>) -> tensor<1x8x3x16xf32> {
  %o = attn.attention %q, %k, %v {causal} : (tensor<1x8x3x16xf32>, tensor<1x2x40x16xf32>, tensor<1x2x40x16xf32>) -> tensor<1x8x3x16xf32>
  return %o : tensor<1x8x3x16xf32>
}

// -----

// Tests that with bshd, run-time head counts and ALiBi, the gather reads
// q[b, i, head, d], the standard slopes are computed once as a [Hq] tensor,
// attn.tile_transform gets the packed rows (its lowering finds each row's
// head), and lse comes back as [B, Hq, S].
// CHECK-LABEL: func.func @packed_bshd_alibi_lse
//       CHECK:   %[[HQ:.+]] = tensor.dim %arg0, %[[C2:.+]] : tensor<1x5x?x8xf32>
//       CHECK:   %[[HKV:.+]] = tensor.dim %arg1, %[[C2]] : tensor<1x9x?x8xf32>
//       CHECK:   %[[G:.+]] = arith.divui %[[HQ]], %[[HKV]] : index
//       CHECK:   linalg.generic
//       CHECK:     tensor.extract %arg0[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : tensor<1x5x?x8xf32>
//       CHECK:   %[[SLOPES:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<?xf32>)
//       CHECK:     math.ctlz
//       CHECK:     math.exp2 %{{.+}} : f64
//       CHECK:   scf.forall (%[[B:.+]], %[[K:.+]], %{{.+}}) in (1, %[[HKV]], %{{.+}})
//       CHECK:       attn.tile_transform %{{.+}}[%[[B]], %[[K]], %{{.+}}, %{{.+}}] in[%{{.+}}, %{{.+}}] packed %[[G]] alibi_slopes(%[[SLOPES]] : tensor<?xf32>) : tensor<?x9xf32>
//       CHECK:   linalg.generic {{.+}} outs(%{{.+}} : tensor<1x5x?x8xf32>)
//       CHECK:   linalg.generic {{.+}} outs(%{{.+}} : tensor<1x?x5xf32>)
//       CHECK:   return %{{.+}}, %{{.+}} : tensor<1x5x?x8xf32>, tensor<1x?x5xf32>
func.func @packed_bshd_alibi_lse(%q: tensor<1x5x?x8xf32>, %k: tensor<1x9x?x8xf32>, %v: tensor<1x9x?x8xf32>) -> (tensor<1x5x?x8xf32>, tensor<1x?x5xf32>) {
  %o, %lse = attn.attention %q, %k, %v {layout = #attn.layout<bshd>, alibi} : (tensor<1x5x?x8xf32>, tensor<1x9x?x8xf32>, tensor<1x9x?x8xf32>) -> (tensor<1x5x?x8xf32>, tensor<1x?x5xf32>)
  return %o, %lse : tensor<1x5x?x8xf32>, tensor<1x?x5xf32>
}
