//===- ImportGraph.cpp - The validated graph as attn IR -------------------===//

#include "Import/ImportGraph.h"
#include "Support/Error.h"
#include "Support/MLIRDiagnostics.h"

#include "Attn/IR/AttnDialect.h"
#include "Attn/IR/AttnOps.h"
#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace attnc {

namespace {

namespace attn = mlir::attn;

class Importer {
public:
  Importer(const Graph &graph, mlir::MLIRContext &context)
      : graph(graph), context(context), builder(&context) {}

  mlir::OwningOpRef<mlir::ModuleOp> run();

private:
  mlir::Type elementType(DType dtype);
  mlir::RankedTensorType tensorType(const TensorType &type);
  mlir::RankedTensorType typeOf(ValueId id) {
    return tensorType(graph.type(id));
  }
  mlir::Value get(ValueId id) { return values.at(id); }
  mlir::Value optional(const std::optional<ValueId> &id) {
    return id ? get(*id) : mlir::Value();
  }
  /// Checks what attn.attention cannot express before any IR is built.
  void checkCompilable(const Node &node, const AttentionOp &op);
  void importNode(const Node &node);
  mlir::Operation *importAttention(const Node &node, const AttentionOp &op,
                                   mlir::Location loc);

  const Graph &graph;
  mlir::MLIRContext &context;
  mlir::OpBuilder builder;
  std::map<ValueId, mlir::Value> values;
  std::map<std::string, mlir::Value> dimArgs;
};

mlir::Type Importer::elementType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return builder.getF32Type();
  case DType::F16:
    return builder.getF16Type();
  case DType::BF16:
    return builder.getBF16Type();
  case DType::I32:
    return builder.getI32Type();
  case DType::Bool:
    return builder.getI1Type();
  }
  throw std::logic_error("unknown dtype");
}

mlir::RankedTensorType Importer::tensorType(const TensorType &type) {
  llvm::SmallVector<int64_t> shape;
  for (const Dim &dim : type.shape)
    shape.push_back(dim.isFixed() ? dim.size : mlir::ShapedType::kDynamic);
  return mlir::RankedTensorType::get(shape, elementType(type.dtype));
}

void Importer::checkCompilable(const Node &node, const AttentionOp &op) {
  auto count = [](const auto &list, auto kind) {
    return std::count_if(list.begin(), list.end(),
                         [&](const auto &entry) { return entry.kind == kind; });
  };
  if (count(op.biases, BiasKind::Alibi) > 1)
    throw UserError(graph.file + ": " + node.pointer +
                    "/bias: more than one alibi bias cannot be compiled");
  if (count(op.masks, MaskKind::KeyLength) > 1)
    throw UserError(graph.file + ": " + node.pointer +
                    "/mask: more than one key_length mask cannot be compiled");
}

mlir::Operation *Importer::importAttention(const Node &node,
                                           const AttentionOp &op,
                                           mlir::Location loc) {
  attn::ScoreKind score = attn::ScoreKind::dot;
  switch (op.score.kind) {
  case ScoreKind::Dot:
    break;
  case ScoreKind::General:
    score = attn::ScoreKind::general;
    break;
  case ScoreKind::Additive:
    score = attn::ScoreKind::additive;
    break;
  case ScoreKind::Cosine:
    score = attn::ScoreKind::cosine;
    break;
  }
  llvm::SmallVector<mlir::Value> biases, masks;
  mlir::Value alibiSlopes, keyLengths;
  bool alibi = false;
  mlir::attn::semantics::KeyVisibility visibility;
  for (const AttentionBias &bias : op.biases) {
    if (bias.kind == BiasKind::Tensor) {
      biases.push_back(get(*bias.input));
    } else {
      alibi = true;
      alibiSlopes = optional(bias.input);
    }
  }
  for (const AttentionMask &mask : op.masks) {
    switch (mask.kind) {
    case MaskKind::Causal:
      visibility.causal = true;
      break;
    case MaskKind::Window:
      visibility.addWindow(mask.left, mask.right);
      break;
    case MaskKind::KeyLength:
      keyLengths = get(*mask.input);
      break;
    case MaskKind::Tensor:
      masks.push_back(get(*mask.input));
      break;
    }
  }
  mlir::Type lseType =
      op.returnLse ? mlir::Type(typeOf(node.results.at(1))) : mlir::Type();
  auto attention = builder.create<attn::AttentionOp>(
      loc, typeOf(node.results.at(0)), lseType, get(op.q), get(op.k), get(op.v),
      optional(op.score.w), optional(op.score.wq), optional(op.score.wk),
      optional(op.score.va), biases, alibiSlopes, keyLengths, masks, score,
      op.layout == Layout::BSHD ? attn::Layout::bshd : attn::Layout::bhsd,
      op.scale ? builder.getF64FloatAttr(*op.scale) : mlir::FloatAttr(),
      op.softcap ? builder.getF64FloatAttr(*op.softcap) : mlir::FloatAttr(),
      alibi, visibility.causal,
      visibility.windowLeft
          ? builder.getDenseI64ArrayAttr(
                {*visibility.windowLeft, *visibility.windowRight})
          : mlir::DenseI64ArrayAttr(),
      mlir::DenseBoolArrayAttr());
  return attention;
}

