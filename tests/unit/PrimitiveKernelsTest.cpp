//===- PrimitiveKernelsTest.cpp - attn primitives against the reference ---===//
//
// Each case is a small graph. Its nodes are imported as attn ops (unfused),
// and a function of static memrefs computes them one after the other with
// resultSizes + emitPrimitive (intermediates in memref.alloc buffers, cast to
// the ops' dynamic types where dims are run-time sizes). The function is
// lowered, compiled, loaded and run on random inputs, and every output is
// compared with the float64 reference; every result size is written out too
// and compared with the graph's shapes.
//
//===----------------------------------------------------------------------===//

#include "Codegen/PrimitiveKernels.h"
#include "Codegen/EmitObject.h"
#include "Codegen/LoadObject.h"
#include "Codegen/Target.h"
#include "Graph/Graph.h"
#include "Import/ImportGraph.h"
#include "Reference/Reference.h"
#include "Support/Tensor.h"

#include "Attn/IR/AttnOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>

using namespace attnc;

namespace {

/// The kernel takes this many pointers (unused ones are padding), so every
/// case calls it through one function type.
constexpr int kArgs = 24;
using KernelFn = void (*)(void *, void *, void *, void *, void *, void *,
                          void *, void *, void *, void *, void *, void *,
                          void *, void *, void *, void *, void *, void *,
                          void *, void *, void *, void *, void *, void *);

void call(KernelFn kernel, void *const *a) {
  kernel(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
         a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20],
         a[21], a[22], a[23]);
}

mlir::MemRefType staticBufferType(const TensorType &type,
                                  const DimBindings &dims, mlir::Type tensor) {
  std::vector<int64_t> shape = concreteShape(type.shape, dims);
  return mlir::MemRefType::get(shape, bufferElementType(tensor));
}

mlir::MemRefType dynamicBufferType(mlir::Type tensor) {
  auto type = mlir::cast<mlir::RankedTensorType>(tensor);
  return mlir::MemRefType::get(type.getShape(), bufferElementType(type));
}

struct Compiled {
  mlir::MLIRContext context;
  std::unique_ptr<LoadedObject> object;
  KernelFn kernel = nullptr;
  int64_t sizeCount = 0; ///< Result dims written to the sizes buffer.
};

