//===- Passes.h - Passes of the CPU backend ---------------------*- C++ -*-===//
#ifndef ATTNC_CODEGEN_PASSES_H
#define ATTNC_CODEGEN_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace attnc {

#define GEN_PASS_DECL
#include "Codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "Codegen/Passes.h.inc"

} // namespace attnc

#endif // ATTNC_CODEGEN_PASSES_H
