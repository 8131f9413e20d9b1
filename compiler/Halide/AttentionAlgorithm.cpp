//===- AttentionAlgorithm.cpp - attn.attention as a Halide algorithm ------===//
//
// What one fused attention computes, with no scheduling: for each query row,
// its scores against the keys it can see, the masks, and the softmax-weighted
// sum of V, online over tiles of keys (or, for the decode form, the row max
// first), as docs/graph-format.md and compiler/Reference/AttentionReference.cpp
// define it. Halide's dim 0 is the innermost (last graph) dim, so a bhsd
// tensor [B, H, S, D] is indexed (d, s, h, b).
//
//===----------------------------------------------------------------------===//

#include "Halide/AttentionFuncs.h"
#include "Halide/IndexExprs.h"
#include "Support/Exp2Polynomial.h"

#include <cmath>
#include <functional>
#include <limits>

namespace attnc {

using namespace Halide;

namespace semantics = mlir::attn::semantics;

namespace {

/// 2^x for x <= 0 and not NaN, 0 below 2^-127: 2^round(x) times the MLIR
/// kernel's polynomial of the fraction. Halide's exp costs about three
/// times the instructions (both halves of a 512-bit floor, two polynomials,
/// overflow tests) and took 14% of f32 prefill.
Expr exp2Polynomial(Expr x) {
  x = max(x, -127.0f);
  // Adding 1.5 * 2^23 rounds to nearest even and leaves round(x) + 2^22 in
  // the low mantissa bits; strict, so that the sum is not folded away.
  constexpr float kRounder = 12582912.0f;
  Expr rounded = strict_float(x + kRounder);
  Expr fraction = x - strict_float(rounded - kRounder);
  Expr poly = 0.0f;
  for (double coefficient : kExp2RoundedFraction)
    poly = poly * fraction + float(coefficient);
  // 2^round(x) built in the exponent field; unsigned, as Halide treats
  // signed overflow as undefined.
  Expr biasedExponent =
      reinterpret<uint32_t>(rounded) - Expr(uint32_t(0x4B400000 - 127));
  return poly * reinterpret<float>(biasedExponent << Expr(uint32_t(23)));
}

/// The decode form's weights are exp(s - m) / 2^keyShift(T), so that a sum
/// of weights is at most 1 (the accumulator then stays within f32 wherever
/// the output does) and is scaled back exactly for the lse: ceil(log2 T).
Expr keyShift(Expr T) { return 32 - count_leading_zeros(max(T, 1) - 1); }

/// 2^n as f32 for 0 <= n < 128: the exponent field alone.
Expr powerOfTwo(Expr n) {
  return reinterpret<float>(cast<uint32_t>(n + 127) << Expr(uint32_t(23)));
}

/// A row's output from its accumulated P·V and sum, and its lse from its
/// sum and max + log sum: a row with no kept key (sum 0) is exactly 0 and
/// its lse -inf; a row that saw a NaN score has sum NaN, which passes the
/// sum == 0 test and stays NaN. Both strict: under Halide's fast-math (no
/// NaN) LLVM may invert the test into an ordered sum != 0, false for NaN,
/// which made the AVX-512 decode merge write 0 for a NaN row.
Expr normalizedRow(Expr accumulated, Expr sum) {
  return strict_float(select(sum == 0.0f, 0.0f, accumulated / sum));
}
Expr lseRow(Expr sum, Expr logSumExp) {
  Expr negativeInfinity =
      reinterpret<float>(cast<uint32_t>(Expr(int32_t(0xff800000u))));
  return strict_float(select(sum == 0.0f, negativeInfinity,
                             select(is_nan(sum), sum, logSumExp)));
}
/// The output element (d, x, y, b) of rows (d, i, h, b) in the layout: x, y
/// are i, h for bhsd and h, i for bshd.
Expr inLayout(Func rows, bool bshd, Var d, Var x, Var y, Var b) {
  return bshd ? rows(d, y, x, b) : rows(d, x, y, b);
}

/// Scores of dropped keys; any real score is far above it.
constexpr float kDropped = -3.0e38f;
constexpr float kDroppedBelow = -1.0e38f;

/// bf16 0, the partner of a pair's missing half (bf16 products).
Expr bf16Zero() { return Halide::cast(Halide::BFloat(16), 0.0f); }

/// A K or V element as f32 at (head dim, key, kv head, batch).
using Element = std::function<Expr(Expr, Expr, Expr, Expr)>;
/// A softmax weight: exp(s - m) with the chain's shift, 0 for dropped keys.
using Weight = std::function<Expr(Expr s, Expr m)>;
/// A row's max and sum over its visible keys (the lse is max + log sum).
struct RowTotals {
  Expr max, sum;
  /// P·V of keys the accumulator leaves out (the decode form's odd last
  /// key with bf16 pairs), at (d, i, h, b).
  Expr rest = 0.0f;
};

class AlgorithmBuilder {
public:
  AlgorithmBuilder(const KernelPlan &plan, const PlannedKernel &kernel,
                   const AlgorithmOptions &options, AttentionFuncs &f)
      : plan(plan), kernel(kernel), op(*kernel.attention), options(options),
        f(f) {}
  void build();

private:
  void chain(AttentionFuncs::Chain &c);
  RowTotals wholeRows(AttentionFuncs::Chain &c, const Weight &weight,
                      const Element &value, const Element &rawValue,
                      Expr kvHead, Expr T);
  RowTotals onlineRows(AttentionFuncs::Chain &c, const Weight &weight,
                       const Element &value, const Element &rawValue,
                       Expr kvHead, Expr T);
  const KernelPlan &plan;
  const PlannedKernel &kernel;
  const AttentionPlan &op;
  const AlgorithmOptions &options;
  AttentionFuncs &f;

