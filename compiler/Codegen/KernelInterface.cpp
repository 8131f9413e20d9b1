//===- KernelInterface.cpp - NAME.h and NAME.json of a compiled graph -----===//

#include "Codegen/KernelInterface.h"

#include "Codegen/GpuKernels.h"

#include <attnc/attnrt.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace attnc {

std::vector<int64_t> abiDims(const Graph &graph, const Shape &shape) {
  std::vector<std::string> runtime = graph.runtimeDims();
  std::vector<int64_t> dims;
  for (const Dim &dim : shape) {
    if (dim.isFixed()) {
      dims.push_back(dim.size);
      continue;
    }
    auto it = std::find(runtime.begin(), runtime.end(), dim.symbol);
    dims.push_back(-(int64_t(it - runtime.begin()) + 1));
  }
  return dims;
}

namespace {

/// "f32[B, 12, S, 64]" for the comments beside each argument.
std::string describe(const Graph &graph, ValueId id) {
  return graph.value(id).name + ": " + graph.type(id).str();
}

} // namespace

std::string kernelHeader(const Graph &graph, bool cuda) {
  const std::string &name = graph.name;
  std::string guard = "ATTNC_KERNEL_" + name + "_H";
  for (char &c : guard)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::ostringstream out;
  out << "/* " << name << ".h: written by attnc compile from " << graph.file
      << ". Link " << name << ".o and libattnrt. */\n"
      << "#ifndef " << guard << "\n#define " << guard << "\n\n"
      << "#include <attnc/attnrt.h>\n\n"
      << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  std::vector<std::string> runtime = graph.runtimeDims();
  out << "/* Run-time sizes, bound from the tensors' shapes:";
  if (runtime.empty())
    out << " none";
  for (size_t i = 0; i < runtime.size(); ++i)
    out << (i ? ", " : " ") << runtime[i];
  out << ".\n * Inputs, in this order:\n";
  for (ValueId id : graph.inputs)
    out << " *   " << describe(graph, id) << "\n";
  out << " * Outputs, in this order:\n";
  for (ValueId id : graph.outputs)
    out << " *   " << describe(graph, id) << "\n";
  out << " */\n"
      << "extern const attnrt_kernel " << name << "_kernel;\n\n";
  if (cuda)
    out << "/* A CUDA kernel: create the context with\n"
        << " * attnrt_context_create_on_device(options, ATTNRT_DEVICE_CUDA, "
           "ordinal, &context)\n"
        << " * and give it device pointers. */\n\n";
  else
    out << "/* The generated entry point; call it through attnrt_invoke, "
           "which\n"
        << " * validates the tensors first. */\n"
        << "int32_t " << name
        << "_entry(attnrt_invocation *invocation, const int64_t *dims,\n"
        << "        void *const *buffers);\n\n";
  out << "/* Runs the kernel on `context`: inputs[" << graph.inputs.size()
      << "], outputs[" << graph.outputs.size() << "]. */\n"
      << "static inline attnrt_status " << name
      << "(attnrt_context *context, const attnrt_tensor *inputs,\n"
      << "    attnrt_tensor *outputs) {\n"
      << "  return attnrt_invoke(context, &" << name << "_kernel, inputs, "
      << graph.inputs.size() << ", outputs, " << graph.outputs.size()
      << ");\n}\n\n";
  if (cuda)
    out << "/* Queues the kernel on a CUDA stream (a CUstream) and returns. "
           "*/\n"
        << "static inline attnrt_status " << name
        << "_on_stream(attnrt_context *context,\n"
        << "    const attnrt_tensor *inputs, attnrt_tensor *outputs, "
           "void *stream) {\n"
        << "  return attnrt_invoke_on_stream(context, &" << name
        << "_kernel, inputs, " << graph.inputs.size() << ", outputs, "
        << graph.outputs.size() << ", stream);\n}\n\n";
  out << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n"
      << "#endif /* " << guard << " */\n";
  return out.str();
}

namespace {

using json = nlohmann::ordered_json;

/// What every manifest says: the graph, backend and `target`, the ABI
/// version, run-time dims, divisibilities and arguments.
json interfaceManifest(const Graph &graph, const std::string &backend,
                       json target) {
  auto size = [](const Dim &dim) {
    return dim.isFixed() ? json(dim.size) : json(dim.symbol);
  };
  auto arguments = [&](const std::vector<ValueId> &ids) {
    json list = json::array();
    for (ValueId id : ids) {
      json dims = json::array();
      for (const Dim &dim : graph.type(id).shape)
        dims.push_back(size(dim));
      list.push_back({{"name", graph.value(id).name},
                      {"dtype", dtypeName(graph.type(id).dtype)},
                      {"dims", dims}});
    }
    return list;
  };
  json divisibilities = json::array();
  for (const SizeDivisibility &rule : graph.divisibilities())
    divisibilities.push_back({{"multiple", size(rule.multiple)},
                              {"divisor", size(rule.divisor)},
                              {"what", rule.what}});
  return {{"attnc_manifest", 1},
          {"name", graph.name},
          {"graph", graph.file},
          {"backend", backend},
          {"target", std::move(target)},
          {"abi_version", ATTNRT_ABI_VERSION},
          {"runtime_dims", graph.runtimeDims()},
          {"divisibilities", divisibilities},
          {"inputs", arguments(graph.inputs)},
          {"outputs", arguments(graph.outputs)}};
}

} // namespace

