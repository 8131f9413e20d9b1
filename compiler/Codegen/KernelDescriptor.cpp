//===- KernelDescriptor.cpp - The attnrt_kernel a NAME.o exports ----------===//

#include "Codegen/KernelDescriptor.h"
#include "Codegen/GpuKernels.h"
#include "Codegen/KernelInterface.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <attnc/attnrt.h>

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <type_traits>

namespace attnc {

namespace {

// The descriptor's C types (runtime/include/attnc/attnrt.h), as the LLVM
// types below spell them: i32 for uint32_t, int32_t and attnrt_dtype, ptr
// for every pointer. The offsets and sizes are those of the 64-bit hosts
// attnc runs on and targets; build() checks them against the target's data
// layout too.
template <typename T> constexpr bool kIsPointer = std::is_pointer_v<T>;
static_assert(std::is_same_v<decltype(attnrt_kernel::abi_version), uint32_t>);
static_assert(kIsPointer<decltype(attnrt_kernel::name)>);
static_assert(std::is_same_v<decltype(attnrt_kernel::num_dims), int32_t>);
static_assert(kIsPointer<decltype(attnrt_kernel::dim_names)>);
static_assert(std::is_same_v<decltype(attnrt_kernel::num_inputs), int32_t>);
static_assert(kIsPointer<decltype(attnrt_kernel::inputs)>);
static_assert(std::is_same_v<decltype(attnrt_kernel::num_outputs), int32_t>);
static_assert(kIsPointer<decltype(attnrt_kernel::outputs)>);
static_assert(std::is_same_v<decltype(attnrt_kernel::alignment), uint32_t>);
static_assert(kIsPointer<decltype(attnrt_kernel::target)>);
static_assert(kIsPointer<decltype(attnrt_kernel::manifest)>);
static_assert(std::is_same_v<decltype(attnrt_kernel::entry), attnrt_entry_fn>);
// NAME_entry(invocation, dims, buffers) -> i32, as the backends emit it.
static_assert(std::is_same_v<attnrt_entry_fn,
                             int32_t (*)(attnrt_invocation *, const int64_t *,
                                         void *const *)>);
static_assert(
    std::is_same_v<decltype(attnrt_kernel::num_divisibilities), int32_t>);
static_assert(kIsPointer<decltype(attnrt_kernel::divisibilities)>);
static_assert(offsetof(attnrt_kernel, abi_version) == 0 &&
              offsetof(attnrt_kernel, name) == 8 &&
              offsetof(attnrt_kernel, num_dims) == 16 &&
              offsetof(attnrt_kernel, dim_names) == 24 &&
              offsetof(attnrt_kernel, num_inputs) == 32 &&
              offsetof(attnrt_kernel, inputs) == 40 &&
              offsetof(attnrt_kernel, num_outputs) == 48 &&
              offsetof(attnrt_kernel, outputs) == 56 &&
              offsetof(attnrt_kernel, alignment) == 64 &&
              offsetof(attnrt_kernel, target) == 72 &&
              offsetof(attnrt_kernel, manifest) == 80 &&
              offsetof(attnrt_kernel, entry) == 88 &&
              offsetof(attnrt_kernel, num_divisibilities) == 96 &&
              offsetof(attnrt_kernel, divisibilities) == 104 &&
              offsetof(attnrt_kernel, cuda) == 112 &&
              sizeof(attnrt_kernel) == 120);
static_assert(kIsPointer<decltype(attnrt_kernel::cuda)>);

static_assert(offsetof(attnrt_cuda_function, name) == 0 &&
              offsetof(attnrt_cuda_function, num_params) == 8 &&
              offsetof(attnrt_cuda_function, params) == 16 &&
              offsetof(attnrt_cuda_function, block_threads) == 24 &&
              offsetof(attnrt_cuda_function, block_rows) == 28 &&
              offsetof(attnrt_cuda_function, row_flags) == 32 &&
              sizeof(attnrt_cuda_function) == 40);
static_assert(offsetof(attnrt_cuda_attention, merge) == 40 &&
              offsetof(attnrt_cuda_attention, tensor_core) == 80 &&
              offsetof(attnrt_cuda_attention, size_sources) == 120 &&
              offsetof(attnrt_cuda_attention, split_target_warps) == 176 &&
              offsetof(attnrt_cuda_attention, split_min_keys) == 184 &&
              offsetof(attnrt_cuda_attention, workspace_row_bytes) == 192 &&
              sizeof(attnrt_cuda_attention) == 208);
static_assert(offsetof(attnrt_cuda_code, ptx) == 0 &&
              offsetof(attnrt_cuda_code, num_attentions) == 8 &&
              offsetof(attnrt_cuda_code, attentions) == 16 &&
              offsetof(attnrt_cuda_code, num_functions) == 24 &&
              offsetof(attnrt_cuda_code, functions) == 32 &&
              sizeof(attnrt_cuda_code) == 40);

static_assert(
    std::is_same_v<decltype(attnrt_divisibility::multiple), int64_t> &&
    std::is_same_v<decltype(attnrt_divisibility::divisor), int64_t> &&
    kIsPointer<decltype(attnrt_divisibility::what)>);
static_assert(offsetof(attnrt_divisibility, multiple) == 0 &&
              offsetof(attnrt_divisibility, divisor) == 8 &&
              offsetof(attnrt_divisibility, what) == 16 &&
              sizeof(attnrt_divisibility) == 24);

static_assert(kIsPointer<decltype(attnrt_arg_info::name)>);
static_assert(std::is_same_v<decltype(attnrt_arg_info::dtype), attnrt_dtype>);
static_assert(sizeof(attnrt_dtype) == sizeof(int32_t));
static_assert(std::is_same_v<decltype(attnrt_arg_info::rank), int32_t>);
static_assert(std::is_same_v<decltype(attnrt_arg_info::dims), const int64_t *>);
static_assert(offsetof(attnrt_arg_info, name) == 0 &&
              offsetof(attnrt_arg_info, dtype) == 8 &&
              offsetof(attnrt_arg_info, rank) == 12 &&
              offsetof(attnrt_arg_info, dims) == 16 &&
              sizeof(attnrt_arg_info) == 24);

// DType and attnrt_dtype number the dtypes alike (`attnc run` converts one
// to the other with a cast); the descriptor maps them with abiDType.
static_assert(int(DType::F32) == ATTNRT_F32 && int(DType::F16) == ATTNRT_F16 &&
              int(DType::BF16) == ATTNRT_BF16 &&
              int(DType::I32) == ATTNRT_I32 && int(DType::Bool) == ATTNRT_BOOL);

attnrt_dtype abiDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return ATTNRT_F32;
  case DType::F16:
    return ATTNRT_F16;
  case DType::BF16:
    return ATTNRT_BF16;
  case DType::I32:
    return ATTNRT_I32;
  case DType::Bool:
    return ATTNRT_BOOL;
  }
  throw std::logic_error("abiDType: unknown dtype");
}

