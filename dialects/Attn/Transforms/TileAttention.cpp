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
//       p, m', l', alpha = attn.tile_softmax_update(s, m, l)
//       O' = attn.tile_accumulate(p, v tile, O) rescale(alpha)
//     }
//     out, lse = attn.tile_normalize(O, l, m)
//   }
//
// With pack-query-heads the forall runs over (b, kv head, row tile) and the
// rows of a tile are the G query heads of the kv head, row R = g·S + i
// (`packedQueryHead`, `packedQuery`): a decode step (S = 1) then fills a tile,
// and K and V are read once per group. q is gathered as [B, Hkv, G·S, D]
// for it, and the output and lse are scattered back after the loop.
//
// Every rule of the op (visible keys, the tile test, the kv head, packed
// rows) comes from Attn/IR/AttnSemantics.h evaluated on `index` values.
//
//===----------------------------------------------------------------------===//

#include "Attn/Transforms/IndexArith.h"
#include "Attn/Transforms/LinalgGeneric.h"
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
                 int64_t keyTile, bool packHeads)
      : b(rewriter), loc(op.getLoc()), op(op), rowTile(rowTile),
        keyTile(keyTile), packHeads(packHeads), axes(op.getLayoutAxes()),
        rule(op.getKeyVisibility()) {}

  FailureOr<scf::ForallOp> rewrite();

private:
  RewriterBase &b;
  Location loc;
  AttentionOp op;
  int64_t rowTile, keyTile;
  bool packHeads;
  semantics::LayoutAxes axes;
  semantics::KeyVisibility rule;

  // Sizes: B, Hq, Hkv, S, T, Dk, Dv, and G = Hq / Hkv when packing.
  OpFoldResult batches, queryHeads, kvHeads, queryLen, keyLen, keyDim, valueDim;
  OpFoldResult group, rowExtent;

  Value index(OpFoldResult ofr) {
    return getValueOrCreateConstantIndexOp(b, loc, ofr);
  }
  /// Offsets, sizes and strides of the [length, depth] slice of a
  /// q/k/v-shaped tensor at (batch, head, start), in either layout.
  struct TileSlice {
    SmallVector<OpFoldResult> offsets, sizes, strides;
  };
  TileSlice tileSlice(semantics::LayoutAxes layout, Value batch, Value head,
                      Value start, OpFoldResult length, OpFoldResult depth);
  Value extractTile(Value tensor, semantics::LayoutAxes layout, Value batch,
                    Value head, Value start, OpFoldResult length,
                    OpFoldResult depth);
  Value packedView(Value tensor, OpFoldResult depth);
  Value unpackedView(Value packed, Type resultType, bool lse);
  Value alibiSlopes();
  Value standardSlope(OpBuilder &builder, Location at, Value head);
};

AttentionTiler::TileSlice
AttentionTiler::tileSlice(semantics::LayoutAxes layout, Value batch, Value head,
                          Value start, OpFoldResult length,
                          OpFoldResult depth) {
  TileSlice slice{SmallVector<OpFoldResult>(4), SmallVector<OpFoldResult>(4),
                  SmallVector<OpFoldResult>(4, b.getIndexAttr(1))};
  slice.offsets[layout.batch] = batch;
  slice.offsets[layout.heads] = head;
  slice.offsets[layout.length] = start;
  slice.offsets[layout.depth] = b.getIndexAttr(0);
  slice.sizes[layout.batch] = b.getIndexAttr(1);
  slice.sizes[layout.heads] = b.getIndexAttr(1);
  slice.sizes[layout.length] = length;
  slice.sizes[layout.depth] = depth;
  return slice;
}

/// The tileSlice of `tensor`, rank-reduced to 2-D.
Value AttentionTiler::extractTile(Value tensor, semantics::LayoutAxes layout,
                                  Value batch, Value head, Value start,
                                  OpFoldResult length, OpFoldResult depth) {
  TileSlice slice = tileSlice(layout, batch, head, start, length, depth);
  auto sourceType = cast<RankedTensorType>(tensor.getType());
  RankedTensorType type =
      tensor::ExtractSliceOp::inferCanonicalRankReducedResultType(
          2, sourceType, slice.offsets, slice.sizes, slice.strides);
  return b.create<tensor::ExtractSliceOp>(loc, type, tensor, slice.offsets,
                                          slice.sizes, slice.strides);
}