void Importer::importNode(const Node &node) {
  mlir::Location loc = mlir::NameLoc::get(builder.getStringAttr(node.name));
  mlir::RankedTensorType type = typeOf(node.results.at(0));
  auto i64 = [&](int64_t value) { return builder.getI64IntegerAttr(value); };
  mlir::Operation *op = nullptr;
  if (const auto *matmul = node.getIf<MatmulOp>()) {
    op = builder.create<attn::MatmulOp>(loc, type, get(matmul->a),
                                        get(matmul->b), matmul->transposeB);
  } else if (const auto *linear = node.getIf<LinearOp>()) {
    op = builder.create<attn::LinearOp>(loc, type, get(linear->x),
                                        get(linear->w), optional(linear->bias));
  } else if (const auto *binary = node.getIf<BinaryOp>()) {
    mlir::Value a = get(binary->a), b = get(binary->b);
    switch (binary->kind) {
    case BinaryKind::Add:
      op = builder.create<attn::AddOp>(loc, type, a, b);
      break;
    case BinaryKind::Sub:
      op = builder.create<attn::SubOp>(loc, type, a, b);
      break;
    case BinaryKind::Mul:
      op = builder.create<attn::MulOp>(loc, type, a, b);
      break;
    case BinaryKind::Div:
      op = builder.create<attn::DivOp>(loc, type, a, b);
      break;
    }
  } else if (const auto *scale = node.getIf<ScaleOp>()) {
    op = builder.create<attn::ScaleOp>(loc, type, get(scale->x),
                                       builder.getF64FloatAttr(scale->value));
  } else if (const auto *unary = node.getIf<UnaryOp>()) {
    mlir::Value x = get(unary->x);
    switch (unary->kind) {
    case UnaryKind::Tanh:
      op = builder.create<attn::TanhOp>(loc, type, x);
      break;
    case UnaryKind::Exp:
      op = builder.create<attn::ExpOp>(loc, type, x);
      break;
    case UnaryKind::Neg:
      op = builder.create<attn::NegOp>(loc, type, x);
      break;
    case UnaryKind::Sqrt:
      op = builder.create<attn::SqrtOp>(loc, type, x);
      break;
    case UnaryKind::Cos:
      op = builder.create<attn::CosOp>(loc, type, x);
      break;
    case UnaryKind::Sin:
      op = builder.create<attn::SinOp>(loc, type, x);
      break;
    }
  } else if (const auto *softmax = node.getIf<SoftmaxOp>()) {
    op = builder.create<attn::SoftmaxOp>(loc, type, get(softmax->x),
                                         i64(softmax->axis));
  } else if (const auto *fill = node.getIf<MaskedFillOp>()) {
    op = builder.create<attn::MaskedFillOp>(
        loc, type, get(fill->x), get(fill->mask),
        builder.getF64FloatAttr(fill->value));
  } else if (const auto *causal = node.getIf<CausalMaskOp>()) {
    op = builder.create<attn::CausalMaskOp>(loc, type, get(causal->x));
  } else if (const auto *window = node.getIf<WindowMaskOp>()) {
    op = builder.create<attn::WindowMaskOp>(
        loc, type, get(window->x), i64(window->left), i64(window->right));
  } else if (const auto *reshape = node.getIf<ReshapeOp>()) {
    llvm::SmallVector<mlir::Value> sizes;
    for (const Dim &dim : graph.type(node.results.at(0)).shape)
      if (!dim.isFixed())
        sizes.push_back(dimArgs.at(dim.symbol));
    op = builder.create<attn::ReshapeOp>(loc, type, get(reshape->x), sizes);
  } else if (const auto *transpose = node.getIf<TransposeOp>()) {
    op = builder.create<attn::TransposeOp>(
        loc, type, get(transpose->x),
        builder.getDenseI64ArrayAttr(transpose->perm));
  } else if (const auto *unsqueeze = node.getIf<UnsqueezeOp>()) {
    op = builder.create<attn::UnsqueezeOp>(loc, type, get(unsqueeze->x),
                                           i64(unsqueeze->axis));
  } else if (const auto *repeat = node.getIf<RepeatOp>()) {
    op = builder.create<attn::RepeatOp>(loc, type, get(repeat->x),
                                        i64(repeat->axis), i64(repeat->times));
  } else if (const auto *slice = node.getIf<SliceOp>()) {
    op = builder.create<attn::SliceOp>(loc, type, get(slice->x),
                                       i64(slice->axis), i64(slice->start),
                                       i64(slice->end));
  } else if (const auto *sum = node.getIf<ReduceSumOp>()) {
    op = builder.create<attn::ReduceSumOp>(
        loc, type, get(sum->x), i64(sum->axis),
        sum->keepdims ? builder.getUnitAttr() : mlir::UnitAttr());
  } else if (const auto *concat = node.getIf<ConcatOp>()) {
    llvm::SmallVector<mlir::Value> inputs;
    for (ValueId id : concat->inputs)
      inputs.push_back(get(id));
    op = builder.create<attn::ConcatOp>(loc, type, inputs, i64(concat->axis));
  } else if (const auto *attention = node.getIf<AttentionOp>()) {
    op = importAttention(node, *attention, loc);
  }
  if (!op || op->getNumResults() != node.results.size())
    throw std::logic_error("importing node " + node.name + " (" + node.opName +
                           ") failed");
  for (auto [id, result] : llvm::zip(node.results, op->getResults()))
    values[id] = result;
}

