//===- Schedule.cpp - Kernel schedules as data ----------------------------===//

#include "Codegen/Schedule.h"
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

/// schedules/cpu/*.json, compiled in by CMake (DefaultSchedules.inc defines
/// kDefaultSchedules: {target class, JSON text} pairs).
#include "DefaultSchedules.inc"

int64_t maxLanes(const std::string &targetClass) {
  return targetClass == "x86-64-avx512" ? 16
         : targetClass == "x86-64-avx2" ? 8
                                        : 4;
}

class ScheduleReader {
public:
  ScheduleReader(const std::string &file) : file(file) {}

  [[noreturn]] void fail(const std::string &pointer,
                         const std::string &message) const {
    throw UserError(file + ": " + (pointer.empty() ? "" : pointer + ": ") +
                    message);
  }

  AttentionSchedule read(const std::string &text, const CpuTarget &target) {
    json document;
    try {
      document = json::parse(text);
    } catch (const json::exception &error) {
      std::string message = error.what();
      size_t tag = message.find("] ");
      fail("",
           "malformed JSON: " +
               (tag == std::string::npos ? message : message.substr(tag + 2)));
    }
    if (!document.is_object())
      fail("", "expected a schedule object");
    static const char *const known[] = {"attnc_schedule",
                                        "target_class",
                                        "query_tile",
                                        "key_tile",
                                        "vector_width",
                                        "score_block",
                                        "pv_block",
                                        "threads",
                                        "value_prefetch_bytes",
                                        "decode_step",
                                        "decode_prefetch_level",
                                        "measured"};
    for (const auto &item : document.items())
      if (std::find(std::begin(known), std::end(known), item.key()) ==
          std::end(known))
        fail("/" + item.key(), "unknown key \"" + item.key() + "\"");
    if (integer(document, "attnc_schedule", 1) != 1)
      fail("/attnc_schedule", "unsupported schedule version (this attnc "
                              "reads version 1)");

    AttentionSchedule schedule;
    schedule.targetClass = string(document, "target_class");
    std::string expected = targetClassOf(target);
    if (schedule.targetClass != expected)
      fail("/target_class", "schedule is for " + schedule.targetClass +
                                " but the target " + target.name + " is " +
                                expected);
    schedule.vectorWidth = integer(document, "vector_width", 1);
    int64_t lanes = maxLanes(expected);
    if (schedule.vectorWidth != 4 && schedule.vectorWidth != 8 &&
        schedule.vectorWidth != 16)
      fail("/vector_width", "must be 4, 8 or 16");
    if (schedule.vectorWidth > lanes)
      fail("/vector_width", expected + " has " + std::to_string(lanes) +
                                " f32 lanes, not " +
                                std::to_string(schedule.vectorWidth));
    schedule.queryTile = integer(document, "query_tile", 1);
    if (schedule.queryTile % schedule.vectorWidth != 0)
      fail("/query_tile", "must be a multiple of vector_width (" +
                              std::to_string(schedule.vectorWidth) + ")");
    auto [scoreVectors, scoreKeys] = pair(document, "score_block");
    auto [pvRows, pvVectors] = pair(document, "pv_block");
    schedule.scoreVectors = scoreVectors;
    schedule.scoreKeys = scoreKeys;
    schedule.pvRows = pvRows;
    schedule.pvVectors = pvVectors;
    if ((scoreVectors * schedule.vectorWidth) > schedule.queryTile ||
        schedule.queryTile % (scoreVectors * schedule.vectorWidth) != 0)
      fail("/score_block/0", "query_tile must be a multiple of score_block[0] "
                             "vectors of vector_width lanes");
    schedule.keyTile = integer(document, "key_tile", 1);
    if (schedule.keyTile % scoreKeys != 0)
      fail("/key_tile", "must be a multiple of score_block[1] (" +
                            std::to_string(scoreKeys) + ")");
    if (schedule.queryTile % pvRows != 0)
      fail("/pv_block/0", "query_tile must be a multiple of pv_block[0]");
    schedule.threads = integer(document, "threads", 0);
    // Optional: files written before it existed take the class's default
    // (every default file states it).
    if (document.contains("value_prefetch_bytes")) {
      schedule.valuePrefetchBytes =
          integer(document, "value_prefetch_bytes", 0);
      if (schedule.valuePrefetchBytes != 0 &&
          schedule.valuePrefetchBytes != 2 && schedule.valuePrefetchBytes != 4)
        fail("/value_prefetch_bytes", "must be 0, 2 or 4");
    } else {
      schedule.valuePrefetchBytes = defaultSchedule(target).valuePrefetchBytes;
    }
    int64_t keyBlock = decodeKeyBlock(schedule.vectorWidth);
    if (document.contains("decode_step")) {
      schedule.decodeStep = integer(document, "decode_step", 1);
      if (schedule.decodeStep % keyBlock != 0)
        fail("/decode_step", "must be a multiple of " +
                                 std::to_string(keyBlock) +
                                 " (the keys of a decode score block at "
                                 "vector_width " +
                                 std::to_string(schedule.vectorWidth) + ")");
    } else {
      // Optional, as value_prefetch_bytes.
      schedule.decodeStep = defaultDecodeStep(schedule.vectorWidth);
    }
    if (document.contains("decode_prefetch_level")) {
      schedule.decodePrefetchLevel =
          integer(document, "decode_prefetch_level", 1);
      if (schedule.decodePrefetchLevel > 2)
        fail("/decode_prefetch_level", "must be 1 (L1) or 2 (L2)");
    } else {
      // Optional, as value_prefetch_bytes.
      schedule.decodePrefetchLevel =
          defaultSchedule(target).decodePrefetchLevel;
    }
    if (document.contains("measured"))
      schedule.measured = string(document, "measured");
    schedule.source = file;
    return schedule;
  }

private:
  std::string file;

