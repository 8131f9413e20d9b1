//===- LowerToGpu.cpp - attn.attention as CUDA kernels --------------------===//
//
// Each attn.attention becomes up to three gpu.func kernels (the rules of
// AttnSemantics.h, the CPU kernels' online softmax, p = exp2((s - m) - k),
// k = ceil(log2 T)):
//
// - the SIMT kernel: one warp per query row (or, with key splits, per (row,
//   part) pair), lanes over the head dim, the partial q·k products summed by
//   a butterfly of shuffles, tensor biases and ALiBi added and tensor masks
//   applied per key, 8 columns of P·V per lane (Dv in chunks of 256); every
//   size known only at run time, f32/f16/bf16;
// - its merge, when keys are split (FlashDecoding): the parts' (m, l, acc)
//   from the workspace, rescaled to the largest m;
// - for f16/bf16 dot scores with Dk and Dv fixed and at most 128 (64 with
//   tensor biases, ALiBi or tensor masks), the tensor-core kernel (mma.sync
//   m16n8k16; wgmma on sm_90a), run instead of the SIMT kernel (its key parts
//   merged as the SIMT kernel's): the G query heads of a kv head together, K
//   and V blocks staged in shared memory by cp.async under the products, tensor
//   biases, ALiBi and tensor masks read per element of the score fragments.
//
// General and additive scores run on the SIMT kernel: the row's projected
// query (q·W, or Wq·q) once per row into its warp's slice of shared memory
// when its length is fixed and fits (else recomputed per key), and per key
// (q·W)·k, or va·tanh(Wq·q + Wk·k) with Wk·k a butterfly per unit.
//
// Kernel ABI: the op's tensors as global pointers (q, k, v, the score's
// weights if any (W; or Wq, Wk, va), key_lengths if any, the biases, the ALiBi
// slopes if given, the masks, the output, lse if returned), the workspace, then
// B, Hq, Hkv, S, T, Dk, Dv and splits as i64 (the merge: workspace, output,
// lse, sizes). `attn.params` names them, `attn.sizes` gives each size as
// [tensor, axis]; `attn.block` the threads, `attn.block_rows` and
// `attn.row_flags` the grid
// ((ceil(rows / block_rows), Hq, B), rows S, or S·splits when a row is a
// (row, part) pair; the tensor-core kernel's rows are the packed rows of a
// kv head, S·Hq/Hkv, on (ceil(rows / block_rows)·splits, Hkv, B);
// `attn.grid` spells it out), and
// `attn.workspace_row_bytes` [a, b] the key splits' workspace, a·Dv + b bytes
// per (row, part) (`attn.workspace_bytes` spells it out); the manifest and
// the kernel descriptor copy them (docs/design/gpu.md).
//
//===----------------------------------------------------------------------===//

#include "Attn/IR/AttnSemantics.h"
#include "Attn/Transforms/IndexArith.h"
#include "Attn/Transforms/Passes.h"
#include "Attn/Transforms/SoftmaxShift.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/TypeSwitch.h"

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
// The tensor-core kernel: mma.sync m16n8k16, 16 query rows per warp, Dk and
// Dv up to 128 (its registers hold Q and O).
constexpr int64_t kMmaRows = 16, kMmaMaxDepth = 128,
                  kMmaMaxDepthWithExtras = 64;
/// Keys per block of the staged tensor-core kernel.
constexpr int64_t kStagedBlockKeys = 64;
/// The head dim (last axis) of q, k or v; dynamic when known at run time.
int64_t headDim(Value tensor) {
  return cast<ShapedType>(tensor.getType()).getShape().back();
}
/// Whether the tensor-core kernel stages K and V blocks in shared memory
/// (16-byte copies, fragments by ldmatrix): Dk and Dv multiples of 16.
bool mmaStaged(AttentionOp op) {
  return headDim(op.getQuery()) % 16 == 0 && headDim(op.getValue()) % 16 == 0;
}
/// Whether cuda-sm90a's tensor-core kernel multiplies by wgmma: staged, and
/// both head dims past 64. At 64 (both products m64n64k16) an H200 gave
/// wrong outputs once rows saw more than two blocks of keys, where mma.sync
/// was right on the same cases; 80 to 128 were right at up to 256 blocks,
/// narrower dims never ran past one. Until that is understood those stay
/// on mma.sync.
bool wgmmaTrusted(AttentionOp op) {
  return mmaStaged(op) && headDim(op.getQuery()) > 64 &&
         headDim(op.getValue()) > 64;
}
/// Columns of O per warp in the tensor-core kernel: all of Dv when staged
/// (ldmatrix reads fragments just before their mma, so O's 64 registers at
/// 128 fit beside Q's); else, past 64, warps side by side take chunks of 64
/// columns of the same rows (each computing S), as the fragments' global
/// loads in flight need the registers.
int64_t mmaChunkColumns(AttentionOp op) {
  int64_t dv = headDim(op.getValue());
  return mmaStaged(op) ? dv : std::min<int64_t>(dv, 64);
}
int64_t mmaColumnChunks(AttentionOp op) {
  return (headDim(op.getValue()) + mmaChunkColumns(op) - 1) /
         mmaChunkColumns(op);
}
/// The query rows of a tensor-core block: its warps, 16 rows of one chunk
/// each.
int64_t mmaBlockRows(AttentionOp op) {
  return kWarpsPerBlock * kMmaRows / mmaColumnChunks(op);
}
/// Elements of one staged row: 8 more than the data, so the 8 rows an
/// ldmatrix reads fall in different banks.
int64_t stagedRow(int64_t depth) { return depth + 8; }
/// Elements of a staged block of 64 rows of `depth`: padded rows for
/// ldmatrix, or for wgmma 8x8 core matrices back to back (each 128
/// contiguous bytes, so neither copies nor wgmma's reads meet in a bank).
int64_t stagedBlockElements(int64_t depth, bool wgmma) {
  return kStagedBlockKeys * (wgmma ? depth : stagedRow(depth));
}

/// Keys per block of the unstaged tensor-core kernel: as many as fit beside
/// Q and O in 255 registers without spills for sm_80 and sm_90 (ptxas: at
/// Dk = 128 with 64 columns of O, 32 keys spill on sm_80, 16 take 206).
int64_t mmaBlockKeys(int64_t dk, int64_t dv) {
  return std::max(dk, dv) <= 64 ? 32 : 16;
}
/// Keys per block of the tensor-core kernel, staged or not.
int64_t mmaKeysPerBlock(AttentionOp op) {
  return mmaStaged(op)
             ? kStagedBlockKeys
             : mmaBlockKeys(headDim(op.getQuery()), mmaChunkColumns(op));
}
constexpr double kLog2e = 1.4426950408889634;
/// The i64 parameters of every kernel, in order.
constexpr llvm::StringLiteral kSizeNames[] = {"B", "Hq", "Hkv", "S",
                                              "T", "Dk", "Dv",  "splits"};

/// Static shared memory a kernel may declare on every architecture (more
/// needs cuFuncSetAttribute at launch).
constexpr int64_t kStaticSharedBytes = 48 * 1024;
/// The length of a row's projected query: q·W (Dk) for general scores, Wq·q
/// (A) for additive ones, dynamic when known only at run time; 0 for others.
int64_t projectionLength(AttentionOp op) {
  if (op.getScore() == ScoreKind::general)
    return headDim(op.getQuery());
  if (op.getScore() == ScoreKind::additive)
    return cast<ShapedType>(op.getQueryWeight().getType()).getDimSize(0);
  return 0;
}
/// Whether the SIMT kernel keeps each row's projected query in its warp's
/// slice of shared memory (a fixed length that fits), rather than
/// recomputing it per key.
bool projectionShared(AttentionOp op) {
  int64_t length = projectionLength(op);
  return length > 0 && !ShapedType::isDynamic(length) &&
         kWarpsPerBlock * length * 4 <= kStaticSharedBytes;
}

/// Whether `op`'s scores add tensor biases or ALiBi or drop keys by tensor
/// masks: reads per score beyond q and k.
bool hasScoreExtras(AttentionOp op) {
  return !op.getBiases().empty() || op.getAlibi() || !op.getMasks().empty();
}

/// Whether `op` also gets the tensor-core kernel: f16 or bf16 dot scores,
/// Dk and Dv known at compile time (its registers hold Q and O) and at most
/// 128, or at most 64 with tensor biases, ALiBi or tensor masks (at 128 the
/// staged kernel is at ptxas's 255 registers already, and their reads
/// spill).
bool hasTensorCoreKernel(AttentionOp op) {
  Type element = getElementTypeOrSelf(op.getQuery().getType());
  int64_t dk = headDim(op.getQuery()), dv = headDim(op.getValue());
  int64_t maxDepth = hasScoreExtras(op) ? kMmaMaxDepthWithExtras : kMmaMaxDepth;
  return (element.isF16() || element.isBF16()) && !ShapedType::isDynamic(dk) &&
         !ShapedType::isDynamic(dv) && dk <= maxDepth && dv <= maxDepth &&
         op.getScore() == ScoreKind::dot;
}

/// Why `op` has no GPU kernel yet, or "".
std::string unsupported(AttentionOp op) {
  // A is not among the kernels' sizes (they read them off q, k and v).
  if (ShapedType::isDynamic(projectionLength(op)) &&
      op.getScore() == ScoreKind::additive)
    return "'additive' scores whose width A is a run-time size";
  return "";
}

/// The kernels of an attention op: the attention kernel proper, the merge of
/// its key splits (FlashDecoding), launched after it when splits > 1, and,
/// for f16/bf16 with Dk and Dv known and at most 128, the tensor-core kernel
/// that replaces both when splits == 1. Attention and TensorCore take the
/// same parameters.
enum class KernelRole { Attention, Merge, TensorCore };

/// How a kernel's blocks map to rows (`attn.row_flags`, the descriptor's
/// attnrt_cuda_function::row_flags): each row a (row, part) pair; the G
/// query heads of a kv head packed together (grid y over kv heads); the key
/// parts of a row block side by side along x.
enum RowFlags : int64_t { kRowsSplit = 1, kRowsGrouped = 2, kBlocksSplit = 4 };

