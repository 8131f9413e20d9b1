//===- KernelDescriptor.cpp - The attnrt_kernel a NAME.o exports ----------===//

#include "Codegen/KernelDescriptor.h"
#include "Codegen/KernelInterface.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <attnc/attnrt.h>

#include <cstddef>
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
              sizeof(attnrt_kernel) == 112);

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

  void build(const std::string &target, const std::string &manifest);

private:
  llvm::Module &module;
  const Graph &graph;
  llvm::LLVMContext &context;
  llvm::Type *i32, *i64, *ptr;

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
      return llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0));
    auto *type = llvm::ArrayType::get(ptr, items.size());
    return privateConstant(llvm::ConstantArray::get(type, items), suffix);
  }
  llvm::Constant *argInfos(const std::vector<ValueId> &ids,
                           const std::string &kind);
  llvm::Constant *divisibilities(const std::vector<SizeDivisibility> &rules);
};

/// attnrt_divisibility[]: {multiple, divisor, what}.
llvm::Constant *DescriptorBuilder::divisibilities(
    const std::vector<SizeDivisibility> &rules) {
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
                   string(rule.what, "divisibility" +
                                         std::to_string(constants.size()))}));
  }
  if (constants.empty())
    return llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0));
  return privateConstant(
      llvm::ConstantArray::get(llvm::ArrayType::get(ruleType, constants.size()),
                               constants),
      "divisibilities");
}

/// attnrt_arg_info[]: {name, dtype, rank, dims}.
llvm::Constant *DescriptorBuilder::argInfos(const std::vector<ValueId> &ids,
                                            const std::string &kind) {
  auto *infoType = llvm::StructType::get(context, {ptr, i32, i32, ptr});
  checkStructLayout(module, infoType, "attnrt_arg_info",
                    {offsetof(attnrt_arg_info, name),
                     offsetof(attnrt_arg_info, dtype),
                     offsetof(attnrt_arg_info, rank),
                     offsetof(attnrt_arg_info, dims)},
                    sizeof(attnrt_arg_info));
  std::vector<llvm::Constant *> infos;
  for (size_t n = 0; n < ids.size(); ++n) {
    const TensorType &type = graph.type(ids[n]);
    std::string suffix = kind + std::to_string(n);
    std::vector<int64_t> dims = abiDims(graph, type.shape);
    llvm::Constant *dimArray =
        dims.empty() ? llvm::ConstantPointerNull::get(
                           llvm::PointerType::get(context, 0))
                     : privateConstant(
                           llvm::ConstantDataArray::get(
                               context, llvm::ArrayRef<int64_t>(dims)),
                           suffix + ".dims");
    infos.push_back(llvm::ConstantStruct::get(
        infoType,
        {string(graph.value(ids[n]).name, suffix + ".name"),
         llvm::ConstantInt::get(i32, abiDType(type.dtype)),
         llvm::ConstantInt::get(i32, dims.size()), dimArray}));
  }
  if (infos.empty())
    return llvm::ConstantPointerNull::get(llvm::PointerType::get(context, 0));
  return privateConstant(
      llvm::ConstantArray::get(llvm::ArrayType::get(infoType, infos.size()),
                               infos),
      kind);
}

void DescriptorBuilder::build(const std::string &target,
                              const std::string &manifest) {
  llvm::Function *entry = module.getFunction(graph.name + "_entry");
  if (!entry)
    throw std::logic_error("addKernelDescriptor: no " + graph.name +
                           "_entry in the module");
  std::vector<llvm::Constant *> dimNames;
  std::vector<std::string> runtimeDims = graph.runtimeDims();
  std::vector<SizeDivisibility> rules = graph.divisibilities();
  for (size_t k = 0; k < runtimeDims.size(); ++k)
    dimNames.push_back(string(runtimeDims[k], "dim" + std::to_string(k)));

  // attnrt_kernel, field by field (LLVM adds the C padding).
  auto *kernelType = llvm::StructType::get(
      context,
      {i32, ptr, i32, ptr, i32, ptr, i32, ptr, i32, ptr, ptr, ptr, i32, ptr});
  checkStructLayout(module, kernelType, "attnrt_kernel",
                    {offsetof(attnrt_kernel, abi_version),
                     offsetof(attnrt_kernel, name),
                     offsetof(attnrt_kernel, num_dims),
                     offsetof(attnrt_kernel, dim_names),
                     offsetof(attnrt_kernel, num_inputs),
                     offsetof(attnrt_kernel, inputs),
                     offsetof(attnrt_kernel, num_outputs),
                     offsetof(attnrt_kernel, outputs),
                     offsetof(attnrt_kernel, alignment),
                     offsetof(attnrt_kernel, target),
                     offsetof(attnrt_kernel, manifest),
                     offsetof(attnrt_kernel, entry),
                     offsetof(attnrt_kernel, num_divisibilities),
                     offsetof(attnrt_kernel, divisibilities)},
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
      llvm::ConstantInt::get(i32, 1), // The kernels accept any alignment.
      string(target, "target"),
      string(manifest, "manifest"),
      entry,
      llvm::ConstantInt::get(i32, rules.size()),
      divisibilities(rules)};
  new llvm::GlobalVariable(module, kernelType, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantStruct::get(kernelType, fields),
                           graph.name + "_kernel");
}

} // namespace

void checkStructLayout(const llvm::Module &module, llvm::StructType *type,
                       const char *cName,
                       std::initializer_list<uint64_t> offsets,
                       uint64_t size) {
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
  DescriptorBuilder(module, graph).build(target, manifest);
}

} // namespace attnc
