//===- Float16Test.cpp - Tests of the f16/bf16 conversions ----------------===//

#include "Support/Float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

using namespace attnc;

namespace {

float floatFromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

bool isHalfNaN(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
bool isBFloat16NaN(uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); }

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(Float16, KnownBitPatterns) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(0.5f), 0x3800);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF); // Largest finite half.
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(0.1f), 0x2E66);
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBFloat16(-2.0f), 0xC000);
  EXPECT_EQ(floatToBFloat16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBFloat16(0.1f), 0x3DCD);
  EXPECT_EQ(halfToFloat(0x3C00), 1.0f);
  EXPECT_EQ(halfToFloat(0x7BFF), 65504.0f);
  EXPECT_EQ(halfToFloat(0xC000), -2.0f);
  EXPECT_EQ(bfloat16ToFloat(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0x7F7F), floatFromBits(0x7F7F0000));
}

TEST(Float16, HalfOverflowRoundsToInfinity) {
  // 65520 is the tie between 65504 and 65536 (= 2^16, out of range): even
  // wins, which is infinity.
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(floatToHalf(-65520.0f), 0xFC00);
  EXPECT_EQ(floatToHalf(1e10f), 0x7C00);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::max()), 0x7C00);
  EXPECT_EQ(doubleToHalf(65520.0), 0x7C00);
  EXPECT_EQ(doubleToHalf(1e300), 0x7C00);
  EXPECT_EQ(doubleToHalf(-1e300), 0xFC00);
}

TEST(Float16, BFloat16OverflowRoundsToInfinity) {
  EXPECT_EQ(floatToBFloat16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(floatToBFloat16(floatFromBits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(floatToBFloat16(floatFromBits(0x7F7F8000)), 0x7F80); // Tie: even.
  EXPECT_EQ(doubleToBFloat16(1e39), 0x7F80);
  EXPECT_EQ(doubleToBFloat16(-1e300), 0xFF80);
}

TEST(Float16, HalfSubnormals) {
  const float smallest = std::ldexp(1.0f, -24); // 2^-24, bits 0x0001.
  EXPECT_EQ(floatToHalf(smallest), 0x0001);
  EXPECT_EQ(halfToFloat(0x0001), smallest);
  EXPECT_EQ(halfToFloat(0x8001), -smallest);
  EXPECT_EQ(floatToHalf(smallest / 2), 0x0000); // Tie with 0: even.
  EXPECT_EQ(floatToHalf(-smallest / 2), 0x8000);
  EXPECT_EQ(floatToHalf(std::nextafter(smallest / 2, 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(smallest * 1.5f), 0x0002); // Tie 1|2: even.
  EXPECT_EQ(floatToHalf(smallest * 2.5f), 0x0002); // Tie 2|3: even.
  EXPECT_EQ(floatToHalf(1023 * smallest), 0x03FF); // Largest subnormal.
  EXPECT_EQ(halfToFloat(0x03FF), 1023 * smallest);
  EXPECT_EQ(floatToHalf(1023.5f * smallest), 0x0400);    // Carry into normal.
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400); // Smallest normal.
  EXPECT_EQ(floatToHalf(1e-30f), 0x0000);
  EXPECT_EQ(floatToHalf(floatFromBits(0x00000001)), 0x0000); // f32 subnormal.
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -24)), 0x0001);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25)), 0x0000);
  EXPECT_EQ(doubleToHalf(std::ldexp(1.0, -25) * (1 + 1e-15)), 0x0001);
  EXPECT_EQ(doubleToHalf(-std::numeric_limits<double>::denorm_min()), 0x8000);
}

TEST(Float16, BFloat16Subnormals) {
  const float smallest = std::ldexp(1.0f, -133); // bits 0x0001.
  EXPECT_EQ(floatToBFloat16(smallest), 0x0001);
  EXPECT_EQ(bfloat16ToFloat(0x0001), smallest);
  EXPECT_EQ(floatToBFloat16(smallest / 2), 0x0000); // Tie with 0: even.
  EXPECT_EQ(floatToBFloat16(smallest * 1.5f), 0x0002);
  EXPECT_EQ(floatToBFloat16(std::ldexp(1.0f, -126)), 0x0080);
  EXPECT_EQ(doubleToBFloat16(std::ldexp(1.0, -133)), 0x0001);
  EXPECT_EQ(doubleToBFloat16(std::ldexp(1.0, -134)), 0x0000);
  EXPECT_EQ(doubleToBFloat16(std::ldexp(3.0, -134)), 0x0002); // Tie 1|2: even.
  EXPECT_EQ(doubleToBFloat16(1e-300), 0x0000);
}

