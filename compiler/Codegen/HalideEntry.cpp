//===- HalideEntry.cpp - NAME_entry for a Halide pipeline -----------------===//

#include "Codegen/HalideEntry.h"
#include "Codegen/EmitObject.h"
#include "Codegen/KernelDescriptor.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Support/MemoryBuffer.h"

// The ABI's C headers: plain C, no LLVM or Halide compiler headers
// (docs/toolchain.md, trap 1).
#include <HalideRuntime.h>
#include <attnc/attnrt.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace attnc {

namespace {

// Halide's buffer structs (HalideRuntime.h), as the LLVM types below spell
// them: halide_dimension_t {i32 × 4}, halide_buffer_t {i64, ptr, ptr, i64,
// halide_type_t {i8, i8, i16}, i32, ptr, ptr}. The offsets are those of the
// 64-bit hosts attnc runs on and targets; EntryBuilder checks them against
// the target's data layout too.
static_assert(std::is_same_v<decltype(halide_dimension_t::min), int32_t> &&
              std::is_same_v<decltype(halide_dimension_t::extent), int32_t> &&
              std::is_same_v<decltype(halide_dimension_t::stride), int32_t> &&
              std::is_same_v<decltype(halide_dimension_t::flags), uint32_t>);
static_assert(offsetof(halide_dimension_t, min) == 0 &&
              offsetof(halide_dimension_t, extent) == 4 &&
              offsetof(halide_dimension_t, stride) == 8 &&
              offsetof(halide_dimension_t, flags) == 12 &&
              sizeof(halide_dimension_t) == 16);
static_assert(std::is_same_v<decltype(halide_type_t::code),
                             halide_type_code_t> &&
              sizeof(halide_type_code_t) == 1 &&
              std::is_same_v<decltype(halide_type_t::bits), uint8_t> &&
              std::is_same_v<decltype(halide_type_t::lanes), uint16_t>);
static_assert(offsetof(halide_type_t, code) == 0 &&
              offsetof(halide_type_t, bits) == 1 &&
              offsetof(halide_type_t, lanes) == 2 &&
              sizeof(halide_type_t) == 4);
static_assert(std::is_same_v<decltype(halide_buffer_t::device), uint64_t> &&
              std::is_pointer_v<decltype(halide_buffer_t::device_interface)> &&
              std::is_same_v<decltype(halide_buffer_t::host), uint8_t *> &&
              std::is_same_v<decltype(halide_buffer_t::flags), uint64_t> &&
              std::is_same_v<decltype(halide_buffer_t::type), halide_type_t> &&
              std::is_same_v<decltype(halide_buffer_t::dimensions), int32_t> &&
              std::is_same_v<decltype(halide_buffer_t::dim),
                             halide_dimension_t *> &&
              std::is_same_v<decltype(halide_buffer_t::padding), void *>);
static_assert(offsetof(halide_buffer_t, device) == 0 &&
              offsetof(halide_buffer_t, device_interface) == 8 &&
              offsetof(halide_buffer_t, host) == 16 &&
              offsetof(halide_buffer_t, flags) == 24 &&
              offsetof(halide_buffer_t, type) == 32 &&
              offsetof(halide_buffer_t, dimensions) == 36 &&
              offsetof(halide_buffer_t, dim) == 40 &&
              offsetof(halide_buffer_t, padding) == 48 &&
              sizeof(halide_buffer_t) == 56);
// The functions the entry declares or defines as LLVM functions: the
// malloc and free wrappers (ptr, i64) -> ptr and (ptr, ptr), the error
// handler (ptr, ptr), and attnrt's services.
static_assert(std::is_same_v<halide_malloc_t, void *(*)(void *, size_t)> &&
              std::is_same_v<halide_free_t, void (*)(void *, void *)> &&
              std::is_same_v<halide_error_handler_t,
                             void (*)(void *, const char *)> &&
              sizeof(size_t) == sizeof(int64_t));
static_assert(std::is_same_v<decltype(&attnrt_scratch_allocate),
                             void *(*)(size_t)> &&
              std::is_same_v<decltype(&attnrt_scratch_release),
                             void (*)(void *)>);
static_assert(std::is_same_v<decltype(&attnrt_allocate),
                             void *(*)(attnrt_invocation *, int64_t)>);
static_assert(std::is_same_v<decltype(&attnrt_invocation_threads),
                             int64_t (*)(const attnrt_invocation *)>);
static_assert(std::is_same_v<decltype(&attnrt_parallel_for),
                             void (*)(attnrt_invocation *, int64_t,
                                      void (*)(void *, int64_t), void *)>);

/// The halide_type_t of an attnrt dtype (bool as uint8).
halide_type_t halideType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return halide_type_t(halide_type_float, 32);
  case DType::F16:
    return halide_type_t(halide_type_float, 16);
  case DType::BF16:
    return halide_type_t(halide_type_bfloat, 16);
  case DType::I32:
    return halide_type_t(halide_type_int, 32);
  case DType::Bool:
    return halide_type_t(halide_type_uint, 8);
  }
  return halide_type_t(halide_type_float, 32);
}

