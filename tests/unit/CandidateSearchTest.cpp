//===- CandidateSearchTest.cpp - The order attnc tune measures in ---------===//

#include "Tuning/CandidateSearch.h"
#include "Tuning/ScheduleSpace.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

using namespace attnc;
using namespace attnc::tuning;

namespace {

/// A schedule of `targetClass` with `width` lanes, query and key tiles and
/// score and P·V blocks.
AttentionSchedule schedule(const char *targetClass, int64_t width,
                           int64_t queryTile, int64_t keyTile,
                           std::pair<int64_t, int64_t> score,
                           std::pair<int64_t, int64_t> pv) {
  AttentionSchedule s;
  s.targetClass = targetClass;
  s.vectorWidth = width;
  s.queryTile = queryTile;
  s.keyTile = keyTile;
  std::tie(s.scoreVectors, s.scoreKeys) = score;
  std::tie(s.pvRows, s.pvVectors) = pv;
  return s;
}

std::vector<AttentionSchedule> space() {
  AttentionSchedule defaults =
      schedule("x86-64-avx2", 8, 32, 48, {2, 6}, {4, 2});
  ScheduleSpace space;
  space.version = 1;
  space.queryTiles = {16, 32, 48};
  space.keyTiles = {24, 48};
  space.scoreBlocks = {{2, 6}, {1, 8}};
  space.pvBlocks = {{4, 2}, {2, 4}};
  space.registers = {{"x86-64-avx2", 16}};
  return candidates(space, defaults, /*decodeForm=*/false);
}

/// The search's view of `all`: each candidate's parameter values.
std::vector<std::vector<std::string>>
parametersOf(const std::vector<AttentionSchedule> &all) {
  std::vector<std::vector<std::string>> result;
  for (const AttentionSchedule &s : all)
    result.push_back({std::to_string(s.queryTile), std::to_string(s.keyTile),
                      std::to_string(s.scoreKeys), std::to_string(s.pvRows)});
  return result;
}

std::vector<int> everyIndex(size_t count) {
  std::vector<int> result;
  for (int i = 0; i < int(count); ++i)
    result.push_back(i);
  return result;
}

std::vector<int> drain(CandidateSearch &search,
                       const std::vector<AttentionSchedule> &all,
                       double (*time)(const AttentionSchedule &)) {
  std::vector<int> order;
  while (std::optional<int> next = search.next()) {
    order.push_back(*next);
    search.report(*next, time(all[*next]));
  }
  return order;
}

double byQueryTile(const AttentionSchedule &s) { return 100.0 / s.queryTile; }

TEST(CandidateSearchTest, TheDefaultComesFirstAndEveryCandidateOnce) {
  std::vector<AttentionSchedule> all = space();
  EXPECT_EQ(all.front().queryTile, 32);
  EXPECT_EQ(all.front().keyTile, 48);
  std::set<std::string> keys;
  for (const AttentionSchedule &s : all)
    EXPECT_TRUE(keys.insert(candidateKey(s)).second) << candidateKey(s);
}

// Tests that value_prefetch_bytes multiplies a decode shape's space when the
// space lists it and keeps the default's value when it does not.
TEST(CandidateSearchTest, ValuePrefetchIsAParameterWhenListed) {
  AttentionSchedule defaults =
      schedule("x86-64-avx512", 16, 64, 64, {2, 8}, {4, 4});
  defaults.valuePrefetchBytes = 2;
  ScheduleSpace space;
  space.queryTiles = {64};
  space.keyTiles = {64};
  space.scoreBlocks = {{2, 8}};
  space.pvBlocks = {{4, 4}};
  space.registers = {{"x86-64-avx512", 32}};
  std::vector<AttentionSchedule> all =
      candidates(space, defaults, /*decodeForm=*/true);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].valuePrefetchBytes, 2);
  space.valuePrefetchBytes = {0, 2, 4};
  all = candidates(space, defaults, /*decodeForm=*/true);
  ASSERT_EQ(all.size(), 3u);
  std::set<int64_t> values;
  std::set<std::string> keys;
  for (const AttentionSchedule &s : all) {
    values.insert(s.valuePrefetchBytes);
    keys.insert(candidateKey(s));
  }
  EXPECT_EQ(all[0].valuePrefetchBytes, 2);
  EXPECT_EQ(values, (std::set<int64_t>{0, 2, 4}));
  EXPECT_EQ(keys.size(), 3u);
}

// Tests that decode steps the vector width cannot take (not a multiple of
// its decode score block, 4 keys at 16 lanes) are left out.
TEST(CandidateSearchTest, DecodeStepsMustFillScoreBlocks) {
  AttentionSchedule defaults =
      schedule("x86-64-avx512", 16, 64, 64, {2, 8}, {4, 4});
  defaults.decodeStep = 32;
  ScheduleSpace space;
  space.queryTiles = {64};
  space.keyTiles = {64};
  space.scoreBlocks = {{2, 8}};
  space.pvBlocks = {{4, 4}};
  space.decodeSteps = {6, 16, 32};
  space.registers = {{"x86-64-avx512", 32}};
  std::vector<int64_t> steps;
  for (const AttentionSchedule &s :
       candidates(space, defaults, /*decodeForm=*/true))
    steps.push_back(s.decodeStep);
  EXPECT_EQ(steps, (std::vector<int64_t>{32, 16}));
}

