//===- PrimitiveKernels.cpp - attn primitives on buffers ------------------===//
//
// Every primitive becomes scf loops of memref loads and stores. Plain loops
// (rather than linalg) fix the loop order, which is what decides whether
// LLVM vectorises the inner loop; matrix products are register tiles (dot
// products LLVM vectorises along k, or explicit vector FMAs along n) in
// column panels that stay in cache. f16 and bf16 values are computed in f32
// and rounded once, when stored; bool is an i8 holding 0 or 1.
//
//===----------------------------------------------------------------------===//

#include "Codegen/PrimitiveKernels.h"

#include "Attn/IR/AttnOps.h"
#include "Attn/Transforms/IndexArith.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace attnc {

mlir::Type bufferElementType(mlir::Type tensorType) {
  mlir::Type element =
      mlir::cast<mlir::ShapedType>(tensorType).getElementType();
  if (element.isInteger(1))
    return mlir::IntegerType::get(element.getContext(), 8);
  return element;
}

namespace {

using namespace mlir;
namespace attn = mlir::attn;

[[noreturn]] void fail(Operation *op, const std::string &what) {
  throw std::logic_error(op->getName().getStringRef().str() + ": " + what);
}

int64_t rankOf(Value value) {
  return cast<ShapedType>(value.getType()).getRank();
}

bool isNarrowFloat(Type type) { return isa<Float16Type, BFloat16Type>(type); }

/// Builds loops, loads and stores at one insertion point; the builder's
/// insertion point ends after everything emitted.
class Emitter {
public:
  Emitter(OpBuilder &builder, Location loc) : b(builder), loc(loc) {}
  /// On a CUDA device: the op's outermost loop nest is spread over the
  /// grid's threads (DeviceThreads).
  Emitter(OpBuilder &builder, Location loc, const DeviceThreads &threads)
      : b(builder), loc(loc), threads(threads) {}

  bool onDevice() const { return threads.has_value(); }
  /// The grid's threads, on a device.
  const DeviceThreads &deviceThreads() const { return *threads; }

  Value index(int64_t value) {
    return b.create<arith::ConstantIndexOp>(loc, value);
  }

  /// One index value per dim of `buffer`: a constant where the size is
  /// static.
  SmallVector<Value> sizesOf(Value buffer) {
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      sizes.push_back(type.isDynamicDim(d)
                          ? b.create<memref::DimOp>(loc, buffer, d).getResult()
                          : index(type.getDimSize(d)));
    return sizes;
  }

  Value product(ArrayRef<Value> sizes) {
    Value result = index(1);
    for (Value size : sizes)
      result = b.createOrFold<arith::MulIOp>(loc, result, size);
    return result;
  }

  /// for (iv = lower; iv < upper; iv += step) body(iv).
  void loop(Value lower, Value upper, Value step,
            function_ref<void(Value)> body) {
    auto forOp = b.create<scf::ForOp>(loc, lower, upper, step);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forOp.getBody()->getTerminator());
    body(forOp.getInductionVar());
  }
  void loop(Value upper, function_ref<void(Value)> body) {
    loop(index(0), upper, index(1), body);
  }

  /// A loop carrying `init` through `body(iv, carried) -> next`; returns the
  /// final values.
  SmallVector<Value>
  reduce(Value lower, Value upper, Value step, ValueRange init,
         function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto forOp = b.create<scf::ForOp>(loc, lower, upper, step, init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(forOp.getBody());
      SmallVector<Value> next =
          body(forOp.getInductionVar(), forOp.getRegionIterArgs());
      b.create<scf::YieldOp>(loc, next);
    }
    return forOp.getResults();
  }

  /// Nested loops over `sizes` (outermost first); `body` gets one induction
  /// variable per size (none for rank 0). On a device the outermost nest is
  /// one loop over the flattened index by the grid's stride, each thread
  /// taking every count-th element from its own index, delinearised.
  void loopNest(ArrayRef<Value> sizes, function_ref<void(ValueRange)> body) {
    if (!threads || spread) {
      SmallVector<Value> ivs;
      return nest(sizes, ivs, body);
    }
    spreadNest(sizes, threads->index, threads->count, body);
  }

  /// loopNest over rows whose `body` walks a row from `lane` by `step`: on a
  /// device a warp per row by the grid's stride (its lanes by the warp's
  /// width), else every row in order from 0 by 1. acrossLanes() then meets
  /// the lanes' partial results.
  void rowNest(ArrayRef<Value> sizes,
               function_ref<void(ValueRange, Value, Value)> body) {
    if (!threads || spread) {
      Value lane = index(0), step = index(1);
      return loopNest(sizes, [&](ValueRange ivs) { body(ivs, lane, step); });
    }
    Value lanes = index(threads->lanes);
    Value warp = b.createOrFold<arith::DivUIOp>(loc, threads->index, lanes);
    Value warps = b.createOrFold<arith::DivUIOp>(loc, threads->count, lanes);
    Value lane = b.createOrFold<arith::RemUIOp>(loc, threads->index, lanes);
    spreadNest(sizes, warp, warps,
               [&](ValueRange ivs) { body(ivs, lane, lanes); });
  }
  /// `body` where `lane` is a warp's first, on a GPU; always elsewhere.
  void ifFirstLane(Value lane, function_ref<void()> body) {
    if (!threads || threads->lanes == 1)
      return body();
    auto first = b.create<scf::IfOp>(
        loc,
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane, index(0)),
        /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(first.thenBlock()->getTerminator());
    body();
  }
  /// `value` combined over a warp's lanes by a butterfly of shuffles (every
  /// lane gets the result); itself where a warp has one lane.
  Value acrossLanes(Value value, function_ref<Value(Value, Value)> combine) {
    int64_t lanes = threads ? threads->lanes : 1;
    for (int64_t offset = lanes / 2; offset >= 1; offset /= 2) {
      auto i32 = [&](int64_t v) -> Value {
        return b.create<arith::ConstantIntOp>(loc, v, 32);
      };
      value = combine(value, b.create<gpu::ShuffleOp>(loc, value, i32(offset),
                                                      i32(lanes),
                                                      gpu::ShuffleMode::XOR)
                                 .getShuffleResult());
    }
    return value;
  }

  Type storageType(Value buffer) {
    return cast<MemRefType>(buffer.getType()).getElementType();
  }
  /// The type arithmetic on `buffer`'s elements is done in.
  Type computeType(Value buffer) {
    Type storage = storageType(buffer);
    return isNarrowFloat(storage) ? b.getF32Type() : storage;
  }

  Value loadRaw(Value buffer, ValueRange indices) {
    return b.create<memref::LoadOp>(loc, buffer, indices);
  }
  /// Loads an element, widened to computeType.
  Value load(Value buffer, ValueRange indices) {
    Value value = loadRaw(buffer, indices);
    if (isNarrowFloat(value.getType()))
      value = b.create<arith::ExtFOp>(loc, b.getF32Type(), value);
    return value;
  }
  /// `width` consecutive elements along the last index, widened to f32.
  Value loadVector(Value buffer, ValueRange indices, int64_t width) {
    auto type = VectorType::get({width}, storageType(buffer));
    Value vector = b.create<vector::LoadOp>(loc, type, buffer, indices);
    if (isNarrowFloat(type.getElementType()))
      vector = b.create<arith::ExtFOp>(
          loc, VectorType::get({width}, b.getF32Type()), vector);
    return vector;
  }
  /// The transpose of a square block held as one vector per row (a power of
  /// two of them): log2(n) stages of two-input shuffles, each swapping
  /// blocks of s lanes between rows r and r + s.
  SmallVector<Value> transpose(ArrayRef<Value> rows) {
    int64_t n = rows.size();
    SmallVector<Value> block(rows);
    for (int64_t s = n / 2; s >= 1; s /= 2) {
      SmallVector<int64_t> first, second;
      for (int64_t l = 0; l < n; ++l) {
        first.push_back(l & s ? n + l - s : l);
        second.push_back(l & s ? n + l : l + s);
      }
      for (int64_t r = 0; r < n; ++r) {
        if (r & s)
          continue;
        Value a = block[r], c = block[r + s];
        block[r] = b.create<vector::ShuffleOp>(loc, a, c, first);
        block[r + s] = b.create<vector::ShuffleOp>(loc, a, c, second);
      }
    }
    return block;
  }
  /// Stores `value`, rounding it to the buffer's element type.
  void store(Value value, Value buffer, ValueRange indices) {
    Type storage = storageType(buffer);
    if (value.getType() != storage)
      value = b.create<arith::TruncFOp>(loc, storage, value);
    b.create<memref::StoreOp>(loc, value, buffer, indices);
  }

  /// The indices of `operand`'s element that numpy broadcasting pairs with
  /// the result element at `ivs` (right-aligned; a static 1 broadcasts).
  /// A dynamic dim is never broadcast: the graph only lets a run-time size
  /// meet the same size or a fixed 1.
  SmallVector<Value> broadcastIndices(Value operand, ValueRange ivs) {
    auto type = cast<MemRefType>(operand.getType());
    size_t offset = ivs.size() - type.getRank();
    SmallVector<Value> indices;
    for (int64_t d = 0; d < type.getRank(); ++d)
      indices.push_back(type.getDimSize(d) == 1 ? index(0) : ivs[offset + d]);
    return indices;
  }

  Value floatConstant(Type type, double value) {
    return b.create<arith::ConstantOp>(loc, type, b.getFloatAttr(type, value));
  }

