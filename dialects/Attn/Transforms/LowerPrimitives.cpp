//===- LowerPrimitives.cpp - attn-lower-primitives ------------------------===//
//
// Every attn op but attn.attention and the tile ops as linalg, tensor, arith
// and math on tensors: the portable lowering of the primitives a graph
// leaves outside its fused attention, which any backend takes through
// upstream bufferization. The semantics are those of PrimitiveKernels.cpp
// (the CPU backend's loops), docs/graph-format.md and the numpy oracle:
//
//   - f16 and bf16 (any float narrower than f32) are computed in f32 and
//     rounded once, into the result; sums and products accumulate in f32;
//   - numpy broadcasting, right-aligned, where a static 1 broadcasts and a
//     run-time dim never does (the graph lets a run-time size meet only the
//     same size or a fixed 1);
//   - softmax of an all -inf slice is 0 (decision h); causal_mask keeps
//     j <= i + T - S, window_mask i + T - S - left <= j <= i + T - S + right;
//     masked_fill and the data movement ops never round;
//   - every dim may be dynamic: sizes come from tensor.dim, reshape's size
//     operands, or constants where the types fix them.
//
//===----------------------------------------------------------------------===//

#include "Attn/Transforms/Passes.h"

#include "Attn/Transforms/IndexArith.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/AffineMap.h"

#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERPRIMITIVESPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

using utils::IteratorType;
constexpr IteratorType kParallel = IteratorType::parallel;
constexpr IteratorType kReduction = IteratorType::reduction;

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The type an element is computed in: f32 for floats narrower than f32
/// (f16, bf16), the element type itself otherwise.
Type computeType(Type element) {
  if (auto floatType = dyn_cast<FloatType>(element))
    if (floatType.getWidth() < 32)
      return Float32Type::get(element.getContext());
  return element;
}

Value widen(OpBuilder &b, Location loc, Value x) {
  Type wide = computeType(x.getType());
  return wide == x.getType() ? x : b.create<arith::ExtFOp>(loc, wide, x);
}

Value narrow(OpBuilder &b, Location loc, Value x, Type element) {
  return x.getType() == element ? x
                                : b.create<arith::TruncFOp>(loc, element, x);
}

Value floatConstant(OpBuilder &b, Location loc, Type type, double value) {
  return b.create<arith::ConstantOp>(loc, type, b.getFloatAttr(type, value));
}

/// Builds the linalg/tensor code of one primitive at its place. Each method
/// returns the value replacing the op's result, or failure after an error on
/// the op.
class PrimitiveLowering {
public:
  PrimitiveLowering(OpBuilder &b, Operation *op)
      : b(b), loc(op->getLoc()), op(op) {}

  FailureOr<Value> lower();

private:
  OpBuilder &b;
  Location loc;
  Operation *op;
  /// The tensor.dim ops built so far, each read once.
  DenseMap<std::pair<Value, int64_t>, Value> dimCache;

  /// Result element function: gets the operands' elements (widened to the
  /// compute type when asked) and returns the result element (rounded to
  /// the result's type by the caller).
  using Body = function_ref<Value(OpBuilder &, Location, ArrayRef<Value>)>;

  LogicalResult fail(const Twine &message) { return op->emitOpError(message); }

