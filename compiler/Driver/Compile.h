//===- Compile.h - A graph through the MLIR CPU backend ---------*- C++ -*-===//
//
// What `attnc compile` writes and `attnc run --backend mlir` loads: import,
// fuse, build the kernels, lower, emit NAME.o with its descriptor, NAME.h
// and NAME.json.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_COMPILE_H
#define ATTNC_DRIVER_COMPILE_H

#include "Codegen/Schedule.h"
#include "Codegen/Target.h"
#include "Graph/Graph.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnc {

struct CompileOptions {
  std::string backend = "mlir"; ///< "mlir" or "halide".
  std::string target = "host";
  std::string schedulePath; ///< Empty: the target class's default.
  /// A tuning database whose best record for the graph at `dimEstimates`
  /// replaces the default schedule (not a --schedule file); empty: none.
  std::string tuningDatabase;
  /// Sizes of run-time dims for an autoscheduler to plan for (halide,
  /// `--schedule auto:NAME`); the others get defaults.
  DimBindings dimEstimates;
  /// MLIR stages to print (kMlirStages), in the order asked; `--emit mlir`
  /// asks for "kernels".
  std::vector<std::string> emitMlirStages;
  bool emitLlvm = false;
  /// --primitive-grid (hidden, for tests): the ops outside attention run
  /// the code of their CUDA kernels, as this many CPU tasks; 0: CPU loops.
  int64_t primitiveGrid = 0;
  /// --emulate-amx (hidden, for tests): the AMX tile path, its tile
  /// operations in vector code.
  bool emulateAmx = false;
};

/// The stages of the MLIR backend `--emit mlir:STAGE` can print, in pipeline
/// order, with what the module holds after each.
struct MlirStage {
  const char *name, *holds;
};
inline constexpr MlirStage kMlirStages[] = {
    {"attn", "the graph as attn ops, before fusion"},
    {"fused", "after attn-pipeline: attention chains fused into "
              "attn.attention"},
    {"tiled", "each attn.attention as attn-tile-attention makes it for the "
              "CPU tasks (query heads of a kv head packed, the schedule's "
              "tiles): one task per scf.forall iteration"},
    {"kernels", "the entry, closures and task functions (scf, vector, "
                "memref), before lowering"},
    {"llvm", "after attn-lower-to-llvm: the LLVM dialect"}};

struct CompiledGraph {
  CpuTarget target;
  AttentionSchedule schedule;
  std::string object;     ///< NAME.o, or NAME.a for the halide backend.
  bool isArchive = false; ///< `object` is a static library (NAME.a).
  std::string header;     ///< NAME.h
  std::string manifest;   ///< NAME.json
  /// The module after each stage asked for, by stage name.
  std::map<std::string, std::string> mlir;
  std::string llvm; ///< The optimised LLVM IR, when asked for.
  /// Why the tuning database gave no schedule, when one was used.
  std::string scheduleNote;
  /// The tuning record the schedule came from, for people; empty if none.
  std::string tunedFrom;
};

/// Throws UserError for a bad --target or --schedule, and (halide) for what
/// the backend cannot compile.
CompiledGraph compileGraph(const Graph &graph, const CompileOptions &options);

/// Says on stderr which tuned schedule `compiled` uses, or (when the user
/// named the database) why it uses none.
void reportTunedSchedule(const CompileOptions &options,
                         const CompiledGraph &compiled);

/// `--target cuda-*` (CompileCuda.cpp): NAME.o, NAME.h, NAME.json and
/// NAME.ptx (and the --emit files), as (file name, contents); `chip` from
/// cudaChip.
std::vector<std::pair<std::string, std::string>>
compileForCudaFiles(const Graph &graph, const CompileOptions &options,
                    const std::string &chip);

/// The halide backend (compileGraph dispatches to it): NAME.a holding
/// Halide's pipeline and runtime, NAME_entry and NAME_kernel.
CompiledGraph compileGraphHalide(const Graph &graph,
                                 const CompileOptions &options);

} // namespace attnc

#endif // ATTNC_DRIVER_COMPILE_H
