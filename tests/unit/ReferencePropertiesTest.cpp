//===- ReferencePropertiesTest.cpp - Invariants of the float64 reference --===//
//
// Properties that must hold on random inputs of odd sizes (S = 7, T = 13,
// D = 5): symmetries of attention, equivalences between the fused op and the
// primitive chains an exporter writes, and the documented defaults.
//
//===----------------------------------------------------------------------===//

#include "Driver/Inputs.h"
#include "Graph/Graph.h"
#include "Reference/Reference.h"
#include "Support/Tensor.h"

#include <gtest/gtest.h>

#include "GraphDocuments.h"
#include <algorithm>

#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

using namespace attnc;
using namespace attnc::testing;

namespace {

constexpr double kTolerance = 1e-12;

std::string shape4(int a, int b, int c, int d) {
  return "[" + std::to_string(a) + ", " + std::to_string(b) + ", " +
         std::to_string(c) + ", " + std::to_string(d) + "]";
}

/// Random inputs for every graph input, as `attnc run` draws them.
std::vector<Tensor> randomInputs(const Graph &graph, const DimBindings &dims,
                                 uint64_t seed) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    inputs.push_back(randomInput(graph, dims, int(i), seed));
  return inputs;
}

/// Expects two tensors to agree elementwise within `tolerance`, with
/// infinities equal and no NaN.
void expectClose(const F64Tensor &actual, const F64Tensor &expected,
                 double tolerance = kTolerance) {
  ASSERT_EQ(actual.shape, expected.shape);
  ASSERT_EQ(actual.data.size(), expected.data.size());
  for (size_t i = 0; i < actual.data.size(); ++i) {
    SCOPED_TRACE("element " + std::to_string(i));
    ASSERT_FALSE(std::isnan(actual.data[i]));
    ASSERT_FALSE(std::isnan(expected.data[i]));
    if (std::isinf(expected.data[i]))
      EXPECT_EQ(actual.data[i], expected.data[i]);
    else
      EXPECT_NEAR(actual.data[i], expected.data[i], tolerance);
  }
}

/// Permutes axis `axis` of a 4-D tensor: result[..., p, ...] =
/// tensor[..., perm[p], ...].
Tensor permuteAxis(const Tensor &tensor, int axis,
                   const std::vector<int64_t> &perm) {
  std::vector<double> values = toDoubles(tensor), result(values.size());
  const std::vector<int64_t> &s = tensor.shape;
  int64_t inner = 1, outer = 1;
  for (int d = axis + 1; d < int(s.size()); ++d)
    inner *= s[d];
  for (int d = 0; d < axis; ++d)
    outer *= s[d];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < s[axis]; ++p)
      for (int64_t x = 0; x < inner; ++x)
        result[(o * s[axis] + p) * inner + x] =
            values[(o * s[axis] + perm[p]) * inner + x];
  return fromDoubles(tensor.dtype, s, result);
}

std::vector<int64_t> randomPermutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 random(seed);
  std::shuffle(perm.begin(), perm.end(), random);
  // Make sure it is not the identity.
  if (n > 1 && std::is_sorted(perm.begin(), perm.end()))
    std::swap(perm[0], perm[1]);
  return perm;
}

/// The attention inputs B=2, Hq=3, S=7, T=13, Dk=5, Dv=4 (bhsd).
const int B = 2, H = 3, S = 7, T = 13, D = 5, Dv = 4;

std::string qkvInputs(int hq = H, int hkv = H, int s = S, int t = T) {
  return in("q", shape4(B, hq, s, D)) + ", " + in("k", shape4(B, hkv, t, D)) +
         ", " + in("v", shape4(B, hkv, t, Dv));
}

//===----------------------------------------------------------------------===//
// Symmetries
//===----------------------------------------------------------------------===//