  Value materialize(OpFoldResult size) {
    return getValueOrCreateConstantIndexOp(b, loc, size);
  }
  /// The size of `tensor`'s dim `axis`: an attribute where it is static, so
  /// that only the dynamic sizes become IR.
  OpFoldResult dim(Value tensor, int64_t axis) {
    int64_t size = tensorType(tensor).getDimSize(axis);
    if (!ShapedType::isDynamic(size))
      return b.getIndexAttr(size);
    Value &known = dimCache[{tensor, axis}];
    if (!known)
      known = b.create<tensor::DimOp>(loc, tensor, axis);
    return known;
  }
  SmallVector<OpFoldResult> dims(Value tensor) {
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < tensorType(tensor).getRank(); ++d)
      sizes.push_back(dim(tensor, d));
    return sizes;
  }
  OpFoldResult add(OpFoldResult x, OpFoldResult y) {
    std::optional<int64_t> cx = getConstantIntValue(x),
                           cy = getConstantIntValue(y);
    if (cx && cy)
      return b.getIndexAttr(*cx + *cy);
    return b.create<arith::AddIOp>(loc, materialize(x), materialize(y))
        .getResult();
  }
  /// An empty tensor of `type`; `sizes` has one entry per dim, of which
  /// the dynamic dims' are used.
  Value empty(RankedTensorType type, ArrayRef<OpFoldResult> sizes) {
    SmallVector<Value> dynamic;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamic.push_back(materialize(sizes[d]));
    return b.create<tensor::EmptyOp>(loc, type, dynamic);
  }
  Value filled(RankedTensorType type, ArrayRef<OpFoldResult> sizes,
               double value) {
    Value init = empty(type, sizes);
    Value fill = floatConstant(b, loc, type.getElementType(), value);
    return b.create<linalg::FillOp>(loc, fill, init).getResult(0);
  }
  Value zeros(RankedTensorType type, ArrayRef<OpFoldResult> sizes) {
    Type element = type.getElementType();
    if (isa<FloatType>(element))
      return filled(type, sizes, 0.0);
    Value zero = b.create<arith::ConstantOp>(loc, b.getZeroAttr(element));
    return b.create<linalg::FillOp>(loc, zero, empty(type, sizes)).getResult(0);
  }
  /// (d0, ..., d[loops-1]) -> (d0, ..., d[count-1]): a product's result
  /// in a loop nest whose last loops are reductions.
  AffineMap leadingDims(unsigned loops, unsigned count) {
    SmallVector<AffineExpr> exprs;
    for (unsigned d = 0; d < count; ++d)
      exprs.push_back(b.getAffineDimExpr(d));
    return AffineMap::get(loops, 0, exprs, b.getContext());
  }
  Value castTo(Value x, Type type) {
    return x.getType() == type ? x : b.create<tensor::CastOp>(loc, type, x);
  }
  /// acc[d0..d(rank-1)] += lhs · rhs over the loops (the result's dims,
  /// then the reduction dim), both widened to the accumulator's type: the
  /// product matmul and linear are made of.
  Value contract(Value lhs, ArrayRef<AffineExpr> lhsExprs, Value rhs,
                 ArrayRef<AffineExpr> rhsExprs, Value acc, int64_t rank) {
    unsigned loops = rank + 1;
    MLIRContext *context = b.getContext();
    SmallVector<IteratorType> iterators(rank, kParallel);
    iterators.push_back(kReduction);
    return b
        .create<linalg::GenericOp>(
            loc, acc.getType(), ValueRange{lhs, rhs}, ValueRange{acc},
            ArrayRef<AffineMap>{AffineMap::get(loops, 0, lhsExprs, context),
                                AffineMap::get(loops, 0, rhsExprs, context),
                                leadingDims(loops, rank)},
            iterators,
            [](OpBuilder &nested, Location loc, ValueRange args) {
              Value x = widen(nested, loc, args[0]);
              Value y = widen(nested, loc, args[1]);
              Value product = nested.create<arith::MulFOp>(loc, x, y);
              nested.create<linalg::YieldOp>(
                  loc, ValueRange{nested.create<arith::AddFOp>(loc, args[2],
                                                               product)});
            })
        .getResult(0);
  }

  /// The map of `operand` in a loop nest of `loops` dims whose trailing
  /// dims it is broadcast to (numpy): its dim d reads loop dim
  /// `loops - rank + d`, or index 0 where the dim is a static 1.
  AffineMap broadcastMap(Value operand, unsigned loops) {
    RankedTensorType type = tensorType(operand);
    unsigned offset = loops - type.getRank();
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < type.getRank(); ++d)
      exprs.push_back(type.getDimSize(d) == 1 ? b.getAffineConstantExpr(0)
                                              : b.getAffineDimExpr(offset + d));
    return AffineMap::get(loops, 0, exprs, b.getContext());
  }
  /// The size of each dim of `type`, the broadcast of `operands` (a static
  /// size where an operand has one; else the first operand whose dim is not
  /// a static 1).
  SmallVector<OpFoldResult> broadcastSizes(RankedTensorType type,
                                           ValueRange operands) {
    SmallVector<OpFoldResult> sizes;
    int64_t rank = type.getRank();
    for (int64_t d = 0; d < rank; ++d) {
      if (!type.isDynamicDim(d)) {
        sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
        continue;
      }
      OpFoldResult size;
      for (Value operand : operands) {
        RankedTensorType operandType = tensorType(operand);
        int64_t od = d - (rank - operandType.getRank());
        if (od < 0 || operandType.getDimSize(od) == 1)
          continue;
        if (!size || !operandType.isDynamicDim(od))
          size = dim(operand, od);
      }
      sizes.push_back(size ? size : b.getIndexAttr(1));
    }
    return sizes;
  }

  /// result = body(operands broadcast to the result) in `resultType`, one
  /// linalg.generic. With `widenOperands`, float operands arrive in their
  /// compute type and the result is rounded once.
  Value elementwise(ValueRange operands, RankedTensorType resultType,
                    ArrayRef<OpFoldResult> sizes, bool widenOperands,
                    Body body) {
    unsigned loops = resultType.getRank();
    SmallVector<AffineMap> maps;
    for (Value operand : operands)
      maps.push_back(broadcastMap(operand, loops));
    maps.push_back(b.getMultiDimIdentityMap(loops));
    Type element = resultType.getElementType();
    return b
        .create<linalg::GenericOp>(
            loc, resultType, operands, ValueRange{empty(resultType, sizes)},
            maps, SmallVector<IteratorType>(loops, kParallel),
            [&](OpBuilder &nested, Location loc, ValueRange args) {
              SmallVector<Value> values;
              for (Value arg : args.drop_back())
                values.push_back(widenOperands ? widen(nested, loc, arg) : arg);
              Value result = body(nested, loc, values);
              if (isa<FloatType>(element))
                result = narrow(nested, loc, result, element);
              nested.create<linalg::YieldOp>(loc, result);
            })
        .getResult(0);
  }
  /// `acc` (in the compute type, of `sizes`) rounded to `resultType`;
  /// nothing when they agree.
  Value round(Value acc, RankedTensorType resultType,
              ArrayRef<OpFoldResult> sizes) {
    if (tensorType(acc).getElementType() == resultType.getElementType())
      return castTo(acc, resultType);
    return elementwise(
        acc, resultType, sizes, false,
        [](OpBuilder &, Location, ArrayRef<Value> v) { return v[0]; });
  }

  /// `x` with a dim of size 1 inserted at `axis` (unsqueeze, keepdims).
  Value insertUnitDim(Value x, int64_t axis) {
    RankedTensorType type = tensorType(x);
    int64_t rank = type.getRank();
    SmallVector<int64_t> shape(type.getShape());
    shape.insert(shape.begin() + axis, 1);
    SmallVector<OpFoldResult> outputShape = dims(x);
    outputShape.insert(outputShape.begin() + axis, b.getIndexAttr(1));
    // The unit dim joins its right neighbour's group, or the last one's.
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t first = d < axis ? d : d + 1;
      if (d == axis)
        groups.push_back({d, d + 1});
      else if (d == rank - 1 && axis == rank)
        groups.push_back({first, first + 1});
      else
        groups.push_back({first});
    }
    return b.create<tensor::ExpandShapeOp>(
        loc, RankedTensorType::get(shape, type.getElementType()), x, groups,
        outputShape);
  }

  FailureOr<Value> matmul(MatmulOp matmul);
  FailureOr<Value> linear(LinearOp linear);
  FailureOr<Value> binary();
  FailureOr<Value> unary();
  FailureOr<Value> softmax(SoftmaxOp softmax);
  FailureOr<Value> maskedFill(MaskedFillOp fill);
  FailureOr<Value> causalMask(CausalMaskOp mask);
  FailureOr<Value> windowMask(WindowMaskOp mask);
  FailureOr<Value> reshape(ReshapeOp reshape);
  FailureOr<Value> transpose(TransposeOp transpose);
  FailureOr<Value> unsqueeze(UnsqueezeOp unsqueeze);
  FailureOr<Value> repeat(RepeatOp repeat);
  FailureOr<Value> reduceSum(ReduceSumOp sum);
  FailureOr<Value> concat(ConcatOp concat);
  FailureOr<Value> slice(SliceOp slice);
};

