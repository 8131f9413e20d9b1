//===- EmitObject.cpp - From MLIR to an object file -----------------------===//

#include "Codegen/EmitObject.h"
#include "Support/MLIRDiagnostics.h"

#include "Attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/AMX/AMXToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/X86Vector/X86VectorToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

#include <mutex>
#include <stdexcept>

namespace attnc {
namespace {

void registerOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
  });
}

/// Optimises `module` at -O3 for `target` (its CPU and features on every
/// function) and emits it as an object file.
std::string compileModule(llvm::Module &module, const CpuTarget &target,
                          std::string *llvmIR,
                          const std::function<void(llvm::Module &)> &extend) {
  std::string error;
  const llvm::Target *llvmTarget =
      llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!llvmTarget)
    throw std::logic_error("no LLVM target for " + target.triple + ": " +
                           error);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      target.triple, target.cpu, target.features, options, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  module.setTargetTriple(target.triple);
  module.setDataLayout(machine->createDataLayout());
  if (extend)
    extend(module);
  // Every function carries the CPU, so nothing is compiled for a lesser one.
  for (llvm::Function &function : module) {
    if (function.isDeclaration())
      continue;
    function.addFnAttr("target-cpu", target.cpu);
    if (!target.features.empty())
      function.addFnAttr("target-features", target.features);
  }

  auto optimize =
      mlir::makeOptimizingTransformer(/*optLevel=*/3,
                                      /*sizeLevel=*/0, machine.get());
  if (llvm::Error failure = optimize(&module))
    throw std::logic_error("LLVM optimisation failed: " +
                           llvm::toString(std::move(failure)));
  if (llvmIR) {
    llvm::raw_string_ostream stream(*llvmIR);
    module.print(stream, nullptr);
  }

  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream stream(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, stream, nullptr,
                                   llvm::CodeGenFileType::ObjectFile))
    throw std::logic_error("the target cannot emit object files");
  codegen.run(module);
  return std::string(object.begin(), object.end());
}

} // namespace

void lowerToLLVMDialect(mlir::ModuleOp module) {
  registerOnce();
  mlir::PassManager pm(module.getContext());
  mlir::attn::buildAttnLowerToLLVMPipeline(pm);
  std::string diagnostics;
  if (failed(collectingDiagnostics(*module.getContext(), diagnostics,
                                   [&] { return pm.run(module); })))
    throw std::logic_error("lowering to the LLVM dialect failed: " +
                           diagnostics);
  // A pass pipeline can succeed and convert nothing; make that loud. (No
  // throwing inside walk: libMLIR's frames are built without exceptions.)
  std::string leftover;
  module.walk([&](mlir::Operation *op) {
    llvm::StringRef dialect = op->getName().getDialectNamespace();
    if (leftover.empty() && !llvm::isa<mlir::ModuleOp>(op) &&
        dialect != "llvm" && dialect != "x86vector" && dialect != "amx") {
      llvm::raw_string_ostream stream(leftover);
      op->print(stream, mlir::OpPrintingFlags().skipRegions());
    }
  });
  if (!leftover.empty())
    throw std::logic_error("lowering left an op outside the LLVM dialect: " +
                           leftover);
}

std::string emitObject(mlir::ModuleOp module, const CpuTarget &target,
                       std::string *llvmIR,
                       const std::function<void(llvm::Module &)> &extend) {
  registerOnce();
  mlir::MLIRContext *context = module.getContext();
  mlir::registerBuiltinDialectTranslation(*context);
  mlir::registerLLVMDialectTranslation(*context);
  mlir::registerX86VectorDialectTranslation(*context);
  mlir::registerAMXDialectTranslation(*context);

  llvm::LLVMContext llvmContext;
  std::string diagnostics;
  std::unique_ptr<llvm::Module> llvmModule;
  (void)collectingDiagnostics(*context, diagnostics, [&] {
    llvmModule = mlir::translateModuleToLLVMIR(module, llvmContext);
    return mlir::success(llvmModule != nullptr);
  });
  if (!llvmModule)
    throw std::logic_error("translation to LLVM IR failed: " + diagnostics);
  return compileModule(*llvmModule, target, llvmIR, extend);
}

std::string emitBitcodeObject(const std::string &bitcode,
                              const CpuTarget &target) {
  registerOnce();
  llvm::LLVMContext llvmContext;
  llvm::Expected<std::unique_ptr<llvm::Module>> module = llvm::parseBitcodeFile(
      llvm::MemoryBufferRef(bitcode, "halide"), llvmContext);
  if (!module)
    throw std::logic_error("reading Halide's bitcode failed: " +
                           llvm::toString(module.takeError()));
  // Halide named a CPU of its own choosing; the target's replaces it.
  for (llvm::Function &function : **module)
    function.removeFnAttr("target-features");
  return compileModule(**module, target, nullptr, nullptr);
}

} // namespace attnc
