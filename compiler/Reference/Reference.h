//===- Reference.h - The float64 reference evaluator --------------*- C++
//-*-===//
//
// Computes a graph exactly as docs/graph-format.md defines it, in float64,
// straight from the definitions (no tiling, no online softmax). It is the
// oracle every backend is tested against, so it favours obviousness over
// speed; it never materialises the S x T score matrix of an attention op, so
// its memory stays O(inputs + outputs).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_REFERENCE_REFERENCE_H
#define ATTNC_REFERENCE_REFERENCE_H

#include "Graph/Graph.h"
#include "Support/Tensor.h"

#include <functional>

namespace attnc {

/// A float64 tensor, dense, C order.
struct F64Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

/// Evaluates `graph` on `inputs` (in Graph::inputs order, with the dtypes and
/// the concrete shapes the graph declares under `dims`). Returns the outputs
/// in Graph::outputs order, unrounded.
std::vector<F64Tensor> evaluateReference(const Graph &graph,
                                         const DimBindings &dims,
                                         const std::vector<Tensor> &inputs);

/// The standard ALiBi slopes for `heads` query heads.
std::vector<double> alibiSlopes(int64_t heads);

/// Computes one attention op; `operand(id)` yields each operand's values.
/// Returns the output and, when the op returns it, the log-sum-exp.
std::vector<F64Tensor>
evaluateAttention(const Graph &graph, const AttentionOp &op,
                  const DimBindings &dims,
                  const std::function<const F64Tensor &(ValueId)> &operand);

} // namespace attnc

#endif // ATTNC_REFERENCE_REFERENCE_H
