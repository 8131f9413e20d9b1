//===- graph_fuzzer.cpp - libFuzzer target: graph parser and validator ----===//
//
// Any bytes as a graph file: parseGraph either returns a validated graph or
// throws UserError with a message; anything else (a crash, a sanitizer
// report, another exception) is a bug.
//
//===----------------------------------------------------------------------===//

#include "Graph/Graph.h"
#include "Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    attnc::parseGraph(
        std::string_view(reinterpret_cast<const char *>(data), size),
        "fuzz.json");
  } catch (const attnc::UserError &) {
  }
  return 0;
}
