//===- ReferenceTest.cpp - The float64 reference on hand-computed cases ---===//
//
// Every expected number here is written out or derived in the test body from
// the definitions in docs/graph-format.md, never by the code under test.
// Inputs are exactly representable in f32, so rounding them changes nothing.
//
//===----------------------------------------------------------------------===//

#include "Reference/Reference.h"
#include "Graph/Graph.h"
#include "Support/Error.h"
#include "Support/Tensor.h"

#include <gtest/gtest.h>

#include "GraphDocuments.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace attnc;
using namespace attnc::testing;

namespace {

constexpr double kTolerance = 1e-12;

Tensor i32(std::vector<int64_t> shape, std::vector<double> values) {
  return fromDoubles(DType::I32, std::move(shape), values);
}
Tensor boolean(std::vector<int64_t> shape, std::vector<double> values) {
  return fromDoubles(DType::Bool, std::move(shape), values);
}
Tensor zeros(std::vector<int64_t> shape) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return f32(std::move(shape), std::vector<double>(count, 0.0));
}

std::vector<F64Tensor> evaluate(const std::string &text,
                                const std::vector<Tensor> &inputs,
                                const DimBindings &dims = {}) {
  Graph graph = parseGraph(text, "g.json");
  return evaluateReference(graph, dims, inputs);
}

/// Expects `actual` to have `shape` and to equal `expected` within
/// kTolerance; infinities must match exactly and no NaN may appear.
void expectTensor(const F64Tensor &actual, const std::vector<int64_t> &shape,
                  const std::vector<double> &expected) {
  EXPECT_EQ(actual.shape, shape);
  ASSERT_EQ(actual.data.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    ASSERT_FALSE(std::isnan(actual.data[i]));
    if (std::isinf(expected[i]))
      EXPECT_EQ(actual.data[i], expected[i]);
    else
      EXPECT_NEAR(actual.data[i], expected[i], kTolerance);
  }
}

/// Softmax-weighted mean of `values` under `scores` (a hand computation of
/// one attention row, for the expectations).
double weightedMean(const std::vector<double> &scores,
                    const std::vector<double> &values) {
  double sum = 0, weighted = 0;
  for (size_t j = 0; j < scores.size(); ++j) {
    sum += std::exp(scores[j]);
    weighted += std::exp(scores[j]) * values[j];
  }
  return weighted / sum;
}

double logSumExp(const std::vector<double> &scores) {
  double sum = 0;
  for (double score : scores)
    sum += std::exp(score);
  return std::log(sum);
}

//===----------------------------------------------------------------------===//
// The attention op
//===----------------------------------------------------------------------===//

// Tests one head, S = 2, T = 3, D = 2, default scale 1/sqrt(2), with lse.
TEST(ReferenceAttentionTest, DotOneHead) {
  std::string text =
      doc(in("q", "[1, 1, 2, 2]") + ", " + in("k", "[1, 1, 3, 2]") + ", " +
              in("v", "[1, 1, 3, 2]"),
          attn(R"("return_lse": true)"), R"(["o", "o.lse"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({1, 1, 2, 2}, {1, 0, 0, 1}),
                      f32({1, 1, 3, 2}, {1, 0, 0, 1, 1, 1}),
                      f32({1, 1, 3, 2}, {1, 2, 3, 4, 5, 6})});
  ASSERT_EQ(out.size(), 2u);
  // Row 0 scores [a, 0, a], row 1 [0, a, a] with a = 1/sqrt(2); e = exp(a).
  const double e = std::exp(1 / std::sqrt(2.0)), z = 2 * e + 1;
  // Row 0: (e (1, 2) + (3, 4) + e (5, 6)) / z = (3, 4) exactly.
  // Row 1: ((1, 2) + e (3, 4) + e (5, 6)) / z.
  expectTensor(out[0], {1, 1, 2, 2}, {3, 4, (1 + 8 * e) / z, (2 + 10 * e) / z});
  expectTensor(out[1], {1, 1, 2}, {std::log(z), std::log(z)});
}

// Tests the bottom-right causal alignment with S < T: query i sits at
// i' = i + T - S. With q = 0 every kept key has score 0, so a row is the
// mean of its kept values and its lse the log of their count.
TEST(ReferenceAttentionTest, CausalFewerQueriesThanKeys) {
  std::string text =
      doc(in("q", "[1, 1, 2, 1]") + ", " + in("k", "[1, 1, 4, 1]") + ", " +
              in("v", "[1, 1, 4, 1]"),
          attn(R"("mask": [{"kind": "causal"}], "return_lse": true)"),
          R"(["o", "o.lse"])");
  std::vector<F64Tensor> out =
      evaluate(text, {zeros({1, 1, 2, 1}), f32({1, 1, 4, 1}, {1, 2, 3, 4}),
                      f32({1, 1, 4, 1}, {1, 2, 4, 8})});
  // i' = 2 keeps keys 0..2; i' = 3 keeps 0..3.
  expectTensor(out[0], {1, 1, 2, 1}, {7.0 / 3, 15.0 / 4});
  expectTensor(out[1], {1, 1, 2}, {std::log(3.0), std::log(4.0)});
}

