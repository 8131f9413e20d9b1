//===- ScheduleSpace.h - The schedules attnc tune searches -------*- C++
//-*-===//
//
// The search space of the MLIR backend's attention schedule, read from
// schedules/space/cpu.json (compiled in): the values each parameter may
// take and the register counts that decide which combinations are legal.
// Candidates are enumerated in a fixed order with the target's default
// schedule first, so a search always measures the default.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNING_SCHEDULESPACE_H
#define ATTNC_TUNING_SCHEDULESPACE_H

#include "Codegen/Schedule.h"
#include "Halide/HalideBackend.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnc::tuning {

struct ScheduleSpace {
  int64_t version = 0;
  std::vector<int64_t> queryTiles, keyTiles;
  std::vector<std::pair<int64_t, int64_t>> scoreBlocks, pvBlocks;
  /// AttentionSchedule::valuePrefetchBytes values; empty: the default's.
  std::vector<int64_t> valuePrefetchBytes;
  /// AttentionSchedule::decodeStep values; empty: the default's.
  std::vector<int64_t> decodeSteps;
  /// AttentionSchedule::decodePrefetchLevel values; empty: the default's.
  std::vector<int64_t> decodePrefetchLevels;
  std::map<std::string, int64_t> registers; ///< Vector registers per class.
};

/// The Halide backend's space (schedules/space/halide.json): hand-schedule
/// parameters, then the autoschedulers as candidates of their own.
struct HalideScheduleSpace {
  int64_t version = 0;
  std::vector<int64_t> taskQueries, queryTiles;
  std::vector<int64_t> keyTiles; ///< Empty: the default's.
  std::vector<std::pair<int64_t, int64_t>> scoreBlocks, pvBlocks;
  /// The decode form's blocks; empty: the default's.
  std::vector<std::pair<int64_t, int64_t>> decodeScoreBlocks, decodePvBlocks;
  /// HalideSchedule::decodePvKeys values; empty: the default's.
  std::vector<int64_t> decodePvKeys;
  std::vector<std::string> autoschedulers;
};

/// Parses a space document; throws UserError("FILE: /pointer: message").
ScheduleSpace parseScheduleSpace(const std::string &text,
                                 const std::string &file);
HalideScheduleSpace parseHalideScheduleSpace(const std::string &text,
                                             const std::string &file);
/// The compiled-in schedules/space/cpu.json and halide.json.
ScheduleSpace cpuScheduleSpace();
HalideScheduleSpace halideScheduleSpace();

/// One schedule attnc tune measures, whichever the backend.
struct TuneCandidate {
  std::string key;         ///< Canonical JSON: its identity in the database.
  std::string description; ///< For people.
  /// Its parameter values, in one order for every candidate of a space (the
  /// search's neighbourhoods).
  std::vector<std::string> parameters;
  /// `attnc run --schedule`: a file holding `scheduleText`, or this flag
  /// value ("auto:NAME") when the text is empty.
  std::string scheduleText, scheduleFlag;
};

/// A backend's candidates and the names of their parameters, in the order
/// of every candidate's TuneCandidate::parameters (the report's columns).
struct CandidateList {
  std::vector<std::string> parameterNames;
  std::vector<TuneCandidate> candidates;
};

/// The mlir backend's candidates (`candidates` below), the default first.
CandidateList mlirCandidates(const ScheduleSpace &space,
                             const AttentionSchedule &defaults,
                             bool decodeForm);
/// The Halide backend's: its hand schedule first, then the hand schedules of
/// `space` that differ where the tuned shape runs (`decodeForm`, fewer
/// queries than HalideSchedule::decodeBelow: the decode blocks, the rest the
/// default's; else the rows form's parameters with task_queries a multiple
/// of query_tile, the decode blocks the default's), then each autoscheduler.
CandidateList halideCandidates(const HalideScheduleSpace &space,
                               const HalideSchedule &defaults, bool decodeForm);

/// Whether `schedule`'s register blocks fit `registers` vector registers.
bool fitsRegisters(const AttentionSchedule &schedule, int64_t registers);

/// Every legal schedule of `space` for the target class of `defaults` (its
/// vector width and the class's register count decide) that differs where
/// the tuned shape runs: with `decodeForm` (decodeTilesOnly) the query tile
/// and score block stay the default's, else the decode parameters (V
/// prefetch, decode step, decode prefetch level) do, so that no two
/// candidates run the same loops. `defaults` first, then the others in a
/// fixed order (by query tile, key tile, score block, P·V block, then the
/// decode parameters), each once. Their `threads` and `measured` are the
/// defaults'.
std::vector<AttentionSchedule> candidates(const ScheduleSpace &space,
                                          const AttentionSchedule &defaults,
                                          bool decodeForm);

/// "query 32, key 48, score 2x6, pv 4x2": the tuned parameters for people.
std::string describeSchedule(const AttentionSchedule &schedule);

/// The tuned parameters of `schedule` as canonical JSON (sorted keys, no
/// spaces): its identity in the tuning database.
std::string candidateKey(const AttentionSchedule &schedule);

} // namespace attnc::tuning

#endif // ATTNC_TUNING_SCHEDULESPACE_H
