//===- CompileHalide.cpp - A graph through the Halide backend -------------===//
//
// graph → attn IR → fusion → KernelPlan → one Halide pipeline per kernel
// (compiler/Halide) → NAME.a: the pipelines, one shared Halide runtime, and
// NAME_entry and NAME_kernel (compiler/Codegen/HalideEntry), so that the
// result follows the same attnrt ABI as the MLIR backend's.
//
//===----------------------------------------------------------------------===//

#include "Codegen/EmitObject.h"
#include "Codegen/HalideEntry.h"
#include "Codegen/KernelInterface.h"
#include "Driver/Compile.h"
#include "Halide/HalideBackend.h"
#include "Import/KernelPlan.h"
#include "Support/Error.h"
#include "Tuning/ScheduleSpace.h"
#include "Tuning/TunedSchedule.h"

#include "llvm/ADT/STLExtras.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <optional>

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

/// The Halide schedule of the tuning database's best `halide` record: an
/// autoscheduler, or hand-schedule parameters over the target's default.
std::optional<HalideSchedule>
tunedHalideSchedule(const std::string &path, const Graph &graph,
                    const DimBindings &dims, const CpuTarget &target,
                    const std::string &targetClass, std::string &why) {
  std::optional<tuning::TuningRecord> best =
      tuning::bestTuningRecord(path, graph, dims, target, "halide",
                               tuning::halideScheduleSpace().version, why);
  if (!best)
    return std::nullopt;
  std::string text = tuning::candidateOverDefaults(
      *best, defaultHalideSchedule(targetClass).toFileJson(), path);
  nlohmann::json document = nlohmann::json::parse(text);
  HalideSchedule schedule;
  if (document.contains("autoscheduler") &&
      document["autoscheduler"].is_string()) {
    schedule = autoHalideSchedule(document["autoscheduler"].get<std::string>(),
                                  targetClass);
    schedule.measured = document["measured"].get<std::string>();
  } else {
    schedule = parseHalideSchedule(
        text, path + " (kernel " + best->key.kernel + ")", targetClass);
  }
  schedule.source = tuning::recordSource(path, *best);
  return schedule;
}

std::string where(const KernelPlan &plan, const PlannedKernel &kernel) {
  return plan.graphFile + ": " +
         (kernel.pointer.empty() ? "" : kernel.pointer + ": ") + "node \"" +
         kernel.name + "\": ";
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

/// Every value a kernel touches must have its size in graph dims: NAME_entry
/// computes buffer sizes from them.
void checkShapes(const KernelPlan &plan) {
  for (const PlannedKernel &kernel : plan.kernels)
    for (const std::vector<int> *values : {&kernel.operands, &kernel.results})
      for (int id : *values)
        for (const Dim &dim : plan.values.at(id).shape)
          if (!dim.isFixed() &&
              std::find(plan.runtimeDims.begin(), plan.runtimeDims.end(),
                        dim.symbol) == plan.runtimeDims.end())
            throw UserError(where(plan, kernel) + "op " + kernel.op +
                            " has a value whose size is not a graph dim; "
                            "the halide backend cannot compile it; use "
                            "--backend mlir");
}

/// Kernels whose result is their operand's bytes, copied by NAME_entry.
bool isByteCopy(const PlannedKernel &kernel) {
  return kernel.op == "reshape" || kernel.op == "unsqueeze" ||
         kernel.op == "copy";
}

/// The entry's view of one plan value: its buffer (entry buffers, then the
/// intermediates in `intermediates`' order).
HalideEntryArgument entryArgument(const KernelPlan &plan, int id,
                                  std::vector<int> &intermediates) {
  const PlanValue &value = plan.values.at(id);
  HalideEntryArgument argument;
  argument.buffer = value.buffer(plan.numInputs);
  if (argument.buffer < 0) {
    auto it = std::find(intermediates.begin(), intermediates.end(), id);
    argument.buffer =
        plan.numInputs + plan.numOutputs + int(it - intermediates.begin());
    if (it == intermediates.end())
      intermediates.push_back(id);
  }
  argument.dtype = value.dtype;
  argument.shape = value.shape;
  return argument;
}
} // namespace

