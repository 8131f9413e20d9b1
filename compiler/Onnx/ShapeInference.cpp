//===- ShapeInference.cpp - ONNX shape inference with bounded ranks -------===//
//
// libonnx's inference gives Expand and ConstantOfShape as many output
// dimensions as their shape operand has elements. A model whose shape operand
// claims 2^62 elements (a Reshape to [2^62] feeding an Expand: eight bytes of
// a file) makes it append dimensions until memory runs out (10 GB in 20 s).
// Those operators' inference here first checks that the rank the operand
// claims is one a tensor can have; where it is not, that node's outputs stay
// untyped, as any other node's do when its inference fails.
//
//===----------------------------------------------------------------------===//

#include "Onnx/OnnxModelFile.h"

#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <memory>

namespace attnc {

namespace {

/// Far above any real model's rank; low enough that appending this many
/// dimensions costs nothing.
constexpr int64_t kMaxInferredRank = 64;

/// The operand whose element count becomes the output's rank, or -1.
int rankOperand(const onnx::OpSchema &schema) {
  if (schema.domain() != onnx::ONNX_DOMAIN)
    return -1;
  if (schema.Name() == "ConstantOfShape")
    return 0;
  if (schema.Name() == "Expand")
    return 1;
  return -1;
}

/// ONNX's registry, with the schemas of rankOperand's operators wrapped.
class BoundedRankRegistry final : public onnx::ISchemaRegistry {
public:
  const onnx::OpSchema *GetSchema(const std::string &key,
                                  const int maxInclusiveVersion,
                                  const std::string &domain) const override {
    const onnx::OpSchema *schema =
        onnx::OpSchemaRegistry::Schema(key, maxInclusiveVersion, domain);
    if (!schema)
      return nullptr;
    int operand = rankOperand(*schema);
    if (operand < 0)
      return schema;
    std::unique_ptr<onnx::OpSchema> &bounded = wrapped[schema];
    if (!bounded) {
      bounded = std::make_unique<onnx::OpSchema>(*schema);
      bounded->TypeAndShapeInferenceFunction(
          [operand, infer = schema->GetTypeAndShapeInferenceFunction()](
              onnx::InferenceContext &ctx) {
            if (onnx::hasInputShape(ctx, operand)) {
              const onnx::TensorShapeProto &shape =
                  onnx::getInputShape(ctx, operand);
              if (shape.dim_size() == 1 && shape.dim(0).has_dim_value() &&
                  shape.dim(0).dim_value() > kMaxInferredRank)
                fail_shape_inference("a shape of ", shape.dim(0).dim_value(),
                                     " dimensions");
            }
            if (infer)
              infer(ctx);
          });
    }
    return bounded.get();
  }

private:
  mutable std::map<const onnx::OpSchema *, std::unique_ptr<onnx::OpSchema>>
      wrapped;
};

} // namespace

void inferOnnxShapes(onnx::ModelProto &model) {
  BoundedRankRegistry registry;
  onnx::ShapeInferenceOptions options{/*check_type=*/false,
                                      /*error_mode=*/0};
  try {
    onnx::shape_inference::InferShapes(model, &registry, options);
  } catch (const std::exception &) {
  }
}

} // namespace attnc