class EntryBuilder {
public:
  EntryBuilder(llvm::Module &module, const Graph &graph,
               const HalideEntrySpec &spec)
      : module(module), graph(graph), spec(spec), context(module.getContext()),
        i8(llvm::Type::getInt8Ty(context)),
        i16(llvm::Type::getInt16Ty(context)),
        i32(llvm::Type::getInt32Ty(context)),
        i64(llvm::Type::getInt64Ty(context)),
        ptr(llvm::PointerType::get(context, 0)) {
    dimType = llvm::StructType::get(context, {i32, i32, i32, i32});
    bufferType = llvm::StructType::get(
        context, {i64, ptr, ptr, i64, i8, i8, i16, i32, ptr, ptr});
    // dims, buffers, status; the decode form's partial rows and parts.
    closureType = llvm::StructType::get(context, {ptr, ptr, i32, ptr, i64});
    checkStructLayout(module, dimType, "halide_dimension_t",
                      {offsetof(halide_dimension_t, min),
                       offsetof(halide_dimension_t, extent),
                       offsetof(halide_dimension_t, stride),
                       offsetof(halide_dimension_t, flags)},
                      sizeof(halide_dimension_t));
    constexpr size_t type = offsetof(halide_buffer_t, type);
    checkStructLayout(module, bufferType, "halide_buffer_t",
                      {offsetof(halide_buffer_t, device),
                       offsetof(halide_buffer_t, device_interface),
                       offsetof(halide_buffer_t, host),
                       offsetof(halide_buffer_t, flags),
                       type + offsetof(halide_type_t, code),
                       type + offsetof(halide_type_t, bits),
                       type + offsetof(halide_type_t, lanes),
                       offsetof(halide_buffer_t, dimensions),
                       offsetof(halide_buffer_t, dim),
                       offsetof(halide_buffer_t, padding)},
                      sizeof(halide_buffer_t));
  }
  void build();

private:
  llvm::Module &module;
  const Graph &graph;
  const HalideEntrySpec &spec;
  llvm::LLVMContext &context;
  llvm::Type *i8, *i16, *i32, *i64, *ptr;
  llvm::StructType *dimType, *bufferType, *closureType;

