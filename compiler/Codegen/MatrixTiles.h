//===- MatrixTiles.h - AMX tiles, or the same operations in vector code ---===//
//
// The tile operations of Intel's AMX unit as the attention kernel uses them:
// 16-row tiles loaded from and stored to memory with a row stride, and the
// bf16 product tdpbf16ps (f32 C[16][16] += A[16][32] · B, B in pairs of
// rows: B[k / 2][2n + k % 2] holds element (k, n)). Emulated, the same
// operations are vector code that any x86-64 CPU runs, so that the kernel's
// packing and tiling around them are checked where no CPU has AMX.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_MATRIXTILES_H
#define ATTNC_CODEGEN_MATRIXTILES_H

#include "Codegen/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace attnc {

/// Tiles of 16 rows: bf16 operands of 32 columns (64 bytes a row) and f32
/// results of 16, held as 2-D vectors (the amx dialect's tile values;
/// emulated, bf16 operands are held as their bits, i16).
class TileOps {
public:
  static constexpr int64_t kRows = 16, kPairColumns = 32, kColumns = 16;
  /// A product block is at most kBlock × kBlock result tiles: with kBlock
  /// tiles of each operand, the 8 tile registers.
  static constexpr int64_t kBlock = 2;

  /// Emulated products call a function that they add to `module`.
  TileOps(mlir::ImplicitLocOpBuilder &b, MatrixTiles kind,
          mlir::ModuleOp module)
      : b(b), emulated(kind == MatrixTiles::emulated), module(module) {}

  /// The bf16 operand type, vector<16x32xbf16>, and the f32 result type,
  /// vector<16x16xf32>.
  mlir::VectorType operandType() const;
  mlir::VectorType resultType() const;

  /// A tile of zeros.
  mlir::Value zero(mlir::VectorType type);
  /// Rows offset + r · stride of `flat` (a memref<?xT>), r < 16, each as
  /// many elements as `type` has columns.
  mlir::Value load(mlir::VectorType type, mlir::Value flat, mlir::Value offset,
                   mlir::Value stride);
  void store(mlir::Value tile, mlir::Value flat, mlir::Value offset,
             mlir::Value stride);
  /// acc + lhs · rhs, rhs in pairs of rows (tdpbf16ps).
  mlir::Value multiply(mlir::Value lhs, mlir::Value rhs, mlir::Value acc);

  /// Where a tile lies: rows offset + r · stride of a memref<?xT>.
  struct Place {
    mlir::Value data, offset, stride;
  };
  /// C[m][n] = (accumulate ? C[m][n] : 0) + sum over k < steps of
  /// A[m][k] · B[k][n], for m < rows and n < columns (each at most kBlock),
  /// every tile product of a step issued after the step's operand loads:
  /// each operand tile serves a whole row or column of the block, and the
  /// products, independent, overlap. Straight-line code, as LLVM keeps tiles
  /// in registers only there.
  void productBlock(int64_t rows, int64_t columns, int64_t steps,
                    bool accumulate,
                    llvm::function_ref<Place(int64_t m, int64_t k)> lhs,
                    llvm::function_ref<Place(int64_t k, int64_t n)> rhs,
                    llvm::function_ref<Place(int64_t m, int64_t n)> result);

private:
  /// `flat` seen as [16, stride] from `offset`, the 2-D memref an AMX tile
  /// load or store takes (it reads the stride from the last size).
  mlir::Value rowsView(mlir::Value flat, mlir::Value offset,
                       mlir::Value stride);
  /// tdpbf16ps as vector code, for the function that emulated products call.
  mlir::Value emulatedProduct(mlir::Value lhs, mlir::Value rhs,
                              mlir::Value acc);

  mlir::ImplicitLocOpBuilder &b;
  bool emulated;
  mlir::ModuleOp module;
};

} // namespace attnc

#endif // ATTNC_CODEGEN_MATRIXTILES_H
