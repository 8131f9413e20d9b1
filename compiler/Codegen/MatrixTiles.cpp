//===- MatrixTiles.cpp - AMX tiles, or the same operations in vector code -===//

#include "Codegen/MatrixTiles.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace attnc {

VectorType TileOps::operandType() const {
  return VectorType::get({kRows, kPairColumns}, b.getBF16Type());
}

VectorType TileOps::resultType() const {
  return VectorType::get({kRows, kColumns}, b.getF32Type());
}

Value TileOps::zero(VectorType type) {
  if (!emulated)
    return b.create<amx::TileZeroOp>(type);
  return b.create<arith::ConstantOp>(type, b.getZeroAttr(type));
}

Value TileOps::rowsView(Value flat, Value offset, Value stride) {
  auto type = cast<MemRefType>(flat.getType());
  // A reinterpret_cast's offset counts from the allocation's base, not from
  // `flat`'s own offset.
  auto metadata = b.create<memref::ExtractStridedMetadataOp>(flat);
  Value start = b.create<arith::AddIOp>(metadata.getOffset(), offset);
  auto viewType = MemRefType::get(
      {kRows, ShapedType::kDynamic}, type.getElementType(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, 1}));
  return b.create<memref::ReinterpretCastOp>(
      viewType, metadata.getBaseBuffer(), OpFoldResult(start),
      ArrayRef<OpFoldResult>{b.getIndexAttr(kRows), stride},
      ArrayRef<OpFoldResult>{stride, b.getIndexAttr(1)});
}

Value TileOps::load(VectorType type, Value flat, Value offset, Value stride) {
  if (!emulated) {
    Value zero = b.create<arith::ConstantIndexOp>(0);
    return b.create<amx::TileLoadOp>(type, rowsView(flat, offset, stride),
                                     ValueRange{zero, zero});
  }
  // bf16 operands are held as their bits (i16): LLVM widens bfloat vectors
  // it moves on CPUs without AVX512-BF16 through a compiler-runtime call.
  auto rowType = VectorType::get({type.getDimSize(1)}, type.getElementType());
  bool bits = type.getElementType().isBF16();
  VectorType tileType =
      bits ? VectorType::get(type.getShape(), b.getI16Type()) : type;
  Value tile = b.create<arith::ConstantOp>(tileType, b.getZeroAttr(tileType));
  for (int64_t r = 0; r < kRows; ++r) {
    Value at = b.create<arith::AddIOp>(
        offset,
        b.create<arith::MulIOp>(b.create<arith::ConstantIndexOp>(r), stride));
    Value row = b.create<vector::LoadOp>(rowType, flat, ValueRange{at});
    if (bits)
      row = b.create<vector::BitCastOp>(
          VectorType::get({type.getDimSize(1)}, b.getI16Type()), row);
    tile = b.create<vector::InsertOp>(row, tile, ArrayRef<int64_t>{r});
  }
  return tile;
}

void TileOps::store(Value tile, Value flat, Value offset, Value stride) {
  if (!emulated) {
    Value zero = b.create<arith::ConstantIndexOp>(0);
    b.create<amx::TileStoreOp>(rowsView(flat, offset, stride),
                               ValueRange{zero, zero}, tile);
    return;
  }
  for (int64_t r = 0; r < kRows; ++r) {
    Value at = b.create<arith::AddIOp>(
        offset,
        b.create<arith::MulIOp>(b.create<arith::ConstantIndexOp>(r), stride));
    b.create<vector::StoreOp>(
        b.create<vector::ExtractOp>(tile, ArrayRef<int64_t>{r}), flat,
        ValueRange{at});
  }
}

Value TileOps::multiply(Value lhs, Value rhs, Value acc) {
  if (!emulated)
    return b.create<amx::TileMulFOp>(acc.getType(), lhs, rhs, acc);
  // Emulated, a call of one function of the module that holds the 512
  // FMAs: a kernel's dozens of tile products, unrolled, made its compile
  // take half a minute.
  constexpr llvm::StringLiteral kName = "attnc_emulated_tdpbf16ps";
  auto product = module.lookupSymbol<func::FuncOp>(kName);
  if (!product) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    product = b.create<func::FuncOp>(
        kName, b.getFunctionType({lhs.getType(), rhs.getType(), acc.getType()},
                                 {acc.getType()}));
    product.setPrivate();
    // Internal: two kernels linked into one program each have theirs.
    product->setAttr(
        "llvm.linkage",
        LLVM::LinkageAttr::get(b.getContext(), LLVM::Linkage::Internal));
    // Kept a call: inlined, it would bring back the unrolled code.
    product->setAttr("passthrough",
                     b.getArrayAttr({b.getStringAttr("noinline")}));
    Block *entry = product.addEntryBlock();
    b.setInsertionPointToStart(entry);
    b.create<func::ReturnOp>(emulatedProduct(
        entry->getArgument(0), entry->getArgument(1), entry->getArgument(2)));
  }
  return b.create<func::CallOp>(product, ValueRange{lhs, rhs, acc})
      .getResult(0);
}

