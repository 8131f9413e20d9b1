//===- GpuKernels.cpp - Fused attention graphs as CUDA kernels ------------===//

#include "Codegen/GpuKernels.h"
#include "Codegen/Passes.h"

#include "Attn/IR/AttnOps.h"
#include "Attn/Transforms/Passes.h"
#include "Support/Error.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <mutex>

namespace attnc {

std::optional<std::string> cudaChip(const std::string &target) {
  llvm::StringRef name(target);
  if (!name.consume_front("cuda-"))
    return std::nullopt;
  if (name == "sm80" || name == "sm90" || name == "sm90a")
    return "sm_" + name.drop_front(2).str();
  throw UserError("--target " + target +
                  ": unknown CUDA target; allowed: cuda-sm80, cuda-sm90, "
                  "cuda-sm90a");
}

namespace {

/// ptxas from PATH, else the CUDA toolkit's usual place; "" when neither.
std::string findPtxas() {
  if (llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName("ptxas"))
    return *found;
  const char *usual = "/usr/local/cuda/bin/ptxas";
  return llvm::sys::fs::can_execute(usual) ? usual : "";
}

/// Runs `ptxas -v` on `ptx`; fills each kernel's report, or says why not.
void runPtxas(GpuCompiled &compiled, const std::string &chip) {
  std::string ptxas = findPtxas();
  if (ptxas.empty()) {
    compiled.ptxasNote = "no ptxas (the CUDA toolkit) on this machine";
    return;
  }
  // Registered before they exist: a signal in between would leave them.
  llvm::SmallString<128> input, output, log;
  llvm::sys::fs::createUniquePath("attnc-%%%%%%%%.ptx", input, true);
  llvm::sys::fs::createUniquePath("attnc-%%%%%%%%.cubin", output, true);
  llvm::sys::fs::createUniquePath("attnc-%%%%%%%%.log", log, true);
  for (const auto &path : {input, output, log})
    llvm::sys::RemoveFileOnSignal(path);
  auto cleanUp = [&] {
    for (const auto &path : {input, output, log}) {
      llvm::sys::fs::remove(path);
      llvm::sys::DontRemoveFileOnSignal(path);
    }
  };
  {
    std::error_code error;
    llvm::raw_fd_ostream stream(input, error, llvm::sys::fs::CD_CreateNew);
    if (error) {
      cleanUp();
      compiled.ptxasNote = "cannot write " + input.str().str();
      return;
    }
    stream << compiled.ptx;
  }
  std::string arch = "-arch=" + chip;
  llvm::SmallVector<llvm::StringRef> args{ptxas, arch, "-v",
                                          input, "-o", output};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, log, log};
  std::string message;
  int status = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                         /*SecondsToWait=*/120, 0, &message);
  std::string text;
  if (auto buffer = llvm::MemoryBuffer::getFile(log))
    text = (*buffer)->getBuffer().str();
  cleanUp();
  if (status != 0) {
    // LLVM's PTX that ptxas refuses is a compiler bug, not a user error.
    throw std::runtime_error(
        "ptxas -arch=" + chip + " refused the PTX attnc made" +
        (message.empty() ? "" : " (" + message + ")") + ": " + text);
  }
  // "Compiling entry function 'NAME' for 'sm_90'", then "Used 72 registers"
  // and "N bytes stack frame, N bytes spill stores, N bytes spill loads".
  std::map<std::string, PtxasReport> reports;
  std::string current;
  llvm::Regex entry("Compiling entry function '([A-Za-z0-9_]+)'");
  llvm::Regex frame("([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, "
                    "([0-9]+) bytes spill loads");
  llvm::Regex used("Used ([0-9]+) registers");
  llvm::Regex shared("([0-9]+) bytes smem");
  llvm::SmallVector<llvm::StringRef> lines, match;
  llvm::StringRef(text).split(lines, '\n');
  auto number = [](llvm::StringRef digits) {
    int value = 0;
    digits.getAsInteger(10, value);
    return value;
  };
  for (llvm::StringRef line : lines) {
    if (entry.match(line, &match)) {
      current = match[1].str();
      reports[current];
    } else if (current.empty()) {
      continue;
    } else if (frame.match(line, &match)) {
      reports[current].stackBytes = number(match[1]);
      reports[current].spillStoreBytes = number(match[2]);
      reports[current].spillLoadBytes = number(match[3]);
    } else if (used.match(line, &match)) {
      reports[current].registers = number(match[1]);
      if (shared.match(line, &match))
        reports[current].sharedBytes = number(match[1]);
    }
  }
  for (GpuKernel &kernel : compiled.kernels)
    if (auto found = reports.find(kernel.name); found != reports.end())
      kernel.ptxas = found->second;
}

} // namespace

