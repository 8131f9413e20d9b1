//===- OnnxImport.cpp - ONNX models as attnc graphs -----------------------===//
//
// A symbolic evaluation of the ONNX graph in topological order. Every ONNX
// value becomes one of
//   - a graph tensor (an attnc input or node, with dtype and symbolic shape),
//   - a constant (initializers, Constant nodes, and everything computed from
//     constants and shapes: integers are affine in the run-time sizes, so
//     Shape -> Gather -> Concat -> Reshape folds to a target shape),
//   - a fill (ConstantOfShape of a run-time shape), or
//   - a score mask: a [.., rows, cols] tensor with one value where key j
//     of row i is kept (between diagonals, j <= i + upper and j >= i +
//     lower, and where bool views of model inputs hold) and another
//     elsewhere (a sliced causal buffer, a Trilu, positions compared, a
//     padding mask And-ed in), which becomes causal_mask, window_mask and
//     an additive padding mask where it masks scores.
// Ops on graph tensors emit graph-format nodes; initializers they read are
// materialised as graph inputs carrying their data.
//
//===----------------------------------------------------------------------===//

#include "Onnx/OnnxImport.h"
#include "Onnx/OnnxModelFile.h"

#include "Graph/Graph.h"
#include "Graph/ShapeRules.h"
#include "Support/Error.h"
#include "Support/Float16.h"
#include "Support/TextFile.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <variant>

namespace attnc {

namespace {

using json = nlohmann::ordered_json;
namespace fs = std::filesystem;

/// The largest model file read whole (protobuf's own message limit); bigger
/// models keep their weights in external-data files.
constexpr size_t kMaxModelBytes = size_t(2) << 30;
/// Constants folded at import are small (shapes, masks, rotary tables);
/// beyond this they would make compile time explode.
constexpr int64_t kMaxFoldedElements = int64_t(1) << 24;
/// A fill or additive value at or below this masks a score: exp of it (plus
/// any f32 score) is exactly 0, as for -inf, in every row with a kept key.
constexpr double kMaskingValue = -1e4;

/// The failure of one node: the importer adds the file and the node.
struct NodeError {
  std::string message;
};

[[noreturn]] void unsupported(const std::string &message) {
  throw NodeError{message};
}

//===----------------------------------------------------------------------===//
// Integers affine in the run-time sizes.
//===----------------------------------------------------------------------===//

/// x + y and x · y of integers a model computes (sizes, indices), or the
/// node fails: a model's constants may be anything, int64 sums may not wrap.
int64_t checkedAdd(int64_t x, int64_t y) {
  int64_t sum;
  if (__builtin_add_overflow(x, y, &sum))
    unsupported("integer arithmetic overflows int64");
  return sum;
}
int64_t checkedMul(int64_t x, int64_t y) {
  int64_t product;
  if (__builtin_mul_overflow(x, y, &product))
    unsupported("integer arithmetic overflows int64");
  return product;
}

struct Affine {
  int64_t constant = 0;
  std::map<std::string, int64_t> terms; ///< symbol -> coefficient, non-zero

  static Affine of(int64_t value) { return Affine{value, {}}; }
  static Affine of(const Dim &dim) {
    if (dim.isFixed())
      return of(dim.size);
    return Affine{0, {{dim.symbol, 1}}};
  }
  bool isConstant() const { return terms.empty(); }
  bool operator==(const Affine &other) const {
    return constant == other.constant && terms == other.terms;
  }
  Affine operator+(const Affine &other) const {
    Affine sum = *this;
    sum.constant = checkedAdd(sum.constant, other.constant);
    for (const auto &[symbol, coefficient] : other.terms) {
      int64_t &total = sum.terms[symbol];
      total = checkedAdd(total, coefficient);
      if (total == 0)
        sum.terms.erase(symbol);
    }
    return sum;
  }
  Affine scaled(int64_t factor) const {
    if (factor == 0)
      return of(0);
    Affine product{checkedMul(constant, factor), terms};
    for (auto &term : product.terms)
      term.second = checkedMul(term.second, factor);
    return product;
  }
  Affine operator-(const Affine &other) const {
    return *this + other.scaled(-1);
  }
  /// The dim this is, when it is a fixed size or exactly one size.
  std::optional<Dim> asDim() const {
    if (isConstant())
      return Dim::fixed(constant);
    if (constant == 0 && terms.size() == 1 && terms.begin()->second == 1)
      return Dim::named(terms.begin()->first);
    return std::nullopt;
  }
  /// -1, 0 or 1 when the sign is certain for every value of the run-time
  /// sizes (each at least 1).
  std::optional<int> sign() const {
    bool allPositive = true, allNegative = true;
    int64_t low = constant, high = constant; // over sizes = 1
    for (const auto &[symbol, coefficient] : terms) {
      allPositive &= coefficient > 0;
      allNegative &= coefficient < 0;
      low += coefficient;
      high += coefficient;
    }
    if (terms.empty())
      return constant > 0 ? 1 : constant < 0 ? -1 : 0;
    if (allPositive && low > 0)
      return 1; // Grows with every size from a positive value.
    if (allNegative && high < 0)
      return -1;
    return std::nullopt;
  }
  std::string str() const {
    std::string text;
    for (const auto &[symbol, coefficient] : terms)
      text += (text.empty() ? "" : " + ") +
              (coefficient == 1 ? "" : std::to_string(coefficient) + "*") +
              symbol;
    if (constant || text.empty())
      text += (text.empty() ? "" : " + ") + std::to_string(constant);
    return text;
  }
};

//===----------------------------------------------------------------------===//
// What an ONNX value is during the import.
//===----------------------------------------------------------------------===//

using ElemType = int32_t; ///< onnx::TensorProto::DataType

bool isFloatType(ElemType type) {
  return type == onnx::TensorProto::FLOAT ||
         type == onnx::TensorProto::FLOAT16 ||
         type == onnx::TensorProto::BFLOAT16 ||
         type == onnx::TensorProto::DOUBLE;
}

std::string elemTypeName(ElemType type) {
  if (onnx::TensorProto::DataType_IsValid(type))
    return onnx::TensorProto::DataType_Name(
        static_cast<onnx::TensorProto::DataType>(type));
  return "type " + std::to_string(type);
}

/// A value of the attnc graph.
struct GraphTensor {
  std::string name;
  DType dtype;
  Shape shape;
  /// The graph input this is a view of (reshaped, transposed, unsqueezed),
  /// if any: a Cast of such a view retypes the input instead.
  std::string root;
  /// A bool view of an int input not retyped yet (Cast to bool): true where
  /// the input is non-zero. Its consumer decides the input's type: bool for
  /// a mask, float for Where(view, a, b) computed as arithmetic.
  bool intTruth = false;
  /// A bool view negated (Not): only Where reads it, with its branches
  /// swapped.
  bool negated = false;
};

/// A value known at import. Integers (and bools, as 0/1) are affine in the
/// run-time sizes; floats are numbers.
struct Constant {
  ElemType type = onnx::TensorProto::FLOAT;
  std::vector<int64_t> shape;
  std::vector<double> numbers;  ///< Floats.
  std::vector<Affine> integers; ///< Everything else.
  std::string sourceName;       ///< The initializer's name, if one.

  bool isFloat() const { return isFloatType(type); }
  int64_t size() const {
    return isFloat() ? int64_t(numbers.size()) : int64_t(integers.size());
  }
  /// Element `i` as a number, when it is one.
  std::optional<double> number(int64_t i) const {
    if (isFloat())
      return numbers[i];
    if (!integers[i].isConstant())
      return std::nullopt;
    return double(integers[i].constant);
  }
  std::optional<double> scalar() const {
    if (size() != 1)
      return std::nullopt;
    return number(0);
  }
};

/// ConstantOfShape of a shape with run-time sizes.
struct Fill {
  ElemType type;
  Shape shape;
  double value;
};

/// [.., rows, cols]: `inside` where key j of row i is kept, `outside`
/// elsewhere. Kept: j <= i + upper and j >= i + lower (for the bounds
/// present: one makes a triangle, two a band) and every tensor part true.
struct ScoreMask {
  ElemType type;
  Shape shape; ///< Leading dims are 1, or the tensor parts'.
  std::optional<Affine> upper, lower;
  /// Bool views of model inputs (a padding mask), broadcast to `shape`.
  std::vector<GraphTensor> tensors;
  double inside, outside;

  Affine rows() const { return Affine::of(shape[shape.size() - 2]); }
  Affine cols() const { return Affine::of(shape.back()); }
  /// Whether two tensor parts are one view with one polarity.
  static bool samePart(const GraphTensor &x, const GraphTensor &y) {
    return x.name == y.name && x.negated == y.negated;
  }
  /// Whether both keep the same keys (so their values combine elementwise).
  bool sameKeys(const ScoreMask &other) const {
    return upper == other.upper && lower == other.lower &&
           std::equal(tensors.begin(), tensors.end(), other.tensors.begin(),
                      other.tensors.end(), samePart);
  }
};

/// Positions: the value at a coordinate is `start` plus the coordinate
/// along `axis` (Range over a run-time size, unsqueezed and expanded).
struct Index {
  ElemType type;
  Shape shape;
  int64_t axis;
  Affine start;
};

/// `inner` [d0, .., dn-1, F] seen as [d0·..·dn-1, F]: exporters flatten
/// the leading axes around a Gemm; attnc cannot name the product, so the
/// projection applies to `inner` and the reshape back restores the axes.
struct Flat {
  GraphTensor inner;
  /// [product, F] with F inner's last size (a projection may apply);
  /// otherwise flattened whole, only to be reshaped back.
  bool rows = true;
};

/// Flat positions Σ coefficient·coordinate[axis] + start (positions scaled
/// and added: the row-major offsets of a flattened tensor).
struct Grid {
  ElemType type;
  Shape shape;
  std::map<int64_t, Affine> coefficients; ///< axis -> coefficient
  Affine start;
};

/// Positions stacked along a last axis (Concat of unsqueezed positions),
/// the indices of a GatherND: component k is parts[k].
struct IndexTuple {
  Shape shape; ///< Without the stacking axis.
  std::vector<Index> parts;
};

/// Flatten(x, axis) of a graph tensor: [prod(x[:axis]), prod(x[axis:])].
struct Flattened {
  GraphTensor inner;
  int64_t axis;
};

/// `inner` [d0, .., dk-1, t0, .., tn-1] seen as [d0·..·dk-1, t0, .., tn-1]
/// (n ≥ 2): PyTorch's dynamo export transposes kᵀ in 3-D that way, the batch
/// and heads merged. Only a transpose of the t axes (applied to `inner`) and
/// a reshape back to `inner`'s own leading axes read it.
struct LeadingAxesMerged {
  GraphTensor inner;
  size_t leading; ///< k
};

/// IsNaN of a softmax's probabilities: only Where(test, 0, probabilities)
/// reads it, PyTorch's guard for rows whose every key is masked.
struct SoftmaxNanTest {
  GraphTensor probabilities;
};

using Val =
    std::variant<GraphTensor, Constant, Fill, ScoreMask, Index, Flat, Grid,
                 IndexTuple, Flattened, LeadingAxesMerged, SoftmaxNanTest>;

/// The value of a one-element constant.
std::optional<double> scalarOf(const Val &v) {
  if (const auto *c = std::get_if<Constant>(&v))
    return c->scalar();
  return std::nullopt;
}

/// The one value every element of `c` holds, if it holds one.
std::optional<double> uniformValue(const Constant &c) {
  if (c.size() == 0)
    return std::nullopt;
  std::optional<double> first = c.number(0);
  for (int64_t i = 1; first && i < c.size(); ++i)
    if (c.number(i) != first)
      return std::nullopt;
  return first;
}

//===----------------------------------------------------------------------===//
// Reading tensors.
//===----------------------------------------------------------------------===//

/// Raw little-endian element bytes of a tensor, from raw_data, the typed
/// fields or an external-data file beside the model.
class TensorReader {
public:
  TensorReader(const std::string &modelPath)
      : directory(fs::path(modelPath).parent_path()) {}

  Constant read(const onnx::TensorProto &proto) {
    Constant constant;
    constant.type = proto.data_type();
    constant.sourceName = proto.name();
    int64_t count = 1;
    for (int64_t dim : proto.dims()) {
      if (dim < 0 || (dim > 0 && count > kMaxElements / dim))
        unsupported("the tensor has an invalid shape");
      constant.shape.push_back(dim);
      count *= dim;
    }
    size_t width = elementBytes(constant.type);
    std::string raw;
    bool hasRaw = false;
    if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
      raw = external(proto, count * width);
      hasRaw = true;
    } else if (proto.has_raw_data()) {
      raw = proto.raw_data();
      hasRaw = true;
    }
    if (hasRaw && int64_t(raw.size()) != count * int64_t(width))
      unsupported("the tensor holds " + std::to_string(raw.size()) +
                  " bytes, but its shape needs " +
                  std::to_string(count * int64_t(width)));
    auto rawAt = [&](int64_t i) -> uint64_t {
      uint64_t bits = 0;
      std::memcpy(&bits, raw.data() + i * width, width);
      return bits;
    };
    auto typedCount = [&](int64_t available) {
      if (available != count)
        unsupported("the tensor holds " + std::to_string(available) +
                    " values, but its shape needs " + std::to_string(count));
    };
    switch (constant.type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      constant.numbers.resize(count);
      bool isDouble = constant.type == onnx::TensorProto::DOUBLE;
      bool isSingle = constant.type == onnx::TensorProto::FLOAT;
      if (!hasRaw)
        typedCount(isDouble   ? proto.double_data_size()
                   : isSingle ? proto.float_data_size()
                              : proto.int32_data_size());
      for (int64_t i = 0; i < count; ++i) {
        double value;
        if (isDouble)
          value =
              hasRaw ? detail::bitCast<double>(rawAt(i)) : proto.double_data(i);
        else if (isSingle)
          value = hasRaw ? detail::bitCast<float>(uint32_t(rawAt(i)))
                         : proto.float_data(i);
        else {
          uint16_t bits =
              hasRaw ? uint16_t(rawAt(i)) : uint16_t(proto.int32_data(i));
          value = constant.type == onnx::TensorProto::FLOAT16
                      ? halfToFloat(bits)
                      : bfloat16ToFloat(bits);
        }
        constant.numbers[i] = value;
      }
      break;
    }
    default: {
      constant.integers.resize(count);
      bool is64 = constant.type == onnx::TensorProto::INT64;
      if (!hasRaw)
        typedCount(is64 ? proto.int64_data_size() : proto.int32_data_size());
      for (int64_t i = 0; i < count; ++i) {
        int64_t value;
        if (hasRaw) {
          uint64_t bits = rawAt(i);
          value = isSigned(constant.type) && width < 8 &&
                          (bits >> (8 * width - 1)) & 1
                      ? int64_t(bits | (~uint64_t(0) << (8 * width)))
                      : int64_t(bits);
        } else {
          value = is64 ? proto.int64_data(i) : proto.int32_data(i);
        }
        constant.integers[i] = Affine::of(value);
      }
    }
    }
    return constant;
  }

private:
  fs::path directory;

  static bool isSigned(ElemType type) {
    return type == onnx::TensorProto::INT8 ||
           type == onnx::TensorProto::INT16 ||
           type == onnx::TensorProto::INT32 || type == onnx::TensorProto::INT64;
  }

  static size_t elementBytes(ElemType type) {
    switch (type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::UINT32:
      return 4;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
      return 8;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
      return 2;
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      return 1;
    default:
      unsupported("the tensor has element type " + elemTypeName(type) +
                  ", which attnc does not read");
    }
  }

  /// The bytes an external-data entry names: a file relative to the model's
  /// directory (never outside it), an offset and a length.
  std::string external(const onnx::TensorProto &proto, int64_t bytes) {
    std::string location;
    int64_t offset = 0, length = -1;
    for (const onnx::StringStringEntryProto &entry : proto.external_data()) {
      try {
        if (entry.key() == "location")
          location = entry.value();
        else if (entry.key() == "offset")
          offset = std::stoll(entry.value());
        else if (entry.key() == "length")
          length = std::stoll(entry.value());
      } catch (const std::exception &) {
        unsupported("external data " + entry.key() + " '" + entry.value() +
                    "' is not a number");
      }
    }
    fs::path relative(location);
    if (location.empty() || relative.is_absolute() ||
        std::any_of(relative.begin(), relative.end(),
                    [](const fs::path &part) { return part == ".."; }))
      unsupported("external data location '" + location +
                  "' must be a file name relative to the model's directory");
    if (length >= 0 && length != bytes)
      unsupported("external data length " + std::to_string(length) +
                  " does not match its shape (" + std::to_string(bytes) +
                  " bytes)");
    fs::path file = directory / relative;
    std::ifstream in(file, std::ios::binary);
    if (!in)
      unsupported("cannot open external data " + file.string() + ": " +
                  std::strerror(errno));
    std::string data(size_t(bytes), '\0');
    if (offset < 0 || !in.seekg(offset) || !in.read(data.data(), bytes))
      unsupported("external data " + file.string() + " has no " +
                  std::to_string(bytes) + " bytes at offset " +
                  std::to_string(offset));
    return data;
  }
};

//===----------------------------------------------------------------------===//
// Names.
//===----------------------------------------------------------------------===//

/// Unique identifiers for graph values and dims.
class NameTable {
public:
  /// Keeps `name` from make(), for a later rename.
  void reserve(const std::string &name) { used.insert(name); }
  std::string make(const std::string &base) {
    std::string name = onnxIdentifier(base);
    std::string unique = name;
    for (int n = 2; !used.insert(unique).second; ++n)
      unique = name + "_" + std::to_string(n);
    return unique;
  }

private:
  std::set<std::string> used;
};

//===----------------------------------------------------------------------===//
// The importer.
//===----------------------------------------------------------------------===//

std::string shapeJson(const Shape &shape, json &out) {
  out = json::array();
  for (const Dim &dim : shape)
    if (dim.isFixed())
      out.push_back(dim.size);
    else
      out.push_back(dim.symbol);
  return {};
}

json shapeToJson(const Shape &shape) {
  json out;
  shapeJson(shape, out);
  return out;
}

/// x op y for the graph format's add, sub, mul, div.
double arithmetic(const std::string &op, double x, double y) {
  return op == "add"   ? x + y
         : op == "sub" ? x - y
         : op == "mul" ? x * y
                       : x / y;
}

/// `perm` normalised, checked to be a permutation of [0, rank).
std::vector<int64_t> permutation(std::vector<int64_t> perm, int64_t rank) {
  if (int64_t(perm.size()) != rank)
    unsupported("perm has " + std::to_string(perm.size()) +
                " entries for a tensor of rank " + std::to_string(rank));
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t &axis : perm) {
    if (axis < -rank || axis >= rank ||
        seen[size_t(axis < 0 ? axis + rank : axis)])
      unsupported("perm is not a permutation of the axes");
    axis = axis < 0 ? axis + rank : axis;
    seen[size_t(axis)] = true;
  }
  return perm;
}