// Tests that permuting the queries permutes the output rows (and lse).
TEST(ReferencePropertiesTest, PermutingQueriesPermutesOutputRows) {
  Graph graph = parseGraph(doc(qkvInputs() + ", " + in("len", "[2]", "i32") +
                                   ", " + in("pb", shape4(1, H, 1, T)),
                               attn(R"("softcap": 3.0, "return_lse": true,
                  "mask": [{"kind": "key_length", "input": "len"}],
                  "bias": [{"kind": "tensor", "input": "pb"}])"),
                               R"(["o", "o.lse"])"),
                           "g.json");
  std::vector<Tensor> inputs = randomInputs(graph, {}, 1);
  inputs[3] = fromDoubles(DType::I32, {2}, {9, 13});
  std::vector<F64Tensor> base = evaluateReference(graph, {}, inputs);

  std::vector<int64_t> perm = randomPermutation(S, 7);
  inputs[0] = permuteAxis(inputs[0], 2, perm);
  std::vector<F64Tensor> permuted = evaluateReference(graph, {}, inputs);

  // Row i of the permuted output is row perm[i] of the base output.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        for (int64_t d = 0; d < Dv; ++d)
          EXPECT_NEAR(permuted[0].data[((b * H + h) * S + i) * Dv + d],
                      base[0].data[((b * H + h) * S + perm[i]) * Dv + d],
                      kTolerance);
        EXPECT_NEAR(permuted[1].data[(b * H + h) * S + i],
                    base[1].data[(b * H + h) * S + perm[i]], kTolerance);
      }
}

// Tests that permuting key/value pairs together leaves the output and lse
// unchanged when no mask depends on key positions.
TEST(ReferencePropertiesTest, PermutingKeyValuePairsChangesNothing) {
  for (const char *score : {R"({"kind": "dot"})", R"({"kind": "cosine"})"}) {
    SCOPED_TRACE(score);
    Graph graph = parseGraph(
        doc(qkvInputs(H, 1),
            attn(std::string(
                     R"("return_lse": true, "softcap": 2.5, "score": )") +
                 score),
            R"(["o", "o.lse"])"),
        "g.json");
    std::vector<Tensor> inputs = randomInputs(graph, {}, 2);
    std::vector<F64Tensor> base = evaluateReference(graph, {}, inputs);
    std::vector<int64_t> perm = randomPermutation(T, 11);
    inputs[1] = permuteAxis(inputs[1], 2, perm);
    inputs[2] = permuteAxis(inputs[2], 2, perm);
    std::vector<F64Tensor> permuted = evaluateReference(graph, {}, inputs);
    expectClose(permuted[0], base[0]);
    expectClose(permuted[1], base[1]);
    // Permuting only the keys does change it.
    inputs[2] = randomInputs(graph, {}, 2)[2];
    std::vector<F64Tensor> keysOnly = evaluateReference(graph, {}, inputs);
    double difference = 0;
    for (size_t i = 0; i < base[0].data.size(); ++i)
      difference =
          std::max(difference, std::abs(keysOnly[0].data[i] - base[0].data[i]));
    EXPECT_GT(difference, 1e-3);
  }
}

// Tests that the probabilities sum to 1: with v all ones, every row that
// keeps a key outputs exactly 1, and a row that keeps none outputs 0.
TEST(ReferencePropertiesTest, ProbabilitiesSumToOne) {
  for (int s : {S, 17}) {
    SCOPED_TRACE("S=" + std::to_string(s));
    Graph graph = parseGraph(
        doc(qkvInputs(6, 2, s, T) + ", " + in("len", "[2]", "i32"),
            attn(
                R"("mask": [{"kind": "causal"}, {"kind": "key_length", "input": "len"}],
                    "bias": [{"kind": "alibi"}], "softcap": 5.0)")),
        "g.json");
    std::vector<Tensor> inputs = randomInputs(graph, {}, 3);
    inputs[2] = f32({B, 2, T, Dv}, std::vector<double>(B * 2 * T * Dv, 1.0));
    inputs[3] = fromDoubles(DType::I32, {2}, {0, 10});
    std::vector<F64Tensor> out = evaluateReference(graph, {}, inputs);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < 6; ++h)
        for (int64_t i = 0; i < s; ++i) {
          // Batch 0 keeps no key; in batch 1 query i keeps keys
          // j <= i + T - s and j < 10.
          bool anyKept = b == 1 && i + T - s >= 0;
          for (int64_t d = 0; d < Dv; ++d)
            EXPECT_NEAR(out[0].data[((b * 6 + h) * s + i) * Dv + d],
                        anyKept ? 1.0 : 0.0, kTolerance)
                << "b=" << b << " h=" << h << " i=" << i;
        }
  }
}

