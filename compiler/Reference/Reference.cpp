//===- Reference.cpp - The float64 reference evaluator --------------------===//
//
// Evaluates the nodes in written order, each from its definition in
// docs/graph-format.md, on dense float64 tensors.
//
//===----------------------------------------------------------------------===//

#include "Reference/Reference.h"

#include "Attn/IR/AttnSemantics.h"

#include <cassert>
#include <cmath>
#include <limits>
#include <type_traits>

namespace attnc {
namespace {

/// Splits `shape` around `axis` into (outer, size of axis, inner) counts.
struct AxisSplit {
  int64_t outer = 1, extent = 1, inner = 1;
  AxisSplit(const std::vector<int64_t> &shape, int64_t axis) {
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      (d < axis ? outer : d == axis ? extent : inner) *= shape[d];
  }
};

/// `tensor` broadcast (numpy rules) to `shape`, materialised.
F64Tensor broadcastTo(const F64Tensor &tensor,
                      const std::vector<int64_t> &shape) {
  const size_t rank = shape.size(), offset = rank - tensor.shape.size();
  std::vector<int64_t> strides(rank, 0);
  for (int64_t d = int64_t(rank) - 1, stride = 1; d >= int64_t(offset); --d) {
    int64_t size = tensor.shape[d - offset];
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  F64Tensor result{shape, std::vector<double>(elementCount(shape))};
  std::vector<int64_t> index(rank, 0);
  for (double &element : result.data) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d)
      source += index[d] * strides[d];
    element = tensor.data[source];
    for (int64_t d = int64_t(rank) - 1; d >= 0 && ++index[d] == shape[d]; --d)
      index[d] = 0;
  }
  return result;
}

/// Applies `f` elementwise to `a` and `b` broadcast to `shape`.
template <typename F>
F64Tensor zipBroadcast(const F64Tensor &a, const F64Tensor &b,
                       const std::vector<int64_t> &shape, F f) {
  F64Tensor x = broadcastTo(a, shape), y = broadcastTo(b, shape);
  for (size_t i = 0; i < x.data.size(); ++i)
    x.data[i] = f(x.data[i], y.data[i]);
  return x;
}

template <typename F> F64Tensor map(F64Tensor x, F f) {
  for (double &element : x.data)
    element = f(element);
  return x;
}

/// Batched matrix product with numpy's rules (1-D operands, broadcast batch).
F64Tensor matmul(const F64Tensor &a, const F64Tensor &b, bool transposeB,
                 const std::vector<int64_t> &resultShape) {
  std::vector<int64_t> lhsShape = a.shape, rhsShape = b.shape;
  if (lhsShape.size() == 1)
    lhsShape.insert(lhsShape.begin(), 1);
  if (rhsShape.size() == 1)
    rhsShape.push_back(1);
  const size_t rank = std::max(lhsShape.size(), rhsShape.size());
  const int64_t M = lhsShape[lhsShape.size() - 2], K = lhsShape.back();
  const int64_t N =
      transposeB ? rhsShape[rhsShape.size() - 2] : rhsShape.back();
  // Broadcast both to [batch..., rows, cols] by padding batch dims with 1s.
  std::vector<int64_t> batch(rank - 2, 1);
  for (const std::vector<int64_t> *shape : {&lhsShape, &rhsShape})
    for (size_t d = 0; d + 2 < shape->size(); ++d) {
      size_t target = rank - shape->size() + d;
      batch[target] = std::max(batch[target], (*shape)[d]);
    }
  auto expand = [&](const F64Tensor &tensor, std::vector<int64_t> shape) {
    std::vector<int64_t> full = batch;
    full.insert(full.end(), shape.end() - 2, shape.end());
    return broadcastTo(F64Tensor{shape, tensor.data}, full);
  };
  F64Tensor lhs = expand(a, lhsShape), rhs = expand(b, rhsShape);
  const int64_t batches = elementCount(batch);
  const int64_t rhsRows = transposeB ? N : K, rhsCols = transposeB ? K : N;
  F64Tensor result{resultShape, std::vector<double>(batches * M * N, 0.0)};
  for (int64_t n = 0; n < batches; ++n) {
    const double *x = &lhs.data[n * M * K],
                 *y = &rhs.data[n * rhsRows * rhsCols];
    double *z = &result.data[n * M * N];
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < K; ++l)
          sum += x[i * K + l] * (transposeB ? y[j * K + l] : y[l * N + j]);
        z[i * N + j] = sum;
      }
  }
  return result;
}

/// Softmax along `axis`. A slice whose entries are all -inf (everything
/// masked) is defined as all zeros, as for a fully masked attention row, so
/// fusing an exporter chain never changes its result.
F64Tensor softmax(F64Tensor x, int64_t axis) {
  AxisSplit split(x.shape, axis);
  for (int64_t o = 0; o < split.outer; ++o)
    for (int64_t in = 0; in < split.inner; ++in) {
      auto at = [&](int64_t a) -> double & {
        return x.data[(o * split.extent + a) * split.inner + in];
      };
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < split.extent; ++a)
        max = std::max(max, at(a));
      if (max == -std::numeric_limits<double>::infinity()) {
        for (int64_t a = 0; a < split.extent; ++a)
          at(a) = 0;
        continue;
      }
      double sum = 0;
      for (int64_t a = 0; a < split.extent; ++a)
        sum += std::exp(at(a) - max);
      for (int64_t a = 0; a < split.extent; ++a)
        at(a) = std::exp(at(a) - max) / sum;
    }
  return x;
}

