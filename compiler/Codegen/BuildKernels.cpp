//===- BuildKernels.cpp - A fused attn module as CPU kernels --------------===//
//
// The entry walks the graph function's ops in order. Every tensor gets a
// buffer: an input's is buffers[i], a returned value's is its output buffer,
// a reshape's or unsqueeze's its operand's, any other comes from
// attnrt_allocate. Each op becomes a task function
// `void NAME_kK(void *closure, int64_t index)`; the entry writes the
// op's buffer pointers and sizes into a closure (an array of 64-bit words on
// its stack) and hands the task to attnrt_parallel_for. The task reads the
// words back and rebuilds memrefs from them.
//
//===----------------------------------------------------------------------===//

#include "Codegen/BuildKernels.h"
#include "Codegen/Passes.h"
#include "Support/MLIRDiagnostics.h"
#include "Codegen/AttentionKernel.h"
#include "Codegen/PrimitiveKernels.h"

#include "Attn/IR/AttnOps.h"
#include "Attn/Transforms/Passes.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/DenseMap.h"

#include <attnc/attnrt.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>

namespace attnc {

#define GEN_PASS_DEF_BUILDENTRYPASS
#define GEN_PASS_DEF_BUILDCUDAENTRYPASS
#include "Codegen/Passes.h.inc"

using namespace mlir;

namespace {

using mlir::Value; // Not the graph's attnc::Value.

/// A tensor's buffer in the entry: its data pointer and sizes (index).
struct BufferRef {
  Value pointer;
  SmallVector<Value> sizes;
};

/// The words a task's closure holds, in order: the data pointer of every
/// tensor operand then result, the sizes of each, the index operands, then
/// for an attention op its key split (parts per task, partials pointer), for
/// a packed GEMM's row tasks the rows of each (rowTasks()).
struct ClosureLayout {
  SmallVector<RankedTensorType> tensors; ///< Operands then results.
  int64_t indexOperands = 0;
  bool keySplit = false;
  bool rowTasks = false;

  int64_t words() const {
    int64_t count = tensors.size() + indexOperands + (keySplit ? 2 : 0) +
                    (rowTasks ? 1 : 0);
    for (RankedTensorType type : tensors)
      count += type.getRank();
    return count;
  }
};

int64_t elementBytes(Type element) {
  if (element.isInteger(1))
    return 1;
  return (element.getIntOrFloatBitWidth() + 7) / 8;
}

/// The attnrt_dtype of a buffer's elements (attnrt.h numbers them).
int32_t abiDType(Type element) {
  if (element.isF32())
    return ATTNRT_F32;
  if (element.isF16())
    return ATTNRT_F16;
  if (element.isBF16())
    return ATTNRT_BF16;
  if (element.isInteger(32))
    return ATTNRT_I32;
  if (element.isInteger(1) || element.isInteger(8))
    return ATTNRT_BOOL;
  throw std::logic_error("no attnrt_dtype for a tensor element type");
}

/// Threads per block of a CUDA kernel of a primitive op, and per warp.
constexpr int64_t kPrimitiveBlockThreads = 256, kWarpLanes = 32;
/// The most 64-bit parameters libattnrt launches a CUDA function with.
constexpr int64_t kMaxCudaWords = 64;

class KernelModuleBuilder {
public:
  /// With `gpuModule`, the entry of a CUDA kernel (attn-build-cuda-entry):
  /// ops run on the device, the other ops' kernels go into `gpuModule`.
  KernelModuleBuilder(ModuleOp module, const AttentionTiling &tiling,
                      gpu::GPUModuleOp gpuModule = {},
                      int64_t primitiveGrid = 0)
      : module(module), tiling(tiling), gpuModule(gpuModule),
        primitiveGrid(primitiveGrid), builder(module.getContext()),
        loc(module.getLoc()),
        ptrType(LLVM::LLVMPointerType::get(module.getContext())) {}

  /// Fails (with a diagnostic) on a module importGraph did not make.
  LogicalResult build();

private:
  ModuleOp module;
  AttentionTiling tiling;
  gpu::GPUModuleOp gpuModule;
  /// attn-build-entry's primitive-grid: primitives as CUDA threads' code.
  int64_t primitiveGrid;
  std::string name; ///< The graph's: NAME_entry, NAME_k0, ...
  OpBuilder builder;
  Location loc;
  Type ptrType;
  func::FuncOp entry;
  LLVM::LLVMFuncOp parallelFor, allocate, invocationThreads;
  LLVM::LLVMFuncOp cudaLaunch, cudaAttention; ///< CUDA kernels only.
  int attentionCount = 0, primitiveCount = 0;
  gpu::GPUFuncOp copyKernel; ///< NAME_copy, made when needed.
  Block *outOfMemory = nullptr;
  Block *returnStatus = nullptr; ///< Returns its i32 argument.
  Value invocation;
  DenseMap<Value, BufferRef> buffers;
  DenseMap<Value, Value> indexValues;
  int kernelCount = 0;

  Value i64(Value index) {
    return builder.create<arith::IndexCastOp>(loc, builder.getI64Type(),
                                              index);
  }
  Value constantI64(int64_t value) {
    return builder.create<LLVM::ConstantOp>(loc, builder.getI64Type(),
                                            builder.getI64IntegerAttr(value));
  }
  Value constantI32(int64_t value) {
    return builder.create<LLVM::ConstantOp>(loc, builder.getI32Type(),
                                            builder.getI32IntegerAttr(value));
  }
  Value indexConstant(int64_t value) {
    return builder.create<arith::ConstantIndexOp>(loc, value);
  }
  Value word(Value base, int64_t slot) {
    return builder.create<LLVM::GEPOp>(loc, ptrType, builder.getI64Type(),
                                       base, ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(slot)});
  }
  Value byteSize(RankedTensorType type, ArrayRef<Value> sizes) {
    Value bytes = constantI64(elementBytes(type.getElementType()));
    for (Value size : sizes)
      bytes = builder.create<LLVM::MulOp>(loc, bytes, i64(size));
    return bytes;
  }