class KernelBuilder {
public:
  KernelBuilder(ImplicitLocOpBuilder &b, AttentionOp op, ValueRange args,
                KernelRole role, StringRef sharedSymbol = "",
                bool wgmma = false)
      : b(b), op(op), role(role), a{b, b.getLoc()}, sharedSymbol(sharedSymbol),
        wgmma(wgmma) {
    size_t n = 0;
    if (role != KernelRole::Merge) {
      q = args[n++];
      k = args[n++];
      v = args[n++];
      if (op.getGeneralWeight())
        generalWeight = args[n++];
      if (op.getQueryWeight()) {
        queryWeight = args[n++];
        keyWeight = args[n++];
        scoreVector = args[n++];
      }
      if (op.getKeyLengths())
        keyLengths = args[n++];
      for (size_t i = 0; i < op.getBiases().size(); ++i)
        biases.push_back(args[n++]);
      if (op.getAlibiSlopes())
        alibiSlopes = args[n++];
      for (size_t i = 0; i < op.getMasks().size(); ++i)
        masks.push_back(args[n++]);
    } else {
      workspace = args[n++];
    }
    out = args[n++];
    if (op.getLse())
      lse = args[n++];
    if (role != KernelRole::Merge)
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
    if (role == KernelRole::TensorCore) {
      // Packed rows (AttnSemantics.h): block y is a kv head and its G query
      // heads' rows [0, G·S) go together, so one decode step (S = 1) fills
      // a fragment's rows and K and V are read once for the group. Block x
      // is (row block, key part), the parts of a row block side by side.
      Value packedRows = a.mul(semantics::groupSize(a, Hq, Hkv), S);
      Value blockX = b.create<gpu::BlockIdOp>(gpu::Dimension::x);
      Value rowBlock = a.div(blockX, splits), part = a.rem(blockX, splits);
      Value item = a.add(a.mul(rowBlock, a.constant(kWarpsPerBlock)), warp);
      // Warps side by side take the column chunks of the same 16 rows.
      Value chunks = a.constant(mmaColumnChunks(op));
      Value rowBase = a.mul(a.div(item, chunks), a.constant(kMmaRows));
      Value column0 =
          a.mul(a.rem(item, chunks), a.constant(mmaChunkColumns(op)));
      // The keys the block's rows see (the staged kernel's warps share
      // every key block and barrier) or the warp's rows see.
      int64_t rows = mmaStaged(op) ? mmaBlockRows(op) : kMmaRows;
      Value first = mmaStaged(op) ? a.mul(rowBlock, a.constant(rows)) : rowBase;
      auto inside = b.create<scf::IfOp>(a.lt(first, packedRows),
                                        /*else=*/false);
      b.setInsertionPointToStart(&inside.getThenRegion().front());
      Value last = a.min(a.add(first, a.constant(rows - 1)),
                         a.sub(packedRows, a.constant(1)));
      auto [firstPosition, lastPosition] =
          semantics::packedPositions(a, first, last, S, T);
      return tensorCoreRows(
          lane, rowBase, column0, head, batch, part,
          keyPart(visiblePositions(batch, firstPosition, lastPosition), part,
                  mmaKeysPerBlock(op)));
    }
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
  SmallVector<Value> biases, masks; ///< The op's, as kernel parameters.
  Value alibiSlopes;                ///< Given slopes, or null.
  /// The score's tensors: W (general); Wq, Wk and va (additive).
  Value generalWeight, queryWeight, keyWeight, scoreVector;
  /// Shared memory: the staged kernel's K and V blocks, or the SIMT
  /// kernel's projected queries (projectionShared).
  StringRef sharedSymbol;
  /// The staged tensor-core kernel's products by Hopper's warpgroup MMA
  /// (cuda-sm90a) rather than mma.sync.
  bool wgmma;
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
  /// The element of a bias or mask `tensor` (dense, broadcastable to [B,
  /// Hq, S, T]: its dims align with the last ones, each 1 or the full size)
  /// at (batch, head, query, key).
  Value broadcastOffset(Value tensor, Value batch, Value head, Value query,
                        Value key) {
    ArrayRef<int64_t> shape = cast<ShapedType>(tensor.getType()).getShape();
    Value index[4] = {batch, head, query, key}, size[4] = {B, Hq, S, T};
    int64_t rank = shape.size();
    Value offset = a.constant(0);
    for (int64_t n = 0; n < rank; ++n) {
      if (shape[n] == 1)
        continue;
      int64_t axis = 4 - rank + n;
      offset = a.add(a.mul(offset, size[axis]), index[axis]);
    }
    return offset;
  }
  /// `count` sums over the head dim Dk, each lane taking d = lane, lane + 32,
  /// ...: `terms(d)` gives each sum's term; the lanes' partial sums meet in
  /// five xor shuffles, so every lane holds the totals.
  SmallVector<Value>
  depthSums(llvm::function_ref<SmallVector<Value>(Value)> terms, int count,
            Value lane) {
    auto depth = b.create<scf::ForOp>(lane, Dk, a.constant(32),
                                      SmallVector<Value>(count, f32(0.0)));
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(depth.getBody());
      SmallVector<Value> next;
      for (auto [sum, term] :
           llvm::zip(depth.getRegionIterArgs(), terms(depth.getInductionVar())))
        next.push_back(b.create<arith::AddFOp>(sum, term));
      b.create<scf::YieldOp>(next);
    }
    SmallVector<Value> sums(depth.getResults());
    for (Value &sum : sums)
      sum = xorReduce(sum, /*isMax=*/false, kWarpLanes);
    return sums;
  }
  /// max(sqrt(x), 1e-12): a cosine score's norm, as the format clamps it.
  Value clampedNorm(Value squares) {
    return b.create<arith::MaximumFOp>(
        intrinsic("llvm.nvvm.sqrt.rn.f", squares), f32(1e-12));
  }
  /// ALiBi's slope of query head `head` in log2 units, negated: the given
  /// slope, or the standard one (semantics::alibiSlopeFraction, n =
  /// 2^floor(log2 Hq) from Hq's leading zeros); null without ALiBi.
  Value alibiFactor(Value head) {
    if (!op.getAlibi())
      return Value();
    Value slope;
    if (alibiSlopes) {
      slope = load(alibiSlopes, b.getF32Type(), head);
    } else {
      Type i64 = b.getI64Type();
      Value leading = b.create<LLVM::CallIntrinsicOp>(
                           i64, b.getStringAttr("llvm.ctlz.i64"),
                           ValueRange{b.create<arith::IndexCastOp>(i64, Hq),
                                      b.create<arith::ConstantIntOp>(0, 1)})
                          .getResult(0);
      Value n = b.create<arith::IndexCastOp>(
          b.getIndexType(),
          b.create<arith::ShLIOp>(
              b.create<arith::ConstantIntOp>(1, 64),
              b.create<arith::SubIOp>(b.create<arith::ConstantIntOp>(63, 64),
                                      leading)));
      semantics::SlopeFraction<Value> fraction =
          semantics::alibiSlopeFraction(a, head, n);
      slope = exp2(b.create<arith::MulFOp>(
          f32(-8.0), b.create<arith::DivFOp>(toF32(fraction.numerator),
                                             toF32(fraction.denominator))));
    }
    return b.create<arith::MulFOp>(slope, f32(-M_LOG2E));
  }
  /// What a query row's scores add and drop beyond the position masks: per
  /// tensor bias and tensor mask the offset of its element at key 0 (the
  /// key axis is last, so key j's is j further where the tensor has that
  /// axis), and ALiBi's factor (alibiFactor) and the row's aligned position.
  struct RowExtras {
    SmallVector<Value> biases, masks;
    Value alibi, position;
  };
  RowExtras rowExtras(Value batch, Value head, Value query) {
    RowExtras row;
    for (Value bias : op.getBiases())
      row.biases.push_back(
          broadcastOffset(bias, batch, head, query, a.constant(0)));
    for (Value mask : op.getMasks())
      row.masks.push_back(
          broadcastOffset(mask, batch, head, query, a.constant(0)));
    row.alibi = alibiFactor(head);
    if (row.alibi)
      row.position = semantics::alignedPosition(a, query, S, T);
    return row;
  }
  /// Where `tensor` (a bias or mask) holds key `key` of the row whose key 0
  /// is at `rowOffset`.
  Value keyOffset(Value tensor, Value rowOffset, Value key) {
    ArrayRef<int64_t> shape = cast<ShapedType>(tensor.getType()).getShape();
    return shape.back() == 1 ? rowOffset : a.add(rowOffset, key);
  }
  /// `score` (log2 units) plus every tensor bias and ALiBi's -slope·|i' -
  /// j| of `row`'s key `key` (|i' - j| as f32 when given as `distance`),
  /// -inf where a tensor mask drops the key (a NaN score too: dropped keys
  /// leave the softmax).
  Value biasAndMask(Value score, const RowExtras &row, Value key,
                    Value distance = Value()) {
    for (auto [bias, operand, at] :
         llvm::zip(biases, op.getBiases(), row.biases)) {
      Type type = getElementTypeOrSelf(operand.getType());
      score = fma(load(bias, type, keyOffset(operand, at, key)), f32(M_LOG2E),
                  score);
    }
    if (row.alibi) {
      if (!distance)
        distance =
            toF32(a.max(a.sub(row.position, key), a.sub(key, row.position)));
      score = fma(row.alibi, distance, score);
    }
    std::optional<ArrayRef<bool>> drops = op.getMaskDrops();
    for (auto [n, mask] : llvm::enumerate(masks)) {
      Value at = keyOffset(op.getMasks()[n], row.masks[n], key);
      // i1 tensors hold a byte per element, 0 or 1.
      Value byte = b.create<LLVM::LoadOp>(
          b.getI8Type(), elementPointer(mask, b.getI8Type(), at));
      bool drop = drops && n < drops->size() && (*drops)[n];
      Value keep = b.create<arith::CmpIOp>(
          drop ? arith::CmpIPredicate::eq : arith::CmpIPredicate::ne, byte,
          b.create<arith::ConstantIntOp>(0, 8));
      score = select(keep, score,
                     f32(-std::numeric_limits<double>::infinity()));
    }
    return score;
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

  /// The keys that query rows [firstQuery, lastQuery] see, together (the
  /// rules of AttnSemantics.h), clamped to [0, T].
  semantics::KeyRange<Value> visibleKeys(Value batch, Value firstQuery,
                                         Value lastQuery) {
    return visiblePositions(batch,
                            semantics::alignedPosition(a, firstQuery, S, T),
                            semantics::alignedPosition(a, lastQuery, S, T));
  }
  /// The keys aligned positions [firstPosition, lastPosition] see.
  semantics::KeyRange<Value> visiblePositions(Value batch, Value firstPosition,
                                              Value lastPosition) {
    std::optional<Value> length;
    if (keyLengths)
      length = b.create<arith::IndexCastOp>(
          b.getIndexType(),
          b.create<LLVM::LoadOp>(
              b.getI32Type(),
              elementPointer(keyLengths, b.getI32Type(), batch)));
    semantics::KeyRange<Value> keys = semantics::visibleKeys(
        a, op.getKeyVisibility(), firstPosition, lastPosition, T, length);
    Value first = a.max(keys.first, a.constant(0));
    return {first, a.max(a.min(keys.last, T), first)};
  }
  /// Of `keys`, those of part `part` of `splits`: keys [part·c, (part +
  /// 1)·c), c = ceil(T / splits) rounded up to a multiple of `align` (the
  /// tensor-core kernel's parts start on its key blocks).
  semantics::KeyRange<Value> keyPart(semantics::KeyRange<Value> keys,
                                     Value part, int64_t align) {
    Value partKeys = a.div(a.add(T, a.sub(splits, a.constant(1))), splits);
    if (align > 1)
      partKeys = a.mul(
          a.div(a.add(partKeys, a.constant(align - 1)), a.constant(align)),
          a.constant(align));
    Value partFirst = a.mul(part, partKeys);
    Value first = a.max(keys.first, partFirst);
    return {first, a.max(a.min(keys.last, a.add(partFirst, partKeys)), first)};
  }

  /// What a raw q·k product is multiplied by: the scale (1/sqrt(Dk) by
  /// default; Dk may be a run-time size, hence the rule, not its value),
  /// and without a softcap the scale times log2 e (one multiply a score).
  struct ScoreFactor {
    Value scale, log2Scale;
  };
  ScoreFactor scoreFactor() {
    semantics::ScaleRule rule = op.getScaleRule();
    Value scale = f32(rule.factor);
    if (rule.overSqrtKeyDim)
      scale = b.create<arith::DivFOp>(
          scale, intrinsic("llvm.nvvm.sqrt.rn.f", toF32(Dk)));
    Value log2Scale;
    if (!op.getSoftcap())
      log2Scale = b.create<arith::MulFOp>(scale, f32(kLog2e));
    return {scale, log2Scale};
  }

  /// A raw q·k product as a score in log2 units: raw · scale, softcapped
  /// in natural units, times log2 e.
  Value logScore(Value raw, ScoreFactor factor) {
    if (factor.log2Scale)
      return b.create<arith::MulFOp>(raw, factor.log2Scale);
    Value score = b.create<arith::MulFOp>(raw, factor.scale);
    if (auto softcap = op.getSoftcap()) {
      double cap = softcap->convertToDouble();
      // c · tanh(s / c) by math.tanh, which lowerMath turns into the CPU
      // kernels' rational approximation: the exp-based 1 - 2 / (exp(2x) +
      // 1) cancels for small x (scores far below c).
      Value tanh = b.create<math::TanhOp>(
          b.create<arith::MulFOp>(score, f32(1.0 / cap)));
      score = b.create<arith::MulFOp>(tanh, f32(cap));
    }
    return b.create<arith::MulFOp>(score, f32(kLog2e));
  }

  /// Row `query` of head `head` of batch `batch`, counted over [B, Hq, S]:
  /// the lse's element, and the workspace's group of parts.
  Value rowIndex(Value batch, Value head, Value query) {
    return a.add(a.mul(a.add(a.mul(batch, Hq), head), S), query);
  }
  /// The f32 element where part `part` of row (batch, head, query) keeps
  /// [m, l, acc[Dv]] in the workspace: row() and the tensor-core kernel
  /// write it, merge() reads it.
  Value workspaceSlot(Value batch, Value head, Value query, Value part) {
    return a.mul(a.add(a.mul(rowIndex(batch, head, query), splits), part),
                 a.add(Dv, a.constant(2)));
  }

  /// The running max where it is finite, else 0: the shift that keeps a row
  /// without keys (m = -inf) from computing -inf - -inf.
  Value finiteShift(Value m) {
    return select(
        b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, m, minusInfinity()),
        f32(0.0), m);
  }

