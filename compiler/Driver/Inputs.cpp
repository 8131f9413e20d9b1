//===- Inputs.cpp - Run-time sizes and input tensors for a run ------------===//

#include "Driver/Inputs.h"
#include "Support/Error.h"
#include "Support/Npy.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace attnc {
namespace {

/// Splits "NAME=VALUE" or fails naming the flag.
std::pair<std::string, std::string> splitAssignment(const std::string &flag,
                                                    const std::string &text,
                                                    const char *form) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    throw UserError(flag + " " + text + ": expected " + form);
  return {text.substr(0, equals), text.substr(equals + 1)};
}

int64_t parseSize(const std::string &flag, const std::string &text) {
  int64_t value = 0;
  size_t used = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != text.size() || text.empty())
    throw UserError(flag + ": " + text + " is not an integer");
  if (value <= 0)
    throw UserError(flag + ": a size must be > 0, got " + text);
  return value;
}

std::string readFile(const std::string &flag, const std::string &path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw UserError(flag + ": " + path + " is a directory, not a .npy file");
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    throw UserError(flag + ": cannot open " + path);
  // The magic first: a file that is not a .npy (/dev/zero, a mistyped
  // path) is not read whole; its first bytes are enough for the message.
  char magic[6] = {};
  stream.read(magic, sizeof magic);
  if (stream.gcount() != sizeof magic ||
      std::string_view(magic, sizeof magic) != "\x93NUMPY")
    return std::string(magic, size_t(stream.gcount()));
  std::ostringstream bytes;
  bytes.write(magic, sizeof magic);
  bytes << stream.rdbuf();
  if (stream.bad())
    throw UserError(flag + ": cannot read " + path);
  return bytes.str();
}

/// splitmix64: seeds one independent stream per input.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// A small, fully specified generator (xorshift64*), so random inputs are the
/// same on every platform and standard library.
class Random {
public:
  explicit Random(uint64_t seed) : state(mix(seed) | 1) {}
  uint64_t next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  /// Uniform in [0, 1).
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller).
  double normal() {
    double u = 1.0 - uniform(), w = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * w);
  }

private:
  uint64_t state;
};

/// How an input is used, which decides what random values make sense.
struct InputRole {
  enum Kind { Generic, KeyLength, AttendMask, FillMask } kind = Generic;
  Dim keyLength; ///< For KeyLength: the T it indexes.
};

InputRole roleOf(const Graph &graph, ValueId input) {
  InputRole role;
  for (const Node &node : graph.nodes) {
    if (const auto *attention = node.getIf<AttentionOp>()) {
      for (const AttentionMask &mask : attention->masks) {
        if (mask.input != input)
          continue;
        if (mask.kind == MaskKind::KeyLength)
          return {InputRole::KeyLength,
                  graph.attentionSizes(*attention).keyLen};
        return {InputRole::AttendMask, {}};
      }
    } else if (const auto *fill = node.getIf<MaskedFillOp>()) {
      if (fill->mask == input)
        role.kind = InputRole::FillMask;
    }
  }
  return role;
}

} // namespace

Tensor randomInput(const Graph &graph, const DimBindings &dims, int inputIndex,
                   uint64_t seed) {
  ValueId id = graph.inputs[inputIndex];
  const TensorType &type = graph.type(id);
  std::vector<int64_t> shape = concreteShape(type.shape, dims);
  int64_t count = elementCount(shape);
  Random random(mix(seed) ^ mix(uint64_t(inputIndex) + 1));
  InputRole role = roleOf(graph, id);
  std::vector<double> values(count);
  for (double &value : values) {
    switch (type.dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      value = random.normal();
      break;
    case DType::I32:
      if (role.kind == InputRole::KeyLength) {
        int64_t keys = concreteShape({role.keyLength}, dims)[0];
        value = double(random.next() % uint64_t(keys + 1));
      } else {
        value = double(int64_t(random.next() % 17) - 8);
      }
      break;
    case DType::Bool: {
      // Masks that select what to attend are mostly true; masked_fill masks
      // select what to drop, so they are mostly false.
      double probability = role.kind == InputRole::AttendMask ? 0.8
                           : role.kind == InputRole::FillMask ? 0.2
                                                              : 0.5;
      value = random.uniform() < probability;
      break;
    }
    }
  }
  return fromDoubles(type.dtype, shape, values);
}