  /// A size as i64: a constant, or dims[k] for run-time size k.
  llvm::Value *size(llvm::IRBuilder<> &b, llvm::Value *dims, const Dim &dim) {
    if (dim.isFixed())
      return b.getInt64(dim.size);
    std::vector<std::string> names = graph.runtimeDims();
    size_t k = std::find(names.begin(), names.end(), dim.symbol) -
               names.begin();
    return b.CreateLoad(i64, b.CreateConstGEP1_64(i64, dims, k));
  }
  /// ceil(x / y) of unsigned x, positive y.
  llvm::Value *ceilDiv(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
    return b.CreateUDiv(b.CreateAdd(x, b.CreateSub(y, b.getInt64(1))), y);
  }
  /// Floats per partial row of the decode form: its output, max and sum.
  llvm::Value *partialRowFloats(llvm::IRBuilder<> &b, llvm::Value *dims,
                                const HalideEntryKernel &kernel) {
    return b.CreateAdd(size(b, dims, kernel.valueDepth), b.getInt64(2));
  }
  /// A kernel's tasks of one form: B × groups × tiles, a group one head or
  /// (decode) the query heads of one kv head, a tile `tileQueries` queries.
  struct TaskSpace {
    llvm::Value *groups, *tiles;
    int64_t tileQueries;
  };
  TaskSpace taskSpace(llvm::IRBuilder<> &b, llvm::Value *dims,
                      const HalideEntryKernel &kernel, bool decode) {
    int64_t tileQueries = decode ? kernel.decodeBelow : kernel.taskQueries;
    llvm::Value *queries = size(b, dims, kernel.queries);
    return {size(b, dims, decode ? kernel.kvHeads : kernel.heads),
            ceilDiv(b, queries, b.getInt64(tileQueries)), tileQueries};
  }
  /// The pipelines NAME_entry calls for an attention: the rows form, a
  /// part of the decode form, the merge of the decode form's parts.
  enum class Form { Rows, DecodePart, Merge };
  /// The task function of `kernel`'s pipeline of `form`: one crop of
  /// (batch, head group, query tile) per index, for DecodePart times the
  /// closure's parts.
  llvm::Function *buildTask(const HalideEntryKernel &kernel, size_t number,
                            Form form);
  /// A halide_buffer_t on the stack for `host` (the element at the mins)
  /// of `type`, with `dims` (min, extent, stride) innermost first.
  llvm::Value *
  halideBuffer(llvm::IRBuilder<> &b, llvm::Value *host, halide_type_t type,
               const std::vector<std::array<llvm::Value *, 3>> &dims);
  /// Runs `kernel`'s tasks of `form` through attnrt_parallel_for, `count`
  /// of them.
  void runTasks(llvm::IRBuilder<> &b, llvm::Function *entry,
                llvm::Value *closure, const HalideEntryKernel &kernel,
                size_t number, Form form, llvm::Value *count);
  /// Runs the decode form: the keys split when the tasks are fewer than the
  /// threads, every part's partial rows in scratch, then their merge.
  void runDecode(llvm::IRBuilder<> &b, llvm::Function *entry,
                 llvm::Value *closure, const HalideEntryKernel &kernel,
                 size_t number);
  /// Returns the closure's status from the entry if a task failed.
  void returnIfFailed(llvm::IRBuilder<> &b, llvm::Function *entry,
                      llvm::Value *closure);
  /// The bytes of a buffer of `argument`'s shape, as i64.
  llvm::Value *byteSize(llvm::IRBuilder<> &b, llvm::Value *dims,
                        const HalideEntryArgument &argument) {
    llvm::Value *bytes = b.getInt64(halideType(argument.dtype).bits / 8);
    for (const Dim &dim : argument.shape)
      bytes = b.CreateMul(bytes, size(b, dims, dim));
    return bytes;
  }
  /// Runs the kernels in order over `buffers` (inputs, outputs, then the
  /// intermediates); returns the first failing status, else 0.
  void runKernels(llvm::IRBuilder<> &b, llvm::Function *entry,
                  llvm::Value *closure, llvm::Value *buffers);
  /// The buffer array the kernels use: the entry's own, or a copy extended
  /// with the intermediates; a failed allocation returns OUT_OF_MEMORY.
  llvm::Value *withIntermediates(llvm::IRBuilder<> &b, llvm::Function *entry);
  void installScratchAllocator(llvm::IRBuilder<> &b);
};

/// Halide's pipelines malloc their score tiles on every call, one call per
/// task; halide_malloc and halide_free go to attnrt's per-thread scratch
/// cache instead, so steady-state calls reuse memory rather than fault in
/// new pages (process-wide, as the error handler).
void EntryBuilder::installScratchAllocator(llvm::IRBuilder<> &b) {
  auto define = [&](const char *name, llvm::FunctionType *type,
                    const char *target, llvm::FunctionType *targetType) {
    auto *function = llvm::Function::Create(
        type, llvm::GlobalValue::InternalLinkage, graph.name + name, module);
    llvm::IRBuilder<> body(
        llvm::BasicBlock::Create(context, "entry", function));
    llvm::Value *call = body.CreateCall(
        module.getOrInsertFunction(target, targetType), {function->getArg(1)});
    if (type->getReturnType()->isVoidTy())
      body.CreateRetVoid();
    else
      body.CreateRet(call);
    return function;
  };
  llvm::Type *voidType = llvm::Type::getVoidTy(context);
  llvm::Function *allocate = define(
      "_halide_malloc", llvm::FunctionType::get(ptr, {ptr, i64}, false),
      "attnrt_scratch_allocate", llvm::FunctionType::get(ptr, {i64}, false));
  llvm::Function *release = define(
      "_halide_free", llvm::FunctionType::get(voidType, {ptr, ptr}, false),
      "attnrt_scratch_release",
      llvm::FunctionType::get(voidType, {ptr}, false));
  for (auto [setter, function] :
       {std::pair{"halide_set_custom_malloc", allocate},
        std::pair{"halide_set_custom_free", release}})
    b.CreateCall(module.getOrInsertFunction(
                     setter, llvm::FunctionType::get(ptr, {ptr}, false)),
                 {function});
}