CompiledGraph compileGraphHalide(const Graph &graph,
                                 const CompileOptions &options) {
  CompiledGraph result;
  result.target = cpuTarget(options.target);
  if (!options.emitMlirStages.empty() || options.emitLlvm)
    throw UserError("--emit: the halide backend writes no MLIR or LLVM IR");
  std::string targetClass = targetClassOf(result.target);
  HalideSchedule schedule = scheduleFor(options, targetClass);
  if (options.schedulePath.empty() && !options.tuningDatabase.empty()) {
    std::string why;
    if (std::optional<HalideSchedule> tuned = tunedHalideSchedule(
            options.tuningDatabase, graph, options.dimEstimates, result.target,
            targetClass, why)) {
      schedule = *tuned;
      result.tunedFrom = schedule.source + " (" + schedule.measured + ")";
    } else {
      result.scheduleNote = "tuning database " + options.tuningDatabase + ": " +
                            why + "; the hand schedule";
    }
  }

  KernelPlan plan = planKernels(graph);
  checkShapes(plan);
  // One pipeline per kernel (byte copies need none), one shared runtime.
  if (schedule.isAuto())
    for (const PlannedKernel &kernel : plan.kernels)
      if (kernel.attention) {
        chooseEstimates(schedule, plan, *kernel.attention,
                        options.dimEstimates);
        break;
      }
  HalideEntrySpec spec;
  std::vector<int> intermediates;
  std::vector<std::pair<std::string, std::string>> members;
  bool bf16Dot = prefersBf16Dot(result.target);
  for (auto [number, kernel] : llvm::enumerate(plan.kernels)) {
    HalideEntryKernel entryKernel;
    if (isByteCopy(kernel)) {
      for (int id : {kernel.operands.at(0), kernel.results.at(0)})
        entryKernel.arguments.push_back(entryArgument(plan, id, intermediates));
      spec.kernels.push_back(entryKernel);
      continue;
    }
    std::string function =
        graph.name + "_halide" + (number ? std::to_string(number) : "");
    HalideLibrary library;
    if (const std::optional<AttentionPlan> &attention = kernel.attention) {
      // Queries in the lanes (rows) from a vector of queries up, keys in
      // the lanes (decode) below; both when the number is a run-time size.
      // Autoschedulers schedule the rows form only.
      bool bshd = attention->layout == Layout::BSHD;
      const Shape &query = plan.values[attention->query].shape;
      const Dim &queries = query[bshd ? 1 : 2];
      int64_t decodeBelow = schedule.decodeBelow();
      bool rows = !queries.isFixed() || queries.size >= decodeBelow;
      bool decode = !queries.isFixed() || queries.size < decodeBelow;
      // bf16 products come as bitcode, compiled here for the target's CPU.
      auto compileForm = [&](const std::string &name, bool decodeForm) {
        HalideLibrary form = compileHalideAttention(
            plan, kernel, schedule, targetClass, name, decodeForm, bf16Dot);
        if (form.bitcode)
          form.object = emitBitcodeObject(form.object, result.target);
        return form;
      };
      if (decode && decodeBelow > 0) {
        // The decode form's partial rows and their merge, which writes the
        // rows form's outputs: together they take its arguments.
        library = compileForm(function + "_decode", /*decodeForm=*/true);
        members.push_back({library.function + ".o", std::move(library.object)});
        HalideLibrary merge = compileHalideMerge(
            plan, kernel, schedule, targetClass, function + "_merge");
        members.push_back({merge.function + ".o", std::move(merge.object)});
        library.arguments.insert(library.arguments.end(),
                                 merge.arguments.begin(),
                                 merge.arguments.end());
        entryKernel.decodeFunction = library.function;
        entryKernel.mergeFunction = merge.function;
        entryKernel.decodeBelow = decodeBelow;
        entryKernel.kvHeads = plan.values[attention->key].shape[bshd ? 2 : 1];
        entryKernel.keys = plan.values[attention->key].shape[bshd ? 1 : 2];
        entryKernel.valueDepth = plan.values[attention->value].shape.back();
        entryKernel.keyTile = schedule.keyTile;
        entryKernel.decodePartKeys = schedule.decodePartKeys;
      }
      if (rows) {
        std::vector<int> decodeArguments = library.arguments;
        library = compileForm(function, /*decodeForm=*/false);
        if (!entryKernel.decodeFunction.empty() &&
            decodeArguments != library.arguments)
          throw std::logic_error("halide backend: the decode and rows "
                                 "pipelines of " +
                                 kernel.name + " take different arguments");
        members.push_back({function + ".o", std::move(library.object)});
        entryKernel.function = library.function;
      }
    } else {
      library =
          compileHalidePrimitive(plan, kernel, schedule, targetClass, function);
      members.push_back({function + ".o", std::move(library.object)});
      entryKernel.function = library.function;
    }
    entryKernel.cropAt = library.cropAt;
    for (int id : library.arguments)
      entryKernel.arguments.push_back(entryArgument(plan, id, intermediates));
    if (const std::optional<AttentionPlan> &attention = kernel.attention) {
      entryKernel.taskQueries = schedule.taskQueries;
      if (attention->keyLengths >= 0)
        entryKernel.keyLengthsBuffer =
            entryArgument(plan, attention->keyLengths, intermediates).buffer;
      bool bshd = attention->layout == Layout::BSHD;
      const Shape &query = plan.values[attention->query].shape;
      entryKernel.batch = query[0];
      entryKernel.heads = query[bshd ? 2 : 1];
      entryKernel.queries = query[bshd ? 1 : 2];
      for (size_t n = 0; n < library.arguments.size(); ++n) {
        HalideEntryArgument &argument = entryKernel.arguments[n];
        int id = library.arguments[n];
        if (id == attention->output) {
          argument.batchDim = 0;
          argument.headDim = bshd ? 2 : 1;
          argument.queryDim = bshd ? 1 : 2;
        } else if (id == attention->lse) {
          argument.batchDim = 0, argument.headDim = 1, argument.queryDim = 2;
        }
      }
    }
    spec.kernels.push_back(std::move(entryKernel));
  }
  for (int id : intermediates)
    spec.intermediates.push_back(entryArgument(plan, id, intermediates));
  members.push_back(
      {graph.name + "_halide_runtime.o", halideRuntime(targetClass)});

  // The manifest is the MLIR backend's with the Halide schedule in it.
  result.header = kernelHeader(graph);
  nlohmann::ordered_json manifest = nlohmann::ordered_json::parse(
      kernelManifest(graph, "halide", result.target,
                     defaultSchedule(result.target)));
  manifest["schedule"] = nlohmann::ordered_json::parse(schedule.toJson());
  manifest["schedule_source"] = schedule.source;
  result.manifest = manifest.dump(2) + "\n";

  members.push_back(
      {graph.name + "_entry.o",
       emitHalideEntry(graph, spec, result.target, result.manifest)});
  result.object = writeArchive(members);
  result.isArchive = true;
  return result;
}

} // namespace attnc