// Tests that an exporter graph's softmax sums to 1 along its axis, for every
// axis.
TEST(ReferencePropertiesTest, PrimitiveSoftmaxSumsToOne) {
  for (int axis : {0, 1, 2, -1}) {
    SCOPED_TRACE(axis);
    std::string a = std::to_string(axis);
    Graph graph = parseGraph(
        doc(in("x", "[3, 7, 5]"),
            R"({"name": "p", "op": "softmax", "x": "x", "axis": )" + a +
                R"(}, {"name": "o", "op": "reduce_sum", "x": "p", "axis": )" +
                a + "}"),
        "g.json");
    std::vector<Tensor> inputs = randomInputs(graph, {}, 4);
    std::vector<F64Tensor> out = evaluateReference(graph, {}, inputs);
    for (double sum : out[0].data)
      EXPECT_NEAR(sum, 1.0, kTolerance);
  }
}

// Tests that rows whose keys are all masked (by a tensor mask) output exactly
// 0 and lse -inf, while every other row is finite.
TEST(ReferencePropertiesTest, FullyMaskedRowsAreZero) {
  Graph graph = parseGraph(
      doc(qkvInputs() + ", " + in("keep", shape4(B, 1, S, T), "bool"),
          attn(
              R"("return_lse": true, "mask": [{"kind": "tensor", "input": "keep"}])"),
          R"(["o", "o.lse"])"),
      "g.json");
  std::vector<Tensor> inputs = randomInputs(graph, {}, 5);
  std::vector<double> keep = toDoubles(inputs[3]);
  // Drop every key of rows (b=0, i=2) and (b=1, i=6); keep key 0 elsewhere.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = 0; j < T; ++j) {
        bool dropped = (b == 0 && i == 2) || (b == 1 && i == 6);
        double &entry = keep[(b * S + i) * T + j];
        if (dropped)
          entry = 0;
        else if (j == 0)
          entry = 1;
      }
  inputs[3] = fromDoubles(DType::Bool, {B, 1, S, T}, keep);
  std::vector<F64Tensor> out = evaluateReference(graph, {}, inputs);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        bool dropped = (b == 0 && i == 2) || (b == 1 && i == 6);
        double lse = out[1].data[(b * H + h) * S + i];
        if (dropped)
          EXPECT_EQ(lse, -kInf);
        else
          EXPECT_TRUE(std::isfinite(lse));
        for (int64_t d = 0; d < Dv; ++d) {
          double value = out[0].data[((b * H + h) * S + i) * Dv + d];
          if (dropped)
            EXPECT_EQ(value, 0.0);
          else
            EXPECT_TRUE(std::isfinite(value));
        }
      }
}

//===----------------------------------------------------------------------===//
// Equivalences
//===----------------------------------------------------------------------===//

// Tests that GQA (Hq = 6, Hkv = 2) and MQA (Hkv = 1) equal the same attention
// with k and v heads explicitly repeat_interleave'd to Hq.
TEST(ReferencePropertiesTest, GroupedQueryEqualsRepeatedHeads) {
  for (int hkv : {2, 1, 3}) {
    SCOPED_TRACE("Hkv=" + std::to_string(hkv));
    std::string times = std::to_string(6 / hkv);
    std::string options =
        R"("return_lse": true, "mask": [{"kind": "causal"}], "bias": [{"kind": "alibi"}])";
    std::string inputs = qkvInputs(6, hkv);
    Graph fused =
        parseGraph(doc(inputs, attn(options), R"(["o", "o.lse"])"), "g.json");
    Graph repeated = parseGraph(
        doc(inputs,
            R"({"name": "kr", "op": "repeat", "x": "k", "axis": 1, "times": )" +
                times +
                R"(}, {"name": "vr", "op": "repeat", "x": "v", "axis": 1, "times": )" +
                times + "}, " + attn(options, "o", "q", "kr", "vr"),
            R"(["o", "o.lse"])"),
        "g.json");
    std::vector<Tensor> values = randomInputs(fused, {}, 6);
    std::vector<F64Tensor> a = evaluateReference(fused, {}, values);
    std::vector<F64Tensor> b = evaluateReference(repeated, {}, values);
    expectClose(a[0], b[0]);
    expectClose(a[1], b[1]);
  }
}

