//===- TunedSchedule.h - The schedule a tuning database chose ----*- C++
//-*-===//
//
// What `attnc compile` and `attnc run` build with when a tuning database is
// present: the fastest ok record for the graph's kernels at the given sizes
// on this machine (same attnc and schedule-space version), else the
// target's default. Ties go to the smaller candidate, so the same database
// and graph give the same object.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNING_TUNEDSCHEDULE_H
#define ATTNC_TUNING_TUNEDSCHEDULE_H

#include "Codegen/Schedule.h"
#include "Codegen/Target.h"
#include "Graph/Graph.h"
#include "Tuning/TuningDatabase.h"

#include <optional>
#include <string>

namespace attnc::tuning {

/// The default tuning database: $XDG_CACHE_HOME/attnc/tuning.db, else
/// ~/.cache/attnc/tuning.db; empty when neither variable is set.
std::string defaultTuningDatabasePath();

/// The fastest ok record of the database at `path` for `graph` at `dims`
/// on this machine, for `backend` and its schedule space's `spaceVersion`;
/// nullopt with `why` set when there is none. Throws UserError for a file
/// that is not a tuning database.
std::optional<TuningRecord>
bestTuningRecord(const std::string &path, const Graph &graph,
                 const DimBindings &dims, const CpuTarget &target,
                 const std::string &backend, int64_t spaceVersion,
                 std::string &why);

/// "attnc tune on CPU, DATE: X ms, the default Y ms (fastest runs, in the
/// same run)".
std::string measuredText(const TuningRecord &record);

/// "tuning database PATH: kernel K, BUCKET": where a tuned schedule came
/// from, for the manifest's schedule_source.
std::string recordSource(const std::string &path, const TuningRecord &record);

/// A schedule file's text: `record`'s candidate over `defaults` (a schedule
/// file's JSON text), each candidate key replacing the default's, and
/// `measured` saying what the record measured. Throws UserError naming
/// `path` for a candidate that is not a JSON object.
std::string candidateOverDefaults(const TuningRecord &record,
                                  const std::string &defaults,
                                  const std::string &path);

/// The best record of the database at `path` for `graph` at `dims` as a
/// schedule (its `source` and `measured` say which record and what it
/// measured), or nullopt with `why` set when there is none. Throws
/// UserError for a file that is not a tuning database.
std::optional<AttentionSchedule>
tunedSchedule(const std::string &path, const Graph &graph,
              const DimBindings &dims, const CpuTarget &target,
              const AttentionSchedule &defaults, std::string &why);

} // namespace attnc::tuning

#endif // ATTNC_TUNING_TUNEDSCHEDULE_H
