// RUN: attn-opt %s --split-input-file | attn-opt --split-input-file | FileCheck %s

// Round trips of every attn op through the custom assembly format: printed,
// parsed again and printed again. The attn.attention cases cover each
// optional operand group and attribute on its own, then all of them at once.

// Tests that a batched matmul with a transposed right operand round-trips.
// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<1x12x?x64xf32>, %[[K:[a-z0-9]+]]: tensor<1x12x?x64xf32>
// CHECK:         %[[S:.+]] = attn.matmul %[[Q]], %[[K]] {transpose_b} : (tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>) -> tensor<1x12x?x?xf32>
// CHECK:         return %[[S]]
func.func @matmul_transpose_b(%q: tensor<1x12x?x64xf32>, %k: tensor<1x12x?x64xf32>) -> tensor<1x12x?x?xf32> {
  %0 = attn.matmul %q, %k {transpose_b} : (tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>) -> tensor<1x12x?x?xf32>
  return %0 : tensor<1x12x?x?xf32>
}

// -----

// Tests that a matmul with broadcast batch dims and 1-D operands (numpy's row
// and column vectors) round-trips.
// CHECK-LABEL: func.func @matmul_broadcast_and_vectors
// CHECK-SAME:    %[[P:[a-z0-9]+]]: tensor<2x1x?x?xf32>, %[[V:[a-z0-9]+]]: tensor<1x4x?x32xf32>, %[[X:[a-z0-9]+]]: tensor<32xf32>
// CHECK:         attn.matmul %[[P]], %[[V]] : (tensor<2x1x?x?xf32>, tensor<1x4x?x32xf32>) -> tensor<2x4x?x32xf32>
// CHECK:         attn.matmul %[[X]], %[[X]] : (tensor<32xf32>, tensor<32xf32>) -> tensor<f32>
// CHECK:         attn.matmul %[[V]], %[[X]] : (tensor<1x4x?x32xf32>, tensor<32xf32>) -> tensor<1x4x?xf32>
func.func @matmul_broadcast_and_vectors(%p: tensor<2x1x?x?xf32>, %v: tensor<1x4x?x32xf32>, %x: tensor<32xf32>) -> (tensor<2x4x?x32xf32>, tensor<f32>, tensor<1x4x?xf32>) {
  %0 = attn.matmul %p, %v : (tensor<2x1x?x?xf32>, tensor<1x4x?x32xf32>) -> tensor<2x4x?x32xf32>
  %1 = attn.matmul %x, %x : (tensor<32xf32>, tensor<32xf32>) -> tensor<f32>
  %2 = attn.matmul %v, %x : (tensor<1x4x?x32xf32>, tensor<32xf32>) -> tensor<1x4x?xf32>
  return %0, %1, %2 : tensor<2x4x?x32xf32>, tensor<f32>, tensor<1x4x?xf32>
}

// -----

// Tests that linear round-trips with and without its bias.
// CHECK-LABEL: func.func @linear
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x?x768xf32>, %[[W:[a-z0-9]+]]: tensor<256x768xf32>, %[[B:[a-z0-9]+]]: tensor<256xf32>
// CHECK:         attn.linear %[[X]], %[[W]], %[[B]] : (tensor<?x?x768xf32>, tensor<256x768xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
// CHECK:         attn.linear %[[X]], %[[W]] : (tensor<?x?x768xf32>, tensor<256x768xf32>) -> tensor<?x?x256xf32>
func.func @linear(%x: tensor<?x?x768xf32>, %w: tensor<256x768xf32>, %b: tensor<256xf32>) -> (tensor<?x?x256xf32>, tensor<?x?x256xf32>) {
  %0 = attn.linear %x, %w, %b : (tensor<?x?x768xf32>, tensor<256x768xf32>, tensor<256xf32>) -> tensor<?x?x256xf32>
  %1 = attn.linear %x, %w : (tensor<?x?x768xf32>, tensor<256x768xf32>) -> tensor<?x?x256xf32>
  return %0, %1 : tensor<?x?x256xf32>, tensor<?x?x256xf32>
}

// -----

