//===- LowerTileOps.cpp - attn-lower-tile-ops ------------------------------===//
//
// The tile ops of attn-tile-attention as linalg on tensors: a portable
// lowering any backend can take through upstream bufferization and its own
// code generation, and the one that makes the tiled IR runnable (and so
// checkable against the float64 oracle) before a backend brings faster
// micro-kernels for the same ops.
//
//   attn.tile_scores     q·kᵀ (general: (q W)·kᵀ; additive: Σa va·tanh(Wq q
//                        + Wk k); cosine: q·k / norms clamped at 1e-12), then
//                        the scale and the softcap, in f32
//   attn.tile_mask       -inf where semantics::keyVisible does not hold
//   attn.tile_accumulate acc + P·V
//   attn.tile_normalize  acc / l (0 for l = 0) in the output's type; lse
//
//===----------------------------------------------------------------------===//

#include "Attn/Transforms/IndexArith.h"
#include "Attn/Transforms/LinalgGeneric.h"
#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineMap.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERTILEOPSPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;
constexpr IteratorType kParallel = IteratorType::parallel;
constexpr IteratorType kReduction = IteratorType::reduction;

/// Builds the linalg code of one tile op at its place.
class TileLowering {
public:
  TileLowering(OpBuilder &b, Location loc)
      : b(b), loc(loc), f32(b.getF32Type()) {}

  Value scores(TileScoresOp op);
  Value mask(TileMaskOp op);
  Value transform(TileTransformOp op);
  SmallVector<Value> softmaxUpdate(TileSoftmaxUpdateOp op);
  Value accumulate(TileAccumulateOp op);
  SmallVector<Value> normalize(TileNormalizeOp op);

private:
  OpBuilder &b;
  Location loc;
  Type f32;

  /// A map of `dims` loop dims onto the listed ones.
  AffineMap map(unsigned dims, ArrayRef<unsigned> results) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d : results)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(dims, 0, exprs, b.getContext());
  }
  Value constant(double value) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(value));
  }
  static Value toF32(OpBuilder &nested, Location loc, Value x) {
    if (x.getType().isF32())
      return x;
    return nested.create<arith::ExtFOp>(loc, nested.getF32Type(), x);
  }

  /// An empty tensor of `type`, its dynamic sizes read from `carriers`
  /// (tensor, axis) in order.
  Value empty(RankedTensorType type,
              ArrayRef<std::pair<Value, int64_t>> carriers) {
    SmallVector<Value> dynamic;
    for (auto [axis, carrier] : llvm::enumerate(carriers))
      if (type.isDynamicDim(axis))
        dynamic.push_back(
            b.create<tensor::DimOp>(loc, carrier.first, carrier.second));
    return b.create<tensor::EmptyOp>(loc, type, dynamic);
  }
  /// A zero f32 tensor whose axes are those of `carriers`.
  Value zeros(ArrayRef<std::pair<Value, int64_t>> carriers) {
    SmallVector<int64_t> shape;
    for (auto [tensor, axis] : carriers)
      shape.push_back(cast<RankedTensorType>(tensor.getType()).getDimSize(axis));
    Value init = empty(RankedTensorType::get(shape, f32), carriers);
    return b.create<linalg::FillOp>(loc, constant(0.0), init).getResult(0);
  }

  /// out(d0, d1) += x · y over loops (d0, d1, d2): the products the score
  /// kinds and P·V are made of, accumulated in f32.
  Value contract(Value x, ArrayRef<unsigned> xDims, Value y,
                 ArrayRef<unsigned> yDims, Value out) {
    return b
        .create<linalg::GenericOp>(
            loc, out.getType(), ValueRange{x, y}, ValueRange{out},
            ArrayRef<AffineMap>{map(3, xDims), map(3, yDims), map(3, {0, 1})},
            ArrayRef<IteratorType>{kParallel, kParallel, kReduction},
            [](OpBuilder &nested, Location loc, ValueRange args) {
              Value product = nested.create<arith::MulFOp>(
                  loc, toF32(nested, loc, args[0]),
                  toF32(nested, loc, args[1]));
              nested.create<linalg::YieldOp>(
                  loc, ValueRange{
                           nested.create<arith::AddFOp>(loc, args[2], product)});
            })
        .getResult(0);
  }
  /// out(d0) = Σ x(d0, d1)²: the squared norms of a cosine score's rows.
  Value squaredNorms(Value x) {
    Value out = zeros({{x, 0}});
    return b
        .create<linalg::GenericOp>(
            loc, out.getType(), ValueRange{x}, ValueRange{out},
            ArrayRef<AffineMap>{map(2, {0, 1}), map(2, {0})},
            ArrayRef<IteratorType>{kParallel, kReduction},
            [](OpBuilder &nested, Location loc, ValueRange args) {
              Value v = toF32(nested, loc, args[0]);
              nested.create<linalg::YieldOp>(
                  loc, ValueRange{nested.create<math::FmaOp>(loc, v, v,
                                                             args[1])});
            })
        .getResult(0);
  }
};

