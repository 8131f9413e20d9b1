//===- GpuKernels.h - Fused attention graphs as CUDA kernels ----*- C++ -*-===//
//
// `attnc compile --target cuda-sm80|cuda-sm90|cuda-sm90a`: the fused module
// through attn-lower-to-gpu, NVVM and LLVM's NVPTX back end to PTX, with
// ptxas's report where the CUDA toolkit is installed.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_GPUKERNELS_H
#define ATTNC_CODEGEN_GPUKERNELS_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc {

/// The CUDA architecture of a `cuda-*` target ("cuda-sm90" → "sm_90"),
/// nullopt for any other target. Throws UserError for an unknown cuda-*.
std::optional<std::string> cudaChip(const std::string &target);

/// What ptxas says of one kernel.
struct PtxasReport {
  int registers = 0;
  int spillStoreBytes = 0, spillLoadBytes = 0;
  int sharedBytes = 0, stackBytes = 0;
};

struct GpuKernel {
  std::string name;
  std::vector<std::string> params; ///< Graph values, then the sizes.
  /// Each size (B, Hq, ...) as the tensor and axis it is read from.
  std::vector<std::pair<std::string, std::pair<std::string, int64_t>>> sizes;
  /// The kernel that merges this one's key splits ("" for a merge kernel).
  std::string merge;
  /// The tensor-core kernel that replaces this one ("" if none): whatever
  /// the splits when its rowFlags has ATTNRT_CUDA_BLOCKS_SPLIT, else when
  /// splits == 1.
  std::string tensorCore;
  /// Threads per block, and blocks as size expressions ("ceil(S / 4)"):
  /// (ceil(rows / blockRows), Hq, B), rows = S, as rowFlags (the runtime's
  /// attnrt_cuda_rows) change it.
  std::vector<int64_t> block;
  std::vector<std::string> grid;
  int64_t blockRows = 0;
  int64_t rowFlags = 0;
  /// Bytes of workspace when keys are split, as an expression ("" for other
  /// kernels) and as workspaceRowBytes[0]·Dv + workspaceRowBytes[1] per
  /// (batch, head, row, part).
  std::string workspaceBytes;
  std::vector<int64_t> workspaceRowBytes;
  /// In a kernel with a host entry: an attention kernel's tensors in kernel
  /// order, which its params and sizes then number (the entry hands them to
  /// attnrt_cuda_run_attention).
  std::vector<std::string> tensors;
  /// A function the entry launches (a primitive op's, or the copy): its
  /// number in attnrt_cuda_code::functions (-1 for attention kernels), its
  /// 64-bit words and the node it computes ("" for the copy).
  int64_t function = -1, words = 0;
  std::string node;
  std::optional<PtxasReport> ptxas;
};

/// Key splits (FlashDecoding) of a CUDA attention kernel, which the launcher
/// picks at run time from the sizes (the manifest's `key_split`): 1 when the
/// B·Hq·S rows reach targetRows, else min(ceil(targetRows / (B·Hq·S)),
/// ceil(T / minKeys)), at least 1.
struct KeySplitRule {
  int64_t targetRows, minKeys;
};
/// The rule for attention kernel `attention`, measured on an H200
/// (Llama-3-8B decode, T = 4096 and 32768, 512..16384 rows x 16..256
/// keys): the SIMT kernel (a warp per (row, part)) best at 4096 rows and 64
/// keys; the tensor-core kernel, whose blocks take the 4 query heads of a
/// kv head together and 64 keys at a time, best with fewer, longer parts.
KeySplitRule keySplitRule(const GpuKernel &attention);

/// The byte alignment every tensor of a CUDA kernel needs: the tensor-core
/// kernel reads K and V 16 bytes at a time and Q and K in 4-byte pairs
/// (cuMemAlloc's pointers are; a view into a larger buffer may not be).
constexpr int64_t kCudaTensorAlignment = 16;

struct GpuCompiled {
  std::string ptx;
  std::vector<GpuKernel> kernels;
  /// The graph has ops outside attention: the module compileForCuda lowered
  /// keeps NAME_entry, the host code that runs them (attn-build-cuda-entry).
  bool hasEntry = false;
  /// Why there is no ptxas report ("" when there is one).
  std::string ptxasNote;
};

/// Lowers a fused module (importGraph + runAttnPipeline) to PTX for `chip`;
/// with `gpuModule`, prints the module of gpu.funcs there before NVVM.
/// Throws UserError naming what has no GPU kernel yet. What is left in
/// `module` is the host code: NAME_entry when the graph has ops outside
/// attention (GpuCompiled::hasEntry), in the scf/cf/llvm dialects, else
/// nothing.
GpuCompiled compileForCuda(mlir::ModuleOp module, const std::string &chip,
                           std::string *gpuModule = nullptr);

} // namespace attnc

#endif // ATTNC_CODEGEN_GPUKERNELS_H
