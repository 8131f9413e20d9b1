//===- Passes.td - Passes of the CPU backend ---------------*- tablegen -*-===//
//
// The CPU-specific lowering steps. They live beside the backend rather than
// in dialects/: they write code against the attnrt kernel ABI
// (runtime/include/attnc/attnrt.h), which the dialects know nothing of.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_PASSES_TD
#define ATTNC_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def BuildEntryPass : Pass<"attn-build-entry", "::mlir::ModuleOp"> {
  let summary = "Turns the fused graph function into NAME_entry and one task "
                "function per kernel";
  let description = [{
    Replaces the graph function (as `attnc` imports and fuses it: run-time
    sizes as `index` arguments marked `attn.dim`, then the inputs, each with
    `attn.dims`) by the functions NAME.o exports:

      int32_t NAME_entry(attnrt_invocation *, const int64_t *dims,
                         void *const *buffers);

    The entry reads the run-time sizes and buffer pointers, allocates
    intermediates with `attnrt_allocate` (ATTNRT_OUT_OF_MEMORY when it
    fails), packs each op's pointers and sizes into a closure and runs the
    op's task function `NAME_kN(closure, index)` through
    `attnrt_parallel_for`: an attn.attention is tiled by attn-tile-attention
    (query heads of a kv head packed into the rows, query-tile rows and
    key-tile keys) and each iteration of its scf.forall, (batch, kv head,
    row tile), is one task, whose rows, key loop and partial-tile test are
    the tiled IR's and whose tile ops become vector code (the register
    blocks below); any other op is one task. Options are the
    schedule's tiles and register blocks (defaults: the x86-64-avx2 class's
    schedule, schedules/cpu/x86-64-avx2.json).
  }];
  let options = [
    Option<"queryTile", "query-tile", "int64_t", /*default=*/"32",
           "Queries per attention task (rounded up to the register blocks)">,
    Option<"keyTile", "key-tile", "int64_t", /*default=*/"48",
           "Keys per online-softmax step (rounded up to score-keys)">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"8",
           "f32 lanes per vector">,
    Option<"scoreVectors", "score-vectors", "int64_t", /*default=*/"2",
           "Query vectors of the QK^T register block">,
    Option<"scoreKeys", "score-keys", "int64_t", /*default=*/"6",
           "Keys of the QK^T register block">,
    Option<"pvRows", "pv-rows", "int64_t", /*default=*/"4",
           "Rows of the P.V register block">,
    Option<"pvVectors", "pv-vectors", "int64_t", /*default=*/"2",
           "Vectors of the P.V register block">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "bf16 Q.K^T and P.V through AVX512-BF16 dot products "
           "(vdpbf16ps; the target must have avx512bf16 and 16-lane "
           "vectors)">,
    Option<"matrixTiles", "matrix-tiles", "std::string", /*default=*/"\"none\"",
           "bf16 prefill Q.K^T and P.V on AMX tiles: none, amx (the target "
           "must have amx-tile and amx-bf16) or emulated (the same tiling "
           "with each tile operation in vector code, for any CPU)">,
    Option<"valuePrefetchBytes", "value-prefetch-bytes", "int64_t",
           /*default=*/"4",
           "A decode step prefetches its V rows while its scores run when a "
           "V element has at most this many bytes (0: never)">,
    Option<"decodeStep", "decode-step", "int64_t", /*default=*/"16",
           "Keys per online-softmax step of a decode tile (rounded up to "
           "vector-width / min(vector-width, 4))">,
    Option<"decodePrefetchLevel", "decode-prefetch-level", "int64_t",
           /*default=*/"1",
           "The cache a decode step's prefetches fill: 1 = L1, 2 = L2">,
    Option<"primitiveGrid", "primitive-grid", "int64_t", /*default=*/"0",
           "Run each op outside attention as this many tasks of the code "
           "its CUDA kernel runs (task t a thread of a grid of that many, "
           "walking the op by the grid's stride), to check that code on a "
           "CPU; 0: the CPU loops">,
  ];
  let dependentDialects = [
    "::mlir::amx::AMXDialect",
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect", "::mlir::LLVM::LLVMDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect"];
}

def BuildCudaEntryPass : Pass<"attn-build-cuda-entry", "::mlir::ModuleOp"> {
  let summary = "Turns a graph function that attn-lower-to-gpu{entry} kept "
                "into the host code NAME_entry of a CUDA kernel and one "
                "gpu.func per op outside attention";
  let description = [{
    For graphs whose nodes do not all fuse into attention, on a module that
    `attn-lower-to-gpu{entry=1}` left with the graph function beside its
    `gpu.module @NAME_gpu`. The function becomes the same entry as for CPU
    kernels (attn-build-entry: run-time sizes, buffers, intermediates from
    `attnrt_allocate`, which gives device memory in a CUDA invocation), run
    on the host:

      - the N-th attention op: an `attnrt_tensor` array of its tensors in
        kernel order (gpuKernelTensors), shapes pointing into the op's
        closure words, handed to `attnrt_cuda_run_attention(invocation, N,
        tensors, count)`;
      - any other op: `gpu.func @NAME_pK` in `@NAME_gpu`, whose parameters
        are the op's closure words (its tensors' pointers, their sizes, its
        index operands; all i64), walking its loop nest by the grid's
        stride (PrimitiveKernels.h), launched by `attnrt_cuda_launch(
        invocation, K, threads, words, count)` for as many threads as its
        result has elements; `attn.block` gives its threads per block,
        `attn.node` its node;
      - an output that is an input or another output: `@NAME_copy`.

    A nonzero status from the runtime is returned at once. The kernels'
    math ops become PTX's (lowerMathForPtx).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::cf::ControlFlowDialect",
    "::mlir::func::FuncDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
}

#endif // ATTNC_CODEGEN_PASSES_TD
