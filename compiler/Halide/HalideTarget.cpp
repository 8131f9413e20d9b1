//===- HalideTarget.cpp - attnc's target classes as Halide targets --------===//

#include "Halide/HalideTarget.h"

#include <stdexcept>

namespace attnc {

const HalideTargetClass kHalideTargetClasses[3] = {
    {"x86-64", "x86-64-linux"},
    {"x86-64-avx2", "x86-64-linux-sse41-avx-f16c-fma-avx2"},
    {"x86-64-avx512",
     "x86-64-linux-sse41-avx-f16c-fma-avx2-avx512-avx512_skylake"},
};

std::string halideTarget(std::string_view targetClass) {
  for (const HalideTargetClass &entry : kHalideTargetClasses)
    if (targetClass == entry.targetClass)
      return entry.halideTarget;
  throw std::logic_error("halide backend: no Halide target for the class '" +
                         std::string(targetClass) + "'");
}

} // namespace attnc
