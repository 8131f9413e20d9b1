//===- BuildKernels.h - A fused attn module as CPU kernels ------*- C++ -*-===//
//
// Turns the graph function of a fused attn module (Import/ImportGraph.h) into
// the functions NAME.o exports (docs/design/cpu-backend.md):
//
//   int32_t NAME_entry(attnrt_invocation *, const int64_t *dims,
//                      void *const *buffers);
//   const attnrt_kernel NAME_kernel;
//
// Each op of the graph function becomes one task function
// `void task(void *closure, int64_t index)` run by attnrt_parallel_for: an
// attn.attention over (batch, head, query tile) (AttentionKernel.h), any
// other op as one task (PrimitiveKernels.h). Intermediates live in
// attnrt_allocate memory. The result is in the scf/vector/memref/llvm
// dialects, ready for lowerToLLVMDialect.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_BUILDKERNELS_H
#define ATTNC_CODEGEN_BUILDKERNELS_H

#include "Codegen/Schedule.h"
#include "Graph/Graph.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

/// Replaces the graph function of `module` (fused attn IR of `graph`) by
/// the task functions and `NAME_entry`. Throws std::logic_error when the
/// module is not what importGraph + runAttnPipeline make. The descriptor
/// `NAME_kernel` is added to the LLVM IR later (KernelDescriptor.h).
void buildKernels(mlir::ModuleOp module, const Graph &graph,
                  const AttentionSchedule &schedule);

} // namespace attnc

#endif // ATTNC_CODEGEN_BUILDKERNELS_H
