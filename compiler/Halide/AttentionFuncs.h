//===- AttentionFuncs.h - The attention algorithm as Halide Funcs -*- C++ -*-===//
//
// Shared by AttentionAlgorithm.cpp (what is computed), AttentionSchedule.cpp
// (how, by hand) and AutoSchedule.cpp (how, by an autoscheduler), so that
// schedules never touch the algorithm.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_HALIDE_ATTENTIONFUNCS_H
#define ATTNC_HALIDE_ATTENTIONFUNCS_H

#include "Halide/HalideBackend.h"
#include "Halide/PlanParams.h"

#include <Halide.h>

#include <string>

namespace attnc {

struct AttentionFuncs {
  /// Loop variables: d (head dim), i (query), j (key), a (additive unit),
  /// h (query head), g (kv head), b (batch); t a tile of keys and u a key
  /// in it (the online softmax); x, y are the output's two middle dims (i, h
  /// for bhsd; h, i for bshd); p a part of the decode form's keys.
  Halide::Var d{"d"}, i{"i"}, j{"j"}, a{"a"}, h{"h"}, g{"g"}, b{"b"}, t{"t"},
      u{"u"}, x{"x"}, y{"y"}, p{"p"};
  bool bshd = false;
  /// The decode form: NAME_entry's crop is every query head of one kv head
  /// and fewer queries than a vector, scheduled with keys in the lanes
  /// (scheduleAttention), over part keyPart of keyParts of its visible keys
  /// (FlashDecoding). Its one result is the part's partial rows
  /// (defineAttention), which the merge pipeline (defineMerge) combines
  /// into the output and the lse.
  bool decode = false;
  ScoreKind score = ScoreKind::Dot;
  /// Dv when it is a fixed multiple of 16, else 0. Only then are V reads
  /// unclamped, and a schedule's depth blocks must divide it.
  int64_t exactValueDepth = 0;

