//===- AttentionSchedule.cpp - The CPU hand schedule of attention ---------===//
//
// How the Funcs of AttentionAlgorithm.cpp are computed. One pipeline call
// computes a crop of the output that NAME_entry hands it (a few query rows
// of one head of one batch; attnrt_parallel_for spreads the crops over
// threads), so nothing here is parallel. Within the crop, queries go in
// tiles of queryTile rows, and for each, keys in tiles of keyTile (the
// online softmax): a key tile's scores (queryTile × keyTile floats) are
// kept, with queries innermost so that a vector of queries meets one
// broadcast key element and the tile's max and sum stay vectors. The
// decode form (scheduleDecodeChain) puts keys in the lanes instead.
//
//===----------------------------------------------------------------------===//

#include "Halide/AttentionFuncs.h"

#include <optional>

namespace attnc {

using namespace Halide;

namespace {

/// Computes `consumer` (its last stage) in register blocks of `width`
/// elements along `wide` (whole vectors of `lanes`) × `rows` along `across`;
/// each block's sum over `reduced` is the Func `sum`, computed per block and
/// unrolled so that its width/lanes × rows accumulators stay in registers.
/// Q·Kᵀ blocks queries × keys over the head dim, P·V head dim × queries
/// over the keys. `outermost`, a reduction of the consumer's update, goes
/// outside the blocks. Returns the loop over blocks along `across`.
Var registerBlocks(Func consumer, Func sum, Var wide, int width, Var across,
                   int rows, RVar reduced, int lanes, bool alignAcross = false,
                   std::optional<RVar> pair = std::nullopt,
                   std::optional<RVar> outermost = std::nullopt) {
  const TailStrategy up = TailStrategy::RoundUp;
  Var wideOuter("wo"), wideInner("wi"), acrossOuter("ao"), acrossInner("ai"),
      vector("v"), lane("lane");
  // Halide refuses to round up the loops of an update (they would update
  // some points twice): guarded instead, with the region aligned to whole
  // blocks so that the guards are always true and simplified away. Along
  // `across` only when `alignAcross`: rows past the query tile would widen
  // what every producer computes (a Q·Kᵀ block of 64 queries for 66 rows of
  // P·V blocks of 6 computes 128), so blocks that do not divide the tile
  // stay guarded, and their accumulators in memory.
  bool update = consumer.has_update_definition();
  Stage stage = update ? consumer.update() : Stage(consumer);
  TailStrategy tail = up;
  if (update) {
    consumer.align_bounds(wide, width);
    if (alignAcross)
      consumer.align_bounds(across, rows);
    tail = TailStrategy::GuardWithIf;
  }
  stage.split(wide, wideOuter, wideInner, width, tail)
      .split(across, acrossOuter, acrossInner, rows, tail);
  if (outermost)
    stage.reorder(wideInner, acrossInner, wideOuter, acrossOuter, *outermost);
  else
    stage.reorder(wideInner, acrossInner, wideOuter, acrossOuter);
  stage.vectorize(wideInner, lanes, tail).unroll(acrossInner);
  sum.compute_at(consumer, wideOuter).vectorize(wide, lanes, up).unroll(across);
  Stage sumUpdate = sum.update();
  sumUpdate.split(wide, vector, lane, lanes, up);
  if (pair) {
    // A pair of products summed into each lane: vdpbf16ps on bf16 operands.
    sumUpdate.reorder(*pair, lane, vector, across, reduced)
        .atomic()
        .vectorize(*pair);
  } else {
    sumUpdate.reorder(lane, vector, across, reduced);
  }
  sumUpdate.vectorize(lane).unroll(vector).unroll(across);
  return acrossOuter;
}

/// A bf16-products pair Func, (pair, x, ...), computed at `at`: both halves
/// of `lanes` x's in one vector, stored pair innermost as vdpbf16ps reads
/// them (x a query for the rows form, a pair for the decode form).
void computePairsAt(Func pairs, LoopLevel at, int lanes) {
  std::vector<Var> args = pairs.args();
  pairs.compute_at(at).vectorize(args[0]).vectorize(args[1], lanes,
                                                    TailStrategy::RoundUp);
}

void scheduleChain(AttentionFuncs &f, AttentionFuncs::Chain &c,
                   const HalideSchedule &s) {
  const int vw = int(s.vectorWidth), qt = int(s.queryTile);
  // Intermediates round their tiles up: ShiftInwards (Halide's default for
  // pure splits) would start a tile below 0 when it is wider than the data.
  // The algorithm clamps every position it reads, so rounding up is safe.
  const TailStrategy up = TailStrategy::RoundUp;
  Var i = f.i, j = f.j, d = f.d, a = f.a;
  Var io("io"), ii("ii");
  // The loop over the crop's heads, where per-kv-head work goes.
  Var perHead = f.h;
  if (!c.isLse) {
    Var query = f.bshd ? f.y : f.x, head = f.bshd ? f.x : f.y;
    c.result.split(query, io, ii, qt, TailStrategy::GuardWithIf)
        .reorder(d, ii, io, head, f.b)
        .vectorize(d, vw, TailStrategy::GuardWithIf);
    perHead = head;
  } else {
    c.result.split(i, io, ii, qt, TailStrategy::GuardWithIf)
        .vectorize(ii, vw, TailStrategy::GuardWithIf);
  }

  // The online softmax: per query tile, a loop over tiles of keys that
  // updates the running values, with each tile's scores, max, weights, sum
  // and P·V computed inside it, so that only queryTile × keyTile scores are
  // kept.
  RVar rt = c.overTiles.x, ru = c.overTileKeys.x;
  c.online.compute_at(c.result, io);

  // Q·Kᵀ in register blocks of scoreVectors query vectors × scoreKeys keys.
  RVar reduced = f.score == ScoreKind::Additive ? c.overUnits.x : c.overDepth.x;
  std::optional<RVar> pair;
  if (c.queryPairs.defined()) {
    reduced = c.overDepthPairs.y;
    pair = c.overDepthPairs.x;
    computePairsAt(c.queryPairs, LoopLevel(c.result, io), vw);
  }
  c.scores.compute_at(c.online, rt);
  Var keyBlocks = registerBlocks(c.scores, c.product, i,
                                 vw * int(s.scoreVectors), j, int(s.scoreKeys),
                                 reduced, vw, /*alignAcross=*/false, pair);
  // A block's key rows copied once per block of keys: one dense block, so
  // one address for all its keys (read in place, f32 rows took six
  // addresses, and LLVM, out of general registers, computed three of them
  // in vector registers in the inner loop: 6-9% of prefill on Zen 3).
  // 16-bit keys are widened there, broadcast from memory as f32 rather
  // than widened in a general register at every use (on Intel cores a
  // broadcast from a register takes an FMA port); bf16 pairs are copied as
  // they are. Cosine key norms and additive projections read keys outside
  // the blocks: inlined there.
  bool keysOnlyInBlocks =
      f.score == ScoreKind::Dot || f.score == ScoreKind::General;
  if (c.keyRows.defined() && keysOnlyInBlocks)
    // Guarded: K's head dim is read unclamped, and may be no multiple of a
    // vector.
    c.keyRows.compute_at(c.scores, keyBlocks)
        .vectorize(d, vw, TailStrategy::GuardWithIf);

  if (c.queryRows.defined()) {
    c.queryRows.compute_at(c.result, io).vectorize(i, vw, up);
    if (c.queryRows.has_update_definition())
      c.queryRows.update().reorder(i, c.overDepth.x).vectorize(i, vw, up);
  }
  if (f.score == ScoreKind::Cosine) {
    c.queryNorm.compute_at(c.result, io).vectorize(i, vw, up);
    c.queryNorm.update().reorder(i, c.overDepth.x).vectorize(i, vw, up);
    c.keyNorm.compute_at(c.result, perHead).vectorize(j, vw, up);
    c.keyNorm.update().reorder(j, c.overDepth.x).vectorize(j, vw, up);
  }
  if (f.score == ScoreKind::Additive) {
    c.queryProjection.compute_at(c.result, io).vectorize(i, vw, up);
    c.queryProjection.update().reorder(i, a, c.overDepth.x).vectorize(i, vw, up);
    c.keyProjection.compute_at(c.result, perHead).vectorize(a, vw, up);
    c.keyProjection.update().reorder(a, j, c.overDepth.x).vectorize(a, vw, up);
  }

  // A tile's max, weights and sum: vectors of queries. The max and sum run
  // over the keys inside each vector of queries, so that its running value
  // stays in a register (keys outside kept it in memory: 1-3% of prefill).
  for (Func perTile : {c.tileMax, c.tileSum}) {
    perTile.compute_at(c.online, rt).vectorize(i, vw, up);
    perTile.update().vectorize(i, vw, up).reorder(ru, i);
  }
  c.probabilities.compute_at(c.online, rt).vectorize(i, vw, up);
  if (c.isLse) {
    c.online.vectorize(i, vw, up);
    c.online.update().reorder(i, rt).vectorize(i, vw, up);
    return;
  }

  // The tile's P·V in register blocks of pvRows queries × pvVectors vectors
  // of d, each folded into the running output at once. Unclamped V reads
  // (exactValueDepth) need blocks that divide Dv.
  int vectors = int(s.pvVectors);
  while (f.exactValueDepth && f.exactValueDepth % (vw * vectors) != 0)
    --vectors;
  c.online.vectorize(d, vw, up);
  c.online.update().reorder(d, i, rt);
  RVar valueKeys = ru;
  std::optional<RVar> valuePair;
  if (c.valuePairs.defined()) {
    valueKeys = c.overTilePairs.y;
    valuePair = c.overTilePairs.x;
    c.valueTileRows.compute_at(c.online, rt).vectorize(d, vw, up);
    for (Func pairs : {c.valuePairs, c.probabilityPairs})
      computePairsAt(pairs, LoopLevel(c.online, rt), vw);
  }
  registerBlocks(c.online, c.tileValues, d, vw * vectors, i, int(s.pvRows),
                 valueKeys, vw, /*alignAcross=*/qt % s.pvRows == 0, valuePair);
  // 16-bit values widened once per tile of keys, not once per block of rows.
  if (c.valueRows.defined())
    c.valueRows.compute_at(c.online, rt).vectorize(d, vw, up);
}

/// A sum (or max) over `reduced` computed as `lanes` partial results, one
/// per lane of a vector (Halide's rfactor), then combined across the lanes
/// once: so a reduction along the innermost dim of its input runs in whole
/// vectors. The partials are computed at `at` (a loop of `consumer`), lanes
/// stored innermost (then `storage`, the sum's pure dims); the dims in
/// `blocked` have constant extents there and are unrolled, so the partials
/// stay in registers, and the first of them is combined as one vector
/// reduction (a transpose-and-add tree, not a horizontal sum per result).
/// With `pair` (bf16 products), each lane sums a pair of products at a time.
void laneSums(Func sum, RVar reduced, int lanes, Func consumer, Var at,
              const std::vector<Var> &storage, const std::vector<Var> &blocked,
              std::optional<RVar> pair = std::nullopt) {
  RVar outer("rvo"), inner("rvi");
  Var lane("lane");
  Func partials =
      sum.update().split(reduced, outer, inner, lanes).rfactor(inner, lane);
  std::vector<Var> stored = {lane};
  stored.insert(stored.end(), storage.begin(), storage.end());
  partials.reorder_storage(stored).compute_at(consumer, at).vectorize(lane);
  std::vector<VarOrRVar> order = {lane};
  if (pair)
    order.insert(order.begin(), *pair);
  order.insert(order.end(), blocked.begin(), blocked.end());
  order.push_back(outer);
  partials.update().reorder(order);
  if (pair)
    // A pair of products summed into each lane: vdpbf16ps.
    partials.update().atomic().vectorize(*pair);
  partials.update().vectorize(lane);
  for (const Var &v : blocked) {
    partials.unroll(v);
    partials.update().unroll(v);
  }
  sum.update().atomic().vectorize(inner);
  for (size_t n = 0; n < blocked.size(); ++n)
    if (n == 0)
      sum.update().vectorize(blocked[n]);
    else
      sum.update().unroll(blocked[n]);
}

/// The decode form (AttentionFuncs::decode): a crop holds every query head
/// of one kv head and fewer queries than a vector, so rows are few and keys
/// many. Every reduction runs in vectors along its input's innermost dim:
/// Q·Kᵀ and the key norms along the head dim (laneSums), the row max and
/// sum along the keys, P·V along the value's head dim. The crop's scores
/// are kept keys innermost (heads × queries × visible keys, 512 KiB at
/// T=32768 for 4 heads); a block of keys' K rows is read once for all the
/// crop's rows, and with every head in one P·V block V is read once.
void scheduleDecodeChain(AttentionFuncs &f, AttentionFuncs::Chain &c,
                         const HalideSchedule &s) {
  const int vw = int(s.vectorWidth);
  const TailStrategy up = TailStrategy::RoundUp;
  Var i = f.i, j = f.j, d = f.d, a = f.a, h = f.h, b = f.b;
  // Everything is computed once per call, at its (single) batch; the
  // partial rows are (e, i, h, b, p) whatever the layout.
  Var crop = f.b;
  c.result.reorder(d, i, h, b, f.p).vectorize(d, vw, TailStrategy::GuardWithIf);

  // Q·Kᵀ in blocks of decodeScoreKeys keys × decodeScoreHeads heads, keys
  // outermost so that a block's K rows stay in L1 for every query.
  Var jo("jo"), ji("ji"), ho("ho"), hi("hi");
  c.scores.compute_at(c.result, crop)
      .reorder_storage(j, i, h, b)
      .split(j, jo, ji, int(s.decodeScoreKeys), up)
      .split(h, ho, hi, int(s.decodeScoreHeads), up)
      .reorder(ji, hi, ho, i, jo)
      .unroll(ji)
      .unroll(hi);
  // A block's K rows copied before its products, one row after another:
  // the products read four rows a vector of each at a time, an order in
  // which the hardware prefetcher loses the stream (f32 Llama-3 decode from
  // memory, 1 thread: 2.2× slower). Guarded: K's head dim is read
  // unclamped.
  c.keyRows.compute_at(c.scores, jo)
      .vectorize(d, vw, TailStrategy::GuardWithIf);
  RVar reduced = f.score == ScoreKind::Additive ? c.overUnits.x : c.overDepth.x;
  std::optional<RVar> pair;
  if (c.queryPairs.defined()) {
    // bf16 products: lanes of depth pairs, q's pairs as q lies.
    reduced = c.overDepthPairs.y;
    pair = c.overDepthPairs.x;
    computePairsAt(c.queryPairs, LoopLevel(c.result, crop), vw);
  }
  c.product.compute_at(c.scores, ho)
      .reorder_storage(j, i, h, b)
      .vectorize(j)
      .unroll(h);
  laneSums(c.product, reduced, vw, c.scores, ho, {i, j, h, b}, {j, h}, pair);

  if (c.queryRows.defined()) {
    c.queryRows.compute_at(c.result, crop)
        .reorder_storage(d, i, h, b)
        .vectorize(d, vw, up);
    if (c.queryRows.has_update_definition())
      c.queryRows.update().reorder(d, c.overDepth.x).vectorize(d, vw, up);
  }
  if (f.score == ScoreKind::Cosine) {
    c.queryNorm.compute_at(c.result, crop);
    c.keyNorm.compute_at(c.scores, jo).vectorize(j);
    laneSums(c.keyNorm, c.overDepth.x, vw, c.scores, jo, {j, f.g, b}, {j});
  }
  if (f.score == ScoreKind::Additive) {
    c.queryProjection.compute_at(c.result, crop)
        .reorder_storage(a, i, h, b)
        .vectorize(a, vw, up);
    c.queryProjection.update()
        .reorder(a, c.overDepth.x, i, h)
        .vectorize(a, vw, up);
    c.keyProjection.compute_at(c.scores, jo).vectorize(a, vw, up);
    c.keyProjection.update().reorder(a, j, c.overDepth.x).vectorize(a, vw, up);
  }

  // Row max, probabilities and row sum in vectors of keys.
  RVar rj = c.overKeys.x;
  c.rowMax.compute_at(c.result, crop);
  laneSums(c.rowMax, rj, vw, c.result, crop, {i, h, b}, {});
  c.probabilities.compute_at(c.result, crop)
      .reorder_storage(j, i, h, b)
      .vectorize(j, vw, up);
  c.rowSum.compute_at(c.result, crop);
  laneSums(c.rowSum, rj, vw, c.result, crop, {i, h, b}, {});
  if (c.isLse)
    return;

  // P·V in register blocks of decodePvHeads heads × decodePvVectors vectors
  // of the value's head dim, one query each (queries outermost). Unclamped V
  // reads (exactValueDepth) need blocks that divide Dv.
  int vectors = int(s.decodePvVectors);
  while (f.exactValueDepth && f.exactValueDepth % (vw * vectors) != 0)
    --vectors;
  RVar valueKeys = rj;
  std::optional<RVar> valuePair;
  int64_t chunkKeys = s.decodePvKeys;
  if (c.valuePairs.defined()) {
    // bf16 P·V: the weights paired once per crop, V interleaved in
    // registers (valuePairs inlined).
    valueKeys = c.overKeyPairs.y;
    valuePair = c.overKeyPairs.x;
    chunkKeys /= 2;
    computePairsAt(c.probabilityPairs, LoopLevel(c.result, crop), vw);
  }
  if (chunkKeys == 0) {
    // One pass over the keys per block: V is read once only when one block
    // covers every head and Dv (AVX-512's 32 accumulators at D = 128).
    c.normalized.compute_at(c.result, crop).reorder(d, h, i, b);
    registerBlocks(c.normalized, c.accumulator, d, vw * vectors, h,
                   int(s.decodePvHeads), valueKeys, vw, /*alignAcross=*/false,
                   valuePair);
    return;
  }
  // Chunks of keys, outermost: every block of the chunk sums its keys in
  // registers (an rfactor over the chunks) and adds them to the crop's
  // accumulator, and the chunk's V rows are copied first, one after
  // another, so V comes from memory once and in the order it lies (blocks
  // of 32 of Dv's 128 columns each read V from memory on AVX2, 1.4× slower
  // at T = 32768).
  RVar chunks("chunks"), keysOfChunk("keys_of_chunk");
  Var chunk("chunk");
  Func chunkValues = c.accumulator.update()
                         .split(valueKeys, chunks, keysOfChunk, int(chunkKeys))
                         .rfactor(chunks, chunk);
  c.normalized.compute_at(c.result, crop).vectorize(d, vw, up);
  c.accumulator.compute_at(c.result, crop).vectorize(d, vw, up);
  registerBlocks(c.accumulator, chunkValues, d, vw * vectors, h,
                 int(s.decodePvHeads), keysOfChunk, vw, /*alignAcross=*/false,
                 valuePair, chunks);
  if (c.valueRows.defined())
    c.valueRows.compute_at(c.accumulator, chunks)
        .vectorize(d, vw, TailStrategy::GuardWithIf);
}

} // namespace

void scheduleMerge(MergeFuncs &m, const HalideSchedule &schedule) {
  // A few floats per row and part: vectors of the head dim, the row totals
  // once per call.
  const int vw = int(schedule.vectorWidth);
  const TailStrategy guard = TailStrategy::GuardWithIf;
  for (Halide::Func *total : {&m.rowMax, &m.rowSum})
    total->compute_root();
  m.weights.compute_root();
  if (m.merged.defined()) {
    m.merged.compute_root().vectorize(m.d, vw, guard);
    m.merged.update().vectorize(m.d, vw, guard);
  }
  for (Halide::Func &result : m.results)
    if (result.dimensions() == 4)
      result.vectorize(m.d, vw, guard);
}

void scheduleAttention(AttentionFuncs &funcs, const HalideSchedule &schedule) {
  for (AttentionFuncs::Chain &chain : funcs.chains)
    if (funcs.decode)
      scheduleDecodeChain(funcs, chain, schedule);
    else
      scheduleChain(funcs, chain, schedule);
}

} // namespace attnc