// Tests S > T: the first S - T queries have i' < 0, keep no key, and output
// exactly 0 with lse = -inf.
TEST(ReferenceAttentionTest, CausalMoreQueriesThanKeys) {
  std::string text =
      doc(in("q", "[1, 1, 4, 1]") + ", " + in("k", "[1, 1, 2, 1]") + ", " +
              in("v", "[1, 1, 2, 1]"),
          attn(R"("mask": [{"kind": "causal"}], "return_lse": true)"),
          R"(["o", "o.lse"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({1, 1, 4, 1}, {1, -2, 0, 0}),
                      f32({1, 1, 2, 1}, {1, 2}), f32({1, 1, 2, 1}, {3, 5})});
  expectTensor(out[0], {1, 1, 4, 1}, {0, 0, 3, 4});
  EXPECT_EQ(out[0].data[0], 0.0);
  EXPECT_EQ(out[0].data[1], 0.0);
  expectTensor(out[1], {1, 1, 4}, {-kInf, -kInf, 0, std::log(2.0)});
}

// Tests a window keeps i' - L <= j <= i' + R.
TEST(ReferenceAttentionTest, Window) {
  struct Case {
    int S, left, right;
    std::vector<double> expected;
  };
  // v = 1, 2, 4, 8 over T = 4 keys; q = 0, so each row is a mean.
  std::vector<Case> cases = {
      {4, 1, 0, {1, 1.5, 3, 6}},
      {4, 0, 1, {1.5, 3, 6, 8}},
      {4, 0, 0, {1, 2, 4, 8}},
      {4, 1, 1, {1.5, 7.0 / 3, 14.0 / 3, 6}},
      // S = 2 < T = 4: i' = 2, 3 (the example of docs/graph-format.md).
      {2, 1, 0, {3, 6}},
      {2, 5, 5, {15.0 / 4, 15.0 / 4}},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE("S=" + std::to_string(c.S) + " L=" + std::to_string(c.left) +
                 " R=" + std::to_string(c.right));
    std::string S = std::to_string(c.S);
    std::string text =
        doc(in("q", "[1, 1, " + S + ", 1]") + ", " + in("k", "[1, 1, 4, 1]") +
                ", " + in("v", "[1, 1, 4, 1]"),
            attn(R"("mask": [{"kind": "window", "left": )" +
                 std::to_string(c.left) + R"(, "right": )" +
                 std::to_string(c.right) + "}]"));
    std::vector<F64Tensor> out =
        evaluate(text, {zeros({1, 1, c.S, 1}), f32({1, 1, 4, 1}, {1, 1, 1, 1}),
                        f32({1, 1, 4, 1}, {1, 2, 4, 8})});
    expectTensor(out[0], {1, 1, c.S, 1}, c.expected);
  }
}

// Tests that a window wider than any sequence keeps every key, even with
// bounds near the largest integer the format accepts (S = 4 > T = 2, so
// i' runs from -2 to 1).
TEST(ReferenceAttentionTest, WindowWithHugeBoundsKeepsEveryKey) {
  for (const char *bound :
       {"1000", "4611686018427387904", "9223372036854775807"}) {
    SCOPED_TRACE(bound);
    std::string text =
        doc(in("q", "[1, 1, 4, 1]") + ", " + in("k", "[1, 1, 2, 1]") + ", " +
                in("v", "[1, 1, 2, 1]"),
            attn(std::string(R"("mask": [{"kind": "window", "left": )") +
                 bound + R"(, "right": )" + bound + "}]"));
    std::vector<F64Tensor> out =
        evaluate(text, {zeros({1, 1, 4, 1}), zeros({1, 1, 2, 1}),
                        f32({1, 1, 2, 1}, {1, 3})});
    expectTensor(out[0], {1, 1, 4, 1}, {2, 2, 2, 2});
  }
}

// Tests key_length keeps j < len[b], including 0 (all masked) and a length
// beyond T (all kept), with a run-time batch size.
TEST(ReferenceAttentionTest, KeyLength) {
  std::string text = doc(
      in("q", R"(["B", 1, 2, 1])") + ", " + in("k", R"(["B", 1, 3, 1])") +
          ", " + in("v", R"(["B", 1, 3, 1])") + ", " +
          in("len", R"(["B"])", "i32"),
      attn(
          R"("mask": [{"kind": "key_length", "input": "len"}], "return_lse": true)"),
      R"(["o", "o.lse"])", R"({"B": null})");
  std::vector<F64Tensor> out = evaluate(
      text,
      {zeros({3, 1, 2, 1}), zeros({3, 1, 3, 1}),
       f32({3, 1, 3, 1}, {1, 2, 4, 8, 16, 32, 1, 2, 6}), i32({3}, {2, 0, 5})},
      {{"B", 3}});
  expectTensor(out[0], {3, 1, 2, 1}, {1.5, 1.5, 0, 0, 3, 3});
  expectTensor(out[1], {3, 1, 2},
               {std::log(2.0), std::log(2.0), -kInf, -kInf, std::log(3.0),
                std::log(3.0)});
}