DimBindings bindDimFlags(const Graph &graph,
                         const std::vector<std::string> &dimFlags,
                         std::map<std::string, std::string> *flagOf) {
  DimBindings dims;
  std::vector<std::string> runtimeDims = graph.runtimeDims();
  for (const std::string &text : dimFlags) {
    auto [name, valueText] = splitAssignment("--dim", text, "NAME=SIZE");
    std::string flag = "--dim " + text;
    bool known = false;
    for (const DimDecl &decl : graph.dims) {
      if (decl.name != name)
        continue;
      known = true;
      if (decl.fixed)
        throw UserError(flag + ": " + name + " is fixed at " +
                        std::to_string(*decl.fixed) + " by the graph " +
                        graph.file);
    }
    if (!known)
      throw UserError(
          flag + ": the graph " + graph.file + " has no run-time size " + name +
          (runtimeDims.empty() ? std::string(" (it has none)") : ""));
    int64_t value = parseSize(flag, valueText);
    if (dims.count(name) && dims[name] != value)
      throw UserError(flag + ": " + name + " was already given as " +
                      std::to_string(dims[name]));
    dims[name] = value;
    if (flagOf)
      (*flagOf)[name] = flag;
  }
  return dims;
}

RunInputs bindInputs(const Graph &graph,
                     const std::vector<std::string> &dimFlags,
                     const std::vector<std::string> &inputFlags) {
  RunInputs run;
  run.tensors.resize(graph.inputs.size());
  // Where each bound size came from, to explain conflicts.
  std::map<std::string, std::string> dimSource;
  run.dims = bindDimFlags(graph, dimFlags, &dimSource);

  std::vector<std::string> givenFlag(graph.inputs.size());
  for (const std::string &text : inputFlags) {
    auto [name, path] = splitAssignment("--input", text, "NAME=FILE.npy");
    std::string flag = "--input " + text;
    // A model's inputs go by the model's names too.
    auto source = graph.sourceNames.find(name);
    std::optional<ValueId> id =
        graph.lookup(source != graph.sourceNames.end() ? source->second : name);
    if (!id || !graph.value(*id).isInput())
      throw UserError(flag + ": the graph " + graph.file + " has no input " +
                      name);
    int index = graph.value(*id).inputIndex;
    if (run.tensors[index])
      throw UserError(flag + ": input " + name + " was already given by " +
                      givenFlag[index]);
    // A model's integers (int64 masks, position ids) are converted exactly
    // to the type the imported graph takes.
    std::optional<DType> convertTo;
    if (!graph.sourceNames.empty())
      convertTo = graph.type(*id).dtype;
    Tensor tensor = parseNpy(readFile(flag, path), flag, convertTo);
    const TensorType &type = graph.type(*id);
    if (tensor.dtype != type.dtype)
      throw UserError(flag + ": dtype " + std::string(npyDescr(tensor.dtype)) +
                      " (" + std::string(dtypeName(tensor.dtype)) +
                      ") does not match input " + name + " " + type.str() +
                      ", which needs " + std::string(npyDescr(type.dtype)));
    if (tensor.shape.size() != type.shape.size())
      throw UserError(flag + ": shape " + formatShape(tensor.shape) +
                      " does not match input " + name + " " + type.str());
    for (size_t d = 0; d < tensor.shape.size(); ++d) {
      const Dim &dim = type.shape[d];
      int64_t size = tensor.shape[d];
      if (dim.isFixed()) {
        if (size != dim.size)
          throw UserError(flag + ": shape " + formatShape(tensor.shape) +
                          " does not match input " + name + " " + type.str());
        continue;
      }
      auto bound = run.dims.find(dim.symbol);
      if (bound == run.dims.end()) {
        if (size <= 0)
          throw UserError(flag + ": shape " + formatShape(tensor.shape) +
                          " gives the run-time size " + dim.symbol +
                          " the value " + std::to_string(size) +
                          "; sizes must be > 0");
        run.dims[dim.symbol] = size;
        dimSource[dim.symbol] = flag;
      } else if (bound->second != size) {
        throw UserError(flag + ": shape " + formatShape(tensor.shape) +
                        " has " + dim.symbol + " = " + std::to_string(size) +
                        ", but " + dimSource[dim.symbol] + " set " +
                        dim.symbol + " = " + std::to_string(bound->second));
      }
    }
    run.tensors[index] = std::move(tensor);
    givenFlag[index] = flag;
  }

  checkBindings(graph, run.dims);
  return run;
}

std::vector<Tensor> completeInputs(const Graph &graph, RunInputs run,
                                   uint64_t seed) {
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    tensors.push_back(run.tensors[i]
                          ? std::move(*run.tensors[i])
                          : randomInput(graph, run.dims, int(i), seed));
  return tensors;
}

} // namespace attnc
