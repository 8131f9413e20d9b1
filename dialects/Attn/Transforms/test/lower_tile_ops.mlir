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

// -----

// Tests the per-element form of attn.tile_transform: row r is query
// i = r0 + r (packed: query (r0 + r) mod S of head h·G + (r0 + r) / S),
// broadcast dims read index 0 (a run-time dim decides at run time), the
// bias is widened to f32, ALiBi subtracts slope_h · |p - j| with
// p = i + T - S, a mask_drops mask is inverted, and dropped entries become
// -inf.
// CHECK-LABEL: func.func @transform(
// CHECK-SAME: %[[SC:[^:]+]]: tensor<?x?xf32>, %[[BIAS:[^:]+]]: tensor<1x4x?x?xf16>, %[[SLOPES:[^:]+]]: tensor<4xf32>, %[[PAD:[^:]+]]: tensor<2x1x1x?xi1>, %[[DROP:[^:]+]]: tensor<?x?xi1>, %[[B:[^:]+]]: index, %[[H:[^:]+]]: index, %[[R0:[^:]+]]: index, %[[J0:[^:]+]]: index, %[[S:[^:]+]]: index, %[[T:[^:]+]]: index)
// CHECK: linalg.generic {{.+}} outs(%[[SC]] : tensor<?x?xf32>)
// CHECK:   %[[R:.+]] = linalg.index 0 : index
// CHECK:   %[[I:.+]] = arith.addi %[[R0]], %[[R]] : index
// CHECK:   %[[C:.+]] = linalg.index 1 : index
// CHECK:   %[[J:.+]] = arith.addi %[[J0]], %[[C]] : index
// CHECK:   %[[X:.+]] = tensor.extract %[[BIAS]][%[[C0:.+]], %[[H]], %{{.+}}, %{{.+}}] : tensor<1x4x?x?xf16>
// CHECK:   %[[XF:.+]] = arith.extf %[[X]] : f16 to f32
// CHECK:   %[[BIASED:.+]] = arith.addf %{{.+}}, %[[XF]] : f32
// CHECK:   %[[OFFSET:.+]] = arith.subi %[[T]], %[[S]] : index
// CHECK:   %[[P:.+]] = arith.addi %[[I]], %[[OFFSET]] : index
// CHECK:   %[[DIST:.+]] = arith.subi %[[P]], %[[J]] : index
// CHECK:   %[[DIST64:.+]] = arith.index_cast %[[DIST]] : index to i64
// CHECK:   %[[ABS:.+]] = math.absi %[[DIST64]] : i64
// CHECK:   %[[SLOPE:.+]] = tensor.extract %[[SLOPES]][%[[H]]] : tensor<4xf32>
// CHECK:   %[[ABSF:.+]] = arith.sitofp %[[ABS]] : i64 to f32
// CHECK:   %[[PENALTY:.+]] = arith.mulf %[[ABSF]], %[[SLOPE]] : f32
// CHECK:   %[[ALIBI:.+]] = arith.subf %[[BIASED]], %[[PENALTY]] : f32
// CHECK:   %[[KEEP0:.+]] = tensor.extract %[[PAD]][%[[B]], %{{.+}}, %{{.+}}, %{{.+}}] : tensor<2x1x1x?xi1>
// CHECK:   %[[DROPPED:.+]] = tensor.extract %[[DROP]][%{{.+}}, %{{.+}}] : tensor<?x?xi1>
// CHECK:   %[[KEEP1:.+]] = arith.xori %[[DROPPED]], %{{.+}} : i1
// CHECK:   %[[KEEP:.+]] = arith.andi %[[KEEP0]], %[[KEEP1]] : i1
// CHECK:   %[[OUT:.+]] = arith.select %[[KEEP]], %[[ALIBI]], %{{.+}} : f32
// CHECK:   linalg.yield %[[OUT]] : f32
func.func @transform(%s: tensor<?x?xf32>, %bias: tensor<1x4x?x?xf16>, %slopes: tensor<4xf32>, %pad: tensor<2x1x1x?xi1>, %drop: tensor<?x?xi1>, %b: index, %h: index, %r0: index, %j0: index, %sq: index, %t: index) -> tensor<?x?xf32> {
  %0 = attn.tile_transform %s [%b, %h, %r0, %j0] in [%sq, %t] bias(%bias : tensor<1x4x?x?xf16>) alibi_slopes(%slopes : tensor<4xf32>) masks(%pad, %drop : tensor<2x1x1x?xi1>, tensor<?x?xi1>) {mask_drops = array<i1: false, true>} : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests packed rows in attn.tile_transform: head h·G + R / S and query
// R mod S of row R = r0 + r.
// CHECK-LABEL: func.func @transform_packed(
// CHECK-SAME: %[[SC:[^:]+]]: tensor<?x?xf32>, %[[BIAS:[^:]+]]: tensor<?x?x?x?xf32>, %[[B:[^:]+]]: index, %[[K:[^:]+]]: index, %[[R0:[^:]+]]: index, %[[J0:[^:]+]]: index, %[[S:[^:]+]]: index, %[[T:[^:]+]]: index, %[[G:[^:]+]]: index)
// CHECK: linalg.generic
// CHECK:   %[[R:.+]] = linalg.index 0 : index
// CHECK:   %[[ROW:.+]] = arith.addi %[[R0]], %[[R]] : index
// CHECK:   %[[GH:.+]] = arith.divui %[[ROW]], %[[S]] : index
// CHECK:   %[[BASE:.+]] = arith.muli %[[K]], %[[G]] : index
// CHECK:   %[[HEAD:.+]] = arith.addi %[[BASE]], %[[GH]] : index
// CHECK:   %[[I:.+]] = arith.remui %[[ROW]], %[[S]] : index
// CHECK:   tensor.extract %[[BIAS]][%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] : tensor<?x?x?x?xf32>
func.func @transform_packed(%s: tensor<?x?xf32>, %bias: tensor<?x?x?x?xf32>, %b: index, %k: index, %r0: index, %j0: index, %sq: index, %t: index, %g: index) -> tensor<?x?xf32> {
  %0 = attn.tile_transform %s [%b, %k, %r0, %j0] in [%sq, %t] packed %g bias(%bias : tensor<?x?x?x?xf32>) : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}