llvm::Value *EntryBuilder::halideBuffer(
    llvm::IRBuilder<> &b, llvm::Value *host, halide_type_t type,
    const std::vector<std::array<llvm::Value *, 3>> &dims) {
  int rank = int(dims.size());
  auto *arrayType = llvm::ArrayType::get(dimType, std::max(rank, 1));
  llvm::Value *dimArray = b.CreateAlloca(arrayType);
  for (int n = 0; n < rank; ++n) {
    llvm::Value *fields[] = {b.CreateTrunc(dims[n][0], i32),
                             b.CreateTrunc(dims[n][1], i32),
                             b.CreateTrunc(dims[n][2], i32), b.getInt32(0)};
    for (int field = 0; field < 4; ++field)
      b.CreateStore(fields[field],
                    b.CreateInBoundsGEP(
                        arrayType, dimArray,
                        {b.getInt32(0), b.getInt32(n), b.getInt32(field)}));
  }
  llvm::Value *null =
      llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0));
  llvm::Value *buffer = b.CreateAlloca(bufferType);
  llvm::Value *values[] = {b.getInt64(0),
                           null,
                           host,
                           b.getInt64(0),
                           b.getInt8(type.code),
                           b.getInt8(type.bits),
                           b.getInt16(type.lanes),
                           b.getInt32(rank),
                           dimArray,
                           null};
  for (unsigned field = 0; field < 10; ++field)
    b.CreateStore(values[field], b.CreateStructGEP(bufferType, buffer, field));
  return buffer;
}

