//===- HalideSchedule.cpp - Halide schedules as data ----------------------===//
//
// schedules/halide/<target class>.json (compiled in) or a --schedule file:
// the tile sizes the hand schedule of AttentionSchedule.cpp takes.
//
//===----------------------------------------------------------------------===//

#include "Halide/HalideBackend.h"
#include "Support/Error.h"
#include "Support/TextFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

namespace attnc {

/// A schedule is a small JSON object; 1 MiB is far more than any.
constexpr size_t kMaxScheduleBytes = size_t(1) << 20;

namespace {

using json = nlohmann::ordered_json;

/// schedules/halide/*.json as kDefaultSchedules: {class, JSON text} pairs.
#include "DefaultHalideSchedules.inc"

int64_t lanesOf(const std::string &targetClass) {
  return targetClass == "x86-64-avx512" ? 16
         : targetClass == "x86-64-avx2" ? 8
                                        : 4;
}

/// `defaults`: the target's default schedule, whose values a file leaves
/// out take; null when parsing the default itself (then nothing is
/// optional).
HalideSchedule parse(const std::string &text, const std::string &file,
                     const std::string &targetClass,
                     const HalideSchedule *defaults) {
  auto fail = [&](const std::string &pointer, const std::string &message) {
    throw UserError(file + ": " + pointer + ": " + message);
  };
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception &error) {
    throw UserError(file + ": not valid JSON (" + std::string(error.what()) +
                    ")");
  }
  if (!document.is_object())
    fail("", "a halide schedule is a JSON object");
  if (document.value("attnc_halide_schedule", json()) != json(1))
    fail("/attnc_halide_schedule",
         "must be 1 (is this a schedule for --backend mlir?)");
  auto integer = [&](const json &value, const std::string &pointer,
                     int64_t low, int64_t high) {
    if (!value.is_number_integer() || value.get<int64_t>() < low ||
        value.get<int64_t>() > high)
      fail(pointer, "must be an integer in [" + std::to_string(low) + ", " +
                        std::to_string(high) + "]");
    return value.get<int64_t>();
  };
  auto pair = [&](const char *key) {
    const json &value = document.value(key, json());
    if (!value.is_array() || value.size() != 2)
      fail(std::string("/") + key, "must be an array of two integers");
    std::string pointer = std::string("/") + key + "/";
    return std::make_pair(integer(value[0], pointer + "0", 1, 8),
                          integer(value[1], pointer + "1", 1, 16));
  };
  for (const auto &[key, value] : document.items())
    if (key != "attnc_halide_schedule" && key != "target_class" &&
        key != "task_queries" && key != "query_tile" && key != "key_tile" &&
        key != "vector_width" && key != "score_block" && key != "pv_block" &&
        key != "decode_score_block" && key != "decode_pv_block" &&
        key != "decode_part_keys" && key != "decode_pv_keys" &&
        key != "measured")
      fail("/" + key, "unknown key");
  HalideSchedule s;
  const json &target = document.value("target_class", json());
  if (!target.is_string())
    fail("/target_class", "must be a string");
  s.targetClass = target.get<std::string>();
  if (s.targetClass != targetClass)
    fail("/target_class", "is \"" + s.targetClass + "\"; the target is " +
                              targetClass);
  s.vectorWidth = integer(document.value("vector_width", json()),
                          "/vector_width", 1, 64);
  if (s.vectorWidth & (s.vectorWidth - 1))
    fail("/vector_width", "must be a power of two");
  if (s.vectorWidth > lanesOf(targetClass))
    fail("/vector_width", "is wider than " + targetClass + "'s " +
                              std::to_string(lanesOf(targetClass)) +
                              " f32 lanes");
  s.queryTile =
      integer(document.value("query_tile", json()), "/query_tile", 1, 1024);
  s.taskQueries = integer(document.value("task_queries", json()),
                          "/task_queries", 1, 1 << 20);
  if (s.taskQueries % s.queryTile)
    fail("/task_queries", "must be a multiple of query_tile");
  std::tie(s.scoreVectors, s.scoreKeys) = pair("score_block");
  std::tie(s.pvRows, s.pvVectors) = pair("pv_block");
  // The key tile and the decode blocks came later: a file without them
  // takes the target's.
  const HalideSchedule &fallback = defaults ? *defaults : HalideSchedule();
  s.keyTile =
      document.contains("key_tile") || !defaults
          ? integer(document.value("key_tile", json()), "/key_tile", 1, 4096)
          : fallback.keyTile;
  auto optionalPair = [&](const char *key, int64_t first, int64_t second) {
    return document.contains(key) || !defaults ? pair(key)
                                               : std::make_pair(first, second);
  };
  std::tie(s.decodeScoreHeads, s.decodeScoreKeys) =
      optionalPair("decode_score_block", fallback.decodeScoreHeads,
                   fallback.decodeScoreKeys);
  std::tie(s.decodePvHeads, s.decodePvVectors) = optionalPair(
      "decode_pv_block", fallback.decodePvHeads, fallback.decodePvVectors);
  s.decodePartKeys = fallback.decodePartKeys;
  if (document.contains("decode_part_keys")) {
    // Parts of a few keys would only multiply the partial rows.
    s.decodePartKeys = integer(document["decode_part_keys"],
                               "/decode_part_keys", 0, int64_t(1) << 24);
    if (s.decodePartKeys != 0 && s.decodePartKeys < 64)
      fail("/decode_part_keys", "must be 0 (no bound) or at least 64");
  }
  s.decodePvKeys = fallback.decodePvKeys;
  if (document.contains("decode_pv_keys")) {
    s.decodePvKeys = integer(document["decode_pv_keys"], "/decode_pv_keys", 0,
                             HalideSchedule::kMostDecodePvKeys);
    if (!HalideSchedule::validDecodePvKeys(s.decodePvKeys))
      fail("/decode_pv_keys", "must be 0 (one pass) or a multiple of 16");
  }
  if (std::string problem = s.blocksOutsideTile(); !problem.empty())
    throw UserError(file + ": " + problem);
  const json &measured = document.value("measured", json(""));
  if (!measured.is_string())
    fail("/measured", "must be a string");
  s.measured = measured.get<std::string>();
  s.source = file;
  return s;
}

} // namespace

