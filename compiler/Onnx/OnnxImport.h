//===- OnnxImport.h - ONNX models as attnc graphs ------------------*- C++
//-*-===//
//
// Reads an ONNX model (protobuf, external-data weights included) and writes
// the same computation as an attnc graph document (format v1, the JSON the
// parser reads), so that everything after it (validation, fusion, both
// backends, the reference) sees one kind of graph. Shape subgraphs and other
// constant computations are folded at import; what is left becomes graph
// nodes; initializers the nodes read become graph inputs with their data.
// docs/onnx.md lists the operators and the rules.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ONNX_ONNXIMPORT_H
#define ATTNC_ONNX_ONNXIMPORT_H

#include "Support/Tensor.h"

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnc {

struct OnnxModel {
  /// The attnc graph document.
  nlohmann::ordered_json document;
  /// The initializers the graph reads, by graph input name, in input order.
  std::vector<std::pair<std::string, Tensor>> weights;
  /// The model's input and output names → the graph's value names.
  std::map<std::string, std::string> names;
};

/// One attention block of a model, imported alone (--attention-only).
struct OnnxBlock {
  std::string name;               ///< attention_0, attention_1, ...
  std::vector<std::string> nodes; ///< The ONNX nodes it covers.
  std::optional<OnnxModel> graph; ///< Unless it could not be imported:
  std::string problem;            ///< why.
};

struct OnnxBlocks {
  std::vector<OnnxBlock> blocks;
  std::vector<std::string> leftOut; ///< Nodes in no block.
  std::string wholeModelProblem;    ///< Why the whole model does not import.
};

/// Each attention block of the model at `path` as a model of its own: from
/// the inputs of its Q/K/V projections (or Q/K/V) to its output (after the
/// output projection when there is one). Throws UserError only for a file
/// that is not a model.
OnnxBlocks importAttentionBlocks(const std::string &path);

/// Imports the model at `path`. Throws UserError("PATH: message") naming the
/// node, its op type and the reason for anything it cannot import.
OnnxModel importOnnx(const std::string &path);

/// Whether `path` names an ONNX model (by its extension, `.onnx`).
bool isOnnxPath(const std::string &path);

/// The identifier an ONNX name becomes: every character outside
/// [A-Za-z0-9_] replaced by `_`, and `v_` in front of an empty name or one
/// that starts with a digit (docs/onnx.md).
std::string onnxIdentifier(const std::string &name);

} // namespace attnc

#endif // ATTNC_ONNX_ONNXIMPORT_H
