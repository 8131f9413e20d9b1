// RUN: attn-opt %s --split-input-file --attn-tile-attention="row-tile=64 key-tile=32" --cse | FileCheck %s
// RUN: not attn-opt %s --split-input-file --attn-tile-attention="row-tile=0" 2>&1 | FileCheck %s --check-prefix=BAD

// attn-tile-attention: the key loop's bounds per mask kind (tiles a mask
// removes whole are never visited), the kv head of GQA, the online-softmax
// update as arith/math on tiles, run-time sizes, layouts, and the inputs
// that become per-element code (biases, ALiBi, tensor masks).

// BAD: attn-tile-attention: row-tile and key-tile must be >= 1

// Tests that a causal op visits keys [0, min(p_last + 1, T)) for its row tile
// (p_last = r0 + 63), and applies attn.tile_mask only under an scf.if on a
// tile that the diagonal crosses.
// CHECK-LABEL: func.func @causal_tile_skipping
//       CHECK:   scf.forall (%[[B:.+]], %[[H:.+]], %[[T:.+]]) in (1, 4, 2)
//       CHECK:     %[[R0:.+]] = arith.muli %[[T]], %[[C64:.+]] : index
//       CHECK:     %[[Q:.+]] = tensor.extract_slice %{{.+}}[%[[B]], %[[H]], %[[R0]], 0] [1, 1, 64, 64] [1, 1, 1, 1] : tensor<1x4x128x64xf32> to tensor<64x64xf32>
//       CHECK:     %[[END:.+]] = arith.addi %[[R0]], %[[C64]] : index
//       CHECK:     %[[PLAST:.+]] = arith.subi %[[END]], %[[C1:.+]] : index
//       CHECK:     %[[PNEXT:.+]] = arith.addi %[[PLAST]], %[[C1]] : index
//       CHECK:     %[[LAST:.+]] = arith.minsi %[[PNEXT]], %{{.+}} : index
//       CHECK:     %[[BOUND:.+]] = arith.maxsi %[[LAST]], %[[C0:.+]] : index
//       CHECK:     scf.for %[[J0:.+]] = %[[C0]] to %[[BOUND]] step %{{.+}} iter_args
//       CHECK:       %[[NK:.+]] = arith.minsi %{{.+}}, %{{.+}} : index
//       CHECK:       %[[K:.+]] = tensor.extract_slice %{{.+}}[%[[B]], %[[H]], %[[J0]], 0] [1, 1, %[[NK]], 64]
//       CHECK:       %[[S:.+]] = attn.tile_scores %[[Q]], %[[K]] : (tensor<64x64xf32>, tensor<?x64xf32>) -> tensor<64x?xf32>
// blockFullyVisible: the tile's last key is below p_first + 1 = r0 + 1.
//       CHECK:       %[[KEND:.+]] = arith.addi %[[J0]], %[[NK]] : index
//       CHECK:       %[[KLAST:.+]] = arith.subi %[[KEND]], %[[C1]] : index
//       CHECK:       %[[PFIRST1:.+]] = arith.addi %[[R0]], %[[C1]] : index
//       CHECK:       %[[CUT:.+]] = arith.minsi %{{.+}}, %[[PFIRST1]] : index
//       CHECK:       %[[BELOW:.+]] = arith.cmpi slt, %[[KLAST]], %[[CUT]] : index
//       CHECK:       %[[WHOLE:.+]] = arith.andi %{{.+}}, %[[BELOW]] : i1
//       CHECK:       %[[PARTIAL:.+]] = arith.xori %[[WHOLE]], %{{.+}} : i1
//       CHECK:       %[[MASKED:.+]] = scf.if %[[PARTIAL]] -> (tensor<64x?xf32>) {
//  CHECK-NEXT:         %[[M:.+]] = attn.tile_mask %[[S]][%[[R0]], %[[J0]]] {causal} : tensor<64x?xf32>
//  CHECK-NEXT:         scf.yield %[[M]]
//  CHECK-NEXT:       } else {
//  CHECK-NEXT:         scf.yield %[[S]]
//       CHECK:       attn.tile_softmax_update %[[MASKED]], %{{.+}}, %{{.+}} : tensor<64x?xf32>, tensor<64xf32>
func.func @causal_tile_skipping(%q: tensor<1x4x128x64xf32>, %k: tensor<1x4x128x64xf32>, %v: tensor<1x4x128x64xf32>) -> tensor<1x4x128x64xf32> {
  %o = attn.attention %q, %k, %v {causal} : (tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>, tensor<1x4x128x64xf32>) -> tensor<1x4x128x64xf32>
  return %o : tensor<1x4x128x64xf32>
}

