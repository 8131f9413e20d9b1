//===- AttentionKernel.cpp - attn.attention as a tiled CPU task -----------===//
//
// The CPU micro-kernels of attn-tile-attention's tile ops. One task = one
// iteration (b, kv head, row tile) of the packed scf.forall; its rows, key
// loop and partial-tile test are the tiled IR's (TiledValues). Per task:
//   1. pack Q transposed into QT[d][i] (queries in lanes), prescaled so the
//      scores come out in log2 units (general: qW; cosine: q/|q|;
//      additive: Wq q instead);
//   2. for each key tile of the tiled IR's key loop: scores SC[j][i] by a
//      register-blocked product (tile_scores), then biases and masks, the
//      running max m and sum l as vectors, p = exp2(s - m - k) in place
//      (k = ceil(log2 T))
//      (tile_transform, tile_mask, tile_softmax_update);
//   3. O[i][:] = alpha_i O[i][:] + sum_j p[j][i] V[j][:] in row layout
//      (tile_accumulate);
//   4. out = O / l (0 when l == 0), lse = (m + (k + log2 l)) ln 2
//      (tile_normalize).
//
//===----------------------------------------------------------------------===//

#include "Codegen/AttentionKernel.h"
#include "Codegen/MatrixTiles.h"

#include "llvm/ADT/bit.h"

#include "Attn/Transforms/Passes.h"
#include "Attn/Transforms/SoftmaxShift.h"
#include "Support/Exp2Polynomial.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace attnc {

using namespace mlir;
using attn::AttentionOp;

namespace {

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// Independent accumulators of the softmax's row max and sum over a tile's
/// keys: a max or add has 2-3 cycles of latency, so one chain per row
/// vector left the FMA pipes waiting on it.
constexpr int64_t kReductionChains = 4;

/// How far (in log2 units, as the kernel's scores are) a row's max may grow
/// before the tile path takes the new one: probabilities stay below 2^8.
constexpr double kKeptMaxGrowth = 8.0;

/// The register block of depthInLanesScores: rows × keys accumulators whose
/// sums fill exactly one vector of `width` lanes.
int64_t depthRows(int64_t width) { return std::min<int64_t>(width, 4); }
int64_t depthKeys(int64_t width) { return decodeKeyBlock(width); }

} // namespace

AttentionTiling AttentionTiling::from(const AttentionSchedule &schedule) {
  AttentionTiling tiling;
  tiling.vectorWidth = schedule.vectorWidth;
  tiling.scoreVectors = schedule.scoreVectors;
  tiling.scoreKeys = schedule.scoreKeys;
  tiling.pvRows = schedule.pvRows;
  tiling.pvVectors = schedule.pvVectors;
  int64_t queryBlock = std::lcm(schedule.vectorWidth * schedule.scoreVectors,
                                schedule.pvRows);
  tiling.queryTile = roundUp(schedule.queryTile, queryBlock);
  tiling.keyTile = roundUp(schedule.keyTile, schedule.scoreKeys);
  tiling.bf16Dot = schedule.bf16Dot && schedule.vectorWidth == 16;
  tiling.matrixTiles = schedule.matrixTiles;
  tiling.valuePrefetchBytes = schedule.valuePrefetchBytes;
  tiling.decodePrefetchLevel = schedule.decodePrefetchLevel;
  // The default when unset (a schedule built in code).
  tiling.decodeStep =
      roundUp(schedule.decodeStep > 0 ? schedule.decodeStep
                                      : defaultDecodeStep(schedule.vectorWidth),
              decodeKeyBlock(schedule.vectorWidth));
  return tiling;
}

namespace {

/// Index arithmetic and loops, kept short so the kernel reads as the
/// algorithm.
class Emitter {
public:
  Emitter(OpBuilder &builder, Location loc)
      : b(loc, builder), f32(b.getF32Type()) {}

  ImplicitLocOpBuilder b;
  Type f32;

  Value index(int64_t value) {
    return b.create<arith::ConstantIndexOp>(value);
  }
  Value add(Value x, Value y) { return b.create<arith::AddIOp>(x, y); }
  Value sub(Value x, Value y) { return b.create<arith::SubIOp>(x, y); }
  Value mul(Value x, Value y) { return b.create<arith::MulIOp>(x, y); }
  Value add(Value x, int64_t y) { return y ? add(x, index(y)) : x; }
  Value mul(Value x, int64_t y) { return y == 1 ? x : mul(x, index(y)); }
  Value div(Value x, Value y) { return b.create<arith::DivUIOp>(x, y); }
  Value rem(Value x, Value y) { return b.create<arith::RemUIOp>(x, y); }
  Value min(Value x, Value y) { return b.create<arith::MinSIOp>(x, y); }
  Value max(Value x, Value y) { return b.create<arith::MaxSIOp>(x, y); }
  Value ceilDiv(Value x, int64_t y) {
    return b.create<arith::CeilDivUIOp>(x, index(y));
  }
  /// x rounded down to a multiple of y.
  Value roundDown(Value x, int64_t y) { return mul(div(x, index(y)), y); }
  Value lt(Value x, Value y) {
    return b.create<arith::CmpIOp>(arith::CmpIPredicate::slt, x, y);
  }

  Value constant(double value, Type type) {
    if (auto vector = dyn_cast<VectorType>(type))
      return b.create<arith::ConstantOp>(
          vector, DenseElementsAttr::get(vector, b.getF32FloatAttr(value)));
    return b.create<arith::ConstantOp>(b.getF32FloatAttr(value));
  }
  Value f32Constant(double value) { return constant(value, f32); }

  /// for (i = lb; i < ub; i += step) with loop-carried `init`.
  ValueRange loop(Value lb, Value ub, int64_t step, ValueRange init,
                  function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto op = b.create<scf::ForOp>(
        lb, ub, index(step), init,
        [&](OpBuilder &nested, Location loc, Value iv, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          b.create<scf::YieldOp>(body(iv, args));
        });
    return op.getResults();
  }
  /// loop() with step 1 and loop-carried `init` (not empty) that LLVM must
  /// not unroll: for a register block's loop, where a second copy of the
  /// body keeps the next step's loads beside the accumulators and spills
  /// them (attn-lower-to-llvm carries the mark to the loop's latch).
  ValueRange
  registerBlockLoop(Value lb, Value ub, ValueRange init,
                    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    ValueRange results = loop(lb, ub, 1, init, body);
    MLIRContext *context = b.getContext();
    auto noUnroll = LLVM::LoopUnrollAttr::get(context, b.getBoolAttr(true), {},
                                              {}, {}, {}, {}, {});
    results[0].getDefiningOp()->setAttr(
        attn::kLoopAnnotationAttrName,
        LLVM::LoopAnnotationAttr::get(context, {}, {}, {}, noUnroll, {}, {}, {},
                                      {}, {}, {}, {}, {}, {}, {}, {}));
    return results;
  }
  void loop(Value lb, Value ub, int64_t step, function_ref<void(Value)> body) {
    loop(lb, ub, step, {}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>();
    });
  }
  /// combine(...combine(init, element(0))..., element(n - 1)) in `chains`
  /// independent accumulators (the others start at `identity`), combined at
  /// the end: a reduction over a tile's keys then waits on the latency of
  /// one combine per `chains` elements, not per element.
  Value reduce(Value n, Value init, Value identity, int64_t chains,
               function_ref<Value(Value)> element,
               function_ref<Value(Value, Value)> combine) {
    auto serial = [&](Value from, Value acc) {
      return loop(from, n, 1, ValueRange{acc}, [&](Value j, ValueRange args) {
        return SmallVector<Value>{combine(args[0], element(j))};
      })[0];
    };
    if (chains == 1)
      return serial(index(0), init);
    SmallVector<Value> accs{init};
    accs.append(chains - 1, identity);
    Value whole = roundDown(n, chains);
    ValueRange partial =
        loop(index(0), whole, chains, accs, [&](Value j, ValueRange args) {
          SmallVector<Value> next;
          for (int64_t c = 0; c < chains; ++c)
            next.push_back(combine(args[c], element(add(j, c))));
          return next;
        });
    accs.assign(partial.begin(), partial.end());
    accs[0] = serial(whole, accs[0]);
    for (int64_t width = chains; width > 1; width /= 2)
      for (int64_t c = 0; c < width / 2; ++c)
        accs[c] = combine(accs[c], accs[c + width / 2]);
    return accs[0];
  }

