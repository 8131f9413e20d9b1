//===- TileAttention.cpp - attn.attention as tiles and an online softmax --===//
//
// attn-tile-attention: the FlashAttention-2 structure of one attention op,
// on tensors, shared by every backend (docs/design/lowering-passes.md):
//
//   scf.forall (b, h, row tile) {
//     kv head = kvHeadOf(h); q tile = q[b, h, r0 : r0 + nr]
//     m = -inf, l = 0, O = 0
//     scf.for key tile j0 in visibleKeys(row tile) step key-tile {
//       s = attn.tile_scores(q tile, k tile)
//       s = biases, ALiBi, tensor masks (linalg.generic)
//       s = scf.if !blockFullyVisible { attn.tile_mask s } else { s }
//       m' = max(m, rowmax s); alpha = exp2((m - m') log2 e)
//       p = exp2((s - m') log2 e); l' = alpha l + rowsum p
//       O' = attn.tile_accumulate(p, v tile, alpha O)
//     }
//     out, lse = attn.tile_normalize(O, l, m)
//   }
//
// Every rule of the op (visible keys, the tile test, the kv head) comes from
// Attn/IR/AttnSemantics.h evaluated on `index` values.
//
//===----------------------------------------------------------------------===//

#include "Attn/Transforms/IndexArith.h"
#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_TILEATTENTIONPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr double kLog2e = 1.4426950408889634;

/// A run-time size: an attribute when some tensor carrying the dim knows
/// it, else `tensor.dim` of the first.
OpFoldResult sizeOf(OpBuilder &b, Location loc,
                    ArrayRef<std::pair<Value, int64_t>> carriers) {
  for (auto [tensor, axis] : carriers) {
    auto type = cast<RankedTensorType>(tensor.getType());
    if (!type.isDynamicDim(axis))
      return b.getIndexAttr(type.getDimSize(axis));
  }
  auto [tensor, axis] = carriers.front();
  return b.create<tensor::DimOp>(loc, tensor, axis).getResult();
}

/// The tile size along an axis of `extent` stepped by `tile`: static when
/// every tile is full (extent % tile == 0) or there is one tile, else
/// min(tile, extent - start).
OpFoldResult tileSize(IndexArith &a, OpFoldResult extent, Value start,
                      Value end, int64_t tile, bool staticAllowed) {
  if (staticAllowed)
    if (std::optional<int64_t> known = getConstantIntValue(extent)) {
      if (*known % tile == 0)
        return a.b.getIndexAttr(tile);
      if (*known < tile)
        return a.b.getIndexAttr(*known);
    }
  return a.min(a.constant(tile), a.sub(end, start));
}

Type f32(OpBuilder &b) { return b.getF32Type(); }

Value f32Constant(OpBuilder &b, Location loc, double value) {
  return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(value));
}

Value toF32(OpBuilder &b, Location loc, Value x) {
  auto type = cast<FloatType>(x.getType());
  if (type.getWidth() < 32)
    return b.create<arith::ExtFOp>(loc, f32(b), x);
  if (type.getWidth() > 32 || !type.isF32())
    return b.create<arith::TruncFOp>(loc, f32(b), x);
  return x;
}

/// A linalg.generic over `outputs` (parallel on every dim but the listed
/// reductions) reading `inputs` through `maps`; `body` gets the block's
/// arguments and returns the yielded values.
Value generic(OpBuilder &b, Location loc, ValueRange inputs, Value output,
              ArrayRef<AffineMap> maps, ArrayRef<utils::IteratorType> iterators,
              function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  return b
      .create<linalg::GenericOp>(
          loc, TypeRange{output.getType()}, inputs, ValueRange{output}, maps,
          iterators,
          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
            nested.create<linalg::YieldOp>(nestedLoc,
                                           body(nested, nestedLoc, args));
          })
      .getResult(0);
}