FailureOr<Value> PrimitiveLowering::matmul(MatmulOp matmul) {
  Value lhs = matmul.getLhs(), rhs = matmul.getRhs();
  RankedTensorType resultType = matmul.getType();
  if (!isa<FloatType>(resultType.getElementType()))
    return fail("element type must be a float");
  // numpy: a 1-D left operand is a row, a 1-D right one a column, and the
  // added dim is absent from the result. Loops: the result's dims, then k.
  int64_t ra = tensorType(lhs).getRank(), rb = tensorType(rhs).getRank();
  int64_t rank = resultType.getRank();
  bool hasRows = ra >= 2, hasCols = rb >= 2,
       transposeB = matmul.getTransposeB();
  int64_t batchRank = rank - hasRows - hasCols;
  if (batchRank < 0 || batchRank < ra - 2 || batchRank < rb - 2)
    return fail("result rank does not fit the operands");
  AffineExpr row = b.getAffineDimExpr(batchRank),
             col = b.getAffineDimExpr(batchRank + hasRows),
             k = b.getAffineDimExpr(rank);
  // An operand's batch dims, right-aligned with the result's; a static 1
  // broadcasts.
  auto batchExprs = [&](Value operand, int64_t operandBatch) {
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < operandBatch; ++d)
      exprs.push_back(tensorType(operand).getDimSize(d) == 1
                          ? b.getAffineConstantExpr(0)
                          : b.getAffineDimExpr(batchRank - operandBatch + d));
    return exprs;
  };
  SmallVector<AffineExpr> lhsExprs =
      batchExprs(lhs, std::max<int64_t>(ra - 2, 0));
  if (hasRows)
    lhsExprs.push_back(row);
  lhsExprs.push_back(k);
  SmallVector<AffineExpr> rhsExprs =
      batchExprs(rhs, std::max<int64_t>(rb - 2, 0));
  if (!hasCols)
    rhsExprs.push_back(k);
  else if (transposeB)
    rhsExprs.append({col, k});
  else
    rhsExprs.append({k, col});

  // Sizes: the batch dims broadcast, M from lhs, N from rhs.
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < batchRank; ++d) {
    if (!resultType.isDynamicDim(d)) {
      sizes.push_back(b.getIndexAttr(resultType.getDimSize(d)));
      continue;
    }
    OpFoldResult size;
    for (auto [operand, operandRank] :
         {std::pair(lhs, ra), std::pair(rhs, rb)}) {
      int64_t operandBatch = std::max<int64_t>(operandRank - 2, 0);
      int64_t od = d - (batchRank - operandBatch);
      if (od < 0 || tensorType(operand).getDimSize(od) == 1)
        continue;
      if (!size || !tensorType(operand).isDynamicDim(od))
        size = dim(operand, od);
    }
    sizes.push_back(size ? size : b.getIndexAttr(1));
  }
  if (hasRows)
    sizes.push_back(dim(lhs, ra - 2));
  if (hasCols)
    sizes.push_back(dim(rhs, transposeB ? rb - 2 : rb - 1));

  auto accType = RankedTensorType::get(
      resultType.getShape(), computeType(resultType.getElementType()));
  Value acc =
      contract(lhs, lhsExprs, rhs, rhsExprs, zeros(accType, sizes), rank);
  return round(acc, resultType, sizes);
}