  void ifThen(Value condition, function_ref<void()> thenBody,
              function_ref<void()> elseBody = nullptr) {
    auto op = b.create<scf::IfOp>(condition, /*withElseRegion=*/bool(elseBody));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&op.getThenRegion().front());
    thenBody();
    if (elseBody) {
      b.setInsertionPointToStart(&op.getElseRegion().front());
      elseBody();
    }
  }

  /// f16 and bf16 take no masked vector loads or stores: x86 without AVX-512
  /// scalarises them through a compiler-runtime conversion (__truncsfbf2,
  /// which libgcc 12 lacks). Partial vectors of them go lane by lane.
  static bool isHalfFloat(Type element) {
    return isa<FloatType>(element) && element.getIntOrFloatBitWidth() == 16;
  }
  /// full() when count == width, else partial(); both yield `type` (none
  /// when null).
  Value whenFull(Value count, int64_t width, Type type,
                 function_ref<Value()> full, function_ref<Value()> partial) {
    Value isFull =
        b.create<arith::CmpIOp>(arith::CmpIPredicate::eq, count, index(width));
    ValueRange results = choose(
        isFull, type ? TypeRange{type} : TypeRange{},
        [&] { return resultsOf(full()); },
        [&] { return resultsOf(partial()); });
    return type ? results[0] : Value();
  }
  /// An scf.if yielding then() or otherwise() (values of `types`).
  ValueRange choose(Value condition, TypeRange types,
                    function_ref<SmallVector<Value>()> then,
                    function_ref<SmallVector<Value>()> otherwise) {
    auto op = b.create<scf::IfOp>(types, condition, /*addThenBlock=*/true,
                                  /*addElseBlock=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.thenBlock());
    b.create<scf::YieldOp>(then());
    b.setInsertionPointToStart(op.elseBlock());
    b.create<scf::YieldOp>(otherwise());
    return op.getResults();
  }
  static SmallVector<Value> resultsOf(Value value) {
    return value ? SmallVector<Value>{value} : SmallVector<Value>{};
  }

  Value toF32(Value value) {
    Type element = mlir::getElementTypeOrSelf(value.getType());
    if (element.isF32())
      return value;
    Type type = f32;
    if (auto vector = dyn_cast<VectorType>(value.getType()))
      type = VectorType::get(vector.getShape(), f32);
    return b.create<arith::ExtFOp>(type, value);
  }
  Value fromF32(Value value, Type element) {
    if (element.isF32())
      return value;
    Type type = element;
    if (auto vector = dyn_cast<VectorType>(value.getType()))
      type = VectorType::get(vector.getShape(), element);
    return b.create<arith::TruncFOp>(type, value);
  }

  /// A scalar of a buffer, as f32.
  Value loadF32(Value buffer, Value offset) {
    return toF32(b.create<memref::LoadOp>(buffer, offset));
  }
  /// `width` consecutive elements as f32; lanes past `count` (when given) are
  /// not read and come out 0.
  Value loadVector(Value buffer, Value offset, int64_t width,
                   Value count = nullptr) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    auto type = VectorType::get({width}, element);
    if (!count)
      return toF32(b.create<vector::LoadOp>(type, buffer, offset));
    if (isHalfFloat(element))
      return whenFull(
          count, width, VectorType::get({width}, f32),
          [&] { return loadVector(buffer, offset, width); },
          [&] {
            return loop(index(0), count, 1, {constant(0.0, VectorType::get({width}, f32))},
                        [&](Value lane, ValueRange args) {
                          Value x = loadF32(buffer, add(offset, lane));
                          return SmallVector<Value>{
                              b.create<vector::InsertElementOp>(x, args[0],
                                                                lane)};
                        })[0];
          });
    Value mask = b.create<vector::CreateMaskOp>(
        VectorType::get({width}, b.getI1Type()), count);
    Value zero = b.create<arith::ConstantOp>(
        type, DenseElementsAttr::get(type, b.getZeroAttr(element)));
    return toF32(
        b.create<vector::MaskedLoadOp>(type, buffer, offset, mask, zero));
  }
  void storeVector(Value vector, Value buffer, Value offset,
                   Value count = nullptr) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    int64_t width = cast<VectorType>(vector.getType()).getNumElements();
    if (count && isHalfFloat(element)) {
      whenFull(
          count, width, {},
          [&] {
            storeVector(vector, buffer, offset);
            return Value();
          },
          [&] {
            loop(index(0), count, 1, [&](Value lane) {
              Value x = b.create<vector::ExtractElementOp>(vector, lane);
              b.create<memref::StoreOp>(fromF32(x, element), buffer,
                                        add(offset, lane));
            });
            return Value();
          });
      return;
    }
    vector = fromF32(vector, element);
    if (!count) {
      b.create<vector::StoreOp>(vector, buffer, offset);
      return;
    }
    Value mask = b.create<vector::CreateMaskOp>(
        VectorType::get({width}, b.getI1Type()), count);
    b.create<vector::MaskedStoreOp>(buffer, offset, mask, vector);
  }

  Value broadcast(Value scalar, int64_t width) {
    return b.create<vector::BroadcastOp>(VectorType::get({width}, f32),
                                         scalar);
  }
  Value fma(Value x, Value y, Value acc) {
    return b.create<vector::FMAOp>(x, y, acc);
  }
  /// accs[r][v] + rows[r] · columns[v] for a register block, row-major.
  SmallVector<Value> outerProduct(ArrayRef<Value> rows, ArrayRef<Value> columns,
                                  ValueRange accs) {
    SmallVector<Value> next;
    for (auto [r, row] : llvm::enumerate(rows))
      for (auto [c, column] : llvm::enumerate(columns))
        next.push_back(fma(row, column, accs[r * columns.size() + c]));
    return next;
  }
  /// rows[i][j] becomes rows[j][i], for as many rows as lanes (a power of
  /// two): log2 W stages, each a pair of two-source shuffles per row pair
  /// (Eklundh's transpose; one vpermt2ps each on AVX-512).
  void transpose(SmallVectorImpl<Value> &rows) {
    int64_t W = rows.size();
    for (int64_t h = W / 2; h >= 1; h /= 2)
      for (int64_t i = 0; i < W; ++i) {
        if (i & h)
          continue;
        SmallVector<int64_t> low, high;
        for (int64_t j = 0; j < W; ++j) {
          low.push_back(j & h ? W + j - h : j);
          high.push_back(j & h ? W + j : j + h);
        }
        Value x = rows[i], y = rows[i + h];
        rows[i] = b.create<vector::ShuffleOp>(x, y, low);
        rows[i + h] = b.create<vector::ShuffleOp>(x, y, high);
      }
  }
  /// One vector whose lane n is the sum of the lanes of parts[n], for as
  /// many parts as lanes (a power of two): a tree of even/odd shuffles and
  /// adds, log2(W) levels, never a horizontal reduction per part.
  Value sumEach(ArrayRef<Value> parts) {
    int64_t width = cast<VectorType>(parts[0].getType()).getNumElements();
    if (int64_t(parts.size()) != width || !llvm::isPowerOf2_64(width))
      throw std::logic_error("sumEach: needs as many parts as lanes, a "
                             "power of two");
    SmallVector<int64_t> evens, odds;
    for (int64_t lane = 0; lane < 2 * width; lane += 2) {
      evens.push_back(lane);
      odds.push_back(lane + 1);
    }
    SmallVector<Value> level(parts);
    while (level.size() > 1) {
      SmallVector<Value> next;
      for (size_t n = 0; n < level.size(); n += 2)
        next.push_back(b.create<arith::AddFOp>(
            b.create<vector::ShuffleOp>(level[n], level[n + 1], evens),
            b.create<vector::ShuffleOp>(level[n], level[n + 1], odds)));
      level = std::move(next);
    }
    return level[0];
  }
  /// Stores a rows × columns register block (row-major, as outerProduct
  /// makes it) at offset(row, column) of `buffer`.
  void storeBlock(ValueRange block, int64_t rows, int64_t columns,
                  Value buffer,
                  function_ref<Value(int64_t, int64_t)> offset) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < columns; ++c)
        b.create<vector::StoreOp>(block[r * columns + c], buffer,
                                  offset(r, c));
  }
  Value fmax(Value x, Value y) {
    // cmpf + select: a strict maximumf adds NaN blends (docs/design/cpu-codegen-notes.md, point 4).
    Value greater = b.create<arith::CmpFOp>(arith::CmpFPredicate::OGT, x, y);
    return b.create<arith::SelectOp>(greater, x, y);
  }

  /// AVX-512 (16 f32 lanes): exp2 reduces with vreduceps (AVX512DQ) and
  /// inserts the exponent with vscalefps.
  bool scalef = false;

  /// 2^x for x <= 0, exactly 0 for x = -inf, exactly 1 for x = 0, NaN for
  /// NaN, with no libm call and no scalarised llvm.exp: 2^whole(x) times a
  /// degree-5 polynomial of the fraction x - whole(x), minimax in relative
  /// error with the constant term 1.
  Value exp2(Value x) {
    auto type = cast<VectorType>(x.getType());
    if (scalef && type.getNumElements() == 16)
      return exp2Avx512(x);
    // Clamped below as select(x < lowest, lowest, x), which lets a NaN score
    // through to the row's sum and output (IEEE propagation); fmax would
    // turn it into a weight of 0. At the bound the exponent -127 makes the
    // built scale +0, so -inf gives exactly 0.
    Value lowest = constant(-127.0, type);
    x = b.create<arith::SelectOp>(
        b.create<arith::CmpFOp>(arith::CmpFPredicate::OLT, x, lowest), lowest,
        x);
    Value whole = b.create<math::RoundEvenOp>(x);
    Value fraction = b.create<arith::SubFOp>(x, whole);
    Value poly = polynomial(kExp2RoundedFraction, fraction);
    auto intType = VectorType::get(type.getShape(), b.getI32Type());
    Value exponent = b.create<arith::FPToSIOp>(intType, whole);
    Value biased = b.create<arith::AddIOp>(
        exponent, b.create<arith::ConstantOp>(
                      intType, DenseElementsAttr::get(
                                   intType, b.getI32IntegerAttr(127))));
    Value bits = b.create<arith::ShLIOp>(
        biased,
        b.create<arith::ConstantOp>(
            intType, DenseElementsAttr::get(intType, b.getI32IntegerAttr(23))));
    Value scale = b.create<arith::BitcastOp>(type, bits);
    return b.create<arith::MulFOp>(poly, scale);
  }

  /// Horner's rule with vector.fma, highest coefficient first.
  Value polynomial(ArrayRef<double> coefficients, Value x) {
    auto type = cast<VectorType>(x.getType());
    Value poly = constant(coefficients.front(), type);
    for (double coefficient : coefficients.drop_front())
      poly = fma(poly, x, constant(coefficient, type));
    return poly;
  }

  /// exp2 in three AVX-512 steps and no clamp: vreduceps gives x - floor(x)
  /// in [0, 1] (1 only where a tiny negative x rounds up; 0 for -inf), the
  /// polynomial 2^fraction, vscalefps multiplies by 2^floor(x) (0 for
  /// -inf, and it underflows to 0 however negative x is). Two instructions
  /// fewer per vector than round, subtract and clamp, which on Intel cores
  /// share the FMA ports (docs/design/cpu-codegen-notes.md, point 1).
  Value exp2Avx512(Value x) {
    auto type = cast<VectorType>(x.getType());
    Value allLanes = b.create<arith::ConstantIntOp>(-1, 16);
    Value currentRounding = b.create<arith::ConstantIntOp>(4, 32);
    // imm8 0x09: round toward -inf, no precision exception.
    Value fraction =
        b.create<LLVM::CallIntrinsicOp>(
             type, b.getStringAttr("llvm.x86.avx512.mask.reduce.ps.512"),
             ValueRange{x, b.create<arith::ConstantIntOp>(0x09, 32), x,
                        allLanes, currentRounding})
            .getResult(0);
    Value poly = polynomial(kExp2FlooredFraction, fraction);
    // Lanes below 2^-126 are 0 without being computed: a result that
    // underflows (or is subnormal) costs a microcode assist per
    // instruction on Intel cores, and scores far below the row's max are
    // common. NaN (unordered) lanes are computed, so NaN stays NaN.
    Value normal = b.create<LLVM::BitcastOp>(
        b.getI16Type(), b.create<arith::CmpFOp>(arith::CmpFPredicate::UGE, x,
                                                constant(-126.0, type)));
    // Operands in the LLVM intrinsic's order (point 1's trap): p·2^floor(x),
    // 0 in the lanes `normal` leaves out.
    return b
        .create<LLVM::CallIntrinsicOp>(
            type, b.getStringAttr("llvm.x86.avx512.mask.scalef.ps.512"),
            ValueRange{poly, x, constant(0.0, type), normal, currentRounding})
        .getResult(0);
  }
};

/// Floats of one row of a key split's partials: its output padded to
/// `paddedDv`, then the running max and sum.
Value partialRowFloats(Emitter &e, Value paddedDv) {
  return e.add(paddedDv, 2);
}

/// The semantics rules (Attn/IR/AttnSemantics.h) on MLIR values of one type:
/// `index` scalars (loop bounds, tile ranges) or vectors of i64 (one position
/// or key per lane). Only constants depend on which.
struct ValueArith {
  Emitter &e;
  Type type;
  Value constant(int64_t value) {
    if (auto vector = dyn_cast<VectorType>(type))
      return e.b.create<arith::ConstantOp>(
          vector, DenseElementsAttr::get(vector, e.b.getI64IntegerAttr(value)));
    return e.index(value);
  }
  Value add(Value x, Value y) { return e.b.create<arith::AddIOp>(x, y); }
  Value sub(Value x, Value y) { return e.b.create<arith::SubIOp>(x, y); }
  Value mul(Value x, Value y) { return e.b.create<arith::MulIOp>(x, y); }
  Value div(Value x, Value y) { return e.b.create<arith::DivUIOp>(x, y); }
  Value rem(Value x, Value y) { return e.b.create<arith::RemUIOp>(x, y); }
  Value min(Value x, Value y) { return e.b.create<arith::MinSIOp>(x, y); }
  Value max(Value x, Value y) { return e.b.create<arith::MaxSIOp>(x, y); }
  Value lt(Value x, Value y) {
    return e.b.create<arith::CmpIOp>(arith::CmpIPredicate::slt, x, y);
  }
  Value le(Value x, Value y) {
    return e.b.create<arith::CmpIOp>(arith::CmpIPredicate::sle, x, y);
  }
  Value eq(Value x, Value y) {
    return e.b.create<arith::CmpIOp>(arith::CmpIPredicate::eq, x, y);
  }
  Value logicalAnd(Value x, Value y) {
    return e.b.create<arith::AndIOp>(x, y);
  }
  Value select(Value condition, Value x, Value y) {
    return e.b.create<arith::SelectOp>(condition, x, y);
  }
};

bool isBf16(Value buffer) {
  return cast<MemRefType>(buffer.getType()).getElementType().isBF16();
}

/// Offsets of rows of a [B, H, L, D] (bhsd) or [B, L, H, D] (bshd) tensor.
struct RowLayout {
  Value base;   ///< The offset of row 0 of (b, h).
  Value stride; ///< Between consecutive rows.
};

/// The index values of a tiled attention (attn-tile-attention's output) on
/// the task's buffers: `get` clones the scalar ops a value is computed by,
/// with `tensor.dim` of an operand read from its sizes and `tensor.extract`
/// (the key lengths) a load. A value from outside a key loop is computed
/// before the loop's clone.
class TiledValues {
public:
  TiledValues(OpBuilder &builder, Location loc, scf::ForallOp forall,
              ArrayRef<AttentionBuffers::Buffer> operands)
      : b(builder), loc(loc), operands(operands),
        arguments(forall->getParentOfType<func::FuncOp>().getBody().front()) {}

  void map(Value from, Value to) { mapping.map(from, to); }
  void enterLoop(Operation *original, Operation *clone) {
    loops.push_back({original, clone});
  }
  void exitLoop() { loops.pop_back(); }

  Value get(OpFoldResult value) {
    if (auto attr = dyn_cast<Attribute>(value))
      return b.create<arith::ConstantIndexOp>(loc,
                                              cast<IntegerAttr>(attr).getInt());
    return get(cast<Value>(value));
  }

  Value get(Value value) {
    if (Value known = mapping.lookupOrNull(value))
      return known;
    Operation *def = value.getDefiningOp();
    if (!def)
      throw std::logic_error("tiled attention: an index value that is a "
                             "block argument of no known loop");
    for (Value operand : def->getOperands())
      if (!isOperand(operand))
        (void)get(operand);
    OpBuilder::InsertionGuard guard(b);
    Operation *before = nullptr;
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      if (it->first->isAncestor(def))
        break;
      before = it->second;
    }
    if (before)
      b.setInsertionPoint(before);
    if (auto dim = dyn_cast<tensor::DimOp>(def)) {
      std::optional<int64_t> axis = dim.getConstantIndex();
      if (!axis || !isOperand(dim.getSource()))
        throw std::logic_error("tiled attention: tensor.dim of a tile");
      mapping.map(value, buffer(dim.getSource()).sizes[*axis]);
    } else if (auto extract = dyn_cast<tensor::ExtractOp>(def)) {
      if (!isOperand(extract.getTensor()))
        throw std::logic_error("tiled attention: tensor.extract of a tile");
      const AttentionBuffers::Buffer &source = buffer(extract.getTensor());
      Value at = b.create<arith::ConstantIndexOp>(loc, 0);
      for (auto [index, size] :
           llvm::zip_equal(extract.getIndices(), ArrayRef<Value>(source.sizes)))
        at = b.create<arith::AddIOp>(
            loc, b.create<arith::MulIOp>(loc, at, size), get(index));
      mapping.map(value, b.create<memref::LoadOp>(loc, source.data, at));
    } else {
      bool scalar = llvm::all_of(def->getResultTypes(), [](Type type) {
        return type.isIntOrIndexOrFloat();
      });
      if (def->getNumRegions() || !scalar || !isMemoryEffectFree(def))
        throw std::logic_error("tiled attention: cannot compute an index "
                               "from " +
                               def->getName().getStringRef().str());
      b.clone(*def, mapping);
    }
    return mapping.lookup(value);
  }

private:
  OpBuilder &b;
  Location loc;
  ArrayRef<AttentionBuffers::Buffer> operands;
  Block &arguments; ///< The tiled function's: the op's operands in order.
  IRMapping mapping;
  SmallVector<std::pair<Operation *, Operation *>> loops;

  bool isOperand(Value value) {
    auto argument = dyn_cast<BlockArgument>(value);
    return argument && argument.getOwner() == &arguments;
  }
  const AttentionBuffers::Buffer &buffer(Value operand) {
    return operands[cast<BlockArgument>(operand).getArgNumber()];
  }
};

class AttentionTaskBuilder {
public:
  AttentionTaskBuilder(OpBuilder &builder, Location loc, AttentionOp op,
                       const AttentionBuffers &buffers,
                       const AttentionTiling &tiling)
      : e(builder, loc), op(op), buf(buffers), t(tiling),
        bhsd(op.getLayout() == attn::Layout::bhsd), score(op.getScore()),
        visibility(op.getKeyVisibility()) {
    // Only the AVX-512 classes have 16 f32 lanes (maxLanes).
    e.scalef = t.vectorWidth == 16;
  }

  /// Task `taskIndex` of the packed scf.forall that tileAttention made of
  /// `op`: the forall's body with each tile op lowered by the methods below
  /// and its index values (rows, key loop bounds, the partial-tile test)
  /// computed by TiledValues.
  /// With `merge`, merge task `taskIndex` of the key split instead.
  void lowerTiled(scf::ForallOp forall,
                  ArrayRef<AttentionBuffers::Buffer> operands, Value taskIndex,
                  const KeySplit &split, bool merge);
  /// The task's rows, from the tiled IR: packed rows [r0, r0 + nq) of
  /// (batch, kv head). Allocates the scratch tiles, packs the queries and
  /// sets m = -inf, l = 0, O = 0.
  void beginRows(Value batch, Value kvHead, Value r0, Value nq);
  /// attn.tile_scores of keys [j0, j0 + nk).
  void scoreTile(Value j0, Value nk, bool depthInLanes);
  /// attn.tile_transform, attn.tile_mask (where `needPositionMask`, null
  /// without causal or window) and attn.tile_softmax_update.
  void softmaxStep(Value j0, Value nk, Value needPositionMask);
  /// attn.tile_accumulate: O = alpha·O + P·V.
  void accumulateValues(Value j0, Value nk, bool depthInLanes);
  /// attn.tile_normalize and the writes of the output and lse rows.
  void finish();
  /// A split task's rows (O, m, l) into its block of the partials.
  void writePartials(Value iteration, Value part, const KeySplit &split);
  /// Where row `row` of part `part` of forall iteration `iteration` starts
  /// in the partials: blocks of queryTile rows per (iteration, part).
  Value partialRow(const KeySplit &split, Value iteration, Value part,
                   Value row) {
    Value block = e.add(e.mul(iteration, split.parts), part);
    return e.mul(e.add(e.mul(block, t.queryTile), row),
                 partialRowFloats(e, dvPaddedValue));
  }
  /// O, m and l of every row from the parts' partials, for finish().
  void mergePartials(Value iteration, const KeySplit &split);

private:
  Emitter e;
  AttentionOp op;
  const AttentionBuffers &buf;
  AttentionTiling t;
  bool bhsd;
  attn::ScoreKind score;
  attn::semantics::KeyVisibility visibility;
  VectorType vec;

  // Sizes.
  Value B, Hq, Hkv, S, T, Dk, Dv, A;
  std::optional<int64_t> staticDk, staticDv;
  // Task coordinates. The rows of a tile are (query head, query) pairs of
  // the G = Hq/Hkv query heads that share kv head `kvHead`, row = g·S + i:
  // decoding (S = 1) fills the vector lanes with the group's heads instead
  // of padding, and K and V are read once for the group.
  Value batch, kvHead, group, r0, nq, offset; // offset = T - S.
  // Queries the products and the softmax cover: nq rounded up to the
  // register blocks, so a short tile (decoding, S = 1) skips the padding.
  // A tile of at most one vector of rows (`oneVector`) covers one vector.
  Value liveQueries, oneVector;
  RowLayout kRows, vRows;
  // Scratch.
  Value qt, raw, scores, acc, rowMax, rowSum, alpha, keyScale, wqq, wkk;
  /// k = ceil(log2 T) (f32, a whole number): p = exp2(s - m - k), so that
  /// sum p <= 1 and O, a sum of p·v, stays within f32 wherever the output
  /// does. Whole, so that 2^-k is exact and the lse of a row with one key
  /// comes out as its score, not off by a rounding of log2 T.
  Value logKeys;
  // bf16 dot scores (t.bf16Dot with bf16 q and k): the raw queries as pairs
  // of depths, qPairs[m][i] = q[i][2m] | q[i][2m + 1] << 16 (i32, unscaled,
  // zero past Dk), the operand layout of vdpbf16ps with queries in lanes.
  // P·V likewise: the tile's probabilities rounded to bf16 pairs of keys,
  // pPairs[m][i] = p[2m][i] | p[2m + 1][i] << 16, and its values,
  // vPairs[m][d] = v[2m][d] | v[2m + 1][d] << 16 (Dv padded with zeros).
  bool bf16Dot = false;
  Value qPairs, pPairs, vPairs;
  // qRowPairs[i][m] = qPairs[m][i] for one vector of rows, each row padded
  // with zeros to qPairRowLength words (ceil(Dk / 2) rounded up to W): the
  // raw queries as depthInLanesScores reads them with bf16Dot.
  Value qRowPairs, qPairRowLength;
  // Prefill products on AMX tiles (t.matrixTiles, usesMatrixTiles): Q·Kᵀ
  // from qPairs and K rows, P·V from pRows and vPairs, whose rows past the
  // tile's keys are 0 up to tileKeys (BK rounded up to the 32 keys of a
  // tile product). pRows[i][j] = bf16 p[j][i], rows of tileKeys; keyBlock:
  // a last block of fewer than 16 K rows, copied (words, [16][Dk / 2]).
  bool amxTiles = false;
  int64_t tileKeys = 0;
  Value pRows, keyBlock;
  // The prescaled queries in row layout, qRows[i][d] for one vector of rows,
  // each row padded with zeros to dkPaddedValue floats.
  Value qRows;
  // f16/bf16 K and V (and bshd f32 V) of a tile of queries in lanes, copied
  // as f32 rows once per key tile (packedTileRows), kTile[j][d] and
  // vTile[j][d] for key j0 + j, rows padded to dkPaddedValue and
  // dvPaddedValue floats: converting in the products' inner loops costs 2
  // vector instructions per 16 FMAs on the ports that run the FMAs on Intel
  // cores. Null otherwise (and for bf16Dot, which reads the raw pairs).
  Value kTile, vTile;
  Value va; // Scaled score vector (additive).
  Value scoreFactor;  // Multiplies raw dot products (folded into QT).
  Value softcapScale; // c·log2(e) when softcap, else null.
  Value slopes;       // ALiBi slope · log2(e) per head of the group, or null.
  int64_t dvPadded = 0;
  // Dk and Dv rounded up to W: the row lengths of zero-padded scratch rows.
  Value dkPaddedValue, dvPaddedValue;

  /// Where a product reads the K or V rows of a key tile: the tile's key j
  /// is row `first + j` of `layout` in `data`.
  struct TileRows {
    Value data;
    RowLayout layout;
    Value first;
  };
  Value tileRowOffset(const TileRows &rows, Value j) {
    return rowOffset(rows.layout, e.add(rows.first, j));
  }

  RowLayout rows(Value heads, Value length, Value dim, Value h) {
    if (bhsd)
      return {e.mul(e.mul(e.add(e.mul(batch, heads), h), length), dim), dim};
    return {e.mul(e.add(e.mul(e.mul(batch, length), heads), h), dim),
            e.mul(heads, dim)};
  }
  Value rowOffset(const RowLayout &layout, Value row) {
    return e.add(layout.base, e.mul(row, layout.stride));
  }
  /// The query head and query of tile row `row` (r0 + row).
  std::pair<Value, Value> headAndQuery(Value row) {
    Value global = e.add(r0, row);
    ValueArith arith{e, e.b.getIndexType()};
    return {attn::semantics::packedQueryHead(arith, kvHead, group, global, S),
            attn::semantics::packedQuery(arith, global, S)};
  }
  /// The offset of (batch, h, i, 0) in q (dim Dk) or the output (Dv).
  Value queryOffset(Value h, Value i, Value dim) {
    return rowOffset(rows(Hq, S, dim, h), i);
  }
  Value alloca(Value elements) {
    auto type = MemRefType::get({ShapedType::kDynamic}, e.f32);
    return e.b.create<memref::AllocaOp>(type, ValueRange{elements},
                                        e.b.getI64IntegerAttr(64));
  }
  Value alloca(int64_t elements) {
    auto type = MemRefType::get({elements}, e.f32);
    Value fixed = e.b.create<memref::AllocaOp>(type, e.b.getI64IntegerAttr(64));
    return e.b.create<memref::CastOp>(
        MemRefType::get({ShapedType::kDynamic}, e.f32), fixed);
  }
  /// `elements` 32-bit words (pairs of bf16), a view of bytes that
  /// halvesOf sees as bf16.
  Value allocaWords(Value elements) {
    Value bytes = e.b.create<memref::AllocaOp>(
        MemRefType::get({ShapedType::kDynamic}, e.b.getI8Type()),
        ValueRange{e.mul(elements, 4)}, e.b.getI64IntegerAttr(64));
    return e.b.create<memref::ViewOp>(
        MemRefType::get({ShapedType::kDynamic}, e.b.getI32Type()), bytes,
        e.index(0), ValueRange{elements});
  }
  /// The words of allocaWords as twice as many bf16, low half first: the
  /// operands of AMX tile loads.
  Value halvesOf(Value words) {
    auto view = words.getDefiningOp<memref::ViewOp>();
    return e.b.create<memref::ViewOp>(
        MemRefType::get({ShapedType::kDynamic}, e.b.getBF16Type()),
        view.getSource(), e.index(0), ValueRange{e.mul(view.getSizes()[0], 2)});
  }
  /// `elements` bf16.
  Value allocaHalves(int64_t elements) {
    Value fixed = e.b.create<memref::AllocaOp>(
        MemRefType::get({elements}, e.b.getBF16Type()),
        e.b.getI64IntegerAttr(64));
    return e.b.create<memref::CastOp>(
        MemRefType::get({ShapedType::kDynamic}, e.b.getBF16Type()), fixed);
  }
  /// `factor` floats per element of `size`: a fixed size when `size` is a
  /// constant.
  Value allocaTimes(Value size, int64_t factor) {
    if (std::optional<int64_t> known = getConstantIntValue(size))
      return alloca(*known * factor);
    return alloca(e.mul(size, factor));
  }

  /// Prefetches the cache lines of `length` elements of `buffer` from
  /// `offset` (64-byte lines) into the schedule's decode prefetch level.
  void prefetchRow(Value buffer, Value offset, Value length,
                   std::optional<int64_t> staticLength) {
    int64_t elementBytes =
        cast<MemRefType>(buffer.getType()).getElementTypeBitWidth() / 8;
    int64_t perLine = std::max<int64_t>(1, 64 / elementBytes);
    // LLVM's locality 3 is prefetcht0 (into L1), 2 prefetcht1 (into L2).
    int64_t locality = t.decodePrefetchLevel == 2 ? 2 : 3;
    auto fetch = [&](Value at) {
      e.b.create<memref::PrefetchOp>(buffer, ValueRange{at}, /*isWrite=*/false,
                                     locality, /*isDataCache=*/true);
    };
    if (staticLength) {
      for (int64_t n = 0; n < *staticLength; n += perLine)
        fetch(e.add(offset, n));
      return;
    }
    e.loop(e.index(0), length, perLine,
           [&](Value n) { fetch(e.add(offset, n)); });
  }

  void computeScales();
  void packQueries();
  void packRaw(Value into);
  void projectQueries(Value weights, Value outputs, Value into,
                      function_ref<Value(Value, Value)> weightIndex);
  void packQueryRows();
  TileRows packedTileRows(Value source, const RowLayout &layout, Value depth,
                          std::optional<int64_t> staticDepth, Value tile,
                          Value stride, Value j0, Value nk);
  void dotScores(Value j0, Value nk, bool depthInLanes);
  void queriesInLanesScores(Value j0, Value nk);
  void forEachScoreBlock(
      const TileRows &keys, Value nk,
      function_ref<SmallVector<Value>(ArrayRef<Value>, Value)> block);
  void packQueryPairs();
  void packQueryPairTiles();
  void packQueryRowPairs();
  void transposeQueryRows(Value columns, Value count, Value rows,
                          Value rowLength, Value zero);
  void bf16DotScores(Value j0, Value nk);
  void prefetchDecodeStep(Value j0, Value jb);
  void depthInLanesScores(Value j0, Value nk);
  void additiveScores(Value j0, Value nk);
  Value transformScores(Value s, Value key, Value lane0, bool positionMasks);
  void valueBlock(Value row0, int64_t rows, Value d0, int64_t vectors,
                  Value lastCount, const TileRows &values, Value nk,
                  Value prefetchFrom = nullptr);
  void prefetchNextStepValues(Value key);
  void packProbabilityPairs(Value nk);
  void packPairs(Value j0, Value nk);
  void packValuePairs(Value j0, Value nk);
  bool usesMatrixTiles() const;
  void forTileBlocks(Value n, function_ref<void(Value, int64_t)> body);
  void tileScores(Value j0, Value nk);
  void blockTileScores(Value jb, int64_t keyTiles, Value keyData,
                       Value keyOffset, Value keyStride, Value queries);
  void packProbabilityRows(Value nk, Value queries);
  void tileValues(Value j0, Value nk);
  void valuePairBlock(Value row0, Value d0, int64_t vectors, Value nk);
  SmallVector<Value> pairProducts(Value m, Value row0, int64_t rows,
                                  ArrayRef<Value> values, ValueRange accs);
  void streamedValuePairBlock(Value row0, int64_t rows, int64_t d0,
                              int64_t vectors, Value j0, Value nk);
  int64_t wholeRowBlock() const;
  Value accumulatorOffset(Value row0, int64_t r, Value d0, int64_t v);
  SmallVector<Value> rescaledAccumulators(Value row0, Value d0, int64_t rows,
                                          int64_t vectors);
};

