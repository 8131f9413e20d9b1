// RUN: attn-opt %s --split-input-file --attn-lower-primitives --verify-diagnostics | FileCheck %s

// Tests the portable lowering of the primitives to linalg on tensors, one
// case per op: products accumulate in f32 over a reduction loop, with
// numpy-broadcast batch dims (a static 1 reads index 0) and 1-D operands;
// elementwise ops read broadcast operands the same way; f16 and bf16 are
// extended in the body and the result rounded once; softmax subtracts 0
// instead of the max of an all -inf slice and selects 0 for it; causal_mask
// compares j with i + T - S; the data movement ops are tensor reshapes,
// linalg.transpose/broadcast, extract_slice and insert_slice; every dynamic
// size comes from tensor.dim or the reshape's size operands. attn.attention
// stays.

// CHECK-DAG: #[[LHS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>
// CHECK-DAG: #[[RHS:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d1, d3, d4)>
// CHECK-DAG: #[[OUT:.+]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @matmul_transpose_b_broadcast(
// CHECK-SAME: %[[A:[^:]+]]: tensor<?x1x?x8xf32>, %[[B:[^:]+]]: tensor<1x4x?x8xf32>)
// CHECK-DAG: %[[BATCH:.+]] = tensor.dim %[[A]], %c0
// CHECK-DAG: %[[M:.+]] = tensor.dim %[[A]], %c2
// CHECK-DAG: %[[N:.+]] = tensor.dim %[[B]], %c2
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[BATCH]], %[[M]], %[[N]]) : tensor<?x4x?x?xf32>
// CHECK: %[[ZERO:.+]] = linalg.fill ins(%{{.*}} : f32) outs(%[[EMPTY]]
// CHECK: %[[S:.+]] = linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[ZERO]] : tensor<?x4x?x?xf32>)
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: return %[[S]]
func.func @matmul_transpose_b_broadcast(%a: tensor<?x1x?x8xf32>, %b: tensor<1x4x?x8xf32>) -> tensor<?x4x?x?xf32> {
  %0 = attn.matmul %a, %b {transpose_b} : (tensor<?x1x?x8xf32>, tensor<1x4x?x8xf32>) -> tensor<?x4x?x?xf32>
  return %0 : tensor<?x4x?x?xf32>
}

// -----

// A 1-D right operand is a column whose dim leaves the result; f16 sums in
// f32, rounded by a second generic.
// CHECK-DAG: #[[X:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[V:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[R:.+]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_f16_vector(
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[X]], #[[V]], #[[R]]], iterator_types = ["parallel", "parallel", "reduction"]} {{.*}} outs(%{{.*}} : tensor<?x3xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: %[[OUT:.+]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<?x3xf32>) outs(%{{.*}} : tensor<?x3xf16>)
// CHECK:   arith.truncf %{{.*}} : f32 to f16
// CHECK: return %[[OUT]]
func.func @matmul_f16_vector(%a: tensor<?x3x8xf16>, %b: tensor<8xf16>) -> tensor<?x3xf16> {
  %0 = attn.matmul %a, %b : (tensor<?x3x8xf16>, tensor<8xf16>) -> tensor<?x3xf16>
  return %0 : tensor<?x3xf16>
}

// -----

// x · wᵀ in f32, then the bias added in f32 and the sum rounded once.
// CHECK-DAG: #[[X:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-DAG: #[[BIAS:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-LABEL: func.func @linear_bf16(
// CHECK-SAME: %[[XV:[^:]+]]: tensor<?x?x16xbf16>, %[[WV:[^:]+]]: tensor<32x16xbf16>, %[[BV:[^:]+]]: tensor<32xbf16>)
// CHECK: %[[ACC:.+]] = linalg.generic {indexing_maps = [#[[X]], #[[W]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[XV]], %[[WV]] : {{.*}}) outs(%{{.*}} : tensor<?x?x32xf32>)
// CHECK: %[[Y:.+]] = linalg.generic {indexing_maps = [#{{.*}}, #[[BIAS]], #{{.*}}], {{.*}} ins(%[[ACC]], %[[BV]] : tensor<?x?x32xf32>, tensor<32xbf16>) outs(%{{.*}} : tensor<?x?x32xbf16>)
// CHECK:   %[[WIDE:.+]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:   %[[SUM:.+]] = arith.addf %{{.*}}, %[[WIDE]] : f32
// CHECK:   arith.truncf %[[SUM]] : f32 to bf16
// CHECK: return %[[Y]]
func.func @linear_bf16(%x: tensor<?x?x16xbf16>, %w: tensor<32x16xbf16>, %bias: tensor<32xbf16>) -> tensor<?x?x32xbf16> {
  %0 = attn.linear %x, %w, %bias : (tensor<?x?x16xbf16>, tensor<32x16xbf16>, tensor<32xbf16>) -> tensor<?x?x32xbf16>
  return %0 : tensor<?x?x32xbf16>
}

