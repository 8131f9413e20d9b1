//===- Model.cpp - A graph file or an ONNX model, loaded ------------------===//

#include "Driver/Model.h"

#include "Onnx/OnnxImport.h"
#include "Support/Error.h"

namespace attnc {

LoadedModel loadModel(const std::string &path) {
  if (!isOnnxPath(path))
    return {loadGraph(path), {}};
  OnnxModel model = importOnnx(path);
  LoadedModel loaded;
  try {
    loaded.graph = parseGraph(model.document.dump(), path);
  } catch (const UserError &error) {
    // The document is the importer's; `attnc import` shows it.
    throw UserError(error.message() +
                    " (in the graph imported from the model; `attnc import " +
                    path + " -o DIR` writes it)");
  }
  loaded.graph.sourceNames = std::move(model.names);
  loaded.weights = std::move(model.weights);
  return loaded;
}

} // namespace attnc