// -----

// Tests that a window [L, R] = [16, 4] with run-time S and T visits keys
// [max(0, p_first - 16), min(T, p_last + 5)), p = i + T - S, and an empty
// range when last <= first.
// CHECK-LABEL: func.func @window_tile_skipping
//       CHECK:   %[[S:.+]] = tensor.dim %arg0, %[[C2:.+]] : tensor<1x4x?x64xf32>
//       CHECK:   %[[T:.+]] = tensor.dim %arg1, %[[C2]] : tensor<1x4x?x64xf32>
//       CHECK:   %[[TILES:.+]] = arith.ceildivui %[[S]], %[[C64:.+]] : index
//       CHECK:   scf.forall (%{{.+}}, %{{.+}}, %[[TI:.+]]) in (1, 4, %[[TILES]])
//       CHECK:     %[[R0:.+]] = arith.muli %[[TI]], %[[C64]] : index
//       CHECK:     %[[REST:.+]] = arith.subi %[[S]], %[[R0]] : index
//       CHECK:     %[[NR:.+]] = arith.minsi %[[REST]], %[[C64]] : index
//       CHECK:     %[[OFFSET:.+]] = arith.subi %[[T]], %[[S]] : index
//       CHECK:     %[[PFIRST:.+]] = arith.addi %[[R0]], %[[OFFSET]] : index
//       CHECK:     %[[REND:.+]] = arith.addi %[[R0]], %[[NR]] : index
//       CHECK:     %[[RLAST:.+]] = arith.subi %[[REND]], %{{.+}} : index
//       CHECK:     %[[PLAST:.+]] = arith.addi %[[RLAST]], %[[OFFSET]] : index
//       CHECK:     %[[LEFT:.+]] = arith.subi %[[PFIRST]], %[[C16:.+]] : index
//       CHECK:     %[[FIRST:.+]] = arith.maxsi %[[LEFT]], %[[C0:.+]] : index
//       CHECK:     %[[RIGHT:.+]] = arith.addi %[[PLAST]], %[[C5:.+]] : index
//       CHECK:     %[[LAST:.+]] = arith.minsi %[[T]], %[[RIGHT]] : index
//       CHECK:     %[[BOUND:.+]] = arith.maxsi %[[LAST]], %[[FIRST]] : index
//       CHECK:     scf.for %[[J0:.+]] = %[[FIRST]] to %[[BOUND]] step %{{.+}} iter_args
//       CHECK:       scf.if
//  CHECK-NEXT:         attn.tile_mask %{{.+}}[%[[PFIRST]], %[[J0]]] {window = array<i64: 16, 4>} : tensor<?x?xf32>
func.func @window_tile_skipping(%q: tensor<1x4x?x64xf32>, %k: tensor<1x4x?x64xf32>, %v: tensor<1x4x?x64xf32>) -> tensor<1x4x?x64xf32> {
  %o = attn.attention %q, %k, %v {window = array<i64: 16, 4>} : (tensor<1x4x?x64xf32>, tensor<1x4x?x64xf32>, tensor<1x4x?x64xf32>) -> tensor<1x4x?x64xf32>
  return %o : tensor<1x4x?x64xf32>
}

// -----

// Tests that key_lengths bound the key loop at min(T, len[b]) and need no
// per-element mask.
// CHECK-LABEL: func.func @key_length
//  CHECK-SAME:   %[[LENS:[a-z0-9]+]]: tensor<2xi32>
//       CHECK:   %[[T:.+]] = tensor.dim %arg1
//       CHECK:   scf.forall (%[[B:.+]], %{{.+}}, %{{.+}}) in (2, 4, %{{.+}})
//       CHECK:     %[[LEN32:.+]] = tensor.extract %[[LENS]][%[[B]]] : tensor<2xi32>
//       CHECK:     %[[LEN:.+]] = arith.index_cast %[[LEN32]] : i32 to index
//       CHECK:     %[[LAST:.+]] = arith.minsi %[[T]], %[[LEN]] : index
//       CHECK:     %[[BOUND:.+]] = arith.maxsi %[[LAST]], %[[C0:.+]] : index
//       CHECK:     scf.for %{{.+}} = %[[C0]] to %[[BOUND]]
//   CHECK-NOT:       scf.if
//   CHECK-NOT:       attn.tile_mask
//       CHECK:       attn.tile_accumulate
func.func @key_length(%q: tensor<2x4x?x64xf32>, %k: tensor<2x4x?x64xf32>, %v: tensor<2x4x?x64xf32>, %len: tensor<2xi32>) -> tensor<2x4x?x64xf32> {
  %o = attn.attention %q, %k, %v key_lengths(%len) : (tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2xi32>) -> tensor<2x4x?x64xf32>
  return %o : tensor<2x4x?x64xf32>
}

