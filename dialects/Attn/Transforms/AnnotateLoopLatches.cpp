//===- AnnotateLoopLatches.cpp - attn-annotate-loop-latches ---------------===//

#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Dominance.h"

namespace mlir::attn {
#define GEN_PASS_DEF_ANNOTATELOOPLATCHESPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

/// The latch of the loop whose body begins with `body`: the predecessor of
/// the loop header (body's only predecessor) that `body` dominates.
Operation *latchBranch(Block *body, DominanceInfo &dominance) {
  Block *header = body->getSinglePredecessor();
  if (!header)
    return nullptr;
  for (Block *predecessor : header->getPredecessors())
    if (dominance.dominates(body, predecessor))
      return predecessor->getTerminator();
  return nullptr;
}

struct AnnotateLoopLatchesPass
    : attn::impl::AnnotateLoopLatchesPassBase<AnnotateLoopLatchesPass> {
  void runOnOperation() override {
    DominanceInfo &dominance = getAnalysis<DominanceInfo>();
    WalkResult result = getOperation()->walk([&](attn::LoopAnnotationOp op) {
      Operation *latch = latchBranch(op->getBlock(), dominance);
      LLVM::LoopAnnotationAttr annotation = op.getAnnotation();
      if (auto branch = dyn_cast_or_null<LLVM::BrOp>(latch))
        branch.setLoopAnnotationAttr(annotation);
      else if (auto branch = dyn_cast_or_null<LLVM::CondBrOp>(latch))
        branch.setLoopAnnotationAttr(annotation);
      else
        return op.emitError("attn-annotate-loop-latches: not at the start "
                            "of a loop body whose back edge is an llvm.br "
                            "or llvm.cond_br"),
               WalkResult::interrupt();
      op.erase();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace
