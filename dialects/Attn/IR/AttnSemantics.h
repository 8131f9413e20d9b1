//===- AttnSemantics.h - What one attention op means -------------*- C++ -*-===//
//
// The rules of `attn.attention` that every implementation must agree on,
// written once: the default scale, the keys a query row may see under the
// causal, window and key_length masks, the layout axes, and which kv head a
// query head reads. The float64 reference, the kernel plan, the MLIR kernel
// and the Halide algorithm all evaluate these same functions, each in its
// own arithmetic (int64_t, MLIR index/vector values, Halide expressions).
//
// The header is plain C++ with no MLIR or LLVM include, so that code built
// against Halide's LLVM can include it too.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_IR_ATTNSEMANTICS_H
#define ATTN_IR_ATTNSEMANTICS_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

namespace mlir::attn::semantics {

//===----------------------------------------------------------------------===//
// Scale
//===----------------------------------------------------------------------===//

/// The multiplier of the raw scores: `factor`, divided by sqrt(Dk) when
/// `overSqrtKeyDim`. Dk may be a run-time size, so the rule is kept apart
/// from its value.
struct ScaleRule {
  double factor = 1.0;
  bool overSqrtKeyDim = false;

  double at(int64_t keyDim) const {
    return overSqrtKeyDim ? factor / std::sqrt(double(keyDim)) : factor;
  }
};

/// The given scale, or the default: 1/sqrt(Dk) for scores that are products
/// of q and k (dot, general), 1 for additive and cosine scores.
inline ScaleRule scaleRule(std::optional<double> given,
                           bool scoreIsProduct) {
  if (given)
    return {*given, false};
  return {1.0, scoreIsProduct};
}

//===----------------------------------------------------------------------===//
// Layout and heads
//===----------------------------------------------------------------------===//

/// The axes of q, k, v and the output: [B, H, L, D] (bhsd) or [B, L, H, D]
/// (bshd). The depth axis is last in both.
struct LayoutAxes {
  int batch = 0, heads = 1, length = 2, depth = 3;
};
inline LayoutAxes layoutAxes(bool bhsd) {
  return bhsd ? LayoutAxes{0, 1, 2, 3} : LayoutAxes{0, 2, 1, 3};
}

/// G = Hq / Hkv query heads share each kv head (GQA; MQA when Hkv = 1).
template <typename Arith, typename V>
V groupSize(Arith &a, V queryHeads, V kvHeads) {
  return a.div(queryHeads, kvHeads);
}

/// Query head h reads kv head h / G: kv head k serves query heads
/// [k·G, (k + 1)·G).
template <typename Arith, typename V>
V kvHeadOf(Arith &a, V queryHead, V queryHeads, V kvHeads) {
  return a.div(queryHead, groupSize(a, queryHeads, kvHeads));
}

//===----------------------------------------------------------------------===//
// Which keys a query row sees
//===----------------------------------------------------------------------===//

/// Window bounds at or above this see every key: query i of S and key j of
/// T are aligned at the bottom right, p = i + T - S, so 1 - S <= p - j <=
/// T - 1, and S, T < 2^62 for any tensor the runtime accepts (2^62 rows of
/// at least 2-byte elements overflow its int64 byte count). With L and R
/// clamped here, p - L and p + R + 1 stay inside int64 for every bound.
constexpr int64_t kUnboundedWindow = int64_t(1) << 62;

/// The position masks of an attention op. Tensor masks are per element and
/// are not part of it.
struct KeyVisibility {
  bool causal = false;
  std::optional<int64_t> windowLeft, windowRight; ///< Clamped, >= 0.
  bool keyLength = false; ///< Keys j >= key_lengths[b] are dropped.

  /// Adds a window mask: several windows intersect, so the narrowest bound
  /// on each side holds.
  void addWindow(int64_t left, int64_t right) {
    left = std::clamp<int64_t>(left, 0, kUnboundedWindow);
    right = std::clamp<int64_t>(right, 0, kUnboundedWindow);
    windowLeft = std::min(windowLeft.value_or(left), left);
    windowRight = std::min(windowRight.value_or(right), right);
  }

