//===- EmitObject.h - From MLIR to an object file ----------------*- C++
//-*-===//
//
// The last steps of every CPU kernel: lower func/scf/vector/arith/math/memref
// to the LLVM dialect, translate to LLVM IR, optimise for the target CPU and
// emit an ELF object.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_EMITOBJECT_H
#define ATTNC_CODEGEN_EMITOBJECT_H

#include "Codegen/Target.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace attnc {

/// Lowers `module` in place to the LLVM dialect (memrefs as bare pointers at
/// function boundaries, so static-shape kernels take plain pointers).
/// Throws std::logic_error with the diagnostics on failure: the input is
/// generated code, so a failure is a compiler bug.
void lowerToLLVMDialect(mlir::ModuleOp module);

/// Translates an LLVM-dialect module and compiles it at -O3 for `target`;
/// returns the object file's bytes. When `llvmIR` is non-null it receives
/// the optimised LLVM IR as text (for `--emit llvm`). `extend`, when given,
/// adds to the translated module before optimisation (the kernel
/// descriptor).
std::string
emitObject(mlir::ModuleOp module, const CpuTarget &target,
           std::string *llvmIR = nullptr,
           const std::function<void(llvm::Module &)> &extend = nullptr);

/// Compiles LLVM bitcode another compiler wrote (the Halide backend's) at
/// -O3 for `target`, its CPU and features replacing the bitcode's.
std::string emitBitcodeObject(const std::string &bitcode,
                              const CpuTarget &target);

} // namespace attnc

#endif // ATTNC_CODEGEN_EMITOBJECT_H