class DescriptorBuilder {
public:
  DescriptorBuilder(llvm::Module &module, const Graph &graph)
      : module(module), graph(graph), context(module.getContext()),
        i32(llvm::Type::getInt32Ty(context)),
        i64(llvm::Type::getInt64Ty(context)),
        ptr(llvm::PointerType::get(context, 0)) {}

  void build(const std::string &target, const std::string &manifest,
             const GpuCompiled *cuda);

private:
  llvm::Module &module;
  const Graph &graph;
  llvm::LLVMContext &context;
  llvm::Type *i32, *i64, *ptr;

  llvm::Constant *null() {
    return llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0));
  }
  llvm::Constant *privateConstant(llvm::Constant *value,
                                  const std::string &suffix) {
    return new llvm::GlobalVariable(
        module, value->getType(), /*isConstant=*/true,
        llvm::GlobalValue::PrivateLinkage, value, graph.name + "." + suffix);
  }
  llvm::Constant *string(const std::string &text, const std::string &suffix) {
    return privateConstant(
        llvm::ConstantDataArray::getString(context, text), suffix);
  }
  llvm::Constant *pointerArray(const std::vector<llvm::Constant *> &items,
                               const std::string &suffix) {
    if (items.empty())
      return null();
    auto *type = llvm::ArrayType::get(ptr, items.size());
    return privateConstant(llvm::ConstantArray::get(type, items), suffix);
  }
  llvm::Constant *argInfos(const std::vector<ValueId> &ids,
                           const std::string &kind);
  llvm::Constant *divisibilities(const std::vector<SizeDivisibility> &rules);
  /// The argument called `name`: its number among the inputs, then the
  /// outputs.
  int32_t argumentNumber(const std::string &name) const {
    int32_t number = 0;
    for (const std::vector<ValueId> *ids : {&graph.inputs, &graph.outputs})
      for (ValueId id : *ids) {
        if (graph.value(id).name == name)
          return number;
        ++number;
      }
    throw std::logic_error("CUDA kernel parameter " + name +
                           " is no argument of the graph");
  }
  /// A tensor a CUDA attention kernel's params or sizes name: its number
  /// among `tensors` (the op's, with a host entry), else among the graph's
  /// arguments.
  int32_t tensorNumber(const std::vector<std::string> &tensors,
                       const std::string &name) const {
    if (tensors.empty())
      return argumentNumber(name);
    auto found = std::find(tensors.begin(), tensors.end(), name);
    if (found == tensors.end())
      throw std::logic_error("CUDA kernel parameter " + name +
                             " is no tensor of its attention op");
    return found - tensors.begin();
  }
  llvm::Constant *cudaCode(const GpuCompiled &compiled);
  llvm::Constant *cudaFunction(const GpuKernel *kernel,
                               const std::string &suffix,
                               const std::vector<std::string> &tensors);
  llvm::StructType *cudaFunctionType() {
    return llvm::StructType::get(context, {ptr, i32, ptr, i32, i32, i32});
  }
};

