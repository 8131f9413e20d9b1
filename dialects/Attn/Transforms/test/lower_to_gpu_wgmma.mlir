// RUN: attn-opt %s --split-input-file --attn-lower-to-gpu=wgmma=1 | FileCheck %s

// cuda-sm90a: the staged tensor-core kernel's block is one warpgroup and
// its products are wgmma.mma_async, A (Q, then P rounded to bf16) from
// registers, B from shared memory through matrix descriptors. K and V are
// staged as 8x8 core matrices back to back (copy c lands at element 8c, no
// padding: 64 · (128 + 128) i16), made visible to wgmma's async proxy
// before the barrier. S = Q·Kᵀ: 8 k-steps of m64n64k16, K-major B (leading
// offset 128 bytes, stride 16 · 128: 128 << 32 | 8 << 16), the first with
// scale-d 0 and no accumulator operands (nothing writes them between the
// fence and the MMA); O += P·V: 4 steps of m64n128k16, B transposed
// (leading 16 · 128, stride 128: 8 << 32 | 128 << 16), O and P pinned by
// empty asms before the fence. Each group: fence, issue, commit, wait, then
// the accumulators through an empty asm so that no use moves above the wait.
// CHECK-LABEL: gpu.func @tc_attention0_mma(
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16.s"
// CHECK: scf.for
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"
// CHECK-NEXT: llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;", "~{memory}"
// CHECK-NEXT: gpu.barrier
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.commit.group"
// CHECK: llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;"
// CHECK: arith.ori %{{.+}}, %c549756338176_i64 : i64
// CHECK: llvm.inline_asm has_side_effects "{\0A.reg .pred p;\0Asetp.ne.b32 p, $37, 0;\0Awgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {$0, $1,
// CHECK-SAME: $31}, {$32, $33, $34, $35}, $36, p, 1, 1, 0;\0A}", "=f,
// CHECK-SAME: =f,r,r,r,r,l,r,~{memory}"
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-SAME: r,r,r,r,l,r,0,1,
// CHECK-COUNT-6: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK-NOT: ldmatrix
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NEXT: "wgmma.wait_group.sync.aligned 0;"
// CHECK-NEXT: llvm.inline_asm has_side_effects "", "=f,
// CHECK: gpu.shuffle  xor
// CHECK: llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"
// CHECK-NEXT: "fence.proxy.async.shared::cta;"
// CHECK-NEXT: gpu.barrier
// CHECK: llvm.inline_asm has_side_effects "", "=f,
// CHECK: llvm.inline_asm has_side_effects "", "=r,
// CHECK: "wgmma.fence.sync.aligned;"
// CHECK: arith.ori %{{.+}}, %c34368126976_i64 : i64
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK-SAME: $63}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;
// CHECK-COUNT-3: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// CHECK: "wgmma.commit_group.sync.aligned;"
// CHECK-NOT: mma.m16n8k16
// CHECK: gpu.return
// CHECK: llvm.mlir.global internal @tc_attention0_mma_shared() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<16384 x i16>
module {
  func.func @tc(%q: tensor<1x2x33x128xbf16> {attn.input = "q"}, %k: tensor<1x2x65x128xbf16> {attn.input = "k"},
                %v: tensor<1x2x65x128xbf16> {attn.input = "v"}) -> (tensor<1x2x33x128xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v {causal}
        : (tensor<1x2x33x128xbf16>, tensor<1x2x65x128xbf16>, tensor<1x2x65x128xbf16>) -> tensor<1x2x33x128xbf16>
    return %o : tensor<1x2x33x128xbf16>
  }
}

// -----

// f16, Dk = 96 and Dv = 80: 6 k-steps of S, P·V at N = 80 (40 accumulators
// a thread).
// CHECK-LABEL: gpu.func @narrow_attention0_mma(
// CHECK-COUNT-6: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// CHECK-NOT: m64n64k16
// CHECK: wgmma.mma_async.sync.aligned.m64n80k16.f32.f16.f16 {$0,
// CHECK-SAME: $39}, {$40, $41, $42, $43}, $44, p, 1, 1, 1;
// CHECK: llvm.mlir.global internal @narrow_attention0_mma_shared() {{.*}} : !llvm.array<11264 x i16>
module {
  func.func @narrow(%q: tensor<1x4x9x96xf16> {attn.input = "q"}, %k: tensor<1x2x70x96xf16> {attn.input = "k"},
                    %v: tensor<1x2x70x80xf16> {attn.input = "v"}) -> (tensor<1x4x9x80xf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v
        : (tensor<1x4x9x96xf16>, tensor<1x2x70x96xf16>, tensor<1x2x70x80xf16>) -> tensor<1x4x9x80xf16>
    return %o : tensor<1x4x9x80xf16>
  }
}

// -----

// Head dims of 64 and below stay on mma.sync and ldmatrix (wgmma's results
// at 64 were wrong on a GPU).
// CHECK-LABEL: gpu.func @d64_attention0_mma(
// CHECK-NOT: wgmma
// CHECK: ldmatrix
// CHECK-NOT: wgmma
// CHECK: gpu.return
module {
  func.func @d64(%q: tensor<1x2x33x64xbf16> {attn.input = "q"}, %k: tensor<1x2x65x64xbf16> {attn.input = "k"},
                 %v: tensor<1x2x65x64xbf16> {attn.input = "v"}) -> (tensor<1x2x33x64xbf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v
        : (tensor<1x2x33x64xbf16>, tensor<1x2x65x64xbf16>, tensor<1x2x65x64xbf16>) -> tensor<1x2x33x64xbf16>
    return %o : tensor<1x2x33x64xbf16>
  }
}

// -----

// Dk = 40 is not a multiple of 16: nothing is staged, and the kernel stays
// on mma.sync with fragments from global memory.
// CHECK-LABEL: gpu.func @tc40_attention0_mma(
// CHECK-NOT: wgmma
// CHECK: llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"
// CHECK-NOT: wgmma
// CHECK: gpu.return
module {
  func.func @tc40(%q: tensor<1x2x33x40xf16> {attn.input = "q"}, %k: tensor<1x2x65x40xf16> {attn.input = "k"},
                  %v: tensor<1x2x65x40xf16> {attn.input = "v"}) -> (tensor<1x2x33x40xf16> {attn.output = "o"}) {
    %o = attn.attention %q, %k, %v
        : (tensor<1x2x33x40xf16>, tensor<1x2x65x40xf16>, tensor<1x2x65x40xf16>) -> tensor<1x2x33x40xf16>
    return %o : tensor<1x2x33x40xf16>
  }
}
