//===- Graph.h - The validated attention graph --------------------*- C++
//-*-===//
//
// The in-memory form of a graph document (docs/graph-format.md) after parsing,
// validation and shape inference. Every value has a known dtype and a shape
// whose dims are fixed integers or sizes named in `dims` and bound at run time.
// Everything downstream (the reference evaluator, MLIR import) reads this and
// never the JSON.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_GRAPH_GRAPH_H
#define ATTNC_GRAPH_GRAPH_H

#include "Support/DType.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace attnc {

/// One dimension: a fixed size, or the name of a run-time size (`null` in
/// `dims`). Dims named with a fixed value in `dims` are resolved to integers
/// while parsing, so two dims are equal exactly when they compare equal here.
struct Dim {
  int64_t size = 1;   ///< The size when fixed; unused when symbolic.
  std::string symbol; ///< The run-time size's name; empty when fixed.

  static Dim fixed(int64_t size) { return Dim{size, {}}; }
  static Dim named(std::string symbol) { return Dim{0, std::move(symbol)}; }
  bool isFixed() const { return symbol.empty(); }
  bool isOne() const { return isFixed() && size == 1; }
  bool operator==(const Dim &other) const {
    return symbol == other.symbol && (!isFixed() || size == other.size);
  }
  bool operator!=(const Dim &other) const { return !(*this == other); }
  /// "64" or "S".
  std::string str() const;
};

using Shape = std::vector<Dim>;

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// "f32[B, 12, S, 64]".
  std::string str() const;
};

/// "[B, 12, S, 64]".
std::string formatShape(const Shape &shape);

/// Index of a value in `Graph::values`.
using ValueId = int;

//===----------------------------------------------------------------------===//
// Primitive ops, as a model exporter writes them.
//===----------------------------------------------------------------------===//

struct MatmulOp {
  ValueId a, b;
  bool transposeB = false;
};
struct LinearOp {
  ValueId x, w;
  std::optional<ValueId> bias;
};
enum class BinaryKind { Add, Sub, Mul, Div };
struct BinaryOp {
  BinaryKind kind;
  ValueId a, b;
};
struct ScaleOp {
  ValueId x;
  double value;
};
enum class UnaryKind { Tanh, Exp, Neg, Sqrt, Cos, Sin };
struct UnaryOp {
  UnaryKind kind;
  ValueId x;
};
struct SoftmaxOp {
  ValueId x;
  int64_t axis; ///< Normalised to [0, rank).
};
struct MaskedFillOp {
  ValueId x, mask;
  double value; ///< May be -infinity.
};
struct CausalMaskOp {
  ValueId x;
};
/// Entries (i, j) of [..., S, T] outside i' - left <= j <= i' + right, with
/// i' = i + T - S, set to -inf (attention's window mask, as a primitive).
struct WindowMaskOp {
  ValueId x;
  int64_t left, right; ///< >= 0.
};
/// The target shape is the result's type.
struct ReshapeOp {
  ValueId x;
};
struct TransposeOp {
  ValueId x;
  std::vector<int64_t> perm; ///< Normalised, a permutation of [0, rank).
};
struct UnsqueezeOp {
  ValueId x;
  int64_t axis; ///< Normalised to [0, rank of the result).
};
struct RepeatOp {
  ValueId x;
  int64_t axis; ///< Normalised.
  int64_t times;
};
/// x[..., start:end, ...] along `axis`, whose size is fixed.
struct SliceOp {
  ValueId x;
  int64_t axis; ///< Normalised.
  int64_t start, end;
};
struct ReduceSumOp {
  ValueId x;
  int64_t axis; ///< Normalised.
  bool keepdims = false;
};
struct ConcatOp {
  std::vector<ValueId> inputs;
  int64_t axis; ///< Normalised.
};

//===----------------------------------------------------------------------===//
// The fused attention op.
//===----------------------------------------------------------------------===//

enum class Layout { BHSD, BSHD };
enum class ScoreKind { Dot, General, Additive, Cosine };
enum class BiasKind { Tensor, Alibi };
enum class MaskKind { Causal, Window, KeyLength, Tensor };

struct AttentionScore {
  ScoreKind kind = ScoreKind::Dot;
  std::optional<ValueId> w;      ///< general: [Dk, Dk].
  std::optional<ValueId> wq, wk; ///< additive: [A, Dk] each.
  std::optional<ValueId> va;     ///< additive: [A].
};

struct AttentionBias {
  BiasKind kind;
  /// tensor: the bias, broadcastable to [B, Hq, S, T]. alibi: the slopes
  /// [Hq], or none for the standard slopes.
  std::optional<ValueId> input;
};

struct AttentionMask {
  MaskKind kind;
  int64_t left = 0, right = 0;  ///< window only.
  std::optional<ValueId> input; ///< key_length: i32 [B]; tensor: bool.
};

struct AttentionOp {
  ValueId q, k, v;
  Layout layout = Layout::BHSD;
  AttentionScore score;
  std::optional<double> scale; ///< none = "default".
  std::optional<double> softcap;
  std::vector<AttentionBias> biases;
  std::vector<AttentionMask> masks;
  bool returnLse = false;
};

