//===- Compile.h - A graph through the MLIR CPU backend ---------*- C++ -*-===//
//
// What `attnc compile` writes and `attnc run --backend mlir` loads: import,
// fuse, build the kernels, lower, emit NAME.o with its descriptor, NAME.h
// and NAME.json.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_COMPILE_H
#define ATTNC_DRIVER_COMPILE_H

#include "Codegen/Schedule.h"
#include "Codegen/Target.h"
#include "Graph/Graph.h"

#include <string>

namespace attnc {

struct CompileOptions {
  std::string target = "host";
  std::string schedulePath; ///< Empty: the target class's default.
  bool emitMlir = false, emitLlvm = false;
};

struct CompiledGraph {
  CpuTarget target;
  AttentionSchedule schedule;
  std::string object;   ///< NAME.o
  std::string header;   ///< NAME.h
  std::string manifest; ///< NAME.json
  std::string mlir;     ///< The kernels before lowering, when asked for.
  std::string llvm;     ///< The optimised LLVM IR, when asked for.
};

/// Throws UserError for a bad --target or --schedule.
CompiledGraph compileGraph(const Graph &graph, const CompileOptions &options);

} // namespace attnc

#endif // ATTNC_DRIVER_COMPILE_H