/// Builds `kernel(inputs..., outputs..., sizes, padding...)` from the graph
/// function of `attnModule`.
mlir::OwningOpRef<mlir::ModuleOp>
buildKernel(const Graph &graph, mlir::ModuleOp attnModule,
            const DimBindings &dims, int64_t &sizeCount, int64_t vectorWidth) {
  mlir::MLIRContext *context = attnModule.getContext();
  auto graphFunc = *attnModule.getOps<mlir::func::FuncOp>().begin();
  mlir::Block &graphBody = graphFunc.getBody().front();
  auto graphReturn = mlir::cast<mlir::func::ReturnOp>(graphBody.back());
  size_t runtimeDims = graph.runtimeDims().size();

  mlir::OpBuilder builder(context);
  mlir::Location loc = builder.getUnknownLoc();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  llvm::SmallVector<mlir::Type> argTypes;
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    argTypes.push_back(
        staticBufferType(graph.type(graph.inputs[i]), dims,
                         graphFunc.getArgument(runtimeDims + i).getType()));
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    argTypes.push_back(staticBufferType(graph.type(graph.outputs[i]), dims,
                                        graphReturn.getOperand(i).getType()));
  sizeCount = 0;
  for (mlir::Operation &op : graphBody.without_terminator())
    for (mlir::Value result : op.getResults())
      sizeCount += mlir::cast<mlir::ShapedType>(result.getType()).getRank();
  argTypes.push_back(mlir::MemRefType::get({std::max<int64_t>(sizeCount, 1)},
                                           builder.getI64Type()));
  if (argTypes.size() > kArgs)
    throw std::logic_error("too many kernel arguments for the test harness");
  while (argTypes.size() < kArgs)
    argTypes.push_back(mlir::MemRefType::get({1}, builder.getI8Type()));

  builder.setInsertionPointToEnd(module->getBody());
  auto kernel = builder.create<mlir::func::FuncOp>(
      loc, "kernel", builder.getFunctionType(argTypes, {}));
  mlir::Block *entry = kernel.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  llvm::DenseMap<mlir::Value, mlir::Value> mapped;
  std::vector<std::string> dimNames = graph.runtimeDims();
  for (size_t i = 0; i < runtimeDims; ++i)
    mapped[graphFunc.getArgument(i)] =
        builder.create<mlir::arith::ConstantIndexOp>(loc, dims.at(dimNames[i]));
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    mlir::Value arg = graphFunc.getArgument(runtimeDims + i);
    mapped[arg] = builder.create<mlir::memref::CastOp>(
        loc, dynamicBufferType(arg.getType()), entry->getArgument(i));
  }
  mlir::Value sizesArg =
      entry->getArgument(graph.inputs.size() + graph.outputs.size());
  int64_t sizePosition = 0;
  llvm::SmallVector<mlir::Value> allocations;
  for (mlir::Operation &op : graphBody.without_terminator()) {
    llvm::SmallVector<llvm::SmallVector<mlir::Value>> operandSizes;
    llvm::SmallVector<mlir::Value> operands;
    for (mlir::Value operand : op.getOperands()) {
      mlir::Value value = mapped.at(operand);
      operands.push_back(value);
      auto type = mlir::dyn_cast<mlir::MemRefType>(value.getType());
      if (!type) {
        operandSizes.push_back({value});
        continue;
      }
      llvm::SmallVector<mlir::Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d)
        sizes.push_back(
            type.isDynamicDim(d)
                ? mlir::Value(
                      builder.create<mlir::memref::DimOp>(loc, value, d))
                : mlir::Value(builder.create<mlir::arith::ConstantIndexOp>(
                      loc, type.getDimSize(d))));
      operandSizes.push_back(sizes);
    }
    auto sizes = resultSizes(builder, loc, &op, operandSizes);
    llvm::SmallVector<mlir::Value> results;
    for (auto [result, resultSizes] : llvm::zip(op.getResults(), sizes)) {
      for (mlir::Value size : resultSizes) {
        mlir::Value position =
            builder.create<mlir::arith::ConstantIndexOp>(loc, sizePosition++);
        mlir::Value asI64 = builder.create<mlir::arith::IndexCastOp>(
            loc, builder.getI64Type(), size);
        builder.create<mlir::memref::StoreOp>(loc, asI64, sizesArg, position);
      }
      mlir::MemRefType type = dynamicBufferType(result.getType());
      mlir::Value buffer;
      for (size_t i = 0; i < graphReturn.getNumOperands(); ++i)
        if (graphReturn.getOperand(i) == result)
          buffer = builder.create<mlir::memref::CastOp>(
              loc, type, entry->getArgument(graph.inputs.size() + i));
      if (!buffer) {
        llvm::SmallVector<mlir::Value> dynamicSizes;
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d))
            dynamicSizes.push_back(resultSizes[d]);
        buffer = builder.create<mlir::memref::AllocOp>(loc, type, dynamicSizes);
        allocations.push_back(buffer);
      }
      mapped[result] = buffer;
      results.push_back(buffer);
    }
    // attn.attention has its own kernel; only its sizes are checked here.
    if (!mlir::isa<mlir::attn::AttentionOp>(op))
      emitPrimitive(builder, loc, &op, operands, results, nullptr, nullptr,
                    vectorWidth);
  }
  for (mlir::Value buffer : allocations)
    builder.create<mlir::memref::DeallocOp>(loc, buffer);
  builder.create<mlir::func::ReturnOp>(loc);
  if (mlir::failed(mlir::verify(*module))) {
    std::string text;
    llvm::raw_string_ostream stream(text);
    module->print(stream);
    throw std::logic_error("the test kernel does not verify:\n" + text);
  }
  return module;
}