/// The launch sizes of attnrt_cuda_size, in its order.
const char *const kCudaSizes[] = {"B", "Hq", "Hkv", "S",
                                  "T", "Dk", "Dv",  "splits"};
static_assert(std::size(kCudaSizes) == ATTNRT_CUDA_NUM_SIZES);

/// attnrt_cuda_function: a null name when there is no `kernel`.
llvm::Constant *
DescriptorBuilder::cudaFunction(const GpuKernel *kernel,
                                const std::string &suffix,
                                const std::vector<std::string> &tensors) {
  llvm::StructType *type = cudaFunctionType();
  if (!kernel)
    return llvm::Constant::getNullValue(type);
  // A function the entry launches has words, no params or rows.
  bool launchedByEntry = kernel->function >= 0;
  if (kernel->block.size() != 3 || kernel->block[1] != 1 ||
      kernel->block[2] != 1 || (!launchedByEntry && kernel->blockRows < 1))
    throw std::logic_error("CUDA kernel " + kernel->name +
                           ": a launch the descriptor cannot state");
  if (launchedByEntry)
    return llvm::ConstantStruct::get(
        type, {string(kernel->name, suffix + ".name"),
               llvm::ConstantInt::get(i32, kernel->words), null(),
               llvm::ConstantInt::get(i32, kernel->block[0]),
               llvm::ConstantInt::get(i32, 1), llvm::ConstantInt::get(i32, 0)});
  // Each parameter: argument n (inputs, then outputs), the workspace or a
  // size, as attnrt_cuda_function::params encodes them.
  std::vector<int32_t> params;
  for (const std::string &param : kernel->params) {
    if (param == "workspace") {
      params.push_back(ATTNRT_CUDA_WORKSPACE);
      continue;
    }
    auto size = std::find(std::begin(kCudaSizes), std::end(kCudaSizes), param);
    if (size != std::end(kCudaSizes)) {
      params.push_back(ATTNRT_CUDA_SIZE(size - std::begin(kCudaSizes)));
      continue;
    }
    params.push_back(tensorNumber(tensors, param));
  }
  return llvm::ConstantStruct::get(
      type, {string(kernel->name, suffix + ".name"),
             llvm::ConstantInt::get(i32, params.size()),
             privateConstant(llvm::ConstantDataArray::get(
                                 context, llvm::ArrayRef<int32_t>(params)),
                             suffix + ".params"),
             llvm::ConstantInt::get(i32, kernel->block[0]),
             llvm::ConstantInt::get(i32, kernel->blockRows),
             llvm::ConstantInt::get(i32, kernel->rowFlags)});
}

