// RUN: attn-opt %s --canonicalize --split-input-file | FileCheck %s
// RUN: attn-opt %s --canonicalize --split-input-file --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// The folds and canonicalization patterns of the attn dialect: a scale of a
// scale becomes one scale, a scale by 1 folds away, a transpose of a
// transpose composes and an identity transpose folds away. The negative cases
// check that nothing else changes.

// Tests that a scale of a scale becomes one scale by the product.
// CHECK-LABEL: func.func @scale_chain
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<1x12x?x?xf32>
// CHECK:         %[[S:.+]] = attn.scale %[[X]], 1.250000e-01 : tensor<1x12x?x?xf32>
// CHECK-NOT:     attn.scale
// CHECK:         return %[[S]]
func.func @scale_chain(%x: tensor<1x12x?x?xf32>) -> tensor<1x12x?x?xf32> {
  %0 = attn.scale %x, 0.5 : tensor<1x12x?x?xf32>
  %1 = attn.scale %0, 0.25 : tensor<1x12x?x?xf32>
  return %1 : tensor<1x12x?x?xf32>
}

// -----

// Tests that a chain of three scales becomes one, signs included.
// CHECK-LABEL: func.func @scale_chain_of_three
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4x8xbf16>
// CHECK:         %[[S:.+]] = attn.scale %[[X]], -1.200000e+01 : tensor<4x8xbf16>
// CHECK-NOT:     attn.scale
// CHECK:         return %[[S]]
func.func @scale_chain_of_three(%x: tensor<4x8xbf16>) -> tensor<4x8xbf16> {
  %0 = attn.scale %x, 2.0 : tensor<4x8xbf16>
  %1 = attn.scale %0, -3.0 : tensor<4x8xbf16>
  %2 = attn.scale %1, 2.0 : tensor<4x8xbf16>
  return %2 : tensor<4x8xbf16>
}

// -----

// Tests that a combined scale carries the locations of both scales, fused
// (the LOC run prints locations).
// CHECK-LABEL: func.func @scale_chain_location
// CHECK:         attn.scale %{{.+}}, 6.000000e+00
// LOC-LABEL:   func.func @scale_chain_location
// LOC:           attn.scale {{.+}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG:       #[[FUSED]] = loc(fused[#[[INNER:loc[0-9]*]], #[[OUTER:loc[0-9]*]]])
// LOC-DAG:       #[[INNER]] = loc("inner")
// LOC-DAG:       #[[OUTER]] = loc("outer")
func.func @scale_chain_location(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = attn.scale %x, 2.0 : tensor<8xf32> loc("inner")
  %1 = attn.scale %0, 3.0 : tensor<8xf32> loc("outer")
  return %1 : tensor<8xf32>
}

// -----

// Tests that a scale by 1 folds away.
// CHECK-LABEL: func.func @scale_by_one
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x64xf16>
// CHECK-NOT:     attn.scale
// CHECK:         return %[[X]]
func.func @scale_by_one(%x: tensor<?x64xf16>) -> tensor<?x64xf16> {
  %0 = attn.scale %x, 1.0 : tensor<?x64xf16>
  return %0 : tensor<?x64xf16>
}

// -----