  /// k = ceil(log2 T), the shift of SoftmaxShift.h.
  Value logKeys() { return softmaxShift(b, b.getLoc(), T); }
  /// exp2((s - m) - k), in SoftmaxShift.h's order.
  Value shiftedExp2(Value s, Value m, Value k) {
    return exp2(b.create<arith::SubFOp>(b.create<arith::SubFOp>(s, m), k));
  }

  /// lse = (m + (k + log2 l)) · ln 2 of a row, -inf without keys.
  void storeLse(Value batch, Value head, Value query, Value m, Value l,
                Value logKeys, Value noKeys) {
    Value logSum = b.create<arith::MulFOp>(
        b.create<arith::AddFOp>(m, b.create<arith::AddFOp>(logKeys, log2(l))),
        f32(0.6931471805599453));
    store(lse, b.getF32Type(), rowIndex(batch, head, query),
          select(noKeys, minusInfinity(), logSum));
  }

  /// The xor-shuffle offsets that combine a whole warp, and the 4 lanes of
  /// an mma fragment's row.
  static constexpr int64_t kWarpLanes[] = {16, 8, 4, 2, 1};
  static constexpr int64_t kQuadLanes[] = {1, 2};
  /// `x` summed, or maxed as maxOf does, over the lanes that xor shuffles
  /// at `offsets` (in that order) reach: every one of them holds the result.
  Value xorReduce(Value x, bool isMax, ArrayRef<int64_t> offsets) {
    for (int64_t offset : offsets) {
      Value other = b.create<gpu::ShuffleOp>(x, i32(offset), i32(32),
                                             gpu::ShuffleMode::XOR)
                        .getShuffleResult();
      x = isMax ? maxOf(other, x) : b.create<arith::AddFOp>(x, other);
    }
    return x;
  }

  Value maxOf(Value x, Value y) {
    // A NaN x keeps y, as the CPU kernels' running max does.
    return select(b.create<arith::CmpFOp>(arith::CmpFPredicate::OGT, x, y), x,
                  y);
  }

