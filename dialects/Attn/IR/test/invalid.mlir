// RUN: attn-opt %s --split-input-file --verify-diagnostics

// Every diagnostic of the attn verifiers (AttnOps.cpp), one case each, in the
// order of AttnOps.td: products, elementwise ops, data movement, attention.

//===----------------------------------------------------------------------===//
// attn.matmul
//===----------------------------------------------------------------------===//

// Tests that matmul rejects operands of two float types.
func.func @matmul_element_types_differ(%a: tensor<2x3xf32>, %b: tensor<3x4xf16>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'attn.matmul' op operands must share one float element type}}
  %0 = attn.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf16>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Tests that matmul rejects integer operands.
func.func @matmul_integer(%a: tensor<2x3xi32>, %b: tensor<3x4xi32>) -> tensor<2x4xi32> {
  // expected-error @+1 {{operands must share one float element type}}
  %0 = attn.matmul %a, %b : (tensor<2x3xi32>, tensor<3x4xi32>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

// -----

// Tests that matmul rejects a rank-0 operand.
func.func @matmul_rank_0(%a: tensor<f32>, %b: tensor<3x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operands must have rank >= 1}}
  %0 = attn.matmul %a, %b : (tensor<f32>, tensor<3x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that transpose_b needs a right operand of rank 2 or more.
func.func @matmul_transpose_b_vector(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{transpose_b needs a right operand of rank >= 2}}
  %0 = attn.matmul %a, %b {transpose_b} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Tests that matmul rejects differing inner dims, and names the shapes.
func.func @matmul_inner_dims(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+1 {{inner dims differ: [2, 3] x [4, 5]}}
  %0 = attn.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Tests that transpose_b reads the right operand as [N, K]: a [64, 32]
// operand has K = 32, which does not match 64.
func.func @matmul_inner_dims_transposed(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{inner dims differ: [?, 64] x [64, 32]}}
  %0 = attn.matmul %a, %b {transpose_b} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Tests that matmul rejects batch dims that do not broadcast.
func.func @matmul_batch(%a: tensor<2x4x8xf32>, %b: tensor<3x8x4xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{batch dims do not broadcast}}
  %0 = attn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x4xf32>) -> tensor<2x4x4xf32>
  return %0 : tensor<2x4x4xf32>
}

// -----

// Tests that matmul checks its result shape, including the dropped dim of a
// 1-D right operand.
func.func @matmul_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{result must have shape [2], got [2, 1]}}
  %0 = attn.matmul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Tests that matmul rejects a result dim that differs from the operands'.
func.func @matmul_result_dim(%a: tensor<4x2x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x2x6xf32> {
  // expected-error @+1 {{result must have shape [4, 2, 5], got [4, 2, 6]}}
  %0 = attn.matmul %a, %b : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x6xf32>
  return %0 : tensor<4x2x6xf32>
}

//===----------------------------------------------------------------------===//
// attn.linear
//===----------------------------------------------------------------------===//

// -----

// Tests that linear needs a rank-2 weight.
func.func @linear_weight_rank(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{weight must be [N, K]}}
  %0 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Tests that linear needs the input's last dim to be K of the weight.
func.func @linear_k(%x: tensor<4x8xf32>, %w: tensor<16x7xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{the last dim of the input must equal K of the weight}}
  %0 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<16x7xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that linear rejects a weight of another element type.
func.func @linear_element_types(%x: tensor<4x8xf32>, %w: tensor<16x8xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{input and weight must share one float element type}}
  %0 = attn.linear %x, %w : (tensor<4x8xf32>, tensor<16x8xbf16>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that linear rejects a bias whose size is not N.
func.func @linear_bias(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{bias must be [N] of the input's element type}}
  %0 = attn.linear %x, %w, %b : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}

// -----

// Tests that linear checks its result shape [..., N].
func.func @linear_result_shape(%x: tensor<?x4x8xf32>, %w: tensor<16x8xf32>) -> tensor<?x4x8xf32> {
  // expected-error @+1 {{result must have shape [?, 4, 16], got [?, 4, 8]}}
  %0 = attn.linear %x, %w : (tensor<?x4x8xf32>, tensor<16x8xf32>) -> tensor<?x4x8xf32>
  return %0 : tensor<?x4x8xf32>
}

//===----------------------------------------------------------------------===//
// attn.add, attn.sub, attn.mul, attn.div
//===----------------------------------------------------------------------===//

// -----

// Tests that a binary op rejects operands of two element types (no implicit
// promotion).
func.func @add_element_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'attn.add' op operands must share one element type}}
  %0 = attn.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that a binary op rejects shapes that do not broadcast.
func.func @sub_broadcast(%a: tensor<2x3xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'attn.sub' op cannot broadcast [2, 3] with [4, 3]}}
  %0 = attn.sub %a, %b : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that a binary op's result keeps the operands' element type.
func.func @mul_result_element_type(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{'attn.mul' op result must have the operands' element type}}
  %0 = attn.mul %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Tests that a binary op's result has the broadcast shape.
func.func @div_result_shape(%a: tensor<2x1xf32>, %b: tensor<3xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'attn.div' op result must have shape [2, 3], got [2, 1]}}
  %0 = attn.div %a, %b : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

//===----------------------------------------------------------------------===//
// attn.softmax, attn.masked_fill, attn.causal_mask, attn.window_mask
//===----------------------------------------------------------------------===//

// -----

// Tests that softmax rejects an axis past the last dim.
func.func @softmax_axis(%x: tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32> {
  // expected-error @+1 {{'attn.softmax' op axis 4 is out of range for rank 4}}
  %0 = attn.softmax %x {axis = 4} : tensor<1x12x?x?xf32>
  return %0 : tensor<1x12x?x?xf32>
}

// -----

// Tests that softmax rejects a negative axis (the importer normalizes them).
func.func @softmax_negative_axis(%x: tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 4}}
  %0 = attn.softmax %x {axis = -1} : tensor<1x12x?x?xf32>
  return %0 : tensor<1x12x?x?xf32>
}