  void declareRuntime();
  /// Returns a nonzero `status` (i32) from the entry at once.
  void returnIfFailed(Value status);
  /// attnrt_cuda_launch of function `function` for `threads` (i64) with
  /// the `count` words at `words`; a failure returned at once.
  void launchFunction(int64_t function, Value threads, Value words,
                      int64_t count) {
    returnIfFailed(builder
                       .create<LLVM::CallOp>(
                           loc, cudaLaunch,
                           ValueRange{invocation, constantI32(function),
                                      threads, words, constantI32(count)})
                       .getResult());
  }
  /// The CUDA kernel of a primitive `op` with `words` i64 parameters
  /// (ClosureLayout's words), in gpuModule.
  gpu::GPUFuncOp buildDeviceKernel(Operation *op, const ClosureLayout &layout);
  /// NAME_copy(to, from, bytes): bytes copied by the grid's stride.
  gpu::GPUFuncOp buildCopyKernel();
  /// The launches of `op` on the device: its words are in `closure`.
  void launchOnDevice(Operation *op, const ClosureLayout &layout, Value closure,
                      ArrayRef<SmallVector<Value>> operandSizes);
  Value allocateBytes(Value bytes);
  /// attnrt_invocation_threads(invocation), an index value.
  Value threads() {
    return builder.create<arith::IndexCastOp>(
        loc, builder.getIndexType(),
        builder
            .create<LLVM::CallOp>(loc, invocationThreads,
                                  ValueRange{invocation})
            .getResult());
  }
  BufferRef allocateBuffer(RankedTensorType type, SmallVector<Value> sizes);
  void buildKernel(Operation *op);
  /// The task function of `op`; for an attention op with `merge`, the one
  /// that merges its key split's partial results instead.
  func::FuncOp buildTask(Operation *op, const ClosureLayout &layout,
                         scf::ForallOp tiled, bool merge = false);
};

void KernelModuleBuilder::declareRuntime() {
  MLIRContext *context = module.getContext();
  Type voidType = LLVM::LLVMVoidType::get(context);
  Type i64Type = builder.getI64Type(), i32Type = builder.getI32Type();
  builder.setInsertionPointToEnd(module.getBody());
  auto declareAllocate = [&] {
    allocate = builder.create<LLVM::LLVMFuncOp>(
        loc, "attnrt_allocate",
        LLVM::LLVMFunctionType::get(ptrType, {ptrType, i64Type}));
  };
  if (gpuModule) {
    declareAllocate();
    cudaLaunch = builder.create<LLVM::LLVMFuncOp>(
        loc, "attnrt_cuda_launch",
        LLVM::LLVMFunctionType::get(
            i32Type, {ptrType, i32Type, i64Type, ptrType, i32Type}));
    cudaAttention = builder.create<LLVM::LLVMFuncOp>(
        loc, "attnrt_cuda_run_attention",
        LLVM::LLVMFunctionType::get(i32Type,
                                    {ptrType, i32Type, ptrType, i32Type}));
    return;
  }
  parallelFor = builder.create<LLVM::LLVMFuncOp>(
      loc, "attnrt_parallel_for",
      LLVM::LLVMFunctionType::get(voidType,
                                  {ptrType, i64Type, ptrType, ptrType}));
  declareAllocate();
  invocationThreads = builder.create<LLVM::LLVMFuncOp>(
      loc, "attnrt_invocation_threads",
      LLVM::LLVMFunctionType::get(i64Type, {ptrType}));
}

/// attnrt_allocate(bytes); an invocation without memory returns
/// ATTNRT_OUT_OF_MEMORY from the entry.
Value KernelModuleBuilder::allocateBytes(Value bytes) {
  Value pointer =
      builder.create<LLVM::CallOp>(loc, allocate, ValueRange{invocation, bytes})
          .getResult();
  Value null = builder.create<LLVM::ZeroOp>(loc, ptrType);
  Value failed = builder.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::eq,
                                              pointer, null);
  Block *current = builder.getInsertionBlock();
  Block *next = builder.createBlock(current->getParent());
  builder.setInsertionPointToEnd(current);
  builder.create<cf::CondBranchOp>(loc, failed, outOfMemory, next);
  builder.setInsertionPointToStart(next);
  return pointer;
}

/// Scratch for an intermediate.
BufferRef KernelModuleBuilder::allocateBuffer(RankedTensorType type,
                                              SmallVector<Value> sizes) {
  return {allocateBytes(byteSize(type, sizes)), std::move(sizes)};
}

/// Rebuilds a memref from a data pointer and sizes: an LLVM memref
/// descriptor cast to the memref type, which the memref-to-LLVM conversion
/// then cancels out.
Value memrefFromPointer(OpBuilder &builder, Location loc, Value pointer,
                        MemRefType type, ArrayRef<Value> sizes) {
  MLIRContext *context = builder.getContext();
  Type i64Type = builder.getI64Type();
  Type ptrType = LLVM::LLVMPointerType::get(context);
  int64_t rank = type.getRank();
  SmallVector<Type> fields = {ptrType, ptrType, i64Type};
  if (rank > 0) {
    fields.push_back(LLVM::LLVMArrayType::get(i64Type, rank));
    fields.push_back(LLVM::LLVMArrayType::get(i64Type, rank));
  }
  auto structType = LLVM::LLVMStructType::getLiteral(context, fields);
  auto constant = [&](int64_t value) -> Value {
    return builder.create<LLVM::ConstantOp>(loc, i64Type,
                                            builder.getI64IntegerAttr(value));
  };
  Value descriptor = builder.create<LLVM::UndefOp>(loc, structType);
  descriptor = builder.create<LLVM::InsertValueOp>(loc, descriptor, pointer,
                                                   ArrayRef<int64_t>{0});
  descriptor = builder.create<LLVM::InsertValueOp>(loc, descriptor, pointer,
                                                   ArrayRef<int64_t>{1});
  descriptor = builder.create<LLVM::InsertValueOp>(
      loc, descriptor, constant(0), ArrayRef<int64_t>{2});
  Value stride = constant(1);
  for (int64_t d = rank - 1; d >= 0; --d) {
    Value size =
        builder.create<arith::IndexCastOp>(loc, i64Type, sizes[d]);
    descriptor = builder.create<LLVM::InsertValueOp>(
        loc, descriptor, size, ArrayRef<int64_t>{3, d});
    descriptor = builder.create<LLVM::InsertValueOp>(
        loc, descriptor, stride, ArrayRef<int64_t>{4, d});
    stride = builder.create<LLVM::MulOp>(loc, stride, size);
  }
  return builder
      .create<UnrealizedConversionCastOp>(loc, TypeRange{type},
                                          ValueRange{descriptor})
      .getResult(0);
}

