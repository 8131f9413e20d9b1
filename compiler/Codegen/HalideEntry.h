//===- HalideEntry.h - NAME_entry for a Halide pipeline ----------*- C++ -*-===//
//
// The Halide backend's NAME.a holds Halide's pipeline function, which takes
// halide_buffer_t pointers, and this adapter, emitted as LLVM 19 IR beside
// the attnrt_kernel descriptor: NAME_entry(invocation, dims, buffers) splits
// the output into tasks of (batch, head, query tile), runs them with
// attnrt_parallel_for, and in each task describes every argument as a
// halide_buffer_t (the outputs cropped to the task) and calls the pipeline.
// Plain C++ here: no Halide header reaches this code (toolchain trap 1).
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

struct HalideEntrySpec {
  std::string function; ///< The Halide pipeline's symbol.
  std::vector<HalideEntryArgument> arguments; ///< The pipeline's order.
  /// The task's crop (int32 batch, first query, query count, and the
  /// batch's key length) is passed before arguments[cropAt].
  int cropAt = 0;
  /// The entry's buffer holding the i32 key lengths [B], or -1 (then the
  /// key length passed is INT32_MAX).
  int keyLengthsBuffer = -1;
  Dim batch, heads, queries; ///< The task space: B × Hq × ceil(S / tile).
  int64_t taskQueries = 64;
};

/// The object holding NAME_entry and NAME_kernel for `graph`.
std::string emitHalideEntry(const Graph &graph, const HalideEntrySpec &spec,
                            const CpuTarget &target,
                            const std::string &manifest);

/// `archive` (a static library's bytes) with `object` added as `member`.
std::string appendToArchive(const std::string &archive,
                            const std::string &member,
                            const std::string &object);

} // namespace attnc

#endif // ATTNC_CODEGEN_HALIDEENTRY_H