int64_t normaliseAxis(int64_t axis, int64_t rank, const std::string &what) {
  if (axis < -rank || axis >= rank)
    unsupported(what + " " + std::to_string(axis) +
                " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

class Importer {
public:
  Importer(const std::string &path, onnx::ModelProto model)
      : path(path), tensors(path), model(std::move(model)) {}

  OnnxModel run();

private:
  std::string path;
  TensorReader tensors;
  onnx::ModelProto model;
  int64_t opset = 0;
  OnnxModel result;
  NameTable valueNames, dimNames;
  std::map<std::string, std::string> dimSymbols; ///< dim_param -> symbol
  std::set<std::string> declaredDims;
  json inputs = json::object(), nodes = json::array();
  std::map<std::string, Val> values;
  std::map<std::string, int> uses;      ///< ONNX value -> consumer count
  std::map<std::string, const onnx::NodeProto *>
      reader; ///< ONNX value -> its last consumer (the one, when uses is 1)
  std::set<std::string> softmaxOutputs; ///< graph names of softmax results
  /// Graph inputs holding initializer data, by initializer name.
  std::map<std::string, GraphTensor> materialised;
  /// A linear node and its data, by the node's graph name: a following Add
  /// of a constant vector becomes its bias, a Split of its features one
  /// linear per part.
  struct Projection {
    size_t node;
    GraphTensor input;
    Constant weight; ///< [N, K]
    std::optional<Constant> bias;
  };
  std::map<std::string, Projection> linears;
  /// Emitted transposes, by graph name: their node index and input.
  std::map<std::string, std::pair<size_t, GraphTensor>> transposes;
  /// Int model inputs that a Cast retyped (declared as the cast's type).
  std::map<std::string, DType> retyped;

  const onnx::NodeProto *node = nullptr; ///< The node being imported.

  // Model-level steps.
  void readModel();
  std::vector<const onnx::NodeProto *> sortNodes();
  void declareInputs();
  void importNode(const onnx::NodeProto &node);
  void declareOutputs();
  bool isInputName(const std::string &name) const {
    for (const onnx::ValueInfoProto &input : model.graph().input())
      if (input.name() == name)
        return true;
    return false;
  }
  void rename(const std::string &from, const std::string &to);

  // Values.
  Dim dimOf(const onnx::TensorShapeProto_Dimension &dim,
            const std::string &input, int axis);
  DType graphDType(ElemType type, const std::string &what);
  const Val &input(int index);
  bool hasInput(int index) const {
    return index < node->input_size() && !node->input(index).empty();
  }
  Constant constantInput(int index, const std::string &what);
  GraphTensor tensorInput(int index) { return tensorOf(input(index)); }
  GraphTensor tensorOf(const Val &value);
  GraphTensor materialise(const Constant &constant);
  GraphTensor retype(const GraphTensor &view, DType dtype);
  void dropInput(const std::string &name);
  void define(int output, Val value);
  std::string outputName(int output) const {
    return output < node->output_size() ? node->output(output) : "";
  }

  // Attributes.
  const onnx::AttributeProto *attribute(const std::string &name) const;
  int64_t intAttribute(const std::string &name, int64_t fallback) const;
  double floatAttribute(const std::string &name, double fallback) const;
  std::vector<int64_t> intsAttribute(const std::string &name) const;

  // Emitting graph nodes.
  GraphTensor emit(const std::string &onnxName, const std::string &op,
                   json fields, DType dtype, Shape shape);
  GraphTensor emitReshape(const GraphTensor &x, const Shape &shape,
                          const std::string &onnxName);
  GraphTensor emitTranspose(const GraphTensor &x, std::vector<int64_t> perm,
                            const std::string &onnxName);
  GraphTensor emitUnsqueeze(const GraphTensor &x, int64_t axis,
                            const std::string &onnxName);
  GraphTensor emitBinary(const std::string &op, const GraphTensor &a,
                         const GraphTensor &b, const std::string &onnxName);
  GraphTensor emitLinear(const GraphTensor &x, const Constant &weightKN,
                         const Constant *bias, const std::string &onnxName,
                         const std::string &weightName = "");
  GraphTensor emitMatmul(const GraphTensor &a, const GraphTensor &b,
                         const std::string &onnxName);
  GraphTensor maskScores(GraphTensor scores, const ScoreMask &mask, double fill,
                         const std::string &onnxName);

  // Operators.
  void importBinary(const std::string &op);
  void importMatMul();
  void importGemm();
  void importUnary(const std::string &op);
  void importPow();
  void importReciprocal();
  void importSoftmax();
  void importReshape();
  void importTranspose();
  void importUnsqueeze();
  void importSqueeze();
  void importConcat();
  void importSplit();
  void gatherLeadingRows(const GraphTensor &x, const Constant &indices);
  bool isUnsqueezeOf(const std::string &name, int64_t axis) const;
  void splitBySlices(const GraphTensor &x, int64_t axis,
                     const std::vector<int64_t> &sizes);
  void importSlice();
  static std::pair<int64_t, int64_t> steppedRange(int64_t start, int64_t end,
                                                  int64_t step, int64_t size);
  GraphTensor emitSlice(const GraphTensor &x, int64_t axis, int64_t start,
                        int64_t end, const std::string &onnxName);
  GraphTensor sliceWithStep(GraphTensor x, int64_t axis, int64_t first,
                            int64_t count, int64_t step,
                            const std::string &onnxName);
  void importGather();
  void importExpand();
  void importWhere();
  void importIsNaN();
  void importCast();
  void importCompare(const std::string &op);
  void importNot();
  void importTrilu();
  void importReduce(bool mean);
  void importRange();
  void importShape();
  void importConstant();
  void importConstantOfShape();
  void importMultiHeadAttention(bool packedWeights);
  void importAttention23();
  void importGroupQueryAttention();
  void importFlatten();
  void importGatherND();
  void importMax();
  GraphTensor place(const GraphTensor &x, const std::vector<int64_t> &axes,
                    int64_t rank, const std::string &onnxName);
  GraphTensor emitAttention(const GraphTensor &q, const GraphTensor &k,
                            const GraphTensor &v, json fields,
                            const std::string &onnxName);
  json paddingMask(int index, const Dim &batch, const Dim &keys);
};

OnnxModel Importer::run() {
  readModel();
  for (const onnx::NodeProto *each : sortNodes())
    for (const std::string &name : each->input()) {
      ++uses[name];
      reader[name] = each;
    }
  for (const onnx::ValueInfoProto &output : model.graph().output()) {
    ++uses[output.name()];
    // Outputs keep their model's names (files OUTPUT.npy): reserved now, the
    // value computing each is renamed at the end.
    if (!isInputName(output.name()))
      valueNames.reserve(onnxIdentifier(output.name()));
  }
  declareInputs();
  for (const onnx::NodeProto *each : sortNodes()) {
    node = each;
    try {
      importNode(*each);
    } catch (const NodeError &error) {
      std::string name = each->name().empty() ? "(unnamed)" : each->name();
      throw UserError(path + ": node '" + name + "' (" +
                      (each->domain().empty() ? "" : each->domain() + ".") +
                      each->op_type() + "): " + error.message);
    }
  }
  node = nullptr;
  declareOutputs();

  std::string name = model.graph().name();
  if (name.empty())
    name = fs::path(path).stem().string();
  // The graph's name names C symbols: "main" and the like become
  // "main_model".
  if (reservedSymbolName(onnxIdentifier(name)))
    name += "_model";
  json dims = json::object();
  for (const std::string &symbol : declaredDims)
    dims[symbol] = nullptr;
  json outputs = std::move(result.document["outputs"]);
  result.document = {{"attnc", 1},     {"name", onnxIdentifier(name)},
                     {"dims", dims},   {"inputs", inputs},
                     {"nodes", nodes}, {"outputs", outputs}};
  return std::move(result);
}

void Importer::readModel() {
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      opset = set.version();
  if (opset == 0)
    throw UserError(path + ": the ONNX model imports no version of the "
                           "default operator set");
  for (const onnx::TensorProto &initializer : model.graph().initializer()) {
    try {
      values[initializer.name()] = tensors.read(initializer);
    } catch (const NodeError &error) {
      throw UserError(path + ": initializer '" + initializer.name() +
                      "': " + error.message);
    }
  }
}

/// The nodes in an order where each comes after the producers of its inputs
/// (exporters write them so; the format requires it, not every tool keeps
/// it). A cycle or an input nobody defines is an error.
std::vector<const onnx::NodeProto *> Importer::sortNodes() {
  const auto &graph = model.graph();
  std::map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const std::string &output : graph.node(i).output())
      if (!output.empty() && !producer.emplace(output, i).second)
        throw UserError(path + ": value '" + output +
                        "' is produced by two nodes");
  std::set<std::string> given;
  for (const onnx::ValueInfoProto &input : graph.input())
    given.insert(input.name());
  for (const onnx::TensorProto &initializer : graph.initializer())
    given.insert(initializer.name());
  std::vector<int> state(graph.node_size(), 0); // 1 visiting, 2 done
  std::vector<const onnx::NodeProto *> order;
  std::function<void(int)> visit = [&](int i) {
    if (state[i] == 2)
      return;
    const onnx::NodeProto &each = graph.node(i);
    std::string name = each.name().empty() ? each.op_type() : each.name();
    if (state[i] == 1)
      throw UserError(path + ": the graph has a cycle through node '" + name +
                      "'");
    state[i] = 1;
    for (const std::string &input : each.input()) {
      if (input.empty() || given.count(input))
        continue;
      auto found = producer.find(input);
      if (found == producer.end())
        throw UserError(path + ": node '" + name + "' (" + each.op_type() +
                        ") reads '" + input +
                        "', which no input, initializer or node defines");
      visit(found->second);
    }
    state[i] = 2;
    order.push_back(&each);
  };
  for (int i = 0; i < graph.node_size(); ++i)
    visit(i);
  return order;
}

Dim Importer::dimOf(const onnx::TensorShapeProto_Dimension &dim,
                    const std::string &input, int axis) {
  if (dim.has_dim_value()) {
    if (dim.dim_value() <= 0)
      throw UserError(path + ": input '" + input + "' has size " +
                      std::to_string(dim.dim_value()) + " on axis " +
                      std::to_string(axis) + "; sizes must be > 0");
    return Dim::fixed(dim.dim_value());
  }
  std::string param = dim.has_dim_param() && !dim.dim_param().empty()
                          ? dim.dim_param()
                          : input + "_dim" + std::to_string(axis);
  auto [found, added] = dimSymbols.emplace(param, "");
  if (added)
    found->second = dimNames.make(param);
  declaredDims.insert(found->second);
  return Dim::named(found->second);
}

DType Importer::graphDType(ElemType type, const std::string &what) {
  switch (type) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::DOUBLE: // Computed in f32, as attnc computes.
    return DType::F32;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  case onnx::TensorProto::BOOL:
    return DType::Bool;
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT16:
    return DType::I32;
  default:
    unsupported(what + " has element type " + elemTypeName(type) +
                ", which attnc does not compute with");
  }
}

void Importer::declareInputs() {
  const auto &graph = model.graph();
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (values.count(input.name()))
      continue; // An initializer listed as an input (IR version < 4).
    const std::string &name = input.name();
    if (!input.type().has_tensor_type())
      throw UserError(path + ": input '" + name + "' is not a tensor");
    const onnx::TypeProto_Tensor &type = input.type().tensor_type();
    if (!type.has_shape())
      throw UserError(path + ": input '" + name +
                      "' has no shape (its rank must be known)");
    Shape shape;
    for (int axis = 0; axis < type.shape().dim_size(); ++axis)
      shape.push_back(dimOf(type.shape().dim(axis), name, axis));
    ElemType elem = type.elem_type();
    DType dtype;
    try {
      dtype = graphDType(elem, "input '" + name + "'");
    } catch (const NodeError &error) {
      throw UserError(path + ": " + error.message);
    }
    std::string graphName = valueNames.make(name);
    inputs[graphName] = {{"shape", shapeToJson(shape)},
                         {"dtype", std::string(dtypeName(dtype))}};
    values[name] = GraphTensor{graphName, dtype, shape, graphName};
    result.names[name] = graphName;
  }
}

void Importer::declareOutputs() {
  json outputs = json::array();
  for (const onnx::ValueInfoProto &output : model.graph().output()) {
    auto found = values.find(output.name());
    if (found == values.end())
      throw UserError(path + ": output '" + output.name() +
                      "' is not computed by any node");
    const auto *tensor = std::get_if<GraphTensor>(&found->second);
    if (!tensor)
      throw UserError(path + ": output '" + output.name() +
                      "' is a constant (it depends on no input); attnc "
                      "compiles only computed outputs");
    std::string name = tensor->name;
    if (!isInputName(output.name()) &&
        std::find(outputs.begin(), outputs.end(), name) == outputs.end()) {
      name = onnxIdentifier(output.name());
      rename(tensor->name, name);
    }
    outputs.push_back(name);
    result.names[output.name()] = name;
  }
  result.document["outputs"] = outputs;
}

/// Renames a node's value in its definition and every use.
void Importer::rename(const std::string &from, const std::string &to) {
  if (from == to)
    return;
  static const std::set<std::string> operandKeys = {
      "x", "a",     "b",      "w",  "q",  "k",
      "v", "input", "inputs", "wq", "wk", "slopes"};
  std::function<void(json &)> visit = [&](json &value) {
    if (value.is_array()) {
      for (json &item : value)
        visit(item);
      return;
    }
    if (!value.is_object())
      return;
    for (auto &[key, field] : value.items()) {
      if (operandKeys.count(key) && field.is_string() && field == from)
        field = to;
      else if (operandKeys.count(key) && field.is_array())
        for (json &item : field)
          if (item.is_string() && item == from)
            item = to;
      if (field.is_object() || field.is_array())
        visit(field);
    }
  };
  for (json &entry : nodes) {
    if (entry["name"] == from)
      entry["name"] = to;
    visit(entry);
  }
  for (auto &[name, value] : values)
    if (auto *tensor = std::get_if<GraphTensor>(&value);
        tensor && tensor->name == from)
      tensor->name = to;
}

const Val &Importer::input(int index) {
  if (!hasInput(index))
    unsupported("input " + std::to_string(index) + " is missing");
  auto found = values.find(node->input(index));
  if (found == values.end())
    unsupported("reads '" + node->input(index) + "', which is not defined");
  return found->second;
}

Constant Importer::constantInput(int index, const std::string &what) {
  const Val &value = input(index);
  if (const auto *constant = std::get_if<Constant>(&value))
    return *constant;
  unsupported(what + " ('" + node->input(index) +
              "') must be a constant or computed from shapes");
}

GraphTensor Importer::tensorOf(const Val &value) {
  if (const auto *tensor = std::get_if<GraphTensor>(&value))
    return *tensor;
  if (const auto *constant = std::get_if<Constant>(&value))
    return materialise(*constant);
  if (std::holds_alternative<ScoreMask>(value))
    unsupported("a mask of positions (causal, a window, a padding mask "
                "combined with them) is used other than to mask attention "
                "scores (Where or Add before a Softmax)");
  if (std::holds_alternative<Index>(value))
    unsupported("positions (a Range over a run-time size) are used other "
                "than to build a causal mask");
  if (std::holds_alternative<Grid>(value) ||
      std::holds_alternative<IndexTuple>(value))
    unsupported("positions are used other than to gather a mask element by "
                "element");
  if (std::holds_alternative<Flattened>(value))
    unsupported("a tensor flattened into a product of run-time sizes is used "
                "other than to gather a mask element by element");
  if (std::holds_alternative<Flat>(value))
    unsupported("a tensor whose leading run-time axes are flattened into "
                "one is used other than by a projection (Gemm, MatMul by a "
                "weight, Add of a bias) and a reshape back");
  if (std::holds_alternative<SoftmaxNanTest>(value))
    unsupported("IsNaN of a softmax is used other than in the guard "
                "Where(IsNaN(p), 0, p)");
  if (std::holds_alternative<LeadingAxesMerged>(value))
    unsupported("a tensor whose leading axes are merged into one run-time "
                "size is used other than by a transpose of its other axes "
                "and a reshape back");
  unsupported("a tensor filled with a constant of run-time shape is used "
              "other than to build a mask");
}

GraphTensor Importer::materialise(const Constant &constant) {
  if (!constant.sourceName.empty()) {
    auto found = materialised.find(constant.sourceName);
    if (found != materialised.end())
      return found->second;
  }
  std::vector<double> numbers = constant.numbers;
  if (!constant.isFloat()) {
    for (const Affine &value : constant.integers) {
      if (!value.isConstant())
        unsupported("a value computed from run-time sizes (" + value.str() +
                    ") is used as a tensor");
      numbers.push_back(double(value.constant));
    }
  }
  DType dtype = graphDType(constant.type, "a constant");
  std::string base = constant.sourceName.empty() ? outputName(0) + "_constant"
                                                 : constant.sourceName;
  GraphTensor tensor{valueNames.make(base), dtype, {}};
  for (int64_t size : constant.shape)
    tensor.shape.push_back(Dim::fixed(size));
  inputs[tensor.name] = {{"shape", shapeToJson(tensor.shape)},
                         {"dtype", std::string(dtypeName(dtype))}};
  result.weights.emplace_back(tensor.name,
                              fromDoubles(dtype, constant.shape, numbers));
  if (!constant.sourceName.empty())
    materialised[constant.sourceName] = tensor;
  return tensor;
}

/// An int model input (an attention mask, position ids) cast to a float or
/// a bool is declared as that type: `attnc run` converts the model's
/// integers exactly, and a kernel takes the type its computation needs.
GraphTensor Importer::retype(const GraphTensor &view, DType dtype) {
  if (view.negated)
    unsupported("a negated mask (Not) is used other than by Where");
  if (view.dtype == DType::Bool && !view.intTruth && dtype == DType::F32 &&
      !view.root.empty()) {
    // A bool input read as 0/1 floats.
  } else if (view.root.empty() || (view.dtype != DType::I32 && !view.intTruth))
    unsupported("a Cast of a computed " + std::string(dtypeName(view.dtype)) +
                " tensor to " + std::string(dtypeName(dtype)) +
                " (attnc has no cast op yet; only integer model inputs are "
                "retyped)");
  auto [found, added] = retyped.emplace(view.root, dtype);
  if (!added && found->second != dtype)
    unsupported("input " + view.root + " is cast to both " +
                std::string(dtypeName(found->second)) + " and " +
                std::string(dtypeName(dtype)));
  inputs[view.root]["dtype"] = std::string(dtypeName(dtype));
  GraphTensor out = view;
  out.dtype = dtype;
  out.intTruth = false;
  return out;
}

/// Removes a materialised initializer no node reads any more.
void Importer::dropInput(const std::string &name) {
  inputs.erase(name);
  auto &weights = result.weights;
  weights.erase(std::remove_if(weights.begin(), weights.end(),
                               [&](auto &w) { return w.first == name; }),
                weights.end());
  for (auto it = materialised.begin(); it != materialised.end();)
    it = it->second.name == name ? materialised.erase(it) : std::next(it);
}

void Importer::define(int output, Val value) {
  if (output < node->output_size() && !node->output(output).empty())
    values[node->output(output)] = std::move(value);
}

