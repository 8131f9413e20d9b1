//===- ShapeRules.cpp - Shape inference shared by several ops -------------===//

#include "Graph/ShapeRules.h"

#include <algorithm>

namespace attnc {

std::optional<Shape> broadcastShapes(const Shape &a, const Shape &b,
                                     std::string &problem) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Align from the right; a missing dim acts as 1.
    Dim da = i < rank - a.size() ? Dim::fixed(1) : a[i - (rank - a.size())];
    Dim db = i < rank - b.size() ? Dim::fixed(1) : b[i - (rank - b.size())];
    if (da == db || db.isOne()) {
      result[i] = da;
    } else if (da.isOne()) {
      result[i] = db;
    } else {
      problem = "dims " + da.str() + " and " + db.str() + " differ";
      if (!da.isFixed() && !db.isFixed())
        problem += " (different run-time sizes are never assumed equal)";
      return std::nullopt;
    }
  }
  return result;
}

std::optional<Shape> inferMatmulShape(const Shape &a, const Shape &b,
                                      bool transposeB, std::string &problem) {
  if (a.empty() || b.empty()) {
    problem = "operands must have rank >= 1";
    return std::nullopt;
  }
  if (transposeB && b.size() < 2) {
    problem = "transpose_b needs b of rank >= 2";
    return std::nullopt;
  }
  // numpy: a 1-D a is a row [1, K], a 1-D b a column [K, 1]; the added dim
  // is dropped from the result.
  Shape lhs = a.size() == 1 ? Shape{Dim::fixed(1), a[0]} : a;
  Shape rhs = b.size() == 1 ? Shape{b[0], Dim::fixed(1)} : b;
  if (transposeB)
    std::swap(rhs[rhs.size() - 1], rhs[rhs.size() - 2]);
  const Dim &k1 = lhs.back(), &k2 = rhs[rhs.size() - 2];
  if (k1 != k2) {
    problem = "inner dims " + k1.str() + " and " + k2.str() + " differ";
    return std::nullopt;
  }
  Shape lhsBatch(lhs.begin(), lhs.end() - 2),
      rhsBatch(rhs.begin(), rhs.end() - 2);
  std::optional<Shape> result = broadcastShapes(lhsBatch, rhsBatch, problem);
  if (!result) {
    problem = "batch dims: " + problem;
    return std::nullopt;
  }
  if (a.size() > 1)
    result->push_back(lhs[lhs.size() - 2]);
  if (b.size() > 1)
    result->push_back(rhs.back());
  return result;
}

namespace {
/// An element count: a fixed factor times a product of run-time sizes.
struct SymbolicCount {
  int64_t factor = 1;
  std::vector<std::string> symbols; // Sorted.
  bool overflow = false;

  void multiply(const Dim &dim) {
    if (!dim.isFixed()) {
      symbols.insert(
          std::upper_bound(symbols.begin(), symbols.end(), dim.symbol),
          dim.symbol);
    } else if (__builtin_mul_overflow(factor, dim.size, &factor)) {
      overflow = true;
    }
  }
  std::string str() const {
    std::string out = std::to_string(factor);
    for (const std::string &symbol : symbols)
      out += "*" + symbol;
    return out;
  }
};
} // namespace

std::optional<Shape> inferReshape(const Shape &input,
                                  const std::vector<std::optional<Dim>> &target,
                                  std::string &problem) {
  SymbolicCount total, known;
  for (const Dim &dim : input)
    total.multiply(dim);
  std::optional<size_t> inferred;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i])
      known.multiply(*target[i]);
    else
      inferred = i;
  }
  if (total.overflow || known.overflow) {
    problem = "the element count overflows";
    return std::nullopt;
  }
  Shape result;
  for (const std::optional<Dim> &dim : target)
    result.push_back(dim.value_or(Dim::fixed(1)));
  if (!inferred) {
    if (total.factor != known.factor || total.symbols != known.symbols) {
      problem = "the element counts differ (" + total.str() + " vs " +
                known.str() + ")";
      return std::nullopt;
    }
    return result;
  }
  // The -1 takes what is left of the input's count.
  std::vector<std::string> left;
  if (!std::includes(total.symbols.begin(), total.symbols.end(),
                     known.symbols.begin(), known.symbols.end()) ||
      known.factor == 0 || total.factor % known.factor != 0) {
    problem = "-1 cannot make the element counts equal (" + total.str() +
              " vs " + known.str() + " * -1)";
    return std::nullopt;
  }
  std::set_difference(total.symbols.begin(), total.symbols.end(),
                      known.symbols.begin(), known.symbols.end(),
                      std::back_inserter(left));
  int64_t factor = total.factor / known.factor;
  if (left.empty()) {
    result[*inferred] = Dim::fixed(factor);
  } else if (left.size() == 1 && factor == 1) {
    result[*inferred] = Dim::named(left[0]);
  } else {
    SymbolicCount rest{factor, left};
    problem = "-1 would stand for " + rest.str() +
              ", which is not a single dim; write the dims out";
    return std::nullopt;
  }
  return result;
}

} // namespace attnc