FailureOr<Value> PrimitiveLowering::linear(LinearOp linear) {
  Value x = linear.getInput(), w = linear.getWeight(), bias = linear.getBias();
  RankedTensorType resultType = linear.getType();
  Type element = resultType.getElementType();
  if (!isa<FloatType>(element))
    return fail("element type must be a float");
  // Loops: the result's dims (x's leading dims, then n), then k.
  int64_t rank = resultType.getRank();
  if (rank != tensorType(x).getRank() || tensorType(w).getRank() != 2)
    return fail("needs x [..., K], w [N, K] and a result [..., N]");
  SmallVector<AffineExpr> xExprs;
  for (int64_t d = 0; d + 1 < rank; ++d)
    xExprs.push_back(b.getAffineDimExpr(d));
  xExprs.push_back(b.getAffineDimExpr(rank));
  SmallVector<OpFoldResult> sizes = dims(x);
  sizes.back() = dim(w, 0);
  auto accType =
      RankedTensorType::get(resultType.getShape(), computeType(element));
  // w [N, K] read at (n, k).
  Value acc = contract(x, xExprs, w,
                       {b.getAffineDimExpr(rank - 1), b.getAffineDimExpr(rank)},
                       zeros(accType, sizes), rank);
  if (!bias)
    return round(acc, resultType, sizes);
  // The bias is added in the compute type, then the sum rounded once.
  return elementwise(
      ValueRange{acc, bias}, resultType, sizes, true,
      [](OpBuilder &nested, Location loc, ArrayRef<Value> v) {
        return nested.create<arith::AddFOp>(loc, v[0], v[1]).getResult();
      });
}

FailureOr<Value> PrimitiveLowering::binary() {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type element = resultType.getElementType();
  bool isFloat = isa<FloatType>(element);
  if (!isFloat && !(isa<IntegerType>(element) && !element.isInteger(1)))
    return fail("element type must be a float or an integer");
  if (!isFloat && isa<DivOp>(op))
    return fail("integer division is not supported");
  if (tensorType(lhs).getElementType() != element ||
      tensorType(rhs).getElementType() != element)
    return fail("operands must have the result's element type");
  Operation *binaryOp = op;
  return elementwise(
      ValueRange{lhs, rhs}, resultType,
      broadcastSizes(resultType, ValueRange{lhs, rhs}), true,
      [&](OpBuilder &nested, Location loc, ArrayRef<Value> v) -> Value {
        if (isa<AddOp>(binaryOp))
          return isFloat
                     ? nested.create<arith::AddFOp>(loc, v[0], v[1]).getResult()
                     : nested.create<arith::AddIOp>(loc, v[0], v[1])
                           .getResult();
        if (isa<SubOp>(binaryOp))
          return isFloat
                     ? nested.create<arith::SubFOp>(loc, v[0], v[1]).getResult()
                     : nested.create<arith::SubIOp>(loc, v[0], v[1])
                           .getResult();
        if (isa<MulOp>(binaryOp))
          return isFloat
                     ? nested.create<arith::MulFOp>(loc, v[0], v[1]).getResult()
                     : nested.create<arith::MulIOp>(loc, v[0], v[1])
                           .getResult();
        return nested.create<arith::DivFOp>(loc, v[0], v[1]);
      });
}

