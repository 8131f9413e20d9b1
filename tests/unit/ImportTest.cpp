//===- ImportTest.cpp - Tests of the graph -> attn IR importer ------------===//
//
// Every example graph must import into IR that verifies; the function's
// signature must carry the run-time sizes and the input and output names;
// every op must be located at its graph node; and after the attn pipeline
// each example must become the number of kernels examples/graphs/README.md
// gives.
//
//===----------------------------------------------------------------------===//

#include "Graph/Graph.h"
#include "Import/ImportGraph.h"
#include "Support/Error.h"

#include "Attn/IR/AttnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace attnc;

namespace {

namespace fs = std::filesystem;

fs::path examplesDir() {
  return fs::path(ATTNC_SOURCE_DIR) / "examples" / "graphs";
}

/// The graph's only function.
mlir::func::FuncOp onlyFunc(mlir::ModuleOp module) {
  auto funcs = module.getOps<mlir::func::FuncOp>();
  EXPECT_EQ(std::distance(funcs.begin(), funcs.end()), 1);
  return *funcs.begin();
}

/// The ops of the function body, terminator excluded.
std::vector<mlir::Operation *> bodyOps(mlir::func::FuncOp func) {
  std::vector<mlir::Operation *> ops;
  for (mlir::Operation &op : func.getBody().getOps())
    if (!op.hasTrait<mlir::OpTrait::IsTerminator>())
      ops.push_back(&op);
  return ops;
}

std::string stringAttr(mlir::Attribute attr) {
  auto string = llvm::dyn_cast_or_null<mlir::StringAttr>(attr);
  return string ? string.getValue().str() : "<not a string>";
}

std::string typeString(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  type.print(stream);
  return text;
}

TEST(ImportTest, EveryExampleImportsAndVerifies) {
  ASSERT_TRUE(fs::is_directory(examplesDir())) << examplesDir();
  int imported = 0;
  for (const fs::directory_entry &entry :
       fs::directory_iterator(examplesDir())) {
    if (entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(entry.path().string());
    Graph graph = loadGraph(entry.path().string());
    mlir::MLIRContext context;
    mlir::OwningOpRef<mlir::ModuleOp> module;
    ASSERT_NO_THROW(module = importGraph(graph, context));
    ASSERT_TRUE(module);
    EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
    mlir::func::FuncOp func = onlyFunc(*module);
    EXPECT_EQ(func.getSymName(), graph.name);
    EXPECT_EQ(func.getNumArguments(),
              graph.runtimeDims().size() + graph.inputs.size());
    EXPECT_EQ(func.getNumResults(), graph.outputs.size());
    // One op per node, in order, each located at its node.
    std::vector<mlir::Operation *> ops = bodyOps(func);
    ASSERT_EQ(ops.size(), graph.nodes.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      auto loc = llvm::dyn_cast<mlir::NameLoc>(ops[i]->getLoc());
      ASSERT_TRUE(loc) << "op " << i << " has no NameLoc";
      EXPECT_EQ(loc.getName().str(), graph.nodes[i].name);
      EXPECT_EQ(ops[i]->getName().getStringRef().str(),
                "attn." + graph.nodes[i].opName)
          << "node " << graph.nodes[i].name;
      EXPECT_EQ(coveredNodes(graph, ops[i]->getLoc()),
                std::vector<std::string>{graph.nodes[i].name});
    }
    ++imported;
  }
  EXPECT_GE(imported, 17);
}

/// A small graph: run-time sizes B and S (T fixed at 4), three inputs of
/// three dtypes, an attention with lse and the masks that attn.attention
/// combines, a reshape, and an output that is an input.
constexpr const char *kSmallGraph = R"({
  "attnc": 1, "name": "small",
  "dims": {"B": null, "S": null, "T": 4},
  "inputs": {
    "q": {"shape": ["B", 2, "S", 8], "dtype": "f16"},
    "k": {"shape": ["B", 2, "T", 8], "dtype": "f16"},
    "v": {"shape": ["B", 2, "T", 8], "dtype": "f16"},
    "keep": {"shape": ["B", 1, "S", "T"], "dtype": "bool"},
    "len": {"shape": ["B"], "dtype": "i32"},
    "x": {"shape": ["B", "S", 16], "dtype": "bf16"}
  },
  "nodes": [
    {"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v",
     "scale": 0.5, "softcap": 30.0, "return_lse": true,
     "bias": [{"kind": "alibi"}],
     "mask": [{"kind": "window", "left": 3, "right": 9},
              {"kind": "causal"},
              {"kind": "window", "left": 7, "right": 1},
              {"kind": "key_length", "input": "len"},
              {"kind": "tensor", "input": "keep"}]},
    {"name": "r", "op": "reshape", "x": "x", "shape": ["S", "B", 4, -1]}
  ],
  "outputs": ["o.lse", "o", "x", "r"]
})";

