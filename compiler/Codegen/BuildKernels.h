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
// attn.attention is tiled by attn-tile-attention (packed query heads, the
// schedule's tiles) and one iteration of its scf.forall, (batch, kv head,
// row tile), is one task whose tile ops AttentionKernel.h lowers; any other
// op is one task (PrimitiveKernels.h). Intermediates live in
// attnrt_allocate memory. The result is in the scf/vector/memref/llvm
// dialects, ready for lowerToLLVMDialect. `attn-opt --attn-build-entry` runs
// it alone.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_BUILDKERNELS_H
#define ATTNC_CODEGEN_BUILDKERNELS_H

#include "Codegen/Schedule.h"
#include "Codegen/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace attnc {

/// The attn-build-entry options of a schedule: the pass replaces the graph
/// function of a fused attn module (importGraph + runAttnPipeline) by the
/// task functions and `NAME_entry` (Codegen/Passes.td). The descriptor
/// `NAME_kernel` is added to the LLVM IR later (KernelDescriptor.h).
BuildEntryPassOptions buildEntryOptions(const AttentionSchedule &schedule);

/// Runs attn-build-entry with `schedule`'s options (and `primitiveGrid`, see
/// the pass) on `module`. Throws std::logic_error with the pass's
/// diagnostics when it fails (a module importGraph + runAttnPipeline did not
/// make).
void buildKernels(mlir::ModuleOp module, const AttentionSchedule &schedule,
                  int64_t primitiveGrid = 0);

/// Runs attn-tile-attention on `module` as attn-build-entry tiles each
/// attention op for its tasks: query heads of a kv head packed into the
/// rows, `schedule`'s query and key tiles (rounded to its register blocks).
/// For printing what the tasks lower (`--emit mlir:tiled`).
void tileAttentionForTasks(mlir::ModuleOp module,
                           const AttentionSchedule &schedule);

} // namespace attnc

#endif // ATTNC_CODEGEN_BUILDKERNELS_H