Value TileLowering::scores(TileScoresOp op) {
  Value q = op.getQuery(), k = op.getKey();
  // Loops (row, key, depth); the raw score of each kind first.
  Value raw;
  switch (op.getScore()) {
  case ScoreKind::dot:
  case ScoreKind::cosine:
    raw = contract(q, {0, 2}, k, {1, 2}, zeros({{q, 0}, {k, 0}}));
    break;
  case ScoreKind::general: {
    // (q W)[r, e] = Σd q[r, d] W[d, e], then its dot with k.
    Value w = op.getGeneralWeight();
    Value qw = contract(q, {0, 2}, w, {2, 1}, zeros({{q, 0}, {w, 1}}));
    raw = contract(qw, {0, 2}, k, {1, 2}, zeros({{q, 0}, {k, 0}}));
    break;
  }
  case ScoreKind::additive: {
    // Σa va[a] tanh((Wq q)[r, a] + (Wk k)[c, a]).
    Value wq = op.getQueryWeight(), wk = op.getKeyWeight();
    Value va = op.getScoreVector();
    Value qa = contract(q, {0, 2}, wq, {1, 2}, zeros({{q, 0}, {wq, 0}}));
    Value ka = contract(k, {0, 2}, wk, {1, 2}, zeros({{k, 0}, {wk, 0}}));
    Value out = zeros({{q, 0}, {k, 0}});
    // va is [A] or [A, 1].
    AffineMap vaMap = map(3, {2});
    if (cast<RankedTensorType>(va.getType()).getRank() == 2)
      vaMap = AffineMap::get(
          3, 0, {b.getAffineDimExpr(2), b.getAffineConstantExpr(0)},
          b.getContext());
    raw = b.create<linalg::GenericOp>(
               loc, out.getType(), ValueRange{qa, ka, va}, ValueRange{out},
               ArrayRef<AffineMap>{map(3, {0, 2}), map(3, {1, 2}), vaMap,
                                   map(3, {0, 1})},
               ArrayRef<IteratorType>{kParallel, kParallel, kReduction},
               [](OpBuilder &nested, Location loc, ValueRange args) {
                 Value hidden = nested.create<math::TanhOp>(
                     loc, nested.create<arith::AddFOp>(loc, args[0], args[1]));
                 nested.create<linalg::YieldOp>(
                     loc, ValueRange{nested.create<math::FmaOp>(
                              loc, toF32(nested, loc, args[2]), hidden,
                              args[3])});
               })
              .getResult(0);
    break;
  }
  }

  // The scale (1/sqrt(Dk) read at run time when Dk is), then the softcap.
  semantics::ScaleRule rule = op.getScaleRule();
  Value factor = constant(rule.factor);
  if (rule.overSqrtKeyDim) {
    Value depth = b.create<arith::IndexCastOp>(
        loc, b.getI64Type(), b.create<tensor::DimOp>(loc, q, 1));
    factor = b.create<arith::DivFOp>(
        loc, factor,
        b.create<math::SqrtOp>(
            loc, b.create<arith::SIToFPOp>(loc, f32, depth)));
  }
  std::optional<double> softcap;
  if (auto cap = op.getSoftcap())
    softcap = cap->convertToDouble();
  bool cosine = op.getScore() == ScoreKind::cosine;
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (cosine) {
    inputs = {squaredNorms(q), squaredNorms(k)};
    maps = {map(2, {0}), map(2, {1})};
  }
  maps.push_back(map(2, {0, 1}));
  Value epilogue =
      b.create<linalg::GenericOp>(
           loc, raw.getType(), inputs, ValueRange{raw}, maps,
           ArrayRef<IteratorType>{kParallel, kParallel},
           [&](OpBuilder &nested, Location loc, ValueRange args) {
             Value s = args.back();
             if (cosine) {
               // Norms clamped at 1e-12 (graph format decision (i)).
               auto norm = [&](Value squared) {
                 return nested.create<arith::MaximumFOp>(
                     loc, nested.create<math::SqrtOp>(loc, squared),
                     nested.create<arith::ConstantOp>(
                         loc, nested.getF32FloatAttr(1e-12f)));
               };
               s = nested.create<arith::DivFOp>(
                   loc, s,
                   nested.create<arith::MulFOp>(loc, norm(args[0]),
                                                norm(args[1])));
             }
             s = nested.create<arith::MulFOp>(loc, s, factor);
             if (softcap) {
               Value c = nested.create<arith::ConstantOp>(
                   loc, nested.getF32FloatAttr(float(*softcap)));
               s = nested.create<arith::MulFOp>(
                   loc, c,
                   nested.create<math::TanhOp>(
                       loc, nested.create<arith::DivFOp>(loc, s, c)));
             }
             nested.create<linalg::YieldOp>(loc, ValueRange{s});
           })
          .getResult(0);
  // The scores' type may be more static than the op's result.
  if (epilogue.getType() != op.getType())
    epilogue = b.create<tensor::CastOp>(loc, op.getType(), epilogue);
  return epilogue;
}

