//===- PrimitiveSchedule.cpp - CPU schedules of primitive kernels ---------===//
//
// Simple schedules, nothing measured: the innermost dim in vectors; matrix
// products in tiles of 4 rows × 2 vectors of N with the reduction inside,
// column panels outermost so that a panel of b stays in cache while every row
// passes over it. Every split guards its tail (GuardWithIf): sizes may be
// run-time values smaller than a vector, and a guarded loop reads nothing
// past a buffer, so the algorithm needs no clamps. Halide partitions such
// loops into a dense main part and a guarded tail.
//
//===----------------------------------------------------------------------===//

#include "Halide/PrimitiveFuncs.h"

namespace attnc {

using namespace Halide;

namespace {

constexpr TailStrategy kGuard = TailStrategy::GuardWithIf;

void scheduleProduct(PrimitiveFuncs &f, int vector) {
  std::vector<Var> &v = f.vars;
  int rank = int(v.size());
  Var no("no"), ni("ni"), mo("mo"), mi("mi");
  RVar k = f.reduction.x;
  if (f.hasCols && f.hasRows) {
    Var n = v[0], m = v[1];
    f.result.tile(n, m, no, mo, ni, mi, 2 * vector, 4, kGuard)
        .reorder(ni, mi, mo, no)
        .vectorize(ni, vector);
    f.accumulator.compute_at(f.result, mo).vectorize(n, vector, kGuard);
    f.accumulator.update().reorder(n, m, k).vectorize(n, vector, kGuard);
  } else if (f.hasCols) {
    Var n = v[0];
    f.result.split(n, no, ni, 2 * vector, kGuard).vectorize(ni, vector);
    f.accumulator.compute_at(f.result, no).vectorize(n, vector, kGuard);
    f.accumulator.update().reorder(n, k).vectorize(n, vector, kGuard);
  } else if (rank > 0) {
    f.accumulator.compute_at(f.result, v[0]);
  } else {
    f.accumulator.compute_root();
  }
  if (f.rhs.defined()) {
    // The staged b: per batch index of the result (or once).
    if (f.rhs.args().size() > 2)
      f.rhs.compute_at(f.result, v[f.hasRows + f.hasCols]);
    else
      f.rhs.compute_root();
    f.rhs.vectorize(f.rhs.args()[0], vector, kGuard);
  }
}

/// A reduction over the result's vars (minus the reduced one for softmax's
/// row max and sum): vectors along dim 0 when the reduction keeps dim 0,
/// per innermost row otherwise.
void scheduleReduction(PrimitiveFuncs &f, Func &func, Var xo, int vector) {
  std::vector<Var> &v = f.vars;
  int rank = int(v.size());
  bool keepsDim0 =
      func.args().size() > 0 && func.args()[0].name() == v[0].name();
  if (func.args().empty()) {
    func.compute_root();
    return;
  }
  if (keepsDim0 && f.axis != 0) {
    func.compute_at(f.result, xo).vectorize(v[0], vector, kGuard);
    func.update().reorder(v[0], f.reduction.x).vectorize(v[0], vector, kGuard);
    return;
  }
  // The reduced dim is the innermost one: one row at a time.
  func.compute_at(f.result, rank >= 2 ? v[1] : xo);
}

} // namespace

void schedulePrimitive(PrimitiveFuncs &f, const HalideSchedule &schedule) {
  int vector = int(std::max<int64_t>(schedule.vectorWidth, 1));
  if (f.op == "matmul" || f.op == "linear")
    return scheduleProduct(f, vector);
  std::vector<Var> &v = f.vars;
  Var xo("xo"), xi("xi");
  if (!v.empty())
    f.result.split(v[0], xo, xi, vector, kGuard).vectorize(xi);
  if (f.op == "reduce_sum")
    scheduleReduction(f, f.accumulator, xo, vector);
  if (f.op == "softmax") {
    scheduleReduction(f, f.rowMax, xo, vector);
    scheduleReduction(f, f.rowSum, xo, vector);
  }
}

} // namespace attnc
