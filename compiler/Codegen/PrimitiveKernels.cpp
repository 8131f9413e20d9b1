//===- PrimitiveKernels.cpp - attn primitives on buffers ------------------===//

#include "Codegen/PrimitiveKernels.h"

#include "mlir/IR/BuiltinTypes.h"

#include <stdexcept>

namespace attnc {

mlir::Type bufferElementType(mlir::Type tensorType) {
  mlir::Type element = mlir::cast<mlir::ShapedType>(tensorType).getElementType();
  if (element.isInteger(1))
    return mlir::IntegerType::get(element.getContext(), 8);
  return element;
}

llvm::SmallVector<llvm::SmallVector<mlir::Value>>
resultSizes(mlir::OpBuilder &, mlir::Location, mlir::Operation *op,
            llvm::ArrayRef<llvm::SmallVector<mlir::Value>>) {
  throw std::logic_error("resultSizes: " + op->getName().getStringRef().str() +
                         " is not implemented yet");
}

void emitPrimitive(mlir::OpBuilder &, mlir::Location, mlir::Operation *op,
                   mlir::ValueRange, mlir::ValueRange) {
  throw std::logic_error("emitPrimitive: " +
                         op->getName().getStringRef().str() +
                         " is not implemented yet");
}

} // namespace attnc