Value TileLowering::mask(TileMaskOp op) {
  semantics::KeyVisibility rule = op.getKeyVisibility();
  Value position = op.getPosition(), key = op.getKey();
  return b
      .create<linalg::GenericOp>(
          loc, op.getType(), ValueRange{}, ValueRange{op.getScores()},
          ArrayRef<AffineMap>{map(2, {0, 1})},
          ArrayRef<IteratorType>{kParallel, kParallel},
          [&](OpBuilder &nested, Location loc, ValueRange args) {
            IndexArith a{nested, loc};
            Value row = nested.create<linalg::IndexOp>(loc, 0);
            Value p = op.getFirstRow()
                          ? a.add(position, semantics::packedQuery(
                                                a, a.add(op.getFirstRow(), row),
                                                Value(op.getQueries())))
                          : a.add(position, row);
            Value j = a.add(key, nested.create<linalg::IndexOp>(loc, 1));
            // The tile never reaches past the keys: j + 1 stands for T.
            Value visible = semantics::keyVisible(a, rule, p, j,
                                                  a.add(j, a.constant(1)));
            Value minusInf = nested.create<arith::ConstantOp>(
                loc, nested.getF32FloatAttr(
                         -std::numeric_limits<float>::infinity()));
            nested.create<linalg::YieldOp>(
                loc, ValueRange{nested.create<arith::SelectOp>(
                         loc, visible, args[0], minusInf)});
          })
      .getResult(0);
}

/// The dims of a tensor broadcast to [B, Hq, S, T], read once outside the
/// element loop: attributes where static, `tensor.dim` values otherwise.
static SmallVector<OpFoldResult> broadcastDims(OpBuilder &b, Location loc,
                                               Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SmallVector<OpFoldResult> dims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(type.isDynamicDim(d)
                       ? OpFoldResult(b.create<tensor::DimOp>(loc, tensor, d)
                                          .getResult())
                       : OpFoldResult(b.getIndexAttr(type.getDimSize(d))));
  return dims;
}

