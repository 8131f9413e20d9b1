//===- AttentionReference.cpp - The attention op in float64 ---------------===//
//
// One query row at a time: every score of the row, then a two-pass softmax
// over the kept keys, then the weighted sum of values. Written to read like
// the definition in docs/graph-format.md.
//
//===----------------------------------------------------------------------===//

#include "Reference/Reference.h"

#include "Attn/IR/AttnSemantics.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnc {

std::vector<double> alibiSlopes(int64_t heads) {
  namespace semantics = mlir::attn::semantics;
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  semantics::Int64Arith a;
  std::vector<double> slopes;
  for (int64_t h = 0; h < heads; ++h) {
    semantics::SlopeFraction<int64_t> slope =
        semantics::alibiSlopeFraction(a, h, n);
    slopes.push_back(
        std::exp2(-8.0 * double(slope.numerator) / double(slope.denominator)));
  }
  return slopes;
}

namespace {

/// Reads a tensor broadcast to a 4-D [B, H, S, T] index space.
class Broadcast4D {
public:
  Broadcast4D(const F64Tensor &tensor) : data(tensor.data.data()) {
    const std::vector<int64_t> &shape = tensor.shape;
    int64_t stride = 1;
    for (int d = 3, s = int(shape.size()) - 1; s >= 0; --d, --s) {
      strides[d] = shape[s] == 1 ? 0 : stride;
      stride *= shape[s];
    }
  }
  double at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return data[b * strides[0] + h * strides[1] + i * strides[2] +
                j * strides[3]];
  }

private:
  const double *data;
  int64_t strides[4] = {0, 0, 0, 0};
};

/// Row-vector views of q, k, v in either layout.
class HeadView {
public:
  HeadView(const F64Tensor &tensor, Layout layout) : tensor(tensor) {
    const std::vector<int64_t> &s = tensor.shape;
    depth = s[3];
    bool bhsd = layout == Layout::BHSD;
    int64_t heads = bhsd ? s[1] : s[2], positions = bhsd ? s[2] : s[1];
    batchStride = s[1] * s[2] * s[3];
    headStride = bhsd ? positions * depth : depth;
    positionStride = bhsd ? depth : heads * depth;
  }
  /// The `depth` values of head h at position i of batch b.
  const double *row(int64_t b, int64_t h, int64_t i) const {
    return tensor.data.data() + b * batchStride + h * headStride +
           i * positionStride;
  }
  int64_t depth;

private:
  const F64Tensor &tensor;
  int64_t batchStride, headStride, positionStride;
};

double dot(const double *a, const double *b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += a[i] * b[i];
  return sum;
}

/// y = W x for W [rows, n] row-major.
std::vector<double> matVec(const std::vector<double> &w, const double *x,
                           int64_t rows, int64_t n) {
  std::vector<double> y(rows);
  for (int64_t r = 0; r < rows; ++r)
    y[r] = dot(&w[r * n], x, n);
  return y;
}

} // namespace