llvm::Function *EntryBuilder::buildTask(const HalideEntryKernel &kernel,
                                        size_t number, Form form) {
  auto *taskType = llvm::FunctionType::get(
      llvm::Type::getVoidTy(context), {ptr, i64}, false);
  const char *suffix[] = {"", "_decode", "_merge"};
  auto *task = llvm::Function::Create(
      taskType, llvm::GlobalValue::InternalLinkage,
      graph.name + "_halide_task" + std::to_string(number) + suffix[int(form)],
      module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", task));
  llvm::Value *closure = task->getArg(0), *index = task->getArg(1);
  auto field = [&](llvm::Type *type, unsigned n) {
    return b.CreateLoad(type, b.CreateStructGEP(closureType, closure, n));
  };
  llvm::Value *dims = field(ptr, 0), *buffers = field(ptr, 1);
  llvm::Value *partials = field(ptr, 3), *parts = field(i64, 4);

  // index = ((batch · groups + group) · tiles + tile) · parts + part; a
  // group is one head, or for decode the query heads of one kv head.
  bool decode = form != Form::Rows;
  llvm::Value *part = b.getInt64(0);
  if (form == Form::DecodePart) {
    part = b.CreateURem(index, parts);
    index = b.CreateUDiv(index, parts);
  }
  TaskSpace space = taskSpace(b, dims, kernel, decode);
  llvm::Value *heads = size(b, dims, kernel.heads);
  llvm::Value *groupHeads = b.CreateUDiv(heads, space.groups);
  llvm::Value *queries = size(b, dims, kernel.queries);
  llvm::Value *tileSize = b.getInt64(space.tileQueries);
  llvm::Value *tile = b.CreateURem(index, space.tiles);
  llvm::Value *rest = b.CreateUDiv(index, space.tiles);
  llvm::Value *group = b.CreateURem(rest, space.groups);
  llvm::Value *head = b.CreateMul(group, groupHeads);
  llvm::Value *batch = b.CreateUDiv(rest, space.groups);
  llvm::Value *first = b.CreateMul(tile, tileSize);
  llvm::Value *count = b.CreateSub(queries, first);
  count = b.CreateSelect(b.CreateICmpULT(count, tileSize), count, tileSize);

  // A plan value's buffer: Halide's dim n is graph dim rank - 1 - n, dense
  // C order; outputs cropped to the task.
  auto valueBuffer = [&](const HalideEntryArgument &argument) {
    int rank = int(argument.shape.size());
    llvm::Value *data = b.CreateLoad(
        ptr, b.CreateConstGEP1_64(ptr, buffers, argument.buffer));
    std::vector<std::array<llvm::Value *, 3>> fields;
    llvm::Value *stride = b.getInt64(1), *offset = b.getInt64(0);
    for (int n = 0; n < rank; ++n) {
      int graphDim = rank - 1 - n;
      llvm::Value *extent = size(b, dims, argument.shape[graphDim]);
      llvm::Value *min = b.getInt64(0);
      if (graphDim == argument.batchDim)
        min = batch, extent = b.getInt64(1);
      else if (graphDim == argument.headDim)
        min = head, extent = groupHeads;
      else if (graphDim == argument.queryDim)
        min = first, extent = count;
      offset = b.CreateAdd(offset, b.CreateMul(min, stride));
      fields.push_back({min, extent, stride});
      stride = b.CreateMul(stride, size(b, dims, argument.shape[graphDim]));
    }
    halide_type_t type = halideType(argument.dtype);
    // host is the address of the element at the mins.
    llvm::Value *host = b.CreateGEP(
        i8, data, b.CreateMul(offset, b.getInt64(type.bits / 8)));
    return halideBuffer(b, host, type, fields);
  };
  // The partial rows (e, i, h, b, p), [parts, B, heads, queries,
  // valueDepth + 2] in scratch: the task's rows of its own part, or of
  // every part for the merge.
  auto partialsBuffer = [&] {
    llvm::Value *rowFloats = partialRowFloats(b, dims, kernel);
    llvm::Value *partMin = part, *partExtent = b.getInt64(1);
    if (form == Form::Merge)
      partExtent = parts;
    std::array<llvm::Value *, 5> mins = {b.getInt64(0), first, head, batch,
                                         partMin};
    std::array<llvm::Value *, 5> extents = {rowFloats, count, groupHeads,
                                            b.getInt64(1), partExtent};
    std::array<llvm::Value *, 5> sizes = {rowFloats, queries, heads,
                                          size(b, dims, kernel.batch), parts};
    std::vector<std::array<llvm::Value *, 3>> fields;
    llvm::Value *stride = b.getInt64(1), *offset = b.getInt64(0);
    for (int n = 0; n < 5; ++n) {
      offset = b.CreateAdd(offset, b.CreateMul(mins[n], stride));
      fields.push_back({mins[n], extents[n], stride});
      stride = b.CreateMul(stride, sizes[n]);
    }
    llvm::Value *host =
        b.CreateGEP(i8, partials, b.CreateMul(offset, b.getInt64(4)));
    return halideBuffer(b, host, halide_type_t(halide_type_float, 32), fields);
  };

  // A primitive takes its arguments alone; an attention its inputs, its
  // crop, then its outputs (or the partial rows).
  std::vector<llvm::Value *> arguments;
  int outputs = std::max(kernel.cropAt, 0);
  if (form == Form::Merge) {
    arguments.push_back(partialsBuffer());
    arguments.push_back(b.CreateTrunc(size(b, dims, kernel.keys), i32));
  } else if (kernel.cropAt >= 0) {
    for (int n = 0; n < kernel.cropAt; ++n)
      arguments.push_back(valueBuffer(kernel.arguments[n]));
    llvm::Value *keyLimit = b.getInt32(INT32_MAX);
    if (kernel.keyLengthsBuffer >= 0) {
      llvm::Value *lengths = b.CreateLoad(
          ptr, b.CreateConstGEP1_64(ptr, buffers, kernel.keyLengthsBuffer));
      keyLimit = b.CreateLoad(i32, b.CreateGEP(i32, lengths, batch));
    }
    for (llvm::Value *crop : {batch, first, count})
      arguments.push_back(b.CreateTrunc(crop, i32));
    arguments.push_back(keyLimit);
    if (form == Form::DecodePart) {
      for (llvm::Value *crop : {group, part, parts})
        arguments.push_back(b.CreateTrunc(crop, i32));
      arguments.push_back(partialsBuffer());
      outputs = int(kernel.arguments.size());
    }
  }
  for (int n = outputs; n < int(kernel.arguments.size()); ++n)
    arguments.push_back(valueBuffer(kernel.arguments[n]));

  std::vector<llvm::Type *> types;
  for (llvm::Value *argument : arguments)
    types.push_back(argument->getType());
  const std::string *function[] = {&kernel.function, &kernel.decodeFunction,
                                   &kernel.mergeFunction};
  llvm::FunctionCallee pipeline = module.getOrInsertFunction(
      *function[int(form)], llvm::FunctionType::get(i32, types, false));
  llvm::Value *result = b.CreateCall(pipeline, arguments);
  // Halide's error codes are negative: out of memory (a null from
  // halide_malloc) is ATTNRT_OUT_OF_MEMORY, any other ATTNRT_INTERNAL.
  llvm::Value *status = b.CreateSelect(
      b.CreateICmpEQ(result, b.getInt32(halide_error_code_out_of_memory)),
      b.getInt32(ATTNRT_OUT_OF_MEMORY), b.getInt32(ATTNRT_INTERNAL));
  llvm::BasicBlock *failed = llvm::BasicBlock::Create(context, "failed", task);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(context, "done", task);
  b.CreateCondBr(
      b.CreateICmpNE(result, b.getInt32(halide_error_code_success)), failed,
      done);
  b.SetInsertPoint(failed);
  b.CreateStore(status, b.CreateStructGEP(closureType, closure, 2));
  b.CreateBr(done);
  b.SetInsertPoint(done);
  b.CreateRetVoid();
  return task;
}

void EntryBuilder::returnIfFailed(llvm::IRBuilder<> &b, llvm::Function *entry,
                                  llvm::Value *closure) {
  // Tasks that fail store their status; any one is reported, and nothing
  // after runs.
  llvm::Value *status =
      b.CreateLoad(i32, b.CreateStructGEP(closureType, closure, 2));
  llvm::BasicBlock *failed =
      llvm::BasicBlock::Create(context, "kernel_failed", entry);
  llvm::BasicBlock *next =
      llvm::BasicBlock::Create(context, "kernel_done", entry);
  b.CreateCondBr(b.CreateICmpNE(status, b.getInt32(ATTNRT_OK)), failed, next);
  b.SetInsertPoint(failed);
  b.CreateRet(status);
  b.SetInsertPoint(next);
}

void EntryBuilder::runKernels(llvm::IRBuilder<> &b, llvm::Function *entry,
                              llvm::Value *closure, llvm::Value *buffers) {
  llvm::Value *dims = entry->getArg(1);
  for (auto [number, kernel] : llvm::enumerate(spec.kernels)) {
    if (kernel.isByteCopy()) {
      // reshape, unsqueeze, copy: the same bytes in the same order.
      const HalideEntryArgument &from = kernel.arguments.at(0),
                                &to = kernel.arguments.at(1);
      auto pointer = [&](int buffer) {
        return b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, buffers, buffer));
      };
      b.CreateMemCpy(pointer(to.buffer), llvm::MaybeAlign(1),
                     pointer(from.buffer), llvm::MaybeAlign(1),
                     byteSize(b, dims, to));
      continue;
    }
    auto runRows = [&] {
      TaskSpace space = taskSpace(b, dims, kernel, /*decode=*/false);
      runTasks(
          b, entry, closure, kernel, number, Form::Rows,
          b.CreateMul(b.CreateMul(size(b, dims, kernel.batch), space.groups),
                      space.tiles));
    };
    if (kernel.decodeFunction.empty()) {
      runRows();
    } else if (kernel.function.empty()) {
      runDecode(b, entry, closure, kernel, number);
    } else {
      // Both forms: decode below decodeBelow queries.
      llvm::BasicBlock *decode =
          llvm::BasicBlock::Create(context, "decode", entry);
      llvm::BasicBlock *rows = llvm::BasicBlock::Create(context, "rows", entry);
      llvm::BasicBlock *ran = llvm::BasicBlock::Create(context, "ran", entry);
      b.CreateCondBr(b.CreateICmpULT(size(b, dims, kernel.queries),
                                     b.getInt64(kernel.decodeBelow)),
                     decode, rows);
      b.SetInsertPoint(decode);
      runDecode(b, entry, closure, kernel, number);
      b.CreateBr(ran);
      b.SetInsertPoint(rows);
      runRows();
      b.CreateBr(ran);
      b.SetInsertPoint(ran);
    }
    returnIfFailed(b, entry, closure);
  }
}