// -----

// Broadcasting: a missing leading dim and a static 1 (index 0); the
// result's dynamic sizes come from the operand that has them.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[BC:.+]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func.func @add_broadcast(
// CHECK-SAME: %[[A:[^:]+]]: tensor<?x4x?xf32>, %[[B:[^:]+]]: tensor<1x?xf32>)
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[A]], %c0
// CHECK-DAG: %[[D2:.+]] = tensor.dim %[[A]], %c2
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[D0]], %[[D2]]) : tensor<?x4x?xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[BC]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[EMPTY]] : tensor<?x4x?xf32>)
// CHECK:   arith.addf
func.func @add_broadcast(%a: tensor<?x4x?xf32>, %b: tensor<1x?xf32>) -> tensor<?x4x?xf32> {
  %0 = attn.add %a, %b : (tensor<?x4x?xf32>, tensor<1x?xf32>) -> tensor<?x4x?xf32>
  return %0 : tensor<?x4x?xf32>
}

// -----

// Integers stay integers.
// CHECK-DAG: #[[BC:.+]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @sub_i32(
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BC]], #{{.*}}]
// CHECK:   arith.subi %{{.*}}, %{{.*}} : i32
func.func @sub_i32(%a: tensor<3x?xi32>, %b: tensor<3x1xi32>) -> tensor<3x?xi32> {
  %0 = attn.sub %a, %b : (tensor<3x?xi32>, tensor<3x1xi32>) -> tensor<3x?xi32>
  return %0 : tensor<3x?xi32>
}

// -----

// CHECK-LABEL: func.func @mul_f16(
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?xf16>)
// CHECK:   %[[A:.+]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   %[[B:.+]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   %[[P:.+]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK:   %[[R:.+]] = arith.truncf %[[P]] : f32 to f16
// CHECK:   linalg.yield %[[R]] : f16
func.func @mul_f16(%a: tensor<?xf16>, %b: tensor<?xf16>) -> tensor<?xf16> {
  %0 = attn.mul %a, %b : (tensor<?xf16>, tensor<?xf16>) -> tensor<?xf16>
  return %0 : tensor<?xf16>
}

// -----

