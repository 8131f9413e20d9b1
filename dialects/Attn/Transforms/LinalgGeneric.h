//===- LinalgGeneric.h - One-result linalg.generic builder ------*- C++ -*-===//
//
// The linalg.generic the tiling and its portable lowering build most: one
// output, a body that returns the value to yield.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_LINALGGENERIC_H
#define ATTN_TRANSFORMS_LINALGGENERIC_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::attn {

/// A linalg.generic of `iterators` writing `init`, reading `inputs` through
/// `maps` (the output's map last); `body` gets the block's arguments and
/// returns the value it yields.
inline Value
buildGeneric(OpBuilder &b, Location loc, ValueRange inputs, Value init,
             ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
             function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  return b
      .create<linalg::GenericOp>(
          loc, init.getType(), inputs, ValueRange{init}, maps, iterators,
          [&](OpBuilder &nested, Location at, ValueRange args) {
            nested.create<linalg::YieldOp>(at, body(nested, at, args));
          })
      .getResult(0);
}

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_LINALGGENERIC_H