  /// A memref over the same dense elements with the identity layout and
  /// `sizes` (C-order strides).
  Value view(Value buffer, ArrayRef<Value> sizes) {
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<int64_t> shape;
    SmallVector<OpFoldResult> sizeFolds, strideFolds(sizes.size());
    for (Value size : sizes) {
      std::optional<int64_t> constant = getConstantIntValue(size);
      shape.push_back(constant ? *constant : ShapedType::kDynamic);
      sizeFolds.push_back(constant ? OpFoldResult(b.getIndexAttr(*constant))
                                   : OpFoldResult(size));
    }
    Value stride = index(1);
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
      std::optional<int64_t> constant = getConstantIntValue(stride);
      strideFolds[d] = constant ? OpFoldResult(b.getIndexAttr(*constant))
                                : OpFoldResult(stride);
      stride = b.createOrFold<arith::MulIOp>(loc, stride, sizes[d]);
    }
    auto viewType = MemRefType::get(shape, type.getElementType());
    return b.create<memref::ReinterpretCastOp>(
        loc, viewType, buffer, b.getIndexAttr(0), sizeFolds, strideFolds);
  }

  OpBuilder &b;
  Location loc;

private:
  std::optional<DeviceThreads> threads;
  bool spread = false; ///< Inside the loop nest spread over the threads.

  /// One loop over the flattened `sizes` from `first` by `stride`, each
  /// index delinearised for `body`; nests inside it are plain loops.
  void spreadNest(ArrayRef<Value> sizes, Value first, Value stride,
                  function_ref<void(ValueRange)> body) {
    spread = true;
    loop(first, product(sizes), stride, [&](Value flat) {
      SmallVector<Value> ivs(sizes.size());
      for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
        ivs[d] = d ? b.create<arith::RemUIOp>(loc, flat, sizes[d]).getResult()
                   : flat;
        if (d)
          flat = b.create<arith::DivUIOp>(loc, flat, sizes[d]);
      }
      body(ivs);
    });
    spread = false;
  }

  void nest(ArrayRef<Value> sizes, SmallVector<Value> &ivs,
            function_ref<void(ValueRange)> body) {
    if (sizes.empty())
      return body(ivs);
    loop(sizes.front(), [&](Value iv) {
      ivs.push_back(iv);
      nest(sizes.drop_front(), ivs, body);
      ivs.pop_back();
    });
  }
};

//===----------------------------------------------------------------------===//
// Result sizes
//===----------------------------------------------------------------------===//

/// numpy broadcasting of several operands' sizes (right-aligned): the max
/// of the dims that are not a static 1.
SmallVector<Value> broadcastSizes(Emitter &e, ArrayRef<Value> operandValues,
                                  ArrayRef<SmallVector<Value>> operandSizes,
                                  int64_t rank) {
  SmallVector<Value> result;
  for (int64_t d = 0; d < rank; ++d) {
    Value size;
    for (auto [value, sizes] : llvm::zip(operandValues, operandSizes)) {
      int64_t operandRank = rankOf(value), od = d - (rank - operandRank);
      if (od < 0 || cast<ShapedType>(value.getType()).getDimSize(od) == 1)
        continue;
      size =
          size ? e.b.create<arith::MaxSIOp>(e.loc, size, sizes[od]) : sizes[od];
    }
    result.push_back(size ? size : e.index(1));
  }
  return result;
}