  /// Element `at` of f32 shared memory from `base`.
  Value sharedF32(Value base, Value at) {
    return b.create<LLVM::GEPOp>(
        base.getType(), b.getF32Type(), base,
        ValueRange{b.create<arith::IndexCastOp>(b.getI64Type(), at)});
  }
  /// Waits for the warp's lanes: their shared-memory writes are then seen.
  void warpSync() {
    b.create<LLVM::CallIntrinsicOp>(TypeRange{},
                                    b.getStringAttr("llvm.nvvm.bar.warp.sync"),
                                    ValueRange{i32(-1)});
  }
  /// (q·W)[e] of general scores, W [Dk, Dk]: this lane's own sum over q.
  Value generalProjection(Value queryRow, Value e) {
    Type qType = getElementTypeOrSelf(op.getQuery().getType());
    Type wType = getElementTypeOrSelf(op.getGeneralWeight().getType());
    auto loop = b.create<scf::ForOp>(a.constant(0), Dk, a.constant(1),
                                     ValueRange{f32(0.0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value d = loop.getInductionVar();
    Value w = load(generalWeight, wType, a.add(a.mul(d, Dk), e));
    b.create<scf::YieldOp>(ValueRange{fma(load(q, qType, a.add(queryRow, d)), w,
                                          loop.getRegionIterArgs()[0])});
    return loop.getResult(0);
  }
  /// This lane's term at depth d of additive scores' (Wq·q)[u], or with
  /// `ofKey` (Wk·k)[u] (weights [A, Dk]), `row` the row of q or k.
  Value additiveTerm(bool ofKey, Value row, Value u, Value d) {
    Type type = getElementTypeOrSelf(op.getQuery().getType());
    Value weight = ofKey ? op.getKeyWeight() : op.getQueryWeight();
    return b.create<arith::MulFOp>(load(ofKey ? keyWeight : queryWeight,
                                        getElementTypeOrSelf(weight.getType()),
                                        a.add(a.mul(u, Dk), d)),
                                   load(ofKey ? k : q, type, a.add(row, d)));
  }
  /// General and additive scores: the row's projected query (q·W, or Wq·q)
  /// in this warp's slice of shared memory, returned; null where
  /// projectionShared does not hold (rawScore then recomputes it per key).
  Value projectQuery(Value lane, Value queryRow) {
    if (!projectionShared(op))
      return Value();
    int64_t length = projectionLength(op);
    Value warp =
        a.div(b.create<gpu::ThreadIdOp>(gpu::Dimension::x), a.constant(32));
    Value slice = sharedF32(shared(), a.mul(warp, a.constant(length)));
    if (op.getScore() == ScoreKind::general) {
      // Lanes over e, each reading a row of W along its lanes.
      auto each = b.create<scf::ForOp>(lane, Dk, a.constant(32));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(each.getBody());
      Value e = each.getInductionVar();
      b.create<LLVM::StoreOp>(generalProjection(queryRow, e),
                              sharedF32(slice, e));
    } else {
      // A butterfly per u; lane 0 keeps it.
      auto each = b.create<scf::ForOp>(a.constant(0), a.constant(length),
                                       a.constant(1));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(each.getBody());
      Value u = each.getInductionVar();
      Value sum = depthSums(
          [&](Value d) {
            return SmallVector<Value>{
                additiveTerm(/*ofKey=*/false, queryRow, u, d)};
          },
          1, lane)[0];
      auto first = b.create<scf::IfOp>(a.eq(lane, a.constant(0)), false);
      b.setInsertionPointToStart(&first.getThenRegion().front());
      b.create<LLVM::StoreOp>(sum, sharedF32(slice, u));
    }
    warpSync();
    return slice;
  }
  /// The score of the row at `queryRow` and the key at `keyRow` before the
  /// scale and softcap, in every lane: q·k (cosine: over the clamped norms,
  /// `queryNorm` |q|), (q·W)·k, or va·tanh(Wq·q + Wk·k); `projection` the
  /// row's projected query from projectQuery, or null.
  Value rawScore(Value lane, Value queryRow, Value keyRow, Value queryNorm,
                 Value projection) {
    Type qType = getElementTypeOrSelf(op.getQuery().getType());
    if (op.getScore() == ScoreKind::additive) {
      // Per u: (Wk·k)[u] by a butterfly (and (Wq·q)[u] beside it when not
      // kept), then va[u]·tanh(...) summed, the same in every lane.
      Type vaType = getElementTypeOrSelf(op.getScoreVector().getType());
      int64_t width = projectionLength(op);
      auto each = b.create<scf::ForOp>(a.constant(0), a.constant(width),
                                       a.constant(1), ValueRange{f32(0.0)});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(each.getBody());
      Value u = each.getInductionVar();
      SmallVector<Value> sums = depthSums(
          [&](Value d) {
            SmallVector<Value> terms{
                additiveTerm(/*ofKey=*/true, keyRow, u, d)};
            if (!projection)
              terms.push_back(additiveTerm(/*ofKey=*/false, queryRow, u, d));
            return terms;
          },
          projection ? 1 : 2, lane);
      Value projected =
          projection
              ? b.create<LLVM::LoadOp>(b.getF32Type(), sharedF32(projection, u))
              : sums[1];
      Value hidden =
          b.create<math::TanhOp>(b.create<arith::AddFOp>(projected, sums[0]));
      b.create<scf::YieldOp>(ValueRange{fma(
          load(scoreVector, vaType, u), hidden, each.getRegionIterArgs()[0])});
      return each.getResult(0);
    }
    // This lane's share of q·k (general: (q·W)·k), then the butterfly over
    // the warp. (Cosine scores: k·k beside it, for |k|.)
    SmallVector<Value> sums = depthSums(
        [&](Value d) {
          Value kd = load(k, qType, a.add(keyRow, d));
          Value qd;
          if (op.getScore() != ScoreKind::general)
            qd = load(q, qType, a.add(queryRow, d));
          else if (projection)
            qd = b.create<LLVM::LoadOp>(b.getF32Type(),
                                        sharedF32(projection, d));
          else
            qd = generalProjection(queryRow, d);
          SmallVector<Value> terms{b.create<arith::MulFOp>(qd, kd)};
          if (queryNorm)
            terms.push_back(b.create<arith::MulFOp>(kd, kd));
          return terms;
        },
        queryNorm ? 2 : 1, lane);
    if (!queryNorm)
      return sums[0];
    return b.create<arith::DivFOp>(
        sums[0], b.create<arith::MulFOp>(queryNorm, clampedNorm(sums[1])));
  }

  void row(Value lane, Value query, Value part, Value head, Value batch) {
    Type qType = getElementTypeOrSelf(op.getQuery().getType());
    Type vType = getElementTypeOrSelf(op.getValue().getType());
    Value kvHead = semantics::kvHeadOf(a, head, Hq, Hkv);
    // Of the keys the row sees, those of its part.
    semantics::KeyRange<Value> keys =
        keyPart(visibleKeys(batch, query, query), part, 1);
    Value first = keys.first, last = keys.last;

    ScoreFactor factor = scoreFactor();
    RowExtras extras = rowExtras(batch, head, query);
    Value logKeys = this->logKeys();
    Value minusInf = f32(-std::numeric_limits<double>::infinity());

    Value queryRow = rowOffset(batch, head, Hq, query, S, Dk);
    Value outRow = rowOffset(batch, head, Hq, query, S, Dv);
    // Cosine scores: (q·k) / (max(|q|, 1e-12) · max(|k|, 1e-12)).
    Value queryNorm;
    if (op.getScore() == ScoreKind::cosine)
      queryNorm = clampedNorm(depthSums(
          [&](Value d) {
            Value qd = load(q, qType, a.add(queryRow, d));
            return SmallVector<Value>{b.create<arith::MulFOp>(qd, qd)};
          },
          1, lane)[0]);
    Value projection = projectQuery(lane, queryRow);
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
      Value score = biasAndMask(
          logScore(rawScore(lane, queryRow, keyRow, queryNorm, projection),
                   factor),
          extras, key);
      // The online-softmax step of the CPU kernels: a NaN score keeps m and
      // makes p NaN, so it reaches l and the output (IEEE propagation).
      Value newMax = maxOf(score, m);
      Value safeMax = finiteShift(newMax);
      Value rescale = exp2(b.create<arith::SubFOp>(m, safeMax));
      Value p = shiftedExp2(score, safeMax, logKeys);
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
    Value at = workspaceSlot(batch, head, query, part);
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
  /// passes the test and reaches the output); lse = (m + (k + log2 l)) ·
  /// ln 2, -inf without keys. Columns column0 + lane + 32·c.
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
      storeLse(batch, head, query, m, l, logKeys, noKeys);
    }
  }

  /// The merge kernel's row: m = max m_p, each part's l and acc scaled by
  /// exp2(m_p - m) and summed (exact: every part shifted by the same log2
  /// T), then finish() as one part would, columns lane + 32·c.
  void merge(Value lane, Value query, Value head, Value batch) {
    Value zero = a.constant(0), one = a.constant(1), warp = a.constant(32);
    auto partAt = [&](Value part) {
      return workspaceSlot(batch, head, query, part);
    };
    // m = max m_p and l = sum l_p · exp2(m_p - m), lanes over parts.
    auto maxLoop =
        b.create<scf::ForOp>(lane, splits, warp, ValueRange{minusInfinity()});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value mp =
          load(workspace, b.getF32Type(), partAt(maxLoop.getInductionVar()));
      b.create<scf::YieldOp>(
          ValueRange{maxOf(mp, maxLoop.getRegionIterArgs()[0])});
    }
    Value m = xorReduce(maxLoop.getResult(0), /*isMax=*/true, kWarpLanes);
    Value safeMax = finiteShift(m);
    auto weight = [&](Value at) {
      return exp2(b.create<arith::SubFOp>(load(workspace, b.getF32Type(), at),
                                          safeMax));
    };
    auto sumLoop = b.create<scf::ForOp>(lane, splits, warp, ValueRange{f32(0)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      Value at = partAt(sumLoop.getInductionVar());
      Value lp = load(workspace, b.getF32Type(), a.add(at, one));
      b.create<scf::YieldOp>(
          ValueRange{fma(lp, weight(at), sumLoop.getRegionIterArgs()[0])});
    }
    Value l = xorReduce(sumLoop.getResult(0), /*isMax=*/false, kWarpLanes);
    Value logKeys = this->logKeys();
    // The columns lane + 32·c: one pass over the parts, the part's weight
    // once for all of them (its loads in flight together).
    auto columns =
        b.create<scf::ForOp>(zero, Dv, a.constant(32 * kColumnsPerLane));
    b.setInsertionPointToStart(columns.getBody());
    Value column0 = columns.getInductionVar();
    auto parts = b.create<scf::ForOp>(
        zero, splits, one, SmallVector<Value>(kColumnsPerLane, f32(0.0)));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(parts.getBody());
      Value at = partAt(parts.getInductionVar());
      Value w = weight(at);
      SmallVector<Value> next;
      for (int64_t c = 0; c < kColumnsPerLane; ++c) {
        Value column = a.add(column0, a.add(lane, a.constant(32 * c)));
        // Columns past Dv read column 0 and are not stored.
        Value read = select(a.lt(column, Dv), column, zero);
        Value x = load(workspace, b.getF32Type(),
                       a.add(at, a.add(read, a.constant(2))));
        next.push_back(fma(x, w, parts.getRegionIterArgs()[c]));
      }
      b.create<scf::YieldOp>(next);
    }
    finish(lane, column0, query, head, batch, m, l,
           SmallVector<Value>(parts.getResults()), logKeys);
  }

  //===--------------------------------------------------------------------===//
  // The tensor-core kernel
  //===--------------------------------------------------------------------===//
  //
  // A warp takes 16 query rows; lane = 4·g + t holds rows g and g + 8 of
  // every m16n8 fragment, at columns 2t and 2t + 1 (PTX's mma.m16n8k16
  // layouts). Q's A fragments stay in registers; per block of keys
  // (mmaBlockKeys), S = Q·Kᵀ as n-tiles of 8 keys (K rows are the B operand as
  // they lie in memory), biases and masks and the online softmax on the C
  // fragments (row max and sum over the 4 lanes of a row by shuffles; an
  // element's row and key are known from its lane), then O += P·V with P's
  // C fragments reused, rounded to the input type, as A operands, and V read as
  // B.

  /// Two 16-bit values packed as the i32 an mma operand register holds.
  Value pack(Value low, Value high) {
    Type element = low.getType();
    auto pair = VectorType::get({2}, element);
    Value v = b.create<LLVM::UndefOp>(pair);
    v = b.create<LLVM::InsertElementOp>(v, low, i32(0));
    v = b.create<LLVM::InsertElementOp>(v, high, i32(1));
    return b.create<LLVM::BitcastOp>(b.getI32Type(), v);
  }
  Value i32(int64_t value) { return b.create<arith::ConstantIntOp>(value, 32); }
  /// Element `at` of a 16-bit tensor when `valid`, else 0 (nothing read).
  Value loadOrZero(Value buffer, Type element, Value at, Value valid) {
    Value x = b.create<LLVM::LoadOp>(
        element,
        elementPointer(buffer, element, select(valid, at, a.constant(0))));
    return select(valid, x,
                  b.create<arith::ConstantOp>(b.getZeroAttr(element)));
  }
  /// Elements `at`, `at` + 1 when `valid` (else 0) as one i32. With an even
  /// row length both lie in one aligned word: one load.
  Value loadPair(Value buffer, Type element, Value at, Value valid,
                 bool evenRows, Value secondValid) {
    if (evenRows) {
      Value word = b.create<LLVM::LoadOp>(
          b.getI32Type(),
          elementPointer(buffer, element, select(valid, at, a.constant(0))));
      return select(valid, word, i32(0));
    }
    return pack(loadOrZero(buffer, element, at, valid),
                loadOrZero(buffer, element, a.add(at, a.constant(1)),
                           b.create<arith::AndIOp>(valid, secondValid)));
  }
  /// D += A·B for one m16n8k16 tile: 4 + 2 i32 operands, 4 f32.
  SmallVector<Value> mma(Type element, ArrayRef<Value> aRegs,
                         ArrayRef<Value> bRegs, ArrayRef<Value> c) {
    bool bf16 = element.isBF16();
    SmallVector<Value> operands;
    for (Value r : llvm::concat<const Value>(aRegs, bRegs))
      operands.push_back(bf16 ? r
                              : Value(b.create<LLVM::BitcastOp>(
                                    VectorType::get({2}, b.getF16Type()), r)));
    operands.append(c.begin(), c.end());
    return intrinsicOfFour(b.getF32Type(),
                           bf16 ? "llvm.nvvm.mma.m16n8k16.row.col.bf16"
                                : "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                           operands);
  }
  /// The four `element` results of intrinsic `name` (a literal struct).
  SmallVector<Value> intrinsicOfFour(Type element, StringRef name,
                                     ValueRange operands) {
    auto result = LLVM::LLVMStructType::getLiteral(
        b.getContext(), {element, element, element, element});
    return fields(
        b.create<LLVM::CallIntrinsicOp>(result, b.getStringAttr(name), operands)
            .getResult(0),
        4);
  }
  /// The first `count` fields of `all`, a literal struct.
  SmallVector<Value> fields(Value all, int64_t count) {
    SmallVector<Value> out;
    for (int64_t i = 0; i < count; ++i)
      out.push_back(b.create<LLVM::ExtractValueOp>(all, i));
    return out;
  }
  /// `x` combined over the 4 lanes of a fragment row (lanes 4g .. 4g + 3).
  Value quadReduce(Value x, bool isMax) {
    return xorReduce(x, isMax, kQuadLanes);
  }

  /// The kernel's shared memory (sharedSymbol): the staged kernel's K block,
  /// then V's, rows of stagedRow(D) 16-bit elements; or the SIMT kernel's
  /// projected queries, f32.
  Value shared() {
    return b.create<LLVM::AddressOfOp>(
        LLVM::LLVMPointerType::get(b.getContext(), 3), sharedSymbol);
  }
  /// Shared element `at` of the staged blocks.
  Value sharedElement(Value at) {
    return b.create<LLVM::GEPOp>(
        LLVM::LLVMPointerType::get(b.getContext(), 3), b.getIntegerType(16),
        shared(), ValueRange{b.create<arith::IndexCastOp>(b.getI64Type(), at)});
  }
  /// Four 8x8 matrices of 16-bit elements at shared element `offset` past
  /// `base` (each lane's row, from sharedElement), as 4 i32 fragments: a
  /// lane's fragments lie constants apart.
  SmallVector<Value> ldmatrix(Value base, int64_t offset, bool transpose) {
    Value address = b.create<LLVM::GEPOp>(
        base.getType(), b.getIntegerType(16), base,
        ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
    return intrinsicOfFour(
        b.getI32Type(),
        transpose ? "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
                  : "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16",
        address);
  }
  /// Starts copying rows [block, block + 64) of `tensor` (K or V, head dim
  /// `depth`, run-time size `size`) into its staged block at shared element
  /// `offset`: cp.async, 16 bytes a copy by the block's 128 threads, zeros
  /// past T, one commit group. waitStaged() is when they have landed.
  void stageAsync(Value tensor, int64_t depth, Value size, int64_t offset,
                  Value block, Value kvHead, Value batch) {
    Value thread = b.create<gpu::ThreadIdOp>(gpu::Dimension::x);
    // depth is a multiple of 16, so the 64 rows' 16-byte copies fill whole
    // rounds of the 128 threads.
    int64_t threads = 32 * kWarpsPerBlock, perRow = depth / 8;
    // Key rows lie `stride` elements apart from the head's first.
    Value headFirst = rowOffset(batch, kvHead, Hkv, a.constant(0), T, size);
    Value stride =
        a.sub(rowOffset(batch, kvHead, Hkv, a.constant(1), T, size), headFirst);
    // Copy c = thread + 128·n is row c / perRow, column c % perRow, n in a
    // loop whose trip count is the run-time head dim's (equal to `depth`):
    // unrolled, LLVM would hoist every copy's shared address out of the key
    // loop, each holding a register across it (spills at Dk = Dv = 128).
    auto rounds = b.create<scf::ForOp>(
        a.constant(0),
        a.div(a.mul(size, a.constant(kStagedBlockKeys / 8)),
              a.constant(threads)),
        a.constant(1));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(rounds.getBody());
      Value copy =
          a.add(thread, a.mul(rounds.getInductionVar(), a.constant(threads)));
      Value row, column, to;
      if (wgmma) {
        // Copy c is row c % 8 of core matrix c / 8 (the matrices of 8 rows
        // at every 8 columns in turn), so its shared element is 8c and 8
        // threads in turn fill one matrix's 128 contiguous bytes.
        Value matrix = a.div(copy, a.constant(8));
        row = a.add(a.mul(a.div(matrix, a.constant(perRow)), a.constant(8)),
                    a.rem(copy, a.constant(8)));
        column = a.mul(a.rem(matrix, a.constant(perRow)), a.constant(8));
        to = a.add(a.constant(offset), a.mul(copy, a.constant(8)));
      } else {
        row = a.div(copy, a.constant(perRow));
        column = a.mul(a.rem(copy, a.constant(perRow)), a.constant(8));
        to = a.add(a.constant(offset),
                   a.add(a.mul(row, a.constant(stagedRow(depth))), column));
      }
      Value key = a.add(block, row);
      Value valid = a.lt(key, T);
      Value from = a.add(
          headFirst,
          a.add(a.mul(select(valid, key, a.constant(0)), stride), column));
      // 16 bytes read, or none (the copy writes zeros).
      Value bytes = select(valid, i32(16), i32(0));
      b.create<LLVM::CallIntrinsicOp>(
          TypeRange{},
          b.getStringAttr("llvm.nvvm.cp.async.cg.shared.global.16.s"),
          ValueRange{sharedElement(to),
                     elementPointer(tensor, b.getIntegerType(16), from),
                     bytes});
    }
    b.create<LLVM::CallIntrinsicOp>(
        TypeRange{}, b.getStringAttr("llvm.nvvm.cp.async.commit.group"),
        ValueRange{});
  }
  /// Waits for this thread's copies, then the block's barrier: every staged
  /// row in place, and every warp done with what it read before.
  /// With wgmma, which reads shared memory through the async proxy, each
  /// thread's copies are first made visible to it.
  void waitStaged() {
    b.create<LLVM::CallIntrinsicOp>(
        TypeRange{}, b.getStringAttr("llvm.nvvm.cp.async.wait.group"),
        ValueRange{i32(0)});
    if (wgmma)
      ptx("fence.proxy.async.shared::cta;");
    b.create<gpu::BarrierOp>();
  }
  //===--------------------------------------------------------------------===//
  // Hopper's warpgroup MMA (wgmma, cuda-sm90a)
  //===--------------------------------------------------------------------===//
  //
  // The staged kernel's block of 128 threads is one warpgroup, and its 64
  // rows (warp w's 16 at 16w) are wgmma's M. Per warp the fragments are
  // mma.m16n8k16's: A (Q, or P rounded) in the same 4 registers a k-step,
  // and accumulator register 4j + e is n-tile j's c[e], so the masks and the
  // softmax are the mma.sync path's. B comes from shared memory through a
  // matrix descriptor: K's staged block as the K-major B of S = Q·Kᵀ, V's
  // as the MN-major (transposed) B of O += P·V, both as core matrices of 8
  // rows of 16 bytes. MLIR 19's nvvm.wgmma.mma_async takes A from shared
  // memory only, so the instructions are written as PTX.

  Value i64(int64_t value) { return b.create<arith::ConstantIntOp>(value, 64); }
  /// PTX `text` as inline assembly that has side effects and touches
  /// memory, so nothing moves across it; its results in one struct.
  Value inlinePtx(TypeRange results, StringRef text, StringRef constraints,
                  ValueRange operands) {
    std::string all = constraints.str();
    all += all.empty() ? "~{memory}" : ",~{memory}";
    auto inlineAsm = b.create<LLVM::InlineAsmOp>(
        results, operands, text, all, /*has_side_effects=*/true,
        /*is_align_stack=*/false, LLVM::AsmDialectAttr(), ArrayAttr());
    return results.empty() ? Value() : inlineAsm.getResult(0);
  }
  void ptx(StringRef text) { inlinePtx({}, text, "", {}); }
  Type f32Struct(int64_t count) {
    return LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(count, b.getF32Type()));
  }
  /// The matrix descriptor of core matrices from shared element `offset`
  /// on, `leading` bytes apart along the product's depth and `stride`
  /// bytes apart along M or N (no swizzle; the start address and both
  /// offsets in 16-byte units at bits 0, 16 and 32).
  Value matrixDescriptor(int64_t offset, int64_t leading, int64_t stride) {
    Value address = b.create<arith::AddIOp>(
        b.create<LLVM::PtrToIntOp>(b.getI64Type(), shared()), i64(2 * offset));
    Value start = b.create<arith::AndIOp>(
        b.create<arith::ShRUIOp>(address, i64(4)), i64(0x3fff));
    return b.create<arith::OrIOp>(
        start, i64((leading >> 4) << 16 | (stride >> 4) << 32));
  }
  /// Issues D += A·B, wgmma.mma_async m64nNk16 with N = 2·count: A this
  /// warp's 4 registers, B at `descriptor`, transposed (MN-major) when
  /// `transposeB`; D = A·B (scale-d 0) when `d` is empty, so that no
  /// instruction writes the accumulators between wgmma.fence and the MMA.
  /// Done only after wgmmaWait().
  SmallVector<Value> wgmmaAsync(Type element, ArrayRef<Value> aRegs,
                                Value descriptor, bool transposeB,
                                int64_t count, ArrayRef<Value> d) {
    StringRef type = element.isBF16() ? "bf16" : "f16";
    std::string text;
    llvm::raw_string_ostream os(text);
    // $0 .. the accumulators, then A's 4 registers, B's descriptor and
    // whether to accumulate (an i32 made a predicate).
    os << "{\n.reg .pred p;\nsetp.ne.b32 p, $" << count + 5 << ", 0;\n"
       << "wgmma.mma_async.sync.aligned.m64n" << 2 * count << "k16.f32." << type
       << "." << type << " {";
    for (int64_t i = 0; i < count; ++i)
      os << (i ? ", $" : "$") << i;
    os << "}, {$" << count << ", $" << count + 1 << ", $" << count + 2 << ", $"
       << count + 3 << "}, $" << count + 4 << ", p, 1, 1, "
       << (transposeB ? 1 : 0) << ";\n}";
    SmallVector<Value> operands(aRegs);
    operands.push_back(descriptor);
    operands.push_back(i32(d.empty() ? 0 : 1));
    std::string constraints;
    for (int64_t i = 0; i < count; ++i)
      constraints += "=f,";
    constraints += "r,r,r,r,l,r";
    // Accumulating: the accumulators are also the last operands, tied to
    // the results.
    operands.append(d.begin(), d.end());
    for (int64_t i = 0; i < static_cast<int64_t>(d.size()); ++i)
      constraints += "," + std::to_string(i);
    return fields(inlinePtx(f32Struct(count), os.str(), constraints, operands),
                  count);
  }
  /// `values` (f32 or i32) through an empty asm with side effects: every
  /// instruction that computes them stays before it and every use after it,
  /// as wgmma needs around wgmma.fence (the registers it reads are written
  /// before the fence) and wgmma.wait_group (its results read after).
  void pinRegisters(SmallVectorImpl<Value> &values) {
    if (values.empty())
      return;
    SmallVector<Type> types;
    std::string constraints;
    for (Value v : values) {
      types.push_back(v.getType());
      constraints += v.getType().isF32() ? "=f," : "=r,";
    }
    for (size_t i = 0; i < values.size(); ++i)
      constraints += (i ? "," : "") + std::to_string(i);
    auto all = LLVM::LLVMStructType::getLiteral(b.getContext(), types);
    Value pinned = inlinePtx(all, "", constraints, values);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = b.create<LLVM::ExtractValueOp>(pinned, i);
  }
  /// Commits the MMAs issued since the last wgmma fence and waits for them;
  /// `accumulators`, their results, are pinned after the wait.
  void wgmmaWait(SmallVectorImpl<Value> &accumulators) {
    ptx("wgmma.commit_group.sync.aligned;");
    ptx("wgmma.wait_group.sync.aligned 0;");
    pinRegisters(accumulators);
  }
  /// S = Q·Kᵀ for the staged block by wgmma: a k-step's B is K's core
  /// matrices at depths 16ks and 16ks + 8 (128 bytes apart) of every 8
  /// keys (Dk / 8 matrices apart).
  SmallVector<SmallVector<Value>>
  wgmmaScores(ArrayRef<SmallVector<Value>> qRegs, Type element, int64_t dk) {
    ptx("wgmma.fence.sync.aligned;");
    SmallVector<Value> d;
    for (int64_t ks = 0; ks < dk / 16; ++ks)
      d = wgmmaAsync(element, qRegs[ks],
                     matrixDescriptor(2 * ks * 64, 128, dk / 8 * 128),
                     /*transposeB=*/false, kStagedBlockKeys / 2, d);
    wgmmaWait(d);
    SmallVector<SmallVector<Value>> scores;
    for (int64_t j = 0; j < kStagedBlockKeys / 8; ++j)
      scores.push_back(
          SmallVector<Value>(d.begin() + 4 * j, d.begin() + 4 * j + 4));
    return scores;
  }
  /// O += P·V for the staged block by wgmma: step s's B is V's core
  /// matrices of keys 16s and 16s + 8 (Dv / 8 matrices apart) at every 8
  /// columns (128 bytes apart), read transposed.
  void wgmmaValues(ArrayRef<SmallVector<Value>> pSteps, Type element,
                   int64_t valueOffset, int64_t dv, SmallVectorImpl<Value> &o) {
    // O was rescaled and P computed by ordinary instructions: both pinned
    // before the fence.
    SmallVector<Value> d(o.begin(), o.end()), pRegs;
    for (ArrayRef<Value> step : pSteps)
      pRegs.append(step.begin(), step.end());
    pinRegisters(d);
    pinRegisters(pRegs);
    ptx("wgmma.fence.sync.aligned;");
    for (int64_t step = 0; step < int64_t(pSteps.size()); ++step)
      d = wgmmaAsync(element, ArrayRef<Value>(pRegs).slice(4 * step, 4),
                     matrixDescriptor(valueOffset + 2 * step * (dv / 8) * 64,
                                      dv / 8 * 128, 128),
                     /*transposeB=*/true, d.size(), d);
    wgmmaWait(d);
    o.assign(d.begin(), d.end());
  }

  /// S = Q·Kᵀ for the staged block: n-tiles j and j + 1 of a k-step from
  /// one ldmatrix (matrices: keys 8j at depth 16ks, 16ks + 8, then keys
  /// 8(j + 1)).
  SmallVector<SmallVector<Value>>
  stagedScores(Value lane, ArrayRef<SmallVector<Value>> qRegs, Type element,
               int64_t dk) {
    Value matrix = a.div(lane, a.constant(8));
    Value row = a.rem(lane, a.constant(8));
    SmallVector<SmallVector<Value>> scores(kStagedBlockKeys / 8,
                                           SmallVector<Value>(4, f32(0.0)));
    // This lane's row: key (matrix / 2)·8 + row, depth (matrix % 2)·8.
    Value base = sharedElement(a.add(
        a.mul(a.add(a.mul(a.div(matrix, a.constant(2)), a.constant(8)), row),
              a.constant(stagedRow(dk))),
        a.mul(a.rem(matrix, a.constant(2)), a.constant(8))));
    for (int64_t j = 0; j < kStagedBlockKeys / 8; j += 2) {
      for (int64_t ks = 0; ks < dk / 16; ++ks) {
        SmallVector<Value> m =
            ldmatrix(base, 8 * j * stagedRow(dk) + 16 * ks, false);
        scores[j] = mma(element, qRegs[ks], {m[0], m[1]}, scores[j]);
        scores[j + 1] = mma(element, qRegs[ks], {m[2], m[3]}, scores[j + 1]);
      }
    }
    return scores;
  }

  /// The rows [rowBase, rowBase + 16) of kv head `kvHead`'s packed rows
  /// (AttnSemantics.h), columns [column0, column0 + mmaChunkColumns), keys
  /// `keys` (those of part `part` the block's rows see): into the output
  /// and lse when splits == 1, else as the part's (m, l, acc) into the
  /// workspace, as row() leaves them for the merge.
  void tensorCoreRows(Value lane, Value rowBase, Value column0, Value kvHead,
                      Value batch, Value part,
                      semantics::KeyRange<Value> keys) {
    Type element = getElementTypeOrSelf(op.getQuery().getType());
    int64_t dk = headDim(op.getQuery()), dv = headDim(op.getValue());
    int64_t kSteps = (dk + 15) / 16;
    int64_t vTiles = (mmaChunkColumns(op) + 7) / 8;
    bool evenDk = dk % 2 == 0;
    int64_t blockKeys = mmaKeysPerBlock(op);
    Value g = a.div(lane, a.constant(4)), t = a.rem(lane, a.constant(4));
    Value zero = a.constant(0);
    Value group = semantics::groupSize(a, Hq, Hkv);
    Value packedRows = a.mul(group, S);
    // This lane's rows g and g + 8: their query head and query.
    Value rowInside[2], heads[2], queries[2];
    Value qRow[2], rowFirst[2], rowLast[2];
    for (int i = 0; i < 2; ++i) {
      Value row = a.add(rowBase, a.add(g, a.constant(8 * i)));
      rowInside[i] = a.lt(row, packedRows);
      row = select(rowInside[i], row, zero);
      heads[i] = semantics::packedQueryHead(a, kvHead, group, row, S);
      queries[i] = semantics::packedQuery(a, row, S);
      qRow[i] = rowOffset(batch, heads[i], Hq, queries[i], S, Dk);
      semantics::KeyRange<Value> keys =
          keyPart(visibleKeys(batch, queries[i], queries[i]), part, blockKeys);
      rowFirst[i] = keys.first, rowLast[i] = keys.last;
    }
    // Q as A fragments: [row g, depth 2t..], [row g + 8, ..], [row g,
    // depth 2t + 8..], [row g + 8, ..] per 16 of depth, in registers.
    auto loadQuery = [&] {
      SmallVector<SmallVector<Value>> regs(kSteps);
      for (int64_t ks = 0; ks < kSteps; ++ks)
        for (int half = 0; half < 2; ++half)
          for (int i = 0; i < 2; ++i) {
            Value d =
                a.add(a.constant(16 * ks + 8 * half), a.mul(t, a.constant(2)));
            Value valid = b.create<arith::AndIOp>(rowInside[i], a.lt(d, Dk));
            regs[ks].push_back(loadPair(q, element, a.add(qRow[i], d), valid,
                                        evenDk,
                                        a.lt(a.add(d, a.constant(1)), Dk)));
          }
      return regs;
    };
    SmallVector<SmallVector<Value>> qRegs = loadQuery();

    bool staged = mmaStaged(op);
    // The staged blocks (FlashAttention-2's pipeline): K's next block is
    // copied under this block's P·V, V's under its S = Q·Kᵀ, so one buffer
    // each (shared elements [0, 64·stagedRow(dk)) and on) suffices.
    int64_t valueOffset = stagedBlockElements(dk, wgmma);
    if (staged) {
      auto any = b.create<scf::IfOp>(a.lt(keys.first, keys.last), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&any.getThenRegion().front());
      stageAsync(k, dk, Dk, 0, keys.first, kvHead, batch);
    }
    ScoreFactor factor = scoreFactor();
    Value logKeys = this->logKeys();
    Value minusInf = minusInfinity();
    bool scoreExtras = hasScoreExtras(op);
    RowExtras extras[2];
    if (scoreExtras)
      for (int i = 0; i < 2; ++i)
        extras[i] = rowExtras(batch, heads[i], queries[i]);
    SmallVector<Value> init{minusInf, minusInf, f32(0.0), f32(0.0)};
    init.append(4 * vTiles, f32(0.0));
    auto blocks = b.create<scf::ForOp>(keys.first, keys.last,
                                       a.constant(blockKeys), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(blocks.getBody());
      Value block = blocks.getInductionVar();
      ValueRange state = blocks.getRegionIterArgs();
      // S = Q·Kᵀ: n-tile j is keys block + 8j .. + 7; this lane loads key
      // block + 8j + g (the B operand's column) and holds keys
      // block + 8j + 2t, + 1 of the result.
      // Row i sees this lane's key block + 2t + offset for offset in
      // [seenFrom, seenTo): two values a block, not one a key, clamped to
      // [-1, blockKeys] (offsets lie in [0, blockKeys)) so that i32 holds
      // them exactly, the registers they take halved.
      Value lanesKey = a.add(block, a.mul(t, a.constant(2)));
      Value seenFrom[2], seenTo[2];
      auto offsetI32 = [&](Value x) {
        x = a.max(a.min(x, a.constant(blockKeys)), a.constant(-1));
        return b.create<arith::IndexCastOp>(b.getI32Type(), x);
      };
      for (int i = 0; i < 2; ++i) {
        seenFrom[i] = offsetI32(a.sub(rowFirst[i], lanesKey));
        seenTo[i] = offsetI32(a.sub(rowLast[i], lanesKey));
      }
      // n-tile j's raw products as scores in log2 units, with the tensor
      // biases, ALiBi and tensor masks. Element e's key is lanesKey + c: the
      // reads lie constants apart from one address a row, and ALiBi's
      // distance is |(i' - lanesKey) - c| in f32 (exact below 2^24). A tile
      // of keys all past T is -inf and reads nothing; `clamped`: the reads
      // of a tile that straddles T at keys up to T - 1 (the others are
      // dropped after). Each tile in its own branch, so that no more than
      // its reads are in flight: all of a block's at once spill at D = 128.
      Value laneDistance[2];
      for (int i = 0; i < 2 && scoreExtras; ++i)
        if (extras[i].alibi)
          laneDistance[i] = b.create<arith::SIToFPOp>(
              b.getF32Type(),
              b.create<arith::IndexCastOp>(
                  b.getI64Type(), a.sub(extras[i].position, lanesKey)));
      auto scoreTile = [&](int64_t j, ArrayRef<Value> raw, bool clamped) {
        SmallVector<Value> tile;
        for (Value x : raw)
          tile.push_back(logScore(x, factor));
        if (!scoreExtras)
          return tile;
        SmallVector<Type> types(4, b.getF32Type());
        auto inside = b.create<scf::IfOp>(
            types, a.lt(a.add(block, a.constant(8 * j)), T), /*else=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&inside.getThenRegion().front());
        for (int64_t e = 0; e < 4; ++e) {
          int i = e / 2;
          int64_t c = 8 * j + e % 2;
          Value key = a.add(lanesKey, a.constant(c));
          if (clamped)
            key = a.min(key, a.sub(T, a.constant(1)));
          Value distance;
          if (laneDistance[i])
            distance = b.create<math::AbsFOp>(
                b.create<arith::SubFOp>(laneDistance[i], f32(c)));
          tile[e] = biasAndMask(tile[e], extras[i], key, distance);
        }
        b.create<scf::YieldOp>(tile);
        b.setInsertionPointToStart(&inside.getElseRegion().front());
        b.create<scf::YieldOp>(SmallVector<Value>(4, minusInf));
        return SmallVector<Value>(inside.getResults());
      };
      // n-tile j's raw products as scores, -inf where the row does not see
      // the key.
      auto maskTile = [&](int64_t j, SmallVector<Value> &c) {
        c = scoreTile(j, c, /*clamped=*/true);
        for (int64_t e = 0; e < 4; ++e) {
          int i = e / 2;
          Value offset = i32(8 * j + e % 2);
          Value visible = b.create<arith::AndIOp>(
              b.create<arith::CmpIOp>(arith::CmpIPredicate::sle, seenFrom[i],
                                      offset),
              b.create<arith::CmpIOp>(arith::CmpIPredicate::slt, offset,
                                      seenTo[i]));
          c[e] = select(visible, c[e], minusInf);
        }
      };
      SmallVector<SmallVector<Value>> scores;
      if (staged) {
        // K's block has landed (and every warp is done with V's last
        // block): V's copy runs under S = Q·Kᵀ and the softmax.
        waitStaged();
        stageAsync(v, dv, Dv, valueOffset, block, kvHead, batch);
        scores = wgmma ? wgmmaScores(qRegs, element, dk)
                       : stagedScores(lane, qRegs, element, dk);
      }
      for (int64_t j = 0; j < (staged ? 0 : blockKeys / 8); ++j) {
        Value key = a.add(block, a.add(a.constant(8 * j), g));
        Value keyInside = a.lt(key, T);
        Value kRow =
            rowOffset(batch, kvHead, Hkv, select(keyInside, key, zero), T, Dk);
        SmallVector<Value> c(4, f32(0.0));
        for (int64_t ks = 0; ks < kSteps; ++ks) {
          SmallVector<Value> kRegs;
          for (int half = 0; half < 2; ++half) {
            Value d =
                a.add(a.constant(16 * ks + 8 * half), a.mul(t, a.constant(2)));
            kRegs.push_back(
                loadPair(k, element, a.add(kRow, d),
                         b.create<arith::AndIOp>(keyInside, a.lt(d, Dk)),
                         evenDk, a.lt(a.add(d, a.constant(1)), Dk)));
          }
          c = mma(element, qRegs[ks], kRegs, c);
        }
        scores.push_back(c);
      }
      // The raw products as scores in log2 units; masked only where this
      // lane's rows do not see the whole block (a block that straddles the
      // causal diagonal, a window's edge or T).
      {
        Value whole;
        Value blockEnd = a.add(block, a.constant(blockKeys));
        for (int i = 0; i < 2; ++i) {
          Value sees = b.create<arith::AndIOp>(a.le(rowFirst[i], block),
                                               a.le(blockEnd, rowLast[i]));
          whole = whole ? b.create<arith::AndIOp>(whole, sees) : sees;
        }
        SmallVector<Type> types(4 * scores.size(), b.getF32Type());
        auto ifWhole = b.create<scf::IfOp>(types, whole, /*else=*/true);
        {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToStart(&ifWhole.getThenRegion().front());
          SmallVector<Value> scaled;
          for (auto [j, c] : llvm::enumerate(scores))
            llvm::append_range(scaled, scoreTile(j, c, /*clamped=*/false));
          b.create<scf::YieldOp>(scaled);
          b.setInsertionPointToStart(&ifWhole.getElseRegion().front());
          SmallVector<Value> masked;
          for (auto [j, c] : llvm::enumerate(scores)) {
            SmallVector<Value> tile = c;
            maskTile(j, tile);
            llvm::append_range(masked, tile);
          }
          b.create<scf::YieldOp>(masked);
        }
        for (auto [j, c] : llvm::enumerate(scores))
          for (int64_t e = 0; e < 4; ++e)
            c[e] = ifWhole.getResult(4 * j + e);
      }
      // The online softmax per row, as the CPU kernels: p = exp2((s - m) -
      // k); l is this lane's share, summed over the row at the end.
      Value rescale[2], safeMax[2];
      SmallVector<Value> next;
      for (int i = 0; i < 2; ++i) {
        Value m = state[i];
        for (auto &c : scores)
          m = maxOf(maxOf(c[2 * i], m), c[2 * i + 1]);
        m = quadReduce(m, /*isMax=*/true);
        safeMax[i] = finiteShift(m);
        rescale[i] = exp2(b.create<arith::SubFOp>(state[i], safeMax[i]));
        next.push_back(m);
      }
      Value sums[2] = {b.create<arith::MulFOp>(state[2], rescale[0]),
                       b.create<arith::MulFOp>(state[3], rescale[1])};
      for (auto &c : scores)
        for (int64_t e = 0; e < 4; ++e) {
          c[e] = shiftedExp2(c[e], safeMax[e / 2], logKeys);
          sums[e / 2] = b.create<arith::AddFOp>(sums[e / 2], c[e]);
        }
      next.push_back(sums[0]);
      next.push_back(sums[1]);
      SmallVector<Value> o;
      for (int64_t u = 0; u < vTiles; ++u)
        for (int64_t e = 0; e < 4; ++e)
          o.push_back(
              b.create<arith::MulFOp>(state[4 + 4 * u + e], rescale[e / 2]));
      // O += P·V, 16 keys a step: P's n-tiles 2s and 2s + 1 are the A
      // operand; V rows block + 16s + 2t, + 1 (+ 8) at column 8u + g the B.
      auto round = [&](Value x) {
        return b.create<arith::TruncFOp>(element, x);
      };
      // P as A operands (16-bit pairs: half the registers of its f32s,
      // which matters where K's next copy is issued).
      SmallVector<SmallVector<Value>> pSteps;
      for (int64_t step = 0; step < blockKeys / 16; ++step) {
        auto &low = scores[2 * step], &high = scores[2 * step + 1];
        pSteps.push_back({pack(round(low[0]), round(low[1])),
                          pack(round(low[2]), round(low[3])),
                          pack(round(high[0]), round(high[1])),
                          pack(round(high[2]), round(high[3]))});
      }
      if (staged) {
        // V's block has landed and every warp is done with K's: K's next
        // block is copied under P·V.
        waitStaged();
        Value next = a.add(block, a.constant(kStagedBlockKeys));
        auto more = b.create<scf::IfOp>(a.lt(next, keys.last), false);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&more.getThenRegion().front());
        stageAsync(k, dk, Dk, 0, next, kvHead, batch);
      }
      if (staged && wgmma)
        wgmmaValues(pSteps, element, valueOffset, dv, o);
      // This lane's row of V's block for ldmatrix.trans: key (matrix %
      // 2)·8 + lane % 8, column column0 + (matrix / 2)·8, matrix = lane / 8.
      Value valueBase;
      if (staged && !wgmma) {
        Value matrix = a.div(lane, a.constant(8));
        Value keyRow = a.add(a.mul(a.rem(matrix, a.constant(2)), a.constant(8)),
                             a.rem(lane, a.constant(8)));
        valueBase = sharedElement(
            a.add(a.constant(valueOffset),
                  a.add(a.mul(keyRow, a.constant(stagedRow(dv))),
                        a.add(column0, a.mul(a.div(matrix, a.constant(2)),
                                             a.constant(8))))));
      }
      for (int64_t step = 0; step < (wgmma && staged ? 0 : blockKeys / 16);
           ++step) {
        ArrayRef<Value> pRegs = pSteps[step];
        if (staged) {
          // B operands by ldmatrix.trans: matrices keys 16·step (+ 8) at
          // columns 8u and 8(u + 1); lane L gives row L % 8 of matrix L / 8.
          for (int64_t u = 0; u < vTiles; u += 2) {
            SmallVector<Value> m =
                ldmatrix(valueBase, 16 * step * stagedRow(dv) + 8 * u,
                         /*transpose=*/true);
            for (int64_t w = 0; w < 2; ++w) {
              SmallVector<Value> acc(o.begin() + 4 * (u + w),
                                     o.begin() + 4 * (u + w) + 4);
              acc = mma(element, pRegs, {m[2 * w], m[2 * w + 1]}, acc);
              std::copy(acc.begin(), acc.end(), o.begin() + 4 * (u + w));
            }
          }
          continue;
        }
        Value vKeys[4], vInside[4];
        for (int r = 0; r < 4; ++r) {
          vKeys[r] =
              a.add(block, a.add(a.constant(16 * step + 8 * (r / 2) + r % 2),
                                 a.mul(t, a.constant(2))));
          vInside[r] = a.lt(vKeys[r], T);
          vKeys[r] = rowOffset(batch, kvHead, Hkv,
                               select(vInside[r], vKeys[r], zero), T, Dv);
        }
        for (int64_t u = 0; u < vTiles; ++u) {
          Value column = a.add(column0, a.add(a.constant(8 * u), g));
          Value columnInside = a.lt(column, Dv);
          Value x[4];
          for (int r = 0; r < 4; ++r)
            x[r] =
                loadOrZero(v, element, a.add(vKeys[r], column),
                           b.create<arith::AndIOp>(vInside[r], columnInside));
          SmallVector<Value> acc(o.begin() + 4 * u, o.begin() + 4 * u + 4);
          acc = mma(element, pRegs, {pack(x[0], x[1]), pack(x[2], x[3])}, acc);
          std::copy(acc.begin(), acc.end(), o.begin() + 4 * u);
        }
      }
      next.append(o);
      b.create<scf::YieldOp>(next);
    }
    // out = O / l per row, exactly 0 for a row without keys, and lse; or
    // with key splits the part's (m, l, acc) for the merge.
    ValueRange result = blocks.getResults();
    for (int i = 0; i < 2; ++i) {
      Value l = quadReduce(result[2 + i], /*isMax=*/false);
      auto inside = b.create<scf::IfOp>(rowInside[i], false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&inside.getThenRegion().front());
      // Lane t's columns of row i: column0 + 8u + 2t + e % 2.
      auto forColumns = [&](llvm::function_ref<void(Value, Value)> body) {
        for (int64_t u = 0; u < vTiles; ++u)
          for (int64_t e = 2 * i; e < 2 * i + 2; ++e) {
            Value column = a.add(column0, a.add(a.constant(8 * u + e % 2),
                                                a.mul(t, a.constant(2))));
            auto inRange = b.create<scf::IfOp>(a.lt(column, Dv), false);
            OpBuilder::InsertionGuard inner(b);
            b.setInsertionPointToStart(&inRange.getThenRegion().front());
            body(column, result[4 + 4 * u + e]);
          }
      };
      Value once = b.create<arith::AndIOp>(a.eq(t, zero), a.eq(column0, zero));
      auto whole = b.create<scf::IfOp>(a.eq(splits, a.constant(1)),
                                       /*else=*/true);
      b.setInsertionPointToStart(&whole.getThenRegion().front());
      Value noKeys =
          b.create<arith::CmpFOp>(arith::CmpFPredicate::OEQ, l, f32(0.0));
      Value inverse =
          b.create<arith::DivFOp>(f32(1.0), select(noKeys, f32(1.0), l));
      Value outRow = rowOffset(batch, heads[i], Hq, queries[i], S, Dv);
      forColumns([&](Value column, Value accumulator) {
        Value value = b.create<arith::MulFOp>(accumulator, inverse);
        store(out, element, a.add(outRow, column),
              select(noKeys, f32(0.0), value));
      });
      if (lse) {
        auto write = b.create<scf::IfOp>(once, false);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&write.getThenRegion().front());
        storeLse(batch, heads[i], queries[i], result[i], l, logKeys, noKeys);
      }
      // [m, l, acc[Dv]] per (batch, head, row, part), as row() writes it.
      b.setInsertionPointToStart(&whole.getElseRegion().front());
      Value at = workspaceSlot(batch, heads[i], queries[i], part);
      {
        auto write = b.create<scf::IfOp>(once, false);
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(&write.getThenRegion().front());
        store(workspace, b.getF32Type(), at, result[i]);
        store(workspace, b.getF32Type(), a.add(at, a.constant(1)), l);
      }
      forColumns([&](Value column, Value accumulator) {
        store(workspace, b.getF32Type(),
              a.add(at, a.add(column, a.constant(2))), accumulator);
      });
    }
  }

  Value minusInfinity() {
    return f32(-std::numeric_limits<double>::infinity());
  }
};

