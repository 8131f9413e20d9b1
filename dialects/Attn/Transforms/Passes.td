//===- Passes.td - Passes of the attn dialect --------------*- tablegen -*-===//
#ifndef ATTN_TRANSFORMS_PASSES_TD
#define ATTN_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def FuseAttentionPass : Pass<"attn-fuse-attention", "::mlir::func::FuncOp"> {
  let summary = "Rewrites exporter-style attention chains into attn.attention";
  let description = [{
    Recognises, in any order an exporter writes them: `matmul(q, kᵀ)`, scale
    (`scale`, `mul`/`div` by a constant), softcap (`div`, `tanh`, `mul`),
    bias `add`s, `causal_mask` and `masked_fill(-inf)`, `softmax` over the
    last axis and `matmul(·, v)`; `repeat` of k/v (GQA); transposes of q, k,
    v and the output (layout bshd); the general (`matmul(q, W)`), additive
    (`linear`/`unsqueeze`/`add`/`tanh`/`matmul` by a vector) and cosine
    (division by norms) score forms. A chain is left alone when one of its
    intermediates has another user or is a result of the function.
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