/// The standard ALiBi slope of query head h (semantics::alibiSlopeFraction),
/// with n = 2^floor(log2 Hq) from Hq's leading zeros.
Value AttentionTiler::standardSlope(OpBuilder &b, Location loc, Value head) {
  Type i64 = b.getI64Type(), f64 = b.getF64Type();
  Value hq = b.create<arith::IndexCastOp>(
      loc, i64, getValueOrCreateConstantIndexOp(b, loc, queryHeads));
  Value leading = b.create<math::CountLeadingZerosOp>(loc, hq);
  Value n = b.create<arith::ShLIOp>(
      loc, b.create<arith::ConstantIntOp>(loc, 1, 64),
      b.create<arith::SubIOp>(loc, b.create<arith::ConstantIntOp>(loc, 63, 64),
                              leading));
  IndexArith a{b, loc};
  semantics::SlopeFraction<Value> slope = semantics::alibiSlopeFraction(
      a, head, Value(b.create<arith::IndexCastOp>(loc, b.getIndexType(), n)));
  auto toF64 = [&](Value index) {
    return b.create<arith::SIToFPOp>(
        loc, f64, b.create<arith::IndexCastOp>(loc, i64, index));
  };
  Value ratio = b.create<arith::DivFOp>(loc, toF64(slope.numerator),
                                        toF64(slope.denominator));
  Value power = b.create<arith::MulFOp>(
      loc, b.create<arith::ConstantOp>(loc, b.getF64FloatAttr(-8.0)), ratio);
  return b.create<arith::TruncFOp>(loc, f32(b),
                                   b.create<math::Exp2Op>(loc, power));
}

/// The ALiBi slope of each query head: the given slopes, or the standard
/// ones as a [Hq] tensor; null without ALiBi.
Value AttentionTiler::alibiSlopes() {
  if (!op.getAlibi())
    return Value();
  if (Value slopes = op.getAlibiSlopes())
    return slopes;
  Value init = b.create<tensor::EmptyOp>(loc, ArrayRef{queryHeads}, f32(b));
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, b.getContext());
  return buildGeneric(
      b, loc, ValueRange{}, init, {identity}, {utils::IteratorType::parallel},
      [&](OpBuilder &nested, Location at, ValueRange) {
        return standardSlope(nested, at, nested.create<linalg::IndexOp>(at, 0));
      });
}

/// q ([B, Hq, S, D] or bshd's [B, S, Hq, D]) as [B, Hkv, G·S, D]: row
/// g·S + i of kv head k is query i of head k·G + g. A gather, not a
/// reshape: upstream bufferization cannot yet expand a run-time head count
/// into two run-time dims.
Value AttentionTiler::packedView(Value tensor, OpFoldResult depth) {
  Type element = cast<RankedTensorType>(tensor.getType()).getElementType();
  Value init = b.create<tensor::EmptyOp>(
      loc, ArrayRef<OpFoldResult>{batches, kvHeads, rowExtent, depth}, element);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(4, b.getContext());
  return buildGeneric(
      b, loc, ValueRange{}, init, {identity},
      SmallVector<utils::IteratorType>(4, utils::IteratorType::parallel),
      [&](OpBuilder &nested, Location at, ValueRange) {
        IndexArith a{nested, at};
        Value row = nested.create<linalg::IndexOp>(at, 2);
        Value S = index(queryLen);
        SmallVector<Value> indices(4);
        indices[axes.batch] = nested.create<linalg::IndexOp>(at, 0);
        indices[axes.heads] = semantics::packedQueryHead(
            a, Value(nested.create<linalg::IndexOp>(at, 1)), index(group), row,
            S);
        indices[axes.length] = semantics::packedQuery(a, row, S);
        indices[axes.depth] = nested.create<linalg::IndexOp>(at, 3);
        return nested.create<tensor::ExtractOp>(at, tensor, indices)
            .getResult();
      });
}