mlir::OwningOpRef<mlir::ModuleOp> Importer::run() {
  for (const Node &node : graph.nodes)
    if (const auto *attention = node.getIf<AttentionOp>())
      checkCompilable(node, *attention);

  context.loadDialect<attn::AttnDialect, mlir::func::FuncDialect>();
  mlir::Location fileLoc = mlir::FileLineColLoc::get(
      builder.getStringAttr(graph.file), /*line=*/0, /*column=*/0);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(fileLoc);

  std::vector<std::string> runtimeDims = graph.runtimeDims();
  llvm::SmallVector<mlir::Type> argTypes(runtimeDims.size(),
                                         builder.getIndexType());
  for (ValueId id : graph.inputs)
    argTypes.push_back(typeOf(id));
  llvm::SmallVector<mlir::Type> resultTypes;
  for (ValueId id : graph.outputs)
    resultTypes.push_back(typeOf(id));

  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<mlir::func::FuncOp>(
      mlir::NameLoc::get(builder.getStringAttr(graph.name), fileLoc),
      graph.name, builder.getFunctionType(argTypes, resultTypes));
  mlir::Block *body = func.addEntryBlock();
  for (size_t i = 0; i < runtimeDims.size(); ++i) {
    func.setArgAttr(i, "attn.dim", builder.getStringAttr(runtimeDims[i]));
    dimArgs[runtimeDims[i]] = body->getArgument(i);
  }
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    unsigned arg = runtimeDims.size() + i;
    ValueId id = graph.inputs[i];
    func.setArgAttr(arg, "attn.input",
                    builder.getStringAttr(graph.value(id).name));
    // Which run-time size each dim is, as the kernel ABI encodes it (> 0
    // fixed, -(k + 1) the k-th run-time size): what the entry reads from
    // `dims`, so no later pass needs the graph.
    llvm::SmallVector<int64_t> dims;
    for (const Dim &dim : graph.type(id).shape) {
      auto named = std::find(runtimeDims.begin(), runtimeDims.end(),
                             dim.symbol);
      dims.push_back(dim.isFixed() ? dim.size
                                   : -(named - runtimeDims.begin()) - 1);
    }
    func.setArgAttr(arg, "attn.dims", builder.getDenseI64ArrayAttr(dims));
    values[id] = body->getArgument(arg);
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    func.setResultAttr(
        i, "attn.output",
        builder.getStringAttr(graph.value(graph.outputs[i]).name));

  builder.setInsertionPointToEnd(body);
  for (const Node &node : graph.nodes)
    importNode(node);
  llvm::SmallVector<mlir::Value> results;
  for (ValueId id : graph.outputs)
    results.push_back(get(id));
  builder.create<mlir::func::ReturnOp>(fileLoc, results);

  // A verifier failure means the importer or the front end let something
  // through that the ops reject: an internal error, never the user's.
  std::string diagnostics;
  if (succeeded(collectingDiagnostics(context, diagnostics,
                                      [&] { return mlir::verify(*module); })))
    return module;
  throw std::logic_error("the imported IR of " + graph.file +
                         " does not verify: " + diagnostics);
}