/// attnrt_cuda_code: the PTX and, per attention op, its functions.
llvm::Constant *DescriptorBuilder::cudaCode(const GpuCompiled &compiled) {
  llvm::StructType *functionType = cudaFunctionType();
  checkStructLayout(module, functionType, "attnrt_cuda_function",
                    {offsetof(attnrt_cuda_function, name),
                     offsetof(attnrt_cuda_function, num_params),
                     offsetof(attnrt_cuda_function, params),
                     offsetof(attnrt_cuda_function, block_threads),
                     offsetof(attnrt_cuda_function, block_rows),
                     offsetof(attnrt_cuda_function, row_flags)},
                    sizeof(attnrt_cuda_function));
  auto *pairType = llvm::ArrayType::get(i32, 2);
  auto *sourcesType = llvm::ArrayType::get(pairType, ATTNRT_CUDA_SPLITS);
  auto *attentionType = llvm::StructType::get(
      context, {functionType, functionType, functionType, sourcesType, i64, i64,
                llvm::ArrayType::get(i64, 2)});
  checkStructLayout(module, attentionType, "attnrt_cuda_attention",
                    {offsetof(attnrt_cuda_attention, attention),
                     offsetof(attnrt_cuda_attention, merge),
                     offsetof(attnrt_cuda_attention, tensor_core),
                     offsetof(attnrt_cuda_attention, size_sources),
                     offsetof(attnrt_cuda_attention, split_target_warps),
                     offsetof(attnrt_cuda_attention, split_min_keys),
                     offsetof(attnrt_cuda_attention, workspace_row_bytes)},
                    sizeof(attnrt_cuda_attention));
  auto *codeType = llvm::StructType::get(context, {ptr, i32, ptr, i32, ptr});
  checkStructLayout(module, codeType, "attnrt_cuda_code",
                    {offsetof(attnrt_cuda_code, ptx),
                     offsetof(attnrt_cuda_code, num_attentions),
                     offsetof(attnrt_cuda_code, attentions),
                     offsetof(attnrt_cuda_code, num_functions),
                     offsetof(attnrt_cuda_code, functions)},
                    sizeof(attnrt_cuda_code));

  auto find = [&](const std::string &name) -> const GpuKernel * {
    for (const GpuKernel &kernel : compiled.kernels)
      if (!name.empty() && kernel.name == name)
        return &kernel;
    return nullptr;
  };
  std::vector<llvm::Constant *> attentions;
  for (const GpuKernel &kernel : compiled.kernels) {
    if (kernel.merge.empty())
      continue; // a merge or tensor-core kernel, stated with its attention
    std::string suffix = "cuda" + std::to_string(attentions.size());
    std::vector<llvm::Constant *> sources;
    for (int size = 0; size < ATTNRT_CUDA_SPLITS; ++size) {
      auto source = std::find_if(
          kernel.sizes.begin(), kernel.sizes.end(),
          [&](const auto &entry) { return entry.first == kCudaSizes[size]; });
      if (source == kernel.sizes.end())
        throw std::logic_error("CUDA kernel " + kernel.name +
                               ": no source for " + kCudaSizes[size]);
      sources.push_back(llvm::ConstantArray::get(
          pairType,
          {llvm::ConstantInt::get(
               i32, tensorNumber(kernel.tensors, source->second.first)),
           llvm::ConstantInt::get(i32, source->second.second)}));
    }
    if (kernel.workspaceRowBytes.size() != 2 || !find(kernel.merge))
      throw std::logic_error("CUDA kernel " + kernel.name +
                             ": no workspace or merge");
    KeySplitRule split = keySplitRule(kernel);
    attentions.push_back(llvm::ConstantStruct::get(
        attentionType,
        {cudaFunction(&kernel, suffix, kernel.tensors),
         cudaFunction(find(kernel.merge), suffix + ".merge", kernel.tensors),
         cudaFunction(find(kernel.tensorCore), suffix + ".tensor_core",
                      kernel.tensors),
         llvm::ConstantArray::get(sourcesType, sources),
         llvm::ConstantInt::get(i64, split.targetRows),
         llvm::ConstantInt::get(i64, split.minKeys),
         llvm::ConstantDataArray::get(
             context, llvm::ArrayRef<int64_t>(kernel.workspaceRowBytes))}));
  }
  // The functions the entry launches, in their numbers' order.
  std::vector<llvm::Constant *> functions;
  for (const GpuKernel &kernel : compiled.kernels) {
    if (kernel.function < 0)
      continue;
    if (kernel.function != int64_t(functions.size()))
      throw std::logic_error("CUDA function " + kernel.name + " out of order");
    functions.push_back(cudaFunction(
        &kernel, "cuda.function" + std::to_string(functions.size()), {}));
  }
  if (attentions.empty() && !compiled.hasEntry)
    throw std::logic_error("CUDA code without attention kernels");
  auto table = [&](llvm::Type *type, std::vector<llvm::Constant *> &items,
                   const std::string &suffix) {
    return items.empty()
               ? null()
               : privateConstant(
                     llvm::ConstantArray::get(
                         llvm::ArrayType::get(type, items.size()), items),
                     suffix);
  };
  return privateConstant(
      llvm::ConstantStruct::get(
          codeType, {string(compiled.ptx, "ptx"),
                     llvm::ConstantInt::get(i32, attentions.size()),
                     table(attentionType, attentions, "cuda.attentions"),
                     llvm::ConstantInt::get(i32, functions.size()),
                     table(functionType, functions, "cuda.functions")}),
      "cuda");
}