// Tests that the four broadcasting binary ops round-trip.
// CHECK-LABEL: func.func @binary
// CHECK-SAME:    %[[A:[a-z0-9]+]]: tensor<1x12x?x?xf32>, %[[B:[a-z0-9]+]]: tensor<1x1x1x?xf32>
// CHECK:         %[[ADD:.+]] = attn.add %[[A]], %[[B]] : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x12x?x?xf32>
// CHECK:         %[[SUB:.+]] = attn.sub %[[B]], %[[ADD]] : (tensor<1x1x1x?xf32>, tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32>
// CHECK:         %[[MUL:.+]] = attn.mul %[[SUB]], %[[SUB]] : (tensor<1x12x?x?xf32>, tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32>
// CHECK:         attn.div %[[MUL]], %[[B]] : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x12x?x?xf32>
func.func @binary(%a: tensor<1x12x?x?xf32>, %b: tensor<1x1x1x?xf32>) -> tensor<1x12x?x?xf32> {
  %0 = attn.add %a, %b : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x12x?x?xf32>
  %1 = attn.sub %b, %0 : (tensor<1x1x1x?xf32>, tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32>
  %2 = attn.mul %1, %1 : (tensor<1x12x?x?xf32>, tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32>
  %3 = attn.div %2, %b : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x12x?x?xf32>
  return %3 : tensor<1x12x?x?xf32>
}

// -----

// Tests that scale round-trips its constant.
// CHECK-LABEL: func.func @scale
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<1x12x?x?xf32>
// CHECK:         attn.scale %[[X]], 1.250000e-01 : tensor<1x12x?x?xf32>
func.func @scale(%x: tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32> {
  %0 = attn.scale %x, 0.125 : tensor<1x12x?x?xf32>
  return %0 : tensor<1x12x?x?xf32>
}

// -----

// Tests that the unary ops tanh, exp and neg round-trip.
// CHECK-LABEL: func.func @unary
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x1000xbf16>
// CHECK:         %[[T:.+]] = attn.tanh %[[X]] : tensor<?x1000xbf16>
// CHECK:         %[[E:.+]] = attn.exp %[[T]] : tensor<?x1000xbf16>
// CHECK:         attn.neg %[[E]] : tensor<?x1000xbf16>
func.func @unary(%x: tensor<?x1000xbf16>) -> tensor<?x1000xbf16> {
  %0 = attn.tanh %x : tensor<?x1000xbf16>
  %1 = attn.exp %0 : tensor<?x1000xbf16>
  %2 = attn.neg %1 : tensor<?x1000xbf16>
  return %2 : tensor<?x1000xbf16>
}

// -----

// Tests that the rotary embeddings' unary ops cos and sin round-trip.
// CHECK-LABEL: func.func @cos_sin
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x128xf32>
// CHECK:         %[[C:.+]] = attn.cos %[[X]] : tensor<?x128xf32>
// CHECK:         attn.sin %[[C]] : tensor<?x128xf32>
func.func @cos_sin(%x: tensor<?x128xf32>) -> tensor<?x128xf32> {
  %0 = attn.cos %x : tensor<?x128xf32>
  %1 = attn.sin %0 : tensor<?x128xf32>
  return %1 : tensor<?x128xf32>
}

// -----

// Tests that softmax round-trips its axis.
// CHECK-LABEL: func.func @softmax
// CHECK:         attn.softmax %{{.+}} {axis = 3 : i64} : tensor<1x12x?x?xf16>
func.func @softmax(%x: tensor<1x12x?x?xf16>) -> tensor<1x12x?x?xf16> {
  %0 = attn.softmax %x {axis = 3} : tensor<1x12x?x?xf16>
  return %0 : tensor<1x12x?x?xf16>
}

// -----

// Tests that masked_fill round-trips a -inf fill and a finite one.
// CHECK-LABEL: func.func @masked_fill
// CHECK-SAME:    %[[S:[a-z0-9]+]]: tensor<1x12x?x?xf32>, %[[M:[a-z0-9]+]]: tensor<1x1x1x?xi1>
// CHECK:         %[[F:.+]] = attn.masked_fill %[[S]], %[[M]], 0xFFF0000000000000 : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xi1>) -> tensor<1x12x?x?xf32>
// CHECK:         attn.masked_fill %[[F]], %[[M]], -1.000000e+04 : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xi1>) -> tensor<1x12x?x?xf32>
func.func @masked_fill(%s: tensor<1x12x?x?xf32>, %m: tensor<1x1x1x?xi1>) -> tensor<1x12x?x?xf32> {
  %0 = attn.masked_fill %s, %m, 0xFFF0000000000000 : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xi1>) -> tensor<1x12x?x?xf32>
  %1 = attn.masked_fill %0, %m, -1.0e4 : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xi1>) -> tensor<1x12x?x?xf32>
  return %1 : tensor<1x12x?x?xf32>
}

// -----

// Tests that causal_mask round-trips, on a rank-2 and a rank-4 input.
// CHECK-LABEL: func.func @causal_mask
// CHECK:         attn.causal_mask %{{.+}} : tensor<?x?xf32>
// CHECK:         attn.causal_mask %{{.+}} : tensor<1x12x?x?xf32>
func.func @causal_mask(%a: tensor<?x?xf32>, %b: tensor<1x12x?x?xf32>) -> (tensor<?x?xf32>, tensor<1x12x?x?xf32>) {
  %0 = attn.causal_mask %a : tensor<?x?xf32>
  %1 = attn.causal_mask %b : tensor<1x12x?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<1x12x?x?xf32>
}

// -----

// Tests that window_mask round-trips its bounds.
// CHECK-LABEL: func.func @window_mask
// CHECK:         attn.window_mask %{{.+}} {left = 4095 : i64, right = 0 : i64} : tensor<1x32x?x?xbf16>
func.func @window_mask(%a: tensor<1x32x?x?xbf16>) -> tensor<1x32x?x?xbf16> {
  %0 = attn.window_mask %a {left = 4095, right = 0} : tensor<1x32x?x?xbf16>
  return %0 : tensor<1x32x?x?xbf16>
}

// -----

// Tests that reshape round-trips its dynamic size operands, and omits the
// bracket when the result is static.
// CHECK-LABEL: func.func @reshape
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x?x768xf32>, %[[B:[a-z0-9]+]]: index, %[[S:[a-z0-9]+]]: index, %[[Y:[a-z0-9]+]]: tensor<2x3x4xf32>
// CHECK:         attn.reshape %[[X]][%[[B]], %[[S]]] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
// CHECK:         attn.reshape %[[Y]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
func.func @reshape(%x: tensor<?x?x768xf32>, %b: index, %s: index, %y: tensor<2x3x4xf32>) -> (tensor<?x?x12x64xf32>, tensor<6x4xf32>) {
  %0 = attn.reshape %x [%b, %s] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
  %1 = attn.reshape %y : tensor<2x3x4xf32> -> tensor<6x4xf32>
  return %0, %1 : tensor<?x?x12x64xf32>, tensor<6x4xf32>
}

// -----

// Tests that transpose round-trips its permutation.
// CHECK-LABEL: func.func @transpose
// CHECK:         attn.transpose %{{.+}} {permutation = array<i64: 0, 2, 1, 3>} : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
func.func @transpose(%x: tensor<?x?x12x64xf32>) -> tensor<?x12x?x64xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
  return %0 : tensor<?x12x?x64xf32>
}