TEST(Float16, RoundsTiesToEven) {
  // Half has 10 fraction bits: 1 + 2^-11 is halfway between 1 and 1 + 2^-10.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3C01);
  EXPECT_EQ(doubleToHalf(1.0 + std::ldexp(1.0, -11)), 0x3C00);
  EXPECT_EQ(doubleToHalf(1.0 + 3 * std::ldexp(1.0, -11)), 0x3C02);
  // bf16 has 7 fraction bits.
  EXPECT_EQ(floatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(floatToBFloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(doubleToBFloat16(1.0 + std::ldexp(1.0, -8)), 0x3F80);
  EXPECT_EQ(doubleToBFloat16(-(1.0 + 3 * std::ldexp(1.0, -8))), 0xBF82);
}

TEST(Float16, DoubleRoundsOnceNotThroughFloat) {
  // Just above a tie, by less than float can hold: through float it would
  // become the tie itself and round down to even.
  double half = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(floatToHalf(static_cast<float>(half)), 0x3C00);
  EXPECT_EQ(doubleToHalf(half), 0x3C01);
  double bf = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(floatToBFloat16(static_cast<float>(bf)), 0x3F80);
  EXPECT_EQ(doubleToBFloat16(bf), 0x3F81);
}

TEST(Float16, InfinityAndNaN) {
  EXPECT_EQ(floatToHalf(kInf), 0x7C00);
  EXPECT_EQ(floatToHalf(-kInf), 0xFC00);
  EXPECT_EQ(doubleToHalf(-static_cast<double>(kInf)), 0xFC00);
  EXPECT_EQ(floatToBFloat16(kInf), 0x7F80);
  EXPECT_EQ(doubleToBFloat16(-static_cast<double>(kInf)), 0xFF80);
  EXPECT_EQ(halfToFloat(0x7C00), kInf);
  EXPECT_EQ(halfToFloat(0xFC00), -kInf);
  EXPECT_EQ(bfloat16ToFloat(0xFF80), -kInf);

  // NaN stays NaN, quiet (top fraction bit set), sign kept — even a
  // signalling NaN whose payload lies entirely in the discarded bits.
  uint32_t signalling = 0x7F800001;
  for (uint16_t h : {floatToHalf(kNaN), floatToHalf(floatFromBits(signalling)),
                     doubleToHalf(std::nan(""))}) {
    EXPECT_TRUE(isHalfNaN(h));
    EXPECT_TRUE(h & 0x0200);
  }
  EXPECT_EQ(floatToHalf(-kNaN) & 0x8000, 0x8000);
  for (uint16_t b :
       {floatToBFloat16(kNaN), floatToBFloat16(floatFromBits(signalling)),
        doubleToBFloat16(std::nan(""))}) {
    EXPECT_TRUE(isBFloat16NaN(b));
    EXPECT_TRUE(b & 0x0040);
  }
  EXPECT_TRUE(std::isnan(halfToFloat(0x7C01)));
  EXPECT_TRUE(std::isnan(halfToFloat(0xFE00)));
  EXPECT_TRUE(std::isnan(bfloat16ToFloat(0x7F81)));
}

TEST(Float16, EveryHalfRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    uint16_t h = static_cast<uint16_t>(bits);
    float f = halfToFloat(h);
    if (isHalfNaN(h)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(isHalfNaN(floatToHalf(f)));
      continue;
    }
    ASSERT_EQ(floatToHalf(f), h) << bits;
    ASSERT_EQ(doubleToHalf(f), h) << bits;
  }
}

TEST(Float16, EveryBFloat16RoundTrips) {
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    uint16_t b = static_cast<uint16_t>(bits);
    float f = bfloat16ToFloat(b);
    if (isBFloat16NaN(b)) {
      EXPECT_TRUE(std::isnan(f));
      continue;
    }
    ASSERT_EQ(floatToBFloat16(f), b) << bits;
    ASSERT_EQ(doubleToBFloat16(f), b) << bits;
  }
}

/// Checks that \p result is a correctly rounded narrowing of \p value: no
/// neighbour is closer, and on a tie the result is even. \p widen maps bit
/// patterns back (exactly) to float.
template <typename Widen>
void expectNearestEven(double value, uint16_t result, Widen widen) {
  double got = widen(result);
  ASSERT_FALSE(std::isnan(got)) << value;
  if (std::isinf(got)) {
    // Overflow is right only from half an ulp above the largest finite value.
    uint16_t maxFinite = static_cast<uint16_t>((result & 0x7FFF) - 1);
    double largest = widen(maxFinite);
    double below = widen(static_cast<uint16_t>(maxFinite - 1));
    ASSERT_GE(std::fabs(value), largest + (largest - below) / 2) << value;
    return;
  }
  double error = std::fabs(got - value);
  for (int step : {-1, 1}) {
    // Neighbouring patterns of the same sign; past the largest finite value
    // the neighbour is infinity, which is never closer for a finite value
    // that did not overflow.
    uint16_t magnitude = result & 0x7FFF;
    if ((step < 0 && magnitude == 0) || (step > 0 && std::isinf(got)))
      continue;
    uint16_t neighbour = static_cast<uint16_t>(result + step);
    double other = widen(neighbour);
    if (std::isinf(other) || std::isnan(other))
      continue;
    double otherError = std::fabs(other - value);
    ASSERT_LE(error, otherError) << value;
    if (error == otherError) {
      ASSERT_EQ(result & 1, 0) << "tie not to even: " << value;
    }
  }
}

TEST(Float16, RandomFloatsRoundToNearest) {
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Exponents near the half range, so subnormals and overflow show up.
    float value = std::ldexp(std::uniform_real_distribution<float>(1, 2)(rng),
                             std::uniform_int_distribution<int>(-27, 15)(rng));
    if (rng() & 1)
      value = -value;
    expectNearestEven(value, floatToHalf(value), halfToFloat);
    double wide = std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                             std::uniform_int_distribution<int>(-27, 15)(rng));
    expectNearestEven(wide, doubleToHalf(wide), halfToFloat);
  }
}

TEST(Float16, RandomFloatsRoundToNearestBFloat16) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    float value = floatFromBits(static_cast<uint32_t>(rng()) & 0x7F7FFFFF);
    if (std::isinf(value) || value > 3.38e38f)
      continue;
    expectNearestEven(value, floatToBFloat16(value), bfloat16ToFloat);
    double wide =
        std::ldexp(std::uniform_real_distribution<double>(1, 2)(rng),
                   std::uniform_int_distribution<int>(-140, 120)(rng));
    expectNearestEven(wide, doubleToBFloat16(wide), bfloat16ToFloat);
  }
}

} // namespace