// -----

// Tests GQA: 8 query heads over 2 kv heads, query head h reads kv head
// h / (8 / 2) = h / 4; without masks the key loop is [0, T).
// CHECK-LABEL: func.func @gqa
//       CHECK:   %[[T:.+]] = tensor.dim %arg1
//       CHECK:   scf.forall (%[[B:.+]], %[[H:.+]], %{{.+}}) in (1, 8, %{{.+}})
//       CHECK:     %[[KVH:.+]] = arith.divui %[[H]], %[[C4:.+]] : index
//       CHECK:     tensor.extract_slice %arg0[%[[B]], %[[H]],
//       CHECK:     scf.for %[[J0:.+]] = %{{.+}} to %[[T]] step
//       CHECK:       tensor.extract_slice %arg1[%[[B]], %[[KVH]], %[[J0]], 0] {{.+}} : tensor<1x2x?x64xf32> to tensor<?x64xf32>
//       CHECK:       tensor.extract_slice %arg2[%[[B]], %[[KVH]], %[[J0]], 0] {{.+}} : tensor<1x2x?x64xf32> to tensor<?x64xf32>
func.func @gqa(%q: tensor<1x8x?x64xf32>, %k: tensor<1x2x?x64xf32>, %v: tensor<1x2x?x64xf32>) -> tensor<1x8x?x64xf32> {
  %o = attn.attention %q, %k, %v : (tensor<1x8x?x64xf32>, tensor<1x2x?x64xf32>, tensor<1x2x?x64xf32>) -> tensor<1x8x?x64xf32>
  return %o : tensor<1x8x?x64xf32>
}

// -----

// Tests GQA with run-time head counts: G = Hq / Hkv, kv head = h / G.
// CHECK-LABEL: func.func @gqa_dynamic_heads
//       CHECK:   %[[HQ:.+]] = tensor.dim %arg0, %[[C1:.+]] : tensor<1x?x?x64xf32>
//       CHECK:   %[[HKV:.+]] = tensor.dim %arg1, %[[C1]] : tensor<1x?x?x64xf32>
//       CHECK:   scf.forall (%{{.+}}, %[[H:.+]], %{{.+}}) in (1, %[[HQ]], %{{.+}})
//       CHECK:     %[[G:.+]] = arith.divui %[[HQ]], %[[HKV]] : index
//       CHECK:     %[[KVH:.+]] = arith.divui %[[H]], %[[G]] : index
//       CHECK:     tensor.extract_slice %arg1[%{{.+}}, %[[KVH]],
func.func @gqa_dynamic_heads(%q: tensor<1x?x?x64xf32>, %k: tensor<1x?x?x64xf32>, %v: tensor<1x?x?x64xf32>) -> tensor<1x?x?x64xf32> {
  %o = attn.attention %q, %k, %v : (tensor<1x?x?x64xf32>, tensor<1x?x?x64xf32>, tensor<1x?x?x64xf32>) -> tensor<1x?x?x64xf32>
  return %o : tensor<1x?x?x64xf32>
}

// -----