/// Compiles `graph`'s nodes into a loaded kernel for `target`.
std::unique_ptr<Compiled> compile(const Graph &graph, const DimBindings &dims,
                                  const std::string &target,
                                  std::string *llvmIR = nullptr) {
  auto compiled = std::make_unique<Compiled>();
  mlir::MLIRContext &context = compiled->context;
  context.loadDialect<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                      mlir::math::MathDialect, mlir::memref::MemRefDialect,
                      mlir::scf::SCFDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> attnModule = importGraph(graph, context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      buildKernel(graph, *attnModule, dims, compiled->sizeCount,
                  cpuTarget(target).vectorBits / 32);
  lowerToLLVMDialect(*module);
  compiled->object =
      LoadedObject::load(emitObject(*module, cpuTarget(target), llvmIR));
  compiled->kernel =
      reinterpret_cast<KernelFn>(compiled->object->symbol("kernel"));
  if (!compiled->kernel)
    throw std::logic_error("no kernel symbol");
  return compiled;
}

std::vector<Tensor> randomInputs(const Graph &graph, const DimBindings &dims,
                                 unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<double> normal;
  std::bernoulli_distribution coin(0.3);
  std::uniform_int_distribution<int> small(-9, 9);
  std::vector<Tensor> inputs;
  for (ValueId id : graph.inputs) {
    const TensorType &type = graph.type(id);
    std::vector<int64_t> shape = concreteShape(type.shape, dims);
    int64_t count = 1;
    for (int64_t size : shape)
      count *= size;
    std::vector<double> values(count);
    for (double &value : values)
      value = type.dtype == DType::Bool  ? double(coin(random))
              : type.dtype == DType::I32 ? double(small(random))
                                         : normal(random);
    inputs.push_back(fromDoubles(type.dtype, shape, values));
  }
  return inputs;
}

double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return 1e-5;
  case DType::F16:
    return 2e-3;
  case DType::BF16:
    return 1e-2;
  default:
    return 0;
  }
}

