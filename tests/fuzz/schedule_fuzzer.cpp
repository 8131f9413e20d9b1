//===- schedule_fuzzer.cpp - libFuzzer target: MLIR schedule files --------===//
//
// Any bytes as a `--schedule` file for each CPU target class: a schedule or
// a UserError, never a crash.
//
//===----------------------------------------------------------------------===//

#include "Codegen/Schedule.h"
#include "Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const attnc::CpuTarget targets[] = {attnc::cpuTarget("x86-64"),
                                             attnc::cpuTarget("x86-64-avx2"),
                                             attnc::cpuTarget("x86-64-avx512")};
  std::string text(reinterpret_cast<const char *>(data), size);
  for (const attnc::CpuTarget &target : targets) {
    try {
      attnc::parseSchedule(text, "fuzz.json", target);
    } catch (const attnc::UserError &) {
    }
  }
  return 0;
}
