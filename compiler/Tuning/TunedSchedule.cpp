//===- TunedSchedule.cpp - The schedule a tuning database chose -----------===//

#include "Tuning/TunedSchedule.h"
#include "Support/Error.h"
#include "Tuning/ScheduleSpace.h"
#include "Tuning/TuningDatabase.h"
#include "Tuning/TuningKey.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <sstream>

namespace attnc::tuning {

std::string defaultTuningDatabasePath() {
  if (const char *cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return std::string(cache) + "/attnc/tuning.db";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/attnc/tuning.db";
  return "";
}

std::optional<TuningRecord>
bestTuningRecord(const std::string &path, const Graph &graph,
                 const DimBindings &dims, const CpuTarget &target,
                 const std::string &backend, int64_t spaceVersion,
                 std::string &why) {
  for (const std::string &name : graph.runtimeDims())
    if (!dims.count(name)) {
      why = "run-time size " + name +
            " not given (--dim), so no shape to "
            "match";
      return std::nullopt;
    }
  KernelIdentity kernel = kernelIdentity(graph, dims);
  TuningKey key{
      kernel.kernel, kernel.shapeBucket, machineIdentity(target).fingerprint,
      backend,       attncVersion(),     spaceVersion};
  auto database = TuningDatabase::open(path, /*create=*/false);
  std::optional<TuningRecord> best = database->best(key);
  if (!best)
    why = "no " + backend + " record for kernel " + key.kernel + " at " +
          key.shapeBucket + " on this machine";
  return best;
}

std::string measuredText(const TuningRecord &record) {
  std::ostringstream text;
  text << "attnc tune on " << record.machine << ", " << record.createdAt << ": "
       << record.timeMs << " ms, the default " << record.defaultMs << " ms";
  if (record.confirmedRounds > 0)
    text << " (" << record.confirmedRounds
         << " rounds timing both in turn: the median of the default's "
            "fastest runs, and that times the median of the same-round "
            "ratios)";
  else
    text << " (fastest runs, in the same run)";
  return text.str();
}

std::string recordSource(const std::string &path, const TuningRecord &record) {
  return "tuning database " + path + ": kernel " + record.key.kernel + ", " +
         record.key.shapeBucket;
}

std::string candidateOverDefaults(const TuningRecord &record,
                                  const std::string &defaults,
                                  const std::string &path) {
  nlohmann::json candidate = nlohmann::json::parse(record.candidate, nullptr,
                                                   /*allow_exceptions=*/false);
  if (!candidate.is_object())
    throw UserError(path + ": a record whose candidate is not JSON");
  nlohmann::json document = nlohmann::json::parse(defaults);
  for (const auto &item : candidate.items())
    document[item.key()] = item.value();
  document["measured"] = measuredText(record);
  return document.dump();
}

std::optional<AttentionSchedule>
tunedSchedule(const std::string &path, const Graph &graph,
              const DimBindings &dims, const CpuTarget &target,
              const AttentionSchedule &defaults, std::string &why) {
  std::optional<TuningRecord> best = bestTuningRecord(
      path, graph, dims, target, "mlir", cpuScheduleSpace().version, why);
  if (!best)
    return std::nullopt;
  // The candidate's parameters over the default, checked as any schedule
  // file is.
  AttentionSchedule schedule =
      parseSchedule(candidateOverDefaults(*best, defaults.toJson(), path),
                    path + " (kernel " + best->key.kernel + ")", target);
  schedule.source = recordSource(path, *best);
  return schedule;
}

} // namespace attnc::tuning
