//===- PrimitiveKernels.h - attn primitives on buffers ----------*- C++ -*-===//
//
// Every attn op but attn.attention (the leftovers of fusion: projections,
// reshapes, transposes, elementwise ops, softmax...) computed on buffers, so
// that a whole graph compiles into one object beside the fused attention
// kernels (BuildKernels.h).
//
// Buffers are memrefs with the identity layout (dense, C order) and dynamic
// sizes where the op's tensor type has `?`; element types are the tensor's,
// except bool (i1 tensors), which is stored one byte per element (0 or 1) in
// an i8 memref.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_PRIMITIVEKERNELS_H
#define ATTNC_CODEGEN_PRIMITIVEKERNELS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/SmallVector.h"

namespace attnc {

/// The element type of a buffer holding `tensorType`'s elements: i8 for i1.
mlir::Type bufferElementType(mlir::Type tensorType);

/// The sizes of every result of `op`. `operands` holds, per operand of
/// `op`: the operand's sizes (one index value per dim) for a tensor operand,
/// or the operand itself mapped to the builder's function (one index value)
/// for an index operand (reshape's run-time sizes).
llvm::SmallVector<llvm::SmallVector<mlir::Value>>
resultSizes(mlir::OpBuilder &builder, mlir::Location loc, mlir::Operation *op,
            llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands);

/// Whether `op` splits into tasks of rows of its product (`linear`, a
/// `matmul` of matrices): the packed GEMM's row blocks.
bool splitsIntoRowTasks(mlir::Operation *op);

/// How the entry splits such an op over `threads` (an index value), chosen
/// at run time: as many tasks as the GEMM's row blocks, and on several
/// threads at least two a thread, sharing the rows evenly. `operands` as
/// for resultSizes(); every other op is one task.
struct RowTasks {
  mlir::Value rows;  ///< Rows of each task (the last may have fewer).
  mlir::Value count; ///< Tasks: every batch's product's row blocks.
};
RowTasks rowTasks(mlir::OpBuilder &builder, mlir::Location loc,
                  mlir::Operation *op,
                  llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands,
                  mlir::Value threads);

/// Emits, at the builder's insertion point, the computation of `op` (an attn
/// primitive, not attn.attention) from `operands` into `results`.
/// `operands` holds, per operand of `op`, its buffer (tensor operands) or the
/// mapped index value (index operands); `results` one buffer per result,
/// already allocated with resultSizes(). With `taskIndex`, only that task's
/// share (of rowTasks()' count) is computed, `taskRows` (its rows) rows of
/// an op that splitsIntoRowTasks(); without, the whole op.
/// `vectorWidth`: f32 lanes of the target's vectors (the schedule's
/// vector_width), which the packed GEMM of `linear` computes in.
void emitPrimitive(mlir::OpBuilder &builder, mlir::Location loc,
                   mlir::Operation *op, mlir::ValueRange operands,
                   mlir::ValueRange results, mlir::Value taskIndex,
                   mlir::Value taskRows, int64_t vectorWidth);

/// The threads of a CUDA kernel a primitive's work is spread over: this
/// thread's index in the grid and the grid's thread count (index values).
struct DeviceThreads {
  mlir::Value index, count;
  /// Threads per warp: 32 on a CUDA grid (count a multiple of it), whose
  /// lanes meet by shuffles; 1 when the code runs as CPU tasks
  /// (attn-build-entry's primitive-grid), each task a warp of one lane.
  int64_t lanes = 1;
};

/// How many threads emitPrimitiveOnDevice()'s code for `op` keeps busy (an
/// index value; `operands` as for resultSizes()): `lanes` per 4 x 4 tile of
/// a product it gives warps and per row of a softmax, else one per element
/// of the result.
mlir::Value deviceThreadCount(
    mlir::OpBuilder &builder, mlir::Location loc, mlir::Operation *op,
    llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands, int64_t lanes);

/// emitPrimitive() for a CUDA kernel's thread: the op's outermost loop nest
/// (over the result's elements, or a reduction's rows) is walked by the
/// grid's stride from `threads.index`, so every launch size computes the
/// whole op; a product whose operands are both read along k (linear, a
/// transposed or 1-D right operand) is a warp per 4 x 4 block of its result,
/// the lanes over k, any other one dot product per element; a softmax is a
/// warp per row, the lanes along it.
void emitPrimitiveOnDevice(mlir::OpBuilder &builder, mlir::Location loc,
                           mlir::Operation *op, mlir::ValueRange operands,
                           mlir::ValueRange results,
                           const DeviceThreads &threads);

} // namespace attnc

#endif // ATTNC_CODEGEN_PRIMITIVEKERNELS_H
