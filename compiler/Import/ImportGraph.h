//===- ImportGraph.h - The validated graph as attn IR -------------*- C++
//-*-===//
//
// Turns a validated graph (Graph/Graph.h) into one `func.func @<graph name>`
// of the attn dialect:
//
//   func.func @g(%B: index {attn.dim = "B"}, ...,
//                %q: tensor<?x12x?x64xf32> {attn.input = "q"}, ...)
//       -> (tensor<?x12x?x64xf32> {attn.output = "o"}, ...)
//
// Arguments are one `index` per run-time size (Graph::runtimeDims(), in
// order), then one ranked tensor per graph input (a dynamic dim for each
// run-time size; bool is i1, i32 a signless i32). Each node becomes the
// matching attn op located at NameLoc("<node name>"), so passes that fuse or
// fold ops keep track (FusedLoc of NameLocs) of the graph nodes each op
// covers.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_IMPORT_IMPORTGRAPH_H
#define ATTNC_IMPORT_IMPORTGRAPH_H

#include "Graph/Graph.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace attnc {

/// Imports `graph` into `context` (loading the attn and func dialects).
/// Throws UserError("<file>: <node pointer>/...: ... cannot be compiled") for
/// the few graphs the reference evaluator handles but attn IR cannot express
/// (more than one alibi bias or key_length mask on one attention node), and
/// std::logic_error when the result does not verify (a bug of the importer or
/// the front end).
mlir::OwningOpRef<mlir::ModuleOp> importGraph(const Graph &graph,
                                              mlir::MLIRContext &context);

/// Runs mlir::attn::buildAttnPipeline (fuse attention, then canonicalize) on
/// an imported module. Throws std::logic_error when a pass
/// fails (an internal error).
void runAttnPipeline(mlir::ModuleOp module);

/// One kernel of the compiled graph: an op left in the function body.
struct Kernel {
  std::string name;               ///< The last graph node it covers.
  std::string op;                 ///< The op's name without "attn.".
  std::vector<std::string> nodes; ///< coveredNodes() of its location.
};

/// One op of the graph function as a kernel.
Kernel describeKernel(const Graph &graph, mlir::Operation &op);

/// The kernels of an imported (and usually pipelined) module, in the order of
/// the function body: every op but the terminator.
std::vector<Kernel> listKernels(const Graph &graph, mlir::ModuleOp module);

/// The names of the graph nodes an op's location covers: its NameLocs, also
/// inside FusedLocs (and CallSite/Opaque wrappers), deduplicated and ordered
/// as the nodes are in `graph`. Names that are not nodes of `graph` are
/// dropped.
std::vector<std::string> coveredNodes(const Graph &graph, mlir::Location loc);

} // namespace attnc

#endif // ATTNC_IMPORT_IMPORTGRAPH_H