  ImageParam param(int value) { return f.params.of(plan, value); }

  /// A float tensor (or i1 mask) read as if broadcast to [B, Hq, S, T].
  Expr broadcast4D(int value, const Expr &bb, const Expr &hh, const Expr &ii,
                   const Expr &jj) {
    ImageParam image = param(value);
    const Shape &shape = plan.values[value].shape;
    int rank = int(shape.size());
    Expr coordinates[4] = {bb, hh, ii, jj};
    std::vector<Expr> args;
    for (int n = 0; n < rank; ++n) {
      int graphDim = rank - 1 - n;
      args.push_back(shape[graphDim].isOne()
                         ? Expr(0)
                         : coordinates[4 - rank + graphDim]);
    }
    return image(args);
  }

  Expr f32(Expr e) { return cast<float>(e); }

  /// The head dim of a V read. Schedules round depth loops up to whole
  /// vectors (at most 16 f32 lanes), which may reach past Dv; a clamp keeps
  /// those reads in the buffer but turns vector loads into gathers, so it is
  /// left out where Dv is a fixed multiple of 16 and the schedule keeps to
  /// whole vectors that divide it (options.depthInWholeVectors).
  Expr valueDepth(Expr d, Expr Dv) {
    const Dim &depth = plan.values[op.value].shape.back();
    if (options.depthInWholeVectors && depth.isFixed() &&
        depth.size % 16 == 0) {
      f.exactValueDepth = depth.size;
      return d;
    }
    return clamp(d, 0, Dv - 1);
  }

  /// The op's key visibility for Halide's int32 sizes (S, T < 2^31): window
  /// bounds beyond 2^32 clamped, so bounds inference sees small intervals.
  semantics::KeyVisibility visibility() const {
    return op.visibility.withBoundLimit(int64_t(1) << 32);
  }