struct LowerToGpuPass
    : public mlir::attn::impl::LowerToGpuPassBase<LowerToGpuPass> {
  using LowerToGpuPassBase::LowerToGpuPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions) {
      if (failed(lowerFunction(module, function)))
        return signalPassFailure();
      if (!entry)
        function.erase();
    }
    if (failed(lowerMathForPtx(module)))
      return signalPassFailure();
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(context));
  }

  /// A gpu.func whose parameters are `params` (pointers, then i64 sizes
  /// from B on), built by KernelBuilder in `role`, launched with 128 threads
  /// a block and blocks (ceil(rows / blockRows), Hq, B), rows = S, times
  /// splits with kRowsSplit; with kRowsGrouped rows = S·Hq/Hkv and Hkv
  /// blocks along y; with kBlocksSplit splits times the blocks along x: the
  /// mapping KernelBuilder::build() reads back from the block ids.
  gpu::GPUFuncOp createKernel(gpu::GPUModuleOp gpuModule, AttentionOp op,
                              StringRef name, ArrayRef<Attribute> params,
                              ArrayRef<NamedAttribute> sources, KernelRole role,
                              int64_t blockRows, int64_t rowFlags) {
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
    kernel->setAttr("attn.block",
                    builder.getI64ArrayAttr({32 * kWarpsPerBlock, 1, 1}));
    kernel->setAttr("attn.block_rows", builder.getI64IntegerAttr(blockRows));
    kernel->setAttr("attn.row_flags", builder.getI64IntegerAttr(rowFlags));
    bool grouped = rowFlags & kRowsGrouped;
    std::string gridX =
        (Twine("ceil(S") + (grouped ? " * Hq / Hkv" : "") +
         (rowFlags & kRowsSplit ? " * splits" : "") + " / " + Twine(blockRows) +
         ")" + (rowFlags & kBlocksSplit ? " * splits" : ""))
            .str();
    kernel->setAttr("attn.grid", builder.getStrArrayAttr(
                                     {gridX, grouped ? "Hkv" : "Hq", "B"}));
    kernel->setAttr("attn.sizes", builder.getDictionaryAttr(sources));
    // No known_block_size: its .maxntid 128 makes ptxas cap the kernel at
    // 64 registers, and spill, where it needs about 70.
    ImplicitLocOpBuilder body(op.getLoc(), builder);
    body.setInsertionPointToStart(&kernel.getBody().front());
    std::string sharedSymbol;
    if (role == KernelRole::Attention && projectionShared(op)) {
      // Each warp's row's projected query.
      sharedSymbol = (name + "_shared").str();
      builder.create<LLVM::GlobalOp>(
          op.getLoc(),
          LLVM::LLVMArrayType::get(builder.getF32Type(),
                                   kWarpsPerBlock * projectionLength(op)),
          /*isConstant=*/false, LLVM::Linkage::Internal, sharedSymbol,
          Attribute(), /*alignment=*/16, /*addrSpace=*/3);
    }
    bool byWgmma = wgmma && wgmmaTrusted(op);
    if (role == KernelRole::TensorCore && mmaStaged(op)) {
      // K's and V's staged blocks, 16-byte aligned for the copies and
      // wgmma's descriptors.
      int64_t elements = stagedBlockElements(headDim(op.getQuery()), byWgmma) +
                         stagedBlockElements(headDim(op.getValue()), byWgmma);
      sharedSymbol = (name + "_shared").str();
      builder.create<LLVM::GlobalOp>(
          op.getLoc(),
          LLVM::LLVMArrayType::get(builder.getIntegerType(16), elements),
          /*isConstant=*/false, LLVM::Linkage::Internal, sharedSymbol,
          Attribute(), /*alignment=*/16, /*addrSpace=*/3);
    }
    KernelBuilder(body, op, kernel.getArguments(), role, sharedSymbol, byWgmma)
        .build();
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

  /// The node that computes `value` (its op's name location; a fused
  /// chain's last node), with the result's number after a second result
  /// ("o:1"); "" if unnamed.
  static std::string nodeName(Value value) {
    Operation *op = value.getDefiningOp();
    if (!op)
      return "";
    Location loc = op->getLoc();
    if (auto fused = dyn_cast<FusedLoc>(loc);
        fused && !fused.getLocations().empty())
      loc = fused.getLocations().back();
    auto name = dyn_cast<NameLoc>(loc);
    if (!name)
      return "";
    unsigned number = cast<OpResult>(value).getResultNumber();
    return name.getName().str() + (number ? ":" + std::to_string(number) : "");
  }

  LogicalResult lowerFunction(ModuleOp module, func::FuncOp function) {
    OpBuilder top(module.getBodyRegion());
    top.setInsertionPointToEnd(module.getBody());
    auto gpuModule = top.create<gpu::GPUModuleOp>(
        function.getLoc(), (function.getName() + "_gpu").str());
    int number = 0;
    // Every output an attention result: an output that is an input (or a
    // constant) would need a copy no kernel makes. With an entry its host
    // code runs the other ops and copies.
    auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
    for (auto [n, value] : llvm::enumerate(ret.getOperands()))
      if (!entry && !value.getDefiningOp<AttentionOp>()) {
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
      if (!op && entry)
        continue;
      if (!op)
        return operation.emitError()
               << operation.getName().stripDialect()
               << " has no CUDA kernel yet: CUDA targets compile graphs "
                  "whose nodes all fuse into attention";
      std::string missing = unsupported(op);
      if (!missing.empty())
        return op.emitError("attention with " + missing +
                            " has no CUDA kernel yet (CUDA targets take dot, "
                            "general, cosine scores and additive ones of a "
                            "fixed width, scale, softcap, tensor biases, "
                            "ALiBi, causal, window, key_length and tensor "
                            "masks, GQA, both layouts, lse)");
      // Without an entry every operand is a function argument and every
      // result returned: the kernel reads and writes the graph's own
      // tensors. With one, an intermediate is named by its node.
      SmallVector<Value> tensors = gpuKernelTensors(op);
      SmallVector<Attribute> names;
      for (Value tensor : tensors) {
        std::string name = graphName(function, tensor);
        if (name.empty() && entry)
          name = nodeName(tensor);
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
      auto kernel =
          createKernel(gpuModule, op, name, params, sources,
                       KernelRole::Attention, kWarpsPerBlock, kRowsSplit);
      if (entry)
        kernel->setAttr("attn.tensors", top.getArrayAttr(names));
      // [m, l, acc[Dv]] of f32 per (batch, head, row, part): row() and
      // merge().
      const int64_t rowBytes[] = {4, 8}; // 4·Dv + 8
      kernel->setAttr("attn.workspace_row_bytes",
                      top.getI64ArrayAttr(rowBytes));
      kernel->setAttr("attn.workspace_bytes",
                      top.getStringAttr("splits * B * Hq * S * (" +
                                        Twine(rowBytes[0]) + " * Dv + " +
                                        Twine(rowBytes[1]) + ")"));
      // The merge: the workspace, the outputs, the sizes.
      SmallVector<Attribute> mergeParams{top.getStringAttr("workspace")};
      mergeParams.append(names.begin() +
                             (tensors.size() - (op.getLse() ? 2 : 1)),
                         names.end());
      mergeParams.append(sizeNames);
      createKernel(gpuModule, op, name + "_merge", mergeParams, sources,
                   KernelRole::Merge, kWarpsPerBlock, /*rowFlags=*/0);
      kernel->setAttr("attn.merge", top.getStringAttr(name + "_merge"));
      if (hasTensorCoreKernel(op)) {
        createKernel(gpuModule, op, name + "_mma", params, sources,
                     KernelRole::TensorCore, mmaBlockRows(op),
                     kRowsGrouped | kBlocksSplit);
        kernel->setAttr("attn.tensor_core", top.getStringAttr(name + "_mma"));
      }
    }
    return success();
  }
};

} // namespace