// CHECK-LABEL: func.func @div(
// CHECK: linalg.generic
// CHECK:   arith.divf %{{.*}}, %{{.*}} : f32
func.func @div(%a: tensor<2x?xf32>, %b: tensor<2x1xf32>) -> tensor<2x?xf32> {
  %0 = attn.div %a, %b : (tensor<2x?xf32>, tensor<2x1xf32>) -> tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @scale_f16(
// CHECK: linalg.generic
// CHECK:   %[[X:.+]] = arith.extf %{{.*}} : f16 to f32
// CHECK:   %[[C:.+]] = arith.constant 1.250000e-01 : f32
// CHECK:   %[[Y:.+]] = arith.mulf %[[X]], %[[C]] : f32
// CHECK:   arith.truncf %[[Y]] : f32 to f16
func.func @scale_f16(%x: tensor<?x8xf16>) -> tensor<?x8xf16> {
  %0 = attn.scale %x, 1.250000e-01 : tensor<?x8xf16>
  return %0 : tensor<?x8xf16>
}

// -----

// CHECK-LABEL: func.func @tanh(
// CHECK: linalg.generic
// CHECK:   math.tanh %{{.*}} : f32
func.func @tanh(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = attn.tanh %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @exp(
// CHECK: tensor.empty() : tensor<4xbf16>
// CHECK: linalg.generic
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK:   math.exp %{{.*}} : f32
// CHECK:   arith.truncf %{{.*}} : f32 to bf16
func.func @exp(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = attn.exp %x : tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// CHECK-LABEL: func.func @neg_i32(
// CHECK: linalg.generic
// CHECK:   %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK:   arith.subi %[[ZERO]], %{{.*}} : i32
func.func @neg_i32(%x: tensor<?xi32>) -> tensor<?xi32> {
  %0 = attn.neg %x : tensor<?xi32>
  return %0 : tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @neg_f32(
// CHECK: linalg.generic
// CHECK:   arith.negf %{{.*}} : f32
func.func @neg_f32(%x: tensor<?xf32>) -> tensor<?xf32> {
  %0 = attn.neg %x : tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @sqrt(
// CHECK: linalg.generic
// CHECK:   math.sqrt %{{.*}} : f32
func.func @sqrt(%x: tensor<2x?xf32>) -> tensor<2x?xf32> {
  %0 = attn.sqrt %x : tensor<2x?xf32>
  return %0 : tensor<2x?xf32>
}

// -----

// CHECK-LABEL: func.func @cos(
// CHECK: linalg.generic
// CHECK:   math.cos %{{.*}} : f32
func.func @cos(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %0 = attn.cos %x : tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @sin_bf16(
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x8xbf16>)
// CHECK:   %[[X:.+]] = arith.extf %{{.*}} : bf16 to f32
// CHECK:   %[[Y:.+]] = math.sin %[[X]] : f32
// CHECK:   arith.truncf %[[Y]] : f32 to bf16
func.func @sin_bf16(%x: tensor<?x8xbf16>) -> tensor<?x8xbf16> {
  %0 = attn.sin %x : tensor<?x8xbf16>
  return %0 : tensor<?x8xbf16>
}

// -----

// Softmax along a middle axis of f16: the max and the sum reduce it (in
// f32); the shift is 0 where the max is -inf and such a slice gives 0, so
// no -inf - -inf makes a NaN.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @softmax(
// CHECK: %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK: %[[INIT:.+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.*}} : tensor<?x?xf32>)
// CHECK: %[[MAX:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]]], iterator_types = ["parallel", "reduction", "parallel"]} {{.*}} outs(%[[INIT]] : tensor<?x?xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.maximumf
// CHECK: %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction", "parallel"]} ins(%{{.*}}, %[[MAX]] : {{.*}})
// CHECK:   %[[MASKED:.+]] = arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:   %[[SHIFT:.+]] = arith.select %[[MASKED]], %{{.*}}, %{{.*}} : f32
// CHECK:   arith.subf %{{.*}}, %[[SHIFT]] : f32
// CHECK:   math.exp
// CHECK:   arith.addf
// CHECK: %[[P:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]} ins(%{{.*}}, %[[MAX]], %[[SUM]] : {{.*}}) outs(%{{.*}} : tensor<?x?x?xf16>)
// CHECK:   %[[MASKED:.+]] = arith.cmpf oeq, %{{.*}}, %{{.*}} : f32
// CHECK:   %[[E:.+]] = math.exp
// CHECK:   %[[Q:.+]] = arith.divf %[[E]], %{{.*}} : f32
// CHECK:   %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[SEL:.+]] = arith.select %[[MASKED]], %[[ZERO]], %[[Q]] : f32
// CHECK:   arith.truncf %[[SEL]] : f32 to f16
// CHECK: return %[[P]]
func.func @softmax(%x: tensor<?x?x?xf16>) -> tensor<?x?x?xf16> {
  %0 = attn.softmax %x {axis = 1 : i64} : tensor<?x?x?xf16>
  return %0 : tensor<?x?x?xf16>
}

// -----

// The i1 mask broadcasts; the fill value is selected, not computed.
// CHECK-DAG: #[[BC:.+]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func.func @masked_fill(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x2x?xf32>, %[[M:[^:]+]]: tensor<1x?xi1>)
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BC]], #{{.*}}], {{.*}} ins(%[[X]], %[[M]] : {{.*}})
// CHECK:   ^bb0(%[[IN:.+]]: f32, %[[DROP:.+]]: i1, %{{.*}}: f32):
// CHECK:   %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:   arith.select %[[DROP]], %[[NEGINF]], %[[IN]] : f32
func.func @masked_fill(%x: tensor<?x2x?xf32>, %m: tensor<1x?xi1>) -> tensor<?x2x?xf32> {
  %0 = attn.masked_fill %x, %m, 0xFFF0000000000000 : (tensor<?x2x?xf32>, tensor<1x?xi1>) -> tensor<?x2x?xf32>
  return %0 : tensor<?x2x?xf32>
}

// -----

// -inf where j > i + T - S (bottom-right alignment), T and S at run time.
// CHECK-LABEL: func.func @causal_mask(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x?xf32>)
// CHECK-DAG: %[[S:.+]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[T:.+]] = tensor.dim %[[X]], %c2
// CHECK: %[[SHIFT:.+]] = arith.subi %[[T]], %[[S]] : index
// CHECK: linalg.generic
// CHECK:   %[[I:.+]] = linalg.index 1 : index
// CHECK:   %[[J:.+]] = linalg.index 2 : index
// CHECK:   %[[P:.+]] = arith.addi %[[I]], %[[SHIFT]] : index
// CHECK:   %[[FUTURE:.+]] = arith.cmpi sgt, %[[J]], %[[P]] : index
// CHECK:   %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:   arith.select %[[FUTURE]], %[[NEGINF]], %{{.*}} : f32
func.func @causal_mask(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %0 = attn.causal_mask %x : tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// Kept where max(0, p - L) <= j < min(T, p + R + 1), p = i + T - S: the
// window rule of AttnSemantics.h, T and S at run time.
// CHECK-LABEL: func.func @window_mask(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x?xf32>)
// CHECK-DAG: %[[S:.+]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[T:.+]] = tensor.dim %[[X]], %c2
// CHECK: linalg.generic
// CHECK:   %[[I:.+]] = linalg.index 1 : index
// CHECK:   %[[J:.+]] = linalg.index 2 : index
// CHECK:   %[[SHIFT:.+]] = arith.subi %[[T]], %[[S]] : index
// CHECK:   %[[P:.+]] = arith.addi %[[I]], %[[SHIFT]] : index
// CHECK:   %[[FROM:.+]] = arith.subi %[[P]], %c3 : index
// CHECK:   %[[FIRST:.+]] = arith.maxsi %[[FROM]], %c0{{.*}} : index
// CHECK:   %[[TO:.+]] = arith.addi %[[P]], %c2{{.*}} : index
// CHECK:   %[[LAST:.+]] = arith.minsi %[[T]], %[[TO]] : index
// CHECK:   %[[BEFORE:.+]] = arith.cmpi slt, %[[J]], %[[LAST]] : index
// CHECK:   %[[AFTER:.+]] = arith.cmpi sle, %[[FIRST]], %[[J]] : index
// CHECK:   %[[KEEP:.+]] = arith.andi %[[AFTER]], %[[BEFORE]] : i1
// CHECK:   %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
// CHECK:   arith.select %[[KEEP]], %{{.*}}, %[[NEGINF]] : f32
func.func @window_mask(%x: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %0 = attn.window_mask %x {left = 3, right = 1} : tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}

// -----

// C order: the result's sizes from its type and the size operands.
// CHECK-LABEL: func.func @reshape(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x12x4xf32>, %[[B:[^:]+]]: index, %[[S:[^:]+]]: index)
// CHECK: %[[C48:.+]] = arith.constant 48 : index
// CHECK: %[[SHAPE:.+]] = tensor.from_elements %[[B]], %[[S]], %[[C48]] : tensor<3xindex>
// CHECK: %[[R:.+]] = tensor.reshape %[[X]](%[[SHAPE]]) : (tensor<?x?x12x4xf32>, tensor<3xindex>) -> tensor<?x?x48xf32>
// CHECK: return %[[R]]
func.func @reshape(%x: tensor<?x?x12x4xf32>, %b: index, %s: index) -> tensor<?x?x48xf32> {
  %0 = attn.reshape %x[%b, %s] : tensor<?x?x12x4xf32> -> tensor<?x?x48xf32>
  return %0 : tensor<?x?x48xf32>
}

// -----

// CHECK-LABEL: func.func @transpose(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?x12x64xf32>)
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[S:.+]] = tensor.dim %[[X]], %c1
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[B]], %[[S]]) : tensor<?x12x?x64xf32>
// CHECK: linalg.transpose ins(%[[X]] : tensor<?x?x12x64xf32>) outs(%[[EMPTY]] : tensor<?x12x?x64xf32>) permutation = [0, 2, 1, 3]
func.func @transpose(%x: tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
  return %0 : tensor<?x12x?x64xf32>
}

// -----

// A result type less static than the input's: the linalg op gets the exact
// type, then a cast.
// CHECK-LABEL: func.func @transpose_loose_type(
// CHECK: %[[T:.+]] = linalg.transpose ins(%{{.*}} : tensor<3x4xf32>) outs(%{{.*}} : tensor<4x3xf32>) permutation = [1, 0]
// CHECK: %[[C:.+]] = tensor.cast %[[T]] : tensor<4x3xf32> to tensor<?x?xf32>
// CHECK: return %[[C]]
func.func @transpose_loose_type(%x: tensor<3x4xf32>) -> tensor<?x?xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 1, 0>} : tensor<3x4xf32> -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: func.func @unsqueeze(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x?xf32>)
// CHECK-DAG: %[[D0:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[D1:.+]] = tensor.dim %[[X]], %c1
// CHECK: tensor.expand_shape %[[X]] {{\[}}[0], [1, 2]] output_shape [%[[D0]], 1, %[[D1]]] : tensor<?x?xf32> into tensor<?x1x?xf32>
func.func @unsqueeze(%x: tensor<?x?xf32>) -> tensor<?x1x?xf32> {
  %0 = attn.unsqueeze %x {axis = 1 : i64} : tensor<?x?xf32> -> tensor<?x1x?xf32>
  return %0 : tensor<?x1x?xf32>
}

// -----

// repeat_interleave: each head broadcast along a new dim of `times`, then
// the two collapsed (head h lands at h·4 ... h·4 + 3).
// CHECK-LABEL: func.func @repeat(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x2x?x8xbf16>)
// CHECK: %[[EMPTY:.+]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x2x4x?x8xbf16>
// CHECK: %[[SPREAD:.+]] = linalg.broadcast ins(%[[X]] : tensor<?x2x?x8xbf16>) outs(%[[EMPTY]] : tensor<?x2x4x?x8xbf16>) dimensions = [2]
// CHECK: tensor.collapse_shape %[[SPREAD]] {{\[}}[0], [1, 2], [3], [4]] : tensor<?x2x4x?x8xbf16> into tensor<?x8x?x8xbf16>
func.func @repeat(%x: tensor<?x2x?x8xbf16>) -> tensor<?x8x?x8xbf16> {
  %0 = attn.repeat %x {axis = 1 : i64, times = 4 : i64} : tensor<?x2x?x8xbf16> -> tensor<?x8x?x8xbf16>
  return %0 : tensor<?x8x?x8xbf16>
}

// -----

// rotate_half's second half: an extract_slice at the static offset, the
// other dims' dynamic sizes from tensor.dim.
// CHECK-LABEL: func.func @slice(
// CHECK-SAME: %[[X:[^:]+]]: tensor<?x8x?x128xf32>)
// CHECK-DAG: %[[B:.+]] = tensor.dim %[[X]], %c0
// CHECK-DAG: %[[S:.+]] = tensor.dim %[[X]], %c2
// CHECK: %[[R:.+]] = tensor.extract_slice %[[X]][0, 0, 0, 64] [%[[B]], 8, %[[S]], 64] [1, 1, 1, 1] : tensor<?x8x?x128xf32> to tensor<?x8x?x64xf32>
// CHECK: return %[[R]]
func.func @slice(%x: tensor<?x8x?x128xf32>) -> tensor<?x8x?x64xf32> {
  %0 = attn.slice %x {axis = 3 : i64, start = 64 : i64, end = 128 : i64} : tensor<?x8x?x128xf32> -> tensor<?x8x?x64xf32>
  return %0 : tensor<?x8x?x64xf32>
}

// -----

// A result type less static than the slice: the exact type, then a cast;
// integers are moved like floats.
// CHECK-LABEL: func.func @slice_loose_type(
// CHECK: %[[R:.+]] = tensor.extract_slice %{{.*}}[1, 0] [2, 6] [1, 1] : tensor<4x6xi32> to tensor<2x6xi32>
// CHECK: %[[C:.+]] = tensor.cast %[[R]] : tensor<2x6xi32> to tensor<?x?xi32>
// CHECK: return %[[C]]
func.func @slice_loose_type(%x: tensor<4x6xi32>) -> tensor<?x?xi32> {
  %0 = attn.slice %x {axis = 0 : i64, start = 1 : i64, end = 3 : i64} : tensor<4x6xi32> -> tensor<?x?xi32>
  return %0 : tensor<?x?xi32>
}

// -----

// The sum in f32, rounded once, then keepdims' 1 put back.
// CHECK-LABEL: func.func @reduce_sum_keepdims(
// CHECK: %[[ACC:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} {{.*}} outs(%{{.*}} : tensor<?xf32>)
// CHECK:   arith.extf %{{.*}} : f16 to f32
// CHECK:   arith.addf
// CHECK: %[[SUM:.+]] = linalg.generic {{.*}} ins(%[[ACC]] : tensor<?xf32>) outs(%{{.*}} : tensor<?xf16>)
// CHECK:   arith.truncf
// CHECK: tensor.expand_shape %[[SUM]] {{\[}}[0, 1]] output_shape [%{{.*}}, 1] : tensor<?xf16> into tensor<?x1xf16>
func.func @reduce_sum_keepdims(%x: tensor<?x?xf16>) -> tensor<?x1xf16> {
  %0 = attn.reduce_sum %x {axis = 1 : i64, keepdims} : tensor<?x?xf16> -> tensor<?x1xf16>
  return %0 : tensor<?x1xf16>
}

// -----

// CHECK-LABEL: func.func @concat(
// CHECK-SAME: %[[A:[^:]+]]: tensor<?x3xf32>, %[[B:[^:]+]]: tensor<?x5xf32>)
// CHECK: %[[N:.+]] = tensor.dim %[[A]], %c0
// CHECK: %[[EMPTY:.+]] = tensor.empty(%[[N]]) : tensor<?x8xf32>
// CHECK: %[[FIRST:.+]] = tensor.insert_slice %[[A]] into %[[EMPTY]][0, 0] [%[[N]], 3] [1, 1]
// CHECK: %[[M:.+]] = tensor.dim %[[B]], %c0
// CHECK: %[[BOTH:.+]] = tensor.insert_slice %[[B]] into %[[FIRST]][0, 3] [%[[M]], 5] [1, 1]
// CHECK: return %[[BOTH]]
func.func @concat(%a: tensor<?x3xf32>, %b: tensor<?x5xf32>) -> tensor<?x8xf32> {
  %0 = attn.concat %a, %b {axis = 1 : i64} : (tensor<?x3xf32>, tensor<?x5xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// attn.attention is attn-tile-attention's, not this pass's.
// CHECK-LABEL: func.func @attention_untouched(
// CHECK: attn.attention
func.func @attention_untouched(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %0 = attn.attention %q, %k, %v {causal} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %0 : tensor<1x2x?x8xf32>
}

// -----

// What the verifier lets through but no lowering defines is an op error.
func.func @index_elements(%a: tensor<4xindex>, %b: tensor<4xindex>) -> tensor<4xindex> {
  // expected-error @below {{'attn.add' op element type must be a float or an integer}}
  %0 = attn.add %a, %b : (tensor<4xindex>, tensor<4xindex>) -> tensor<4xindex>
  return %0 : tensor<4xindex>
}
