//===- ImportCommand.cpp - attnc import and attnc explain -----------------===//
//
// Both commands import the graph into attn IR (Import/ImportGraph.h).
// `import` prints it, before any pass or (--fused) after the attn pipeline;
// `explain` runs the pipeline and lists the ops left, one kernel each, with
// the graph nodes their locations name.
//
//===----------------------------------------------------------------------===//

#include "Driver/Commands.h"
#include "Driver/Model.h"
#include "Driver/Options.h"
#include "Graph/Graph.h"
#include "Import/ImportGraph.h"
#include "Onnx/OnnxImport.h"
#include "Support/Error.h"
#include "Support/Npy.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <set>

namespace attnc {

namespace {

/// The document as the examples are written: one line per input and node.
std::string formatDocument(const nlohmann::ordered_json &document) {
  std::string text = "{\n";
  size_t key = 0;
  for (const auto &[name, value] : document.items()) {
    text += "  " + nlohmann::json(name).dump() + ": ";
    if ((name == "inputs" || name == "nodes") && !value.empty()) {
      bool object = value.is_object();
      text += object ? "{\n" : "[\n";
      size_t entry = 0;
      for (const auto &[field, item] : value.items())
        text += "    " + (object ? nlohmann::json(field).dump() + ": " : "") +
                item.dump() + (++entry < value.size() ? ",\n" : "\n");
      text += object ? "  }" : "  ]";
    } else {
      text += value.dump();
    }
    text += ++key < document.size() ? ",\n" : "\n";
  }
  return text + "}\n";
}

} // namespace

/// `attnc import model.onnx -o DIR`: the graph document and its weights.
/// The files of one imported graph: NAME.json and a .npy per weight, under
/// `prefix`; the document is validated first.
void addGraphFiles(const OnnxModel &model, const std::string &prefix,
                   std::vector<std::pair<std::string, std::string>> &files) {
  std::string text = formatDocument(model.document);
  parseGraph(text, options::graph);
  std::string name = model.document["name"];
  files.emplace_back(prefix + name + ".json", text);
  for (const auto &[input, tensor] : model.weights)
    files.emplace_back(prefix + input + ".npy", serializeNpy(tensor));
}

/// `--attention-only`: each block in DIR/attention_N/, and DIR/blocks.json
/// saying what each covers and why the rest was left out.
int writeAttentionBlocks() {
  OnnxBlocks found = importAttentionBlocks(options::graph);
  std::vector<std::pair<std::string, std::string>> files;
  nlohmann::ordered_json report = {
      {"model", options::graph},
      {"whole_model", found.wholeModelProblem.empty()
                          ? nlohmann::ordered_json("imports")
                          : nlohmann::ordered_json(found.wholeModelProblem)},
      {"blocks", nlohmann::ordered_json::array()},
      {"left_out", found.leftOut}};
  int imported = 0;
  std::string firstProblem;
  for (const OnnxBlock &block : found.blocks) {
    nlohmann::ordered_json entry = {{"name", block.name},
                                    {"nodes", block.nodes}};
    if (block.graph) {
      addGraphFiles(*block.graph, block.name + "/", files);
      entry["graph"] = block.name + "/" + block.name + ".json";
      ++imported;
    } else {
      entry["problem"] = block.problem;
      if (firstProblem.empty())
        firstProblem = block.name + ": " + block.problem;
    }
    report["blocks"].push_back(entry);
  }
  if (found.blocks.empty())
    throw UserError(options::graph +
                    ": no attention block found (a Softmax "
                    "whose probabilities multiply V, or a fused attention "
                    "operator)");
  if (imported == 0)
    throw UserError("no attention block imports; " + firstProblem);
  files.emplace_back("blocks.json", report.dump(2) + "\n");
  writeAll(options::outputFiles, files);
  for (const OnnxBlock &block : found.blocks)
    std::cout << block.name << ": " << block.nodes.size() << " ONNX nodes, "
              << (block.graph ? "imported" : "not imported: " + block.problem)
              << "\n";
  if (!found.leftOut.empty())
    std::cout << found.leftOut.size()
              << " ONNX nodes are in no attention block (blocks.json lists "
                 "them)\n";
  return 0;
}

/// `attnc import model.onnx -o DIR`: the graph document and its weights.
int writeImportedModel() {
  if (!isOnnxPath(options::graph))
    throw UserError("-o " + options::outputFiles +
                    ": attnc import writes files for an ONNX model (a .onnx "
                    "file); " +
                    options::graph + " is a graph already");
  if (options::fused)
    throw UserError("--fused prints IR; it does not go with -o");
  if (options::attentionOnly)
    return writeAttentionBlocks();
  std::optional<OnnxModel> model;
  try {
    model = importOnnx(options::graph);
  } catch (const UserError &error) {
    throw UserError(error.message() +
                    " (--attention-only imports each attention block alone)");
  }
  std::vector<std::pair<std::string, std::string>> files;
  addGraphFiles(*model, "", files);
  writeAll(options::outputFiles, files);
  if (!model->weights.empty())
    std::cout << "the weights are graph inputs: pass each with --input "
                 "NAME=" +
                     options::outputFiles + "/NAME.npy\n";
  return 0;
}

int importCommand() {
  if (options::outputFiles.getNumOccurrences())
    return writeImportedModel();
  if (options::attentionOnly)
    throw UserError("--attention-only writes files: give -o DIR");
  Graph graph = loadModelGraph(options::graph);
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  if (options::fused)
    runAttnPipeline(*module);
  module->print(llvm::outs()); // Ends with a newline.
  llvm::outs().flush();
  return 0;
}

int explainCommand() {
  Graph graph = loadModelGraph(options::graph);
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  runAttnPipeline(*module);
  std::vector<Kernel> kernels = listKernels(graph, *module);
  if (options::json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (size_t i = 0; i < kernels.size(); ++i)
      list.push_back({{"kernel", i},
                      {"name", kernels[i].name},
                      {"op", kernels[i].op},
                      {"nodes", kernels[i].nodes}});
    std::cout << list.dump(2) << "\n";
    return 0;
  }
  std::set<std::string> covered;
  for (size_t i = 0; i < kernels.size(); ++i) {
    std::string nodes;
    for (const std::string &node : kernels[i].nodes) {
      nodes += (nodes.empty() ? "" : ", ") + node;
      covered.insert(node);
    }
    std::cout << "kernel " << i << ": " << kernels[i].name << " ("
              << kernels[i].op << ") covers " << nodes << "\n";
  }
  // Nodes that folded away (a scale by 1, an identity transpose) or feed no
  // output need no kernel; say so rather than drop them silently.
  std::string uncovered;
  for (const Node &node : graph.nodes)
    if (!covered.count(node.name))
      uncovered += (uncovered.empty() ? "" : ", ") + node.name;
  if (!uncovered.empty())
    std::cout << "no kernel (folded or unused): " << uncovered << "\n";
  return 0;
}

} // namespace attnc
