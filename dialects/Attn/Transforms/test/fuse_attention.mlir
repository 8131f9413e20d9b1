// RUN: attn-opt %s --split-input-file --attn-fuse-attention --canonicalize | FileCheck %s

// Tests that the spec's exporter chain (matmul, scale, causal_mask, softmax,
// matmul) becomes one attention op with the scale and causal mask.
// CHECK-LABEL: func.func @sdpa_causal
//  CHECK-SAME: (%[[Q:.+]]: tensor<2x4x?x8xf32>, %[[K:.+]]: tensor<2x4x?x8xf32>, %[[V:.+]]: tensor<2x4x?x6xf32>)
//       CHECK: %[[O:.+]] = attn.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 1.250000e-01 : f64}
//   CHECK-NOT: attn.softmax
//       CHECK: return %[[O]]
func.func @sdpa_causal(%q: tensor<2x4x?x8xf32>, %k: tensor<2x4x?x8xf32>, %v: tensor<2x4x?x6xf32>) -> tensor<2x4x?x6xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<2x4x?x8xf32>, tensor<2x4x?x8xf32>) -> tensor<2x4x?x?xf32>
  %ss = attn.scale %s, 0.125 : tensor<2x4x?x?xf32>
  %sm = attn.causal_mask %ss : tensor<2x4x?x?xf32>
  %p = attn.softmax %sm {axis = 3} : tensor<2x4x?x?xf32>
  %o = attn.matmul %p, %v : (tensor<2x4x?x?xf32>, tensor<2x4x?x6xf32>) -> tensor<2x4x?x6xf32>
  return %o : tensor<2x4x?x6xf32>
}

// -----