/// The sizes of `op`'s result 0 (the only one for every primitive), before
/// static dims are replaced by constants.
SmallVector<Value> primitiveResultSizes(Emitter &e, Operation *op,
                                        ArrayRef<SmallVector<Value>> operands) {
  auto resultType = cast<ShapedType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  if (auto matmul = dyn_cast<attn::MatmulOp>(op)) {
    SmallVector<Value> a = operands[0], b = operands[1];
    int64_t ra = a.size(), rb = b.size();
    // Batch dims are everything but the two matrix dims of each operand.
    int64_t batchA = std::max<int64_t>(ra - 2, 0),
            batchB = std::max<int64_t>(rb - 2, 0);
    int64_t batchRank = rank - (ra >= 2) - (rb >= 2);
    SmallVector<Value> sizes;
    for (int64_t d = 0; d < batchRank; ++d) {
      Value size;
      auto consider = [&](Value operand, ArrayRef<Value> operandSizes,
                          int64_t operandBatch) {
        int64_t od = d - (batchRank - operandBatch);
        if (od < 0 || cast<ShapedType>(operand.getType()).getDimSize(od) == 1)
          return;
        size = size ? e.b.create<arith::MaxSIOp>(e.loc, size, operandSizes[od])
                    : operandSizes[od];
      };
      consider(matmul.getLhs(), a, batchA);
      consider(matmul.getRhs(), b, batchB);
      sizes.push_back(size ? size : e.index(1));
    }
    if (ra >= 2)
      sizes.push_back(a[ra - 2]);
    if (rb >= 2)
      sizes.push_back(matmul.getTransposeB() ? b[rb - 2] : b[rb - 1]);
    return sizes;
  }
  if (isa<attn::LinearOp>(op)) {
    SmallVector<Value> sizes(operands[0].begin(), operands[0].end() - 1);
    sizes.push_back(operands[1][0]);
    return sizes;
  }
  if (isa<attn::AddOp, attn::SubOp, attn::MulOp, attn::DivOp>(op))
    return broadcastSizes(e, {op->getOperand(0), op->getOperand(1)},
                          operands.take_front(2), rank);
  if (isa<attn::ScaleOp, attn::TanhOp, attn::ExpOp, attn::NegOp, attn::SqrtOp,
          attn::CosOp, attn::SinOp, attn::SoftmaxOp, attn::MaskedFillOp,
          attn::CausalMaskOp, attn::WindowMaskOp>(op))
    return operands[0];
  if (auto slice = dyn_cast<attn::SliceOp>(op)) {
    SmallVector<Value> sizes = operands[0];
    sizes[slice.getAxis()] = e.index(slice.getEnd() - slice.getStart());
    return sizes;
  }
  if (auto reshape = dyn_cast<attn::ReshapeOp>(op)) {
    // Static dims become constants later; each dynamic one has its operand.
    SmallVector<Value> sizes;
    size_t next = 1;
    for (int64_t d = 0; d < rank; ++d)
      sizes.push_back(resultType.isDynamicDim(d) ? operands[next++][0]
                                                 : Value());
    return sizes;
  }
  if (auto transpose = dyn_cast<attn::TransposeOp>(op)) {
    SmallVector<Value> sizes;
    for (int64_t axis : transpose.getPermutation())
      sizes.push_back(operands[0][axis]);
    return sizes;
  }
  if (auto unsqueeze = dyn_cast<attn::UnsqueezeOp>(op)) {
    SmallVector<Value> sizes = operands[0];
    sizes.insert(sizes.begin() + unsqueeze.getAxis(), e.index(1));
    return sizes;
  }
  if (auto repeat = dyn_cast<attn::RepeatOp>(op)) {
    SmallVector<Value> sizes = operands[0];
    Value &size = sizes[repeat.getAxis()];
    size = e.b.create<arith::MulIOp>(e.loc, size, e.index(repeat.getTimes()));
    return sizes;
  }
  if (auto sum = dyn_cast<attn::ReduceSumOp>(op)) {
    SmallVector<Value> sizes = operands[0];
    if (sum.getKeepdims())
      sizes[sum.getAxis()] = e.index(1);
    else
      sizes.erase(sizes.begin() + sum.getAxis());
    return sizes;
  }
  if (auto concat = dyn_cast<attn::ConcatOp>(op)) {
    SmallVector<Value> sizes = operands[0];
    int64_t axis = concat.getAxis();
    for (const SmallVector<Value> &next : operands.drop_front())
      sizes[axis] = e.b.create<arith::AddIOp>(e.loc, sizes[axis], next[axis]);
    return sizes;
  }
  fail(op, "no result sizes for this op");
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

/// result[ivs] = compute(operands broadcast to ivs). With `widen`, floats
/// arrive as f32 and are rounded on store; without, values are the
/// buffers' own elements (for selects that must not round).
void emitElementwise(Emitter &e, ValueRange operands, Value result, bool widen,
                     function_ref<Value(ArrayRef<Value>)> compute) {
  e.loopNest(e.sizesOf(result), [&](ValueRange ivs) {
    SmallVector<Value> values;
    for (Value operand : operands) {
      SmallVector<Value> indices = e.broadcastIndices(operand, ivs);
      values.push_back(widen ? e.load(operand, indices)
                             : e.loadRaw(operand, indices));
    }
    e.store(compute(values), result, ivs);
  });
}

void emitBinary(Emitter &e, Operation *op, Value lhs, Value rhs, Value result) {
  bool isFloat = isa<FloatType>(e.computeType(result));
  if (!isFloat && !isa<IntegerType>(e.computeType(result)))
    fail(op, "unsupported element type");
  if (!isFloat && isa<attn::DivOp>(op))
    fail(op, "integer division is not supported");
  OpBuilder &b = e.b;
  Location loc = e.loc;
  emitElementwise(e, {lhs, rhs}, result, true, [&](ArrayRef<Value> v) -> Value {
    if (isa<attn::AddOp>(op))
      return isFloat ? b.create<arith::AddFOp>(loc, v[0], v[1]).getResult()
                     : b.create<arith::AddIOp>(loc, v[0], v[1]).getResult();
    if (isa<attn::SubOp>(op))
      return isFloat ? b.create<arith::SubFOp>(loc, v[0], v[1]).getResult()
                     : b.create<arith::SubIOp>(loc, v[0], v[1]).getResult();
    if (isa<attn::MulOp>(op))
      return isFloat ? b.create<arith::MulFOp>(loc, v[0], v[1]).getResult()
                     : b.create<arith::MulIOp>(loc, v[0], v[1]).getResult();
    return b.create<arith::DivFOp>(loc, v[0], v[1]);
  });
}

void emitUnary(Emitter &e, Operation *op, Value input, Value result) {
  Type type = e.computeType(result);
  bool isFloat = isa<FloatType>(type);
  if (!isFloat && !(isa<attn::NegOp>(op) && isa<IntegerType>(type)))
    fail(op, "unsupported element type");
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value zero = isFloat ? Value() : b.create<arith::ConstantIntOp>(loc, 0, type);
  Value factor;
  if (auto scale = dyn_cast<attn::ScaleOp>(op))
    factor = e.floatConstant(type, scale.getValue().convertToDouble());
  emitElementwise(e, {input}, result, true, [&](ArrayRef<Value> v) -> Value {
    if (isa<attn::ScaleOp>(op))
      return b.create<arith::MulFOp>(loc, v[0], factor);
    if (isa<attn::TanhOp>(op))
      return b.create<math::TanhOp>(loc, v[0]);
    if (isa<attn::ExpOp>(op))
      return b.create<math::ExpOp>(loc, v[0]);
    if (isa<attn::SqrtOp>(op))
      return b.create<math::SqrtOp>(loc, v[0]);
    if (isa<attn::CosOp>(op))
      return b.create<math::CosOp>(loc, v[0]);
    if (isa<attn::SinOp>(op))
      return b.create<math::SinOp>(loc, v[0]);
    return isFloat ? b.create<arith::NegFOp>(loc, v[0]).getResult()
                   : b.create<arith::SubIOp>(loc, zero, v[0]).getResult();
  });
}

void emitMaskedFill(Emitter &e, attn::MaskedFillOp op, Value input, Value mask,
                    Value result) {
  // Selected in the element type itself, so `value` is rounded once.
  Value fill =
      e.floatConstant(e.storageType(result), op.getValue().convertToDouble());
  Value zero = e.b.create<arith::ConstantIntOp>(e.loc, 0, e.storageType(mask));
  emitElementwise(e, {input, mask}, result, false, [&](ArrayRef<Value> v) {
    Value set =
        e.b.create<arith::CmpIOp>(e.loc, arith::CmpIPredicate::ne, v[1], zero);
    return e.b.create<arith::SelectOp>(e.loc, set, fill, v[0]).getResult();
  });
}

void emitCausalMask(Emitter &e, Value input, Value result) {
  SmallVector<Value> sizes = e.sizesOf(result);
  size_t rank = sizes.size();
  // Query i sits at key position i + T - S (bottom-right alignment).
  Value shift =
      e.b.create<arith::SubIOp>(e.loc, sizes[rank - 1], sizes[rank - 2]);
  Value negInf = e.floatConstant(e.storageType(result),
                                 -std::numeric_limits<double>::infinity());
  e.loopNest(sizes, [&](ValueRange ivs) {
    Value position = e.b.create<arith::AddIOp>(e.loc, ivs[rank - 2], shift);
    Value future = e.b.create<arith::CmpIOp>(e.loc, arith::CmpIPredicate::sgt,
                                             ivs[rank - 1], position);
    Value value = e.loadRaw(input, ivs);
    e.store(e.b.create<arith::SelectOp>(e.loc, future, negInf, value), result,
            ivs);
  });
}

/// Keys outside i' - left <= j <= i' + right become -inf: the window rule
/// of AttnSemantics.h at each element's indices.
void emitWindowMask(Emitter &e, attn::WindowMaskOp op, Value input,
                    Value result) {
  namespace semantics = attn::semantics;
  SmallVector<Value> sizes = e.sizesOf(result);
  size_t rank = sizes.size();
  semantics::KeyVisibility window;
  window.addWindow(op.getLeft(), op.getRight());
  Value negInf = e.floatConstant(e.storageType(result),
                                 -std::numeric_limits<double>::infinity());
  e.loopNest(sizes, [&](ValueRange ivs) {
    attn::IndexArith a{e.b, e.loc};
    Value queryLen = sizes[rank - 2], keyLen = sizes[rank - 1];
    Value position =
        semantics::alignedPosition(a, ivs[rank - 2], queryLen, keyLen);
    Value keep =
        semantics::keyVisible(a, window, position, ivs[rank - 1], keyLen);
    Value value = e.loadRaw(input, ivs);
    e.store(e.b.create<arith::SelectOp>(e.loc, keep, value, negInf), result,
            ivs);
  });
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// Reassociation lets LLVM vectorise a reduction (a row's max or sum, a dot
/// product); contraction makes each step of a dot product an FMA.
arith::FastMathFlagsAttr reassociate(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(b.getContext(),
                                       arith::FastMathFlags::reassoc |
                                           arith::FastMathFlags::contract);
}

/// Indices of `ivs` (all dims but `axis`) with `at` inserted at `axis`.
SmallVector<Value> withAxis(ValueRange ivs, int64_t axis, Value at) {
  SmallVector<Value> indices(ivs.begin(), ivs.end());
  indices.insert(indices.begin() + axis, at);
  return indices;
}

void emitSoftmax(Emitter &e, int64_t axis, Value input, Value result) {
  SmallVector<Value> sizes = e.sizesOf(input);
  Value extent = sizes[axis];
  sizes.erase(sizes.begin() + axis);
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Type f32 = b.getF32Type();
  Value zero = e.floatConstant(f32, 0.0),
        negInf = e.floatConstant(f32, -std::numeric_limits<double>::infinity());
  // On a GPU a warp per row, its lanes along the axis.
  e.rowNest(sizes, [&](ValueRange ivs, Value lane, Value step) {
    Value max =
        e.reduce(lane, extent, step, {negInf},
                 [&](Value a, ValueRange carried) -> SmallVector<Value> {
                   Value x = e.load(input, withAxis(ivs, axis, a));
                   return {b.create<arith::MaximumFOp>(loc, carried[0], x,
                                                       reassociate(b))};
                 })[0];
    max = e.acrossLanes(max, [&](Value x, Value y) {
      return b.create<arith::MaximumFOp>(loc, x, y).getResult();
    });
    // An all -inf slice is all zeros (project decision h): subtract 0
    // instead of -inf, so no NaN appears, and zero it when storing.
    Value allMasked =
        b.create<arith::CmpFOp>(loc, arith::CmpFPredicate::OEQ, max, negInf);
    Value shift = b.create<arith::SelectOp>(loc, allMasked, zero, max);
    auto exponential = [&](Value a) {
      Value x = e.load(input, withAxis(ivs, axis, a));
      return b.create<math::ExpOp>(loc, b.create<arith::SubFOp>(loc, x, shift))
          .getResult();
    };
    Value sum =
        e.reduce(lane, extent, step, {zero},
                 [&](Value a, ValueRange carried) -> SmallVector<Value> {
                   return {b.create<arith::AddFOp>(
                       loc, carried[0], exponential(a), reassociate(b))};
                 })[0];
    sum = e.acrossLanes(sum, [&](Value x, Value y) {
      return b.create<arith::AddFOp>(loc, x, y).getResult();
    });
    // One division a row, not one an element.
    Value inverse =
        b.create<arith::DivFOp>(loc, e.floatConstant(f32, 1.0), sum);
    e.loop(lane, extent, step, [&](Value a) {
      Value p = b.create<arith::MulFOp>(loc, exponential(a), inverse);
      e.store(b.create<arith::SelectOp>(loc, allMasked, zero, p), result,
              withAxis(ivs, axis, a));
    });
  });
}

/// Whether a reduce_sum's sums are a warp's each on a GPU: those computed in
/// 32 bits, which a shuffle moves.
bool reduceSumByWarps(attn::ReduceSumOp op) {
  Type element = getElementTypeOrSelf(op.getInput().getType());
  return element.isF32() || element.isF16() || element.isBF16() ||
         element.isInteger(32);
}

void emitReduceSum(Emitter &e, attn::ReduceSumOp op, Value input,
                   Value result) {
  Type type = e.computeType(input);
  bool isFloat = isa<FloatType>(type);
  if (!isFloat && !isa<IntegerType>(type))
    fail(op, "unsupported element type");
  int64_t axis = op.getAxis();
  SmallVector<Value> sizes = e.sizesOf(input);
  Value extent = sizes[axis];
  sizes.erase(sizes.begin() + axis);
  Value zero = isFloat ? e.floatConstant(type, 0.0)
                       : e.b.create<arith::ConstantIntOp>(e.loc, 0, type);
  Value c0 = e.index(0);
  auto add = [&](Value x, Value y) -> Value {
    return isFloat ? e.b.create<arith::AddFOp>(e.loc, x, y, reassociate(e.b))
                         .getResult()
                   : e.b.create<arith::AddIOp>(e.loc, x, y).getResult();
  };
  // On a GPU a warp per sum, its lanes along the axis (shuffles move 32
  // bits), else a thread per sum.
  auto body = [&](ValueRange ivs, Value lane, Value step) {
    Value sum = e.reduce(
        lane, extent, step, {zero},
        [&](Value a, ValueRange carried) -> SmallVector<Value> {
          return {add(carried[0], e.load(input, withAxis(ivs, axis, a)))};
        })[0];
    sum = e.acrossLanes(sum, add);
    e.ifFirstLane(lane, [&] {
      e.store(sum, result,
              op.getKeepdims() ? withAxis(ivs, axis, c0)
                               : SmallVector<Value>(ivs.begin(), ivs.end()));
    });
  };
  if (reduceSumByWarps(op))
    return e.rowNest(sizes, body);
  Value c1 = e.index(1);
  e.loopNest(sizes, [&](ValueRange ivs) { body(ivs, c0, c1); });
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Same elements in the same order (reshape, unsqueeze): one memcpy.
void emitDenseCopy(Emitter &e, Value input, Value result) {
  Value count = e.product(e.sizesOf(result));
  Value from = e.view(input, {count}), to = e.view(result, {count});
  if (!e.onDevice()) {
    e.b.create<memref::CopyOp>(e.loc, from, to);
    return;
  }
  // memref.copy would be a library call (or one thread's memcpy).
  e.loopNest({count},
             [&](ValueRange ivs) { e.store(e.loadRaw(from, ivs), to, ivs); });
}

void emitTranspose(Emitter &e, attn::TransposeOp op, Value input,
                   Value result) {
  ArrayRef<int64_t> permutation = op.getPermutation();
  e.loopNest(e.sizesOf(result), [&](ValueRange ivs) {
    SmallVector<Value> source(ivs.size());
    for (size_t d = 0; d < ivs.size(); ++d)
      source[permutation[d]] = ivs[d];
    e.store(e.loadRaw(input, source), result, ivs);
  });
}

/// result[.., i, ..] = input[.., source(i), ..] along `axis`.
void emitCopyAlong(Emitter &e, int64_t axis, Value input, Value result,
                   function_ref<Value(Value)> source) {
  e.loopNest(e.sizesOf(result), [&](ValueRange ivs) {
    SmallVector<Value> from(ivs.begin(), ivs.end());
    from[axis] = source(ivs[axis]);
    e.store(e.loadRaw(input, from), result, ivs);
  });
}

void emitRepeat(Emitter &e, attn::RepeatOp op, Value input, Value result) {
  Value times = e.index(op.getTimes());
  // Input slice a becomes result slices a·times ... a·times + times - 1.
  emitCopyAlong(e, op.getAxis(), input, result, [&](Value i) -> Value {
    return e.b.create<arith::DivUIOp>(e.loc, i, times);
  });
}

void emitSlice(Emitter &e, attn::SliceOp op, Value input, Value result) {
  Value start = e.index(op.getStart());
  emitCopyAlong(e, op.getAxis(), input, result, [&](Value i) -> Value {
    return e.b.create<arith::AddIOp>(e.loc, i, start);
  });
}

void emitConcat(Emitter &e, attn::ConcatOp op, ValueRange inputs,
                Value result) {
  int64_t axis = op.getAxis();
  Value start = e.index(0);
  for (Value input : inputs) {
    SmallVector<Value> sizes = e.sizesOf(input);
    e.loopNest(sizes, [&](ValueRange ivs) {
      SmallVector<Value> target(ivs.begin(), ivs.end());
      target[axis] = e.b.create<arith::AddIOp>(e.loc, ivs[axis], start);
      e.store(e.loadRaw(input, ivs), result, target);
    });
    start = e.b.create<arith::AddIOp>(e.loc, start, sizes[axis]);
  }
}

//===----------------------------------------------------------------------===//
// Products
//===----------------------------------------------------------------------===//

/// Where a product reads or writes a matrix: element (r, c) of A (i, k),
/// B (k, j) or C (i, j) lies at `indices(r, c)` of `buffer`, whose last dim
/// is contiguous.
using ValueVec = SmallVector<Value>;
struct MatrixView {
  Value buffer;
  std::function<ValueVec(Value, Value)> indices;
};

/// One matrix product C = A·B (+ bias[j] when there is a bias), M x N with
/// depth K, over views of its operands (which the packed GEMM reads), and
/// the register tiles' accessors gemmOver() derives from them: a(i, k) and
/// b(k, j) give f32 values, bVector(k, j) the f32 vector b(k, j ..
/// j + kLanes) (only for a B laid out [K, N]), store(i, j, sum) writes C.
struct Gemm {
  Value rows, cols, depth; // M, N, K
  MatrixView aView, bView, cView;
  Value bias;
  std::function<Value(Value, Value)> a, b, bVector;
  std::function<void(Value, Value, Value)> store;
};

/// Lanes of the explicit vectors: 8 f32 fill an AVX2 register, and LLVM
/// prefers 256-bit vectors on AVX-512 CPUs too.
constexpr int64_t kLanes = 8;

Gemm gemmOver(Emitter &e, Value rows, Value cols, Value depth, MatrixView a,
              MatrixView b, MatrixView c, Value bias = Value()) {
  Gemm gemm{rows, cols, depth, a, b, c, bias};
  gemm.a = [&e, a](Value i, Value k) {
    return e.load(a.buffer, a.indices(i, k));
  };
  gemm.b = [&e, b](Value k, Value j) {
    return e.load(b.buffer, b.indices(k, j));
  };
  gemm.bVector = [&e, b](Value k, Value j) {
    return e.loadVector(b.buffer, b.indices(k, j), kLanes);
  };
  gemm.store = [&e, c, bias](Value i, Value j, Value sum) {
    if (bias)
      sum = e.b.create<arith::AddFOp>(e.loc, sum, e.load(bias, {j}));
    e.store(sum, c.buffer, c.indices(i, j));
  };
  return gemm;
}
/// Rows of C one register tile covers.
constexpr int64_t kTileRows = 4;

SmallVector<Value> offsets(Emitter &e, Value base, int64_t count) {
  SmallVector<Value> values;
  for (int64_t n = 0; n < count; ++n)
    values.push_back(
        n ? e.b.create<arith::AddIOp>(e.loc, base, e.index(n)).getResult()
          : base);
  return values;
}

/// The sums over k = first, first + step, ... < K of a(row, k)·b(k, col)
/// for every row and column of a register tile, row-major.
SmallVector<Value> tileSums(Emitter &e, const Gemm &gemm, ArrayRef<Value> rows,
                            ArrayRef<Value> cols, Value first, Value step) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  SmallVector<Value> init(rows.size() * cols.size(),
                          e.floatConstant(b.getF32Type(), 0.0));
  auto flags = reassociate(b);
  return e.reduce(
      first, gemm.depth, step, init, [&](Value k, ValueRange carried) {
        SmallVector<Value> as, bs, next;
        for (Value row : rows)
          as.push_back(gemm.a(row, k));
        for (Value col : cols)
          bs.push_back(gemm.b(k, col));
        for (size_t r = 0; r < rows.size(); ++r)
          for (size_t c = 0; c < cols.size(); ++c) {
            Value product = b.create<arith::MulFOp>(loc, as[r], bs[c], flags);
            next.push_back(b.create<arith::AddFOp>(
                loc, carried[r * cols.size() + c], product, flags));
          }
        return next;
      });
}

/// C[i0 .. i0+tileRows, j0 .. j0+tileCols] as dot products over k, with
/// every accumulator in a register. For a B read along k, LLVM vectorises
/// the k loop (reassociated) into a register tile.
void emitDotTile(Emitter &e, const Gemm &gemm, Value i0, int64_t tileRows,
                 Value j0, int64_t tileCols) {
  SmallVector<Value> rows = offsets(e, i0, tileRows),
                     cols = offsets(e, j0, tileCols);
  SmallVector<Value> sums =
      tileSums(e, gemm, rows, cols, e.index(0), e.index(1));
  for (int64_t r = 0; r < tileRows; ++r)
    for (int64_t c = 0; c < tileCols; ++c)
      gemm.store(rows[r], cols[c], sums[r * tileCols + c]);
}

/// C[i0 .. i0+tileRows, j0 .. j0+2·kLanes] for a B laid out [K, N]: per k,
/// two vectors of B row k and one broadcast A element per row feed
/// 2·tileRows vector FMAs into accumulators held in registers.
void emitVectorTile(Emitter &e, const Gemm &gemm, Value i0, int64_t tileRows,
                    Value j0) {
  constexpr int64_t vectors = 2;
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  SmallVector<Value> rows = offsets(e, i0, tileRows), starts;
  for (int64_t v = 0; v < vectors; ++v)
    starts.push_back(
        v ? b.create<arith::AddIOp>(loc, j0, e.index(v * kLanes)).getResult()
          : j0);
  Value zero = b.create<arith::ConstantOp>(
      loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
  SmallVector<Value> init(tileRows * vectors, zero);
  SmallVector<Value> sums =
      e.reduce(e.index(0), gemm.depth, e.index(1), init,
               [&](Value k, ValueRange carried) {
                 SmallVector<Value> bs, next;
                 for (Value start : starts)
                   bs.push_back(gemm.bVector(k, start));
                 for (int64_t r = 0; r < tileRows; ++r) {
                   Value a = b.create<vector::BroadcastOp>(loc, vectorType,
                                                           gemm.a(rows[r], k));
                   for (int64_t v = 0; v < vectors; ++v)
                     next.push_back(b.create<vector::FMAOp>(
                         loc, a, bs[v], carried[r * vectors + v]));
                 }
                 return next;
               });
  for (int64_t r = 0; r < tileRows; ++r)
    for (int64_t v = 0; v < vectors; ++v)
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        Value sum =
            b.create<vector::ExtractOp>(loc, sums[r * vectors + v], lane);
        Value col = b.create<arith::AddIOp>(loc, starts[v], e.index(lane));
        gemm.store(rows[r], col, sum);
      }
}

/// Covers C with tiles of kTileRows x tileCols (`tile`), rows left over
/// with 1-row tiles, and columns left over one at a time (`column`).
/// Column panels of `panelCols` are outermost, so the panel of B a tile
/// reads stays in cache while every row of A passes over it.
void emitTiles(Emitter &e, const Gemm &gemm, int64_t tileCols,
               int64_t panelCols,
               function_ref<void(Value, int64_t, Value)> tile,
               function_ref<void(Value, int64_t, Value)> column) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  auto roundDown = [&](Value size, int64_t multiple) {
    return b.create<arith::SubIOp>(
        loc, size, b.create<arith::RemUIOp>(loc, size, e.index(multiple)));
  };
  Value fullRows = roundDown(gemm.rows, kTileRows),
        fullCols = roundDown(gemm.cols, tileCols);
  Value c0 = e.index(0), c1 = e.index(1), step = e.index(tileCols);
  e.loop(c0, fullCols, e.index(panelCols), [&](Value panel) {
    Value end = b.create<arith::MinSIOp>(
        loc, fullCols, b.create<arith::AddIOp>(loc, panel, e.index(panelCols)));
    e.loop(c0, fullRows, e.index(kTileRows), [&](Value i0) {
      e.loop(panel, end, step, [&](Value j0) { tile(i0, kTileRows, j0); });
    });
    e.loop(fullRows, gemm.rows, c1, [&](Value i) {
      e.loop(panel, end, step, [&](Value j0) { tile(i, 1, j0); });
    });
  });
  e.loop(fullCols, gemm.cols, c1, [&](Value j) {
    e.loop(c0, fullRows, e.index(kTileRows),
           [&](Value i0) { column(i0, kTileRows, j); });
    e.loop(fullRows, gemm.rows, c1, [&](Value i) { column(i, 1, j); });
  });
}

/// The product for a B read along k (transpose_b, linear's weight, a
/// vector): 4 x 4 tiles of dot products; 64 rows of B per panel.
void emitDotGemm(Emitter &e, const Gemm &gemm) {
  constexpr int64_t tileCols = 4;
  emitTiles(
      e, gemm, tileCols, /*panelCols=*/64,
      [&](Value i0, int64_t rows, Value j0) {
        emitDotTile(e, gemm, i0, rows, j0, tileCols);
      },
      [&](Value i0, int64_t rows, Value j) {
        emitDotTile(e, gemm, i0, rows, j, 1);
      });
}

/// The product for a B laid out [K, N]: vector tiles of 2·kLanes columns
/// (128 columns of B per panel), the last columns as dot products.
void emitVectorGemm(Emitter &e, const Gemm &gemm) {
  emitTiles(
      e, gemm, 2 * kLanes, /*panelCols=*/128,
      [&](Value i0, int64_t rows, Value j0) {
        emitVectorTile(e, gemm, i0, rows, j0);
      },
      [&](Value i0, int64_t rows, Value j) {
        emitDotTile(e, gemm, i0, rows, j, 1);
      });
}

/// Packed GEMM of `linear` and `matmul`, in vectors of the target's width
/// (`lanes`): columns of C in panels of two vectors; per panel and block of
/// kDepthBlock depths, B's columns are packed k-major into `packed` (two
/// vectors per k, read in order), then register tiles of kPackedRows rows x
/// the panel: per k two vector loads, one broadcast per row and
/// 2·kPackedRows FMAs into accumulators in registers (12 of them cover the
/// FMA latency on every x86 core; 8 only just do).
constexpr int64_t kPackedRows = 6;
/// Rows of A the packed GEMM takes at a time, every panel passing over
/// them while they stay in L2 (192 x 256 depths: 192 KB); a multiple of
/// kPackedRows. Each block packs all of B again: at Llama-3's K = 4096, 96
/// rows a block made 1-thread projections 7-20% slower (Zen 5, 2026-12-02).
constexpr int64_t kPackedBlockRows = 192;
/// The fewest rows rowTasks() gives a task (on many threads): fewer pack
/// B for too few rows each.
constexpr int64_t kMinRowsPerTask = 48;
constexpr int64_t kDepthBlock = 256;
/// Columns of a packed panel: two vectors of `lanes`.
constexpr int64_t packedPanelCols(int64_t lanes) { return 2 * lanes; }
/// Rows below which a task's product takes dot products instead (Llama's
/// 4096 x 4096 on Zen 3: dot 2.9 / 4.1 / 7.8 / 14.6 ms at 1 / 4 / 8 / 16
/// rows, packed 6.8 / 8.4 / 10.5 / 13.5).
constexpr int64_t kPackedMinRows = 16;

/// `gemm` by the packed GEMM (the columns past the last whole panel by its
/// dot products); with `bAlongK` B's memory runs along k (linear's W [N,
/// K], a transposed matmul operand), else along j.
void emitPackedGemm(Emitter &e, const Gemm &gemm, bool bAlongK, Value packed,
                    int64_t lanes) {
  const MatrixView &a = gemm.aView, &bMatrix = gemm.bView, &c = gemm.cView;
  Value bias = gemm.bias;
  int64_t panelCols = packedPanelCols(lanes);
  OpBuilder &b = e.b;
  Value rows = gemm.rows, cols = gemm.cols, depth = gemm.depth;
  Location loc = e.loc;
  auto vectorType = VectorType::get({lanes}, b.getF32Type());
  auto add = [&](Value x, Value y) {
    return b.create<arith::AddIOp>(loc, x, y).getResult();
  };
  auto addConst = [&](Value x, int64_t y) { return add(x, e.index(y)); };
  auto roundDown = [&](Value size, int64_t multiple) {
    return b
        .create<arith::SubIOp>(
            loc, size, b.create<arith::RemUIOp>(loc, size, e.index(multiple)))
        .getResult();
  };
  bool vectorResult = e.storageType(c.buffer).isF32();
  Value zero = b.create<arith::ConstantOp>(
      loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f));

  // C[i .. i+tileRows][j0 .. j0+panelCols] += X[i..][k0 .. k0+kc] · panel.
  auto tile = [&](Value i0, int64_t tileRows, Value j0, Value k0, Value kc,
                  Value firstBlock, Value lastBlock) {
    SmallVector<Value> rowIndex;
    for (int64_t r = 0; r < tileRows; ++r)
      rowIndex.push_back(addConst(i0, r));
    auto columnOf = [&](int64_t v) { return addConst(j0, v * lanes); };
    auto loadC = [&](Value row, int64_t v) -> Value {
      if (vectorResult)
        return b.create<vector::LoadOp>(loc, vectorType, c.buffer,
                                        c.indices(row, columnOf(v)));
      Value vector = zero;
      for (int64_t lane = 0; lane < lanes; ++lane)
        vector = b.create<vector::InsertOp>(
            loc, e.load(c.buffer, c.indices(row, addConst(columnOf(v), lane))),
            vector, lane);
      return vector;
    };
    // The first depth block starts from 0, later ones from C.
    SmallVector<Type> types(tileRows * 2, vectorType);
    auto start = b.create<scf::IfOp>(loc, types, firstBlock,
                                     /*addThenBlock=*/true,
                                     /*addElseBlock=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(start.thenBlock());
      b.create<scf::YieldOp>(loc, SmallVector<Value>(tileRows * 2, zero));
      b.setInsertionPointToStart(start.elseBlock());
      SmallVector<Value> loaded;
      for (Value row : rowIndex)
        for (int64_t v = 0; v < 2; ++v)
          loaded.push_back(loadC(row, v));
      b.create<scf::YieldOp>(loc, loaded);
    }
    SmallVector<Value> sums = e.reduce(
        e.index(0), kc, e.index(1), start.getResults(),
        [&](Value k, ValueRange carried) {
          Value at = b.create<arith::MulIOp>(loc, k, e.index(panelCols));
          Value b0 = b.create<vector::LoadOp>(loc, vectorType, packed, at);
          Value b1 = b.create<vector::LoadOp>(loc, vectorType, packed,
                                              addConst(at, lanes));
          SmallVector<Value> next;
          for (int64_t r = 0; r < tileRows; ++r) {
            Value x = b.create<vector::BroadcastOp>(
                loc, vectorType,
                e.load(a.buffer, a.indices(rowIndex[r], add(k0, k))));
            next.push_back(b.create<vector::FMAOp>(loc, x, b0, carried[2 * r]));
            next.push_back(
                b.create<vector::FMAOp>(loc, x, b1, carried[2 * r + 1]));
          }
          return next;
        });
    // After the last depth block: + bias, then C.
    SmallVector<Value> biasVectors;
    for (int64_t v = 0; v < 2; ++v) {
      Value vector = zero;
      if (bias)
        for (int64_t lane = 0; lane < lanes; ++lane)
          vector = b.create<vector::InsertOp>(
              loc, e.load(bias, {addConst(columnOf(v), lane)}), vector, lane);
      biasVectors.push_back(
          b.create<arith::SelectOp>(loc, lastBlock, vector, zero));
    }
    for (int64_t r = 0; r < tileRows; ++r)
      for (int64_t v = 0; v < 2; ++v) {
        Value sum =
            b.create<arith::AddFOp>(loc, sums[2 * r + v], biasVectors[v]);
        if (vectorResult) {
          b.create<vector::StoreOp>(loc, sum, c.buffer,
                                    c.indices(rowIndex[r], columnOf(v)));
          continue;
        }
        for (int64_t lane = 0; lane < lanes; ++lane)
          e.store(b.create<vector::ExtractOp>(loc, sum, lane), c.buffer,
                  c.indices(rowIndex[r], addConst(columnOf(v), lane)));
      }
  };

  Value fullCols = roundDown(cols, panelCols);
  // Blocks of kPackedBlockRows rows, each under every panel in turn.
  e.loop(e.index(0), rows, e.index(kPackedBlockRows), [&](Value r0) {
    Value blockEnd =
        b.create<arith::MinSIOp>(loc, rows, addConst(r0, kPackedBlockRows));
    Value fullRows = add(
        r0, roundDown(b.create<arith::SubIOp>(loc, blockEnd, r0), kPackedRows));
    // Rows past the 6-row tiles: one 3-row tile when 3 or more are left.
    Value threeRows =
        roundDown(b.create<arith::SubIOp>(loc, blockEnd, fullRows), 3);
    Value tripleEnd = add(fullRows, threeRows);
    e.loop(e.index(0), fullCols, e.index(panelCols), [&](Value j0) {
      e.loop(e.index(0), depth, e.index(kDepthBlock), [&](Value k0) {
        Value kc = b.create<arith::MinSIOp>(
            loc, e.index(kDepthBlock), b.create<arith::SubIOp>(loc, depth, k0));
        // packed[k][c] = B(k0 + k, j0 + c). Along j: two vectors a k. Along
        // k: `lanes` depths of each column read as a vector, two lanes x lanes
        // transposes, whole rows of the panel stored; the last kc % lanes
        // depths one by one.
        auto packedAt = [&](Value k, int64_t column) {
          return addConst(b.create<arith::MulIOp>(loc, k, e.index(panelCols)),
                          column);
        };
        if (!bAlongK) {
          e.loop(e.index(0), kc, e.index(1), [&](Value k) {
            for (int64_t half = 0; half < panelCols / lanes; ++half)
              b.create<vector::StoreOp>(
                  loc,
                  e.loadVector(
                      bMatrix.buffer,
                      bMatrix.indices(add(k0, k), addConst(j0, half * lanes)),
                      lanes),
                  packed, packedAt(k, half * lanes));
          });
        } else {
          Value kcVectors = roundDown(kc, lanes);
          e.loop(e.index(0), kcVectors, e.index(lanes), [&](Value k) {
            for (int64_t half = 0; half < panelCols / lanes; ++half) {
              SmallVector<Value> block;
              for (int64_t col = 0; col < lanes; ++col)
                block.push_back(e.loadVector(
                    bMatrix.buffer,
                    bMatrix.indices(add(k0, k),
                                    addConst(j0, half * lanes + col)),
                    lanes));
              block = e.transpose(block);
              for (int64_t d = 0; d < lanes; ++d)
                b.create<vector::StoreOp>(
                    loc, block[d], packed,
                    packedAt(addConst(k, d), half * lanes));
            }
          });
          for (int64_t col = 0; col < panelCols; ++col)
            e.loop(kcVectors, kc, e.index(1), [&](Value k) {
              Value x = e.load(bMatrix.buffer,
                               bMatrix.indices(add(k0, k), addConst(j0, col)));
              b.create<memref::StoreOp>(loc, x, packed, packedAt(k, col));
            });
        }
        Value firstBlock = b.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::eq, k0, e.index(0));
        Value lastBlock = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                                  add(k0, kc), depth);
        e.loop(r0, fullRows, e.index(kPackedRows), [&](Value i0) {
          tile(i0, kPackedRows, j0, k0, kc, firstBlock, lastBlock);
        });
        e.loop(fullRows, tripleEnd, e.index(3), [&](Value i0) {
          tile(i0, 3, j0, k0, kc, firstBlock, lastBlock);
        });
        e.loop(tripleEnd, blockEnd, e.index(1),
               [&](Value i) { tile(i, 1, j0, k0, kc, firstBlock, lastBlock); });
      });
    });
  });

  // Columns past the last whole panel: dot products over k.
  e.loop(fullCols, cols, e.index(1), [&](Value j) {
    e.loop(e.index(0), roundDown(rows, kTileRows), e.index(kTileRows),
           [&](Value i0) { emitDotTile(e, gemm, i0, kTileRows, j, 1); });
    e.loop(roundDown(rows, kTileRows), rows, e.index(1),
           [&](Value i) { emitDotTile(e, gemm, i, 1, j, 1); });
  });
}

/// Rows and columns of C one warp's tile covers on a GPU.
constexpr int64_t kWarpTile = 4;

/// A matmul's form: numpy makes a 1-D left operand a row [1, K] and a 1-D
/// right one a column [K, 1], the added dim absent from the result; B is
/// read along k when transposed or a column.
struct MatmulForm {
  bool hasRows, hasCols, readsAlongK;
  int64_t batchRank; ///< Of the result.
};
MatmulForm matmulForm(attn::MatmulOp op) {
  bool hasRows = rankOf(op.getLhs()) >= 2, hasCols = rankOf(op.getRhs()) >= 2;
  return {hasRows, hasCols, op.getTransposeB() || !hasCols,
          rankOf(op.getResult()) - hasRows - hasCols};
}

/// Tiles of kWarpTile over `n` rows or columns, (n + 3) / 4:
/// convert-gpu-to-nvvm has no pattern for arith.ceildivui.
Value warpTiles(Emitter &e, Value n) {
  return e.b.create<arith::DivUIOp>(
      e.loc, e.b.create<arith::AddIOp>(e.loc, n, e.index(kWarpTile - 1)),
      e.index(kWarpTile));
}

/// Hands `emit` the Gemm of rows [first, first + count) of product `batch`.
using TileGemm = function_ref<void(Value batch, Value first, Value count,
                                   function_ref<void(const Gemm &)> emit)>;

/// On a device, `batches` products of rows x cols whose A and B are both
/// read along k (linear's W, a transposed or 1-D right operand): C in tiles
/// of kWarpTile x kWarpTile, a warp a tile by the grid's stride, its lanes
/// over k, so that on a GPU each load of A's or B's rows is one coalesced
/// line where a thread per element of C reads 32 rows apart; each of the
/// 16 sums then meets in a butterfly of shuffles and lane 0 stores them.
/// With warps of one lane (CPU tasks) the same tiles, edges and stores run
/// without shuffles.
void emitWarpGemm(Emitter &e, Value batches, Value rows, Value cols,
                  TileGemm tileGemm) {
  OpBuilder &b = e.b;
  Location loc = e.loc;
  const DeviceThreads &threads = e.deviceThreads();
  Value lanes = e.index(threads.lanes), tile = e.index(kWarpTile);
  Value warp = b.create<arith::DivUIOp>(loc, threads.index, lanes);
  Value warps = b.create<arith::DivUIOp>(loc, threads.count, lanes);
  Value lane = b.create<arith::RemUIOp>(loc, threads.index, lanes);
  Value rowTiles = warpTiles(e, rows), colTiles = warpTiles(e, cols);
  Value tiles = e.product({batches, rowTiles, colTiles});
  // Every lane of a warp takes the same tiles, so all 32 meet the shuffles.
  e.loop(warp, tiles, warps, [&](Value t) {
    Value colTile = b.create<arith::RemUIOp>(loc, t, colTiles);
    t = b.create<arith::DivUIOp>(loc, t, colTiles);
    Value rowTile = b.create<arith::RemUIOp>(loc, t, rowTiles);
    Value batch = b.create<arith::DivUIOp>(loc, t, rowTiles);
    Value first = b.create<arith::MulIOp>(loc, rowTile, tile);
    Value count = b.create<arith::MinUIOp>(
        loc, tile, b.create<arith::SubIOp>(loc, rows, first));
    Value firstCol = b.create<arith::MulIOp>(loc, colTile, tile);
    tileGemm(batch, first, count, [&](const Gemm &gemm) {
      // Rows and columns past C's edge read its last one; their sums are
      // never stored.
      SmallVector<Value> tileRows, tileCols;
      Value lastRow = b.create<arith::SubIOp>(loc, count, e.index(1));
      Value lastCol = b.create<arith::SubIOp>(loc, cols, e.index(1));
      for (int64_t n = 0; n < kWarpTile; ++n) {
        tileRows.push_back(b.create<arith::MinUIOp>(loc, e.index(n), lastRow));
        tileCols.push_back(b.create<arith::MinUIOp>(
            loc, b.create<arith::AddIOp>(loc, firstCol, e.index(n)), lastCol));
      }
      SmallVector<Value> sums =
          tileSums(e, gemm, tileRows, tileCols, lane, lanes);
      for (Value &sum : sums)
        sum = e.acrossLanes(sum, [&](Value x, Value y) {
          return b.create<arith::AddFOp>(loc, x, y).getResult();
        });
      e.ifFirstLane(lane, [&] {
        for (int64_t r = 0; r < kWarpTile; ++r)
          for (int64_t c = 0; c < kWarpTile; ++c) {
            Value col = b.create<arith::AddIOp>(loc, firstCol, e.index(c));
            Value inside = b.create<arith::AndIOp>(
                loc,
                b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                        e.index(r), count),
                b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, col,
                                        cols));
            auto write = b.create<scf::IfOp>(loc, inside, false);
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPoint(write.thenBlock()->getTerminator());
            gemm.store(e.index(r), col, sums[r * kWarpTile + c]);
          }
      });
    });
  });
}

/// A matmul whose operands are both matrices (rank >= 2) is split into
/// tasks of rowTasks() rows of one batch's product; otherwise it is one
/// task.
bool matmulTasks(attn::MatmulOp op) {
  return cast<ShapedType>(op.getLhs().getType()).getRank() >= 2 &&
         cast<ShapedType>(op.getRhs().getType()).getRank() >= 2;
}

void emitMatmul(Emitter &e, attn::MatmulOp op, Value lhs, Value rhs,
                Value result, Value taskIndex, Value taskRows, int64_t lanes) {
  if (!isa<FloatType>(e.computeType(result)))
    fail(op, "unsupported element type");
  bool transposeB = op.getTransposeB();
  int64_t ra = rankOf(lhs), rb = rankOf(rhs);
  SmallVector<Value> a = e.sizesOf(lhs), bs = e.sizesOf(rhs),
                     c = e.sizesOf(result);
  auto [hasRows, hasCols, readsAlongK, batchRank] = matmulForm(op);
  SmallVector<Value> batchSizes(c.begin(), c.begin() + batchRank);
  Value rows = hasRows ? a[ra - 2] : e.index(1);
  // The operand's batch indices for the result's batch indices.
  auto batchIndices = [&](Value operand, int64_t operandBatchRank,
                          ValueRange ivs) {
    auto type = cast<MemRefType>(operand.getType());
    SmallVector<Value> indices;
    for (int64_t d = 0; d < operandBatchRank; ++d)
      indices.push_back(type.getDimSize(d) == 1
                            ? e.index(0)
                            : ivs[batchRank - operandBatchRank + d]);
    return indices;
  };
  // Both operands matrices: the packed GEMM where a task has enough rows,
  // its panel buffer allocated once, outside the branches.
  bool tasks = matmulTasks(op) && !e.onDevice();
  Value packed;
  if (tasks)
    packed = e.b.create<memref::AllocaOp>(
        e.loc,
        MemRefType::get({kDepthBlock * packedPanelCols(lanes)},
                        e.b.getF32Type()),
        e.b.getI64IntegerAttr(64));
  // The product's rows [first, first + count) at batch indices `ivs`, as
  // a Gemm handed to `emit`.
  auto rowsOf = [&](ValueRange ivs, Value first, Value count,
                    function_ref<void(const Gemm &)> emit) {
    SmallVector<Value> aBatch =
                           batchIndices(lhs, std::max<int64_t>(ra - 2, 0), ivs),
                       bBatch =
                           batchIndices(rhs, std::max<int64_t>(rb - 2, 0), ivs);
    auto row = [&](Value i) {
      return e.b.create<arith::AddIOp>(e.loc, first, i).getResult();
    };
    MatrixView aView{lhs, [&](Value i, Value k) {
                       ValueVec indices = aBatch;
                       if (hasRows)
                         indices.push_back(row(i));
                       indices.push_back(k);
                       return indices;
                     }};
    MatrixView bView{rhs, [&](Value k, Value j) {
                       ValueVec indices = bBatch;
                       if (!hasCols)
                         indices.push_back(k);
                       else if (transposeB)
                         indices.append({j, k});
                       else
                         indices.append({k, j});
                       return indices;
                     }};
    MatrixView cView{result, [&](Value i, Value j) {
                       ValueVec indices(ivs.begin(), ivs.end());
                       if (hasRows)
                         indices.push_back(row(i));
                       if (hasCols)
                         indices.push_back(j);
                       return indices;
                     }};
    emit(gemmOver(e, count,
                  !hasCols     ? e.index(1)
                  : transposeB ? bs[rb - 2]
                               : bs[rb - 1],
                  a[ra - 1], aView, bView, cView));
  };
  if (e.onDevice() && readsAlongK) {
    // Product t's batch indices, row-major.
    return emitWarpGemm(
        e, e.product(batchSizes), rows, !hasCols ? e.index(1) : bs[rb - 2],
        [&](Value batch, Value first, Value count,
            function_ref<void(const Gemm &)> emit) {
          SmallVector<Value> ivs(batchRank);
          for (int64_t d = batchRank - 1; d >= 0; --d) {
            ivs[d] = e.b.create<arith::RemUIOp>(e.loc, batch, batchSizes[d]);
            batch = e.b.create<arith::DivUIOp>(e.loc, batch, batchSizes[d]);
          }
          rowsOf(ivs, first, count, emit);
        });
  }
  if (e.onDevice()) {
    // A thread per element of C, each a dot product over k.
    return e.loopNest(c, [&](ValueRange ivs) {
      Value i = hasRows ? ivs[batchRank] : e.index(0);
      Value j = hasCols ? ivs.back() : e.index(0);
      rowsOf(ivs.take_front(batchRank), i, e.index(1), [&](const Gemm &gemm) {
        emitDotTile(e, gemm, e.index(0), 1, j, 1);
      });
    });
  }
  auto product = [&](ValueRange ivs, Value first, Value count) {
    rowsOf(ivs, first, count, [&](const Gemm &gemm) {
      auto small = [&] {
        if (readsAlongK)
          emitDotGemm(e, gemm);
        else
          emitVectorGemm(e, gemm);
      };
      if (!packed)
        return small();
      Value few = e.b.create<arith::CmpIOp>(e.loc, arith::CmpIPredicate::slt,
                                            count, e.index(kPackedMinRows));
      auto branch = e.b.create<scf::IfOp>(e.loc, few, /*withElseRegion=*/true);
      OpBuilder::InsertionGuard guard(e.b);
      e.b.setInsertionPoint(branch.thenBlock()->getTerminator());
      small();
      e.b.setInsertionPoint(branch.elseBlock()->getTerminator());
      emitPackedGemm(e, gemm, /*bAlongK=*/transposeB, packed, lanes);
    });
  };
  if (!tasks)
    return e.loopNest(batchSizes,
                      [&](ValueRange ivs) { product(ivs, e.index(0), rows); });
  // Task t: row block t mod blocks of batch t / blocks (row-major); the
  // whole op, in blocks of kPackedBlockRows, without a task.
  if (!taskRows)
    taskRows = e.index(kPackedBlockRows);
  Value blocks = e.b.create<arith::CeilDivUIOp>(e.loc, rows, taskRows);
  auto task = [&](Value t) {
    Value batch = e.b.create<arith::DivUIOp>(e.loc, t, blocks);
    Value first = e.b.create<arith::MulIOp>(
        e.loc, e.b.create<arith::RemUIOp>(e.loc, t, blocks), taskRows);
    Value count = e.b.create<arith::MinSIOp>(
        e.loc, taskRows, e.b.create<arith::SubIOp>(e.loc, rows, first));
    SmallVector<Value> ivs(batchRank);
    for (int64_t d = batchRank - 1; d >= 0; --d) {
      ivs[d] = e.b.create<arith::RemUIOp>(e.loc, batch, batchSizes[d]);
      batch = e.b.create<arith::DivUIOp>(e.loc, batch, batchSizes[d]);
    }
    product(ivs, first, count);
  };
  if (taskIndex)
    return task(taskIndex);
  e.loop(e.b.create<arith::MulIOp>(e.loc, e.product(batchSizes), blocks), task);
}

