//===- Pipeline.cpp - The graph-level pass pipeline -----------------------===//

#include "Attn/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

// Fusion runs first so that it sees the chain as the graph wrote it: a
// canonicalization before it would fold a `scale` by 1 out of the chain and
// the fused op's location would no longer name that node.
void attn::buildAttnPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createFuseAttentionPass());
  pm.addPass(createCanonicalizerPass());
}

void attn::registerAttnPipeline() {
  PassPipelineRegistration<>(
      "attn-pipeline",
      "Fuse attention chains into attn.attention, then canonicalize",
      [](OpPassManager &pm) { buildAttnPipeline(pm); });
}
