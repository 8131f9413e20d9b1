//===- HalideEntry.h - NAME_entry for a Halide pipeline ----------*- C++ -*-===//
//-*-===//
//
// The Halide backend's NAME.a holds Halide's pipeline functions, which take
// halide_buffer_t pointers, and this adapter, emitted as LLVM 19 IR beside
// the attnrt_kernel descriptor: NAME_entry(invocation, dims, buffers)
// allocates the intermediates and runs the kernels in order. An attention is
// split into tasks of (batch, head, query tile) run with attnrt_parallel_for,
// each describing every argument as a halide_buffer_t (the outputs cropped to
// the task) and calling the pipeline; a primitive is one such task.
// No Halide compiler header reaches this code (docs/toolchain.md, trap 1):
// only HalideRuntime.h, plain C, for halide_buffer_t and Halide's type and
// error codes, in HalideEntry.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_HALIDEENTRY_H
#define ATTNC_CODEGEN_HALIDEENTRY_H

#include "Codegen/Target.h"
#include "Graph/Graph.h"

#include <string>
#include <vector>

namespace attnc {

struct HalideEntryArgument {
  int buffer = 0; ///< Index into the entry's `buffers`.
  DType dtype = DType::F32;
  Shape shape; ///< Graph (C) order; run-time sizes by name.
  /// For outputs: the graph dims of batch, head and query, which each task
  /// crops to one batch, one head and its query tile; -1 for inputs.
  int batchDim = -1, headDim = -1, queryDim = -1;
};

/// One kernel, run in plan order.
struct HalideEntryKernel {
  /// The Halide pipeline's symbol; empty for a byte copy (reshape,
  /// unsqueeze, copy) from arguments[0] to arguments[1], and for an
  /// attention that has only a decode pipeline.
  std::string function;
  /// An attention's decode pipeline, or empty. Its tasks are B × kvHeads
  /// (× parts of the keys), each every query head of one kv head (heads /
  /// kvHeads of them) and all the queries; it runs when the queries are
  /// fewer than decodeBelow (always, without `function`). It takes the
  /// inputs, the crop, then the partial rows (in scratch: f32 [parts, B,
  /// heads, queries, valueDepth + 2]) instead of the outputs; then the
  /// merge pipeline, one task per decode task, takes the partial rows of
  /// every part, the key positions (int32) and the outputs.
  std::string decodeFunction, mergeFunction;
  Dim kvHeads{1, ""}, keys{1, ""}, valueDepth{1, ""};
  int64_t decodeBelow = 0;
  /// The schedule's key tile: a split decode task's parts get at least two
  /// (FlashDecoding, as the MLIR kernel splits: parts only when the tasks
  /// are fewer than the threads, enough to give every thread work).
  int64_t keyTile = 1;
  /// The most keys of a part (0: no bound; HalideSchedule::decodePartKeys).
  int64_t decodePartKeys = 0;
  bool isByteCopy() const { return function.empty() && decodeFunction.empty(); }
  std::vector<HalideEntryArgument> arguments; ///< The pipeline's order.
  /// An attention's crop (int32 batch, first query, query count, the
  /// batch's key length, and for decode the kv head) is passed before
  /// arguments[cropAt]; -1 for a primitive, which is one call.
  int cropAt = -1;
  /// The buffer of an attention's i32 key lengths [B], or -1 (then the key
  /// length passed is INT32_MAX).
  int keyLengthsBuffer = -1;
  /// The task space: B × Hq × ceil(S / tile); 1 × 1 × 1 for a primitive.
  Dim batch{1, ""}, heads{1, ""}, queries{1, ""};
  int64_t taskQueries = 1;
};

struct HalideEntrySpec {
  std::vector<HalideEntryKernel> kernels;
  /// Buffers past the entry's inputs and outputs (their `buffer` indices
  /// continue from numInputs + numOutputs): intermediates from
  /// attnrt_allocate, freed when the invocation ends.
  std::vector<HalideEntryArgument> intermediates;
};

/// The object holding NAME_entry and NAME_kernel for `graph`.
std::string emitHalideEntry(const Graph &graph, const HalideEntrySpec &spec,
                            const CpuTarget &target,
                            const std::string &manifest);

/// A static library (GNU format, with a symbol table) of `members`, each
/// (name, object bytes).
std::string
writeArchive(const std::vector<std::pair<std::string, std::string>> &members);

} // namespace attnc

#endif // ATTNC_CODEGEN_HALIDEENTRY_H
