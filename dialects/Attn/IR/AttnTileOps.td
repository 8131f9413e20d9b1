//===- AttnTileOps.td - Tile ops of the attention lowering -*- tablegen -*-===//
//
// The ops `attn-tile-attention` writes: one row tile of queries against one
// key tile, on 2-D tensor slices. They are the pieces a backend maps to its
// microkernels (CPU: register blocks; GPU: mma); the online-softmax update
// between them stays arith/math on the tiles, so every backend shares it.
// Included by AttnOps.td.
//
//===----------------------------------------------------------------------===//
#ifndef ATTN_TILE_OPS_TD
#define ATTN_TILE_OPS_TD

def Attn_TileScoresOp : Attn_Op<"tile_scores", [Pure, AttrSizedOperandSegments,
    AllElementTypesMatch<["query", "key"]>]> {
  let summary = "the scores of a query tile against a key tile";
  let description = [{
    `query [M, Dk]` and `key [N, Dk]` give the f32 scores `[M, N]`:
    `scale · score_fn(q_r, k_c)`, then `c · tanh(score / c)` with `softcap`.
    Score kinds, weights and the default scale are those of `attn.attention`
    (absent `scale`: 1/sqrt(Dk) for dot and general, 1 otherwise, Dk being
    the tiles' depth, a run-time size when it is `?`). The scores are in
    natural units and accumulate in f32.

    ```mlir
    %s = attn.tile_scores %q, %k {scale = 0.125 : f64}
        : (tensor<?x64xbf16>, tensor<?x64xbf16>) -> tensor<?x?xf32>
    ```
  }];
  let arguments = (ins
    2DTensorOf<[AnyFloat]>:$query, 2DTensorOf<[AnyFloat]>:$key,
    Optional<2DTensorOf<[AnyFloat]>>:$general_weight,
    Optional<2DTensorOf<[AnyFloat]>>:$query_weight,
    Optional<2DTensorOf<[AnyFloat]>>:$key_weight,
    Optional<RankedTensorOf<[AnyFloat]>>:$score_vector,
    DefaultValuedAttr<Attn_ScoreKindAttr, "ScoreKind::dot">:$score,
    OptionalAttr<Attn_FiniteF64Attr>:$scale,
    OptionalAttr<Attn_PositiveF64Attr>:$softcap
  );
  let results = (outs 2DTensorOf<[F32]>:$result);
  let extraClassDeclaration = [{
    /// The scale rule of AttnSemantics.h, as attn.attention's.
    ::mlir::attn::semantics::ScaleRule getScaleRule();
  }];
  let assemblyFormat = [{
    $query `,` $key
    (`general` `(` $general_weight^ `)`)?
    (`additive` `(` $query_weight^ `,` $key_weight `,` $score_vector `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_TileMaskOp : Attn_Op<"tile_mask", [Pure, AttrSizedOperandSegments,
    AllTypesMatch<["scores", "result"]>]> {
  let summary = "sets the scores a causal or window mask drops to -inf";
  let description = [{
    Row `r` of the tile is the query at aligned position `p = position + r`
    (`p = i + T - S`), column `c` is key `j = key + c`. The entry becomes
    -inf unless `keyVisible(p, j)` (AttnSemantics.h) holds for `causal`
    (`j <= p`) and `window = [L, R]` (`p - L <= j <= p + R`); the key length
    is not part of it (a key loop bounded by `visibleKeys` never passes it).

    With `rows %r0 mod %S` the tile's rows pack the query heads of a kv head
    (`packedQuery`): row `r` is query `(r0 + r) mod S`, at `p = position +
    (r0 + r) mod S`, so `position` is `T - S` there.

    ```mlir
    %m = attn.tile_mask %s [%p0, %j0] {causal} : tensor<?x?xf32>
    %n = attn.tile_mask %s [%offset, %j0] rows %r0 mod %S {causal}
        : tensor<?x?xf32>
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$scores, Index:$position,
                       Index:$key, Optional<Index>:$firstRow,
                       Optional<Index>:$queries, UnitAttr:$causal,
                       OptionalAttr<Attn_WindowAttr>:$window);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let extraClassDeclaration = [{
    /// The position masks as AttnSemantics.h's rule (no key length).
    ::mlir::attn::semantics::KeyVisibility getKeyVisibility();
  }];
  let assemblyFormat = [{
    $scores `[` $position `,` $key `]`
    (`rows` $firstRow^ `mod` $queries)? attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_TileTransformOp : Attn_Op<"tile_transform", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["scores", "result"]>]> {
  let summary = "adds biases and ALiBi to a scores tile, -inf where a tensor "
                "mask drops";
  let description = [{
    Row `r` of the tile is query `i = query + r` of query head `head`; with
    `packed %G` it is packed row `R = query + r` of kv head `head`, i.e.
    query `R mod S` of query head `head·G + R / S` (AttnSemantics.h,
    `packedQueryHead`). Its aligned position is `p = i + T - S` for
    `in [S, T]`; column `c` is key `j = key + c`. Each bias (broadcast to
    `[B, Hq, S, T]`) at `(batch, h, i, j)` is added in f32, ALiBi subtracts
    `alibi_slopes[h] · |p - j|`, and the entry becomes -inf where a mask
    (broadcast to `[B, Hq, S, T]`) is false, or true for a mask that
    `mask_drops` marks as listing the dropped keys.

    ```mlir
    %t = attn.tile_transform %s [%b, %h, %r0, %j0] in [%S, %T]
        bias(%bias : tensor<1x8x?x?xf16>) alibi_slopes(%slopes : tensor<8xf32>)
        masks(%pad : tensor<2x1x1x?xi1>) : tensor<?x?xf32>
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$scores, Index:$batch, Index:$head,
                       Index:$query, Index:$key, Index:$queryLen,
                       Index:$keyLen, Optional<Index>:$group,
                       Variadic<RankedTensorOf<[AnyFloat]>>:$biases,
                       Optional<1DTensorOf<[F32]>>:$alibi_slopes,
                       Variadic<RankedTensorOf<[I1]>>:$masks,
                       OptionalAttr<DenseBoolArrayAttr>:$mask_drops);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $scores `[` $batch `,` $head `,` $query `,` $key `]`
    `in` `[` $queryLen `,` $keyLen `]` (`packed` $group^)?
    (`bias` `(` $biases^ `:` type($biases) `)`)?
    (`alibi_slopes` `(` $alibi_slopes^ `:` type($alibi_slopes) `)`)?
    (`masks` `(` $masks^ `:` type($masks) `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

def Attn_TileSoftmaxUpdateOp : Attn_Op<"tile_softmax_update", [Pure,
    AllTypesMatch<["scores", "probabilities"]>,
    AllTypesMatch<["max", "sum", "newMax", "newSum", "alpha"]>]> {
  let summary = "one online-softmax step over a tile of scores";
  let description = [{
    From the scores `s [M, N]` (natural units, -inf where masked) and the
    running max `m` and sum `l` of each row (`[M]`): `m' = max(m, rowmax s)`;
    `shift = m'`, or 0 where `m' = -inf` (a row without a visible key yet:
    then `exp(s - shift)` is 0, never NaN); `alpha = exp(m - shift)`,
    `p = exp(s - shift)`, `l' = alpha · l + rowsum p`. The accumulator's
    rescale by `alpha` is `attn.tile_accumulate`'s.

    ```mlir
    %p, %m1, %l1, %alpha = attn.tile_softmax_update %s, %m, %l
        : tensor<?x?xf32>, tensor<?xf32>
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$scores, 1DTensorOf<[F32]>:$max,
                       1DTensorOf<[F32]>:$sum);
  let results = (outs 2DTensorOf<[F32]>:$probabilities,
                      1DTensorOf<[F32]>:$newMax, 1DTensorOf<[F32]>:$newSum,
                      1DTensorOf<[F32]>:$alpha);
  let assemblyFormat = [{
    $scores `,` $max `,` $sum attr-dict `:` type($scores) `,` type($max)
  }];
  let hasVerifier = 1;
}

def Attn_TileAccumulateOp : Attn_Op<"tile_accumulate", [Pure,
    AllTypesMatch<["accumulator", "result"]>]> {
  let summary = "alpha · acc + P · V for a tile of probabilities";
  let description = [{
    `probabilities [M, N]` (f32) times `value [N, Dv]` added to the f32
    accumulator `[M, Dv]`, each accumulator row first multiplied by
    `rescale [M]` when it is given (the online softmax's alpha).

    ```mlir
    %o = attn.tile_accumulate %p, %v, %acc rescale(%alpha)
        : (tensor<?x?xf32>, tensor<?x64xbf16>, tensor<?x64xf32>, tensor<?xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$probabilities,
                       2DTensorOf<[AnyFloat]>:$value,
                       2DTensorOf<[F32]>:$accumulator,
                       Optional<1DTensorOf<[F32]>>:$rescale);
  let results = (outs 2DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $probabilities `,` $value `,` $accumulator (`rescale` `(` $rescale^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Attn_TileNormalizeOp : Attn_Op<"tile_normalize", [Pure]> {
  let summary = "the output rows acc / l, and their lse";
  let description = [{
    `output[r] = accumulator[r] / sum[r]`, exactly 0 where `sum[r] = 0` (a
    row that saw no key: never NaN), converted to the output's element type.
    With `lse(%max)`: `lse[r] = max[r] + log(sum[r])`, -inf for such a row;
    `max` is the running maximum of the natural-unit scores.

    ```mlir
    %o, %lse = attn.tile_normalize %acc, %l lse(%m)
        : (tensor<?x64xf32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x64xbf16>, tensor<?xf32>)
    ```
  }];
  let arguments = (ins 2DTensorOf<[F32]>:$accumulator, 1DTensorOf<[F32]>:$sum,
                       Optional<1DTensorOf<[F32]>>:$max);
  let results = (outs 2DTensorOf<[AnyFloat]>:$output,
                      Optional<1DTensorOf<[F32]>>:$lse);
  let assemblyFormat = [{
    $accumulator `,` $sum (`lse` `(` $max^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // ATTN_TILE_OPS_TD