void AttentionTaskBuilder::beginRows(Value batchIndex, Value kvHeadIndex,
                                     Value rowStart, Value rowCount) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  vec = VectorType::get({W}, e.f32);
  const auto &q = buf.query.sizes, &k = buf.key.sizes, &v = buf.value.sizes;
  attn::semantics::LayoutAxes axes = op.getLayoutAxes();
  B = q[axes.batch];
  Hq = q[axes.heads];
  S = q[axes.length];
  Dk = q[axes.depth];
  Hkv = k[axes.heads];
  T = k[axes.length];
  Dv = v[axes.depth];
  staticDk = getConstantIntValue(Dk);
  staticDv = getConstantIntValue(Dv);

  // The tile's rows: packed rows [r0, r0 + nq) of kv head `kvHead`.
  ValueArith arith{e, e.b.getIndexType()};
  group = attn::semantics::groupSize(arith, Hq, Hkv);
  batch = batchIndex;
  kvHead = kvHeadIndex;
  r0 = rowStart;
  nq = rowCount;
  int64_t queryBlock =
      std::lcm(t.vectorWidth * t.scoreVectors, t.pvRows);
  oneVector = b.create<arith::CmpIOp>(arith::CmpIPredicate::ule, nq,
                                      e.index(W));
  liveQueries = b.create<arith::SelectOp>(
      oneVector, e.index(W),
      e.min(e.index(t.queryTile),
            e.mul(e.ceilDiv(nq, queryBlock), queryBlock)));
  offset = e.sub(T, S);
  logKeys = attn::softmaxShift(b, b.getLoc(), T);
  kRows = rows(Hkv, T, Dk, kvHead);
  vRows = rows(Hkv, T, Dv, kvHead);

  // Scratch tiles.
  int64_t BQ = t.queryTile, BK = t.keyTile;
  auto padded = [&](Value dim, std::optional<int64_t> staticDim) {
    return staticDim ? e.index(roundUp(*staticDim, W))
                     : e.mul(e.ceilDiv(dim, W), W);
  };
  dkPaddedValue = padded(Dk, staticDk);
  dvPaddedValue = padded(Dv, staticDv);
  dvPadded = staticDv ? roundUp(*staticDv, W) : 0;
  amxTiles = usesMatrixTiles();
  tileKeys = roundUp(BK, 2 * TileOps::kRows);
  // Whole blocks of depthInLanesScores' keys (or of tile products), which
  // may pass BK.
  scores = alloca(roundUp(BK, amxTiles ? tileKeys : depthKeys(W)) * BQ);
  acc = allocaTimes(dvPaddedValue, BQ);
  rowMax = alloca(BQ);
  rowSum = alloca(BQ);
  alpha = alloca(BQ);
  if (score == attn::ScoreKind::additive) {
    A = buf.queryWeight.sizes[0];
    raw = allocaTimes(Dk, BQ);
    wqq = allocaTimes(A, BQ);
    wkk = allocaTimes(A, BK);
    va = allocaTimes(A, 1);
  } else {
    qt = allocaTimes(Dk, BQ);
    if (score == attn::ScoreKind::general)
      raw = allocaTimes(Dk, BQ);
    if (score == attn::ScoreKind::cosine)
      keyScale = alloca(BK);
  }

  computeScales();
  bf16Dot = t.bf16Dot && score == attn::ScoreKind::dot &&
            isBf16(buf.query.data) && isBf16(buf.key.data);
  // bf16 dot products read the raw queries as pairs, never QT or qRows.
  if (!bf16Dot) {
    // Tile products read qPairs; only a tile of one vector of rows (vector
    // code) reads QT then.
    if (amxTiles)
      e.ifThen(oneVector, [&] { packQueries(); });
    else
      packQueries();
    if (score != attn::ScoreKind::additive)
      packQueryRows();
  } else {
    packQueryPairs();
    packQueryRowPairs();
  }
  auto isHalf = [](Value buffer) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    return element.isBF16() || element.isF16();
  };
  // bshd values are packed as well: a head's rows lie H·D apart, often a
  // power of two of bytes, which maps a key tile's rows onto a few sets of
  // the L1 cache, and P·V reads each row once per block of pvRows queries
  // (Q·Kᵀ reads each K row once per query tile, so K gains nothing).
  if (!bf16Dot && score != attn::ScoreKind::additive && isHalf(buf.key.data))
    kTile = allocaTimes(dkPaddedValue, BK);
  if (!bf16Dot && (isHalf(buf.value.data) || !bhsd))
    vTile = allocaTimes(dvPaddedValue, BK);
  if (bf16Dot)
    pPairs = allocaWords(e.index((BK + 1) / 2 * BQ));
  if (bf16Dot || amxTiles) {
    // Tile products take the keys 32 at a time.
    int64_t keyPairs = amxTiles ? tileKeys / 2 : (BK + 1) / 2;
    vPairs = allocaWords(e.mul(dvPaddedValue, keyPairs));
  }
  if (amxTiles) {
    if (!bf16Dot)
      packQueryPairTiles();
    pRows = allocaHalves(BQ * tileKeys);
    keyBlock = allocaWords(e.index(TileOps::kRows * *staticDk / 2));
  }

  // Running state: m = -inf, l = 0, O = 0.
  Value minusInf =
      e.constant(-std::numeric_limits<double>::infinity(), vec);
  Value zero = e.constant(0.0, vec);
  e.loop(e.index(0), e.index(BQ), W, [&](Value i) {
    b.create<vector::StoreOp>(minusInf, rowMax, i);
    b.create<vector::StoreOp>(zero, rowSum, i);
  });
  e.loop(e.index(0), e.mul(dvPaddedValue, BQ), W,
         [&](Value i) { b.create<vector::StoreOp>(zero, acc, i); });
  // Score lanes no product writes (depthInLanesScores leaves the rows past
  // nq) must still hold numbers.
  e.loop(e.index(0), e.index(roundUp(BK, depthKeys(W)) * BQ), W,
         [&](Value i) { b.create<vector::StoreOp>(zero, scores, i); });
}

/// The rows of a q or k tile: the offset and size of the first axis an
/// extract_slice keeps (its rank-reduced [rows, depth]).
std::pair<OpFoldResult, OpFoldResult> tileRows(Value tile) {
  auto slice = tile.getDefiningOp<tensor::ExtractSliceOp>();
  if (!slice)
    throw std::logic_error("tiled attention: a tile that is no slice");
  llvm::SmallBitVector dropped = slice.getDroppedDims();
  for (unsigned axis = 0; axis < dropped.size(); ++axis)
    if (!dropped.test(axis))
      return {slice.getMixedOffsets()[axis], slice.getMixedSizes()[axis]};
  throw std::logic_error("tiled attention: a tile without rows");
}

void AttentionTaskBuilder::lowerTiled(
    scf::ForallOp forall, ArrayRef<AttentionBuffers::Buffer> operands,
    Value taskIndex, const KeySplit &split, bool merge) {
  ImplicitLocOpBuilder &b = e.b;
  TiledValues values(b, b.getLoc(), forall, operands);
  // A split task is part (task % parts) of forall iteration (task / parts);
  // iteration = ((b · Hkv) + kv head) · row tiles + row tile.
  Value iteration = merge ? taskIndex : e.div(taskIndex, split.parts);
  SmallVector<OpFoldResult> bounds = forall.getMixedUpperBound();
  SmallVector<Value> coordinates(bounds.size());
  Value rest = iteration;
  for (int64_t d = bounds.size() - 1; d > 0; --d) {
    Value bound = values.get(bounds[d]);
    coordinates[d] = e.rem(rest, bound);
    rest = e.div(rest, bound);
  }
  coordinates[0] = rest;
  for (auto [iv, coordinate] :
       llvm::zip_equal(forall.getInductionVars(), coordinates))
    values.map(iv, coordinate);

  Block *body = forall.getBody();
  auto loops = body->getOps<scf::ForOp>();
  auto normalizes = body->getOps<attn::TileNormalizeOp>();
  if (!llvm::hasSingleElement(loops) || !llvm::hasSingleElement(normalizes))
    throw std::logic_error("tiled attention: expected one key loop and one "
                           "attn.tile_normalize");
  scf::ForOp loop = *loops.begin();
  auto scoresOps = loop.getBody()->getOps<attn::TileScoresOp>();
  if (!llvm::hasSingleElement(scoresOps))
    throw std::logic_error("tiled attention: expected one attn.tile_scores");
  attn::TileScoresOp firstScores = *scoresOps.begin();
  auto [rowStart, rowCount] = tileRows(firstScores.getQuery());
  beginRows(coordinates[0], coordinates[1], values.get(rowStart),
            values.get(rowCount));
  if (merge) {
    mergePartials(iteration, split);
    finish();
    return;
  }

  // This part's share of the iteration's key tiles.
  Value part = e.rem(taskIndex, split.parts);
  Value lb = values.get(loop.getLowerBound()),
        ub = values.get(loop.getUpperBound()),
        step = values.get(loop.getStep());
  Value span = e.max(e.sub(ub, lb), e.index(0));
  Value tiles = e.div(e.add(span, e.sub(step, e.index(1))), step);
  auto tileStart = [&](Value p) {
    return e.add(lb, e.mul(e.div(e.mul(tiles, p), split.parts), step));
  };
  auto keyLoop = b.create<scf::ForOp>(
      tileStart(part), e.min(ub, tileStart(e.add(part, 1))), step);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(keyLoop.getBody());
    Value j0 = keyLoop.getInductionVar(), nk, needMask;
    values.map(loop.getInductionVar(), j0);
    values.enterLoop(loop, keyLoop);
    for (Operation &op : loop.getBody()->without_terminator()) {
      if (auto scoresOp = dyn_cast<attn::TileScoresOp>(op)) {
        nk = values.get(tileRows(scoresOp.getKey()).second);
      } else if (auto ifOp = dyn_cast<scf::IfOp>(op)) {
        // The partial-tile test around attn.tile_mask.
        if (ifOp.getThenRegion().getOps<attn::TileMaskOp>().empty())
          throw std::logic_error("tiled attention: an scf.if without "
                                 "attn.tile_mask");
        needMask = values.get(ifOp.getCondition());
      } else if (isa<attn::TileSoftmaxUpdateOp>(op)) {
        if (visibility.hasPositionMask() != bool(needMask))
          throw std::logic_error("tiled attention: the mask test does not "
                                 "match the op's causal/window");
      } else if (isa<attn::TileAccumulateOp>(op) && !nk) {
        throw std::logic_error("tiled attention: attn.tile_accumulate "
                               "before attn.tile_scores");
      }
      // Slices and index arithmetic: computed by `values` where used.
    }
    // The tile ops in order; softmaxStep applies attn.tile_transform and
    // attn.tile_mask as it reads the scores for the running max.
    auto steps = [&](Value start, Value count, bool depthInLanes) {
      scoreTile(start, count, depthInLanes);
      softmaxStep(start, count, needMask);
      accumulateValues(start, count, depthInLanes);
    };
    // A tile of at most one vector of rows (decoding) streams K and V once
    // and is bound by memory: it takes the key tile in steps of
    // t.decodeStep keys, so that the K and V rows of a step are still in
    // L1 from the products to P·V.
    int64_t SB = t.decodeStep;
    e.ifThen(
        oneVector,
        [&] {
          e.loop(e.index(0), nk, SB, [&](Value sb) {
            steps(e.add(j0, sb), e.min(e.index(SB), e.sub(nk, sb)), true);
          });
        },
        [&] { steps(j0, nk, false); });
    values.exitLoop();
  }
  Value whole = b.create<arith::CmpIOp>(arith::CmpIPredicate::eq, split.parts,
                                        e.index(1));
  e.ifThen(
      whole, [&] { finish(); }, [&] { writePartials(iteration, part, split); });
}