// Tests a tensor bias [H, 1, T] broadcast over batch and queries.
TEST(ReferenceAttentionTest, TensorBias) {
  std::string text = doc(
      in("q", "[1, 2, 2, 1]") + ", " + in("k", "[1, 2, 3, 1]") + ", " +
          in("v", "[1, 2, 3, 1]") + ", " + in("pb", "[2, 1, 3]"),
      attn(
          R"("bias": [{"kind": "tensor", "input": "pb"}], "return_lse": true)"),
      R"(["o", "o.lse"])");
  std::vector<F64Tensor> out =
      evaluate(text, {zeros({1, 2, 2, 1}), zeros({1, 2, 3, 1}),
                      f32({1, 2, 3, 1}, {1, 2, 3, 10, 20, 30}),
                      f32({2, 1, 3}, {0, 1, 2, 2, 0, -1})});
  double h0 = weightedMean({0, 1, 2}, {1, 2, 3});
  double h1 = weightedMean({2, 0, -1}, {10, 20, 30});
  expectTensor(out[0], {1, 2, 2, 1}, {h0, h0, h1, h1});
  double l0 = logSumExp({0, 1, 2}), l1 = logSumExp({2, 0, -1});
  expectTensor(out[1], {1, 2, 2}, {l0, l0, l1, l1});
}

TEST(ReferenceAttentionTest, AlibiStandardSlopes) {
  std::vector<double> eight = alibiSlopes(8);
  ASSERT_EQ(eight.size(), 8u);
  for (int h = 0; h < 8; ++h)
    EXPECT_EQ(eight[h], std::ldexp(1.0, -(h + 1))) << "head " << h;

  // slopes(4) = 2^-2, 2^-4, 2^-6, 2^-8, then slopes(8)[0::2][:2] = 2^-1, 2^-3.
  EXPECT_EQ(alibiSlopes(6), (std::vector<double>{0.25, 0.0625, 0.015625,
                                                 0.00390625, 0.5, 0.125}));
  std::vector<double> slopes4 = alibiSlopes(4), slopes8 = alibiSlopes(8);
  std::vector<double> six(slopes4);
  for (size_t h = 0; h < slopes8.size() && six.size() < 6; h += 2)
    six.push_back(slopes8[h]);
  EXPECT_EQ(alibiSlopes(6), six);

  EXPECT_EQ(alibiSlopes(1), (std::vector<double>{std::ldexp(1.0, -8)}));
  EXPECT_EQ(alibiSlopes(2),
            (std::vector<double>{std::ldexp(1.0, -4), std::ldexp(1.0, -8)}));
  EXPECT_EQ(alibiSlopes(3),
            (std::vector<double>{std::ldexp(1.0, -4), std::ldexp(1.0, -8),
                                 std::ldexp(1.0, -2)}));
  // Hq = 12: the 8 above, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
  std::vector<double> twelve = alibiSlopes(12);
  ASSERT_EQ(twelve.size(), 12u);
  for (int h = 0; h < 8; ++h)
    EXPECT_EQ(twelve[h], std::ldexp(1.0, -(h + 1)));
  for (int h = 0; h < 4; ++h)
    EXPECT_NEAR(twelve[8 + h], std::pow(2.0, -0.5 - h), 1e-15);
  // BLOOM-176B: 112 heads = slopes(64) then slopes(128)[0::2][:48].
  std::vector<double> bloom = alibiSlopes(112);
  ASSERT_EQ(bloom.size(), 112u);
  EXPECT_NEAR(bloom[0], std::pow(2.0, -0.125), 1e-15);
  EXPECT_NEAR(bloom[63], std::pow(2.0, -8.0), 1e-15);
  EXPECT_NEAR(bloom[64], std::pow(2.0, -0.0625), 1e-15);
  EXPECT_NEAR(bloom[65], std::pow(2.0, -0.1875), 1e-15);
  EXPECT_NEAR(bloom[111], std::pow(2.0, -8.0 * 95 / 128), 1e-15);
}

// Tests ALiBi bias -slope_h |i' - j| with the standard slopes for 3 heads
// (2^-4, 2^-8, then 2^-2), MQA (one kv head), S = 2, T = 4; and with
// explicit slopes.
TEST(ReferenceAttentionTest, AlibiBias) {
  for (bool explicitSlopes : {false, true}) {
    SCOPED_TRACE(explicitSlopes ? "explicit slopes" : "standard slopes");
    std::string text = doc(
        in("q", "[1, 3, 2, 1]") + ", " + in("k", "[1, 1, 4, 1]") + ", " +
            in("v", "[1, 1, 4, 1]") + ", " + in("sl", "[3]"),
        attn(explicitSlopes ? R"("bias": [{"kind": "alibi", "slopes": "sl"}])"
                            : R"("bias": [{"kind": "alibi"}])"));
    std::vector<double> slopes =
        explicitSlopes ? std::vector<double>{0.5, 1.5, 0.25}
                       : std::vector<double>{1.0 / 16, 1.0 / 256, 1.0 / 4};
    std::vector<F64Tensor> out = evaluate(
        text, {zeros({1, 3, 2, 1}), zeros({1, 1, 4, 1}),
               f32({1, 1, 4, 1}, {0, 1, 2, 3}), f32({3}, {0.5, 1.5, 0.25})});
    std::vector<double> expected;
    for (double m : slopes) {
      // i = 0 (i' = 2): -2m, -m, 0, -m; i = 1 (i' = 3): -3m, -2m, -m, 0.
      expected.push_back(weightedMean({-2 * m, -m, 0, -m}, {0, 1, 2, 3}));
      expected.push_back(weightedMean({-3 * m, -2 * m, -m, 0}, {0, 1, 2, 3}));
    }
    expectTensor(out[0], {1, 3, 2, 1}, expected);
  }
}