// -----

// Tests that masked_fill needs an i1 mask.
func.func @masked_fill_mask_type(%x: tensor<2x3xf32>, %m: tensor<2x3xi8>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'attn.masked_fill' op mask must be a tensor of i1}}
  %0 = attn.masked_fill %x, %m, 0.0 : (tensor<2x3xf32>, tensor<2x3xi8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that masked_fill rejects a mask that does not broadcast.
func.func @masked_fill_broadcast(%x: tensor<2x3xf32>, %m: tensor<2x4xi1>) -> tensor<2x3xf32> {
  // expected-error @+1 {{mask [2, 4] does not broadcast to the input [2, 3]}}
  %0 = attn.masked_fill %x, %m, 0.0 : (tensor<2x3xf32>, tensor<2x4xi1>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that masked_fill rejects a mask that would grow the input's rank.
func.func @masked_fill_mask_rank(%x: tensor<2x3xf32>, %m: tensor<1x2x3xi1>) -> tensor<2x3xf32> {
  // expected-error @+1 {{mask [1, 2, 3] does not broadcast to the input [2, 3]}}
  %0 = attn.masked_fill %x, %m, 0.0 : (tensor<2x3xf32>, tensor<1x2x3xi1>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that masked_fill's result has the input's type.
func.func @masked_fill_result(%x: tensor<2x3xf32>, %m: tensor<2x3xi1>) -> tensor<2x3xf16> {
  // expected-error @+1 {{result must have the input's type}}
  %0 = attn.masked_fill %x, %m, 0.0 : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

// Tests that causal_mask needs at least the two dims [S, T].
func.func @causal_mask_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'attn.causal_mask' op input must be [..., S, T]}}
  %0 = attn.causal_mask %x : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Tests that window_mask needs at least the two dims [S, T].
func.func @window_mask_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'attn.window_mask' op input must be [..., S, T]}}
  %0 = attn.window_mask %x {left = 1, right = 0} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Tests that window_mask's bounds are non-negative (ODS).
func.func @window_mask_negative(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'attn.window_mask' op attribute 'left' failed to satisfy constraint}}
  %0 = attn.window_mask %x {left = -1, right = 0} : tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Tests that window_mask takes float scores only (ODS).
func.func @window_mask_integer(%x: tensor<4x4xi32>) -> tensor<4x4xi32> {
  // expected-error @+1 {{'attn.window_mask' op operand #0 must be ranked tensor of floating-point values}}
  %0 = attn.window_mask %x {left = 1, right = 0} : tensor<4x4xi32>
  return %0 : tensor<4x4xi32>
}

//===----------------------------------------------------------------------===//
// attn.reshape, attn.transpose, attn.unsqueeze, attn.repeat, attn.slice,
// attn.reduce_sum, attn.concat
//===----------------------------------------------------------------------===//

// -----

// Tests that reshape keeps the element type.
func.func @reshape_element_type(%x: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'attn.reshape' op result must have the input's element type}}
  %0 = attn.reshape %x : tensor<2x3xf32> -> tensor<6xf16>
  return %0 : tensor<6xf16>
}

// -----

// Tests that reshape needs one index operand per dynamic result dim.
func.func @reshape_dynamic_sizes(%x: tensor<?x?x768xf32>, %b: index) -> tensor<?x?x12x64xf32> {
  // expected-error @+1 {{needs one size operand per dynamic result dim (2), got 1}}
  %0 = attn.reshape %x [%b] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  return %0 : tensor<?x?x12x64xf32>
}

// -----

// Tests that a static reshape keeps the element count.
func.func @reshape_element_count(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{element counts differ: [2, 3] vs [7]}}
  %0 = attn.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// Tests that transpose needs one permutation entry per dim.
func.func @transpose_entries(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  // expected-error @+1 {{'attn.transpose' op permutation must have one entry per dim}}
  %0 = attn.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// Tests that transpose rejects a repeated axis.
func.func @transpose_repeated_axis(%x: tensor<2x3x4xf32>) -> tensor<3x3x4xf32> {
  // expected-error @+1 {{permutation is not a permutation of the dims}}
  %0 = attn.transpose %x {permutation = array<i64: 1, 1, 2>} : tensor<2x3x4xf32> -> tensor<3x3x4xf32>
  return %0 : tensor<3x3x4xf32>
}

// -----

// Tests that transpose rejects an axis out of range.
func.func @transpose_axis_range(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{permutation is not a permutation of the dims}}
  %0 = attn.transpose %x {permutation = array<i64: 2, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Tests that transpose checks the permuted result shape.
func.func @transpose_result_shape(%x: tensor<2x3x4xf32>) -> tensor<2x4x3xf32> {
  // expected-error @+1 {{result must have shape [3, 2, 4], got [2, 4, 3]}}
  %0 = attn.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}

// -----

// Tests that unsqueeze rejects an axis past the result's last dim.
func.func @unsqueeze_axis(%x: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  // expected-error @+1 {{'attn.unsqueeze' op axis 3 is out of range for a result of rank 3}}
  %0 = attn.unsqueeze %x {axis = 3} : tensor<2x3xf32> -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

// Tests that unsqueeze puts the new dim at the axis.
func.func @unsqueeze_result_shape(%x: tensor<2x3xf32>) -> tensor<2x3x1xf32> {
  // expected-error @+1 {{result must have shape [2, 1, 3], got [2, 3, 1]}}
  %0 = attn.unsqueeze %x {axis = 1} : tensor<2x3xf32> -> tensor<2x3x1xf32>
  return %0 : tensor<2x3x1xf32>
}

// -----

// Tests that repeat rejects an axis out of range.
func.func @repeat_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'attn.repeat' op axis 2 is out of range for rank 2}}
  %0 = attn.repeat %x {axis = 2, times = 1} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that repeat needs a positive count.
func.func @repeat_times(%x: tensor<2x3xf32>) -> tensor<0x3xf32> {
  // expected-error @+1 {{times must be >= 1}}
  %0 = attn.repeat %x {axis = 0, times = 0} : tensor<2x3xf32> -> tensor<0x3xf32>
  return %0 : tensor<0x3xf32>
}

// -----

// Tests that repeat multiplies the repeated dim.
func.func @repeat_result_shape(%k: tensor<?x8x?x128xbf16>) -> tensor<?x16x?x128xbf16> {
  // expected-error @+1 {{result must have shape [?, 32, ?, 128], got [?, 16, ?, 128]}}
  %0 = attn.repeat %k {axis = 1, times = 4} : tensor<?x8x?x128xbf16> -> tensor<?x16x?x128xbf16>
  return %0 : tensor<?x16x?x128xbf16>
}

// -----

// Tests that slice rejects an axis out of range (a negative one too: the
// importer normalizes them).
func.func @slice_axis(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'attn.slice' op axis 2 is out of range for rank 2}}
  %0 = attn.slice %x {axis = 2, start = 0, end = 1} : tensor<2x3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @slice_negative_axis(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'attn.slice' op axis -1 is out of range for rank 2}}
  %0 = attn.slice %x {axis = -1, start = 0, end = 1} : tensor<2x3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Tests that slice rejects a dynamic axis: its result size would be unknown