/// The sizes one attention op works on, read from its operand types.
struct AttentionSizes {
  Dim batch, queryHeads, kvHeads, queryLen, keyLen, keyDim, valueDim;
};

using OpAttributes =
    std::variant<MatmulOp, LinearOp, BinaryOp, ScaleOp, UnaryOp, SoftmaxOp,
                 MaskedFillOp, CausalMaskOp, WindowMaskOp, ReshapeOp,
                 TransposeOp, UnsqueezeOp, RepeatOp, SliceOp, ReduceSumOp,
                 ConcatOp, AttentionOp>;

struct Node {
  std::string name;
  std::string opName;  ///< As written: "matmul", "add", "attention", ...
  std::string pointer; ///< JSON pointer of the node, "/nodes/3".
  OpAttributes op;
  /// The values it defines: `name`, and `name.lse` for an attention with
  /// return_lse.
  std::vector<ValueId> results;

  /// Every value the node reads, in a fixed order.
  std::vector<ValueId> operands() const;
  template <typename T> const T *getIf() const { return std::get_if<T>(&op); }
};

struct Value {
  std::string name;
  TensorType type;
  int producer = -1;   ///< Index in Graph::nodes, or -1 for a graph input.
  int inputIndex = -1; ///< Position in Graph::inputs for a graph input.
  bool isInput() const { return producer < 0; }
};

/// A relation between sizes that equal shapes do not express: `multiple` must
/// be a multiple of `divisor`. Checked at run time for what is not fixed.
struct SizeDivisibility {
  Dim multiple, divisor;
  std::string what; ///< "attention o: query heads Hq must be a multiple ..."
};

/// A size named in `dims`; `fixed` is empty for a run-time size.
struct DimDecl {
  std::string name;
  std::optional<int64_t> fixed;
};

struct Graph {
  std::string name;
  std::string file; ///< Where it was read from, for messages.
  std::vector<DimDecl> dims;
  std::vector<Value> values;
  std::vector<ValueId> inputs;  ///< In written order: the argument order.
  std::vector<Node> nodes;      ///< In written (topological) order.
  std::vector<ValueId> outputs; ///< In written order.
  /// For a graph imported from a model (ONNX): the model's names of its
  /// inputs and outputs -> value names.
  std::map<std::string, std::string> sourceNames;

  const Value &value(ValueId id) const { return values[id]; }
  const TensorType &type(ValueId id) const { return values[id].type; }
  /// The value called `name`, if any.
  std::optional<ValueId> lookup(std::string_view name) const;
  /// Names of the run-time sizes some input's shape uses (the kernel's
  /// dims; a call binds them from its inputs), in declaration order.
  std::vector<std::string> runtimeDims() const;
  AttentionSizes attentionSizes(const AttentionOp &op) const;
  /// The divisibilities the run-time sizes must meet: query heads a multiple
  /// of kv heads for each attention whose head counts are not both fixed.
  std::vector<SizeDivisibility> divisibilities() const;
};

/// Whether `name` matches [A-Za-z_][A-Za-z0-9_]*, as graph, value and
/// dim names must (they name C symbols and identifiers).
bool isIdentifier(const std::string &name);

/// Why `name` cannot name a kernel's C symbols and header (a C or C++
/// keyword, main, the runtime's attnrt prefix, a reserved identifier), or
/// nullopt when it can.
std::optional<std::string> reservedSymbolName(const std::string &name);

/// Parses, validates and infers the shapes of a graph document. Throws
/// UserError("FILE: /json/pointer: message") for any problem.
Graph parseGraph(std::string_view text, const std::string &file);
/// The largest graph file read (64 MiB).
constexpr size_t kMaxGraphBytes = size_t(64) << 20;

/// Reads and parses a graph file.
Graph loadGraph(const std::string &path);

/// Largest number of elements one tensor may have (2^40): protects every
/// later allocation from a graph that declares absurd sizes.
constexpr int64_t kMaxElements = int64_t(1) << 40;

//===----------------------------------------------------------------------===//
// Run-time sizes.
//===----------------------------------------------------------------------===//

/// Values of the run-time sizes, by name.
using DimBindings = std::map<std::string, int64_t>;

/// The concrete shape of `shape` under `bindings`; every symbol must be bound.
std::vector<int64_t> concreteShape(const Shape &shape,
                                   const DimBindings &bindings);

/// The bytes of a tensor of `type` under `bindings` (a double: a product of
/// large sizes may not fit an int64).
double tensorBytes(const TensorType &type, const DimBindings &bindings);

/// Checks that every run-time size is bound to a value > 0, that the
/// graph's divisibilities hold and that no value of the graph exceeds
/// kMaxElements under the bindings. Throws UserError.
void checkBindings(const Graph &graph, const DimBindings &bindings);

} // namespace attnc

#endif // ATTNC_GRAPH_GRAPH_H