std::string HalideSchedule::blocksOutsideTile() const {
  int64_t scoreQueries = scoreVectors * vectorWidth;
  if (scoreQueries > queryTile)
    return "/score_block: " + std::to_string(scoreVectors) + " vectors of " +
           std::to_string(vectorWidth) + " queries span " +
           std::to_string(scoreQueries) + ", more than query_tile " +
           std::to_string(queryTile);
  if (pvRows > queryTile)
    return "/pv_block: " + std::to_string(pvRows) +
           " rows are more than query_tile " + std::to_string(queryTile);
  return "";
}

std::string HalideSchedule::toJson() const {
  if (isAuto()) {
    // No tile sizes: the autoscheduler chose them.
    json document = {{"attnc_halide_schedule", 1},
                     {"target_class", targetClass},
                     {"kind", kind},
                     {"autoscheduler", autoscheduler},
                     {"task_queries", taskQueries},
                     {"key_tile", keyTile},
                     {"machine_params",
                      {{"parallelism", parallelism},
                       {"last_level_cache_bytes", lastLevelCacheBytes},
                       {"balance", balance}}},
                     {"estimates", estimates},
                     {"defaulted_estimates", defaultedEstimates}};
    return document.dump(2);
  }
  json document = {{"attnc_halide_schedule", 1},
                   {"target_class", targetClass},
                   {"kind", kind},
                   {"task_queries", taskQueries},
                   {"query_tile", queryTile},
                   {"key_tile", keyTile},
                   {"vector_width", vectorWidth},
                   {"score_block", {scoreVectors, scoreKeys}},
                   {"pv_block", {pvRows, pvVectors}},
                   {"decode_score_block", {decodeScoreHeads, decodeScoreKeys}},
                   {"decode_pv_block", {decodePvHeads, decodePvVectors}},
                   {"decode_part_keys", decodePartKeys},
                   {"decode_pv_keys", decodePvKeys},
                   {"measured", measured}};
  return document.dump(2);
}

std::string HalideSchedule::toFileJson() const {
  json document = json::parse(toJson());
  document.erase("kind");
  return document.dump(2);
}

HalideSchedule defaultHalideSchedule(const std::string &targetClass) {
  for (const auto &[name, text] : kDefaultSchedules)
    if (targetClass == name) {
      HalideSchedule s =
          parse(text, "schedules/halide/" + targetClass + ".json", targetClass,
                nullptr);
      s.source = "default";
      return s;
    }
  throw std::logic_error("no default halide schedule for " + targetClass);
}

const std::vector<std::string> &halideAutoschedulers() {
  static const std::vector<std::string> names = {"adams2019", "mullapudi2016",
                                                 "li2018"};
  return names;
}

HalideSchedule autoHalideSchedule(const std::string &name,
                                  const std::string &targetClass) {
  const std::vector<std::string> &names = halideAutoschedulers();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    std::string allowed;
    for (const std::string &known : names)
      allowed += (allowed.empty() ? "" : ", ") + known;
    throw UserError("--schedule auto:" + name +
                    ": unknown autoscheduler; allowed: " + allowed);
  }
  // The task size is NAME_entry's, not the autoscheduler's: keep the hand
  // schedule's, so that both split the work the same way.
  HalideSchedule hand = defaultHalideSchedule(targetClass);
  HalideSchedule s;
  s.targetClass = targetClass;
  s.kind = "auto:" + name;
  s.autoscheduler = name;
  s.taskQueries = hand.taskQueries;
  // The key tile belongs to the algorithm (how the online softmax folds).
  s.keyTile = hand.keyTile;
  // Halide's generic cache size and load cost (MachineParams::generic()),
  // but one thread: attnrt runs the tasks, each call is serial.
  s.parallelism = 1;
  s.lastLevelCacheBytes = 16 << 20;
  s.balance = 40;
  s.source = "auto";
  return s;
}

HalideSchedule parseHalideSchedule(const std::string &text,
                                   const std::string &file,
                                   const std::string &targetClass) {
  HalideSchedule defaults = defaultHalideSchedule(targetClass);
  return parse(text, file, targetClass, &defaults);
}

HalideSchedule loadHalideSchedule(const std::string &path,
                                  const std::string &targetClass) {
  return parseHalideSchedule(readUserFile(path, "--schedule " + path,
                                          "a schedule file", kMaxScheduleBytes,
                                          "more than any schedule file"),
                             path, targetClass);
}

} // namespace attnc
