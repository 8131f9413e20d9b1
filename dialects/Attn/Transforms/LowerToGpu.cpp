//===- LowerToGpu.cpp - attn.attention as a CUDA kernel (SIMT) ------------===//
//
// The first GPU kernel of attn.attention: one warp per query row, lanes over
// the head dim. Per visible key (the rules of AttnSemantics.h), the lanes'
// partial q·k products meet in a butterfly of shuffles, every lane runs the
// same online-softmax step (p = exp2(s - m - log2 T), as the CPU kernels) and
// accumulates its columns of P·V in registers, 8 per lane, so Dv is taken in
// chunks of 256 columns. Correct for every size known only at run time; not
// the tensor-core kernel issue 11 asks for (docs/design/gpu.md).
//
// Kernel ABI, one gpu.func per attention op: the op's tensors as global
// pointers (q, k, v, key_lengths if any, the output, lse if returned), then
// B, Hq, Hkv, S, T, Dk, Dv as i64. Launch: grid (ceil(S / 4), Hq, B), 128
// threads. `attn.params` names the pointers (graph values) and sizes;
// `attn.sizes` gives each size as [tensor, axis].
//
//===----------------------------------------------------------------------===//

#include "Attn/IR/AttnSemantics.h"
#include "Attn/Transforms/IndexArith.h"
#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <limits>

namespace mlir::attn {
#define GEN_PASS_DEF_LOWERTOGPUPASS
#include "Attn/Transforms/Passes.h.inc"
} // namespace mlir::attn

using namespace mlir;
using namespace mlir::attn;

namespace {

constexpr int64_t kWarpsPerBlock = 4;
constexpr int64_t kColumnsPerLane = 8; // Dv in chunks of 8 · 32 = 256.
constexpr double kLog2e = 1.4426950408889634;
/// The i64 parameters of both kernels, in order.
constexpr llvm::StringLiteral kSizeNames[] = {"B", "Hq", "Hkv", "S",
                                              "T", "Dk", "Dv",  "splits"};

/// Why `op` has no GPU kernel yet, or "".
std::string unsupported(AttentionOp op) {
  if (op.getScore() != ScoreKind::dot)
    return std::string("'") + stringifyScoreKind(op.getScore()).str() +
           "' scores";
  if (!op.getBiases().empty())
    return "tensor biases";
  if (op.getAlibi())
    return "ALiBi";
  if (!op.getMasks().empty())
    return "tensor masks";
  return "";
}

/// The two kernels of an attention op: the attention kernel proper, and the
/// merge of its key splits (FlashDecoding), launched after it when
/// splits > 1.
enum class KernelRole { Attention, Merge };

class KernelBuilder {
public:
  KernelBuilder(ImplicitLocOpBuilder &b, AttentionOp op, ValueRange args,
                KernelRole role)
      : b(b), op(op), role(role), a{b, b.getLoc()} {
    size_t n = 0;
    if (role == KernelRole::Attention) {
      q = args[n++];
      k = args[n++];
      v = args[n++];
      if (op.getKeyLengths())
        keyLengths = args[n++];
    } else {
      workspace = args[n++];
    }
    out = args[n++];
    if (op.getLse())
      lse = args[n++];
    if (role == KernelRole::Attention)
      workspace = args[n++];
    auto size = [&] {
      return b.create<arith::IndexCastOp>(b.getIndexType(), args[n++]);
    };
    B = size(), Hq = size(), Hkv = size(), S = size(), T = size();
    Dk = size(), Dv = size(), splits = size();
  }

