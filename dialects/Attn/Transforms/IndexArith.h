//===- IndexArith.h - The semantics rules on MLIR index values --*- C++ -*-===//
//
// The arithmetic Attn/IR/AttnSemantics.h evaluates its rules in, for passes
// that emit them as `index` IR (attn-tile-attention's loop bounds and tile
// tests, attn-lower-tile-ops' per-element visibility). Folds as it builds.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TRANSFORMS_INDEXARITH_H
#define ATTN_TRANSFORMS_INDEXARITH_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"

namespace mlir::attn {

/// The semantics rules (Attn/IR/AttnSemantics.h) on `index` values. Sizes
/// and heads are non-negative; positions may not be (p - L), so min, max
/// and the comparisons are signed.
struct IndexArith {
  OpBuilder &b;
  Location loc;
  Value constant(int64_t value) {
    return b.create<arith::ConstantIndexOp>(loc, value);
  }
  Value add(Value x, Value y) {
    return b.createOrFold<arith::AddIOp>(loc, x, y);
  }
  Value sub(Value x, Value y) {
    return b.createOrFold<arith::SubIOp>(loc, x, y);
  }
  Value mul(Value x, Value y) {
    return b.createOrFold<arith::MulIOp>(loc, x, y);
  }
  Value div(Value x, Value y) {
    return b.createOrFold<arith::DivUIOp>(loc, x, y);
  }
  Value rem(Value x, Value y) {
    return b.createOrFold<arith::RemUIOp>(loc, x, y);
  }
  Value min(Value x, Value y) {
    return b.createOrFold<arith::MinSIOp>(loc, x, y);
  }
  Value max(Value x, Value y) {
    return b.createOrFold<arith::MaxSIOp>(loc, x, y);
  }
  Value lt(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, x, y);
  }
  Value le(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, x, y);
  }
  Value eq(Value x, Value y) {
    return b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, x, y);
  }
  Value logicalAnd(Value x, Value y) {
    return b.createOrFold<arith::AndIOp>(loc, x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return b.createOrFold<arith::SelectOp>(loc, condition, x, y);
  }
};

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_INDEXARITH_H