/// What a closure's words hold (ClosureLayout), as values of a task or a
/// device kernel: `end` is the first word after the index operands.
struct ClosureValues {
  SmallVector<Value> pointers;
  SmallVector<SmallVector<Value>> sizes; ///< Constants where static.
  SmallVector<Value> indexOperands;
  int64_t end = 0;
};

/// Reads a closure's words, `word(slot, type)` giving word `slot` as a
/// pointer or an i64.
ClosureValues readClosure(OpBuilder &builder, Location loc,
                          const ClosureLayout &layout,
                          function_ref<Value(int64_t, Type)> word) {
  Type ptrType = LLVM::LLVMPointerType::get(builder.getContext());
  Type indexType = builder.getIndexType(), i64Type = builder.getI64Type();
  ClosureValues values;
  int64_t &slot = values.end;
  for (size_t t = 0; t < layout.tensors.size(); ++t)
    values.pointers.push_back(word(slot++, ptrType));
  for (RankedTensorType type : layout.tensors) {
    SmallVector<Value> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      Value loaded = word(slot++, i64Type);
      dims.push_back(
          type.isDynamicDim(d)
              ? builder.create<arith::IndexCastOp>(loc, indexType, loaded)
                    .getResult()
              : builder.create<arith::ConstantIndexOp>(loc, type.getDimSize(d))
                    .getResult());
    }
    values.sizes.push_back(dims);
  }
  for (int64_t i = 0; i < layout.indexOperands; ++i)
    values.indexOperands.push_back(builder.create<arith::IndexCastOp>(
        loc, indexType, word(slot++, i64Type)));
  return values;
}

/// A primitive op's operands (memrefs of its tensors, its index operands)
/// and results (memrefs) from its closure's values.
void primitiveBuffers(OpBuilder &builder, Location loc, Operation *op,
                      const ClosureValues &words,
                      SmallVectorImpl<Value> &operands,
                      SmallVectorImpl<Value> &results) {
  size_t tensor = 0, index = 0;
  auto memref = [&](RankedTensorType type) {
    auto memrefType = MemRefType::get(type.getShape(), bufferElementType(type));
    Value value = memrefFromPointer(builder, loc, words.pointers[tensor],
                                    memrefType, words.sizes[tensor]);
    ++tensor;
    return value;
  };
  for (Value operand : op->getOperands()) {
    if (auto type = dyn_cast<RankedTensorType>(operand.getType()))
      operands.push_back(memref(type));
    else
      operands.push_back(words.indexOperands[index++]);
  }
  for (Value result : op->getResults())
    results.push_back(memref(cast<RankedTensorType>(result.getType())));
}

/// The attention operands as flat buffers, matched to the op's operand
/// groups.
AttentionBuffers
attentionBuffers(OpBuilder &builder, Location loc, attn::AttentionOp op,
                 ArrayRef<Value> pointers, ArrayRef<SmallVector<Value>> sizes,
                 SmallVector<AttentionBuffers::Buffer> &inOrder) {
  AttentionBuffers result;
  auto flat = [&](Value tensor, unsigned position,
                  bool gathered = false) -> AttentionBuffers::Buffer {
    auto type = cast<RankedTensorType>(tensor.getType());
    Type element = bufferElementType(type);
    // Gathers of 16-bit floats read their bits: the x86 backend would
    // scalarise a bf16 gather through __truncsfbf2, which libgcc 12 lacks.
    if (gathered && element.getIntOrFloatBitWidth() == 16)
      element = builder.getI16Type();
    auto memrefType = MemRefType::get({ShapedType::kDynamic}, element);
    Value elements = builder.create<arith::ConstantIndexOp>(loc, 1);
    for (Value size : sizes[position])
      elements = builder.create<arith::MulIOp>(loc, elements, size);
    AttentionBuffers::Buffer buffer{memrefFromPointer(builder, loc,
                                                      pointers[position],
                                                      memrefType, {elements}),
                                    sizes[position]};
    if (position < op->getNumOperands())
      inOrder.push_back(buffer);
    return buffer;
  };
  unsigned position = 0;
  auto operandBuffer = [&](Value operand) -> AttentionBuffers::Buffer {
    if (!operand)
      return {};
    return flat(operand, position++);
  };
  // Operand order: query, key, value, general, additive (3), biases, alibi
  // slopes, key lengths, masks (the op's operand segments).
  result.query = operandBuffer(op.getQuery());
  result.key = operandBuffer(op.getKey());
  result.value = operandBuffer(op.getValue());
  result.generalWeight = operandBuffer(op.getGeneralWeight());
  result.queryWeight = operandBuffer(op.getQueryWeight());
  result.keyWeight = operandBuffer(op.getKeyWeight());
  result.scoreVector = operandBuffer(op.getScoreVector());
  for (Value bias : op.getBiases())
    result.biases.push_back(flat(bias, position++, /*gathered=*/true));
  result.alibiSlopes = operandBuffer(op.getAlibiSlopes());
  result.keyLengths = operandBuffer(op.getKeyLengths());
  for (Value mask : op.getMasks())
    result.masks.push_back(operandBuffer(mask));
  result.output = operandBuffer(op.getOutput());
  if (op.getLse() && !op.getLse().use_empty())
    result.lse = operandBuffer(op.getLse());
  return result;
}

