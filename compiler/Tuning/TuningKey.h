//===- TuningKey.h - What a tuning record is valid for ------------*- C++
//-*-===//
//
// The parts of a TuningKey that come from the graph, the sizes and the
// machine (docs/tuning.md):
//   - kernel: a hash of the fused kernels with every size bound: each
//     attn.attention's attributes, operand types, head dims and GQA ratio,
//     and the names of the other ops left after fusion;
//   - shape bucket: S, T and B·Hq of the first attention, each rounded up
//     to a power of two;
//   - target: a hash of the target, the CPU model, its ISA features, cache
//     sizes and core count.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNING_TUNINGKEY_H
#define ATTNC_TUNING_TUNINGKEY_H

#include "Codegen/Target.h"
#include "Graph/Graph.h"

#include <cstdint>
#include <string>

namespace attnc::tuning {

struct KernelIdentity {
  std::string kernel;      ///< 16 hex digits.
  std::string shapeBucket; ///< "S=2^7 T=2^11 BH=2^5".
  /// S of the first attention at the bound sizes; -1 without attention.
  int64_t queryLength = -1;
  /// Its query rows per kv head (S × Hq/Hkv), the rows of an MLIR task; -1
  /// without attention.
  int64_t taskRows = -1;
  std::string description; ///< What was hashed, for people and --verbose.
};

/// The identity of `graph`'s kernels at `dims` (every run-time size bound).
KernelIdentity kernelIdentity(const Graph &graph, const DimBindings &dims);

struct MachineIdentity {
  std::string fingerprint; ///< 16 hex digits.
  std::string cpu;         ///< The CPU's model name.
  std::string description; ///< What was hashed.
};

/// The machine that measures kernels for `target`.
MachineIdentity machineIdentity(const CpuTarget &target);

/// The attnc version records are written by ("0.1.0").
std::string attncVersion();

/// `graph` with every run-time size replaced by its value in `dims`.
Graph specializeGraph(const Graph &graph, const DimBindings &dims);

} // namespace attnc::tuning

#endif // ATTNC_TUNING_TUNINGKEY_H