// -----

// Tests that unsqueeze round-trips, inside the dims and at the end.
// CHECK-LABEL: func.func @unsqueeze
// CHECK:         attn.unsqueeze %{{.+}} {axis = 2 : i64} : tensor<?x1x?x1000xf32> -> tensor<?x1x1x?x1000xf32>
// CHECK:         attn.unsqueeze %{{.+}} {axis = 4 : i64} : tensor<?x1x?x1000xf32> -> tensor<?x1x?x1000x1xf32>
func.func @unsqueeze(%x: tensor<?x1x?x1000xf32>) -> (tensor<?x1x1x?x1000xf32>, tensor<?x1x?x1000x1xf32>) {
  %0 = attn.unsqueeze %x {axis = 2} : tensor<?x1x?x1000xf32> -> tensor<?x1x1x?x1000xf32>
  %1 = attn.unsqueeze %x {axis = 4} : tensor<?x1x?x1000xf32> -> tensor<?x1x?x1000x1xf32>
  return %0, %1 : tensor<?x1x1x?x1000xf32>, tensor<?x1x?x1000x1xf32>
}

// -----

// Tests that repeat (the GQA head expansion) round-trips.
// CHECK-LABEL: func.func @repeat
// CHECK:         attn.repeat %{{.+}} {axis = 1 : i64, times = 4 : i64} : tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
func.func @repeat(%k: tensor<?x8x?x128xbf16>) -> tensor<?x32x?x128xbf16> {
  %0 = attn.repeat %k {axis = 1, times = 4} : tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
  return %0 : tensor<?x32x?x128xbf16>
}

// -----

// Tests that slice (the halves of rotary embeddings' rotate_half) round-trips
// its axis and bounds, with dynamic dims beside the sliced one.
// CHECK-LABEL: func.func @slice
// CHECK:         attn.slice %{{.+}} {axis = 3 : i64, end = 64 : i64, start = 0 : i64} : tensor<?x8x?x128xbf16> -> tensor<?x8x?x64xbf16>
// CHECK:         attn.slice %{{.+}} {axis = 3 : i64, end = 128 : i64, start = 64 : i64} : tensor<?x8x?x128xbf16> -> tensor<?x8x?x64xbf16>
func.func @slice(%x: tensor<?x8x?x128xbf16>) -> (tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>) {
  %0 = attn.slice %x {axis = 3, start = 0, end = 64} : tensor<?x8x?x128xbf16> -> tensor<?x8x?x64xbf16>
  %1 = attn.slice %x {axis = 3, start = 64, end = 128} : tensor<?x8x?x128xbf16> -> tensor<?x8x?x64xbf16>
  return %0, %1 : tensor<?x8x?x64xbf16>, tensor<?x8x?x64xbf16>
}

// -----

