//===- KernelPlan.cpp - The fused kernels of a graph, without MLIR --------===//

#include "Import/KernelPlan.h"
#include "Import/ImportGraph.h"

#include "Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/DenseMap.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>

namespace attnc {

namespace {

class PlanBuilder {
public:
  PlanBuilder(const Graph &graph, KernelPlan &plan)
      : graph(graph), plan(plan) {}
  void build(mlir::func::FuncOp func);

private:
  const Graph &graph;
  KernelPlan &plan;
  llvm::DenseMap<mlir::Value, int> ids;

  int add(PlanValue value) {
    plan.values.push_back(std::move(value));
    return int(plan.values.size()) - 1;
  }
  int lookup(mlir::Value value) const {
    if (!value)
      return -1;
    auto it = ids.find(value);
    if (it == ids.end())
      throw std::logic_error("planKernels: an operand defined outside the "
                             "function body");
    return it->second;
  }
  /// The value an op result stands for: the graph value of that name when
  /// there is one (its symbolic shape), else the IR type's static sizes.
  PlanValue resultValue(const std::string &name, mlir::Value result) const;
  AttentionPlan attention(mlir::attn::AttentionOp op) const;
  static PrimitivePlan primitive(mlir::Operation &op);
};

PrimitivePlan PlanBuilder::primitive(mlir::Operation &op) {
  namespace attn = mlir::attn;
  PrimitivePlan result;
  if (auto matmul = mlir::dyn_cast<attn::MatmulOp>(op))
    result.transposeB = matmul.getTransposeB();
  else if (auto linear = mlir::dyn_cast<attn::LinearOp>(op))
    result.hasBias = bool(linear.getBias());
  else if (auto scale = mlir::dyn_cast<attn::ScaleOp>(op))
    result.value = scale.getValue().convertToDouble();
  else if (auto fill = mlir::dyn_cast<attn::MaskedFillOp>(op))
    result.value = fill.getValue().convertToDouble();
  else if (auto window = mlir::dyn_cast<attn::WindowMaskOp>(op))
    result.left = window.getLeft(), result.right = window.getRight();
  else if (auto softmax = mlir::dyn_cast<attn::SoftmaxOp>(op))
    result.axis = softmax.getAxis();
  else if (auto unsqueeze = mlir::dyn_cast<attn::UnsqueezeOp>(op))
    result.axis = unsqueeze.getAxis();
  else if (auto repeat = mlir::dyn_cast<attn::RepeatOp>(op))
    result.axis = repeat.getAxis(), result.times = repeat.getTimes();
  else if (auto slice = mlir::dyn_cast<attn::SliceOp>(op))
    result.axis = slice.getAxis(), result.start = slice.getStart(),
    result.end = slice.getEnd();
  else if (auto sum = mlir::dyn_cast<attn::ReduceSumOp>(op))
    result.axis = sum.getAxis(), result.keepdims = sum.getKeepdims();
  else if (auto concat = mlir::dyn_cast<attn::ConcatOp>(op))
    result.axis = concat.getAxis();
  else if (auto transpose = mlir::dyn_cast<attn::TransposeOp>(op))
    result.permutation.assign(transpose.getPermutation().begin(),
                              transpose.getPermutation().end());
  return result;
}

PlanValue PlanBuilder::resultValue(const std::string &name,
                                   mlir::Value result) const {
  PlanValue value;
  if (std::optional<ValueId> id = graph.lookup(name)) {
    value.name = name;
    value.dtype = graph.type(*id).dtype;
    value.shape = graph.type(*id).shape;
    return value;
  }
  auto type = mlir::cast<mlir::RankedTensorType>(result.getType());
  mlir::Type element = type.getElementType();
  value.dtype = element.isF16()    ? DType::F16
                : element.isBF16() ? DType::BF16
                : element.isInteger(1) ? DType::Bool
                : element.isInteger(32) ? DType::I32
                                         : DType::F32;
  for (int64_t size : type.getShape())
    value.shape.push_back(mlir::ShapedType::isDynamic(size) ? Dim::named("?")
                                                            : Dim{size, ""});
  return value;
}

AttentionPlan PlanBuilder::attention(mlir::attn::AttentionOp op) const {
  namespace attn = mlir::attn;
  AttentionPlan result;
  switch (op.getScore()) {
  case attn::ScoreKind::dot:
    result.score = ScoreKind::Dot;
    break;
  case attn::ScoreKind::general:
    result.score = ScoreKind::General;
    break;
  case attn::ScoreKind::additive:
    result.score = ScoreKind::Additive;
    break;
  case attn::ScoreKind::cosine:
    result.score = ScoreKind::Cosine;
    break;
  }
  result.layout =
      op.getLayout() == attn::Layout::bshd ? Layout::BSHD : Layout::BHSD;
  result.scale = op.getScaleRule();
  if (mlir::FloatAttr softcap = op.getSoftcapAttr())
    result.softcap = softcap.getValueAsDouble();
  result.alibi = op.getAlibi();
  result.visibility = op.getKeyVisibility();
  result.query = lookup(op.getQuery());
  result.key = lookup(op.getKey());
  result.value = lookup(op.getValue());
  result.generalWeight = lookup(op.getGeneralWeight());
  result.queryWeight = lookup(op.getQueryWeight());
  result.keyWeight = lookup(op.getKeyWeight());
  result.scoreVector = lookup(op.getScoreVector());
  result.alibiSlopes = lookup(op.getAlibiSlopes());
  result.keyLengths = lookup(op.getKeyLengths());
  for (mlir::Value bias : op.getBiases())
    result.biases.push_back(lookup(bias));
  std::optional<llvm::ArrayRef<bool>> drops = op.getMaskDrops();
  for (auto [n, mask] : llvm::enumerate(op.getMasks())) {
    result.masks.push_back(lookup(mask));
    result.maskDrops.push_back(drops && n < drops->size() && (*drops)[n]);
  }
  return result;
}

void PlanBuilder::build(mlir::func::FuncOp func) {
  size_t numDims = plan.runtimeDims.size();
  for (mlir::BlockArgument argument : func.getArguments()) {
    if (argument.getArgNumber() < numDims)
      continue;
    int n = int(argument.getArgNumber() - numDims);
    const Value &graphValue = graph.value(graph.inputs.at(n));
    PlanValue value;
    value.name = graphValue.name;
    value.dtype = graphValue.type.dtype;
    value.shape = graphValue.type.shape;
    value.input = n;
    ids[argument] = add(std::move(value));
  }
  for (mlir::Operation &op : func.getBody().getOps()) {
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (auto [n, operand] : llvm::enumerate(ret.getOperands())) {
        int id = lookup(operand);
        const Value &graphValue = graph.value(graph.outputs.at(n));
        // An output that is also an input or another output needs a copy.
        if (plan.values[id].input >= 0 || plan.values[id].output >= 0) {
          PlannedKernel copy;
          copy.op = "copy";
          copy.name = graphValue.name;
          copy.operands = {id};
          id = add(PlanValue{});
          plan.values[id].producer = int(plan.kernels.size());
          copy.results = {id};
          plan.kernels.push_back(std::move(copy));
        }
        PlanValue &value = plan.values[id];
        value.name = graphValue.name;
        value.dtype = graphValue.type.dtype;
        value.shape = graphValue.type.shape;
        value.output = int(n);
      }
      continue;
    }
    PlannedKernel kernel;
    Kernel described = describeKernel(graph, op);
    kernel.op = described.op;
    kernel.name = described.name;
    kernel.nodes = described.nodes;
    for (const Node &node : graph.nodes)
      if (node.name == kernel.name)
        kernel.pointer = node.pointer;
    for (mlir::Value operand : op.getOperands())
      if (mlir::isa<mlir::RankedTensorType>(operand.getType()))
        kernel.operands.push_back(lookup(operand));
    for (auto [n, result] : llvm::enumerate(op.getResults())) {
      std::string name = kernel.name + (n == 0 ? "" : ".lse");
      PlanValue value = resultValue(name, result);
      value.producer = int(plan.kernels.size());
      int id = add(std::move(value));
      ids[result] = id;
      kernel.results.push_back(id);
    }
    if (auto attention = mlir::dyn_cast<mlir::attn::AttentionOp>(op)) {
      kernel.attention = this->attention(attention);
      kernel.attention->output = lookup(attention.getOutput());
      kernel.attention->lse = lookup(attention.getLse());
    } else {
      kernel.primitive = primitive(op);
    }
    plan.kernels.push_back(std::move(kernel));
  }
}

} // namespace

