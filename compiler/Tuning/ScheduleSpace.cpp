//===- ScheduleSpace.cpp - The schedules attnc tune searches --------------===//

#include "Tuning/ScheduleSpace.h"
#include "Support/Error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace attnc::tuning {

namespace {

/// schedules/space/cpu.json, compiled in (EmbedSpace.cmake).
#include "ScheduleSpaces.inc"

using json = nlohmann::json;

class SpaceReader {
public:
  explicit SpaceReader(const std::string &file) : file(file) {}

  [[noreturn]] void fail(const std::string &pointer,
                         const std::string &message) const {
    throw UserError(file + ": " + (pointer.empty() ? "" : pointer + ": ") +
                    message);
  }

  HalideScheduleSpace readHalide(const std::string &text) {
    json document = object(
        text, {"attnc_schedule_space", "version", "task_queries", "query_tile",
               "key_tile", "score_block", "pv_block", "decode_score_block",
               "decode_pv_block", "decode_pv_keys", "autoschedulers", "notes"});
    HalideScheduleSpace space;
    space.version =
        integer(document, "/version", document.value("version", json()));
    space.taskQueries = integers(document, "task_queries");
    space.queryTiles = integers(document, "query_tile");
    if (document.contains("key_tile"))
      space.keyTiles = integers(document, "key_tile");
    space.scoreBlocks = pairs(document, "score_block");
    space.pvBlocks = pairs(document, "pv_block");
    if (document.contains("decode_score_block"))
      space.decodeScoreBlocks = pairs(document, "decode_score_block");
    if (document.contains("decode_pv_block"))
      space.decodePvBlocks = pairs(document, "decode_pv_block");
    if (document.contains("decode_pv_keys")) {
      const json &list = document["decode_pv_keys"];
      if (!list.is_array() || list.empty())
        fail("/decode_pv_keys", "expected a non-empty array");
      for (size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_number_integer() ||
            !HalideSchedule::validDecodePvKeys(list[i].get<int64_t>()))
          fail("/decode_pv_keys/" + std::to_string(i),
               "expected 0 or a multiple of 16 up to " +
                   std::to_string(HalideSchedule::kMostDecodePvKeys) +
                   ", got " + list[i].dump());
        space.decodePvKeys.push_back(list[i].get<int64_t>());
      }
    }
    const json &names = member(document, "autoschedulers");
    if (!names.is_array())
      fail("/autoschedulers", "expected an array of names");
    const std::vector<std::string> &known = halideAutoschedulers();
    std::string allowed;
    for (const std::string &name : known)
      allowed += (allowed.empty() ? "" : ", ") + name;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!names[i].is_string() ||
          std::find(known.begin(), known.end(), names[i].get<std::string>()) ==
              known.end())
        fail("/autoschedulers/" + std::to_string(i),
             "expected one of " + allowed + ", got " + names[i].dump());
      space.autoschedulers.push_back(names[i].get<std::string>());
    }
    return space;
  }

  json object(const std::string &text, const std::set<std::string> &known) {
    json document = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (document.is_discarded() || !document.is_object())
      fail("", "expected a JSON object");
    for (const auto &item : document.items())
      if (!known.count(item.key()))
        fail("/" + item.key(), "unknown key \"" + item.key() + "\"");
    if (integer(document, "/attnc_schedule_space",
                document.value("attnc_schedule_space", json())) != 1)
      fail("/attnc_schedule_space", "unsupported format (this attnc reads 1)");
    return document;
  }

  ScheduleSpace read(const std::string &text) {
    json document = object(
        text, {"attnc_schedule_space", "version", "query_tile", "key_tile",
               "score_block", "pv_block", "value_prefetch_bytes", "decode_step",
               "decode_prefetch_level", "registers", "notes"});
    ScheduleSpace space;
    space.version =
        integer(document, "/version", document.value("version", json()));
    space.queryTiles = integers(document, "query_tile");
    space.keyTiles = integers(document, "key_tile");
    space.scoreBlocks = pairs(document, "score_block");
    space.pvBlocks = pairs(document, "pv_block");
    if (document.contains("value_prefetch_bytes")) {
      const json &list = document["value_prefetch_bytes"];
      if (!list.is_array() || list.empty())
        fail("/value_prefetch_bytes", "expected a non-empty array");
      for (size_t i = 0; i < list.size(); ++i) {
        if (!list[i].is_number_integer() ||
            (list[i] != 0 && list[i] != 2 && list[i] != 4))
          fail("/value_prefetch_bytes/" + std::to_string(i),
               "expected 0, 2 or 4, got " + list[i].dump());
        space.valuePrefetchBytes.push_back(list[i].get<int64_t>());
      }
    }
    if (document.contains("decode_step"))
      space.decodeSteps = integers(document, "decode_step");
    if (document.contains("decode_prefetch_level")) {
      space.decodePrefetchLevels = integers(document, "decode_prefetch_level");
      for (size_t i = 0; i < space.decodePrefetchLevels.size(); ++i)
        if (space.decodePrefetchLevels[i] > 2)
          fail("/decode_prefetch_level/" + std::to_string(i),
               "expected 1 (L1) or 2 (L2), got " +
                   std::to_string(space.decodePrefetchLevels[i]));
    }
    const json &registers = member(document, "registers");
    if (!registers.is_object() || registers.empty())
      fail("/registers", "expected an object of register counts");
    for (const auto &item : registers.items())
      space.registers[item.key()] =
          integer(document, "/registers/" + item.key(), item.value());
    return space;
  }

