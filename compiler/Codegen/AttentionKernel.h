//===- AttentionKernel.h - attn.attention as a tiled CPU task ---*- C++ -*-===//
//
// The body of one task of a fused attention: one batch b, one kv head, one
// tile of rows (query head, query) of the query heads sharing that kv head,
// online softmax over tiles of keys, never holding more than a key tile of
// scores (docs/design/cpu-backend.md). The register blocking follows
// docs/design/cpu-codegen-notes.md (point 2): queries in vector lanes, Q
// packed transposed and prescaled by scale·log2(e), scores stored
// [key][query] so the running max and sum are plain vectors, exp2 inline.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_ATTENTIONKERNEL_H
#define ATTNC_CODEGEN_ATTENTIONKERNEL_H

#include "Attn/IR/AttnOps.h"
#include "Codegen/Schedule.h"

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
  static AttentionTiling from(const AttentionSchedule &schedule);
};

/// The number of tasks: B · Hkv · ceil(G · S / query tile), G = Hq / Hkv
/// (`buffers` needs only the query's and the key's sizes).
mlir::Value attentionTaskCount(mlir::OpBuilder &builder, mlir::Location loc,
                               mlir::attn::AttentionOp op,
                               const AttentionBuffers &buffers,
                               const AttentionTiling &tiling);

/// Emits task number `taskIndex` (an index value) of `op` at the builder's
/// insertion point, which must be in the entry block of the task function
/// (the scratch tiles are allocas).
void emitAttentionTask(mlir::OpBuilder &builder, mlir::Location loc,
                       mlir::attn::AttentionOp op,
                       const AttentionBuffers &buffers,
                       const AttentionTiling &tiling, mlir::Value taskIndex);

} // namespace attnc

#endif // ATTNC_CODEGEN_ATTENTIONKERNEL_H