const onnx::AttributeProto *Importer::attribute(const std::string &name) const {
  for (const onnx::AttributeProto &a : node->attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}
int64_t Importer::intAttribute(const std::string &name,
                               int64_t fallback) const {
  const onnx::AttributeProto *a = attribute(name);
  return a ? a->i() : fallback;
}
double Importer::floatAttribute(const std::string &name,
                                double fallback) const {
  const onnx::AttributeProto *a = attribute(name);
  return a ? a->f() : fallback;
}
std::vector<int64_t> Importer::intsAttribute(const std::string &name) const {
  const onnx::AttributeProto *a = attribute(name);
  if (!a)
    return {};
  return {a->ints().begin(), a->ints().end()};
}

//===----------------------------------------------------------------------===//
// Emitting.
//===----------------------------------------------------------------------===//

GraphTensor Importer::emit(const std::string &onnxName, const std::string &op,
                           json fields, DType dtype, Shape shape) {
  std::string name = valueNames.make(onnxName.empty() ? op : onnxName);
  json entry = {{"name", name}, {"op", op}};
  for (auto &[key, value] : fields.items())
    entry[key] = value;
  nodes.push_back(std::move(entry));
  return GraphTensor{name, dtype, std::move(shape)};
}

GraphTensor Importer::emitReshape(const GraphTensor &x, const Shape &shape,
                                  const std::string &onnxName) {
  if (x.shape == shape)
    return x;
  std::string problem;
  std::vector<std::optional<Dim>> target(shape.begin(), shape.end());
  if (!inferReshape(x.shape, target, problem))
    unsupported("cannot reshape " + formatShape(x.shape) + " to " +
                formatShape(shape) + ": " + problem);
  GraphTensor out =
      emit(onnxName, "reshape", {{"x", x.name}, {"shape", shapeToJson(shape)}},
           x.dtype, shape);
  out.root = x.root;
  out.intTruth = x.intTruth;
  return out;
}

GraphTensor Importer::emitTranspose(const GraphTensor &x,
                                    std::vector<int64_t> perm,
                                    const std::string &onnxName) {
  Shape shape;
  for (int64_t axis : perm)
    shape.push_back(x.shape[axis]);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity &= perm[i] == int64_t(i);
  if (identity)
    return x;
  GraphTensor result = emit(onnxName, "transpose",
                            {{"x", x.name}, {"perm", perm}}, x.dtype, shape);
  result.root = x.root;
  result.intTruth = x.intTruth;
  transposes[result.name] = {nodes.size() - 1, x};
  return result;
}

GraphTensor Importer::emitUnsqueeze(const GraphTensor &x, int64_t axis,
                                    const std::string &onnxName) {
  Shape shape = x.shape;
  shape.insert(shape.begin() + axis, Dim::fixed(1));
  GraphTensor out = emit(onnxName, "unsqueeze", {{"x", x.name}, {"axis", axis}},
                         x.dtype, shape);
  out.root = x.root;
  out.intTruth = x.intTruth;
  return out;
}

GraphTensor Importer::emitBinary(const std::string &op, const GraphTensor &a,
                                 const GraphTensor &b,
                                 const std::string &onnxName) {
  if (a.intTruth || b.intTruth)
    unsupported("arithmetic on a bool view of an integer input");
  if (a.dtype != b.dtype)
    unsupported("operands differ in dtype: " + std::string(dtypeName(a.dtype)) +
                " and " + std::string(dtypeName(b.dtype)));
  std::string problem;
  std::optional<Shape> shape = broadcastShapes(a.shape, b.shape, problem);
  if (!shape)
    unsupported("cannot broadcast " + formatShape(a.shape) + " with " +
                formatShape(b.shape) + ": " + problem);
  return emit(onnxName, op, {{"a", a.name}, {"b", b.name}}, a.dtype, *shape);
}

/// x [..., K] · W [K, N] (+ b [N]) as attnc's linear, which takes W as
/// [N, K]: the weight is transposed at import.
GraphTensor Importer::emitLinear(const GraphTensor &x, const Constant &weightKN,
                                 const Constant *bias,
                                 const std::string &onnxName,
                                 const std::string &weightName) {
  int64_t K = weightKN.shape[0], N = weightKN.shape[1];
  if (x.shape.empty() || x.shape.back() != Dim::fixed(K))
    unsupported("cannot multiply " + formatShape(x.shape) + " by a [" +
                std::to_string(K) + ", " + std::to_string(N) + "] weight");
  Constant weightNK = weightKN;
  weightNK.shape = {N, K};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      weightNK.numbers[n * K + k] = weightKN.numbers[k * N + n];
  // The graph input holds W transposed; its name says so.
  weightNK.sourceName = !weightName.empty() ? weightName
                        : weightKN.sourceName.empty()
                            ? ""
                            : weightKN.sourceName + "_t";
  json fields = {{"x", x.name}, {"w", materialise(weightNK).name}};
  if (bias)
    fields["b"] = materialise(*bias).name;
  Shape shape = x.shape;
  shape.back() = Dim::fixed(N);
  GraphTensor result = emit(onnxName, "linear", fields, x.dtype, shape);
  linears[result.name] =
      Projection{nodes.size() - 1, x, weightNK,
                 bias ? std::optional<Constant>(*bias) : std::nullopt};
  return result;
}

/// matmul(q, transpose(k)): a transpose that also moves other axes is split
/// so that the last one swaps the last two axes alone, as the attention
/// fusion expects of k.
GraphTensor Importer::emitMatmul(const GraphTensor &a, const GraphTensor &b,
                                 const std::string &onnxName) {
  GraphTensor right = b;
  auto transposed = transposes.find(b.name);
  int64_t rank = int64_t(b.shape.size());
  if (transposed != transposes.end() && rank == 4 &&
      uses[node->input(1)] == 1) {
    json &entry = nodes[transposed->second.first];
    std::vector<int64_t> perm = entry["perm"];
    // Only a kᵀ: the features axis (last of the input) comes second to last.
    if (perm != std::vector<int64_t>{0, 1, 3, 2} && perm[0] == 0 &&
        perm[2] == 3) {
      std::vector<int64_t> first = perm;
      std::swap(first[2], first[3]);
      GraphTensor source = transposed->second.second;
      // Rewrite the transpose in place as the first step, then swap.
      Shape shape;
      for (int64_t axis : first)
        shape.push_back(source.shape[axis]);
      entry["perm"] = first;
      GraphTensor step{b.name, b.dtype, shape};
      right = emitTranspose(step, {0, 1, 3, 2}, b.name + "_swap");
    }
  }
  std::string problem;
  std::optional<Shape> shape =
      inferMatmulShape(a.shape, right.shape, false, problem);
  if (!shape)
    unsupported("cannot multiply " + formatShape(a.shape) + " by " +
                formatShape(right.shape) + ": " + problem);
  if (a.dtype != right.dtype)
    unsupported("operands differ in dtype");
  return emit(onnxName, "matmul", {{"a", a.name}, {"b", right.name}}, a.dtype,
              *shape);
}

//===----------------------------------------------------------------------===//
// Folding helpers.
//===----------------------------------------------------------------------===//

/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

int64_t elementCount(const std::vector<int64_t> &shape) {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0 || (size > 0 && count > kMaxFoldedElements / size))
      unsupported("a constant of shape " + formatShape(shape) +
                  " is too large to fold at import");
    count *= size;
  }
  return count;
}

/// A constant with the elements `pick(i)` of `from` at each flat index i of
/// `shape`.
Constant gatherElements(const Constant &from, std::vector<int64_t> shape,
                        const std::function<int64_t(int64_t)> &pick) {
  Constant out;
  out.type = from.type;
  out.shape = std::move(shape);
  int64_t count = elementCount(out.shape);
  for (int64_t i = 0; i < count; ++i) {
    if (from.isFloat())
      out.numbers.push_back(from.numbers[pick(i)]);
    else
      out.integers.push_back(from.integers[pick(i)]);
  }
  return out;
}

std::vector<int64_t> broadcastStatic(const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> shape(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t y = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1)
      unsupported("cannot broadcast " + formatShape(a) + " with " +
                  formatShape(b));
    shape[i] = x == 1 ? y : x;
  }
  return shape;
}

/// The flat index in `shape` (broadcast into `outShape`) of flat index i.
int64_t broadcastIndex(const std::vector<int64_t> &shape,
                       const std::vector<int64_t> &outShape, int64_t i) {
  std::vector<int64_t> outStrides = stridesOf(outShape),
                       strides = stridesOf(shape);
  int64_t offset = int64_t(outShape.size() - shape.size()), index = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t coordinate = (i / outStrides[d]) % outShape[d];
    if (int64_t(d) >= offset && shape[d - offset] != 1)
      index += coordinate * strides[d - offset];
  }
  return index;
}

/// Elementwise on constants: `numeric` on numbers, `integral` on affine
/// integers (nullopt when the result is not affine).
Constant foldElementwise(
    const Constant &a, const Constant &b, ElemType resultType,
    const std::function<double(double, double)> &numeric,
    const std::function<std::optional<Affine>(const Affine &, const Affine &)>
        &integral) {
  Constant out;
  out.type = resultType;
  out.shape = broadcastStatic(a.shape, b.shape);
  int64_t count = elementCount(out.shape);
  bool floats = a.isFloat() || b.isFloat() || isFloatType(resultType);
  for (int64_t i = 0; i < count; ++i) {
    int64_t ia = broadcastIndex(a.shape, out.shape, i),
            ib = broadcastIndex(b.shape, out.shape, i);
    if (!floats) {
      std::optional<Affine> value = integral(a.integers[ia], b.integers[ib]);
      if (!value)
        unsupported("cannot fold this arithmetic on run-time sizes (" +
                    a.integers[ia].str() + ", " + b.integers[ib].str() + ")");
      if (isFloatType(resultType))
        out.numbers.push_back(double(value->constant));
      else
        out.integers.push_back(*value);
      continue;
    }
    std::optional<double> x = a.number(ia), y = b.number(ib);
    if (!x || !y)
      unsupported("a run-time size is used in float arithmetic");
    double value = numeric(*x, *y);
    if (isFloatType(resultType))
      out.numbers.push_back(value);
    else
      out.integers.push_back(Affine::of(int64_t(value)));
  }
  return out;
}

Constant scalarConstant(ElemType type, double value) {
  Constant out;
  out.type = type;
  if (isFloatType(type))
    out.numbers = {value};
  else
    out.integers = {Affine::of(int64_t(value))};
  return out;
}

/// A 1-D integer constant as a list of affine values (Shape results, axes).
std::vector<Affine> integerList(const Constant &constant,
                                const std::string &what) {
  if (constant.isFloat())
    unsupported(what + " must be integers");
  return constant.integers;
}

std::vector<int64_t> fixedList(const Constant &constant,
                               const std::string &what) {
  std::vector<int64_t> out;
  for (const Affine &value : integerList(constant, what)) {
    if (!value.isConstant())
      unsupported(what + " must be fixed at import, not " + value.str());
    out.push_back(value.constant);
  }
  return out;
}

/// A constant whose last two axes are triangular: `inside` on and below
/// the diagonal (j <= i), `outside` above, the same in every leading slice.
std::optional<ScoreMask> asTriangle(const Constant &c) {
  if (c.shape.size() < 2)
    return std::nullopt;
  int64_t rows = c.shape[c.shape.size() - 2], cols = c.shape.back();
  int64_t count = int64_t(c.size());
  if (rows < 2 || cols < 2 || count != rows * cols)
    return std::nullopt;
  std::optional<double> inside = c.number(0), outside = c.number(1);
  if (!inside || !outside || *inside == *outside)
    return std::nullopt;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (c.number(i * cols + j) != (j <= i ? inside : outside))
        return std::nullopt;
  ScoreMask t{c.type, {}, Affine::of(0), std::nullopt, {}, *inside, *outside};
  for (int64_t size : c.shape)
    t.shape.push_back(Dim::fixed(size));
  return t;
}

/// rows (positions along the second-to-last axis) compared with cols (along
/// the last) as a triangle over [.., rows, cols].
ScoreMask compareIndices(const Index &a, const Index &b,
                         const std::string &op) {
  size_t rank = std::max(a.shape.size(), b.shape.size());
  auto alignedAxis = [&](const Index &x) {
    return int64_t(rank - x.shape.size()) + x.axis;
  };
  int64_t axisA = alignedAxis(a), axisB = alignedAxis(b);
  int64_t rowsAxis = int64_t(rank) - 2, colsAxis = int64_t(rank) - 1;
  bool aIsRows = axisA == rowsAxis && axisB == colsAxis;
  if (rank < 2 || !(aIsRows || (axisA == colsAxis && axisB == rowsAxis)))
    unsupported("compares positions that are not along the last two axes");
  const Index &rows = aIsRows ? a : b, &cols = aIsRows ? b : a;
  // As "cols REL rows": mirror the comparison when a holds the rows.
  static const std::map<std::string, std::string> mirrored = {
      {"Less", "Greater"},
      {"LessOrEqual", "GreaterOrEqual"},
      {"Greater", "Less"},
      {"GreaterOrEqual", "LessOrEqual"}};
  auto found = mirrored.find(op);
  if (found == mirrored.end())
    unsupported(op + " of positions (only orderings make a triangle)");
  const std::string &rel = aIsRows ? found->second : op;
  // j + cols.start <= i + rows.start  <=>  j <= i + offset.
  Affine offset = rows.start - cols.start;
  ScoreMask t{onnx::TensorProto::BOOL,
              Shape(rank, Dim::fixed(1)),
              offset,
              std::nullopt,
              {},
              1,
              0};
  t.shape[rowsAxis] = rows.shape[rows.axis];
  t.shape[colsAxis] = cols.shape[cols.axis];
  if (rel == "Less" || rel == "GreaterOrEqual")
    t.upper = offset - Affine::of(1); // j < x  <=>  j <= x - 1
  if (rel == "Greater" || rel == "GreaterOrEqual")
    std::swap(t.inside, t.outside); // The complement.
  return t;
}

/// A bool view of a model input (a padding mask) as a score mask keeping
/// the keys where it is true.
ScoreMask maskOfView(const GraphTensor &view) {
  ScoreMask mask{onnx::TensorProto::BOOL,
                 view.shape,
                 std::nullopt,
                 std::nullopt,
                 {view},
                 1,
                 0};
  while (mask.shape.size() < 2)
    mask.shape.insert(mask.shape.begin(), Dim::fixed(1));
  return mask;
}

/// `m` as a bool mask true where its keys are kept: the complement of one
/// bound is the other bound (j > i + k is j >= i + k + 1), of one tensor
/// part the part negated; that of more than one would be an Or of masks.
ScoreMask keptKeys(const ScoreMask &m) {
  ScoreMask out = m;
  out.type = onnx::TensorProto::BOOL;
  out.inside = 1, out.outside = 0;
  if (m.inside != 0 && m.outside == 0)
    return out;
  if (m.inside != 0 || m.outside == 0)
    unsupported("the mask is not a boolean one (true where keys are kept)");
  if (size_t(bool(m.upper)) + size_t(bool(m.lower)) + m.tensors.size() != 1)
    unsupported("negates a combination of masks (an Or of masks is not "
                "supported)");
  if (m.upper)
    out.lower = *m.upper + Affine::of(1), out.upper.reset();
  else if (m.lower)
    out.upper = *m.lower - Affine::of(1), out.lower.reset();
  else
    out.tensors[0].negated = !out.tensors[0].negated;
  return out;
}

/// The keys both masks keep: the nearer diagonal on each side, and every
/// tensor part (causal And a padding mask; causal And j > i - w, a window).
ScoreMask bothKeep(const ScoreMask &a, const ScoreMask &b) {
  ScoreMask x = keptKeys(a), y = keptKeys(b);
  auto nearer = [](const std::optional<Affine> &p,
                   const std::optional<Affine> &q,
                   bool smaller) -> std::optional<Affine> {
    if (!p || !q)
      return p ? p : q;
    Affine difference = *p - *q;
    if (!difference.isConstant())
      unsupported("combines masks whose diagonals differ by a run-time size");
    return (difference.constant < 0) == smaller ? p : q;
  };
  x.upper = nearer(x.upper, y.upper, /*smaller=*/true);
  x.lower = nearer(x.lower, y.lower, /*smaller=*/false);
  for (const GraphTensor &part : y.tensors)
    if (std::none_of(
            x.tensors.begin(), x.tensors.end(),
            [&](const GraphTensor &t) { return ScoreMask::samePart(t, part); }))
      x.tensors.push_back(part);
  std::string problem;
  std::optional<Shape> shape = broadcastShapes(x.shape, y.shape, problem);
  if (!shape)
    unsupported("combines masks whose shapes do not broadcast: " + problem);
  x.shape = *shape;
  return x;
}

/// An Index as a Grid.
Grid gridOf(const Index &index) {
  return Grid{
      index.type, index.shape, {{index.axis, Affine::of(1)}}, index.start};
}

/// a + b for positions of ranks aligned to the right.
Grid addGrids(const Grid &a, const Grid &b, const std::string &problemContext) {
  std::string problem;
  std::optional<Shape> shape = broadcastShapes(a.shape, b.shape, problem);
  if (!shape)
    unsupported(problemContext + ": " + problem);
  Grid sum{a.type, *shape, {}, a.start + b.start};
  for (const Grid *g : {&a, &b}) {
    int64_t shift = int64_t(shape->size() - g->shape.size());
    for (const auto &[axis, coefficient] : g->coefficients) {
      Affine &total = sum.coefficients[axis + shift];
      total = total + coefficient;
    }
  }
  return sum;
}

/// x placed on `axes` (increasing) of a rank-`rank` tensor, size 1 elsewhere.
std::vector<int64_t> placementAxes(const Shape &tensor, const Shape &grid,
                                   const std::vector<int64_t> &axes) {
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i > 0 && axes[i] <= axes[i - 1])
      unsupported("gathers a tensor's axes out of order");
    if (grid[axes[i]] != tensor[i])
      unsupported("gathers axis " + std::to_string(i) +
                  " of a tensor of "
                  "shape " +
                  formatShape(tensor) + " by positions of size " +
                  grid[axes[i]].str());
  }
  for (size_t d = 0; d < grid.size(); ++d)
    if (std::find(axes.begin(), axes.end(), int64_t(d)) == axes.end() &&
        !grid[d].isOne())
      unsupported("gathers with positions that broadcast over an axis the "
                  "tensor lacks");
  return axes;
}

} // namespace

//===----------------------------------------------------------------------===//
// Operators.
//===----------------------------------------------------------------------===//

