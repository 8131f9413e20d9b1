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
int writeImportedModel() {
  if (!isOnnxPath(options::graph))
    throw UserError("-o " + options::outputFiles +
                    ": attnc import writes files for an ONNX model (a .onnx "
                    "file); " +
                    options::graph + " is a graph already");
  if (options::fused)
    throw UserError("--fused prints IR; it does not go with -o");
  OnnxModel model = importOnnx(options::graph);
  // Validated before anything is written.
  std::string text = formatDocument(model.document);
  parseGraph(text, options::graph);
  std::string name = model.document["name"];
  std::vector<std::pair<std::string, std::string>> files;
  files.emplace_back(name + ".json", text);
  for (const auto &[input, tensor] : model.weights)
    files.emplace_back(input + ".npy", serializeNpy(tensor));
  writeAll(options::outputFiles, files);
  if (!model.weights.empty())
    std::cout << "the weights are graph inputs: pass each with --input "
                 "NAME=" +
                     options::outputFiles + "/NAME.npy\n";
  return 0;
}

int importCommand() {
  if (options::outputFiles.getNumOccurrences())
    return writeImportedModel();
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
