//===- KernelDescriptor.cpp - The attnrt_kernel a NAME.o exports ----------===//

#include "Codegen/KernelDescriptor.h"
#include "Codegen/KernelInterface.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <stdexcept>

namespace attnc {

namespace {

/// ATTNRT_ABI_VERSION of runtime/include/attnc/attnrt.h.
constexpr uint32_t kAbiVersion = 1;

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
};

/// attnrt_arg_info[]: {name, dtype, rank, dims}.
llvm::Constant *DescriptorBuilder::argInfos(const std::vector<ValueId> &ids,
                                            const std::string &kind) {
  auto *infoType = llvm::StructType::get(context, {ptr, i32, i32, ptr});
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
         llvm::ConstantInt::get(i32, static_cast<int>(type.dtype)),
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
  for (size_t k = 0; k < runtimeDims.size(); ++k)
    dimNames.push_back(string(runtimeDims[k], "dim" + std::to_string(k)));

  // attnrt_kernel, field by field (LLVM adds the C padding).
  auto *kernelType = llvm::StructType::get(
      context, {i32, ptr, i32, ptr, i32, ptr, i32, ptr, i32, ptr, ptr, ptr});
  llvm::Constant *fields[] = {
      llvm::ConstantInt::get(i32, kAbiVersion),
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
      entry};
  new llvm::GlobalVariable(module, kernelType, /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage,
                           llvm::ConstantStruct::get(kernelType, fields),
                           graph.name + "_kernel");
}

} // namespace

void addKernelDescriptor(llvm::Module &module, const Graph &graph,
                         const std::string &target,
                         const std::string &manifest) {
  DescriptorBuilder(module, graph).build(target, manifest);
}

} // namespace attnc