// Tests that a decode shape (every tile one vector of rows) searches the
// key tile, the P·V block and the decode parameters, with the query tile and
// score block the default's, and a prefill shape the reverse: candidates
// that would run the same loops are one candidate.
TEST(CandidateSearchTest, MlirCandidatesVaryWhatTheShapeRuns) {
  AttentionSchedule defaults =
      schedule("x86-64-avx512", 16, 64, 64, {4, 4}, {4, 4});
  defaults.decodeStep = 64;
  defaults.decodePrefetchLevel = 2;
  defaults.valuePrefetchBytes = 0;
  ScheduleSpace space;
  space.queryTiles = {64, 128};
  space.keyTiles = {64, 128};
  space.scoreBlocks = {{4, 4}, {2, 8}};
  space.pvBlocks = {{4, 4}, {2, 8}};
  space.valuePrefetchBytes = {0, 4};
  space.decodeSteps = {32, 64};
  space.decodePrefetchLevels = {1, 2};
  space.registers = {{"x86-64-avx512", 32}};
  EXPECT_TRUE(decodeTilesOnly(/*taskRows=*/4, 16));
  EXPECT_TRUE(decodeTilesOnly(16, 16));
  EXPECT_FALSE(decodeTilesOnly(17, 16));
  EXPECT_FALSE(decodeTilesOnly(-1, 16));
  std::vector<AttentionSchedule> decode =
      candidates(space, defaults, /*decodeForm=*/true);
  // 2 key tiles x 2 P.V blocks x 2 prefetches x 2 steps x 2 levels.
  EXPECT_EQ(decode.size(), 32u);
  for (const AttentionSchedule &s : decode) {
    EXPECT_EQ(s.queryTile, 64) << candidateKey(s);
    EXPECT_EQ(s.scoreVectors, 4) << candidateKey(s);
  }
  std::vector<AttentionSchedule> prefill =
      candidates(space, defaults, /*decodeForm=*/false);
  // 2 query tiles x 2 key tiles x 2 score blocks x 2 P.V blocks.
  EXPECT_EQ(prefill.size(), 16u);
  for (const AttentionSchedule &s : prefill) {
    EXPECT_EQ(s.decodeStep, 64) << candidateKey(s);
    EXPECT_EQ(s.decodePrefetchLevel, 2) << candidateKey(s);
    EXPECT_EQ(s.valuePrefetchBytes, 0) << candidateKey(s);
  }
}

// Tests that every candidate has a value for each named parameter (the
// columns of `attnc tune --report`'s CSV and the panels of its plot).
TEST(CandidateSearchTest, CandidateListsNameEveryParameter) {
  for (bool decodeForm : {false, true}) {
    CandidateList mlir =
        mlirCandidates(cpuScheduleSpace(),
                       defaultSchedule(cpuTarget("x86-64-avx2")), decodeForm);
    CandidateList halide =
        halideCandidates(halideScheduleSpace(),
                         defaultHalideSchedule("x86-64-avx2"), decodeForm);
    for (const CandidateList *list : {&mlir, &halide}) {
      ASSERT_FALSE(list->candidates.empty());
      for (const TuneCandidate &candidate : list->candidates)
        ASSERT_EQ(candidate.parameters.size(), list->parameterNames.size())
            << candidate.key;
    }
  }
}

TEST(CandidateSearchTest, ExhaustiveFollowsTheListOnce) {
  std::vector<AttentionSchedule> all = space();
  CandidateSearch search(parametersOf(all), everyIndex(all.size()),
                         /*exhaustive=*/true, 1);
  std::vector<int> order = drain(search, all, byQueryTile);
  std::vector<int> expected = everyIndex(all.size());
  expected.erase(expected.begin()); // The default is measured before.
  EXPECT_EQ(order, expected);
}

TEST(CandidateSearchTest, LocalSearchStartsNextToTheDefaultAndCoversAll) {
  std::vector<AttentionSchedule> all = space();
  CandidateSearch search(parametersOf(all), everyIndex(all.size()), false, 7);
  search.report(0, byQueryTile(all[0]));
  std::optional<int> first = search.next();
  ASSERT_TRUE(first);
  int changed = (all[*first].queryTile != all[0].queryTile) +
                (all[*first].keyTile != all[0].keyTile) +
                (all[*first].scoreKeys != all[0].scoreKeys) +
                (all[*first].pvRows != all[0].pvRows);
  EXPECT_EQ(changed, 1);
  search.report(*first, byQueryTile(all[*first]));
  std::vector<int> rest = drain(search, all, byQueryTile);
  std::set<int> seen(rest.begin(), rest.end());
  seen.insert(*first);
  EXPECT_EQ(seen.size(), all.size() - 1);
  EXPECT_EQ(rest.size() + 1, all.size() - 1);
}

