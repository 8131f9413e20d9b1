//===- FuseAttention.cpp - Fuse exporter attention chains -----------------===//
//
// Rewrites the chain a model exporter writes for attention into one
// attn.attention op. The anchor is a softmax over the last axis whose only
// user is matmul(p, v); from the softmax input the pattern walks back through
//   masks and biases (causal_mask, window_mask, masked_fill(-inf), add), in
//   any order,
//   an optional softcap  c · tanh(x / c),
//   scales (scale, mul or div by a splat constant),
// to the raw scores: matmul(q, kᵀ) (dot), matmul(matmul(q, W), kᵀ) (general),
// matmul(q/|q|, (k/|k|)ᵀ) with |x| = sqrt(reduce_sum(x·x)) (cosine), or
// vaᵀ tanh(Wq q + Wk k) spelled with linear/unsqueeze/add/tanh/matmul
// (additive). Then GQA `repeat`s of k and v, and transposes of q, k, v and the
// output (layout bshd), are absorbed, also a repeat written as Llama's
// repeat_kv (unsqueeze, repeat, reshape). For dot and general scores a scale of
// q or k (BART and Whisper scale the query projection), also one behind the
// reshapes and transposes that split the heads, joins the fused scale: a
// scalar commutes with every product and data movement between it and the
// scores; so does a scale of kᵀ (PyTorch's export of
// scaled_dot_product_attention). Every intermediate must have exactly one
// use; a function result counts as a use, so a chain whose scores or
// probabilities are graph outputs stays as written.
//
//===----------------------------------------------------------------------===//

#include "Attn/Transforms/Passes.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <optional>

namespace mlir::attn {
#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

/// Everything the walk finds; becomes the attn.attention operands.
struct AttentionChain {
  SmallVector<Operation *> ops; ///< Matched ops, for the fused location.
  Value query, key, value;
  ScoreKind score = ScoreKind::dot;
  Value generalWeight, queryWeight, keyWeight, scoreVector;
  double scale = 1.0;
  /// Positive scales applied after the masks (and after every bias):
  /// they multiply the softcap and the scale alike.
  double outerScale = 1.0;
  std::optional<double> softcap;
  SmallVector<Value> biases, masks;
  SmallVector<bool> maskDrops;
  bool causal = false;
  /// window_mask bounds (left, right); several intersect.
  std::optional<std::pair<int64_t, int64_t>> window;
  Layout layout = Layout::bhsd;
  Operation *root = nullptr; ///< The op whose result the fused op replaces.
  /// Scales of q or k behind a data movement op, folded into `scale`: at the
  /// rewrite, operand `operand` of `reader` reads the scale's input instead.
  struct FoldedScale {
    Operation *reader;
    unsigned operand;
    Value input;
  };
  SmallVector<FoldedScale> foldedScales;
};

RankedTensorType tensorType(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The value of a splat float constant.
std::optional<double> splatValue(Value value) {
  DenseFPElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat())
    return std::nullopt;
  return attr.getSplatValue<APFloat>().convertToDouble();
}

/// `value` as `factor · input` when its producer is a scale, or a mul/div by
/// a splat constant that does not change the shape.
std::optional<double> scaleFactor(Value value, Value &input) {
  Operation *op = value.getDefiningOp();
  if (auto scale = dyn_cast_or_null<ScaleOp>(op)) {
    input = scale.getInput();
    return scale.getValue().convertToDouble();
  }
  if (!isa_and_nonnull<MulOp, DivOp>(op))
    return std::nullopt;
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  bool isDiv = isa<DivOp>(op);
  for (auto [operand, constant] : {std::pair{lhs, rhs}, std::pair{rhs, lhs}}) {
    if (isDiv && operand != lhs)
      break; // c / x is not a scale of x.
    std::optional<double> factor = splatValue(constant);
    if (!factor || operand.getType() != value.getType())
      continue;
    if (isDiv && *factor == 0)
      return std::nullopt;
    input = operand;
    return isDiv ? 1.0 / *factor : *factor;
  }
  return std::nullopt;
}

/// An intermediate of the chain: produced by an op of kind T and used once.
template <typename T> T singleUseProducer(Value value) {
  if (!value.hasOneUse())
    return nullptr;
  return value.getDefiningOp<T>();
}

/// Equal for certain: the same static size, or both sizes known only at run
/// time (the graph front end never lets two different run-time sizes meet).
/// A static 1 against a larger or run-time size is numpy broadcasting, which
/// the fused op does not do.
bool sameDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) == ShapedType::isDynamic(b) &&
         (ShapedType::isDynamic(a) || a == b);
}