/// The indices of (b, h, i, j) in a tensor broadcast to [B, Hq, S, T]: its
/// dims are the trailing ones, and a dim of size 1 reads index 0 (a
/// run-time size decides at run time).
static SmallVector<Value> broadcastIndices(OpBuilder &b, Location loc,
                                           ArrayRef<OpFoldResult> dims,
                                           ArrayRef<Value> coordinates) {
  int64_t rank = dims.size();
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  SmallVector<Value> indices;
  for (int64_t d = 0; d < rank; ++d) {
    Value coordinate = coordinates[4 - rank + d];
    std::optional<int64_t> known = getConstantIntValue(dims[d]);
    if (known) {
      indices.push_back(*known == 1 ? zero : coordinate);
      continue;
    }
    Value isOne = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq, dims[d].get<Value>(),
        b.create<arith::ConstantIndexOp>(loc, 1));
    indices.push_back(b.create<arith::SelectOp>(loc, isOne, zero, coordinate));
  }
  return indices;
}

Value TileLowering::transform(TileTransformOp op) {
  SmallVector<SmallVector<OpFoldResult>> biasDims, maskDims;
  for (Value bias : op.getBiases())
    biasDims.push_back(broadcastDims(b, loc, bias));
  for (Value mask : op.getMasks())
    maskDims.push_back(broadcastDims(b, loc, mask));
  std::optional<ArrayRef<bool>> drops;
  if (auto attr = op.getMaskDrops())
    drops = *attr;
  Value S = op.getQueryLen(), T = op.getKeyLen(), group = op.getGroup();
  return buildGeneric(
      b, loc, ValueRange{}, op.getScores(), {map(2, {0, 1})},
      {kParallel, kParallel}, [&](OpBuilder &g, Location at, ValueRange args) {
        IndexArith a{g, at};
        Value s = args[0];
        Value row = a.add(op.getQuery(), g.create<linalg::IndexOp>(at, 0));
        Value key = a.add(op.getKey(), g.create<linalg::IndexOp>(at, 1));
        Value head = op.getHead(), query = row;
        if (group) {
          head = semantics::packedQueryHead(a, head, group, row, S);
          query = semantics::packedQuery(a, row, S);
        }
        SmallVector<Value> coordinates = {op.getBatch(), head, query, key};
        for (auto [bias, dims] : llvm::zip_equal(op.getBiases(), biasDims)) {
          Value x = g.create<tensor::ExtractOp>(
              at, bias, broadcastIndices(g, at, dims, coordinates));
          if (!x.getType().isF32())
            x = cast<FloatType>(x.getType()).getWidth() < 32
                    ? g.create<arith::ExtFOp>(at, g.getF32Type(), x).getResult()
                    : g.create<arith::TruncFOp>(at, g.getF32Type(), x)
                          .getResult();
          s = g.create<arith::AddFOp>(at, s, x);
        }
        if (Value slopes = op.getAlibiSlopes()) {
          // -slope_h · |p - j|: distances stay exact in i64.
          Value position = semantics::alignedPosition(a, query, S, T);
          Value distance = g.create<math::AbsIOp>(
              at, g.create<arith::IndexCastOp>(at, g.getI64Type(),
                                               a.sub(position, key)));
          Value slope =
              g.create<tensor::ExtractOp>(at, slopes, ValueRange{head});
          s = g.create<arith::SubFOp>(
              at, s,
              g.create<arith::MulFOp>(
                  at, g.create<arith::SIToFPOp>(at, g.getF32Type(), distance),
                  slope));
        }
        Value keep;
        for (auto [n, mask] : llvm::enumerate(op.getMasks())) {
          Value bit = g.create<tensor::ExtractOp>(
              at, mask, broadcastIndices(g, at, maskDims[n], coordinates));
          if (drops && (*drops)[n])
            bit = g.create<arith::XOrIOp>(
                at, bit, g.create<arith::ConstantIntOp>(at, 1, 1));
          keep = keep ? g.create<arith::AndIOp>(at, keep, bit).getResult()
                      : bit;
        }
        if (keep)
          s = g.create<arith::SelectOp>(
              at, keep, s,
              g.create<arith::ConstantOp>(
                  at, g.getF32FloatAttr(
                          -std::numeric_limits<float>::infinity())));
        return s;
      });
}

