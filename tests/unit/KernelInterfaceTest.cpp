//===- KernelInterfaceTest.cpp - NAME.h and NAME.json ---------------------===//

#include "Codegen/KernelInterface.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace attnc;

namespace {

const std::string kSource = ATTNC_SOURCE_DIR;

Graph example(const std::string &name) {
  return loadGraph(kSource + "/examples/graphs/" + name + ".json");
}

// Tests that run-time sizes map to -(index + 1) and fixed sizes stay.
TEST(KernelInterface, AbiDims) {
  Graph graph = example("sdpa_exporter_causal"); // dims B, S, T.
  EXPECT_EQ(abiDims(graph, graph.type(graph.inputs[0]).shape),
            (std::vector<int64_t>{-1, 12, -2, 64}));
  EXPECT_EQ(abiDims(graph, graph.type(graph.inputs[1]).shape),
            (std::vector<int64_t>{-1, 12, -3, 64}));
}

// Tests that the header of every example graph is valid C99 against the
// runtime's attnrt.h and declares the kernel, the entry and the wrapper.
TEST(KernelInterface, HeaderCompilesAsC) {
  for (const auto &entry :
       std::filesystem::directory_iterator(kSource + "/examples/graphs")) {
    if (entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(entry.path().string());
    Graph graph = loadGraph(entry.path().string());
    std::string header = kernelHeader(graph);
    EXPECT_NE(
        header.find("extern const attnrt_kernel " + graph.name + "_kernel;"),
        std::string::npos);
    EXPECT_NE(header.find("int32_t " + graph.name + "_entry("),
              std::string::npos);
    std::filesystem::path file =
        std::filesystem::temp_directory_path() / (graph.name + "_attnc_test.h");
    std::ofstream(file) << header;
    std::string command = "cc -std=c99 -Wall -Werror -fsyntax-only -x c -I" +
                          kSource + "/runtime/include " + file.string();
    EXPECT_EQ(std::system(command.c_str()), 0) << header;
    std::filesystem::remove(file);
  }
}

// Tests that the manifest records arguments, dims, target and schedule.
TEST(KernelInterface, Manifest) {
  Graph graph = example("bool_mask_lse");
  CpuTarget target = cpuTarget("x86-64-avx512");
  nlohmann::json manifest = nlohmann::json::parse(
      kernelManifest(graph, "mlir", target, defaultSchedule(target)));
  EXPECT_EQ(manifest["name"], "bool_mask_lse");
  EXPECT_EQ(manifest["backend"], "mlir");
  EXPECT_EQ(manifest["target"]["cpu"], "x86-64-v4");
  EXPECT_EQ(manifest["runtime_dims"], (nlohmann::json{"B", "S", "T"}));
  EXPECT_EQ(manifest["outputs"][1]["name"], "o.lse");
  EXPECT_EQ(manifest["outputs"][1]["dtype"], "f32");
  EXPECT_EQ(manifest["outputs"][1]["dims"], (nlohmann::json{"B", 16, "S"}));
  EXPECT_EQ(manifest["schedule"]["vector_width"], 16);
  EXPECT_EQ(manifest["schedule_source"], "default");
}

} // namespace