// Tests that a chain whose factors multiply to 1 folds away entirely.
// CHECK-LABEL: func.func @scale_chain_to_one
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8xf32>
// CHECK-NOT:     attn.scale
// CHECK:         return %[[X]]
func.func @scale_chain_to_one(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = attn.scale %x, 8.0 : tensor<8xf32>
  %1 = attn.scale %0, 0.125 : tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// Tests that a scale by 1 inside a chain disappears and the rest combines.
// CHECK-LABEL: func.func @scale_chain_through_one
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8xf32>
// CHECK:         %[[S:.+]] = attn.scale %[[X]], 6.000000e+00 : tensor<8xf32>
// CHECK-NOT:     attn.scale
// CHECK:         return %[[S]]
func.func @scale_chain_through_one(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = attn.scale %x, 2.0 : tensor<8xf32>
  %1 = attn.scale %0, 1.0 : tensor<8xf32>
  %2 = attn.scale %1, 3.0 : tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// Tests that an inner scale with another use stays for that use while the
// outer one reads the input directly.
// CHECK-LABEL: func.func @scale_chain_shared_inner
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8xf32>
// CHECK-DAG:     %[[INNER:.+]] = attn.scale %[[X]], 2.000000e+00 : tensor<8xf32>
// CHECK-DAG:     %[[OUTER:.+]] = attn.scale %[[X]], 6.000000e+00 : tensor<8xf32>
// CHECK:         return %[[INNER]], %[[OUTER]]
func.func @scale_chain_shared_inner(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = attn.scale %x, 2.0 : tensor<8xf32>
  %1 = attn.scale %0, 3.0 : tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Tests that a scale by a constant other than 1 stays, -1 and 0 included.
// CHECK-LABEL: func.func @scale_not_one
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8xf32>
// CHECK:         %[[A:.+]] = attn.scale %[[X]], -1.000000e+00 : tensor<8xf32>
// CHECK:         %[[B:.+]] = attn.scale %[[X]], 0.000000e+00 : tensor<8xf32>
// CHECK:         %[[C:.+]] = attn.scale %[[X]], 1.0000000000000002 : tensor<8xf32>
// CHECK:         return %[[A]], %[[B]], %[[C]]
func.func @scale_not_one(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = attn.scale %x, -1.0 : tensor<8xf32>
  %1 = attn.scale %x, 0.0 : tensor<8xf32>
  %2 = attn.scale %x, 1.0000000000000002 : tensor<8xf32>
  return %0, %1, %2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Tests that scales separated by another op do not combine.
// CHECK-LABEL: func.func @scale_across_other_op
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8xf32>
// CHECK:         %[[A:.+]] = attn.scale %[[X]], 2.000000e+00 : tensor<8xf32>
// CHECK:         %[[E:.+]] = attn.exp %[[A]] : tensor<8xf32>
// CHECK:         %[[B:.+]] = attn.scale %[[E]], 3.000000e+00 : tensor<8xf32>
// CHECK:         return %[[B]]
func.func @scale_across_other_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = attn.scale %x, 2.0 : tensor<8xf32>
  %1 = attn.exp %0 : tensor<8xf32>
  %2 = attn.scale %1, 3.0 : tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// Tests that a transpose of a transpose composes into one transpose.
// CHECK-LABEL: func.func @transpose_chain
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3x4xf32>
// CHECK:         %[[T:.+]] = attn.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NOT:     attn.transpose
// CHECK:         return %[[T]]
func.func @transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = attn.transpose %0 {permutation = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %1 : tensor<4x2x3xf32>
}

// -----

// Tests that the head split and merge of an exporter, [B, S, H, D] to
// [B, H, S, D] and back, cancels out.
// CHECK-LABEL: func.func @transpose_chain_to_identity
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x?x12x64xf32>
// CHECK-NOT:     attn.transpose
// CHECK:         return %[[X]]
func.func @transpose_chain_to_identity(%x: tensor<?x?x12x64xf32>) -> tensor<?x?x12x64xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 0, 2, 1, 3>} : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
  %1 = attn.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<?x12x?x64xf32> -> tensor<?x?x12x64xf32>
  return %1 : tensor<?x?x12x64xf32>
}

// -----

// Tests that three different transposes compose into one, with an identity
// transpose at the end folded away.
// CHECK-LABEL: func.func @transpose_chain_of_three
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3x4x5xf32>
// CHECK:         %[[T:.+]] = attn.transpose %[[X]] {permutation = array<i64: 0, 1, 3, 2>} : tensor<2x3x4x5xf32> -> tensor<2x3x5x4xf32>
// CHECK-NOT:     attn.transpose
// CHECK:         return %[[T]]
func.func @transpose_chain_of_three(%x: tensor<2x3x4x5xf32>) -> tensor<2x3x5x4xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 1, 2, 3, 0>} : tensor<2x3x4x5xf32> -> tensor<3x4x5x2xf32>
  %1 = attn.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : tensor<3x4x5x2xf32> -> tensor<3x5x4x2xf32>
  %2 = attn.transpose %1 {permutation = array<i64: 3, 0, 1, 2>} : tensor<3x5x4x2xf32> -> tensor<2x3x5x4xf32>
  %3 = attn.transpose %2 {permutation = array<i64: 0, 1, 2, 3>} : tensor<2x3x5x4xf32> -> tensor<2x3x5x4xf32>
  return %3 : tensor<2x3x5x4xf32>
}