void AttentionTaskBuilder::computeScales() {
  ImplicitLocOpBuilder &b = e.b;
  double log2e = 1.4426950408889634;
  // With a softcap c: s = c·tanh(scale·raw / c), in log2 units c·log2e·tanh.
  attn::semantics::ScaleRule rule = op.getScaleRule();
  double factor = rule.factor * log2e;
  if (auto softcap = op.getSoftcap()) {
    double c = softcap->convertToDouble();
    factor = rule.factor / c;
    softcapScale = e.f32Constant(c * log2e);
  }
  if (!rule.overSqrtKeyDim) {
    scoreFactor = e.f32Constant(factor);
  } else if (staticDk) {
    scoreFactor = e.f32Constant(factor / std::sqrt(double(*staticDk)));
  } else {
    // Dk is a run-time size: factor / sqrt(Dk), once per task.
    Value depth = b.create<arith::SIToFPOp>(
        b.getF64Type(), b.create<arith::IndexCastOp>(b.getI64Type(), Dk));
    Value quotient = b.create<arith::DivFOp>(
        b.create<arith::ConstantOp>(b.getF64FloatAttr(factor)),
        b.create<math::SqrtOp>(depth));
    scoreFactor = b.create<arith::TruncFOp>(e.f32, quotient);
  }
  if (op.getAlibi()) {
    slopes = alloca(group);
    e.loop(e.index(0), group, 1, [&](Value g) {
      Value head = e.add(e.mul(kvHead, group), g);
      Value slope;
      if (Value given = buf.alibiSlopes.data) {
        slope = e.loadF32(given, head);
      } else {
        // Standard slopes: n = 2^floor(log2 Hq); head h < n gets
        // 2^(-8(h+1)/n), the others every other slope of the 2n list:
        // 2^(-8(2(h-n)+1)/(2n)).
        Type i64 = b.getI64Type();
        Value hq = b.create<arith::IndexCastOp>(i64, Hq);
        Value leading = b.create<math::CountLeadingZerosOp>(hq);
        Value one = b.create<arith::ConstantIntOp>(1, 64);
        Value two = b.create<arith::ConstantIntOp>(2, 64);
        Value n = b.create<arith::ShLIOp>(
            one, b.create<arith::SubIOp>(
                     b.create<arith::ConstantIntOp>(63, 64), leading));
        Value h = b.create<arith::IndexCastOp>(i64, head);
        Value inFirst =
            b.create<arith::CmpIOp>(arith::CmpIPredicate::slt, h, n);
        Value numerator = b.create<arith::SelectOp>(
            inFirst, b.create<arith::AddIOp>(h, one),
            b.create<arith::AddIOp>(
                b.create<arith::MulIOp>(two, b.create<arith::SubIOp>(h, n)),
                one));
        Value denominator = b.create<arith::SelectOp>(
            inFirst, n, b.create<arith::MulIOp>(two, n));
        Value ratio = b.create<arith::DivFOp>(
            b.create<arith::SIToFPOp>(b.getF64Type(), numerator),
            b.create<arith::SIToFPOp>(b.getF64Type(), denominator));
        Value power = b.create<arith::MulFOp>(
            b.create<arith::ConstantOp>(b.getF64FloatAttr(-8.0)), ratio);
        slope = b.create<arith::TruncFOp>(e.f32,
                                          b.create<math::Exp2Op>(power));
      }
      b.create<memref::StoreOp>(
          b.create<arith::MulFOp>(slope, e.f32Constant(log2e)), slopes, g);
    });
  }
  if (score == attn::ScoreKind::additive) {
    // va · factor once, so the per-key sum comes out in log2 units.
    Value weights = buf.scoreVector.data;
    e.loop(e.index(0), A, 1, [&](Value a) {
      Value scaledWeight =
          b.create<arith::MulFOp>(e.loadF32(weights, a), scoreFactor);
      b.create<memref::StoreOp>(scaledWeight, va, a);
    });
  }
}

/// raw[d][i] = q[i][d] for the tile's queries, 0 for the padding rows past
/// nq, a vector of rows at a time: each whole block of W depths as W vector
/// loads transposed in registers (element by element, LLVM made each row a
/// vscatterdps: 1.4% of a D=64 prefill on Zen 5), the last Dk mod W depths
/// element by element.
void AttentionTaskBuilder::packRaw(Value into) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  Value zero = e.constant(0.0, vec);
  Value whole = e.roundDown(Dk, W);
  // Only the rows the products read (a decode tile: one vector, not BQ).
  e.loop(e.index(0), liveQueries, W, [&](Value i0) {
    SmallVector<Value> starts;
    for (int64_t l = 0; l < W; ++l) {
      // Padding rows read the tile's last row, then are zeroed.
      auto [head, query] =
          headAndQuery(e.min(e.add(i0, l), e.sub(nq, e.index(1))));
      starts.push_back(queryOffset(head, query, Dk));
    }
    Value inside = b.create<vector::CreateMaskOp>(
        VectorType::get({W}, b.getI1Type()), ValueRange{e.sub(nq, i0)});
    auto store = [&](Value column, Value d) {
      b.create<vector::StoreOp>(b.create<arith::SelectOp>(inside, column, zero),
                                into, e.add(e.mul(d, BQ), i0));
    };
    e.loop(e.index(0), whole, W, [&](Value d0) {
      SmallVector<Value> block;
      for (int64_t l = 0; l < W; ++l)
        block.push_back(e.loadVector(buf.query.data, e.add(starts[l], d0), W));
      e.transpose(block);
      for (int64_t k = 0; k < W; ++k)
        store(block[k], e.add(d0, k));
    });
    e.loop(whole, Dk, 1, [&](Value d) {
      Value column = zero;
      for (int64_t l = 0; l < W; ++l)
        column = b.create<vector::InsertOp>(
            e.loadF32(buf.query.data, e.add(starts[l], d)), column, l);
      store(column, d);
    });
  });
}

/// into[o][:] = sum_k weights[weightIndex(o, k)] · raw[k][:] for o < outputs,
/// k < Dk: a weight matrix applied to the packed queries, vectors of queries.
void AttentionTaskBuilder::projectQueries(
    Value weights, Value outputs, Value into,
    function_ref<Value(Value, Value)> weightIndex) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  e.loop(e.index(0), liveQueries, W, [&](Value i) {
    e.loop(e.index(0), outputs, 1, [&](Value o) {
      Value sum = e.loop(e.index(0), Dk, 1, e.constant(0.0, vec),
                         [&](Value k, ValueRange args) {
                           Value w = e.broadcast(
                               e.loadF32(weights, weightIndex(o, k)), W);
                           Value x = b.create<vector::LoadOp>(
                               vec, raw, e.add(e.mul(k, BQ), i));
                           return SmallVector<Value>{e.fma(w, x, args[0])};
                         })[0];
      b.create<vector::StoreOp>(sum, into, e.add(e.mul(o, BQ), i));
    });
  });
}

void AttentionTaskBuilder::packQueries() {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  if (score == attn::ScoreKind::dot) {
    packRaw(qt);
  } else if (score == attn::ScoreKind::cosine) {
    packRaw(qt);
    // Column i of QT divided by max(|q_i|, 1e-12), as vectors of queries.
    e.loop(e.index(0), liveQueries, W, [&](Value i) {
      Value sum = e.loop(e.index(0), Dk, 1, e.constant(0.0, vec),
                         [&](Value d, ValueRange args) {
                           Value x = b.create<vector::LoadOp>(
                               vec, qt, e.add(e.mul(d, BQ), i));
                           return SmallVector<Value>{e.fma(x, x, args[0])};
                         })[0];
      Value norm = e.fmax(b.create<math::SqrtOp>(sum), e.constant(1e-12, vec));
      Value inverse =
          b.create<arith::DivFOp>(e.constant(1.0, vec), norm);
      e.loop(e.index(0), Dk, 1, [&](Value d) {
        Value offset = e.add(e.mul(d, BQ), i);
        Value x = b.create<vector::LoadOp>(vec, qt, offset);
        b.create<vector::StoreOp>(b.create<arith::MulFOp>(x, inverse), qt,
                                  offset);
      });
    });
  } else if (score == attn::ScoreKind::general) {
    // QT[d][:] = sum_e W[e][d] · raw[e][:]: score = (q W) · k.
    packRaw(raw);
    projectQueries(buf.generalWeight.data, Dk, qt,
                   [&](Value d, Value k) { return e.add(e.mul(k, Dk), d); });
  } else {
    // Additive: wqq[a][:] = sum_d Wq[a][d] · raw[d][:].
    packRaw(raw);
    projectQueries(buf.queryWeight.data, A, wqq,
                   [&](Value a, Value d) { return e.add(e.mul(a, Dk), d); });
    return;
  }
  // Fold scale·log2(e) (or scale/c) into QT's live rows.
  Value factor = e.broadcast(scoreFactor, W);
  e.loop(e.index(0), Dk, 1, [&](Value d) {
    e.loop(e.index(0), liveQueries, W, [&](Value i) {
      Value at = e.add(e.mul(d, BQ), i);
      Value x = b.create<vector::LoadOp>(vec, qt, at);
      b.create<vector::StoreOp>(b.create<arith::MulFOp>(x, factor), qt, at);
    });
  });
}

void AttentionTaskBuilder::scoreTile(Value j0, Value nk, bool depthInLanes) {
  if (score == attn::ScoreKind::additive)
    additiveScores(j0, nk);
  else
    dotScores(j0, nk, depthInLanes);
}

/// qRows[i][d] = QT[d][i] for one vector of rows, zero past Dk: the queries
/// as depthInLanesScores reads them. Only a tile of at most one vector of
/// rows uses them.
void AttentionTaskBuilder::packQueryRows() {
  int64_t W = t.vectorWidth;
  qRows = allocaTimes(dkPaddedValue, W);
  transposeQueryRows(qt, Dk, qRows, dkPaddedValue, e.f32Constant(0.0));
}

/// rows[i][m] = columns[m][i] for the first W queries of a tile, m <
/// rowLength, `zero` from m = count on: queries-in-lanes packing (BQ lanes
/// per m) turned into rows for a tile of at most one vector of rows.
void AttentionTaskBuilder::transposeQueryRows(Value columns, Value count,
                                              Value rows, Value rowLength,
                                              Value zero) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  e.ifThen(oneVector, [&] {
    Value last = e.sub(count, e.index(1));
    e.loop(e.index(0), e.index(W), 1, [&](Value i) {
      e.loop(e.index(0), rowLength, 1, [&](Value m) {
        Value x = b.create<memref::LoadOp>(columns,
                                           e.add(e.mul(e.min(m, last), BQ), i));
        x = b.create<arith::SelectOp>(e.lt(m, count), x, zero);
        b.create<memref::StoreOp>(x, rows, e.add(e.mul(i, rowLength), m));
      });
    });
  });
}

/// SC[j][i] = sum_d K[j0+j][d] · Q[i][d] (Q prescaled). Keys past the tile
/// read the last key instead (their scores are never used).
void AttentionTaskBuilder::dotScores(Value j0, Value nk, bool depthInLanes) {
  ImplicitLocOpBuilder &b = e.b;
  if (keyScale) {
    // Cosine: 1 / max(|k_j|, 1e-12) per key of the tile.
    e.loop(e.index(0), nk, 1, [&](Value j) {
      Value row = rowOffset(kRows, e.add(j0, j));
      Value sum = e.loop(e.index(0), Dk, 1, e.f32Constant(0.0),
                         [&](Value d, ValueRange args) {
                           Value x = e.loadF32(buf.key.data, e.add(row, d));
                           return SmallVector<Value>{b.create<math::FmaOp>(
                               x, x, args[0])};
                         })[0];
      Value norm = b.create<arith::MaximumFOp>(b.create<math::SqrtOp>(sum),
                                               e.f32Constant(1e-12));
      b.create<memref::StoreOp>(
          b.create<arith::DivFOp>(e.f32Constant(1.0), norm), keyScale, j);
    });
  }
  // Queries in lanes need a full vector of rows to use the lanes; a decode
  // step has only the group's heads (Llama-3: 4), so it puts depth in lanes.
  if (depthInLanes)
    depthInLanesScores(j0, nk);
  else if (amxTiles)
    tileScores(j0, nk);
  else if (bf16Dot)
    bf16DotScores(j0, nk);
  else
    queriesInLanesScores(j0, nk);
}

/// qPairs[m][i] for m < ceil(Dk / 2), i < BQ: the bits of q[i][2m] in the
/// low half, q[i][2m + 1] (or 0 past Dk) in the high half, rows past the
/// tile 0.
void AttentionTaskBuilder::packQueryPairs() {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile;
  Type i16 = b.getI16Type(), i32 = b.getI32Type();
  Value pairs = e.ceilDiv(Dk, 2);
  qPairs = allocaWords(e.mul(pairs, BQ));
  Value zero = b.create<arith::ConstantIntOp>(0, 32);
  Value sixteen = b.create<arith::ConstantIntOp>(16, 32);
  Value lastDepth = e.sub(Dk, e.index(1));
  e.loop(e.index(0), liveQueries, 1, [&](Value i) {
    Value inside = e.lt(i, nq);
    auto [head, query] = headAndQuery(e.min(i, e.sub(nq, e.index(1))));
    Value row = queryOffset(head, query, Dk);
    auto bitsAt = [&](Value d) {
      Value x = b.create<memref::LoadOp>(buf.query.data,
                                         e.add(row, e.min(d, lastDepth)));
      Value bits = b.create<arith::ExtUIOp>(
          i32, b.create<arith::BitcastOp>(i16, x));
      return b.create<arith::SelectOp>(
          b.create<arith::AndIOp>(inside, e.lt(d, Dk)), bits, zero);
    };
    e.loop(e.index(0), pairs, 1, [&](Value m) {
      Value d = e.mul(m, 2);
      Value pair = b.create<arith::OrIOp>(
          bitsAt(d), b.create<arith::ShLIOp>(bitsAt(e.add(d, 1)), sixteen));
      b.create<memref::StoreOp>(pair, qPairs, e.add(e.mul(m, BQ), i));
    });
  });
}

/// qPairs as packQueryPairs packs them, for tile products (Dk a multiple of
/// 32, whole blocks of 16 queries): each block of 16 rows × 16 pairs of
/// depths (32 bf16 a row, as 16 words) transposed in registers.
void AttentionTaskBuilder::packQueryPairTiles() {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, R = TileOps::kRows;
  int64_t pairs = *staticDk / 2;
  qPairs = allocaWords(e.index(pairs * BQ));
  auto chunk = VectorType::get({2 * R}, b.getBF16Type());
  auto words = VectorType::get({R}, b.getI32Type());
  Value zero = b.create<arith::ConstantOp>(
      words, DenseElementsAttr::get(words, b.getI32IntegerAttr(0)));
  e.loop(e.index(0), liveQueries, R, [&](Value ib) {
    SmallVector<Value> starts, inside;
    for (int64_t l = 0; l < R; ++l) {
      Value i = e.add(ib, l);
      // Rows past the tile read its last row, then are zeroed.
      auto [head, query] = headAndQuery(e.min(i, e.sub(nq, e.index(1))));
      starts.push_back(queryOffset(head, query, Dk));
      inside.push_back(e.lt(i, nq));
    }
    for (int64_t m0 = 0; m0 < pairs; m0 += R) {
      SmallVector<Value> block;
      for (int64_t l = 0; l < R; ++l)
        block.push_back(b.create<arith::SelectOp>(
            inside[l],
            b.create<vector::BitCastOp>(
                words, b.create<vector::LoadOp>(chunk, buf.query.data,
                                                e.add(starts[l], 2 * m0))),
            zero));
      e.transpose(block);
      for (int64_t m = 0; m < R; ++m)
        b.create<vector::StoreOp>(block[m], qPairs,
                                  e.add(e.index((m0 + m) * BQ), ib));
    }
  });
}

/// qRowPairs[i][m] = qPairs[m][i] for one vector of rows, zero past the
/// pairs of Dk. Only a tile of at most one vector of rows uses them.
void AttentionTaskBuilder::packQueryRowPairs() {
  int64_t W = t.vectorWidth;
  Value pairs = e.ceilDiv(Dk, 2);
  qPairRowLength = staticDk ? e.index(roundUp((*staticDk + 1) / 2, W))
                            : e.mul(e.ceilDiv(pairs, W), W);
  qRowPairs = allocaWords(e.mul(qPairRowLength, W));
  transposeQueryRows(qPairs, pairs, qRowPairs, qPairRowLength,
                     e.b.create<arith::ConstantIntOp>(0, 32));
}