/// Appends the NameLocs under `loc` to `names`.
void collectNames(mlir::Location loc, std::vector<std::string> &names) {
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc)) {
    names.push_back(name.getName().str());
    return;
  }
  if (auto fused = llvm::dyn_cast<mlir::FusedLoc>(loc)) {
    for (mlir::Location inner : fused.getLocations())
      collectNames(inner, names);
    return;
  }
  if (auto callSite = llvm::dyn_cast<mlir::CallSiteLoc>(loc)) {
    collectNames(callSite.getCallee(), names);
    collectNames(callSite.getCaller(), names);
    return;
  }
  if (auto opaque = llvm::dyn_cast<mlir::OpaqueLoc>(loc))
    collectNames(opaque.getFallbackLocation(), names);
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp> importGraph(const Graph &graph,
                                              mlir::MLIRContext &context) {
  return Importer(graph, context).run();
}

void runAttnPipeline(mlir::ModuleOp module) {
  mlir::MLIRContext &context = *module.getContext();
  mlir::PassManager pm = mlir::PassManager::on<mlir::ModuleOp>(&context);
  mlir::attn::buildAttnPipeline(pm);
  std::string diagnostics;
  if (succeeded(collectingDiagnostics(context, diagnostics,
                                      [&] { return pm.run(module); })))
    return;
  throw std::logic_error(
      "the attn pipeline failed" +
      (diagnostics.empty() ? std::string() : ": " + diagnostics));
}

Kernel describeKernel(const Graph &graph, mlir::Operation &op) {
  Kernel kernel;
  llvm::StringRef name = op.getName().getStringRef();
  name.consume_front("attn.");
  kernel.op = name.str();
  kernel.nodes = coveredNodes(graph, op.getLoc());
  kernel.name = kernel.nodes.empty() ? kernel.op : kernel.nodes.back();
  return kernel;
}

std::vector<Kernel> listKernels(const Graph &graph, mlir::ModuleOp module) {
  std::vector<Kernel> kernels;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    for (mlir::Operation &op : func.getBody().getOps()) {
      if (op.hasTrait<mlir::OpTrait::IsTerminator>())
        continue;
      kernels.push_back(describeKernel(graph, op));
    }
  return kernels;
}

std::vector<std::string> coveredNodes(const Graph &graph, mlir::Location loc) {
  std::vector<std::string> names;
  collectNames(loc, names);
  std::vector<std::string> ordered;
  for (const Node &node : graph.nodes)
    if (std::find(names.begin(), names.end(), node.name) != names.end())
      ordered.push_back(node.name);
  return ordered;
}

} // namespace attnc