  void build() {
    Value thread = b.create<gpu::ThreadIdOp>(gpu::Dimension::x);
    Value lane = a.rem(thread, a.constant(32));
    Value warp = a.div(thread, a.constant(32));
    // One warp per work item: a query row, or with key splits a (row, part)
    // pair, the parts of a row side by side.
    Value item = a.add(a.mul(b.create<gpu::BlockIdOp>(gpu::Dimension::x),
                             a.constant(kWarpsPerBlock)),
                       warp);
    Value head = b.create<gpu::BlockIdOp>(gpu::Dimension::y);
    Value batch = b.create<gpu::BlockIdOp>(gpu::Dimension::z);
    Value query = role == KernelRole::Merge ? item : a.div(item, splits);
    auto inside = b.create<scf::IfOp>(a.lt(query, S), /*else=*/false);
    b.setInsertionPointToStart(&inside.getThenRegion().front());
    if (role == KernelRole::Merge)
      merge(lane, query, head, batch);
    else
      row(lane, query, a.rem(item, splits), head, batch);
  }

private:
  ImplicitLocOpBuilder &b;
  AttentionOp op;
  KernelRole role;
  IndexArith a;
  Value q, k, v, keyLengths, out, lse, workspace;
  Value B, Hq, Hkv, S, T, Dk, Dv, splits;

  Value f32(double value) {
    return b.create<arith::ConstantOp>(b.getF32FloatAttr(float(value)));
  }
  Value toF32(Value index) {
    return b.create<arith::UIToFPOp>(
        b.getF32Type(), b.create<arith::IndexCastUIOp>(b.getI64Type(), index));
  }
  /// Element `at` of `buffer`, whose elements are of `type`.
  Value elementPointer(Value buffer, Type type, Value at) {
    Value i = b.create<arith::IndexCastOp>(b.getI64Type(), at);
    return b.create<LLVM::GEPOp>(buffer.getType(), type, buffer, ValueRange{i});
  }
  /// Element `at` of `buffer` (elements of `type`), as f32.
  Value load(Value buffer, Type type, Value at) {
    Value x = b.create<LLVM::LoadOp>(type, elementPointer(buffer, type, at));
    return type.isF32() ? x : b.create<arith::ExtFOp>(b.getF32Type(), x);
  }
  void store(Value buffer, Type type, Value at, Value x) {
    if (!type.isF32())
      x = b.create<arith::TruncFOp>(type, x);
    b.create<LLVM::StoreOp>(x, elementPointer(buffer, type, at));
  }
  /// The element offset of row `position` of head `head` in a q, k, v or
  /// output tensor, dense in the op's layout (semantics::LayoutAxes).
  Value rowOffset(Value batch, Value head, Value heads, Value position,
                  Value length, Value depth) {
    semantics::LayoutAxes axes = op.getLayoutAxes();
    Value index[4], size[4];
    index[axes.batch] = batch, size[axes.batch] = B;
    index[axes.heads] = head, size[axes.heads] = heads;
    index[axes.length] = position, size[axes.length] = length;
    index[axes.depth] = a.constant(0), size[axes.depth] = depth;
    Value offset = index[0];
    for (int axis = 1; axis < 4; ++axis)
      offset = a.add(a.mul(offset, size[axis]), index[axis]);
    return offset;
  }
  Value select(Value condition, Value x, Value y) {
    return b.create<arith::SelectOp>(condition, x, y);
  }
  /// PTX's own instructions, named as LLVM's NVPTX intrinsics:
  /// convert-gpu-to-nvvm would turn math ops into libdevice calls, which
  /// gpu-module-to-binary can link only where the CUDA toolkit is.
  Value intrinsic(StringRef name, ValueRange operands) {
    return b
        .create<LLVM::CallIntrinsicOp>(b.getF32Type(), b.getStringAttr(name),
                                       operands)
        .getResult(0);
  }
  /// ex2.approx.f32: relative error below 2^-22, +0 for -inf, NaN for NaN.
  Value exp2(Value x) { return intrinsic("llvm.nvvm.ex2.approx.f", x); }
  Value log2(Value x) { return intrinsic("llvm.nvvm.lg2.approx.f", x); }
  Value fma(Value x, Value y, Value z) {
    return intrinsic("llvm.fma.f32", ValueRange{x, y, z});
  }