TEST(ImportTest, SignatureAttributesAndDynamicDims) {
  Graph graph = parseGraph(kSmallGraph, "small.json");
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  mlir::func::FuncOp func = onlyFunc(*module);
  EXPECT_EQ(func.getSymName(), "small");

  // Arguments: B, S, then q, k, v, keep, len, x.
  mlir::FunctionType type = func.getFunctionType();
  ASSERT_EQ(type.getNumInputs(), 8u);
  const char *argTypes[] = {"index",
                            "index",
                            "tensor<?x2x?x8xf16>",
                            "tensor<?x2x4x8xf16>",
                            "tensor<?x2x4x8xf16>",
                            "tensor<?x1x?x4xi1>",
                            "tensor<?xi32>",
                            "tensor<?x?x16xbf16>"};
  for (unsigned i = 0; i < 8; ++i)
    EXPECT_EQ(typeString(type.getInput(i)), argTypes[i]) << "argument " << i;
  EXPECT_EQ(stringAttr(func.getArgAttr(0, "attn.dim")), "B");
  EXPECT_EQ(stringAttr(func.getArgAttr(1, "attn.dim")), "S");
  EXPECT_FALSE(func.getArgAttr(0, "attn.input"));
  const char *inputs[] = {"q", "k", "v", "keep", "len", "x"};
  for (unsigned i = 0; i < 6; ++i) {
    EXPECT_EQ(stringAttr(func.getArgAttr(2 + i, "attn.input")), inputs[i]);
    EXPECT_FALSE(func.getArgAttr(2 + i, "attn.dim"));
  }

  // Results: o.lse, o, x, r.
  ASSERT_EQ(type.getNumResults(), 4u);
  const char *resultTypes[] = {"tensor<?x2x?xf32>", "tensor<?x2x?x8xf16>",
                               "tensor<?x?x16xbf16>", "tensor<?x?x4x4xbf16>"};
  const char *outputs[] = {"o.lse", "o", "x", "r"};
  for (unsigned i = 0; i < 4; ++i) {
    EXPECT_EQ(typeString(type.getResult(i)), resultTypes[i]) << "result " << i;
    EXPECT_EQ(stringAttr(func.getResultAttr(i, "attn.output")), outputs[i]);
  }

  std::vector<mlir::Operation *> ops = bodyOps(func);
  ASSERT_EQ(ops.size(), 2u);
  auto attention = llvm::dyn_cast<mlir::attn::AttentionOp>(ops[0]);
  ASSERT_TRUE(attention);
  EXPECT_EQ(attention.getScale()->convertToDouble(), 0.5);
  EXPECT_EQ(attention.getSoftcap()->convertToDouble(), 30.0);
  EXPECT_TRUE(attention.getAlibi());
  EXPECT_FALSE(attention.getAlibiSlopes());
  EXPECT_TRUE(attention.getCausal());
  ASSERT_TRUE(attention.getWindow());
  // The intersection of [3, 9] and [7, 1].
  EXPECT_EQ(std::vector<int64_t>(attention.getWindow()->begin(),
                                 attention.getWindow()->end()),
            (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(attention.getKeyLengths(), func.getArgument(6));
  ASSERT_EQ(attention.getMasks().size(), 1u);
  EXPECT_EQ(attention.getMasks()[0], func.getArgument(5));
  EXPECT_FALSE(attention.getMaskDrops());
  EXPECT_TRUE(attention.getBiases().empty());
  ASSERT_TRUE(attention.getLse());

  // The reshape's sizes are the index arguments of its symbols, in order.
  auto reshape = llvm::dyn_cast<mlir::attn::ReshapeOp>(ops[1]);
  ASSERT_TRUE(reshape);
  ASSERT_EQ(reshape.getDynamicSizes().size(), 2u);
  EXPECT_EQ(reshape.getDynamicSizes()[0], func.getArgument(1)); // S
  EXPECT_EQ(reshape.getDynamicSizes()[1], func.getArgument(0)); // B

  // The return: lse, output, the argument x itself, the reshape.
  auto ret =
      llvm::cast<mlir::func::ReturnOp>(func.getBody().front().getTerminator());
  ASSERT_EQ(ret.getNumOperands(), 4u);
  EXPECT_EQ(ret.getOperand(0), attention.getLse());
  EXPECT_EQ(ret.getOperand(1), attention.getOutput());
  EXPECT_EQ(ret.getOperand(2), func.getArgument(7));
  EXPECT_EQ(ret.getOperand(3), reshape.getResult());
}

/// An attention-only graph "g" over q, k, v [B, 4, S, 8] f32 with the given
/// extra attributes (and extra inputs).
Graph attentionGraph(const std::string &attributes,
                     const std::string &extraInputs = "") {
  std::string text =
      R"({"attnc": 1, "name": "g", "dims": {"B": null, "S": null},
          "inputs": {"q": {"shape": ["B", 4, "S", 8], "dtype": "f32"},
                     "k": {"shape": ["B", 4, "S", 8], "dtype": "f32"},
                     "v": {"shape": ["B", 4, "S", 8], "dtype": "f32"})" +
      extraInputs +
      R"(},
          "nodes": [{"name": "o", "op": "attention", "q": "q", "k": "k",
                     "v": "v", )" +
      attributes + R"(}],
          "outputs": ["o"]})";
  return parseGraph(text, "g.json");
}

TEST(ImportTest, ScaleIsOnlySetWhenExplicit) {
  mlir::MLIRContext context;
  for (auto [attributes, expected] :
       std::vector<std::pair<std::string, std::optional<double>>>{
           {R"("scale": "default")", std::nullopt},
           {R"("layout": "bhsd")", std::nullopt},
           {R"("scale": 1.0)", 1.0},
           {R"("scale": 0.125)", 0.125}}) {
    SCOPED_TRACE(attributes);
    Graph graph = attentionGraph(attributes);
    mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
    auto ops = bodyOps(onlyFunc(*module));
    ASSERT_EQ(ops.size(), 1u);
    auto attention = llvm::cast<mlir::attn::AttentionOp>(ops[0]);
    std::optional<llvm::APFloat> scale = attention.getScale();
    EXPECT_EQ(scale.has_value(), expected.has_value());
    if (scale && expected) {
      EXPECT_EQ(scale->convertToDouble(), *expected);
    }
  }
}

TEST(ImportTest, TensorBiasesAndAlibiSlopes) {
  Graph graph = attentionGraph(
      R"("bias": [{"kind": "tensor", "input": "b1"},
                  {"kind": "alibi", "slopes": "m"},
                  {"kind": "tensor", "input": "b2"}])",
      R"(, "b1": {"shape": [1, 4, "S", "S"], "dtype": "f32"},
         "m": {"shape": [4], "dtype": "f32"},
         "b2": {"shape": ["S"], "dtype": "f32"})");
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  mlir::func::FuncOp func = onlyFunc(*module);
  auto attention = llvm::cast<mlir::attn::AttentionOp>(bodyOps(func)[0]);
  // Arguments: B, S, q, k, v, b1, m, b2.
  ASSERT_EQ(attention.getBiases().size(), 2u);
  EXPECT_EQ(attention.getBiases()[0], func.getArgument(5));
  EXPECT_EQ(attention.getBiases()[1], func.getArgument(7));
  EXPECT_TRUE(attention.getAlibi());
  EXPECT_EQ(attention.getAlibiSlopes(), func.getArgument(6));
}