/// The tiled form of `op` its tasks lower: attn-tile-attention with the
/// query heads of a kv head packed into the rows and the schedule's tiles,
/// in a function of its own (in `scratch`) whose arguments are op's
/// operands. One task is one iteration of the returned forall.
scf::ForallOp tileForTasks(attn::AttentionOp op, const AttentionTiling &tiling,
                           OwningOpRef<ModuleOp> &scratch) {
  Location loc = op.getLoc();
  OpBuilder builder(op.getContext());
  scratch = ModuleOp::create(loc);
  builder.setInsertionPointToEnd(scratch->getBody());
  auto function = builder.create<func::FuncOp>(
      loc, "tiled",
      builder.getFunctionType(op->getOperandTypes(), op->getResultTypes()));
  Block *body = function.addEntryBlock();
  builder.setInsertionPointToStart(body);
  IRMapping operands;
  operands.map(op->getOperands(), body->getArguments());
  auto copy = cast<attn::AttentionOp>(builder.clone(*op, operands));
  builder.create<func::ReturnOp>(loc, copy->getResults());
  IRRewriter rewriter(builder);
  FailureOr<scf::ForallOp> forall =
      attn::tileAttention(rewriter, copy, tiling.queryTile, tiling.keyTile,
                          /*packQueryHeads=*/true);
  if (failed(forall))
    throw std::logic_error("attn-tile-attention failed on an attention op");
  return *forall;
}

func::FuncOp KernelModuleBuilder::buildTask(Operation *op,
                                            const ClosureLayout &layout,
                                            scf::ForallOp tiled, bool merge) {
  MLIRContext *context = module.getContext();
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(entry);
  std::string name = this->name + "_k" +
                     std::to_string(merge ? kernelCount - 1 : kernelCount++) +
                     (merge ? "_merge" : "");
  // func.func rather than llvm.func: its conversion also converts the index
  // block arguments of the loops inside.
  auto task = builder.create<func::FuncOp>(
      op->getLoc(), name,
      builder.getFunctionType({ptrType, builder.getI64Type()}, {}));
  task->setAttr("llvm.linkage",
                LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
  Block *body = task.addEntryBlock();
  builder.setInsertionPointToStart(body);
  Location opLoc = op->getLoc();
  Value closure = body->getArgument(0);
  Value taskIndex = builder.create<arith::IndexCastOp>(
      opLoc, builder.getIndexType(), body->getArgument(1));

  // Read the words back.
  ClosureValues words =
      readClosure(builder, opLoc, layout, [&](int64_t slot, Type type) {
        return builder.create<LLVM::LoadOp>(opLoc, type, word(closure, slot))
            .getResult();
      });
  SmallVector<Value> &pointers = words.pointers;
  SmallVector<SmallVector<Value>> &sizes = words.sizes;
  int64_t slot = words.end;

  if (auto attention = dyn_cast<attn::AttentionOp>(op)) {
    SmallVector<AttentionBuffers::Buffer> inOrder;
    AttentionBuffers attentionOperands =
        attentionBuffers(builder, opLoc, attention, pointers, sizes, inOrder);
    KeySplit split;
    split.parts = builder.create<arith::IndexCastOp>(
        opLoc, builder.getIndexType(),
        builder.create<LLVM::LoadOp>(opLoc, builder.getI64Type(),
                                     word(closure, slot++)));
    Value partials =
        builder.create<LLVM::LoadOp>(opLoc, ptrType, word(closure, slot++));
    // The task does not know the block's length (the entry sized it by
    // planKeySplit); a 1-D view of the largest length, read within it.
    split.partials = memrefFromPointer(
        builder, opLoc, partials,
        MemRefType::get({ShapedType::kDynamic}, builder.getF32Type()),
        {indexConstant(int64_t(1) << 60)});
    if (merge)
      emitAttentionMerge(builder, opLoc, attention, attentionOperands, inOrder,
                         tiling, tiled, taskIndex, split);
    else
      emitAttentionTask(builder, opLoc, attention, attentionOperands, inOrder,
                        tiling, tiled, taskIndex, split);
  } else {
    SmallVector<Value> operands, results;
    primitiveBuffers(builder, opLoc, op, words, operands, results);
    Value taskRows;
    if (layout.rowTasks)
      taskRows = builder.create<arith::IndexCastOp>(
          opLoc, builder.getIndexType(),
          builder.create<LLVM::LoadOp>(opLoc, builder.getI64Type(),
                                       word(closure, slot++)));
    if (primitiveGrid)
      emitPrimitiveOnDevice(builder, opLoc, op, operands, results,
                            {taskIndex, indexConstant(primitiveGrid)});
    else
      emitPrimitive(builder, opLoc, op, operands, results, taskIndex, taskRows,
                    tiling.vectorWidth);
  }
  // Wherever the emitters left the builder, the task ends here.
  builder.setInsertionPointToEnd(body);
  builder.create<func::ReturnOp>(opLoc);
  return task;
}

void KernelModuleBuilder::buildKernel(Operation *op) {
  ClosureLayout layout;
  SmallVector<Value> pointers, indexOperands;
  SmallVector<SmallVector<Value>> sizes, operandSizes;
  for (Value operand : op->getOperands()) {
    if (auto type = dyn_cast<RankedTensorType>(operand.getType())) {
      const BufferRef &ref = buffers.at(operand);
      layout.tensors.push_back(type);
      pointers.push_back(ref.pointer);
      sizes.push_back(ref.sizes);
      operandSizes.push_back(ref.sizes);
    } else {
      Value value = indexValues.at(operand);
      ++layout.indexOperands;
      indexOperands.push_back(value);
      operandSizes.push_back({value});
    }
  }
  auto resultSizesOf = [&]() -> SmallVector<SmallVector<Value>> {
    auto attention = dyn_cast<attn::AttentionOp>(op);
    if (!attention)
      return resultSizes(builder, op->getLoc(), op, operandSizes);
    // [B, Hq, S, Dv] (bhsd) or [B, S, Hq, Dv]; lse [B, Hq, S].
    bool bhsd = attention.getLayout() == attn::Layout::bhsd;
    const auto &q = buffers.at(attention.getQuery()).sizes;
    const auto &v = buffers.at(attention.getValue()).sizes;
    SmallVector<SmallVector<Value>> result = {{q[0], q[1], q[2], v[3]}};
    if (attention.getLse())
      result.push_back(bhsd ? SmallVector<Value>{q[0], q[1], q[2]}
                            : SmallVector<Value>{q[0], q[2], q[1]});
    return result;
  };
  SmallVector<SmallVector<Value>> resultSizeList = resultSizesOf();
  // A reshape or unsqueeze keeps its operand's elements in their order: an
  // intermediate result is a view of the operand's buffer, no kernel (ops
  // only ever write their own results, so the two never disagree). An
  // output still gets its own copy.
  if (isa<attn::ReshapeOp, attn::UnsqueezeOp>(op) &&
      !buffers.count(op->getResult(0))) {
    buffers[op->getResult(0)] = {pointers.front(), resultSizeList.front()};
    return;
  }
  for (auto [result, resultSize] :
       llvm::zip_equal(op->getResults(), resultSizeList)) {
    auto type = cast<RankedTensorType>(result.getType());
    auto found = buffers.find(result);
    if (found == buffers.end())
      found = buffers.try_emplace(result, allocateBuffer(type, resultSize))
                  .first;
    else
      found->second.sizes = resultSize; // An output buffer.
    layout.tensors.push_back(type);
    pointers.push_back(found->second.pointer);
    sizes.push_back(found->second.sizes);
  }

  // The closure: an array of words in the entry's frame.
  layout.keySplit = !gpuModule && isa<attn::AttentionOp>(op);
  layout.rowTasks = !gpuModule && !primitiveGrid && splitsIntoRowTasks(op);
  Value closure;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&entry.getBody().front());
    closure = builder.create<LLVM::AllocaOp>(
        loc, ptrType, builder.getI64Type(), constantI64(layout.words()), 8);
  }
  int64_t slot = 0;
  for (Value pointer : pointers)
    builder.create<LLVM::StoreOp>(loc, pointer, word(closure, slot++));
  for (const auto &dims : sizes)
    for (Value size : dims)
      builder.create<LLVM::StoreOp>(loc, i64(size), word(closure, slot++));
  for (Value value : indexOperands)
    builder.create<LLVM::StoreOp>(loc, i64(value), word(closure, slot++));
  if (gpuModule)
    return launchOnDevice(op, layout, closure, operandSizes);

  Value count;
  OwningOpRef<ModuleOp> scratch;
  scf::ForallOp tiled;
  auto attention = dyn_cast<attn::AttentionOp>(op);
  Value parts;
  if (attention) {
    tiled = tileForTasks(attention, tiling, scratch);
    SmallVector<AttentionBuffers::Buffer> shapes;
    for (Value operand : op->getOperands())
      shapes.push_back({Value(), buffers.at(operand).sizes});
    count = tiledTaskCount(builder, loc, tiled, shapes);
    // Fewer tasks than threads (decoding a few heads): split each task's
    // keys into parts run in parallel, then merge (FlashDecoding).
    KeySplitPlan plan = planKeySplit(
        builder, loc, attention, buffers.at(attention.getKey()).sizes,
        buffers.at(attention.getValue()).sizes, tiling, count, threads());
    parts = plan.parts;
    // Scratch for the partial results only when split: an unsplit call
    // allocates nothing.
    Value partials;
    {
      Block *current = builder.getInsertionBlock();
      Region *region = current->getParent();
      Block *join =
          builder.createBlock(region, region->end(), {ptrType}, {loc});
      Block *split = builder.createBlock(join);
      builder.setInsertionPointToEnd(current);
      builder.create<cf::CondBranchOp>(
          loc,
          builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt, parts,
                                        indexConstant(1)),
          split, ValueRange{}, join,
          ValueRange{builder.create<LLVM::ZeroOp>(loc, ptrType)});
      builder.setInsertionPointToStart(split);
      Value pointer = allocateBytes(i64(plan.bytes));
      builder.create<cf::BranchOp>(loc, join, ValueRange{pointer});
      builder.setInsertionPointToStart(join);
      partials = join->getArgument(0);
    }
    builder.create<LLVM::StoreOp>(loc, i64(parts), word(closure, slot++));
    builder.create<LLVM::StoreOp>(loc, partials, word(closure, slot++));
  } else if (layout.rowTasks) {
    // Rows a task by the invocation's threads, which the tasks read back.
    RowTasks split = rowTasks(builder, loc, op, operandSizes, threads());
    builder.create<LLVM::StoreOp>(loc, i64(split.rows), word(closure, slot++));
    count = split.count;
  } else {
    count = indexConstant(primitiveGrid ? primitiveGrid : 1);
  }
  auto run = [&](func::FuncOp task, Value tasks) {
    Value function = builder.create<func::ConstantOp>(
        loc, task.getFunctionType(), task.getSymName());
    function = builder
                   .create<UnrealizedConversionCastOp>(loc, TypeRange{ptrType},
                                                       ValueRange{function})
                   .getResult(0);
    builder.create<LLVM::CallOp>(
        loc, parallelFor,
        ValueRange{invocation, i64(tasks), function, closure});
  };
  run(buildTask(op, layout, tiled),
      attention ? builder.create<arith::MulIOp>(loc, count, parts).getResult()
                : count);
  if (attention) {
    // The merge: one task per tiled iteration, none when unsplit.
    Value split = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sgt,
                                                parts, indexConstant(1));
    run(buildTask(op, layout, tiled, /*merge=*/true),
        builder.create<arith::SelectOp>(loc, split, count, indexConstant(0)));
  }
}

