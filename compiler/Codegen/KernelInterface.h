//===- KernelInterface.h - NAME.h and NAME.json of a compiled graph -*- C++
//-*-===//
//
// What `attnc compile` writes beside NAME.o: the C header applications
// include, and the manifest (arguments, dtypes, dims, target, schedule). The
// header's declarations are the kernel ABI of runtime/include/attnc/attnrt.h.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_KERNELINTERFACE_H
#define ATTNC_CODEGEN_KERNELINTERFACE_H

#include "Codegen/Schedule.h"
#include "Codegen/Target.h"
#include "Graph/Graph.h"

#include <string>

namespace attnc {

/// The argument descriptions of `graph` as attnrt_arg_info dims use them:
/// a fixed size, or -(index + 1) of a run-time size in runtimeDims() order.
std::vector<int64_t> abiDims(const Graph &graph, const Shape &shape);

/// The C header declaring NAME_kernel, NAME_entry and the typed wrapper NAME
/// (for a CUDA kernel: no entry, and NAME_on_stream beside NAME).
std::string kernelHeader(const Graph &graph, bool cuda = false);

/// The manifest: the graph's name, backend, target, schedule, run-time dims
/// and every argument with its dtype and dims, as JSON text.
std::string kernelManifest(const Graph &graph, const std::string &backend,
                           const CpuTarget &target,
                           const AttentionSchedule &schedule);

struct GpuCompiled;

/// The manifest of `attnc compile --target cuda-*`: the same graph, dims and
/// arguments, `target` with its `chip`, and per kernel its parameters,
/// launch shape and ptxas report (or why there is none).
std::string cudaKernelManifest(const Graph &graph, const std::string &target,
                               const std::string &chip,
                               const GpuCompiled &compiled);

} // namespace attnc

#endif // ATTNC_CODEGEN_KERNELINTERFACE_H