// Tests that the bshd layout equals bhsd with q, k, v transposed in and the
// output transposed back, for every score kind, with GQA, masks and biases.
TEST(ReferencePropertiesTest, BshdEqualsTransposedBhsd) {
  std::string inputs =
      in("q", shape4(B, S, 6, D)) + ", " + in("k", shape4(B, T, 2, D)) + ", " +
      in("v", shape4(B, T, 2, Dv)) + ", " + in("pb", shape4(1, 6, S, T)) +
      ", " + in("w", "[5, 5]") + ", " + in("wq", "[3, 5]") + ", " +
      in("wk", "[3, 5]") + ", " + in("va", "[3]");
  for (const char *score :
       {R"({"kind": "dot"})", R"({"kind": "general", "w": "w"})",
        R"({"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"})",
        R"({"kind": "cosine"})"}) {
    SCOPED_TRACE(score);
    std::string options =
        std::string(R"("score": )") + score +
        R"(, "return_lse": true, "mask": [{"kind": "causal"}, {"kind": "window", "left": 4, "right": 1}],
           "bias": [{"kind": "alibi"}, {"kind": "tensor", "input": "pb"}])";
    Graph bshd = parseGraph(
        doc(inputs, attn(std::string(R"("layout": "bshd", )") + options),
            R"(["o", "o.lse"])"),
        "g.json");
    Graph bhsd = parseGraph(
        doc(inputs,
            R"({"name": "qt", "op": "transpose", "x": "q", "perm": [0, 2, 1, 3]},
               {"name": "kt", "op": "transpose", "x": "k", "perm": [0, 2, 1, 3]},
               {"name": "vt", "op": "transpose", "x": "v", "perm": [0, 2, 1, 3]}, )" +
                attn(options, "a", "qt", "kt", "vt") +
                R"(, {"name": "o", "op": "transpose", "x": "a", "perm": [0, 2, 1, 3]})",
            R"(["o", "a.lse"])"),
        "g.json");
    std::vector<Tensor> values = randomInputs(bshd, {}, 8);
    std::vector<F64Tensor> x = evaluateReference(bshd, {}, values);
    std::vector<F64Tensor> y = evaluateReference(bhsd, {}, values);
    EXPECT_EQ(x[0].shape, (std::vector<int64_t>{B, S, 6, Dv}));
    expectClose(x[0], y[0]);
    expectClose(x[1], y[1]);
  }
}

// Tests that the exporter chain (matmul, scale, causal_mask, softmax, matmul)
// equals the fused attention op with the same scale and a causal mask, with
// run-time sizes and GQA written as repeat.
TEST(ReferencePropertiesTest, ExporterChainEqualsFusedCausalAttention) {
  std::string dims = R"({"B": null, "S": null, "T": null})";
  std::string inputs = in("q", R"(["B", 6, "S", 5])") + ", " +
                       in("k", R"(["B", 2, "T", 5])") + ", " +
                       in("v", R"(["B", 2, "T", 4])");
  Graph exporter = parseGraph(
      doc(inputs,
          R"({"name": "kr", "op": "repeat", "x": "k", "axis": 1, "times": 3},
             {"name": "vr", "op": "repeat", "x": "v", "axis": 1, "times": 3},
             {"name": "s", "op": "matmul", "a": "q", "b": "kr", "transpose_b": true},
             {"name": "ss", "op": "scale", "x": "s", "value": 0.3},
             {"name": "sm", "op": "causal_mask", "x": "ss"},
             {"name": "p", "op": "softmax", "x": "sm", "axis": -1},
             {"name": "o", "op": "matmul", "a": "p", "b": "vr"})",
          R"(["o"])", dims),
      "g.json");
  Graph fused = parseGraph(
      doc(inputs, attn(R"("scale": 0.3, "mask": [{"kind": "causal"}])"),
          R"(["o"])", dims),
      "g.json");
  for (auto [s, t] : {std::pair{S, T}, std::pair{T, T}, std::pair{1, T}}) {
    SCOPED_TRACE("S=" + std::to_string(s) + " T=" + std::to_string(t));
    DimBindings bindings{{"B", 2}, {"S", s}, {"T", t}};
    std::vector<Tensor> values = randomInputs(fused, bindings, 9);
    expectClose(evaluateReference(exporter, bindings, values)[0],
                evaluateReference(fused, bindings, values)[0]);
  }
}

