// RUN: attn-opt %s --attn-lower-to-gpu=entry=1 --attn-build-cuda-entry | FileCheck %s

// Tests that a graph with ops outside attention becomes host code for a
// CUDA kernel: attn-lower-to-gpu{entry} makes the attention kernels and
// names their tensors (an intermediate by its node: "qe" for exp(q), "o" for
// the attention's output), attn-build-cuda-entry adds a kernel per other op
// (its closure words as i64 parameters, math as PTX's, no libdevice call)
// and the copy of an output that is an input, and the entry allocates the
// intermediates, launches exp (function 0, 10 words), runs attention op 0
// on 4 attnrt_tensors, launches neg (function 1) into the output buffer
// and copies k into buffers[4] (function 2), returning the first nonzero
// status at once.

// CHECK: gpu.module @g_gpu
// CHECK: gpu.func @g_attention0(
// CHECK-SAME: attn.tensors = ["qe", "k", "v", "o"]
// CHECK: gpu.func @g_p0(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64) kernel
// CHECK-SAME: attn.block = [256, 1, 1], attn.function = 0 : i64, attn.node = "qe", attn.words = 10 : i64
// CHECK: gpu.block_id x
// CHECK: gpu.grid_dim x
// CHECK-NOT: math.
// CHECK: gpu.func @g_p1(
// CHECK-SAME: attn.function = 1 : i64, attn.node = "y", attn.words = 10 : i64
// CHECK: gpu.func @g_copy(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64) kernel
// CHECK-SAME: attn.function = 2 : i64, attn.words = 3 : i64
// CHECK-DAG: llvm.func @attnrt_allocate(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @attnrt_cuda_launch(!llvm.ptr, i32, i64, !llvm.ptr, i32) -> i32
// CHECK-DAG: llvm.func @attnrt_cuda_run_attention(!llvm.ptr, i32, !llvm.ptr, i32) -> i32
// CHECK-NOT: func.func @g(
// CHECK: func.func @g_entry(%[[INVOCATION:.*]]: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[BUFFERS:.*]]: !llvm.ptr) -> i32
// CHECK: %[[TENSORS:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, i32, i32, ptr, ptr)>
// CHECK: llvm.getelementptr %[[BUFFERS]][4]
// CHECK: llvm.call @attnrt_allocate(%[[INVOCATION]], %{{.*}})
// CHECK: ^[[STATUS:bb[0-9]+]](%[[CODE:.*]]: i32):
// CHECK-NEXT: return %[[CODE]] : i32
// CHECK: %[[EXP:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK: %[[EXP_WORDS:.*]] = llvm.mlir.constant(10 : i32) : i32
// CHECK: %[[LAUNCHED:.*]] = llvm.call @attnrt_cuda_launch(%[[INVOCATION]], %[[EXP]], %{{.*}}, %{{.*}}, %[[EXP_WORDS]])
// CHECK: cf.cond_br %{{.*}}, ^[[STATUS]](%[[LAUNCHED]] : i32)
// CHECK: %[[RAN:.*]] = llvm.call @attnrt_cuda_run_attention(%[[INVOCATION]], %{{.*}}, %[[TENSORS]], %{{.*}})
// CHECK: cf.cond_br %{{.*}}, ^[[STATUS]](%[[RAN]] : i32)
// CHECK: %[[NEG:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK: llvm.call @attnrt_cuda_launch(%[[INVOCATION]], %[[NEG]],
// CHECK: %[[COPY:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK: llvm.call @attnrt_cuda_launch(%[[INVOCATION]], %[[COPY]],
// CHECK: arith.constant 0 : i32
module {
  func.func @g(%arg0: index {attn.dim = "B"}, %arg1: index {attn.dim = "S"},
               %q: tensor<?x4x?x16xf32> {attn.dims = array<i64: -1, 4, -2, 16>, attn.input = "q"},
               %k: tensor<?x2x?x16xf32> {attn.dims = array<i64: -1, 2, -2, 16>, attn.input = "k"},
               %v: tensor<?x2x?x16xf32> {attn.dims = array<i64: -1, 2, -2, 16>, attn.input = "v"})
      -> (tensor<?x4x?x16xf32> {attn.output = "y"}, tensor<?x2x?x16xf32> {attn.output = "k_again"}) {
    %n = attn.exp %q : tensor<?x4x?x16xf32> loc("qe")
    %o = attn.attention %n, %k, %v {causal} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32> loc("o")
    %y = attn.neg %o : tensor<?x4x?x16xf32> loc("y")
    return %y, %k : tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>
  }
}
