//===- KernelPlan.h - The fused kernels of a graph, without MLIR -*- C++ -*-===//
//
// What a backend that is not MLIR-based (the Halide backend) needs to know
// about a graph after fusion: the kernels left once the attn pipeline has
// run, every attribute of each fused attention, and which graph inputs,
// outputs or intermediates feed each operand. It is read off the attn IR
// (import, fuse, canonicalize), so such backends see exactly the fusion the
// MLIR backend sees; this header deliberately names no MLIR type.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_IMPORT_KERNELPLAN_H
#define ATTNC_IMPORT_KERNELPLAN_H

#include "Attn/IR/AttnSemantics.h"
#include "Graph/Graph.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc {

/// A tensor a kernel reads or writes.
struct PlanValue {
  std::string name;  ///< Graph value name ("q", "o.lse"), or "" if unnamed.
  DType dtype = DType::F32;
  Shape shape;       ///< Symbolic, in terms of the graph's dims.
  int input = -1;    ///< Position among the graph inputs, or -1.
  int output = -1;   ///< Position among the graph outputs, or -1.
  int producer = -1; ///< The kernel that computes it; -1 for graph inputs.

  /// Index into the attnrt entry's `buffers` (inputs, then outputs), or -1
  /// for an intermediate.
  int buffer(int numInputs) const {
    return input >= 0 ? input : output >= 0 ? numInputs + output : -1;
  }
};

/// One fused attn.attention. Operands are indices into KernelPlan::values;
/// -1 means absent.
struct AttentionPlan {
  ScoreKind score = ScoreKind::Dot;
  Layout layout = Layout::BHSD;
  mlir::attn::semantics::ScaleRule scale; ///< The op's getScaleRule().
  std::optional<double> softcap;
  bool alibi = false; ///< -slope_h·|i' - j|; standard slopes unless given.
  /// Causal, window and key_length: the op's getKeyVisibility().
  mlir::attn::semantics::KeyVisibility visibility;
  int query = -1, key = -1, value = -1;
  int generalWeight = -1;                              ///< general: W.
  int queryWeight = -1, keyWeight = -1, scoreVector = -1; ///< additive.
  int alibiSlopes = -1, keyLengths = -1;
  std::vector<int> biases;
  std::vector<int> masks;
  std::vector<bool> maskDrops; ///< Per mask: true entries drop the key.
  int output = -1, lse = -1;   ///< Results; lse is -1 without return_lse.
};

/// The attributes of a primitive kernel (any op but attention and copy), as
/// its attn op carries them after canonicalization: axes are non-negative,
/// a reshape's or unsqueeze's result shape is its result value's.
struct PrimitivePlan {
  bool transposeB = false; ///< matmul: b is [..., N, K].
  bool hasBias = false;    ///< linear: the operands are x, w and b.
  double value = 0; ///< scale: the factor; masked_fill: the fill (may be -inf).
  int64_t axis = 0; ///< softmax, unsqueeze, repeat, reduce_sum, concat.
  int64_t times = 1;     ///< repeat.
  int64_t start = 0, end = 0; ///< slice.
  int64_t left = 0, right = 0; ///< window_mask.
  bool keepdims = false; ///< reduce_sum.
  /// transpose: result dim d is input dim permutation[d].
  std::vector<int64_t> permutation;
};

struct PlannedKernel {
  std::string op;                 ///< "attention", "linear", ...
  std::string name;               ///< The last graph node it covers.
  std::vector<std::string> nodes; ///< Every graph node it covers.
  std::string pointer;            ///< JSON pointer of `name`'s node.
  std::vector<int> operands, results; ///< Indices into values.
  std::optional<AttentionPlan> attention; ///< Set for op == "attention".
  std::optional<PrimitivePlan> primitive; ///< Set for the other ops.
};

struct KernelPlan {
  std::string graphName, graphFile;
  std::vector<std::string> runtimeDims;
  int numInputs = 0, numOutputs = 0;
  std::vector<PlanValue> values;
  std::vector<PlannedKernel> kernels; ///< In execution order.
};

/// Imports `graph`, runs the attn pipeline (fusion included) and describes
/// the kernels that are left. Throws UserError for graphs attn IR cannot
/// express (as importGraph does).
KernelPlan planKernels(const Graph &graph);

/// The plan as JSON text, for tests and `--emit plan`-style inspection.
std::string planToJson(const KernelPlan &plan);

} // namespace attnc

#endif // ATTNC_IMPORT_KERNELPLAN_H