// -----

// Tests that an identity transpose folds away.
// CHECK-LABEL: func.func @transpose_identity
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x12x?x64xf32>
// CHECK-NOT:     attn.transpose
// CHECK:         return %[[X]]
func.func @transpose_identity(%x: tensor<?x12x?x64xf32>) -> tensor<?x12x?x64xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 0, 1, 2, 3>} : tensor<?x12x?x64xf32> -> tensor<?x12x?x64xf32>
  return %0 : tensor<?x12x?x64xf32>
}

// -----

// Tests that a transpose that only swaps two equal dims is not mistaken for
// the identity: the permutation decides, not the shape.
// CHECK-LABEL: func.func @transpose_square
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<8x8xf32>
// CHECK:         %[[T:.+]] = attn.transpose %[[X]] {permutation = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK:         return %[[T]]
func.func @transpose_square(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 1, 0>} : tensor<8x8xf32> -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// Tests that an inner transpose with another use stays for that use while
// the outer one reads the input directly.
// CHECK-LABEL: func.func @transpose_chain_shared_inner
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3x4xf32>
// CHECK-DAG:     %[[INNER:.+]] = attn.transpose %[[X]] {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
// CHECK-DAG:     %[[OUTER:.+]] = attn.transpose %[[X]] {permutation = array<i64: 2, 0, 1>} : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK:         return %[[INNER]], %[[OUTER]]
func.func @transpose_chain_shared_inner(%x: tensor<2x3x4xf32>) -> (tensor<3x2x4xf32>, tensor<4x2x3xf32>) {
  %0 = attn.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = attn.transpose %0 {permutation = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32>
  return %0, %1 : tensor<3x2x4xf32>, tensor<4x2x3xf32>
}

// -----

// Tests that transposes separated by another op do not compose.
// CHECK-LABEL: func.func @transpose_across_other_op
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<2x3xf32>
// CHECK:         %[[A:.+]] = attn.transpose %[[X]] {permutation = array<i64: 1, 0>}
// CHECK:         %[[N:.+]] = attn.neg %[[A]]
// CHECK:         %[[B:.+]] = attn.transpose %[[N]] {permutation = array<i64: 1, 0>}
// CHECK:         return %[[B]]
func.func @transpose_across_other_op(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %1 = attn.neg %0 : tensor<3x2xf32>
  %2 = attn.transpose %1 {permutation = array<i64: 1, 0>} : tensor<3x2xf32> -> tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}

// -----

// Tests that a transpose of a scale and a scale of a transpose are left as
// they are: the patterns do not reorder ops.
// CHECK-LABEL: func.func @transpose_and_scale
// CHECK:         attn.scale
// CHECK:         attn.transpose
// CHECK:         attn.scale
func.func @transpose_and_scale(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = attn.scale %x, 2.0 : tensor<2x3xf32>
  %1 = attn.transpose %0 {permutation = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<3x2xf32>
  %2 = attn.scale %1, 2.0 : tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}

// -----

// Tests that a composed transpose carries the locations of both transposes,
// fused (the LOC run prints locations).
// CHECK-LABEL: func.func @transpose_chain_location
// CHECK:         attn.transpose %{{.+}} {permutation = array<i64: 2, 0, 1>}
// LOC-LABEL:   func.func @transpose_chain_location
// LOC:           attn.transpose {{.+}} loc(#[[FUSED:loc[0-9]*]])
// LOC-DAG:       #[[FUSED]] = loc(fused[#[[INNER:loc[0-9]*]], #[[OUTER:loc[0-9]*]]])
// LOC-DAG:       #[[INNER]] = loc("inner")
// LOC-DAG:       #[[OUTER]] = loc("outer")
func.func @transpose_chain_location(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  %0 = attn.transpose %x {permutation = array<i64: 1, 0, 2>} : tensor<2x3x4xf32> -> tensor<3x2x4xf32> loc("inner")
  %1 = attn.transpose %0 {permutation = array<i64: 2, 1, 0>} : tensor<3x2x4xf32> -> tensor<4x2x3xf32> loc("outer")
  return %1 : tensor<4x2x3xf32>
}
