//===- Target.cpp - CPU targets of the code generator ---------------------===//

#include "Codegen/Target.h"
#include "Support/Error.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

namespace attnc {

/// The AVX-512 features of the x86-64-v4 level, which the 512-bit kernels
/// may use.
static const char *const kV4Features[] = {"avx512f", "avx512bw", "avx512cd",
                                          "avx512dq", "avx512vl"};

CpuTarget cpuTarget(const std::string &name) {
  const std::string triple = "x86_64-unknown-linux-gnu";
  // The x86-64 micro-architecture levels: v3 has AVX2 and FMA, v4 AVX-512.
  if (name == "x86-64")
    return {name, triple, "x86-64", "", 128};
  if (name == "x86-64-avx2")
    return {name, triple, "x86-64-v3", "", 256};
  if (name == "x86-64-avx512")
    return {name, triple, "x86-64-v4", "+prefer-no-gather", 512};
  // AVX-512 with BF16 dot products (Cooper Lake, Sapphire Rapids, Zen 4
  // and 5): the avx512 class's schedules, bf16 Q·Kᵀ through vdpbf16ps.
  if (name == "x86-64-avx512-bf16")
    return {name, triple, "x86-64-v4", "+prefer-no-gather,+avx512bf16", 512};
  // AVX-512 with BF16 and the AMX tiles (Sapphire Rapids and later Xeons):
  // bf16 prefill Q·Kᵀ and P·V on the tiles (Codegen/MatrixTiles.h).
  if (name == "x86-64-amx")
    return {name, triple, "x86-64-v4",
            "+prefer-no-gather,+avx512bf16,+amx-tile,+amx-bf16", 512};
  if (name == "host") {
    std::string features;
    const llvm::StringMap<bool> hostFeatures = llvm::sys::getHostCPUFeatures();
    for (const auto &feature : hostFeatures)
      features += (features.empty() ? "" : ",") +
                  std::string(feature.second ? "+" : "-") +
                  feature.first().str();
    // The 512-bit kernels use the x86-64-v4 set (vreduceps is AVX512DQ), so a
    // core with AVX512F alone (Knights Landing) takes the 256-bit ones.
    bool avx512 = llvm::all_of(kV4Features, [&](const char *feature) {
      return hostFeatures.lookup(feature);
    });
    bool avx2 = hostFeatures.lookup("avx2");
    return {name, llvm::sys::getProcessTriple(),
            llvm::sys::getHostCPUName().str(), features,
            avx512 ? 512
            : avx2 ? 256
                   : 128};
  }
  if (name == "cuda-sm80" || name == "cuda-sm90" || name == "cuda-sm90a")
    throw UserError("--target " + name +
                    ": a CUDA target, which attnc compile and attnc run "
                    "take; this command takes CPU targets: host, x86-64, "
                    "x86-64-avx2, x86-64-avx512, x86-64-avx512-bf16, "
                    "x86-64-amx");
  throw UserError("--target " + name +
                  ": unknown target; allowed: host, x86-64, x86-64-avx2, "
                  "x86-64-avx512, x86-64-avx512-bf16, x86-64-amx, cuda-sm80, "
                  "cuda-sm90, cuda-sm90a");
}

bool hasFeature(const CpuTarget &target, const std::string &feature) {
  llvm::StringRef rest = target.features;
  while (!rest.empty()) {
    auto [item, tail] = rest.split(',');
    if (item == "+" + feature)
      return true;
    rest = tail;
  }
  return false;
}

bool prefersBf16Dot(const CpuTarget &target) {
  // AMX CPUs are Intel's, whose vector products convert instead.
  if (!hasFeature(target, "avx512bf16") || usesAmx(target))
    return false;
  return target.name != "host" ||
         llvm::StringRef(target.cpu).starts_with("znver");
}

bool usesAmx(const CpuTarget &target) {
  if (target.name == "host")
    return target.vectorBits == 512 && hasFeature(target, "avx512bf16") &&
           hasFeature(target, "amx-tile") && hasFeature(target, "amx-bf16");
  return target.name == "x86-64-amx";
}

std::vector<std::string> missingHostFeatures(const CpuTarget &target) {
  // The x86-64-v3 and -v4 levels' features code generation may use.
  static const char *const v3[] = {"avx", "avx2", "fma", "f16c", "bmi2"};
  std::vector<std::string> needed;
  bool bf16 =
      target.name == "x86-64-avx512-bf16" || target.name == "x86-64-amx";
  bool avx512 = target.name == "x86-64-avx512" || bf16;
  if (target.name == "x86-64-avx2" || avx512)
    needed.assign(std::begin(v3), std::end(v3));
  if (avx512)
    needed.insert(needed.end(), std::begin(kV4Features), std::end(kV4Features));
  if (bf16)
    needed.push_back("avx512bf16");
  if (usesAmx(target)) {
    needed.push_back("amx-tile");
    needed.push_back("amx-bf16");
  }
  const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> missing;
  for (const std::string &feature : needed)
    if (!host.lookup(feature))
      missing.push_back(feature);
  return missing;
}

void requireHostRuns(const std::string &targetName) {
  std::vector<std::string> missing = missingHostFeatures(cpuTarget(targetName));
  if (missing.empty())
    return;
  std::string names;
  for (const std::string &feature : missing)
    names += (names.empty() ? "" : ", ") + feature;
  throw UserError("--target " + targetName + ": this CPU lacks " + names +
                  ", so a kernel built for it cannot run here (attnc compile "
                  "can still build it for another machine)");
}

std::string targetClassOf(const CpuTarget &target) {
  if (target.name == "x86-64-avx512-bf16" || usesAmx(target))
    return "x86-64-avx512";
  if (target.name != "host")
    return target.name;
  return target.vectorBits >= 512   ? "x86-64-avx512"
         : target.vectorBits >= 256 ? "x86-64-avx2"
                                    : "x86-64";
}

} // namespace attnc