  void row(Value lane, Value query, Value part, Value head, Value batch) {
    Type qType = getElementTypeOrSelf(op.getQuery().getType());
    Type vType = getElementTypeOrSelf(op.getValue().getType());
    Value kvHead = semantics::kvHeadOf(a, head, Hq, Hkv);
    semantics::KeyVisibility rule = op.getKeyVisibility();
    Value position = semantics::alignedPosition(a, query, S, T);
    std::optional<Value> length;
    if (keyLengths)
      length = b.create<arith::IndexCastOp>(
          b.getIndexType(),
          b.create<LLVM::LoadOp>(
              b.getI32Type(),
              elementPointer(keyLengths, b.getI32Type(), batch)));
    semantics::KeyRange<Value> keys =
        semantics::visibleKeys(a, rule, position, position, T, length);
    // Part `part` of `splits` takes keys [part·c, (part + 1)·c), c = ceil(T
    // / splits), of those the row sees.
    Value partKeys = a.div(a.add(T, a.sub(splits, a.constant(1))), splits);
    Value partFirst = a.mul(part, partKeys);
    Value first = a.max(a.max(keys.first, a.constant(0)), partFirst);
    Value last =
        a.max(a.min(keys.last, a.min(a.add(partFirst, partKeys), T)), first);

    // Scores in log2 units: raw · scale · log2 e (softcap in natural units
    // first). Dk may be a run-time size, hence the rule, not its value.
    semantics::ScaleRule scale = op.getScaleRule();
    Value factor = f32(scale.factor);
    if (scale.overSqrtKeyDim)
      factor = b.create<arith::DivFOp>(
          factor, intrinsic("llvm.nvvm.sqrt.rn.f", toF32(Dk)));
    Value logKeys = log2(toF32(a.max(T, a.constant(1))));
    Value minusInf = f32(-std::numeric_limits<double>::infinity());

    Value queryRow = rowOffset(batch, head, Hq, query, S, Dk);
    Value outRow = rowOffset(batch, head, Hq, query, S, Dv);
    Value chunk = a.constant(32 * kColumnsPerLane);

    auto chunks = b.create<scf::ForOp>(a.constant(0), Dv, chunk);
    b.setInsertionPointToStart(chunks.getBody());
    Value column0 = chunks.getInductionVar();
    SmallVector<Value> init{minusInf, f32(0.0)};
    init.append(kColumnsPerLane, f32(0.0));
    auto keyLoop = b.create<scf::ForOp>(first, last, a.constant(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(keyLoop.getBody());
      Value key = keyLoop.getInductionVar();
      Value m = keyLoop.getRegionIterArgs()[0];
      Value l = keyLoop.getRegionIterArgs()[1];
      Value keyRow = rowOffset(batch, kvHead, Hkv, key, T, Dk);
      Value valueRow = rowOffset(batch, kvHead, Hkv, key, T, Dv);
      // This lane's share of q·k, then the butterfly over the warp.
      auto depth =
          b.create<scf::ForOp>(lane, Dk, a.constant(32), ValueRange{f32(0.0)});
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(depth.getBody());
        Value d = depth.getInductionVar();
        Value product =
            b.create<arith::MulFOp>(load(q, qType, a.add(queryRow, d)),
                                    load(k, qType, a.add(keyRow, d)));
        b.create<scf::YieldOp>(ValueRange{
            b.create<arith::AddFOp>(depth.getRegionIterArgs()[0], product)});
      }
      Value score = depth.getResult(0);
      Value width = b.create<arith::ConstantIntOp>(32, 32);
      for (int offset = 16; offset >= 1; offset /= 2) {
        Value other = b.create<gpu::ShuffleOp>(
                           score, b.create<arith::ConstantIntOp>(offset, 32),
                           width, gpu::ShuffleMode::XOR)
                          .getShuffleResult();
        score = b.create<arith::AddFOp>(score, other);
      }
      score = b.create<arith::MulFOp>(score, factor);
      if (auto softcap = op.getSoftcap()) {
        double cap = softcap->convertToDouble();
        // c · tanh(s / c) by math.tanh, which attn-approximate-math turns
        // into the CPU kernels' rational approximation: the exp-based
        // 1 - 2 / (exp(2x) + 1) cancels for small x (scores far below c).
        Value tanh = b.create<math::TanhOp>(
            b.create<arith::MulFOp>(score, f32(1.0 / cap)));
        score = b.create<arith::MulFOp>(tanh, f32(cap));
      }
      score = b.create<arith::MulFOp>(score, f32(kLog2e));
      // The online-softmax step of the CPU kernels: a NaN score keeps m and
      // makes p NaN, so it reaches l and the output (IEEE propagation).
      Value newMax =
          select(b.create<arith::CmpFOp>(arith::CmpFPredicate::OGT, score, m),
                 score, m);
      Value safeMax = select(
          b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, newMax, minusInf),
          f32(0.0), newMax);
      Value rescale = exp2(b.create<arith::SubFOp>(m, safeMax));
      Value p = exp2(b.create<arith::SubFOp>(
          score, b.create<arith::AddFOp>(safeMax, logKeys)));
      SmallVector<Value> next{newMax, fma(l, rescale, p)};
      for (int64_t c = 0; c < kColumnsPerLane; ++c) {
        Value column = a.add(column0, a.add(lane, a.constant(32 * c)));
        Value inRange = a.lt(column, Dv);
        Value value = load(
            v, vType, a.add(valueRow, select(inRange, column, a.constant(0))));
        value = select(inRange, value, f32(0.0));
        Value accumulator = keyLoop.getRegionIterArgs()[2 + c];
        next.push_back(
            fma(p, value, b.create<arith::MulFOp>(accumulator, rescale)));
      }
      b.create<scf::YieldOp>(next);
    }
    Value m = keyLoop.getResult(0), l = keyLoop.getResult(1);
    SmallVector<Value> accumulators(keyLoop.getResults().drop_front(2));
    auto whole = b.create<scf::IfOp>(a.eq(splits, a.constant(1)),
                                     /*else=*/true);
    b.setInsertionPointToStart(&whole.getThenRegion().front());
    finish(lane, column0, query, head, batch, m, l, accumulators, logKeys);
    b.setInsertionPointToStart(&whole.getElseRegion().front());
    // A part's (m, l, acc) as they are, for the merge: [m, l, acc[Dv]] per
    // (batch, head, row, part).
    Value stride = a.add(Dv, a.constant(2));
    Value at =
        a.mul(a.add(a.mul(a.add(a.mul(a.add(a.mul(batch, Hq), head), S), query),
                          splits),
                    part),
              stride);
    Value once = b.create<arith::AndIOp>(a.eq(lane, a.constant(0)),
                                         a.eq(column0, a.constant(0)));
    auto write = b.create<scf::IfOp>(once, false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&write.getThenRegion().front());
      store(workspace, b.getF32Type(), at, m);
      store(workspace, b.getF32Type(), a.add(at, a.constant(1)), l);
    }
    for (int64_t c = 0; c < kColumnsPerLane; ++c) {
      Value column = a.add(column0, a.add(lane, a.constant(32 * c)));
      auto inRange = b.create<scf::IfOp>(a.lt(column, Dv), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&inRange.getThenRegion().front());
      store(workspace, b.getF32Type(), a.add(at, a.add(column, a.constant(2))),
            accumulators[c]);
    }
  }

  /// out = acc / l, exactly 0 for a row without keys (l == 0; a NaN l
  /// passes the test and reaches the output); lse = (m + log2 T + log2 l)
  /// · ln 2, -inf without keys. Columns column0 + lane + 32·c.
  void finish(Value lane, Value column0, Value query, Value head, Value batch,
              Value m, Value l, ArrayRef<Value> accumulators, Value logKeys) {
    Type vType = getElementTypeOrSelf(op.getValue().getType());
    Value outRow = rowOffset(batch, head, Hq, query, S, Dv);
    Value noKeys =
        b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, l, f32(0.0));
    Value inverse =
        b.create<arith::DivFOp>(f32(1.0), select(noKeys, f32(1.0), l));
    for (auto [c, accumulator] : llvm::enumerate(accumulators)) {
      Value column = a.add(column0, a.add(lane, a.constant(32 * c)));
      auto inRange = b.create<scf::IfOp>(a.lt(column, Dv), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&inRange.getThenRegion().front());
      Value value = b.create<arith::MulFOp>(accumulator, inverse);
      store(out, vType, a.add(outRow, column), select(noKeys, f32(0.0), value));
    }
    if (lse) {
      // Once per row: lane 0 of the first chunk.
      Value once = b.create<arith::AndIOp>(a.eq(lane, a.constant(0)),
                                           a.eq(column0, a.constant(0)));
      auto write = b.create<scf::IfOp>(once, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&write.getThenRegion().front());
      Value logSum = b.create<arith::MulFOp>(
          b.create<arith::AddFOp>(b.create<arith::AddFOp>(m, logKeys), log2(l)),
          f32(0.6931471805599453));
      Value at = a.add(a.mul(a.add(a.mul(batch, Hq), head), S), query);
      store(lse, b.getF32Type(), at, select(noKeys, minusInfinity(), logSum));
    }
  }

  /// The merge kernel's row: m = max m_p, each part's l and acc scaled by
  /// exp2(m_p - m) and summed (exact: every part shifted by the same log2
  /// T), then finish() as one part would, columns lane + 32·c.
  void merge(Value lane, Value query, Value head, Value batch) {
    Value stride = a.add(Dv, a.constant(2));
    Value rowAt = a.mul(
        a.mul(a.add(a.mul(a.add(a.mul(batch, Hq), head), S), query), splits),
        stride);
    Value zero = a.constant(0), one = a.constant(1);
    auto partMax = [&](Value part) {
      return load(workspace, b.getF32Type(), a.add(rowAt, a.mul(part, stride)));
    };
    auto maxLoop =
        b.create<scf::ForOp>(zero, splits, one, ValueRange{minusInfinity()});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value mp = partMax(maxLoop.getInductionVar());
      Value m = maxLoop.getRegionIterArgs()[0];
      b.create<scf::YieldOp>(ValueRange{select(
          b.create<arith::CmpFOp>(arith::CmpFPredicate::OGT, mp, m), mp, m)});
    }
    Value m = maxLoop.getResult(0);
    Value safeMax = select(
        b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, m, minusInfinity()),
        f32(0.0), m);
    // sum over parts of workspace[part][offset] · exp2(m_p - m)
    auto sumParts = [&](Value offset) {
      auto loop = b.create<scf::ForOp>(zero, splits, one, ValueRange{f32(0.0)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value partAt = a.add(rowAt, a.mul(loop.getInductionVar(), stride));
      Value weight = exp2(b.create<arith::SubFOp>(
          load(workspace, b.getF32Type(), partAt), safeMax));
      Value x = load(workspace, b.getF32Type(), a.add(partAt, offset));
      b.create<scf::YieldOp>(
          ValueRange{fma(x, weight, loop.getRegionIterArgs()[0])});
      return loop.getResult(0);
    };
    Value l = sumParts(one);
    Value logKeys = log2(toF32(a.max(T, one)));
    auto columns =
        b.create<scf::ForOp>(zero, Dv, a.constant(32 * kColumnsPerLane));
    b.setInsertionPointToStart(columns.getBody());
    Value column0 = columns.getInductionVar();
    SmallVector<Value> accumulators;
    for (int64_t c = 0; c < kColumnsPerLane; ++c) {
      Value column = a.add(column0, a.add(lane, a.constant(32 * c)));
      // Columns past Dv read column 0 and are not stored.
      Value read = select(a.lt(column, Dv), column, zero);
      accumulators.push_back(sumParts(a.add(read, a.constant(2))));
    }
    finish(lane, column0, query, head, batch, m, l, accumulators, logKeys);
  }

  Value minusInfinity() {
    return f32(-std::numeric_limits<double>::infinity());
  }
};