void Importer::importNode(const onnx::NodeProto &each) {
  const std::string &op = each.op_type();
  const std::string &domain = each.domain();
  if (domain == "com.microsoft") {
    if (op == "MultiHeadAttention")
      return importMultiHeadAttention(false);
    if (op == "Attention")
      return importMultiHeadAttention(true);
    if (op == "GroupQueryAttention")
      return importGroupQueryAttention();
    unsupported("attnc imports the com.microsoft operators Attention, "
                "MultiHeadAttention and GroupQueryAttention, not " +
                op);
  }
  if (!domain.empty() && domain != "ai.onnx")
    unsupported("the domain '" + domain +
                "' is not one attnc knows (it "
                "imports the default ONNX domain and com.microsoft)");
  static const std::map<std::string, std::function<void(Importer &)>> table = {
      {"Add", [](Importer &i) { i.importBinary("add"); }},
      {"Sub", [](Importer &i) { i.importBinary("sub"); }},
      {"Mul", [](Importer &i) { i.importBinary("mul"); }},
      {"Div", [](Importer &i) { i.importBinary("div"); }},
      {"MatMul", [](Importer &i) { i.importMatMul(); }},
      {"Gemm", [](Importer &i) { i.importGemm(); }},
      {"Sqrt", [](Importer &i) { i.importUnary("sqrt"); }},
      {"Reciprocal", [](Importer &i) { i.importReciprocal(); }},
      {"Neg", [](Importer &i) { i.importUnary("neg"); }},
      {"Tanh", [](Importer &i) { i.importUnary("tanh"); }},
      {"Exp", [](Importer &i) { i.importUnary("exp"); }},
      {"Cos", [](Importer &i) { i.importUnary("cos"); }},
      {"Sin", [](Importer &i) { i.importUnary("sin"); }},
      {"Identity", [](Importer &i) { i.define(0, i.input(0)); }},
      {"Pow", [](Importer &i) { i.importPow(); }},
      {"Softmax", [](Importer &i) { i.importSoftmax(); }},
      {"Reshape", [](Importer &i) { i.importReshape(); }},
      {"Transpose", [](Importer &i) { i.importTranspose(); }},
      {"Unsqueeze", [](Importer &i) { i.importUnsqueeze(); }},
      {"Squeeze", [](Importer &i) { i.importSqueeze(); }},
      {"Concat", [](Importer &i) { i.importConcat(); }},
      {"Split", [](Importer &i) { i.importSplit(); }},
      {"Slice", [](Importer &i) { i.importSlice(); }},
      {"Gather", [](Importer &i) { i.importGather(); }},
      {"Expand", [](Importer &i) { i.importExpand(); }},
      {"Where", [](Importer &i) { i.importWhere(); }},
      {"IsNaN", [](Importer &i) { i.importIsNaN(); }},
      {"Cast", [](Importer &i) { i.importCast(); }},
      {"Equal", [](Importer &i) { i.importCompare("Equal"); }},
      {"Less", [](Importer &i) { i.importCompare("Less"); }},
      {"Greater", [](Importer &i) { i.importCompare("Greater"); }},
      {"LessOrEqual", [](Importer &i) { i.importCompare("LessOrEqual"); }},
      {"GreaterOrEqual",
       [](Importer &i) { i.importCompare("GreaterOrEqual"); }},
      {"And", [](Importer &i) { i.importCompare("And"); }},
      {"Flatten", [](Importer &i) { i.importFlatten(); }},
      {"GatherND", [](Importer &i) { i.importGatherND(); }},
      {"Max", [](Importer &i) { i.importMax(); }},
      {"Or", [](Importer &i) { i.importCompare("Or"); }},
      {"Not", [](Importer &i) { i.importNot(); }},
      {"Trilu", [](Importer &i) { i.importTrilu(); }},
      {"ReduceSum", [](Importer &i) { i.importReduce(false); }},
      {"ReduceMean", [](Importer &i) { i.importReduce(true); }},
      {"Range", [](Importer &i) { i.importRange(); }},
      {"Shape", [](Importer &i) { i.importShape(); }},
      {"Constant", [](Importer &i) { i.importConstant(); }},
      {"ConstantOfShape", [](Importer &i) { i.importConstantOfShape(); }},
      {"Attention", [](Importer &i) { i.importAttention23(); }},
  };
  auto found = table.find(op);
  if (found == table.end())
    unsupported("attnc cannot import the operator " + op +
                " (docs/onnx.md lists the ones it can)");
  found->second(*this);
}

/// `scores` with the keys `mask` does not keep set to `fill` (at most
/// kMaskingValue): causal_mask and window_mask for its diagonals (attnc's
/// bottom-right alignment, i' = i + T - S, with bounds fixed in the graph),
/// then per tensor part the model's own arithmetic, scores + (0 where the
/// part keeps a key, `fill` where not). Infinite fills become the largest
/// finite float, so that 0 · fill is 0, never NaN: the same after a softmax
/// but in a row with every key masked.
GraphTensor Importer::maskScores(GraphTensor scores, const ScoreMask &mask,
                                 double fill, const std::string &onnxName) {
  ScoreMask kept = keptKeys(mask);
  Affine shift = kept.cols() - kept.rows(); // i' - i
  std::optional<int64_t> left, right;
  auto bound = [&](const Affine &distance, const char *side) {
    if (!distance.isConstant())
      unsupported("masks keys " + std::string(side) +
                  " the diagonal at a distance that is not a number (" +
                  distance.str() +
                  "); attnc aligns query i with key i + T - S");
    if (distance.constant < 0)
      unsupported("masks the diagonal key i + T - S itself (" +
                  std::string(side) + " it at " +
                  std::to_string(distance.constant) +
                  "), which attnc's "
                  "causal and window masks always keep");
    return distance.constant;
  };
  if (kept.upper)
    right = bound(*kept.upper - shift, "after");
  if (kept.lower)
    left = bound(shift - *kept.lower, "before");
  bool window = left || (right && *right > 0);
  size_t steps = size_t(right == 0) + size_t(window) + kept.tensors.size();
  size_t done = 0;
  // Each step's result; the last one is the ONNX node's output.
  auto next = [&](const std::string &suffix) {
    return ++done == steps ? onnxName : onnxName + suffix;
  };
  if (right == 0)
    scores = emit(next("_causal"), "causal_mask", {{"x", scores.name}},
                  scores.dtype, scores.shape);
  if (window) {
    int64_t unbounded = std::numeric_limits<int64_t>::max();
    scores = emit(next("_window"), "window_mask",
                  {{"x", scores.name},
                   {"left", left.value_or(unbounded)},
                   {"right", right.value_or(unbounded)}},
                  scores.dtype, scores.shape);
  }
  double finite = std::max(fill, -double(std::numeric_limits<float>::max()));
  for (size_t n = 0; n < kept.tensors.size(); ++n) {
    GraphTensor view = kept.tensors[n];
    bool dropsWhereTrue = view.negated;
    view.negated = false;
    GraphTensor ones = retype(view, DType::F32);
    // fill where the part drops a key, 0 where it keeps it.
    std::string part = onnxName + "_mask" + std::to_string(n);
    GraphTensor bias =
        emit(part, "scale",
             {{"x", ones.name}, {"value", dropsWhereTrue ? finite : -finite}},
             DType::F32, ones.shape);
    if (!dropsWhereTrue)
      bias = emitBinary(
          "add", bias,
          materialise(scalarConstant(onnx::TensorProto::FLOAT, finite)),
          part + "_bias");
    scores =
        emitBinary("add", scores, bias, next("_masked" + std::to_string(n)));
  }
  return scores;
}

void Importer::importBinary(const std::string &op) {
  const Val &a = input(0), &b = input(1);
  const auto *ca = std::get_if<Constant>(&a), *cb = std::get_if<Constant>(&b);
  std::string out = outputName(0);
  if (ca && cb) {
    ElemType type = ca->type;
    auto integral = [&](const Affine &x,
                        const Affine &y) -> std::optional<Affine> {
      if (op == "add")
        return x + y;
      if (op == "sub")
        return x - y;
      if (op == "mul") {
        if (y.isConstant())
          return x.scaled(y.constant);
        if (x.isConstant())
          return y.scaled(x.constant);
        return std::nullopt;
      }
      if (x.isConstant() && y.isConstant() && y.constant != 0) {
        if (y.constant == -1) // INT64_MIN / -1 overflows: checked.
          return x.scaled(-1);
        int64_t q = x.constant / y.constant;
        if ((x.constant % y.constant != 0) &&
            ((x.constant < 0) != (y.constant < 0)))
          --q; // ONNX integer Div truncates? numpy floors; exporters use
               // positive sizes, where both agree.
        return Affine::of(q);
      }
      if (y.isConstant() && y.constant > 0) {
        Affine q{x.constant / y.constant, {}};
        for (const auto &[symbol, coefficient] : x.terms) {
          if (coefficient % y.constant)
            return std::nullopt;
          q.terms[symbol] = coefficient / y.constant;
        }
        if (x.constant % y.constant)
          return std::nullopt;
        return q;
      }
      return std::nullopt;
    };
    auto numeric = [&](double x, double y) { return arithmetic(op, x, y); };
    return define(0, foldElementwise(*ca, *cb, type, numeric, integral));
  }
  // Masks: a score mask combined with a scalar stays one; scores plus an
  // additive mask are the scores masked.
  // A bias added to a flattened projection.
  if (const auto *flat = std::get_if<Flat>(&a); flat && flat->rows)
    if (const auto *c = std::get_if<Constant>(&b); c && c->shape.size() <= 1) {
      Val inner = flat->inner;
      values[node->input(0)] = inner; // Only this node reads it.
      importBinary(op);
      if (auto *result = std::get_if<GraphTensor>(&values[outputName(0)]))
        values[outputName(0)] = Flat{*result};
      values[node->input(0)] = *flat;
      return;
    }
  // Positions plus or minus a fixed amount or a size.
  auto isPositions = [](const Val &v) {
    return std::holds_alternative<Index>(v) || std::holds_alternative<Grid>(v);
  };
  if (isPositions(a) || isPositions(b)) {
    auto asGrid = [](const Val &v) -> std::optional<Grid> {
      if (const auto *i = std::get_if<Index>(&v))
        return gridOf(*i);
      if (const auto *g = std::get_if<Grid>(&v))
        return *g;
      return std::nullopt;
    };
    const auto *amountA = std::get_if<Constant>(&a),
               *amountB = std::get_if<Constant>(&b);
    const Constant *amount = amountA ? amountA : amountB;
    bool integral = amount && amount->size() == 1 && !amount->isFloat();
    if ((op == "add" || op == "sub") && integral) {
      if (op == "sub" && amountA)
        unsupported("subtracts positions from an integer");
      Affine shift =
          op == "add" ? amount->integers[0] : amount->integers[0].scaled(-1);
      if (const auto *index = std::get_if<Index>(amountA ? &b : &a)) {
        Index out = *index;
        out.start = out.start + shift;
        return define(0, out);
      }
      Grid out = *asGrid(amountA ? b : a);
      out.start = out.start + shift;
      return define(0, out);
    }
    if (op == "mul" && integral) {
      // Positions times a size: row-major offsets.
      Grid out = *asGrid(amountA ? b : a);
      const Affine &factor = amount->integers[0];
      auto times = [&](const Affine &x) -> Affine {
        if (factor.isConstant())
          return x.scaled(factor.constant);
        if (x.isConstant())
          return factor.scaled(x.constant);
        unsupported("positions times a size, scaled by a size again");
      };
      for (auto &entry : out.coefficients)
        entry.second = times(entry.second);
      out.start = times(out.start);
      return define(0, out);
    }
    if (op == "add" && asGrid(a) && asGrid(b))
      return define(0, addGrids(*asGrid(a), *asGrid(b), "adds positions"));
    unsupported("arithmetic on positions other than adding an integer or "
                "other positions, or multiplying by an integer");
  }

  // Two masks of the same keys: elementwise on their two values.
  if (const auto *ta = std::get_if<ScoreMask>(&a))
    if (const auto *tb = std::get_if<ScoreMask>(&b)) {
      if (!ta->sameKeys(*tb))
        unsupported("combines masks that keep different keys arithmetically "
                    "(And them as booleans instead)");
      ScoreMask out = *ta;
      out.inside = arithmetic(op, ta->inside, tb->inside);
      out.outside = arithmetic(op, ta->outside, tb->outside);
      return define(0, out);
    }
  for (int side = 0; side < 2; ++side) {
    const auto *t = std::get_if<ScoreMask>(side == 0 ? &a : &b);
    if (!t)
      continue;
    const Val &other = side == 0 ? b : a;
    if (std::optional<double> s = scalarOf(other)) {
      ScoreMask r = *t;
      auto apply = [&](double v) {
        return side == 0 ? arithmetic(op, v, *s) : arithmetic(op, *s, v);
      };
      r.inside = apply(t->inside);
      r.outside = apply(t->outside);
      return define(0, r);
    }
    if (op == "add" && std::holds_alternative<GraphTensor>(other)) {
      GraphTensor scores = std::get<GraphTensor>(other);
      if (t->inside == 0 && t->outside <= kMaskingValue) {
        ScoreMask kept = *t;
        kept.inside = 1, kept.outside = 0;
        return define(0, maskScores(scores, kept, t->outside, out));
      }
      unsupported("adds a mask that is not 0 where keys are kept and at "
                  "most " +
                  std::to_string(kMaskingValue) + " elsewhere");
    }
  }
  // x · c and x / c for a scalar constant c: attnc's scale.
  if ((op == "mul" || op == "div") && std::holds_alternative<GraphTensor>(a)) {
    if (std::optional<double> s = scalarOf(b)) {
      const GraphTensor &x = std::get<GraphTensor>(a);
      double value = op == "mul" ? *s : 1.0 / *s;
      return define(0, emit(out, "scale", {{"x", x.name}, {"value", value}},
                            x.dtype, x.shape));
    }
  }
  if (op == "mul" && std::holds_alternative<GraphTensor>(b))
    if (std::optional<double> s = scalarOf(a)) {
      const GraphTensor &x = std::get<GraphTensor>(b);
      return define(0, emit(out, "scale", {{"x", x.name}, {"value", *s}},
                            x.dtype, x.shape));
    }
  // linear(x, W) + b: the linear's bias.
  if (op == "add")
    for (int side = 0; side < 2; ++side) {
      const auto *x = std::get_if<GraphTensor>(side == 0 ? &a : &b);
      const auto *c = std::get_if<Constant>(side == 0 ? &b : &a);
      if (!x || !c || c->shape.size() != 1 || !c->isFloat())
        continue;
      auto linear = linears.find(x->name);
      if (linear == linears.end() || linear->second.bias ||
          uses[node->input(side)] != 1 ||
          x->shape.back() != Dim::fixed(c->shape[0]))
        continue;
      nodes[linear->second.node]["b"] = materialise(*c).name;
      linear->second.bias = *c;
      return define(0, *x);
    }
  GraphTensor left = tensorOf(a), right = tensorOf(b);
  define(0, emitBinary(op, left, right, out));
}

void Importer::importMatMul() {
  const Val &a = input(0), &b = input(1);
  const auto *weight = std::get_if<Constant>(&b);
  if (const auto *flat = std::get_if<Flat>(&a); flat && flat->rows && weight &&
                                                weight->shape.size() == 2 &&
                                                weight->isFloat())
    return define(
        0, Flat{emitLinear(flat->inner, *weight, nullptr, outputName(0))});
  if (std::holds_alternative<GraphTensor>(a) && weight &&
      weight->shape.size() == 2 && weight->isFloat())
    return define(0, emitLinear(std::get<GraphTensor>(a), *weight, nullptr,
                                outputName(0)));
  define(0, emitMatmul(tensorOf(a), tensorOf(b), outputName(0)));
}

/// Y = alpha · A' · B' + beta · C with B a constant: a linear.
void Importer::importGemm() {
  if (intAttribute("transA", 0))
    unsupported("transA = 1 is not supported");
  double alpha = floatAttribute("alpha", 1.0),
         beta = floatAttribute("beta", 1.0);
  const auto *flat = std::get_if<Flat>(&input(0));
  if (flat && !flat->rows)
    unsupported("a tensor flattened whole is multiplied by a weight");
  GraphTensor x = flat ? flat->inner : tensorInput(0);
  Constant w = constantInput(1, "the weight B");
  if (w.shape.size() != 2 || !w.isFloat())
    unsupported("the weight B must be a 2-D float constant");
  if (intAttribute("transB", 0)) {
    Constant t = w;
    t.shape = {w.shape[1], w.shape[0]};
    for (int64_t r = 0; r < w.shape[0]; ++r)
      for (int64_t c = 0; c < w.shape[1]; ++c)
        t.numbers[c * w.shape[0] + r] = w.numbers[r * w.shape[1] + c];
    t.sourceName = w.sourceName.empty() ? "" : w.sourceName + "_kn";
    w = t;
  }
  for (double &value : w.numbers)
    value *= alpha;
  std::optional<Constant> bias;
  if (hasInput(2)) {
    bias = constantInput(2, "the bias C");
    if (bias->size() == 1 && w.shape[1] != 1) { // A scalar C broadcasts.
      bias->numbers.assign(size_t(w.shape[1]), bias->numbers[0]);
      bias->shape = {w.shape[1]};
    }
    if (bias->shape.size() == 2 && bias->shape[0] == 1)
      bias->shape = {bias->shape[1]};
    if (bias->shape.size() != 1 || bias->shape[0] != w.shape[1])
      unsupported("the bias C must be a vector of N values");
    for (double &value : bias->numbers)
      value *= beta;
  }
  if (alpha != 1.0)
    w.sourceName.clear();
  if (bias && beta != 1.0)
    bias->sourceName.clear();
  GraphTensor y = emitLinear(x, w, bias ? &*bias : nullptr, outputName(0));
  if (flat)
    return define(0, Flat{y});
  define(0, y);
}

void Importer::importUnary(const std::string &op) {
  const Val &x = input(0);
  if (const auto *c = std::get_if<Constant>(&x)) {
    Constant out = *c;
    if (!out.isFloat())
      unsupported(op + " of integers");
    for (double &value : out.numbers)
      value = op == "sqrt"   ? std::sqrt(value)
              : op == "neg"  ? -value
              : op == "tanh" ? std::tanh(value)
              : op == "cos"  ? std::cos(value)
              : op == "sin"  ? std::sin(value)
                             : std::exp(value);
    out.sourceName.clear();
    return define(0, out);
  }
  GraphTensor t = tensorOf(x);
  define(0, emit(outputName(0), op, {{"x", t.name}}, t.dtype, t.shape));
}

/// 1 / x: torch.export writes rsqrt (the RMS norms of Qwen 3's and Gemma 3's
/// queries and keys) as Reciprocal(Sqrt(x)).
void Importer::importReciprocal() {
  const Val &x = input(0);
  if (const auto *c = std::get_if<Constant>(&x)) {
    if (!c->isFloat())
      unsupported("Reciprocal of integers");
    Constant out = *c;
    for (double &value : out.numbers)
      value = 1.0 / value;
    out.sourceName.clear();
    return define(0, out);
  }
  GraphTensor t = tensorOf(x);
  ElemType type = t.dtype == DType::F16    ? onnx::TensorProto::FLOAT16
                  : t.dtype == DType::BF16 ? onnx::TensorProto::BFLOAT16
                  : t.dtype == DType::F32  ? onnx::TensorProto::FLOAT
                                           : 0;
  if (!type)
    unsupported("Reciprocal of a " + std::string(dtypeName(t.dtype)) +
                " tensor");
  GraphTensor one = materialise(scalarConstant(type, 1.0));
  define(0, emitBinary("div", one, t, outputName(0)));
}

/// x^2 (the squared norms of a cosine score, RMS norms) and x^0.5.
void Importer::importPow() {
  Constant exponent = constantInput(1, "the exponent");
  std::optional<double> e = exponent.scalar();
  const Val &base = input(0);
  if (const auto *c = std::get_if<Constant>(&base)) {
    Constant out = foldElementwise(
        *c, exponent, c->type,
        [](double x, double y) { return std::pow(x, y); },
        [](const Affine &, const Affine &) { return std::nullopt; });
    return define(0, out);
  }
  GraphTensor x = tensorOf(base);
  if (e == 2.0)
    return define(0, emitBinary("mul", x, x, outputName(0)));
  if (e == 0.5)
    return define(
        0, emit(outputName(0), "sqrt", {{"x", x.name}}, x.dtype, x.shape));
  if (e == 1.0)
    return define(0, x);
  unsupported("Pow with an exponent other than 0.5, 1 or 2");
}

