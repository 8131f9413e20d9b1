//===- CandidateSearch.h - Which candidate attnc tune measures next -*- C++
//-*-===//
//
// The order of a tune: every candidate of the shard in a fixed order when
// the whole shard fits the budget, else a seeded local search around the
// fastest candidate so far (its untried neighbours, one parameter changed,
// in an order drawn from the seed; then a random untried candidate). The
// default, candidate 0, is never returned: the tuner measures it first.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNING_CANDIDATESEARCH_H
#define ATTNC_TUNING_CANDIDATESEARCH_H

#include <cstdint>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace attnc::tuning {

class CandidateSearch {
public:
  /// `parameters[i]`: the parameter values of candidate i (the default is
  /// 0), in one order for every candidate; neighbours differ in one. `shard`
  /// the indices this search may return.
  CandidateSearch(std::vector<std::vector<std::string>> parameters,
                  std::vector<int> shard, bool exhaustive, uint64_t seed);

  /// The next candidate to measure; nullopt when none is left.
  std::optional<int> next();
  /// What candidate `index` measured (nullopt: it failed). Times from an
  /// earlier run are given scaled to this run's default.
  void report(int index, std::optional<double> ms);

  bool exhaustive() const { return whole; }

private:
  std::vector<std::vector<std::string>> parameters;
  std::vector<int> shard;
  bool whole;
  std::mt19937_64 random;
  std::set<int> visited;
  int center = -1; ///< The fastest candidate so far.
  double centerMs = 0;
};

} // namespace attnc::tuning

#endif // ATTNC_TUNING_CANDIDATESEARCH_H
