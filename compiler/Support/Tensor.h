//===- Tensor.h - Host tensors ----------------------------------*- C++ -*-===//
//
// A dense host tensor: an element type, a shape and the raw little-endian,
// C-order bytes, exactly as a `.npy` file stores them. Keeping raw bytes (and
// not, say, a vector<float>) lets f16/bf16/bool data pass through the driver
// bit-exactly; toDoubles/fromDoubles convert for the float64 reference.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_TENSOR_H
#define ATTNC_SUPPORT_TENSOR_H

#include "Support/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc {

/// The number of elements of \p shape: 0 when any dimension is 0 (whatever
/// the others are: a .npy may say (2^62, 0)), else the product; 1 for rank 0.
int64_t elementCount(const std::vector<int64_t> &shape);

struct Tensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// numElements() * dtypeSize(dtype) bytes, little-endian, C order.
  std::vector<uint8_t> data;

  /// elementCount(shape).
  int64_t numElements() const { return elementCount(shape); }
};

/// Every element as double (f16/bf16 exact, i32 exact, bool as 0/1).
std::vector<double> toDoubles(const Tensor &t);

/// Rounds each value to \p dtype: f32 by cast, f16/bf16 round-to-nearest-even
/// from double, i32 round-to-nearest (ties to even) saturating with NaN -> 0,
/// bool = value != 0. \p values must hold exactly the shape's element count.
Tensor fromDoubles(DType dtype, std::vector<int64_t> shape,
                   const std::vector<double> &values);

/// "[2, 3, 4]" ("[]" for rank 0) — the shape spelling of every error message.
std::string formatShape(const std::vector<int64_t> &shape);

/// Normwise relative error ||actual - expected|| / ||expected|| over the
/// finite entries of `expected` (an infinite entry, such as the lse of a
/// fully masked row, must match exactly, else the error is infinite). A NaN
/// entry must be matched by a NaN (and is then left out); a NaN on one side
/// only gives NaN, which passes no tolerance.
double relativeError(const std::vector<double> &actual,
                     const std::vector<double> &expected);

/// The tolerance of a check against the float64 reference: 1e-4 for f32,
/// 2e-2 for f16 and bf16.
double checkTolerance(DType dtype);

} // namespace attnc

#endif // ATTNC_SUPPORT_TENSOR_H
