//===- onnx_fuzzer.cpp - libFuzzer target: the ONNX importer --------------===//
//
// Any bytes as a model file (the importer reads models by path, for their
// external data): an imported graph or a UserError, never a crash.
//
//===----------------------------------------------------------------------===//

#include "Onnx/OnnxImport.h"
#include "Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One file per process, rewritten for every input.
  static const std::string path =
      "/tmp/attnc-onnx-fuzz-" + std::to_string(getpid()) + ".onnx";
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    return 0;
  std::fwrite(data, 1, size, file);
  std::fclose(file);
  try {
    attnc::importOnnx(path);
  } catch (const attnc::UserError &) {
  }
  try {
    attnc::importAttentionBlocks(path);
  } catch (const attnc::UserError &) {
  }
  std::remove(path.c_str());
  return 0;
}
