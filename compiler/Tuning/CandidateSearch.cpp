//===- CandidateSearch.cpp - Which candidate attnc tune measures next -----===//

#include "Tuning/CandidateSearch.h"

#include <algorithm>

namespace attnc::tuning {

namespace {

/// How many parameters differ.
int differences(const std::vector<std::string> &a,
                const std::vector<std::string> &b) {
  int count = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    count += a[i] != b[i];
  return count;
}

} // namespace

CandidateSearch::CandidateSearch(
    std::vector<std::vector<std::string>> parameters, std::vector<int> shard,
    bool exhaustive, uint64_t seed)
    : parameters(std::move(parameters)), shard(std::move(shard)),
      whole(exhaustive), random(seed) {
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
        if (differences(parameters[i], parameters[center]) == 1)
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