// Tests that the softcap c tanh(s / c) is applied after the scale and before
// the biases.
TEST(ReferenceAttentionTest, Softcap) {
  std::string text =
      doc(in("q", "[1, 1, 1, 1]") + ", " + in("k", "[1, 1, 2, 1]") + ", " +
              in("v", "[1, 1, 2, 1]") + ", " + in("pb", "[2]"),
          attn(R"("scale": 0.5, "softcap": 2.0, "return_lse": true,
                  "bias": [{"kind": "tensor", "input": "pb"}])"),
          R"(["o", "o.lse"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({1, 1, 1, 1}, {8}), f32({1, 1, 2, 1}, {1, -1}),
                      f32({1, 1, 2, 1}, {1, 0}), f32({2}, {0, 3})});
  // Raw scores 8, -8; scaled 4, -4; capped 2 tanh(2), -2 tanh(2); + bias.
  double s0 = 2 * std::tanh(2.0), s1 = -2 * std::tanh(2.0) + 3;
  expectTensor(out[0], {1, 1, 1, 1}, {weightedMean({s0, s1}, {1, 0})});
  expectTensor(out[1], {1, 1, 1}, {logSumExp({s0, s1})});
}

// Tests Luong's general score q^T W k, with scale 1 and with the default
// 1/sqrt(Dk).
TEST(ReferenceAttentionTest, GeneralScore) {
  for (bool defaultScale : {false, true}) {
    SCOPED_TRACE(defaultScale ? "default scale" : "scale 1");
    std::string text =
        doc(in("q", "[1, 1, 1, 2]") + ", " + in("k", "[1, 1, 2, 2]") + ", " +
                in("v", "[1, 1, 2, 1]") + ", " + in("w", "[2, 2]"),
            attn(std::string(R"("score": {"kind": "general", "w": "w"})") +
                 (defaultScale ? "" : R"(, "scale": 1.0)")));
    std::vector<F64Tensor> out = evaluate(
        text, {f32({1, 1, 1, 2}, {1, 2}), f32({1, 1, 2, 2}, {1, 0, 0, 1}),
               f32({1, 1, 2, 1}, {0, 1}), f32({2, 2}, {1, 2, 3, 4})});
    // q^T W = [1*1 + 2*3, 1*2 + 2*4] = [7, 10]; k0 = e0, k1 = e1.
    double scale = defaultScale ? 1 / std::sqrt(2.0) : 1.0;
    expectTensor(out[0], {1, 1, 1, 1},
                 {weightedMean({7 * scale, 10 * scale}, {0, 1})});
  }
}

// Tests Bahdanau's additive score va^T tanh(Wq q + Wk k), default scale 1.
TEST(ReferenceAttentionTest, AdditiveScore) {
  std::string text = doc(
      in("q", "[1, 1, 1, 2]") + ", " + in("k", "[1, 1, 2, 2]") + ", " +
          in("v", "[1, 1, 2, 1]") + ", " + in("wq", "[3, 2]") + ", " +
          in("wk", "[3, 2]") + ", " + in("va", "[3]"),
      attn(
          R"("score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"})"));
  std::vector<F64Tensor> out = evaluate(
      text,
      {f32({1, 1, 1, 2}, {0.5, 0.25}), f32({1, 1, 2, 2}, {1, 0, 0, 1}),
       f32({1, 1, 2, 1}, {1, 0}),
       f32({3, 2}, {1, 0, 0, 1, 1, 1}),  // Wq q = [0.5, 0.25, 0.75]
       f32({3, 2}, {1, 0, 0, -1, 2, 0}), // Wk k0 = [1, 0, 2], k1 = [0, -1, 0]
       f32({3}, {1, 2, -1})});
  double s0 = std::tanh(1.5) + 2 * std::tanh(0.25) - std::tanh(2.75);
  double s1 = std::tanh(0.5) + 2 * std::tanh(-0.75) - std::tanh(0.75);
  expectTensor(out[0], {1, 1, 1, 1}, {weightedMean({s0, s1}, {1, 0})});
}

// Tests the cosine score (q.k)/(|q||k|), default scale 1 and scale 10.
TEST(ReferenceAttentionTest, CosineScore) {
  for (double scale : {1.0, 10.0}) {
    SCOPED_TRACE(scale);
    std::string text =
        doc(in("q", "[1, 1, 1, 2]") + ", " + in("k", "[1, 1, 2, 2]") + ", " +
                in("v", "[1, 1, 2, 1]"),
            attn(scale == 1.0 ? R"("score": {"kind": "cosine"})"
                              : R"("score": {"kind": "cosine"}, "scale": 10)"));
    std::vector<F64Tensor> out = evaluate(
        text, {f32({1, 1, 1, 2}, {3, 4}), f32({1, 1, 2, 2}, {1, 0, 0, 2}),
               f32({1, 1, 2, 1}, {1, 0})});
    // cos = 3/5 and 8/(5*2) = 4/5.
    expectTensor(out[0], {1, 1, 1, 1},
                 {weightedMean({0.6 * scale, 0.8 * scale}, {1, 0})});
  }
}