// Tests that reduce_sum round-trips with and without keepdims.
// CHECK-LABEL: func.func @reduce_sum
// CHECK:         attn.reduce_sum %{{.+}} {axis = 1 : i64, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
// CHECK:         attn.reduce_sum %{{.+}} {axis = 0 : i64} : tensor<4x8xf32> -> tensor<8xf32>
func.func @reduce_sum(%x: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<8xf32>) {
  %0 = attn.reduce_sum %x {axis = 1, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
  %1 = attn.reduce_sum %x {axis = 0} : tensor<4x8xf32> -> tensor<8xf32>
  return %0, %1 : tensor<4x1xf32>, tensor<8xf32>
}

// -----

// Tests that concat round-trips with two and three inputs.
// CHECK-LABEL: func.func @concat
// CHECK-SAME:    %[[A:[a-z0-9]+]]: tensor<2x3xf32>, %[[B:[a-z0-9]+]]: tensor<2x5xf32>
// CHECK:         attn.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK:         attn.concat %[[A]], %[[B]], %[[A]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>) -> (tensor<2x8xf32>, tensor<2x11xf32>) {
  %0 = attn.concat %a, %b {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  %1 = attn.concat %a, %b, %a {axis = 1} : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x11xf32>
  return %0, %1 : tensor<2x8xf32>, tensor<2x11xf32>
}

// -----

// Tests that a plain dot-product attention with grouped kv heads round-trips
// with no attributes printed (score = dot and layout = bhsd are defaults).
// CHECK-LABEL: func.func @attention_dot
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<1x32x?x128xbf16>, %[[K:[a-z0-9]+]]: tensor<1x8x?x128xbf16>, %[[V:[a-z0-9]+]]: tensor<1x8x?x128xbf16>
// CHECK:         attn.attention %[[Q]], %[[K]], %[[V]] : (tensor<1x32x?x128xbf16>, tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>) -> tensor<1x32x?x128xbf16>
func.func @attention_dot(%q: tensor<1x32x?x128xbf16>, %k: tensor<1x8x?x128xbf16>, %v: tensor<1x8x?x128xbf16>) -> tensor<1x32x?x128xbf16> {
  %0 = attn.attention %q, %k, %v : (tensor<1x32x?x128xbf16>, tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>) -> tensor<1x32x?x128xbf16>
  return %0 : tensor<1x32x?x128xbf16>
}

// -----

// Tests that a general score round-trips its [Dk, Dk] weight.
// CHECK-LABEL: func.func @attention_general
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<2x4x?x64xf32>, %[[K:[a-z0-9]+]]: tensor<2x4x?x64xf32>, %[[V:[a-z0-9]+]]: tensor<2x4x?x32xf32>, %[[W:[a-z0-9]+]]: tensor<64x64xf32>
// CHECK:         attn.attention %[[Q]], %[[K]], %[[V]] general(%[[W]]) {score = #attn.score<general>}
// CHECK-SAME:      : (tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x32xf32>, tensor<64x64xf32>) -> tensor<2x4x?x32xf32>
func.func @attention_general(%q: tensor<2x4x?x64xf32>, %k: tensor<2x4x?x64xf32>, %v: tensor<2x4x?x32xf32>, %w: tensor<64x64xf32>) -> tensor<2x4x?x32xf32> {
  %0 = attn.attention %q, %k, %v general(%w) {score = #attn.score<general>} : (tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x32xf32>, tensor<64x64xf32>) -> tensor<2x4x?x32xf32>
  return %0 : tensor<2x4x?x32xf32>
}

// -----

// Tests that an additive score round-trips Wq, Wk and a score vector va of
// shape [A].
// CHECK-LABEL: func.func @attention_additive
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<2x1x?x64xf32>, %[[K:[a-z0-9]+]]: tensor<2x1x?x64xf32>, %[[V:[a-z0-9]+]]: tensor<2x1x?x64xf32>, %[[WQ:[a-z0-9]+]]: tensor<16x64xf32>, %[[WK:[a-z0-9]+]]: tensor<16x64xf32>, %[[VA:[a-z0-9]+]]: tensor<16xf32>
// CHECK:         attn.attention %[[Q]], %[[K]], %[[V]] additive(%[[WQ]], %[[WK]], %[[VA]]) {score = #attn.score<additive>}
// CHECK-SAME:      : (tensor<2x1x?x64xf32>, tensor<2x1x?x64xf32>, tensor<2x1x?x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x1x?x64xf32>
func.func @attention_additive(%q: tensor<2x1x?x64xf32>, %k: tensor<2x1x?x64xf32>, %v: tensor<2x1x?x64xf32>, %wq: tensor<16x64xf32>, %wk: tensor<16x64xf32>, %va: tensor<16xf32>) -> tensor<2x1x?x64xf32> {
  %0 = attn.attention %q, %k, %v additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<2x1x?x64xf32>, tensor<2x1x?x64xf32>, tensor<2x1x?x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16xf32>) -> tensor<2x1x?x64xf32>
  return %0 : tensor<2x1x?x64xf32>
}

// -----

// Tests that an additive score round-trips a score vector va of shape [A, 1]
// (a Linear(A, 1) weight transposed).
// CHECK-LABEL: func.func @attention_additive_column
// CHECK-SAME:    %[[VA:[a-z0-9]+]]: tensor<16x1xf32>
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} additive(%{{.+}}, %{{.+}}, %[[VA]]) {score = #attn.score<additive>}
// CHECK-SAME:      tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<2x1x?x64xf32>
func.func @attention_additive_column(%q: tensor<2x1x?x64xf32>, %k: tensor<2x1x?x64xf32>, %v: tensor<2x1x?x64xf32>, %wq: tensor<16x64xf32>, %wk: tensor<16x64xf32>, %va: tensor<16x1xf32>) -> tensor<2x1x?x64xf32> {
  %0 = attn.attention %q, %k, %v additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<2x1x?x64xf32>, tensor<2x1x?x64xf32>, tensor<2x1x?x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<2x1x?x64xf32>
  return %0 : tensor<2x1x?x64xf32>
}

// -----

// Tests that a cosine score round-trips (it takes no operands).
// CHECK-LABEL: func.func @attention_cosine
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} {score = #attn.score<cosine>} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
func.func @attention_cosine(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32> {
  %0 = attn.attention %q, %k, %v {score = #attn.score<cosine>} : (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %0 : tensor<1x4x8x16xf32>
}

// -----

// Tests that two tensor biases, one full and one broadcast over heads and
// queries, round-trip in order.
// CHECK-LABEL: func.func @attention_bias
// CHECK-SAME:    %[[B0:[a-z0-9]+]]: tensor<1x4x?x?xf32>, %[[B1:[a-z0-9]+]]: tensor<1x1x1x?xf32>
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} bias(%[[B0]], %[[B1]]) :
// CHECK-SAME:      tensor<1x4x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x4x?x64xf32>
func.func @attention_bias(%q: tensor<1x4x?x64xf32>, %k: tensor<1x4x?x64xf32>, %v: tensor<1x4x?x64xf32>, %b0: tensor<1x4x?x?xf32>, %b1: tensor<1x1x1x?xf32>) -> tensor<1x4x?x64xf32> {
  %0 = attn.attention %q, %k, %v bias(%b0, %b1) : (tensor<1x4x?x64xf32>, tensor<1x4x?x64xf32>, tensor<1x4x?x64xf32>, tensor<1x4x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x4x?x64xf32>
  return %0 : tensor<1x4x?x64xf32>
}

// -----

// Tests that alibi with the standard slopes (no operand) round-trips.
// CHECK-LABEL: func.func @attention_alibi
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} {alibi} : (tensor<1x8x?x64xf16>, tensor<1x8x?x64xf16>, tensor<1x8x?x64xf16>) -> tensor<1x8x?x64xf16>
func.func @attention_alibi(%q: tensor<1x8x?x64xf16>, %k: tensor<1x8x?x64xf16>, %v: tensor<1x8x?x64xf16>) -> tensor<1x8x?x64xf16> {
  %0 = attn.attention %q, %k, %v {alibi} : (tensor<1x8x?x64xf16>, tensor<1x8x?x64xf16>, tensor<1x8x?x64xf16>) -> tensor<1x8x?x64xf16>
  return %0 : tensor<1x8x?x64xf16>
}

// -----

// Tests that alibi with explicit f32 [Hq] slopes round-trips.
// CHECK-LABEL: func.func @attention_alibi_slopes
// CHECK-SAME:    %[[SL:[a-z0-9]+]]: tensor<8xf32>
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} alibi_slopes(%[[SL]]) {alibi} : (tensor<1x8x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<8xf32>) -> tensor<1x8x?x64xf16>
func.func @attention_alibi_slopes(%q: tensor<1x8x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %slopes: tensor<8xf32>) -> tensor<1x8x?x64xf16> {
  %0 = attn.attention %q, %k, %v alibi_slopes(%slopes) {alibi} : (tensor<1x8x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<8xf32>) -> tensor<1x8x?x64xf16>
  return %0 : tensor<1x8x?x64xf16>
}

// -----

// Tests that i32 [B] key lengths round-trip.
// CHECK-LABEL: func.func @attention_key_lengths
// CHECK-SAME:    %[[LEN:[a-z0-9]+]]: tensor<?xi32>
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} key_lengths(%[[LEN]]) : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?xi32>) -> tensor<?x4x?x64xf32>
func.func @attention_key_lengths(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>, %len: tensor<?xi32>) -> tensor<?x4x?x64xf32> {
  %0 = attn.attention %q, %k, %v key_lengths(%len) : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?xi32>) -> tensor<?x4x?x64xf32>
  return %0 : tensor<?x4x?x64xf32>
}

