//===- CompileCuda.cpp - attnc compile --target cuda-* --------------------===//
//
// NAME.o, NAME.h and NAME.json as for the CPU targets, and NAME.ptx (the
// kernels of each fused attention op, see attn-lower-to-gpu, and of the
// graph's other ops, see attn-build-cuda-entry). NAME.o holds the
// descriptor libattnrt launches the PTX from (attnrt_cuda_code) and, for a
// graph with ops outside attention, the host code that launches them in
// order; the manifest gives per kernel its parameters, launch shape and
// ptxas report.
//
//===----------------------------------------------------------------------===//

#include "Driver/Compile.h"

#include "Codegen/EmitObject.h"
#include "Codegen/GpuKernels.h"
#include "Codegen/KernelDescriptor.h"
#include "Codegen/KernelInterface.h"
#include "Codegen/Target.h"
#include "Import/ImportGraph.h"
#include "Support/Error.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <deque>

namespace attnc {

std::vector<std::pair<std::string, std::string>>
compileForCudaFiles(const Graph &graph, const CompileOptions &options,
                    const std::string &chip) {
  if (options.backend != "mlir")
    throw UserError("--target " + options.target + ": --backend " +
                    options.backend +
                    " has no CUDA code generator; use "
                    "--backend mlir");
  if (!options.schedulePath.empty())
    throw UserError("--schedule: CUDA targets have no schedule files yet");
  for (const std::string &stage : options.emitMlirStages)
    if (stage != "attn" && stage != "fused" && stage != "kernels")
      throw UserError("--emit mlir:" + stage +
                      ": CUDA targets print the "
                      "stages attn, fused and kernels (the gpu.module)");
  if (options.emitLlvm)
    throw UserError("--emit llvm: CUDA targets write NAME.ptx instead");

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  // NAME.STAGE.mlir (NAME.mlir for kernels) of each stage --emit asks for;
  // a deque, so that the text `asked` hands out stays where it is.
  std::deque<std::pair<std::string, std::string>> emitted;
  auto asked = [&](const std::string &stage) -> std::string * {
    if (!llvm::is_contained(options.emitMlirStages, stage))
      return nullptr;
    emitted.push_back(
        {graph.name + (stage == "kernels" ? "" : "." + stage) + ".mlir", ""});
    return &emitted.back().second;
  };
  auto stageDone = [&](const std::string &stage) {
    if (std::string *text = asked(stage)) {
      llvm::raw_string_ostream stream(*text);
      module->print(stream);
    }
  };
  stageDone("attn");
  runAttnPipeline(*module);
  stageDone("fused");
  GpuCompiled compiled = compileForCuda(*module, chip, asked("kernels"));

  std::string manifest =
      cudaKernelManifest(graph, options.target, chip, compiled);
  // The host object: the descriptor and the PTX it carries, and NAME_entry
  // where the graph has ops outside attention (what is left of the module;
  // else nothing, and the object holds the descriptor alone).
  lowerToLLVMDialect(*module);
  std::string object = emitObject(
      *module, cpuTarget("x86-64"), nullptr, [&](llvm::Module &llvmModule) {
        addCudaKernelDescriptor(llvmModule, graph, options.target, manifest,
                                compiled);
      });
  std::vector<std::pair<std::string, std::string>> files{
      {graph.name + ".o", object},
      {graph.name + ".h", kernelHeader(graph, /*cuda=*/true)},
      {graph.name + ".json", manifest},
      {graph.name + ".ptx", compiled.ptx}};
  files.insert(files.end(), emitted.begin(), emitted.end());
  return files;
}

} // namespace attnc