TEST(ImportTest, WhatAttentionCannotExpressIsAUserError) {
  mlir::MLIRContext context;
  Graph twoAlibi =
      attentionGraph(R"("bias": [{"kind": "alibi"}, {"kind": "alibi"}])");
  try {
    importGraph(twoAlibi, context);
    FAIL() << "expected a UserError";
  } catch (const UserError &error) {
    EXPECT_STREQ(error.what(), "g.json: /nodes/0/bias: more than one alibi "
                               "bias cannot be compiled");
  }
  Graph twoLengths = attentionGraph(
      R"("mask": [{"kind": "key_length", "input": "n"},
                  {"kind": "key_length", "input": "n"}])",
      R"(, "n": {"shape": ["B"], "dtype": "i32"})");
  try {
    importGraph(twoLengths, context);
    FAIL() << "expected a UserError";
  } catch (const UserError &error) {
    EXPECT_STREQ(error.what(), "g.json: /nodes/0/mask: more than one "
                               "key_length mask cannot be compiled");
  }
}

TEST(ImportTest, FusedLocationsNameEveryNodeInGraphOrder) {
  Graph graph =
      loadGraph((examplesDir() / "sdpa_exporter_causal.json").string());
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  auto name = [&](const char *text) -> mlir::Location {
    return mlir::NameLoc::get(mlir::StringAttr::get(&context, text));
  };
  mlir::Location loc = mlir::FusedLoc::get(
      &context,
      {name("o"), mlir::FusedLoc::get(&context, {name("sm"), name("s")}),
       name("p"), name("o"), name("not-a-node"),
       mlir::UnknownLoc::get(&context)});
  EXPECT_EQ(coveredNodes(graph, loc),
            (std::vector<std::string>{"s", "sm", "p", "o"}));
}