private:
  std::string file;

  const json &member(const json &object, const std::string &key) const {
    auto found = object.find(key);
    if (found == object.end())
      fail("", "needs \"" + key + "\"");
    return *found;
  }
  int64_t integer(const json &, const std::string &pointer,
                  const json &value) const {
    if (!value.is_number_integer() || value.get<int64_t>() < 1 ||
        value.get<int64_t>() > 4096)
      fail(pointer, "expected an integer in [1, 4096], got " + value.dump());
    return value.get<int64_t>();
  }
  std::vector<int64_t> integers(const json &object,
                                const std::string &key) const {
    const json &list = member(object, key);
    if (!list.is_array() || list.empty())
      fail("/" + key, "expected a non-empty array");
    std::vector<int64_t> result;
    for (size_t i = 0; i < list.size(); ++i)
      result.push_back(
          integer(object, "/" + key + "/" + std::to_string(i), list[i]));
    return result;
  }
  std::vector<std::pair<int64_t, int64_t>> pairs(const json &object,
                                                 const std::string &key) const {
    const json &list = member(object, key);
    if (!list.is_array() || list.empty())
      fail("/" + key, "expected a non-empty array of pairs");
    std::vector<std::pair<int64_t, int64_t>> result;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string pointer = "/" + key + "/" + std::to_string(i);
      if (!list[i].is_array() || list[i].size() != 2)
        fail(pointer, "expected two integers, got " + list[i].dump());
      result.push_back({integer(object, pointer + "/0", list[i][0]),
                        integer(object, pointer + "/1", list[i][1])});
    }
    return result;
  }
};

/// The values a candidate search takes for one parameter: the space's, or
/// only the default's `value` when the space leaves the parameter out or it
/// does not shape what the tuned shape runs (`varies` false).
template <typename T>
std::vector<T> searchedValues(bool varies, const std::vector<T> &values,
                              const T &value) {
  return varies && !values.empty() ? values : std::vector<T>{value};
}

bool legalSchedule(const AttentionSchedule &s) {
  int64_t W = s.vectorWidth;
  return s.queryTile % (s.scoreVectors * W) == 0 &&
         s.queryTile % s.pvRows == 0 && s.keyTile % s.scoreKeys == 0 &&
         s.decodeStep % decodeKeyBlock(W) == 0;
}

} // namespace

ScheduleSpace parseScheduleSpace(const std::string &text,
                                 const std::string &file) {
  return SpaceReader(file).read(text);
}

ScheduleSpace cpuScheduleSpace() {
  return parseScheduleSpace(kCpuScheduleSpace, "schedules/space/cpu.json");
}

HalideScheduleSpace parseHalideScheduleSpace(const std::string &text,
                                             const std::string &file) {
  return SpaceReader(file).readHalide(text);
}

HalideScheduleSpace halideScheduleSpace() {
  return parseHalideScheduleSpace(kHalideScheduleSpace,
                                  "schedules/space/halide.json");
}

CandidateList mlirCandidates(const ScheduleSpace &space,
                             const AttentionSchedule &defaults,
                             bool decodeForm) {
  CandidateList result;
  result.parameterNames = {"query tile",
                           "key tile",
                           "score block (query vectors x keys)",
                           "P.V block (rows x vectors)",
                           "V prefetch (widest V element, bytes)",
                           "decode step (keys)",
                           "decode prefetch (cache level)"};
  for (const AttentionSchedule &s : candidates(space, defaults, decodeForm))
    result.candidates.push_back(
        {candidateKey(s),
         describeSchedule(s),
         {std::to_string(s.queryTile), std::to_string(s.keyTile),
          std::to_string(s.scoreVectors) + "x" + std::to_string(s.scoreKeys),
          std::to_string(s.pvRows) + "x" + std::to_string(s.pvVectors),
          std::to_string(s.valuePrefetchBytes), std::to_string(s.decodeStep),
          std::to_string(s.decodePrefetchLevel)},
         s.toJson(),
         ""});
  return result;
}