bool isMinusInfinity(APFloat value) {
  return value.isInfinity() && value.isNegative();
}

class FuseAttentionChain : public OpRewritePattern<SoftmaxOp> {
public:
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp softmax,
                                PatternRewriter &rewriter) const override {
    AttentionChain chain;
    if (failed(matchChain(softmax, chain)))
      return failure();
    SmallVector<Location> locations;
    for (Operation *op : chain.ops)
      locations.push_back(op->getLoc());

    // mask_drops only when some mask has masked_fill's polarity.
    DenseBoolArrayAttr maskDrops;
    if (llvm::is_contained(chain.maskDrops, true))
      maskDrops = rewriter.getDenseBoolArrayAttr(chain.maskDrops);
    for (const AttentionChain::FoldedScale &folded : chain.foldedScales)
      rewriter.modifyOpInPlace(folded.reader, [&] {
        folded.reader->setOperand(folded.operand, folded.input);
      });
    Type resultType = chain.root->getResult(0).getType();
    // At the root, matmul(p, v): v may be computed after the softmax (ONNX
    // exporters order the value projection late), and everything the chain
    // reads dominates the root.
    rewriter.setInsertionPoint(chain.root);
    auto fused = rewriter.create<AttentionOp>(
        rewriter.getFusedLoc(locations), resultType, /*lse=*/Type(),
        chain.query, chain.key, chain.value, chain.generalWeight,
        chain.queryWeight, chain.keyWeight, chain.scoreVector, chain.biases,
        /*alibi_slopes=*/Value(), /*key_lengths=*/Value(), chain.masks,
        ScoreKindAttr::get(getContext(), chain.score),
        LayoutAttr::get(getContext(), chain.layout),
        rewriter.getF64FloatAttr(chain.scale),
        chain.softcap ? rewriter.getF64FloatAttr(*chain.softcap) : FloatAttr(),
        /*alibi=*/UnitAttr(),
        chain.causal ? rewriter.getUnitAttr() : UnitAttr(),
        chain.window ? rewriter.getDenseI64ArrayAttr(
                           {chain.window->first, chain.window->second})
                     : DenseI64ArrayAttr(),
        maskDrops);
    rewriter.replaceOp(chain.root, fused.getOutput());
    return success();
  }