void EntryBuilder::runTasks(llvm::IRBuilder<> &b, llvm::Function *entry,
                            llvm::Value *closure,
                            const HalideEntryKernel &kernel, size_t number,
                            Form form, llvm::Value *count) {
  llvm::Function *task = buildTask(kernel, number, form);
  b.CreateCall(module.getOrInsertFunction(
                   "attnrt_parallel_for",
                   llvm::FunctionType::get(llvm::Type::getVoidTy(context),
                                           {ptr, i64, ptr, ptr}, false)),
               {entry->getArg(0), count, task, closure});
}

void EntryBuilder::runDecode(llvm::IRBuilder<> &b, llvm::Function *entry,
                             llvm::Value *closure,
                             const HalideEntryKernel &kernel, size_t number) {
  llvm::Value *invocation = entry->getArg(0), *dims = entry->getArg(1);
  TaskSpace space = taskSpace(b, dims, kernel, /*decode=*/true);
  llvm::Value *tasks = b.CreateMul(
      b.CreateMul(size(b, dims, kernel.batch), space.groups), space.tiles);
  // When the tasks are fewer than the threads, enough parts for every
  // thread, each at least two key tiles (the MLIR kernel's rule,
  // planKeySplit).
  llvm::Value *threads = b.CreateCall(
      module.getOrInsertFunction("attnrt_invocation_threads",
                                 llvm::FunctionType::get(i64, {ptr}, false)),
      {invocation});
  auto umax = [&](llvm::Value *x, llvm::Value *y) {
    return b.CreateSelect(b.CreateICmpUGT(x, y), x, y);
  };
  auto umin = [&](llvm::Value *x, llvm::Value *y) {
    return b.CreateSelect(b.CreateICmpULT(x, y), x, y);
  };
  llvm::Value *someTasks = umax(tasks, b.getInt64(1));
  llvm::Value *wanted = ceilDiv(b, threads, someTasks);
  llvm::Value *keyTiles =
      ceilDiv(b, size(b, dims, kernel.keys), b.getInt64(kernel.keyTile));
  llvm::Value *most =
      umax(b.CreateUDiv(keyTiles, b.getInt64(2)), b.getInt64(1));
  llvm::Value *parts = b.CreateSelect(b.CreateICmpULT(tasks, threads),
                                      umin(wanted, most), b.getInt64(1));
  // And at least enough that no part sees more than decodePartKeys keys,
  // whatever the threads: a part's scores then stay in L2.
  if (kernel.decodePartKeys > 0)
    parts = umax(parts, ceilDiv(b, size(b, dims, kernel.keys),
                                b.getInt64(kernel.decodePartKeys)));
  llvm::Value *rowFloats = partialRowFloats(b, dims, kernel);
  llvm::Value *bytes = b.getInt64(4);
  for (llvm::Value *factor :
       {parts, size(b, dims, kernel.batch), size(b, dims, kernel.heads),
        size(b, dims, kernel.queries), rowFloats})
    bytes = b.CreateMul(bytes, factor);
  bytes = umax(bytes, b.getInt64(4)); // Never none: null means no memory.
  llvm::Value *partials = b.CreateCall(
      module.getOrInsertFunction(
          "attnrt_allocate", llvm::FunctionType::get(ptr, {ptr, i64}, false)),
      {invocation, bytes});
  llvm::BasicBlock *outOfMemory =
      llvm::BasicBlock::Create(context, "partials_out_of_memory", entry);
  llvm::BasicBlock *allocated =
      llvm::BasicBlock::Create(context, "partials_allocated", entry);
  b.CreateCondBr(b.CreateIsNull(partials), outOfMemory, allocated);
  llvm::IRBuilder<>(outOfMemory).CreateRet(b.getInt32(ATTNRT_OUT_OF_MEMORY));
  b.SetInsertPoint(allocated);
  b.CreateStore(partials, b.CreateStructGEP(closureType, closure, 3));
  b.CreateStore(parts, b.CreateStructGEP(closureType, closure, 4));
  runTasks(b, entry, closure, kernel, number, Form::DecodePart,
           b.CreateMul(tasks, parts));
  returnIfFailed(b, entry, closure);
  runTasks(b, entry, closure, kernel, number, Form::Merge, tasks);
}