void emitLinear(Emitter &e, attn::LinearOp op, Value input, Value weight,
                Value bias, Value result, Value taskIndex, Value taskRows,
                int64_t lanes) {
  if (!isa<FloatType>(e.computeType(result)))
    fail(op, "unsupported element type");
  // x [..., K] is a matrix [M, K] with M the product of the leading dims.
  SmallVector<Value> x = e.sizesOf(input), w = e.sizesOf(weight);
  Value depth = x.back();
  x.pop_back();
  Value rows = e.product(x);
  Value input2 = e.view(input, {rows, depth}),
        result2 = e.view(result, {rows, w[0]});
  // Rows [first, first + count) of the product.
  auto rowsOf = [&](Value first, Value count) {
    auto row = [&e, first](Value i) {
      return e.b.create<arith::AddIOp>(e.loc, first, i).getResult();
    };
    return gemmOver(e, count, w[0], depth,
                    {input2,
                     [row](Value i, Value k) {
                       return ValueVec{row(i), k};
                     }},
                    {weight,
                     [](Value k, Value j) {
                       return ValueVec{j, k};
                     }},
                    {result2,
                     [row](Value i, Value j) {
                       return ValueVec{row(i), j};
                     }},
                    bias);
  };
  if (e.onDevice())
    return emitWarpGemm(e, e.index(1), rows, w[0],
                        [&](Value, Value first, Value count,
                            function_ref<void(const Gemm &)> emit) {
                          emit(rowsOf(first, count));
                        });
  // A task's rows: [first, first + count).
  Value first = e.index(0), count = rows;
  if (taskIndex) {
    first = e.b.create<arith::MulIOp>(e.loc, taskIndex, taskRows);
    count = e.b.create<arith::MinSIOp>(
        e.loc, taskRows, e.b.create<arith::SubIOp>(e.loc, rows, first));
  }
  // The packed weight panel (in the task's entry block, outside the branch).
  Value packed = e.b.create<memref::AllocaOp>(
      e.loc,
      MemRefType::get({kDepthBlock * packedPanelCols(lanes)}, e.b.getF32Type()),
      e.b.getI64IntegerAttr(64));
  // A few rows (decoding) cannot repay packing the weight: dot products.
  Value few = e.b.create<arith::CmpIOp>(e.loc, arith::CmpIPredicate::slt, count,
                                        e.index(kPackedMinRows));
  Gemm gemm = rowsOf(first, count);
  auto branch = e.b.create<scf::IfOp>(e.loc, few, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(e.b);
  e.b.setInsertionPoint(branch.thenBlock()->getTerminator());
  emitDotGemm(e, gemm);
  e.b.setInsertionPoint(branch.elseBlock()->getTerminator());
  emitPackedGemm(e, gemm, /*bAlongK=*/true, packed, lanes);
}

} // namespace