FailureOr<Value> PrimitiveLowering::unary() {
  Value input = op->getOperand(0);
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Type element = resultType.getElementType();
  bool isFloat = isa<FloatType>(element);
  bool isInteger = isa<IntegerType>(element) && !element.isInteger(1);
  if (!isFloat && !(isa<NegOp>(op) && isInteger))
    return fail(isa<NegOp>(op) ? "element type must be a float or an integer"
                               : "element type must be a float");
  if (tensorType(input).getElementType() != element)
    return fail("input must have the result's element type");
  Type type = computeType(element);
  double factor = 1.0;
  if (auto scale = dyn_cast<ScaleOp>(op))
    factor = scale.getValue().convertToDouble();
  Operation *unaryOp = op;
  return elementwise(
      input, resultType, dims(input), true,
      [&](OpBuilder &nested, Location loc, ArrayRef<Value> v) -> Value {
        if (isa<ScaleOp>(unaryOp))
          return nested.create<arith::MulFOp>(
              loc, v[0], floatConstant(nested, loc, type, factor));
        if (isa<TanhOp>(unaryOp))
          return nested.create<math::TanhOp>(loc, v[0]);
        if (isa<ExpOp>(unaryOp))
          return nested.create<math::ExpOp>(loc, v[0]);
        if (isa<SqrtOp>(unaryOp))
          return nested.create<math::SqrtOp>(loc, v[0]);
        if (isa<CosOp>(unaryOp))
          return nested.create<math::CosOp>(loc, v[0]);
        if (isa<SinOp>(unaryOp))
          return nested.create<math::SinOp>(loc, v[0]);
        if (isFloat)
          return nested.create<arith::NegFOp>(loc, v[0]);
        Value zero =
            nested.create<arith::ConstantOp>(loc, nested.getZeroAttr(type));
        return nested.create<arith::SubIOp>(loc, zero, v[0]);
      });
}

FailureOr<Value> PrimitiveLowering::softmax(SoftmaxOp softmax) {
  Value input = softmax.getInput();
  RankedTensorType type = softmax.getType();
  if (!isa<FloatType>(type.getElementType()))
    return fail("element type must be a float");
  int64_t rank = type.getRank(), axis = softmax.getAxis();
  if (axis < 0 || axis >= rank)
    return fail("axis is out of range");
  // Three generics over the input's dims (axis a reduction in the first
  // two): the max, the sum of exp(x - shift), then exp(x - shift) / sum,
  // where shift is the max, or 0 for an all -inf slice, whose result is 0
  // (decision h): no -inf - -inf, so no NaN.
  Type f = computeType(type.getElementType());
  MLIRContext *context = b.getContext();
  SmallVector<int64_t> reducedShape(type.getShape());
  reducedShape.erase(reducedShape.begin() + axis);
  SmallVector<OpFoldResult> sizes = dims(input), reducedSizes = sizes;
  reducedSizes.erase(reducedSizes.begin() + axis);
  auto reducedType = RankedTensorType::get(reducedShape, f);
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  AffineMap reduced = identity.dropResult(axis);
  SmallVector<IteratorType> reduction(rank, kParallel);
  reduction[axis] = kReduction;
  double inf = std::numeric_limits<double>::infinity();

  Value max = b.create<linalg::GenericOp>(
                   loc, reducedType, input,
                   ValueRange{filled(reducedType, reducedSizes, -inf)},
                   ArrayRef<AffineMap>{identity, reduced}, reduction,
                   [](OpBuilder &nested, Location loc, ValueRange args) {
                     nested.create<linalg::YieldOp>(
                         loc, ValueRange{nested.create<arith::MaximumFOp>(
                                  loc, widen(nested, loc, args[0]), args[1])});
                   })
                  .getResult(0);
  // exp(x - shift) with shift = max, or 0 where max = -inf.
  auto exponential = [f, inf](OpBuilder &nested, Location loc, Value x,
                              Value max) {
    Value masked =
        nested.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, max,
                                     floatConstant(nested, loc, f, -inf));
    Value shift = nested.create<arith::SelectOp>(
        loc, masked, floatConstant(nested, loc, f, 0.0), max);
    return std::pair(
        nested
            .create<math::ExpOp>(loc, nested.create<arith::SubFOp>(
                                          loc, widen(nested, loc, x), shift))
            .getResult(),
        masked);
  };
  Value sum =
      b.create<linalg::GenericOp>(
           loc, reducedType, ValueRange{input, max},
           ValueRange{filled(reducedType, reducedSizes, 0.0)},
           ArrayRef<AffineMap>{identity, reduced, reduced}, reduction,
           [&](OpBuilder &nested, Location loc, ValueRange args) {
             Value e = exponential(nested, loc, args[0], args[1]).first;
             nested.create<linalg::YieldOp>(
                 loc,
                 ValueRange{nested.create<arith::AddFOp>(loc, args[2], e)});
           })
          .getResult(0);
  Type element = type.getElementType();
  return b
      .create<linalg::GenericOp>(
          loc, type, ValueRange{input, max, sum},
          ValueRange{empty(type, sizes)},
          ArrayRef<AffineMap>{identity, reduced, reduced, identity},
          SmallVector<IteratorType>(rank, kParallel),
          [&](OpBuilder &nested, Location loc, ValueRange args) {
            auto [e, masked] = exponential(nested, loc, args[0], args[1]);
            Value p = nested.create<arith::DivFOp>(loc, e, args[2]);
            p = nested.create<arith::SelectOp>(
                loc, masked, floatConstant(nested, loc, f, 0.0), p);
            nested.create<linalg::YieldOp>(
                loc, ValueRange{narrow(nested, loc, p, element)});
          })
      .getResult(0);
}