void KernelModuleBuilder::returnIfFailed(Value status) {
  Value zero = builder.create<LLVM::ConstantOp>(loc, builder.getI32Type(),
                                                builder.getI32IntegerAttr(0));
  Value bad =
      builder.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::ne, status, zero);
  Block *current = builder.getInsertionBlock();
  Block *next = builder.createBlock(current->getParent());
  builder.setInsertionPointToEnd(current);
  builder.create<cf::CondBranchOp>(loc, bad, returnStatus, ValueRange{status},
                                   next, ValueRange{});
  builder.setInsertionPointToStart(next);
}

/// The grid's threads: this thread's index and their count (index values).
DeviceThreads gridThreads(OpBuilder &builder, Location loc) {
  auto x = gpu::Dimension::x;
  Value block = builder.create<gpu::BlockDimOp>(loc, x);
  Value index = builder.create<arith::AddIOp>(
      loc,
      builder.create<arith::MulIOp>(loc, builder.create<gpu::BlockIdOp>(loc, x),
                                    block),
      builder.create<gpu::ThreadIdOp>(loc, x));
  Value count = builder.create<arith::MulIOp>(
      loc, builder.create<gpu::GridDimOp>(loc, x), block);
  return {index, count, kWarpLanes};
}

/// An empty kernel of `words` i64 parameters at the end of `gpuModule`,
/// the builder inside it.
gpu::GPUFuncOp createDeviceKernel(OpBuilder &builder, Location loc,
                                  gpu::GPUModuleOp gpuModule, StringRef name,
                                  int64_t words, int64_t function) {
  builder.setInsertionPoint(gpuModule.getBody()->getTerminator());
  SmallVector<Type> types(words, builder.getI64Type());
  auto kernel = builder.create<gpu::GPUFuncOp>(
      loc, name, builder.getFunctionType(types, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(),
                  builder.getUnitAttr());
  kernel->setAttr("attn.block",
                  builder.getI64ArrayAttr({kPrimitiveBlockThreads, 1, 1}));
  kernel->setAttr("attn.function", builder.getI64IntegerAttr(function));
  kernel->setAttr("attn.words", builder.getI64IntegerAttr(words));
  builder.setInsertionPointToStart(&kernel.getBody().front());
  return kernel;
}

gpu::GPUFuncOp
KernelModuleBuilder::buildDeviceKernel(Operation *op,
                                       const ClosureLayout &layout) {
  OpBuilder::InsertionGuard guard(builder);
  Location opLoc = op->getLoc();
  int64_t words = layout.words();
  std::string node = op->getName().stripDialect().str();
  if (auto name = dyn_cast<NameLoc>(opLoc))
    node = name.getName().str();
  if (words > kMaxCudaWords) {
    op->emitError() << op->getName().stripDialect() << " would take " << words
                    << " kernel parameters; CUDA kernels of attnc take at "
                    << "most " << kMaxCudaWords;
    throw std::runtime_error("too many kernel parameters");
  }
  auto kernel = createDeviceKernel(builder, opLoc, gpuModule,
                                   name + "_p" + std::to_string(primitiveCount),
                                   words, primitiveCount);
  kernel->setAttr("attn.node", builder.getStringAttr(node));
  Block &body = kernel.getBody().front();
  ClosureValues values =
      readClosure(builder, opLoc, layout, [&](int64_t slot, Type type) {
        Value word = body.getArgument(slot);
        return type == ptrType
                   ? builder.create<LLVM::IntToPtrOp>(opLoc, ptrType, word)
                         .getResult()
                   : word;
      });
  SmallVector<Value> operands, results;
  primitiveBuffers(builder, opLoc, op, values, operands, results);
  emitPrimitiveOnDevice(builder, opLoc, op, operands, results,
                        gridThreads(builder, opLoc));
  builder.setInsertionPointToEnd(&body);
  builder.create<gpu::ReturnOp>(opLoc);
  ++primitiveCount;
  return kernel;
}

gpu::GPUFuncOp KernelModuleBuilder::buildCopyKernel() {
  OpBuilder::InsertionGuard guard(builder);
  auto kernel = createDeviceKernel(builder, loc, gpuModule, name + "_copy",
                                   /*words=*/3, primitiveCount++);
  Block &body = kernel.getBody().front();
  auto bytes = [&](Value word, Value count) {
    Value pointer = builder.create<LLVM::IntToPtrOp>(loc, ptrType, word);
    return memrefFromPointer(
        builder, loc, pointer,
        MemRefType::get({ShapedType::kDynamic}, builder.getI8Type()), {count});
  };
  Value count = builder.create<arith::IndexCastOp>(loc, builder.getIndexType(),
                                                   body.getArgument(2));
  Value to = bytes(body.getArgument(0), count),
        from = bytes(body.getArgument(1), count);
  DeviceThreads threads = gridThreads(builder, loc);
  auto loop =
      builder.create<scf::ForOp>(loc, threads.index, count, threads.count);
  builder.setInsertionPoint(loop.getBody()->getTerminator());
  Value at = loop.getInductionVar();
  builder.create<memref::StoreOp>(
      loc, builder.create<memref::LoadOp>(loc, from, at), to, at);
  builder.setInsertionPointToEnd(&body);
  builder.create<gpu::ReturnOp>(loc);
  return kernel;
}

// attnrt_tensor as the entry writes it: {data, dtype, rank, shape, strides}.
static_assert(offsetof(attnrt_tensor, data) == 0 &&
              offsetof(attnrt_tensor, dtype) == 8 &&
              offsetof(attnrt_tensor, rank) == 12 &&
              offsetof(attnrt_tensor, shape) == 16 &&
              offsetof(attnrt_tensor, strides) == 24 &&
              sizeof(attnrt_tensor) == 32);

void KernelModuleBuilder::launchOnDevice(
    Operation *op, const ClosureLayout &layout, Value closure,
    ArrayRef<SmallVector<Value>> operandSizes) {
  MLIRContext *context = module.getContext();
  Type i32Type = builder.getI32Type();
  auto attention = dyn_cast<attn::AttentionOp>(op);
  if (!attention) {
    buildDeviceKernel(op, layout);
    launchFunction(
        primitiveCount - 1,
        i64(deviceThreadCount(builder, loc, op, operandSizes, kWarpLanes)),
        closure, layout.words());
    return;
  }
  // The op's tensors in kernel order as attnrt_tensors, their shapes the
  // sizes among the closure's words (tensor t's from word
  // firstSize[t]).
  SmallVector<Value> all(op->getOperands());
  llvm::append_range(all, op->getResults());
  SmallVector<int64_t> firstSize;
  int64_t slot = all.size();
  for (RankedTensorType type : layout.tensors) {
    firstSize.push_back(slot);
    slot += type.getRank();
  }
  SmallVector<Value> tensors = attn::gpuKernelTensors(attention);
  auto tensorType = LLVM::LLVMStructType::getLiteral(
      context, {ptrType, i32Type, i32Type, ptrType, ptrType});
  Value array;
  {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&entry.getBody().front());
    array = builder.create<LLVM::AllocaOp>(loc, ptrType, tensorType,
                                           constantI64(tensors.size()), 8);
  }
  Value null = builder.create<LLVM::ZeroOp>(loc, ptrType);
  for (auto [k, tensor] : llvm::enumerate(tensors)) {
    size_t t = llvm::find(all, tensor) - all.begin();
    auto type = cast<RankedTensorType>(tensor.getType());
    Value fields[] = {
        builder.create<LLVM::LoadOp>(loc, ptrType, word(closure, t)),
        constantI32(abiDType(type.getElementType())),
        constantI32(type.getRank()), word(closure, firstSize[t]), null};
    for (auto [f, value] : llvm::enumerate(fields)) {
      Value at = builder.create<LLVM::GEPOp>(
          loc, ptrType, tensorType, array,
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(k),
                                 static_cast<int32_t>(f)});
      builder.create<LLVM::StoreOp>(loc, value, at);
    }
  }
  returnIfFailed(builder
                     .create<LLVM::CallOp>(
                         loc, cudaAttention,
                         ValueRange{invocation, constantI32(attentionCount++),
                                    array, constantI32(tensors.size())})
                     .getResult());
}