/// The kernels each example becomes after the attn pipeline
/// (examples/graphs/README.md, column "kernels").
TEST(ImportTest, KernelCountsAfterThePipeline) {
  const std::map<std::string, size_t> expected = {
      {"alibi_bshd", 1},
      {"bahdanau_additive_exporter", 1},
      {"bahdanau_additive_step", 1},
      // 3 linear + 3 reshape + 1 attention (bshd, absorbing the q/k/v and
      // output transposes) + 1 reshape + 1 linear.
      {"bert_encoder_attn", 9},
      {"bool_mask_lse", 1},
      {"cosine_attention", 1},
      {"cross_attention", 1},
      {"gemma2_softcap", 1},
      {"gemma2_softcap_window", 1},
      {"gpt2_block_attn", 9},
      {"llama3_gqa_decode", 1},
      {"llama3_gqa_exporter", 1},
      {"llama3_gqa_prefill", 1},
      // The rotary tables (reshape, mul, concat, cos, sin) and rotate_half of
      // q and k (2 slice, neg, concat, 2 mul, add each), then 1 attention.
      {"llama3_rotary_exporter", 20},
      {"luong_general", 1},
      {"mistral_sliding_window", 1},
      {"sdpa_exporter_causal", 1},
      {"t5_relative_bias", 1},
  };
  size_t seen = 0;
  for (const fs::directory_entry &entry :
       fs::directory_iterator(examplesDir())) {
    if (entry.path().extension() != ".json")
      continue;
    std::string stem = entry.path().stem().string();
    SCOPED_TRACE(stem);
    auto it = expected.find(stem);
    ASSERT_NE(it, expected.end()) << "no expected kernel count for " << stem;
    ++seen;
    Graph graph = loadGraph(entry.path().string());
    mlir::MLIRContext context;
    mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
    ASSERT_NO_THROW(runAttnPipeline(*module));
    EXPECT_TRUE(mlir::succeeded(mlir::verify(*module)));
    std::vector<Kernel> kernels = listKernels(graph, *module);
    EXPECT_EQ(kernels.size(), it->second);
    // Every node is covered by exactly one kernel.
    std::vector<std::string> covered;
    for (const Kernel &kernel : kernels)
      covered.insert(covered.end(), kernel.nodes.begin(), kernel.nodes.end());
    std::vector<std::string> names;
    for (const Node &node : graph.nodes)
      names.push_back(node.name);
    std::sort(covered.begin(), covered.end());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(covered, names);
    // An exporter chain leaves exactly one attention kernel.
    if (it->second == 1 && kernels.size() == 1) {
      EXPECT_EQ(kernels[0].op, "attention");
    }
  }
  EXPECT_EQ(seen, expected.size());
}

} // namespace