  int64_t integer(const json &object, const std::string &key,
                  int64_t minimum) const {
    if (!object.contains(key))
      fail("", "needs \"" + key + "\"");
    const json &value = object[key];
    if (!value.is_number_integer())
      fail("/" + key, "expected an integer, got " + value.dump());
    int64_t number = value.get<int64_t>();
    if (number < minimum || number > 4096)
      fail("/" + key, "must be in [" + std::to_string(minimum) + ", 4096]");
    return number;
  }

  std::string string(const json &object, const std::string &key) const {
    if (!object.contains(key))
      fail("", "needs \"" + key + "\"");
    if (!object[key].is_string())
      fail("/" + key, "expected a string, got " + object[key].dump());
    return object[key].get<std::string>();
  }

  std::pair<int64_t, int64_t> pair(const json &object,
                                   const std::string &key) const {
    if (!object.contains(key))
      fail("", "needs \"" + key + "\"");
    const json &value = object[key];
    if (!value.is_array() || value.size() != 2)
      fail("/" + key, "expected two integers, got " + value.dump());
    std::pair<int64_t, int64_t> result;
    for (size_t i = 0; i < 2; ++i) {
      if (!value[i].is_number_integer() || value[i].get<int64_t>() < 1 ||
          value[i].get<int64_t>() > 32)
        fail("/" + key + "/" + std::to_string(i),
             "expected an integer in [1, 32], got " + value[i].dump());
      (i ? result.second : result.first) = value[i].get<int64_t>();
    }
    return result;
  }
};

} // namespace

std::string AttentionSchedule::toJson() const {
  json document = {{"attnc_schedule", 1},
                   {"target_class", targetClass},
                   {"query_tile", queryTile},
                   {"key_tile", keyTile},
                   {"vector_width", vectorWidth},
                   {"score_block", {scoreVectors, scoreKeys}},
                   {"pv_block", {pvRows, pvVectors}},
                   {"threads", threads},
                   {"value_prefetch_bytes", valuePrefetchBytes},
                   {"decode_step", decodeStep},
                   {"decode_prefetch_level", decodePrefetchLevel},
                   {"measured", measured}};
  return document.dump(2);
}

AttentionSchedule defaultSchedule(const CpuTarget &target) {
  std::string targetClass = targetClassOf(target);
  for (const auto &[name, text] : kDefaultSchedules)
    if (targetClass == name) {
      AttentionSchedule schedule =
          parseSchedule(text, "schedules/cpu/" + targetClass + ".json", target);
      schedule.source = "default";
      return schedule;
    }
  throw UserError("--target " + target.name + ": no default schedule for " +
                  targetClass);
}

AttentionSchedule parseSchedule(const std::string &text,
                                const std::string &file,
                                const CpuTarget &target) {
  return ScheduleReader(file).read(text, target);
}

AttentionSchedule loadSchedule(const std::string &path,
                               const CpuTarget &target) {
  return parseSchedule(readUserFile(path, "--schedule " + path,
                                    "a schedule file", kMaxScheduleBytes,
                                    "more than any schedule file"),
                       path, target);
}

const char *matrixTilesName(MatrixTiles tiles) {
  switch (tiles) {
  case MatrixTiles::none:
    return "none";
  case MatrixTiles::amx:
    return "amx";
  case MatrixTiles::emulated:
    return "emulated";
  }
  return "none";
}

std::optional<MatrixTiles> parseMatrixTiles(std::string_view name) {
  for (MatrixTiles tiles :
       {MatrixTiles::none, MatrixTiles::amx, MatrixTiles::emulated})
    if (name == matrixTilesName(tiles))
      return tiles;
  return std::nullopt;
}

} // namespace attnc