Value filled(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes,
             double value) {
  Value empty = b.create<tensor::EmptyOp>(loc, sizes, f32(b));
  return b
      .create<linalg::FillOp>(loc, ValueRange{f32Constant(b, loc, value)},
                              ValueRange{empty})
      .getResult(0);
}

class AttentionTiler {
public:
  AttentionTiler(RewriterBase &rewriter, AttentionOp op, int64_t rowTile,
                 int64_t keyTile)
      : b(rewriter), loc(op.getLoc()), op(op), rowTile(rowTile),
        keyTile(keyTile), axes(op.getLayoutAxes()),
        rule(op.getKeyVisibility()) {}

  LogicalResult rewrite();

private:
  RewriterBase &b;
  Location loc;
  AttentionOp op;
  int64_t rowTile, keyTile;
  semantics::LayoutAxes axes;
  semantics::KeyVisibility rule;

  // Sizes: B, Hq, Hkv, S, T, Dk, Dv.
  OpFoldResult batches, queryHeads, kvHeads, queryLen, keyLen, keyDim, valueDim;
  // Per broadcast operand (biases, then masks): its dims as index values,
  // read once outside the loops.
  SmallVector<SmallVector<OpFoldResult>> biasDims, maskDims;

  Value index(OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(b, loc, ofr);
  }
  /// Offsets, sizes and strides of the [length, depth] slice of a
  /// q/k/v-shaped tensor at (batch, head, start), in either layout.
  struct TileSlice {
    SmallVector<OpFoldResult> offsets, sizes, strides;
  };
  TileSlice tileSlice(Value batch, Value head, Value start,
                      OpFoldResult length, OpFoldResult depth);
  Value extractTile(Value tensor, Value batch, Value head, Value start,
                    OpFoldResult length, OpFoldResult depth);
  Value standardSlope(IndexArith &a, Value head);
  Value transformScores(Value scores, Value batch, Value head, Value row0,
                        Value position0, Value key0, Value slope);
  void gatherIndex(OpBuilder &nested, Location nestedLoc,
                   ArrayRef<OpFoldResult> dims, ArrayRef<Value> coordinates,
                   SmallVectorImpl<Value> &indices);
};

AttentionTiler::TileSlice
AttentionTiler::tileSlice(Value batch, Value head, Value start,
                          OpFoldResult length, OpFoldResult depth) {
  TileSlice slice{SmallVector<OpFoldResult>(4), SmallVector<OpFoldResult>(4),
                  SmallVector<OpFoldResult>(4, b.getIndexAttr(1))};
  slice.offsets[axes.batch] = batch;
  slice.offsets[axes.heads] = head;
  slice.offsets[axes.length] = start;
  slice.offsets[axes.depth] = b.getIndexAttr(0);
  slice.sizes[axes.batch] = b.getIndexAttr(1);
  slice.sizes[axes.heads] = b.getIndexAttr(1);
  slice.sizes[axes.length] = length;
  slice.sizes[axes.depth] = depth;
  return slice;
}

/// The tileSlice of `tensor`, rank-reduced to 2-D.
Value AttentionTiler::extractTile(Value tensor, Value batch, Value head,
                                  Value start, OpFoldResult length,
                                  OpFoldResult depth) {
  TileSlice slice = tileSlice(batch, head, start, length, depth);
  auto sourceType = cast<RankedTensorType>(tensor.getType());
  RankedTensorType type =
      tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
          2, sourceType, slice.offsets, slice.sizes, slice.strides);
  return b.create<tensor::ExtractSliceOp>(loc, type, tensor, slice.offsets,
                                          slice.sizes, slice.strides);
}

