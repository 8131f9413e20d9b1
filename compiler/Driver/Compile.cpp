//===- Compile.cpp - A graph through the MLIR CPU backend -----------------===//

#include "Driver/Compile.h"
#include "Codegen/BuildKernels.h"
#include "Codegen/EmitObject.h"
#include "Codegen/KernelDescriptor.h"
#include "Codegen/KernelInterface.h"
#include "Driver/Options.h"
#include "Import/ImportGraph.h"
#include "Support/Error.h"
#include "Tuning/TunedSchedule.h"

#include "mlir/IR/MLIRContext.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace attnc {

CompiledGraph compileGraph(const Graph &graph, const CompileOptions &options) {
  if (options.backend == "halide")
    return compileGraphHalide(graph, options);
  if (options.schedulePath.rfind("auto:", 0) == 0)
    throw UserError("--schedule " + options.schedulePath +
                    ": Halide's autoschedulers need --backend halide");
  CompiledGraph result;
  result.target = cpuTarget(options.target);
  result.schedule = options.schedulePath.empty()
                        ? defaultSchedule(result.target)
                        : loadSchedule(options.schedulePath, result.target);
  if (options.schedulePath.empty() && !options.tuningDatabase.empty()) {
    std::string why;
    if (std::optional<AttentionSchedule> tuned = tuning::tunedSchedule(
            options.tuningDatabase, graph, options.dimEstimates, result.target,
            result.schedule, why)) {
      result.schedule = *tuned;
      result.tunedFrom =
          result.schedule.source + " (" + result.schedule.measured + ")";
    } else {
      result.scheduleNote = "tuning database " + options.tuningDatabase + ": " +
                            why + "; the default schedule";
    }
  }
  // An ISA choice, not a schedule parameter.
  result.schedule.bf16Dot = prefersBf16Dot(result.target);
  result.schedule.matrixTiles = options.emulateAmx       ? MatrixTiles::emulated
                                : usesAmx(result.target) ? MatrixTiles::amx
                                                         : MatrixTiles::none;
  result.header = kernelHeader(graph);
  result.manifest =
      kernelManifest(graph, "mlir", result.target, result.schedule);

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  auto stageDone = [&](const std::string &stage) {
    const auto &asked = options.emitMlirStages;
    if (std::find(asked.begin(), asked.end(), stage) == asked.end())
      return;
    llvm::raw_string_ostream stream(result.mlir[stage]);
    module->print(stream);
  };
  module = importGraph(graph, context);
  stageDone("attn");
  runAttnPipeline(*module);
  stageDone("fused");
  if (llvm::is_contained(options.emitMlirStages, "tiled")) {
    // attn-build-entry tiles each op as it builds its tasks; this is what
    // it lowers, printed from a copy.
    mlir::OwningOpRef<mlir::ModuleOp> tiled = module->clone();
    std::swap(module, tiled);
    tileAttentionForTasks(*module, result.schedule);
    stageDone("tiled");
    std::swap(module, tiled);
  }
  buildKernels(*module, result.schedule, options.primitiveGrid);
  stageDone("kernels");
  lowerToLLVMDialect(*module);
  stageDone("llvm");
  result.object = emitObject(
      *module, result.target, options.emitLlvm ? &result.llvm : nullptr,
      [&](llvm::Module &llvmModule) {
        addKernelDescriptor(llvmModule, graph, result.target.name,
                            result.manifest);
      });
  return result;
}

void reportTunedSchedule(const CompileOptions &options,
                         const CompiledGraph &compiled) {
  if (options.tuningDatabase.empty())
    return;
  if (!compiled.tunedFrom.empty())
    llvm::errs() << "schedule: " << compiled.tunedFrom << "\n";
  else if (options::tuningDb.getNumOccurrences())
    llvm::errs() << "note: " << compiled.scheduleNote << "\n";
}

} // namespace attnc