FailureOr<Value> PrimitiveLowering::maskedFill(MaskedFillOp fill) {
  Value input = fill.getInput(), mask = fill.getMask();
  RankedTensorType type = fill.getType();
  Type element = type.getElementType();
  if (!isa<FloatType>(element) || tensorType(input).getElementType() != element)
    return fail("input and result must share one float element type");
  if (!tensorType(mask).getElementType().isInteger(1))
    return fail("mask must be a tensor of i1");
  if (tensorType(mask).getRank() > type.getRank())
    return fail("mask has a higher rank than the input");
  // Selected in the element type itself, so `value` is rounded once and
  // kept elements are not rounded at all.
  double value = fill.getValue().convertToDouble();
  return elementwise(ValueRange{input, mask}, type, dims(input), false,
                     [&](OpBuilder &nested, Location loc, ArrayRef<Value> v) {
                       return nested
                           .create<arith::SelectOp>(
                               loc, v[1],
                               floatConstant(nested, loc, element, value), v[0])
                           .getResult();
                     });
}

FailureOr<Value> PrimitiveLowering::causalMask(CausalMaskOp mask) {
  Value input = mask.getInput();
  RankedTensorType type = mask.getType();
  Type element = type.getElementType();
  int64_t rank = type.getRank();
  if (rank < 2 || !isa<FloatType>(element))
    return fail("input must be a float tensor [..., S, T]");
  // Query i sits at key position i + T - S (bottom-right alignment).
  Value shift =
      b.createOrFold<arith::SubIOp>(loc, materialize(dim(input, rank - 1)),
                                    materialize(dim(input, rank - 2)));
  double inf = std::numeric_limits<double>::infinity();
  return elementwise(input, type, dims(input), false,
                     [&](OpBuilder &nested, Location loc, ArrayRef<Value> v) {
                       Value i = nested.create<linalg::IndexOp>(loc, rank - 2);
                       Value j = nested.create<linalg::IndexOp>(loc, rank - 1);
                       Value future = nested.create<arith::CmpIOp>(
                           loc, arith::CmpIPredicate::sgt, j,
                           nested.create<arith::AddIOp>(loc, i, shift));
                       return nested
                           .create<arith::SelectOp>(
                               loc, future,
                               floatConstant(nested, loc, element, -inf), v[0])
                           .getResult();
                     });
}

FailureOr<Value> PrimitiveLowering::windowMask(WindowMaskOp mask) {
  Value input = mask.getInput();
  RankedTensorType type = mask.getType();
  Type element = type.getElementType();
  int64_t rank = type.getRank();
  if (rank < 2)
    return fail("input must be a float tensor [..., S, T]");
  semantics::KeyVisibility window;
  window.addWindow(mask.getLeft(), mask.getRight());
  Value queryLen = materialize(dim(input, rank - 2)),
        keyLen = materialize(dim(input, rank - 1));
  double inf = std::numeric_limits<double>::infinity();
  return elementwise(
      input, type, dims(input), false,
      [&](OpBuilder &nested, Location loc, ArrayRef<Value> v) {
        IndexArith a{nested, loc};
        Value i = nested.create<linalg::IndexOp>(loc, rank - 2);
        Value j = nested.create<linalg::IndexOp>(loc, rank - 1);
        Value position = semantics::alignedPosition(a, i, queryLen, keyLen);
        Value keep = semantics::keyVisible(a, window, position, j, keyLen);
        return nested
            .create<arith::SelectOp>(loc, keep, v[0],
                                     floatConstant(nested, loc, element, -inf))
            .getResult();
      });
}

FailureOr<Value> PrimitiveLowering::reshape(ReshapeOp reshape) {
  Value input = reshape.getInput();
  RankedTensorType type = reshape.getType(), inputType = tensorType(input);
  Type element = type.getElementType();
  if (inputType.getElementType() != element)
    return fail("result must have the input's element type");
  if (static_cast<int64_t>(reshape.getDynamicSizes().size()) !=
      type.getNumDynamicDims())
    return fail("needs one size operand per dynamic result dim");
  // C order, the result's sizes from the types and the size operands.
  // tensor.reshape rather than collapse_shape + expand_shape: splitting
  // one dim into several dynamic ones ([B·S·768] -> [B, S, 12, 64]) is an
  // expand group with two dynamic dims, which LLVM 19's bufferization of
  // expand_shape crashes on.
  SmallVector<Value> shape;
  auto dynamicSizes = reshape.getDynamicSizes();
  size_t next = 0;
  for (int64_t d = 0; d < type.getRank(); ++d)
    shape.push_back(type.isDynamicDim(d)
                        ? dynamicSizes[next++]
                        : materialize(b.getIndexAttr(type.getDimSize(d))));
  Value shapeTensor = b.create<tensor::FromElementsOp>(
      loc, RankedTensorType::get({type.getRank()}, b.getIndexType()), shape);
  return Value(b.create<tensor::ReshapeOp>(loc, type, input, shapeTensor));
}

