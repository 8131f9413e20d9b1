// RUN: attn-opt %s --attn-approximate-math --split-input-file | FileCheck %s --check-prefix=APPROX
// RUN: attn-opt %s --attn-lower-to-llvm --split-input-file | FileCheck %s --check-prefix=LLVM

// Tests that exp and tanh on vectors become inline polynomials (no math op
// left, so no per-lane libm call), and that the whole pipeline leaves only
// the LLVM dialect: the bare-pointer memref convention, vector FMAs,
// bf16 conversions as integer code.

// APPROX-LABEL: func.func @exp_tanh
// APPROX-NOT: math.exp
// APPROX-NOT: math.tanh
// APPROX: math.fma
// APPROX: return
// LLVM-LABEL: llvm.func @exp_tanh
// LLVM-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: i64)
// LLVM-NOT: unrealized_conversion_cast
// LLVM-NOT: math.
// LLVM: llvm.intr.fma
// LLVM: llvm.return
func.func @exp_tanh(%buffer: memref<64xf32>, %i: index) {
  %zero = arith.constant 0.0 : f32
  %x = vector.transfer_read %buffer[%i], %zero {in_bounds = [true]} : memref<64xf32>, vector<8xf32>
  %e = math.exp %x : vector<8xf32>
  %t = math.tanh %e : vector<8xf32>
  vector.transfer_write %t, %buffer[%i] {in_bounds = [true]} : vector<8xf32>, memref<64xf32>
  return
}

// -----

// LLVM-LABEL: llvm.func @to_bf16
// LLVM-NOT: arith.truncf
// LLVM: llvm.lshr
// LLVM: llvm.trunc %{{.*}} : i32 to i16
func.func @to_bf16(%x: f32) -> bf16 {
  %y = arith.truncf %x : f32 to bf16
  return %y : bf16
}
