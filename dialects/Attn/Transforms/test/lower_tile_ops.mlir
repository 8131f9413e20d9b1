// RUN: attn-opt %s --split-input-file --attn-lower-tile-ops | FileCheck %s

// Tests the portable lowering of the tile ops to linalg on tensors: the
// scores as an f32 contraction over the depth (bf16 extended in the body),
// the default scale 1/sqrt(Dk) read from the tile, the softcap c·tanh(s/c);
// the causal + window mask per element from linalg.index (first visible key
// max(0, p - L), last min(p + 1, p + R + 1)), -inf elsewhere; P·V added to
// the accumulator; the normalization with 0 for a row without keys, rounded
// to bf16; the lse as m + log l.

// CHECK-LABEL: func.func @t(
// CHECK-SAME: %[[Q:[^:]+]]: tensor<?x8xbf16>, %[[K:[^:]+]]: tensor<?x8xbf16>, %[[V:[^:]+]]: tensor<?x4xbf16>, %[[ACC:[^:]+]]: tensor<?x4xf32>, %[[L:[^:]+]]: tensor<?xf32>, %[[M:[^:]+]]: tensor<?xf32>, %[[P0:[^:]+]]: index, %[[J0:[^:]+]]: index)
// CHECK: %[[ZERO:.+]] = linalg.fill
// CHECK: %[[RAW:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[Q]], %[[K]] : {{.*}}) outs(%[[ZERO]] : tensor<?x?xf32>)
// CHECK:   arith.extf {{.*}} : bf16 to f32
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: %[[DK:.+]] = tensor.dim %[[Q]], %c1
// CHECK: math.sqrt
// CHECK: %[[FACTOR:.+]] = arith.divf
// CHECK: %[[SCORES:.+]] = linalg.generic {{.*}} outs(%[[RAW]] : tensor<?x?xf32>)
// CHECK:   arith.mulf %{{.*}}, %[[FACTOR]]
// CHECK:   arith.divf
// CHECK:   math.tanh
// CHECK:   arith.mulf
// CHECK: %[[MASKED:.+]] = linalg.generic {{.*}} outs(%[[SCORES]] : tensor<?x?xf32>)
// CHECK:   %[[R:.+]] = linalg.index 0
// CHECK:   %[[P:.+]] = arith.addi %[[P0]], %[[R]]
// CHECK:   %[[C:.+]] = linalg.index 1
// CHECK:   %[[J:.+]] = arith.addi %[[J0]], %[[C]]
// CHECK:   arith.subi %[[P]], %c3
// CHECK:   arith.maxsi
// CHECK:   arith.minsi
// CHECK:   arith.minsi
// CHECK:   arith.cmpi slt, %[[J]]
// CHECK:   arith.cmpi sle
// CHECK:   %[[VISIBLE:.+]] = arith.andi
// CHECK:   arith.select %[[VISIBLE]], %{{.*}}, %cst{{.*}} : f32
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[MASKED]], %[[V]] : {{.*}}) outs(%[[ACC]] : tensor<?x4xf32>)
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[SUM]], %[[L]] : {{.*}}) outs(%{{.*}} : tensor<?x4xbf16>)
// CHECK:   arith.cmpf oeq
// CHECK:   arith.divf
// CHECK:   arith.select
// CHECK:   arith.truncf {{.*}} : f32 to bf16
// CHECK: %[[LSE:.+]] = linalg.generic {{.*}} ins(%[[M]], %[[L]] : {{.*}})
// CHECK:   math.log
// CHECK:   arith.addf
// CHECK: return %[[OUT]], %[[LSE]]
// CHECK-NOT: attn.tile
func.func @t(%q: tensor<?x8xbf16>, %k: tensor<?x8xbf16>, %v: tensor<?x4xbf16>, %acc: tensor<?x4xf32>, %l: tensor<?xf32>, %m: tensor<?xf32>, %p0: index, %j0: index) -> (tensor<?x4xbf16>, tensor<?xf32>) {
  %s = attn.tile_scores %q, %k {softcap = 5.0 : f64} : (tensor<?x8xbf16>, tensor<?x8xbf16>) -> tensor<?x?xf32>
  %sm = attn.tile_mask %s [%p0, %j0] {causal, window = array<i64: 3, 1>} : tensor<?x?xf32>
  %o = attn.tile_accumulate %sm, %v, %acc : (tensor<?x?xf32>, tensor<?x4xbf16>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %out, %lse = attn.tile_normalize %o, %l lse(%m) : (tensor<?x4xf32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x4xbf16>, tensor<?xf32>)
  return %out, %lse : tensor<?x4xbf16>, tensor<?xf32>
}

// -----

// Tests the online-softmax step in arith/math: m' = max(m, rowmax s);
// shift = m', or 0 where m' = -inf (a row without keys: never NaN);
// alpha = exp2((m - shift) log2 e); p = exp2((s - shift) log2 e);
// l' = alpha l + rowsum p; and the accumulator rescaled by alpha before
// P·V is added.
// CHECK-LABEL: func.func @online_softmax_update(
// CHECK-SAME: %[[S:[^:]+]]: tensor<?x?xf32>, %[[M:[^:]+]]: tensor<?xf32>, %[[L:[^:]+]]: tensor<?xf32>, %[[V:[^:]+]]: tensor<?x4xf32>, %[[ACC:[^:]+]]: tensor<?x4xf32>)
// CHECK: %[[MNEW:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[S]] : tensor<?x?xf32>) outs(%[[M]] : tensor<?xf32>)
// CHECK:   arith.maximumf
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[SHIFT:.+]] = linalg.generic {{.*}} ins(%[[MNEW]] : tensor<?xf32>)
// CHECK:   %[[NONE:.+]] = arith.cmpf oeq, %{{.+}}, %[[NEGINF]] : f32
// CHECK:   arith.select %[[NONE]], %{{.+}}, %{{.+}} : f32
// CHECK: %[[ALPHA:.+]] = linalg.generic {{.*}} ins(%[[M]], %[[SHIFT]] : tensor<?xf32>, tensor<?xf32>)
// CHECK:   %[[D:.+]] = arith.subf
// CHECK:   %[[D2:.+]] = arith.mulf %[[D]], %{{.+}} : f32
// CHECK:   math.exp2 %[[D2]] : f32
// CHECK: %[[P:.+]] = linalg.generic {{.*}} ins(%[[S]], %[[SHIFT]] : tensor<?x?xf32>, tensor<?xf32>)
// CHECK:   arith.subf
// CHECK:   arith.mulf
// CHECK:   math.exp2
// CHECK: %[[LSCALED:.+]] = linalg.generic {{.*}} ins(%[[L]], %[[ALPHA]] : tensor<?xf32>, tensor<?xf32>)
// CHECK:   arith.mulf
// CHECK: %[[LNEW:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[P]] : tensor<?x?xf32>) outs(%[[LSCALED]] : tensor<?xf32>)
// CHECK:   arith.addf
// CHECK: %[[OSCALED:.+]] = linalg.generic {{.*}} ins(%[[ACC]], %[[ALPHA]] : tensor<?x4xf32>, tensor<?xf32>)
// CHECK:   arith.mulf
// CHECK: %[[ONEW:.+]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%[[P]], %[[V]] : {{.*}}) outs(%[[OSCALED]] : tensor<?x4xf32>)
// CHECK: return %[[MNEW]], %[[LNEW]], %[[ONEW]]
// CHECK-NOT: attn.tile
func.func @online_softmax_update(%s: tensor<?x?xf32>, %m: tensor<?xf32>, %l: tensor<?xf32>, %v: tensor<?x4xf32>, %acc: tensor<?x4xf32>) -> (tensor<?xf32>, tensor<?xf32>, tensor<?x4xf32>) {
  %p, %m1, %l1, %alpha = attn.tile_softmax_update %s, %m, %l : tensor<?x?xf32>, tensor<?xf32>
  %o = attn.tile_accumulate %p, %v, %acc rescale(%alpha) : (tensor<?x?xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xf32>) -> tensor<?x4xf32>
  return %m1, %l1, %o : tensor<?xf32>, tensor<?xf32>, tensor<?x4xf32>
}
