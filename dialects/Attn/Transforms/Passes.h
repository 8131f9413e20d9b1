//===- Passes.h - Passes of the attn dialect ---------------------*- C++
//-*-===//
#ifndef ATTN_TRANSFORMS_PASSES_H
#define ATTN_TRANSFORMS_PASSES_H

#include "Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::attn {

/// attn-tile-attention on one op: replaces `op` by its tiled form (see the
/// pass) and returns the scf.forall over (batch, query or kv head, row
/// tile). Backends that lower the tile ops themselves call it directly.
FailureOr<scf::ForallOp> tileAttention(RewriterBase &rewriter, AttentionOp op,
                                       int64_t rowTile, int64_t keyTile,
                                       bool packQueryHeads);

#define GEN_PASS_DECL
#include "Attn/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Attn/Transforms/Passes.h.inc"

/// The graph-level pipeline every tool runs on imported attn IR: fuse
/// attention chains, then canonicalize (folds, drops dead ops).
void buildAttnPipeline(OpPassManager &pm);

/// Registers buildAttnPipeline as the pass pipeline "attn-pipeline".
void registerAttnPipeline();

/// The last stage of every CPU kernel: memref/vector/scf/arith/math code to
/// the LLVM dialect (attn-approximate-math, then the upstream conversions).
void buildAttnLowerToLLVMPipeline(OpPassManager &pm);

/// Registers buildAttnLowerToLLVMPipeline as "attn-lower-to-llvm", with the
/// upstream passes it names.
void registerAttnLowerToLLVMPipeline();

} // namespace mlir::attn

#endif // ATTN_TRANSFORMS_PASSES_H