llvm::SmallVector<llvm::SmallVector<mlir::Value>>
resultSizes(mlir::OpBuilder &builder, mlir::Location loc, mlir::Operation *op,
            llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands) {
  builder.getContext()->loadDialect<arith::ArithDialect>();
  if (op->getNumOperands() != operands.size())
    fail(op, "resultSizes needs one entry per operand, got " +
                 std::to_string(operands.size()));
  for (auto [operand, sizes] : llvm::zip(op->getOperands(), operands)) {
    size_t expected = isa<ShapedType>(operand.getType()) ? rankOf(operand) : 1;
    if (sizes.size() != expected)
      fail(op, "operand sizes do not match the operand's rank");
  }
  Emitter e(builder, loc);
  llvm::SmallVector<llvm::SmallVector<Value>> results;
  if (auto attention = dyn_cast<attn::AttentionOp>(op)) {
    // Both layouts: the output is q's first three dims and v's last; lse is
    // [B, Hq, S].
    const SmallVector<Value> &q = operands[0], &v = operands[2];
    results.push_back({q[0], q[1], q[2], v[3]});
    if (attention.getLse()) {
      if (attention.getLayout() == attn::Layout::bhsd)
        results.push_back({q[0], q[1], q[2]});
      else
        results.push_back({q[0], q[2], q[1]});
    }
  } else {
    if (op->getNumResults() != 1)
      fail(op, "expected one result");
    results.push_back(primitiveResultSizes(e, op, operands));
  }
  // Static dims come out as constants, whatever the operands said.
  for (auto [sizes, result] : llvm::zip(results, op->getResults())) {
    auto type = cast<ShapedType>(result.getType());
    if (static_cast<int64_t>(sizes.size()) != type.getRank())
      fail(op, "result sizes do not match the result's rank");
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (!type.isDynamicDim(d))
        sizes[d] = e.index(type.getDimSize(d));
  }
  return results;
}

