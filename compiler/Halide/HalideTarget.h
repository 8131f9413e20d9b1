//===- HalideTarget.h - Target classes as Halide targets ------*- C++ -*-===//
//
// Plain C++ (no Halide header): shared by the backend and by the build-time
// tool that compiles Halide's runtime for every class once
// (attnc-embed-halide-runtimes).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_HALIDE_HALIDETARGET_H
#define ATTNC_HALIDE_HALIDETARGET_H

#include <string>
#include <string_view>

namespace attnc {

/// An attnc target class and Halide's name for it.
struct HalideTargetClass {
  const char *targetClass; ///< "x86-64", "x86-64-avx2", "x86-64-avx512".
  /// Explicit features, never Halide's `host` (docs/toolchain.md, trap 9).
  const char *halideTarget;
};

/// Every target class the Halide backend compiles for.
extern const HalideTargetClass kHalideTargetClasses[3];

/// Halide's name for `targetClass`; std::logic_error for a class outside
/// kHalideTargetClasses.
std::string halideTarget(std::string_view targetClass);

/// Halide's runtime for `targetClass` as one object, compiled when attnc
/// was built (HalideRuntimes.cpp, written by attnc-embed-halide-runtimes);
/// empty for a class outside kHalideTargetClasses.
std::string_view embeddedHalideRuntime(std::string_view targetClass);

} // namespace attnc

#endif // ATTNC_HALIDE_HALIDETARGET_H