// Tests the online softmax on static tiles (S = T = 64: full 64-row and
// 32-key tiles): the running state m = -inf, l = 0, O = 0 carried by the key
// loop, one attn.tile_softmax_update per key tile (its arith/math form is in
// lower_tile_ops.mlir), O' = alpha O + P V, then out = O / l.
// CHECK-LABEL: func.func @online_softmax
//       CHECK:   %[[NEGINF:.+]] = arith.constant 0xFF800000 : f32
//       CHECK:   %[[M0:.+]] = linalg.fill ins(%[[NEGINF]] : f32) outs(%{{.+}} : tensor<64xf32>)
//       CHECK:   %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
//       CHECK:   %[[L0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<64xf32>)
//       CHECK:   %[[O0:.+]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.+}} : tensor<64x8xf32>)
//       CHECK:   %[[LOOP:.+]]:3 = scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:.+]] = %[[M0]], %[[L:.+]] = %[[L0]], %[[O:.+]] = %[[O0]])
//       CHECK:     %[[V:.+]] = tensor.extract_slice %arg2{{.+}} to tensor<32x8xf32>
//       CHECK:     %[[S:.+]] = attn.tile_scores %{{.+}}, %{{.+}} : (tensor<64x16xf32>, tensor<32x16xf32>) -> tensor<64x32xf32>
//       CHECK:     %[[P:.+]], %[[MNEW:.+]], %[[LNEW:.+]], %[[ALPHA:.+]] = attn.tile_softmax_update %[[S]], %[[M]], %[[L]] : tensor<64x32xf32>, tensor<64xf32>
//       CHECK:     %[[ONEW:.+]] = attn.tile_accumulate %[[P]], %[[V]], %[[O]] rescale(%[[ALPHA]]) : (tensor<64x32xf32>, tensor<32x8xf32>, tensor<64x8xf32>, tensor<64xf32>) -> tensor<64x8xf32>
//       CHECK:     scf.yield %[[MNEW]], %[[LNEW]], %[[ONEW]]
//       CHECK:   %[[OUT:.+]] = attn.tile_normalize %[[LOOP]]#2, %[[LOOP]]#1 : (tensor<64x8xf32>, tensor<64xf32>) -> tensor<64x8xf32>
//       CHECK:   scf.forall.in_parallel
//  CHECK-NEXT:     tensor.parallel_insert_slice %[[OUT]] into
func.func @online_softmax(%q: tensor<1x1x64x16xf32>, %k: tensor<1x1x64x16xf32>, %v: tensor<1x1x64x8xf32>) -> tensor<1x1x64x8xf32> {
  %o = attn.attention %q, %k, %v : (tensor<1x1x64x16xf32>, tensor<1x1x64x16xf32>, tensor<1x1x64x8xf32>) -> tensor<1x1x64x8xf32>
  return %o : tensor<1x1x64x8xf32>
}

// -----

