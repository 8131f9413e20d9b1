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

/// The tensors of `op` in the order its CUDA kernels take them (q, k, v,
/// the score's weights if any (W; or Wq, Wk, va), key_lengths if any, the
/// biases, the ALiBi slopes if given, the masks, the output, lse if there
/// is one), as attn-lower-to-gpu writes them into `attn.params`.
SmallVector<Value> gpuKernelTensors(AttentionOp op);

/// attn-approximate-math on `root`: upstream's polynomial approximations of
/// the `math` ops under it, the arguments of f32 sin and cos first reduced
/// by 2π in f64 (upstream reduces in f32, which loses accuracy as |x|
/// grows).
LogicalResult approximateMath(Operation *root);

/// The `math` ops under `root` as code PTX runs without libdevice:
/// approximateMath(), then what
/// is left (fma, abs, sqrt, ...) as LLVM intrinsics NVPTX has instructions
/// for. An error on any other math op.
LogicalResult lowerMathForPtx(Operation *root);

/// The attribute of an `scf.for` that attn-lower-to-llvm turns into the
/// loop's LLVM loop metadata (an LLVM::LoopAnnotationAttr, e.g. unroll
/// disable), as later MLIR's convert-scf-to-cf does by itself.
inline constexpr llvm::StringLiteral kLoopAnnotationAttrName =
    "llvm.loop_annotation";

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