/// attnrt_divisibility[]: {multiple, divisor, what}.
llvm::Constant *
DescriptorBuilder::divisibilities(const std::vector<SizeDivisibility> &rules) {
  auto *ruleType = llvm::StructType::get(context, {i64, i64, ptr});
  checkStructLayout(module, ruleType, "attnrt_divisibility",
                    {offsetof(attnrt_divisibility, multiple),
                     offsetof(attnrt_divisibility, divisor),
                     offsetof(attnrt_divisibility, what)},
                    sizeof(attnrt_divisibility));
  std::vector<llvm::Constant *> constants;
  for (const SizeDivisibility &rule : rules) {
    std::vector<int64_t> sizes =
        abiDims(graph, Shape{rule.multiple, rule.divisor});
    constants.push_back(llvm::ConstantStruct::get(
        ruleType, {llvm::ConstantInt::get(i64, sizes[0]),
                   llvm::ConstantInt::get(i64, sizes[1]),
                   string(rule.what,
                          "divisibility" + std::to_string(constants.size()))}));
  }
  if (constants.empty())
    return null();
  return privateConstant(
      llvm::ConstantArray::get(llvm::ArrayType::get(ruleType, constants.size()),
                               constants),
      "divisibilities");
}

/// attnrt_arg_info[]: {name, dtype, rank, dims}.
llvm::Constant *DescriptorBuilder::argInfos(const std::vector<ValueId> &ids,
                                            const std::string &kind) {
  auto *infoType = llvm::StructType::get(context, {ptr, i32, i32, ptr});
  checkStructLayout(
      module, infoType, "attnrt_arg_info",
      {offsetof(attnrt_arg_info, name), offsetof(attnrt_arg_info, dtype),
       offsetof(attnrt_arg_info, rank), offsetof(attnrt_arg_info, dims)},
      sizeof(attnrt_arg_info));
  std::vector<llvm::Constant *> infos;
  for (size_t n = 0; n < ids.size(); ++n) {
    const TensorType &type = graph.type(ids[n]);
    std::string suffix = kind + std::to_string(n);
    std::vector<int64_t> dims = abiDims(graph, type.shape);
    llvm::Constant *dimArray =
        dims.empty()
            ? null()
            : privateConstant(llvm::ConstantDataArray::get(
                                  context, llvm::ArrayRef<int64_t>(dims)),
                              suffix + ".dims");
    infos.push_back(llvm::ConstantStruct::get(
        infoType, {string(graph.value(ids[n]).name, suffix + ".name"),
                   llvm::ConstantInt::get(i32, abiDType(type.dtype)),
                   llvm::ConstantInt::get(i32, dims.size()), dimArray}));
  }
  if (infos.empty())
    return null();
  return privateConstant(
      llvm::ConstantArray::get(llvm::ArrayType::get(infoType, infos.size()),
                               infos),
      kind);
}