void Importer::importSoftmax() {
  GraphTensor x = tensorInput(0);
  int64_t rank = int64_t(x.shape.size());
  int64_t axis =
      normaliseAxis(intAttribute("axis", opset >= 13 ? -1 : 1), rank, "axis");
  // Before opset 13 Softmax flattens from `axis` on: the same only when
  // `axis` is the last one.
  if (opset < 13 && axis != rank - 1)
    unsupported("Softmax before opset 13 over axes " + std::to_string(axis) +
                ".." + std::to_string(rank - 1) +
                " (flattened) is not "
                "supported; only the last axis");
  GraphTensor probabilities =
      emit(outputName(0), "softmax", {{"x", x.name}, {"axis", axis}}, x.dtype,
           x.shape);
  softmaxOutputs.insert(probabilities.name);
  define(0, probabilities);
}

void Importer::importReshape() {
  const Val &data = input(0);
  Constant target = constantInput(1, "the target shape");
  std::vector<Affine> sizes = integerList(target, "the target shape");
  bool allowZero = intAttribute("allowzero", 0) != 0;
  Shape inputShape;
  std::vector<int64_t> constantShape;
  if (const auto *c = std::get_if<Constant>(&data)) {
    constantShape = c->shape;
    for (int64_t size : c->shape)
      inputShape.push_back(Dim::fixed(size));
  } else if (const auto *i = std::get_if<Index>(&data)) {
    inputShape = i->shape;
  } else if (const auto *merged = std::get_if<LeadingAxesMerged>(&data)) {
    // Back from [d0·..·dk-1, t..]: exactly inner's axes, one of them
    // possibly -1 (a 0 would copy an axis of the merged view, not inner's).
    const Shape &axes = merged->inner.shape;
    bool same = sizes.size() == axes.size();
    for (size_t i = 0; same && i < sizes.size(); ++i) {
      std::optional<Dim> dim = sizes[i].asDim();
      same = sizes[i] == Affine::of(-1) || (dim && *dim == axes[i]);
    }
    if (!same || std::count(sizes.begin(), sizes.end(), Affine::of(-1)) > 1)
      unsupported("a tensor whose leading axes are merged is reshaped to " +
                  std::to_string(sizes.size()) + " axes other than its own " +
                  formatShape(axes));
    return define(0, merged->inner);
  } else if (const auto *flat = std::get_if<Flat>(&data)) {
    inputShape = flat->inner.shape; // Back from [B·S, F]: the target names
                                    // the axes.
  } else {
    inputShape = tensorOf(data).shape;
  }
  std::vector<std::optional<Dim>> dims;
  int products = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Affine &size = sizes[i];
    if (size == Affine::of(0) && !allowZero) {
      if (i >= inputShape.size())
        unsupported("target shape copies axis " + std::to_string(i) +
                    ", which the input lacks");
      dims.push_back(inputShape[i]);
    } else if (size == Affine::of(-1)) {
      dims.push_back(std::nullopt);
    } else if (std::optional<Dim> dim = size.asDim()) {
      dims.push_back(*dim);
    } else {
      // B·S and the like: left to inference when it is the only one.
      dims.push_back(std::nullopt);
      ++products;
    }
  }
  if (products + std::count(sizes.begin(), sizes.end(), Affine::of(-1)) > 1)
    unsupported("the target shape has more than one size attnc must infer "
                "(products of run-time sizes, or -1)");
  std::string problem;
  std::optional<Shape> shape = inferReshape(inputShape, dims, problem);
  if (const auto *x = std::get_if<GraphTensor>(&data);
      !shape && x && sizes.size() == 2 && dims[1] && dims[1]->isFixed() &&
      (!dims[0] || !dims[0]->isFixed())) {
    // [lead.., f..] flattened to [product, F] with F the product of the
    // trailing fixed sizes (the product of `lead` attnc cannot name): the
    // trailing axes merge now, the leading ones stay.
    int64_t features = 1;
    size_t k = inputShape.size();
    while (k > 1 && features < dims[1]->size && inputShape[k - 1].isFixed())
      features *= inputShape[--k].size;
    if (features == dims[1]->size && k >= 2) {
      Shape kept(inputShape.begin(), inputShape.begin() + k);
      kept.push_back(Dim::fixed(features));
      return define(0, Flat{emitReshape(*x, kept, outputName(0) + "_rows")});
    }
  }
  if (const auto *x = std::get_if<GraphTensor>(&data);
      !shape && x && sizes.size() == 1)
    return define(0, Flat{*x, false}); // [-1] of run-time sizes.
  if (const auto *x = std::get_if<GraphTensor>(&data);
      !shape && x && sizes.size() >= 3 && sizes.size() < inputShape.size() &&
      !dims[0]) {
    // [d.., t..] to [-1, t..] with the trailing axes as they are (two or
    // more leading axes merge).
    size_t leading = inputShape.size() - (sizes.size() - 1);
    bool trailing = true;
    for (size_t i = 1; trailing && i < sizes.size(); ++i)
      trailing = dims[i] && *dims[i] == inputShape[leading + i - 1];
    if (trailing)
      return define(0, LeadingAxesMerged{*x, leading});
  }
  if (!shape)
    unsupported("cannot reshape " + formatShape(inputShape) + ": " + problem);
  if (const auto *i = std::get_if<Index>(&data)) {
    // Positions [S] as [S, 1] or [1, S]: the one axis not of size 1.
    Index out = *i;
    out.shape = *shape;
    Dim length = i->shape[i->axis];
    int found = 0;
    for (size_t d = 0; d < shape->size(); ++d)
      if (!(*shape)[d].isOne())
        out.axis = int64_t(d), ++found;
    if (found != 1 || out.shape[out.axis] != length)
      unsupported("reshapes positions other than by adding axes of size 1");
    return define(0, out);
  }
  if (const auto *c = std::get_if<Constant>(&data)) {
    Constant out = *c;
    out.shape.clear();
    for (const Dim &dim : *shape) {
      if (!dim.isFixed())
        unsupported("a constant reshaped to a run-time size");
      out.shape.push_back(dim.size);
    }
    return define(0, out);
  }
  const auto *flat = std::get_if<Flat>(&data);
  define(0, emitReshape(flat ? flat->inner : tensorOf(data), *shape,
                        outputName(0)));
}

void Importer::importTranspose() {
  const Val &data = input(0);
  const auto *merged = std::get_if<LeadingAxesMerged>(&data);
  const auto *c = std::get_if<Constant>(&data);
  GraphTensor x;
  if (!c)
    x = merged ? merged->inner : tensorOf(data);
  // The rank the perm is written for: a merged tensor's is its view's.
  int64_t rank = int64_t(c ? c->shape.size() : x.shape.size());
  if (merged)
    rank -= int64_t(merged->leading) - 1;
  std::vector<int64_t> perm = intsAttribute("perm");
  if (perm.empty()) // The default reverses the axes.
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  perm = permutation(perm, rank);
  if (merged) {
    if (perm[0] != 0)
      unsupported("a transpose moves the merged leading axes");
    int64_t leading = int64_t(merged->leading);
    std::vector<int64_t> full;
    for (int64_t i = 0; i < leading; ++i)
      full.push_back(i);
    for (size_t i = 1; i < perm.size(); ++i)
      full.push_back(leading + perm[i] - 1);
    return define(0, LeadingAxesMerged{emitTranspose(x, full, outputName(0)),
                                       merged->leading});
  }
  if (!c)
    return define(0, emitTranspose(x, perm, outputName(0)));
  std::vector<int64_t> shape, strides = stridesOf(c->shape);
  for (int64_t axis : perm)
    shape.push_back(c->shape[axis]);
  std::vector<int64_t> outStrides = stridesOf(shape);
  define(0, gatherElements(*c, shape, [&](int64_t i) {
           int64_t index = 0;
           for (int64_t d = 0; d < rank; ++d)
             index += (i / outStrides[d]) % shape[d] * strides[perm[d]];
           return index;
         }));
}

void Importer::importUnsqueeze() {
  std::vector<int64_t> axes = opset >= 13 && hasInput(1)
                                  ? fixedList(constantInput(1, "axes"), "axes")
                                  : intsAttribute("axes");
  const Val &data = input(0);
  auto rankOf = [&]() -> int64_t {
    if (const auto *c = std::get_if<Constant>(&data))
      return int64_t(c->shape.size());
    if (const auto *i = std::get_if<Index>(&data))
      return int64_t(i->shape.size());
    if (const auto *t = std::get_if<ScoreMask>(&data))
      return int64_t(t->shape.size());
    return int64_t(tensorOf(data).shape.size());
  };
  int64_t rank = rankOf() + int64_t(axes.size());
  for (int64_t &axis : axes)
    axis = normaliseAxis(axis, rank, "axis");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    unsupported("axes names an axis twice");
  if (const auto *c = std::get_if<Constant>(&data)) {
    Constant out = *c;
    for (int64_t axis : axes)
      out.shape.insert(out.shape.begin() + axis, 1);
    return define(0, out);
  }
  if (const auto *i = std::get_if<Index>(&data)) {
    Index out = *i;
    for (int64_t axis : axes) {
      out.shape.insert(out.shape.begin() + axis, Dim::fixed(1));
      if (axis <= out.axis)
        ++out.axis;
    }
    return define(0, out);
  }
  if (const auto *t = std::get_if<ScoreMask>(&data)) {
    ScoreMask out = *t;
    for (int64_t axis : axes) {
      int64_t rank = int64_t(out.shape.size());
      if (axis >= rank - 1)
        unsupported("an axis inserted among a mask's last two axes");
      // A tensor part is aligned to the mask's last axes.
      for (GraphTensor &part : out.tensors) {
        int64_t at = axis - (rank - int64_t(part.shape.size()));
        if (at >= 0)
          part = emitUnsqueeze(part, at, outputName(0) + "_" + part.name);
      }
      out.shape.insert(out.shape.begin() + axis, Dim::fixed(1));
    }
    return define(0, out);
  }
  GraphTensor x = tensorOf(data);
  for (size_t i = 0; i < axes.size(); ++i)
    x = emitUnsqueeze(x, axes[i],
                      i + 1 == axes.size()
                          ? outputName(0)
                          : outputName(0) + "_" + std::to_string(i));
  define(0, x);
}

void Importer::importSqueeze() {
  std::vector<int64_t> axes = opset >= 13 && hasInput(1)
                                  ? fixedList(constantInput(1, "axes"), "axes")
                                  : intsAttribute("axes");
  const Val &data = input(0);
  auto squeeze = [&](auto shape, auto isOne) {
    int64_t rank = int64_t(shape.size());
    std::set<int64_t> drop;
    for (int64_t axis : axes)
      drop.insert(normaliseAxis(axis, rank, "axis"));
    decltype(shape) out;
    for (int64_t d = 0; d < rank; ++d) {
      bool dropped = axes.empty() ? isOne(shape[d]) : drop.count(d) > 0;
      if (dropped && !isOne(shape[d]))
        unsupported("cannot squeeze axis " + std::to_string(d) +
                    ", whose size is not 1");
      if (!dropped)
        out.push_back(shape[d]);
    }
    return out;
  };
  if (const auto *c = std::get_if<Constant>(&data)) {
    Constant out = *c;
    out.shape = squeeze(c->shape, [](int64_t size) { return size == 1; });
    return define(0, out);
  }
  GraphTensor x = tensorOf(data);
  Shape shape = squeeze(x.shape, [](const Dim &dim) { return dim.isOne(); });
  define(0, emitReshape(x, shape, outputName(0)));
}

void Importer::importConcat() {
  int64_t axisAttribute = intAttribute("axis", 0);
  if (std::holds_alternative<Index>(input(0))) {
    // Positions stacked along a last axis of size 1 each: GatherND indices.
    IndexTuple tuple;
    for (int i = 0; i < node->input_size(); ++i) {
      const auto *part = std::get_if<Index>(&input(i));
      if (!part || part->shape.empty() || !part->shape.back().isOne() ||
          normaliseAxis(axisAttribute, int64_t(part->shape.size()), "axis") !=
              int64_t(part->shape.size()) - 1)
        unsupported("concatenates positions other than along a last axis "
                    "of size 1");
      Index stacked = *part;
      stacked.shape.pop_back();
      std::string problem;
      std::optional<Shape> shape =
          broadcastShapes(tuple.shape, stacked.shape, problem);
      if (!shape)
        unsupported(problem);
      tuple.shape = *shape;
      tuple.parts.push_back(stacked);
    }
    return define(0, tuple);
  }
  bool allConstant = true;
  for (int i = 0; i < node->input_size(); ++i)
    allConstant &= std::holds_alternative<Constant>(input(i));
  if (allConstant) {
    std::vector<Constant> parts;
    for (int i = 0; i < node->input_size(); ++i)
      parts.push_back(std::get<Constant>(input(i)));
    int64_t rank = int64_t(parts[0].shape.size());
    int64_t axis = normaliseAxis(axisAttribute, rank, "axis");
    std::vector<int64_t> shape = parts[0].shape;
    shape[axis] = 0;
    for (const Constant &part : parts) {
      if (int64_t(part.shape.size()) != rank ||
          part.isFloat() != parts[0].isFloat())
        unsupported("concatenated constants differ in rank or type");
      shape[axis] += part.shape[axis];
    }
    Constant out;
    out.type = parts[0].type;
    out.shape = shape;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    for (int64_t d = axis + 1; d < rank; ++d)
      inner *= shape[d];
    for (int64_t o = 0; o < outer; ++o)
      for (const Constant &part : parts) {
        int64_t block = part.shape[axis] * inner;
        for (int64_t e = 0; e < block; ++e) {
          if (out.isFloat())
            out.numbers.push_back(part.numbers[o * block + e]);
          else
            out.integers.push_back(part.integers[o * block + e]);
        }
      }
    return define(0, out);
  }
  std::vector<GraphTensor> parts;
  for (int i = 0; i < node->input_size(); ++i)
    parts.push_back(tensorInput(i));
  int64_t rank = int64_t(parts[0].shape.size());
  int64_t axis = normaliseAxis(axisAttribute, rank, "axis");
  Shape shape = parts[0].shape;
  Affine total = Affine::of(0);
  json names = json::array();
  for (const GraphTensor &part : parts) {
    if (int64_t(part.shape.size()) != rank || part.dtype != parts[0].dtype)
      unsupported("concatenates tensors of different ranks or dtypes");
    total = total + Affine::of(part.shape[axis]);
    names.push_back(part.name);
  }
  std::optional<Dim> size = total.asDim();
  if (!size)
    unsupported("the concatenated size " + total.str() +
                " is a sum of run-time sizes, which attnc cannot name");
  shape[axis] = *size;
  define(0, emit(outputName(0), "concat", {{"inputs", names}, {"axis", axis}},
                 parts[0].dtype, shape));
}

/// Split of constants folds; Split of linear(x, W) + b along the features
/// becomes one linear per part (the weights split at import).
void Importer::importSplit() {
  const Val &data = input(0);
  int64_t axisAttribute = intAttribute("axis", 0);
  std::vector<int64_t> sizes =
      opset >= 13 && hasInput(1) ? fixedList(constantInput(1, "split"), "split")
                                 : intsAttribute("split");
  int outputs = node->output_size();
  // The sizes of the parts along an axis of `length`: given, or even chunks
  // with a smaller last one; either way one per output, adding up.
  auto checkSizes = [&](int64_t length) {
    if (sizes.empty()) {
      int64_t chunk = (length + outputs - 1) / outputs;
      for (int i = 0; i < outputs; ++i)
        sizes.push_back(
            std::max<int64_t>(0, std::min(chunk, length - chunk * i)));
    }
    if (int64_t(sizes.size()) != outputs)
      unsupported(std::to_string(sizes.size()) + " split sizes for " +
                  std::to_string(outputs) + " outputs");
    int64_t total = 0; // Checked before each sum, which cannot overflow then.
    for (int64_t size : sizes) {
      if (size < 0)
        unsupported("a negative split size " + std::to_string(size));
      if (size > length - total)
        unsupported("split sizes overrun the axis's " + std::to_string(length));
      total += size;
    }
    if (total != length)
      unsupported("split sizes add up to " + std::to_string(total) +
                  ", not the axis's " + std::to_string(length));
  };
  if (const auto *c = std::get_if<Constant>(&data)) {
    int64_t rank = int64_t(c->shape.size());
    int64_t axis = normaliseAxis(axisAttribute, rank, "axis");
    checkSizes(c->shape[axis]);
    std::vector<int64_t> strides = stridesOf(c->shape);
    int64_t start = 0;
    for (int i = 0; i < outputs; ++i) {
      std::vector<int64_t> shape = c->shape;
      shape[axis] = sizes[i];
      std::vector<int64_t> outStrides = stridesOf(shape);
      define(i, gatherElements(*c, shape, [&](int64_t index) {
               int64_t from = 0;
               for (int64_t d = 0; d < rank; ++d) {
                 int64_t coordinate = (index / outStrides[d]) % shape[d];
                 from += (coordinate + (d == axis ? start : 0)) * strides[d];
               }
               return from;
             }));
      start += sizes[i];
    }
    return;
  }
  GraphTensor x = tensorOf(data);
  int64_t rank = int64_t(x.shape.size());
  int64_t axis = normaliseAxis(axisAttribute, rank, "axis");
  if (!x.shape[axis].isFixed())
    unsupported("Split along a run-time size of a computed tensor (attnc's "
                "slice needs a fixed axis)");
  checkSizes(x.shape[axis].size);
  auto linear = linears.find(x.name);
  if (axis != rank - 1 || linear == linears.end() || uses[node->input(0)] != 1)
    return splitBySlices(x, axis, sizes);
  Projection projection = linear->second;
  int64_t K = projection.weight.shape[1];
  // The whole projection's node and weights give way to one per part; the
  // first part takes the node's place.
  size_t place = projection.node;
  std::string weightName = nodes[place]["w"], biasName;
  dropInput(weightName);
  if (nodes[place].contains("b")) {
    biasName = nodes[place]["b"];
    dropInput(biasName);
  }
  int64_t start = 0;
  for (int i = 0; i < outputs; ++i) {
    Constant part;
    part.shape = {K, sizes[i]};
    part.numbers.resize(size_t(K * sizes[i]));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < sizes[i]; ++n)
        part.numbers[k * sizes[i] + n] =
            projection.weight.numbers[(start + n) * K + k];
    std::optional<Constant> bias;
    if (projection.bias) {
      bias = Constant{};
      bias->shape = {sizes[i]};
      bias->sourceName = biasName + "_" + std::to_string(i);
      bias->numbers.assign(projection.bias->numbers.begin() + start,
                           projection.bias->numbers.begin() + start + sizes[i]);
    }
    GraphTensor part_ =
        emitLinear(projection.input, part, bias ? &*bias : nullptr,
                   outputName(i), weightName + "_" + std::to_string(i));
    if (i == 0) { // Into the whole projection's place.
      nodes[place] = nodes.back();
      nodes.erase(nodes.end() - 1);
      linears[part_.name].node = place;
    }
    define(i, part_);
    start += sizes[i];
  }
}