// Tests that the exporter chain still equals the fused op for S > T, where
// whole rows of the scores are -inf: the project defines the primitive
// softmax of such a row as 0, like a fully masked attention row.
TEST(ReferencePropertiesTest, ExporterChainEqualsFusedWhenRowsAreFullyMasked) {
  std::string inputs = qkvInputs(H, H, T, S); // 13 queries, 7 keys.
  Graph exporter = parseGraph(
      doc(inputs,
          R"({"name": "s", "op": "matmul", "a": "q", "b": "k", "transpose_b": true},
             {"name": "sm", "op": "causal_mask", "x": "s"},
             {"name": "p", "op": "softmax", "x": "sm"},
             {"name": "o", "op": "matmul", "a": "p", "b": "v"})"),
      "g.json");
  Graph fused = parseGraph(
      doc(inputs, attn(R"("scale": 1, "mask": [{"kind": "causal"}])")),
      "g.json");
  std::vector<Tensor> values = randomInputs(fused, {}, 10);
  expectClose(evaluateReference(exporter, {}, values)[0],
              evaluateReference(fused, {}, values)[0]);
}

// Tests that Bahdanau's additive score written in primitives (as in
// examples/graphs/bahdanau_additive_exporter.json) equals the fused additive
// op.
TEST(ReferencePropertiesTest, AdditiveExporterEqualsFusedAdditive) {
  const int A = 6;
  std::string inputs = in("s", shape4(B, 1, S, D)) + ", " +
                       in("h", shape4(B, 1, T, D)) + ", " +
                       in("wq", "[" + std::to_string(A) + ", 5]") + ", " +
                       in("wk", "[" + std::to_string(A) + ", 5]") + ", " +
                       in("va", "[" + std::to_string(A) + ", 1]");
  Graph exporter =
      parseGraph(doc(inputs,
                     R"({"name": "qp", "op": "linear", "x": "s", "w": "wq"},
             {"name": "kp", "op": "linear", "x": "h", "w": "wk"},
             {"name": "qu", "op": "unsqueeze", "x": "qp", "axis": 3},
             {"name": "ku", "op": "unsqueeze", "x": "kp", "axis": 2},
             {"name": "e", "op": "add", "a": "qu", "b": "ku"},
             {"name": "t", "op": "tanh", "x": "e"},
             {"name": "sc", "op": "matmul", "a": "t", "b": "va"},
             {"name": "s4", "op": "reshape", "x": "sc", "shape": [2, 1, 7, 13]},
             {"name": "p", "op": "softmax", "x": "s4", "axis": -1},
             {"name": "o", "op": "matmul", "a": "p", "b": "h"})"),
                 "g.json");
  Graph fused = parseGraph(
      doc(inputs,
          R"({"name": "va1", "op": "reshape", "x": "va", "shape": [-1]}, )" +
              attn(
                  R"("score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va1"})",
                  "o", "s", "h", "h")),
      "g.json");
  std::vector<Tensor> values = randomInputs(fused, {}, 12);
  expectClose(evaluateReference(exporter, {}, values)[0],
              evaluateReference(fused, {}, values)[0]);
}

