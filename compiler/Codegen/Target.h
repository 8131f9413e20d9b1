//===- Target.h - CPU targets of the code generator ---------------*- C++
//-*-===//
//
// The `--target` names of the graph format's command line, and what each
// means to LLVM: a triple, a CPU and its features. Always naming the CPU is
// what keeps math.fma and roundeven inline (docs/design/cpu-codegen-notes.md,
// point 5).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_TARGET_H
#define ATTNC_CODEGEN_TARGET_H

#include <string>
#include <vector>

namespace attnc {

struct CpuTarget {
  std::string name;     ///< "host", "x86-64", "x86-64-avx2", "x86-64-avx512".
  std::string triple;   ///< "x86_64-unknown-linux-gnu".
  std::string cpu;      ///< LLVM CPU name, e.g. "x86-64-v4".
  std::string features; ///< LLVM feature string, e.g. "+avx512f,+fma".
  int vectorBits;       ///< Widest vector register: 128, 256 or 512.
};

/// The target called `name`; throws UserError("--target NAME: ...") for an
/// unknown or non-CPU target.
CpuTarget cpuTarget(const std::string &name);

/// Whether code for `target` may use the LLVM feature `feature` (e.g.
/// "avx512bf16"): named in its feature string, or implied by its class.
bool hasFeature(const CpuTarget &target, const std::string &feature);

/// Whether `target`'s kernels compute bf16 products with vdpbf16ps: always
/// for x86-64-avx512-bf16; for `host`, on AMD cores with AVX512-BF16 (Zen 4
/// and later), where it was measured 1.7-1.9x the f32 path. Intel's cores
/// run it on the FMA ports and it was measured slower there than converting
/// to f32, so `host` keeps the f32 path on them.
bool prefersBf16Dot(const CpuTarget &target);

/// Whether bf16 prefill products go on AMX tiles: for --target x86-64-amx,
/// and for `host` on a CPU with AMX-BF16 and AVX512-BF16, where the tiles
/// run bf16 prefill 3-4 times as fast as f32 (docs/design/cpu-backend.md).
bool usesAmx(const CpuTarget &target);

/// "x86-64", "x86-64-avx2" or "x86-64-avx512": the class whose default
/// schedules serve `target` (for `host`, by its widest vectors).
std::string targetClassOf(const CpuTarget &target);

/// The CPU features `target`'s code may use that this machine lacks (empty
/// for `host` and x86-64): a kernel for it would die of SIGILL here.
std::vector<std::string> missingHostFeatures(const CpuTarget &target);

/// Throws UserError naming the missing features when a kernel for the
/// target named `targetName` cannot run on this machine.
void requireHostRuns(const std::string &targetName);

} // namespace attnc

#endif // ATTNC_CODEGEN_TARGET_H
