//===- KernelDescriptor.h - The attnrt_kernel a NAME.o exports --*- C++ -*-===//
//
// `const attnrt_kernel NAME_kernel` (runtime/include/attnc/attnrt.h): the
// argument names, dtypes and dims, the target, the manifest text and the
// entry (a CUDA kernel: its PTX and launches), as LLVM constants beside the
// code.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_KERNELDESCRIPTOR_H
#define ATTNC_CODEGEN_KERNELDESCRIPTOR_H

#include "Graph/Graph.h"

#include <cstdint>
#include <initializer_list>
#include <string>

namespace llvm {
class Module;
class StructType;
} // namespace llvm

namespace attnc {

/// Adds `NAME_kernel` to `module`, which must define `NAME_entry`.
void addKernelDescriptor(llvm::Module &module, const Graph &graph,
                         const std::string &target,
                         const std::string &manifest);

struct GpuCompiled;

/// Adds `NAME_kernel` of a CUDA kernel to `module`: no entry, the PTX and
/// the launches of `compiled` as its attnrt_cuda_code.
void addCudaKernelDescriptor(llvm::Module &module, const Graph &graph,
                             const std::string &target,
                             const std::string &manifest,
                             const GpuCompiled &compiled);

/// Checks with `module`'s data layout that `type`, the LLVM type the
/// compiler emits for the C struct `cName`, has that struct's field
/// `offsets` (offsetof, one per LLVM field) and `size` (sizeof); throws
/// std::logic_error (a compiler bug) if not.
void checkStructLayout(const llvm::Module &module, llvm::StructType *type,
                       const char *cName,
                       std::initializer_list<uint64_t> offsets, uint64_t size);

} // namespace attnc

#endif // ATTNC_CODEGEN_KERNELDESCRIPTOR_H
