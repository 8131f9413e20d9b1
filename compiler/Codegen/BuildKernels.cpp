//===- BuildKernels.cpp - A fused attn module as CPU kernels --------------===//
//
// The entry walks the graph function's ops in order. Every tensor gets a
// buffer: an input's is buffers[i], a returned value's is its output buffer,
// any other comes from attnrt_allocate. Each op becomes a task function
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

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
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
#include <stdexcept>

namespace attnc {

#define GEN_PASS_DEF_BUILDENTRYPASS
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
/// for an attention op its key split (parts per task, partials pointer).
struct ClosureLayout {
  SmallVector<RankedTensorType> tensors; ///< Operands then results.
  int64_t indexOperands = 0;
  bool keySplit = false;

  int64_t words() const {
    int64_t count = tensors.size() + indexOperands + (keySplit ? 2 : 0);
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

class KernelModuleBuilder {
public:
  KernelModuleBuilder(ModuleOp module, const AttentionTiling &tiling)
      : module(module), tiling(tiling), builder(module.getContext()),
        loc(module.getLoc()), ptrType(LLVM::LLVMPointerType::get(
                                   module.getContext())) {}

  /// Fails (with a diagnostic) on a module importGraph did not make.
  LogicalResult build();

private:
  ModuleOp module;
  AttentionTiling tiling;
  std::string name; ///< The graph's: NAME_entry, NAME_k0, ...
  OpBuilder builder;
  Location loc;
  Type ptrType;
  func::FuncOp entry;
  LLVM::LLVMFuncOp parallelFor, allocate, invocationThreads;
  Block *outOfMemory = nullptr;
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
  Value allocateBytes(Value bytes);
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
  Type i64Type = builder.getI64Type();
  builder.setInsertionPointToEnd(module.getBody());
  parallelFor = builder.create<LLVM::LLVMFuncOp>(
      loc, "attnrt_parallel_for",
      LLVM::LLVMFunctionType::get(voidType,
                                  {ptrType, i64Type, ptrType, ptrType}));
  allocate = builder.create<LLVM::LLVMFuncOp>(
      loc, "attnrt_allocate",
      LLVM::LLVMFunctionType::get(ptrType, {ptrType, i64Type}));
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

  // Read the words back: pointers, then sizes (constants where static).
  int64_t slot = 0;
  SmallVector<Value> pointers;
  for (size_t t = 0; t < layout.tensors.size(); ++t)
    pointers.push_back(
        builder.create<LLVM::LoadOp>(opLoc, ptrType, word(closure, slot++)));
  SmallVector<SmallVector<Value>> sizes;
  for (RankedTensorType type : layout.tensors) {
    SmallVector<Value> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      Value loaded = builder.create<LLVM::LoadOp>(
          opLoc, builder.getI64Type(), word(closure, slot++));
      dims.push_back(type.isDynamicDim(d)
                         ? builder
                               .create<arith::IndexCastOp>(
                                   opLoc, builder.getIndexType(), loaded)
                               .getResult()
                         : indexConstant(type.getDimSize(d)));
    }
    sizes.push_back(dims);
  }
  SmallVector<Value> indexOperands;
  for (int64_t i = 0; i < layout.indexOperands; ++i)
    indexOperands.push_back(builder.create<arith::IndexCastOp>(
        opLoc, builder.getIndexType(),
        builder.create<LLVM::LoadOp>(opLoc, builder.getI64Type(),
                                     word(closure, slot++))));

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
    size_t tensor = 0, index = 0;
    auto memref = [&](RankedTensorType type) {
      auto memrefType =
          MemRefType::get(type.getShape(), bufferElementType(type));
      Value value = memrefFromPointer(builder, opLoc, pointers[tensor],
                                      memrefType, sizes[tensor]);
      ++tensor;
      return value;
    };
    for (Value operand : op->getOperands()) {
      if (auto type = dyn_cast<RankedTensorType>(operand.getType()))
        operands.push_back(memref(type));
      else
        operands.push_back(indexOperands[index++]);
    }
    for (Value result : op->getResults())
      results.push_back(memref(cast<RankedTensorType>(result.getType())));
    emitPrimitive(builder, opLoc, op, operands, results, taskIndex,
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
  layout.keySplit = isa<attn::AttentionOp>(op);
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
        buffers.at(attention.getValue()).sizes, tiling, count,
        builder.create<arith::IndexCastOp>(
            loc, builder.getIndexType(),
            builder
                .create<LLVM::CallOp>(loc, invocationThreads,
                                      ValueRange{invocation})
                .getResult()));
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
  } else {
    count = primitiveTaskCount(builder, loc, op, operandSizes);
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
    builder.create<LLVM::MemcpyOp>(loc, pointer, ref.pointer, bytes,
                                   /*isVolatile=*/false);
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
    schedule.valuePrefetchBytes = valuePrefetchBytes;
    schedule.decodeStep = decodeStep;
    for (int64_t value :
         {queryTile.getValue(), keyTile.getValue(), vectorWidth.getValue(),
          scoreVectors.getValue(), scoreKeys.getValue(), pvRows.getValue(),
          pvVectors.getValue(), decodeStep.getValue()})
      if (value < 1) {
        getOperation().emitError("attn-build-entry: every tile and block "
                                 "option must be >= 1");
        return signalPassFailure();
      }
    // Kernel builders report a module they cannot lower by throwing; catch
    // here, before the exception would cross libMLIR's frames.
    try {
      if (failed(KernelModuleBuilder(getOperation(),
                                     AttentionTiling::from(schedule))
                     .build()))
        return signalPassFailure();
    } catch (const std::exception &error) {
      getOperation().emitError("attn-build-entry: ") << error.what();
      return signalPassFailure();
    }
  }
};

} // namespace
void buildKernels(ModuleOp module, const AttentionSchedule &schedule) {
  PassManager pm(module.getContext());
  pm.addPass(createBuildEntryPass(buildEntryOptions(schedule)));
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
  options.valuePrefetchBytes = schedule.valuePrefetchBytes;
  options.decodeStep = schedule.decodeStep;
  return options;
}

} // namespace attnc
