//===- Graph.cpp - The validated attention graph --------------------------===//

#include "Graph/Graph.h"
#include "Support/Error.h"

#include <type_traits>

namespace attnc {

std::string Dim::str() const {
  return isFixed() ? std::to_string(size) : symbol;
}

std::string formatShape(const Shape &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + shape[i].str();
  return out + "]";
}

std::string TensorType::str() const {
  return std::string(dtypeName(dtype)) + formatShape(shape);
}

std::vector<ValueId> Node::operands() const {
  return std::visit(
      [](const auto &op) -> std::vector<ValueId> {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, MatmulOp> ||
                      std::is_same_v<T, BinaryOp>) {
          return {op.a, op.b};
        } else if constexpr (std::is_same_v<T, LinearOp>) {
          std::vector<ValueId> ids{op.x, op.w};
          if (op.bias)
            ids.push_back(*op.bias);
          return ids;
        } else if constexpr (std::is_same_v<T, MaskedFillOp>) {
          return {op.x, op.mask};
        } else if constexpr (std::is_same_v<T, ConcatOp>) {
          return op.inputs;
        } else if constexpr (std::is_same_v<T, AttentionOp>) {
          std::vector<ValueId> ids{op.q, op.k, op.v};
          for (const auto &weight :
               {op.score.w, op.score.wq, op.score.wk, op.score.va})
            if (weight)
              ids.push_back(*weight);
          for (const AttentionBias &bias : op.biases)
            if (bias.input)
              ids.push_back(*bias.input);
          for (const AttentionMask &mask : op.masks)
            if (mask.input)
              ids.push_back(*mask.input);
          return ids;
        } else {
          return {op.x};
        }
      },
      op);
}

std::optional<ValueId> Graph::lookup(std::string_view name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name)
      return static_cast<ValueId>(i);
  return std::nullopt;
}

std::vector<std::string> Graph::runtimeDims() const {
  std::vector<std::string> names;
  for (const DimDecl &dim : dims) {
    bool used = false;
    for (ValueId input : inputs)
      for (const Dim &size : type(input).shape)
        used = used || (!size.isFixed() && size.symbol == dim.name);
    if (!dim.fixed && used)
      names.push_back(dim.name);
  }
  return names;
}

AttentionSizes Graph::attentionSizes(const AttentionOp &op) const {
  const Shape &q = type(op.q).shape, &k = type(op.k).shape,
              &v = type(op.v).shape;
  // bhsd: [B, H, S, D]; bshd: [B, S, H, D].
  int headAxis = op.layout == Layout::BHSD ? 1 : 2;
  int seqAxis = op.layout == Layout::BHSD ? 2 : 1;
  return {q[0], q[headAxis], k[headAxis], q[seqAxis], k[seqAxis], q[3], v[3]};
}

std::vector<SizeDivisibility> Graph::divisibilities() const {
  std::vector<SizeDivisibility> result;
  for (const Node &node : nodes) {
    const AttentionOp *op = node.getIf<AttentionOp>();
    if (!op)
      continue;
    AttentionSizes sizes = attentionSizes(*op);
    const Dim &hq = sizes.queryHeads, &hkv = sizes.kvHeads;
    if (hq == hkv || (hq.isFixed() && hkv.isFixed()))
      continue; // Equal, or checked by the parser.
    result.push_back({hq, hkv,
                      "attention " + node.name + ": query heads " + hq.str() +
                          " must be a multiple of kv heads " + hkv.str()});
  }
  return result;
}

std::vector<int64_t> concreteShape(const Shape &shape,
                                   const DimBindings &bindings) {
  std::vector<int64_t> sizes;
  for (const Dim &dim : shape)
    sizes.push_back(dim.isFixed() ? dim.size : bindings.at(dim.symbol));
  return sizes;
}

double tensorBytes(const TensorType &type, const DimBindings &bindings) {
  double bytes = double(dtypeSize(type.dtype));
  for (int64_t size : concreteShape(type.shape, bindings))
    bytes *= double(size);
  return bytes;
}

void checkBindings(const Graph &graph, const DimBindings &bindings) {
  for (const std::string &name : graph.runtimeDims()) {
    auto it = bindings.find(name);
    if (it == bindings.end())
      throw UserError(graph.file + ": the run-time size " + name +
                      " has no value; give --dim " + name +
                      "=N or an --input file that fixes it");
    if (it->second <= 0)
      throw UserError("--dim " + name + "=" + std::to_string(it->second) +
                      ": a size must be > 0");
  }
  auto sizeOf = [&](const Dim &dim) {
    return dim.isFixed() ? dim.size : bindings.at(dim.symbol);
  };
  for (const SizeDivisibility &rule : graph.divisibilities()) {
    int64_t multiple = sizeOf(rule.multiple), divisor = sizeOf(rule.divisor);
    if (multiple % divisor == 0)
      continue;
    std::string values;
    for (const Dim *dim : {&rule.multiple, &rule.divisor})
      if (!dim->isFixed())
        values += (values.empty() ? "" : ", ") + dim->symbol + " = " +
                  std::to_string(sizeOf(*dim));
    throw UserError(graph.file + ": " + rule.what + " (" + values + ")");
  }
  for (const Value &value : graph.values) {
    int64_t count = 1;
    for (int64_t size : concreteShape(value.type.shape, bindings)) {
      if (!__builtin_mul_overflow(count, size, &count) && count <= kMaxElements)
        continue;
      std::string sizes;
      for (const auto &[name, size] : bindings)
        sizes +=
            (sizes.empty() ? "" : ", ") + name + "=" + std::to_string(size);
      throw UserError("--dim: with " + sizes + ", value " + value.name + " " +
                      value.type.str() + " of " + graph.file +
                      " would have more than 2^40 elements");
    }
  }
}

} // namespace attnc