/// The standard ALiBi slope of query head h: n = 2^floor(log2 Hq); head
/// h < n gets 2^(-8(h+1)/n), the others every other slope of the 2n list,
/// 2^(-8(2(h-n)+1)/(2n)).
Value AttentionTiler::standardSlope(IndexArith &a, Value head) {
  Type i64 = b.getI64Type(), f64 = b.getF64Type();
  auto constant = [&](int64_t value) {
    return b.create<arith::ConstantIntOp>(loc, value, 64);
  };
  Value hq = b.create<arith::IndexCastOp>(loc, i64, index(queryHeads));
  Value leading = b.create<math::CountLeadingZerosOp>(loc, hq);
  Value one = constant(1), two = constant(2);
  Value n = b.create<arith::ShLIOp>(
      loc, one, b.create<arith::SubIOp>(loc, constant(63), leading));
  Value h = b.create<arith::IndexCastOp>(loc, i64, head);
  Value inFirst = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, h, n);
  Value numerator = b.create<arith::SelectOp>(
      loc, inFirst, b.create<arith::AddIOp>(loc, h, one),
      b.create<arith::AddIOp>(
          loc,
          b.create<arith::MulIOp>(loc, two, b.create<arith::SubIOp>(loc, h, n)),
          one));
  Value denominator = b.create<arith::SelectOp>(
      loc, inFirst, n, b.create<arith::MulIOp>(loc, two, n));
  Value ratio = b.create<arith::DivFOp>(
      loc, b.create<arith::SIToFPOp>(loc, f64, numerator),
      b.create<arith::SIToFPOp>(loc, f64, denominator));
  Value power = b.create<arith::MulFOp>(
      loc, b.create<arith::ConstantOp>(loc, b.getF64FloatAttr(-8.0)), ratio);
  return b.create<arith::TruncFOp>(loc, f32(b),
                                   b.create<math::Exp2Op>(loc, power));
}

/// Indices into a tensor broadcast to the scores [B, Hq, S, T]: a dim of
/// size 1 reads index 0 (a run-time size decides at run time).
void AttentionTiler::gatherIndex(OpBuilder &nested, Location nestedLoc,
                                 ArrayRef<OpFoldResult> dims,
                                 ArrayRef<Value> coordinates,
                                 SmallVectorImpl<Value> &indices) {
  int64_t rank = dims.size();
  Value zero = nested.create<arith::ConstantIndexOp>(nestedLoc, 0);
  for (int64_t d = 0; d < rank; ++d) {
    Value coordinate = coordinates[4 - rank + d];
    std::optional<int64_t> known = getConstantIntValue(dims[d]);
    if (known && *known == 1) {
      indices.push_back(zero);
    } else if (known) {
      indices.push_back(coordinate);
    } else {
      Value one = nested.create<arith::ConstantIndexOp>(nestedLoc, 1);
      Value isOne = nested.create<arith::CmpIOp>(
          nestedLoc, arith::CmpIPredicate::eq, dims[d].get<Value>(), one);
      indices.push_back(
          nested.create<arith::SelectOp>(nestedLoc, isOne, zero, coordinate));
    }
  }
}

