// RUN: attn-opt %s --attn-build-entry --split-input-file --verify-diagnostics | FileCheck %s

// Tests that the graph function becomes NAME_entry(invocation, dims,
// buffers) and one task function per op: the run-time sizes B and S come
// from dims[0] and dims[1] (the `attn.dims` of each input says which dim is
// which), the intermediate attention output is attnrt_allocate memory with
// ATTNRT_OUT_OF_MEMORY (5) when that fails, the attention and the neg each run
// through attnrt_parallel_for, and the neg writes straight into the output
// buffer (buffers[3]).

// CHECK-DAG: llvm.func @attnrt_parallel_for(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr)
// CHECK-DAG: llvm.func @attnrt_allocate(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: func.func @g_k0(%{{.*}}: !llvm.ptr, %{{.*}}: i64) attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK-DAG: func.func @g_k1(%{{.*}}: !llvm.ptr, %{{.*}}: i64) attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK-NOT: func.func @g(
// CHECK: func.func @g_entry(%[[INVOCATION:.*]]: !llvm.ptr, %[[DIMS:.*]]: !llvm.ptr, %[[BUFFERS:.*]]: !llvm.ptr) -> i32
// CHECK: %[[B_AT:.*]] = llvm.getelementptr %[[DIMS]][0]
// CHECK: llvm.load %[[B_AT]] : !llvm.ptr -> i64
// CHECK: %[[S_AT:.*]] = llvm.getelementptr %[[DIMS]][1]
// CHECK: llvm.load %[[S_AT]] : !llvm.ptr -> i64
// CHECK: llvm.getelementptr %[[BUFFERS]][3]
// CHECK: %[[SCRATCH:.*]] = llvm.call @attnrt_allocate(%[[INVOCATION]], %{{.*}})
// CHECK: llvm.icmp "eq" %[[SCRATCH]]
// CHECK: arith.constant 5 : i32
// CHECK: llvm.call @attnrt_parallel_for(%[[INVOCATION]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: llvm.call @attnrt_parallel_for(%[[INVOCATION]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK: arith.constant 0 : i32
module {
  func.func @g(%arg0: index {attn.dim = "B"}, %arg1: index {attn.dim = "S"},
               %q: tensor<?x4x?x16xf32> {attn.dims = array<i64: -1, 4, -2, 16>, attn.input = "q"},
               %k: tensor<?x2x?x16xf32> {attn.dims = array<i64: -1, 2, -2, 16>, attn.input = "k"},
               %v: tensor<?x2x?x16xf32> {attn.dims = array<i64: -1, 2, -2, 16>, attn.input = "v"})
      -> (tensor<?x4x?x16xf32> {attn.output = "y"}) {
    %o = attn.attention %q, %k, %v {causal} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x4x?x16xf32>
    %y = attn.neg %o : tensor<?x4x?x16xf32>
    return %y : tensor<?x4x?x16xf32>
  }
}

// -----

// Tests that a linear's tasks are row blocks whose rows the entry picks from
// the invocation's threads: the packed GEMM's 192-row blocks, and on more
// than one thread at least two tasks a thread; the rows a multiple of 6, at
// least 48. They go in the closure's last word (9), which the task reads
// back, and the task count is ceil(M / rows).

// CHECK-LABEL: func.func @proj_k0(
// CHECK: %[[ROWS_AT:.*]] = llvm.getelementptr %arg0[9]
// CHECK: llvm.load %[[ROWS_AT]] : !llvm.ptr -> i64
// CHECK-LABEL: func.func @proj_entry(
// CHECK: %[[THREADS:.*]] = llvm.call @attnrt_invocation_threads(%arg0)
// CHECK: %[[T:.*]] = arith.index_cast %[[THREADS]] : i64 to index
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %[[M:.*]], %c192
// CHECK: %[[WHOLE:.*]] = arith.maxui %[[BLOCKS]]
// CHECK: %[[TWICE:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[WANTED:.*]] = arith.ceildivui %[[TWICE]]
// CHECK: %[[SEVERAL:.*]] = arith.cmpi ugt, %[[T]]
// CHECK: %[[MORE:.*]] = arith.maxui %[[WHOLE]], %[[WANTED]]
// CHECK: %[[TASKS:.*]] = arith.select %[[SEVERAL]], %[[MORE]], %[[WHOLE]]
// CHECK: %[[EACH:.*]] = arith.ceildivui %[[M]], %[[TASKS]]
// CHECK: %[[SIXES:.*]] = arith.ceildivui %[[EACH]], %c6
// CHECK: %[[ROUNDED:.*]] = arith.muli %[[SIXES]], %c6
// CHECK: %[[ROWS:.*]] = arith.maxui %[[ROUNDED]], %c48
// CHECK: %[[BLOCKS_OF_ROWS:.*]] = arith.ceildivui %[[M]], %[[ROWS]] : index
// CHECK: %[[COUNT:.*]] = arith.muli %{{.*}}, %[[BLOCKS_OF_ROWS]] : index
// CHECK: %[[ROWS_WORD:.*]] = llvm.getelementptr %{{.*}}[9]
// CHECK: %[[ROWS_I64:.*]] = arith.index_cast %[[ROWS]] : index to i64
// CHECK: llvm.store %[[ROWS_I64]], %[[ROWS_WORD]]
// CHECK: %[[COUNT_I64:.*]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK: llvm.call @attnrt_parallel_for(%arg0, %[[COUNT_I64]],
module {
  func.func @proj(%arg0: index {attn.dim = "M"},
                  %x: tensor<?x64xf32> {attn.dims = array<i64: -1, 64>, attn.input = "x"},
                  %w: tensor<32x64xf32> {attn.dims = array<i64: 32, 64>, attn.input = "w"})
      -> (tensor<?x32xf32> {attn.output = "y"}) {
    %y = attn.linear %x, %w : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
    return %y : tensor<?x32xf32>
  }
}

// -----

// Tests that an input returned as it is gets copied into its output buffer.

// CHECK-LABEL: func.func @copy_entry(
// CHECK: "llvm.intr.memcpy"
// CHECK: arith.constant 0 : i32
module {
  func.func @copy(%x: tensor<2x3xf32> {attn.dims = array<i64: 2, 3>, attn.input = "x"})
      -> (tensor<2x3xf32> {attn.output = "x"}) {
    return %x : tensor<2x3xf32>
  }
}

// -----

// Tests that an input without `attn.dims` (not what attnc imports) is one
// error, not a crash.

module {
  // expected-error @+1 {{attn-build-entry: input 0 needs an `attn.dims` array of its rank}}
  func.func @bad(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    return %x : tensor<2x3xf32>
  }
}