  /// The keys some query of the crop can see: [0, T) narrowed by causal,
  /// the window and the key length of the crop's batch. Bounds in int64, as
  /// a window may be as wide as int32 allows; an empty range is a row of
  /// fully masked queries (sum 0: output 0, lse -inf).
  RDom keysOfCrop(Expr T, Expr S) {
    IndexExprs a;
    Expr first = semantics::alignedPosition(a, cast<int64_t>(f.queryFirst),
                                            cast<int64_t>(S), cast<int64_t>(T));
    Expr last = first + cast<int64_t>(f.queryCount) - 1;
    // RDom bounds cannot read a buffer: NAME_entry reads the key length and
    // passes it. (An RDom::where predicate reading it instead made Halide 14
    // size a tile for no keys and then write a rounded-up block into it.)
    std::optional<Expr> keyLength;
    if (op.visibility.keyLength)
      keyLength = cast<int64_t>(f.keyLimit);
    semantics::KeyRange<Expr> range = semantics::visibleKeys(
        a, visibility(), first, last, cast<int64_t>(T), keyLength);
    Expr lo = clamp(range.first, cast<int64_t>(0), cast<int64_t>(T));
    Expr hi = range.last;
    hi = clamp(hi, lo, cast<int64_t>(T));
    if (f.decode) {
      // Part keyPart of keyParts: equal shares in whole 16 keys (pairs stay
      // whole but in the last part), the last parts empty when few.
      Expr parts = cast<int64_t>(max(f.keyParts, 1));
      Expr share = ((hi - lo + parts - 1) / parts + 15) / 16 * 16;
      Expr first = min(lo + cast<int64_t>(max(f.keyPart, 0)) * share, hi);
      hi = min(first + share, hi);
      lo = first;
    }
    return RDom(cast<int32_t>(lo), cast<int32_t>(hi - lo), "rj");
  }
};

/// The results of `op` the graph returns or another kernel reads (then an
/// intermediate buffer), output first.
std::vector<int> usedResults(const KernelPlan &plan, const AttentionPlan &op) {
  auto used = [&](int result) {
    if (result < 0)
      return false;
    if (plan.values[result].output >= 0)
      return true;
    for (const PlannedKernel &other : plan.kernels)
      for (int operand : other.operands)
        if (operand == result)
          return true;
    return false;
  };
  std::vector<int> results;
  for (int result : {op.output, op.lse})
    if (used(result))
      results.push_back(result);
  return results;
}

void AlgorithmBuilder::build() {
  std::vector<int> results = usedResults(plan, op);
  // The decode form has one chain: its partial rows hold what the output
  // and the lse need (without the output, an lse chain: no P·V).
  if (f.decode && !results.empty())
    results = {results.front()};
  for (int result : results) {
    AttentionFuncs::Chain c;
    c.isLse = f.decode ? result != op.output : result == op.lse;
    std::string suffix = c.isLse ? "_lse" : "";
    for (auto [func, name] :
         std::initializer_list<std::pair<Func *, const char *>>{
             {&c.queryRows, "query_rows"},
             {&c.queryNorm, "query_norm"},
             {&c.queryProjection, "query_projection"},
             {&c.keyNorm, "key_norm"},
             {&c.keyProjection, "key_projection"},
             {&c.keyRows, "key_rows"},
             {&c.valueRows, "value_rows"},
             {&c.product, "product"},
             {&c.scores, "scores"},
             {&c.masked, "masked"},
             {&c.rowMax, "row_max"},
             {&c.probabilities, "probabilities"},
             {&c.rowSum, "row_sum"},
             {&c.tileScores, "tile_scores"},
             {&c.tileMax, "tile_max"},
             {&c.tileSum, "tile_sum"},
             {&c.tileValues, "tile_values"},
             {&c.online, "online"},
             {&c.accumulator, "accumulator"},
             {&c.normalized, "normalized"},
             {&c.result, c.isLse ? "lse" : "output"}})
      *func = Func(std::string(name) + suffix);
    chain(c);
    f.chains.push_back(c);
    if (!f.decode)
      f.resultValues.push_back(result);
  }
}

void AlgorithmBuilder::chain(AttentionFuncs::Chain &c) {
  f.bshd = op.layout == Layout::BSHD;
  f.score = op.score;
  Var d = f.d, i = f.i, j = f.j, a = f.a, h = f.h, g = f.g, b = f.b;

  ImageParam q = param(op.query), k = param(op.key), v = param(op.value);
  // Sizes from the buffers: run-time dims are buffer extents.
  // Halide numbers dims innermost first: graph axis n is Halide dim 3 - n.
  semantics::LayoutAxes axes = semantics::layoutAxes(!f.bshd);
  int headDim = 3 - axes.heads, positionDim = 3 - axes.length;
  Expr Hq = q.dim(headDim).extent(), Hkv = k.dim(headDim).extent();
  Expr S = q.dim(positionDim).extent(), T = k.dim(positionDim).extent();
  Expr Dk = q.dim(0).extent(), Dv = v.dim(0).extent();
  Expr B = q.dim(3).extent();
  // Clamped coordinates: tiles may round past the last query or key, and an
  // autoscheduler's tiles of fused loops past any dim (a shifted tail of
  // (i, j, h, b) fused reaches the previous batch); what is computed there
  // is never stored.
  auto clampQ = [&](Expr e) { return clamp(e, 0, S - 1); };
  auto clampK = [&](Expr e) { return clamp(e, 0, T - 1); };
  auto clampD = [&](Expr e) { return clamp(e, 0, Dk - 1); };
  auto clampH = [&](Expr e) { return clamp(e, 0, Hq - 1); };
  auto clampG = [&](Expr e) { return clamp(e, 0, Hkv - 1); };
  auto clampB = [&](Expr e) { return clamp(e, 0, B - 1); };
  auto at = [&](ImageParam &t, Expr dd, Expr pos, Expr head, Expr bb) {
    return f.bshd ? t(dd, head, pos, bb) : t(dd, pos, head, bb);
  };
  IndexExprs arith{false};
  // A decode crop's heads share one kv head, passed: computed per head, the
  // K and V rows of a block of heads look distinct to Halide and are read
  // once per head.
  Expr kvHead = f.decode ? clamp(Expr(f.kvHeadOfCrop), 0, Hkv - 1)
                         : clamp(semantics::kvHeadOf(arith, Expr(h), Hq, Hkv),
                                 0, Hkv - 1);
  c.overDepth = RDom(0, Dk, "rd");
  c.overKeys = keysOfCrop(T, S);
  RVar rd = c.overDepth.x;

  auto query = [&](Expr dd, Expr ii, Expr hh, Expr bb) {
    return f32(at(q, clampD(dd), clampQ(ii), clampH(hh), clampB(bb)));
  };
  // K and V elements as f32; 16-bit ones through Funcs of their own
  // (AttentionFuncs::Chain::keyRows, valueRows).
  Element key = [&](Expr dd, Expr jj, Expr gg, Expr bb) {
    return f32(at(k, dd, clampK(jj), clampG(gg), clampB(bb)));
  };
  Element value = [&](Expr dd, Expr jj, Expr gg, Expr bb) {
    return f32(at(v, valueDepth(dd, Dv), jj, gg, clampB(bb)));
  };
  // bf16 products read q and k as they are, in pairs of depths.
  bool pairs = options.bf16Products && op.score == ScoreKind::Dot &&
               plan.values[op.query].dtype == DType::BF16 &&
               plan.values[op.key].dtype == DType::BF16;
  if (pairs) {
    // Raw bf16 rows, so that the schedule can copy a block's keys together.
    c.keyRows(d, j, g, b) = at(k, d, clampK(j), clampG(g), clampB(b));
  } else {
    c.keyRows(d, j, g, b) = key(d, j, g, b);
    key = [&](Expr dd, Expr jj, Expr gg, Expr bb) {
      return c.keyRows(dd, jj, gg, bb);
    };
  }
  // P·V too when v is bf16: the weights rounded to bf16, as the MLIR
  // kernel's bf16 path does.
  bool valuePairs = pairs && plan.values[op.value].dtype == DType::BF16;
  Element rawValue;
  if (valuePairs)
    rawValue = [&](Expr dd, Expr jj, Expr gg, Expr bb) {
      return at(v, valueDepth(dd, Dv), jj, gg, clampB(bb));
    };
  // The decode form defines them for f32 V too, to copy a chunk's rows.
  if ((plan.values[op.value].dtype != DType::F32 || f.decode) && !valuePairs) {
    c.valueRows(d, j, g, b) = value(d, j, g, b);
    value = [&](Expr dd, Expr jj, Expr gg, Expr bb) {
      return c.valueRows(dd, jj, gg, bb);
    };
  }

  // Raw scores: product(i, j, h, b), i innermost so that a vector of
  // queries meets one broadcast key element.
  Expr raw;
  switch (op.score) {
  case ScoreKind::Dot:
  case ScoreKind::Cosine:
    if (!pairs)
      c.queryRows(i, d, h, b) = query(d, i, h, b);
    break;
  case ScoreKind::General: {
    // qᵀW: W is [Dk, Dk] row-major, so W[d][e] is (e, d) here.
    ImageParam w = param(op.generalWeight);
    c.queryRows(i, d, h, b) = 0.0f;
    c.queryRows(i, d, h, b) += query(rd, i, h, b) * f32(w(clampD(d), rd));
    break;
  }
  case ScoreKind::Additive:
    break;
  }
  if (pairs) {
    // Both halves of a pair exact bf16 (0 past Dk, never the next row's
    // first element), multiplied pairwise and summed in f32.
    // Rows: a vector of queries' pairs (pair, i, m, h, b); decode: a
    // query's pairs in a vector, as q lies (pair, m, i, h, b).
    Var pair("pair"), m("m");
    Expr zero = bf16Zero();
    Expr depth = 2 * m + pair;
    Expr queryPair =
        select(depth < Dk,
               at(q, clampD(depth), clampQ(i), clampH(h), clampB(b)), zero);
    auto queryPairAt = [&](Expr p, Expr ii, Expr mm) {
      return f.decode ? c.queryPairs(p, mm, ii, h, b)
                      : c.queryPairs(p, ii, mm, h, b);
    };
    if (f.decode)
      c.queryPairs(pair, m, i, h, b) = queryPair;
    else
      c.queryPairs(pair, i, m, h, b) = queryPair;
    c.overDepthPairs = RDom(0, 2, 0, (Dk + 1) / 2, "rp");
    RVar rp = c.overDepthPairs.x, rm = c.overDepthPairs.y;
    Expr keyDepth = 2 * rm + rp;
    // A fixed even Dk has no odd last depth: no test in the inner loop.
    const Dim &depthDim = plan.values[op.key].shape.back();
    bool evenDepth = depthDim.isFixed() && depthDim.size % 2 == 0;
    Expr keyPair =
        evenDepth
            ? c.keyRows(keyDepth, j, kvHead, b)
            : select(keyDepth < Dk,
                     c.keyRows(min(keyDepth, Dk - 1), j, kvHead, b), zero);
    c.product(i, j, h, b) = 0.0f;
    c.product(i, j, h, b) += f32(queryPairAt(rp, i, rm)) * f32(keyPair);
    raw = c.product(i, j, h, b);
  } else if (op.score != ScoreKind::Additive) {
    c.product(i, j, h, b) = 0.0f;
    c.product(i, j, h, b) +=
        c.queryRows(i, rd, h, b) * key(rd, j, kvHead, b);
    raw = c.product(i, j, h, b);
  }
  if (op.score == ScoreKind::Cosine) {
    c.queryNorm(i, h, b) = 0.0f;
    c.queryNorm(i, h, b) += query(rd, i, h, b) * query(rd, i, h, b);
    c.keyNorm(j, g, b) = 0.0f;
    c.keyNorm(j, g, b) += key(rd, j, g, b) * key(rd, j, g, b);
    raw = raw / (max(sqrt(c.queryNorm(i, h, b)), 1e-12f) *
                 max(sqrt(c.keyNorm(j, kvHead, b)), 1e-12f));
  }
  if (op.score == ScoreKind::Additive) {
    // vaᵀ tanh(Wq q + Wk k); Wq, Wk are [A, Dk], so (d, a) here.
    ImageParam wq = param(op.queryWeight), wk = param(op.keyWeight);
    ImageParam va = param(op.scoreVector);
    Expr units = wq.dim(1).extent();
    c.overUnits = RDom(0, units, "ra");
    RVar ra = c.overUnits.x;
    c.queryProjection(i, a, h, b) = 0.0f;
    // Unit tiles may round past A; clamped like the positions.
    Expr unit = clamp(a, 0, units - 1);
    c.queryProjection(i, a, h, b) += f32(wq(rd, unit)) * query(rd, i, h, b);
    c.keyProjection(a, j, g, b) = 0.0f;
    c.keyProjection(a, j, g, b) += f32(wk(rd, unit)) * key(rd, j, g, b);
    Expr vaAt = va.dimensions() == 2 ? va(0, ra) : va(ra);
    c.product(i, j, h, b) = 0.0f;
    c.product(i, j, h, b) +=
        f32(vaAt) * tanh(c.queryProjection(i, ra, h, b) +
                         c.keyProjection(ra, j, kvHead, b));
    raw = c.product(i, j, h, b);
  }

  const Dim &keyDim = plan.values[op.query].shape.back();
  Expr scale = !op.scale.overSqrtKeyDim || keyDim.isFixed()
                   ? Expr(float(op.scale.at(keyDim.isFixed() ? keyDim.size : 1)))
                   : float(op.scale.factor) / sqrt(cast<float>(Dk));
  Expr score = raw * scale;
  if (op.softcap) {
    float c = float(*op.softcap);
    score = c * tanh(score / c);
  }
  Expr aligned = semantics::alignedPosition(arith, Expr(i), S, T);
  Expr ci = clampQ(i), cj = clampK(j), ch = clampH(h), cb = clampB(b);
  for (int bias : op.biases)
    score += f32(broadcast4D(bias, cb, ch, ci, cj));
  if (op.alibi) {
    Expr slope;
    if (op.alibiSlopes >= 0) {
      slope = f32(param(op.alibiSlopes)(clamp(h, 0, Hq - 1)));
    } else {
      // The standard slopes, n the largest power of two <= Hq.
      Expr n = 1 << (31 - count_leading_zeros(max(Hq, 1)));
      IndexExprs int32{false};
      semantics::SlopeFraction<Expr> fraction =
          semantics::alibiSlopeFraction(int32, Expr(h), n);
      slope = pow(2.0f, -8.0f * cast<float>(fraction.numerator) /
                            cast<float>(fraction.denominator));
    }
    score -= slope * cast<float>(abs(aligned - j));
  }

  Expr keep = Internal::const_true();
  if (op.visibility.narrowsKeys()) {
    // Per element: int32 (vector compares twice as wide) unless a window
    // bound is part of the sums.
    semantics::KeyVisibility rule = visibility();
    IndexExprs a{rule.windowLeft.has_value()};
    std::optional<Expr> keyLength;
    if (rule.keyLength)
      keyLength = a.index(param(op.keyLengths)(cb));
    Expr position = semantics::alignedPosition(a, a.index(i), a.index(S),
                                               a.index(T));
    keep = semantics::keyVisible(a, rule, position, a.index(j), a.index(T),
                                 keyLength);
  }
  for (size_t n = 0; n < op.masks.size(); ++n) {
    Expr set = broadcast4D(op.masks[n], cb, ch, ci, cj) != 0;
    keep = keep && (op.maskDrops[n] ? !set : set);
  }
  // The masks apply after the scores, not inside them: Halide narrows what
  // a select's true branch needs to where its condition holds, which would
  // cut the register blocks of Q·Kᵀ into guarded pieces along a causal
  // diagonal. Unmasked scores keep the blocks dense; `masked` is inlined.
  c.scores(i, j, h, b) = score;
  c.masked(i, j, h, b) = select(keep, c.scores(i, j, h, b), kDropped);

  // IEEE propagation: a NaN score, a NaN max or +inf against a +inf max
  // makes s - m NaN, and its weight NaN, so the row's output is NaN. The
  // exp2's clamp does not keep NaN, hence the explicit test, and Halide
  // marks float arithmetic fast-math (no NaN), hence strict_float for it.
  // Shifted by log T as well, so that sum p <= 1: the accumulator, a sum of
  // p·v, then stays within f32 wherever the output does (with exp(s - m)
  // alone it reaches T·max |v|).
  // The lse chain has no accumulator and keeps exp(s - m) unshifted: with
  // the shift, a row of one key read m + log T + log(1/T), off by a rounding
  // of log T, which is all of an lse near 0.
  // The decode form shifts by a power of two (keyShift) instead, which its
  // merge takes back exactly for the lse.
  Expr logKeys = c.isLse || f.decode ? Expr(0.0f) : log(cast<float>(max(T, 1)));
  auto weight = [&](Expr s, Expr m) {
    Expr shifted = strict_float(s - (m + logKeys));
    Expr exponent = shifted * float(M_LOG2E);
    if (f.decode)
      exponent -= cast<float>(keyShift(T));
    return select(is_nan(shifted), shifted,
                  select(s > kDroppedBelow, exp2Polynomial(exponent), 0.0f));
  };
  RowTotals totals = options.decode
                         ? wholeRows(c, weight, value, rawValue, kvHead, T)
                         : onlineRows(c, weight, value, rawValue, kvHead, T);
  Expr sum = totals.sum;
  if (f.decode) {
    // The part's partial rows, unnormalised (e, i, h, b, p): the merge
    // divides.
    Var e = f.d, p = f.p;
    if (!c.isLse)
      c.normalized(d, i, h, b) = c.accumulator(d, i, h, b) + totals.rest;
    Expr rows = c.isLse ? Expr(0.0f) : c.normalized(min(e, Dv - 1), i, h, b);
    c.result(e, i, h, b, p) =
        select(e < Dv, rows, e == Dv, totals.max, totals.sum);
    return;
  }
  Var x = f.x, y = f.y;
  if (!c.isLse) {
    c.normalized(d, i, h, b) =
        normalizedRow(c.accumulator(d, i, h, b) + totals.rest, sum);
    c.result(d, x, y, b) = cast(halideType(plan.values[op.output].dtype),
                                inLayout(c.normalized, f.bshd, d, x, y, b));
  } else {
    c.result(i, h, b) = lseRow(sum, totals.max + logKeys + log(sum));
  }
}

/// The decode form's softmax: the row max over every visible key, then the
/// weights, their sum and P·V against it (the schedule keeps the crop's
/// scores, keys in the lanes). With `rawValue` (bf16 products), P·V runs
/// over whole pairs of keys, the weights rounded to bf16 as the rows form
/// does, and an odd last key on its own in f32.
RowTotals AlgorithmBuilder::wholeRows(AttentionFuncs::Chain &c,
                                      const Weight &weight,
                                      const Element &value,
                                      const Element &rawValue, Expr kvHead,
                                      Expr T) {
  Var d = f.d, i = f.i, j = f.j, h = f.h, b = f.b;
  RVar rj = c.overKeys.x;
  c.rowMax(i, h, b) = kDropped;
  c.rowMax(i, h, b) = max(c.rowMax(i, h, b), c.masked(i, rj, h, b));
  c.probabilities(i, j, h, b) = weight(c.masked(i, j, h, b), c.rowMax(i, h, b));
  c.rowSum(i, h, b) = 0.0f;
  c.rowSum(i, h, b) += c.probabilities(i, rj, h, b);
  if (c.isLse)
    return {c.rowMax(i, h, b), c.rowSum(i, h, b)};
  c.accumulator(d, i, h, b) = 0.0f;
  if (!rawValue) {
    c.accumulator(d, i, h, b) +=
        c.probabilities(i, rj, h, b) * value(d, rj, kvHead, b);
    return {c.rowMax(i, h, b), c.rowSum(i, h, b)};
  }
  // Each pair a select between its two keys, as in onlineRows: an
  // interleave of two whole V rows.
  Var pair("pair"), m("m");
  Expr first = rj.min(), count = rj.extent();
  auto pairOf = [&](const std::function<Expr(Expr)> &ofKey) {
    return select(pair == 0, ofKey(first + 2 * m), ofKey(first + 2 * m + 1));
  };
  c.probabilityPairs(pair, m, i, h, b) = pairOf([&](Expr key) {
    return Halide::cast(Halide::BFloat(16), c.probabilities(i, key, h, b));
  });
  c.valuePairs(pair, d, m, b) =
      pairOf([&](Expr key) { return rawValue(d, key, kvHead, b); });
  c.overKeyPairs = RDom(0, 2, 0, count / 2, "rq");
  RVar rq = c.overKeyPairs.x, rn = c.overKeyPairs.y;
  c.accumulator(d, i, h, b) += f32(c.probabilityPairs(rq, rn, i, h, b)) *
                               f32(c.valuePairs(rq, d, rn, b));
  Expr last = clamp(first + count - 1, 0, T - 1);
  Expr oddLast =
      select(count % 2 == 1,
             c.probabilities(i, last, h, b) * value(d, last, kvHead, b), 0.0f);
  return {c.rowMax(i, h, b), c.rowSum(i, h, b), oddLast};
}

/// Online softmax over tiles of keyTile keys: each tile's max, weights
/// (against that max), sum and P·V, folded into a running max, sum and
/// output, rescaled whenever the max grows. The running values are one
/// Tuple Func updated over the tiles, so the schedule computes a tile's
/// scores inside that loop and keeps only queryTile × keyTile of them.
/// Against its own tile's max rather than the running one, a tile's
/// weights need not wait for the fold (a Func cannot read the update it
/// feeds); the fold then scales both sides, by one exp2.
RowTotals AlgorithmBuilder::onlineRows(AttentionFuncs::Chain &c,
                                       const Weight &weight,
                                       const Element &value,
                                       const Element &rawValue, Expr kvHead,
                                       Expr T) {
  Var d = f.d, i = f.i, h = f.h, b = f.b, t = f.t, u = f.u;
  const int tile = int(options.keyTile);
  Expr first = c.overKeys.x.min(), count = c.overKeys.x.extent();
  c.overTiles = RDom(0, (count + (tile - 1)) / tile, "rt");
  // The last tile stops at the crop's last visible key: Halide narrows the
  // tile's loops to the predicate, and the keys' reads to the clamp below,
  // so a causal diagonal computes no scores past it.
  c.overTileKeys = RDom(0, tile, "ru");
  c.overTileKeys.where(c.overTileKeys.x + t * tile < count);
  RVar rt = c.overTiles.x, ru = c.overTileKeys.x;
  // Key u of tile t, clamped to the last visible key (a key of the last
  // tile past it is dropped), and into [0, T): a crop with no visible key
  // has no tiles, but Halide still bounds the reads of its empty loops.
  auto key = [&](Expr u, Expr t) {
    return clamp(min(first + t * tile + u, first + count - 1), 0, T - 1);
  };
  c.tileScores(i, u, t, h, b) =
      select(u + t * tile < count, c.masked(i, key(u, t), h, b), kDropped);
  c.tileMax(i, t, h, b) = kDropped;
  c.tileMax(i, t, h, b) =
      max(c.tileMax(i, t, h, b), c.tileScores(i, ru, t, h, b));
  c.probabilities(i, u, t, h, b) =
      weight(c.tileScores(i, u, t, h, b), c.tileMax(i, t, h, b));
  c.tileSum(i, t, h, b) = 0.0f;
  c.tileSum(i, t, h, b) += c.probabilities(i, ru, t, h, b);

  // Folding tile rt in: of the running max m and the tile's max, the
  // smaller one's side is scaled by exp(smaller - larger), the other by 1.
  Expr tileMax = c.tileMax(i, rt, h, b);
  auto fold = [&](Expr running, Expr runningSide, Expr tileSide) {
    Expr runningLarger = running >= tileMax;
    Expr scale =
        exp2Polynomial(strict_float(-abs(running - tileMax)) * float(M_LOG2E));
    return strict_float(runningSide * select(runningLarger, 1.0f, scale) +
                        tileSide * select(runningLarger, scale, 1.0f));
  };
  Expr tileSum = c.tileSum(i, rt, h, b);
  if (c.isLse) {
    c.online(i, h, b) = Tuple(Expr(kDropped), 0.0f);
    Expr m = c.online(i, h, b)[0], l = c.online(i, h, b)[1];
    c.online(i, h, b) = Tuple(max(m, tileMax), fold(m, l, tileSum));
    return {c.online(i, h, b)[0], c.online(i, h, b)[1]};
  }
  c.tileValues(d, i, t, h, b) = 0.0f;
  if (rawValue) {
    // Pairs of the tile's keys; a pair's missing second key (past the tile
    // or the crop's keys) is 0 on both sides, never a clamped key's V.
    // Each pair is written as a select between its two keys, each indexed
    // by a key alone: Halide makes that an interleave of two whole rows,
    // where an index affine in the pair lane became one load per element
    // (13% of bf16 prefill).
    Var pair("pair"), m("m");
    Expr zero = bf16Zero();
    auto pairOf = [&](const std::function<Expr(Expr)> &ofKey) {
      auto kept = [&](Expr u) {
        return select(u < tile && u + t * tile < count, ofKey(u), zero);
      };
      return select(pair == 0, kept(2 * m), kept(2 * m + 1));
    };
    c.probabilityPairs(pair, i, m, t, h, b) = pairOf([&](Expr u) {
      return Halide::cast(Halide::BFloat(16), c.probabilities(i, u, t, h, b));
    });
    c.valueTileRows(d, u, t, h, b) = rawValue(d, key(u, t), kvHead, b);
    c.valuePairs(pair, d, m, t, h, b) =
        pairOf([&](Expr u) { return c.valueTileRows(d, u, t, h, b); });
    c.overTilePairs = RDom(0, 2, 0, (tile + 1) / 2, "rq");
    RVar rq = c.overTilePairs.x, rn = c.overTilePairs.y;
    c.tileValues(d, i, t, h, b) += f32(c.probabilityPairs(rq, i, rn, t, h, b)) *
                                   f32(c.valuePairs(rq, d, rn, t, h, b));
  } else {
    c.tileValues(d, i, t, h, b) +=
        c.probabilities(i, ru, t, h, b) * value(d, key(ru, t), kvHead, b);
  }
  // The running max and sum ride along every head-dim element of the
  // output, so that one update carries all three.
  c.online(d, i, h, b) = Tuple(0.0f, Expr(kDropped), 0.0f);
  Expr o = c.online(d, i, h, b)[0], m = c.online(d, i, h, b)[1],
       l = c.online(d, i, h, b)[2];
  c.online(d, i, h, b) = Tuple(fold(m, o, c.tileValues(d, i, rt, h, b)),
                               max(m, tileMax), fold(m, l, tileSum));
  c.accumulator(d, i, h, b) = c.online(d, i, h, b)[0];
  return {c.online(d, i, h, b)[1], c.online(d, i, h, b)[2]};
}

} // namespace

MergeFuncs defineMerge(const KernelPlan &plan, const PlannedKernel &kernel) {
  const AttentionPlan &op = *kernel.attention;
  MergeFuncs m;
  Var d = m.d, i = m.i, h = m.h, b = m.b, x = m.x, y = m.y, p("p");
  ImageParam &partials = m.partials;
  Expr Dv = partials.dim(0).extent() - kPartialSlots;
  RDom parts(partials.dim(4).min(), partials.dim(4).extent(), "rp");
  // Each part weighs exp(m_p - max m), 1 for the largest; a part that saw
  // no key (its m the dropped score, its sums 0) adds nothing, and NaN
  // stays NaN, as in one part.
  m.rowMax(i, h, b) = kDropped;
  m.rowMax(i, h, b) = max(m.rowMax(i, h, b), partials(Dv, i, h, b, parts));
  Expr gap = strict_float(partials(Dv, i, h, b, p) - m.rowMax(i, h, b));
  m.weights(i, h, b, p) =
      select(is_nan(gap), gap, exp2Polynomial(gap * float(M_LOG2E)));
  m.rowSum(i, h, b) = 0.0f;
  m.rowSum(i, h, b) +=
      m.weights(i, h, b, parts) * partials(Dv + 1, i, h, b, parts);
  Expr sum = m.rowSum(i, h, b);
  bool bshd = op.layout == Layout::BSHD;
  for (int value : usedResults(plan, op)) {
    Func result(value == op.lse ? "lse" : "output");
    if (value == op.output) {
      m.merged(d, i, h, b) = 0.0f;
      m.merged(d, i, h, b) +=
          m.weights(i, h, b, parts) * partials(d, i, h, b, parts);
      m.normalized(d, i, h, b) = normalizedRow(m.merged(d, i, h, b), sum);
      result(d, x, y, b) = cast(halideType(plan.values[value].dtype),
                                inLayout(m.normalized, bshd, d, x, y, b));
    } else {
      // The sum times 2^keyShift(T) is exact: the lse of one key is its
      // score.
      Expr unshifted = sum * powerOfTwo(keyShift(m.keys));
      result(i, h, b) = lseRow(sum, m.rowMax(i, h, b) + log(unshifted));
    }
    m.results.push_back(result);
    m.resultValues.push_back(value);
  }
  return m;
}

AttentionFuncs defineAttention(const KernelPlan &plan,
                               const PlannedKernel &kernel,
                               const AlgorithmOptions &options) {
  AttentionFuncs funcs;
  funcs.decode = options.decode;
  AlgorithmBuilder(plan, kernel, options, funcs).build();
  return funcs;
}

} // namespace attnc
