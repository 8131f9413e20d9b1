//===- CandidateSearch.cpp - Which candidate attnc tune measures next -----===//

#include "Tuning/CandidateSearch.h"

#include <algorithm>

namespace attnc::tuning {

namespace {

/// How many of the four tuned parameters differ.
int differences(const AttentionSchedule &a, const AttentionSchedule &b) {
  return (a.queryTile != b.queryTile) + (a.keyTile != b.keyTile) +
         (a.scoreVectors != b.scoreVectors || a.scoreKeys != b.scoreKeys) +
         (a.pvRows != b.pvRows || a.pvVectors != b.pvVectors);
}

} // namespace

CandidateSearch::CandidateSearch(const std::vector<AttentionSchedule> &all,
                                 std::vector<int> shard, bool exhaustive,
                                 uint64_t seed)
    : all(all), shard(std::move(shard)), whole(exhaustive), random(seed) {
  visited.insert(0); // The default: measured before the search.
}

std::optional<int> CandidateSearch::next() {
  std::vector<int> untried;
  for (int i : shard)
    if (!visited.count(i))
      untried.push_back(i);
  if (untried.empty())
    return std::nullopt;
  int chosen = untried.front();
  if (!whole) {
    std::vector<int> near;
    if (center >= 0)
      for (int i : untried)
        if (differences(all[i], all[center]) == 1)
          near.push_back(i);
    const std::vector<int> &pool = near.empty() ? untried : near;
    chosen = pool[random() % pool.size()];
  }
  visited.insert(chosen);
  return chosen;
}

void CandidateSearch::report(int index, std::optional<double> ms) {
  visited.insert(index);
  if (ms && (center < 0 || *ms < centerMs)) {
    center = index;
    centerMs = *ms;
  }
}

} // namespace attnc::tuning