/// The inverse of packedView for the output ([B, Hkv, G·S, Dv] to the
/// layout's [B, Hq, S, Dv]) or the lse ([B, Hkv, G·S] to [B, Hq, S]).
Value AttentionTiler::unpackedView(Value packed, Type resultType, bool lse) {
  auto type = cast<RankedTensorType>(resultType);
  int64_t rank = type.getRank();
  semantics::LayoutAxes layout =
      lse ? semantics::layoutAxes(/*bhsd=*/true) : axes;
  SmallVector<OpFoldResult> sizes(rank);
  sizes[layout.batch] = batches;
  sizes[layout.heads] = queryHeads;
  sizes[layout.length] = queryLen;
  if (!lse)
    sizes[layout.depth] = valueDim;
  Value init = b.create<tensor::EmptyOp>(loc, sizes, type.getElementType());
  init = b.createOrFold<tensor::CastOp>(loc, type, init);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, b.getContext());
  return buildGeneric(
      b, loc, ValueRange{}, init, {identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [&](OpBuilder &nested, Location at, ValueRange) {
        IndexArith a{nested, at};
        auto dim = [&](int64_t d) -> Value {
          return nested.create<linalg::IndexOp>(at, d);
        };
        Value head = dim(layout.heads), G = index(group);
        SmallVector<Value> indices = {dim(layout.batch), a.div(head, G),
                                      semantics::packedRow(a, head, G,
                                                           dim(layout.length),
                                                           index(queryLen))};
        if (!lse)
          indices.push_back(dim(layout.depth));
        return nested.create<tensor::ExtractOp>(at, packed, indices)
            .getResult();
      });
}