Value TileOps::emulatedProduct(Value lhs, Value rhs, Value acc) {
  // C[m][n] += sum over pairs p of A[m][2p] · B[p][2n] + A[m][2p+1] ·
  // B[p][2n+1], in f32 as tdpbf16ps sums the exact products (the order of
  // its additions is not specified).
  auto wide = VectorType::get({kPairColumns}, b.getF32Type());
  auto wideBits = VectorType::get({kPairColumns}, b.getI32Type());
  auto row = VectorType::get({kColumns}, b.getF32Type());
  // A bf16 is the high half of the f32 of the same value.
  Value sixteen = b.create<arith::ConstantOp>(
      wideBits, DenseElementsAttr::get(wideBits, b.getI32IntegerAttr(16)));
  auto widen = [&](Value tile, int64_t r) -> Value {
    Value bits = b.create<arith::ExtUIOp>(
        wideBits, b.create<vector::ExtractOp>(tile, ArrayRef<int64_t>{r}));
    return b.create<arith::BitcastOp>(
        wide, b.create<arith::ShLIOp>(bits, sixteen));
  };
  SmallVector<int64_t> evenLanes, oddLanes;
  for (int64_t n = 0; n < kColumns; ++n) {
    evenLanes.push_back(2 * n);
    oddLanes.push_back(2 * n + 1);
  }
  SmallVector<Value> even, odd;
  for (int64_t p = 0; p < kRows; ++p) {
    Value pairs = widen(rhs, p);
    even.push_back(b.create<vector::ShuffleOp>(pairs, pairs, evenLanes));
    odd.push_back(b.create<vector::ShuffleOp>(pairs, pairs, oddLanes));
  }
  Value result = acc;
  for (int64_t m = 0; m < kRows; ++m) {
    Value a = widen(lhs, m);
    Value c = b.create<vector::ExtractOp>(acc, ArrayRef<int64_t>{m});
    for (int64_t p = 0; p < kRows; ++p) {
      auto times = [&](int64_t lane, Value column) {
        Value x = b.create<vector::BroadcastOp>(
            row, b.create<vector::ExtractOp>(a, ArrayRef<int64_t>{lane}));
        c = b.create<math::FmaOp>(x, column, c);
      };
      times(2 * p, even[p]);
      times(2 * p + 1, odd[p]);
    }
    result = b.create<vector::InsertOp>(c, result, ArrayRef<int64_t>{m});
  }
  return result;
}

void TileOps::productBlock(int64_t rows, int64_t columns, int64_t steps,
                           bool accumulate,
                           llvm::function_ref<Place(int64_t, int64_t)> lhs,
                           llvm::function_ref<Place(int64_t, int64_t)> rhs,
                           llvm::function_ref<Place(int64_t, int64_t)> result) {
  assert(rows <= kBlock && columns <= kBlock && "more tiles than registers");
  SmallVector<Place> places;
  SmallVector<Value> sums;
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t n = 0; n < columns; ++n) {
      Place c = places.emplace_back(result(m, n));
      sums.push_back(accumulate ? load(resultType(), c.data, c.offset, c.stride)
                                : zero(resultType()));
    }
  for (int64_t k = 0; k < steps; ++k) {
    SmallVector<Value> a, bs;
    for (int64_t m = 0; m < rows; ++m) {
      Place place = lhs(m, k);
      a.push_back(load(operandType(), place.data, place.offset, place.stride));
    }
    for (int64_t n = 0; n < columns; ++n) {
      Place place = rhs(k, n);
      bs.push_back(load(operandType(), place.data, place.offset, place.stride));
    }
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t n = 0; n < columns; ++n)
        sums[m * columns + n] = multiply(a[m], bs[n], sums[m * columns + n]);
  }
  for (size_t i = 0; i < sums.size(); ++i)
    store(sums[i], places[i].data, places[i].offset, places[i].stride);
}

} // namespace attnc
