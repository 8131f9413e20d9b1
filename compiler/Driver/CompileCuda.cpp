//===- CompileCuda.cpp - attnc compile --target cuda-* --------------------===//
//
// NAME.ptx (one kernel per fused attention op, see attn-lower-to-gpu) and
// NAME.json: the graph's inputs and outputs as for the CPU targets, and per
// kernel its parameters, launch shape and ptxas report. No NAME.o or NAME.h
// yet: libattnrt has no CUDA launcher (docs/design/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "Driver/Compile.h"

#include "Codegen/GpuKernels.h"
#include "Codegen/KernelInterface.h"
#include "Import/ImportGraph.h"
#include "Support/Error.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

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
  std::vector<std::pair<std::string, std::string>> files;
  auto stageDone = [&](const std::string &stage, const std::string &text) {
    if (!llvm::is_contained(options.emitMlirStages, stage))
      return;
    files.push_back(
        {graph.name + (stage == "kernels" ? "" : "." + stage) + ".mlir", text});
  };
  auto print = [&] {
    std::string text;
    llvm::raw_string_ostream stream(text);
    module->print(stream);
    return text;
  };
  stageDone("attn", print());
  runAttnPipeline(*module);
  stageDone("fused", print());
  GpuCompiled compiled = compileForCuda(*module, chip);
  stageDone("kernels", compiled.gpuModule);

  // The inputs, outputs and run-time sizes as every manifest gives them;
  // the CPU target and schedule replaced by the CUDA ones.
  nlohmann::ordered_json manifest = nlohmann::ordered_json::parse(
      kernelManifest(graph, "mlir", cpuTarget("x86-64"),
                     defaultSchedule(cpuTarget("x86-64"))));
  manifest.erase("schedule");
  manifest["target"] = {{"name", options.target}, {"chip", chip}};
  manifest["ptx"] = graph.name + ".ptx";
  manifest["launcher"] = "none yet: libattnrt runs CPU kernels only";
  nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
  for (const GpuKernel &kernel : compiled.kernels) {
    nlohmann::ordered_json entry;
    entry["name"] = kernel.name;
    entry["params"] = kernel.params;
    entry["block"] = {128, 1, 1};
    entry["grid"] = {"ceil(S / 4)", "Hq", "B"};
    if (kernel.ptxas)
      entry["ptxas"] = {{"registers", kernel.ptxas->registers},
                        {"spill_store_bytes", kernel.ptxas->spillStoreBytes},
                        {"spill_load_bytes", kernel.ptxas->spillLoadBytes},
                        {"shared_bytes", kernel.ptxas->sharedBytes},
                        {"stack_bytes", kernel.ptxas->stackBytes}};
    else
      entry["ptxas"] = compiled.ptxasNote;
    kernels.push_back(entry);
  }
  manifest["kernels"] = kernels;
  files.insert(files.begin(),
               {{graph.name + ".ptx", compiled.ptx},
                {graph.name + ".json", manifest.dump(2) + "\n"}});
  return files;
}

} // namespace attnc
