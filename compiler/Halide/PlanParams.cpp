//===- PlanParams.cpp - Plan values as a pipeline's buffers ---------------===//

#include "Halide/PlanParams.h"

#include <algorithm>
#include <string>

namespace attnc {

Halide::Type halideType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return Halide::Float(32);
  case DType::F16:
    return Halide::Float(16);
  case DType::BF16:
    return Halide::BFloat(16);
  case DType::I32:
    return Halide::Int(32);
  case DType::Bool:
    return Halide::UInt(8); // attnrt bool: one byte, 0 or 1.
  }
  return Halide::Float(32);
}

void constrainToShape(Halide::OutputImageParam buffer, const Shape &shape) {
  // Halide's dim n is graph dim rank - 1 - n.
  int rank = int(shape.size());
  for (int n = 0; n < rank; ++n) {
    const Dim &dim = shape[rank - 1 - n];
    if (dim.isFixed())
      buffer.dim(n).set_bounds(0, int(dim.size));
    else
      buffer.dim(n).set_min(0);
  }
}

Halide::ImageParam PlanParams::of(const KernelPlan &plan, int value) {
  auto it = std::find(values.begin(), values.end(), value);
  if (it != values.end())
    return images[it - values.begin()];
  // A graph input or a buffer another kernel wrote: either way a buffer.
  const PlanValue &v = plan.values.at(value);
  Halide::ImageParam image(halideType(v.dtype), int(v.shape.size()),
                           "v" + std::to_string(value));
  constrainToShape(image, v.shape);
  images.push_back(image);
  values.push_back(value);
  return image;
}

} // namespace attnc
