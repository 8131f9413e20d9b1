// RUN: attn-opt %s --attn-mark-loop-annotations --split-input-file | FileCheck %s --check-prefix=MARK
// RUN: attn-opt %s --attn-lower-to-llvm --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=LLVM

// Tests that an scf.for's llvm.loop_annotation (dropped by MLIR 19's
// convert-scf-to-cf) reaches the loop's back edge: attn-mark-loop-annotations
// moves it into an attn.loop_annotation at the start of the body, and after
// the lowering attn-annotate-loop-latches sets it on the latch llvm.br (not on
// the header's llvm.cond_br, nor on a loop without one), with a nested scf.if
// between body entry and latch. A marker that begins no loop body is an error.

// MARK-LABEL: func.func @no_unroll
// MARK: scf.for
// MARK-NEXT: attn.loop_annotation #{{.*}}
// MARK-NOT: llvm.loop_annotation =
// MARK: scf.for
// MARK-NOT: attn.loop_annotation
// MARK: return
// LLVM-DAG: #[[UNROLL:.*]] = #llvm.loop_unroll<disable = true>
// LLVM-DAG: #[[ANNOTATION:.*]] = #llvm.loop_annotation<unroll = #[[UNROLL]]>
// LLVM-LABEL: llvm.func @no_unroll
// LLVM-NOT: attn.loop_annotation
// LLVM: llvm.cond_br
// LLVM-NOT: loop_annotation
// LLVM: llvm.br ^{{.*}} {loop_annotation = #[[ANNOTATION]]}
// LLVM-NOT: loop_annotation
// LLVM: llvm.return
func.func @no_unroll(%n: index, %x: f32, %flag: i1, %buffer: memref<4xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> f32 {
    %b = arith.addf %a, %x : f32
    scf.if %flag {
      memref.store %b, %buffer[%c0] : memref<4xf32>
    }
    scf.yield %b : f32
  } {llvm.loop_annotation = #llvm.loop_annotation<unroll = <disable = true>>}
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%a = %r) -> f32 {
    %b = arith.mulf %a, %x : f32
    scf.yield %b : f32
  }
  return %s : f32
}

// -----

llvm.func @stray() {
  // expected-error @+1 {{not at the start of a loop body}}
  attn.loop_annotation #llvm.loop_annotation<unroll = <disable = true>>
  llvm.return
}