/// Any other Split: one attnc slice per part (GPT-NeoX's fused qkv viewed
/// to heads and chunked along each head's features); importSplit checked
/// the sizes.
void Importer::splitBySlices(const GraphTensor &x, int64_t axis,
                             const std::vector<int64_t> &sizes) {
  int64_t start = 0;
  for (int i = 0; i < node->output_size(); ++i) {
    if (sizes[i] <= 0)
      unsupported("an empty part of a Split");
    Shape shape = x.shape;
    shape[axis] = Dim::fixed(sizes[i]);
    define(i, emit(outputName(i), "slice",
                   {{"x", x.name},
                    {"axis", axis},
                    {"start", start},
                    {"end", start + sizes[i]}},
                   x.dtype, shape));
    start += sizes[i];
  }
}

void Importer::importSlice() {
  Val data = input(0);
  std::vector<Affine> starts, ends;
  std::vector<int64_t> axes, steps;
  if (opset >= 10) {
    starts = integerList(constantInput(1, "starts"), "starts");
    ends = integerList(constantInput(2, "ends"), "ends");
    if (hasInput(3))
      axes = fixedList(constantInput(3, "axes"), "axes");
    if (hasInput(4))
      steps = fixedList(constantInput(4, "steps"), "steps");
  } else {
    for (int64_t v : intsAttribute("starts"))
      starts.push_back(Affine::of(v));
    for (int64_t v : intsAttribute("ends"))
      ends.push_back(Affine::of(v));
    axes = intsAttribute("axes");
  }
  if (starts.size() != ends.size())
    unsupported("starts and ends differ in length");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (!steps.empty() && steps.size() != starts.size())
    unsupported("steps and starts differ in length");
  for (int64_t step : steps)
    if (step == 0)
      unsupported("a step of 0");
  auto stepOf = [&](size_t i) { return steps.empty() ? 1 : steps[i]; };
  bool unitSteps = std::all_of(steps.begin(), steps.end(),
                               [](int64_t step) { return step == 1; });

  // One axis's range [start, end) clamped to its size, affine.
  auto range = [&](size_t i, const Affine &size) {
    auto clamp = [&](Affine value) {
      if (value.isConstant() && size.isConstant()) {
        int64_t v = value.constant, n = size.constant;
        if (v < 0)
          v += n;
        return Affine::of(std::clamp<int64_t>(v, 0, n));
      }
      // Past-the-end sentinels (INT64_MAX) mean the whole axis.
      if (value.isConstant() && value.constant >= (int64_t(1) << 40))
        return size;
      if (value.isConstant() && value.constant < 0)
        return size + value;
      return value;
    };
    return std::pair{clamp(starts[i]), clamp(ends[i])};
  };

  // A triangular buffer sliced by run-time sizes: the causal mask.
  bool symbolic = false;
  for (size_t i = 0; i < starts.size(); ++i)
    symbolic |= !starts[i].isConstant() || !ends[i].isConstant();
  if (const auto *c = std::get_if<Constant>(&data); c && symbolic)
    if (std::optional<ScoreMask> triangle = asTriangle(*c))
      data = *triangle;
  if (const auto *c = std::get_if<Constant>(&data)) {
    int64_t rank = int64_t(c->shape.size());
    std::vector<int64_t> begin(rank, 0), stride(rank, 1), shape = c->shape;
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = normaliseAxis(axes[i], rank, "axis");
      if (!starts[i].isConstant() || !ends[i].isConstant())
        unsupported("slices a constant by run-time sizes");
      auto [first, count] = steppedRange(starts[i].constant, ends[i].constant,
                                         stepOf(i), c->shape[axis]);
      begin[axis] = first;
      stride[axis] = stepOf(i);
      shape[axis] = count;
    }
    std::vector<int64_t> strides = stridesOf(c->shape),
                         outStrides = stridesOf(shape);
    return define(0, gatherElements(*c, shape, [&](int64_t index) {
                    int64_t from = 0;
                    for (int64_t d = 0; d < rank; ++d)
                      from += ((index / outStrides[d]) % shape[d] * stride[d] +
                               begin[d]) *
                              strides[d];
                    return from;
                  }));
  }
  if (!unitSteps && std::holds_alternative<ScoreMask>(data))
    unsupported("slices a mask with a step other than 1");
  if (const auto *t = std::get_if<ScoreMask>(&data)) {
    ScoreMask out = *t;
    int64_t rank = int64_t(t->shape.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t axis = normaliseAxis(axes[i], rank, "axis");
      auto [s, e] = range(i, Affine::of(t->shape[axis]));
      std::optional<Dim> size = (e - s).asDim();
      if (!size)
        unsupported("the slice's size " + (e - s).str() +
                    " is not a fixed size or one run-time size");
      if (s == Affine::of(0) && *size == t->shape[axis])
        continue; // The whole axis (HF's mask[:, :, :, :T]).
      if (!t->tensors.empty())
        unsupported("slices a mask that holds a tensor mask");
      // Row i of the slice is row i + s; key j is key j + s.
      Affine shift = axis == rank - 2 ? s : Affine::of(0) - s;
      if (axis < rank - 2)
        unsupported("slices a leading axis of a mask of positions");
      for (std::optional<Affine> *diagonal : {&out.upper, &out.lower})
        if (*diagonal)
          **diagonal = **diagonal + shift;
      out.shape[axis] = *size;
    }
    return define(0, out);
  }
  // A computed tensor: one attnc slice per axis that changes.
  GraphTensor x = tensorOf(data);
  int64_t rank = int64_t(x.shape.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normaliseAxis(axes[i], rank, "axis");
    std::string name = i + 1 == axes.size()
                           ? outputName(0)
                           : outputName(0) + "_" + std::to_string(i);
    if (stepOf(i) != 1) {
      if (!x.shape[axis].isFixed() || !starts[i].isConstant() ||
          !ends[i].isConstant())
        unsupported("slices a run-time size of a computed tensor with a step "
                    "other than 1");
      if (stepOf(i) < 0)
        unsupported("slices a computed tensor with a negative step");
      auto [first, count] = steppedRange(starts[i].constant, ends[i].constant,
                                         stepOf(i), x.shape[axis].size);
      if (count == 0)
        unsupported("an empty slice");
      x = sliceWithStep(x, axis, first, count, stepOf(i), name);
      continue;
    }
    auto [s, e] = range(i, Affine::of(x.shape[axis]));
    if (s == Affine::of(0) && e == Affine::of(x.shape[axis]))
      continue; // The whole axis.
    if (!x.shape[axis].isFixed() || !s.isConstant() || !e.isConstant())
      unsupported("slices a run-time size of a computed tensor (attnc's "
                  "slice needs a fixed axis and fixed bounds)");
    if (s.constant >= e.constant)
      unsupported("an empty slice");
    x = emitSlice(x, axis, s.constant, e.constant, name);
  }
  define(0, x);
}

/// ONNX Slice's entries of one axis of `size` for a constant start, end and
/// step: the first index and how many. Negative bounds count from the end; a
/// negative step walks down from start (clamped to the last entry) to end
/// (clamped to one before the first).
std::pair<int64_t, int64_t> Importer::steppedRange(int64_t start, int64_t end,
                                                   int64_t step, int64_t size) {
  auto fromEnd = [&](int64_t v) { return v < 0 ? v + size : v; };
  start = fromEnd(start);
  end = fromEnd(end);
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, 0, size);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, 0, size - 1);
  end = std::clamp<int64_t>(end, -1, size - 1);
  return {start, start > end ? (start - end - step - 1) / -step : 0};
}

GraphTensor Importer::emitSlice(const GraphTensor &x, int64_t axis,
                                int64_t start, int64_t end,
                                const std::string &onnxName) {
  if (start == 0 && x.shape[axis] == Dim::fixed(end))
    return x;
  Shape shape = x.shape;
  shape[axis] = Dim::fixed(end - start);
  return emit(onnxName, "slice",
              {{"x", x.name}, {"axis", axis}, {"start", start}, {"end", end}},
              x.dtype, shape);
}

/// x's entries first, first + step, ... (count of them) along a fixed axis,
/// by attnc's contiguous slices and reshapes: the axis viewed as
/// [size / step, step] keeps one column. This is rotate_every_two's
/// x[..., ::2] and x[..., 1::2] (Cohere, GLM and Helium rotary embeddings).
GraphTensor Importer::sliceWithStep(GraphTensor x, int64_t axis, int64_t first,
                                    int64_t count, int64_t step,
                                    const std::string &onnxName) {
  if (count == 1)
    return emitSlice(x, axis, first, first + 1, onnxName);
  int64_t size = x.shape[axis].size;
  Shape result = x.shape;
  result[axis] = Dim::fixed(count);
  if (size % step != 0) {
    if (first + count * step > size) {
      // The last entry has fewer than step - 1 after it: joined on its own.
      int64_t last = first + (count - 1) * step;
      GraphTensor head =
          sliceWithStep(x, axis, first, count - 1, step, onnxName + "_head");
      GraphTensor tail = emitSlice(x, axis, last, last + 1, onnxName + "_last");
      return emit(onnxName, "concat",
                  {{"inputs", {head.name, tail.name}}, {"axis", axis}}, x.dtype,
                  result);
    }
    x = emitSlice(x, axis, first, first + count * step, onnxName + "_span");
    size = count * step;
    first = 0;
  }
  Shape grid = x.shape;
  grid[axis] = Dim::fixed(size / step);
  grid.insert(grid.begin() + axis + 1, Dim::fixed(step));
  GraphTensor t = emitReshape(x, grid, onnxName + "_grid");
  t = emitSlice(t, axis + 1, first % step, first % step + 1,
                onnxName + "_column");
  t = emitSlice(t, axis, first / step, first / step + count,
                onnxName + "_rows");
  return emitReshape(t, result, onnxName);
}

void Importer::importGather() {
  const Val &data = input(0);
  if (const auto *flat = std::get_if<Flattened>(&data)) {
    // Flatten(x) gathered at x's own row-major offsets: x itself, its axes
    // placed where the positions run (a padding mask built per element).
    const Val &where = input(1);
    Grid grid = std::holds_alternative<Index>(where)
                    ? gridOf(std::get<Index>(where))
                : std::holds_alternative<Grid>(where)
                    ? std::get<Grid>(where)
                    : (unsupported("gathers a flattened tensor at "
                                   "positions attnc cannot follow"),
                       Grid{});
    const Shape &shape = flat->inner.shape;
    if (intAttribute("axis", 0) != 0 || flat->axis != int64_t(shape.size()) ||
        !(grid.start == Affine::of(0)))
      unsupported("gathers a flattened tensor other than element by element");
    std::vector<int64_t> axes;
    Affine stride = Affine::of(1);
    for (int64_t i = int64_t(shape.size()) - 1; i >= 0; --i) {
      auto found = std::find_if(
          grid.coefficients.begin(), grid.coefficients.end(),
          [&](const auto &entry) { return entry.second == stride; });
      if (found == grid.coefficients.end())
        unsupported("the gather positions are not the tensor's row-major "
                    "offsets");
      axes.insert(axes.begin(), found->first);
      if (i > 0) {
        if (!shape[i].isFixed() && !stride.isConstant())
          unsupported("row-major offsets with a product of run-time sizes");
        stride = shape[i].isFixed()
                     ? stride.scaled(shape[i].size)
                     : Affine::of(shape[i]).scaled(stride.constant);
      }
    }
    placementAxes(shape, grid.shape, axes);
    // The flattened tensor's second axis (size 1) trails the result.
    GraphTensor out = place(flat->inner, axes, int64_t(grid.shape.size()),
                            outputName(0) + "_placed");
    return define(
        0, emitUnsqueeze(out, int64_t(grid.shape.size()), outputName(0)));
  }
  Constant indices = constantInput(1, "the indices");
  const auto *c = std::get_if<Constant>(&data);
  if (!c)
    unsupported("Gather from a computed tensor is not supported (only from "
                "constants and shapes)");
  int64_t rank = int64_t(c->shape.size());
  int64_t axis = normaliseAxis(intAttribute("axis", 0), rank, "axis");
  std::vector<int64_t> picks = fixedList(indices, "indices");
  for (int64_t &pick : picks) {
    if (pick < -c->shape[axis] || pick >= c->shape[axis])
      unsupported("index " + std::to_string(pick) + " is out of range");
    if (pick < 0)
      pick += c->shape[axis];
  }
  std::vector<int64_t> shape(c->shape.begin(), c->shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), c->shape.begin() + axis + 1, c->shape.end());
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d)
    inner *= c->shape[d];
  int64_t count = int64_t(picks.size());
  define(0, gatherElements(*c, shape, [&](int64_t i) {
           int64_t innerIndex = i % inner, rest = i / inner;
           int64_t pick = picks[rest % count], outer = rest / count;
           return (outer * c->shape[axis] + pick) * inner + innerIndex;
         }));
}

void Importer::importExpand() {
  const Val &data = input(0);
  std::vector<Affine> target =
      integerList(constantInput(1, "the shape"), "shape");
  // A mask or positions broadcast anyway where they are used.
  if (const auto *t = std::get_if<ScoreMask>(&data))
    return define(0, *t);
  if (const auto *i = std::get_if<Index>(&data)) {
    Index out = *i;
    if (target.size() > out.shape.size()) {
      int64_t added = int64_t(target.size() - out.shape.size());
      out.shape.insert(out.shape.begin(), size_t(added), Dim::fixed(1));
      out.axis += added;
    }
    return define(0, out);
  }
  // An axis of size 1 expanded to a run-time size is left to the consumer's
  // broadcasting (a batched MatMul, an elementwise op): attnc cannot
  // materialise a tensor whose size it does not know.
  bool runtimeTarget = false;
  for (const Affine &size : target)
    runtimeTarget |= !size.isConstant();
  if (const auto *c = std::get_if<Constant>(&data)) {
    if (runtimeTarget) {
      for (size_t i = 0; i < target.size(); ++i) {
        int64_t offset = int64_t(target.size()) - int64_t(c->shape.size());
        int64_t from = int64_t(i) >= offset ? c->shape[i - offset] : 1;
        if (!target[i].isConstant() && from != 1)
          unsupported("expands a constant axis of size " +
                      std::to_string(from) + " to " + target[i].str());
      }
      if (target.size() > c->shape.size()) {
        Constant out = *c;
        out.shape.insert(out.shape.begin(), target.size() - c->shape.size(), 1);
        return define(0, out);
      }
      return define(0, *c);
    }
    std::vector<int64_t> shape;
    for (const Affine &size : target)
      shape.push_back(size.constant);
    shape = broadcastStatic(c->shape, shape);
    return define(0, gatherElements(*c, shape, [&](int64_t i) {
                    return broadcastIndex(c->shape, shape, i);
                  }));
  }
  // repeat_kv's Expand of [B, Hkv, 1, S, D] to [B, Hkv, G, S, D] and the
  // Reshape after it: attnc's repeat.
  GraphTensor x = tensorOf(data);
  Shape shape;
  size_t rank = std::max(x.shape.size(), target.size());
  int64_t expandedAxis = -1, times = 1;
  for (size_t i = 0; i < rank; ++i) {
    Dim from = i + x.shape.size() >= rank ? x.shape[i + x.shape.size() - rank]
                                          : Dim::fixed(1);
    std::optional<Dim> to = i + target.size() >= rank
                                ? target[i + target.size() - rank].asDim()
                                : Dim::fixed(1);
    if (!to)
      unsupported("the target size " + target[i].str() + " is not a size");
    if (to->isOne() || *to == from || (from.isOne() && !to->isFixed())) {
      shape.push_back(from); // Run-time sizes: see above.
    } else if (from.isOne() && to->isFixed() && expandedAxis < 0) {
      expandedAxis = int64_t(i);
      times = to->size;
      shape.push_back(*to);
    } else {
      unsupported("Expand of a computed tensor along more than one axis, or "
                  "to a run-time size");
    }
  }
  if (rank != x.shape.size())
    unsupported("Expand that adds axes to a computed tensor");
  if (expandedAxis < 0)
    return define(0, x);
  const std::string &out = node->output(0);
  if (expandedAxis >= 1 && uses[out] == 1 &&
      reader[out]->op_type() == "Reshape" &&
      !isUnsqueezeOf(x.name, expandedAxis)) {
    // A unit axis of any other origin (Falcon's qkv[:, :, :, [-2]]) as an
    // unsqueeze: repeat_kv's form, which attnc reads as GQA when the Reshape
    // merges the repeated axis into the one before it.
    Shape kept = x.shape;
    kept.erase(kept.begin() + expandedAxis);
    GraphTensor squeezed = emitReshape(x, kept, outputName(0) + "_kv");
    x = emit(outputName(0) + "_kv_axis", "unsqueeze",
             {{"x", squeezed.name}, {"axis", expandedAxis}}, x.dtype, x.shape);
  }
  define(0, emit(outputName(0), "repeat",
                 {{"x", x.name}, {"axis", expandedAxis}, {"times", times}},
                 x.dtype, shape));
}

/// Whether graph value `name` is an unsqueeze at `axis`.
bool Importer::isUnsqueezeOf(const std::string &name, int64_t axis) const {
  for (auto node = nodes.rbegin(); node != nodes.rend(); ++node)
    if ((*node)["name"] == name)
      return (*node)["op"] == "unsqueeze" && (*node)["axis"] == axis;
  return false;
}

void Importer::importIsNaN() {
  const Val &x = input(0);
  if (const auto *c = std::get_if<Constant>(&x)) {
    Constant out;
    out.type = onnx::TensorProto::BOOL;
    out.shape = c->shape;
    for (int64_t i = 0, n = elementCount(c->shape); i < n; ++i)
      out.integers.push_back(
          Affine::of(c->isFloat() && std::isnan(c->numbers[i])));
    return define(0, out);
  }
  const auto *p = std::get_if<GraphTensor>(&x);
  if (!p || !softmaxOutputs.count(p->name))
    unsupported("IsNaN is imported only of a Softmax's result, as the guard "
                "Where(IsNaN(p), 0, p) that PyTorch writes");
  define(0, SoftmaxNanTest{*p});
}

