//===- PlanParams.h - Plan values as a pipeline's buffers --------*- C++
//-*-===//
//
// What every Halide pipeline of the backend (attention and primitive) does
// with the plan values it reads and writes: their Halide types, one
// ImageParam per value in argument order, and the graph's fixed sizes as
// bounds Halide specialises on.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_HALIDE_PLANPARAMS_H
#define ATTNC_HALIDE_PLANPARAMS_H

#include "Import/KernelPlan.h"

#include <Halide.h>

#include <vector>

namespace attnc {

/// Halide's type for an attnrt dtype (bool as one byte).
Halide::Type halideType(DType dtype);

/// Bounds a buffer by a plan shape: fixed sizes are promises Halide
/// specialises on, run-time ones start at 0.
void constrainToShape(Halide::OutputImageParam buffer, const Shape &shape);

/// A pipeline's input buffers: one ImageParam (named v<value>) per plan
/// value, made on first use, in the order they become its arguments.
struct PlanParams {
  std::vector<Halide::ImageParam> images;
  std::vector<int> values; ///< The plan value of each image.
  Halide::ImageParam of(const KernelPlan &plan, int value);
};

} // namespace attnc

#endif // ATTNC_HALIDE_PLANPARAMS_H