// Tests that the fused op goes where matmul(p, v) was: an exporter (ONNX)
// may compute v after the softmax.
// CHECK-LABEL: func.func @value_after_softmax
//       CHECK: %[[VT:.+]] = attn.transpose
//       CHECK: attn.attention %{{.+}}, %{{.+}}, %[[VT]]
func.func @value_after_softmax(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %vt = attn.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %o = attn.matmul %p, %vt : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that a chain whose scores are also a function result stays unfused.
// CHECK-LABEL: func.func @scores_are_a_result
//   CHECK-NOT: attn.attention
//       CHECK: attn.softmax
func.func @scores_are_a_result(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> (tensor<1x2x5x8xf32>, tensor<1x2x5x7xf32>) {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o, %s : tensor<1x2x5x8xf32>, tensor<1x2x5x7xf32>
}

// -----

// Tests that a chain whose probabilities have a second user stays unfused.
// CHECK-LABEL: func.func @probabilities_used_twice
//   CHECK-NOT: attn.attention
//       CHECK: attn.softmax
func.func @probabilities_used_twice(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> (tensor<1x2x5x8xf32>, tensor<1x2x5x7xf32>) {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  %e = attn.exp %p : tensor<1x2x5x7xf32>
  return %o, %e : tensor<1x2x5x8xf32>, tensor<1x2x5x7xf32>
}

// -----

// Tests that with no scale op the fused scale is explicitly 1 (the default
// would be 1/sqrt(Dk)).
// CHECK-LABEL: func.func @unscaled
//       CHECK: attn.attention {{.*}} {scale = 1.000000e+00 : f64}
func.func @unscaled(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that mul and div by splat constants fold into the scale (0.5 / 4).
// CHECK-LABEL: func.func @mul_div_constants
//       CHECK: attn.attention {{.*}} {scale = 1.250000e-01 : f64}
func.func @mul_div_constants(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %half = arith.constant dense<0.5> : tensor<f32>
  %four = arith.constant dense<4.0> : tensor<1xf32>
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %m = attn.mul %half, %s : (tensor<f32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %d = attn.div %m, %four : (tensor<1x2x5x7xf32>, tensor<1xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %d {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that a constant divided by the scores is not mistaken for a scale.
// CHECK-LABEL: func.func @constant_over_scores
//   CHECK-NOT: attn.attention
func.func @constant_over_scores(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %c = arith.constant dense<2.0> : tensor<f32>
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %d = attn.div %c, %s : (tensor<f32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %d {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that scale, then softcap 50 written as scale(1/50), tanh, scale(50),
// becomes softcap 50 with the scale 0.0625 kept.
// CHECK-LABEL: func.func @softcap
//       CHECK: attn.attention {{.*}} {causal, scale = 6.250000e-02 : f64, softcap = 5.000000e+01 : f64}
func.func @softcap(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x16xf32>) -> tensor<1x2x5x16xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x7xf32>
  %a = attn.scale %s, 0.0625 : tensor<1x2x5x7xf32>
  %b = attn.scale %a, 0.02 : tensor<1x2x5x7xf32>
  %t = attn.tanh %b : tensor<1x2x5x7xf32>
  %c = attn.scale %t, 50.0 : tensor<1x2x5x7xf32>
  %m = attn.causal_mask %c : tensor<1x2x5x7xf32>
  %p = attn.softmax %m {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x16xf32>
  return %o : tensor<1x2x5x16xf32>
}

// -----

// Tests that a tanh without the outer scale is not a softcap: nothing fuses.
// CHECK-LABEL: func.func @tanh_without_cap
//   CHECK-NOT: attn.attention
func.func @tanh_without_cap(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x16xf32>) -> tensor<1x2x5x16xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x16xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x7xf32>
  %t = attn.tanh %s : tensor<1x2x5x7xf32>
  %p = attn.softmax %t {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x16xf32>
  return %o : tensor<1x2x5x16xf32>
}

// -----

// Tests that bias adds on either side become tensor biases.
// CHECK-LABEL: func.func @biases
//  CHECK-SAME: %[[B1:[a-z0-9]+]]: tensor<1x1x1x7xf32>, %[[B2:[a-z0-9]+]]: tensor<1x2x5x7xf32>
//       CHECK: attn.attention {{.*}} bias(%[[B2]], %[[B1]])
func.func @biases(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>, %b1: tensor<1x1x1x7xf32>, %b2: tensor<1x2x5x7xf32>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %x = attn.add %s, %b1 : (tensor<1x2x5x7xf32>, tensor<1x1x1x7xf32>) -> tensor<1x2x5x7xf32>
  %y = attn.add %b2, %x : (tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %y {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that a scale applied after a bias (which scales the bias too) blocks
// fusion.
// CHECK-LABEL: func.func @scale_after_bias
//   CHECK-NOT: attn.attention
func.func @scale_after_bias(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>, %b: tensor<1x2x5x7xf32>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %x = attn.add %s, %b : (tensor<1x2x5x7xf32>, tensor<1x2x5x7xf32>) -> tensor<1x2x5x7xf32>
  %m = attn.causal_mask %x : tensor<1x2x5x7xf32>
  %y = attn.scale %m, 0.5 : tensor<1x2x5x7xf32>
  %p = attn.softmax %y {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that a positive scale applied after a mask (-inf stays -inf) fuses.
// CHECK-LABEL: func.func @scale_after_mask
//       CHECK: attn.attention {{.*}} {causal, scale = 5.000000e-01 : f64}
func.func @scale_after_mask(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %m = attn.causal_mask %s : tensor<1x2x5x7xf32>
  %y = attn.scale %m, 0.5 : tensor<1x2x5x7xf32>
  %p = attn.softmax %y {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that masked_fill with -inf becomes a mask whose true entries drop.
// CHECK-LABEL: func.func @masked_fill
//  CHECK-SAME: %[[PAD:[a-z0-9]+]]: tensor<1x1x1x7xi1>
//       CHECK: attn.attention {{.*}} masks(%[[PAD]]) {mask_drops = array<i1: true>, scale = 1.250000e-01 : f64}
func.func @masked_fill(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>, %pad: tensor<1x1x1x7xi1>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %ss = attn.scale %s, 0.125 : tensor<1x2x5x7xf32>
  %m = attn.masked_fill %ss, %pad, 0xFFF0000000000000 : (tensor<1x2x5x7xf32>, tensor<1x1x1x7xi1>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %m {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that masked_fill with a finite value (the row still attends to the
// filled keys) is not a mask: nothing fuses.
// CHECK-LABEL: func.func @masked_fill_finite
//   CHECK-NOT: attn.attention
func.func @masked_fill_finite(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>, %pad: tensor<1x1x1x7xi1>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %m = attn.masked_fill %s, %pad, -1.0e+09 : (tensor<1x2x5x7xf32>, tensor<1x1x1x7xi1>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %m {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that repeat_interleave of k and v along the heads becomes GQA: the
// fused op reads the 2 kv heads directly and the repeats disappear.
// CHECK-LABEL: func.func @grouped_heads
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x6x5x8xf32>, %[[K:.+]]: tensor<1x2x7x8xf32>, %[[V:.+]]: tensor<1x2x7x8xf32>)
//   CHECK-NOT: attn.repeat
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]]
func.func @grouped_heads(%q: tensor<1x6x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x6x5x8xf32> {
  %kr = attn.repeat %k {axis = 1, times = 3} : tensor<1x2x7x8xf32> -> tensor<1x6x7x8xf32>
  %vr = attn.repeat %v {axis = 1, times = 3} : tensor<1x2x7x8xf32> -> tensor<1x6x7x8xf32>
  %s = attn.matmul %q, %kr {transpose_b} : (tensor<1x6x5x8xf32>, tensor<1x6x7x8xf32>) -> tensor<1x6x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x6x5x7xf32>
  %o = attn.matmul %p, %vr : (tensor<1x6x5x7xf32>, tensor<1x6x7x8xf32>) -> tensor<1x6x5x8xf32>
  return %o : tensor<1x6x5x8xf32>
}

// -----

// Tests that a repeat along another axis is not GQA: it stays, the rest fuses.
// CHECK-LABEL: func.func @repeat_other_axis
//       CHECK: attn.repeat
//       CHECK: attn.repeat
//       CHECK: attn.attention
func.func @repeat_other_axis(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x4xf32>, %v: tensor<1x2x7x4xf32>) -> tensor<1x2x5x8xf32> {
  %kr = attn.repeat %k {axis = 3, times = 2} : tensor<1x2x7x4xf32> -> tensor<1x2x7x8xf32>
  %vr = attn.repeat %v {axis = 3, times = 2} : tensor<1x2x7x4xf32> -> tensor<1x2x7x8xf32>
  %s = attn.matmul %q, %kr {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %vr : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that transposes of q, k, v from [B, S, H, D] and of the output back
// become layout bshd with no transposes left.
// CHECK-LABEL: func.func @head_major_layout
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x5x2x8xf32>, %[[K:.+]]: tensor<1x7x2x8xf32>, %[[V:.+]]: tensor<1x7x2x8xf32>)
//   CHECK-NOT: attn.transpose
//       CHECK: %[[O:.+]] = attn.attention %[[Q]], %[[K]], %[[V]] {layout = #attn.layout<bshd>
//       CHECK: return %[[O]] : tensor<1x5x2x8xf32>
func.func @head_major_layout(%q: tensor<1x5x2x8xf32>, %k: tensor<1x7x2x8xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x5x2x8xf32> {
  %qt = attn.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x5x2x8xf32> -> tensor<1x2x5x8xf32>
  %kt = attn.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %vt = attn.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %s = attn.matmul %qt, %kt {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %vt : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  %ot = attn.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x5x8xf32> -> tensor<1x5x2x8xf32>
  return %ot : tensor<1x5x2x8xf32>
}

// -----

// Tests that k and v repeated along the heads before their transposes (in
// [B, S, H, D], as Falcon's kv groups are) become GQA in layout bshd: the
// fused op reads the 2 kv heads directly.
// CHECK-LABEL: func.func @grouped_heads_head_major
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x5x6x8xf32>, %[[K:.+]]: tensor<1x7x2x8xf32>, %[[V:.+]]: tensor<1x7x2x8xf32>)
//   CHECK-NOT: attn.repeat
//   CHECK-NOT: attn.transpose
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]] {layout = #attn.layout<bshd>
func.func @grouped_heads_head_major(%q: tensor<1x5x6x8xf32>, %k: tensor<1x7x2x8xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x5x6x8xf32> {
  %kr = attn.repeat %k {axis = 2, times = 3} : tensor<1x7x2x8xf32> -> tensor<1x7x6x8xf32>
  %vr = attn.repeat %v {axis = 2, times = 3} : tensor<1x7x2x8xf32> -> tensor<1x7x6x8xf32>
  %qt = attn.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x5x6x8xf32> -> tensor<1x6x5x8xf32>
  %kt = attn.transpose %kr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x6x8xf32> -> tensor<1x6x7x8xf32>
  %vt = attn.transpose %vr {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x6x8xf32> -> tensor<1x6x7x8xf32>
  %s = attn.matmul %qt, %kt {transpose_b} : (tensor<1x6x5x8xf32>, tensor<1x6x7x8xf32>) -> tensor<1x6x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x6x5x7xf32>
  %o = attn.matmul %p, %vt : (tensor<1x6x5x7xf32>, tensor<1x6x7x8xf32>) -> tensor<1x6x5x8xf32>
  %ot = attn.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x6x5x8xf32> -> tensor<1x5x6x8xf32>
  return %ot : tensor<1x5x6x8xf32>
}

// -----

// Tests that without the output transposed back the layout stays bhsd and
// the input transposes stay.
// CHECK-LABEL: func.func @transposed_inputs_only
//       CHECK: attn.transpose
//       CHECK: attn.attention
//   CHECK-NOT: layout
func.func @transposed_inputs_only(%q: tensor<1x5x2x8xf32>, %k: tensor<1x7x2x8xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x2x5x8xf32> {
  %qt = attn.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x5x2x8xf32> -> tensor<1x2x5x8xf32>
  %kt = attn.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %vt = attn.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %s = attn.matmul %qt, %kt {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %vt : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that an explicitly transposed key (matmul(q, transpose(k))) fuses.
// CHECK-LABEL: func.func @explicit_key_transpose
//  CHECK-SAME: %[[K:[a-z0-9]+]]: tensor<1x2x7x8xf32>
//   CHECK-NOT: attn.transpose
//       CHECK: attn.attention %{{.+}}, %[[K]],
func.func @explicit_key_transpose(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %kt = attn.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x7x8xf32> -> tensor<1x2x8x7xf32>
  %s = attn.matmul %q, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x7xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that a key whose batch numpy-broadcasts against the query's is left
// unfused: the fused op does not broadcast.
// CHECK-LABEL: func.func @broadcast_batch
//   CHECK-NOT: attn.attention
func.func @broadcast_batch(%q: tensor<3x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<3x2x7x8xf32>) -> tensor<3x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<3x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<3x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<3x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<3x2x5x7xf32>, tensor<3x2x7x8xf32>) -> tensor<3x2x5x8xf32>
  return %o : tensor<3x2x5x8xf32>
}

// -----

// Tests that matmul(q, W) with a square W becomes the general (Luong) score.
// CHECK-LABEL: func.func @general_score
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x1x5x8xf32>, %[[K:.+]]: tensor<1x1x7x8xf32>, %[[V:.+]]: tensor<1x1x7x8xf32>, %[[W:.+]]: tensor<8x8xf32>)
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]] general(%[[W]]) {scale = 1.000000e+00 : f64, score = #attn.score<general>}
func.func @general_score(%q: tensor<1x1x5x8xf32>, %k: tensor<1x1x7x8xf32>, %v: tensor<1x1x7x8xf32>, %w: tensor<8x8xf32>) -> tensor<1x1x5x8xf32> {
  %qw = attn.matmul %q, %w : (tensor<1x1x5x8xf32>, tensor<8x8xf32>) -> tensor<1x1x5x8xf32>
  %s = attn.matmul %qw, %k {transpose_b} : (tensor<1x1x5x8xf32>, tensor<1x1x7x8xf32>) -> tensor<1x1x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x1x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x1x5x7xf32>, tensor<1x1x7x8xf32>) -> tensor<1x1x5x8xf32>
  return %o : tensor<1x1x5x8xf32>
}

// -----

// Tests that a non-square projection of q is not a general score: the
// projection stays a separate op and the dot product fuses.
// CHECK-LABEL: func.func @projected_query
//       CHECK: attn.matmul
//       CHECK: attn.attention
//   CHECK-NOT: general
func.func @projected_query(%q: tensor<1x1x5x4xf32>, %k: tensor<1x1x7x8xf32>, %v: tensor<1x1x7x8xf32>, %w: tensor<4x8xf32>) -> tensor<1x1x5x8xf32> {
  %qw = attn.matmul %q, %w : (tensor<1x1x5x4xf32>, tensor<4x8xf32>) -> tensor<1x1x5x8xf32>
  %s = attn.matmul %qw, %k {transpose_b} : (tensor<1x1x5x8xf32>, tensor<1x1x7x8xf32>) -> tensor<1x1x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x1x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x1x5x7xf32>, tensor<1x1x7x8xf32>) -> tensor<1x1x5x8xf32>
  return %o : tensor<1x1x5x8xf32>
}

// -----

// Tests that the additive (Bahdanau) form, vaᵀ tanh(Wq q + Wk k) written with
// linear/unsqueeze/add/tanh/matmul by a column and a reshape, becomes the
// additive score.
// CHECK-LABEL: func.func @additive_score
//  CHECK-SAME: (%[[Q:.+]]: tensor<?x1x1x6xf32>, %[[K:.+]]: tensor<?x1x?x6xf32>, %[[WQ:.+]]: tensor<4x6xf32>, %[[WK:.+]]: tensor<4x6xf32>, %[[VA:.+]]: tensor<4x1xf32>, %[[B:.+]]: index, %[[T:.+]]: index)
//       CHECK: attn.attention %[[Q]], %[[K]], %[[K]] additive(%[[WQ]], %[[WK]], %[[VA]]) {scale = 1.000000e+00 : f64, score = #attn.score<additive>}
//   CHECK-NOT: attn.tanh
func.func @additive_score(%q: tensor<?x1x1x6xf32>, %k: tensor<?x1x?x6xf32>, %wq: tensor<4x6xf32>, %wk: tensor<4x6xf32>, %va: tensor<4x1xf32>, %b: index, %t: index) -> tensor<?x1x1x6xf32> {
  %qp = attn.linear %q, %wq : (tensor<?x1x1x6xf32>, tensor<4x6xf32>) -> tensor<?x1x1x4xf32>
  %kp = attn.linear %k, %wk : (tensor<?x1x?x6xf32>, tensor<4x6xf32>) -> tensor<?x1x?x4xf32>
  %qu = attn.unsqueeze %qp {axis = 3} : tensor<?x1x1x4xf32> -> tensor<?x1x1x1x4xf32>
  %ku = attn.unsqueeze %kp {axis = 2} : tensor<?x1x?x4xf32> -> tensor<?x1x1x?x4xf32>
  %e = attn.add %qu, %ku : (tensor<?x1x1x1x4xf32>, tensor<?x1x1x?x4xf32>) -> tensor<?x1x1x?x4xf32>
  %th = attn.tanh %e : tensor<?x1x1x?x4xf32>
  %sc = attn.matmul %th, %va : (tensor<?x1x1x?x4xf32>, tensor<4x1xf32>) -> tensor<?x1x1x?x1xf32>
  %s = attn.reshape %sc [%b, %t] : tensor<?x1x1x?x1xf32> -> tensor<?x1x1x?xf32>
  %p = attn.softmax %s {axis = 3} : tensor<?x1x1x?xf32>
  %o = attn.matmul %p, %k : (tensor<?x1x1x?xf32>, tensor<?x1x?x6xf32>) -> tensor<?x1x1x6xf32>
  return %o : tensor<?x1x1x6xf32>
}

// -----

// Tests that the additive form with a 1-D va (no reshape) fuses too.
// CHECK-LABEL: func.func @additive_vector
//       CHECK: attn.attention {{.*}} additive(
func.func @additive_vector(%q: tensor<1x1x3x6xf32>, %k: tensor<1x1x5x6xf32>, %wq: tensor<4x6xf32>, %wk: tensor<4x6xf32>, %va: tensor<4xf32>) -> tensor<1x1x3x6xf32> {
  %qp = attn.linear %q, %wq : (tensor<1x1x3x6xf32>, tensor<4x6xf32>) -> tensor<1x1x3x4xf32>
  %kp = attn.linear %k, %wk : (tensor<1x1x5x6xf32>, tensor<4x6xf32>) -> tensor<1x1x5x4xf32>
  %qu = attn.unsqueeze %qp {axis = 3} : tensor<1x1x3x4xf32> -> tensor<1x1x3x1x4xf32>
  %ku = attn.unsqueeze %kp {axis = 2} : tensor<1x1x5x4xf32> -> tensor<1x1x1x5x4xf32>
  %e = attn.add %ku, %qu : (tensor<1x1x1x5x4xf32>, tensor<1x1x3x1x4xf32>) -> tensor<1x1x3x5x4xf32>
  %th = attn.tanh %e : tensor<1x1x3x5x4xf32>
  %s = attn.matmul %th, %va : (tensor<1x1x3x5x4xf32>, tensor<4xf32>) -> tensor<1x1x3x5xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x1x3x5xf32>
  %o = attn.matmul %p, %k : (tensor<1x1x3x5xf32>, tensor<1x1x5x6xf32>) -> tensor<1x1x3x6xf32>
  return %o : tensor<1x1x3x6xf32>
}

// -----

// Tests that projections with a bias are not the additive score (Wq q + b is
// not what the fused op computes): nothing fuses.
// CHECK-LABEL: func.func @additive_with_bias
//   CHECK-NOT: attn.attention
func.func @additive_with_bias(%q: tensor<1x1x3x6xf32>, %k: tensor<1x1x5x6xf32>, %wq: tensor<4x6xf32>, %bq: tensor<4xf32>, %wk: tensor<4x6xf32>, %va: tensor<4xf32>) -> tensor<1x1x3x6xf32> {
  %qp = attn.linear %q, %wq, %bq : (tensor<1x1x3x6xf32>, tensor<4x6xf32>, tensor<4xf32>) -> tensor<1x1x3x4xf32>
  %kp = attn.linear %k, %wk : (tensor<1x1x5x6xf32>, tensor<4x6xf32>) -> tensor<1x1x5x4xf32>
  %qu = attn.unsqueeze %qp {axis = 3} : tensor<1x1x3x4xf32> -> tensor<1x1x3x1x4xf32>
  %ku = attn.unsqueeze %kp {axis = 2} : tensor<1x1x5x4xf32> -> tensor<1x1x1x5x4xf32>
  %e = attn.add %qu, %ku : (tensor<1x1x3x1x4xf32>, tensor<1x1x1x5x4xf32>) -> tensor<1x1x3x5x4xf32>
  %th = attn.tanh %e : tensor<1x1x3x5x4xf32>
  %s = attn.matmul %th, %va : (tensor<1x1x3x5x4xf32>, tensor<4xf32>) -> tensor<1x1x3x5xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x1x3x5xf32>
  %o = attn.matmul %p, %k : (tensor<1x1x3x5xf32>, tensor<1x1x5x6xf32>) -> tensor<1x1x3x6xf32>
  return %o : tensor<1x1x3x6xf32>
}

// -----

// Tests that a softmax over another axis is not attention.
// CHECK-LABEL: func.func @softmax_other_axis
//   CHECK-NOT: attn.attention
func.func @softmax_other_axis(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x5xf32>
  %p = attn.softmax %s {axis = 2} : tensor<1x2x5x5xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x5xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that q and k divided by their norms (sqrt of the keepdims sum of
// squares) become the cosine score.
// CHECK-LABEL: func.func @cosine_score
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x2x5x8xf32>, %[[K:.+]]: tensor<1x2x7x8xf32>, %[[V:.+]]: tensor<1x2x7x8xf32>)
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+01 : f64, score = #attn.score<cosine>}
//   CHECK-NOT: attn.sqrt
func.func @cosine_score(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %qq = attn.mul %q, %q : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  %qs = attn.reduce_sum %qq {axis = 3, keepdims} : tensor<1x2x5x8xf32> -> tensor<1x2x5x1xf32>
  %qn = attn.sqrt %qs : tensor<1x2x5x1xf32>
  %qh = attn.div %q, %qn : (tensor<1x2x5x8xf32>, tensor<1x2x5x1xf32>) -> tensor<1x2x5x8xf32>
  %kk = attn.mul %k, %k : (tensor<1x2x7x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x7x8xf32>
  %ks = attn.reduce_sum %kk {axis = 3, keepdims} : tensor<1x2x7x8xf32> -> tensor<1x2x7x1xf32>
  %kn = attn.sqrt %ks : tensor<1x2x7x1xf32>
  %kh = attn.div %k, %kn : (tensor<1x2x7x8xf32>, tensor<1x2x7x1xf32>) -> tensor<1x2x7x8xf32>
  %s = attn.matmul %qh, %kh {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %ss = attn.scale %s, 10.0 : tensor<1x2x5x7xf32>
  %p = attn.softmax %ss {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that normalising only the query is not a cosine score: the
// normalisation stays and the dot product fuses.
// CHECK-LABEL: func.func @query_normalized_only
//       CHECK: attn.sqrt
//       CHECK: attn.attention
//   CHECK-NOT: cosine
func.func @query_normalized_only(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %qq = attn.mul %q, %q : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  %qs = attn.reduce_sum %qq {axis = 3, keepdims} : tensor<1x2x5x8xf32> -> tensor<1x2x5x1xf32>
  %qn = attn.sqrt %qs : tensor<1x2x5x1xf32>
  %qh = attn.div %q, %qn : (tensor<1x2x5x8xf32>, tensor<1x2x5x1xf32>) -> tensor<1x2x5x8xf32>
  %s = attn.matmul %qh, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that scales of q and of k (here behind the key's transpose) join the
// fused scale: 0.5 · 0.25 · 0.125.
// CHECK-LABEL: func.func @scaled_query_and_key
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x2x5x8xf32>, %[[K:.+]]: tensor<1x2x7x8xf32>, %[[V:.+]]: tensor<1x2x7x8xf32>)
//   CHECK-NOT: attn.scale
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]] {scale = 1.562500e-02 : f64}
func.func @scaled_query_and_key(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32> {
  %qs = attn.scale %q, 0.5 : tensor<1x2x5x8xf32>
  %ks = attn.scale %k, 0.25 : tensor<1x2x7x8xf32>
  %kt = attn.transpose %ks {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x7x8xf32> -> tensor<1x2x8x7xf32>
  %s = attn.matmul %qs, %kt : (tensor<1x2x5x8xf32>, tensor<1x2x8x7xf32>) -> tensor<1x2x5x7xf32>
  %ss = attn.scale %s, 0.125 : tensor<1x2x5x7xf32>
  %p = attn.softmax %ss {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o : tensor<1x2x5x8xf32>
}

// -----

// Tests that the query projection scaled before the heads are split (BART,
// Whisper: q_proj(x) · D^-0.5, reshaped to [B, S, H, D], transposed) joins
// the fused scale; the reshape then reads the unscaled projection.
// CHECK-LABEL: func.func @query_scaled_before_reshape
//  CHECK-SAME: (%[[X:.+]]: tensor<1x5x16xf32>, %[[K:.+]]: tensor<1x7x2x8xf32>, %[[V:.+]]: tensor<1x7x2x8xf32>)
//   CHECK-NOT: attn.scale
//       CHECK: %[[Q:.+]] = attn.reshape %[[X]]
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]] {layout = #attn.layout<bshd>, scale = 0.3535{{[0-9]+}} : f64}
func.func @query_scaled_before_reshape(%x: tensor<1x5x16xf32>, %k: tensor<1x7x2x8xf32>, %v: tensor<1x7x2x8xf32>) -> tensor<1x5x2x8xf32> {
  %xs = attn.scale %x, 0.35355339059327373 : tensor<1x5x16xf32>
  %q = attn.reshape %xs : tensor<1x5x16xf32> -> tensor<1x5x2x8xf32>
  %qt = attn.transpose %q {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x5x2x8xf32> -> tensor<1x2x5x8xf32>
  %kt = attn.transpose %k {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %vt = attn.transpose %v {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x7x2x8xf32> -> tensor<1x2x7x8xf32>
  %s = attn.matmul %qt, %kt {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %vt : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  %ot = attn.transpose %o {permutation = array<i64: 0, 2, 1, 3>} : tensor<1x2x5x8xf32> -> tensor<1x5x2x8xf32>
  return %ot : tensor<1x5x2x8xf32>
}

// -----

// Tests that a scaled query that something else reads too stays as written
// (the scale is computed once for both).
// CHECK-LABEL: func.func @shared_scaled_query
//       CHECK: %[[QS:.+]] = attn.scale
//       CHECK: attn.attention %[[QS]], {{.*}} {scale = 1.000000e+00 : f64}
func.func @shared_scaled_query(%q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) {
  %qs = attn.scale %q, 0.5 : tensor<1x2x5x8xf32>
  %s = attn.matmul %qs, %k {transpose_b} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x8xf32>) -> tensor<1x2x5x8xf32>
  return %o, %qs : tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>
}

// -----

// Tests that q and kᵀ each scaled by √scale (PyTorch's ONNX export of
// scaled_dot_product_attention) fuse, the two halves joining the scale.
// CHECK-LABEL: func.func @scaled_query_and_transposed_key
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x2x5x16xf32>, %[[K:.+]]: tensor<1x2x7x16xf32>, %[[V:.+]]: tensor<1x2x7x16xf32>)
//   CHECK-NOT: attn.scale
//   CHECK-NOT: attn.transpose
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f64}
func.func @scaled_query_and_transposed_key(%q: tensor<1x2x5x16xf32>, %k: tensor<1x2x7x16xf32>, %v: tensor<1x2x7x16xf32>) -> tensor<1x2x5x16xf32> {
  %kt = attn.transpose %k {permutation = array<i64: 0, 1, 3, 2>} : tensor<1x2x7x16xf32> -> tensor<1x2x16x7xf32>
  %qs = attn.scale %q, 0.5 : tensor<1x2x5x16xf32>
  %ks = attn.scale %kt, 0.5 : tensor<1x2x16x7xf32>
  %s = attn.matmul %qs, %ks : (tensor<1x2x5x16xf32>, tensor<1x2x16x7xf32>) -> tensor<1x2x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x2x5x7xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x5x7xf32>, tensor<1x2x7x16xf32>) -> tensor<1x2x5x16xf32>
  return %o : tensor<1x2x5x16xf32>
}

// -----

// Tests that Llama's repeat_kv as exporters write it (unsqueeze, repeat of the
// new axis, reshape merging it into the heads) is GQA: K and V are read as
// their 2 kv heads, never repeated.
// CHECK-LABEL: func.func @repeat_kv
//  CHECK-SAME: (%[[Q:.+]]: tensor<1x4x5x8xf32>, %[[K:.+]]: tensor<1x2x7x8xf32>, %[[V:.+]]: tensor<1x2x7x8xf32>)
//   CHECK-NOT: attn.repeat
//   CHECK-NOT: attn.reshape
//       CHECK: attn.attention %[[Q]], %[[K]], %[[V]]
func.func @repeat_kv(%q: tensor<1x4x5x8xf32>, %k: tensor<1x2x7x8xf32>, %v: tensor<1x2x7x8xf32>) -> tensor<1x4x5x8xf32> {
  %ku = attn.unsqueeze %k {axis = 2} : tensor<1x2x7x8xf32> -> tensor<1x2x1x7x8xf32>
  %kr = attn.repeat %ku {axis = 2, times = 2} : tensor<1x2x1x7x8xf32> -> tensor<1x2x2x7x8xf32>
  %k4 = attn.reshape %kr : tensor<1x2x2x7x8xf32> -> tensor<1x4x7x8xf32>
  %vu = attn.unsqueeze %v {axis = 2} : tensor<1x2x7x8xf32> -> tensor<1x2x1x7x8xf32>
  %vr = attn.repeat %vu {axis = 2, times = 2} : tensor<1x2x1x7x8xf32> -> tensor<1x2x2x7x8xf32>
  %v4 = attn.reshape %vr : tensor<1x2x2x7x8xf32> -> tensor<1x4x7x8xf32>
  %s = attn.matmul %q, %k4 {transpose_b} : (tensor<1x4x5x8xf32>, tensor<1x4x7x8xf32>) -> tensor<1x4x5x7xf32>
  %p = attn.softmax %s {axis = 3} : tensor<1x4x5x7xf32>
  %o = attn.matmul %p, %v4 : (tensor<1x4x5x7xf32>, tensor<1x4x7x8xf32>) -> tensor<1x4x5x8xf32>
  return %o : tensor<1x4x5x8xf32>
}

// -----

// Tests that a reshape merging the repeated axis with the one after it (not
// the heads before it) is left as written.
// CHECK-LABEL: func.func @repeat_merged_forward
//       CHECK: attn.repeat %{{.+}} {axis = 2 : i64, times = 2 : i64}
//       CHECK: attn.reshape
func.func @repeat_merged_forward(%k: tensor<1x2x7x8xf32>) -> tensor<1x2x14x8xf32> {
  %ku = attn.unsqueeze %k {axis = 2} : tensor<1x2x7x8xf32> -> tensor<1x2x1x7x8xf32>
  %kr = attn.repeat %ku {axis = 2, times = 2} : tensor<1x2x1x7x8xf32> -> tensor<1x2x2x7x8xf32>
  %k4 = attn.reshape %kr : tensor<1x2x2x7x8xf32> -> tensor<1x2x14x8xf32>
  return %k4 : tensor<1x2x14x8xf32>
}

// -----

// Tests that window_masks join the fused op's window (two intersect: the
// narrower bound on each side), beside the causal mask, and that a positive
// scale after them still commutes (Mistral's sliding window as attnc imports
// it from ONNX).
// CHECK-LABEL: func.func @sliding_window
//       CHECK: %[[O:.+]] = attn.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 2.500000e-01 : f64, window = array<i64: 3, 1>}
//   CHECK-NOT: attn.window_mask
//       CHECK: return %[[O]]
func.func @sliding_window(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %s = attn.matmul %q, %k {transpose_b} : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x?xf32>
  %w = attn.window_mask %s {left = 3, right = 4} : tensor<1x2x?x?xf32>
  %c = attn.causal_mask %w : tensor<1x2x?x?xf32>
  %x = attn.window_mask %c {left = 9, right = 1} : tensor<1x2x?x?xf32>
  %ss = attn.scale %x, 0.25 : tensor<1x2x?x?xf32>
  %p = attn.softmax %ss {axis = 3} : tensor<1x2x?x?xf32>
  %o = attn.matmul %p, %v : (tensor<1x2x?x?xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}