// to the type.
func.func @slice_dynamic_axis(%x: tensor<2x?xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'attn.slice' op slices an axis of dynamic size}}
  %0 = attn.slice %x {axis = 1, start = 0, end = 1} : tensor<2x?xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// Tests that slice needs 0 <= start < end <= size: an end past the axis, an
// empty range and a negative start.
func.func @slice_end_past_axis(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'attn.slice' op needs 0 <= start < end <= 4}}
  %0 = attn.slice %x {axis = 1, start = 2, end = 5} : tensor<2x4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_empty(%x: tensor<2x4xf32>) -> tensor<2x0xf32> {
  // expected-error @+1 {{needs 0 <= start < end <= 4}}
  %0 = attn.slice %x {axis = 1, start = 2, end = 2} : tensor<2x4xf32> -> tensor<2x0xf32>
  return %0 : tensor<2x0xf32>
}

// -----

func.func @slice_negative_start(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{needs 0 <= start < end <= 4}}
  %0 = attn.slice %x {axis = 1, start = -1, end = 2} : tensor<2x4xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that slice's result has end - start along the axis and the input's
// other dims.
func.func @slice_result_shape(%x: tensor<?x8x?x128xf32>) -> tensor<?x8x?x128xf32> {
  // expected-error @+1 {{result must have shape [?, 8, ?, 64], got [?, 8, ?, 128]}}
  %0 = attn.slice %x {axis = 3, start = 64, end = 128} : tensor<?x8x?x128xf32> -> tensor<?x8x?x128xf32>
  return %0 : tensor<?x8x?x128xf32>
}

// -----

// Tests that slice keeps its input's element type.
func.func @slice_result_element(%x: tensor<2x4xf32>) -> tensor<2x2xf16> {
  // expected-error @+1 {{result element type must be 'f32'}}
  %0 = attn.slice %x {axis = 1, start = 0, end = 2} : tensor<2x4xf32> -> tensor<2x2xf16>
  return %0 : tensor<2x2xf16>
}

// -----

// Tests that reduce_sum rejects an axis out of range.
func.func @reduce_sum_axis(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'attn.reduce_sum' op axis 2 is out of range for rank 2}}
  %0 = attn.reduce_sum %x {axis = 2} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that reduce_sum with keepdims keeps the reduced dim as 1.
func.func @reduce_sum_keepdims(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result must have shape [4, 1], got [4]}}
  %0 = attn.reduce_sum %x {axis = 1, keepdims} : tensor<4x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that concat needs at least one input.
func.func @concat_empty() -> tensor<0xf32> {
  // expected-error @+1 {{'attn.concat' op needs at least one input}}
  %0 = attn.concat {axis = 0} : () -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// -----

// Tests that concat rejects an axis out of range.
func.func @concat_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = attn.concat %a {axis = 2} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Tests that concat rejects inputs of another element type.
func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) -> tensor<2x6xf32> {
  // expected-error @+1 {{inputs must share element type and rank}}
  %0 = attn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Tests that concat rejects inputs of another rank.
func.func @concat_ranks(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{inputs must share element type and rank}}
  %0 = attn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// Tests that only the concat axis may differ between inputs.
func.func @concat_other_dim(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{inputs differ in dim 0}}
  %0 = attn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Tests that concat sums the sizes along the axis.
func.func @concat_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{result must have shape [2, 8], got [2, 7]}}
  %0 = attn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

//===----------------------------------------------------------------------===//
// attn.attention: q, k and v
//===----------------------------------------------------------------------===//

// -----

