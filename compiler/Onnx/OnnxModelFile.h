//===- OnnxModelFile.h - ONNX protobufs inside the importer -------*- C++
//-*-===//
//
// What the importer's files share that needs onnx.proto's classes; the rest
// of attnc sees only OnnxImport.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_ONNX_ONNXMODELFILE_H
#define ATTNC_ONNX_ONNXMODELFILE_H

#include "Onnx/OnnxImport.h"

#include <onnx/onnx_pb.h>

namespace attnc {

/// Reads and parses the model at `path`. Throws UserError.
onnx::ModelProto readOnnxModel(const std::string &path);

/// Imports `model`, read from `path` (its directory holds external data;
/// messages name it).
OnnxModel importOnnxModel(const std::string &path, onnx::ModelProto model);

/// Types what ONNX shape inference can type among `model`'s values; a node
/// whose inference fails (or claims an absurd rank) leaves its outputs
/// untyped. Never throws.
void inferOnnxShapes(onnx::ModelProto &model);

} // namespace attnc

#endif // ATTNC_ONNX_ONNXMODELFILE_H