CandidateList halideCandidates(const HalideScheduleSpace &space,
                               const HalideSchedule &defaults,
                               bool decodeForm) {
  auto by = [](int64_t x, int64_t y) {
    return std::to_string(x) + "x" + std::to_string(y);
  };
  auto hand = [&](const HalideSchedule &s) {
    json key = {{"decode_pv_block", {s.decodePvHeads, s.decodePvVectors}},
                {"decode_pv_keys", s.decodePvKeys},
                {"decode_score_block", {s.decodeScoreHeads, s.decodeScoreKeys}},
                {"key_tile", s.keyTile},
                {"pv_block", {s.pvRows, s.pvVectors}},
                {"query_tile", s.queryTile},
                {"score_block", {s.scoreVectors, s.scoreKeys}},
                {"target_class", s.targetClass},
                {"task_queries", s.taskQueries},
                {"vector_width", s.vectorWidth}};
    std::string score = by(s.scoreVectors, s.scoreKeys);
    std::string pv = by(s.pvRows, s.pvVectors);
    std::string decodeScore = by(s.decodeScoreHeads, s.decodeScoreKeys);
    std::string decodePv = by(s.decodePvHeads, s.decodePvVectors);
    std::string description =
        decodeForm
            ? "decode score " + decodeScore + ", decode pv " + decodePv +
                  (s.decodePvKeys
                       ? " in chunks of " + std::to_string(s.decodePvKeys)
                       : " in one pass")
            : "task " + std::to_string(s.taskQueries) + ", query " +
                  std::to_string(s.queryTile) + ", key " +
                  std::to_string(s.keyTile) + ", score " + score + ", pv " + pv;
    return TuneCandidate{key.dump(),
                         description,
                         {"hand", std::to_string(s.taskQueries),
                          std::to_string(s.queryTile),
                          std::to_string(s.keyTile), score, pv, decodeScore,
                          decodePv, std::to_string(s.decodePvKeys)},
                         s.toFileJson(),
                         ""};
  };
  CandidateList list;
  list.parameterNames = {"schedule",
                         "task queries",
                         "query tile",
                         "key tile",
                         "score block (query vectors x keys)",
                         "P.V block (rows x vectors)",
                         "decode score block (heads x keys)",
                         "decode P.V block (heads x vectors)",
                         "decode P.V chunk (keys; 0: one pass)"};
  std::vector<TuneCandidate> &result = list.candidates;
  result.push_back(hand(defaults));
  std::set<std::string> seen = {result.front().key};
  auto add = [&](const HalideSchedule &s) {
    TuneCandidate candidate = hand(s);
    if (seen.insert(candidate.key).second)
      result.push_back(candidate);
  };
  if (decodeForm) {
    // Only the decode parameters change what runs; the rows form's would
    // give copies of one kernel.
    for (auto [scoreHeads, scoreKeys] :
         searchedValues(true, space.decodeScoreBlocks,
                        std::make_pair(defaults.decodeScoreHeads,
                                       defaults.decodeScoreKeys)))
      for (auto [pvHeads, pvVectors] :
           searchedValues(true, space.decodePvBlocks,
                          std::make_pair(defaults.decodePvHeads,
                                         defaults.decodePvVectors)))
        for (int64_t chunkKeys :
             searchedValues(true, space.decodePvKeys, defaults.decodePvKeys)) {
          HalideSchedule s = defaults;
          s.decodeScoreHeads = scoreHeads;
          s.decodeScoreKeys = scoreKeys;
          s.decodePvHeads = pvHeads;
          s.decodePvVectors = pvVectors;
          s.decodePvKeys = chunkKeys;
          add(s);
        }
  } else {
    std::vector<int64_t> keyTiles =
        searchedValues(true, space.keyTiles, defaults.keyTile);
    for (int64_t task : space.taskQueries)
      for (int64_t query : space.queryTiles) {
        if (task % query != 0)
          continue;
        for (int64_t keys : keyTiles)
          for (auto [scoreVectors, scoreKeys] : space.scoreBlocks)
            for (auto [pvRows, pvVectors] : space.pvBlocks) {
              HalideSchedule s = defaults;
              s.taskQueries = task;
              s.queryTile = query;
              s.keyTile = keys;
              s.scoreVectors = scoreVectors;
              s.scoreKeys = scoreKeys;
              s.pvRows = pvRows;
              s.pvVectors = pvVectors;
              if (s.blocksOutsideTile().empty())
                add(s);
            }
      }
  }
  for (const std::string &name : space.autoschedulers) {
    json key = {{"autoscheduler", name},
                {"target_class", defaults.targetClass}};
    result.push_back({key.dump(),
                      "autoscheduler " + name,
                      {"auto:" + name, "", "", "", "", "", "", "", ""},
                      "",
                      "auto:" + name});
  }
  return list;
}