void EntryBuilder::build() {
  auto *entryType = llvm::FunctionType::get(i32, {ptr, ptr, ptr}, false);
  auto *entry = llvm::Function::Create(entryType,
                                       llvm::GlobalValue::ExternalLinkage,
                                       graph.name + "_entry", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", entry));
  // Halide's default error handler prints and aborts; a kernel must return
  // a status instead. The handler is process-wide (Halide's runtime symbols
  // are shared by every Halide pipeline in the process): this one ignores
  // the message, and the failing call's status says ATTNRT_INTERNAL or
  // ATTNRT_OUT_OF_MEMORY.
  auto *handlerType = llvm::FunctionType::get(
      llvm::Type::getVoidTy(context), {ptr, ptr}, false);
  auto *handler = llvm::Function::Create(
      handlerType, llvm::GlobalValue::InternalLinkage,
      graph.name + "_halide_error", module);
  llvm::IRBuilder<>(llvm::BasicBlock::Create(context, "entry", handler))
      .CreateRetVoid();
  b.CreateCall(module.getOrInsertFunction(
                   "halide_set_error_handler",
                   llvm::FunctionType::get(ptr, {ptr}, false)),
               {handler});
  installScratchAllocator(b);
  llvm::Value *buffers = withIntermediates(b, entry);
  llvm::Value *closure = b.CreateAlloca(closureType);
  b.CreateStore(entry->getArg(1), b.CreateStructGEP(closureType, closure, 0));
  b.CreateStore(buffers, b.CreateStructGEP(closureType, closure, 1));
  b.CreateStore(b.getInt32(ATTNRT_OK),
                b.CreateStructGEP(closureType, closure, 2));
  b.CreateStore(
      llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0)),
      b.CreateStructGEP(closureType, closure, 3));
  b.CreateStore(b.getInt64(1), b.CreateStructGEP(closureType, closure, 4));
  runKernels(b, entry, closure, buffers);
  b.CreateRet(b.getInt32(ATTNRT_OK));
}