bool splitsIntoRowTasks(mlir::Operation *op) {
  if (auto matmul = dyn_cast<attn::MatmulOp>(op))
    return matmulTasks(matmul);
  return isa<attn::LinearOp>(op);
}

namespace {

/// (row blocks' count, rows of each) of a row-task op: every batch's
/// product's rows (a matmul), the product of x's leading dims (a linear).
std::pair<Value, Value>
rowTaskSizes(Emitter &e, mlir::Operation *op,
             llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands) {
  ArrayRef<Value> a = operands[0];
  if (isa<attn::MatmulOp>(op)) {
    SmallVector<Value> result = primitiveResultSizes(e, op, operands);
    return {e.product(ArrayRef<Value>(result).drop_back(2)), a[a.size() - 2]};
  }
  return {e.index(1), e.product(a.drop_back())};
}

} // namespace

RowTasks rowTasks(mlir::OpBuilder &builder, mlir::Location loc,
                  mlir::Operation *op,
                  llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands,
                  mlir::Value threads) {
  Emitter e(builder, loc);
  auto [batches, rows] = rowTaskSizes(e, op, operands);
  // Tasks a batch: as many as whole GEMM blocks take, and on several
  // threads at least two tasks a thread, so that they share the rows
  // evenly; each task's rows a multiple of the register tiles', at least
  // kMinRowsPerTask. One thread takes whole blocks.
  auto ceilDiv = [&](Value x, Value y) {
    return builder.create<arith::CeilDivUIOp>(loc, x, y).getResult();
  };
  // At least 1, also for an empty product (no division by zero below).
  Value blocks = builder.create<arith::MaxUIOp>(
      loc, ceilDiv(rows, e.index(kPackedBlockRows)), e.index(1));
  Value wanted =
      ceilDiv(builder.create<arith::MulIOp>(loc, threads, e.index(2)), batches);
  Value several = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ugt,
                                                threads, e.index(1));
  Value tasks = builder.create<arith::SelectOp>(
      loc, several, builder.create<arith::MaxUIOp>(loc, blocks, wanted),
      blocks);
  Value taskRows = builder.create<arith::MaxUIOp>(
      loc,
      builder.create<arith::MulIOp>(
          loc, ceilDiv(ceilDiv(rows, tasks), e.index(kPackedRows)),
          e.index(kPackedRows)),
      e.index(kMinRowsPerTask));
  // Every batch's product times ceil(rows / rows per task).
  return {taskRows,
          builder.create<arith::MulIOp>(loc, batches, ceilDiv(rows, taskRows))};
}