/// queriesInLanesScores with bf16 q and k on AVX512-BF16: each vdpbf16ps
/// takes two depths of 16 queries (qPairs) against a broadcast pair of one
/// key's depths, accumulating in f32, so Q·Kᵀ takes half the instructions of
/// the f32 FMAs; the exact products of the bf16 inputs are summed in f32 and
/// scaled once per block (the scale is not folded into bf16 queries, which
/// would round it).
void AttentionTaskBuilder::bf16DotScores(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  int64_t SK = t.scoreKeys, SV = t.scoreVectors;
  Type i16 = b.getI16Type(), i32 = b.getI32Type();
  auto pairsType = VectorType::get({W}, i32);
  auto bf16Type = VectorType::get({2 * W}, b.getBF16Type());
  auto keyPairType = VectorType::get({2}, b.getBF16Type());
  auto oneWordType = VectorType::get({1}, i32);
  Value wholePairs = b.create<arith::DivUIOp>(Dk, e.index(2));
  Value oddDepth = b.create<arith::CmpIOp>(
      arith::CmpIPredicate::ne, b.create<arith::RemUIOp>(Dk, e.index(2)),
      e.index(0));
  Value factor = e.broadcast(scoreFactor, W);
  auto dot = [&](Value acc, Value queries, Value keys) {
    return b
        .create<LLVM::CallIntrinsicOp>(
            vec, b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512"),
            ValueRange{acc, queries, keys})
        .getResult(0);
  };
  // One step: pair m of the block's query vectors against its keys' pairs.
  auto step = [&](Value m, ArrayRef<Value> keyPairs, Value ib,
                  ValueRange accs) {
    SmallVector<Value> queries;
    Value base = e.add(e.mul(m, BQ), ib);
    for (int64_t s = 0; s < SV; ++s)
      queries.push_back(b.create<vector::BitCastOp>(
          bf16Type, b.create<vector::LoadOp>(pairsType, qPairs,
                                             e.add(base, s * W))));
    SmallVector<Value> next;
    for (int64_t k = 0; k < SK; ++k)
      for (int64_t s = 0; s < SV; ++s)
        next.push_back(dot(accs[k * SV + s], queries[s], keyPairs[k]));
    return next;
  };
  auto broadcastPair = [&](Value word) {
    return b.create<vector::BitCastOp>(
        bf16Type, b.create<vector::BroadcastOp>(pairsType, word));
  };
  TileRows keys{buf.key.data, kRows, j0};
  forEachScoreBlock(keys, nk, [&](ArrayRef<Value> keyRows, Value ib) {
    SmallVector<Value> init(SK * SV, e.constant(0.0, vec));
    SmallVector<Value> sums = llvm::to_vector(
        e.loop(e.index(0), wholePairs, 1, init, [&](Value m, ValueRange accs) {
          // Two adjacent bf16 of a key row, loaded as one 32-bit word.
          SmallVector<Value> keyPairs;
          for (int64_t k = 0; k < SK; ++k) {
            Value pair = b.create<vector::LoadOp>(
                keyPairType, buf.key.data,
                ValueRange{e.add(keyRows[k], e.mul(m, 2))});
            keyPairs.push_back(broadcastPair(b.create<vector::ExtractOp>(
                b.create<vector::BitCastOp>(oneWordType, pair), 0)));
          }
          return step(m, keyPairs, ib, accs);
        }));
    // An odd Dk: the last depth alone, its pair's high half 0 (never the
    // next row's first element, which may be anything).
    SmallVector<Type> types(sums.size(), vec);
    sums = llvm::to_vector(e.choose(
        oddDepth, types,
        [&] {
          SmallVector<Value> keyPairs;
          for (int64_t k = 0; k < SK; ++k) {
            Value x = b.create<memref::LoadOp>(
                buf.key.data, e.add(keyRows[k], e.sub(Dk, e.index(1))));
            keyPairs.push_back(broadcastPair(b.create<arith::ExtUIOp>(
                i32, b.create<arith::BitcastOp>(i16, x))));
          }
          return step(wholePairs, keyPairs, ib, sums);
        },
        [&] { return sums; }));
    for (Value &sum : sums)
      sum = b.create<arith::MulFOp>(sum, factor);
    return sums;
  });
}

/// Score blocks of `scoreKeys` keys × `scoreVectors` query vectors,
/// accumulated in registers over d (docs/design/cpu-codegen-notes.md,
/// point 2).
void AttentionTaskBuilder::queriesInLanesScores(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  int64_t SK = t.scoreKeys, SV = t.scoreVectors;
  TileRows keys = packedTileRows(buf.key.data, kRows, Dk, staticDk, kTile,
                                 dkPaddedValue, j0, nk);
  forEachScoreBlock(
      keys, nk, [&](ArrayRef<Value> keyRows, Value ib) {
        SmallVector<Value> init(SK * SV, e.constant(0.0, vec));
        return llvm::to_vector(
            e.loop(e.index(0), Dk, 1, init, [&](Value d, ValueRange accs) {
              SmallVector<Value> queries;
              Value base = e.add(e.mul(d, BQ), ib);
              for (int64_t s = 0; s < SV; ++s)
                queries.push_back(
                    b.create<vector::LoadOp>(vec, qt, e.add(base, s * W)));
              SmallVector<Value> keyValues;
              for (int64_t k = 0; k < SK; ++k)
                keyValues.push_back(
                    e.broadcast(e.loadF32(keys.data, e.add(keyRows[k], d)), W));
              return e.outerProduct(keyValues, queries, accs);
            }));
      });
}

/// The rows of the nk keys from j0 (of `layout` in `source`) as a product
/// reads them: with a `tile`, tile[j][d] = source row j0 + j as f32, each row
/// `stride` floats (a whole number of vectors, 0 past `depth`), read from row
/// 0 (plain offsets keep the inner loops' addresses simple); without one,
/// `source` as it lies.
AttentionTaskBuilder::TileRows AttentionTaskBuilder::packedTileRows(
    Value source, const RowLayout &layout, Value depth,
    std::optional<int64_t> staticDepth, Value tile, Value stride, Value j0,
    Value nk) {
  if (!tile)
    return {source, layout, j0};
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  // f32 rows packed only for their layout (bshd) need no copy where they
  // already lie back to back (one kv head).
  Value asTheyLie;
  if (cast<MemRefType>(source.getType()).getElementType().isF32() &&
      source.getType() == tile.getType())
    asTheyLie =
        b.create<arith::CmpIOp>(arith::CmpIPredicate::eq, layout.stride, depth);
  auto copyRows = [&](Value j) {
    Value from = rowOffset(layout, e.add(j0, j));
    Value to = e.mul(j, stride);
    auto copy = [&](Value d, Value count) {
      b.create<vector::StoreOp>(e.loadVector(source, e.add(from, d), W, count),
                                tile, e.add(to, d));
    };
    if (!staticDepth) {
      e.loop(e.index(0), depth, W,
             [&](Value d) { copy(d, e.min(e.index(W), e.sub(depth, d))); });
      return;
    }
    int64_t full = *staticDepth / W;
    if (full > 0)
      e.loop(e.index(0), e.index(full * W), W,
             [&](Value d) { copy(d, nullptr); });
    if (int64_t tail = *staticDepth % W)
      copy(e.index(full * W), e.index(tail));
  };
  if (!asTheyLie) {
    e.loop(e.index(0), nk, 1, copyRows);
    return {tile, {e.index(0), stride}, e.index(0)};
  }
  auto pack = b.create<scf::IfOp>(asTheyLie, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&pack.getElseRegion().front());
    e.loop(e.index(0), nk, 1, copyRows);
  }
  auto pick = [&](Value lying, Value packed) {
    return b.create<arith::SelectOp>(asTheyLie, lying, packed).getResult();
  };
  return {pick(source, tile),
          {pick(layout.base, e.index(0)), pick(layout.stride, stride)},
          pick(j0, e.index(0))};
}

/// The tile's QKᵀ register blocks, `scoreKeys` keys × `scoreVectors` query
/// vectors each, for the tile's nk `keys`: `block` gets the keys' row
/// offsets (keys past the tile read its last key; their scores are never
/// used) and the block's first query, and returns its accumulators, which
/// go to `scores`.
void AttentionTaskBuilder::forEachScoreBlock(
    const TileRows &keys, Value nk,
    function_ref<SmallVector<Value>(ArrayRef<Value>, Value)> block) {
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  int64_t SK = t.scoreKeys, SV = t.scoreVectors;
  Value lastKey = e.add(keys.first, e.sub(nk, e.index(1)));
  e.loop(e.index(0), nk, SK, [&](Value jb) {
    SmallVector<Value> blockRows;
    for (int64_t k = 0; k < SK; ++k)
      blockRows.push_back(rowOffset(
          keys.layout, e.min(e.add(e.add(keys.first, jb), k), lastKey)));
    e.loop(e.index(0), liveQueries, SV * W, [&](Value ib) {
      e.storeBlock(block(blockRows, ib), SK, SV, scores,
                   [&](int64_t k, int64_t s) {
                     return e.add(e.mul(e.add(jb, k), BQ), e.add(ib, s * W));
                   });
    });
  });
}

/// Decoding streams K and V once, so it is bound by memory: asks for the
/// next step's K rows and (schedule's valuePrefetchBytes) this step's V rows,
/// read by P·V after the softmax a block at a time, for the
/// depthKeys(W) keys from j0 + jb, while their products run. Each measured
/// 10-30% faster on Zen 3; V a step ahead during P·V, slower. On Zen 5 the V
/// prefetches cost f32 rows 15-20% (docs/design/cpu-backend.md).
void AttentionTaskBuilder::prefetchDecodeStep(Value j0, Value jb) {
  int64_t W = t.vectorWidth;
  Value lastKey = e.sub(T, e.index(1));
  int64_t valueBytes =
      cast<MemRefType>(buf.value.data.getType()).getElementTypeBitWidth() / 8;
  bool prefetchValues = valueBytes <= t.valuePrefetchBytes;
  for (int64_t k = 0; k < depthKeys(W); ++k) {
    Value key = e.add(e.add(j0, jb), k);
    prefetchRow(buf.key.data,
                rowOffset(kRows, e.min(e.add(key, t.decodeStep), lastKey)), Dk,
                staticDk);
    if (prefetchValues)
      prefetchRow(buf.value.data, rowOffset(vRows, e.min(key, lastKey)), Dv,
                  staticDv);
  }
}

/// For at most one vector of rows: blocks of depthKeys(W) keys × depthRows(W)
/// rows, each accumulator a vector over d (K rows and queries read as
/// vectors, no broadcasts), then summed into one vector of scores by
/// sumEach: lane k·RB + r is key k, row r.
/// With bf16 q and k on AVX512-BF16 (bf16Dot) a step is one vdpbf16ps over
/// 2W depths of a key row against the same depths of a query row
/// (qRowPairs), both raw bf16 pairs as they lie in memory: half the
/// instructions of the f32 FMAs and K never converted; the exact products are
/// summed in f32 and scaled once, as in bf16DotScores. Otherwise a step is W
/// depths of f32 FMAs against the prescaled qRows.
void AttentionTaskBuilder::depthInLanesScores(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  int64_t RB = depthRows(W), KB = depthKeys(W);
  int64_t depthStep = bf16Dot ? 2 * W : W;
  Type bf16 = b.getBF16Type();
  auto bf16Type = VectorType::get({2 * W}, bf16);
  auto pairsType = VectorType::get({W}, b.getI32Type());
  Value lastKey = e.sub(T, e.index(1));
  Value fullDepth = staticDk ? e.index(*staticDk / depthStep * depthStep)
                             : e.mul(e.div(Dk, e.index(depthStep)), depthStep);
  Value rowEnd = e.mul(e.ceilDiv(nq, RB), RB);
  Value factor = bf16Dot ? e.broadcast(scoreFactor, W) : nullptr;
  // Built only for bf16Dot; a ternary would convert a null ConstantOp.
  Value zeros;
  if (bf16Dot)
    zeros = b.create<arith::ConstantOp>(
        bf16Type, DenseElementsAttr::get(bf16Type, b.getZeroAttr(bf16)));
  // The first `count` depths of a bf16 key row from `at`, the rest 0 (no
  // masked bf16 loads, as loadVector).
  auto partialBf16Key = [&](Value at, Value count) {
    return e.loop(
        e.index(0), count, 1, {zeros}, [&](Value lane, ValueRange args) {
          Value x = b.create<memref::LoadOp>(buf.key.data, e.add(at, lane));
          return SmallVector<Value>{
              b.create<vector::InsertElementOp>(x, args[0], lane)};
        })[0];
  };
  e.loop(e.index(0), nk, KB, [&](Value jb) {
    SmallVector<Value> keyRows;
    for (int64_t k = 0; k < KB; ++k)
      keyRows.push_back(
          rowOffset(kRows, e.min(e.add(e.add(j0, jb), k), lastKey)));
    prefetchDecodeStep(j0, jb);
    e.loop(e.index(0), rowEnd, RB, [&](Value rb) {
      // One step of depthStep depths; `count` masks (zero-pads) the last,
      // partial one.
      auto step = [&](Value d, ValueRange accs,
                      Value count) -> SmallVector<Value> {
        SmallVector<Value> keys, queries;
        if (!bf16Dot) {
          for (int64_t k = 0; k < KB; ++k)
            keys.push_back(
                e.loadVector(buf.key.data, e.add(keyRows[k], d), W, count));
          for (int64_t r = 0; r < RB; ++r)
            queries.push_back(b.create<vector::LoadOp>(
                vec, qRows, e.add(e.mul(e.add(rb, r), dkPaddedValue), d)));
          return e.outerProduct(keys, queries, accs);
        }
        for (int64_t k = 0; k < KB; ++k)
          keys.push_back(count
                             ? partialBf16Key(e.add(keyRows[k], d), count)
                             : b.create<vector::LoadOp>(bf16Type, buf.key.data,
                                                        e.add(keyRows[k], d)));
        Value word = e.div(d, e.index(2));
        for (int64_t r = 0; r < RB; ++r)
          queries.push_back(b.create<vector::BitCastOp>(
              bf16Type, b.create<vector::LoadOp>(
                            pairsType, qRowPairs,
                            e.add(e.mul(e.add(rb, r), qPairRowLength), word))));
        SmallVector<Value> next;
        for (int64_t k = 0; k < KB; ++k)
          for (int64_t r = 0; r < RB; ++r)
            next.push_back(
                b.create<LLVM::CallIntrinsicOp>(
                     vec, b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512"),
                     ValueRange{accs[k * RB + r], queries[r], keys[k]})
                    .getResult(0));
        return next;
      };
      SmallVector<Value> init(KB * RB, e.constant(0.0, vec));
      SmallVector<Value> sums = llvm::to_vector(e.loop(
          e.index(0), fullDepth, depthStep, init,
          [&](Value d, ValueRange accs) { return step(d, accs, nullptr); }));
      if (!staticDk || *staticDk % depthStep) {
        SmallVector<Type> types(sums.size(), vec);
        sums = llvm::to_vector(e.choose(
            e.lt(fullDepth, Dk), types,
            [&] { return step(fullDepth, sums, e.sub(Dk, fullDepth)); },
            [&] { return sums; }));
      }
      Value total = e.sumEach(sums);
      if (bf16Dot)
        total = b.create<arith::MulFOp>(total, factor);
      for (int64_t k = 0; k < KB; ++k)
        b.create<vector::StoreOp>(b.create<vector::ExtractStridedSliceOp>(
                                      total, ArrayRef<int64_t>{k * RB},
                                      ArrayRef<int64_t>{RB},
                                      ArrayRef<int64_t>{1}),
                                  scores, e.add(e.mul(e.add(jb, k), BQ), rb));
    });
  });
}

/// SC[j][i] = sum_a va[a] · tanh(wqq[a][i] + (Wk k_j)[a]).
void AttentionTaskBuilder::additiveScores(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  Value keyWeights = buf.keyWeight.data;
  e.loop(e.index(0), nk, 1, [&](Value j) {
    Value row = rowOffset(kRows, e.add(j0, j));
    e.loop(e.index(0), A, 1, [&](Value a) {
      Value sum = e.loop(e.index(0), Dk, 1, e.f32Constant(0.0),
                         [&](Value d, ValueRange args) {
                           Value w = e.loadF32(keyWeights, e.add(e.mul(a, Dk), d));
                           Value x = e.loadF32(buf.key.data, e.add(row, d));
                           return SmallVector<Value>{
                               b.create<math::FmaOp>(w, x, args[0])};
                         })[0];
      b.create<memref::StoreOp>(sum, wkk, e.add(e.mul(j, A), a));
    });
    e.loop(e.index(0), liveQueries, W, [&](Value i) {
      Value total = e.loop(
          e.index(0), A, 1, e.constant(0.0, vec),
          [&](Value a, ValueRange args) {
            Value key = e.broadcast(
                b.create<memref::LoadOp>(wkk, e.add(e.mul(j, A), a)), W);
            Value query =
                b.create<vector::LoadOp>(vec, wqq, e.add(e.mul(a, BQ), i));
            Value hidden =
                b.create<math::TanhOp>(b.create<arith::AddFOp>(query, key));
            Value weight = e.broadcast(b.create<memref::LoadOp>(va, a), W);
            return SmallVector<Value>{e.fma(weight, hidden, args[0])};
          })[0];
      b.create<vector::StoreOp>(total, scores, e.add(e.mul(j, BQ), i));
    });
  });
}