// Tests GQA: query head h reads kv head h / (Hq / Hkv).
TEST(ReferenceAttentionTest, GroupedQueryHeadMapping) {
  std::string text =
      doc(in("q", "[1, 4, 1, 1]") + ", " + in("k", "[1, 2, 2, 1]") + ", " +
              in("v", "[1, 2, 2, 1]"),
          attn());
  std::vector<F64Tensor> out =
      evaluate(text, {zeros({1, 4, 1, 1}), zeros({1, 2, 2, 1}),
                      f32({1, 2, 2, 1}, {1, 3, 10, 20})});
  expectTensor(out[0], {1, 4, 1, 1}, {2, 2, 15, 15});
}

// Tests the bshd layout: q, k, v and the output are [B, S, H, D].
TEST(ReferenceAttentionTest, BshdLayout) {
  std::string text = doc(
      in("q", "[1, 2, 2, 1]") + ", " + in("k", "[1, 2, 2, 1]") + ", " +
          in("v", "[1, 2, 2, 1]"),
      attn(
          R"("layout": "bshd", "mask": [{"kind": "causal"}], "return_lse": true)"),
      R"(["o", "o.lse"])");
  // v[t][h]: head 0 has values 1, 3; head 1 has 10, 30.
  std::vector<F64Tensor> out =
      evaluate(text, {zeros({1, 2, 2, 1}), zeros({1, 2, 2, 1}),
                      f32({1, 2, 2, 1}, {1, 10, 3, 30})});
  // Row 0 keeps key 0, row 1 keeps both; output [B, S, H, D].
  expectTensor(out[0], {1, 2, 2, 1}, {1, 10, 2, 20});
  // lse stays [B, Hq, S].
  expectTensor(out[1], {1, 2, 2}, {0, std::log(2.0), 0, std::log(2.0)});
}

// Tests a bool tensor mask (true = attend) intersected with causal.
TEST(ReferenceAttentionTest, TensorMaskAndCausal) {
  std::string text = doc(
      in("q", "[1, 1, 3, 1]") + ", " + in("k", "[1, 1, 3, 1]") + ", " +
          in("v", "[1, 1, 3, 1]") + ", " + in("keep", "[3, 3]", "bool"),
      attn(
          R"("mask": [{"kind": "tensor", "input": "keep"}, {"kind": "causal"}])"));
  std::vector<F64Tensor> out =
      evaluate(text, {zeros({1, 1, 3, 1}), zeros({1, 1, 3, 1}),
                      f32({1, 1, 3, 1}, {1, 2, 4}),
                      boolean({3, 3}, {0, 1, 1, 1, 0, 1, 0, 1, 1})});
  // Row 0: causal keeps {0}, tensor drops it -> 0. Row 1: {0}. Row 2: {1, 2}.
  expectTensor(out[0], {1, 1, 3, 1}, {0, 1, 3});
}

// Tests that f16 inputs are evaluated from their exact values and the output
// has v's dtype in the graph.
TEST(ReferenceAttentionTest, HalfInputs) {
  std::string text = doc(in("q", "[1, 1, 1, 1]", "f16") + ", " +
                             in("k", "[1, 1, 2, 1]", "f16") + ", " +
                             in("v", "[1, 1, 2, 1]", "f16"),
                         attn(R"("scale": 1.0)"));
  Graph graph = parseGraph(text, "g.json");
  EXPECT_EQ(graph.type(graph.outputs[0]).dtype, DType::F16);
  std::vector<F64Tensor> out =
      evaluateReference(graph, {},
                        {fromDoubles(DType::F16, {1, 1, 1, 1}, {0.5}),
                         fromDoubles(DType::F16, {1, 1, 2, 1}, {2, -2}),
                         fromDoubles(DType::F16, {1, 1, 2, 1}, {1.5, -0.25})});
  expectTensor(out[0], {1, 1, 1, 1}, {weightedMean({1, -1}, {1.5, -0.25})});
}

//===----------------------------------------------------------------------===//
// Primitive ops
//===----------------------------------------------------------------------===//

// Tests numpy's 1-D matmul rules: vector.vector is a scalar, vector x matrix
// and matrix x vector drop the added axis.
TEST(ReferencePrimitiveTest, MatmulOneDimensional) {
  std::string text = doc(in("a", "[3]") + ", " + in("b", "[3]") + ", " +
                             in("m", "[3, 2]") + ", " + in("n", "[2, 3]"),
                         R"({"name": "dot", "op": "matmul", "a": "a", "b": "b"},
             {"name": "vm", "op": "matmul", "a": "a", "b": "m"},
             {"name": "mv", "op": "matmul", "a": "n", "b": "a"},
             {"name": "vt", "op": "matmul", "a": "a", "b": "n", "transpose_b": true})",
                         R"(["dot", "vm", "mv", "vt"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({3}, {1, 2, 3}), f32({3}, {4, 5, 6}),
                      f32({3, 2}, {1, 2, 3, 4, 5, 6}),
                      f32({2, 3}, {1, 0, -1, 2, 1, 0})});
  expectTensor(out[0], {}, {32});
  expectTensor(out[1], {2}, {22, 28});
  expectTensor(out[2], {2}, {-2, 4});
  expectTensor(out[3], {2}, {-2, 4});
}

