//===- PrimitiveAlgorithm.cpp - attn primitives as Halide algorithms ------===//
//
// What one primitive kernel (matmul, linear, elementwise, softmax, masks,
// transpose, repeat, reduce_sum, concat) computes, with no scheduling, as
// compiler/Reference/*.cpp defines it. Halide's dim 0 is the innermost (last
// graph) dim. Floats are computed in f32 and rounded once when stored; data
// movement and masks keep the element type. reshape, unsqueeze and copies
// are no pipeline: NAME_entry copies their bytes.
//
//===----------------------------------------------------------------------===//

#include "Halide/AttentionFuncs.h"
#include "Halide/IndexExprs.h"
#include "Halide/PrimitiveFuncs.h"
#include "Support/Error.h"

#include <cmath>

namespace attnc {

using namespace Halide;

namespace {

class PrimitiveBuilder {
public:
  PrimitiveBuilder(const KernelPlan &plan, const PlannedKernel &kernel,
                   PrimitiveFuncs &f)
      : plan(plan), kernel(kernel), p(*kernel.primitive), f(f) {}
  void build();

private:
  const KernelPlan &plan;
  const PlannedKernel &kernel;
  const PrimitivePlan &p;
  PrimitiveFuncs &f;
  int rank = 0; ///< The result's.

  [[noreturn]] void unsupported(const std::string &what) const {
    throw UserError(plan.graphFile + ": " +
                    (kernel.pointer.empty() ? "" : kernel.pointer + ": ") +
                    "node \"" + kernel.name + "\": op " + kernel.op + " " +
                    what +
                    " cannot be compiled by the halide backend; use "
                    "--backend mlir");
  }

  const Shape &shapeOf(int value) const { return plan.values[value].shape; }
  int operand(size_t n) const {
    if (n >= kernel.operands.size() || kernel.operands[n] < 0)
      throw std::logic_error("halide backend: " + kernel.name +
                             ": missing operand");
    return kernel.operands[n];
  }

  ImageParam param(int value) { return f.params.of(plan, value); }

  /// The result's loop variable of graph dim `g`.
  Expr at(int g) const { return f.vars[rank - 1 - g]; }
  /// An element of `value` at graph-order indices.
  Expr read(int value, std::vector<Expr> indices) {
    std::reverse(indices.begin(), indices.end());
    return param(value)(indices);
  }
  /// `value` broadcast (numpy, right-aligned) to the result's shape: a dim
  /// fixed at 1 is read at 0.
  Expr broadcast(int value) {
    const Shape &shape = shapeOf(value);
    int r = int(shape.size());
    std::vector<Expr> indices;
    for (int d = 0; d < r; ++d)
      indices.push_back(shape[d].isOne() ? Expr(0) : at(d + rank - r));
    return read(value, indices);
  }
  /// The extent of graph dim `g` of `value`, from its buffer.
  Expr extent(int value, int g) {
    return param(value).dim(int(shapeOf(value).size()) - 1 - g).extent();
  }

  static Expr f32(Expr e) { return cast<float>(e); }
  /// A constant of `type`; infinities as bit patterns, so no float literal
  /// infinity meets Halide's simplifier.
  static Expr constant(Type type, double value) {
    Expr e = Expr(float(value));
    if (std::isinf(value))
      e = reinterpret<float>(
          cast<uint32_t>(Expr(int32_t(value < 0 ? 0xff800000u : 0x7f800000u))));
    return cast(type, e);
  }

