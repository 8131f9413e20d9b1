//===- CompileHalide.cpp - A graph through the Halide backend -------------===//
//
// graph → attn IR → fusion → KernelPlan → Halide pipeline (compiler/Halide)
// → NAME.a, plus NAME_entry and NAME_kernel (compiler/Codegen/HalideEntry)
// so that the result follows the same attnrt ABI as the MLIR backend's.
//
//===----------------------------------------------------------------------===//

#include "Codegen/HalideEntry.h"
#include "Codegen/KernelInterface.h"
#include "Driver/Compile.h"
#include "Halide/HalideBackend.h"
#include "Import/KernelPlan.h"
#include "Support/Error.h"

#include <nlohmann/json.hpp>

#include <map>

namespace attnc {

namespace {

HalideSchedule scheduleFor(const CompileOptions &options,
                           const std::string &targetClass) {
  const std::string &path = options.schedulePath;
  if (path.empty())
    return defaultHalideSchedule(targetClass);
  if (path.rfind("auto:", 0) == 0)
    return autoHalideSchedule(path.substr(5), targetClass);
  return loadHalideSchedule(path, targetClass);
}

/// The size an autoscheduler plans for, per run-time dim: the value given
/// (`run --dim`, `compile --dim`), else a default by the dim's role in the
/// attention: batch 1 (NAME_entry's tasks see one batch anyway), 8 heads,
/// 1024 positions, head dims and additive units 64.
void chooseEstimates(HalideSchedule &schedule, const KernelPlan &plan,
                     const AttentionPlan &attention, const DimBindings &given) {
  std::map<std::string, int64_t> byRole;
  auto role = [&](int value, std::initializer_list<int64_t> sizes) {
    if (value < 0)
      return;
    const Shape &shape = plan.values[value].shape;
    size_t n = 0;
    for (int64_t size : sizes) {
      if (n < shape.size() && !shape[n].isFixed())
        byRole.emplace(shape[n].symbol, size); // The first role wins.
      ++n;
    }
  };
  bool bshd = attention.layout == Layout::BSHD;
  for (int value : {attention.query, attention.key, attention.value})
    role(value, {1, bshd ? 1024 : 8, bshd ? 8 : 1024, 64});
  role(attention.queryWeight, {64, 64});
  for (const std::string &symbol : plan.runtimeDims) {
    auto it = given.find(symbol);
    if (it != given.end()) {
      schedule.estimates[symbol] = it->second;
      continue;
    }
    auto guess = byRole.find(symbol);
    schedule.estimates[symbol] = guess != byRole.end() ? guess->second : 64;
    schedule.defaultedEstimates.push_back(symbol);
  }
}

/// The one fused attention the graph must have become.
const PlannedKernel &attentionKernel(const KernelPlan &plan) {
  const PlannedKernel *found = nullptr;
  for (const PlannedKernel &kernel : plan.kernels) {
    if (kernel.op != "attention")
      throw UserError(plan.graphFile + ": " +
                      (kernel.pointer.empty() ? "" : kernel.pointer + ": ") +
                      "node \"" + kernel.name + "\": op " + kernel.op +
                      " is left after fusion, and the halide backend "
                      "compiles only fused attention so far; use --backend "
                      "mlir");
    if (found)
      throw UserError(plan.graphFile + ": " + kernel.pointer + ": node \"" +
                      kernel.name +
                      "\": a second attention; the halide backend compiles "
                      "graphs of one fused attention so far; use --backend "
                      "mlir");
    found = &kernel;
  }
  if (!found)
    throw UserError(plan.graphFile +
                    ": no attention left after fusion; the halide backend "
                    "compiles only fused attention so far; use --backend mlir");
  return *found;
}

} // namespace

CompiledGraph compileGraphHalide(const Graph &graph,
                                 const CompileOptions &options) {
  CompiledGraph result;
  result.target = cpuTarget(options.target);
  if (options.emitMlir || options.emitLlvm)
    throw UserError("--emit: the halide backend writes no MLIR or LLVM IR");
  std::string targetClass = targetClassOf(result.target);
  HalideSchedule schedule = scheduleFor(options, targetClass);

  KernelPlan plan = planKernels(graph);
  const PlannedKernel &kernel = attentionKernel(plan);
  const AttentionPlan &attention = *kernel.attention;
  if (schedule.isAuto())
    chooseEstimates(schedule, plan, attention, options.dimEstimates);
  HalideLibrary library = compileHalideAttention(
      plan, kernel, schedule, targetClass, graph.name + "_halide");

  HalideEntrySpec spec;
  spec.function = library.function;
  spec.taskQueries = schedule.taskQueries;
  spec.cropAt = library.cropAt;
  bool bshd = attention.layout == Layout::BSHD;
  const Shape &query = plan.values[attention.query].shape;
  spec.batch = query[0];
  spec.heads = query[bshd ? 2 : 1];
  spec.queries = query[bshd ? 1 : 2];
  for (int id : library.arguments) {
    const PlanValue &value = plan.values[id];
    HalideEntryArgument argument;
    argument.buffer = value.buffer(plan.numInputs);
    argument.dtype = value.dtype;
    argument.shape = value.shape;
    if (id == attention.output) {
      argument.batchDim = 0;
      argument.headDim = bshd ? 2 : 1;
      argument.queryDim = bshd ? 1 : 2;
    } else if (id == attention.lse) {
      argument.batchDim = 0, argument.headDim = 1, argument.queryDim = 2;
    }
    spec.arguments.push_back(argument);
  }

  // The manifest is the MLIR backend's with the Halide schedule in it.
  result.header = kernelHeader(graph);
  nlohmann::ordered_json manifest = nlohmann::ordered_json::parse(
      kernelManifest(graph, "halide", result.target,
                     defaultSchedule(result.target)));
  manifest["schedule"] = nlohmann::ordered_json::parse(schedule.toJson());
  manifest["schedule_source"] = schedule.source;
  result.manifest = manifest.dump(2) + "\n";

  std::string entry =
      emitHalideEntry(graph, spec, result.target, result.manifest);
  result.object =
      appendToArchive(library.archive, graph.name + "_entry.o", entry);
  result.isArchive = true;
  return result;
}

} // namespace attnc
