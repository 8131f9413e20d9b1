//===- AttnDialect.h - The attn dialect --------------------------*- C++
//-*-===//
#ifndef ATTN_IR_ATTNDIALECT_H
#define ATTN_IR_ATTNDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"

#include "Attn/IR/AttnDialect.h.inc"
#include "Attn/IR/AttnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "Attn/IR/AttnAttrs.h.inc"

#endif // ATTN_IR_ATTNDIALECT_H
