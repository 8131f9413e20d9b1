//===- ApproximateMath.cpp - attn-approximate-math ------------------------===//

#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::attn {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

constexpr double kPi = 3.14159265358979323846;

/// Replaces the f32 argument x of `op` (a sin or cos) by x - 2πn, n the
/// integer nearest x / 2π, computed in f64: upstream's approximation reduces
/// by an f32 π/2 and so loses about 5e-9 |x| (4.7e-4 at a rotary table's
/// position 8192). The f64 product n · 2π is exact to 1e-9 up to |x| of
/// about 1e7, past any position a model reaches.
void reduceArgument(Operation *op) {
  Value x = op->getOperand(0);
  Type f32 = getElementTypeOrSelf(x.getType());
  if (!f32.isF32())
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  Type f64 = b.getF64Type();
  Type wide = f64;
  if (auto vector = dyn_cast<VectorType>(x.getType()))
    wide = vector.clone(f64);
  auto constant = [&](double value) -> Value {
    if (auto vector = dyn_cast<VectorType>(wide))
      return b.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(vector, b.getF64FloatAttr(value)));
    return b.create<arith::ConstantOp>(loc, b.getF64FloatAttr(value));
  };
  Value x64 = b.create<arith::ExtFOp>(loc, wide, x);
  Value turns = b.create<arith::MulFOp>(loc, x64, constant(0.5 / kPi));
  // Rounded to an integer by adding and subtracting 1.5 · 2^52 (no math op,
  // which PTX would need libdevice for); exact for |turns| < 2^51.
  Value magic = constant(0x1.8p52);
  Value n = b.create<arith::SubFOp>(
      loc, b.create<arith::AddFOp>(loc, turns, magic), magic);
  Value reduced = b.create<arith::SubFOp>(
      loc, x64, b.create<arith::MulFOp>(loc, n, constant(2 * kPi)));
  op->setOperand(0, b.create<arith::TruncFOp>(loc, x.getType(), reduced));
}

struct ApproximateMathPass
    : attn::impl::ApproximateMathPassBase<ApproximateMathPass> {
  void runOnOperation() override {
    if (failed(attn::approximateMath(getOperation())))
      signalPassFailure();
  }
};

} // namespace

LogicalResult mlir::attn::approximateMath(Operation *root) {
  root->walk([](Operation *op) {
    if (isa<math::SinOp, math::CosOp>(op))
      reduceArgument(op);
  });
  RewritePatternSet patterns(root->getContext());
  populateMathPolynomialApproximationPatterns(patterns);
  return applyPatternsAndFoldGreedily(root, std::move(patterns));
}
