//===- Model.h - A graph file or an ONNX model, loaded ------------*- C++
//-*-===//
//
// Every command takes either an attnc graph (JSON) or an ONNX model (a file
// ending in .onnx). A model is imported into a graph document first
// (Onnx/OnnxImport.h); its initializers become graph inputs whose data comes
// with the graph.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_MODEL_H
#define ATTNC_DRIVER_MODEL_H

#include "Graph/Graph.h"
#include "Support/Tensor.h"

#include <string>
#include <utility>
#include <vector>

namespace attnc {

struct LoadedModel {
  Graph graph;
  /// Data of graph inputs the file itself gives (ONNX initializers).
  std::vector<std::pair<std::string, Tensor>> weights;
};

/// Loads and validates the graph or model at `path`. Throws UserError.
LoadedModel loadModel(const std::string &path);

/// The graph alone.
inline Graph loadModelGraph(const std::string &path) {
  return loadModel(path).graph;
}

} // namespace attnc

#endif // ATTNC_DRIVER_MODEL_H