struct LowerToGpuPass
    : public mlir::attn::impl::LowerToGpuPassBase<LowerToGpuPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions) {
      if (failed(lowerFunction(module, function)))
        return signalPassFailure();
      function.erase();
    }
    if (failed(lowerMath(module)))
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
  }

  /// math.tanh (the softcap) as the CPU kernels' rational approximation
  /// (attn-approximate-math's patterns), its math.fma and math.absf as PTX's
  /// own instructions: convert-gpu-to-nvvm would make every math op a
  /// libdevice call, which needs the CUDA toolkit at compile time.
  LogicalResult lowerMath(ModuleOp module) {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsAndFoldGreedily(module, std::move(patterns))))
      return failure();
    WalkResult walk = module.walk([](Operation *op) {
      if (!isa<math::MathDialect>(op->getDialect()))
        return WalkResult::advance();
      StringRef intrinsic = isa<math::FmaOp>(op)    ? "llvm.fma.f32"
                            : isa<math::AbsFOp>(op) ? "llvm.fabs.f32"
                                                    : "";
      if (intrinsic.empty() || !op->getResult(0).getType().isF32()) {
        op->emitError("no PTX instruction for ") << op->getName();
        return WalkResult::interrupt();
      }
      OpBuilder b(op);
      op->replaceAllUsesWith(b.create<LLVM::CallIntrinsicOp>(
          op->getLoc(), b.getF32Type(), b.getStringAttr(intrinsic),
          op->getOperands()));
      op->erase();
      return WalkResult::skip();
    });
    return failure(walk.wasInterrupted());
  }

  /// A gpu.func whose parameters are `params` (pointers, then i64 sizes
  /// from B on), built by KernelBuilder in `role`.
  gpu::GPUFuncOp createKernel(gpu::GPUModuleOp gpuModule, AttentionOp op,
                              StringRef name, ArrayRef<Attribute> params,
                              ArrayRef<NamedAttribute> sources,
                              KernelRole role) {
    auto pointer = LLVM::LLVMPointerType::get(&getContext(), 1);
    // Before gpu.module_end, in the order they are made.
    OpBuilder builder(gpuModule.getBodyRegion().front().getTerminator());
    SmallVector<Type> types;
    for (Attribute param : params)
      types.push_back(
          llvm::is_contained(kSizeNames, cast<StringAttr>(param).getValue())
              ? Type(builder.getI64Type())
              : Type(pointer));
    auto kernel = builder.create<gpu::GPUFuncOp>(
        op.getLoc(), name, builder.getFunctionType(types, {}));
    kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                    builder.getUnitAttr());
    kernel->setAttr("attn.params", builder.getArrayAttr(params));
    kernel->setAttr("attn.sizes", builder.getDictionaryAttr(sources));
    // No known_block_size: its .maxntid 128 makes ptxas cap the kernel at
    // 64 registers, and spill, where it needs about 70.
    ImplicitLocOpBuilder body(op.getLoc(), builder);
    body.setInsertionPointToStart(&kernel.getBody().front());
    KernelBuilder(body, op, kernel.getArguments(), role).build();
    body.setInsertionPointToEnd(&kernel.getBody().front());
    body.create<gpu::ReturnOp>();
    return kernel;
  }

  /// The name a function argument or result has in the graph.
  static std::string graphName(func::FuncOp function, Value value) {
    if (auto argument = dyn_cast<BlockArgument>(value))
      if (auto name = function.getArgAttrOfType<StringAttr>(
              argument.getArgNumber(), "attn.input"))
        return name.str();
    for (OpOperand &use : value.getUses())
      if (auto ret = dyn_cast<func::ReturnOp>(use.getOwner()))
        if (auto name = function.getResultAttrOfType<StringAttr>(
                use.getOperandNumber(), "attn.output"))
          return name.str();
    return "";
  }

  LogicalResult lowerFunction(ModuleOp module, func::FuncOp function) {
    OpBuilder top(module.getBodyRegion());
    top.setInsertionPointToEnd(module.getBody());
    auto gpuModule = top.create<gpu::GPUModuleOp>(
        function.getLoc(), (function.getName() + "_gpu").str());
    int number = 0;
    // Every output an attention result: an output that is an input (or a
    // constant) would need a copy no kernel makes.
    auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
    for (auto [n, value] : llvm::enumerate(ret.getOperands()))
      if (!value.getDefiningOp<AttentionOp>()) {
        auto name = function.getResultAttrOfType<StringAttr>(n, "attn.output");
        return module.emitError()
               << "output " << (name ? name.getValue() : "#" + Twine(n).str())
               << " is not computed by an attention op; CUDA targets compile "
                  "graphs whose outputs all are";
      }
    for (Operation &operation : function.getBody().front()) {
      if (isa<func::ReturnOp, arith::ConstantOp>(operation))
        continue;
      auto op = dyn_cast<AttentionOp>(operation);
      if (!op)
        return operation.emitError()
               << operation.getName().stripDialect()
               << " has no CUDA kernel yet: CUDA targets compile graphs "
                  "whose nodes all fuse into attention";
      std::string missing = unsupported(op);
      if (!missing.empty())
        return op.emitError("attention with " + missing +
                            " has no CUDA kernel yet (CUDA targets take dot "
                            "scores, scale, softcap, causal, window and "
                            "key_length masks, GQA, both layouts, lse)");
      // Every operand a function argument, every result returned: the
      // kernel reads and writes the graph's own tensors.
      SmallVector<Value> tensors{op.getQuery(), op.getKey(), op.getValue()};
      if (op.getKeyLengths())
        tensors.push_back(op.getKeyLengths());
      tensors.push_back(op.getOutput());
      if (op.getLse())
        tensors.push_back(op.getLse());
      SmallVector<Attribute> names;
      for (Value tensor : tensors) {
        std::string name = graphName(function, tensor);
        if (name.empty())
          return op.emitError("attention reads or writes a value that is "
                              "not a graph input or output; CUDA targets "
                              "compile attention alone for now");
        names.push_back(top.getStringAttr(name));
      }
      // Each size is an axis of q, k or v: `attn.sizes` says which, so a
      // launcher reads them off the tensors it is given.
      semantics::LayoutAxes axes = op.getLayoutAxes();
      std::pair<const char *, std::pair<int, int>> sizes[] = {
          {"B", {0, axes.batch}},   {"Hq", {0, axes.heads}},
          {"Hkv", {1, axes.heads}}, {"S", {0, axes.length}},
          {"T", {1, axes.length}},  {"Dk", {0, axes.depth}},
          {"Dv", {2, axes.depth}}};
      SmallVector<NamedAttribute> sources;
      SmallVector<Attribute> sizeNames;
      for (auto [size, source] : sizes) {
        sizeNames.push_back(top.getStringAttr(size));
        sources.push_back(top.getNamedAttr(
            size, top.getArrayAttr({names[source.first],
                                    top.getI64IntegerAttr(source.second)})));
      }
      sizeNames.push_back(top.getStringAttr("splits"));
      std::string name =
          (function.getName() + "_attention" + Twine(number++)).str();
      // The attention kernel: its tensors, the workspace, the sizes.
      SmallVector<Attribute> params(names);
      params.push_back(top.getStringAttr("workspace"));
      params.append(sizeNames);
      auto kernel = createKernel(gpuModule, op, name, params, sources,
                                 KernelRole::Attention);
      // The merge: the workspace, the outputs, the sizes.
      SmallVector<Attribute> mergeParams{top.getStringAttr("workspace")};
      mergeParams.append(names.begin() +
                             (tensors.size() - (op.getLse() ? 2 : 1)),
                         names.end());
      mergeParams.append(sizeNames);
      createKernel(gpuModule, op, name + "_merge", mergeParams, sources,
                   KernelRole::Merge);
      kernel->setAttr("attn.merge", top.getStringAttr(name + "_merge"));
    }
    return success();
  }
};

} // namespace