bool fitsRegisters(const AttentionSchedule &s, int64_t registers) {
  int64_t score = s.scoreVectors * s.scoreKeys + s.scoreVectors + 1;
  int64_t pv = s.pvRows * s.pvVectors + s.pvVectors + 1;
  return score <= registers && pv <= registers;
}

std::vector<AttentionSchedule> candidates(const ScheduleSpace &space,
                                          const AttentionSchedule &defaults,
                                          bool decodeForm) {
  auto registers = space.registers.find(defaults.targetClass);
  if (registers == space.registers.end())
    throw UserError("schedules/space/cpu.json: /registers: no entry for " +
                    defaults.targetClass);
  std::vector<AttentionSchedule> result = {defaults};
  std::set<std::string> seen = {candidateKey(defaults)};
  // Decode tiles read neither the query tile nor the score block; other
  // tiles never read the decode parameters.
  std::vector<int64_t> queryTiles =
      searchedValues(!decodeForm, space.queryTiles, defaults.queryTile);
  std::vector<std::pair<int64_t, int64_t>> scoreBlocks =
      searchedValues(!decodeForm, space.scoreBlocks,
                     std::make_pair(defaults.scoreVectors, defaults.scoreKeys));
  std::vector<int64_t> prefetches = searchedValues(
      decodeForm, space.valuePrefetchBytes, defaults.valuePrefetchBytes);
  std::vector<int64_t> steps =
      searchedValues(decodeForm, space.decodeSteps, defaults.decodeStep);
  std::vector<int64_t> levels = searchedValues(
      decodeForm, space.decodePrefetchLevels, defaults.decodePrefetchLevel);
  for (int64_t queryTile : queryTiles)
    for (int64_t keyTile : space.keyTiles)
      for (auto [scoreVectors, scoreKeys] : scoreBlocks)
        for (auto [pvRows, pvVectors] : space.pvBlocks)
          for (int64_t prefetch : prefetches)
            for (int64_t step : steps)
              for (int64_t level : levels) {
                AttentionSchedule schedule = defaults;
                schedule.queryTile = queryTile;
                schedule.keyTile = keyTile;
                schedule.scoreVectors = scoreVectors;
                schedule.scoreKeys = scoreKeys;
                schedule.pvRows = pvRows;
                schedule.pvVectors = pvVectors;
                schedule.valuePrefetchBytes = prefetch;
                schedule.decodeStep = step;
                schedule.decodePrefetchLevel = level;
                if (!legalSchedule(schedule) ||
                    !fitsRegisters(schedule, registers->second) ||
                    !seen.insert(candidateKey(schedule)).second)
                  continue;
                result.push_back(schedule);
              }
  return result;
}

std::string describeSchedule(const AttentionSchedule &s) {
  return "query " + std::to_string(s.queryTile) + ", key " +
         std::to_string(s.keyTile) + ", score " +
         std::to_string(s.scoreVectors) + "x" + std::to_string(s.scoreKeys) +
         ", pv " + std::to_string(s.pvRows) + "x" +
         std::to_string(s.pvVectors) + ", V prefetch " +
         (s.valuePrefetchBytes == 0   ? std::string("off")
          : s.valuePrefetchBytes == 2 ? std::string("f16/bf16")
                                      : std::string("all")) +
         ", decode step " + std::to_string(s.decodeStep) +
         ", decode prefetch into L" + std::to_string(s.decodePrefetchLevel);
}

std::string candidateKey(const AttentionSchedule &s) {
  json key = {{"decode_prefetch_level", s.decodePrefetchLevel},
              {"decode_step", s.decodeStep},
              {"key_tile", s.keyTile},
              {"pv_block", {s.pvRows, s.pvVectors}},
              {"query_tile", s.queryTile},
              {"score_block", {s.scoreVectors, s.scoreKeys}},
              {"target_class", s.targetClass},
              {"value_prefetch_bytes", s.valuePrefetchBytes},
              {"vector_width", s.vectorWidth}};
  return key.dump(); // nlohmann::json keeps keys sorted.
}

} // namespace attnc::tuning
