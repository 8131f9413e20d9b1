//===- attn-opt.cpp - mlir-opt for the attn dialect -----------------------===//
//
// MlirOptMain with the attn dialect, its passes and pipelines, the CPU
// backend's passes (attn-build-entry), and the upstream dialects attn lowers
// to. Only what is used is registered: the
// InitAll headers cost half a minute per translation unit.
//
//===----------------------------------------------------------------------===//

#include "Attn/IR/AttnDialect.h"
#include "Attn/Transforms/Passes.h"
#include "Codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<mlir::attn::AttnDialect, mlir::arith::ArithDialect,
                  mlir::func::FuncDialect, mlir::gpu::GPUDialect,
                  mlir::LLVM::LLVMDialect, mlir::linalg::LinalgDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect,
                  mlir::vector::VectorDialect>();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::attn::registerAttnPasses();
  mlir::attn::registerAttnPipeline();
  mlir::attn::registerAttnLowerToLLVMPipeline();
  attnc::registerAttncCodegenPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attn optimizer driver\n", registry));
}