TEST(CandidateSearchTest, TheSameSeedGivesTheSameOrder) {
  std::vector<AttentionSchedule> all = space();
  CandidateSearch a(parametersOf(all), everyIndex(all.size()), false, 3);
  CandidateSearch b(parametersOf(all), everyIndex(all.size()), false, 3);
  a.report(0, 1.0);
  b.report(0, 1.0);
  EXPECT_EQ(drain(a, all, byQueryTile), drain(b, all, byQueryTile));
}

TEST(CandidateSearchTest, HalideCandidatesAreLegalAndEndWithAutoschedulers) {
  HalideScheduleSpace space;
  space.version = 1;
  space.taskQueries = {32, 64};
  space.queryTiles = {16, 40};
  space.scoreBlocks = {{1, 8}};
  space.pvBlocks = {{4, 1}};
  space.autoschedulers = {"adams2019", "li2018"};
  HalideSchedule defaults = defaultHalideSchedule("x86-64-avx2");
  std::vector<TuneCandidate> all =
      halideCandidates(space, defaults, /*decodeForm=*/false).candidates;
  ASSERT_GE(all.size(), 3u);
  EXPECT_EQ(all[0].parameters[0], "hand");
  // 40 divides neither task size: only query tile 16, twice, plus the
  // default (if it is not one of them) and the two autoschedulers.
  for (const TuneCandidate &candidate : all)
    EXPECT_NE(candidate.parameters[2], "40") << candidate.key;
  EXPECT_EQ(all[all.size() - 2].scheduleFlag, "auto:adams2019");
  EXPECT_EQ(all.back().scheduleFlag, "auto:li2018");
  EXPECT_TRUE(all.back().scheduleText.empty());
  std::set<std::string> keys;
  for (const TuneCandidate &candidate : all)
    EXPECT_TRUE(keys.insert(candidate.key).second) << candidate.key;
}

TEST(CandidateSearchTest, HalideDecodeShapesSearchTheDecodeBlocksOnly) {
  HalideScheduleSpace space;
  space.version = 1;
  space.taskQueries = {32, 64};
  space.queryTiles = {16, 32};
  space.scoreBlocks = {{1, 8}, {2, 4}};
  space.pvBlocks = {{4, 1}};
  space.decodeScoreBlocks = {{2, 4}, {4, 4}};
  space.decodePvBlocks = {{2, 8}, {4, 4}, {8, 2}};
  HalideSchedule defaults = defaultHalideSchedule("x86-64-avx2");
  std::vector<TuneCandidate> decode =
      halideCandidates(space, defaults, /*decodeForm=*/true).candidates;
  // The default, then 2 x 3 decode blocks (one may be the default's).
  ASSERT_GE(decode.size(), 6u);
  ASSERT_LE(decode.size(), 7u);
  std::string rows = std::to_string(defaults.taskQueries) + "," +
                     std::to_string(defaults.queryTile);
  std::set<std::string> decodeBlocks;
  for (const TuneCandidate &candidate : decode) {
    ASSERT_EQ(candidate.parameters.size(), 9u);
    // The rows form's parameters stay the default's: they do not run.
    EXPECT_EQ(candidate.parameters[1] + "," + candidate.parameters[2], rows);
    decodeBlocks.insert(candidate.parameters[6] + " " +
                        candidate.parameters[7]);
  }
  EXPECT_EQ(decodeBlocks.size(), decode.size());
  EXPECT_TRUE(decodeBlocks.count("4x4 8x2"));
  // A prefill shape leaves the decode blocks at the default's.
  std::vector<TuneCandidate> prefill =
      halideCandidates(space, defaults, /*decodeForm=*/false).candidates;
  std::string defaultDecode =
      decode.front().parameters[6] + " " + decode.front().parameters[7];
  for (const TuneCandidate &candidate : prefill)
    EXPECT_EQ(candidate.parameters[6] + " " + candidate.parameters[7],
              defaultDecode);
  // A decode candidate's text is a schedule file with its blocks.
  EXPECT_NE(decode.back().scheduleText.find("decode_pv_block"),
            std::string::npos);
}

TEST(CandidateSearchTest, AShardReturnsOnlyItsCandidates) {
  std::vector<AttentionSchedule> all = space();
  std::vector<int> shard = {0};
  for (int i = 1; i < int(all.size()); i += 3)
    shard.push_back(i);
  CandidateSearch search(parametersOf(all), shard, false, 5);
  search.report(0, 1.0);
  std::vector<int> order = drain(search, all, byQueryTile);
  std::set<int> allowed(shard.begin() + 1, shard.end());
  EXPECT_EQ(std::set<int>(order.begin(), order.end()), allowed);
}

} // namespace
