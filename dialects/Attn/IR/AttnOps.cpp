//===- AttnOps.cpp - The attn dialect's ops -------------------------------===//
//
// Verifiers check what the graph front end checks, on tensor types whose
// dynamic dims (run-time sizes) are compatible with anything.
//
//===----------------------------------------------------------------------===//

#include "Attn/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Two dims agree unless both are static and differ.
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// "[?, 12, ?, 64]" for messages.
std::string formatShape(ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += i ? ", " : "";
    out += ShapedType::isDynamic(shape[i]) ? "?" : std::to_string(shape[i]);
  }
  return out + "]";
}

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// numpy broadcasting of two shapes; a dynamic dim may be 1 at run time, so
/// it agrees with anything.
FailureOr<SmallVector<int64_t>> broadcast(ArrayRef<int64_t> a,
                                          ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x == 1)
      result[i] = y;
    else if (y == 1)
      result[i] = x;
    else if (compatible(x, y))
      result[i] = ShapedType::isDynamic(x) ? y : x;
    else
      return failure();
  }
  return result;
}

LogicalResult verifyResultShape(Operation *op, ArrayRef<int64_t> expected) {
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  if (result.getRank() != static_cast<int64_t>(expected.size()))
    return op->emitOpError("result must have shape ")
           << formatShape(expected) << ", got "
           << formatShape(result.getShape());
  for (auto [got, want] : llvm::zip(result.getShape(), expected))
    if (!compatible(got, want))
      return op->emitOpError("result must have shape ")
             << formatShape(expected) << ", got "
             << formatShape(result.getShape());
  return success();
}

/// The result has `element` as its element type (every op but attention's
/// lse keeps its input's).
LogicalResult verifyResultElement(Operation *op, Type element) {
  if (cast<RankedTensorType>(op->getResult(0).getType()).getElementType() !=
      element)
    return op->emitOpError("result element type must be ") << element;
  return success();
}

LogicalResult verifyFloat(Operation *op, Value value, StringRef what) {
  if (!isa<FloatType>(tensorType(value).getElementType()))
    return op->emitOpError() << what << " must be a float tensor";
  return success();
}

LogicalResult verifyNumber(Operation *op, Value value, StringRef what) {
  if (tensorType(value).getElementType().isInteger(1))
    return op->emitOpError() << what << " must hold numbers, not i1";
  return success();
}

LogicalResult verifyFinite(Operation *op, double value, StringRef what) {
  if (!std::isfinite(value))
    return op->emitOpError() << what << " must be a finite number";
  return success();
}

LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " is out of range for rank " << rank;
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  RankedTensorType lhs = tensorType(getLhs()), rhs = tensorType(getRhs());
  if (lhs.getElementType() != rhs.getElementType() ||
      !isa<FloatType>(lhs.getElementType()))
    return emitOpError("operands must share one float element type");
  if (lhs.getRank() < 1 || rhs.getRank() < 1)
    return emitOpError("operands must have rank >= 1");
  if (getTransposeB() && rhs.getRank() < 2)
    return emitOpError("transpose_b needs a right operand of rank >= 2");
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  if (a.size() == 1)
    a.insert(a.begin(), 1);
  if (b.size() == 1)
    b.push_back(1);
  if (getTransposeB())
    std::swap(b[b.size() - 1], b[b.size() - 2]);
  if (!compatible(a.back(), b[b.size() - 2]))
    return emitOpError("inner dims differ: ")
           << formatShape(lhs.getShape()) << " x "
           << formatShape(rhs.getShape());
  auto batch = broadcast(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2));
  if (failed(batch))
    return emitOpError("batch dims do not broadcast");
  SmallVector<int64_t> expected = *batch;
  if (lhs.getRank() > 1)
    expected.push_back(a[a.size() - 2]);
  if (rhs.getRank() > 1)
    expected.push_back(b.back());
  if (failed(verifyResultElement(*this, lhs.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

LogicalResult LinearOp::verify() {
  RankedTensorType x = tensorType(getInput()), w = tensorType(getWeight());
  if (w.getRank() != 2)
    return emitOpError("weight must be [N, K]");
  if (x.getRank() < 1 || !compatible(x.getShape().back(), w.getDimSize(1)))
    return emitOpError("the last dim of the input must equal K of the weight");
  if (x.getElementType() != w.getElementType() ||
      !isa<FloatType>(x.getElementType()))
    return emitOpError("input and weight must share one float element type");
  if (Value bias = getBias()) {
    RankedTensorType b = tensorType(bias);
    if (b.getRank() != 1 || !compatible(b.getDimSize(0), w.getDimSize(0)) ||
        b.getElementType() != x.getElementType())
      return emitOpError("bias must be [N] of the input's element type");
  }
  SmallVector<int64_t> expected(x.getShape().drop_back());
  expected.push_back(w.getDimSize(0));
  if (failed(verifyResultElement(*this, x.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

static LogicalResult verifyBinary(Operation *op) {
  RankedTensorType lhs = tensorType(op->getOperand(0)),
                   rhs = tensorType(op->getOperand(1));
  if (lhs.getElementType() != rhs.getElementType())
    return op->emitOpError("operands must share one element type");
  if (failed(verifyNumber(op, op->getOperand(0), "operands")))
    return failure();
  if (isa<DivOp>(op) && failed(verifyFloat(op, op->getOperand(0), "operands")))
    return failure();
  auto shape = broadcast(lhs.getShape(), rhs.getShape());
  if (failed(shape))
    return op->emitOpError("cannot broadcast ")
           << formatShape(lhs.getShape()) << " with "
           << formatShape(rhs.getShape());
  if (tensorType(op->getResult(0)).getElementType() != lhs.getElementType())
    return op->emitOpError("result must have the operands' element type");
  return verifyResultShape(op, *shape);
}

LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }

OpFoldResult ScaleOp::fold(FoldAdaptor) {
  // x · 1 is x.
  if (getValue().convertToDouble() == 1.0)
    return getInput();
  return {};
}

namespace {
/// scale(scale(x, a), b) -> scale(x, a · b).
struct FoldScaleChain : OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ScaleOp>();
    if (!inner)
      return failure();
    double product =
        inner.getValue().convertToDouble() * op.getValue().convertToDouble();
    Location loc = rewriter.getFusedLoc({inner.getLoc(), op.getLoc()});
    rewriter.replaceOp(
        op, rewriter.create<ScaleOp>(loc, op.getType(), inner.getInput(),
                                     rewriter.getF64FloatAttr(product)));
    return success();
  }
};
} // namespace

void ScaleOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *context) {
  patterns.add<FoldScaleChain>(context);
}

LogicalResult ScaleOp::verify() {
  if (failed(verifyFloat(*this, getInput(), "input")))
    return failure();
  return verifyFinite(*this, getValue().convertToDouble(), "value");
}

LogicalResult TanhOp::verify() {
  return verifyFloat(*this, getInput(), "input");
}
LogicalResult ExpOp::verify() {
  return verifyFloat(*this, getInput(), "input");
}
LogicalResult SqrtOp::verify() {
  return verifyFloat(*this, getInput(), "input");
}
LogicalResult CosOp::verify() {
  return verifyFloat(*this, getInput(), "input");
}
LogicalResult SinOp::verify() {
  return verifyFloat(*this, getInput(), "input");
}
LogicalResult NegOp::verify() {
  return verifyNumber(*this, getInput(), "input");
}

LogicalResult SoftmaxOp::verify() {
  if (failed(verifyFloat(*this, getInput(), "input")))
    return failure();
  return verifyAxis(*this, getAxis(), getType().getRank());
}

LogicalResult MaskedFillOp::verify() {
  RankedTensorType input = tensorType(getInput()), mask = tensorType(getMask());
  if (!mask.getElementType().isInteger(1))
    return emitOpError("mask must be a tensor of i1");
  if (failed(verifyFloat(*this, getInput(), "input")))
    return failure();
  if (std::isnan(getValue().convertToDouble()))
    return emitOpError("value must not be NaN");
  auto shape = broadcast(input.getShape(), mask.getShape());
  if (failed(shape) || shape->size() != static_cast<size_t>(input.getRank()))
    return emitOpError("mask ") << formatShape(mask.getShape())
                                << " does not broadcast to the input "
                                << formatShape(input.getShape());
  if (getType() != input)
    return emitOpError("result must have the input's type");
  return success();
}

LogicalResult CausalMaskOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("input must be [..., S, T]");
  return verifyFloat(*this, getInput(), "input");
}

LogicalResult WindowMaskOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("input must be [..., S, T]");
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = tensorType(getInput()), result = getType();
  if (input.getElementType() != result.getElementType())
    return emitOpError("result must have the input's element type");
  if (static_cast<int64_t>(getDynamicSizes().size()) !=
      result.getNumDynamicDims())
    return emitOpError("needs one size operand per dynamic result dim (")
           << result.getNumDynamicDims() << "), got "
           << getDynamicSizes().size();
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOpError("element counts differ: ")
           << formatShape(input.getShape()) << " vs "
           << formatShape(result.getShape());
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType input = tensorType(getInput());
  ArrayRef<int64_t> permutation = getPermutation();
  if (static_cast<int64_t>(permutation.size()) != input.getRank())
    return emitOpError("permutation must have one entry per dim");
  SmallVector<bool> seen(input.getRank(), false);
  SmallVector<int64_t> expected;
  for (int64_t axis : permutation) {
    if (axis < 0 || axis >= input.getRank() || seen[axis])
      return emitOpError("permutation is not a permutation of the dims");
    seen[axis] = true;
    expected.push_back(input.getDimSize(axis));
  }
  if (failed(verifyResultElement(*this, input.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> permutation = getPermutation();
  for (size_t i = 0; i < permutation.size(); ++i)
    if (permutation[i] != static_cast<int64_t>(i))
      return {};
  return getInput();
}

namespace {
/// transpose(transpose(x, p), q) -> transpose(x, p∘q).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> composed;
    for (int64_t axis : op.getPermutation())
      composed.push_back(inner.getPermutation()[axis]);
    Location loc = rewriter.getFusedLoc({inner.getLoc(), op.getLoc()});
    rewriter.replaceOp(op, rewriter.create<TransposeOp>(
                               loc, op.getType(), inner.getInput(),
                               rewriter.getDenseI64ArrayAttr(composed)));
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<ComposeTransposes>(context);
}

LogicalResult UnsqueezeOp::verify() {
  RankedTensorType input = tensorType(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis > input.getRank())
    return emitOpError("axis ")
           << axis << " is out of range for a result of rank "
           << input.getRank() + 1;
  SmallVector<int64_t> expected(input.getShape());
  expected.insert(expected.begin() + axis, 1);
  if (failed(verifyResultElement(*this, input.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

LogicalResult RepeatOp::verify() {
  RankedTensorType input = tensorType(getInput());
  if (failed(verifyAxis(*this, getAxis(), input.getRank())))
    return failure();
  if (getTimes() < 1)
    return emitOpError("times must be >= 1");
  SmallVector<int64_t> expected(input.getShape());
  int64_t &dim = expected[getAxis()];
  if (!ShapedType::isDynamic(dim))
    dim *= getTimes();
  if (failed(verifyResultElement(*this, input.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = tensorType(getInput());
  if (failed(verifyAxis(*this, getAxis(), input.getRank())))
    return failure();
  int64_t size = input.getDimSize(getAxis());
  if (ShapedType::isDynamic(size))
    return emitOpError("slices an axis of dynamic size");
  if (getStart() < 0 || getStart() >= getEnd() || getEnd() > size)
    return emitOpError("needs 0 <= start < end <= ") << size;
  SmallVector<int64_t> expected(input.getShape());
  expected[getAxis()] = getEnd() - getStart();
  if (failed(verifyResultElement(*this, input.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

LogicalResult ReduceSumOp::verify() {
  RankedTensorType input = tensorType(getInput());
  if (failed(verifyAxis(*this, getAxis(), input.getRank())))
    return failure();
  SmallVector<int64_t> expected(input.getShape());
  if (getKeepdims())
    expected[getAxis()] = 1;
  else
    expected.erase(expected.begin() + getAxis());
  if (failed(verifyNumber(*this, getInput(), "input")) ||
      failed(verifyResultElement(*this, input.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  RankedTensorType first = tensorType(getInputs().front());
  if (failed(verifyAxis(*this, getAxis(), first.getRank())))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  for (Value input : getInputs().drop_front()) {
    RankedTensorType next = tensorType(input);
    if (next.getElementType() != first.getElementType() ||
        next.getRank() != first.getRank())
      return emitOpError("inputs must share element type and rank");
    for (int64_t d = 0; d < first.getRank(); ++d) {
      if (d == static_cast<int64_t>(getAxis())) {
        int64_t &total = expected[d];
        total = ShapedType::isDynamic(total) || next.isDynamicDim(d)
                    ? ShapedType::kDynamic
                    : total + next.getDimSize(d);
      } else if (!compatible(next.getDimSize(d), first.getDimSize(d))) {
        return emitOpError("inputs differ in dim ") << d;
      }
    }
  }
  if (failed(verifyResultElement(*this, first.getElementType())))
    return failure();
  return verifyResultShape(*this, expected);
}

//===----------------------------------------------------------------------===//
// The fused op
//===----------------------------------------------------------------------===//

/// The weight operands a score kind takes, for attn.attention and
/// attn.tile_scores alike: the general weight with `general`, Wq, Wk and va
/// with `additive`, none otherwise.
static LogicalResult verifyScoreOperands(Operation *op, bool general,
                                         bool additive, Value generalWeight,
                                         Value queryWeight, Value keyWeight,
                                         Value scoreVector) {
  if (static_cast<bool>(generalWeight) != general)
    return op->emitOpError("a general score needs exactly its weight operand");
  if (static_cast<bool>(queryWeight) != additive ||
      static_cast<bool>(keyWeight) != additive ||
      static_cast<bool>(scoreVector) != additive)
    return op->emitOpError(
        "an additive score needs exactly its Wq, Wk and va");
  return success();
}

LogicalResult AttentionOp::verify() {
  // Ranks, element types, the window's form and finite scalars are ODS
  // constraints (AttnOps.td); what is left relates operands to each other.
  RankedTensorType q = tensorType(getQuery()), k = tensorType(getKey()),
                   v = tensorType(getValue());

  bool bhsd = getLayout() == Layout::bhsd;
  int headAxis = bhsd ? 1 : 2, seqAxis = bhsd ? 2 : 1;
  int64_t batch = q.getDimSize(0), queryHeads = q.getDimSize(headAxis),
          kvHeads = k.getDimSize(headAxis), queryLen = q.getDimSize(seqAxis),
          keyLen = k.getDimSize(seqAxis), keyDim = q.getDimSize(3),
          valueDim = v.getDimSize(3);
  if (!compatible(k.getDimSize(0), batch) ||
      !compatible(v.getDimSize(0), batch))
    return emitOpError("query, key and value batch sizes differ");
  if (!compatible(v.getDimSize(headAxis), kvHeads))
    return emitOpError("key and value head counts differ");
  if (!compatible(v.getDimSize(seqAxis), keyLen))
    return emitOpError("key and value lengths differ");
  if (!compatible(k.getDimSize(3), keyDim))
    return emitOpError("query and key head dims differ");
  if (!ShapedType::isDynamic(queryHeads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 || queryHeads % kvHeads != 0))
    return emitOpError("query heads (")
           << queryHeads << ") must be a multiple of kv heads (" << kvHeads
           << ")";

  auto requireShape = [&](Value value, StringRef what,
                          ArrayRef<int64_t> shape) -> LogicalResult {
    RankedTensorType type = tensorType(value);
    bool ok = type.getRank() == static_cast<int64_t>(shape.size());
    for (size_t i = 0; ok && i < shape.size(); ++i)
      ok = compatible(type.getDimSize(i), shape[i]);
    if (!ok)
      return emitOpError() << what << " must be " << formatShape(shape)
                           << ", got " << formatShape(type.getShape());
    return success();
  };

  ScoreKind score = getScore();
  bool general = score == ScoreKind::general,
       additive = score == ScoreKind::additive;
  if (failed(verifyScoreOperands(getOperation(), general, additive,
                                 getGeneralWeight(), getQueryWeight(),
                                 getKeyWeight(), getScoreVector())))
    return failure();
  if (general && failed(requireShape(getGeneralWeight(), "general weight",
                                     {keyDim, keyDim})))
    return failure();
  if (additive) {
    RankedTensorType wq = tensorType(getQueryWeight());
    if (wq.getRank() != 2)
      return emitOpError("query weight must be [A, Dk]");
    int64_t units = wq.getDimSize(0);
    if (failed(
            requireShape(getQueryWeight(), "query weight", {units, keyDim})) ||
        failed(requireShape(getKeyWeight(), "key weight", {units, keyDim})))
      return failure();
    RankedTensorType va = tensorType(getScoreVector());
    if (failed(va.getRank() == 2
                   ? requireShape(getScoreVector(), "score vector", {units, 1})
                   : requireShape(getScoreVector(), "score vector", {units})))
      return failure();
  }

  SmallVector<int64_t> scores{batch, queryHeads, queryLen, keyLen};
  auto requireBroadcastable = [&](Value value,
                                  StringRef what) -> LogicalResult {
    auto shape = broadcast(scores, tensorType(value).getShape());
    bool ok = succeeded(shape) && shape->size() == scores.size();
    for (size_t i = 0; ok && i < scores.size(); ++i)
      ok = compatible((*shape)[i], scores[i]);
    if (!ok)
      return emitOpError() << what << " "
                           << formatShape(tensorType(value).getShape())
                           << " does not broadcast to the scores "
                           << formatShape(scores);
    return success();
  };
  for (Value bias : getBiases())
    if (failed(requireBroadcastable(bias, "bias")))
      return failure();
  if (getAlibiSlopes() && !getAlibi())
    return emitOpError("alibi_slopes needs the alibi attribute");
  if (Value slopes = getAlibiSlopes())
    if (failed(requireShape(slopes, "alibi slopes", {queryHeads})))
      return failure();
  if (Value lengths = getKeyLengths())
    if (failed(requireShape(lengths, "key lengths", {batch})))
      return failure();
  for (Value mask : getMasks())
    if (failed(requireBroadcastable(mask, "mask")))
      return failure();
  if (auto drops = getMaskDrops())
    if (drops->size() != static_cast<int64_t>(getMasks().size()))
      return emitOpError("mask_drops needs one entry per mask");

  SmallVector<int64_t> expected =
      bhsd ? SmallVector<int64_t>{batch, queryHeads, queryLen, valueDim}
           : SmallVector<int64_t>{batch, queryLen, queryHeads, valueDim};
  if (failed(verifyResultShape(*this, expected)))
    return failure();
  if (Value lse = getLse())
    if (failed(requireShape(lse, "lse", {batch, queryHeads, queryLen})))
      return failure();
  return success();
}

/// The scale rule of an op's `scale` attribute and score kind
/// (attn.attention and attn.tile_scores carry both alike).
static semantics::ScaleRule scaleRuleOf(FloatAttr scale, ScoreKind score) {
  std::optional<double> given;
  if (scale)
    given = scale.getValueAsDouble();
  return semantics::scaleRule(given, score == ScoreKind::dot ||
                                         score == ScoreKind::general);
}

/// The key visibility of `causal` and `window` attributes (attn.attention,
/// attn.tile_mask), with or without a key-length operand.
static semantics::KeyVisibility
keyVisibilityOf(bool causal, std::optional<ArrayRef<int64_t>> window,
                bool keyLength) {
  std::optional<int64_t> left, right;
  if (window) {
    left = (*window)[0];
    right = (*window)[1];
  }
  return semantics::keyVisibility(causal, left, right, keyLength);
}

semantics::ScaleRule AttentionOp::getScaleRule() {
  return scaleRuleOf(getScaleAttr(), getScore());
}

semantics::KeyVisibility AttentionOp::getKeyVisibility() {
  return keyVisibilityOf(getCausal(), getWindow(),
                         static_cast<bool>(getKeyLengths()));
}

semantics::LayoutAxes AttentionOp::getLayoutAxes() {
  return semantics::layoutAxes(getLayout() == Layout::bhsd);
}

//===----------------------------------------------------------------------===//
// Tile ops
//===----------------------------------------------------------------------===//

// Ranks and element types are ODS constraints (AttnTileOps.td); what is
// left relates the tiles' sizes to each other.

LogicalResult TileScoresOp::verify() {
  RankedTensorType q = tensorType(getQuery()), k = tensorType(getKey());
  int64_t keyDim = q.getDimSize(1);
  if (!compatible(k.getDimSize(1), keyDim))
    return emitOpError("query and key tiles differ in depth: ")
           << formatShape(q.getShape()) << " vs " << formatShape(k.getShape());
  ScoreKind score = getScore();
  bool general = score == ScoreKind::general,
       additive = score == ScoreKind::additive;
  if (failed(verifyScoreOperands(getOperation(), general, additive,
                                 getGeneralWeight(), getQueryWeight(),
                                 getKeyWeight(), getScoreVector())))
    return failure();
  if (general) {
    RankedTensorType w = tensorType(getGeneralWeight());
    if (!compatible(w.getDimSize(0), keyDim) ||
        !compatible(w.getDimSize(1), keyDim))
      return emitOpError("general weight must be [Dk, Dk]");
  }
  if (additive) {
    RankedTensorType wq = tensorType(getQueryWeight()),
                     wk = tensorType(getKeyWeight()),
                     va = tensorType(getScoreVector());
    int64_t units = wq.getDimSize(0);
    bool vectorOk = va.getRank() == 1 ||
                    (va.getRank() == 2 && compatible(va.getDimSize(1), 1));
    if (!compatible(wq.getDimSize(1), keyDim) ||
        !compatible(wk.getDimSize(0), units) ||
        !compatible(wk.getDimSize(1), keyDim) || !vectorOk ||
        !compatible(va.getDimSize(0), units))
      return emitOpError("additive weights must be Wq, Wk [A, Dk] and va [A] "
                         "or [A, 1]");
  }
  return verifyResultShape(*this, {q.getDimSize(0), k.getDimSize(0)});
}

semantics::ScaleRule TileScoresOp::getScaleRule() {
  return scaleRuleOf(getScaleAttr(), getScore());
}

LogicalResult TileMaskOp::verify() {
  if (!getCausal() && !getWindow())
    return emitOpError("needs a position mask: causal or window");
  if (static_cast<bool>(getFirstRow()) != static_cast<bool>(getQueries()))
    return emitOpError("packed rows need both the first row and the query "
                       "count (rows %r0 mod %S)");
  return success();
}

semantics::KeyVisibility TileMaskOp::getKeyVisibility() {
  return keyVisibilityOf(getCausal(), getWindow(), /*keyLength=*/false);
}

LogicalResult TileTransformOp::verify() {
  if (getBiases().empty() && !getAlibiSlopes() && getMasks().empty())
    return emitOpError("has nothing to apply: no bias, ALiBi slopes or mask");
  SmallVector<Value> broadcast(getBiases());
  llvm::append_range(broadcast, getMasks());
  for (Value operand : broadcast)
    if (tensorType(operand).getRank() > 4)
      return emitOpError("a bias or mask broadcasts to [B, Hq, S, T]: rank ")
             << tensorType(operand).getRank() << " is more than 4";
  if (auto drops = getMaskDrops())
    if (drops->size() != getMasks().size())
      return emitOpError("mask_drops has ")
             << drops->size() << " entries for " << getMasks().size()
             << " masks";
  return success();
}

LogicalResult TileSoftmaxUpdateOp::verify() {
  RankedTensorType scores = tensorType(getScores()), max = tensorType(getMax());
  if (!compatible(scores.getDimSize(0), max.getDimSize(0)))
    return emitOpError("the running max and sum must have one entry per row "
                       "of the scores ")
           << formatShape(scores.getShape());
  return success();
}

LogicalResult TileAccumulateOp::verify() {
  RankedTensorType p = tensorType(getProbabilities()),
                   v = tensorType(getValue()),
                   acc = tensorType(getAccumulator());
  if (!compatible(p.getDimSize(1), v.getDimSize(0)) ||
      !compatible(p.getDimSize(0), acc.getDimSize(0)) ||
      !compatible(v.getDimSize(1), acc.getDimSize(1)))
    return emitOpError("tiles do not chain: P ")
           << formatShape(p.getShape()) << " x V " << formatShape(v.getShape())
           << " into " << formatShape(acc.getShape());
  if (Value rescale = getRescale())
    if (!compatible(tensorType(rescale).getDimSize(0), acc.getDimSize(0)))
      return emitOpError("rescale must have one entry per row of the "
                         "accumulator ")
             << formatShape(acc.getShape());
  return success();
}

LogicalResult TileNormalizeOp::verify() {
  RankedTensorType acc = tensorType(getAccumulator());
  int64_t rows = acc.getDimSize(0);
  if (!compatible(tensorType(getSum()).getDimSize(0), rows))
    return emitOpError("sum must have one entry per row (")
           << formatShape(acc.getShape()) << ")";
  if (static_cast<bool>(getMax()) != static_cast<bool>(getLse()))
    return emitOpError("an lse result needs the running max, and only it");
  if (Value max = getMax())
    if (!compatible(tensorType(max).getDimSize(0), rows) ||
        !compatible(tensorType(getLse()).getDimSize(0), rows))
      return emitOpError("max and lse must have one entry per row");
  return verifyResultShape(*this, acc.getShape());
}

#define GET_OP_CLASSES
#include "Attn/IR/AttnOps.cpp.inc"