void Importer::importWhere() {
  const Val &condition = input(0), &a = input(1), &b = input(2);
  // Where(IsNaN(p), 0, p) after a softmax (PyTorch's export of
  // scaled_dot_product_attention with a bool mask: a row whose every key is
  // -inf gives NaN there). attnc's softmax gives NaN only for NaN inputs, so
  // the guard is p (docs/onnx.md).
  if (const auto *test = std::get_if<SoftmaxNanTest>(&condition)) {
    const auto *p = std::get_if<GraphTensor>(&b);
    if (scalarOf(a) != 0.0 || !p || p->name != test->probabilities.name)
      unsupported("IsNaN of a softmax is imported only as "
                  "Where(IsNaN(p), 0, p)");
    return define(0, *p);
  }
  if (const auto *t = std::get_if<ScoreMask>(&condition)) {
    bool keepInside = t->inside != 0 && t->outside == 0;
    if (!keepInside && !(t->inside == 0 && t->outside != 0))
      unsupported("the condition is not a boolean mask");
    std::optional<double> sa = scalarOf(a), sb = scalarOf(b);
    if (sa && sb) {
      ScoreMask out = *t;
      out.type = std::get<Constant>(a).type;
      out.inside = keepInside ? *sa : *sb;
      out.outside = keepInside ? *sb : *sa;
      return define(0, out);
    }
    // Where(keep, scores, very negative): the scores masked.
    const Val &kept = keepInside ? a : b;
    std::optional<double> fill = keepInside ? sb : sa;
    if (std::holds_alternative<GraphTensor>(kept) && fill &&
        *fill <= kMaskingValue) {
      ScoreMask keep = *t;
      if (!keepInside)
        std::swap(keep.inside, keep.outside);
      return define(0, maskScores(std::get<GraphTensor>(kept), keep, *fill,
                                  outputName(0)));
    }
    unsupported("a mask of positions selects between other than scores and "
                "a fill of at most " +
                std::to_string(kMaskingValue));
  }
  const auto *m = std::get_if<GraphTensor>(&condition);
  bool maskView = m && m->dtype == DType::Bool && !m->root.empty();
  // Where(m, scores, c ≤ -1e4) (or with the branches swapped): the scores
  // masked, c where m drops a key.
  for (int side = 0; maskView && side < 2; ++side) {
    const auto *scores = std::get_if<GraphTensor>(side == 0 ? &a : &b);
    std::optional<double> fill = scalarOf(side == 0 ? b : a);
    if (!scores || !fill || *fill > kMaskingValue)
      continue;
    ScoreMask keep = maskOfView(*m);
    if (side == 1)
      keep.tensors[0].negated = !keep.tensors[0].negated;
    return define(0, maskScores(*scores, keep, *fill, outputName(0)));
  }
  // Where(m, a, b) of scalars, m a bool view of a model input (a padding
  // mask): b + (a - b)·m with the input read as 0/1 floats, an additive
  // mask exactly as the model computes it. Infinite a or b become the
  // largest finite float, so that (a - b)·0 is 0, never NaN: the same after
  // a softmax but in a row with every key masked.
  if (maskView && scalarOf(a) && scalarOf(b)) {
    GraphTensor ones = retype(*m, DType::F32);
    auto finite = [](double v) {
      double largest = double(std::numeric_limits<float>::max());
      return std::clamp(v, -largest, largest);
    };
    double x = finite(*scalarOf(m->negated ? b : a)),
           y = finite(*scalarOf(m->negated ? a : b));
    GraphTensor scaled =
        emit(outputName(0) + "_scaled", "scale",
             {{"x", ones.name}, {"value", x - y}}, DType::F32, ones.shape);
    Constant offset = scalarConstant(onnx::TensorProto::FLOAT, y);
    return define(
        0, emitBinary("add", scaled, materialise(offset), outputName(0)));
  }
  const auto *cc = std::get_if<Constant>(&condition);
  const auto *ca = std::get_if<Constant>(&a), *cb = std::get_if<Constant>(&b);
  if (cc && ca && cb) {
    Constant out;
    out.type = ca->type;
    out.shape =
        broadcastStatic(broadcastStatic(cc->shape, ca->shape), cb->shape);
    int64_t count = elementCount(out.shape);
    for (int64_t i = 0; i < count; ++i) {
      std::optional<double> keep =
          cc->number(broadcastIndex(cc->shape, out.shape, i));
      if (!keep)
        unsupported("a condition computed from run-time sizes");
      const Constant &from = *keep != 0 ? *ca : *cb;
      int64_t index = broadcastIndex(from.shape, out.shape, i);
      if (out.isFloat())
        out.numbers.push_back(*from.number(index));
      else
        out.integers.push_back(from.integers[index]);
    }
    return define(0, out);
  }
  unsupported("Where on computed tensors is supported for causal masks "
              "only (a triangular condition)");
}

void Importer::importCast() {
  ElemType to = ElemType(intAttribute("to", onnx::TensorProto::FLOAT));
  const Val &x = input(0);
  if (const auto *c = std::get_if<Constant>(&x)) {
    Constant out = *c;
    out.type = to;
    out.sourceName.clear();
    if (c->isFloat() && !isFloatType(to)) {
      out.numbers.clear();
      for (double value : c->numbers)
        out.integers.push_back(Affine::of(
            to == onnx::TensorProto::BOOL ? value != 0 : int64_t(value)));
    } else if (!c->isFloat() && isFloatType(to)) {
      out.integers.clear();
      for (const Affine &value : c->integers) {
        if (!value.isConstant())
          unsupported("a run-time size cast to a float");
        out.numbers.push_back(double(value.constant));
      }
    } else if (to == onnx::TensorProto::BOOL) {
      for (Affine &value : out.integers)
        if (value.isConstant())
          value = Affine::of(value.constant != 0);
    }
    return define(0, out);
  }
  if (const auto *i = std::get_if<Index>(&x)) {
    Index out = *i;
    out.type = to;
    return define(0, out);
  }
  if (const auto *t = std::get_if<ScoreMask>(&x)) {
    ScoreMask out = *t;
    out.type = to;
    if (to == onnx::TensorProto::BOOL) {
      out.inside = out.inside != 0;
      out.outside = out.outside != 0;
    }
    return define(0, out);
  }
  GraphTensor t = tensorOf(x);
  DType dtype = graphDType(to, "the cast's result");
  if (dtype == DType::Bool && t.dtype == DType::I32 && !t.root.empty()) {
    t.dtype = DType::Bool; // Decided by its consumer (intTruth).
    t.intTruth = true;
  } else if (dtype != t.dtype) {
    t = retype(t, dtype);
  }
  define(0, t);
}

/// Equal, Less, LessOrEqual, Greater, GreaterOrEqual; And, Or (`op` is the
/// ONNX name).
void Importer::importCompare(const std::string &op) {
  const Val &a = input(0), &b = input(1);
  auto apply = [&](double x, double y) -> double {
    if (op == "Equal")
      return x == y;
    if (op == "Less")
      return x < y;
    if (op == "LessOrEqual")
      return x <= y;
    if (op == "Greater")
      return x > y;
    if (op == "GreaterOrEqual")
      return x >= y;
    if (op == "And")
      return x != 0 && y != 0;
    return x != 0 || y != 0; // Or
  };
  bool logical = op == "And" || op == "Or";
  // Position grids compared along the last two axes: a triangle.
  const auto *ia = std::get_if<Index>(&a), *ib = std::get_if<Index>(&b);
  if (ia && ib && !logical)
    return define(0, compareIndices(*ia, *ib, op));
  // Positions start .. start + n - 1 against a bound below or above all of
  // them (kv_idx >= 0): a constant.
  if ((ia || ib) && !logical) {
    const Index &index = ia ? *ia : *ib;
    const auto *bound = std::get_if<Constant>(ia ? &b : &a);
    if (bound && bound->size() == 1 && !bound->isFloat()) {
      Affine low = index.start, high = index.start +
                                       Affine::of(index.shape[index.axis]) -
                                       Affine::of(1);
      // Holds for every position when it holds over the range of each end
      // (sizes are at least 1).
      auto holds = [&](const Affine &x) -> std::optional<bool> {
        Affine d = ia ? x - bound->integers[0] : bound->integers[0] - x;
        double lo = -INFINITY, hi = INFINITY, sum = double(d.constant);
        bool up = true, down = true;
        for (const auto &term : d.terms) {
          sum += double(term.second);
          up &= term.second > 0;
          down &= term.second < 0;
        }
        if (d.terms.empty())
          lo = hi = sum;
        else if (up)
          lo = sum;
        else if (down)
          hi = sum;
        // d = left - right; the comparison of d with 0 over [lo, hi].
        bool all = apply(lo, 0) != 0 && apply(hi, 0) != 0;
        bool none = apply(lo, 0) == 0 && apply(hi, 0) == 0;
        if (op == "Equal" || (!all && !none))
          return std::nullopt;
        return all;
      };
      std::optional<bool> atLow = holds(low), atHigh = holds(high);
      if (atLow && atHigh && *atLow == *atHigh)
        return define(0, scalarConstant(onnx::TensorProto::BOOL, *atLow));
    }
    unsupported(op + " of positions with a bound that splits them");
  }

  // Masks with a scalar or with each other stay masks.
  const auto *ta = std::get_if<ScoreMask>(&a), *tb = std::get_if<ScoreMask>(&b);
  // A mask And a bool view of a model input (a padding mask).
  auto view = [](const Val &v) -> std::optional<ScoreMask> {
    const auto *t = std::get_if<GraphTensor>(&v);
    if (t && t->dtype == DType::Bool && !t->root.empty())
      return maskOfView(*t);
    return std::nullopt;
  };
  if (op == "And" && (ta || tb))
    if (std::optional<ScoreMask> padding = view(ta ? b : a))
      return define(0, bothKeep(ta ? *ta : *tb, *padding));
  if (ta || tb) {
    auto uniformOf = [](const Val &v) -> std::optional<double> {
      if (const auto *c = std::get_if<Constant>(&v))
        return uniformValue(*c);
      return std::nullopt;
    };
    ScoreMask out = ta ? *ta : *tb;
    out.type = onnx::TensorProto::BOOL;
    if (ta && tb) {
      if (!ta->sameKeys(*tb)) {
        if (op == "And")
          return define(0, bothKeep(*ta, *tb));
        unsupported("Or of masks that keep different keys is not supported");
      }
      out.inside = apply(ta->inside, tb->inside);
      out.outside = apply(ta->outside, tb->outside);
      return define(0, out);
    }
    if (std::optional<double> s = uniformOf(ta ? b : a)) {
      out.inside = ta ? apply(ta->inside, *s) : apply(*s, tb->inside);
      out.outside = ta ? apply(ta->outside, *s) : apply(*s, tb->outside);
      return define(0, out);
    }
  }
  const auto *ca = std::get_if<Constant>(&a), *cb = std::get_if<Constant>(&b);
  // A mask And true (Or false) is the mask.
  if (logical && (ca || cb) &&
      (std::holds_alternative<GraphTensor>(a) ||
       std::holds_alternative<GraphTensor>(b))) {
    std::optional<double> value = uniformValue(ca ? *ca : *cb);
    const GraphTensor &mask = std::get<GraphTensor>(ca ? b : a);
    if (value && (*value != 0) == (op == "And") && mask.dtype == DType::Bool)
      return define(0, mask);
  }
  if (!ca || !cb)
    unsupported(op + " on computed tensors is not supported yet (only on "
                     "constants, shapes, positions and masks)");
  define(0, foldElementwise(
                *ca, *cb, onnx::TensorProto::BOOL, apply,
                [&](const Affine &x, const Affine &y) -> std::optional<Affine> {
                  if (logical) {
                    std::optional<int> sx = x.sign(), sy = y.sign();
                    if (!sx || !sy)
                      return std::nullopt;
                    return Affine::of(int64_t(apply(*sx, *sy)));
                  }
                  // The sign of x - y decides every comparison.
                  std::optional<int> sign = (x - y).sign();
                  if (!sign)
                    return std::nullopt;
                  return Affine::of(int64_t(apply(double(*sign), 0.0)));
                }));
}

void Importer::importNot() {
  const Val &x = input(0);
  if (const auto *t = std::get_if<ScoreMask>(&x)) {
    ScoreMask out = *t;
    out.inside = t->inside == 0;
    out.outside = t->outside == 0;
    return define(0, out);
  }
  if (const auto *t = std::get_if<GraphTensor>(&x);
      t && t->dtype == DType::Bool && !t->root.empty()) {
    GraphTensor out = *t;
    out.negated = !t->negated;
    return define(0, out);
  }
  const auto *c = std::get_if<Constant>(&x);
  if (!c)
    unsupported("Not of a computed tensor is not supported yet");
  Constant out = *c;
  for (Affine &value : out.integers)
    value = Affine::of(value.isConstant() && value.constant == 0);
  define(0, out);
}

/// Trilu keeps j <= i + k (lower) or j >= i + k (upper) and zeroes the rest.
void Importer::importTrilu() {
  bool upper = intAttribute("upper", 1) != 0;
  Affine k = Affine::of(0);
  if (hasInput(1)) {
    std::vector<Affine> list = integerList(constantInput(1, "k"), "k");
    if (list.size() != 1)
      unsupported("k must be one integer");
    k = list[0];
  }
  const Val &x = input(0);
  ElemType type;
  Shape shape;
  double value;
  if (const auto *f = std::get_if<Fill>(&x)) {
    type = f->type;
    shape = f->shape;
    value = f->value;
  } else if (const auto *c = std::get_if<Constant>(&x);
             c && c->size() > 0 && c->shape.size() >= 2) {
    std::optional<double> first = uniformValue(*c);
    if (!first || !k.isConstant())
      unsupported("Trilu of a constant that is not one value everywhere");
    type = c->type;
    for (int64_t size : c->shape)
      shape.push_back(Dim::fixed(size));
    value = *first;
  } else {
    unsupported("Trilu of a computed tensor is not supported (only of "
                "constants, to build masks)");
  }
  if (shape.size() < 2)
    unsupported("Trilu needs rank >= 2");
  // upper: value where j >= i + k, i.e. outside of j <= i + k - 1.
  ScoreMask t{type,
              shape,
              upper ? k - Affine::of(1) : k,
              std::nullopt,
              {},
              upper ? 0.0 : value,
              upper ? value : 0.0};
  define(0, t);
}

void Importer::importReduce(bool mean) {
  std::vector<int64_t> axes =
      opset >= 18 || (!mean && opset >= 13)
          ? (hasInput(1) ? fixedList(constantInput(1, "axes"), "axes")
                         : std::vector<int64_t>{})
          : intsAttribute("axes");
  bool keepdims = intAttribute("keepdims", 1) != 0;
  GraphTensor x = tensorInput(0);
  int64_t rank = int64_t(x.shape.size());
  if (axes.size() != 1)
    unsupported("reductions over more or less than one axis are not "
                "supported");
  int64_t axis = normaliseAxis(axes[0], rank, "axis");
  Shape shape = x.shape;
  if (keepdims)
    shape[axis] = Dim::fixed(1);
  else
    shape.erase(shape.begin() + axis);
  std::string out = outputName(0);
  GraphTensor sum = emit(
      mean ? out + "_sum" : out, "reduce_sum",
      {{"x", x.name}, {"axis", axis}, {"keepdims", keepdims}}, x.dtype, shape);
  if (!mean)
    return define(0, sum);
  if (!x.shape[axis].isFixed())
    unsupported("ReduceMean over a run-time size is not supported");
  define(0, emit(out, "scale",
                 {{"x", sum.name}, {"value", 1.0 / double(x.shape[axis].size)}},
                 x.dtype, shape));
}

void Importer::importRange() {
  Constant start = constantInput(0, "start"), limit = constantInput(1, "limit"),
           delta = constantInput(2, "delta");
  std::optional<double> s = start.scalar(), l = limit.scalar(),
                        d = delta.scalar();
  if (s && d == 1.0 && !l && limit.size() == 1 && !limit.isFloat()) {
    // Positions 0 .. S-1: kept symbolic, for masks built by comparing them.
    Affine first = Affine::of(int64_t(*s));
    std::optional<Dim> length = (limit.integers[0] - first).asDim();
    if (!length)
      unsupported("the length " + (limit.integers[0] - first).str() +
                  " is not one run-time size");
    return define(0, Index{start.type, {*length}, 0, first});
  }
  if (!s || !l || !d)
    unsupported("Range over run-time sizes with a start or step that is "
                "not fixed (or a step other than 1)");
  if (*d == 0)
    unsupported("Range with delta 0");
  int64_t count = std::max<int64_t>(0, int64_t(std::ceil((*l - *s) / *d)));
  Constant out;
  out.type = start.type;
  out.shape = {count};
  elementCount(out.shape);
  for (int64_t i = 0; i < count; ++i) {
    double value = *s + double(i) * *d;
    if (out.isFloat())
      out.numbers.push_back(value);
    else
      out.integers.push_back(Affine::of(int64_t(value)));
  }
  define(0, out);
}