KeySplitRule keySplitRule(const GpuKernel &attention) {
  if (attention.tensorCore.empty())
    return {4096, 64};
  return {1024, 256};
}

GpuCompiled compileForCuda(mlir::ModuleOp module, const std::string &chip,
                           std::string *gpuModule) {
  mlir::MLIRContext &context = *module.getContext();
  {
    mlir::DialectRegistry registry;
    mlir::NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    mlir::registerLLVMDialectTranslation(registry);
    mlir::registerNVVMDialectTranslation(registry);
    mlir::registerGPUDialectTranslation(registry);
    context.appendDialectRegistry(registry);
  }
  static std::once_flag registered;
  std::call_once(registered, [] {
    mlir::registerConvertGpuOpsToNVVMOps();
    mlir::registerSCFToControlFlow();
    mlir::registerReconcileUnrealizedCasts();
    mlir::registerGpuNVVMAttachTarget();
    mlir::registerGpuModuleToBinaryPass();
  });

  // The first error an op reports is the message: it names what has no GPU
  // kernel yet.
  // "G.json: node o: attention with ALiBi has no CUDA kernel yet (...)".
  std::string file;
  if (auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(module.getLoc()))
    file = loc.getFilename().str() + ": ";
  std::string firstError;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() != mlir::DiagnosticSeverity::Error ||
        !firstError.empty())
      return mlir::success();
    firstError = file;
    if (auto name = mlir::dyn_cast<mlir::NameLoc>(d.getLocation()))
      firstError += "node " + name.getName().str() + ": ";
    firstError += d.str();
    return mlir::success();
  });

  GpuCompiled compiled;
  // Ops outside attention, an output no attention op computes (an input,
  // one value returned twice) or an attention result no output is (the
  // output when only lse is): host code runs the graph, allocates and
  // copies (attn-build-cuda-entry).
  llvm::DenseSet<mlir::Value> returned;
  module.walk([&](mlir::func::ReturnOp ret) {
    for (mlir::Value value : ret.getOperands())
      if (!value.getDefiningOp<mlir::attn::AttentionOp>() ||
          !returned.insert(value).second)
        compiled.hasEntry = true;
  });
  module.walk([&](mlir::Operation *op) {
    if (!llvm::isa<mlir::attn::AttnDialect>(op->getDialect()))
      return;
    if (!llvm::isa<mlir::attn::AttentionOp>(op) ||
        llvm::any_of(op->getResults(),
                     [&](mlir::Value result) { return !returned.count(result); }))
      compiled.hasEntry = true;
  });
  {
    mlir::PassManager pm(&context);
    mlir::attn::LowerToGpuPassOptions options;
    options.entry = compiled.hasEntry;
    options.wgmma = chip == "sm_90a";
    pm.addPass(mlir::attn::createLowerToGpuPass(options));
    if (compiled.hasEntry)
      pm.addPass(createBuildCudaEntryPass());
    if (mlir::failed(pm.run(module)))
      throw UserError(firstError.empty() ? "cannot lower the graph to CUDA"
                                         : firstError);
  }
  if (gpuModule) {
    llvm::raw_string_ostream stream(*gpuModule);
    module.print(stream);
  }
  for (auto gpuModule : module.getOps<mlir::gpu::GPUModuleOp>())
    for (auto kernel : gpuModule.getOps<mlir::gpu::GPUFuncOp>()) {
      GpuKernel entry;
      entry.name = kernel.getName().str();
      if (auto merge = kernel->getAttrOfType<mlir::StringAttr>("attn.merge"))
        entry.merge = merge.str();
      if (auto mma =
              kernel->getAttrOfType<mlir::StringAttr>("attn.tensor_core"))
        entry.tensorCore = mma.str();
      if (auto block = kernel->getAttrOfType<mlir::ArrayAttr>("attn.block"))
        for (mlir::Attribute size : block)
          entry.block.push_back(mlir::cast<mlir::IntegerAttr>(size).getInt());
      if (auto grid = kernel->getAttrOfType<mlir::ArrayAttr>("attn.grid"))
        for (mlir::Attribute size : grid)
          entry.grid.push_back(
              mlir::cast<mlir::StringAttr>(size).getValue().str());
      if (auto rows =
              kernel->getAttrOfType<mlir::IntegerAttr>("attn.block_rows"))
        entry.blockRows = rows.getInt();
      if (auto flags =
              kernel->getAttrOfType<mlir::IntegerAttr>("attn.row_flags"))
        entry.rowFlags = flags.getInt();
      if (auto bytes =
              kernel->getAttrOfType<mlir::StringAttr>("attn.workspace_bytes"))
        entry.workspaceBytes = bytes.str();
      if (auto bytes = kernel->getAttrOfType<mlir::ArrayAttr>(
              "attn.workspace_row_bytes"))
        for (mlir::Attribute term : bytes)
          entry.workspaceRowBytes.push_back(
              mlir::cast<mlir::IntegerAttr>(term).getInt());
      if (auto params = kernel->getAttrOfType<mlir::ArrayAttr>("attn.params"))
        for (mlir::Attribute param : params)
          entry.params.push_back(
              mlir::cast<mlir::StringAttr>(param).getValue().str());
      if (auto tensors = kernel->getAttrOfType<mlir::ArrayAttr>("attn.tensors"))
        for (mlir::Attribute tensor : tensors)
          entry.tensors.push_back(
              mlir::cast<mlir::StringAttr>(tensor).getValue().str());
      if (auto function =
              kernel->getAttrOfType<mlir::IntegerAttr>("attn.function"))
        entry.function = function.getInt();
      if (auto words = kernel->getAttrOfType<mlir::IntegerAttr>("attn.words"))
        entry.words = words.getInt();
      if (auto node = kernel->getAttrOfType<mlir::StringAttr>("attn.node"))
        entry.node = node.str();
      if (auto sizes =
              kernel->getAttrOfType<mlir::DictionaryAttr>("attn.sizes"))
        for (mlir::NamedAttribute size : sizes) {
          auto source = mlir::cast<mlir::ArrayAttr>(size.getValue());
          entry.sizes.push_back(
              {size.getName().str(),
               {mlir::cast<mlir::StringAttr>(source[0]).getValue().str(),
                mlir::cast<mlir::IntegerAttr>(source[1]).getInt()}});
        }
      compiled.kernels.push_back(std::move(entry));
    }

  mlir::PassManager pm(&context);
  std::string pipeline = "convert-scf-to-cf,gpu.module(convert-gpu-to-nvvm),"
                         "reconcile-unrealized-casts,nvvm-attach-target{chip=" +
                         chip + " O=3},gpu-module-to-binary{format=isa}";
  if (mlir::failed(mlir::parsePassPipeline(pipeline, pm)))
    throw std::runtime_error("bad CUDA pass pipeline: " + pipeline);
  if (mlir::failed(pm.run(module)))
    throw std::runtime_error("lowering to PTX failed: " + firstError);
  for (auto binary :
       llvm::make_early_inc_range(module.getOps<mlir::gpu::BinaryOp>())) {
    for (mlir::Attribute object : binary.getObjects()) {
      llvm::StringRef text =
          mlir::cast<mlir::gpu::ObjectAttr>(object).getObject().getValue();
      // The PTX ends with a NUL that ptxas does not take.
      compiled.ptx += text.rtrim('\0').str();
    }
    binary.erase(); // What is left is host code.
  }
  module->removeAttr(mlir::gpu::GPUDialect::getContainerModuleAttrName());
  if (compiled.ptx.empty())
    throw std::runtime_error("lowering to PTX gave no PTX");
  runPtxas(compiled, chip);
  return compiled;
}

} // namespace attnc