FailureOr<Value> PrimitiveLowering::transpose(TransposeOp transpose) {
  Value input = transpose.getInput();
  RankedTensorType type = transpose.getType();
  ArrayRef<int64_t> permutation = transpose.getPermutation();
  if (static_cast<int64_t>(permutation.size()) != type.getRank() ||
      type.getRank() != tensorType(input).getRank())
    return fail("permutation must have one entry per dim");
  // linalg.transpose: result dim i is input dim permutation[i], as here.
  // Its verifier wants the permuted input shape exactly; the op's result
  // type may be less static, hence the cast.
  SmallVector<OpFoldResult> sizes;
  SmallVector<int64_t> shape;
  for (int64_t axis : permutation) {
    sizes.push_back(dim(input, axis));
    shape.push_back(tensorType(input).getDimSize(axis));
  }
  auto permuted = RankedTensorType::get(shape, type.getElementType());
  Value result = b.create<linalg::TransposeOp>(
                      loc, input, empty(permuted, sizes), permutation)
                     .getResult()
                     .front();
  return castTo(result, type);
}

FailureOr<Value> PrimitiveLowering::unsqueeze(UnsqueezeOp unsqueeze) {
  Value input = unsqueeze.getInput();
  int64_t axis = unsqueeze.getAxis();
  if (axis < 0 || axis > tensorType(input).getRank())
    return fail("axis is out of range");
  return castTo(insertUnitDim(input, axis), unsqueeze.getType());
}

FailureOr<Value> PrimitiveLowering::repeat(RepeatOp repeat) {
  Value input = repeat.getInput();
  RankedTensorType inputType = tensorType(input);
  int64_t axis = repeat.getAxis(), times = repeat.getTimes();
  if (axis < 0 || axis >= inputType.getRank() || times < 1)
    return fail("needs an axis of the input and times >= 1");
  // [..., n, ...] broadcast to [..., n, times, ...], then (n, times)
  // collapsed: slice a becomes slices a·times ... a·times + times - 1.
  SmallVector<int64_t> shape(inputType.getShape());
  shape.insert(shape.begin() + axis + 1, times);
  SmallVector<OpFoldResult> sizes = dims(input);
  sizes.insert(sizes.begin() + axis + 1, b.getIndexAttr(times));
  auto spreadType = RankedTensorType::get(shape, inputType.getElementType());
  Value spread =
      b.create<linalg::BroadcastOp>(loc, input, empty(spreadType, sizes),
                                    ArrayRef<int64_t>{axis + 1})
          .getResult()
          .front();
  SmallVector<ReassociationIndices> groups;
  for (int64_t d = 0; d < inputType.getRank(); ++d) {
    int64_t first = d <= axis ? d : d + 1;
    if (d == axis)
      groups.push_back({first, first + 1});
    else
      groups.push_back({first});
  }
  Value collapsed = b.create<tensor::CollapseShapeOp>(loc, spread, groups);
  return castTo(collapsed, repeat.getType());
}

FailureOr<Value> PrimitiveLowering::reduceSum(ReduceSumOp sum) {
  Value input = sum.getInput();
  RankedTensorType inputType = tensorType(input), type = sum.getType();
  Type element = type.getElementType();
  bool isFloat = isa<FloatType>(element);
  if (!isFloat && !(isa<IntegerType>(element) && !element.isInteger(1)))
    return fail("element type must be a float or an integer");
  int64_t rank = inputType.getRank(), axis = sum.getAxis();
  if (axis < 0 || axis >= rank)
    return fail("axis is out of range");
  // The sum over the axis in the compute type, rounded once, then the
  // axis put back as a 1 with keepdims.
  SmallVector<int64_t> shape(inputType.getShape());
  shape.erase(shape.begin() + axis);
  SmallVector<OpFoldResult> sizes = dims(input);
  sizes.erase(sizes.begin() + axis);
  auto accType = RankedTensorType::get(shape, computeType(element));
  MLIRContext *context = b.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(rank, context);
  SmallVector<IteratorType> iterators(rank, kParallel);
  iterators[axis] = kReduction;
  Value acc =
      b.create<linalg::GenericOp>(
           loc, accType, input, ValueRange{zeros(accType, sizes)},
           ArrayRef<AffineMap>{identity, identity.dropResult(axis)}, iterators,
           [&](OpBuilder &nested, Location loc, ValueRange args) {
             Value x = widen(nested, loc, args[0]);
             nested.create<linalg::YieldOp>(
                 loc,
                 isFloat
                     ? nested.create<arith::AddFOp>(loc, args[1], x).getResult()
                     : nested.create<arith::AddIOp>(loc, args[1], x)
                           .getResult());
           })
          .getResult(0);
  Value result = round(acc, RankedTensorType::get(shape, element), sizes);
  if (sum.getKeepdims())
    result = insertUnitDim(result, axis);
  return castTo(result, type);
}

