//===- KernelDescriptor.h - The attnrt_kernel a NAME.o exports --*- C++ -*-===//
//
// `const attnrt_kernel NAME_kernel` (runtime/include/attnc/attnrt.h): the
// argument names, dtypes and dims, the target, the manifest text and the
// entry, as LLVM constants beside the code.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_KERNELDESCRIPTOR_H
#define ATTNC_CODEGEN_KERNELDESCRIPTOR_H

#include "Graph/Graph.h"

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace attnc {

/// Adds `NAME_kernel` to `module`, which must define `NAME_entry`.
void addKernelDescriptor(llvm::Module &module, const Graph &graph,
                         const std::string &target,
                         const std::string &manifest);

} // namespace attnc

#endif // ATTNC_CODEGEN_KERNELDESCRIPTOR_H
