// RUN: attn-opt %s --split-input-file --attn-lower-to-gpu --verify-diagnostics | FileCheck %s

// Tests attn-lower-to-gpu: one gpu.func kernel per attention op, the graph's
// tensors as global pointers then the seven sizes, one warp per query row
// (4 per block of 128 threads); the visible keys of the row's aligned
// position (causal: min(T, p + 1)), the lanes' partial q·k summed by five
// xor shuffles, the online softmax with p = exp2((s - m) - k), k =
// ceil(log2 T) from T - 1's leading zeros, through PTX's ex2.approx, 8
// accumulators per lane, the key length read per batch, and an op or
// feature without a kernel named in an error. With splits > 1
// each warp takes a part of the keys and leaves (m, l, acc) in the
// workspace for the merge kernel (FlashDecoding).

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @g_gpu
// CHECK: gpu.func @g_attention0(%[[Q:.+]]: !llvm.ptr<1>, %[[K:.+]]: !llvm.ptr<1>, %[[V:.+]]: !llvm.ptr<1>, %[[LEN:.+]]: !llvm.ptr<1>, %[[O:.+]]: !llvm.ptr<1>, %[[LSE:.+]]: !llvm.ptr<1>, %[[WS:.+]]: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64) kernel
// CHECK-SAME: attn.block = [128, 1, 1]
// CHECK-SAME: attn.block_rows = 4 : i64
// CHECK-SAME: attn.grid = ["ceil(S * splits / 4)", "Hq", "B"]
// CHECK-SAME: attn.merge = "g_attention0_merge"
// CHECK-SAME: attn.params = ["q", "k", "v", "n", "o", "o.lse", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK-SAME: attn.row_flags = 1 : i64
// CHECK-SAME: attn.sizes = {B = ["q", 0], Dk = ["q", 3], Dv = ["v", 3], Hkv = ["k", 1], Hq = ["q", 1], S = ["q", 2], T = ["k", 2]}
// CHECK-SAME: attn.workspace_bytes = "splits * B * Hq * S * (4 * Dv + 8)"
// CHECK-SAME: attn.workspace_row_bytes = [4, 8]
// CHECK: gpu.thread_id x
// CHECK: gpu.block_id x
// CHECK: scf.if
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> i32
// CHECK: "llvm.intr.ctlz"(%{{.+}}) <{is_zero_poison = false}> : (i64) -> i64
// CHECK: scf.for {{.*}} step %{{.+}} {
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f16
// CHECK: arith.extf
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// One split: the row's output and lse.
// CHECK: arith.truncf %{{.+}} : f32 to f16
// CHECK: llvm.store %{{.+}}, %{{.+}} : f16, !llvm.ptr<1>
// Several: the part's m, l and accumulators, as f32, into the workspace.
// CHECK: } else {
// CHECK: llvm.store %{{.+}}, %{{.+}} : f32, !llvm.ptr<1>
// CHECK: gpu.return
// The merge: the largest m over the parts, l and each column rescaled.
// CHECK: gpu.func @g_attention0_merge(%{{.+}}: !llvm.ptr<1>, %{{.+}}: !llvm.ptr<1>, %{{.+}}: !llvm.ptr<1>, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64, %{{.+}}: i64) kernel
// CHECK-SAME: attn.block_rows = 4 : i64
// CHECK-SAME: attn.grid = ["ceil(S / 4)", "Hq", "B"]
// CHECK-SAME: attn.params = ["workspace", "o", "o.lse", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK-SAME: attn.row_flags = 0 : i64
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK: arith.cmpf ogt
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32)
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"
// CHECK: llvm.store %{{.+}}, %{{.+}} : f16, !llvm.ptr<1>
// CHECK: gpu.return
// CHECK-NOT: func.func
module {
  func.func @g(%B: index {attn.dim = "B"}, %q: tensor<?x4x5x16xf16> {attn.input = "q"},
               %k: tensor<?x2x7x16xf16> {attn.input = "k"}, %v: tensor<?x2x7x8xf16> {attn.input = "v"},
               %n: tensor<?xi32> {attn.input = "n"})
      -> (tensor<?x4x5x8xf16> {attn.output = "o"}, tensor<?x4x5xf32> {attn.output = "o.lse"}) {
    %o, %lse = attn.attention %q, %k, %v key_lengths(%n) {causal}
        : (tensor<?x4x5x16xf16>, tensor<?x2x7x16xf16>, tensor<?x2x7x8xf16>, tensor<?xi32>)
          -> (tensor<?x4x5x8xf16>, tensor<?x4x5xf32>)
    return %o, %lse : tensor<?x4x5x8xf16>, tensor<?x4x5xf32>
  }
}