/// Biases, ALiBi and tensor masks on the scores tile, one element at a
/// time: row r is query row0 + r at position position0 + r, column c key
/// key0 + c.
Value AttentionTiler::transformScores(Value scores, Value batch, Value head,
                                      Value row0, Value position0, Value key0,
                                      Value slope) {
  if (op.getBiases().empty() && op.getMasks().empty() && !slope)
    return scores;
  std::optional<ArrayRef<bool>> drops;
  if (auto attr = op.getMaskDrops())
    drops = *attr;
  MLIRContext *context = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(2, context);
  return generic(
      b, loc, ValueRange{}, scores, {identity},
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value s = args[0];
        Value r = nested.create<linalg::IndexOp>(nestedLoc, 0);
        Value c = nested.create<linalg::IndexOp>(nestedLoc, 1);
        IndexArith a{nested, nestedLoc};
        Value query = a.add(row0, r), key = a.add(key0, c);
        SmallVector<Value> coordinates = {batch, head, query, key};
        for (auto [bias, dims] : llvm::zip_equal(op.getBiases(), biasDims)) {
          SmallVector<Value> indices;
          gatherIndex(nested, nestedLoc, dims, coordinates, indices);
          Value x = nested.create<tensor::ExtractOp>(nestedLoc, bias, indices);
          s = nested.create<arith::AddFOp>(nestedLoc, s,
                                           toF32(nested, nestedLoc, x));
        }
        if (slope) {
          // -slope · |p - j|: distances stay exact in i64.
          Value distance = nested.create<math::AbsIOp>(
              nestedLoc, nested.create<arith::IndexCastOp>(
                             nestedLoc, nested.getI64Type(),
                             a.sub(a.add(position0, r), key)));
          Value penalty = nested.create<arith::MulFOp>(
              nestedLoc,
              nested.create<arith::SIToFPOp>(nestedLoc, f32(nested), distance),
              slope);
          s = nested.create<arith::SubFOp>(nestedLoc, s, penalty);
        }
        Value keep;
        for (auto [n, mask] : llvm::enumerate(op.getMasks())) {
          SmallVector<Value> indices;
          gatherIndex(nested, nestedLoc, maskDims[n], coordinates, indices);
          Value bit =
              nested.create<tensor::ExtractOp>(nestedLoc, mask, indices);
          if (drops && (*drops)[n])
            bit = nested.create<arith::XOrIOp>(
                nestedLoc, bit,
                nested.create<arith::ConstantIntOp>(nestedLoc, 1, 1));
          keep = keep ? nested.create<arith::AndIOp>(nestedLoc, keep, bit)
                            .getResult()
                      : bit;
        }
        if (keep)
          s = nested.create<arith::SelectOp>(
              nestedLoc, keep, s,
              f32Constant(nested, nestedLoc,
                          -std::numeric_limits<double>::infinity()));
        return s;
      });
}