// -----

// Tests that i1 masks round-trip with mask_drops giving each one's polarity.
// CHECK-LABEL: func.func @attention_masks
// CHECK-SAME:    %[[M0:[a-z0-9]+]]: tensor<?x1x1x?xi1>, %[[M1:[a-z0-9]+]]: tensor<?x?xi1>
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} masks(%[[M0]], %[[M1]]) {mask_drops = array<i1: true, false>}
// CHECK-SAME:      tensor<?x1x1x?xi1>, tensor<?x?xi1>) -> tensor<?x4x?x64xf32>
func.func @attention_masks(%q: tensor<?x4x?x64xf32>, %k: tensor<?x4x?x64xf32>, %v: tensor<?x4x?x64xf32>, %m0: tensor<?x1x1x?xi1>, %m1: tensor<?x?xi1>) -> tensor<?x4x?x64xf32> {
  %0 = attn.attention %q, %k, %v masks(%m0, %m1) {mask_drops = array<i1: true, false>} : (tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x4x?x64xf32>, tensor<?x1x1x?xi1>, tensor<?x?xi1>) -> tensor<?x4x?x64xf32>
  return %0 : tensor<?x4x?x64xf32>
}

// -----

// Tests that masks round-trip without mask_drops (every mask true = attend).
// CHECK-LABEL: func.func @attention_masks_attend
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} masks(%{{.+}}) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<8x8xi1>) -> tensor<1x4x8x64xf32>
func.func @attention_masks_attend(%q: tensor<1x4x8x64xf32>, %k: tensor<1x4x8x64xf32>, %v: tensor<1x4x8x64xf32>, %m: tensor<8x8xi1>) -> tensor<1x4x8x64xf32> {
  %0 = attn.attention %q, %k, %v masks(%m) : (tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<1x4x8x64xf32>, tensor<8x8xi1>) -> tensor<1x4x8x64xf32>
  return %0 : tensor<1x4x8x64xf32>
}

// -----