llvm::Value *EntryBuilder::withIntermediates(llvm::IRBuilder<> &b,
                                             llvm::Function *entry) {
  if (spec.intermediates.empty())
    return entry->getArg(2);
  // The entry's buffers, then one from attnrt_allocate per intermediate.
  size_t external = graph.inputs.size() + graph.outputs.size();
  auto *arrayType =
      llvm::ArrayType::get(ptr, external + spec.intermediates.size());
  llvm::Value *buffers = b.CreateAlloca(arrayType);
  for (size_t n = 0; n < external; ++n)
    b.CreateStore(
        b.CreateLoad(ptr, b.CreateConstGEP1_64(ptr, entry->getArg(2), n)),
        b.CreateConstGEP1_64(ptr, buffers, n));
  llvm::FunctionCallee allocate = module.getOrInsertFunction(
      "attnrt_allocate", llvm::FunctionType::get(ptr, {ptr, i64}, false));
  llvm::BasicBlock *outOfMemory =
      llvm::BasicBlock::Create(context, "out_of_memory", entry);
  for (const HalideEntryArgument &intermediate : spec.intermediates) {
    llvm::Value *pointer =
        b.CreateCall(allocate, {entry->getArg(0),
                                byteSize(b, entry->getArg(1), intermediate)});
    b.CreateStore(pointer,
                  b.CreateConstGEP1_64(ptr, buffers, intermediate.buffer));
    llvm::BasicBlock *next =
        llvm::BasicBlock::Create(context, "allocated", entry);
    b.CreateCondBr(b.CreateIsNull(pointer), outOfMemory, next);
    b.SetInsertPoint(next);
  }
  llvm::IRBuilder<>(outOfMemory).CreateRet(b.getInt32(ATTNRT_OUT_OF_MEMORY));
  return buffers;
}

} // namespace

std::string emitHalideEntry(const Graph &graph, const HalideEntrySpec &spec,
                            const CpuTarget &target,
                            const std::string &manifest) {
  // An empty MLIR module: emitObject's translation, optimisation and object
  // emission then apply to what `extend` adds.
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::ModuleOp::create(mlir::UnknownLoc::get(&context));
  return emitObject(*module, target, nullptr, [&](llvm::Module &llvmModule) {
    EntryBuilder(llvmModule, graph, spec).build();
    addKernelDescriptor(llvmModule, graph, target.name, manifest);
  });
}

} // namespace attnc

namespace attnc {

std::string
writeArchive(const std::vector<std::pair<std::string, std::string>> &members) {
  std::vector<llvm::NewArchiveMember> list;
  for (const auto &[name, bytes] : members)
    list.emplace_back(
        llvm::MemoryBufferRef(llvm::StringRef(bytes), llvm::StringRef(name)));
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> written =
      llvm::writeArchiveToBuffer(list, llvm::SymtabWritingMode::NormalSymtab,
                                 llvm::object::Archive::K_GNU,
                                 /*Deterministic=*/true, /*Thin=*/false);
  if (!written)
    throw std::logic_error("cannot write the static library: " +
                           llvm::toString(written.takeError()));
  return std::string((*written)->getBuffer());
}

} // namespace attnc
