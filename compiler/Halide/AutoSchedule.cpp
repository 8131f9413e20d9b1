//===- AutoSchedule.cpp - Halide's autoschedulers on attention ------------===//
//
// `--schedule auto:NAME`: instead of the hand schedule, one of Halide 14's
// autoscheduler plugins schedules the Funcs of AttentionAlgorithm.cpp. An
// autoscheduler plans for sizes: the estimates describe ONE pipeline call,
// as NAME_entry makes it (the output cropped to one batch, one query head
// and task_queries queries; every input at its full size).
//
//===----------------------------------------------------------------------===//

#include "Halide/AttentionFuncs.h"
#include "Support/Error.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>

namespace attnc {

using namespace Halide;

namespace {

/// Halide's name of each plugin's autoscheduler.
std::string registeredName(const std::string &name) {
  if (name == "adams2019")
    return "Adams2019";
  if (name == "mullapudi2016")
    return "Mullapudi2016";
  return "Li2018";
}

/// Loads libautoschedule_NAME.so once per process. The directory is the
/// one Halide's CMake package names, or ATTNC_HALIDE_AUTOSCHEDULER_DIR.
void loadPlugin(const std::string &name) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(name))
    return;
  const char *override = std::getenv("ATTNC_HALIDE_AUTOSCHEDULER_DIR");
  std::filesystem::path directory =
      override && *override ? override : ATTNC_HALIDE_AUTOSCHEDULER_DIR;
  std::filesystem::path path = directory / ("libautoschedule_" + name + ".so");
  if (!std::filesystem::exists(path))
    throw UserError("--schedule auto:" + name + ": the autoscheduler plugin " +
                    path.string() +
                    " does not exist (install libhalide14-0-dev, or set "
                    "ATTNC_HALIDE_AUTOSCHEDULER_DIR)");
  try {
    load_plugin(path.string());
  } catch (const Halide::Error &error) {
    throw UserError("--schedule auto:" + name + ": cannot load " +
                    path.string() + ": " + oneLine(error.what()));
  }
  loaded.insert(name);
}

/// Every loop the autoscheduler made parallel, made serial. Each pipeline
/// call is already one attnrt task on one of the context's threads; a
/// parallel loop inside it would start Halide's own thread pool (sized by
/// the core count, not by attnrt's thread setting). Removing them here,
/// rather than swapping Halide's do_par_for at run time, leaves no call
/// into the thread pool in the code at all, and changes nothing
/// process-wide for other Halide code an application may link.
void makeSerial(const std::vector<Func> &outputs) {
  std::vector<Internal::Function> functions;
  for (const Func &output : outputs)
    functions.push_back(output.function());
  // The environment includes Funcs the autoscheduler added (rfactor).
  for (auto &[name, function] : Internal::build_environment(functions)) {
    std::vector<Internal::Definition> stages = {function.definition()};
    stages.insert(stages.end(), function.updates().begin(),
                  function.updates().end());
    for (Internal::Definition &stage : stages)
      for (Internal::Dim &dim : stage.schedule().dims())
        if (dim.for_type == Internal::ForType::Parallel)
          dim.for_type = Internal::ForType::Serial;
    function.schedule().async() = false;
  }
}

/// Splits of the outputs guard their tails. A call's crop may be narrower
/// than the autoscheduler's split factor (the last task of S = 65 queries
/// has one), and ShiftInwards or RoundUp would then compute, and store,
/// outside the output buffer, which Halide rejects at run time.
/// Intermediates may overshoot: the algorithm clamps every position it
/// reads.
void guardOutputTails(const std::vector<Func> &outputs) {
  for (const Func &output : outputs)
    for (Internal::Split &split :
         output.function().definition().schedule().splits())
      if (split.is_split())
        split.tail = TailStrategy::GuardWithIf;
}

} // namespace

std::string oneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  // Halide starts a user error with "Error:".
  for (const char *prefix : {"Error: ", "Error:"})
    if (text.rfind(prefix, 0) == 0)
      text.erase(0, std::string(prefix).size());
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text;
}

void autoScheduleAttention(AttentionFuncs &funcs, const KernelPlan &plan,
                           const PlannedKernel &kernel,
                           const HalideSchedule &schedule, const Target &target,
                           Pipeline &pipeline) {
  const std::string &name = schedule.autoscheduler;
  loadPlugin(name);
  auto sizeOf = [&](const Dim &dim) -> int {
    if (dim.isFixed())
      return int(dim.size);
    auto it = schedule.estimates.find(dim.symbol);
    return it == schedule.estimates.end() ? 1 : int(it->second);
  };

  // Inputs at their full size.
  for (size_t n = 0; n < funcs.params.images.size(); ++n) {
    const Shape &shape = plan.values[funcs.params.values[n]].shape;
    int rank = int(shape.size());
    for (int d = 0; d < rank; ++d)
      funcs.params.images[n].dim(d).set_estimate(0,
                                                 sizeOf(shape[rank - 1 - d]));
  }
  // One call: batch 0, head 0, the last task of queries. The last rows see
  // the most keys under causal and window masks (bottom-right aligned); the
  // first ones may see none when S > T, and an empty key loop fails
  // Adams2019.
  const AttentionPlan &op = *kernel.attention;
  bool bshd = op.layout == Layout::BSHD;
  int positions = sizeOf(plan.values[op.query].shape[bshd ? 1 : 2]);
  int queries = std::min<int>(int(schedule.taskQueries), positions);
  int first = positions - queries;
  funcs.batchIndex.set_estimate(0);
  funcs.queryFirst.set_estimate(first);
  funcs.queryCount.set_estimate(queries);
  // Every key kept (the common case: no key lengths, or full ones).
  funcs.keyLimit.set_estimate(
      sizeOf(plan.values[op.key].shape[bshd ? 1 : 2]));
  for (AttentionFuncs::Chain &chain : funcs.chains) {
    if (chain.isLse) {
      chain.result.set_estimate(funcs.i, first, queries)
          .set_estimate(funcs.h, 0, 1)
          .set_estimate(funcs.b, 0, 1);
      continue;
    }
    int depth = sizeOf(plan.values[op.output].shape.back());
    chain.result.set_estimate(funcs.d, 0, depth)
        .set_estimate(bshd ? funcs.y : funcs.x, first, queries)
        .set_estimate(bshd ? funcs.x : funcs.y, 0, 1)
        .set_estimate(funcs.b, 0, 1);
  }

  try {
    pipeline.auto_schedule(registeredName(name), target,
                           MachineParams(int(schedule.parallelism),
                                         uint64_t(schedule.lastLevelCacheBytes),
                                         float(schedule.balance)));
  } catch (const Halide::Error &error) {
    throw UserError(plan.graphFile + ": " + kernel.pointer + ": node \"" +
                    kernel.name + "\": --schedule auto:" + name +
                    ": the autoscheduler failed: " + oneLine(error.what()) +
                    "; try another autoscheduler or the hand schedule");
  }
  makeSerial(pipeline.outputs());
  guardOutputTails(pipeline.outputs());
}

} // namespace attnc