  /// One chain of Funcs per pipeline output: Halide computes a Func at one
  /// place only, so the output and the lse each get their own scores.
  struct Chain {
    bool isLse = false;
    /// Per query tile: q as (i, d) rows (projected for general), query norms
    /// or projections, raw products, scores, masked scores, the weights
    /// (probabilities), the P·V accumulator and the normalised output.
    /// The decode form's softmax is over all keys at once: row max, weights
    /// (i, j, h, b), row sum, accumulator. The rows form's is online over
    /// tiles of keys: the scores of key u of tile t (i, u, t, h, b), the
    /// tile's max, weights against it (i, u, t, h, b), sum and P·V (d, i, t,
    /// h, b), folded over the tiles into `online`: (output, running max,
    /// running sum) at (d, i, h, b), or (running max, running sum) at (i, h,
    /// b) for the lse; the accumulator reads its output.
    Halide::Func queryRows, queryNorm, queryProjection;
    /// Per kv head: key norms (cosine) or projections (additive).
    Halide::Func keyNorm, keyProjection;
    /// K and V rows as f32, (d, j, g, b), so that the hand schedule copies
    /// them per block of keys (per tile, per chunk of the decode form's P·V):
    /// 16-bit elements are widened once there rather than at every use in
    /// the products, and a block's rows are one dense buffer (keyRows stays
    /// bf16 for bf16 products). keyRows is always defined; valueRows for
    /// 16-bit V and in the decode form.
    Halide::Func keyRows, valueRows;
    /// bf16 products (AlgorithmOptions::bf16Products): q as depth pairs,
    /// (pair, i, m, h, b) = q[2m + pair][i] (0 past Dk), so that one vector
    /// of 2W bf16 holds W queries' pairs, or in the decode form (pair, m, i,
    /// h, b), W pairs of one query; overDepthPairs is (pair, m).
    Halide::Func queryPairs;
    Halide::RDom overDepthPairs;
    /// And with bf16 v, P·V over pairs of a tile's keys: the weights rounded
    /// to bf16, (pair, i, m, t, h, b), and V, (pair, d, m, t, h, b), both 0
    /// past the tile's keys, V interleaved from the tile's rows as they lie,
    /// (d, u, t, h, b); overTilePairs is (pair, m). The decode form pairs
    /// the crop's keys instead: weights (pair, m, i, h, b) and V (pair, d,
    /// m, b) over overKeyPairs, whole pairs only (an odd last key is added
    /// to the normalised output in f32).
    Halide::Func probabilityPairs, valuePairs, valueTileRows;
    Halide::RDom overTilePairs, overKeyPairs;
    Halide::Func product, scores, masked, rowMax, probabilities, rowSum,
        tileScores, tileMax, tileSum, tileValues, online, accumulator,
        normalized;
    /// The output, (d, x, y, b), or the lse, (i, h, b); in the decode form
    /// the partial rows, (e, i, h, b, p) (kPartialSlots).
    Halide::Func result;
    /// overKeys: the crop's visible keys; overTiles: tiles of them;
    /// overTileKeys: the keys of one tile.
    Halide::RDom overDepth, overKeys, overUnits, overTiles, overTileKeys;
  };
  std::vector<Chain> chains; ///< In the order of the pipeline's outputs.
  std::vector<int> resultValues; ///< Plan value of each chain's result.
  PlanParams params;             ///< The buffer arguments, in order.
  /// The crop one call computes (NAME_entry's task: one batch, one query
  /// head, queryCount queries from queryFirst) and the batch's key length
  /// (INT32_MAX without key lengths), passed after the buffer params. The
  /// key loops visit only keys some row of the crop can see (causal, window,
  /// key length), so a task skips what its rows mask.
  Halide::Param<int32_t> batchIndex{"batch_index"}, queryFirst{"query_first"},
      queryCount{"query_count"}, keyLimit{"key_limit"};
  /// The decode form's crop: the kv head all its query heads read, and
  /// which part of its visible keys (keyPart of keyParts; 0 of 1 unsplit).
  Halide::Param<int32_t> kvHeadOfCrop{"kv_head"}, keyPart{"key_part"},
      keyParts{"key_parts"};
  /// The crop's parameters, in the order the pipeline takes them.
  std::vector<Halide::Argument> cropArguments() const {
    std::vector<Halide::Argument> crop = {batchIndex, queryFirst, queryCount,
                                          keyLimit};
    if (decode)
      for (const Halide::Param<int32_t> &param :
           {kvHeadOfCrop, keyPart, keyParts})
        crop.push_back(param);
    return crop;
  }
};

/// A partial row of the decode form, per (query, head, batch, part): the
/// part's unnormalised output (Dv floats, weights 2^-keyShift(T) exp(s - m)),
/// then its max m over the part's visible keys (kDropped when it has none)
/// and its sum of weights. The merge rescales each part by exp(m_p - max m).
inline constexpr int kPartialSlots = 2; ///< Floats past Dv.

/// The merge of a decode form's partial rows into the attention's results.
struct MergeFuncs {
  Halide::Var d{"d"}, i{"i"}, h{"h"}, b{"b"}, x{"x"}, y{"y"};
  /// f32 (e, i, h, b, p): Dv + kPartialSlots floats per row and part.
  Halide::ImageParam partials{Halide::Float(32), 5, "partials"};
  /// T, the key positions (the weights' shift, for the lse).
  Halide::Param<int32_t> keys{"keys"};
  /// Per row: the largest part max, each part's weight exp(m_p - max),
  /// the weighted sum of the parts' sums; per output element the weighted
  /// sum of the parts' outputs, and that over the sum (0 for no key).
  Halide::Func rowMax{"merged_max"}, weights{"part_weights"},
      rowSum{"merged_sum"}, merged{"merged_output"},
      normalized{"merged_normalized"};
  std::vector<Halide::Func> results; ///< The output and/or the lse.
  std::vector<int> resultValues;     ///< Plan value of each result.
};

/// Choices that change how the algorithm is written, not what it computes.
struct AlgorithmOptions {
  /// The schedule runs head-dim loops in whole vectors that divide Dv (the
  /// hand schedule does), so V reads of a Dv that is a fixed multiple of 16
  /// need no clamp. An autoscheduler's tiles promise nothing of the kind.
  bool depthInWholeVectors = true;
  /// The decode form (AttentionFuncs::decode).
  bool decode = false;
  /// Keys per tile of the rows form's online softmax (HalideSchedule).
  int64_t keyTile = 128;
  /// Q·Kᵀ of bf16 q and k as sums over pairs of depths of bf16 products,
  /// and with bf16 v P·V over pairs of keys, which Halide turns into
  /// vdpbf16ps (dot scores).
  bool bf16Products = false;
};

/// Builds the algorithm of `kernel` (an attention of `plan`): every score,
/// mask, bias, layout and dtype the plan can hold is expressible.
AttentionFuncs defineAttention(const KernelPlan &plan,
                               const PlannedKernel &kernel,
                               const AlgorithmOptions &options = {});

/// The merge of `kernel`'s decode-form partial rows, the results the graph
/// uses, in the order of the rows form's outputs.
MergeFuncs defineMerge(const KernelPlan &plan, const PlannedKernel &kernel);
/// Its schedule: vectors along the head dim, everything else per call.
void scheduleMerge(MergeFuncs &funcs, const HalideSchedule &schedule);

/// Applies the CPU hand schedule to the Funcs defineAttention made: queries
/// in the lanes, or keys (and head dims) in the lanes for the decode form.
void scheduleAttention(AttentionFuncs &funcs, const HalideSchedule &schedule);

/// Schedules `pipeline` (made of the outputs of `funcs`) with the
/// autoscheduler `schedule.autoscheduler`, for one NAME_entry task; every
/// loop stays serial. Throws UserError for a missing plugin or a failing
/// autoscheduler.
void autoScheduleAttention(AttentionFuncs &funcs, const KernelPlan &plan,
                           const PlannedKernel &kernel,
                           const HalideSchedule &schedule,
                           const Halide::Target &target,
                           Halide::Pipeline &pipeline);

/// A Halide error message as one line, without its "Error:" prefix.
std::string oneLine(std::string text);

} // namespace attnc

#endif // ATTNC_HALIDE_ATTENTIONFUNCS_H
