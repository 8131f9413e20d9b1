// RUN: attn-opt %s --attn-approximate-math | FileCheck %s

// Tests that f32 sin and cos, scalar and vector, take their argument reduced
// by 2π in f64 (x - 2π·n, n = x / 2π rounded by adding and subtracting
// 1.5 · 2^52) before upstream's polynomial, which leaves no math.sin or
// math.cos behind; exp takes the polynomial alone.

// CHECK-LABEL: func.func @cos_vector(
// CHECK-SAME: %[[X:.*]]: vector<16xf32>
// CHECK: %[[WIDE:.*]] = arith.extf %[[X]] : vector<16xf32> to vector<16xf64>
// CHECK: %[[TURNS:.*]] = arith.mulf %[[WIDE]], %{{.*}} : vector<16xf64>
// CHECK: %[[UP:.*]] = arith.addf %[[TURNS]], %[[MAGIC:.*]] : vector<16xf64>
// CHECK: %[[N:.*]] = arith.subf %[[UP]], %[[MAGIC]] : vector<16xf64>
// CHECK: %[[WHOLE:.*]] = arith.mulf %[[N]], %{{.*}} : vector<16xf64>
// CHECK: %[[REDUCED:.*]] = arith.subf %[[WIDE]], %[[WHOLE]] : vector<16xf64>
// CHECK: arith.truncf %[[REDUCED]] : vector<16xf64> to vector<16xf32>
// CHECK-NOT: math.cos
// CHECK: return
func.func @cos_vector(%x: vector<16xf32>) -> vector<16xf32> {
  %c = math.cos %x : vector<16xf32>
  return %c : vector<16xf32>
}

// CHECK-LABEL: func.func @sin_scalar(
// CHECK-DAG: arith.constant 6.2831853071795862 : f64
// CHECK-DAG: arith.constant 0x4338000000000000 : f64
// CHECK-DAG: arith.constant 0.15915494309189535 : f64
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK-NOT: math.sin
// CHECK: return
func.func @sin_scalar(%x: f32) -> f32 {
  %s = math.sin %x : f32
  return %s : f32
}

// CHECK-LABEL: func.func @exp_scalar(
// CHECK-NOT: arith.extf
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp_scalar(%x: f32) -> f32 {
  %e = math.exp %x : f32
  return %e : f32
}