LogicalResult AttentionTiler::rewrite() {
  Value q = op.getQuery(), k = op.getKey(), v = op.getValue();
  Value out = op.getOutput(), lse = op.getLse();
  Operation *boundary = op->getPrevNode(); // Ops after it are ours.
  b.setInsertionPoint(op);
  batches = sizeOf(
      b, loc,
      {{q, axes.batch}, {k, axes.batch}, {v, axes.batch}, {out, axes.batch}});
  queryHeads = sizeOf(b, loc, {{q, axes.heads}, {out, axes.heads}});
  kvHeads = sizeOf(b, loc, {{k, axes.heads}, {v, axes.heads}});
  queryLen = sizeOf(b, loc, {{q, axes.length}, {out, axes.length}});
  keyLen = sizeOf(b, loc, {{k, axes.length}, {v, axes.length}});
  keyDim = sizeOf(b, loc, {{q, axes.depth}, {k, axes.depth}});
  valueDim = sizeOf(b, loc, {{v, axes.depth}, {out, axes.depth}});
  auto dimsOf = [&](Value tensor) {
    SmallVector<OpFoldResult> dims;
    for (int64_t d = 0; d < cast<RankedTensorType>(tensor.getType()).getRank();
         ++d)
      dims.push_back(sizeOf(b, loc, {{tensor, d}}));
    return dims;
  };
  for (Value bias : op.getBiases())
    biasDims.push_back(dimsOf(bias));
  for (Value mask : op.getMasks())
    maskDims.push_back(dimsOf(mask));

  IndexArith a{b, loc};
  Value S = index(queryLen), T = index(keyLen);
  OpFoldResult rowTiles = getAsOpFoldResult(
      b.createOrFold<arith::CeilDivUIOp>(loc, S, a.constant(rowTile)));

  // The results, written by the row tiles.
  auto outType = cast<RankedTensorType>(out.getType());
  SmallVector<OpFoldResult> outSizes(4);
  outSizes[axes.batch] = batches;
  outSizes[axes.heads] = queryHeads;
  outSizes[axes.length] = queryLen;
  outSizes[axes.depth] = valueDim;
  SmallVector<Value> inits = {
      b.create<tensor::EmptyOp>(loc, outSizes, outType.getElementType())};
  if (lse)
    inits.push_back(b.create<tensor::EmptyOp>(
        loc, ArrayRef<OpFoldResult>{batches, queryHeads, queryLen}, f32(b)));
  // The result types of attn.attention may know dims the operands do not.
  inits[0] = b.createOrFold<tensor::CastOp>(loc, outType, inits[0]);
  if (lse)
    inits[1] = b.createOrFold<tensor::CastOp>(loc, lse.getType(), inits[1]);

  auto forall = b.create<scf::ForallOp>(
      loc, ArrayRef<OpFoldResult>{batches, queryHeads, rowTiles}, inits,
      std::nullopt);
  Block *body = forall.getBody();
  b.setInsertionPoint(body->getTerminator());
  Value batch = forall.getInductionVar(0), head = forall.getInductionVar(1),
        tile = forall.getInductionVar(2);
  Value row0 = a.mul(tile, a.constant(rowTile));
  OpFoldResult rows =
      tileSize(a, queryLen, row0, S, rowTile, /*staticAllowed=*/true);
  Value rowCount = index(rows);
  // GQA: query head h reads kv head h / (Hq / Hkv).
  Value kvHead =
      semantics::kvHeadOf(a, head, index(queryHeads), index(kvHeads));
  Value qTile = extractTile(q, batch, head, row0, rows, keyDim);

  // The positions p = i + T - S the tile's rows span, and the keys they see.
  Value firstPosition = semantics::alignedPosition(a, row0, S, T);
  Value lastPosition = semantics::alignedPosition(
      a, a.sub(a.add(row0, rowCount), a.constant(1)), S, T);
  std::optional<Value> keyLength;
  if (Value lengths = op.getKeyLengths())
    keyLength = b.create<arith::IndexCastOp>(
        loc, b.getIndexType(),
        b.create<tensor::ExtractOp>(loc, lengths, ValueRange{batch}));
  auto range = semantics::visibleKeys(a, rule, firstPosition, lastPosition, T,
                                      keyLength);
  Value firstKey = range.first, lastKey = range.last;
  if (rule.narrowsKeys())
    lastKey = a.max(lastKey, firstKey); // No key: an empty loop.

  Value slope;
  if (op.getAlibi())
    slope = op.getAlibiSlopes()
                ? b.create<tensor::ExtractOp>(loc, op.getAlibiSlopes(),
                                              ValueRange{head})
                      .getResult()
                : standardSlope(a, head);

  // Running state: m = -inf, l = 0, O = 0.
  double minusInf = -std::numeric_limits<double>::infinity();
  Value maxInit = filled(b, loc, {rows}, minusInf);
  Value sumInit = filled(b, loc, {rows}, 0.0);
  Value accInit = filled(b, loc, {rows, valueDim}, 0.0);

  MLIRContext *context = b.getContext();
  AffineMap id2 = AffineMap::getMultiDimIdentityMap(2, context);
  AffineMap id1 = AffineMap::getMultiDimIdentityMap(1, context);
  AffineMap rowOf2 = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, context);
  auto parallel = utils::IteratorType::parallel;
  auto reduction = utils::IteratorType::reduction;

  auto loop = b.create<scf::ForOp>(
      loc, firstKey, lastKey, a.constant(keyTile),
      ValueRange{maxInit, sumInit, accInit},
      [&](OpBuilder &nested, Location nestedLoc, Value key0, ValueRange state) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        Value oldMax = state[0], oldSum = state[1], oldAcc = state[2];
        OpFoldResult keys = tileSize(a, keyLen, key0, lastKey, keyTile,
                                     /*staticAllowed=*/!rule.narrowsKeys());
        Value kTile = extractTile(k, batch, kvHead, key0, keys, keyDim);
        Value vTile = extractTile(v, batch, kvHead, key0, keys, valueDim);

        SmallVector<int64_t> scoreShape;
        SmallVector<Value> scoreDynamic;
        dispatchIndexOpFoldResults({rows, keys}, scoreDynamic, scoreShape);
        auto scoreType = RankedTensorType::get(scoreShape, f32(b));
        Value s = b.create<TileScoresOp>(
            loc, scoreType, qTile, kTile, op.getGeneralWeight(),
            op.getQueryWeight(), op.getKeyWeight(), op.getScoreVector(),
            op.getScoreAttr(), op.getScaleAttr(), op.getSoftcapAttr());
        s = transformScores(s, batch, head, row0, firstPosition, key0, slope);

        // Causal and window masks cut only the tiles that straddle their
        // diagonals; key_length is the loop's bound already.
        if (rule.hasPositionMask()) {
          Value lastTileKey = a.sub(a.add(key0, index(keys)), a.constant(1));
          Value whole = semantics::blockFullyVisible(
              a, rule, firstPosition, lastPosition, key0, lastTileKey);
          Value partial = b.create<arith::XOrIOp>(
              loc, whole, b.create<arith::ConstantIntOp>(loc, 1, 1));
          auto ifOp = b.create<scf::IfOp>(loc, TypeRange{scoreType}, partial,
                                          /*withElseRegion=*/true);
          {
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPointToStart(ifOp.thenBlock());
            Value masked =
                b.create<TileMaskOp>(loc, scoreType, s, firstPosition, key0,
                                     op.getCausalAttr(), op.getWindowAttr());
            b.create<scf::YieldOp>(loc, masked);
            b.setInsertionPointToStart(ifOp.elseBlock());
            b.create<scf::YieldOp>(loc, s);
          }
          s = ifOp.getResult(0);
        }

        // The online-softmax update, in natural units through exp2.
        Value newMax =
            generic(b, loc, s, oldMax, {id2, rowOf2}, {parallel, reduction},
                    [&](OpBuilder &g, Location l, ValueRange args) {
                      return g.create<arith::MaximumFOp>(l, args[0], args[1]);
                    });
        // A row with no key so far keeps m = -inf: shift by 0 instead, so
        // that exp2(-inf - m) is 0 and never NaN.
        Value rowEmpty = b.create<tensor::EmptyOp>(loc, ArrayRef{rows}, f32(b));
        Value shift = generic(b, loc, newMax, rowEmpty, {id1, id1}, {parallel},
                              [&](OpBuilder &g, Location l, ValueRange args) {
                                Value none = g.create<arith::CmpFOp>(
                                    l, arith::CmpFPredicate::OEQ, args[0],
                                    f32Constant(g, l, minusInf));
                                return g.create<arith::SelectOp>(
                                    l, none, f32Constant(g, l, 0.0), args[0]);
                              });
        auto exp2Of = [&](OpBuilder &g, Location l, Value x, Value m) {
          Value shifted = g.create<arith::SubFOp>(l, x, m);
          return g.create<math::Exp2Op>(
              l,
              g.create<arith::MulFOp>(l, shifted, f32Constant(g, l, kLog2e)));
        };
        Value alpha = generic(b, loc, ValueRange{oldMax, shift}, rowEmpty,
                              {id1, id1, id1}, {parallel},
                              [&](OpBuilder &g, Location l, ValueRange args) {
                                return exp2Of(g, l, args[0], args[1]);
                              });
        Value scoreEmpty = b.create<tensor::EmptyOp>(
            loc, ArrayRef<OpFoldResult>{rows, keys}, f32(b));
        Value p = generic(b, loc, ValueRange{s, shift}, scoreEmpty,
                          {id2, rowOf2, id2}, {parallel, parallel},
                          [&](OpBuilder &g, Location l, ValueRange args) {
                            return exp2Of(g, l, args[0], args[1]);
                          });
        Value scaledSum = generic(
            b, loc, ValueRange{oldSum, alpha}, rowEmpty, {id1, id1, id1},
            {parallel}, [&](OpBuilder &g, Location l, ValueRange args) {
              return g.create<arith::MulFOp>(l, args[0], args[1]);
            });
        Value newSum =
            generic(b, loc, p, scaledSum, {id2, rowOf2}, {parallel, reduction},
                    [&](OpBuilder &g, Location l, ValueRange args) {
                      return g.create<arith::AddFOp>(l, args[0], args[1]);
                    });
        Value accEmpty = b.create<tensor::EmptyOp>(
            loc, ArrayRef<OpFoldResult>{rows, valueDim}, f32(b));
        Value scaledAcc =
            generic(b, loc, ValueRange{oldAcc, alpha}, accEmpty,
                    {id2, rowOf2, id2}, {parallel, parallel},
                    [&](OpBuilder &g, Location l, ValueRange args) {
                      return g.create<arith::MulFOp>(l, args[0], args[1]);
                    });
        Value newAcc = b.create<TileAccumulateOp>(loc, scaledAcc.getType(), p,
                                                  vTile, scaledAcc);
        b.create<scf::YieldOp>(loc, ValueRange{newMax, newSum, newAcc});
      });

  // out = O / l (0 for l = 0), lse = m + log l; written into the results.
  Value finalMax = loop.getResult(0), finalSum = loop.getResult(1),
        finalAcc = loop.getResult(2);
  auto accType = cast<RankedTensorType>(finalAcc.getType());
  auto tileType = accType.clone(outType.getElementType());
  auto normalize = b.create<TileNormalizeOp>(
      loc, tileType, lse ? finalMax.getType() : Type(), finalAcc, finalSum,
      lse ? finalMax : Value());

  b.setInsertionPointToStart(forall.getTerminator().getBody());
  TileSlice outSlice = tileSlice(batch, head, row0, rows, valueDim);
  b.create<tensor::ParallelInsertSliceOp>(loc, normalize.getOutput(),
                                          body->getArgument(3), outSlice.offsets,
                                          outSlice.sizes, outSlice.strides);
  if (lse) {
    SmallVector<OpFoldResult> lseStrides(3, b.getIndexAttr(1));
    b.create<tensor::ParallelInsertSliceOp>(
        loc, normalize.getLse(), body->getArgument(4),
        ArrayRef<OpFoldResult>{batch, head, row0},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows},
        lseStrides);
  }
  b.replaceOp(op, forall.getResults());
  // The rules are written for every mask; drop the index arithmetic that
  // this op's masks leave unused (positions without causal or window).
  for (Operation *prev = forall->getPrevNode(); prev && prev != boundary;) {
    Operation *next = prev->getPrevNode();
    if (isOpTriviallyDead(prev))
      b.eraseOp(prev);
    prev = next;
  }
  bool erased = true;
  while (erased) {
    erased = false;
    forall.getBody()->walk([&](Operation *nested) {
      if (isOpTriviallyDead(nested)) {
        b.eraseOp(nested);
        erased = true;
      }
    });
  }
  return success();
}

struct TileAttentionPass
    : public attn::impl::TileAttentionPassBase<TileAttentionPass> {
  using TileAttentionPassBase::TileAttentionPassBase;

  void runOnOperation() override {
    if (rowTile < 1 || keyTile < 1) {
      getOperation().emitError("attn-tile-attention: row-tile and key-tile "
                               "must be >= 1");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> ops;
    getOperation().walk([&](AttentionOp op) { ops.push_back(op); });
    IRRewriter rewriter(&getContext());
    for (AttentionOp op : ops)
      (void)AttentionTiler(rewriter, op, rowTile, keyTile).rewrite();
  }
};

} // namespace