struct Case {
  const char *name;
  std::string document;
  DimBindings dims;
  bool exact = false; ///< Data movement: the outputs must be bit-exact.
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

/// Runs a case and checks every output and every result size.
void check(const Case &c, const std::string &target = "x86-64-avx2") {
  Graph graph = parseGraph(c.document, std::string(c.name) + ".json");
  std::unique_ptr<Compiled> compiled = compile(graph, c.dims, target);
  std::vector<Tensor> inputs = randomInputs(graph, c.dims, 7);

  std::vector<Tensor> outputs;
  for (ValueId id : graph.outputs) {
    const TensorType &type = graph.type(id);
    Tensor output;
    output.dtype = type.dtype;
    output.shape = concreteShape(type.shape, c.dims);
    output.data.assign(output.numElements() * dtypeSize(type.dtype), 0xA5);
    outputs.push_back(std::move(output));
  }
  std::vector<int64_t> sizes(std::max<int64_t>(compiled->sizeCount, 1), -1);
  std::vector<uint8_t> padding(8);
  void *args[kArgs];
  for (void *&arg : args)
    arg = padding.data();
  size_t next = 0;
  for (Tensor &input : inputs)
    args[next++] = input.data.data();
  for (Tensor &output : outputs)
    args[next++] = output.data.data();
  args[next] = sizes.data();
  call(compiled->kernel, args);

  std::vector<int64_t> expectedSizes;
  for (const Node &node : graph.nodes)
    for (ValueId id : node.results)
      for (int64_t size : concreteShape(graph.type(id).shape, c.dims))
        expectedSizes.push_back(size);
  sizes.resize(compiled->sizeCount);
  EXPECT_EQ(sizes, expectedSizes) << "result sizes";

  if (llvm::any_of(graph.nodes, [](const Node &node) {
        return node.getIf<AttentionOp>() != nullptr;
      }))
    return;
  std::vector<F64Tensor> expected = evaluateReference(graph, c.dims, inputs);
  for (size_t o = 0; o < outputs.size(); ++o) {
    const std::string &name = graph.value(graph.outputs[o]).name;
    DType dtype = outputs[o].dtype;
    std::vector<double> got = toDoubles(outputs[o]);
    // The reference is unrounded; what a kernel can match is its rounding.
    std::vector<double> want =
        toDoubles(fromDoubles(dtype, outputs[o].shape, expected[o].data));
    ASSERT_EQ(got.size(), want.size());
    double error = 0, norm = 0;
    bool sawNonZero = false;
    for (size_t i = 0; i < got.size(); ++i) {
      sawNonZero |= want[i] != 0;
      if (std::isinf(want[i]) || c.exact || !isFloat(dtype)) {
        ASSERT_EQ(got[i], want[i]) << name << " element " << i;
        continue;
      }
      ASSERT_FALSE(std::isnan(got[i])) << name << " element " << i;
      error += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    EXPECT_TRUE(sawNonZero || got.empty()) << name << " is all zeros";
    if (norm > 0)
      EXPECT_LE(std::sqrt(error / norm), tolerance(dtype))
          << name << " (" << dtypeName(dtype) << ")";
  }
}

//===----------------------------------------------------------------------===//
// Graph documents
//===----------------------------------------------------------------------===//

std::string input(const std::string &name, const std::string &dtype,
                  const std::string &shape) {
  return "\"" + name + "\": {\"shape\": " + shape + ", \"dtype\": \"" + dtype +
         "\"}";
}

std::string document(const std::string &dims, const std::string &inputs,
                     const std::string &nodes, const std::string &outputs) {
  return "{\"attnc\": 1, \"name\": \"t\", \"dims\": {" + dims +
         "}, \"inputs\": {" + inputs + "}, \"nodes\": [" + nodes +
         "], \"outputs\": [" + outputs + "]}";
}

/// Elementwise, reduction and softmax nodes of one float dtype.
std::string floatOps(const std::string &dtype) {
  return document(
      "",
      input("a", dtype, "[2, 3, 7, 13]") + ", " + input("b", dtype, "[13]") +
          ", " + input("c", dtype, "[7, 1]") + ", " +
          input("d", dtype, "[1, 13]") + ", " +
          input("m", "bool", "[3, 1, 13]"),
      R"({"name": "add", "op": "add", "a": "a", "b": "b"},
         {"name": "sub", "op": "sub", "a": "c", "b": "d"},
         {"name": "mul", "op": "mul", "a": "a", "b": "c"},
         {"name": "div", "op": "div", "a": "b", "b": "d"},
         {"name": "scaled", "op": "scale", "x": "a", "value": 0.37},
         {"name": "th", "op": "tanh", "x": "a"},
         {"name": "ex", "op": "exp", "x": "a"},
         {"name": "ng", "op": "neg", "x": "a"},
         {"name": "sq", "op": "mul", "a": "b", "b": "b"},
         {"name": "rt", "op": "sqrt", "x": "sq"},
         {"name": "cs", "op": "cos", "x": "a"},
         {"name": "sl", "op": "slice", "x": "a", "axis": -1, "start": 3, "end": 10},
         {"name": "sn", "op": "sin", "x": "sl"},
         {"name": "sm", "op": "softmax", "x": "a"},
         {"name": "filled", "op": "masked_fill", "x": "a", "mask": "m", "value": "-inf"},
         {"name": "rs", "op": "reduce_sum", "x": "a", "axis": -2})",
      R"("add", "sub", "mul", "div", "scaled", "th", "ex", "ng", "rt", "cs",
         "sl", "sn", "sm", "filled", "rs")");
}

std::string products(const std::string &dtype) {
  return document(
      "",
      input("x", dtype, "[2, 7, 13]") + ", " + input("w", dtype, "[5, 13]") +
          ", " + input("bias", dtype, "[5]") + ", " +
          input("y", dtype, "[13, 9]") + ", " +
          input("z", dtype, "[3, 1, 9, 13]"),
      R"({"name": "lin", "op": "linear", "x": "x", "w": "w", "b": "bias"},
         {"name": "mm", "op": "matmul", "a": "x", "b": "y"},
         {"name": "mt", "op": "matmul", "a": "x", "b": "z", "transpose_b": true})",
      R"("lin", "mm", "mt")");
}