private:
  LogicalResult matchChain(SoftmaxOp softmax, AttentionChain &chain) const {
    RankedTensorType scores = softmax.getType();
    if (scores.getRank() != 4 || softmax.getAxis() != 3)
      return failure();
    // The probabilities feed only matmul(p, v).
    Value probabilities = softmax.getResult();
    if (!probabilities.hasOneUse())
      return failure();
    auto output = dyn_cast<MatmulOp>(*probabilities.getUsers().begin());
    if (!output || output.getLhs() != probabilities || output.getTransposeB() ||
        tensorType(output.getRhs()).getRank() != 4)
      return failure();
    chain.ops = {softmax, output};
    chain.value = output.getRhs();
    chain.root = output;

    Value current = softmax.getInput();
    if (!current.hasOneUse())
      return failure();
    matchMasksAndBiases(current, chain);
    matchSoftcapAndScale(current, chain);
    if (failed(matchScores(current, chain)) || !operandsAgree(chain))
      return failure();
    matchGroupedHeads(chain, /*headAxis=*/1);
    matchHeadMajorLayout(chain);
    // Repeated before the transposes to heads (Falcon's kv groups).
    if (chain.layout == Layout::bshd)
      matchGroupedHeads(chain, /*headAxis=*/2);
    if (chain.score == ScoreKind::dot || chain.score == ScoreKind::general) {
      foldOperandScale(chain.query, chain);
      foldOperandScale(chain.key, chain);
    }
    return success();
  }

  /// A scale of `operand`, directly or behind single-use reshapes,
  /// transposes, unsqueezes and repeats, joins chain.scale: the scores are
  /// linear in q and in k. The scale's one use must be the op it feeds.
  void foldOperandScale(Value &operand, AttentionChain &chain) const {
    Value current = operand;
    Operation *reader = nullptr;
    while (current.hasOneUse()) {
      Value input;
      if (std::optional<double> factor = scaleFactor(current, input)) {
        chain.ops.push_back(current.getDefiningOp());
        chain.scale *= *factor;
        if (reader)
          chain.foldedScales.push_back(
              {reader, current.getUses().begin()->getOperandNumber(), input});
        else
          operand = input;
        return;
      }
      Operation *view = current.getDefiningOp();
      if (!isa_and_nonnull<ReshapeOp, TransposeOp, UnsqueezeOp, RepeatOp>(view))
        return;
      reader = view;
      current = view->getOperand(0);
    }
  }

  /// q [B, H, S, Dk], k [B, H, T, Dk], v [B, H, T, Dv] with batch and heads
  /// equal for certain: the matmuls may have broadcast them, the fused op
  /// does not.
  bool operandsAgree(const AttentionChain &chain) const {
    ArrayRef<int64_t> q = tensorType(chain.query).getShape(),
                      k = tensorType(chain.key).getShape(),
                      v = tensorType(chain.value).getShape();
    return q.size() == 4 && k.size() == 4 && v.size() == 4 &&
           sameDim(q[0], k[0]) && sameDim(k[0], v[0]) && sameDim(q[1], k[1]) &&
           sameDim(k[1], v[1]) && sameDim(k[2], v[2]) && sameDim(q[3], k[3]);
  }

  /// causal_mask, window_mask, masked_fill(-inf) and bias adds, in any order,
  /// and positive scales between them: a positive scale keeps -inf at -inf, so
  /// it commutes with the masks; it must not come after a bias it would scale.
  void matchMasksAndBiases(Value &current, AttentionChain &chain) const {
    bool scaled = false;
    while (true) {
      Operation *op = current.getDefiningOp();
      if (!op || !current.hasOneUse())
        return;
      Value input;
      if (auto mask = dyn_cast<CausalMaskOp>(op)) {
        chain.causal = true;
        current = mask.getInput();
      } else if (auto window = dyn_cast<WindowMaskOp>(op)) {
        int64_t left = window.getLeft(), right = window.getRight();
        if (chain.window)
          left = std::min(left, chain.window->first),
          right = std::min(right, chain.window->second);
        chain.window = {left, right};
        current = window.getInput();
      } else if (auto fill = dyn_cast<MaskedFillOp>(op);
                 fill && isMinusInfinity(fill.getValue())) {
        chain.masks.push_back(fill.getMask());
        chain.maskDrops.push_back(true);
        current = fill.getInput();
      } else if (auto add = dyn_cast<AddOp>(op)) {
        if (scaled)
          return; // scale · (s + b): the bias would need scaling too.
        // The scores keep their type through the add; the other operand is
        // the bias (it broadcasts to the scores).
        Value lhs = add.getLhs(), rhs = add.getRhs();
        bool lhsIsScores = lhs.getType() == add.getType();
        if (!lhsIsScores && rhs.getType() != add.getType())
          return;
        if (lhsIsScores && rhs.getType() == add.getType() &&
            !lhs.getDefiningOp() && rhs.getDefiningOp())
          lhsIsScores = false; // The scores are computed, the bias is given.
        chain.biases.push_back(lhsIsScores ? rhs : lhs);
        current = lhsIsScores ? lhs : rhs;
      } else if (std::optional<double> factor = scaleFactor(current, input);
                 factor && *factor > 0 &&
                 isa_and_nonnull<CausalMaskOp, WindowMaskOp, MaskedFillOp>(
                     input.getDefiningOp())) {
        // Only a scale of masked scores: one of the raw scores or of the
        // softcap is left to matchSoftcapAndScale.
        scaled = true;
        chain.outerScale *= *factor;
        current = input;
      } else {
        return;
      }
      chain.ops.push_back(op);
    }
  }

  /// c · tanh(k · x) gives softcap c and scale k · c; then plain scales.
  void matchSoftcapAndScale(Value &current, AttentionChain &chain) const {
    Value input;
    if (current.hasOneUse()) {
      std::optional<double> outer = scaleFactor(current, input);
      auto tanh =
          outer && *outer > 0 ? singleUseProducer<TanhOp>(input) : TanhOp();
      if (tanh) {
        chain.ops.push_back(current.getDefiningOp());
        chain.ops.push_back(tanh);
        chain.softcap = *outer;
        current = tanh.getInput();
      }
    }
    double product = 1.0;
    while (current.hasOneUse()) {
      std::optional<double> factor = scaleFactor(current, input);
      if (!factor)
        break;
      chain.ops.push_back(current.getDefiningOp());
      product *= *factor;
      current = input;
    }
    if (chain.softcap) {
      *chain.softcap *= chain.outerScale;
      chain.scale = product * *chain.softcap;
    } else {
      chain.scale = product * chain.outerScale;
    }
  }

  /// The raw scores: dot, general or additive.
  LogicalResult matchScores(Value current, AttentionChain &chain) const {
    if (!current.hasOneUse())
      return failure();
    if (auto product = current.getDefiningOp<MatmulOp>()) {
      if (succeeded(matchAdditive(product, chain)))
        return success();
      Value key = product.getRhs();
      if (!product.getTransposeB()) {
        // PyTorch's ONNX export of scaled_dot_product_attention scales q and
        // kᵀ by √scale each: a scale of kᵀ scales the scores.
        Value unscaled;
        std::optional<double> factor =
            key.hasOneUse() ? scaleFactor(key, unscaled) : std::nullopt;
        if (factor && unscaled.getDefiningOp<TransposeOp>()) {
          chain.ops.push_back(key.getDefiningOp());
          chain.scale *= *factor;
          key = unscaled;
        }
        // matmul(q, transpose(k)) with the last two dims swapped.
        auto transpose = singleUseProducer<TransposeOp>(key);
        if (!transpose ||
            transpose.getPermutation() != ArrayRef<int64_t>{0, 1, 3, 2})
          return failure();
        chain.ops.push_back(transpose);
        key = transpose.getInput();
      }
      chain.ops.push_back(product);
      chain.query = product.getLhs();
      chain.key = key;
      // Both sides divided by their norms: the cosine score.
      SmallVector<Operation *> normOps;
      Value query = normalizedInput(chain.query, normOps);
      Value normalizedKey =
          query ? normalizedInput(chain.key, normOps) : Value();
      if (query && normalizedKey) {
        chain.ops.append(normOps);
        chain.score = ScoreKind::cosine;
        chain.query = query;
        chain.key = normalizedKey;
        return success(tensorType(query).getRank() == 4 &&
                       tensorType(normalizedKey).getRank() == 4);
      }
      // matmul(q, W) on the query side: the general (Luong) score.
      if (auto weighted = singleUseProducer<MatmulOp>(chain.query)) {
        RankedTensorType weight = tensorType(weighted.getRhs());
        RankedTensorType query = tensorType(weighted.getLhs());
        if (!weighted.getTransposeB() && weight.getRank() == 2 &&
            query.getRank() == 4 &&
            sameDim(weight.getDimSize(0), weight.getDimSize(1)) &&
            sameDim(weight.getDimSize(0), query.getDimSize(3))) {
          chain.ops.push_back(weighted);
          chain.score = ScoreKind::general;
          chain.generalWeight = weighted.getRhs();
          chain.query = weighted.getLhs();
        }
      }
      return success(tensorType(chain.query).getRank() == 4 &&
                     tensorType(chain.key).getRank() == 4);
    }
    // A reshape dropping the trailing 1 of matmul(tanh(...), va [A, 1]).
    if (auto reshape = current.getDefiningOp<ReshapeOp>()) {
      auto product = singleUseProducer<MatmulOp>(reshape.getInput());
      if (!product || tensorType(product.getRhs()).getRank() != 2)
        return failure();
      ArrayRef<int64_t> from = tensorType(product.getResult()).getShape();
      ArrayRef<int64_t> to = reshape.getType().getShape();
      if (from.size() != 5 || from.back() != 1 ||
          !llvm::equal(from.drop_back(), to, sameDim))
        return failure();
      chain.ops.push_back(reshape);
      return matchAdditive(product, chain);
    }
    return failure();
  }

  /// x for div(x, sqrt(reduce_sum(mul(x, x), axis 3, keepdims))), the
  /// vector divided by its norm; appends the matched ops.
  static Value normalizedInput(Value value, SmallVectorImpl<Operation *> &ops) {
    auto quotient = singleUseProducer<DivOp>(value);
    if (!quotient)
      return nullptr;
    Value x = quotient.getLhs();
    auto root = singleUseProducer<SqrtOp>(quotient.getRhs());
    auto sum =
        root ? singleUseProducer<ReduceSumOp>(root.getInput()) : ReduceSumOp();
    auto square = sum ? singleUseProducer<MulOp>(sum.getInput()) : MulOp();
    if (!square || square.getLhs() != x || square.getRhs() != x ||
        !sum.getKeepdims() || sum.getAxis() != 3 ||
        tensorType(x).getRank() != 4 || quotient.getType() != x.getType())
      return nullptr;
    ops.append({quotient, root, sum, square});
    return x;
  }

  /// matmul(tanh(unsqueeze(linear(q, Wq), 3) + unsqueeze(linear(k, Wk), 2)),
  /// va): [B, H, S, T] scores from va [A] or [B, H, S, T, 1] from va [A, 1].
  LogicalResult matchAdditive(MatmulOp product, AttentionChain &chain) const {
    Value vector = product.getRhs();
    RankedTensorType vectorType = tensorType(vector);
    bool column = vectorType.getRank() == 2 && vectorType.getDimSize(1) == 1;
    if (product.getTransposeB() || !(vectorType.getRank() == 1 || column))
      return failure();
    auto tanh = singleUseProducer<TanhOp>(product.getLhs());
    auto sum = tanh ? singleUseProducer<AddOp>(tanh.getInput()) : AddOp();
    if (!sum || tensorType(sum.getResult()).getRank() != 5)
      return failure();
    auto project = [](Value value, int64_t axis) -> LinearOp {
      auto unsqueeze = singleUseProducer<UnsqueezeOp>(value);
      if (!unsqueeze || unsqueeze.getAxis() != axis)
        return nullptr;
      auto linear = singleUseProducer<LinearOp>(unsqueeze.getInput());
      if (!linear || linear.getBias() ||
          tensorType(linear.getInput()).getRank() != 4)
        return nullptr;
      return linear;
    };
    LinearOp query = project(sum.getLhs(), 3), key = project(sum.getRhs(), 2);
    if (!query || !key) {
      query = project(sum.getRhs(), 3);
      key = project(sum.getLhs(), 2);
    }
    if (!query || !key)
      return failure();
    for (Value side : {sum.getLhs(), sum.getRhs()})
      chain.ops.push_back(side.getDefiningOp());
    chain.ops.append({query, key, sum, tanh, product});
    chain.score = ScoreKind::additive;
    chain.query = query.getInput();
    chain.key = key.getInput();
    chain.queryWeight = query.getWeight();
    chain.keyWeight = key.getWeight();
    chain.scoreVector = vector;
    return success();
  }

  /// repeat(k, h, g) and repeat(v, h, g) along the heads axis h of the
  /// chain's layout: GQA reads the kv heads directly.
  void matchGroupedHeads(AttentionChain &chain, int64_t headAxis) const {
    auto key = singleUseProducer<RepeatOp>(chain.key);
    auto value = singleUseProducer<RepeatOp>(chain.value);
    if (!key || !value || key.getAxis() != headAxis ||
        value.getAxis() != headAxis || key.getTimes() != value.getTimes())
      return;
    chain.ops.append({key, value});
    chain.key = key.getInput();
    chain.value = value.getInput();
  }

  /// q, k, v transposed from [B, S, H, D] and the output transposed back:
  /// the bshd layout, with no transposes at all.
  void matchHeadMajorLayout(AttentionChain &chain) const {
    static constexpr int64_t swap[] = {0, 2, 1, 3}; // [B,S,H,D] <-> [B,H,S,D]
    SmallVector<TransposeOp> inputs;
    for (Value operand : {chain.query, chain.key, chain.value}) {
      auto transpose = singleUseProducer<TransposeOp>(operand);
      if (!transpose || transpose.getPermutation() != ArrayRef(swap))
        return;
      inputs.push_back(transpose);
    }
    Value result = chain.root->getResult(0);
    if (!result.hasOneUse())
      return;
    auto back = dyn_cast<TransposeOp>(*result.getUsers().begin());
    if (!back || back.getPermutation() != ArrayRef(swap))
      return;
    for (TransposeOp transpose : inputs)
      chain.ops.push_back(transpose);
    chain.ops.push_back(back);
    chain.query = inputs[0].getInput();
    chain.key = inputs[1].getInput();
    chain.value = inputs[2].getInput();
    chain.layout = Layout::bshd;
    chain.root = back;
  }
};

