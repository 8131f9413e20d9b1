//===- AttentionBlocks.cpp - Each attention block of a model, alone -------===//
//
// For models attnc cannot import whole (a LayerNorm, an MLP, an embedding
// lookup around the attention): each attention block becomes a model of its
// own, imported on its own.
//
// A block ends at a Softmax whose probabilities multiply V (or at a fused
// attention operator), followed forward by the head merge and the output
// projection when they are there. It starts at the inputs of its Q/K/V
// projections: walking back from its end, the data operand of every
// projection (MatMul or Gemm by a 2-D initializer) is cut, and so is every
// model input; what the walk reaches is the block. Values at the cuts become
// the block model's inputs, typed by ONNX shape inference.
//
//===----------------------------------------------------------------------===//

#include "Onnx/OnnxImport.h"
#include "Onnx/OnnxModelFile.h"

#include "Support/Error.h"

#include <map>
#include <set>
#include <vector>

namespace attnc {

namespace {

using onnx::NodeProto;

class BlockFinder {
public:
  BlockFinder(const std::string &path, onnx::ModelProto model)
      : path(path), model(std::move(model)) {
    // Types of intermediate values; where inference fails they stay
    // unknown, which the blocks that need them report.
    inferOnnxShapes(this->model);
    const onnx::GraphProto &graph = this->model.graph();
    for (int i = 0; i < graph.node_size(); ++i)
      for (const std::string &output : graph.node(i).output())
        producer[output] = i;
    for (int i = 0; i < graph.node_size(); ++i)
      for (const std::string &input : graph.node(i).input())
        consumers[input].push_back(i);
    for (const onnx::TensorProto &initializer : graph.initializer())
      initializers[initializer.name()] = &initializer;
    for (const onnx::ValueInfoProto &info : graph.input())
      types[info.name()] = &info;
    for (const onnx::ValueInfoProto &info : graph.value_info())
      types[info.name()] = &info;
    for (const onnx::ValueInfoProto &info : graph.output())
      types[info.name()] = &info;
  }

  OnnxBlocks run();

private:
  std::string path;
  onnx::ModelProto model;
  std::map<std::string, int> producer;
  std::map<std::string, std::vector<int>> consumers;
  std::map<std::string, const onnx::TensorProto *> initializers;
  std::map<std::string, const onnx::ValueInfoProto *> types;

  const NodeProto &node(int i) const { return model.graph().node(i); }
  /// Input or output k of `n`, "" where a malformed model gives it fewer
  /// (the generated accessors do not check).
  static const std::string &inputOf(const NodeProto &n, int k) {
    static const std::string none;
    return k < n.input_size() ? n.input(k) : none;
  }
  static const std::string &outputOf(const NodeProto &n, int k) {
    static const std::string none;
    return k < n.output_size() ? n.output(k) : none;
  }
  /// The node that alone reads `value`'s data, if exactly one does (Shape
  /// nodes read only its shape).
  std::optional<int> soleConsumer(const std::string &value) const {
    auto found = consumers.find(value);
    if (found == consumers.end())
      return std::nullopt;
    std::optional<int> sole;
    for (int i : found->second) {
      if (node(i).op_type() == "Shape")
        continue;
      if (sole)
        return std::nullopt;
      sole = i;
    }
    return sole;
  }
  bool isWeight(const std::string &value) const {
    auto found = initializers.find(value);
    return found != initializers.end() && found->second->dims_size() == 2;
  }
  bool isProjection(const NodeProto &n) const {
    return (n.op_type() == "MatMul" || n.op_type() == "Gemm") &&
           n.input_size() >= 2 && isWeight(n.input(1));
  }
  static bool isFusedAttention(const NodeProto &n) {
    return (n.domain() == "com.microsoft" &&
            (n.op_type() == "Attention" ||
             n.op_type() == "MultiHeadAttention" ||
             n.op_type() == "GroupQueryAttention")) ||
           ((n.domain().empty() || n.domain() == "ai.onnx") &&
            n.op_type() == "Attention");
  }

