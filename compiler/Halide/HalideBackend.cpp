//===- HalideBackend.cpp - Attention kernels through Halide 14 ------------===//

#include "Halide/AttentionFuncs.h"
#include "Support/Error.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace attnc {

namespace {

/// Halide's name for an attnc target class. Explicit features, never
/// Halide's `host` (toolchain trap 9).
std::string halideTarget(const std::string &targetClass) {
  if (targetClass == "x86-64-avx512")
    return "x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake";
  if (targetClass == "x86-64-avx2")
    return "x86-64-linux-sse41-avx-f16c-fma-avx2";
  return "x86-64-linux";
}

/// A directory for Halide's output files, removed on destruction.
struct TemporaryDirectory {
  std::filesystem::path path;
  TemporaryDirectory() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "attnc-halide-XXXXXX")
            .string();
    if (!mkdtemp(pattern.data()))
      throw std::runtime_error("cannot create a temporary directory");
    path = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code error;
    std::filesystem::remove_all(path, error);
  }
};

} // namespace

HalideLibrary compileHalideAttention(const KernelPlan &plan,
                                     const PlannedKernel &kernel,
                                     const HalideSchedule &schedule,
                                     const std::string &targetClass,
                                     const std::string &function) {
  AttentionFuncs funcs = defineAttention(plan, kernel);
  HalideLibrary library;
  library.function = function;
  try {
    scheduleAttention(funcs, schedule);
    std::vector<Halide::Func> outputs;
    for (AttentionFuncs::Chain &chain : funcs.chains)
      outputs.push_back(chain.result);
    Halide::Pipeline pipeline(outputs);
    std::vector<Halide::Argument> arguments(funcs.params.begin(),
                                            funcs.params.end());
    for (const Halide::Param<int32_t> *crop :
         {&funcs.batchIndex, &funcs.queryFirst, &funcs.queryCount,
          &funcs.keyLimit})
      arguments.push_back(*crop);
    TemporaryDirectory directory;
    std::string prefix = (directory.path / function).string();
    pipeline.compile_to_static_library(prefix, arguments, function,
                                       Halide::Target(halideTarget(
                                           targetClass)));
    std::ifstream stream(prefix + ".a", std::ios::binary);
    std::ostringstream bytes;
    bytes << stream.rdbuf();
    if (!stream || bytes.str().empty())
      throw std::runtime_error("Halide wrote no static library");
    library.archive = bytes.str();
  } catch (const Halide::Error &error) {
    throw std::logic_error("halide backend: compiling " + kernel.name +
                           " failed: " + error.what());
  }
  library.arguments = funcs.paramValues;
  library.cropAt = int(library.arguments.size());
  library.arguments.insert(library.arguments.end(),
                           funcs.resultValues.begin(),
                           funcs.resultValues.end());
  return library;
}

} // namespace attnc
