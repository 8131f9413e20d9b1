//===- SoftmaxShift.h - The kernels' shift of the online softmax -*- C++ -*-===//
//
// The CPU and GPU kernels compute p = exp2((s - m) - k) with k = ceil(log2 T),
// so that l = sum p <= 1 and O = sum p·v stays within f32 wherever the output
// does, and write lse = (m + (k + log2 l)) · ln 2. k is a whole number, so
// 2^-k is exact, and m is subtracted before k (m + k would round away the low
// bits of m), so a row that sees one key gets its score as its lse.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_SOFTMAXSHIFT_H
#define ATTN_TRANSFORMS_SOFTMAXSHIFT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// k = ceil(log2 T) = 64 - clz(T - 1) as f32, 0 for T <= 1, from the key
/// length `keys` (index). llvm.intr.ctlz, which both the CPU and the PTX
/// lowering take as it is.
inline Value softmaxShift(OpBuilder &b, Location loc, Value keys) {
  Value one = b.create<arith::ConstantIndexOp>(loc, 1);
  Value keysLess1 = b.create<arith::IndexCastUIOp>(
      loc, b.getI64Type(),
      b.create<arith::SubIOp>(loc, b.create<arith::MaxSIOp>(loc, keys, one),
                              one));
  Value zeros = b.create<LLVM::CountLeadingZerosOp>(
      loc, b.getI64Type(), keysLess1, /*is_zero_poison=*/false);
  return b.create<arith::UIToFPOp>(
      loc, b.getF32Type(),
      b.create<arith::SubIOp>(
          loc, b.create<arith::ConstantIntOp>(loc, 64, 64), zeros));
}

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_SOFTMAXSHIFT_H