FailureOr<Value> PrimitiveLowering::slice(SliceOp slice) {
  Value input = slice.getInput();
  int64_t rank = tensorType(input).getRank(), axis = slice.getAxis();
  if (axis < 0 || axis >= rank || slice.getStart() < 0 ||
      slice.getStart() >= slice.getEnd())
    return fail("needs an axis of the input and 0 <= start < end");
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
      strides(rank, b.getIndexAttr(1)), sizes = dims(input);
  offsets[axis] = b.getIndexAttr(slice.getStart());
  sizes[axis] = b.getIndexAttr(slice.getEnd() - slice.getStart());
  Value part =
      b.create<tensor::ExtractSliceOp>(loc, input, offsets, sizes, strides);
  return castTo(part, slice.getType());
}

FailureOr<Value> PrimitiveLowering::concat(ConcatOp concat) {
  RankedTensorType type = concat.getType();
  int64_t axis = concat.getAxis(), rank = type.getRank();
  if (axis < 0 || axis >= rank)
    return fail("axis is out of range");
  for (Value input : concat.getInputs())
    if (tensorType(input).getRank() != rank ||
        tensorType(input).getElementType() != type.getElementType())
      return fail("inputs must have the result's rank and element type");
  // Each input inserted into the result at its offset along the axis.
  Value first = concat.getInputs().front();
  SmallVector<OpFoldResult> sizes = dims(first);
  for (Value input : concat.getInputs().drop_front())
    sizes[axis] = add(sizes[axis], dim(input, axis));
  Value result = empty(type, sizes);
  OpFoldResult offset = b.getIndexAttr(0);
  for (Value input : concat.getInputs()) {
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)),
        strides(rank, b.getIndexAttr(1)), inputSizes = dims(input);
    offsets[axis] = offset;
    result = b.create<tensor::InsertSliceOp>(loc, input, result, offsets,
                                             inputSizes, strides);
    offset = add(offset, inputSizes[axis]);
  }
  return result;
}

FailureOr<Value> PrimitiveLowering::lower() {
  if (auto matmul = dyn_cast<MatmulOp>(op))
    return this->matmul(matmul);
  if (auto linear = dyn_cast<LinearOp>(op))
    return this->linear(linear);
  if (isa<AddOp, SubOp, MulOp, DivOp>(op))
    return binary();
  if (isa<ScaleOp, TanhOp, ExpOp, NegOp, SqrtOp, CosOp, SinOp>(op))
    return unary();
  if (auto softmax = dyn_cast<SoftmaxOp>(op))
    return this->softmax(softmax);
  if (auto fill = dyn_cast<MaskedFillOp>(op))
    return maskedFill(fill);
  if (auto mask = dyn_cast<CausalMaskOp>(op))
    return causalMask(mask);
  if (auto mask = dyn_cast<WindowMaskOp>(op))
    return windowMask(mask);
  if (auto reshape = dyn_cast<ReshapeOp>(op))
    return this->reshape(reshape);
  if (auto transpose = dyn_cast<TransposeOp>(op))
    return this->transpose(transpose);
  if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op))
    return this->unsqueeze(unsqueeze);
  if (auto repeat = dyn_cast<RepeatOp>(op))
    return this->repeat(repeat);
  if (auto sum = dyn_cast<ReduceSumOp>(op))
    return reduceSum(sum);
  if (auto concat = dyn_cast<ConcatOp>(op))
    return this->concat(concat);
  if (auto slice = dyn_cast<SliceOp>(op))
    return this->slice(slice);
  return fail("is not a primitive attn-lower-primitives knows");
}

bool isPrimitive(Operation *op) {
  return isa<MatmulOp, LinearOp, AddOp, SubOp, MulOp, DivOp, ScaleOp, TanhOp,
             ExpOp, NegOp, SqrtOp, CosOp, SinOp, SoftmaxOp, MaskedFillOp,
             CausalMaskOp, WindowMaskOp, ReshapeOp, TransposeOp, UnsqueezeOp,
             RepeatOp, SliceOp, ReduceSumOp, ConcatOp>(op);
}

struct LowerPrimitivesPass
    : attn::impl::LowerPrimitivesPassBase<LowerPrimitivesPass> {
  void runOnOperation() override {
    SmallVector<Operation *> primitives;
    getOperation().walk([&](Operation *op) {
      if (isPrimitive(op))
        primitives.push_back(op);
    });
    bool failed = false;
    for (Operation *op : primitives) {
      // Every primitive has one ranked tensor result; the verifier says so,
      // but a pass must not crash on IR it was not meant to see.
      if (op->getNumResults() != 1 ||
          !isa<RankedTensorType>(op->getResult(0).getType()) ||
          !llvm::all_of(op->getOperandTypes(), [](Type type) {
            return isa<RankedTensorType, IndexType>(type);
          })) {
        op->emitOpError("needs ranked tensor operands and one result");
        failed = true;
        continue;
      }
      OpBuilder b(op);
      PrimitiveLowering lowering(b, op);
      FailureOr<Value> replacement = lowering.lower();
      if (::mlir::failed(replacement)) {
        failed = true;
        continue;
      }
      op->getResult(0).replaceAllUsesWith(*replacement);
      op->erase();
    }
    if (failed)
      signalPassFailure();
  }
};

} // namespace