std::string kernelManifest(const Graph &graph, const std::string &backend,
                           const CpuTarget &target,
                           const AttentionSchedule &schedule) {
  // How bf16 products run, which `host` decides by the CPU: on AMX tiles
  // (prefill), by vdpbf16ps, or converted to f32.
  json manifest = interfaceManifest(
      graph, backend,
      {{"name", target.name},
       {"cpu", target.cpu},
       {"matrix_tiles", matrixTilesName(schedule.matrixTiles)},
       {"bf16_dot", schedule.bf16Dot}});
  manifest["schedule"] = json::parse(schedule.toJson());
  manifest["schedule_source"] = schedule.source;
  return manifest.dump(2) + "\n";
}

std::string cudaKernelManifest(const Graph &graph, const std::string &target,
                               const std::string &chip,
                               const GpuCompiled &compiled) {
  json manifest =
      interfaceManifest(graph, "mlir", {{"name", target}, {"chip", chip}});
  manifest["ptx"] = graph.name + ".ptx";
  manifest["object"] = graph.name + ".o";
  auto describe = [&](const GpuKernel &kernel) {
    json entry = {{"name", kernel.name},
                  {"params", kernel.params},
                  {"block", kernel.block},
                  {"grid", kernel.grid}};
    if (kernel.ptxas)
      entry["ptxas"] = {{"registers", kernel.ptxas->registers},
                        {"spill_store_bytes", kernel.ptxas->spillStoreBytes},
                        {"spill_load_bytes", kernel.ptxas->spillLoadBytes},
                        {"shared_bytes", kernel.ptxas->sharedBytes},
                        {"stack_bytes", kernel.ptxas->stackBytes}};
    else
      entry["ptxas"] = compiled.ptxasNote;
    return entry;
  };
  json kernels = json::array();
  for (const GpuKernel &kernel : compiled.kernels) {
    if (kernel.merge.empty())
      continue; // a merge or tensor-core kernel, described with its
                // attention kernel
    json sizes = json::object();
    for (const auto &[size, source] : kernel.sizes)
      sizes[size] = {source.first, source.second};
    json entry = describe(kernel);
    entry["sizes"] = sizes;
    if (!kernel.tensors.empty())
      entry["tensors"] = kernel.tensors;
    KeySplitRule split = keySplitRule(kernel);
    entry["key_split"] = {{"target_warps", split.targetRows},
                          {"min_keys_per_split", split.minKeys}};
    entry["workspace_bytes"] = kernel.workspaceBytes;
    entry["tensor_alignment_bytes"] = kCudaTensorAlignment;
    for (const GpuKernel &other : compiled.kernels) {
      if (other.name == kernel.merge)
        entry["merge"] = describe(other);
      if (other.name == kernel.tensorCore) {
        entry["tensor_core"] = describe(other);
        // With key splits it leaves the parts in the workspace for the
        // merge, as the attention kernel does.
        entry["tensor_core"]["use_when"] =
            other.rowFlags & ATTNRT_CUDA_BLOCKS_SPLIT ? "always"
                                                      : "splits == 1";
      }
    }
    kernels.push_back(entry);
  }
  manifest["kernels"] = kernels;
  if (compiled.hasEntry) {
    // NAME_entry in NAME.o runs the graph's ops in order; these are the
    // functions it launches besides the attention kernels above.
    json functions = json::array();
    for (const GpuKernel &kernel : compiled.kernels) {
      if (kernel.function < 0)
        continue;
      json entry = describe(kernel);
      entry.erase("params");
      entry.erase("grid");
      entry["node"] = kernel.node;
      entry["words"] = kernel.words;
      functions.push_back(entry);
    }
    manifest["entry"] = {
        {"name", graph.name + "_entry"},
        {"runs",
         "the graph's ops in order on the invocation's stream: each "
         "attention op as `kernels` says, the others by `functions` (one "
         "thread an element of the result, by the grid's stride); "
         "intermediates in device memory from the context's pool"},
        {"functions", functions}};
  }
  return manifest.dump(2) + "\n";
}

} // namespace attnc
