//===- AttnOps.td - The attn dialect's ops -----------------*- tablegen -*-===//
//
// One op per primitive of the graph format, then the fused attention op.
// Semantics are those of docs/graph-format.md; broadcasting is numpy's.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_OPS_TD
#define ATTN_OPS_TD

include "Attn/IR/AttnDialect.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Dialect/LLVMIR/LLVMAttrDefs.td"

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

def Attn_MatmulOp : Attn_Op<"matmul", [Pure]> {
  let summary = "batched matrix product with numpy broadcasting";
  let description = [{
    `[..., M, K] x [..., K, N] -> [..., M, N]`; with `transpose_b` the right
    operand is `[..., N, K]`. Batch dims broadcast; a 1-D operand is a row
    (left) or column (right) vector whose added dim is dropped, as in numpy.

    ```mlir
    %s = attn.matmul %q, %k {transpose_b}
        : (tensor<1x12x?x64xf32>, tensor<1x12x?x64xf32>) -> tensor<1x12x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       UnitAttr:$transpose_b);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Attn_LinearOp : Attn_Op<"linear", [Pure]> {
  let summary = "x · wᵀ + b, a projection";
  let description = [{
    `x [..., K]`, `w [N, K]`, optional `b [N]` give `[..., N]`.

    ```mlir
    %q = attn.linear %x, %w, %b
        : (tensor<?x?x768xf32>, tensor<768x768xf32>, tensor<768xf32>) -> tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$weight,
                       Optional<AnyRankedTensor>:$bias);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $weight (`,` $bias^)? attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class Attn_BinaryOp<string mnemonic, string what>
    : Attn_Op<mnemonic, [Pure]> {
  let summary = "elementwise " # what # " with numpy broadcasting";
  let description = [{
    Both operands have one element type; the result has the broadcast shape.

    ```mlir
    %r = attn.}] # mnemonic # [{ %a, %b
        : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xf32>) -> tensor<1x12x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Attn_AddOp : Attn_BinaryOp<"add", "sum">;
def Attn_SubOp : Attn_BinaryOp<"sub", "difference">;
def Attn_MulOp : Attn_BinaryOp<"mul", "product">;
def Attn_DivOp : Attn_BinaryOp<"div", "quotient">;

def Attn_ScaleOp : Attn_Op<"scale", [Pure, SameOperandsAndResultType]> {
  let summary = "multiplies every element by a constant";
  let description = [{
    ```mlir
    %r = attn.scale %s, 0.125 : tensor<1x12x?x?xf32>
    ```
    A scale of a scale folds into one; a scale by 1 folds away.
  }];
  let arguments = (ins AnyRankedTensor:$input, F64Attr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $value attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

class Attn_UnaryOp<string mnemonic, string what>
    : Attn_Op<mnemonic, [Pure, SameOperandsAndResultType]> {
  let summary = "elementwise " # what;
  let description = [{
    ```mlir
    %r = attn.}] # mnemonic # [{ %x : tensor<?x1000xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_TanhOp : Attn_UnaryOp<"tanh", "hyperbolic tangent">;
def Attn_ExpOp : Attn_UnaryOp<"exp", "natural exponential">;
def Attn_NegOp : Attn_UnaryOp<"neg", "negation">;
def Attn_SqrtOp : Attn_UnaryOp<"sqrt", "square root">;
def Attn_CosOp : Attn_UnaryOp<"cos", "cosine">;
def Attn_SinOp : Attn_UnaryOp<"sin", "sine">;

def Attn_SoftmaxOp : Attn_Op<"softmax", [Pure, SameOperandsAndResultType]> {
  let summary = "softmax along one axis";
  let description = [{
    A slice whose entries are all -inf gives zeros (everything masked), as a
    fully masked row of `attn.attention` does.

    ```mlir
    %p = attn.softmax %s {axis = 3} : tensor<1x12x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_MaskedFillOp : Attn_Op<"masked_fill", [Pure]> {
  let summary = "replaces the elements where a bool mask is true";
  let description = [{
    The mask broadcasts to the input's shape; `value` may be -inf.

    ```mlir
    %m = attn.masked_fill %s, %pad, 0xFFF0000000000000
        : (tensor<1x12x?x?xf32>, tensor<1x1x1x?xi1>) -> tensor<1x12x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, AnyRankedTensor:$mask,
                       F64Attr:$value);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input `,` $mask `,` $value attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def Attn_CausalMaskOp : Attn_Op<"causal_mask", [Pure, SameOperandsAndResultType]> {
  let summary = "sets entries above the bottom-right aligned diagonal to -inf";
  let description = [{
    For `[..., S, T]`, entry `(i, j)` becomes -inf when `j > i + T - S`.

    ```mlir
    %m = attn.causal_mask %s : tensor<1x12x?x?xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Attn_WindowMaskOp : Attn_Op<"window_mask", [Pure, SameOperandsAndResultType]> {
  let summary = "sets entries outside a band around the bottom-right diagonal to -inf";
  let description = [{
    For `[..., S, T]`, entry `(i, j)` becomes -inf unless
    `i' - left <= j <= i' + right`, with `i' = i + T - S` (the alignment of
    `causal_mask`): a sliding window, `right = 0` for a causal one.

    ```mlir
    %m = attn.window_mask %s {left = 4095, right = 0} : tensor<1x32x?x?xf32>
    ```
  }];
  let arguments = (ins RankedTensorOf<[AnyFloat]>:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$left,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$right);
  let results = (outs RankedTensorOf<[AnyFloat]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def Attn_ReshapeOp : Attn_Op<"reshape", [Pure]> {
  let summary = "the same elements in another shape";
  let description = [{
    The result type gives the shape; each of its dynamic dims takes its size
    from one `index` operand, in order.

    ```mlir
    %r = attn.reshape %x [%B, %S] : tensor<?x?x768xf32> -> tensor<?x?x12x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, Variadic<Index>:$dynamic_sizes);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input (`[` $dynamic_sizes^ `]`)? attr-dict `:` "
                       "type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_TransposeOp : Attn_Op<"transpose", [Pure]> {
  let summary = "permutes the dims";
  let description = [{
    Result dim `i` is input dim `permutation[i]`. An identity permutation
    folds away; a transpose of a transpose composes.

    ```mlir
    %t = attn.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : tensor<?x?x12x64xf32> -> tensor<?x12x?x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Attn_UnsqueezeOp : Attn_Op<"unsqueeze", [Pure]> {
  let summary = "inserts a dim of size 1";
  let description = [{
    ```mlir
    %u = attn.unsqueeze %x {axis = 2} : tensor<?x1x?x1000xf32> -> tensor<?x1x1x?x1000xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_RepeatOp : Attn_Op<"repeat", [Pure]> {
  let summary = "repeats every slice along an axis (repeat_interleave)";
  let description = [{
    `[a, b]` repeated twice is `[a, a, b, b]`: the head expansion of GQA.

    ```mlir
    %r = attn.repeat %k {axis = 1, times = 4} : tensor<?x8x?x128xbf16> -> tensor<?x32x?x128xbf16>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, I64Attr:$times);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_SliceOp : Attn_Op<"slice", [Pure]> {
  let summary = "the entries [start, end) along one axis of static size";
  let description = [{
    The halves of rotary embeddings' rotate_half.

    ```mlir
    %r = attn.slice %x {axis = 3, start = 0, end = 32} : tensor<?x8x?x64xf32> -> tensor<?x8x?x32xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, I64Attr:$start,
                       I64Attr:$end);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_ReduceSumOp : Attn_Op<"reduce_sum", [Pure]> {
  let summary = "sums along one axis";
  let description = [{
    ```mlir
    %r = attn.reduce_sum %x {axis = 1, keepdims} : tensor<4x8xf32> -> tensor<4x1xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis, UnitAttr:$keepdims);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Attn_ConcatOp : Attn_Op<"concat", [Pure]> {
  let summary = "joins tensors along one axis";
  let description = [{
    ```mlir
    %c = attn.concat %a, %b {axis = 1}
        : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The fused op
//===----------------------------------------------------------------------===//

// Scalar attributes the op accepts: finite, and for softcap also > 0.
def Attn_FiniteF64Attr : ConfinedAttr<F64Attr, [AttrConstraint<
    CPred<"std::isfinite(::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble())">,
    "a finite number">]>;
def Attn_PositiveF64Attr : ConfinedAttr<F64Attr, [AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble() > 0 && "
          "std::isfinite(::llvm::cast<::mlir::FloatAttr>($_self).getValueAsDouble())">,
    "a finite number > 0">]>;
// [left, right], both >= 0.
def Attn_WindowAttr : ConfinedAttr<DenseI64ArrayAttr,
    [DenseArrayCount<2>, DenseArrayNonNegative<DenseI64ArrayAttr>]>;

def Attn_AttentionOp : Attn_Op<"attention", [Pure, AttrSizedOperandSegments,
    AllElementTypesMatch<["query", "key", "value", "output"]>]> {
  let summary = "fused attention: scores, masks, softmax and the V product";
  let description = [{
    For every batch b, query head h (reading kv head `h / (Hq / Hkv)`) and
    query i aligned to key position `i' = i + T - S`:
    score_j = scale · score_fn(q_i, k_j); softcap `c · tanh(score / c)`; plus
    every tensor bias and `-slope_h · |i' - j|` when `alibi`; keys dropped by
    any mask leave the softmax; output = Σ p_j v_j. A row with no key left is
    exactly 0, and its `lse` (natural log of the softmax denominator) -inf.

    Operands and attributes:
    - `query`, `key`, `value`: `[B, Hq, S, Dk]`, `[B, Hkv, T, Dk]`,
      `[B, Hkv, T, Dv]` (`layout = bshd`: `[B, S, H, D]`; the output too).
    - `score`: `dot` (q·k), `general` (qᵀ W k with `general(W)`, W `[Dk, Dk]`),
      `additive` (vaᵀ tanh(Wq q + Wk k) with `additive(Wq, Wk, va)`, Wq and
      Wk `[A, Dk]`, va `[A]` or `[A, 1]`), `cosine` ((q·k)/(|q||k|), norms
      clamped at 1e-12).
    - `scale`: absent means 1/sqrt(Dk) for dot and general, 1 otherwise.
    - `softcap`, `alibi` (standard slopes, or `alibi_slopes` f32 `[Hq]`),
      `bias(...)` float tensors broadcastable to `[B, Hq, S, T]`.
    - Masks: `causal` (j ≤ i'), `window = array<i64: L, R>`
      (i' - L ≤ j ≤ i' + R), `key_lengths` i32 `[B]` (j < len[b]), and
      `masks(...)` i1 tensors broadcastable to `[B, Hq, S, T]`, true =
      attend; where `mask_drops[n]` is true, mask n means true = drop (the
      polarity of a fused `masked_fill`).
    - Results: the output (value's element type) and, optionally, `lse` f32
      `[B, Hq, S]`.

    ```mlir
    %o = attn.attention %q, %k, %v {causal, scale = 0.125 : f64}
        : (tensor<1x32x?x128xbf16>, tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>)
          -> tensor<1x32x?x128xbf16>
    ```
  }];
  let arguments = (ins
    4DTensorOf<[AnyFloat]>:$query, 4DTensorOf<[AnyFloat]>:$key,
    4DTensorOf<[AnyFloat]>:$value,
    Optional<RankedTensorOf<[AnyFloat]>>:$general_weight,
    Optional<RankedTensorOf<[AnyFloat]>>:$query_weight,
    Optional<RankedTensorOf<[AnyFloat]>>:$key_weight,
    Optional<RankedTensorOf<[AnyFloat]>>:$score_vector,
    Variadic<RankedTensorOf<[AnyFloat]>>:$biases,
    Optional<1DTensorOf<[F32]>>:$alibi_slopes,
    Optional<1DTensorOf<[I32]>>:$key_lengths,
    Variadic<RankedTensorOf<[I1]>>:$masks,
    DefaultValuedAttr<Attn_ScoreKindAttr, "ScoreKind::dot">:$score,
    DefaultValuedAttr<Attn_LayoutAttr, "Layout::bhsd">:$layout,
    OptionalAttr<Attn_FiniteF64Attr>:$scale,
    OptionalAttr<Attn_PositiveF64Attr>:$softcap,
    UnitAttr:$alibi,
    UnitAttr:$causal,
    OptionalAttr<Attn_WindowAttr>:$window,
    OptionalAttr<DenseBoolArrayAttr>:$mask_drops
  );
  let results = (outs 4DTensorOf<[AnyFloat]>:$output,
                      Optional<3DTensorOf<[F32]>>:$lse);
  let extraClassDeclaration = [{
    /// The rules of Attn/IR/AttnSemantics.h for this op's attributes; every
    /// backend reads the scale, the visible keys and the axes from here.
    ::mlir::attn::semantics::ScaleRule getScaleRule();
    ::mlir::attn::semantics::KeyVisibility getKeyVisibility();
    ::mlir::attn::semantics::LayoutAxes getLayoutAxes();
  }];
  let assemblyFormat = [{
    $query `,` $key `,` $value
    (`general` `(` $general_weight^ `)`)?
    (`additive` `(` $query_weight^ `,` $key_weight `,` $score_vector `)`)?
    (`bias` `(` $biases^ `)`)?
    (`alibi_slopes` `(` $alibi_slopes^ `)`)?
    (`key_lengths` `(` $key_lengths^ `)`)?
    (`masks` `(` $masks^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Tile ops (attn-tile-attention's output)
//===----------------------------------------------------------------------===//

include "Attn/IR/AttnTileOps.td"

//===----------------------------------------------------------------------===//
// Lowering markers
//===----------------------------------------------------------------------===//

def Attn_LoopAnnotationOp : Attn_Op<"loop_annotation"> {
  let summary = "an LLVM loop annotation on its way to the loop's back edge";
  let description = [{
    Begins the body of the loop it annotates. `attn-mark-loop-annotations`
    writes it from an `scf.for`'s `llvm.loop_annotation` attribute, which
    MLIR 19's `convert-scf-to-cf` drops; once the loop is LLVM control flow,
    `attn-annotate-loop-latches` sets the annotation on the loop's latch
    (`llvm.br` back to the header) and erases the op. No memory effects are
    declared, so no pattern in between erases it as dead.

    ```mlir
    attn.loop_annotation #llvm.loop_annotation<unroll = <disable = true>>
    ```
  }];
  let arguments = (ins LoopAnnotationAttr:$annotation);
  let assemblyFormat = "$annotation attr-dict";
}

#endif // ATTN_OPS_TD