SmallVector<Value> mlir::attn::gpuKernelTensors(AttentionOp op) {
  SmallVector<Value> tensors{op.getQuery(), op.getKey(), op.getValue()};
  if (op.getGeneralWeight())
    tensors.push_back(op.getGeneralWeight());
  if (op.getQueryWeight())
    tensors.append(
        {op.getQueryWeight(), op.getKeyWeight(), op.getScoreVector()});
  if (op.getKeyLengths())
    tensors.push_back(op.getKeyLengths());
  llvm::append_range(tensors, op.getBiases());
  if (op.getAlibiSlopes())
    tensors.push_back(op.getAlibiSlopes());
  llvm::append_range(tensors, op.getMasks());
  tensors.push_back(op.getOutput());
  if (op.getLse())
    tensors.push_back(op.getLse());
  return tensors;
}

/// convert-gpu-to-nvvm would make every math op a libdevice call, which
/// needs the CUDA toolkit at compile time: the softcap's and the
/// primitives' tanh, exp, sin and cos become the CPU kernels' polynomials,
/// the rest PTX's own instructions (sqrt.rn, fma, abs, ...).
LogicalResult mlir::attn::lowerMathForPtx(Operation *root) {
  if (failed(approximateMath(root)))
    return failure();
  WalkResult walk = root->walk([](Operation *op) {
    if (!isa<math::MathDialect>(op->getDialect()))
      return WalkResult::advance();
    StringRef intrinsic =
        llvm::TypeSwitch<Operation *, StringRef>(op)
            .Case([](math::FmaOp) { return "llvm.fma.f32"; })
            .Case([](math::AbsFOp) { return "llvm.fabs.f32"; })
            .Case([](math::SqrtOp) { return "llvm.sqrt.f32"; })
            .Case([](math::FloorOp) { return "llvm.floor.f32"; })
            .Case([](math::CeilOp) { return "llvm.ceil.f32"; })
            .Case([](math::RoundEvenOp) { return "llvm.roundeven.f32"; })
            .Case([](math::CopySignOp) { return "llvm.copysign.f32"; })
            .Default([](Operation *) { return ""; });
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