// Tests every dim at run time in the bshd layout with lse: sizes come from
// tensor.dim on the layout's axes ([B, S, H, D]), tiles are sliced on them,
// and both results are written by parallel_insert_slice.
// CHECK-LABEL: func.func @dynamic_bshd_lse
//       CHECK:   %[[B:.+]] = tensor.dim %arg0, %[[C0:.+]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[HQ:.+]] = tensor.dim %arg0, %[[C2:.+]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[HKV:.+]] = tensor.dim %arg1, %[[C2]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[S:.+]] = tensor.dim %arg0, %[[C1:.+]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[T:.+]] = tensor.dim %arg1, %[[C1]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[DK:.+]] = tensor.dim %arg0, %[[C3:.+]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[DV:.+]] = tensor.dim %arg2, %[[C3]] : tensor<?x?x?x?xbf16>
//       CHECK:   %[[TILES:.+]] = arith.ceildivui %[[S]], %{{.+}} : index
//       CHECK:   %[[OUT0:.+]] = tensor.empty(%[[B]], %[[S]], %[[HQ]], %[[DV]]) : tensor<?x?x?x?xbf16>
//       CHECK:   %[[LSE0:.+]] = tensor.empty(%[[B]], %[[HQ]], %[[S]]) : tensor<?x?x?xf32>
//       CHECK:   scf.forall (%[[IB:.+]], %[[IH:.+]], %[[IT:.+]]) in (%[[B]], %[[HQ]], %[[TILES]]) shared_outs(%[[OUT:.+]] = %[[OUT0]], %[[LSE:.+]] = %[[LSE0]])
//       CHECK:     %[[R0:.+]] = arith.muli %[[IT]]
//       CHECK:     %[[NR:.+]] = arith.minsi
//       CHECK:     %[[KVH:.+]] = arith.divui %[[IH]], %{{.+}} : index
//       CHECK:     tensor.extract_slice %arg0[%[[IB]], %[[R0]], %[[IH]], 0] [1, %[[NR]], 1, %[[DK]]] [1, 1, 1, 1] : tensor<?x?x?x?xbf16> to tensor<?x?xbf16>
//       CHECK:     scf.for %[[J0:.+]] = %{{.+}} to %[[T]]
//       CHECK:       tensor.extract_slice %arg1[%[[IB]], %[[J0]], %[[KVH]], 0] [1, %{{.+}}, 1, %[[DK]]]
//       CHECK:       tensor.extract_slice %arg2[%[[IB]], %[[J0]], %[[KVH]], 0] [1, %{{.+}}, 1, %[[DV]]]
//       CHECK:       attn.tile_scores {{.+}} : (tensor<?x?xbf16>, tensor<?x?xbf16>) -> tensor<?x?xf32>
//       CHECK:       attn.tile_accumulate {{.+}} : (tensor<?x?xf32>, tensor<?x?xbf16>, tensor<?x?xf32>, tensor<?xf32>) -> tensor<?x?xf32>
//       CHECK:     %[[O:.+]], %[[L:.+]] = attn.tile_normalize %[[LOOP:.+]]#2, %[[LOOP]]#1 lse(%[[LOOP]]#0) : (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) -> (tensor<?x?xbf16>, tensor<?xf32>)
//       CHECK:     scf.forall.in_parallel
//  CHECK-NEXT:       tensor.parallel_insert_slice %[[O]] into %[[OUT]][%[[IB]], %[[R0]], %[[IH]], 0] [1, %[[NR]], 1, %[[DV]]] [1, 1, 1, 1] : tensor<?x?xbf16> into tensor<?x?x?x?xbf16>
//  CHECK-NEXT:       tensor.parallel_insert_slice %[[L]] into %[[LSE]][%[[IB]], %[[IH]], %[[R0]]] [1, 1, %[[NR]]] [1, 1, 1] : tensor<?xf32> into tensor<?x?x?xf32>
func.func @dynamic_bshd_lse(%q: tensor<?x?x?x?xbf16>, %k: tensor<?x?x?x?xbf16>, %v: tensor<?x?x?x?xbf16>) -> (tensor<?x?x?x?xbf16>, tensor<?x?x?xf32>) {
  %o:2 = attn.attention %q, %k, %v {layout = #attn.layout<bshd>} : (tensor<?x?x?x?xbf16>, tensor<?x?x?x?xbf16>, tensor<?x?x?x?xbf16>) -> (tensor<?x?x?x?xbf16>, tensor<?x?x?xf32>)
  return %o#0, %o#1 : tensor<?x?x?x?xbf16>, tensor<?x?x?xf32>
}

// -----

// Tests that biases, ALiBi and tensor masks become one attn.tile_transform
// per key tile, at the tile's (batch, head, first row, first key), with the
// op's operands and mask_drops (its per-element form is in
// lower_tile_ops.mlir).
// CHECK-LABEL: func.func @bias_masks_alibi
//  CHECK-SAME:   %[[BIAS:[a-z0-9]+]]: tensor<1x4x?x?xf16>, %[[SLOPES:[a-z0-9]+]]: tensor<4xf32>, %[[PAD:[a-z0-9]+]]: tensor<2x1x1x?xi1>, %[[DROP:[a-z0-9]+]]: tensor<?x?xi1>
//       CHECK:   %[[S:.+]] = tensor.dim %arg0
//       CHECK:   %[[T:.+]] = tensor.dim %arg1
//       CHECK:   scf.forall (%[[B:.+]], %[[H:.+]], %{{.+}}) in (2, 4, %{{.+}})
//       CHECK:     %[[R0:.+]] = arith.muli
//       CHECK:     scf.for %[[J0:.+]] = {{.+}} iter_args
//       CHECK:       %[[SC:.+]] = attn.tile_scores
//       CHECK:       %[[TR:.+]] = attn.tile_transform %[[SC]][%[[B]], %[[H]], %[[R0]], %[[J0]]] in[%[[S]], %[[T]]] bias(%[[BIAS]] : tensor<1x4x?x?xf16>) alibi_slopes(%[[SLOPES]] : tensor<4xf32>) masks(%[[PAD]], %[[DROP]] : tensor<2x1x1x?xi1>, tensor<?x?xi1>) {mask_drops = array<i1: false, true>} : tensor<?x?xf32>
//       CHECK:       attn.tile_softmax_update %[[TR]]
func.func @bias_masks_alibi(%q: tensor<2x4x?x64xf32>, %k: tensor<2x4x?x64xf32>, %v: tensor<2x4x?x64xf32>, %bias: tensor<1x4x?x?xf16>, %slopes: tensor<4xf32>, %pad: tensor<2x1x1x?xi1>, %drop: tensor<?x?xi1>) -> tensor<2x4x?x64xf32> {
  %o = attn.attention %q, %k, %v bias(%bias) alibi_slopes(%slopes) masks(%pad, %drop) {alibi, mask_drops = array<i1: false, true>} : (tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<2x4x?x64xf32>, tensor<1x4x?x?xf16>, tensor<4xf32>, tensor<2x1x1x?xi1>, tensor<?x?xi1>) -> tensor<2x4x?x64xf32>
  return %o : tensor<2x4x?x64xf32>
}

// -----

// Tests that ALiBi without given slopes computes the standard slopes of the
// Hq query heads once, as a [Hq] tensor before the forall
// (n = 2^floor(log2 Hq)), and hands them to attn.tile_transform.
// CHECK-LABEL: func.func @standard_alibi
//       CHECK:   %[[SLOPES:.+]] = linalg.generic {{.+}} outs(%{{.+}} : tensor<?xf32>)
//       CHECK:     %[[H:.+]] = linalg.index 0 : index
//       CHECK:     math.ctlz
//       CHECK:     %[[FIRST:.+]] = arith.cmpi slt, %[[H]], %{{.+}} : index
//       CHECK:     arith.select %[[FIRST]], %{{.+}}, %{{.+}} : index
//       CHECK:     math.exp2 %{{.+}} : f64
//       CHECK:     arith.truncf %{{.+}} : f64 to f32
//       CHECK:   scf.forall
//       CHECK:     scf.for
//       CHECK:       attn.tile_transform {{.+}} alibi_slopes(%[[SLOPES]] : tensor<?xf32>) : tensor<?x?xf32>
func.func @standard_alibi(%q: tensor<1x?x?x64xf32>, %k: tensor<1x?x?x64xf32>, %v: tensor<1x?x?x64xf32>) -> tensor<1x?x?x64xf32> {
  %o = attn.attention %q, %k, %v {alibi} : (tensor<1x?x?x64xf32>, tensor<1x?x?x64xf32>, tensor<1x?x?x64xf32>) -> tensor<1x?x?x64xf32>
  return %o : tensor<1x?x?x64xf32>
}

// -----

// Tests that the score kind, its weights, the scale and the softcap go to
// attn.tile_scores as attn.attention has them (no scale: the default rule).
// CHECK-LABEL: func.func @score_kinds
//  CHECK-SAME:   %[[W:[a-z0-9]+]]: tensor<64x64xf16>, %[[WQ:[a-z0-9]+]]: tensor<16x64xf16>, %[[WK:[a-z0-9]+]]: tensor<16x64xf16>, %[[VA:[a-z0-9]+]]: tensor<16xf16>
//       CHECK:   attn.tile_scores %{{.+}}, %{{.+}} general(%[[W]]) {score = #attn.score<general>, softcap = 5.000000e+01 : f64} : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<64x64xf16>) -> tensor<?x?xf32>
//       CHECK:   attn.tile_normalize {{.+}} -> tensor<?x64xf16>
//       CHECK:   attn.tile_scores %{{.+}}, %{{.+}} additive(%[[WQ]], %[[WK]], %[[VA]]) {score = #attn.score<additive>} : (tensor<?x64xf16>, tensor<?x64xf16>, tensor<16x64xf16>, tensor<16x64xf16>, tensor<16xf16>) -> tensor<?x?xf32>
//       CHECK:   attn.tile_scores %{{.+}}, %{{.+}} {scale = 1.000000e+01 : f64, score = #attn.score<cosine>} : (tensor<?x64xf16>, tensor<?x64xf16>) -> tensor<?x?xf32>
func.func @score_kinds(%q: tensor<1x2x?x64xf16>, %k: tensor<1x2x?x64xf16>, %v: tensor<1x2x?x64xf16>, %w: tensor<64x64xf16>, %wq: tensor<16x64xf16>, %wk: tensor<16x64xf16>, %va: tensor<16xf16>) -> (tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) {
  %0 = attn.attention %q, %k, %v general(%w) {score = #attn.score<general>, softcap = 50.0 : f64} : (tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<64x64xf16>) -> tensor<1x2x?x64xf16>
  %1 = attn.attention %q, %k, %v additive(%wq, %wk, %va) {score = #attn.score<additive>} : (tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<16x64xf16>, tensor<16x64xf16>, tensor<16xf16>) -> tensor<1x2x?x64xf16>
  %2 = attn.attention %q, %k, %v {score = #attn.score<cosine>, scale = 10.0 : f64} : (tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>) -> tensor<1x2x?x64xf16>
  return %0, %1, %2 : tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>
}