void DescriptorBuilder::build(const std::string &target,
                              const std::string &manifest,
                              const GpuCompiled *cuda) {
  // A CPU kernel's code is its entry; a CUDA kernel's its PTX.
  llvm::Constant *entry = module.getFunction(graph.name + "_entry");
  if (cuda && !cuda->hasEntry)
    entry = null();
  else if (!entry)
    throw std::logic_error("addKernelDescriptor: no " + graph.name +
                           "_entry in the module");
  std::vector<llvm::Constant *> dimNames;
  std::vector<std::string> runtimeDims = graph.runtimeDims();
  std::vector<SizeDivisibility> rules = graph.divisibilities();
  for (size_t k = 0; k < runtimeDims.size(); ++k)
    dimNames.push_back(string(runtimeDims[k], "dim" + std::to_string(k)));

  // attnrt_kernel, field by field (LLVM adds the C padding).
  auto *kernelType =
      llvm::StructType::get(context, {i32, ptr, i32, ptr, i32, ptr, i32, ptr,
                                      i32, ptr, ptr, ptr, i32, ptr, ptr});
  checkStructLayout(
      module, kernelType, "attnrt_kernel",
      {offsetof(attnrt_kernel, abi_version), offsetof(attnrt_kernel, name),
       offsetof(attnrt_kernel, num_dims), offsetof(attnrt_kernel, dim_names),
       offsetof(attnrt_kernel, num_inputs), offsetof(attnrt_kernel, inputs),
       offsetof(attnrt_kernel, num_outputs), offsetof(attnrt_kernel, outputs),
       offsetof(attnrt_kernel, alignment), offsetof(attnrt_kernel, target),
       offsetof(attnrt_kernel, manifest), offsetof(attnrt_kernel, entry),
       offsetof(attnrt_kernel, num_divisibilities),
       offsetof(attnrt_kernel, divisibilities), offsetof(attnrt_kernel, cuda)},
      sizeof(attnrt_kernel));
  llvm::Constant *fields[] = {
      llvm::ConstantInt::get(i32, ATTNRT_ABI_VERSION),
      string(graph.name, "name"),
      llvm::ConstantInt::get(i32, runtimeDims.size()),
      pointerArray(dimNames, "dim_names"),
      llvm::ConstantInt::get(i32, graph.inputs.size()),
      argInfos(graph.inputs, "input"),
      llvm::ConstantInt::get(i32, graph.outputs.size()),
      argInfos(graph.outputs, "output"),
      // CPU kernels accept any alignment; the tensor-core kernel reads K and
      // V 16 bytes at a time.
      llvm::ConstantInt::get(i32, cuda ? kCudaTensorAlignment : 1),
      string(target, "target"), string(manifest, "manifest"), entry,
      llvm::ConstantInt::get(i32, rules.size()), divisibilities(rules),
      cuda ? cudaCode(*cuda) : null()};
  new llvm::GlobalVariable(module, kernelType, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantStruct::get(kernelType, fields),
                           graph.name + "_kernel");
}

} // namespace

void checkStructLayout(const llvm::Module &module, llvm::StructType *type,
                       const char *cName,
                       std::initializer_list<uint64_t> offsets, uint64_t size) {
  const llvm::StructLayout *layout =
      module.getDataLayout().getStructLayout(type);
  bool same = type->getNumElements() == offsets.size() &&
              layout->getSizeInBytes() == size;
  for (unsigned field = 0; same && field < offsets.size(); ++field)
    same = layout->getElementOffset(field) == offsets.begin()[field];
  if (!same)
    throw std::logic_error(std::string("the LLVM type emitted for ") + cName +
                           " does not match its C layout on target " +
                           module.getTargetTriple());
}

void addKernelDescriptor(llvm::Module &module, const Graph &graph,
                         const std::string &target,
                         const std::string &manifest) {
  DescriptorBuilder(module, graph).build(target, manifest, nullptr);
}

void addCudaKernelDescriptor(llvm::Module &module, const Graph &graph,
                             const std::string &target,
                             const std::string &manifest,
                             const GpuCompiled &compiled) {
  DescriptorBuilder(module, graph).build(target, manifest, &compiled);
}

} // namespace attnc