  void define(Expr value) { f.result(f.vars) = value; }
  void product(Type type);
  void linear(Type type);
  void elementwise(Type type);
  void softmax(Type type);
  void reduceSum(Type type);
  void concat();
};

void PrimitiveBuilder::build() {
  f.op = kernel.op;
  if (kernel.results.size() != 1)
    throw std::logic_error("halide backend: " + kernel.name +
                           ": a primitive has one result");
  f.resultValue = kernel.results[0];
  const PlanValue &result = plan.values[f.resultValue];
  rank = int(result.shape.size());
  for (int n = 0; n < rank; ++n)
    f.vars.push_back(Var("x" + std::to_string(n)));
  f.result = Func(kernel.op);
  f.accumulator = Func("sum");
  f.rhs = Func("rhs");
  f.rowMax = Func("row_max");
  f.rowSum = Func("row_sum");
  Type type = halideType(result.dtype);
  const std::string &op = kernel.op;
  if (op == "matmul")
    return product(type);
  if (op == "linear")
    return linear(type);
  if (op == "softmax")
    return softmax(type);
  if (op == "reduce_sum")
    return reduceSum(type);
  if (op == "concat")
    return concat();
  return elementwise(type);
}

void PrimitiveBuilder::product(Type type) {
  f.strictFloat = false; // Contractions into FMAs are wanted here.
  if (!type.is_float())
    unsupported("on integers");
  int a = operand(0), b = operand(1);
  int ra = int(shapeOf(a).size()), rb = int(shapeOf(b).size());
  if (ra < 1 || rb < 1)
    unsupported("on scalars");
  // numpy: a 1-D left operand is a row, a 1-D right one a column; neither
  // added dim is in the result.
  f.hasRows = ra >= 2;
  f.hasCols = rb >= 2;
  int batchRank = rank - f.hasRows - f.hasCols;
  f.reduction = RDom(0, extent(a, ra - 1), "k");
  RVar k = f.reduction.x;
  // An operand's batch indices from the result's (graph order),
  // right-aligned; a dim fixed at 1 is read at 0.
  auto batch = [&](int value, int operandRank,
                   const std::vector<Expr> &resultBatch) {
    int own = std::max(operandRank - 2, 0);
    std::vector<Expr> indices;
    for (int d = 0; d < own; ++d)
      indices.push_back(shapeOf(value)[d].isOne()
                            ? Expr(0)
                            : resultBatch.at(size_t(batchRank - own + d)));
    return indices;
  };
  std::vector<Expr> resultBatch;
  for (int d = 0; d < batchRank; ++d)
    resultBatch.push_back(at(d));
  std::vector<Expr> lhs = batch(a, ra, resultBatch);
  if (f.hasRows)
    lhs.push_back(at(batchRank));
  lhs.push_back(k);
  Expr n = f.hasCols ? Expr(f.vars[0]) : Expr(0);
  Expr right;
  if (f.hasCols && p.transposeB) {
    // b [..., N, K] staged as (n, k, batch) so products read it along N.
    Var rn("rn"), rk("rk");
    std::vector<Expr> ownBatch(static_cast<size_t>(batchRank), Expr(0));
    std::vector<Var> args = {rn, rk};
    std::vector<Expr> uses = {n, k};
    for (int d = f.hasRows + f.hasCols; d < rank; ++d) {
      Var v("rb" + std::to_string(d));
      ownBatch[size_t(rank - 1 - d)] = v;
      args.push_back(v);
      uses.push_back(f.vars[d]);
    }
    std::vector<Expr> indices = batch(b, rb, ownBatch);
    indices.push_back(rn);
    indices.push_back(rk);
    f.rhs(args) = f32(read(b, indices));
    right = f.rhs(uses);
  } else {
    std::vector<Expr> indices = batch(b, rb, resultBatch);
    indices.push_back(k);
    if (f.hasCols)
      indices.push_back(n);
    right = f32(read(b, indices));
  }
  f.accumulator(f.vars) = 0.0f;
  f.accumulator(f.vars) += f32(read(a, lhs)) * right;
  define(cast(type, f.accumulator(f.vars)));
}

void PrimitiveBuilder::linear(Type type) {
  f.strictFloat = false;
  if (!type.is_float())
    unsupported("on integers");
  int x = operand(0), w = operand(1);
  int rx = int(shapeOf(x).size());
  if (rx < 1 || shapeOf(w).size() != 2)
    unsupported("with these ranks");
  f.hasCols = true;
  f.hasRows = rank >= 2;
  f.reduction = RDom(0, extent(x, rx - 1), "k");
  RVar k = f.reduction.x;
  // w [N, K] staged as (n, k): products read it along N.
  Var rn("rn"), rk("rk");
  f.rhs(rn, rk) = f32(read(w, {rn, rk}));
  std::vector<Expr> rows;
  for (int g = 0; g < rank - 1; ++g)
    rows.push_back(at(g));
  rows.push_back(k);
  f.accumulator(f.vars) = 0.0f;
  f.accumulator(f.vars) += f32(read(x, rows)) * f.rhs(f.vars[0], k);
  Expr sum = f.accumulator(f.vars);
  if (p.hasBias)
    sum += f32(read(operand(2), {f.vars[0]}));
  define(cast(type, sum));
}

void PrimitiveBuilder::elementwise(Type type) {
  const std::string &op = kernel.op;
  bool isFloat = type.is_float();
  if (op == "add" || op == "sub" || op == "mul" || op == "div") {
    if (!isFloat && !(type == Int(32) && op != "div"))
      unsupported("on " +
                  std::string(dtypeName(plan.values[f.resultValue].dtype)));
    Expr l = broadcast(operand(0)), r = broadcast(operand(1));
    if (isFloat)
      l = f32(l), r = f32(r);
    Expr e = op == "add"   ? l + r
             : op == "sub" ? l - r
             : op == "mul" ? l * r
                           : l / r;
    return define(cast(type, e));
  }
  if (op == "neg" && type == Int(32))
    return define(-broadcast(operand(0)));
  if (op == "scale" || op == "tanh" || op == "exp" || op == "neg" ||
      op == "sqrt" || op == "cos" || op == "sin") {
    if (!isFloat)
      unsupported("on " +
                  std::string(dtypeName(plan.values[f.resultValue].dtype)));
    Expr x = f32(broadcast(operand(0)));
    Expr e = op == "scale"  ? x * float(p.value)
             : op == "tanh" ? tanh(x)
             : op == "exp"  ? exp(x)
             : op == "neg"  ? -x
             : op == "cos"  ? cos(x)
             : op == "sin"  ? sin(x)
                            : sqrt(x);
    return define(cast(type, e));
  }
  if (op == "masked_fill") {
    // Selected in the element type, so the fill is rounded once.
    Expr set = broadcast(operand(1)) != 0;
    return define(select(set, constant(type, p.value), broadcast(operand(0))));
  }
  if (op == "causal_mask") {
    if (rank < 2 || !isFloat)
      unsupported("on this input");
    int x = operand(0);
    // Query i sits at key position i + T - S (bottom-right alignment).
    Expr S = extent(x, rank - 2), T = extent(x, rank - 1);
    Expr future = f.vars[0] > f.vars[1] + T - S;
    return define(select(future, constant(type, -INFINITY), broadcast(x)));
  }
  if (op == "window_mask") {
    if (rank < 2 || !isFloat)
      unsupported("on this input");
    int x = operand(0);
    namespace semantics = mlir::attn::semantics;
    semantics::KeyVisibility window;
    window.addWindow(p.left, p.right);
    // int64: the bounds reach 2^62.
    IndexExprs a;
    Expr S = a.index(extent(x, rank - 2)), T = a.index(extent(x, rank - 1));
    Expr position = semantics::alignedPosition(a, a.index(f.vars[1]), S, T);
    Expr keep =
        semantics::keyVisible(a, window, position, a.index(f.vars[0]), T);
    return define(select(keep, broadcast(x), constant(type, -INFINITY)));
  }
  if (op == "transpose") {
    int x = operand(0);
    if (int(p.permutation.size()) != rank)
      throw std::logic_error("halide backend: " + kernel.name +
                             ": permutation of the wrong rank");
    std::vector<Expr> indices(rank);
    for (int d = 0; d < rank; ++d)
      indices.at(size_t(p.permutation[d])) = at(d);
    return define(read(x, indices));
  }
  if (op == "repeat") {
    int x = operand(0);
    if (p.axis < 0 || p.axis >= rank || p.times < 1)
      throw std::logic_error("halide backend: " + kernel.name + ": bad repeat");
    std::vector<Expr> indices;
    for (int d = 0; d < rank; ++d)
      indices.push_back(d == p.axis ? at(d) / int(p.times) : at(d));
    return define(read(x, indices));
  }
  if (op == "slice") {
    int x = operand(0);
    if (p.axis < 0 || p.axis >= rank || p.start < 0 || p.start >= p.end)
      throw std::logic_error("halide backend: " + kernel.name + ": bad slice");
    std::vector<Expr> indices;
    for (int d = 0; d < rank; ++d)
      indices.push_back(d == p.axis ? at(d) + int(p.start) : at(d));
    return define(read(x, indices));
  }
  unsupported("(not a primitive the halide backend knows)");
}

void PrimitiveBuilder::softmax(Type type) {
  if (!type.is_float() || rank < 1 || p.axis < 0 || p.axis >= rank)
    unsupported("on this input");
  int x = operand(0);
  f.axis = rank - 1 - int(p.axis);
  f.reduction = RDom(0, extent(x, int(p.axis)), "r");
  std::vector<Var> rest;
  std::vector<Expr> along;
  for (int n = 0; n < rank; ++n) {
    if (n != f.axis)
      rest.push_back(f.vars[n]);
    along.push_back(n == f.axis ? Expr(f.reduction.x) : Expr(f.vars[n]));
  }
  Expr element = f32(broadcast(x));
  Expr elementAlong = f32(param(x)(along));
  Expr negativeInfinity = constant(Float(32), -INFINITY);
  f.rowMax(rest) = negativeInfinity;
  f.rowMax(rest) = max(f.rowMax(rest), elementAlong);
  // An all -inf slice is all zeros (project decision h): shift by 0, not
  // -inf, so no NaN appears; exp of anything below -104 is 0 in f32, and
  // -inf never reaches exp.
  Expr allMasked = f.rowMax(rest) == negativeInfinity;
  Expr shift = select(allMasked, 0.0f, f.rowMax(rest));
  auto exponential = [&](Expr e) {
    Expr d = e - shift;
    return select(d < -104.0f, 0.0f, exp(d));
  };
  f.rowSum(rest) = 0.0f;
  f.rowSum(rest) += exponential(elementAlong);
  define(cast(type,
              select(allMasked, 0.0f, exponential(element) / f.rowSum(rest))));
}

void PrimitiveBuilder::reduceSum(Type type) {
  bool isFloat = type.is_float();
  if (!isFloat && type != Int(32))
    unsupported("on " +
                std::string(dtypeName(plan.values[f.resultValue].dtype)));
  int x = operand(0);
  int rx = int(shapeOf(x).size());
  if (p.axis < 0 || p.axis >= rx)
    throw std::logic_error("halide backend: " + kernel.name + ": bad axis");
  f.axis = rx - 1 - int(p.axis);
  f.reduction = RDom(0, extent(x, int(p.axis)), "r");
  std::vector<Expr> indices;
  for (int d = 0; d < rx; ++d) {
    if (d == p.axis)
      indices.push_back(f.reduction.x);
    else
      indices.push_back(at(p.keepdims || d < p.axis ? d : d - 1));
  }
  Expr element = read(x, indices);
  f.accumulator(f.vars) = isFloat ? Expr(0.0f) : Expr(0);
  f.accumulator(f.vars) += isFloat ? f32(element) : element;
  define(cast(type, f.accumulator(f.vars)));
}

void PrimitiveBuilder::concat() {
  if (p.axis < 0 || p.axis >= rank)
    throw std::logic_error("halide backend: " + kernel.name + ": bad axis");
  int g = int(p.axis);
  // Each input is read at a position clamped into it, so every read stays
  // in its buffer; the select picks the one the position falls in.
  Expr position = at(g), offset = 0, e;
  std::vector<Expr> parts, starts;
  for (size_t n = 0; n < kernel.operands.size(); ++n) {
    int x = operand(n);
    Expr size = extent(x, g);
    std::vector<Expr> indices;
    for (int d = 0; d < rank; ++d)
      indices.push_back(d == g ? clamp(position - offset, 0, size - 1) : at(d));
    parts.push_back(read(x, indices));
    starts.push_back(offset);
    offset = offset + size;
  }
  e = parts.back();
  for (size_t n = parts.size() - 1; n-- > 0;)
    e = select(position < starts[n + 1], parts[n], e);
  define(e);
}

} // namespace

PrimitiveFuncs definePrimitive(const KernelPlan &plan,
                               const PlannedKernel &kernel) {
  if (!kernel.primitive)
    throw std::logic_error("definePrimitive: " + kernel.name +
                           " is not a primitive");
  PrimitiveFuncs funcs;
  PrimitiveBuilder(plan, kernel, funcs).build();
  return funcs;
}

} // namespace attnc
