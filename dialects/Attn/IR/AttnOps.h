//===- AttnOps.h - The attn dialect's ops ------------------------*- C++
//-*-===//
#ifndef ATTN_IR_ATTNOPS_H
#define ATTN_IR_ATTNOPS_H

#include "Attn/IR/AttnDialect.h"
#include "Attn/IR/AttnSemantics.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "Attn/IR/AttnOps.h.inc"

#endif // ATTN_IR_ATTNOPS_H
