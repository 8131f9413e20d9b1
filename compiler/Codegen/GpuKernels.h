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
  /// The tensor-core kernel that replaces this one when splits == 1 ("" if
  /// none).
  std::string tensorCore;
  /// Threads per block, and blocks as size expressions ("ceil(S / 4)"):
  /// (ceil(rows / blockRows), Hq, B), rows = S·splits when rowsSplit, else
  /// S.
  std::vector<int64_t> block;
  std::vector<std::string> grid;
  int64_t blockRows = 0;
  bool rowsSplit = false;
  /// Bytes of workspace when keys are split, as an expression ("" for other
  /// kernels) and as workspaceRowBytes[0]·Dv + workspaceRowBytes[1] per
  /// (batch, head, row, part).
  std::string workspaceBytes;
  std::vector<int64_t> workspaceRowBytes;
  std::optional<PtxasReport> ptxas;
};

/// Key splits (FlashDecoding) of a CUDA attention kernel, which the launcher
/// picks at run time from the sizes (the manifest's `key_split`): 1 when the
/// B·Hq·S rows give target_warps warps, else min(ceil(target_warps /
/// (B·Hq·S)), ceil(T / min_keys_per_split)), at least 1. Measured on an
/// H200 (Llama-3-8B decode, T = 4096 and 32768): 4096 warps and 64 keys
/// were the best of 2048..16384 warps and 16..256 keys at both lengths;
/// 8192 warps took 1.24x as long at T = 32768.
constexpr int64_t kGpuSplitTargetWarps = 4096;
constexpr int64_t kGpuSplitMinKeys = 64;

/// The byte alignment every tensor of a CUDA kernel needs: the tensor-core
/// kernel reads K and V 16 bytes at a time and Q and K in 4-byte pairs
/// (cuMemAlloc's pointers are; a view into a larger buffer may not be).
constexpr int64_t kCudaTensorAlignment = 16;

struct GpuCompiled {
  std::string ptx;
  std::vector<GpuKernel> kernels;
  /// Why there is no ptxas report ("" when there is one).
  std::string ptxasNote;
};

/// Lowers a fused module (importGraph + runAttnPipeline) to PTX for `chip`;
/// with `gpuModule`, prints the module of gpu.funcs there before NVVM.
/// Throws UserError naming what has no GPU kernel yet.
GpuCompiled compileForCuda(mlir::ModuleOp module, const std::string &chip,
                           std::string *gpuModule = nullptr);

} // namespace attnc

#endif // ATTNC_CODEGEN_GPUKERNELS_H