// -----

// Tensor biases and masks: each a parameter after the key lengths, read at
// its broadcast offset per key; the bias (f32 here) added in log2 units, a
// key its mask drops (mask_drops: true = drop) scored -inf. The SIMT kernel
// reads them per key, the tensor-core kernel (f16 with fixed head dims) per
// element of its score fragments, at keys clamped to T - 1 (a block's keys
// past T are dropped by the position test).
// CHECK-LABEL: gpu.func @bm_attention0(
// CHECK-SAME: attn.params = ["q", "k", "v", "bias", "drop", "o", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK-SAME: attn.tensor_core = "bm_attention0_mma"
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: %[[BYTE:.+]] = llvm.load %{{.+}} : !llvm.ptr<1> -> i8
// CHECK: %[[KEEP:.+]] = arith.cmpi eq, %[[BYTE]], %{{.+}} : i8
// CHECK: arith.select %[[KEEP]], %{{.+}}, %{{.+}} : f32
// CHECK: gpu.func @bm_attention0_merge(
// CHECK: gpu.func @bm_attention0_mma(
// CHECK-SAME: attn.params = ["q", "k", "v", "bias", "drop", "o", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
// CHECK: arith.minsi
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> f32
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> i8
// CHECK: gpu.return
module {
  func.func @bm(%q: tensor<1x2x3x16xf16> {attn.input = "q"}, %k: tensor<1x2x5x16xf16> {attn.input = "k"},
                %v: tensor<1x2x5x16xf16> {attn.input = "v"}, %bias: tensor<2x3x5xf32> {attn.input = "bias"},
                %drop: tensor<1x1x1x5xi1> {attn.input = "drop"}) -> (tensor<1x2x3x16xf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v bias(%bias) masks(%drop) {mask_drops = array<i1: true>}
        : (tensor<1x2x3x16xf16>, tensor<1x2x5x16xf16>, tensor<1x2x5x16xf16>, tensor<2x3x5xf32>, tensor<1x1x1x5xi1>) -> tensor<1x2x3x16xf16>
    return %o : tensor<1x2x3x16xf16>
  }
}

// -----

// ALiBi with the standard slopes: n = 2^floor(log2 Hq) from Hq's leading
// zeros, once per row; per key -slope·log2 e·|i' - j| added by an fma.
// CHECK-LABEL: gpu.func @alibi_attention0(
// CHECK-SAME: attn.params = ["q", "k", "v", "o", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK: llvm.call_intrinsic "llvm.ctlz.i64"
// CHECK: arith.cmpi slt
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.f"
// CHECK: scf.for
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: arith.maxsi
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
module {
  func.func @alibi(%q: tensor<1x2x3x4xf32> {attn.input = "q"}, %k: tensor<1x2x3x4xf32> {attn.input = "k"},
                   %v: tensor<1x2x3x4xf32> {attn.input = "v"}) -> (tensor<1x2x3x4xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v {alibi}
        : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    return %o : tensor<1x2x3x4xf32>
  }
}

// -----

// Given ALiBi slopes: a parameter after the biases, read per row.
// CHECK-LABEL: gpu.func @given_slopes_attention0(
// CHECK-SAME: attn.params = ["q", "k", "v", "bias", "slopes", "o", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK-NOT: llvm.ctlz
// CHECK: gpu.return
module {
  func.func @given_slopes(%q: tensor<1x2x3x4xf32> {attn.input = "q"}, %k: tensor<1x2x3x4xf32> {attn.input = "k"},
                          %v: tensor<1x2x3x4xf32> {attn.input = "v"}, %bias: tensor<3x3xf32> {attn.input = "bias"},
                          %slopes: tensor<2xf32> {attn.input = "slopes"}) -> (tensor<1x2x3x4xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v bias(%bias) alibi_slopes(%slopes) {alibi}
        : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<3x3xf32>, tensor<2xf32>) -> tensor<1x2x3x4xf32>
    return %o : tensor<1x2x3x4xf32>
  }
}

