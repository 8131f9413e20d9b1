//===- PrimitiveFuncs.h - Primitive kernels as Halide Funcs -----*- C++ -*-===//
//-*-===//
//
// Shared by PrimitiveAlgorithm.cpp (what is computed) and
// PrimitiveSchedule.cpp (how), so that schedules never touch the algorithm.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_HALIDE_PRIMITIVEFUNCS_H
#define ATTNC_HALIDE_PRIMITIVEFUNCS_H

#include "Halide/HalideBackend.h"
#include "Halide/PlanParams.h"

#include <Halide.h>

namespace attnc {

struct PrimitiveFuncs {
  std::string op;
  /// The result's loop variables, Halide order: vars[0] is the innermost
  /// (last graph) dim.
  std::vector<Halide::Var> vars;
  /// Halide dim of the reduced or softmax axis in the input, or -1.
  int axis = -1;
  /// matmul, linear: the result has these dims (a 1-D operand has none).
  bool hasRows = false, hasCols = false;
  Halide::Func result;
  /// matmul, linear, reduce_sum: the f32 (or i32) sums, over result vars.
  Halide::Func accumulator;
  /// matmul with transpose_b, linear: b as [K, N] in f32, so that products
  /// read it densely along N; over (n, k, the result's batch vars).
  Halide::Func rhs;
  /// softmax: row max and row sum, over the result vars but the axis.
  Halide::Func rowMax, rowSum;
  Halide::RDom reduction;
  PlanParams params; ///< The buffer arguments, in order.
  int resultValue = -1;
  /// Whether the pipeline must keep IEEE infinities (softmax and masks see
  /// -inf): compiled with strict_float, not Halide's fast-math flags.
  bool strictFloat = true;
};

/// Builds the algorithm of a primitive `kernel` of `plan`. Throws UserError
/// naming the node for what the backend cannot express.
PrimitiveFuncs definePrimitive(const KernelPlan &plan,
                               const PlannedKernel &kernel);

/// The CPU schedule: innermost dim vectorized, products in register tiles.
void schedulePrimitive(PrimitiveFuncs &funcs, const HalideSchedule &schedule);

} // namespace attnc

#endif // ATTNC_HALIDE_PRIMITIVEFUNCS_H