  /// The same rule with window bounds clamped to `limit`, for a backend
  /// whose sizes are all below limit / 2 (then a bound >= limit still sees
  /// every key, and its bounds arithmetic stays small).
  KeyVisibility withBoundLimit(int64_t limit) const {
    KeyVisibility rule = *this;
    if (windowLeft)
      rule.windowLeft = std::min(*windowLeft, limit);
    if (windowRight)
      rule.windowRight = std::min(*windowRight, limit);
    return rule;
  }

  bool hasPositionMask() const { return causal || windowLeft || windowRight; }
  bool narrowsKeys() const { return hasPositionMask() || keyLength; }
};

inline KeyVisibility keyVisibility(bool causal,
                                   std::optional<int64_t> windowLeft,
                                   std::optional<int64_t> windowRight,
                                   bool keyLength) {
  KeyVisibility rule;
  rule.causal = causal;
  rule.keyLength = keyLength;
  if (windowLeft || windowRight)
    rule.addWindow(windowLeft.value_or(kUnboundedWindow),
                   windowRight.value_or(kUnboundedWindow));
  return rule;
}

/// The aligned position of query i: p = i + T - S.
template <typename Arith, typename V>
V alignedPosition(Arith &a, V query, V queryLen, V keyLen) {
  return a.add(query, a.sub(keyLen, queryLen));
}

/// Packed rows: a backend may give one tile the G query heads of a kv head
/// (decoding, S = 1, then fills a tile instead of one row of it, and K and V
/// are read once for the group). Row R in [0, G·S) of kv head k is query
/// R mod S of query head k·G + R / S.
template <typename Arith, typename V>
V packedQueryHead(Arith &a, V kvHead, V group, V row, V queryLen) {
  return a.add(a.mul(kvHead, group), a.div(row, queryLen));
}
template <typename Arith, typename V>
V packedQuery(Arith &a, V row, V queryLen) {
  return a.rem(row, queryLen);
}
/// The packed row of query i of query head h: (h mod G)·S + i.
template <typename Arith, typename V>
V packedRow(Arith &a, V queryHead, V group, V query, V queryLen) {
  return a.add(a.mul(a.rem(queryHead, group), queryLen), query);
}

/// The aligned positions packed rows [firstRow, lastRow] span: their own
/// range when they are queries of one head, every query's when they
/// straddle two.
template <typename Arith, typename V>
std::pair<V, V> packedPositions(Arith &a, V firstRow, V lastRow, V queryLen,
                                V keyLen) {
  auto oneHead = a.eq(a.div(firstRow, queryLen), a.div(lastRow, queryLen));
  V first =
      a.select(oneHead, packedQuery(a, firstRow, queryLen), a.constant(0));
  V last = a.select(oneHead, packedQuery(a, lastRow, queryLen),
                    a.sub(queryLen, a.constant(1)));
  return {alignedPosition(a, first, queryLen, keyLen),
          alignedPosition(a, last, queryLen, keyLen)};
}

/// The first key position p may see: max(0, p - L). Not clamped to T.
template <typename Arith, typename V>
V firstVisibleKey(Arith &a, const KeyVisibility &rule, V position) {
  V first = a.constant(0);
  if (rule.windowLeft)
    first = a.max(first, a.sub(position, a.constant(*rule.windowLeft)));
  return first;
}

/// One past the last key position p may see: min(T, p + 1 (causal),
/// p + R + 1 (window), key_length (when given)). Not clamped to >= 0.
template <typename Arith, typename V>
V lastVisibleKey(Arith &a, const KeyVisibility &rule, V position, V keyLen,
                 std::optional<V> keyLength = std::nullopt) {
  V last = keyLen;
  if (rule.causal)
    last = a.min(last, a.add(position, a.constant(1)));
  if (rule.windowRight)
    last = a.min(last,
                 a.add(position, a.constant(*rule.windowRight + 1)));
  if (rule.keyLength && keyLength)
    last = a.min(last, *keyLength);
  return last;
}

/// The keys [first, last) that some row with a position in [firstPosition,
/// lastPosition] may see (first and last are nondecreasing in p): the key
/// loop of a tile of rows. `last <= first` means no key.
template <typename V> struct KeyRange {
  V first, last;
};
template <typename Arith, typename V>
KeyRange<V> visibleKeys(Arith &a, const KeyVisibility &rule, V firstPosition,
                        V lastPosition, V keyLen,
                        std::optional<V> keyLength = std::nullopt) {
  return {firstVisibleKey(a, rule, firstPosition),
          lastVisibleKey(a, rule, lastPosition, keyLen, keyLength)};
}

/// Whether every row with a position in [firstPosition, lastPosition] sees
/// every key in [firstKey, lastKey], ignoring the key length (a key loop
/// bounded by visibleKeys never reaches past it). When false, the block
/// needs the per-element position mask.
template <typename Arith, typename V>
auto blockFullyVisible(Arith &a, const KeyVisibility &rule, V firstPosition,
                       V lastPosition, V firstKey, V lastKey) {
  KeyVisibility positions = rule;
  positions.keyLength = false;
  V first = firstVisibleKey(a, positions, lastPosition);
  V last = lastVisibleKey(a, positions, firstPosition, a.add(lastKey, a.constant(1)));
  return a.logicalAnd(a.le(first, firstKey), a.lt(lastKey, last));
}

/// Whether the row at `position` sees key `key` by the position masks and
/// the key length (tensor masks are separate).
template <typename Arith, typename V>
auto keyVisible(Arith &a, const KeyVisibility &rule, V position, V key,
                V keyLen, std::optional<V> keyLength = std::nullopt) {
  V first = firstVisibleKey(a, rule, position);
  V last = lastVisibleKey(a, rule, position, keyLen, keyLength);
  return a.logicalAnd(a.le(first, key), a.lt(key, last));
}

/// ALiBi's standard slope of query head `head` (the graph format's rule):
/// with n the largest power of two <= Hq, head h < n has 2^(-8(h+1)/n), and
/// a head h >= n takes every other slope of the 2n-head list,
/// 2^(-8(2(h-n)+1)/(2n)). The slope is 2^(-8 · numerator / denominator);
/// `powerOfTwo` is n, which each caller computes as its arithmetic allows.
template <typename V> struct SlopeFraction { V numerator, denominator; };
template <typename Arith, typename V>
SlopeFraction<V> alibiSlopeFraction(Arith &a, V head, V powerOfTwo) {
  V one = a.constant(1), two = a.constant(2);
  auto first = a.lt(head, powerOfTwo);
  return {a.select(first, a.add(head, one),
                   a.add(a.mul(two, a.sub(head, powerOfTwo)), one)),
          a.select(first, powerOfTwo, a.mul(two, powerOfTwo))};
}

/// The rules in int64_t, for code that knows every size.
struct Int64Arith {
  int64_t constant(int64_t value) { return value; }
  int64_t add(int64_t x, int64_t y) { return x + y; }
  int64_t sub(int64_t x, int64_t y) { return x - y; }
  int64_t mul(int64_t x, int64_t y) { return x * y; }
  int64_t select(bool condition, int64_t x, int64_t y) {
    return condition ? x : y;
  }
  int64_t div(int64_t x, int64_t y) { return x / y; }
  int64_t min(int64_t x, int64_t y) { return std::min(x, y); }
  int64_t max(int64_t x, int64_t y) { return std::max(x, y); }
  bool lt(int64_t x, int64_t y) { return x < y; }
  bool le(int64_t x, int64_t y) { return x <= y; }
  bool logicalAnd(bool x, bool y) { return x && y; }
};

} // namespace mlir::attn::semantics

#endif // ATTN_IR_ATTNSEMANTICS_H
