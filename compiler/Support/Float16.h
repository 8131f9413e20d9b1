//===- Float16.h - IEEE half and bfloat16 conversions -----------*- C++ -*-===//
//
// Bit-exact conversions between float/double and the two 16-bit float formats
// attnc stores: f16 (IEEE 754 binary16) and bf16 (the top half of a binary32).
// Narrowing rounds to nearest, ties to even, handles subnormals, overflows to
// infinity and keeps NaN a (quiet) NaN with its sign. Widening is exact.
//
// The double overloads round from double directly: going through float first
// would round twice and can be off by one ulp on ties.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_FLOAT16_H
#define ATTNC_SUPPORT_FLOAT16_H

#include <cstdint>
#include <cstring>

namespace attnc {
namespace detail {

template <typename To, typename From> inline To bitCast(const From &from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast needs equal sizes");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

/// Number of significant bits of \p x (0 for 0).
inline int bitWidth(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
  return x == 0 ? 0 : 64 - __builtin_clzll(x);
#else
  int width = 0;
  for (; x != 0; x >>= 1)
    ++width;
  return width;
#endif
}

/// Rounds the finite nonzero value (-1)^negative * mant * 2^exp, where
/// 0 < mant < 2^60, to a binary format with ExpBits exponent and MantBits
/// fraction bits (ties to even) and returns its bit pattern.
///
/// One routine serves every narrowing so that subnormals, the carry from the
/// largest subnormal into the smallest normal, and overflow are handled in one
/// place: the encoding is monotonic, so bits = (biased - 1) << MantBits plus
/// the rounded significand is right in all three cases.
template <int ExpBits, int MantBits>
inline uint16_t roundFinite(bool negative, uint64_t mant, int exp) {
  constexpr int bias = (1 << (ExpBits - 1)) - 1;
  constexpr uint32_t infBits = ((1u << ExpBits) - 1) << MantBits;
  const uint32_t sign = negative ? 1u << (ExpBits + MantBits) : 0u;

  // floor(log2(|value|)), then the biased exponent before rounding; subnormals
  // share the quantum of the smallest normal, so clamp to 1.
  int top = exp + bitWidth(mant) - 1;
  int biased = top + bias;
  if (biased < 1)
    biased = 1;
  if (biased >= (1 << ExpBits) - 1)
    return static_cast<uint16_t>(sign | infBits);

  // The result's unit in the last place is 2^(biased - bias - MantBits).
  int shift = (biased - bias - MantBits) - exp;
  uint64_t sig;
  if (shift <= 0) {
    sig = mant << -shift; // Exact: the value has few enough bits.
  } else if (shift >= 64) {
    sig = 0; // Below half the smallest subnormal.
  } else {
    sig = mant >> shift;
    uint64_t rem = mant & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    if (rem > half || (rem == half && (sig & 1)))
      ++sig;
  }
  uint32_t bits = (static_cast<uint32_t>(biased - 1) << MantBits) +
                  static_cast<uint32_t>(sig);
  if (bits > infBits)
    bits = infBits;
  return static_cast<uint16_t>(sign | bits);
}

/// double -> a 16-bit float with ExpBits exponent and MantBits mantissa
/// bits, rounded once to nearest even; NaN stays NaN (quiet), infinities and
/// overflow give infinity.
template <int ExpBits, int MantBits> inline uint16_t roundDouble(double value) {
  uint64_t bits = bitCast<uint64_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 48) & 0x8000);
  uint32_t exp = static_cast<uint32_t>((bits >> 52) & 0x7ff);
  uint64_t frac = bits & 0xfffffffffffffull;
  if (exp == 0x7ff) {
    constexpr uint32_t allOnes = ((1u << ExpBits) - 1) << MantBits;
    constexpr uint32_t quiet = 1u << (MantBits - 1);
    return static_cast<uint16_t>(
        sign | allOnes |
        (frac ? quiet | static_cast<uint32_t>(frac >> (52 - MantBits)) : 0));
  }
  if (exp == 0 && frac == 0)
    return sign;
  uint64_t mant = exp ? (frac | (uint64_t(1) << 52)) : frac;
  int e = exp ? static_cast<int>(exp) - 1075 : -1074;
  return roundFinite<ExpBits, MantBits>(sign != 0, mant, e);
}

} // namespace detail

/// float -> IEEE binary16, round to nearest even.
inline uint16_t floatToHalf(float value) {
  uint32_t bits = detail::bitCast<uint32_t>(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t exp = (bits >> 23) & 0xff;
  uint32_t frac = bits & 0x7fffff;
  if (exp == 0xff) // Infinity, or NaN (forced quiet, top payload bits kept).
    return static_cast<uint16_t>(sign | 0x7c00 |
                                 (frac ? 0x200 | (frac >> 13) : 0));
  if (exp == 0 && frac == 0)
    return sign;
  uint64_t mant = exp ? (frac | 0x800000) : frac;
  int e = exp ? static_cast<int>(exp) - 150 : -149;
  return detail::roundFinite<5, 10>(sign != 0, mant, e);
}

/// double -> IEEE binary16, rounded once (not through float).
inline uint16_t doubleToHalf(double value) {
  return detail::roundDouble<5, 10>(value);
}

/// IEEE binary16 -> float; exact (every half is a float). NaN comes back quiet.
inline float halfToFloat(uint16_t half) {
  uint32_t sign = static_cast<uint32_t>(half & 0x8000) << 16;
  uint32_t exp = (half >> 10) & 0x1f;
  uint32_t frac = half & 0x3ff;
  if (exp == 0x1f)
    return detail::bitCast<float>(sign | 0x7f800000 |
                                  (frac ? 0x400000 | (frac << 13) : 0));
  if (exp == 0) {
    float magnitude = static_cast<float>(frac) * 0x1p-24f; // Exact.
    return sign ? -magnitude : magnitude;
  }
  return detail::bitCast<float>(sign | ((exp + 112) << 23) | (frac << 13));
}

/// float -> bfloat16, round to nearest even.
inline uint16_t floatToBFloat16(float value) {
  uint32_t bits = detail::bitCast<uint32_t>(value);
  if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x7fffff))
    return static_cast<uint16_t>((bits >> 16) | 0x40); // Quiet NaN.
  // Adding 0x7fff plus the lowest kept bit rounds ties to even; a carry out of
  // the fraction correctly bumps the exponent, up to infinity.
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

/// double -> bfloat16, rounded once (not through float).
inline uint16_t doubleToBFloat16(double value) {
  return detail::roundDouble<8, 7>(value);
}

/// bfloat16 -> float; exact. NaN comes back quiet.
inline float bfloat16ToFloat(uint16_t value) {
  uint32_t bits = static_cast<uint32_t>(value) << 16;
  if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x7fffff))
    bits |= 0x400000;
  return detail::bitCast<float>(bits);
}

} // namespace attnc

#endif // ATTNC_SUPPORT_FLOAT16_H