FailureOr<scf::ForallOp> AttentionTiler::rewrite() {
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

  IndexArith a{b, loc};
  Value S = index(queryLen), T = index(keyLen);
  // The rows of one forall iteration: S queries of a query head, or G·S
  // packed rows of a kv head.
  rowExtent = queryLen;
  if (packHeads) {
    group = getAsOpFoldResult(
        semantics::groupSize(a, index(queryHeads), index(kvHeads)));
    rowExtent = getAsOpFoldResult(a.mul(index(group), S));
  }
  Value rowEnd = index(rowExtent);
  OpFoldResult rowTiles = getAsOpFoldResult(
      b.createOrFold<arith::CeilDivUIOp>(loc, rowEnd, a.constant(rowTile)));
  semantics::LayoutAxes packedAxes = semantics::layoutAxes(/*bhsd=*/true);
  Value queries = packHeads ? packedView(q, keyDim) : q;
  Value slopes = alibiSlopes();
  bool transforms = !op.getBiases().empty() || slopes || !op.getMasks().empty();

  // The results, written by the row tiles (packed: [B, Hkv, G·S, Dv] and
  // [B, Hkv, G·S], unpacked after the loop).
  auto outType = cast<RankedTensorType>(out.getType());
  SmallVector<OpFoldResult> outSizes(4);
  outSizes[axes.batch] = batches;
  outSizes[axes.heads] = queryHeads;
  outSizes[axes.length] = queryLen;
  outSizes[axes.depth] = valueDim;
  if (packHeads)
    outSizes = {batches, kvHeads, rowExtent, valueDim};
  OpFoldResult lseHeads = packHeads ? kvHeads : queryHeads;
  SmallVector<Value> inits = {
      b.create<tensor::EmptyOp>(loc, outSizes, outType.getElementType())};
  if (lse)
    inits.push_back(b.create<tensor::EmptyOp>(
        loc, ArrayRef<OpFoldResult>{batches, lseHeads, rowExtent}, f32(b)));
  // The result types of attn.attention may know dims the operands do not.
  if (!packHeads) {
    inits[0] = b.createOrFold<tensor::CastOp>(loc, outType, inits[0]);
    if (lse)
      inits[1] = b.createOrFold<tensor::CastOp>(loc, lse.getType(), inits[1]);
  }

  auto forall = b.create<scf::ForallOp>(
      loc,
      ArrayRef<OpFoldResult>{batches, packHeads ? kvHeads : queryHeads,
                             rowTiles},
      inits, std::nullopt);
  Block *body = forall.getBody();
  b.setInsertionPoint(body->getTerminator());
  Value batch = forall.getInductionVar(0), unit = forall.getInductionVar(1),
        tile = forall.getInductionVar(2);
  Value row0 = a.mul(tile, a.constant(rowTile));
  OpFoldResult rows =
      tileSize(a, rowExtent, row0, rowEnd, rowTile, /*staticAllowed=*/true);
  Value rowCount = index(rows);
  // GQA: query head h reads kv head h / (Hq / Hkv).
  Value kvHead = packHeads ? unit
                           : semantics::kvHeadOf(a, unit, index(queryHeads),
                                                 index(kvHeads));
  Value qTile = extractTile(queries, packHeads ? packedAxes : axes, batch, unit,
                            row0, rows, keyDim);

  // The positions p = i + T - S the tile's rows span, and the keys they see.
  Value firstPosition, lastPosition;
  auto lastRow = [&] { return a.sub(a.add(row0, rowCount), a.constant(1)); };
  if (packHeads) {
    std::tie(firstPosition, lastPosition) =
        semantics::packedPositions(a, row0, lastRow(), S, T);
  } else {
    firstPosition = semantics::alignedPosition(a, row0, S, T);
    lastPosition = semantics::alignedPosition(a, lastRow(), S, T);
  }
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

  // Running state: m = -inf, l = 0, O = 0.
  double minusInf = -std::numeric_limits<double>::infinity();
  Value maxInit = filled(b, loc, {rows}, minusInf);
  Value sumInit = filled(b, loc, {rows}, 0.0);
  Value accInit = filled(b, loc, {rows, valueDim}, 0.0);

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
        Value kTile = extractTile(k, axes, batch, kvHead, key0, keys, keyDim);
        Value vTile = extractTile(v, axes, batch, kvHead, key0, keys, valueDim);

        SmallVector<int64_t> scoreShape;
        SmallVector<Value> scoreDynamic;
        dispatchIndexOpFoldResults({rows, keys}, scoreDynamic, scoreShape);
        auto scoreType = RankedTensorType::get(scoreShape, f32(b));
        Value s = b.create<TileScoresOp>(
            loc, scoreType, qTile, kTile, op.getGeneralWeight(),
            op.getQueryWeight(), op.getKeyWeight(), op.getScoreVector(),
            op.getScoreAttr(), op.getScaleAttr(), op.getSoftcapAttr());
        if (transforms)
          s = b.create<TileTransformOp>(
              loc, scoreType, s, batch, unit, row0, key0, S, T,
              packHeads ? index(group) : Value(), op.getBiases(), slopes,
              op.getMasks(), op.getMaskDropsAttr());

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
            // Packed rows: p = (T - S) + (row0 + r) mod S.
            Value masked =
                packHeads
                    ? b.create<TileMaskOp>(
                          loc, scoreType, s,
                          semantics::alignedPosition(a, a.constant(0), S, T),
                          key0, row0, S, op.getCausalAttr(), op.getWindowAttr())
                    : b.create<TileMaskOp>(
                          loc, scoreType, s, firstPosition, key0, Value(),
                          Value(), op.getCausalAttr(), op.getWindowAttr());
            b.create<scf::YieldOp>(loc, masked);
            b.setInsertionPointToStart(ifOp.elseBlock());
            b.create<scf::YieldOp>(loc, s);
          }
          s = ifOp.getResult(0);
        }

        // The online-softmax update; O' = alpha O + P V.
        auto update = b.create<TileSoftmaxUpdateOp>(loc, s, oldMax, oldSum);
        Value newMax = update.getNewMax(), newSum = update.getNewSum();
        Value newAcc = b.create<TileAccumulateOp>(
            loc, oldAcc.getType(), update.getProbabilities(), vTile, oldAcc,
            update.getAlpha());
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
  TileSlice outSlice = tileSlice(packHeads ? packedAxes : axes, batch, unit,
                                 row0, rows, valueDim);
  b.create<tensor::ParallelInsertSliceOp>(
      loc, normalize.getOutput(), body->getArgument(3), outSlice.offsets,
      outSlice.sizes, outSlice.strides);
  if (lse) {
    SmallVector<OpFoldResult> lseStrides(3, b.getIndexAttr(1));
    b.create<tensor::ParallelInsertSliceOp>(
        loc, normalize.getLse(), body->getArgument(4),
        ArrayRef<OpFoldResult>{batch, unit, row0},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1), rows},
        lseStrides);
  }
  SmallVector<Value> results = forall.getResults();
  if (packHeads) {
    b.setInsertionPointAfter(forall);
    results[0] = unpackedView(results[0], outType, /*lse=*/false);
    if (lse)
      results[1] = unpackedView(results[1], lse.getType(), /*lse=*/true);
  }
  b.replaceOp(op, results);
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
  return forall;
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
      (void)tileAttention(rewriter, op, rowTile, keyTile, packQueryHeads);
  }
};

} // namespace

FailureOr<scf::ForallOp> mlir::attn::tileAttention(RewriterBase &rewriter,
                                                   AttentionOp op,
                                                   int64_t rowTile,
                                                   int64_t keyTile,
                                                   bool packQueryHeads) {
  return AttentionTiler(rewriter, op, rowTile, keyTile, packQueryHeads)
      .rewrite();
}
