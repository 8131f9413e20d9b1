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

//===----------------------------------------------------------------------===//
// Lowering (docs/design/lowering-passes.md)
//===----------------------------------------------------------------------===//

def TileAttentionPass : Pass<"attn-tile-attention", "::mlir::func::FuncOp"> {
  let summary = "Tiles attn.attention into row tiles, key tiles and an "
                "online softmax on tile tensors";
  let description = [{
    Rewrites each `attn.attention` (tensor semantics) into an `scf.forall`
    over (batch, query head, row tile) and, per row tile, an `scf.for` over
    key tiles whose bounds are `visibleKeys` of the tile (AttnSemantics.h):
    tiles that causal, window and key_length masks remove whole are never
    visited. The kv head is `kvHeadOf` the query head (GQA, MQA). Per key
    tile: `attn.tile_scores`, biases, ALiBi and tensor masks as a
    `linalg.generic`, `attn.tile_mask` under an `scf.if` on
    `!blockFullyVisible`, `attn.tile_softmax_update` (running max, the
    probabilities, alpha, running sum) and `attn.tile_accumulate`
    (alpha · O + P · V). After the
    loop, `attn.tile_normalize` (O / l, 0 for l = 0, lse) and a
    `tensor.parallel_insert_slice` per result. With `pack-query-heads` the
    forall runs over (batch, kv head, row tile) of the G·S rows of a kv
    head's query heads (q gathered as [B, Hkv, G·S, D], the output and
    lse scattered back).
    Nothing in it is specific to one backend; the tile sizes are the
    schedule's.
  }];
  let options = [
    Option<"rowTile", "row-tile", "int64_t", /*default=*/"64",
           "Query rows per tile (>= 1)">,
    Option<"keyTile", "key-tile", "int64_t", /*default=*/"64",
           "Keys per tile (>= 1)">,
    Option<"packQueryHeads", "pack-query-heads", "bool", /*default=*/"false",
           "Tile the G = Hq / Hkv query heads of a kv head together: row "
           "g·S + i of kv head k is query i of head k·G + g (decoding fills "
           "a tile, K and V are read once per group)">,
  ];
  let dependentDialects = [
    "::mlir::attn::AttnDialect", "::mlir::arith::ArithDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def LowerTileOpsPass : Pass<"attn-lower-tile-ops", "::mlir::func::FuncOp"> {
  let summary = "Lowers the tile ops of attn-tile-attention to linalg on tensors";
  let description = [{
    The portable lowering of `attn.tile_scores` (each score kind, the scale
    with 1/sqrt(Dk) read at run time when Dk is, the softcap), `attn.tile_mask`
    (`semantics::keyVisible` per element), `attn.tile_softmax_update` (the
    online-softmax step as arith/math: max, shift, `exp2`, sums),
    `attn.tile_accumulate` and `attn.tile_normalize` into `linalg.generic`s
    that accumulate in f32.
    After it the tiled attention is plain tensor code that upstream
    bufferization and lowering run; a backend with its own micro-kernels
    lowers the tile ops itself instead.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LowerPrimitivesPass
    : Pass<"attn-lower-primitives", "::mlir::func::FuncOp"> {
  let summary = "Lowers the primitive attn ops to linalg on tensors";
  let description = [{
    The portable lowering of every attn op but `attn.attention` and the tile
    ops: `matmul` and `linear` (f32 accumulation, numpy batch broadcasting,
    1-D operands), the elementwise ops with numpy broadcasting, `scale`,
    `softmax` (an all -inf slice gives 0), `masked_fill`, `causal_mask`
    (j <= i + T - S) and `reduce_sum` as `linalg.generic`s of `arith`/`math`;
    `reshape` as `tensor.reshape`, `unsqueeze` as `tensor.expand_shape`,
    `repeat` as `linalg.broadcast` and `tensor.collapse_shape`, `transpose`
    as `linalg.transpose`, `concat` as `tensor.insert_slice`s. f16 and bf16
    are computed in f32 and rounded once; every dim may be dynamic (sizes
    from `tensor.dim` and reshape's size operands). The semantics are those
    of PrimitiveKernels.cpp and docs/graph-format.md; after it the graph is
    plain tensor code that upstream bufferization and lowering run. An op
    it cannot lower (an element type no rule covers) is an op error.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

//===----------------------------------------------------------------------===//
// GPU
//===----------------------------------------------------------------------===//

def LowerToGpuPass : Pass<"attn-lower-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Turns each attn.attention into CUDA kernels (gpu.func)";
  let description = [{
    Replaces every function of fused attention ops by a `gpu.module` with, per
    op: a SIMT kernel (one warp per query row, or per (row, part) when keys
    are split, lanes over the head dim, q·k summed by warp shuffles, the CPU
    kernels' online softmax per key, p = exp2((s - m) - ceil(log2 T)), 8
    columns of P·V per lane, Dv in chunks of 256); the merge of its key splits; and, for
    f16/bf16 dot scores with Dk and Dv fixed and at most 128, a tensor-core
    kernel (mma.sync m16n8k16, or wgmma with `wgmma`; K and V staged in
    shared memory when the head dims are multiples of 16; tensor biases,
    ALiBi and tensor masks read per score) that replaces the SIMT kernel,
    its key splits merged by the merge. Parameters: the op's tensors as
    global pointers (q, k, v, the score's weights, key_lengths, the biases,
    ALiBi's slopes, the masks, output, lse; those the op has), the
    workspace, then B, Hq, Hkv, S, T, Dk, Dv and splits as i64;
    `attn.params` names them, `attn.sizes` gives each size as [tensor,
    axis], `attn.block`, `attn.block_rows` and `attn.row_flags` the launch
    (`attn.grid` spelled out), `attn.workspace_row_bytes` the splits'
    workspace (`attn.workspace_bytes` spelled out). Dot, cosine, general and
    additive scores, scale and softcap, tensor biases, ALiBi, the position
    and tensor masks and key lengths, GQA, both layouts, f32/f16/bf16 and
    lse; additive scores of a run-time width are an error that names it.
    Then upstream's `convert-gpu-to-nvvm`, `nvvm-attach-target` and
    `gpu-module-to-binary` give PTX. The softcap's tanh is the CPU kernels'
    rational approximation (attn-approximate-math's patterns), with PTX's fma
    and abs: no libdevice.
  }];
  let options = [
    Option<"entry", "entry", "bool", /*default=*/"false",
           "Keep each function and its other ops for attn-build-cuda-entry, "
           "whose host code runs them and hands each attention op its "
           "tensors: an op's tensors may then be intermediates, named by "
           "their nodes, and `attn.tensors` lists them in kernel order">,
    Option<"wgmma", "wgmma", "bool", /*default=*/"false",
           "The staged tensor-core kernel's two products by Hopper's "
           "warpgroup MMA (wgmma.mma_async, sm_90a only; A from registers, "
           "K and V from shared memory through matrix descriptors) instead "
           "of mma.sync and ldmatrix, where both head dims are past 64 (at "
           "64 its results were wrong on a GPU)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// Lowering to the LLVM dialect
//===----------------------------------------------------------------------===//

def ApproximateMathPass : Pass<"attn-approximate-math"> {
  let summary = "Rewrites exp, tanh, log... into inline polynomials";
  let description = [{
    Upstream's polynomial approximations of `math` ops on f32 scalars and
    vectors. Without them `convert-math-to-llvm` leaves LLVM intrinsics that
    the x86 backend scalarises into one libm call per lane. The arguments of
    f32 `math.sin` and `math.cos` are first reduced to about [-π, π] in f64
    (x - 2π·round(x / 2π)): upstream reduces by an f32 π/2, whose error grows
    with |x| (5e-9·|x|: 4.7e-4 at a rotary table's position 8192). The first
    step of `attn-lower-to-llvm`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def MarkLoopAnnotationsPass : Pass<"attn-mark-loop-annotations"> {
  let summary = "Turns scf.for loop annotations into attn.loop_annotation ops";
  let description = [{
    Moves the `llvm.loop_annotation` attribute of each `scf.for` into an
    `attn.loop_annotation` op at the start of its body, which
    `convert-scf-to-cf` keeps (MLIR 19 drops the attribute itself).
    `attn-annotate-loop-latches` finishes the job after the lowering. Runs
    just before `convert-scf-to-cf` in `attn-lower-to-llvm`.
  }];
  let dependentDialects = ["::mlir::attn::AttnDialect"];
}

def AnnotateLoopLatchesPass : Pass<"attn-annotate-loop-latches"> {
  let summary = "Sets each attn.loop_annotation on its loop's latch branch";
  let description = [{
    For each `attn.loop_annotation` in an `llvm.func`: its block is a loop's
    body, entered from the loop header (its only predecessor); the latch is
    the header's predecessor that the body dominates. Sets the annotation on
    the latch's `llvm.br` / `llvm.cond_br` (LLVM reads `!llvm.loop` there)
    and erases the op. Fails on an op that does not begin a loop body. The
    last step of `attn-lower-to-llvm`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // ATTN_TRANSFORMS_PASSES_TD