F64Tensor transpose(const F64Tensor &x, const std::vector<int64_t> &perm,
                    const std::vector<int64_t> &resultShape) {
  const size_t rank = perm.size();
  std::vector<int64_t> sourceStrides(rank);
  for (int64_t d = int64_t(rank) - 1, stride = 1; d >= 0; --d) {
    sourceStrides[d] = stride;
    stride *= x.shape[d];
  }
  F64Tensor result{resultShape, std::vector<double>(x.data.size())};
  std::vector<int64_t> index(rank, 0);
  for (double &element : result.data) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d)
      source += index[d] * sourceStrides[perm[d]];
    element = x.data[source];
    for (int64_t d = int64_t(rank) - 1; d >= 0 && ++index[d] == resultShape[d];
         --d)
      index[d] = 0;
  }
  return result;
}

class Evaluator {
public:
  Evaluator(const Graph &graph, const DimBindings &dims)
      : graph(graph), dims(dims), values(graph.values.size()) {}

  std::vector<F64Tensor> run(const std::vector<Tensor> &inputs) {
    assert(inputs.size() == graph.inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
      values[graph.inputs[i]] =
          F64Tensor{inputs[i].shape, toDoubles(inputs[i])};
    for (const Node &node : graph.nodes) {
      std::vector<F64Tensor> results = evaluate(node);
      for (size_t r = 0; r < results.size(); ++r)
        values[node.results[r]] = std::move(results[r]);
    }
    std::vector<F64Tensor> outputs;
    for (ValueId id : graph.outputs)
      outputs.push_back(values[id]);
    return outputs;
  }

private:
  const Graph &graph;
  const DimBindings &dims;
  std::vector<F64Tensor> values;

  const F64Tensor &operand(ValueId id) const { return values[id]; }

  std::vector<F64Tensor> evaluate(const Node &node) {
    const std::vector<int64_t> shape =
        concreteShape(graph.type(node.results[0]).shape, dims);
    return std::visit(
        [&](const auto &op) -> std::vector<F64Tensor> {
          using T = std::decay_t<decltype(op)>;
          if constexpr (std::is_same_v<T, AttentionOp>)
            return evaluateAttention(graph, op, dims,
                                     [this](ValueId id) -> const F64Tensor & {
                                       return operand(id);
                                     });
          else
            return {evaluatePrimitive(op, shape)};
        },
        node.op);
  }

  F64Tensor evaluatePrimitive(const MatmulOp &op,
                              const std::vector<int64_t> &shape) {
    return matmul(operand(op.a), operand(op.b), op.transposeB, shape);
  }

  F64Tensor evaluatePrimitive(const LinearOp &op,
                              const std::vector<int64_t> &shape) {
    F64Tensor result = matmul(operand(op.x), operand(op.w), true, shape);
    if (op.bias)
      result = zipBroadcast(result, operand(*op.bias), shape,
                            [](double x, double b) { return x + b; });
    return result;
  }

  F64Tensor evaluatePrimitive(const BinaryOp &op,
                              const std::vector<int64_t> &shape) {
    const F64Tensor &a = operand(op.a), &b = operand(op.b);
    switch (op.kind) {
    case BinaryKind::Add:
      return zipBroadcast(a, b, shape,
                          [](double x, double y) { return x + y; });
    case BinaryKind::Sub:
      return zipBroadcast(a, b, shape,
                          [](double x, double y) { return x - y; });
    case BinaryKind::Mul:
      return zipBroadcast(a, b, shape,
                          [](double x, double y) { return x * y; });
    case BinaryKind::Div:
      return zipBroadcast(a, b, shape,
                          [](double x, double y) { return x / y; });
    }
    return {};
  }

  F64Tensor evaluatePrimitive(const ScaleOp &op, const std::vector<int64_t> &) {
    return map(operand(op.x), [&](double x) { return x * op.value; });
  }

  F64Tensor evaluatePrimitive(const UnaryOp &op, const std::vector<int64_t> &) {
    switch (op.kind) {
    case UnaryKind::Tanh:
      return map(operand(op.x), [](double x) { return std::tanh(x); });
    case UnaryKind::Exp:
      return map(operand(op.x), [](double x) { return std::exp(x); });
    case UnaryKind::Neg:
      return map(operand(op.x), [](double x) { return -x; });
    case UnaryKind::Sqrt:
      return map(operand(op.x), [](double x) { return std::sqrt(x); });
    case UnaryKind::Cos:
      return map(operand(op.x), [](double x) { return std::cos(x); });
    case UnaryKind::Sin:
      return map(operand(op.x), [](double x) { return std::sin(x); });
    }
    return {};
  }

  F64Tensor evaluatePrimitive(const SoftmaxOp &op,
                              const std::vector<int64_t> &) {
    return softmax(operand(op.x), op.axis);
  }

  F64Tensor evaluatePrimitive(const MaskedFillOp &op,
                              const std::vector<int64_t> &shape) {
    return zipBroadcast(
        operand(op.x), operand(op.mask), shape,
        [&](double x, double mask) { return mask != 0 ? op.value : x; });
  }

  F64Tensor evaluatePrimitive(const CausalMaskOp &op,
                              const std::vector<int64_t> &shape) {
    F64Tensor result = operand(op.x);
    const int64_t S = shape[shape.size() - 2], T = shape.back();
    for (int64_t n = 0; n < elementCount(shape) / (S * T); ++n)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = i + T - S + 1; j < T; ++j)
          if (j >= 0)
            result.data[(n * S + i) * T + j] =
                -std::numeric_limits<double>::infinity();
    return result;
  }