// Tests batched matmul with broadcast batch axes and transpose_b.
TEST(ReferencePrimitiveTest, MatmulBatchBroadcast) {
  std::string text =
      doc(in("a", "[2, 1, 1, 2]") + ", " + in("b", "[3, 2, 1]") + ", " +
              in("c", "[1, 2]") + ", " + in("d", "[3, 2]"),
          R"({"name": "ab", "op": "matmul", "a": "a", "b": "b"},
             {"name": "cd", "op": "matmul", "a": "c", "b": "d", "transpose_b": true})",
          R"(["ab", "cd"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 1, 1, 2}, {1, 2, 3, 4}),
                      f32({3, 2, 1}, {1, 0, 0, 1, 1, 1}), f32({1, 2}, {1, 2}),
                      f32({3, 2}, {1, 0, 0, 1, 1, 1})});
  // ab[i][j] = a_i . b_j.
  expectTensor(out[0], {2, 3, 1, 1}, {1, 2, 3, 3, 4, 7});
  expectTensor(out[1], {1, 3}, {1, 2, 3});
}

TEST(ReferencePrimitiveTest, LinearWithBias) {
  std::string text = doc(
      in("x", "[2, 1, 3]") + ", " + in("w", "[2, 3]") + ", " + in("b", "[2]"),
      R"({"name": "o", "op": "linear", "x": "x", "w": "w", "b": "b"},
                            {"name": "nb", "op": "linear", "x": "x", "w": "w"})",
      R"(["o", "nb"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 1, 3}, {1, 2, 3, 4, 5, 6}),
                      f32({2, 3}, {1, 0, 0, 0, 1, 1}), f32({2}, {10, 20})});
  expectTensor(out[0], {2, 1, 2}, {11, 25, 14, 31});
  expectTensor(out[1], {2, 1, 2}, {1, 5, 4, 11});
}

TEST(ReferencePrimitiveTest, ElementwiseBroadcast) {
  std::string text =
      doc(in("a", "[2, 1]") + ", " + in("b", "[3]"),
          R"({"name": "add", "op": "add", "a": "a", "b": "b"},
             {"name": "sub", "op": "sub", "a": "a", "b": "b"},
             {"name": "mul", "op": "mul", "a": "b", "b": "a"},
             {"name": "div", "op": "div", "a": "a", "b": "b"},
             {"name": "sc", "op": "scale", "x": "b", "value": -0.5},
             {"name": "ng", "op": "neg", "x": "a"},
             {"name": "th", "op": "tanh", "x": "a"},
             {"name": "ex", "op": "exp", "x": "a"})",
          R"(["add", "sub", "mul", "div", "sc", "ng", "th", "ex"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 1}, {1, 2}), f32({3}, {10, 20, 40})});
  expectTensor(out[0], {2, 3}, {11, 21, 41, 12, 22, 42});
  expectTensor(out[1], {2, 3}, {-9, -19, -39, -8, -18, -38});
  expectTensor(out[2], {2, 3}, {10, 20, 40, 20, 40, 80});
  expectTensor(out[3], {2, 3}, {0.1, 0.05, 0.025, 0.2, 0.1, 0.05});
  expectTensor(out[4], {3}, {-5, -10, -20});
  expectTensor(out[5], {2, 1}, {-1, -2});
  expectTensor(out[6], {2, 1}, {std::tanh(1.0), std::tanh(2.0)});
  expectTensor(out[7], {2, 1}, {std::exp(1.0), std::exp(2.0)});
}

TEST(ReferencePrimitiveTest, SoftmaxAlongEitherAxis) {
  std::string text =
      doc(in("x", "[2, 2]"),
          R"({"name": "s0", "op": "softmax", "x": "x", "axis": 0},
                            {"name": "s1", "op": "softmax", "x": "x", "axis": -1},
                            {"name": "sd", "op": "softmax", "x": "x"})",
          R"(["s0", "s1", "sd"])");
  std::vector<F64Tensor> out = evaluate(text, {f32({2, 2}, {0, 1, 2, 3})});
  const double e = std::exp(1.0), e2 = std::exp(2.0);
  // Columns {0, 2} and {1, 3}; rows {0, 1} and {2, 3}.
  expectTensor(out[0], {2, 2},
               {1 / (1 + e2), 1 / (1 + e2), e2 / (1 + e2), e2 / (1 + e2)});
  expectTensor(out[1], {2, 2},
               {1 / (1 + e), e / (1 + e), 1 / (1 + e), e / (1 + e)});
  expectTensor(out[2], {2, 2},
               {1 / (1 + e), e / (1 + e), 1 / (1 + e), e / (1 + e)});
}

// Tests that softmax of a slice that is all -inf is all 0 (the project's
// decision, matching fully masked attention rows) and that masked_fill puts
// -inf where the mask is true.
TEST(ReferencePrimitiveTest, MaskedFillAndSoftmaxOfAllMinusInf) {
  std::string text = doc(
      in("x", "[2, 3]") + ", " + in("m", "[2, 3]", "bool"),
      R"({"name": "f", "op": "masked_fill", "x": "x", "mask": "m", "value": "-inf"},
             {"name": "p", "op": "softmax", "x": "f"})",
      R"(["f", "p"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 3}, {1, 2, 3, 1, 9, 1}),
                      boolean({2, 3}, {1, 1, 1, 0, 1, 0})});
  expectTensor(out[0], {2, 3}, {-kInf, -kInf, -kInf, 1, -kInf, 1});
  expectTensor(out[1], {2, 3}, {0, 0, 0, 0.5, 0, 0.5});
}