// -----

// Cosine scores: |q| once per row (one butterfly), q·k and k·k per key (two),
// the norms clamped at 1e-12 (sqrt.rn); no tensor-core kernel.
// CHECK-LABEL: gpu.func @cosine_attention0(
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: arith.maximumf
// CHECK: scf.for
// CHECK: scf.for {{.*}} -> (f32, f32)
// CHECK-COUNT-10: gpu.shuffle  xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"
// CHECK: arith.divf
// CHECK-NOT: gpu.func @cosine_attention0_mma
module {
  func.func @cosine(%q: tensor<1x2x3x16xf16> {attn.input = "q"}, %k: tensor<1x2x3x16xf16> {attn.input = "k"},
                    %v: tensor<1x2x3x16xf16> {attn.input = "v"}) -> (tensor<1x2x3x16xf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v {score = #attn.score<cosine>}
        : (tensor<1x2x3x16xf16>, tensor<1x2x3x16xf16>, tensor<1x2x3x16xf16>) -> tensor<1x2x3x16xf16>
    return %o : tensor<1x2x3x16xf16>
  }
}

// -----

// General scores with a fixed Dk: W a parameter after v; q·W once per row
// into the warp's slice of shared memory (4 warps x Dk f32), lanes over its
// elements; then per key (q·W)·k from there, one butterfly.
// CHECK-LABEL: gpu.func @general_attention0(
// CHECK-SAME: attn.params = ["q", "k", "v", "w", "o", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK: llvm.mlir.addressof @general_attention0_shared
// CHECK: scf.for
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: llvm.call_intrinsic "llvm.nvvm.bar.warp.sync"
// CHECK: scf.for
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: gpu.return
// CHECK: llvm.mlir.global internal @general_attention0_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16 x f32>
// CHECK-NOT: gpu.func @general_attention0_mma
module {
  func.func @general(%q: tensor<1x2x3x4xf16> {attn.input = "q"}, %k: tensor<1x2x3x4xf16> {attn.input = "k"},
                     %v: tensor<1x2x3x4xf16> {attn.input = "v"}, %w: tensor<4x4xf32> {attn.input = "w"}) -> (tensor<1x2x3x4xf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v general(%w) {score = #attn.score<general>}
        : (tensor<1x2x3x4xf16>, tensor<1x2x3x4xf16>, tensor<1x2x3x4xf16>, tensor<4x4xf32>) -> tensor<1x2x3x4xf16>
    return %o : tensor<1x2x3x4xf16>
  }
}

// -----

// General scores with a run-time Dk: no shared memory; (q·W)[d] recomputed
// per key inside the depth loop.
// CHECK-LABEL: gpu.func @general_dynamic_attention0(
// CHECK-NOT: llvm.call_intrinsic "llvm.nvvm.bar.warp.sync"
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK-COUNT-5: gpu.shuffle  xor
module {
  func.func @general_dynamic(%D: index {attn.dim = "D"}, %q: tensor<1x2x3x?xf32> {attn.input = "q"}, %k: tensor<1x2x3x?xf32> {attn.input = "k"},
                             %v: tensor<1x2x3x?xf32> {attn.input = "v"}, %w: tensor<?x?xf32> {attn.input = "w"}) -> (tensor<1x2x3x?xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v general(%w) {score = #attn.score<general>}
        : (tensor<1x2x3x?xf32>, tensor<1x2x3x?xf32>, tensor<1x2x3x?xf32>, tensor<?x?xf32>) -> tensor<1x2x3x?xf32>
    return %o : tensor<1x2x3x?xf32>
  }
}

// -----

// Additive scores: Wq, Wk and va after v; Wq·q once per row by a butterfly
// per unit (lane 0 stores it), then per key and unit Wk·k by a butterfly,
// va·tanh(...) (the rational approximation: no math op left) summed.
// CHECK-LABEL: gpu.func @additive_attention0(
// CHECK-SAME: attn.params = ["q", "k", "v", "wq", "wk", "va", "n", "o", "workspace", "B", "Hq", "Hkv", "S", "T", "Dk", "Dv", "splits"]
// CHECK: scf.for
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: scf.if
// CHECK: llvm.store {{.*}} : f32, !llvm.ptr<3>
// CHECK: llvm.call_intrinsic "llvm.nvvm.bar.warp.sync"
// CHECK: scf.for {{.*}} -> (f32)
// CHECK-COUNT-5: gpu.shuffle  xor
// CHECK: llvm.load {{.*}} : !llvm.ptr<3> -> f32
// CHECK-NOT: math.
// CHECK: gpu.return
// CHECK: llvm.mlir.global internal @additive_attention0_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<24 x f32>
module {
  func.func @additive(%q: tensor<1x2x3x4xf32> {attn.input = "q"}, %k: tensor<1x2x5x4xf32> {attn.input = "k"},
                      %v: tensor<1x2x5x4xf32> {attn.input = "v"}, %wq: tensor<6x4xf32> {attn.input = "wq"},
                      %wk: tensor<6x4xf32> {attn.input = "wk"}, %va: tensor<6xf32> {attn.input = "va"},
                      %n: tensor<1xi32> {attn.input = "n"}) -> (tensor<1x2x3x4xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v additive(%wq, %wk, %va) key_lengths(%n) {score = #attn.score<additive>}
        : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<6x4xf32>, tensor<6x4xf32>, tensor<6xf32>, tensor<1xi32>) -> tensor<1x2x3x4xf32>
    return %o : tensor<1x2x3x4xf32>
  }
}

// -----

// Additive scores past 48 KB of projected queries (4 warps x 3073 f32): Wq·q
// recomputed beside Wk·k per key, two sums in one butterfly.
// CHECK-LABEL: gpu.func @additive_wide_attention0(
// CHECK-NOT: llvm.call_intrinsic "llvm.nvvm.bar.warp.sync"
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: scf.for {{.*}} -> (f32, f32)
// CHECK-COUNT-10: gpu.shuffle  xor
module {
  func.func @additive_wide(%q: tensor<1x2x3x4xf32> {attn.input = "q"}, %k: tensor<1x2x5x4xf32> {attn.input = "k"},
                           %v: tensor<1x2x5x4xf32> {attn.input = "v"}, %wq: tensor<3073x4xf32> {attn.input = "wq"},
                           %wk: tensor<3073x4xf32> {attn.input = "wk"}, %va: tensor<3073xf32> {attn.input = "va"}) -> (tensor<1x2x3x4xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v additive(%wq, %wk, %va) {score = #attn.score<additive>}
        : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<3073x4xf32>, tensor<3073x4xf32>, tensor<3073xf32>) -> tensor<1x2x3x4xf32>
    return %o : tensor<1x2x3x4xf32>
  }
}

// -----

module {
  func.func @additive_runtime_width(%A: index {attn.dim = "A"}, %q: tensor<1x2x3x4xf32> {attn.input = "q"}, %k: tensor<1x2x3x4xf32> {attn.input = "k"},
                                    %v: tensor<1x2x3x4xf32> {attn.input = "v"}, %wq: tensor<?x4xf32> {attn.input = "wq"},
                                    %wk: tensor<?x4xf32> {attn.input = "wk"}, %va: tensor<?xf32> {attn.input = "va"}) -> (tensor<1x2x3x4xf32> {attn.output = "o"}) {
    // expected-error @+1 {{attention with 'additive' scores whose width A is a run-time size has no CUDA kernel yet}}
    %o = attn.attention %q, %k, %v additive(%wq, %wk, %va) {score = #attn.score<additive>}
        : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>, tensor<?xf32>) -> tensor<1x2x3x4xf32>
    return %o : tensor<1x2x3x4xf32>
  }
}

// -----

// The softcap's tanh is the CPU kernels' rational approximation, with PTX's
// fma and abs: no math op (a libdevice call) is left.
// CHECK-LABEL: gpu.func @capped_attention0
// CHECK-NOT: math.
// CHECK: llvm.call_intrinsic "llvm.fabs.f32"
// CHECK: llvm.call_intrinsic "llvm.fma.f32"
// CHECK-NOT: math.
// CHECK: gpu.func @capped_attention0_merge
module {
  func.func @capped(%q: tensor<1x2x3x4xf32> {attn.input = "q"}, %k: tensor<1x2x3x4xf32> {attn.input = "k"},
                    %v: tensor<1x2x3x4xf32> {attn.input = "v"}) -> (tensor<1x2x3x4xf32> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v {softcap = 30.0 : f64}
        : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
    return %o : tensor<1x2x3x4xf32>
  }
}

// -----

// bf16 with Dk = Dv = 64 known: also the tensor-core kernel, run instead
// of the SIMT kernel, its key parts merged as the SIMT kernel's. The G
// query heads of a kv head go together (grid y over kv heads, packed rows),
// and key parts of a row block side by side along x. Dk and Dv multiples of
// 16: K and V blocks staged in shared memory (an i16 array in address
// space 3) by cp.async, K's first before the key loop, then per block: wait
// and barrier, V's copy issued, S = Q·Kᵀ (fragments by ldmatrix, mma.sync
// m16n8k16), the softmax, wait and barrier, K's next block issued, O += P·V
// (V transposed by ldmatrix). Without key splits the output; with them the
// workspace.
// CHECK-LABEL: gpu.module @tc_gpu
// CHECK: gpu.func @tc_attention0(
// CHECK-SAME: attn.tensor_core = "tc_attention0_mma"
// CHECK: gpu.func @tc_attention0_merge(
// CHECK: gpu.func @tc_attention0_mma(
// CHECK-SAME: attn.block = [128, 1, 1]
// CHECK-SAME: attn.block_rows = 64 : i64
// CHECK-SAME: attn.grid = ["ceil(S * Hq / Hkv / 64) * splits", "Hkv", "B"]
// CHECK-SAME: attn.row_flags = 6 : i64
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16.s"
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.commit.group"
// CHECK: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"
// CHECK-NEXT: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16.s"
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.commit.group"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16"
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.bf16"
// CHECK: gpu.shuffle  xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"
// CHECK-NEXT: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16.s"
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.commit.group"
// CHECK: llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.bf16"
// CHECK: scf.yield
// CHECK: } else {
// CHECK: gpu.return
// CHECK: llvm.mlir.global internal @tc_attention0_mma_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<9216 x i16>
module {
  func.func @tc(%q: tensor<1x2x33x64xbf16> {attn.input = "q"}, %k: tensor<1x2x65x64xbf16> {attn.input = "k"},
                %v: tensor<1x2x65x64xbf16> {attn.input = "v"}) -> (tensor<1x2x33x64xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v {causal}
        : (tensor<1x2x33x64xbf16>, tensor<1x2x65x64xbf16>, tensor<1x2x65x64xbf16>) -> tensor<1x2x33x64xbf16>
    return %o : tensor<1x2x33x64xbf16>
  }
}

// -----

// Dk = 40 is not a multiple of 16: the tensor-core kernel reads its
// fragments from global memory (pairs of K as one i32, V one by one).
// CHECK-LABEL: gpu.func @tc40_attention0_mma(
// CHECK-NOT: gpu.barrier
// CHECK: llvm.load %{{.+}} : !llvm.ptr<1> -> i32
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
// CHECK-NOT: ldmatrix
// CHECK: gpu.return
module {
  func.func @tc40(%q: tensor<1x2x33x40xf16> {attn.input = "q"}, %k: tensor<1x2x65x40xf16> {attn.input = "k"},
                  %v: tensor<1x2x65x40xf16> {attn.input = "v"}) -> (tensor<1x2x33x40xf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v
        : (tensor<1x2x33x40xf16>, tensor<1x2x65x40xf16>, tensor<1x2x65x40xf16>) -> tensor<1x2x33x40xf16>
    return %o : tensor<1x2x33x40xf16>
  }
}
