//===- ImportCommand.cpp - attnc import and attnc explain -----------------===//
//
// Both commands import the graph into attn IR (Import/ImportGraph.h).
// `import` prints it, before any pass or (--fused) after the attn pipeline;
// `explain` runs the pipeline and lists the ops left, one kernel each, with
// the graph nodes their locations name.
//
//===----------------------------------------------------------------------===//

#include "Driver/Commands.h"
#include "Driver/Options.h"
#include "Graph/Graph.h"
#include "Import/ImportGraph.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

#include <iostream>
#include <set>

namespace attnc {

int importCommand() {
  Graph graph = loadGraph(options::graph);
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  if (options::fused)
    runAttnPipeline(*module);
  module->print(llvm::outs()); // Ends with a newline.
  llvm::outs().flush();
  return 0;
}

int explainCommand() {
  Graph graph = loadGraph(options::graph);
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
