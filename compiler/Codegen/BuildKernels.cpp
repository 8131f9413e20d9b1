//===- BuildKernels.cpp - A fused attn module as CPU kernels --------------===//
#include "Codegen/BuildKernels.h"

#include <stdexcept>

namespace attnc {
void buildKernels(mlir::ModuleOp, const Graph &, const AttentionSchedule &,
                  const CpuTarget &, const std::string &) {
  throw std::logic_error("buildKernels: not implemented yet");
}
} // namespace attnc
