//===- runtime_fuzzer.cpp - libFuzzer target: attnrt_invoke's validation --===//
//
// A fixed kernel, x [B, S, 8] f32 and m [S] bool in, o [B, S, 8] f32 out (B
// and S run-time sizes, S a multiple of 2), invoked with tensors the input
// bytes describe: counts, dtypes, ranks, shapes (small or near 2^63),
// strides, alignment and null pointers. attnrt_invoke must refuse every
// inconsistent call with a status; when it accepts one, the kernel writes
// and reads every element its dims say, so a call accepted with buffers
// smaller than that is an ASan report.
//
//===----------------------------------------------------------------------===//

#include "attnc/attnrt.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr int64_t kMaxTouched = int64_t(1) << 20;

int32_t entry(attnrt_invocation *, const int64_t *dims, void *const *buffers) {
  int64_t b = dims[0], s = dims[1];
  if (b < 1 || s < 1 || s % 2 != 0)
    std::abort(); // Bindings the validation must have refused.
  if (b > kMaxTouched / s / 8)
    return 0; // Buffers this large were never allocated; see below.
  const float *x = static_cast<const float *>(buffers[0]);
  const uint8_t *m = static_cast<const uint8_t *>(buffers[1]);
  float *o = static_cast<float *>(buffers[2]);
  for (int64_t i = 0; i < b * s * 8; ++i)
    o[i] = x[i] + float(m[(i / 8) % s]);
  return 0;
}

const int64_t kXDims[] = {-1, -2, 8}, kMDims[] = {-2}, kODims[] = {-1, -2, 8};
const attnrt_arg_info kInputs[] = {{"x", ATTNRT_F32, 3, kXDims},
                                   {"m", ATTNRT_BOOL, 1, kMDims}};
const attnrt_arg_info kOutputs[] = {{"o", ATTNRT_F32, 3, kODims}};
const char *const kDimNames[] = {"B", "S"};
const attnrt_divisibility kDivisibilities[] = {
    {-2, 2, "S must be a multiple of 2"}};
const attnrt_kernel kKernel = {ATTNRT_ABI_VERSION,
                               "fuzz",
                               2,
                               kDimNames,
                               2,
                               kInputs,
                               1,
                               kOutputs,
                               16,
                               "x86-64",
                               "{}",
                               entry,
                               1,
                               kDivisibilities};

/// Reads the input bytes in order; zeros once they run out.
struct Bytes {
  const uint8_t *data;
  size_t size, at = 0;
  uint64_t next(int count) {
    uint64_t value = 0;
    for (int n = 0; n < count; ++n)
      value = value << 8 | (at < size ? data[at++] : 0);
    return value;
  }
};

struct Tensor {
  std::vector<int64_t> shape, strides;
  std::vector<uint8_t> storage;
  attnrt_tensor view{};
};

void describe(Bytes &bytes, Tensor &tensor) {
  uint8_t flags = bytes.next(1);
  tensor.view.dtype = attnrt_dtype(flags & 7 ? (flags & 7) - 1 : 0);
  tensor.view.rank = int32_t(bytes.next(1) % 6) - 1; // -1 .. 4
  int rank = tensor.view.rank > 0 ? tensor.view.rank : 0;
  int64_t elements = 1;
  bool huge = false;
  for (int d = 0; d < rank; ++d) {
    int64_t size = bytes.next(1) & 0x80 ? int64_t(bytes.next(8))
                                        : int64_t(bytes.next(1)) - 2;
    tensor.shape.push_back(size);
    if (size <= 0 || size > kMaxTouched / elements)
      huge = true;
    else
      elements *= size;
  }
  if (flags & 0x10)
    tensor.strides.assign(rank, int64_t(bytes.next(1)));
  size_t elementBytes = attnrt_dtype_size(tensor.view.dtype);
  // Buffers as large as the shape says (when it is small), so a call the
  // validation accepts never overruns them: the entry stays inside.
  tensor.storage.assign(
      huge ? 128 : size_t(elements) * (elementBytes ? elementBytes : 1) + 128,
      0);
  tensor.view.shape = rank ? tensor.shape.data() : nullptr;
  tensor.view.strides =
      tensor.strides.empty() ? nullptr : tensor.strides.data();
  uint8_t *aligned =
      tensor.storage.data() +
      (64 - reinterpret_cast<uintptr_t>(tensor.storage.data()) % 64) % 64;
  tensor.view.data = flags & 0x20 ? nullptr : aligned + (flags & 0x40 ? 4 : 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static attnrt_context *context = [] {
    attnrt_context_options options;
    attnrt_context_options_initialize(&options);
    options.threads = 1;
    attnrt_context *created = nullptr;
    if (attnrt_context_create(&options, &created) != ATTNRT_OK)
      std::abort();
    return created;
  }();
  Bytes bytes{data, size};
  size_t numInputs = bytes.next(1) % 4, numOutputs = bytes.next(1) % 3;
  std::vector<Tensor> inputs(numInputs), outputs(numOutputs);
  std::vector<attnrt_tensor> inputViews, outputViews;
  for (Tensor &tensor : inputs) {
    describe(bytes, tensor);
    inputViews.push_back(tensor.view);
  }
  for (Tensor &tensor : outputs) {
    describe(bytes, tensor);
    outputViews.push_back(tensor.view);
  }
  attnrt_status status = attnrt_invoke(
      context, &kKernel, numInputs ? inputViews.data() : nullptr, numInputs,
      numOutputs ? outputViews.data() : nullptr, numOutputs);
  if (status != ATTNRT_OK &&
      std::strlen(attnrt_context_last_error(context)) == 0)
    std::abort(); // A refusal must say why.
  return 0;
}