TEST(ReferencePrimitiveTest, MaskedFillNumberWithBroadcastMask) {
  std::string text = doc(
      in("x", "[2, 3]") + ", " + in("m", "[3]", "bool"),
      R"({"name": "o", "op": "masked_fill", "x": "x", "mask": "m", "value": -7.5})");
  std::vector<F64Tensor> out = evaluate(
      text, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), boolean({3}, {0, 1, 0})});
  expectTensor(out[0], {2, 3}, {1, -7.5, 3, 4, -7.5, 6});
}

// Tests causal_mask sets j > i + T - S to -inf, for S > T and S < T.
TEST(ReferencePrimitiveTest, CausalMask) {
  std::string text = doc(in("tall", "[3, 2]") + ", " + in("wide", "[2, 3]"),
                         R"({"name": "a", "op": "causal_mask", "x": "tall"},
                            {"name": "b", "op": "causal_mask", "x": "wide"})",
                         R"(["a", "b"])");
  std::vector<F64Tensor> out = evaluate(
      text, {f32({3, 2}, {1, 2, 3, 4, 5, 6}), f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  // S = 3 > T = 2: i' = i - 1.
  expectTensor(out[0], {3, 2}, {-kInf, -kInf, 3, -kInf, 5, 6});
  // S = 2 < T = 3: i' = i + 1.
  expectTensor(out[1], {2, 3}, {1, 2, -kInf, 4, 5, 6});
}

// Tests causal_mask on a batched [B, H, S, T] tensor.
TEST(ReferencePrimitiveTest, CausalMaskBatched) {
  std::string text = doc(in("x", "[2, 2, 2]"),
                         R"({"name": "o", "op": "causal_mask", "x": "x"})");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})});
  expectTensor(out[0], {2, 2, 2}, {1, -kInf, 3, 4, 5, -kInf, 7, 8});
}

TEST(ReferencePrimitiveTest, ReshapeTransposeUnsqueeze) {
  std::string text =
      doc(in("x", "[2, 3]") + ", " + in("y", "[2, 3, 4]"),
          R"({"name": "r", "op": "reshape", "x": "x", "shape": [3, -1]},
             {"name": "t", "op": "transpose", "x": "x", "perm": [1, 0]},
             {"name": "u", "op": "unsqueeze", "x": "x", "axis": 1},
             {"name": "t3", "op": "transpose", "x": "y", "perm": [2, 0, 1]})",
          R"(["r", "t", "u", "t3"])");
  std::vector<double> y(24);
  for (int i = 0; i < 24; ++i)
    y[i] = i;
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({2, 3, 4}, y)});
  expectTensor(out[0], {3, 2}, {1, 2, 3, 4, 5, 6});
  expectTensor(out[1], {3, 2}, {1, 4, 2, 5, 3, 6});
  expectTensor(out[2], {2, 1, 3}, {1, 2, 3, 4, 5, 6});
  // t3[c][a][b] = y[a][b][c] = 12a + 4b + c.
  std::vector<double> expected;
  for (int c = 0; c < 4; ++c)
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        expected.push_back(12 * a + 4 * b + c);
  expectTensor(out[3], {4, 2, 3}, expected);
}

// Tests repeat_interleave semantics: [a, b] times 2 is [a, a, b, b].
TEST(ReferencePrimitiveTest, RepeatInterleaves) {
  std::string text =
      doc(in("v", "[2]") + ", " + in("x", "[2, 2]"),
          R"({"name": "r", "op": "repeat", "x": "v", "axis": 0, "times": 2},
             {"name": "r0", "op": "repeat", "x": "x", "axis": 0, "times": 3},
             {"name": "r1", "op": "repeat", "x": "x", "axis": -1, "times": 2})",
          R"(["r", "r0", "r1"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2}, {5, 7}), f32({2, 2}, {1, 2, 3, 4})});
  expectTensor(out[0], {4}, {5, 5, 7, 7});
  expectTensor(out[1], {6, 2}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  expectTensor(out[2], {2, 4}, {1, 1, 2, 2, 3, 3, 4, 4});
}

// Tests cos and sin (in radians) and slice x[..., start:end, ...] along the
// first, a middle and the last axis (negative axes count from the end).
TEST(ReferencePrimitiveTest, CosSinAndSlice) {
  std::string text = doc(in("a", "[3]") + ", " + in("x", "[2, 3, 4]"),
                         R"({"name": "c", "op": "cos", "x": "a"},
             {"name": "s", "op": "sin", "x": "a"},
             {"name": "s0", "op": "slice", "x": "x", "axis": 0, "start": 1, "end": 2},
             {"name": "s1", "op": "slice", "x": "x", "axis": -2, "start": 1, "end": 3},
             {"name": "s2", "op": "slice", "x": "x", "axis": 2, "start": 0, "end": 3},
             {"name": "all", "op": "slice", "x": "x", "axis": -1, "start": 0, "end": 4})",
                         R"(["c", "s", "s0", "s1", "s2", "all"])");
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i)
    x[i] = i;
  std::vector<F64Tensor> out =
      evaluate(text, {f32({3}, {0, 0.5, -2}), f32({2, 3, 4}, x)});
  expectTensor(out[0], {3}, {1, std::cos(0.5), std::cos(-2.0)});
  expectTensor(out[1], {3}, {0, std::sin(0.5), std::sin(-2.0)});
  // x[a][b][c] = 12a + 4b + c.
  expectTensor(out[2], {1, 3, 4},
               {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23});
  expectTensor(out[3], {2, 2, 4},
               {4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23});
  expectTensor(
      out[4], {2, 3, 3},
      {0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, 16, 17, 18, 20, 21, 22});
  expectTensor(out[5], {2, 3, 4}, x);
}