// Tests that attention needs rank-4 q, k and v.
func.func @attention_rank(%q: tensor<12x?x64xf32>, %k: tensor<1x12x?x64xf32>, %v: tensor<1x12x?x64xf32>) -> tensor<1x12x?x64xf32> {
  // expected-error @+1 {{operand #0 must be 4D tensor of floating-point values, but got 'tensor<12x?x64xf32>'}}
  %0 = attn.attention %q, %k, %v : (tensor<12x?x64xf32>, tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>) -> tensor<1x12x?x64xf32>
  return %0 : tensor<1x12x?x64xf32>
}

// -----

// Tests that attention needs one float type for q, k and v.
func.func @attention_element_types(%q: tensor<1x12x?x64xf32>, %k: tensor<1x12x?x64xf32>, %v: tensor<1x12x?x64xbf16>) -> tensor<1x12x?x64xbf16> {
  // expected-error @+1 {{failed to verify that all of {query, key, value, output} have same element type}}
  %0 = attn.attention %q, %k, %v : (tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>, tensor<1x12x?x64xbf16>) -> tensor<1x12x?x64xbf16>
  return %0 : tensor<1x12x?x64xbf16>
}

// -----

// Tests that attention rejects integer q, k and v.
func.func @attention_integer(%q: tensor<1x12x8x64xi8>) -> tensor<1x12x8x64xi8> {
  // expected-error @+1 {{operand #0 must be 4D tensor of floating-point values, but got 'tensor<1x12x8x64xi8>'}}
  %0 = attn.attention %q, %q, %q : (tensor<1x12x8x64xi8>, tensor<1x12x8x64xi8>, tensor<1x12x8x64xi8>) -> tensor<1x12x8x64xi8>
  return %0 : tensor<1x12x8x64xi8>
}

// -----

// Tests that attention rejects batch sizes that differ.
func.func @attention_batch(%q: tensor<2x12x?x64xf32>, %k: tensor<3x12x?x64xf32>, %v: tensor<3x12x?x64xf32>) -> tensor<2x12x?x64xf32> {
  // expected-error @+1 {{query, key and value batch sizes differ}}
  %0 = attn.attention %q, %k, %v : (tensor<2x12x?x64xf32>, tensor<3x12x?x64xf32>, tensor<3x12x?x64xf32>) -> tensor<2x12x?x64xf32>
  return %0 : tensor<2x12x?x64xf32>
}

// -----

// Tests that key and value need the same key length.
func.func @attention_kv_length(%q: tensor<1x12x?x64xf32>, %k: tensor<1x12x16x64xf32>, %v: tensor<1x12x32x64xf32>) -> tensor<1x12x?x64xf32> {
  // expected-error @+1 {{key and value lengths differ}}
  %0 = attn.attention %q, %k, %v : (tensor<1x12x?x64xf32>, tensor<1x12x16x64xf32>, tensor<1x12x32x64xf32>) -> tensor<1x12x?x64xf32>
  return %0 : tensor<1x12x?x64xf32>
}

// -----