LogicalResult KernelModuleBuilder::build() {
  auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
  if (functions.size() != 1)
    return module.emitError("attn-build-entry: expected one graph function");
  func::FuncOp graphFunction = functions.front();
  name = graphFunction.getSymName().str();
  // The importer's signature: the run-time sizes (index, `attn.dim`), then
  // the inputs, each with `attn.dims` (> 0 fixed, -(k + 1) run-time size k).
  size_t numDims = 0;
  while (numDims < graphFunction.getNumArguments() &&
         graphFunction.getArgAttr(numDims, "attn.dim"))
    ++numDims;
  size_t numInputs = graphFunction.getNumArguments() - numDims;
  SmallVector<ArrayRef<int64_t>> inputDims;
  for (size_t i = 0; i < numInputs; ++i) {
    auto dims = graphFunction.getArgAttrOfType<DenseI64ArrayAttr>(
        numDims + i, "attn.dims");
    auto type = dyn_cast<RankedTensorType>(
        graphFunction.getArgument(numDims + i).getType());
    if (!dims || !type || dims.size() != type.getRank() ||
        llvm::any_of(dims.asArrayRef(), [&](int64_t dim) {
          return dim == 0 || dim < -int64_t(numDims);
        }))
      return graphFunction.emitError("attn-build-entry: input ")
             << i << " needs an `attn.dims` array of its rank (> 0 fixed, "
             << "-(k + 1) for run-time size k of " << numDims << ")";
    inputDims.push_back(dims.asArrayRef());
  }

  declareRuntime();
  builder.setInsertionPointToEnd(module.getBody());
  entry = builder.create<func::FuncOp>(
      loc, name + "_entry",
      builder.getFunctionType({ptrType, ptrType, ptrType},
                              {builder.getI32Type()}));
  Block *body = entry.addEntryBlock();
  invocation = body->getArgument(0);
  Value dimsArray = body->getArgument(1), bufferArray = body->getArgument(2);
  outOfMemory = builder.createBlock(&entry.getBody());
  builder.create<func::ReturnOp>(
      loc, ValueRange{builder.create<arith::ConstantIntOp>(
               loc, ATTNRT_OUT_OF_MEMORY, 32)});
  if (gpuModule) {
    returnStatus = builder.createBlock(&entry.getBody(), entry.getBody().end(),
                                       {builder.getI32Type()}, {loc});
    builder.create<func::ReturnOp>(loc, returnStatus->getArguments());
  }
  builder.setInsertionPointToEnd(body);

  // Run-time sizes, then the input buffers with their sizes.
  SmallVector<Value> dimValues;
  for (size_t k = 0; k < numDims; ++k) {
    Value loaded = builder.create<LLVM::LoadOp>(loc, builder.getI64Type(),
                                                word(dimsArray, k));
    dimValues.push_back(builder.create<arith::IndexCastOp>(
        loc, builder.getIndexType(), loaded));
    indexValues[graphFunction.getArgument(k)] = dimValues.back();
  }
  auto bufferPointer = [&](int64_t slot) -> Value {
    return builder.create<LLVM::LoadOp>(loc, ptrType, word(bufferArray, slot));
  };
  for (size_t i = 0; i < numInputs; ++i) {
    BufferRef ref{bufferPointer(i), {}};
    for (int64_t dim : inputDims[i])
      ref.sizes.push_back(dim > 0 ? indexConstant(dim)
                                  : dimValues[-(dim + 1)]);
    buffers[graphFunction.getArgument(numDims + i)] = ref;
  }

  // A returned value computed by an op is written straight into its output
  // buffer; an input or a value returned twice is copied at the end.
  auto returnOp =
      cast<func::ReturnOp>(graphFunction.getBody().front().getTerminator());
  SmallVector<std::pair<Value, Value>> copies; // (value, output pointer).
  for (auto [k, value] : llvm::enumerate(returnOp.getOperands())) {
    Value pointer = bufferPointer(numInputs + k);
    if (isa<BlockArgument>(value) || buffers.count(value))
      copies.push_back({value, pointer});
    else
      buffers[value] = {pointer, {}};
  }

  for (Operation &op : graphFunction.getBody().front().without_terminator())
    buildKernel(&op);

  for (auto [value, pointer] : copies) {
    const BufferRef &ref = buffers.at(value);
    Value bytes =
        byteSize(cast<RankedTensorType>(value.getType()), ref.sizes);
    if (!gpuModule) {
      builder.create<LLVM::MemcpyOp>(loc, pointer, ref.pointer, bytes,
                                     /*isVolatile=*/false);
      continue;
    }
    // Device memory: NAME_copy's words (to, from, bytes), a thread a byte.
    if (!copyKernel)
      copyKernel = buildCopyKernel();
    Value words;
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPointToStart(&entry.getBody().front());
      words = builder.create<LLVM::AllocaOp>(loc, ptrType, builder.getI64Type(),
                                             constantI64(3), 8);
    }
    builder.create<LLVM::StoreOp>(loc, pointer, word(words, 0));
    builder.create<LLVM::StoreOp>(loc, ref.pointer, word(words, 1));
    builder.create<LLVM::StoreOp>(loc, bytes, word(words, 2));
    launchFunction(
        copyKernel->getAttrOfType<IntegerAttr>("attn.function").getInt(), bytes,
        words, 3);
  }
  builder.create<func::ReturnOp>(
      loc,
      ValueRange{builder.create<arith::ConstantIntOp>(loc, ATTNRT_OK, 32)});
  graphFunction.erase();
  return success();
}

} // namespace