namespace {

void emitWith(Emitter &e, mlir::Operation *op, mlir::ValueRange operands,
              mlir::ValueRange results, mlir::Value taskIndex,
              mlir::Value taskRows, int64_t vectorWidth) {
  OpBuilder &builder = e.b;
  builder.getContext()
      ->loadDialect<arith::ArithDialect, math::MathDialect,
                    memref::MemRefDialect, scf::SCFDialect,
                    vector::VectorDialect>();
  if (isa<attn::AttentionOp>(op))
    fail(op, "not a primitive: attention has its own kernel");
  if (op->getNumOperands() != operands.size() || results.size() != 1 ||
      op->getNumResults() != 1)
    fail(op, "emitPrimitive needs one value per operand and one result");
  auto identity = [](Value buffer) {
    auto type = dyn_cast<MemRefType>(buffer.getType());
    return !type || type.getLayout().isIdentity();
  };
  if (!llvm::all_of(operands, identity) || !identity(results[0]))
    fail(op, "buffers must be memrefs with the identity layout");
  Value result = results[0];
  if (auto matmul = dyn_cast<attn::MatmulOp>(op))
    return emitMatmul(e, matmul, operands[0], operands[1], result, taskIndex,
                      taskRows, vectorWidth);
  if (auto linear = dyn_cast<attn::LinearOp>(op))
    return emitLinear(e, linear, operands[0], operands[1],
                      linear.getBias() ? operands[2] : Value(), result,
                      taskIndex, taskRows, vectorWidth);
  if (isa<attn::AddOp, attn::SubOp, attn::MulOp, attn::DivOp>(op))
    return emitBinary(e, op, operands[0], operands[1], result);
  if (isa<attn::ScaleOp, attn::TanhOp, attn::ExpOp, attn::NegOp, attn::SqrtOp,
          attn::CosOp, attn::SinOp>(op))
    return emitUnary(e, op, operands[0], result);
  if (auto softmax = dyn_cast<attn::SoftmaxOp>(op))
    return emitSoftmax(e, softmax.getAxis(), operands[0], result);
  if (auto fill = dyn_cast<attn::MaskedFillOp>(op))
    return emitMaskedFill(e, fill, operands[0], operands[1], result);
  if (isa<attn::CausalMaskOp>(op))
    return emitCausalMask(e, operands[0], result);
  if (auto window = dyn_cast<attn::WindowMaskOp>(op))
    return emitWindowMask(e, window, operands[0], result);
  if (isa<attn::ReshapeOp, attn::UnsqueezeOp>(op))
    return emitDenseCopy(e, operands[0], result);
  if (auto transpose = dyn_cast<attn::TransposeOp>(op))
    return emitTranspose(e, transpose, operands[0], result);
  if (auto repeat = dyn_cast<attn::RepeatOp>(op))
    return emitRepeat(e, repeat, operands[0], result);
  if (auto sum = dyn_cast<attn::ReduceSumOp>(op))
    return emitReduceSum(e, sum, operands[0], result);
  if (auto concat = dyn_cast<attn::ConcatOp>(op))
    return emitConcat(e, concat, operands, result);
  if (auto slice = dyn_cast<attn::SliceOp>(op))
    return emitSlice(e, slice, operands[0], result);
  fail(op, "no kernel for this op");
}

} // namespace

