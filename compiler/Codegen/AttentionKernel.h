//===- AttentionKernel.h - attn.attention as a tiled CPU task ---*- C++ -*-===//
//
// The body of one task of a fused attention: one iteration of the packed
// scf.forall attn-tile-attention makes of it, (batch b, kv head, tile of rows
// (query head, query) of the query heads sharing that kv head), its tile ops
// lowered to vector code: online softmax over tiles of keys, never holding
// more than a key tile of scores (docs/design/cpu-backend.md,
// docs/design/lowering-passes.md). The register blocking follows
// docs/design/cpu-codegen-notes.md (point 2): queries in vector lanes, Q
// packed transposed and prescaled by scale·log2(e), scores stored
// [key][query] so the running max and sum are plain vectors, exp2 inline.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_ATTENTIONKERNEL_H
#define ATTNC_CODEGEN_ATTENTIONKERNEL_H

#include "Attn/IR/AttnOps.h"
#include "Codegen/Schedule.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/SmallVector.h"

namespace attnc {

/// The buffers of one attention op, each a 1-D memref over the tensor's
/// dense elements (bool as i8; f16 and bf16 biases as i16 bits), with the
/// tensor's sizes. Absent operands and an unused lse are null.
struct AttentionBuffers {
  struct Buffer {
    mlir::Value data;                       ///< memref<?xT>.
    llvm::SmallVector<mlir::Value> sizes;   ///< One index per dim.
  };
  Buffer query, key, value, output, lse;
  Buffer generalWeight, queryWeight, keyWeight, scoreVector;
  Buffer alibiSlopes, keyLengths;
  llvm::SmallVector<Buffer> biases, masks;
};

/// The tile sizes a schedule asks for, rounded to what the register blocks
/// need (query tile a multiple of the score block's queries and of the P·V
/// rows, key tile a multiple of the score block's keys).
struct AttentionTiling {
  int64_t vectorWidth, queryTile, keyTile;
  int64_t scoreVectors, scoreKeys, pvRows, pvVectors;
  bool bf16Dot = false; ///< AttentionSchedule::bf16Dot.
  MatrixTiles matrixTiles = MatrixTiles::none; ///< AttentionSchedule's.
  int64_t valuePrefetchBytes = 4; ///< AttentionSchedule::valuePrefetchBytes.
  int64_t decodeStep = 0;         ///< AttentionSchedule::decodeStep.
  int64_t decodePrefetchLevel = 1; ///< AttentionSchedule::decodePrefetchLevel.
  static AttentionTiling from(const AttentionSchedule &schedule);
};

/// How each iteration of the tiled forall splits its keys (FlashDecoding):
/// `parts` tasks (an index, 1 = unsplit), each over its share of the key
/// tiles, leaving every row's unnormalised output, running max and sum in
/// `partials` (memref<?xf32>, rows of roundUp(Dv, W) + 2 floats, queryTile
/// rows per part); a merge task per iteration combines them.
struct KeySplit {
  mlir::Value parts, partials;
};

/// The split the entry chooses at run time: parts = 1 when there are at
/// least as many tasks as threads, else enough parts to give every thread
/// work, each part at least two key tiles; `bytes` of partials (0 when
/// unsplit).
struct KeySplitPlan {
  mlir::Value parts, bytes;
};
KeySplitPlan planKeySplit(mlir::OpBuilder &builder, mlir::Location loc,
                          mlir::attn::AttentionOp op,
                          llvm::ArrayRef<mlir::Value> keySizes,
                          llvm::ArrayRef<mlir::Value> valueSizes,
                          const AttentionTiling &tiling, mlir::Value tasks,
                          mlir::Value threads);

/// The tasks of the packed scf.forall that attn::tileAttention made of an
/// attention op: the product of its bounds. The forall's function has the
/// op's operands as arguments, in order; `operands` are their buffers
/// (only the sizes are read here).
mlir::Value tiledTaskCount(mlir::OpBuilder &builder, mlir::Location loc,
                           mlir::scf::ForallOp forall,
                           llvm::ArrayRef<AttentionBuffers::Buffer> operands);

/// Emits task number `taskIndex` (an index value) of `forall`, the tiled
/// form of `op`, at the builder's insertion point, which must be in the
/// entry block of the task function (the scratch tiles are allocas).
/// `buffers` names the op's buffers, `operands` lists them in operand order.
/// With split.parts > 1, task taskIndex is part (taskIndex % parts) of
/// iteration (taskIndex / parts) and writes partials instead of outputs.
void emitAttentionTask(mlir::OpBuilder &builder, mlir::Location loc,
                       mlir::attn::AttentionOp op,
                       const AttentionBuffers &buffers,
                       llvm::ArrayRef<AttentionBuffers::Buffer> operands,
                       const AttentionTiling &tiling,
                       mlir::scf::ForallOp forall, mlir::Value taskIndex,
                       const KeySplit &split);

/// Merge task `iteration` of a split: combines the parts' partials of each
/// row (rescaled to the largest running max) and writes the outputs as an
/// unsplit task would.
void emitAttentionMerge(mlir::OpBuilder &builder, mlir::Location loc,
                        mlir::attn::AttentionOp op,
                        const AttentionBuffers &buffers,
                        llvm::ArrayRef<AttentionBuffers::Buffer> operands,
                        const AttentionTiling &tiling,
                        mlir::scf::ForallOp forall, mlir::Value iteration,
                        const KeySplit &split);

} // namespace attnc

#endif // ATTNC_CODEGEN_ATTENTIONKERNEL_H