// Tests that the causal, window, scale and softcap attributes round-trip.
// CHECK-LABEL: func.func @attention_causal_window_scale_softcap
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} {causal, scale = 1.250000e-01 : f64, softcap = 5.000000e+01 : f64, window = array<i64: 4096, 0>} : (tensor<1x32x?x64xbf16>, tensor<1x8x?x64xbf16>, tensor<1x8x?x64xbf16>) -> tensor<1x32x?x64xbf16>
func.func @attention_causal_window_scale_softcap(%q: tensor<1x32x?x64xbf16>, %k: tensor<1x8x?x64xbf16>, %v: tensor<1x8x?x64xbf16>) -> tensor<1x32x?x64xbf16> {
  %0 = attn.attention %q, %k, %v {causal, window = array<i64: 4096, 0>, scale = 0.125 : f64, softcap = 50.0 : f64} : (tensor<1x32x?x64xbf16>, tensor<1x8x?x64xbf16>, tensor<1x8x?x64xbf16>) -> tensor<1x32x?x64xbf16>
  return %0 : tensor<1x32x?x64xbf16>
}

// -----

// Tests that the bshd layout round-trips: heads are dim 2 of q, k, v and the
// output.
// CHECK-LABEL: func.func @attention_bshd
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} {layout = #attn.layout<bshd>} : (tensor<2x?x32x128xf16>, tensor<2x?x8x128xf16>, tensor<2x?x8x64xf16>) -> tensor<2x?x32x64xf16>
func.func @attention_bshd(%q: tensor<2x?x32x128xf16>, %k: tensor<2x?x8x128xf16>, %v: tensor<2x?x8x64xf16>) -> tensor<2x?x32x64xf16> {
  %0 = attn.attention %q, %k, %v {layout = #attn.layout<bshd>} : (tensor<2x?x32x128xf16>, tensor<2x?x8x128xf16>, tensor<2x?x8x64xf16>) -> tensor<2x?x32x64xf16>
  return %0 : tensor<2x?x32x64xf16>
}

// -----

// Tests that the optional f32 [B, Hq, S] lse result round-trips.
// CHECK-LABEL: func.func @attention_lse
// CHECK:         %[[O:.+]], %[[LSE:.+]] = attn.attention %{{.+}}, %{{.+}}, %{{.+}} {causal} : (tensor<1x32x?x128xbf16>, tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>) -> (tensor<1x32x?x128xbf16>, tensor<1x32x?xf32>)
// CHECK:         return %[[O]], %[[LSE]]
func.func @attention_lse(%q: tensor<1x32x?x128xbf16>, %k: tensor<1x8x?x128xbf16>, %v: tensor<1x8x?x128xbf16>) -> (tensor<1x32x?x128xbf16>, tensor<1x32x?xf32>) {
  %0:2 = attn.attention %q, %k, %v {causal} : (tensor<1x32x?x128xbf16>, tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>) -> (tensor<1x32x?x128xbf16>, tensor<1x32x?xf32>)
  return %0#0, %0#1 : tensor<1x32x?x128xbf16>, tensor<1x32x?xf32>
}

// -----

// Tests that every optional operand group of attn.attention that can go
// together (general score, biases, alibi slopes, key lengths, masks) keeps its
// place and its operands in a round trip, with every attribute and lse in
// the bshd layout.
// CHECK-LABEL: func.func @attention_everything
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<?x?x8x64xf32>, %[[K:[a-z0-9]+]]: tensor<?x?x2x64xf32>, %[[V:[a-z0-9]+]]: tensor<?x?x2x32xf32>, %[[W:[a-z0-9]+]]: tensor<64x64xf32>, %[[B0:[a-z0-9]+]]: tensor<?x8x?x?xf32>, %[[B1:[a-z0-9]+]]: tensor<?xf32>, %[[SL:[a-z0-9]+]]: tensor<8xf32>, %[[LEN:[a-z0-9]+]]: tensor<?xi32>, %[[M0:[a-z0-9]+]]: tensor<?x1x1x?xi1>, %[[M1:[a-z0-9]+]]: tensor<?x?xi1>
// CHECK:         %{{.+}}, %{{.+}} = attn.attention %[[Q]], %[[K]], %[[V]] general(%[[W]]) bias(%[[B0]], %[[B1]]) alibi_slopes(%[[SL]]) key_lengths(%[[LEN]]) masks(%[[M0]], %[[M1]])
// CHECK-SAME:      {alibi, causal, layout = #attn.layout<bshd>, mask_drops = array<i1: false, true>, scale = 1.000000e+00 : f64, score = #attn.score<general>, softcap = 3.000000e+01 : f64, window = array<i64: 128, 0>}
// CHECK-SAME:      : (tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x32xf32>, tensor<64x64xf32>, tensor<?x8x?x?xf32>, tensor<?xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?x1x1x?xi1>, tensor<?x?xi1>) -> (tensor<?x?x8x32xf32>, tensor<?x8x?xf32>)
func.func @attention_everything(%q: tensor<?x?x8x64xf32>, %k: tensor<?x?x2x64xf32>, %v: tensor<?x?x2x32xf32>, %w: tensor<64x64xf32>, %b0: tensor<?x8x?x?xf32>, %b1: tensor<?xf32>, %slopes: tensor<8xf32>, %len: tensor<?xi32>, %m0: tensor<?x1x1x?xi1>, %m1: tensor<?x?xi1>) -> (tensor<?x?x8x32xf32>, tensor<?x8x?xf32>) {
  %0:2 = attn.attention %q, %k, %v general(%w) bias(%b0, %b1) alibi_slopes(%slopes) key_lengths(%len) masks(%m0, %m1) {score = #attn.score<general>, layout = #attn.layout<bshd>, scale = 1.0 : f64, softcap = 30.0 : f64, alibi, causal, window = array<i64: 128, 0>, mask_drops = array<i1: false, true>} : (tensor<?x?x8x64xf32>, tensor<?x?x2x64xf32>, tensor<?x?x2x32xf32>, tensor<64x64xf32>, tensor<?x8x?x?xf32>, tensor<?xf32>, tensor<8xf32>, tensor<?xi32>, tensor<?x1x1x?xi1>, tensor<?x?xi1>) -> (tensor<?x?x8x32xf32>, tensor<?x8x?xf32>)
  return %0#0, %0#1 : tensor<?x?x8x32xf32>, tensor<?x8x?xf32>
}

// -----

// Tests that the additive operand group keeps its place before the biases,
// slopes, key lengths and masks in a round trip.
// CHECK-LABEL: func.func @attention_additive_everything
// CHECK-SAME:    %[[WQ:[a-z0-9]+]]: tensor<16x64xf32>, %[[WK:[a-z0-9]+]]: tensor<16x64xf32>, %[[VA:[a-z0-9]+]]: tensor<16x1xf32>, %[[B:[a-z0-9]+]]: tensor<1x1x1x?xf32>, %[[LEN:[a-z0-9]+]]: tensor<2xi32>, %[[M:[a-z0-9]+]]: tensor<2x1x1x?xi1>
// CHECK:         attn.attention %{{.+}}, %{{.+}}, %{{.+}} additive(%[[WQ]], %[[WK]], %[[VA]]) bias(%[[B]]) key_lengths(%[[LEN]]) masks(%[[M]])
// CHECK-SAME:      {mask_drops = array<i1: true>, score = #attn.score<additive>}
func.func @attention_additive_everything(%q: tensor<2x4x?x64xf32>, %k: tensor<2x4x?x64xf32>, %v: tensor<2x4x?x64xf32>, %wq: tensor<16x64xf32>, %wk: tensor<16x64xf32>, %va: tensor<16x1xf32>, %b: tensor<1x1x1x?xf32>, %len: tensor<2xi32>, %m: tensor<2x1x1x?xi1>) -> tensor<2x4x?x64xf32> {
  %0 = attn.attention %q, %k, %v additive(%wq, %wk, %va) bias(%b) key_lengths(%len) masks(%m) {score = #attn.score<additive>, mask_drops = array<i1: true>} : (tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>, tensor<16x1xf32>, tensor<1x1x1x?xf32>, tensor<2xi32>, tensor<2x1x1x?xi1>) -> tensor<2x4x?x64xf32>
  return %0 : tensor<2x4x?x64xf32>
}

// -----

// Tests that the tile ops of attn-tile-attention round-trip: dot scores with
// scale and softcap, the position mask at an offset, P·V into the
// accumulator, and normalization with and without lse.
// CHECK-LABEL: func.func @tile_ops
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<?x64xbf16>, %[[K:[a-z0-9]+]]: tensor<?x64xbf16>, %[[V:[a-z0-9]+]]: tensor<?x32xbf16>, %[[P0:[a-z0-9]+]]: index, %[[J0:[a-z0-9]+]]: index, %[[ACC:[a-z0-9]+]]: tensor<?x32xf32>, %[[L:[a-z0-9]+]]: tensor<?xf32>, %[[M:[a-z0-9]+]]: tensor<?xf32>
// CHECK:         %[[S:.+]] = attn.tile_scores %[[Q]], %[[K]] {scale = 1.250000e-01 : f64, softcap = 3.000000e+01 : f64} : (tensor<?x64xbf16>, tensor<?x64xbf16>) -> tensor<?x?xf32>
// CHECK:         %[[MS:.+]] = attn.tile_mask %[[S]][%[[P0]], %[[J0]]] {causal, window = array<i64: 4, 0>} : tensor<?x?xf32>
// CHECK:         attn.tile_mask %[[S]][%[[P0]], %[[J0]]] rows %[[J0]] mod %[[P0]] {causal} : tensor<?x?xf32>
// CHECK:         %[[A:.+]] = attn.tile_accumulate %[[MS]], %[[V]], %[[ACC]] : (tensor<?x?xf32>, tensor<?x32xbf16>, tensor<?x32xf32>) -> tensor<?x32xf32>
// CHECK:         %[[P:.+]], %{{.+}}, %{{.+}}, %[[ALPHA:.+]] = attn.tile_softmax_update %[[MS]], %[[M]], %[[L]] : tensor<?x?xf32>, tensor<?xf32>
// CHECK:         attn.tile_accumulate %[[P]], %[[V]], %[[ACC]] rescale(%[[ALPHA]]) : (tensor<?x?xf32>, tensor<?x32xbf16>, tensor<?x32xf32>, tensor<?xf32>) -> tensor<?x32xf32>
// CHECK:         %[[O:.+]], %[[LSE:.+]] = attn.tile_normalize %[[A]], %[[L]] lse(%[[M]]) : (tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x32xbf16>, tensor<?xf32>)
// CHECK:         attn.tile_normalize %[[A]], %[[L]] : (tensor<?x32xf32>, tensor<?xf32>) -> tensor<?x32xf32>
func.func @tile_ops(%q: tensor<?x64xbf16>, %k: tensor<?x64xbf16>, %v: tensor<?x32xbf16>, %p0: index, %j0: index, %acc: tensor<?x32xf32>, %l: tensor<?xf32>, %m: tensor<?xf32>) -> (tensor<?x32xbf16>, tensor<?xf32>, tensor<?x32xf32>) {
  %s = attn.tile_scores %q, %k {scale = 0.125 : f64, softcap = 30.0 : f64} : (tensor<?x64xbf16>, tensor<?x64xbf16>) -> tensor<?x?xf32>
  %ms = attn.tile_mask %s [%p0, %j0] {causal, window = array<i64: 4, 0>} : tensor<?x?xf32>
  %packed = attn.tile_mask %s [%p0, %j0] rows %j0 mod %p0 {causal} : tensor<?x?xf32>
  %a = attn.tile_accumulate %ms, %v, %acc : (tensor<?x?xf32>, tensor<?x32xbf16>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %p, %m1, %l1, %alpha = attn.tile_softmax_update %ms, %m, %l : tensor<?x?xf32>, tensor<?xf32>
  %a1 = attn.tile_accumulate %p, %v, %acc rescale(%alpha) : (tensor<?x?xf32>, tensor<?x32xbf16>, tensor<?x32xf32>, tensor<?xf32>) -> tensor<?x32xf32>
  %o, %lse = attn.tile_normalize %a, %l lse(%m) : (tensor<?x32xf32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x32xbf16>, tensor<?xf32>)
  %o2 = attn.tile_normalize %a, %l : (tensor<?x32xf32>, tensor<?xf32>) -> tensor<?x32xf32>
  return %o, %lse, %o2 : tensor<?x32xbf16>, tensor<?xf32>, tensor<?x32xf32>
}

// -----

// Tests that tile_scores keeps the general and additive weight groups and
// the score kind in a round trip, on static tiles.
// CHECK-LABEL: func.func @tile_scores_kinds
// CHECK-SAME:    %[[Q:[a-z0-9]+]]: tensor<16x8xf32>, %[[K:[a-z0-9]+]]: tensor<32x8xf32>, %[[W:[a-z0-9]+]]: tensor<8x8xf32>, %[[WQ:[a-z0-9]+]]: tensor<4x8xf32>, %[[WK:[a-z0-9]+]]: tensor<4x8xf32>, %[[VA:[a-z0-9]+]]: tensor<4xf32>
// CHECK:         attn.tile_scores %[[Q]], %[[K]] general(%[[W]]) {score = #attn.score<general>} : (tensor<16x8xf32>, tensor<32x8xf32>, tensor<8x8xf32>) -> tensor<16x32xf32>
// CHECK:         attn.tile_scores %[[Q]], %[[K]] additive(%[[WQ]], %[[WK]], %[[VA]]) {score = #attn.score<additive>} : (tensor<16x8xf32>, tensor<32x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<16x32xf32>
// CHECK:         attn.tile_scores %[[Q]], %[[K]] {score = #attn.score<cosine>} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
func.func @tile_scores_kinds(%q: tensor<16x8xf32>, %k: tensor<32x8xf32>, %w: tensor<8x8xf32>, %wq: tensor<4x8xf32>, %wk: tensor<4x8xf32>, %va: tensor<4xf32>) -> (tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %0 = attn.tile_scores %q, %k general(%w) {score = #attn.score<general>} : (tensor<16x8xf32>, tensor<32x8xf32>, tensor<8x8xf32>) -> tensor<16x32xf32>
  %1 = attn.tile_scores %q, %k additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<16x8xf32>, tensor<32x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<16x32xf32>
  %2 = attn.tile_scores %q, %k {score = #attn.score<cosine>} : (tensor<16x8xf32>, tensor<32x8xf32>) -> tensor<16x32xf32>
  return %0, %1, %2 : tensor<16x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// Tests the assembly of attn.tile_transform, plain and with packed rows.
// CHECK-LABEL: func.func @tile_transform
// CHECK: attn.tile_transform %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] in[%{{.+}}, %{{.+}}] bias(%{{.+}} : tensor<1x4x?x?xf16>) alibi_slopes(%{{.+}} : tensor<4xf32>) masks(%{{.+}} : tensor<?x?xi1>) {mask_drops = array<i1: true>} : tensor<?x?xf32>
// CHECK: attn.tile_transform %{{.+}}[%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}] in[%{{.+}}, %{{.+}}] packed %{{.+}} masks(%{{.+}} : tensor<?x?xi1>) : tensor<?x?xf32>
func.func @tile_transform(%s: tensor<?x?xf32>, %bias: tensor<1x4x?x?xf16>, %slopes: tensor<4xf32>, %m: tensor<?x?xi1>, %i: index) -> (tensor<?x?xf32>, tensor<?x?xf32>) {
  %0 = attn.tile_transform %s [%i, %i, %i, %i] in [%i, %i] bias(%bias : tensor<1x4x?x?xf16>) alibi_slopes(%slopes : tensor<4xf32>) masks(%m : tensor<?x?xi1>) {mask_drops = array<i1: true>} : tensor<?x?xf32>
  %1 = attn.tile_transform %s [%i, %i, %i, %i] in [%i, %i] packed %i masks(%m : tensor<?x?xi1>) : tensor<?x?xf32>
  return %0, %1 : tensor<?x?xf32>, tensor<?x?xf32>
}