void Importer::importShape() {
  const Val &x = input(0);
  Shape shape;
  if (const auto *c = std::get_if<Constant>(&x))
    for (int64_t size : c->shape)
      shape.push_back(Dim::fixed(size));
  else if (const auto *t = std::get_if<ScoreMask>(&x))
    shape = t->shape;
  else if (const auto *f = std::get_if<Fill>(&x))
    shape = f->shape;
  else if (const auto *i = std::get_if<Index>(&x))
    shape = i->shape;
  else if (const auto *g = std::get_if<Grid>(&x))
    shape = g->shape;
  else if (const auto *tuple = std::get_if<IndexTuple>(&x)) {
    shape = tuple->shape;
    shape.push_back(Dim::fixed(int64_t(tuple->parts.size())));
  } else if (const auto *t = std::get_if<GraphTensor>(&x))
    shape = t->shape;
  else
    unsupported("the shape of a flattened tensor (a product of run-time "
                "sizes attnc cannot name)");
  int64_t rank = int64_t(shape.size());
  int64_t start = intAttribute("start", 0), end = intAttribute("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  Constant out;
  out.type = onnx::TensorProto::INT64;
  for (int64_t d = start; d < end; ++d)
    out.integers.push_back(Affine::of(shape[d]));
  out.shape = {int64_t(out.integers.size())};
  define(0, out);
}

void Importer::importConstant() {
  const onnx::AttributeProto *a = nullptr;
  for (const onnx::AttributeProto &each : node->attribute())
    a = &each;
  if (!a)
    unsupported("a Constant without a value");
  Constant out;
  if (a->name() == "value") {
    out = tensors.read(a->t());
  } else if (a->name() == "value_float") {
    out = scalarConstant(onnx::TensorProto::FLOAT, a->f());
  } else if (a->name() == "value_int") {
    out = scalarConstant(onnx::TensorProto::INT64, double(a->i()));
    out.integers = {Affine::of(a->i())};
  } else if (a->name() == "value_floats" || a->name() == "value_ints") {
    bool floats = a->name() == "value_floats";
    out.type = floats ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64;
    if (floats)
      out.numbers.assign(a->floats().begin(), a->floats().end());
    else
      for (int64_t v : a->ints())
        out.integers.push_back(Affine::of(v));
    out.shape = {int64_t(floats ? out.numbers.size() : out.integers.size())};
  } else {
    unsupported("a Constant given as " + a->name() + " is not supported");
  }
  out.sourceName.clear();
  define(0, out);
}

void Importer::importConstantOfShape() {
  std::vector<Affine> sizes =
      integerList(constantInput(0, "the shape"), "the shape");
  Constant value = scalarConstant(onnx::TensorProto::FLOAT, 0.0);
  if (const onnx::AttributeProto *a = attribute("value"))
    value = tensors.read(a->t());
  std::optional<double> fill = value.scalar();
  if (!fill)
    unsupported("value must hold one element");
  Shape shape;
  std::vector<int64_t> fixed;
  bool symbolic = false;
  for (const Affine &size : sizes) {
    std::optional<Dim> dim = size.asDim();
    if (!dim)
      unsupported("the size " + size.str() +
                  " is not a fixed size or one "
                  "run-time size");
    shape.push_back(*dim);
    symbolic |= !dim->isFixed();
    fixed.push_back(dim->size);
  }
  if (symbolic)
    return define(0, Fill{value.type, shape, *fill});
  Constant out;
  out.type = value.type;
  out.shape = fixed;
  int64_t count = elementCount(fixed);
  if (out.isFloat())
    out.numbers.assign(size_t(count), *fill);
  else
    out.integers.assign(size_t(count), Affine::of(int64_t(*fill)));
  define(0, out);
}

/// x with unit axes inserted so that its axes land on `axes` of a
/// rank-`rank` result.
GraphTensor Importer::place(const GraphTensor &x,
                            const std::vector<int64_t> &axes, int64_t rank,
                            const std::string &onnxName) {
  GraphTensor out = x;
  for (int64_t d = 0; d < rank; ++d)
    if (std::find(axes.begin(), axes.end(), d) == axes.end())
      out = emitUnsqueeze(out, d, onnxName + "_" + std::to_string(d));
  return out;
}

void Importer::importFlatten() {
  GraphTensor x = tensorInput(0);
  int64_t rank = int64_t(x.shape.size());
  int64_t axis = intAttribute("axis", 1);
  if (axis < -rank || axis > rank)
    unsupported("axis " + std::to_string(axis) + " is out of range");
  axis = axis < 0 ? axis + rank : axis;
  // [prod(x[:axis]), prod(x[axis:])]: a reshape when both are nameable.
  auto product = [&](size_t from, size_t to) -> std::optional<Dim> {
    int64_t fixed = 1;
    std::optional<Dim> symbol;
    for (size_t d = from; d < to; ++d) {
      if (x.shape[d].isFixed())
        fixed *= x.shape[d].size;
      else if (symbol)
        return std::nullopt;
      else
        symbol = x.shape[d];
    }
    if (symbol && fixed != 1)
      return std::nullopt;
    return symbol ? *symbol : Dim::fixed(fixed);
  };
  std::optional<Dim> rows = product(0, size_t(axis)),
                     cols = product(size_t(axis), size_t(rank));
  if (rows && cols)
    return define(0, emitReshape(x, {*rows, *cols}, outputName(0)));
  define(0, Flattened{x, axis});
}

/// GatherND(x, positions stacked per axis of x): x itself, placed where
/// the positions run (how torch.export writes x[batch_idx, kv_idx]).
void Importer::importGatherND() {
  GraphTensor x = tensorInput(0);
  if (const auto *indices = std::get_if<Constant>(&input(1));
      indices && intAttribute("batch_dims", 0) == 0)
    return gatherLeadingRows(x, *indices);
  const auto *tuple = std::get_if<IndexTuple>(&input(1));
  if (!tuple || intAttribute("batch_dims", 0) != 0)
    unsupported("GatherND is supported only at stacked positions over a "
                "tensor's axes (x[i, j] element by element)");
  if (tuple->parts.size() != x.shape.size())
    unsupported("GatherND with fewer positions than the tensor's axes");
  std::vector<int64_t> axes;
  for (const Index &part : tuple->parts) {
    if (!(part.start == Affine::of(0)))
      unsupported("GatherND at shifted positions");
    axes.push_back(part.axis +
                   int64_t(tuple->shape.size() - part.shape.size()));
  }
  placementAxes(x.shape, tuple->shape, axes);
  define(0, place(x, axes, int64_t(tuple->shape.size()), outputName(0)));
}

/// GatherND of a computed tensor at constant indices [..., 1]: rows of its
/// first axis, as torch.export writes x[:, :, [k]] (the axis moved to the
/// front first; Falcon's fused qkv). Each run of consecutive rows is one
/// slice, several are joined by a concat.
void Importer::gatherLeadingRows(const GraphTensor &x,
                                 const Constant &indices) {
  if (indices.isFloat() || indices.shape.empty() || indices.shape.back() != 1)
    unsupported("GatherND of a computed tensor is supported only at "
                "constant indices of the first axis (indices [..., 1])");
  if (!x.shape[0].isFixed())
    unsupported("GatherND along a run-time size of a computed tensor");
  int64_t rows = x.shape[0].size;
  std::vector<int64_t> picked;
  for (int64_t i = 0; i < indices.size(); ++i) {
    std::optional<double> value = indices.number(i);
    if (!value || *value < -rows || *value >= rows)
      unsupported("a GatherND index outside the first axis's " +
                  std::to_string(rows) + " rows");
    picked.push_back(int64_t(*value) + (*value < 0 ? rows : 0));
  }
  if (picked.empty())
    unsupported("an empty GatherND");
  std::vector<std::string> runs;
  GraphTensor part;
  for (size_t first = 0; first < picked.size();) {
    size_t last = first + 1;
    while (last < picked.size() && picked[last] == picked[last - 1] + 1)
      ++last;
    Shape shape = x.shape;
    shape[0] = Dim::fixed(int64_t(last - first));
    part = emit(outputName(0) + "_rows" + std::to_string(runs.size()), "slice",
                {{"x", x.name},
                 {"axis", 0},
                 {"start", picked[first]},
                 {"end", picked[last - 1] + 1}},
                x.dtype, shape);
    runs.push_back(part.name);
    first = last;
  }
  if (runs.size() > 1) {
    Shape shape = x.shape;
    shape[0] = Dim::fixed(int64_t(picked.size()));
    part = emit(outputName(0) + "_joined", "concat",
                {{"inputs", runs}, {"axis", 0}}, x.dtype, shape);
  }
  Shape shape;
  for (size_t d = 0; d + 1 < indices.shape.size(); ++d)
    shape.push_back(Dim::fixed(indices.shape[d]));
  shape.insert(shape.end(), x.shape.begin() + 1, x.shape.end());
  define(0, emitReshape(part, shape, outputName(0)));
}

/// Max of positions: exporters take it only for its broadcast shape.
void Importer::importMax() {
  const auto *a = std::get_if<Index>(&input(0));
  const auto *b =
      node->input_size() == 2 ? std::get_if<Index>(&input(1)) : nullptr;
  if (!a || !b)
    unsupported("Max is supported only of positions (for their shape)");
  std::string problem;
  std::optional<Shape> shape = broadcastShapes(a->shape, b->shape, problem);
  if (!shape)
    unsupported(problem);
  // The values are never read: a NaN fill carries the shape.
  define(0, Fill{a->type, *shape, std::nan("")});
}

//===----------------------------------------------------------------------===//
// Fused attention operators.
//===----------------------------------------------------------------------===//

GraphTensor Importer::emitAttention(const GraphTensor &q, const GraphTensor &k,
                                    const GraphTensor &v, json fields,
                                    const std::string &onnxName) {
  fields["q"] = q.name;
  fields["k"] = k.name;
  fields["v"] = v.name;
  Shape shape = q.shape;
  shape.back() = v.shape.back();
  return emit(onnxName, "attention", fields, q.dtype, shape);
}

/// A key padding mask input [B, T] (1 = attend) as a bool [B, 1, 1, T]
/// tensor mask, or a [B] input of key lengths.
json Importer::paddingMask(int index, const Dim &batch, const Dim &keys) {
  const std::string &name = node->input(index);
  GraphTensor declared = tensorInput(index);
  if (declared.shape.size() == 1 && declared.dtype == DType::I32)
    return {{"kind", "key_length"}, {"input", declared.name}};
  if (declared.shape.size() != 2 || declared.shape[0] != batch ||
      declared.shape[1] != keys)
    unsupported("the key padding mask must be [batch, keys] or [batch]");
  // The model's 0/1 integers are read as bools (`attnc run` converts them).
  GraphTensor mask = declared.dtype == DType::Bool && !declared.intTruth
                         ? declared
                         : retype(declared, DType::Bool);
  mask = emitUnsqueeze(mask, 1, name + "_heads");
  mask = emitUnsqueeze(mask, 1, name + "_rows");
  return {{"kind", "tensor"}, {"input", mask.name}};
}

/// com.microsoft MultiHeadAttention (q, k, v [B, S, H·D] projected) and
/// Attention (x [B, S, E] with packed Q/K/V weights [E, 3E] and bias).
void Importer::importMultiHeadAttention(bool packedWeights) {
  int64_t heads = intAttribute("num_heads", 0);
  if (heads <= 0)
    unsupported("num_heads must be > 0");
  if (intAttribute("past_present_share_buffer", 0))
    unsupported("past/present key-value caches are not supported");
  std::string out = outputName(0);
  GraphTensor q, k, v;
  int maskIndex;
  if (packedWeights) {
    GraphTensor x = tensorInput(0);
    Constant w = constantInput(1, "the packed weights");
    if (w.shape.size() != 2 || w.shape[1] % 3 != 0 || !w.isFloat())
      unsupported("the weights must be a [E, 3E] float constant");
    if (!intsAttribute("qkv_hidden_sizes").empty())
      unsupported("qkv_hidden_sizes is not supported");
    std::optional<Constant> bias;
    if (hasInput(2))
      bias = constantInput(2, "the packed bias");
    int64_t E = w.shape[0], N = w.shape[1] / 3;
    GraphTensor parts[3];
    for (int p = 0; p < 3; ++p) {
      Constant part;
      part.shape = {E, N};
      for (int64_t r = 0; r < E; ++r)
        for (int64_t c = 0; c < N; ++c)
          part.numbers.push_back(w.numbers[r * 3 * N + p * N + c]);
      std::optional<Constant> partBias;
      if (bias) {
        partBias = Constant{};
        partBias->shape = {N};
        partBias->numbers.assign(bias->numbers.begin() + p * N,
                                 bias->numbers.begin() + (p + 1) * N);
      }
      parts[p] = emitLinear(x, part, partBias ? &*partBias : nullptr,
                            out + "_" + "qkv"[p]);
    }
    q = parts[0];
    k = parts[1];
    v = parts[2];
    maskIndex = 3;
    if (hasInput(4) || hasInput(5))
      unsupported("past state and attention bias inputs are not supported");
  } else {
    q = tensorInput(0);
    if (!hasInput(1) || !hasInput(2))
      unsupported("key and value must be given (packed QKV is not supported)");
    k = tensorInput(1);
    v = tensorInput(2);
    if (hasInput(3))
      unsupported("the bias input is not supported");
    maskIndex = 4;
    for (int i = 5; i < node->input_size(); ++i)
      if (hasInput(i))
        unsupported("inputs past key_padding_mask (attention bias, past "
                    "state) are not supported");
  }
  for (const GraphTensor *t : {&q, &k, &v})
    if (t->shape.size() != 3 || !t->shape[2].isFixed() ||
        t->shape[2].size % heads != 0)
      unsupported("q, k and v must be [batch, length, heads·dim] with a "
                  "fixed hidden size divisible by num_heads");
  auto split = [&](const GraphTensor &t, const std::string &suffix) {
    Shape shape = {t.shape[0], t.shape[1], Dim::fixed(heads),
                   Dim::fixed(t.shape[2].size / heads)};
    return emitReshape(t, shape, out + suffix);
  };
  json fields = {{"layout", "bshd"}};
  if (const onnx::AttributeProto *scale = attribute("scale");
      scale && scale->f() != 0)
    fields["scale"] = scale->f();
  json masks = json::array();
  if (intAttribute("unidirectional", 0))
    masks.push_back({{"kind", "causal"}});
  if (hasInput(maskIndex))
    masks.push_back(paddingMask(maskIndex, q.shape[0], k.shape[1]));
  if (!masks.empty())
    fields["mask"] = masks;
  GraphTensor o = emitAttention(split(q, "_q4"), split(k, "_k4"),
                                split(v, "_v4"), fields, out + "_heads");
  Shape merged = {o.shape[0], o.shape[1], Dim::fixed(v.shape[2].size)};
  define(0, emitReshape(o, merged, out));
}

/// com.microsoft GroupQueryAttention without a past: q [B, S, Hq·D], k/v
/// [B, S, Hkv·D], causal, keys past seqlens_k[b] + 1 dropped.
void Importer::importGroupQueryAttention() {
  int64_t heads = intAttribute("num_heads", 0),
          kvHeads = intAttribute("kv_num_heads", 0);
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads)
    unsupported("num_heads and kv_num_heads must be > 0, num_heads a "
                "multiple of kv_num_heads");
  if (hasInput(3) || hasInput(4))
    unsupported("past key/value inputs are not supported (prefill only)");
  if (intAttribute("do_rotary", 0))
    unsupported("do_rotary is not supported");
  if (intAttribute("smooth_softmax", 0))
    unsupported("smooth_softmax is not supported");
  if (intAttribute("local_window_size", -1) > 0)
    unsupported("local_window_size is not supported");
  for (int i = 7; i < node->input_size(); ++i)
    if (hasInput(i))
      unsupported("inputs past total_sequence_length (rotary caches, "
                  "position ids, attention bias) are not supported");
  for (int i = 1; i < node->output_size(); ++i)
    if (uses[outputName(i)] > 0)
      unsupported("the present_key/present_value outputs are read; attnc "
                  "computes only the attention output");
  if (!hasInput(1) || !hasInput(2) || !hasInput(5))
    unsupported("key, value and seqlens_k must be given (packed QKV is not "
                "supported)");
  std::string out = outputName(0);
  GraphTensor q = tensorInput(0), k = tensorInput(1), v = tensorInput(2);
  auto split = [&](const GraphTensor &t, int64_t count, const char *suffix) {
    if (t.shape.size() != 3 || !t.shape[2].isFixed() || t.shape[2].size % count)
      unsupported("q, k and v must be [batch, length, heads·dim] with a "
                  "fixed hidden size divisible by the head count");
    return emitReshape(t,
                       {t.shape[0], t.shape[1], Dim::fixed(count),
                        Dim::fixed(t.shape[2].size / count)},
                       out + suffix);
  };
  if (q.shape.size() == 3 && k.shape.size() == 3 && q.shape[1] != k.shape[1])
    unsupported("query and key lengths differ (a past is not supported)");
  // Key lengths seqlens_k + 1.
  GraphTensor lengths = tensorInput(5);
  if (lengths.dtype != DType::I32 || lengths.shape.size() != 1)
    unsupported("seqlens_k must be an int32 [batch] input");
  Constant one = scalarConstant(onnx::TensorProto::INT32, 1);
  GraphTensor keyLengths =
      emitBinary("add", lengths, materialise(one), out + "_key_lengths");
  json fields = {{"layout", "bshd"}};
  if (const onnx::AttributeProto *scale = attribute("scale");
      scale && scale->f() != 0)
    fields["scale"] = scale->f();
  if (double softcap = floatAttribute("softcap", 0.0); softcap > 0)
    fields["softcap"] = softcap;
  fields["mask"] =
      json::array({{{"kind", "causal"}},
                   {{"kind", "key_length"}, {"input", keyLengths.name}}});
  GraphTensor o =
      emitAttention(split(q, heads, "_q4"), split(k, kvHeads, "_k4"),
                    split(v, kvHeads, "_v4"), fields, out + "_heads");
  define(0, emitReshape(o,
                        {o.shape[0], o.shape[1],
                         Dim::fixed(o.shape[2].size * o.shape[3].size)},
                        out));
}

/// ONNX Attention (opset 23): Q [B, Hq, S, D], K/V [B, Hkv, T, D] (or 3-D
/// with q_num_heads / kv_num_heads).
void Importer::importAttention23() {
  std::string out = outputName(0);
  GraphTensor q = tensorInput(0), k = tensorInput(1), v = tensorInput(2);
  if (hasInput(4) || hasInput(5) || node->output_size() > 1)
    unsupported("past key/value inputs and the present/qk outputs are not "
                "supported");
  if (intAttribute("qk_matmul_output_mode", 0) != 0)
    unsupported("qk_matmul_output_mode is not supported");
  json fields = json::object();
  bool threeD = q.shape.size() == 3;
  if (threeD) {
    int64_t qHeads = intAttribute("q_num_heads", 0),
            kvHeads = intAttribute("kv_num_heads", 0);
    if (qHeads <= 0 || kvHeads <= 0)
      unsupported("3-D inputs need q_num_heads and kv_num_heads");
    auto split = [&](const GraphTensor &t, int64_t heads, const char *suffix) {
      if (!t.shape[2].isFixed() || t.shape[2].size % heads)
        unsupported("the hidden size must be fixed and divisible by the "
                    "head count");
      return emitReshape(t,
                         {t.shape[0], t.shape[1], Dim::fixed(heads),
                          Dim::fixed(t.shape[2].size / heads)},
                         out + suffix);
    };
    q = split(q, qHeads, "_q4");
    k = split(k, kvHeads, "_k4");
    v = split(v, kvHeads, "_v4");
    fields["layout"] = "bshd";
  } else if (q.shape.size() != 4) {
    unsupported("Q must be 3-D or 4-D");
  }
  if (const onnx::AttributeProto *scale = attribute("scale"))
    fields["scale"] = scale->f();
  if (double softcap = floatAttribute("softcap", 0.0); softcap > 0)
    fields["softcap"] = softcap;
  json masks = json::array();
  if (intAttribute("is_causal", 0)) {
    // ONNX aligns the causal mask top-left, attnc bottom-right: the same
    // when S and T are the same size.
    int64_t seqAxis = threeD ? 1 : 2;
    if (q.shape[seqAxis] != k.shape[seqAxis])
      unsupported("is_causal with query and key lengths that may differ "
                  "(ONNX aligns the mask top-left, attnc bottom-right)");
    masks.push_back({{"kind", "causal"}});
  }
  if (hasInput(3)) {
    GraphTensor mask = tensorInput(3);
    if (mask.dtype == DType::Bool)
      masks.push_back({{"kind", "tensor"}, {"input", mask.name}});
    else
      fields["bias"] =
          json::array({{{"kind", "tensor"}, {"input", mask.name}}});
  }
  if (!masks.empty())
    fields["mask"] = masks;
  GraphTensor o = emitAttention(q, k, v, fields, threeD ? out + "_heads" : out);
  if (threeD)
    o = emitReshape(
        o,
        {o.shape[0], o.shape[1], Dim::fixed(o.shape[2].size * o.shape[3].size)},
        out);
  define(0, o);
}

//===----------------------------------------------------------------------===//
// Entry points.
//===----------------------------------------------------------------------===//

onnx::ModelProto readOnnxModel(const std::string &path) {
  std::string bytes = readUserFile(
      path, path, "an ONNX model", kMaxModelBytes,
      "the most attnc reads in one piece (larger models keep their weights "
      "as external data)",
      [&](std::string_view start) {
        // A protobuf never starts with a zero byte (field number 0 is
        // invalid): /dev/zero fails here, not after 2 GiB.
        if (start[0] == 0)
          throw UserError(path + ": is not an ONNX model (it starts with a "
                                 "zero byte, which no protobuf does)");
      });
  if (bytes.empty())
    throw UserError(path + ": is empty, not an ONNX model");
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw UserError(path + ": is not an ONNX model (the protobuf does not "
                           "parse: truncated or another kind of file)");
  if (!model.has_graph())
    throw UserError(path + ": the ONNX model has no graph");
  return model;
}

OnnxModel importOnnxModel(const std::string &path, onnx::ModelProto model) {
  Importer importer(path, std::move(model));
  return importer.run();
}

OnnxModel importOnnx(const std::string &path) {
  return importOnnxModel(path, readOnnxModel(path));
}

bool isOnnxPath(const std::string &path) {
  return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0;
}

std::string onnxIdentifier(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "v_" + out;
  return out;
}

} // namespace attnc