KernelPlan planKernels(const Graph &graph) {
  KernelPlan plan;
  plan.graphName = graph.name;
  plan.graphFile = graph.file;
  plan.runtimeDims = graph.runtimeDims();
  plan.numInputs = int(graph.inputs.size());
  plan.numOutputs = int(graph.outputs.size());
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  runAttnPipeline(*module);
  for (auto func : module->getOps<mlir::func::FuncOp>())
    PlanBuilder(graph, plan).build(func);
  return plan;
}

std::string planToJson(const KernelPlan &plan) {
  using json = nlohmann::ordered_json;
  json values = json::array();
  for (const PlanValue &value : plan.values) {
    json shape = json::array();
    for (const Dim &dim : value.shape)
      shape.push_back(dim.isFixed() ? json(dim.size) : json(dim.symbol));
    values.push_back({{"name", value.name},
                      {"dtype", dtypeName(value.dtype)},
                      {"shape", shape},
                      {"input", value.input},
                      {"output", value.output},
                      {"producer", value.producer}});
  }
  json kernels = json::array();
  for (const PlannedKernel &kernel : plan.kernels) {
    json entry = {{"op", kernel.op},
                  {"name", kernel.name},
                  {"nodes", kernel.nodes},
                  {"operands", kernel.operands},
                  {"results", kernel.results}};
    if (const std::optional<AttentionPlan> &a = kernel.attention) {
      static const char *scores[] = {"dot", "general", "additive", "cosine"};
      json attributes = {
          {"score", scores[int(a->score)]},
          {"layout", a->layout == Layout::BSHD ? "bshd" : "bhsd"},
          {"scale", a->scale.overSqrtKeyDim
                        ? json(std::to_string(a->scale.factor) + "/sqrt(Dk)")
                        : json(a->scale.factor)},
          {"softcap", a->softcap ? json(*a->softcap) : json(nullptr)},
          {"alibi", a->alibi},
          {"causal", a->visibility.causal},
          {"window", a->visibility.windowLeft
                         ? json::array({*a->visibility.windowLeft,
                                        *a->visibility.windowRight})
                         : json(nullptr)},
          {"query", a->query},
          {"key", a->key},
          {"value", a->value},
          {"general_weight", a->generalWeight},
          {"query_weight", a->queryWeight},
          {"key_weight", a->keyWeight},
          {"score_vector", a->scoreVector},
          {"alibi_slopes", a->alibiSlopes},
          {"key_lengths", a->keyLengths},
          {"biases", a->biases},
          {"masks", a->masks},
          {"mask_drops", a->maskDrops},
          {"output", a->output},
          {"lse", a->lse}};
      entry["attention"] = attributes;
    }
    if (const std::optional<PrimitivePlan> &p = kernel.primitive)
      entry["attributes"] = {{"transpose_b", p->transposeB},
                             {"bias", p->hasBias},
                             {"value", std::isinf(p->value)
                                           ? json(p->value < 0 ? "-inf" : "inf")
                                           : json(p->value)},
                             {"axis", p->axis},
                             {"times", p->times},
                             {"start", p->start},
                             {"end", p->end},
                             {"left", p->left},
                             {"right", p->right},
                             {"keepdims", p->keepdims},
                             {"permutation", p->permutation}};
    kernels.push_back(entry);
  }
  json result = {{"name", plan.graphName},
                 {"runtime_dims", plan.runtimeDims},
                 {"values", values},
                 {"kernels", kernels}};
  return result.dump(2) + "\n";
}

} // namespace attnc