/// Softcap, biases and masks on the scores of key `key` for the query
/// vector starting at lane0 (a tile row offset).
Value AttentionTaskBuilder::transformScores(Value s, Value key, Value lane0,
                                            bool positionMasks) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  auto i32Vec = VectorType::get({W}, b.getI32Type());
  auto i1Vec = VectorType::get({W}, b.getI1Type());
  if (softcapScale)
    s = b.create<arith::MulFOp>(b.create<math::TanhOp>(s),
                                e.broadcast(softcapScale, W));
  // Lanes of real queries (the padding lanes past nq must not be read).
  Value laneCount = e.sub(nq, lane0);
  Value lanes = b.create<vector::CreateMaskOp>(i1Vec, laneCount);
  SmallVector<int32_t> laneNumbers(W);
  std::iota(laneNumbers.begin(), laneNumbers.end(), 0);
  Value iota = b.create<arith::ConstantOp>(
      i32Vec, DenseElementsAttr::get(i32Vec, ArrayRef<int32_t>(laneNumbers)));
  auto toI32 = [&](Value index) {
    return b.create<arith::IndexCastOp>(b.getI32Type(), index);
  };
  auto splatI32 = [&](Value scalar) {
    return b.create<vector::BroadcastOp>(i32Vec, toI32(scalar));
  };
  // Each lane's row: group member g (query head kvHead·G + g) and query i.
  Value laneRows =
      b.create<arith::AddIOp>(splatI32(e.add(r0, lane0)), iota);
  Value laneMembers = b.create<arith::DivUIOp>(laneRows, splatI32(S));
  Value laneQueries = b.create<arith::RemUIOp>(laneRows, splatI32(S));
  auto i64Vec = VectorType::get({W}, b.getI64Type());
  auto splatI64 = [&](Value index) {
    return b.create<vector::BroadcastOp>(
        i64Vec, b.create<arith::IndexCastOp>(b.getI64Type(), index));
  };
  Value laneHeads64 = b.create<arith::AddIOp>(
      splatI64(e.mul(kvHead, group)),
      b.create<arith::ExtUIOp>(i64Vec, laneMembers));
  Value laneQueries64 = b.create<arith::ExtUIOp>(i64Vec, laneQueries);
  // Offsets of (b, lane's head, lane's query, key) in a tensor broadcast to
  // [B, Hq, S, T]: a scalar base plus per-lane 64-bit offsets.
  auto broadcastOffsets = [&](const AttentionBuffers::Buffer &buffer)
      -> std::pair<Value, Value> {
    SmallVector<Value> full = {B, Hq, S, T};
    SmallVector<Value> strides(4, e.index(0));
    Value stride = e.index(1);
    int64_t rank = buffer.sizes.size();
    for (int64_t d = rank - 1; d >= 0; --d) {
      int64_t target = 4 - rank + d;
      Value size = buffer.sizes[d];
      Value isOne = b.create<arith::CmpIOp>(arith::CmpIPredicate::eq, size,
                                            e.index(1));
      strides[target] = b.create<arith::SelectOp>(isOne, e.index(0), stride);
      stride = e.mul(stride, size);
    }
    Value base = e.add(e.mul(batch, strides[0]), e.mul(key, strides[3]));
    Value laneOffsets = b.create<arith::AddIOp>(
        b.create<arith::MulIOp>(laneHeads64, splatI64(strides[1])),
        b.create<arith::MulIOp>(laneQueries64, splatI64(strides[2])));
    return {base, laneOffsets};
  };
  auto gather = [&](const AttentionBuffers::Buffer &buffer) {
    auto [base, laneOffsets] = broadcastOffsets(buffer);
    Type element = cast<MemRefType>(buffer.data.getType()).getElementType();
    auto type = VectorType::get({W}, element);
    Value zero = b.create<arith::ConstantOp>(
        type, DenseElementsAttr::get(type, b.getZeroAttr(element)));
    return b.create<vector::GatherOp>(type, buffer.data, ValueRange{base},
                                      laneOffsets, lanes, zero)
        .getResult();
  };
  double log2e = 1.4426950408889634;
  for (auto [bias, tensor] : llvm::zip_equal(buf.biases, op.getBiases())) {
    Value values = gather(bias);
    Type element = cast<ShapedType>(tensor.getType()).getElementType();
    if (element != getElementTypeOrSelf(values.getType()))
      values = b.create<arith::BitcastOp>(VectorType::get({W}, element),
                                          values); // 16-bit float bits.
    values = e.toF32(values);
    s = e.fma(values, e.constant(log2e, vec), s);
  }
  Value position; // i' - j per lane.
  if (slopes)
    position = b.create<arith::SubIOp>(
        b.create<arith::AddIOp>(laneQueries, splatI32(offset)),
        splatI32(key));
  if (slopes) {
    Value distance = b.create<math::AbsIOp>(position);
    Value penalty = b.create<arith::SIToFPOp>(vec, distance);
    Value laneSlopes = b.create<vector::GatherOp>(
        vec, slopes, ValueRange{e.index(0)}, laneMembers, lanes,
        e.constant(0.0, vec));
    s = e.fma(penalty, b.create<arith::NegFOp>(laneSlopes), s);
  }
  Value keep;
  auto keepAlso = [&](Value condition) {
    keep = keep ? b.create<arith::AndIOp>(keep, condition).getResult()
                : condition;
  };
  if (positionMasks) {
    // In i64 lanes: window bounds reach 2^62 (AttnSemantics.h).
    ValueArith lanes64{e, i64Vec};
    Value lanePositions = lanes64.add(laneQueries64, splatI64(offset));
    Value keys = splatI64(key), keyLen = splatI64(T);
    keepAlso(attn::semantics::keyVisible(lanes64, visibility, lanePositions,
                                         keys, keyLen));
  }
  std::optional<ArrayRef<bool>> drops;
  if (auto attr = op.getMaskDrops())
    drops = *attr;
  for (auto [n, mask] : llvm::enumerate(buf.masks)) {
    auto i8Vec = VectorType::get({W}, b.getI8Type());
    Value bytes = gather(mask);
    Value zeros = b.create<arith::ConstantOp>(
        i8Vec, DenseElementsAttr::get(i8Vec, b.getI8IntegerAttr(0)));
    bool drop = drops && (*drops)[n];
    keepAlso(b.create<arith::CmpIOp>(drop ? arith::CmpIPredicate::eq
                                          : arith::CmpIPredicate::ne,
                                     bytes, zeros));
  }
  if (keep)
    s = b.create<arith::SelectOp>(
        keep, s, e.constant(-std::numeric_limits<double>::infinity(), vec));
  return s;
}

/// The online-softmax update of the tile: new running max, p = exp2(s - m -
/// k) in place of the scores (k = ceil(log2 T)), alpha = exp2(m_old -
/// m_new), l = alpha·l + sum p. The shift by k changes nothing but the
/// range: l <= 1 and |O| <= max |v|, where exp2(s - m) would let O reach
/// T·max |v| and overflow f32 for values the output holds (|v| > 3.4e38 /
/// T).
void AttentionTaskBuilder::softmaxStep(Value j0, Value nk,
                                       Value needPositionMask) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  bool transforms = softcapScale || slopes || keyScale || !buf.biases.empty() ||
                    !buf.masks.empty();
  bool positionMasks = visibility.hasPositionMask();
  Value minusInf = e.constant(-std::numeric_limits<double>::infinity(), vec);
  e.loop(e.index(0), liveQueries, W, [&](Value i) {
    Value oldMax = b.create<vector::LoadOp>(vec, rowMax, i);
    auto maxPass = [&](bool masked) {
      auto score = [&](Value j) {
        Value offset = e.add(e.mul(j, BQ), i);
        Value s = b.create<vector::LoadOp>(vec, scores, offset);
        if (keyScale)
          s = b.create<arith::MulFOp>(
              s, e.broadcast(b.create<memref::LoadOp>(keyScale, j), W));
        if (transforms || masked) {
          s = transformScores(s, e.add(j0, j), i, masked);
          b.create<vector::StoreOp>(s, scores, offset);
        }
        return s;
      };
      // Transformed scores take many instructions each, so one chain
      // waits on nothing; and LLVM 19 crashes scalarising the masked loads
      // of bool masks copied per chain.
      int64_t chains = transforms || masked ? 1 : kReductionChains;
      return e.reduce(nk, oldMax, minusInf, chains, score,
                      [&](Value x, Value y) { return e.fmax(x, y); });
    };
    Value newMax;
    if (positionMasks) {
      auto ifOp = b.create<scf::IfOp>(
          needPositionMask,
          [&](OpBuilder &nested, Location) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            b.create<scf::YieldOp>(maxPass(true));
          },
          [&](OpBuilder &nested, Location) {
            OpBuilder::InsertionGuard guard(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            b.create<scf::YieldOp>(maxPass(false));
          });
      newMax = ifOp.getResult(0);
    } else {
      newMax = maxPass(false);
    }
    if (amxTiles) {
      // The tile path keeps a row's max unless it grew by more than
      // kKeptMaxGrowth (m and l stay consistent, so the result is the
      // same): its probabilities stay below 2^kKeptMaxGrowth, far from
      // overflow in f32 and bf16, and O, which tile products read from
      // memory, is rescaled only in the steps where a max moves.
      // A row's first keys (m = -inf) and NaN take the new max.
      Value grew = b.create<arith::SubFOp>(newMax, oldMax);
      Value keep = b.create<arith::CmpFOp>(arith::CmpFPredicate::OLE, grew,
                                           e.constant(kKeptMaxGrowth, vec));
      newMax = b.create<arith::SelectOp>(keep, oldMax, newMax);
    }
    // A row with no key so far keeps m = -inf; subtract 0 instead, so that
    // exp2(-inf - m) is 0 and never NaN.
    Value empty =
        b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, newMax, minusInf);
    Value safeMax =
        b.create<arith::SelectOp>(empty, e.constant(0.0, vec), newMax);
    Value rescale = e.exp2(b.create<arith::SubFOp>(oldMax, safeMax));
    Value bits = e.broadcast(logKeys, W);
    Value oldSum = b.create<vector::LoadOp>(vec, rowSum, i);
    Value sum = e.reduce(
        nk, b.create<arith::MulFOp>(oldSum, rescale), e.constant(0.0, vec),
        kReductionChains,
        [&](Value j) {
          Value offset = e.add(e.mul(j, BQ), i);
          Value s = b.create<vector::LoadOp>(vec, scores, offset);
          // (s - m) - k, never s - (m + k): m + k would round away
          // the low bits of m, which the lse of a row with one key is.
          Value p = e.exp2(b.create<arith::SubFOp>(
              b.create<arith::SubFOp>(s, safeMax), bits));
          b.create<vector::StoreOp>(p, scores, offset);
          return p;
        },
        [&](Value x, Value y) { return b.create<arith::AddFOp>(x, y); });
    b.create<vector::StoreOp>(newMax, rowMax, i);
    b.create<vector::StoreOp>(sum, rowSum, i);
    b.create<vector::StoreOp>(rescale, alpha, i);
  });
}

/// Where vector v of row row0 + r of a P·V register block starts in acc.
Value AttentionTaskBuilder::accumulatorOffset(Value row0, int64_t r, Value d0,
                                              int64_t v) {
  return e.add(e.mul(e.add(row0, r), dvPaddedValue),
               e.add(d0, v * t.vectorWidth));
}

/// A P·V register block's accumulators, alpha_r · acc[r][...], row-major.
SmallVector<Value> AttentionTaskBuilder::rescaledAccumulators(Value row0,
                                                              Value d0,
                                                              int64_t rows,
                                                              int64_t vectors) {
  ImplicitLocOpBuilder &b = e.b;
  SmallVector<Value> block;
  for (int64_t r = 0; r < rows; ++r) {
    Value rescale = e.broadcast(
        b.create<memref::LoadOp>(alpha, e.add(row0, r)), t.vectorWidth);
    for (int64_t v = 0; v < vectors; ++v)
      block.push_back(b.create<arith::MulFOp>(
          b.create<vector::LoadOp>(vec, acc,
                                   accumulatorOffset(row0, r, d0, v)),
          rescale));
  }
  return block;
}

/// The V row of key + decode_step (the same key of the next decode step)
/// into L2, while P·V runs on this step's rows: without them no read is in
/// flight while the row blocks after the first compute from L1 (AMD EPYC
/// Zen 4, P·V of Llama-3-8B f32 decode alone: 6.8 ms with two row blocks,
/// 5.7 with the first only).
void AttentionTaskBuilder::prefetchNextStepValues(Value key) {
  prefetchRow(
      buf.value.data,
      rowOffset(vRows, e.min(e.add(key, t.decodeStep), e.sub(T, e.index(1)))),
      Dv, staticDv);
}

/// acc[r][d0 + v·W ...] = alpha_r · acc + sum_j p[j][r] · V[j][...] for
/// `vectors` vectors of `R` rows; the last vector holds `lastCount` lanes
/// when given. With prefetchFrom (a decode step's first key), each key's
/// row of the next step is prefetched.
void AttentionTaskBuilder::valueBlock(Value row0, int64_t R, Value d0,
                                      int64_t vectors, Value lastCount,
                                      const TileRows &values, Value nk,
                                      Value prefetchFrom) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  SmallVector<Value> init = rescaledAccumulators(row0, d0, R, vectors);
  auto accumulateKey =
      [&](Value j, ValueRange accs) {
        Value row = tileRowOffset(values, j);
        if (prefetchFrom)
          prefetchNextStepValues(e.add(prefetchFrom, j));
        SmallVector<Value> rowVectors;
        for (int64_t v = 0; v < vectors; ++v)
          rowVectors.push_back(
              e.loadVector(values.data, e.add(row, e.add(d0, v * W)), W,
                           v == vectors - 1 ? lastCount : nullptr));
        SmallVector<Value> probabilities;
        for (int64_t r = 0; r < R; ++r)
          probabilities.push_back(e.broadcast(
              b.create<memref::LoadOp>(scores,
                                       e.add(e.mul(j, BQ), e.add(row0, r))),
              W));
        return e.outerProduct(probabilities, rowVectors, accs);
      };
  // Over a packed tile (vTile), LLVM's runtime unrolling keeps the next
  // key's V vectors beside the block's accumulators and spills some; V rows
  // read in place measured no better without it (f32, D = 64 and 128).
  ValueRange sums =
      values.data == vTile
          ? e.registerBlockLoop(e.index(0), nk, init, accumulateKey)
          : e.loop(e.index(0), nk, 1, init, accumulateKey);
  e.storeBlock(sums, R, vectors, acc, [&](int64_t r, int64_t v) {
    return accumulatorOffset(row0, r, d0, v);
  });
}

/// Lanes offset + i of low and high side by side, i < W: the pairs of a
/// vdpbf16ps operand.
static Value interleaveHalves(OpBuilder &b, Location loc, Value low, Value high,
                              int64_t W, int64_t offset = 0) {
  SmallVector<int64_t> lanes;
  int64_t other = cast<VectorType>(low.getType()).getNumElements();
  for (int64_t lane = offset; lane < offset + W; ++lane)
    lanes.append({lane, lane + other});
  return b.create<vector::ShuffleOp>(loc, low, high, lanes);
}

/// pPairs of keys [0, nk) of the tile: the probabilities rounded to bf16,
/// adjacent keys interleaved as vdpbf16ps takes them, pPairs[m][i] =
/// p[2m][i] | p[2m + 1][i] << 16; a missing odd last key is 0.
void AttentionTaskBuilder::packProbabilityPairs(Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth;
  auto pairType = VectorType::get({2 * W}, b.getBF16Type());
  auto wordsType = VectorType::get({W}, b.getI32Type());
  e.loop(e.index(0), e.ceilDiv(nk, 2), 1, [&](Value m) {
    Value first = e.mul(m, 2), second = e.add(first, 1);
    Value hasSecond = e.lt(second, nk);
    // vcvtne2ps2bf16 gives the first key's in lanes [0, W) and the
    // second's in [W, 2W), which interleave.
    Value secondRow = e.min(second, e.sub(nk, e.index(1)));
    e.loop(e.index(0), liveQueries, W, [&](Value i) {
      Value low = b.create<vector::LoadOp>(vec, scores,
                                           e.add(e.mul(first, BQ), i));
      Value high = b.create<arith::SelectOp>(
          hasSecond,
          b.create<vector::LoadOp>(vec, scores,
                                   e.add(e.mul(secondRow, BQ), i)),
          e.constant(0.0, vec));
      Value both =
          b.create<LLVM::CallIntrinsicOp>(
               pairType,
               b.getStringAttr("llvm.x86.avx512bf16.cvtne2ps2bf16.512"),
               ValueRange{high, low})
              .getResult(0);
      auto half = [&](int64_t offset) {
        return b.create<vector::ExtractStridedSliceOp>(
            both, ArrayRef<int64_t>{offset}, ArrayRef<int64_t>{W},
            ArrayRef<int64_t>{1});
      };
      Value pairs = interleaveHalves(b, b.getLoc(), half(0), half(W), W);
      b.create<vector::StoreOp>(b.create<vector::BitCastOp>(wordsType, pairs),
                                pPairs, e.add(e.mul(m, BQ), i));
    });
  });
}

/// pPairs and vPairs of keys [j0, j0 + nk): adjacent keys interleaved, as
/// vdpbf16ps takes them; a missing odd last key is 0 in both (never the next
/// row of V, which may hold anything).
void AttentionTaskBuilder::packPairs(Value j0, Value nk) {
  packProbabilityPairs(nk);
  packValuePairs(j0, nk);
}