std::vector<F64Tensor>
evaluateAttention(const Graph &graph, const AttentionOp &op,
                  const DimBindings &dims,
                  const std::function<const F64Tensor &(ValueId)> &operand) {
  AttentionSizes symbolic = graph.attentionSizes(op);
  auto size = [&](const Dim &dim) { return concreteShape({dim}, dims)[0]; };
  const int64_t B = size(symbolic.batch), Hq = size(symbolic.queryHeads),
                Hkv = size(symbolic.kvHeads), S = size(symbolic.queryLen),
                T = size(symbolic.keyLen), Dk = size(symbolic.keyDim),
                Dv = size(symbolic.valueDim);
  namespace semantics = mlir::attn::semantics;
  semantics::Int64Arith arith;
  HeadView q(operand(op.q), op.layout), k(operand(op.k), op.layout),
      v(operand(op.v), op.layout);

  const double scale =
      semantics::scaleRule(op.scale, op.score.kind == ScoreKind::Dot ||
                                         op.score.kind == ScoreKind::General)
          .at(Dk);
  // Causal, window and key_length: which keys each row sees.
  semantics::KeyVisibility visibility;
  const AttentionMask *keyLengthMask = nullptr;
  for (const AttentionMask &mask : op.masks) {
    visibility.causal |= mask.kind == MaskKind::Causal;
    if (mask.kind == MaskKind::Window)
      visibility.addWindow(mask.left, mask.right);
    if (mask.kind == MaskKind::KeyLength) {
      visibility.keyLength = true;
      keyLengthMask = &mask;
    }
  }

  // Per-key precomputation that does not depend on the query.
  int64_t units = 0;                 // A, for additive scores.
  std::vector<double> keyProjection; // additive: Wk k_j, [B, Hkv, T, A].
  std::vector<double> keyNorm;       // cosine: |k_j|, [B, Hkv, T].
  if (op.score.kind == ScoreKind::Additive) {
    units = operand(*op.score.va).shape[0];
    keyProjection.resize(B * Hkv * T * units);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t j = 0; j < T; ++j) {
          std::vector<double> projected =
              matVec(operand(*op.score.wk).data, k.row(b, h, j), units, Dk);
          std::copy(projected.begin(), projected.end(),
                    &keyProjection[((b * Hkv + h) * T + j) * units]);
        }
  } else if (op.score.kind == ScoreKind::Cosine) {
    keyNorm.resize(B * Hkv * T);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t j = 0; j < T; ++j) {
          const double *key = k.row(b, h, j);
          keyNorm[(b * Hkv + h) * T + j] = std::sqrt(dot(key, key, Dk));
        }
  }

  std::vector<Broadcast4D> tensorBiases;
  std::vector<std::vector<double>> alibis; // One slope per query head each.
  for (const AttentionBias &bias : op.biases) {
    if (bias.kind == BiasKind::Tensor)
      tensorBiases.emplace_back(operand(*bias.input));
    else
      alibis.push_back(bias.input ? operand(*bias.input).data
                                  : alibiSlopes(Hq));
  }

  std::vector<Broadcast4D> tensorMasks;
  for (const AttentionMask &mask : op.masks)
    if (mask.kind == MaskKind::Tensor)
      tensorMasks.emplace_back(operand(*mask.input));

  std::vector<int64_t> outputShape = op.layout == Layout::BHSD
                                         ? std::vector<int64_t>{B, Hq, S, Dv}
                                         : std::vector<int64_t>{B, S, Hq, Dv};
  F64Tensor output{outputShape, std::vector<double>(B * Hq * S * Dv, 0.0)};
  F64Tensor lse{{B, Hq, S}, std::vector<double>(B * Hq * S)};
  const double negInf = -std::numeric_limits<double>::infinity();

  std::vector<double> scores(T);
  std::vector<bool> kept(T);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvHead = semantics::kvHeadOf(arith, h, Hq, Hkv);
      std::optional<int64_t> length; // i32 data, exact in double.
      if (keyLengthMask)
        length = int64_t(operand(*keyLengthMask->input).data[b]);
      for (int64_t i = 0; i < S; ++i) {
        const int64_t aligned = semantics::alignedPosition(arith, i, S, T);
        const double *query = q.row(b, h, i);
        std::vector<double> queryTerm; // Wq q_i or qᵀW, per score kind.
        double queryNorm = 0;
        if (op.score.kind == ScoreKind::General) {
          const std::vector<double> &w = operand(*op.score.w).data;
          queryTerm.assign(Dk, 0.0);
          for (int64_t d = 0; d < Dk; ++d)
            for (int64_t e = 0; e < Dk; ++e)
              queryTerm[e] += query[d] * w[d * Dk + e];
        } else if (op.score.kind == ScoreKind::Additive) {
          queryTerm = matVec(operand(*op.score.wq).data, query, units, Dk);
        } else if (op.score.kind == ScoreKind::Cosine) {
          queryNorm = std::sqrt(dot(query, query, Dk));
        }

        double rowMax = negInf;
        bool nanScore = false;
        for (int64_t j = 0; j < T; ++j) {
          bool keep = semantics::keyVisible(arith, visibility, aligned, j, T,
                                            length);
          for (const Broadcast4D &mask : tensorMasks)
            keep &= mask.at(b, h, i, j) != 0;
          kept[j] = keep;
          if (!keep)
            continue;

          const double *key = k.row(b, kvHead, j);
          double score = 0;
          switch (op.score.kind) {
          case ScoreKind::Dot:
            score = dot(query, key, Dk);
            break;
          case ScoreKind::General:
            score = dot(queryTerm.data(), key, Dk);
            break;
          case ScoreKind::Additive: {
            const std::vector<double> &va = operand(*op.score.va).data;
            const double *keyTerm =
                &keyProjection[((b * Hkv + kvHead) * T + j) * units];
            for (int64_t a = 0; a < units; ++a)
              score += va[a] * std::tanh(queryTerm[a] + keyTerm[a]);
            break;
          }
          case ScoreKind::Cosine: {
            // A zero vector has cosine 0 with every vector (norms clamped at
            // 1e-12, as torch.nn.functional.normalize does).
            double norms = std::max(queryNorm, 1e-12) *
                           std::max(keyNorm[(b * Hkv + kvHead) * T + j], 1e-12);
            score = dot(query, key, Dk) / norms;
            break;
          }
          }
          score *= scale;
          if (op.softcap)
            score = *op.softcap * std::tanh(score / *op.softcap);
          for (const Broadcast4D &bias : tensorBiases)
            score += bias.at(b, h, i, j);
          for (const std::vector<double> &slopes : alibis)
            score -= slopes[h] * std::abs(double(aligned - j));
          scores[j] = score;
          nanScore |= std::isnan(score);
          rowMax = std::max(rowMax, score);
        }

        double *out = output.data.data() + (op.layout == Layout::BHSD
                                                ? ((b * Hq + h) * S + i) * Dv
                                                : ((b * S + i) * Hq + h) * Dv);
        double &rowLse = lse.data[(b * Hq + h) * S + i];
        if (nanScore) {
          // IEEE propagation: a NaN among the scores a row sees (a NaN in
          // its query or a visible key) makes its softmax, output and lse
          // NaN. Masked keys are not seen, so their NaNs do not count.
          std::fill_n(out, Dv, std::numeric_limits<double>::quiet_NaN());
          rowLse = std::numeric_limits<double>::quiet_NaN();
          continue;
        }
        if (rowMax == negInf) {
          // No kept key (or every kept score is -inf): defined as 0.
          rowLse = negInf;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < T; ++j)
          if (kept[j])
            sum += std::exp(scores[j] - rowMax);
        for (int64_t j = 0; j < T; ++j) {
          if (!kept[j])
            continue;
          double p = std::exp(scores[j] - rowMax) / sum;
          const double *value = v.row(b, kvHead, j);
          for (int64_t d = 0; d < Dv; ++d)
            out[d] += p * value[d];
        }
        rowLse = rowMax + std::log(sum);
      }
    }
  }
  std::vector<F64Tensor> results{std::move(output)};
  if (op.returnLse)
    results.push_back(std::move(lse));
  return results;
}

} // namespace attnc