// Tests that "scale": "default" (or no scale) equals an explicit 1/sqrt(Dk)
// for dot and general scores, and 1 for additive and cosine.
TEST(ReferencePropertiesTest, DefaultScale) {
  const std::string inverseSqrtD = "0.44721359549995793928"; // 1/sqrt(5)
  std::string inputs = qkvInputs() + ", " + in("w", "[5, 5]") + ", " +
                       in("wq", "[3, 5]") + ", " + in("wk", "[3, 5]") + ", " +
                       in("va", "[3]");
  struct Case {
    std::string score, scale;
  };
  std::vector<Case> cases = {
      {R"({"kind": "dot"})", inverseSqrtD},
      {R"({"kind": "general", "w": "w"})", inverseSqrtD},
      {R"({"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"})", "1"},
      {R"({"kind": "cosine"})", "1"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.score);
    Graph graph = parseGraph(
        doc(inputs,
            attn(R"("score": )" + c.score + R"(, "scale": "default")", "a") +
                ", " + attn(R"("score": )" + c.score, "b") + ", " +
                attn(R"("score": )" + c.score + R"(, "scale": )" + c.scale,
                     "c") +
                ", " +
                attn(R"("score": )" + c.score + R"(, "scale": 0.9)", "d"),
            R"(["a", "b", "c", "d"])"),
        "g.json");
    std::vector<Tensor> values = randomInputs(graph, {}, 13);
    std::vector<F64Tensor> out = evaluateReference(graph, {}, values);
    expectClose(out[0], out[2]);
    expectClose(out[1], out[2]);
    // A different scale gives a different result.
    double difference = 0;
    for (size_t i = 0; i < out[0].data.size(); ++i)
      difference =
          std::max(difference, std::abs(out[0].data[i] - out[3].data[i]));
    EXPECT_GT(difference, 1e-6);
  }
}

// Tests that masks combine by AND: causal + window(L, R) equals
// window(L, 0); and two tensor masks equal their elementwise AND.
TEST(ReferencePropertiesTest, MasksIntersect) {
  for (auto [s, t] : {std::pair{S, T}, std::pair{T, S}, std::pair{S, S}}) {
    SCOPED_TRACE("S=" + std::to_string(s) + " T=" + std::to_string(t));
    Graph graph = parseGraph(
        doc(qkvInputs(H, H, s, t),
            attn(
                R"("return_lse": true, "mask": [{"kind": "causal"}, {"kind": "window", "left": 3, "right": 2}])",
                "a") +
                ", " +
                attn(
                    R"("return_lse": true, "mask": [{"kind": "window", "left": 3, "right": 0}])",
                    "b"),
            R"(["a", "b", "a.lse", "b.lse"])"),
        "g.json");
    std::vector<Tensor> values = randomInputs(graph, {}, 14);
    std::vector<F64Tensor> out = evaluateReference(graph, {}, values);
    expectClose(out[0], out[1]);
    expectClose(out[2], out[3]);
  }

  Graph graph = parseGraph(
      doc(qkvInputs() + ", " + in("m1", shape4(B, 1, S, T), "bool") + ", " +
              in("m2", shape4(1, H, 1, T), "bool") + ", " +
              in("both", shape4(B, H, S, T), "bool"),
          attn(
              R"("mask": [{"kind": "tensor", "input": "m1"}, {"kind": "tensor", "input": "m2"}])",
              "a") +
              ", " +
              attn(R"("mask": [{"kind": "tensor", "input": "both"}])", "b"),
          R"(["a", "b"])"),
      "g.json");
  std::vector<Tensor> values = randomInputs(graph, {}, 15);
  std::vector<double> m1 = toDoubles(values[3]), m2 = toDoubles(values[4]);
  std::vector<double> both(B * H * S * T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < T; ++j)
          both[((b * H + h) * S + i) * T + j] =
              m1[(b * S + i) * T + j] != 0 && m2[h * T + j] != 0;
  values[5] = fromDoubles(DType::Bool, {B, H, S, T}, both);
  std::vector<F64Tensor> out = evaluateReference(graph, {}, values);
  expectClose(out[0], out[1]);
}

// Tests that a key_length mask equals a bool tensor mask that keeps j < len.
TEST(ReferencePropertiesTest, KeyLengthEqualsTensorMask) {
  Graph graph = parseGraph(
      doc(qkvInputs() + ", " + in("len", "[2]", "i32") + ", " +
              in("keep", shape4(B, 1, 1, T), "bool"),
          attn(
              R"("return_lse": true, "mask": [{"kind": "key_length", "input": "len"}])",
              "a") +
              ", " +
              attn(
                  R"("return_lse": true, "mask": [{"kind": "tensor", "input": "keep"}])",
                  "b"),
          R"(["a", "b", "a.lse", "b.lse"])"),
      "g.json");
  std::vector<Tensor> values = randomInputs(graph, {}, 16);
  std::vector<double> lengths = toDoubles(values[3]);
  std::vector<double> keep(B * T);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < T; ++j)
      keep[b * T + j] = j < lengths[b];
  values[4] = fromDoubles(DType::Bool, {B, 1, 1, T}, keep);
  std::vector<F64Tensor> out = evaluateReference(graph, {}, values);
  expectClose(out[0], out[1]);
  expectClose(out[2], out[3]);
}