namespace {

/// attn-build-entry: the schedule's register blocks and tiles are its
/// options, rounded as AttentionTiling::from rounds a schedule's.
struct BuildEntryPass : impl::BuildEntryPassBase<BuildEntryPass> {
  using BuildEntryPassBase::BuildEntryPassBase;

  void runOnOperation() override {
    AttentionSchedule schedule;
    schedule.queryTile = queryTile;
    schedule.keyTile = keyTile;
    schedule.vectorWidth = vectorWidth;
    schedule.scoreVectors = scoreVectors;
    schedule.scoreKeys = scoreKeys;
    schedule.pvRows = pvRows;
    schedule.pvVectors = pvVectors;
    schedule.bf16Dot = bf16Dot;
    if (std::optional<MatrixTiles> tiles = parseMatrixTiles(matrixTiles)) {
      schedule.matrixTiles = *tiles;
    } else {
      getOperation().emitError("attn-build-entry: matrix-tiles must be "
                               "none, amx or emulated");
      return signalPassFailure();
    }
    schedule.valuePrefetchBytes = valuePrefetchBytes;
    schedule.decodeStep = decodeStep;
    schedule.decodePrefetchLevel = decodePrefetchLevel;
    for (int64_t value :
         {queryTile.getValue(), keyTile.getValue(), vectorWidth.getValue(),
          scoreVectors.getValue(), scoreKeys.getValue(), pvRows.getValue(),
          pvVectors.getValue(), decodeStep.getValue()})
      if (value < 1) {
        getOperation().emitError("attn-build-entry: every tile and block "
                                 "option must be >= 1");
        return signalPassFailure();
      }
    if (decodePrefetchLevel != 1 && decodePrefetchLevel != 2) {
      getOperation().emitError("attn-build-entry: decode-prefetch-level must "
                               "be 1 or 2");
      return signalPassFailure();
    }
    if (primitiveGrid < 0) {
      getOperation().emitError("attn-build-entry: primitive-grid must be "
                               ">= 0");
      return signalPassFailure();
    }
    // Kernel builders report a module they cannot lower by throwing; catch
    // here, before the exception would cross libMLIR's frames.
    try {
      if (failed(KernelModuleBuilder(getOperation(),
                                     AttentionTiling::from(schedule), {},
                                     primitiveGrid)
                     .build()))
        return signalPassFailure();
    } catch (const std::exception &error) {
      getOperation().emitError("attn-build-entry: ") << error.what();
      return signalPassFailure();
    }
  }
};

/// attn-build-cuda-entry: the entry of attn-build-entry, its ops launched
/// on a CUDA device, the kernels beside attn-lower-to-gpu's.
struct BuildCudaEntryPass : impl::BuildCudaEntryPassBase<BuildCudaEntryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto functions = llvm::to_vector(module.getOps<func::FuncOp>());
    if (functions.size() != 1) {
      module.emitError("attn-build-cuda-entry: expected one graph function");
      return signalPassFailure();
    }
    // attn-lower-to-gpu{entry}'s module, or a new one (no attention op).
    std::string gpuName = (functions.front().getSymName() + "_gpu").str();
    auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>(gpuName);
    if (!gpuModule) {
      OpBuilder top(module.getBodyRegion());
      gpuModule = top.create<gpu::GPUModuleOp>(module.getLoc(), gpuName);
    }
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                    UnitAttr::get(module.getContext()));
    try {
      if (failed(KernelModuleBuilder(module, AttentionTiling(), gpuModule)
                     .build()))
        return signalPassFailure();
    } catch (const std::exception &error) {
      module.emitError("attn-build-cuda-entry: ") << error.what();
      return signalPassFailure();
    }
    if (failed(attn::lowerMathForPtx(gpuModule)))
      return signalPassFailure();
  }
};

} // namespace
void buildKernels(ModuleOp module, const AttentionSchedule &schedule,
                  int64_t primitiveGrid) {
  PassManager pm(module.getContext());
  BuildEntryPassOptions options = buildEntryOptions(schedule);
  options.primitiveGrid = primitiveGrid;
  pm.addPass(createBuildEntryPass(options));
  std::string diagnostics;
  if (failed(collectingDiagnostics(*module.getContext(), diagnostics,
                                   [&] { return pm.run(module); })))
    throw std::logic_error("attn-build-entry failed: " + diagnostics);
}