SmallVector<Value> TileLowering::softmaxUpdate(TileSoftmaxUpdateOp op) {
  // In natural units through exp2: exp(x) = exp2(x · log2 e).
  constexpr double kLog2e = 1.4426950408889634;
  Value s = op.getScores(), max = op.getMax(), sum = op.getSum();
  auto rowType = cast<RankedTensorType>(max.getType());
  auto tileType = cast<RankedTensorType>(s.getType());
  AffineMap id2 = map(2, {0, 1}), rowOf2 = map(2, {0}), id1 = map(1, {0});
  Value newMax =
      buildGeneric(b, loc, s, max, {id2, rowOf2}, {kParallel, kReduction},
                   [](OpBuilder &g, Location at, ValueRange args) {
                     return g.create<arith::MaximumFOp>(at, args[0], args[1]);
                   });
  Value minusInf = constant(-std::numeric_limits<double>::infinity());
  Value rowEmpty = empty(rowType, {{max, 0}});
  // A row without a key so far keeps m = -inf: shift by 0 instead, so that
  // exp(-inf - shift) is 0, never NaN.
  Value shift = buildGeneric(
      b, loc, newMax, rowEmpty, {id1, id1}, {kParallel},
      [&](OpBuilder &g, Location at, ValueRange args) {
        Value none = g.create<arith::CmpFOp>(at, arith::CmpFPredicate::OEQ,
                                             args[0], minusInf);
        return g.create<arith::SelectOp>(at, none, constant(0.0), args[0]);
      });
  auto exp = [&](OpBuilder &g, Location at, Value x, Value m) {
    Value shifted = g.create<arith::SubFOp>(at, x, m);
    return g.create<math::Exp2Op>(
        at, g.create<arith::MulFOp>(
                at, shifted,
                g.create<arith::ConstantOp>(at, g.getF32FloatAttr(kLog2e))));
  };
  Value alpha = buildGeneric(b, loc, ValueRange{max, shift}, rowEmpty,
                             {id1, id1, id1}, {kParallel},
                             [&](OpBuilder &g, Location at, ValueRange args) {
                               return exp(g, at, args[0], args[1]);
                             });
  Value p = buildGeneric(b, loc, ValueRange{s, shift},
                         empty(tileType, {{s, 0}, {s, 1}}), {id2, rowOf2, id2},
                         {kParallel, kParallel},
                         [&](OpBuilder &g, Location at, ValueRange args) {
                           return exp(g, at, args[0], args[1]);
                         });
  Value scaledSum =
      buildGeneric(b, loc, ValueRange{sum, alpha}, rowEmpty, {id1, id1, id1},
                   {kParallel}, [](OpBuilder &g, Location at, ValueRange args) {
                     return g.create<arith::MulFOp>(at, args[0], args[1]);
                   });
  Value newSum =
      buildGeneric(b, loc, p, scaledSum, {id2, rowOf2}, {kParallel, kReduction},
                   [](OpBuilder &g, Location at, ValueRange args) {
                     return g.create<arith::AddFOp>(at, args[0], args[1]);
                   });
  return {p, newMax, newSum, alpha};
}

Value TileLowering::accumulate(TileAccumulateOp op) {
  Value acc = op.getAccumulator();
  if (Value rescale = op.getRescale()) {
    auto accType = cast<RankedTensorType>(acc.getType());
    acc = buildGeneric(
        b, loc, ValueRange{acc, rescale}, empty(accType, {{acc, 0}, {acc, 1}}),
        {map(2, {0, 1}), map(2, {0}), map(2, {0, 1})}, {kParallel, kParallel},
        [](OpBuilder &g, Location at, ValueRange args) {
          return g.create<arith::MulFOp>(at, args[0], args[1]);
        });
  }
  // Loops (row, value column, key): acc[r, d] += P[r, k] · V[k, d].
  return contract(op.getProbabilities(), {0, 2}, op.getValue(), {2, 1}, acc);
}