// Tests Llama's rotate_half, concat(-x[..., D/2:], x[..., :D/2]), written
// with slice, neg and concat, and the rotary embedding x·cos +
// rotate_half(x)·sin with cos/sin tables from positions · inv_freq: position 0
// leaves x as it is, and each pair (x_i, x_{i+D/2}) is rotated by its angle.
TEST(ReferencePrimitiveTest, RotaryEmbedding) {
  std::string text =
      doc(in("x", "[2, 4]") + ", " + in("pos", "[2, 1]") + ", " +
              in("inv_freq", "[2]"),
          R"({"name": "f", "op": "mul", "a": "pos", "b": "inv_freq"},
             {"name": "emb", "op": "concat", "inputs": ["f", "f"], "axis": -1},
             {"name": "cos", "op": "cos", "x": "emb"},
             {"name": "sin", "op": "sin", "x": "emb"},
             {"name": "x1", "op": "slice", "x": "x", "axis": -1, "start": 0, "end": 2},
             {"name": "x2", "op": "slice", "x": "x", "axis": -1, "start": 2, "end": 4},
             {"name": "nx2", "op": "neg", "x": "x2"},
             {"name": "rh", "op": "concat", "inputs": ["nx2", "x1"], "axis": -1},
             {"name": "xc", "op": "mul", "a": "x", "b": "cos"},
             {"name": "rs", "op": "mul", "a": "rh", "b": "sin"},
             {"name": "y", "op": "add", "a": "xc", "b": "rs"})",
          R"(["rh", "y"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                      f32({2, 1}, {0, 3}), f32({2}, {1, 0.25})});
  expectTensor(out[0], {2, 4}, {-3, -4, 1, 2, -7, -8, 5, 6});
  // Row 1 at position 3: angles 3 and 0.75.
  const double c0 = std::cos(3.0), s0 = std::sin(3.0), c1 = std::cos(0.75),
               s1 = std::sin(0.75);
  expectTensor(out[1], {2, 4},
               {1, 2, 3, 4, 5 * c0 - 7 * s0, 6 * c1 - 8 * s1, 7 * c0 + 5 * s0,
                8 * c1 + 6 * s1});
}

TEST(ReferencePrimitiveTest, ReduceSum) {
  std::string text =
      doc(in("x", "[2, 3]"),
          R"({"name": "a", "op": "reduce_sum", "x": "x", "axis": 0},
             {"name": "b", "op": "reduce_sum", "x": "x", "axis": -1, "keepdims": true},
             {"name": "c", "op": "reduce_sum", "x": "x", "axis": 0, "keepdims": true})",
          R"(["a", "b", "c"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({2, 3}, {1, 2, 3, 4, 5, 6})});
  expectTensor(out[0], {3}, {5, 7, 9});
  expectTensor(out[1], {2, 1}, {6, 15});
  expectTensor(out[2], {1, 3}, {5, 7, 9});
}

TEST(ReferencePrimitiveTest, Concat) {
  std::string text = doc(
      in("a", "[1, 2]") + ", " + in("b", "[2, 2]") + ", " + in("c", "[2, 1]"),
      R"({"name": "rows", "op": "concat", "inputs": ["a", "b", "a"], "axis": 0},
             {"name": "cols", "op": "concat", "inputs": ["c", "b"], "axis": -1})",
      R"(["rows", "cols"])");
  std::vector<F64Tensor> out =
      evaluate(text, {f32({1, 2}, {1, 2}), f32({2, 2}, {3, 4, 5, 6}),
                      f32({2, 1}, {7, 8})});
  expectTensor(out[0], {4, 2}, {1, 2, 3, 4, 5, 6, 1, 2});
  expectTensor(out[1], {2, 3}, {7, 3, 4, 8, 5, 6});
}

// Tests that an input listed as an output comes back unchanged, converted
// exactly from its dtype (i32 and bool too).
TEST(ReferencePrimitiveTest, InputsAsOutputs) {
  std::string text = doc(in("x", "[3]", "i32") + ", " + in("m", "[2]", "bool") +
                             ", " + in("h", "[2]", "bf16"),
                         "", R"(["m", "x", "h"])");
  std::vector<F64Tensor> out =
      evaluate(text, {i32({3}, {-5, 0, 7}), boolean({2}, {1, 0}),
                      fromDoubles(DType::BF16, {2}, {1.5, -0.0078125})});
  expectTensor(out[0], {2}, {1, 0});
  expectTensor(out[1], {3}, {-5, 0, 7});
  expectTensor(out[2], {2}, {1.5, -0.0078125});
}

} // namespace
