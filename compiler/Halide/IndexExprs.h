//===- IndexExprs.h - The semantics rules on Halide expressions -*- C++ -*-===//
//
// The arithmetic Attn/IR/AttnSemantics.h evaluates its rules in, for the
// Halide algorithms (the attention's per-element visibility, window_mask).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_HALIDE_INDEXEXPRS_H
#define ATTNC_HALIDE_INDEXEXPRS_H

#include "Attn/IR/AttnSemantics.h"

#include <Halide.h>

#include <cstdint>

namespace attnc {

/// The semantics rules (Attn/IR/AttnSemantics.h) on Halide expressions:
/// int64 when `wide` (window bounds reach 2^32 here), else int32, which
/// holds every position difference of Halide's int32 sizes when no window
/// bound is involved.
struct IndexExprs {
  using Expr = Halide::Expr;
  bool wide = true;
  Expr index(Expr e) const { return wide ? Halide::cast<int64_t>(e) : e; }
  Expr constant(int64_t value) {
    return wide ? Expr(value) : Expr(int32_t(value));
  }
  Expr add(Expr x, Expr y) { return x + y; }
  Expr sub(Expr x, Expr y) { return x - y; }
  Expr mul(Expr x, Expr y) { return x * y; }
  Expr div(Expr x, Expr y) { return x / y; }
  Expr select(Expr c, Expr x, Expr y) { return Halide::select(c, x, y); }
  Expr min(Expr x, Expr y) { return Halide::min(x, y); }
  Expr max(Expr x, Expr y) { return Halide::max(x, y); }
  Expr lt(Expr x, Expr y) { return x < y; }
  Expr le(Expr x, Expr y) { return x <= y; }
  Expr logicalAnd(Expr x, Expr y) { return x && y; }
};

} // namespace attnc

#endif // ATTNC_HALIDE_INDEXEXPRS_H