SmallVector<Value> TileLowering::normalize(TileNormalizeOp op) {
  Value acc = op.getAccumulator(), sum = op.getSum();
  auto outputType = cast<RankedTensorType>(op.getOutput().getType());
  Type element = outputType.getElementType();
  Value output = b.create<linalg::GenericOp>(
                      loc, outputType, ValueRange{acc, sum},
                      ValueRange{empty(outputType, {{acc, 0}, {acc, 1}})},
                      ArrayRef<AffineMap>{map(2, {0, 1}), map(2, {0}),
                                          map(2, {0, 1})},
                      ArrayRef<IteratorType>{kParallel, kParallel},
                      [&](OpBuilder &nested, Location loc, ValueRange args) {
                        Value zero = nested.create<arith::ConstantOp>(
                            loc, nested.getF32FloatAttr(0.0f));
                        Value empty = nested.create<arith::CmpFOp>(
                            loc, arith::CmpFPredicate::OEQ, args[1], zero);
                        Value value = nested.create<arith::SelectOp>(
                            loc, empty, zero,
                            nested.create<arith::DivFOp>(loc, args[0],
                                                         args[1]));
                        if (!element.isF32())
                          value = nested.create<arith::TruncFOp>(loc, element,
                                                                 value);
                        nested.create<linalg::YieldOp>(loc, ValueRange{value});
                      })
                      .getResult(0);
  SmallVector<Value> results{output};
  if (Value max = op.getMax()) {
    // lse = m + log l: -inf for a row without keys (l = 0).
    auto lseType = cast<RankedTensorType>(op.getLse().getType());
    results.push_back(
        b.create<linalg::GenericOp>(
             loc, lseType, ValueRange{max, sum},
             ValueRange{empty(lseType, {{sum, 0}})},
             ArrayRef<AffineMap>{map(1, {0}), map(1, {0}), map(1, {0})},
             ArrayRef<IteratorType>{kParallel},
             [](OpBuilder &nested, Location loc, ValueRange args) {
               nested.create<linalg::YieldOp>(
                   loc, ValueRange{nested.create<arith::AddFOp>(
                            loc, args[0],
                            nested.create<math::LogOp>(loc, args[1]))});
             })
            .getResult(0));
  }
  return results;
}

struct LowerTileOpsPass
    : attn::impl::LowerTileOpsPassBase<LowerTileOpsPass> {
  void runOnOperation() override {
    SmallVector<Operation *> tileOps;
    getOperation().walk([&](Operation *op) {
      if (isa<TileScoresOp, TileTransformOp, TileMaskOp, TileSoftmaxUpdateOp,
              TileAccumulateOp, TileNormalizeOp>(op))
        tileOps.push_back(op);
    });
    for (Operation *op : tileOps) {
      OpBuilder b(op);
      TileLowering lowering(b, op->getLoc());
      SmallVector<Value> replacements;
      if (auto scores = dyn_cast<TileScoresOp>(op))
        replacements = {lowering.scores(scores)};
      else if (auto transform = dyn_cast<TileTransformOp>(op))
        replacements = {lowering.transform(transform)};
      else if (auto mask = dyn_cast<TileMaskOp>(op))
        replacements = {lowering.mask(mask)};
      else if (auto update = dyn_cast<TileSoftmaxUpdateOp>(op))
        replacements = lowering.softmaxUpdate(update);
      else if (auto accumulate = dyn_cast<TileAccumulateOp>(op))
        replacements = {lowering.accumulate(accumulate)};
      else
        replacements = lowering.normalize(cast<TileNormalizeOp>(op));
      op->replaceAllUsesWith(replacements);
      op->erase();
    }
  }
};

} // namespace