mlir::Value deviceThreadCount(
    mlir::OpBuilder &builder, mlir::Location loc, mlir::Operation *op,
    llvm::ArrayRef<llvm::SmallVector<mlir::Value>> operands, int64_t lanes) {
  Emitter e(builder, loc);
  // resultSizes, not primitiveResultSizes: a reshape's static dims are
  // constants only there.
  SmallVector<Value> result = resultSizes(builder, loc, op, operands).front();
  // A softmax, a reduce_sum in 32 bits: a warp per row, per sum.
  if (auto softmax = dyn_cast<attn::SoftmaxOp>(op)) {
    result.erase(result.begin() + softmax.getAxis());
    return e.product({e.index(lanes), e.product(result)});
  }
  if (auto sum = dyn_cast<attn::ReduceSumOp>(op); sum && reduceSumByWarps(sum))
    return e.product({e.index(lanes), e.product(result)});
  // Products that emitWarpGemm tiles: a warp per tile of C.
  if (isa<attn::LinearOp>(op))
    return e.product(
        {e.index(lanes),
         warpTiles(e, e.product(ArrayRef<Value>(result).drop_back())),
         warpTiles(e, result.back())});
  if (auto matmul = dyn_cast<attn::MatmulOp>(op)) {
    MatmulForm form = matmulForm(matmul);
    if (form.readsAlongK) {
      ArrayRef<Value> sizes(result);
      Value rows = form.hasRows ? sizes[form.batchRank] : e.index(1);
      Value cols = form.hasCols ? sizes.back() : e.index(1);
      return e.product({e.index(lanes),
                        e.product(sizes.take_front(form.batchRank)),
                        warpTiles(e, rows), warpTiles(e, cols)});
    }
  }
  return e.product(result);
}

void emitPrimitive(mlir::OpBuilder &builder, mlir::Location loc,
                   mlir::Operation *op, mlir::ValueRange operands,
                   mlir::ValueRange results, mlir::Value taskIndex,
                   mlir::Value taskRows, int64_t vectorWidth) {
  Emitter e(builder, loc);
  emitWith(e, op, operands, results, taskIndex, taskRows, vectorWidth);
}

void emitPrimitiveOnDevice(mlir::OpBuilder &builder, mlir::Location loc,
                           mlir::Operation *op, mlir::ValueRange operands,
                           mlir::ValueRange results,
                           const DeviceThreads &threads) {
  Emitter e(builder, loc, threads);
  // No task split and no vectors: each thread's share is the grid's stride.
  emitWith(e, op, operands, results, Value(), Value(), /*vectorWidth=*/1);
}

} // namespace attnc