  F64Tensor evaluatePrimitive(const WindowMaskOp &op,
                              const std::vector<int64_t> &shape) {
    namespace semantics = mlir::attn::semantics;
    semantics::Int64Arith arith;
    semantics::KeyVisibility window;
    window.addWindow(op.left, op.right);
    F64Tensor result = operand(op.x);
    const int64_t S = shape[shape.size() - 2], T = shape.back();
    for (int64_t n = 0; n < elementCount(shape) / (S * T); ++n)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < T; ++j)
          if (!semantics::keyVisible(arith, window,
                                     semantics::alignedPosition(arith, i, S, T),
                                     j, T, std::optional<int64_t>()))
            result.data[(n * S + i) * T + j] =
                -std::numeric_limits<double>::infinity();
    return result;
  }

  F64Tensor evaluatePrimitive(const ReshapeOp &op,
                              const std::vector<int64_t> &shape) {
    return F64Tensor{shape, operand(op.x).data};
  }

  F64Tensor evaluatePrimitive(const TransposeOp &op,
                              const std::vector<int64_t> &shape) {
    return transpose(operand(op.x), op.perm, shape);
  }

  F64Tensor evaluatePrimitive(const UnsqueezeOp &op,
                              const std::vector<int64_t> &shape) {
    return F64Tensor{shape, operand(op.x).data};
  }

  F64Tensor evaluatePrimitive(const RepeatOp &op,
                              const std::vector<int64_t> &shape) {
    const F64Tensor &x = operand(op.x);
    AxisSplit split(x.shape, op.axis);
    F64Tensor result{shape, std::vector<double>(elementCount(shape))};
    for (int64_t o = 0; o < split.outer; ++o)
      for (int64_t a = 0; a < split.extent; ++a)
        for (int64_t t = 0; t < op.times; ++t)
          std::copy_n(&x.data[(o * split.extent + a) * split.inner],
                      split.inner,
                      &result.data[((o * split.extent + a) * op.times + t) *
                                   split.inner]);
    return result;
  }

  F64Tensor evaluatePrimitive(const SliceOp &op,
                              const std::vector<int64_t> &shape) {
    const F64Tensor &x = operand(op.x);
    AxisSplit split(x.shape, op.axis);
    int64_t length = op.end - op.start;
    F64Tensor result{shape, std::vector<double>(elementCount(shape))};
    for (int64_t o = 0; o < split.outer; ++o)
      std::copy_n(&x.data[(o * split.extent + op.start) * split.inner],
                  length * split.inner, &result.data[o * length * split.inner]);
    return result;
  }

  F64Tensor evaluatePrimitive(const ReduceSumOp &op,
                              const std::vector<int64_t> &shape) {
    const F64Tensor &x = operand(op.x);
    AxisSplit split(x.shape, op.axis);
    F64Tensor result{shape,
                     std::vector<double>(split.outer * split.inner, 0.0)};
    for (int64_t o = 0; o < split.outer; ++o)
      for (int64_t a = 0; a < split.extent; ++a)
        for (int64_t in = 0; in < split.inner; ++in)
          result.data[o * split.inner + in] +=
              x.data[(o * split.extent + a) * split.inner + in];
    return result;
  }

  F64Tensor evaluatePrimitive(const ConcatOp &op,
                              const std::vector<int64_t> &shape) {
    AxisSplit resultSplit(shape, op.axis);
    F64Tensor result{shape, std::vector<double>(elementCount(shape))};
    int64_t start = 0; // Where the current input begins along the axis.
    for (ValueId id : op.inputs) {
      const F64Tensor &x = operand(id);
      AxisSplit split(x.shape, op.axis);
      for (int64_t o = 0; o < split.outer; ++o)
        std::copy_n(
            &x.data[o * split.extent * split.inner], split.extent * split.inner,
            &result.data[(o * resultSplit.extent + start) * resultSplit.inner]);
      start += split.extent;
    }
    return result;
  }
};

} // namespace

std::vector<F64Tensor> evaluateReference(const Graph &graph,
                                         const DimBindings &dims,
                                         const std::vector<Tensor> &inputs) {
  return Evaluator(graph, dims).run(inputs);
}

} // namespace attnc
