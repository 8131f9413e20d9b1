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
#include "Codegen/Target.h"

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
  std::map<std::string, int64_t> registers; ///< Vector registers per class.
};

/// Parses a space document; throws UserError("FILE: /pointer: message").
ScheduleSpace parseScheduleSpace(const std::string &text,
                                 const std::string &file);
/// The compiled-in schedules/space/cpu.json.
ScheduleSpace cpuScheduleSpace();

/// Whether `schedule`'s register blocks fit `registers` vector registers.
bool fitsRegisters(const AttentionSchedule &schedule, int64_t registers);

/// Every legal schedule of `space` for `target`, `defaults` first, then the
/// others in a fixed order (by query tile, key tile, score block, P·V
/// block), each once. Their `threads` and `measured` are the defaults'.
std::vector<AttentionSchedule> candidates(const ScheduleSpace &space,
                                          const CpuTarget &target,
                                          const AttentionSchedule &defaults);

/// "query 32, key 48, score 2x6, pv 4x2": the tuned parameters for people.
std::string describeSchedule(const AttentionSchedule &schedule);

/// The tuned parameters of `schedule` as canonical JSON (sorted keys, no
/// spaces): its identity in the tuning database.
std::string candidateKey(const AttentionSchedule &schedule);

} // namespace attnc::tuning

#endif // ATTNC_TUNING_SCHEDULESPACE_H