/// vPairs[m] for the ceil(nk / 2) pairs of keys from j0.
void AttentionTaskBuilder::packValuePairs(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  Type bf16 = b.getBF16Type();
  auto halfType = VectorType::get({W}, bf16);
  auto bitsType = VectorType::get({W}, b.getI16Type());
  auto wordsType = VectorType::get({W}, b.getI32Type());
  Value lastKey = e.sub(T, e.index(1));
  Value zero = b.create<arith::ConstantOp>(
      halfType, DenseElementsAttr::get(halfType, b.getFloatAttr(bf16, 0.0)));
  Value zeroBits = b.create<arith::ConstantOp>(
      bitsType, DenseElementsAttr::get(bitsType, b.getI16IntegerAttr(0)));
  bool wholeVectors = staticDv && *staticDv % W == 0;
  // W values from `at` as their bits (LLVM widens bfloat vectors it moves
  // through registers on CPUs without AVX512-BF16), Dv padded with zeros
  // to whole vectors; masked loads only where Dv needs them.
  auto loadBits = [&](Value at, Value d) -> Value {
    if (wholeVectors)
      return b.create<vector::BitCastOp>(
          bitsType, b.create<vector::LoadOp>(halfType, buf.value.data, at));
    Value count = e.min(e.index(W), e.sub(Dv, d));
    Value mask = b.create<vector::CreateMaskOp>(
        VectorType::get({W}, b.getI1Type()), count);
    return b.create<vector::BitCastOp>(
        bitsType, b.create<vector::MaskedLoadOp>(halfType, buf.value.data, at,
                                                 mask, zero));
  };
  e.loop(e.index(0), e.ceilDiv(nk, 2), 1, [&](Value m) {
    Value first = e.mul(m, 2), second = e.add(first, 1);
    Value hasSecond = e.lt(second, nk);
    Value rowA = rowOffset(vRows, e.add(j0, first));
    Value rowB = rowOffset(vRows, e.min(e.add(j0, second), lastKey));
    e.loop(e.index(0), dvPaddedValue, W, [&](Value d) {
      Value low = loadBits(e.add(rowA, d), d);
      Value high = b.create<arith::SelectOp>(
          hasSecond, loadBits(e.add(rowB, d), d), zeroBits);
      Value pairs = interleaveHalves(b, b.getLoc(), low, high, W);
      b.create<vector::StoreOp>(b.create<vector::BitCastOp>(wordsType, pairs),
                                vPairs, e.add(e.mul(m, dvPaddedValue), d));
    });
  });
}

/// bf16 P·V of a decode step (pPairs packed) for `rows` rows and `vectors`
/// vectors of columns from d0: V read straight from memory, two adjacent
/// rows of 2W bf16 interleaved in registers into two vdpbf16ps operands, so
/// that each vdpbf16ps adds two keys' p·v to W columns of a row: half the
/// instructions of converting V to f32 and an FMA per key.
void AttentionTaskBuilder::streamedValuePairBlock(Value row0, int64_t rows,
                                                  int64_t d0, int64_t vectors,
                                                  Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  Type bf16 = b.getBF16Type();
  auto pairType = VectorType::get({2 * W}, bf16);
  Value zero = b.create<arith::ConstantOp>(
      pairType, DenseElementsAttr::get(pairType, b.getFloatAttr(bf16, 0.0)));
  // The 2W-lane chunks of a row that hold the block's columns; the last
  // may end past Dv (masked, zeros).
  auto loadRow = [&](Value key) {
    SmallVector<Value> chunks;
    Value row = rowOffset(vRows, e.add(j0, key));
    for (int64_t v = 0; v < vectors; v += 2) {
      int64_t column = d0 + v * W, count = std::min(2 * W, *staticDv - column);
      Value at = e.add(row, e.index(column));
      if (count == 2 * W) {
        chunks.push_back(
            b.create<vector::LoadOp>(pairType, buf.value.data, at));
        continue;
      }
      Value mask = b.create<vector::CreateMaskOp>(
          VectorType::get({2 * W}, b.getI1Type()), e.index(count));
      chunks.push_back(b.create<vector::MaskedLoadOp>(pairType, buf.value.data,
                                                      at, mask, zero));
    }
    return chunks;
  };
  // Keys 2m and 2m + 1 (a zero row past an odd last key: the probability
  // is 0 there, but the memory past the tile may hold NaN).
  auto step = [&](Value m, ValueRange accs, bool hasSecond) {
    Value first = e.mul(m, 2);
    if (hasSecond && t.decodePrefetchLevel == 2) {
      prefetchNextStepValues(e.add(j0, first));
      prefetchNextStepValues(e.add(j0, e.add(first, 1)));
    }
    SmallVector<Value> low = loadRow(first);
    SmallVector<Value> high = hasSecond ? loadRow(e.add(first, 1))
                                        : SmallVector<Value>(low.size(), zero);
    SmallVector<Value> values;
    for (int64_t v = 0; v < vectors; ++v)
      values.push_back(interleaveHalves(b, b.getLoc(), low[v / 2], high[v / 2],
                                        W, (v % 2) * W));
    return pairProducts(m, row0, rows, values, accs);
  };
  Value columns = e.index(d0);
  SmallVector<Value> init = rescaledAccumulators(row0, columns, rows, vectors);
  Value wholePairs = b.create<arith::DivUIOp>(nk, e.index(2));
  ValueRange whole =
      e.loop(e.index(0), wholePairs, 1, init,
             [&](Value m, ValueRange accs) { return step(m, accs, true); });
  SmallVector<Value> sums(whole);
  Value odd = e.lt(e.mul(wholePairs, 2), nk);
  ValueRange withLast = e.choose(
      odd, TypeRange(ValueRange(sums)),
      [&] { return step(wholePairs, sums, false); }, [&] { return sums; });
  sums.assign(withLast.begin(), withLast.end());
  e.storeBlock(sums, rows, vectors, acc, [&](int64_t r, int64_t v) {
    return accumulatorOffset(row0, r, columns, v);
  });
}

/// accs[r][v] + p·v for `rows` rows from row0, key pair m: each vdpbf16ps
/// takes the row's pair of probabilities (pPairs) against values[v], W
/// columns of paired values; row-major.
SmallVector<Value> AttentionTaskBuilder::pairProducts(Value m, Value row0,
                                                      int64_t rows,
                                                      ArrayRef<Value> values,
                                                      ValueRange accs) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  auto pairType = VectorType::get({2 * W}, b.getBF16Type());
  auto wordsType = VectorType::get({W}, b.getI32Type());
  SmallVector<Value> next;
  for (int64_t r = 0; r < rows; ++r) {
    Value word = b.create<memref::LoadOp>(
        pPairs, e.add(e.mul(m, t.queryTile), e.add(row0, r)));
    Value probabilities = b.create<vector::BitCastOp>(
        pairType, b.create<vector::BroadcastOp>(wordsType, word));
    for (size_t v = 0; v < values.size(); ++v)
      next.push_back(b.create<LLVM::CallIntrinsicOp>(
                          vec,
                          b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512"),
                          ValueRange{accs[r * values.size() + v], probabilities,
                                     values[v]})
                         .getResult(0));
  }
  return next;
}

/// valueBlock on the pairs: each vdpbf16ps adds two keys' p·v to 16 columns
/// of a row.
void AttentionTaskBuilder::valuePairBlock(Value row0, Value d0, int64_t vectors,
                                          Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth, R = t.pvRows;
  auto pairType = VectorType::get({2 * W}, b.getBF16Type());
  auto wordsType = VectorType::get({W}, b.getI32Type());
  SmallVector<Value> init = rescaledAccumulators(row0, d0, R, vectors);
  ValueRange sums = e.loop(
      e.index(0), e.ceilDiv(nk, 2), 1, init, [&](Value m, ValueRange accs) {
        SmallVector<Value> values;
        for (int64_t v = 0; v < vectors; ++v)
          values.push_back(b.create<vector::BitCastOp>(
              pairType,
              b.create<vector::LoadOp>(
                  wordsType, vPairs,
                  e.add(e.mul(m, dvPaddedValue), e.add(d0, v * W)))));
        return pairProducts(m, row0, R, values, accs);
      });
  e.storeBlock(sums, R, vectors, acc, [&](int64_t r, int64_t v) {
    return accumulatorOffset(row0, r, d0, v);
  });
}

/// Rows of a decode step's P·V block of whole V rows (static Dv): as many
/// as the schedule's block has accumulators for, a power of two so that
/// rounding the rows up to blocks stays within the W rows of the buffers;
/// 0 when one row does not fit.
int64_t AttentionTaskBuilder::wholeRowBlock() const {
  int64_t W = t.vectorWidth, vectors = roundUp(*staticDv, W) / W;
  return llvm::bit_floor(static_cast<uint64_t>(
      std::min<int64_t>(t.pvRows * t.pvVectors / vectors, W)));
}

void AttentionTaskBuilder::accumulateValues(Value j0, Value nk,
                                            bool depthInLanes) {
  int64_t W = t.vectorWidth, R = t.pvRows, V = t.pvVectors;
  if (amxTiles && !depthInLanes) {
    tileValues(j0, nk);
    return;
  }
  // Rows past nq (rounded to the block) carry nothing.
  Value rows = e.min(e.index(t.queryTile), e.mul(e.ceilDiv(nq, R), R));
  if (bf16Dot && !depthInLanes) {
    // bf16 P·V on AVX512-BF16, for tiles of queries in lanes (a decode step
    // streams V once, where packing would only add work): whole vectors,
    // since acc and vPairs are padded to them.
    packPairs(j0, nk);
    e.loop(e.index(0), rows, R, [&](Value row0) {
      if (dvPadded) {
        int64_t vectors = dvPadded / W, blocks = vectors / V;
        if (blocks > 0)
          e.loop(e.index(0), e.index(blocks * V * W), V * W, [&](Value d0) {
            valuePairBlock(row0, d0, V, nk);
          });
        if (int64_t rest = vectors - blocks * V)
          valuePairBlock(row0, e.index(blocks * V * W), rest, nk);
        return;
      }
      e.loop(e.index(0), dvPaddedValue, W,
             [&](Value d0) { valuePairBlock(row0, d0, 1, nk); });
    });
    return;
  }
  // bf16 P·V of a decode step on AVX512-BF16: V interleaved in registers.
  // Blocks of whole rows when the accumulators hold them (as below), else
  // blocks of pvVectors columns.
  Type valueType = cast<MemRefType>(buf.value.data.getType()).getElementType();
  if (bf16Dot && depthInLanes && staticDv && valueType.isBF16()) {
    packProbabilityPairs(nk);
    int64_t vectors = roundUp(*staticDv, W) / W;
    int64_t wholeRows = wholeRowBlock();
    // A power of two either way, so that rounding the rows up stays within
    // the W rows pPairs holds.
    int64_t blockRows =
        wholeRows >= 1 ? wholeRows : llvm::bit_floor(uint64_t(R));
    int64_t blockVectors = wholeRows >= 1 ? vectors : roundUp(V, 2);
    Value end = e.mul(e.ceilDiv(nq, blockRows), blockRows);
    e.loop(e.index(0), end, blockRows, [&](Value row0) {
      for (int64_t v = 0; v < vectors; v += blockVectors)
        streamedValuePairBlock(row0, blockRows, v * W,
                               std::min(blockVectors, vectors - v), j0, nk);
    });
    return;
  }
  // A decode step streams V once, where packing would only add work.
  TileRows values =
      packedTileRows(buf.value.data, vRows, Dv, staticDv,
                     depthInLanes ? nullptr : vTile, dvPaddedValue, j0, nk);
  // A decode step reads each V row from memory once: blocks of whole rows
  // (as many rows as the schedule's block has accumulators for) read it in
  // order, which the hardware prefetcher follows; column blocks would jump
  // a row ahead every few lines. Measured on AMD EPYC Zen 4, Llama-3-8B f32
  // decode T=32768, 1 thread: 105 -> 85 ns a key, 55 with prefetches into
  // L2 (docs/design/cpu-backend.md).
  if (depthInLanes && staticDv) {
    int64_t vectors = roundUp(*staticDv, W) / W;
    int64_t wholeRows = wholeRowBlock();
    Value tail = *staticDv % W ? e.index(*staticDv % W) : nullptr;
    Value prefetchFrom = t.decodePrefetchLevel == 2 ? j0 : nullptr;
    if (wholeRows >= 1) {
      Value end = e.mul(e.ceilDiv(nq, wholeRows), wholeRows);
      e.loop(e.index(0), end, wholeRows, [&](Value row0) {
        valueBlock(row0, wholeRows, e.index(0), vectors, tail, values, nk,
                   prefetchFrom);
      });
      return;
    }
    // A row that does not fit (D = 128 on AVX2: 16 vectors, 12
    // accumulators) goes in equal segments, each read in order, one row at a
    // time. Only for f32 values: a converted vector (bf16, f16) would then
    // feed one FMA instead of R. Measured on AMD EPYC Zen 3, Llama-3-8B f32
    // decode T=4096: 1.2-1.5x faster than column blocks of R rows.
    if (valueType.isF32()) {
      int64_t parts = llvm::divideCeil(vectors, R * V);
      int64_t segment = llvm::divideCeil(vectors, parts);
      e.loop(e.index(0), nq, 1, [&](Value row) {
        for (int64_t v = 0; v < vectors; v += segment) {
          int64_t count = std::min(segment, vectors - v);
          valueBlock(row, 1, e.index(v * W), count,
                     v + count == vectors ? tail : nullptr, values, nk,
                     v == 0 ? prefetchFrom : nullptr);
        }
      });
      return;
    }
  }
  e.loop(e.index(0), rows, R, [&](Value row0) {
    if (staticDv) {
      int64_t vectors = roundUp(*staticDv, W) / W;
      int64_t full = *staticDv / W; // Vectors without a tail.
      int64_t blocks = full / V;
      if (blocks > 0)
        e.loop(e.index(0), e.index(blocks * V * W), V * W, [&](Value d0) {
          valueBlock(row0, R, d0, V, nullptr, values, nk);
        });
      int64_t rest = vectors - blocks * V;
      if (rest > 0) {
        Value tail = *staticDv % W ? e.index(*staticDv % W) : nullptr;
        valueBlock(row0, R, e.index(blocks * V * W), rest, tail, values, nk);
      }
      return;
    }
    // Dv known at run time only: one vector at a time, the last masked.
    e.loop(e.index(0), Dv, W, [&](Value d0) {
      valueBlock(row0, R, d0, 1, e.min(e.index(W), e.sub(Dv, d0)), values, nk);
    });
  });
}

/// The prefill products go on AMX tiles when the schedule asks for them and
/// the tiles divide the work: bf16 q, k and v with dot scores, Dk a fixed
/// multiple of the 32 depths of a tile product and Dv of the 16 columns of
/// a result tile, and query blocks of whole 16-row tiles. Any other kernel
/// keeps the vector code.
bool AttentionTaskBuilder::usesMatrixTiles() const {
  // liveQueries is then a multiple of 16 as well.
  int64_t queryBlock = std::lcm(t.vectorWidth * t.scoreVectors, t.pvRows);
  return t.matrixTiles != MatrixTiles::none && score == attn::ScoreKind::dot &&
         isBf16(buf.query.data) && isBf16(buf.key.data) &&
         isBf16(buf.value.data) && staticDk &&
         *staticDk % TileOps::kPairColumns == 0 && staticDv &&
         *staticDv % TileOps::kColumns == 0 && queryBlock % TileOps::kRows == 0;
}

/// body(i, tiles) for the rows [0, n) in blocks of kBlock tiles of 16 rows
/// while they last, then of one (the last of which may pass n).
void AttentionTaskBuilder::forTileBlocks(
    Value n, function_ref<void(Value, int64_t)> body) {
  int64_t R = TileOps::kRows, B = TileOps::kBlock;
  Value blocked = e.roundDown(n, B * R);
  e.loop(e.index(0), blocked, B * R, [&](Value i) { body(i, B); });
  e.loop(blocked, n, R, [&](Value i) { body(i, 1); });
}

/// Q·Kᵀ on tiles: SC[j][i] in blocks of 16 keys × 16 queries, each the
/// product of the block's K rows (as they lie in memory) and qPairs, 32
/// depths a tile product, then scaled once as bf16DotScores scales. Keys
/// are taken 32 at a time while they last (two K tiles a product block),
/// then 16; a last block of fewer than 16 keys is copied first, its rows
/// past the tile repeating the last key (their scores are never used), so
/// that no tile load reads past K.
void AttentionTaskBuilder::tileScores(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, W = t.vectorWidth, R = TileOps::kRows;
  int64_t depth = *staticDk;
  Value queries = liveQueries; // Whole tiles (usesMatrixTiles).
  Value lastKey = e.add(j0, e.sub(nk, e.index(1)));
  forTileBlocks(nk, [&](Value jb, int64_t keyTiles) {
    if (keyTiles == TileOps::kBlock) {
      blockTileScores(jb, keyTiles, buf.key.data,
                      rowOffset(kRows, e.add(j0, jb)), kRows.stride, queries);
      return;
    }
    Value first = e.add(j0, jb);
    Value keys = e.min(e.index(R), e.sub(nk, jb));
    e.ifThen(
        e.lt(keys, e.index(R)),
        [&] {
          // Copied as words: LLVM widens bfloat vectors it moves through
          // registers on CPUs without AVX512-BF16.
          auto chunk =
              VectorType::get({TileOps::kPairColumns}, b.getBF16Type());
          auto words =
              VectorType::get({TileOps::kPairColumns / 2}, b.getI32Type());
          for (int64_t r = 0; r < R; ++r) {
            Value row = rowOffset(kRows, e.min(e.add(first, r), lastKey));
            for (int64_t d = 0; d < depth; d += TileOps::kPairColumns)
              b.create<vector::StoreOp>(
                  b.create<vector::BitCastOp>(
                      words, b.create<vector::LoadOp>(chunk, buf.key.data,
                                                      e.add(row, d))),
                  keyBlock, e.index((r * depth + d) / 2));
          }
          blockTileScores(jb, 1, halvesOf(keyBlock), e.index(0), e.index(depth),
                          queries);
        },
        [&] {
          blockTileScores(jb, 1, buf.key.data, rowOffset(kRows, first),
                          kRows.stride, queries);
        });
  });
  Value factor = e.broadcast(scoreFactor, W);
  Value rows = e.mul(e.ceilDiv(nk, R), R);
  e.loop(e.index(0), rows, 1, [&](Value j) {
    e.loop(e.index(0), queries, W, [&](Value i) {
      Value at = e.add(e.mul(j, BQ), i);
      b.create<vector::StoreOp>(
          b.create<arith::MulFOp>(b.create<vector::LoadOp>(vec, scores, at),
                                  factor),
          scores, at);
    });
  });
}