// Tests lse by merging attention over two halves of the keys (split-KV):
// o = (e^lse1 o1 + e^lse2 o2) / (e^lse1 + e^lse2), lse = log(e^lse1 + e^lse2).
TEST(ReferencePropertiesTest, LseMergesSplitKeys) {
  const int t1 = 5, t2 = T - t1;
  std::string inputs =
      in("q", shape4(B, H, S, D)) + ", " + in("k1", shape4(B, H, t1, D)) +
      ", " + in("k2", shape4(B, H, t2, D)) + ", " +
      in("v1", shape4(B, H, t1, Dv)) + ", " + in("v2", shape4(B, H, t2, Dv));
  Graph graph = parseGraph(
      doc(inputs,
          R"({"name": "k", "op": "concat", "inputs": ["k1", "k2"], "axis": 2},
             {"name": "v", "op": "concat", "inputs": ["v1", "v2"], "axis": 2}, )" +
              attn(R"("return_lse": true, "scale": 0.7)", "full") + ", " +
              attn(R"("return_lse": true, "scale": 0.7)", "a", "q", "k1",
                   "v1") +
              ", " +
              attn(R"("return_lse": true, "scale": 0.7)", "b", "q", "k2", "v2"),
          R"(["full", "full.lse", "a", "a.lse", "b", "b.lse"])"),
      "g.json");
  std::vector<Tensor> values = randomInputs(graph, {}, 17);
  std::vector<F64Tensor> out = evaluateReference(graph, {}, values);
  F64Tensor merged = out[0], mergedLse = out[1];
  for (int64_t row = 0; row < B * H * S; ++row) {
    double l1 = out[3].data[row], l2 = out[5].data[row];
    double m = std::max(l1, l2);
    double w1 = std::exp(l1 - m), w2 = std::exp(l2 - m);
    mergedLse.data[row] = m + std::log(w1 + w2);
    for (int64_t d = 0; d < Dv; ++d)
      merged.data[row * Dv + d] =
          (w1 * out[2].data[row * Dv + d] + w2 * out[4].data[row * Dv + d]) /
          (w1 + w2);
  }
  expectClose(out[0], merged);
  expectClose(out[1], mergedLse);
}

// Tests that adding the same bias to every key of a row leaves the output
// unchanged and shifts lse by that bias.
TEST(ReferencePropertiesTest, RowConstantBiasShiftsOnlyLse) {
  Graph graph = parseGraph(
      doc(qkvInputs() + ", " + in("pb", shape4(B, H, S, 1)),
          attn(R"("return_lse": true, "mask": [{"kind": "causal"}])", "a") +
              ", " +
              attn(R"("return_lse": true, "mask": [{"kind": "causal"}],
                      "bias": [{"kind": "tensor", "input": "pb"}])",
                   "b"),
          R"(["a", "b", "a.lse", "b.lse"])"),
      "g.json");
  std::vector<Tensor> values = randomInputs(graph, {}, 18);
  std::vector<F64Tensor> out = evaluateReference(graph, {}, values);
  expectClose(out[0], out[1]);
  std::vector<double> bias = toDoubles(values[3]);
  F64Tensor shifted = out[2];
  for (size_t row = 0; row < shifted.data.size(); ++row)
    shifted.data[row] += bias[row];
  expectClose(out[3], shifted);
}

// Tests that the reference is deterministic and that randomInput gives each
// input its own stream (changing the seed changes every input).
TEST(ReferencePropertiesTest, RandomInputsAreReproducible) {
  Graph graph = parseGraph(doc(qkvInputs(), attn()), "g.json");
  std::vector<Tensor> a = randomInputs(graph, {}, 19);
  std::vector<Tensor> b = randomInputs(graph, {}, 19);
  std::vector<Tensor> c = randomInputs(graph, {}, 20);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].data, b[i].data);
    EXPECT_NE(a[i].data, c[i].data);
  }
  expectClose(evaluateReference(graph, {}, a)[0],
              evaluateReference(graph, {}, b)[0], 0.0);
}

} // namespace