  /// Where(IsNaN(p), 0, p), PyTorch's guard after the softmax of
  /// scaled_dot_product_attention with a bool mask: the Where node, when it
  /// and its IsNaN are all that read `p`.
  std::optional<int> nanGuard(const std::string &p) const {
    auto found = consumers.find(p);
    if (found == consumers.end() || found->second.size() != 2)
      return std::nullopt;
    for (int where : found->second)
      if (isNanGuard(where) && inputOf(node(where), 2) == p)
        return where;
    return std::nullopt;
  }
  bool isNanGuard(int where) const {
    const NodeProto &n = node(where);
    if (n.op_type() != "Where" || n.output_size() < 1)
      return false;
    auto test = producer.find(inputOf(n, 0));
    return test != producer.end() && node(test->second).op_type() == "IsNaN" &&
           inputOf(node(test->second), 0) == inputOf(n, 2);
  }
  /// The value to cut for a projection reading `data`: `data`, or the
  /// tensor a Reshape or Flatten read to make it when only the projection
  /// reads that (exporters flatten [B, S, E] to [B·S, E] around a Gemm; the
  /// flattened size is a product attnc cannot name, and shape inference
  /// often cannot type it).
  std::string cutBefore(const std::string &data) const {
    auto made = producer.find(data);
    if (made == producer.end())
      return data;
    const NodeProto &n = node(made->second);
    if ((n.op_type() != "Reshape" && n.op_type() != "Flatten") ||
        !soleConsumer(data) || inputOf(n, 0).empty() ||
        !types.count(inputOf(n, 0)))
      return data;
    return inputOf(n, 0);
  }
  /// Whether `value` depends on the data of a model input (not only on its
  /// shape, through Shape nodes, and on constants).
  bool readsInputData(const std::string &value) const {
    std::set<std::string> seen;
    std::vector<std::string> pending{value};
    while (!pending.empty()) {
      std::string v = pending.back();
      pending.pop_back();
      if (v.empty() || initializers.count(v) || !seen.insert(v).second)
        continue;
      auto made = producer.find(v);
      if (made == producer.end())
        return true; // A model input.
      const NodeProto &n = node(made->second);
      if (n.op_type() != "Shape")
        pending.insert(pending.end(), n.input().begin(), n.input().end());
    }
    return false;
  }
  /// Rotary tables computed from positions alone (cos and sin of a Range
  /// over the sequence length times the frequencies): attnc has no op that
  /// makes positions, so they are cut, to be given as inputs.
  bool isPositionTable(const NodeProto &n) const {
    return (n.op_type() == "Cos" || n.op_type() == "Sin") &&
           n.output_size() >= 1 && !readsInputData(inputOf(n, 0));
  }
  /// The type shape inference gave `value`; for a normalization's output,
  /// which ONNX's inference leaves untyped where the operator is a function
  /// (LayerNormalization in TorchScript exports), its input's, which the
  /// operator keeps.
  std::map<std::string, const onnx::ValueInfoProto *>::const_iterator
  typeOf(const std::string &value) const {
    auto type = types.find(value);
    if (type != types.end() && type->second->type().tensor_type().has_shape())
      return type;
    auto made = producer.find(value);
    if (made != producer.end() &&
        (node(made->second).op_type() == "LayerNormalization" ||
         node(made->second).op_type() == "RMSNormalization") &&
        outputOf(node(made->second), 0) == value)
      return types.find(inputOf(node(made->second), 0));
    return type;
  }
  std::vector<int> blockEnds() const;
  int extendForward(int end, std::set<int> &inside) const;
  std::set<int> walkBack(int end, const std::set<std::string> &cuts) const;
  onnx::ModelProto blockModel(const std::set<int> &nodes, int end,
                              std::string &problem) const;
};

/// The last node of each attention: P·V after a Softmax, or a fused op.
std::vector<int> BlockFinder::blockEnds() const {
  std::vector<int> ends;
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const NodeProto &n = node(i);
    if (isFusedAttention(n)) {
      if (n.output_size() >= 1)
        ends.push_back(i);
      continue;
    }
    if (n.op_type() != "Softmax" || n.output_size() < 1)
      continue;
    std::string probabilities = n.output(0);
    std::optional<int> next = soleConsumer(probabilities);
    // Each node at most once: a malformed model may loop (a Cast that reads
    // its own output), which a walk to the next op would follow forever.
    std::set<int> passed;
    while (true) {
      if (!next)
        next = nanGuard(probabilities);
      if (!next ||
          !(node(*next).op_type() == "Cast" ||
            node(*next).op_type() == "Identity" || isNanGuard(*next)) ||
          !passed.insert(*next).second)
        break;
      probabilities = outputOf(node(*next), 0);
      next = probabilities.empty() ? std::nullopt : soleConsumer(probabilities);
    }
    if (next && node(*next).op_type() == "MatMul" &&
        node(*next).output_size() >= 1 &&
        inputOf(node(*next), 0) == probabilities)
      ends.push_back(*next);
  }
  return ends;
}

/// Past the attention: the head merge ([Reshape,] Transpose, Reshape) and the
/// output projection (with its bias, and a reshape after it), each the sole
/// reader of what precedes it.
int BlockFinder::extendForward(int end, std::set<int> &inside) const {
  int last = end;
  auto step = [&](auto accept) -> bool {
    const std::string &value = outputOf(node(last), 0);
    std::optional<int> next =
        value.empty() ? std::nullopt : soleConsumer(value);
    if (!next || node(*next).output_size() < 1 || !accept(node(*next)))
      return false;
    last = *next;
    inside.insert(last);
    return true;
  };
  auto is = [](const char *op) {
    return [op](const NodeProto &n) { return n.op_type() == op; };
  };
  // torch.export's SDPA ends in a Reshape to [B, H, S, D] (GPT-NeoX's
  // attention output): a Reshape may come before the merge's Transpose.
  step(is("Reshape"));
  if (step(is("Transpose")))
    step(is("Reshape"));
  if (step([&](const NodeProto &n) { return isProjection(n); })) {
    step([&](const NodeProto &n) {
      return n.op_type() == "Add" &&
             (initializers.count(inputOf(n, 0)) ||
              initializers.count(inputOf(n, 1)));
    });
    // The reshape back to [B, S, E] of a projection applied to [B·S, E]
    // (GPT-2's Conv1D as torch.export writes it): attnc names no B·S.
    step(is("Reshape"));
  }
  return last;
}

/// Every node the block's end depends on, not crossing `cuts`.
std::set<int> BlockFinder::walkBack(int end,
                                    const std::set<std::string> &cuts) const {
  // A work list, not recursion: the model's depth is the input's to choose.
  std::set<int> nodes;
  std::vector<int> pending{end};
  while (!pending.empty()) {
    int i = pending.back();
    pending.pop_back();
    if (!nodes.insert(i).second)
      continue;
    for (const std::string &input : node(i).input()) {
      if (input.empty() || cuts.count(input))
        continue;
      auto found = producer.find(input);
      if (found != producer.end())
        pending.push_back(found->second);
    }
  }
  return nodes;
}

/// The model of one block: its nodes, the initializers they read, the
/// values they read from outside as inputs, the end as the output.
onnx::ModelProto BlockFinder::blockModel(const std::set<int> &nodes, int end,
                                         std::string &problem) const {
  onnx::ModelProto block;
  block.set_ir_version(model.ir_version());
  *block.mutable_opset_import() = model.opset_import();
  onnx::GraphProto &graph = *block.mutable_graph();
  graph.set_name(model.graph().name());
  std::set<std::string> defined, added;
  for (int i : nodes)
    for (const std::string &output : node(i).output())
      defined.insert(output);
  for (int i = 0; i < model.graph().node_size(); ++i) {
    if (!nodes.count(i))
      continue;
    *graph.add_node() = node(i);
    for (const std::string &input : node(i).input()) {
      if (input.empty() || defined.count(input) || !added.insert(input).second)
        continue;
      if (auto weight = initializers.find(input);
          weight != initializers.end()) {
        *graph.add_initializer() = *weight->second;
        continue;
      }
      auto type = typeOf(input);
      if (type == types.end() ||
          !type->second->type().tensor_type().has_shape()) {
        problem = path + ": the type of '" + input +
                  "' (read from outside the block) is unknown: ONNX shape "
                  "inference could not type it";
        return block;
      }
      *graph.add_input() = *type->second;
      graph.mutable_input(graph.input_size() - 1)->set_name(input);
    }
  }
  const std::string &output = outputOf(node(end), 0);
  auto type = types.find(output);
  onnx::ValueInfoProto *info = graph.add_output();
  if (type != types.end())
    *info = *type->second;
  else
    info->set_name(output);
  return block;
}

OnnxBlocks BlockFinder::run() {
  OnnxBlocks result;
  std::set<int> covered;
  int number = 0;
  for (int attention : blockEnds()) {
    std::set<int> tail{attention};
    int end = extendForward(attention, tail);
    // Cut at the model's inputs and at the data operands of projections
    // (not the output projection's): repeat until the cuts stop growing.
    std::set<std::string> cuts;
    std::set<int> nodes = walkBack(end, cuts);
    for (size_t previous = size_t(-1); previous != cuts.size();) {
      previous = cuts.size();
      for (int i : nodes) {
        if (isProjection(node(i)) && !tail.count(i))
          cuts.insert(cutBefore(inputOf(node(i), 0)));
        if (isPositionTable(node(i)))
          cuts.insert(outputOf(node(i), 0));
      }
      nodes = walkBack(end, cuts);
    }
    OnnxBlock block;
    block.name = "attention_" + std::to_string(number++);
    for (int i : nodes) {
      const NodeProto &n = node(i);
      block.nodes.push_back(
          n.name().empty() ? n.op_type() + "(" + outputOf(n, 0) + ")"
                           : n.name());
      covered.insert(i);
    }
    onnx::ModelProto sub = blockModel(nodes, end, block.problem);
    if (block.problem.empty()) {
      try {
        block.graph = importOnnxModel(path, std::move(sub));
        block.graph->document["name"] = block.name;
      } catch (const UserError &error) {
        block.problem = error.message();
      }
    }
    result.blocks.push_back(std::move(block));
  }
  for (int i = 0; i < model.graph().node_size(); ++i)
    if (!covered.count(i) && node(i).op_type() != "Constant")
      result.leftOut.push_back(node(i).name().empty() ? node(i).op_type()
                                                      : node(i).name());
  return result;
}

} // namespace

OnnxBlocks importAttentionBlocks(const std::string &path) {
  onnx::ModelProto model = readOnnxModel(path);
  std::string wholeModelProblem;
  try {
    importOnnxModel(path, model);
  } catch (const UserError &error) {
    wholeModelProblem = error.message();
  }
  OnnxBlocks found = BlockFinder(path, std::move(model)).run();
  found.wholeModelProblem = wholeModelProblem;
  return found;
}

} // namespace attnc
