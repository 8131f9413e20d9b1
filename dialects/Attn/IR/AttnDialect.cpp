//===- AttnDialect.cpp - The attn dialect ---------------------------------===//

#include "Attn/IR/AttnDialect.h"
#include "Attn/IR/AttnOps.h"

#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::attn;

#include "Attn/IR/AttnDialect.cpp.inc"
#include "Attn/IR/AttnEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "Attn/IR/AttnAttrs.cpp.inc"

void AttnDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "Attn/IR/AttnOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "Attn/IR/AttnAttrs.cpp.inc"
      >();
}
