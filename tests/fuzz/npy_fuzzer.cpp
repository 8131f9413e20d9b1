//===- npy_fuzzer.cpp - libFuzzer target: the .npy reader -----------------===//
//
// Any bytes as a .npy file, read as it is and converted to every dtype a
// graph input can have (what `attnc run --input` does): a tensor or a
// UserError, never a crash.
//
//===----------------------------------------------------------------------===//

#include "Support/Error.h"
#include "Support/Npy.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  try {
    attnc::parseNpy(bytes, "fuzz.npy");
  } catch (const attnc::UserError &) {
  }
  for (attnc::DType dtype :
       {attnc::DType::F32, attnc::DType::F16, attnc::DType::BF16,
        attnc::DType::I32, attnc::DType::Bool}) {
    try {
      attnc::parseNpy(bytes, "fuzz.npy", dtype);
    } catch (const attnc::UserError &) {
    }
  }
  return 0;
}
