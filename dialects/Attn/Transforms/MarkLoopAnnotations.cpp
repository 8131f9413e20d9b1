//===- MarkLoopAnnotations.cpp - attn-mark-loop-annotations ---------------===//

#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::attn {
#define GEN_PASS_DEF_MARKLOOPANNOTATIONSPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;

namespace {

struct MarkLoopAnnotationsPass
    : attn::impl::MarkLoopAnnotationsPassBase<MarkLoopAnnotationsPass> {
  void runOnOperation() override {
    StringRef name = attn::kLoopAnnotationAttrName;
    getOperation()->walk([&](scf::ForOp loop) {
      auto annotation = loop->getAttrOfType<LLVM::LoopAnnotationAttr>(name);
      if (!annotation)
        return;
      OpBuilder builder = OpBuilder::atBlockBegin(loop.getBody());
      builder.create<attn::LoopAnnotationOp>(loop.getLoc(), annotation);
      loop->removeAttr(name);
    });
  }
};

} // namespace
