//===- Tensor.cpp - Host tensors ------------------------------------------===//

#include "Support/Tensor.h"

#include "Support/Float16.h"

#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>

namespace attnc {

int64_t elementCount(const std::vector<int64_t> &shape) {
  // The zero first, so the product of the rest never overflows.
  for (int64_t dim : shape)
    if (dim == 0)
      return 0;
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

namespace {
// Bytes are assembled explicitly so that the little-endian layout holds
// whatever the host's byte order.
uint32_t loadLE32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
         uint32_t(p[3]) << 24;
}
uint16_t loadLE16(const uint8_t *p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}
void storeLE32(uint8_t *p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v >> 16);
  p[3] = static_cast<uint8_t>(v >> 24);
}
void storeLE16(uint8_t *p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

int32_t roundToI32(double value) {
  if (std::isnan(value))
    return 0;
  if (value >= 2147483647.0)
    return INT32_MAX;
  if (value <= -2147483648.0)
    return INT32_MIN;
  return static_cast<int32_t>(std::nearbyint(value));
}
} // namespace

std::vector<double> toDoubles(const Tensor &t) {
  size_t count = static_cast<size_t>(t.numElements());
  size_t size = dtypeSize(t.dtype);
  assert(t.data.size() == count * size && "tensor data does not match shape");
  std::vector<double> values(count);
  const uint8_t *p = t.data.data();
  for (size_t i = 0; i < count; ++i, p += size) {
    switch (t.dtype) {
    case DType::F32:
      values[i] = detail::bitCast<float>(loadLE32(p));
      break;
    case DType::F16:
      values[i] = halfToFloat(loadLE16(p));
      break;
    case DType::BF16:
      values[i] = bfloat16ToFloat(loadLE16(p));
      break;
    case DType::I32:
      values[i] = static_cast<int32_t>(loadLE32(p));
      break;
    case DType::Bool:
      values[i] = *p != 0 ? 1.0 : 0.0;
      break;
    }
  }
  return values;
}

Tensor fromDoubles(DType dtype, std::vector<int64_t> shape,
                   const std::vector<double> &values) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t count = static_cast<size_t>(t.numElements());
  assert(values.size() == count && "value count does not match shape");
  size_t size = dtypeSize(dtype);
  t.data.resize(count * size);
  uint8_t *p = t.data.data();
  for (size_t i = 0; i < count; ++i, p += size) {
    double value = values[i];
    switch (dtype) {
    case DType::F32:
      storeLE32(p, detail::bitCast<uint32_t>(static_cast<float>(value)));
      break;
    case DType::F16:
      storeLE16(p, doubleToHalf(value));
      break;
    case DType::BF16:
      storeLE16(p, doubleToBFloat16(value));
      break;
    case DType::I32:
      storeLE32(p, static_cast<uint32_t>(roundToI32(value)));
      break;
    case DType::Bool:
      *p = value != 0 ? 1 : 0;
      break;
    }
  }
  return t;
}

std::string formatShape(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

double relativeError(const std::vector<double> &actual,
                     const std::vector<double> &expected) {
  if (actual.size() != expected.size())
    return std::numeric_limits<double>::infinity();
  double difference = 0, norm = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    // A NaN must be where the reference has one (its row saw a NaN score),
    // and nowhere else.
    if (std::isnan(expected[i]) != std::isnan(actual[i]))
      return std::nan("");
    if (std::isnan(expected[i]))
      continue;
    if (std::isinf(expected[i])) {
      if (actual[i] != expected[i])
        return std::numeric_limits<double>::infinity();
      continue;
    }
    difference += (actual[i] - expected[i]) * (actual[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  difference = std::sqrt(difference);
  return norm > 0 ? difference / std::sqrt(norm) : difference;
}

double checkTolerance(DType dtype) { return dtype == DType::F32 ? 1e-4 : 2e-2; }

} // namespace attnc