std::vector<Case> cases() {
  std::vector<Case> all;
  all.push_back(
      {"MatmulOddSizes",
       document(
           "",
           input("a", "f32", "[7, 13]") + ", " + input("b", "f32", "[13, 5]"),
           R"({"name": "o", "op": "matmul", "a": "a", "b": "b"})", R"("o")"),
       {}});
  all.push_back(
      {"MatmulTransposeBBatched",
       document(
           "",
           input("a", "f32", "[2, 3, 7, 13]") + ", " +
               input("b", "f32", "[2, 3, 5, 13]"),
           R"({"name": "o", "op": "matmul", "a": "a", "b": "b", "transpose_b": true})",
           R"("o")"),
       {}});
  all.push_back({"MatmulBatchBroadcast",
                 document("",
                          input("a", "f32", "[2, 1, 7, 13]") + ", " +
                              input("b", "f32", "[3, 13, 6]") + ", " +
                              input("c", "f32", "[1, 6, 13]"),
                          R"({"name": "o", "op": "matmul", "a": "a", "b": "b"},
                   {"name": "t", "op": "matmul", "a": "a", "b": "c", "transpose_b": true})",
                          R"("o", "t")"),
                 {}});
  all.push_back({"MatmulVectors",
                 document("",
                          input("v", "f32", "[13]") + ", " +
                              input("m", "f32", "[2, 13, 5]") + ", " +
                              input("n", "f32", "[2, 7, 13]"),
                          R"({"name": "vm", "op": "matmul", "a": "v", "b": "m"},
                   {"name": "nv", "op": "matmul", "a": "n", "b": "v"},
                   {"name": "vv", "op": "matmul", "a": "v", "b": "v"})",
                          R"("vm", "nv", "vv")"),
                 {}});
  all.push_back({"MatmulTiles",
                 document("",
                          input("a", "f32", "[37, 70]") + ", " +
                              input("b", "f32", "[70, 45]") + ", " +
                              input("c", "f32", "[45, 70]"),
                          R"({"name": "o", "op": "matmul", "a": "a", "b": "b"},
                   {"name": "t", "op": "matmul", "a": "a", "b": "c", "transpose_b": true})",
                          R"("o", "t")"),
                 {}});
  all.push_back(
      {"Linear",
       document("",
                input("x", "f32", "[3, 11, 64]") + ", " +
                    input("w", "f32", "[70, 64]") + ", " +
                    input("b", "f32", "[70]") + ", " +
                    input("v", "f32", "[64]"),
                R"({"name": "o", "op": "linear", "x": "x", "w": "w", "b": "b"},
                   {"name": "nb", "op": "linear", "x": "x", "w": "w"},
                   {"name": "vec", "op": "linear", "x": "v", "w": "w", "b": "b"})",
                R"("o", "nb", "vec")"),
       {}});
  all.push_back({"ProductsF32", products("f32"), {}});
  all.push_back({"ProductsF16", products("f16"), {}});
  all.push_back({"ProductsBF16", products("bf16"), {}});
  all.push_back({"FloatOpsF32", floatOps("f32"), {}});
  all.push_back({"FloatOpsF16", floatOps("f16"), {}});
  all.push_back({"FloatOpsBF16", floatOps("bf16"), {}});
  all.push_back(
      {"SoftmaxAxes",
       document("", input("x", "f32", "[3, 5, 7]"),
                R"({"name": "s0", "op": "softmax", "x": "x", "axis": 0},
                   {"name": "s1", "op": "softmax", "x": "x", "axis": -2},
                   {"name": "s2", "op": "softmax", "x": "x", "axis": -1})",
                R"("s0", "s1", "s2")"),
       {}});
  // S > T: the first rows are entirely -inf, and their softmax is zeros.
  all.push_back({"SoftmaxAllMaskedRows",
                 document("", input("x", "f32", "[2, 5, 3]"),
                          R"({"name": "masked", "op": "causal_mask", "x": "x"},
                   {"name": "p", "op": "softmax", "x": "masked"},
                   {"name": "p0", "op": "softmax", "x": "masked", "axis": 0})",
                          R"("masked", "p", "p0")"),
                 {}});
  all.push_back({"CausalMask",
                 document("",
                          input("x", "f32", "[2, 5, 9]") + ", " +
                              input("y", "bf16", "[7, 7]"),
                          R"({"name": "wide", "op": "causal_mask", "x": "x"},
                   {"name": "square", "op": "causal_mask", "x": "y"})",
                          R"("wide", "square")"),
                 {},
                 /*exact=*/true});
  all.push_back(
      {"MaskedFill",
       document(
           "",
           input("x", "f16", "[2, 7, 13]") + ", " +
               input("m", "bool", "[2, 1, 13]") + ", " +
               input("k", "bool", "[7, 13]"),
           R"({"name": "f", "op": "masked_fill", "x": "x", "mask": "m", "value": "-inf"},
                   {"name": "g", "op": "masked_fill", "x": "x", "mask": "k", "value": -1.5e3})",
           R"("f", "g")"),
       {},
       /*exact=*/true});
  all.push_back(
      {"DataMovement",
       document(
           "",
           input("x", "f32", "[2, 3, 5, 4]") + ", " +
               input("y", "f32", "[2, 3, 5, 1]"),
           R"({"name": "r", "op": "reshape", "x": "x", "shape": [6, -1]},
                   {"name": "t", "op": "transpose", "x": "x", "perm": [0, 2, -1, 1]},
                   {"name": "u", "op": "unsqueeze", "x": "x", "axis": -1},
                   {"name": "u0", "op": "unsqueeze", "x": "x", "axis": 0},
                   {"name": "rp", "op": "repeat", "x": "x", "axis": -3, "times": 3},
                   {"name": "c", "op": "concat", "inputs": ["x", "y", "x"], "axis": -1},
                   {"name": "c0", "op": "concat", "inputs": ["x", "x"], "axis": 0},
                   {"name": "s0", "op": "slice", "x": "x", "axis": 0, "start": 1, "end": 2},
                   {"name": "s1", "op": "slice", "x": "x", "axis": -3, "start": 1, "end": 3},
                   {"name": "s2", "op": "slice", "x": "t", "axis": 2, "start": 0, "end": 3},
                   {"name": "s3", "op": "slice", "x": "x", "axis": 3, "start": 0, "end": 4})",
           R"("r", "t", "u", "u0", "rp", "c", "c0", "s0", "s1", "s2", "s3")"),
       {},
       /*exact=*/true});
  all.push_back(
      {"BoolAndI32",
       document(
           "",
           input("m", "bool", "[2, 3, 5]") + ", " +
               input("i", "i32", "[3, 5]") + ", " + input("j", "i32", "[5]"),
           R"({"name": "mt", "op": "transpose", "x": "m", "perm": [2, 0, 1]},
                   {"name": "mr", "op": "repeat", "x": "m", "axis": 2, "times": 2},
                   {"name": "mc", "op": "concat", "inputs": ["m", "m"], "axis": 1},
                   {"name": "ms", "op": "slice", "x": "m", "axis": -1, "start": 2, "end": 5},
                   {"name": "is", "op": "slice", "x": "i", "axis": 0, "start": 1, "end": 3},
                   {"name": "add", "op": "add", "a": "i", "b": "j"},
                   {"name": "sub", "op": "sub", "a": "j", "b": "i"},
                   {"name": "mul", "op": "mul", "a": "i", "b": "j"},
                   {"name": "ng", "op": "neg", "x": "i"},
                   {"name": "rs", "op": "reduce_sum", "x": "i", "axis": 0, "keepdims": true})",
           R"("mt", "mr", "mc", "ms", "is", "add", "sub", "mul", "ng", "rs")"),
       {}});
  all.push_back(
      {"ReduceSum",
       document("", input("x", "f32", "[3, 5, 7]"),
                R"({"name": "r0", "op": "reduce_sum", "x": "x", "axis": 0},
                   {"name": "r1", "op": "reduce_sum", "x": "x", "axis": -2, "keepdims": true},
                   {"name": "r2", "op": "reduce_sum", "x": "r0", "axis": -1},
                   {"name": "r3", "op": "reduce_sum", "x": "r2", "axis": 0})",
                R"("r0", "r1", "r2", "r3")"),
       {}});
  // Run-time sizes: a GPT-2 style projection, split into heads, and a
  // padding mask broadcast over the heads.
  all.push_back(
      {"RuntimeDims",
       document(
           R"("B": null, "S": null)",
           input("x", "f32", R"(["B", "S", 32])") + ", " +
               input("w", "f32", "[48, 32]") + ", " +
               input("b", "f32", "[48]") + ", " +
               input("pad", "bool", R"(["B", 1, 1, "S"])") + ", " +
               input("bias", "f32", R"([1, "S"])"),
           R"({"name": "qkv", "op": "linear", "x": "x", "w": "w", "b": "b"},
                   {"name": "h", "op": "reshape", "x": "qkv", "shape": ["B", "S", 3, -1]},
                   {"name": "ht", "op": "transpose", "x": "h", "perm": [0, 2, 1, 3]},
                   {"name": "s", "op": "matmul", "a": "ht", "b": "ht", "transpose_b": true},
                   {"name": "sb", "op": "add", "a": "s", "b": "bias"},
                   {"name": "sm", "op": "masked_fill", "x": "sb", "mask": "pad", "value": "-inf"},
                   {"name": "sc", "op": "causal_mask", "x": "sm"},
                   {"name": "p", "op": "softmax", "x": "sc"},
                   {"name": "o", "op": "matmul", "a": "p", "b": "ht"},
                   {"name": "rp", "op": "repeat", "x": "o", "axis": 1, "times": 2},
                   {"name": "rs", "op": "reduce_sum", "x": "rp", "axis": 2},
                   {"name": "half", "op": "slice", "x": "o", "axis": -1, "start": 8, "end": 16},
                   {"name": "rot", "op": "cos", "x": "half"})",
           R"("o", "rs", "rot")"),
       {{"B", 2}, {"S", 7}}});
  all.push_back(
      {"AttentionSizes",
       document(
           R"("B": null, "S": null, "T": null)",
           input("q", "f32", R"(["B", 4, "S", 8])") + ", " +
               input("k", "f32", R"(["B", 2, "T", 8])") + ", " +
               input("v", "f32", R"(["B", 2, "T", 6])") + ", " +
               input("qs", "f32", R"(["B", "S", 4, 8])") + ", " +
               input("ks", "f32", R"(["B", "T", 2, 8])") + ", " +
               input("vs", "f32", R"(["B", "T", 2, 6])"),
           R"({"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v", "return_lse": true},
                   {"name": "os", "op": "attention", "q": "qs", "k": "ks", "v": "vs",
                    "layout": "bshd", "return_lse": true})",
           R"("o", "o.lse", "os", "os.lse")"),
       {{"B", 2}, {"S", 3}, {"T", 5}}});
  return all;
}

