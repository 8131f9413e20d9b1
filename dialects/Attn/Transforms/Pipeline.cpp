//===- Pipeline.cpp - The graph-level pass pipeline -----------------------===//

#include "Attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <mutex>

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

/// The lowering measured in docs/design/cpu-codegen-notes.md (point 6): vector
/// code reaches hand-written kernel speed through exactly these passes. Ahead
/// of them: math ops become polynomials, linalg (leftover primitives) becomes
/// loops, and `arith-expand{include-bf16}` turns bf16 conversions into
/// integer code, so no object needs a compiler runtime's __truncsfbf2.
static constexpr const char *kLowerToLLVM =
    "attn-approximate-math, convert-linalg-to-loops, "
    "arith-expand{include-bf16=true}, convert-vector-to-scf, "
    "attn-mark-loop-annotations, convert-scf-to-cf, "
    "expand-strided-metadata, lower-affine, "
    "convert-vector-to-llvm{enable-x86vector enable-amx}, "
    "convert-math-to-llvm, "
    "convert-arith-to-llvm, finalize-memref-to-llvm, "
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1}, "
    "convert-cf-to-llvm, convert-index-to-llvm, reconcile-unrealized-casts, "
    "attn-annotate-loop-latches";

static void registerLoweringPasses() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerConversionPasses();
    memref::registerMemRefPasses();
    arith::registerArithExpandOpsPass();
    registerConvertLinalgToLoopsPass();
    attn::registerApproximateMathPass();
    attn::registerMarkLoopAnnotationsPass();
    attn::registerAnnotateLoopLatchesPass();
  });
}

void attn::buildAttnLowerToLLVMPipeline(OpPassManager &pm) {
  registerLoweringPasses();
  std::string errors;
  llvm::raw_string_ostream stream(errors);
  // Not wrapped in builtin.module(...): the caller anchors pm on the module.
  if (failed(parsePassPipeline(kLowerToLLVM, pm, stream)))
    llvm::report_fatal_error("attn-lower-to-llvm: " + llvm::Twine(errors));
}

void attn::registerAttnLowerToLLVMPipeline() {
  registerLoweringPasses();
  PassPipelineRegistration<>(
      "attn-lower-to-llvm",
      "Lower memref/vector/scf/arith/math code to the LLVM dialect",
      [](OpPassManager &pm) { buildAttnLowerToLLVMPipeline(pm); });
}
