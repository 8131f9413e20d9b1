//===- ShapeRules.h - Shape inference shared by several ops -------*- C++
//-*-===//
//
// Rules on symbolic shapes. A named run-time size equals only itself; it
// broadcasts against a fixed 1. On failure each rule returns nullopt and
// explains why in `problem`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_GRAPH_SHAPERULES_H
#define ATTNC_GRAPH_SHAPERULES_H

#include "Graph/Graph.h"

namespace attnc {

/// numpy broadcasting of two shapes.
std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b,
                                     std::string &problem);

/// numpy matmul: batched [..., M, K] x [..., K, N] (b as [..., N, K] when
/// `transposeB`), with numpy's rules for 1-D operands.
std::optional<Shape> inferMatmulShape(const Shape &a, const Shape &b,
                                      bool transposeB, std::string &problem);

/// The shape a reshape of `input` to `target` produces; one entry of `target`
/// may be nullopt (written -1) and is inferred, to a fixed size or to a single
/// named size.
std::optional<Shape> inferReshape(const Shape &input,
                                  const std::vector<std::optional<Dim>> &target,
                                  std::string &problem);

} // namespace attnc

#endif // ATTNC_GRAPH_SHAPERULES_H