void tileAttentionForTasks(ModuleOp module, const AttentionSchedule &schedule) {
  AttentionTiling tiling = AttentionTiling::from(schedule);
  PassManager pm(module.getContext());
  attn::TileAttentionPassOptions options;
  options.rowTile = tiling.queryTile;
  options.keyTile = tiling.keyTile;
  options.packQueryHeads = true;
  pm.addNestedPass<func::FuncOp>(attn::createTileAttentionPass(options));
  std::string diagnostics;
  if (failed(collectingDiagnostics(*module.getContext(), diagnostics,
                                   [&] { return pm.run(module); })))
    throw std::logic_error("attn-tile-attention failed: " + diagnostics);
}

BuildEntryPassOptions buildEntryOptions(const AttentionSchedule &schedule) {
  BuildEntryPassOptions options;
  options.queryTile = schedule.queryTile;
  options.keyTile = schedule.keyTile;
  options.vectorWidth = schedule.vectorWidth;
  options.scoreVectors = schedule.scoreVectors;
  options.scoreKeys = schedule.scoreKeys;
  options.pvRows = schedule.pvRows;
  options.pvVectors = schedule.pvVectors;
  options.bf16Dot = schedule.bf16Dot;
  options.matrixTiles = matrixTilesName(schedule.matrixTiles);
  options.valuePrefetchBytes = schedule.valuePrefetchBytes;
  options.decodeStep = schedule.decodeStep;
  options.decodePrefetchLevel = schedule.decodePrefetchLevel;
  return options;
}

} // namespace attnc