/// SC[jb + r][i] for r < 16 · keyTiles and every query block: the K rows
/// of keyData from keyOffset, keyStride apart, against qPairs, in product
/// blocks of keyTiles × 2 tiles while the queries last.
void AttentionTaskBuilder::blockTileScores(Value jb, int64_t keyTiles,
                                           Value keyData, Value keyOffset,
                                           Value keyStride, Value queries) {
  TileOps tiles(e.b, t.matrixTiles, op->getParentOfType<ModuleOp>());
  int64_t BQ = t.queryTile, R = TileOps::kRows, P = TileOps::kPairColumns;
  Value queryPairs = halvesOf(qPairs);
  // Depths 32k..32k+31 of the keys against pair rows 16k..16k+15 of
  // qPairs, whose row holds 2·BQ bf16.
  auto block = [&](Value ib, int64_t queryTiles) {
    tiles.productBlock(
        keyTiles, queryTiles, *staticDk / P, /*accumulate=*/false,
        [&](int64_t m, int64_t k) {
          return TileOps::Place{
              keyData, e.add(keyOffset, e.add(e.mul(keyStride, m * R), k * P)),
              keyStride};
        },
        [&](int64_t k, int64_t n) {
          return TileOps::Place{
              queryPairs,
              e.add(e.index(k * P * BQ), e.mul(e.add(ib, n * R), 2)),
              e.index(2 * BQ)};
        },
        [&](int64_t m, int64_t n) {
          return TileOps::Place{
              scores, e.add(e.mul(e.add(jb, m * R), BQ), e.add(ib, n * R)),
              e.index(BQ)};
        });
  };
  forTileBlocks(queries, block);
}

/// pRows[i][j] = bf16(p[j][i]) for i < queries and every j < tileKeys, 0
/// from nk on: the probabilities as the A operand of P·V, two 16 × 16
/// blocks of SC transposed at a time (Emitter::transpose), so that each
/// row of a P tile is one vcvtne2ps2bf16 and one 64-byte store.
void AttentionTaskBuilder::packProbabilityRows(Value nk, Value queries) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t BQ = t.queryTile, R = TileOps::kRows;
  auto row = VectorType::get({R}, e.f32);
  Value zeros = e.constant(0.0, row);
  // p[jb + r][ib + c] as [c][r]: queries by keys.
  auto transposed = [&](Value ib, Value jb) {
    SmallVector<Value> keyRows;
    for (int64_t r = 0; r < R; ++r) {
      Value j = e.add(jb, r);
      keyRows.push_back(b.create<arith::SelectOp>(
          e.lt(j, nk),
          b.create<vector::LoadOp>(row, scores, e.add(e.mul(j, BQ), ib)),
          zeros));
    }
    e.transpose(keyRows);
    return keyRows;
  };
  e.loop(e.index(0), queries, R, [&](Value ib) {
    e.loop(e.index(0), e.index(tileKeys), TileOps::kPairColumns, [&](Value jb) {
      SmallVector<Value> low = transposed(ib, jb),
                         high = transposed(ib, e.add(jb, R));
      for (int64_t r = 0; r < R; ++r) {
        Value at = e.add(e.mul(e.add(ib, r), tileKeys), jb);
        Value first = low[r], second = high[r];
        if (t.matrixTiles == MatrixTiles::emulated) {
          // Any x86-64 CPU: rounded in vector code, two stores.
          auto halves = VectorType::get({R}, b.getBF16Type());
          b.create<vector::StoreOp>(b.create<arith::TruncFOp>(halves, first),
                                    pRows, at);
          b.create<vector::StoreOp>(b.create<arith::TruncFOp>(halves, second),
                                    pRows, e.add(at, R));
          continue;
        }
        // vcvtne2ps2bf16 (AVX512-BF16, which the AMX target has) rounds
        // both halves to nearest even in one instruction; LLVM 19 lowers
        // a truncf to bf16 to integer arithmetic instead. Its first operand
        // is the high half.
        auto pair = VectorType::get({2 * R}, b.getBF16Type());
        b.create<vector::StoreOp>(
            b.create<LLVM::CallIntrinsicOp>(
                 pair, b.getStringAttr("llvm.x86.avx512bf16.cvtne2ps2bf16.512"),
                 ValueRange{second, first})
                .getResult(0),
            pRows, at);
      }
    });
  });
}

/// P·V on tiles: O = alpha·O (in vector code, in the steps where a max
/// moved), then for each 16 × 16 block of O, O += pRows · vPairs over the
/// tile's keys 32 at a time (tileKeys, the keys past nk 0 in both), the
/// block loaded once and stored once.
void AttentionTaskBuilder::tileValues(Value j0, Value nk) {
  ImplicitLocOpBuilder &b = e.b;
  TileOps tiles(b, t.matrixTiles, op->getParentOfType<ModuleOp>());
  int64_t W = t.vectorWidth, R = TileOps::kRows;
  // The rows of acc and vPairs: Dv itself, a multiple of 16 here.
  int64_t columns = dvPadded;
  Value queries = liveQueries; // Whole tiles (usesMatrixTiles).
  packValuePairs(j0, nk);
  // Pair rows past the tile's keys: 0, never what a longer tile left (a
  // probability of 0 times an inf of V would be NaN).
  Value zeroWords = b.create<arith::ConstantOp>(
      VectorType::get({W}, b.getI32Type()),
      DenseElementsAttr::get(VectorType::get({W}, b.getI32Type()),
                             b.getI32IntegerAttr(0)));
  e.loop(e.ceilDiv(nk, 2), e.index(tileKeys / 2), 1, [&](Value m) {
    e.loop(e.index(0), e.index(columns), W, [&](Value d) {
      b.create<vector::StoreOp>(zeroWords, vPairs, e.add(e.mul(m, columns), d));
    });
  });
  packProbabilityRows(nk, queries);
  // O = alpha·O only where some row's max moved (softmaxStep keeps it
  // otherwise, and alpha is then exactly 1; NaN rescales).
  auto lanes = VectorType::get({W}, b.getI1Type());
  Value moved = e.loop(
      e.index(0), queries, W,
      ValueRange{b.create<arith::ConstantOp>(lanes, b.getZeroAttr(lanes))},
      [&](Value i, ValueRange any) {
        Value notOne = b.create<arith::CmpFOp>(
            arith::CmpFPredicate::UNE, b.create<vector::LoadOp>(vec, alpha, i),
            e.constant(1.0, vec));
        return SmallVector<Value>{b.create<arith::OrIOp>(any[0], notOne)};
      })[0];
  e.ifThen(b.create<vector::ReductionOp>(vector::CombiningKind::OR, moved),
           [&] {
             e.loop(e.index(0), queries, 1, [&](Value i) {
               e.loop(e.index(0), e.index(columns), W, [&](Value d) {
                 e.storeBlock(rescaledAccumulators(i, d, 1, 1), 1, 1, acc,
                              [&](int64_t, int64_t) {
                                return accumulatorOffset(i, 0, d, 0);
                              });
               });
             });
           });
  // Product blocks of 2 × 2 tiles of O while the rows and columns last:
  // rows of probabilities against pair rows of vPairs, 32 keys a product
  // (pair rows 16k..16k+15 of vPairs, each 2·Dv bf16).
  Value probabilities = pRows, values = halvesOf(vPairs);
  auto block = [&](Value ib, int64_t rowTiles, int64_t c0,
                   int64_t columnTiles) {
    int64_t P = TileOps::kPairColumns, C = TileOps::kColumns;
    tiles.productBlock(
        rowTiles, columnTiles, tileKeys / P, /*accumulate=*/true,
        [&](int64_t m, int64_t k) {
          return TileOps::Place{probabilities,
                                e.add(e.mul(e.add(ib, m * R), tileKeys), k * P),
                                e.index(tileKeys)};
        },
        [&](int64_t k, int64_t n) {
          return TileOps::Place{values,
                                e.index(k * P * columns + 2 * (c0 + n * C)),
                                e.index(2 * columns)};
        },
        [&](int64_t m, int64_t n) {
          return TileOps::Place{
              acc, accumulatorOffset(ib, m * R, e.index(c0 + n * C), 0),
              e.index(columns)};
        });
  };
  auto rowBlock = [&](Value ib, int64_t rowTiles) {
    int64_t step = TileOps::kBlock * TileOps::kColumns;
    for (int64_t c0 = 0; c0 < columns; c0 += step)
      block(ib, rowTiles, c0,
            std::min(TileOps::kBlock, (columns - c0) / TileOps::kColumns));
  };
  forTileBlocks(queries, rowBlock);
}

/// out = acc / l (0 for a row without keys, NaN for a row that saw a NaN
/// score), lse = (m + (k + log2 l)) · ln 2: k + log2 l first, which is
/// exactly 0 for a row with one key.
void AttentionTaskBuilder::finish() {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  e.loop(e.index(0), nq, 1, [&](Value i) {
    Value sum = b.create<memref::LoadOp>(rowSum, i);
    // l = 0 only for a row without keys; a NaN l (a NaN score) must reach
    // the output and lse, so the test is l == 0, not l > 0.
    Value noKeys = b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, sum,
                                           e.f32Constant(0.0));
    Value inverse = b.create<arith::SelectOp>(
        noKeys, e.f32Constant(0.0),
        b.create<arith::DivFOp>(e.f32Constant(1.0), sum));
    Value scale = e.broadcast(inverse, W);
    auto [head, query] = headAndQuery(i);
    Value outRow = queryOffset(head, query, Dv);
    e.loop(e.index(0), Dv, W, [&](Value d) {
      Value remaining = e.sub(Dv, d);
      Value count = nullptr;
      bool exact = staticDv && *staticDv % W == 0;
      if (!exact)
        count = e.min(e.index(W), remaining);
      Value o = b.create<vector::LoadOp>(
          vec, acc, e.add(e.mul(i, dvPaddedValue), d));
      e.storeVector(b.create<arith::MulFOp>(o, scale), buf.output.data,
                    e.add(outRow, d), count);
    });
    if (Value lse = buf.lse.data) {
      Value max = b.create<memref::LoadOp>(rowMax, i);
      Value logSum = b.create<arith::MulFOp>(
          b.create<arith::AddFOp>(
              max,
              b.create<arith::AddFOp>(logKeys, b.create<math::Log2Op>(sum))),
          e.f32Constant(0.6931471805599453));
      Value value = b.create<arith::SelectOp>(
          noKeys, e.f32Constant(-std::numeric_limits<double>::infinity()),
          logSum);
      Value at = e.add(e.mul(e.add(e.mul(batch, Hq), head), S), query);
      b.create<memref::StoreOp>(value, lse, at);
    }
  });
}

/// Rows of the partials: O padded to dvPadded, then m and l.
void AttentionTaskBuilder::writePartials(Value iteration, Value part,
                                         const KeySplit &split) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  e.loop(e.index(0), nq, 1, [&](Value i) {
    Value row = partialRow(split, iteration, part, i);
    e.loop(e.index(0), dvPaddedValue, W, [&](Value d) {
      Value o =
          b.create<vector::LoadOp>(vec, acc, e.add(e.mul(i, dvPaddedValue), d));
      b.create<vector::StoreOp>(o, split.partials, e.add(row, d));
    });
    b.create<memref::StoreOp>(b.create<memref::LoadOp>(rowMax, i),
                              split.partials, e.add(row, dvPaddedValue));
    b.create<memref::StoreOp>(b.create<memref::LoadOp>(rowSum, i),
                              split.partials,
                              e.add(row, e.add(dvPaddedValue, 1)));
  });
}

/// m = max_p m_p, l = sum_p 2^(m_p - m) l_p, O = sum_p 2^(m_p - m) O_p
/// (a row no part saw keep m = -inf, l = 0, O = 0: finish() writes 0).
void AttentionTaskBuilder::mergePartials(Value iteration,
                                         const KeySplit &split) {
  ImplicitLocOpBuilder &b = e.b;
  int64_t W = t.vectorWidth;
  Value parts = split.parts;
  e.loop(e.index(0), nq, 1, [&](Value i) {
    auto rowOf = [&](Value p) { return partialRow(split, iteration, p, i); };
    Value minusInf = e.f32Constant(-std::numeric_limits<double>::infinity());
    Value max = e.loop(e.index(0), parts, 1, ValueRange{minusInf},
                       [&](Value p, ValueRange args) {
                         Value m = b.create<memref::LoadOp>(
                             split.partials, e.add(rowOf(p), dvPaddedValue));
                         return SmallVector<Value>{e.fmax(m, args[0])};
                       })[0];
    Value empty =
        b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, max, minusInf);
    Value safeMax = b.create<arith::SelectOp>(empty, e.f32Constant(0.0), max);
    Value sum = e.loop(
        e.index(0), parts, 1, ValueRange{e.f32Constant(0.0)},
        [&](Value p, ValueRange args) {
          Value row = rowOf(p);
          Value m = b.create<memref::LoadOp>(split.partials,
                                             e.add(row, dvPaddedValue));
          Value l = b.create<memref::LoadOp>(
              split.partials, e.add(row, e.add(dvPaddedValue, 1)));
          Value weight =
              e.exp2(e.broadcast(b.create<arith::SubFOp>(m, safeMax), W));
          e.loop(e.index(0), dvPaddedValue, W, [&](Value d) {
            Value at = e.add(e.mul(i, dvPaddedValue), d);
            Value o =
                b.create<vector::LoadOp>(vec, split.partials, e.add(row, d));
            b.create<vector::StoreOp>(
                e.fma(weight, o, b.create<vector::LoadOp>(vec, acc, at)), acc,
                at);
          });
          Value w = b.create<vector::ExtractOp>(weight, ArrayRef<int64_t>{0});
          return SmallVector<Value>{
              b.create<math::FmaOp>(w, l, args[0]).getResult()};
        })[0];
    b.create<memref::StoreOp>(max, rowMax, i);
    b.create<memref::StoreOp>(sum, rowSum, i);
  });
}

} // namespace

KeySplitPlan planKeySplit(OpBuilder &builder, Location loc, AttentionOp op,
                          ArrayRef<Value> keySizes, ArrayRef<Value> valueSizes,
                          const AttentionTiling &tiling, Value tasks,
                          Value threads) {
  Emitter e(builder, loc);
  attn::semantics::LayoutAxes axes = op.getLayoutAxes();
  Value T = keySizes[axes.length], Dv = valueSizes[axes.depth];
  int64_t W = tiling.vectorWidth;
  // Parts of at least two key tiles each, enough for every thread.
  Value tiles = e.ceilDiv(T, tiling.keyTile);
  Value most = e.max(e.div(tiles, e.index(2)), e.index(1));
  Value wanted = e.div(e.add(threads, e.sub(tasks, e.index(1))), tasks);
  Value parts = builder.create<arith::SelectOp>(
      loc, e.lt(tasks, threads), e.min(wanted, most), e.index(1));
  Value rowFloats = partialRowFloats(e, e.mul(e.ceilDiv(Dv, W), W));
  Value bytes =
      e.mul(e.mul(e.mul(e.mul(tasks, parts), tiling.queryTile), rowFloats), 4);
  return {parts, bytes};
}

Value tiledTaskCount(OpBuilder &builder, Location loc, scf::ForallOp forall,
                     ArrayRef<AttentionBuffers::Buffer> operands) {
  TiledValues values(builder, loc, forall, operands);
  Value count = builder.create<arith::ConstantIndexOp>(loc, 1);
  for (OpFoldResult bound : forall.getMixedUpperBound())
    count = builder.create<arith::MulIOp>(loc, count, values.get(bound));
  return count;
}

void emitAttentionTask(OpBuilder &builder, Location loc, AttentionOp op,
                       const AttentionBuffers &buffers,
                       ArrayRef<AttentionBuffers::Buffer> operands,
                       const AttentionTiling &tiling, scf::ForallOp forall,
                       Value taskIndex, const KeySplit &split) {
  AttentionTaskBuilder(builder, loc, op, buffers, tiling)
      .lowerTiled(forall, operands, taskIndex, split, /*merge=*/false);
}

void emitAttentionMerge(OpBuilder &builder, Location loc, AttentionOp op,
                        const AttentionBuffers &buffers,
                        ArrayRef<AttentionBuffers::Buffer> operands,
                        const AttentionTiling &tiling, scf::ForallOp forall,
                        Value iteration, const KeySplit &split) {
  AttentionTaskBuilder(builder, loc, op, buffers, tiling)
      .lowerTiled(forall, operands, iteration, split, /*merge=*/true);
}

} // namespace attnc
