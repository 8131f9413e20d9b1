//===- CheckCommand.cpp - attnc check -------------------------------------===//

#include "Driver/Commands.h"
#include "Driver/Model.h"
#include "Driver/Options.h"
#include "Graph/Graph.h"

#include <iostream>
#include <sstream>

namespace attnc {

namespace {

std::string formatNumber(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

/// "causal, window(4095, 0), GQA 32/8" and the like: what an attention node
/// does beyond q, k, v.
std::string describeAttention(const Graph &graph, const AttentionOp &op) {
  std::vector<std::string> parts;
  static const char *scoreNames[] = {"dot", "general", "additive", "cosine"};
  if (op.score.kind != ScoreKind::Dot)
    parts.push_back(std::string("score ") + scoreNames[int(op.score.kind)]);
  if (op.layout == Layout::BSHD)
    parts.push_back("bshd");
  if (op.scale)
    parts.push_back("scale " + formatNumber(*op.scale));
  if (op.softcap)
    parts.push_back("softcap " + formatNumber(*op.softcap));
  for (const AttentionBias &bias : op.biases)
    parts.push_back(
        bias.kind == BiasKind::Alibi
            ? std::string(bias.input
                              ? "alibi(" + graph.value(*bias.input).name + ")"
                              : "alibi")
            : "bias(" + graph.value(*bias.input).name + ")");
  for (const AttentionMask &mask : op.masks) {
    switch (mask.kind) {
    case MaskKind::Causal:
      parts.push_back("causal");
      break;
    case MaskKind::Window:
      parts.push_back("window(" + std::to_string(mask.left) + ", " +
                      std::to_string(mask.right) + ")");
      break;
    case MaskKind::KeyLength:
      parts.push_back("key_length(" + graph.value(*mask.input).name + ")");
      break;
    case MaskKind::Tensor:
      parts.push_back("mask(" + graph.value(*mask.input).name + ")");
      break;
    }
  }
  AttentionSizes sizes = graph.attentionSizes(op);
  if (sizes.queryHeads != sizes.kvHeads)
    parts.push_back("GQA " + sizes.queryHeads.str() + "/" +
                    sizes.kvHeads.str());
  if (op.returnLse)
    parts.push_back("lse");
  std::string out;
  for (const std::string &part : parts)
    out += (out.empty() ? "" : ", ") + part;
  return out;
}

/// The attributes of a node beyond its operands, e.g. "transpose_b",
/// "value 0.125", "axis 3".
std::string describeAttributes(const Graph &graph, const Node &node) {
  auto axis = [](int64_t axis) { return "axis " + std::to_string(axis); };
  if (const auto *op = node.getIf<AttentionOp>())
    return describeAttention(graph, *op);
  if (const auto *op = node.getIf<MatmulOp>())
    return op->transposeB ? "transpose_b" : "";
  if (const auto *op = node.getIf<ScaleOp>())
    return "value " + formatNumber(op->value);
  if (const auto *op = node.getIf<SoftmaxOp>())
    return axis(op->axis);
  if (const auto *op = node.getIf<MaskedFillOp>())
    return "value " + formatNumber(op->value);
  if (const auto *op = node.getIf<WindowMaskOp>())
    return "left " + std::to_string(op->left) + ", right " +
           std::to_string(op->right);
  if (const auto *op = node.getIf<TransposeOp>()) {
    std::string perm;
    for (int64_t p : op->perm)
      perm += (perm.empty() ? "" : ", ") + std::to_string(p);
    return "perm [" + perm + "]";
  }
  if (const auto *op = node.getIf<UnsqueezeOp>())
    return axis(op->axis);
  if (const auto *op = node.getIf<RepeatOp>())
    return axis(op->axis) + " times " + std::to_string(op->times);
  if (const auto *op = node.getIf<SliceOp>())
    return axis(op->axis) + " [" + std::to_string(op->start) + ", " +
           std::to_string(op->end) + ")";
  if (const auto *op = node.getIf<ReduceSumOp>())
    return axis(op->axis) + (op->keepdims ? " keepdims" : "");
  if (const auto *op = node.getIf<ConcatOp>())
    return axis(op->axis);
  return "";
}

std::string describeNode(const Graph &graph, const Node &node) {
  std::string operands;
  for (ValueId id : node.operands())
    operands += (operands.empty() ? "" : ", ") + graph.value(id).name;
  std::string line = node.name + " = " + node.opName + "(" + operands + ")";
  std::string details = describeAttributes(graph, node);
  if (!details.empty())
    line += " " + details;
  line += " -> ";
  for (size_t r = 0; r < node.results.size(); ++r)
    line += (r ? ", " : "") + graph.type(node.results[r]).str();
  return line;
}

} // namespace

int checkCommand() {
  Graph graph = loadModelGraph(options::graph);
  std::vector<std::string> runtimeDims = graph.runtimeDims();
  std::string dims;
  for (const std::string &dim : runtimeDims)
    dims += (dims.empty() ? "" : ", ") + dim;
  std::cout << graph.file << ": " << graph.name
            << " is valid: " << graph.inputs.size() << " input(s), "
            << graph.nodes.size() << " node(s), " << graph.outputs.size()
            << " output(s)" << (dims.empty() ? "" : "; run-time sizes " + dims)
            << "\n";
  for (const Node &node : graph.nodes)
    std::cout << "  " << describeNode(graph, node) << "\n";
  return 0;
}

} // namespace attnc