/// reshape(repeat(unsqueeze(x, a), a, g)) that merges axes a - 1 and a is
/// repeat(x, a - 1, g): Llama's repeat_kv, x[:, :, None].expand(...)
/// .reshape(...), as exporters write it, which the GQA match then reads as
/// kv heads shared by g query heads each.
class MergeRepeatedAxis : public OpRewritePattern<ReshapeOp> {
public:
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ReshapeOp reshape,
                                PatternRewriter &rewriter) const override {
    auto repeat = reshape.getInput().getDefiningOp<RepeatOp>();
    auto unsqueeze =
        repeat ? repeat.getInput().getDefiningOp<UnsqueezeOp>() : UnsqueezeOp();
    if (!unsqueeze || unsqueeze.getAxis() < 1 ||
        repeat.getAxis() != unsqueeze.getAxis())
      return failure();
    int64_t axis = unsqueeze.getAxis() - 1, times = repeat.getTimes();
    Value input = unsqueeze.getInput();
    ArrayRef<int64_t> from = tensorType(input).getShape(),
                      to = reshape.getType().getShape();
    if (from.size() != to.size())
      return failure();
    for (size_t i = 0; i < from.size(); ++i)
      if (int64_t(i) != axis && !sameDim(from[i], to[i]))
        return failure();
    // The merged axis: times × the input's, or run-time on both sides (the
    // element count is kept and every other axis is the same).
    bool dynamic = ShapedType::isDynamic(from[axis]);
    if (dynamic != ShapedType::isDynamic(to[axis]) ||
        (!dynamic && to[axis] != from[axis] * times))
      return failure();
    rewriter.replaceOpWithNewOp<RepeatOp>(reshape, reshape.getType(), input,
                                          rewriter.getI64IntegerAttr(axis),
                                          rewriter.getI64IntegerAttr(times));
    return success();
  }
};

struct FuseAttentionPass
    : public attn::impl::FuseAttentionPassBase<FuseAttentionPass> {
  void runOnOperation() override {
    // The repeats first: a chain fused before its repeat_kv became a repeat
    // would keep the repeated K and V.
    RewritePatternSet repeats(&getContext()), chains(&getContext());
    repeats.add<MergeRepeatedAxis>(&getContext());
    chains.add<FuseAttentionChain>(&getContext());
    if (failed(
            applyPatternsAndFoldGreedily(getOperation(), std::move(repeats))) ||
        failed(applyPatternsAndFoldGreedily(getOperation(), std::move(chains))))
      signalPassFailure();
  }
};

} // namespace