class PrimitiveKernels : public ::testing::TestWithParam<Case> {};

bool hostRunsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// Tests that every node computes what the reference computes, and that
// resultSizes gives every result's shape.
TEST_P(PrimitiveKernels, MatchReference) {
  if (!hostRunsAvx2())
    GTEST_SKIP() << "this CPU cannot run x86-64-avx2 code";
  check(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Ops, PrimitiveKernels, ::testing::ValuesIn(cases()),
                         [](const auto &info) {
                           return std::string(info.param.name);
                         });

// Tests that the kernels also build and run for the baseline and the
// host's own target (f16 conversions without F16C are libcalls on plain
// x86-64, AVX-512 changes what LLVM vectorises, and linear's packed GEMM
// computes in vectors of the target's width: 4, 8 or 16 lanes).
TEST(PrimitiveKernelTargets, EveryTarget) {
  for (const char *target : {"x86-64", "host"}) {
    SCOPED_TRACE(target);
    check({"FloatOps", floatOps("f32"), {}}, target);
    check({"ProductsF16", products("f16"), {}}, target);
    check({"ProductsBF16", products("bf16"), {}}, target);
    for (const Case &c : cases())
      if (std::string(c.name) == "Linear")
        check(c, target);
  }
}

// Tests that attention, which is not a primitive, is an internal error
// naming the op, and that the builder is left usable.
TEST(PrimitiveKernelErrors, AttentionIsNotAPrimitive) {
  Graph graph = parseGraph(
      document(
          "",
          input("q", "f32", "[1, 2, 3, 4]") + ", " +
              input("k", "f32", "[1, 2, 3, 4]") + ", " +
              input("v", "f32", "[1, 2, 3, 4]"),
          R"({"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v"})",
          R"("o")"),
      "a.json");
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module = importGraph(graph, context);
  mlir::Operation *attention = nullptr;
  module->walk([&](mlir::attn::AttentionOp op) { attention = op; });
  ASSERT_NE(attention, nullptr);
  mlir::OpBuilder builder(&context);
  builder.setInsertionPoint(attention);
  try {
    emitPrimitive(builder, attention->getLoc(), attention, {}, {}, nullptr,
                  nullptr, 8);
    FAIL() << "no error";
  } catch (const std::logic_error &error) {
    EXPECT_NE(std::string(error.what()).find("attn.attention"),
              std::string::npos)
        << error.what();
  }
  // Operand sizes of the wrong rank are an internal error too.
  llvm::SmallVector<llvm::SmallVector<mlir::Value>> wrong(3);
  EXPECT_THROW(resultSizes(builder, attention->getLoc(), attention, wrong),
               std::logic_error);
}

// Times GPT-2's projections, [256, 768] x [768, 768], as linear (w read
// along k) and as matmul (b read along n). Not a check: run with
// --gtest_also_run_disabled_tests; ATTNC_DUMP_IR=DIR writes the LLVM IR.
TEST(PrimitiveKernelSpeed, DISABLED_Gpt2Projection) {
  const char *nodes[] = {
      R"({"name": "o", "op": "linear", "x": "x", "w": "w", "b": "b"})",
      R"({"name": "o", "op": "matmul", "a": "x", "b": "w"})"};
  for (const char *node : nodes) {
    std::string text = document("",
                                input("x", "f32", "[256, 768]") + ", " +
                                    input("w", "f32", "[768, 768]") + ", " +
                                    input("b", "f32", "[768]"),
                                node, R"("o")");
    Graph graph = parseGraph(text, "speed.json");
    std::string llvmIR;
    std::unique_ptr<Compiled> compiled = compile(graph, {}, "host", &llvmIR);
    if (const char *dir = std::getenv("ATTNC_DUMP_IR")) {
      std::string path = std::string(dir) + "/" + graph.nodes[0].opName + ".ll";
      std::FILE *file = std::fopen(path.c_str(), "w");
      std::fwrite(llvmIR.data(), 1, llvmIR.size(), file);
      std::fclose(file);
    }
    std::vector<Tensor> inputs = randomInputs(graph, {}, 1);
    std::vector<float> out(256 * 768);
    std::vector<int64_t> sizes(compiled->sizeCount);
    std::vector<uint8_t> padding(8);
    void *args[kArgs] = {inputs[0].data.data(), inputs[1].data.data(),
                         inputs[2].data.data(), out.data(), sizes.data()};
    for (void *&arg : args)
      if (!arg)
        arg = padding.data();
    call(compiled->kernel, args);
    constexpr int kRepeats = 5;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kRepeats; ++i)
      call(compiled->kernel, args);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        kRepeats;
    std::printf("%s 256x768x768: %.2f ms, %.1f GFLOP/s\n",
                graph.nodes[0].opName.c_str(), seconds * 1e3,
                2.0 * 256 * 768 * 768 / seconds * 1e-9);
  }
}

} // namespace