// Tests that in the bshd layout the heads of key and value are dim 2.
func.func @attention_kv_heads_bshd(%q: tensor<1x?x12x64xf32>, %k: tensor<1x?x4x64xf32>, %v: tensor<1x?x6x64xf32>) -> tensor<1x?x12x64xf32> {
  // expected-error @+1 {{key and value head counts differ}}
  %0 = attn.attention %q, %k, %v {layout = #attn.layout<bshd>} : (tensor<1x?x12x64xf32>, tensor<1x?x4x64xf32>, tensor<1x?x6x64xf32>) -> tensor<1x?x12x64xf32>
  return %0 : tensor<1x?x12x64xf32>
}

// -----

// Tests that query and key need one head dim.
func.func @attention_head_dims(%q: tensor<1x12x?x64xf32>, %k: tensor<1x12x?x32xf32>, %v: tensor<1x12x?x32xf32>) -> tensor<1x12x?x32xf32> {
  // expected-error @+1 {{query and key head dims differ}}
  %0 = attn.attention %q, %k, %v : (tensor<1x12x?x64xf32>, tensor<1x12x?x32xf32>, tensor<1x12x?x32xf32>) -> tensor<1x12x?x32xf32>
  return %0 : tensor<1x12x?x32xf32>
}

// -----

// Tests that grouped-query attention needs Hq to be a multiple of Hkv.
func.func @attention_gqa(%q: tensor<1x12x?x64xf32>, %k: tensor<1x5x?x64xf32>, %v: tensor<1x5x?x64xf32>) -> tensor<1x12x?x64xf32> {
  // expected-error @+1 {{query heads (12) must be a multiple of kv heads (5)}}
  %0 = attn.attention %q, %k, %v : (tensor<1x12x?x64xf32>, tensor<1x5x?x64xf32>, tensor<1x5x?x64xf32>) -> tensor<1x12x?x64xf32>
  return %0 : tensor<1x12x?x64xf32>
}

//===----------------------------------------------------------------------===//
// attn.attention: score operands
//===----------------------------------------------------------------------===//

// -----

// Tests that a general score needs its weight operand.
func.func @attention_general_no_weight(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{a general score needs exactly its weight operand}}
  %0 = attn.attention %q, %q, %q {score = #attn.score<general>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a general weight needs the general score.
func.func @attention_weight_without_general(%q: tensor<1x4x8x64xf32>, %w: tensor<64x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{a general score needs exactly its weight operand}}
  %0 = attn.attention %q, %q, %q general(%w) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<64x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that an additive score needs Wq, Wk and va.
func.func @attention_additive_no_weights(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{an additive score needs exactly its Wq, Wk and va}}
  %0 = attn.attention %q, %q, %q {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that additive weights need the additive score.
func.func @attention_additive_weights_on_dot(%q: tensor<1x4x8x64xf32>, %wq: tensor<16x64xf32>, %va: tensor<16xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{an additive score needs exactly its Wq, Wk and va}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wq, %va) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a general weight must be float.
func.func @attention_general_weight_type(%q: tensor<1x4x8x64xf32>, %w: tensor<64x64xi32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{operand #3 must be ranked tensor of floating-point values, but got 'tensor<64x64xi32>'}}
  %0 = attn.attention %q, %q, %q general(%w) {score = #attn.score<general>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<64x64xi32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a general weight must be [Dk, Dk].
func.func @attention_general_weight_shape(%q: tensor<1x4x8x64xf32>, %w: tensor<64x32xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{general weight must be [64, 64], got [64, 32]}}
  %0 = attn.attention %q, %q, %q general(%w) {score = #attn.score<general>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<64x32xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that the additive query weight must be rank 2.
func.func @attention_additive_wq_rank(%q: tensor<1x4x8x64xf32>, %wq: tensor<64xf32>, %wk: tensor<16x64xf32>, %va: tensor<16xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{query weight must be [A, Dk]}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that the additive query weight must be [A, Dk].
func.func @attention_additive_wq_shape(%q: tensor<1x4x8x64xf32>, %wq: tensor<16x32xf32>, %wk: tensor<16x64xf32>, %va: tensor<16xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{query weight must be [16, 64], got [16, 32]}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<16x32xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that the additive key weight must have the query weight's A.
func.func @attention_additive_wk_shape(%q: tensor<1x4x8x64xf32>, %wq: tensor<16x64xf32>, %wk: tensor<8x64xf32>, %va: tensor<16xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{key weight must be [16, 64], got [8, 64]}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<16x64xf32>, tensor<8x64xf32>, tensor<16xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a 1-D score vector must be [A].
func.func @attention_additive_va_shape(%q: tensor<1x4x8x64xf32>, %wq: tensor<16x64xf32>, %va: tensor<8xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{score vector must be [16], got [8]}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wq, %va) {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<8xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a 2-D score vector must be [A, 1], not [1, A].
func.func @attention_additive_va_row(%q: tensor<1x4x8x64xf32>, %wq: tensor<16x64xf32>, %va: tensor<1x16xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{score vector must be [16, 1], got [1, 16]}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wq, %va) {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<1x16xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that additive weights must be float.
func.func @attention_additive_type(%q: tensor<1x4x8x64xf32>, %wq: tensor<16x64xf32>, %va: tensor<16xi32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{operand #5 must be ranked tensor of floating-point values, but got 'tensor<16xi32>'}}
  %0 = attn.attention %q, %q, %q additive(%wq, %wq, %va) {score = #attn.score<additive>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16xi32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

//===----------------------------------------------------------------------===//
// attn.attention: biases and masks
//===----------------------------------------------------------------------===//

// -----

// Tests that a bias must be float.
func.func @attention_bias_type(%q: tensor<1x4x8x64xf32>, %b: tensor<1x4x8x8xi32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{operand #3 must be variadic of ranked tensor of floating-point values, but got 'tensor<1x4x8x8xi32>'}}
  %0 = attn.attention %q, %q, %q bias(%b) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x8xi32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a bias must broadcast to the scores [B, Hq, S, T]; the second
// bias is checked too.
func.func @attention_bias_shape(%q: tensor<1x4x8x64xf32>, %k: tensor<1x4x16x64xf32>, %b0: tensor<16xf32>, %b1: tensor<8x1x1xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{bias [8, 1, 1] does not broadcast to the scores [1, 4, 8, 16]}}
  %0 = attn.attention %q, %k, %k bias(%b0, %b1) : (tensor<1x4x8x64xf32>, tensor<1x4x16x64xf32>, tensor<1x4x16x64xf32>, tensor<16xf32>, tensor<8x1x1xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a bias may not have more dims than the scores.
func.func @attention_bias_rank(%q: tensor<1x4x8x64xf32>, %b: tensor<1x1x4x8x8xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{bias [1, 1, 4, 8, 8] does not broadcast to the scores [1, 4, 8, 8]}}
  %0 = attn.attention %q, %q, %q bias(%b) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x1x4x8x8xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that alibi slopes need the alibi attribute.
func.func @attention_slopes_without_alibi(%q: tensor<1x4x8x64xf32>, %s: tensor<4xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{alibi_slopes needs the alibi attribute}}
  %0 = attn.attention %q, %q, %q alibi_slopes(%s) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<4xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that alibi slopes must be f32.
func.func @attention_slopes_type(%q: tensor<1x4x8x64xf16>, %s: tensor<4xf16>) -> tensor<1x4x8x64xf16> {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit float values, but got 'tensor<4xf16>'}}
  %0 = attn.attention %q, %q, %q alibi_slopes(%s) {alibi} : (tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16>, tensor<1x4x8x64xf16>, tensor<4xf16>) -> tensor<1x4x8x64xf16>
  return %0 : tensor<1x4x8x64xf16>
}

// -----

// Tests that alibi slopes must have one entry per query head (not kv head).
func.func @attention_slopes_shape(%q: tensor<1x8x?x64xf16>, %k: tensor<1x2x?x64xf16>, %s: tensor<2xf32>) -> tensor<1x8x?x64xf16> {
  // expected-error @+1 {{alibi slopes must be [8], got [2]}}
  %0 = attn.attention %q, %k, %k alibi_slopes(%s) {alibi} : (tensor<1x8x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<2xf32>) -> tensor<1x8x?x64xf16>
  return %0 : tensor<1x8x?x64xf16>
}

// -----

// Tests that key lengths must be i32.
func.func @attention_key_lengths_type(%q: tensor<2x4x8x64xf32>, %len: tensor<2xi64>) -> tensor<2x4x8x64xf32> {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit signless integer values, but got 'tensor<2xi64>'}}
  %0 = attn.attention %q, %q, %q key_lengths(%len) : (tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2xi64>) -> tensor<2x4x8x64xf32>
  return %0 : tensor<2x4x8x64xf32>
}

// -----

// Tests that key lengths must have one entry per batch.
func.func @attention_key_lengths_shape(%q: tensor<2x4x8x64xf32>, %len: tensor<2x1xi32>) -> tensor<2x4x8x64xf32> {
  // expected-error @+1 {{operand #3 must be 1D tensor of 32-bit signless integer values, but got 'tensor<2x1xi32>'}}
  %0 = attn.attention %q, %q, %q key_lengths(%len) : (tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x4x8x64xf32>, tensor<2x1xi32>) -> tensor<2x4x8x64xf32>
  return %0 : tensor<2x4x8x64xf32>
}

// -----

// Tests that masks must be i1.
func.func @attention_mask_type(%q: tensor<1x4x8x64xf32>, %m: tensor<8x8xi8>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{operand #3 must be variadic of ranked tensor of 1-bit signless integer values, but got 'tensor<8x8xi8>'}}
  %0 = attn.attention %q, %q, %q masks(%m) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<8x8xi8>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that a mask must broadcast to the scores [B, Hq, S, T].
func.func @attention_mask_shape(%q: tensor<2x4x?x64xf32>, %m: tensor<3x1x1x?xi1>) -> tensor<2x4x?x64xf32> {
  // expected-error @+1 {{mask [3, 1, 1, ?] does not broadcast to the scores [2, 4, ?, ?]}}
  %0 = attn.attention %q, %q, %q masks(%m) : (tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<3x1x1x?xi1>) -> tensor<2x4x?x64xf32>
  return %0 : tensor<2x4x?x64xf32>
}

// -----

// Tests that mask_drops needs one entry per mask.
func.func @attention_mask_drops(%q: tensor<1x4x8x64xf32>, %m: tensor<8x8xi1>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{mask_drops needs one entry per mask}}
  %0 = attn.attention %q, %q, %q masks(%m) {mask_drops = array<i1: true, false>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<8x8xi1>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that mask_drops without masks must be empty.
func.func @attention_mask_drops_no_masks(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{mask_drops needs one entry per mask}}
  %0 = attn.attention %q, %q, %q {mask_drops = array<i1: true>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

//===----------------------------------------------------------------------===//
// attn.attention: attributes and results
//===----------------------------------------------------------------------===//

// -----

// Tests that window needs two entries.
func.func @attention_window_size(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{attribute 'window' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is non-negative}}
  %0 = attn.attention %q, %q, %q {window = array<i64: 128>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that window sizes must not be negative.
func.func @attention_window_negative(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{attribute 'window' failed to satisfy constraint: i64 dense array attribute with exactly 2 elements whose value is non-negative}}
  %0 = attn.attention %q, %q, %q {window = array<i64: 128, -1>} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that softcap must be positive.
func.func @attention_softcap(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{attribute 'softcap' failed to satisfy constraint: 64-bit float attribute a finite number > 0}}
  %0 = attn.attention %q, %q, %q {softcap = 0.0 : f64} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that the output has the value's element type.
func.func @attention_output_type(%q: tensor<1x4x8x64xbf16>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{failed to verify that all of {query, key, value, output} have same element type}}
  %0 = attn.attention %q, %q, %q : (tensor<1x4x8x64xbf16>, tensor<1x4x8x64xbf16>, tensor<1x4x8x64xbf16>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that the output is [B, Hq, S, Dv]: Dv comes from the value.
func.func @attention_output_shape(%q: tensor<1x8x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x32xf32>) -> tensor<1x8x?x64xf32> {
  // expected-error @+1 {{result must have shape [1, 8, ?, 32], got [1, 8, ?, 64]}}
  %0 = attn.attention %q, %k, %v : (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x32xf32>) -> tensor<1x8x?x64xf32>
  return %0 : tensor<1x8x?x64xf32>
}

// -----

// Tests that in the bshd layout the output is [B, S, Hq, Dv].
func.func @attention_output_shape_bshd(%q: tensor<1x16x8x64xf32>, %k: tensor<1x?x2x64xf32>) -> tensor<1x8x16x64xf32> {
  // expected-error @+1 {{result must have shape [1, 16, 8, 64], got [1, 8, 16, 64]}}
  %0 = attn.attention %q, %k, %k {layout = #attn.layout<bshd>} : (tensor<1x16x8x64xf32>, tensor<1x?x2x64xf32>, tensor<1x?x2x64xf32>) -> tensor<1x8x16x64xf32>
  return %0 : tensor<1x8x16x64xf32>
}

// -----

// Tests that lse must be f32 whatever the input type.
func.func @attention_lse_type(%q: tensor<1x4x8x64xbf16>) -> (tensor<1x4x8x64xbf16>, tensor<1x4x8xbf16>) {
  // expected-error @+1 {{result #1 must be 3D tensor of 32-bit float values, but got 'tensor<1x4x8xbf16>'}}
  %0:2 = attn.attention %q, %q, %q : (tensor<1x4x8x64xbf16>, tensor<1x4x8x64xbf16>, tensor<1x4x8x64xbf16>) -> (tensor<1x4x8x64xbf16>, tensor<1x4x8xbf16>)
  return %0#0, %0#1 : tensor<1x4x8x64xbf16>, tensor<1x4x8xbf16>
}

// -----

// Tests that lse is [B, Hq, S] also in the bshd layout.
func.func @attention_lse_shape_bshd(%q: tensor<1x16x4x64xf32>) -> (tensor<1x16x4x64xf32>, tensor<1x16x4xf32>) {
  // expected-error @+1 {{lse must be [1, 4, 16], got [1, 16, 4]}}
  %0:2 = attn.attention %q, %q, %q {layout = #attn.layout<bshd>} : (tensor<1x16x4x64xf32>, tensor<1x16x4x64xf32>, tensor<1x16x4x64xf32>) -> (tensor<1x16x4x64xf32>, tensor<1x16x4xf32>)
  return %0#0, %0#1 : tensor<1x16x4x64xf32>, tensor<1x16x4xf32>
}

// -----

// Tests that a static kv head count of 0 is rejected, not divided by.
func.func @attention_zero_kv_heads(%q: tensor<1x12x8x64xf32>, %k: tensor<1x0x8x64xf32>) -> tensor<1x12x8x64xf32> {
  // expected-error @+1 {{query heads (12) must be a multiple of kv heads (0)}}
  %0 = attn.attention %q, %k, %k : (tensor<1x12x8x64xf32>, tensor<1x0x8x64xf32>, tensor<1x0x8x64xf32>) -> tensor<1x12x8x64xf32>
  return %0 : tensor<1x12x8x64xf32>
}

// -----

// Tests that a product's result keeps its operands' element type.
func.func @matmul_result_element(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xi8> {
  // expected-error @+1 {{result element type must be 'f32'}}
  %0 = attn.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xi8>
  return %0 : tensor<2x4xi8>
}

// -----

// Tests that a transpose keeps its input's element type.
func.func @transpose_result_element(%a: tensor<2x3xf32>) -> tensor<3x2xi32> {
  // expected-error @+1 {{result element type must be 'f32'}}
  %0 = attn.transpose %a {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xi32>
  return %0 : tensor<3x2xi32>
}

// -----

// Tests that scale needs floats and a finite value.
func.func @scale_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{input must be a float tensor}}
  %0 = attn.scale %a, 2.0 : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @scale_infinite(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{value must be a finite number}}
  %0 = attn.scale %a, 0x7FF0000000000000 : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that tanh, exp, sqrt, cos, sin and softmax need floats and neg needs
// numbers.
func.func @tanh_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{input must be a float tensor}}
  %0 = attn.tanh %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sqrt_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{input must be a float tensor}}
  %0 = attn.sqrt %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @cos_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'attn.cos' op input must be a float tensor}}
  %0 = attn.cos %a : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @sin_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'attn.sin' op input must be a float tensor}}
  %0 = attn.sin %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @softmax_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{input must be a float tensor}}
  %0 = attn.softmax %a {axis = 0} : tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @neg_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{input must hold numbers, not i1}}
  %0 = attn.neg %a : tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Tests that add needs numbers and div needs floats.
func.func @add_bool(%a: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{operands must hold numbers, not i1}}
  %0 = attn.add %a, %a : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @div_integer(%a: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{operands must be a float tensor}}
  %0 = attn.div %a, %a : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Tests that masked_fill rejects a NaN fill value.
func.func @masked_fill_nan(%a: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf32> {
  // expected-error @+1 {{value must not be NaN}}
  %0 = attn.masked_fill %a, %m, 0x7FF8000000000000 : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Tests that an infinite attention scale is rejected.
func.func @attention_scale_infinite(%q: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 64-bit float attribute a finite number}}
  %0 = attn.attention %q, %q, %q {scale = 0x7FF0000000000000 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %0 : tensor<1x2x3x4xf32>
}

// -----

// Tests that an infinite softcap gives one error (the ODS constraint), not a
// second one from the verifier.
func.func @attention_softcap_inf(%q: tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32> {
  // expected-error @+1 {{attribute 'softcap' failed to satisfy constraint: 64-bit float attribute a finite number > 0}}
  %0 = attn.attention %q, %q, %q {softcap = 0x7FF0000000000000 : f64} : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

//===----------------------------------------------------------------------===//
// Tile ops
//===----------------------------------------------------------------------===//

// -----

// Tests that tile_scores rejects tiles of two depths.
func.func @tile_scores_depths_differ(%q: tensor<16x8xf32>, %k: tensor<32x4xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{query and key tiles differ in depth: [16, 8] vs [32, 4]}}
  %0 = attn.tile_scores %q, %k : (tensor<16x8xf32>, tensor<32x4xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

// Tests that tile_scores' result is [M, N] of its tiles.
func.func @tile_scores_result_shape(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{result must have shape [16, 32], got [16, 16]}}
  %0 = attn.tile_scores %q, %k : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x16xf32>
  return %0 : tensor<16x16xf32>
}

// -----

// Tests that the scores accumulate in f32 (an ODS constraint).
func.func @tile_scores_f16_result(%q: tensor<16x8xf16>, %k: tensor<32x8xf16>) -> tensor<16x32xf16> {
  // expected-error @+1 {{result #0 must be 2D tensor of 32-bit float values}}
  %0 = attn.tile_scores %q, %k : (tensor<16x8xf16>, tensor<32x8xf16>) -> tensor<16x32xf16>
  return %0 : tensor<16x32xf16>
}

// -----

// Tests that a general score needs its weight.
func.func @tile_scores_general_without_weight(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{a general score needs exactly its weight operand}}
  %0 = attn.tile_scores %q, %k {score = #attn.score<general>} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

// Tests that the general weight is [Dk, Dk].
func.func @tile_scores_general_weight_shape(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>, %w: tensor<8x4xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{general weight must be [Dk, Dk]}}
  %0 = attn.tile_scores %q, %k general(%w) {score = #attn.score<general>} : (tensor<16x8xf32>, tensor<32x8xf32>, tensor<8x4xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

// Tests that the additive weights agree on A.
func.func @tile_scores_additive_units(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>, %wq: tensor<4x8xf32>, %wk: tensor<5x8xf32>, %va: tensor<4xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{additive weights must be Wq, Wk [A, Dk] and va [A] or [A, 1]}}
  %0 = attn.tile_scores %q, %k additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<16x8xf32>, tensor<32x8xf32>, tensor<4x8xf32>, tensor<5x8xf32>, tensor<4xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

// Tests that tile_scores rejects a zero softcap, as attn.attention does.
func.func @tile_scores_softcap_zero(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>) -> tensor<16x32xf32> {
  // expected-error @+1 {{attribute 'softcap' failed to satisfy constraint: 64-bit float attribute a finite number > 0}}
  %0 = attn.tile_scores %q, %k {softcap = 0.0 : f64} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
  return %0 : tensor<16x32xf32>
}

// -----

// Tests that tile_mask needs a position mask to apply.
func.func @tile_mask_without_mask(%s: tensor<?x?xf32>, %p: index) -> tensor<?x?xf32> {
  // expected-error @+1 {{needs a position mask: causal or window}}
  %0 = attn.tile_mask %s [%p, %p] : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that packed rows need both the first row and the query count (the
// generic form can give one alone).
func.func @tile_mask_half_packed(%s: tensor<?x?xf32>, %p: index) -> tensor<?x?xf32> {
  // expected-error @+1 {{packed rows need both the first row and the query count}}
  %0 = "attn.tile_mask"(%s, %p, %p, %p) {causal, operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<?x?xf32>, index, index, index) -> tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that tile_transform has something to apply.
func.func @tile_transform_nothing(%s: tensor<?x?xf32>, %i: index) -> tensor<?x?xf32> {
  // expected-error @+1 {{has nothing to apply: no bias, ALiBi slopes or mask}}
  %0 = attn.tile_transform %s [%i, %i, %i, %i] in [%i, %i] : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that mask_drops has one entry per mask.
func.func @tile_transform_drops(%s: tensor<?x?xf32>, %m: tensor<?x?xi1>, %i: index) -> tensor<?x?xf32> {
  // expected-error @+1 {{mask_drops has 2 entries for 1 masks}}
  %0 = attn.tile_transform %s [%i, %i, %i, %i] in [%i, %i] masks(%m : tensor<?x?xi1>) {mask_drops = array<i1: true, false>} : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that the online-softmax state has one entry per row of the scores.
func.func @tile_softmax_update_rows(%s: tensor<4x8xf32>, %m: tensor<3xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{the running max and sum must have one entry per row of the scores [4, 8]}}
  %p, %m1, %l1, %a = attn.tile_softmax_update %s, %m, %m : tensor<4x8xf32>, tensor<3xf32>
  return %p : tensor<4x8xf32>
}

// -----

// Tests that tile_accumulate's rescale has one entry per accumulator row.
func.func @tile_accumulate_rescale_rows(%p: tensor<4x8xf32>, %v: tensor<8x2xf32>, %acc: tensor<4x2xf32>, %a: tensor<5xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{rescale must have one entry per row of the accumulator [4, 2]}}
  %o = attn.tile_accumulate %p, %v, %acc rescale(%a) : (tensor<4x8xf32>, tensor<8x2xf32>, tensor<4x2xf32>, tensor<5xf32>) -> tensor<4x2xf32>
  return %o : tensor<4x2xf32>
}

// -----

// Tests that tile_mask rejects a negative window bound (the ODS constraint
// attn.attention has).
func.func @tile_mask_negative_window(%s: tensor<?x?xf32>, %p: index) -> tensor<?x?xf32> {
  // expected-error @+1 {{attribute 'window' failed to satisfy constraint}}
  %0 = attn.tile_mask %s [%p, %p] {window = array<i64: -1, 0>} : tensor<?x?xf32>
  return %0 : tensor<?x?xf32>
}

// -----

// Tests that P · V must chain: P's columns are V's rows.
func.func @tile_accumulate_shapes(%p: tensor<16x32xf32>, %v: tensor<16x8xf32>, %acc: tensor<16x8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{tiles do not chain: P [16, 32] x V [16, 8] into [16, 8]}}
  %0 = attn.tile_accumulate %p, %v, %acc : (tensor<16x32xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

// Tests that normalize needs one sum per row.
func.func @tile_normalize_sum_rows(%acc: tensor<16x8xf32>, %l: tensor<8xf32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{sum must have one entry per row ([16, 8])}}
  %0 = attn.tile_normalize %acc, %l : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  return %0 : tensor<16x8xf32>
}

// -----

// Tests that an lse result comes with the running max.
func.func @tile_normalize_lse_without_max(%acc: tensor<16x8xf32>, %l: tensor<16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>) {
  // expected-error @+1 {{an lse result needs the running max, and only it}}
  %0, %1 = "attn.tile_normalize"(%acc, %l) : (tensor<16x8xf32>, tensor<16xf32>) -> (tensor<16x8xf32>, tensor<16xf32>)
  return %0, %1 : tensor<16x8xf32>, tensor<16xf32>
}

// -----

// Tests that the normalized output keeps the accumulator's shape.
func.func @tile_normalize_output_shape(%acc: tensor<16x8xf32>, %l: tensor<16xf32>) -> tensor<16x4xbf16> {
  // expected-error @+1 {{result must have shape [16, 8], got [16, 4]}}
  %0 = attn.tile_normalize %acc, %l : (tensor<16x8xf32>, tensor<16xf32>) -> tensor<16x4xbf16>
  return %0 : tensor<16x4xbf16>
}
