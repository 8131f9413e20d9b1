//===- Parse.cpp - JSON graph documents to validated graphs ---------------===//
//
// One pass over the document in written order: every node may use only inputs
// and earlier nodes, so validation and shape inference happen as each node is
// read. Every problem is reported once, as "FILE: /json/pointer: message".
//
//===----------------------------------------------------------------------===//

#include "Graph/Graph.h"
#include "Graph/ShapeRules.h"
#include "Support/Error.h"
#include "Support/TextFile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

namespace attnc {

std::optional<std::string> reservedSymbolName(const std::string &name) {
  // C and C++ keywords (the header is included from both), the program's
  // entry, the runtime's prefix and the implementation's reserved names.
  static const std::set<std::string> keywords = {"alignas",
                                                 "alignof",
                                                 "and",
                                                 "and_eq",
                                                 "asm",
                                                 "auto",
                                                 "bitand",
                                                 "bitor",
                                                 "bool",
                                                 "break",
                                                 "case",
                                                 "catch",
                                                 "char",
                                                 "char8_t",
                                                 "char16_t",
                                                 "char32_t",
                                                 "class",
                                                 "compl",
                                                 "concept",
                                                 "const",
                                                 "consteval",
                                                 "constexpr",
                                                 "constinit",
                                                 "const_cast",
                                                 "continue",
                                                 "co_await",
                                                 "co_return",
                                                 "co_yield",
                                                 "decltype",
                                                 "default",
                                                 "delete",
                                                 "do",
                                                 "double",
                                                 "dynamic_cast",
                                                 "else",
                                                 "enum",
                                                 "explicit",
                                                 "export",
                                                 "extern",
                                                 "false",
                                                 "float",
                                                 "for",
                                                 "friend",
                                                 "goto",
                                                 "if",
                                                 "inline",
                                                 "int",
                                                 "long",
                                                 "mutable",
                                                 "namespace",
                                                 "new",
                                                 "noexcept",
                                                 "not",
                                                 "not_eq",
                                                 "nullptr",
                                                 "operator",
                                                 "or",
                                                 "or_eq",
                                                 "private",
                                                 "protected",
                                                 "public",
                                                 "register",
                                                 "reinterpret_cast",
                                                 "requires",
                                                 "restrict",
                                                 "return",
                                                 "short",
                                                 "signed",
                                                 "sizeof",
                                                 "static",
                                                 "static_assert",
                                                 "static_cast",
                                                 "struct",
                                                 "switch",
                                                 "template",
                                                 "this",
                                                 "thread_local",
                                                 "throw",
                                                 "true",
                                                 "try",
                                                 "typedef",
                                                 "typeid",
                                                 "typename",
                                                 "union",
                                                 "unsigned",
                                                 "using",
                                                 "virtual",
                                                 "void",
                                                 "volatile",
                                                 "wchar_t",
                                                 "while",
                                                 "xor",
                                                 "xor_eq",
                                                 "main"};
  if (keywords.count(name))
    return "a C or C++ keyword or main";
  if (name.rfind("attnrt", 0) == 0)
    return "names beginning with attnrt are the runtime's";
  if (name.rfind("__", 0) == 0 ||
      (name.size() > 1 && name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z'))
    return "names beginning with __ or _ and a capital are the C "
           "implementation's";
  return std::nullopt;
}

bool isIdentifier(const std::string &name) {
  // [A-Za-z_][A-Za-z0-9_]*, by a loop: libstdc++'s regex recurses per
  // character and overflows the stack on names of ~100k characters.
  auto isLetter = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  if (name.empty() || !isLetter(name[0]))
    return false;
  return std::all_of(name.begin(), name.end(), [&](char c) {
    return isLetter(c) || (c >= '0' && c <= '9');
  });
}

namespace {

// Ordered: the written order of `inputs` is the kernel's argument order.
using json = nlohmann::ordered_json;

/// Escapes a key for use in a JSON pointer (RFC 6901).
std::string pointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::string inQuotes(std::string_view text) { return json(text).dump(); }

std::string joinQuoted(const std::vector<std::string> &items) {
  std::string out;
  for (const std::string &item : items)
    out += (out.empty() ? "" : ", ") + item;
  return out;
}

/// Edits (insert, delete, substitute, swap two neighbours) between two
/// names: the optimal string alignment distance, so "maks" is one edit from
/// "mask".
size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1,
                                     std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

/// " (did you mean "x"?)" when one candidate is close to `name`: a few edits
/// away, and not a complete rewrite of a short name ("U" never suggests "B").
std::string suggestion(std::string_view name,
                       const std::vector<std::string> &candidates) {
  const std::string *best = nullptr;
  size_t bestDistance = std::min(std::max<size_t>(1, name.size() / 3),
                                 name.size() - (name.empty() ? 0 : 1)) +
                        1;
  for (const std::string &candidate : candidates) {
    size_t distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      bestDistance = distance;
      best = &candidate;
    }
  }
  return best ? " (did you mean " + inQuotes(*best) + "?)" : "";
}

/// "a" or "an", for messages such as "an attention node".
std::string withArticle(const std::string &noun) {
  bool vowel =
      !noun.empty() && std::string("aeiou").find(noun[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + noun;
}

/// Finds the first key that appears twice in one object: nlohmann keeps the
/// last silently, and a repeated key is as likely a typo as an unknown one.
/// Returns its JSON pointer.
class DuplicateKeyFinder : public nlohmann::json_sax<json> {
public:
  std::optional<std::string> duplicate;

  bool null() override { return element(); }
  bool boolean(bool) override { return element(); }
  bool number_integer(number_integer_t) override { return element(); }
  bool number_unsigned(number_unsigned_t) override { return element(); }
  bool number_float(number_float_t, const string_t &) override {
    return element();
  }
  bool string(string_t &) override { return element(); }
  bool binary(binary_t &) override { return element(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t &key) override {
    Frame &object = frames.back();
    if (!object.keys.insert(key).second) {
      duplicate = pointer() + "/" + pointerToken(key);
      return false;
    }
    object.key = key;
    return true;
  }
  bool parse_error(std::size_t, const std::string &,
                   const nlohmann::detail::exception &) override {
    return false;
  }

private:
  struct Frame {
    bool array;
    std::string token; ///< How the parent reaches this container.
    size_t nextIndex = 0;
    std::set<std::string> keys;
    std::string key;
  };
  std::vector<Frame> frames;

  /// The token of the element about to start in the innermost container.
  std::string childToken() {
    if (frames.empty())
      return "";
    Frame &parent = frames.back();
    return parent.array ? std::to_string(parent.nextIndex++)
                        : pointerToken(parent.key);
  }
  bool element() {
    childToken();
    return true;
  }
  bool open(bool array) {
    std::string token = childToken();
    frames.push_back({array, token});
    return true;
  }
  bool close() {
    frames.pop_back();
    return true;
  }
  std::string pointer() const {
    std::string out;
    for (size_t i = 1; i < frames.size(); ++i)
      out += "/" + frames[i].token;
    return out;
  }
};

std::string describeJsonType(const json &value) {
  switch (value.type()) {
  case json::value_t::null:
    return "null";
  case json::value_t::boolean:
    return "a boolean";
  case json::value_t::string:
    return "a string";
  case json::value_t::array:
    return "a list";
  case json::value_t::object:
    return "an object";
  case json::value_t::number_float: {
    // JSON integers beyond 64 bits arrive as floats.
    double number = value.get<double>();
    if (std::isfinite(number) && std::floor(number) == number &&
        std::fabs(number) >= 9.2e18)
      return "an integer too large for 64 bits";
    return "a number with a fraction";
  }
  default:
    return "a number";
  }
}

class GraphParser;

/// One JSON object being read: checks its keys against those its context
/// allows and hands out typed fields with their pointers.
class ObjectReader {
public:
  ObjectReader(const GraphParser &parser, const json &object,
               std::string pointer, std::string what,
               std::vector<std::string> allowedKeys);

  const std::string &pointer() const { return objectPointer; }
  std::string pointerOf(std::string_view key) const {
    return objectPointer + "/" + pointerToken(key);
  }
  bool has(const std::string &key) const { return object.contains(key); }
  /// The field, or an error naming the object and the missing key.
  const json &require(const std::string &key) const;
  const json *find(const std::string &key) const {
    auto it = object.find(key);
    return it == object.end() ? nullptr : &*it;
  }

  std::string string(const std::string &key) const;
  int64_t integer(const std::string &key) const;
  double number(const std::string &key) const;
  bool boolean(const std::string &key, bool defaultValue) const;

private:
  const GraphParser &parser;
  const json &object;
  std::string objectPointer;
  std::string what;
};

class GraphParser {
public:
  explicit GraphParser(std::string file) { graph.file = std::move(file); }

  Graph parse(std::string_view text);

  [[noreturn]] void fail(const std::string &pointer,
                         const std::string &message) const {
    if (pointer.empty())
      throw UserError(graph.file + ": " + message);
    throw UserError(graph.file + ": " + pointer + ": " + message);
  }

  int64_t toInteger(const json &value, const std::string &pointer) const;
  double toNumber(const json &value, const std::string &pointer) const;

private:
  Graph graph;
  std::map<std::string, ValueId, std::less<>> valueByName;
  /// Where each node name is defined, to explain forward references.
  std::map<std::string, std::string, std::less<>> nodePointerByName;
  std::map<std::string, std::optional<int64_t>, std::less<>> declaredDims;

  // Document sections.
  void parseDims(const json &dims);
  void parseInputs(const json &inputs);
  void parseNode(const json &node, size_t index);
  void parseOutputs(const json &outputs);

  // Pieces.
  Dim parseDim(const json &value, const std::string &pointer) const;
  ValueId defineValue(const std::string &name, TensorType type, int producer,
                      const std::string &pointer);
  ValueId reference(const json &value, const std::string &pointer) const;
  ValueId operand(const ObjectReader &fields, const std::string &key) const {
    return reference(fields.require(key), fields.pointerOf(key));
  }
  std::optional<ValueId> optionalOperand(const ObjectReader &fields,
                                         const std::string &key) const {
    if (const json *value = fields.find(key))
      return reference(*value, fields.pointerOf(key));
    return std::nullopt;
  }
  int64_t axis(const ObjectReader &fields, const std::string &key,
               int64_t rank) const;
  void checkElementCount(const TensorType &type,
                         const std::string &pointer) const;
  const TensorType &type(ValueId id) const { return graph.type(id); }
  std::string describe(ValueId id) const {
    return graph.value(id).name + " " + type(id).str();
  }
  void requireFloat(ValueId id, const std::string &pointer) const;

  // Ops: each checks its operands and returns the result type.
  struct NodeResult {
    OpAttributes op;
    TensorType type;
  };
  NodeResult parseMatmul(const ObjectReader &fields);
  NodeResult parseLinear(const ObjectReader &fields);
  NodeResult parseBinary(const ObjectReader &fields, BinaryKind kind);
  NodeResult parseScale(const ObjectReader &fields);
  NodeResult parseUnary(const ObjectReader &fields, UnaryKind kind);
  NodeResult parseSoftmax(const ObjectReader &fields);
  NodeResult parseMaskedFill(const ObjectReader &fields);
  NodeResult parseCausalMask(const ObjectReader &fields);
  NodeResult parseWindowMask(const ObjectReader &fields);
  /// The `x` of causal_mask and window_mask: float scores [..., S, T].
  ValueId scoresOperand(const ObjectReader &fields,
                        const std::string &op) const;
  /// A window's `left` and `right`, integers >= 0.
  std::pair<int64_t, int64_t> windowBounds(const ObjectReader &fields) const;
  NodeResult parseReshape(const ObjectReader &fields);
  NodeResult parseTranspose(const ObjectReader &fields);
  NodeResult parseUnsqueeze(const ObjectReader &fields);
  NodeResult parseRepeat(const ObjectReader &fields);
  NodeResult parseSlice(const ObjectReader &fields);
  NodeResult parseReduceSum(const ObjectReader &fields);
  NodeResult parseConcat(const ObjectReader &fields);
  NodeResult parseAttention(const ObjectReader &fields);
  AttentionScore parseScore(const json &score, const std::string &pointer,
                            const AttentionSizes &sizes) const;
  AttentionBias parseBias(const json &bias, const std::string &pointer,
                          const AttentionSizes &sizes) const;
  AttentionMask parseMask(const json &mask, const std::string &pointer,
                          const AttentionSizes &sizes) const;
  void requireBroadcastableToScores(ValueId id, const std::string &pointer,
                                    const AttentionSizes &sizes) const;
};

//===----------------------------------------------------------------------===//
// ObjectReader
//===----------------------------------------------------------------------===//

ObjectReader::ObjectReader(const GraphParser &parser, const json &object,
                           std::string pointer, std::string what,
                           std::vector<std::string> allowedKeys)
    : parser(parser), object(object), objectPointer(std::move(pointer)),
      what(std::move(what)) {
  if (!object.is_object())
    parser.fail(objectPointer, "expected " + this->what +
                                   " (a JSON object), got " +
                                   describeJsonType(object));
  for (const auto &item : object.items()) {
    if (std::find(allowedKeys.begin(), allowedKeys.end(), item.key()) !=
        allowedKeys.end())
      continue;
    std::vector<std::string> quotedKeys;
    for (const std::string &key : allowedKeys)
      quotedKeys.push_back(inQuotes(key));
    parser.fail(pointerOf(item.key()),
                "unknown key " + inQuotes(item.key()) + " in " + this->what +
                    suggestion(item.key(), allowedKeys) +
                    "; allowed: " + joinQuoted(quotedKeys));
  }
}

const json &ObjectReader::require(const std::string &key) const {
  auto it = object.find(key);
  if (it == object.end())
    parser.fail(objectPointer, what + " needs " + inQuotes(key));
  return *it;
}

std::string ObjectReader::string(const std::string &key) const {
  const json &value = require(key);
  if (!value.is_string())
    parser.fail(pointerOf(key),
                "expected a string, got " + describeJsonType(value));
  return value.get<std::string>();
}

int64_t ObjectReader::integer(const std::string &key) const {
  return parser.toInteger(require(key), pointerOf(key));
}

double ObjectReader::number(const std::string &key) const {
  return parser.toNumber(require(key), pointerOf(key));
}

bool ObjectReader::boolean(const std::string &key, bool defaultValue) const {
  const json *value = find(key);
  if (!value)
    return defaultValue;
  if (!value->is_boolean())
    parser.fail(pointerOf(key),
                "expected true or false, got " + describeJsonType(*value));
  return value->get<bool>();
}

//===----------------------------------------------------------------------===//
// Document sections
//===----------------------------------------------------------------------===//

int64_t GraphParser::toInteger(const json &value,
                               const std::string &pointer) const {
  if (value.is_number_unsigned()) {
    if (value.get<uint64_t>() >
        static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(pointer, "integer " + value.dump() + " is too large");
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number_integer())
    return value.get<int64_t>();
  if (value.is_number_float() && std::isfinite(value.get<double>()) &&
      std::floor(value.get<double>()) == value.get<double>() &&
      std::abs(value.get<double>()) >= 9.2e18)
    fail(pointer, "integer " + value.dump() + " is out of range");
  fail(pointer, "expected an integer, got " + describeJsonType(value) +
                    (value.is_primitive() ? " " + value.dump() : ""));
}

double GraphParser::toNumber(const json &value,
                             const std::string &pointer) const {
  if (!value.is_number())
    fail(pointer, "expected a number, got " + describeJsonType(value));
  double number = value.get<double>();
  if (!std::isfinite(number))
    fail(pointer, "expected a finite number, got " + value.dump());
  return number;
}

Graph GraphParser::parse(std::string_view text) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception &error) {
    // nlohmann's text reads "[json.exception.parse_error.101] parse error at
    // line 3, column 14: ..."; keep only the part after the tag.
    std::string message = error.what();
    size_t tagEnd = message.find("] ");
    if (tagEnd != std::string::npos)
      message = message.substr(tagEnd + 2);
    fail("", "malformed JSON: " + message);
  }

  DuplicateKeyFinder duplicates;
  json::sax_parse(text, &duplicates);
  if (duplicates.duplicate)
    fail(*duplicates.duplicate, "duplicate key " +
                                    inQuotes(duplicates.duplicate->substr(
                                        duplicates.duplicate->rfind('/') + 1)) +
                                    " (a JSON object may name each key once)");

  ObjectReader root(*this, document, "", "a graph document",
                    {"attnc", "name", "dims", "inputs", "nodes", "outputs"});
  int64_t version = root.integer("attnc");
  if (version != 1)
    fail("/attnc", "unsupported format version " + std::to_string(version) +
                       " (this attnc reads version 1)");
  graph.name = root.string("name");
  if (!isIdentifier(graph.name))
    fail("/name", "graph name " + inQuotes(graph.name) +
                      " must match [A-Za-z_][A-Za-z0-9_]* (it names C "
                      "symbols and files)");
  if (std::optional<std::string> why = reservedSymbolName(graph.name))
    fail("/name", "graph name " + inQuotes(graph.name) +
                      " cannot name the kernel's C symbols: " + *why);
  if (const json *dims = root.find("dims"))
    parseDims(*dims);
  parseInputs(root.require("inputs"));
  const json &nodes = root.require("nodes");
  if (!nodes.is_array())
    fail("/nodes", "expected a list of nodes, got " + describeJsonType(nodes));
  // Record every node name first so a forward reference can say where the
  // name is defined.
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].is_object() && nodes[i].contains("name") &&
        nodes[i]["name"].is_string())
      nodePointerByName.emplace(nodes[i]["name"].get<std::string>(),
                                "/nodes/" + std::to_string(i));
  for (size_t i = 0; i < nodes.size(); ++i)
    parseNode(nodes[i], i);
  parseOutputs(root.require("outputs"));
  return std::move(graph);
}

void GraphParser::parseDims(const json &dims) {
  if (!dims.is_object())
    fail("/dims",
         "expected an object of named sizes, got " + describeJsonType(dims));
  for (const auto &item : dims.items()) {
    std::string pointer = "/dims/" + pointerToken(item.key());
    if (!isIdentifier(item.key()))
      fail(pointer, "dim name " + inQuotes(item.key()) +
                        " must match [A-Za-z_][A-Za-z0-9_]*");
    std::optional<int64_t> fixed;
    if (!item.value().is_null()) {
      if (!item.value().is_number_integer())
        fail(pointer,
             "expected an integer > 0 or null (a run-time size), got " +
                 describeJsonType(item.value()));
      fixed = toInteger(item.value(), pointer);
      if (*fixed <= 0)
        fail(pointer, "size must be > 0, got " + std::to_string(*fixed));
    }
    declaredDims.emplace(item.key(), fixed);
    graph.dims.push_back({item.key(), fixed});
  }
}

Dim GraphParser::parseDim(const json &value, const std::string &pointer) const {
  if (value.is_string()) {
    std::string name = value.get<std::string>();
    auto it = declaredDims.find(name);
    if (it == declaredDims.end()) {
      std::vector<std::string> names;
      for (const auto &declared : declaredDims)
        names.push_back(declared.first);
      fail(pointer, "unknown dim " + inQuotes(name) + suggestion(name, names) +
                        " (declare it in /dims)");
    }
    return it->second ? Dim::fixed(*it->second) : Dim::named(name);
  }
  if (!value.is_number_integer())
    fail(pointer, "expected a dim (an integer > 0 or a name from /dims), got " +
                      describeJsonType(value));
  int64_t size = toInteger(value, pointer);
  if (size <= 0)
    fail(pointer, "dim must be > 0, got " + std::to_string(size));
  return Dim::fixed(size);
}

void GraphParser::checkElementCount(const TensorType &type,
                                    const std::string &pointer) const {
  int64_t count = 1;
  for (const Dim &dim : type.shape) {
    if (!dim.isFixed())
      continue; // Checked again once run-time sizes are bound.
    if (__builtin_mul_overflow(count, dim.size, &count) || count > kMaxElements)
      fail(pointer, "tensor " + type.str() + " has more than 2^40 elements");
  }
}

ValueId GraphParser::defineValue(const std::string &name, TensorType type,
                                 int producer, const std::string &pointer) {
  checkElementCount(type, pointer);
  ValueId id = static_cast<ValueId>(graph.values.size());
  Value value;
  value.name = name;
  value.type = std::move(type);
  value.producer = producer;
  graph.values.push_back(std::move(value));
  valueByName.emplace(name, id);
  return id;
}

void GraphParser::parseInputs(const json &inputs) {
  if (!inputs.is_object())
    fail("/inputs",
         "expected an object of named inputs, got " + describeJsonType(inputs));
  for (const auto &item : inputs.items()) {
    std::string pointer = "/inputs/" + pointerToken(item.key());
    if (!isIdentifier(item.key()))
      fail(pointer, "input name " + inQuotes(item.key()) +
                        " must match [A-Za-z_][A-Za-z0-9_]*");
    ObjectReader fields(*this, item.value(), pointer, "an input",
                        {"shape", "dtype"});
    const json &shape = fields.require("shape");
    if (!shape.is_array())
      fail(fields.pointerOf("shape"),
           "expected a list of dims, got " + describeJsonType(shape));
    TensorType type;
    for (size_t i = 0; i < shape.size(); ++i)
      type.shape.push_back(parseDim(shape[i], fields.pointerOf("shape") + "/" +
                                                  std::to_string(i)));
    std::string dtypeText = fields.string("dtype");
    std::optional<DType> dtype = parseDType(dtypeText);
    if (!dtype)
      fail(fields.pointerOf("dtype"),
           "unknown dtype " + inQuotes(dtypeText) +
               suggestion(dtypeText, {"f32", "f16", "bf16", "i32", "bool"}) +
               "; allowed: f32, f16, bf16, i32, bool");
    type.dtype = *dtype;
    ValueId id = defineValue(item.key(), std::move(type), -1, pointer);
    graph.values[id].inputIndex = static_cast<int>(graph.inputs.size());
    graph.inputs.push_back(id);
  }
}

ValueId GraphParser::reference(const json &value,
                               const std::string &pointer) const {
  if (!value.is_string())
    fail(pointer, "expected the name of an input or earlier node, got " +
                      describeJsonType(value));
  std::string name = value.get<std::string>();
  auto it = valueByName.find(name);
  if (it != valueByName.end())
    return it->second;
  auto later = nodePointerByName.find(name);
  if (later != nodePointerByName.end()) {
    if (pointer.rfind(later->second + "/", 0) == 0)
      fail(pointer, "node " + inQuotes(name) + " uses its own result");
    fail(pointer, inQuotes(name) + " is defined later, at " + later->second +
                      " (a node may use only inputs and earlier nodes)");
  }
  const std::string lseSuffix = ".lse";
  if (name.size() > lseSuffix.size() &&
      name.compare(name.size() - lseSuffix.size(), lseSuffix.size(),
                   lseSuffix) == 0) {
    std::string node = name.substr(0, name.size() - lseSuffix.size());
    if (valueByName.count(node) || nodePointerByName.count(node))
      fail(pointer, "unknown value " + inQuotes(name) + " (node " +
                        inQuotes(node) +
                        " defines it only with \"return_lse\": true)");
  }
  std::vector<std::string> names;
  for (const auto &known : valueByName)
    names.push_back(known.first);
  fail(pointer, "unknown value " + inQuotes(name) + suggestion(name, names));
}

int64_t GraphParser::axis(const ObjectReader &fields, const std::string &key,
                          int64_t rank) const {
  int64_t axis = fields.has(key) ? fields.integer(key) : -1;
  if (axis < -rank || axis >= rank)
    fail(fields.pointerOf(key), "axis " + std::to_string(axis) +
                                    " is out of range for rank " +
                                    std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

void GraphParser::requireFloat(ValueId id, const std::string &pointer) const {
  if (!isFloat(type(id).dtype))
    fail(pointer,
         "expected a float tensor (f32, f16, bf16), got " + describe(id));
}

//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

void GraphParser::parseNode(const json &node, size_t index) {
  std::string pointer = "/nodes/" + std::to_string(index);
  if (!node.is_object())
    fail(pointer,
         "expected a node (a JSON object), got " + describeJsonType(node));
  auto opField = node.find("op");
  if (opField == node.end())
    fail(pointer, "node needs \"op\"");
  if (!opField->is_string())
    fail(pointer + "/op",
         "expected an op name, got " + describeJsonType(*opField));
  std::string opName = opField->get<std::string>();

  using Parse = std::function<NodeResult(const ObjectReader &)>;
  struct OpSchema {
    std::vector<std::string> keys;
    Parse parse;
  };
  auto binary = [this](BinaryKind kind) {
    return [this, kind](const ObjectReader &f) { return parseBinary(f, kind); };
  };
  auto unary = [this](UnaryKind kind) {
    return [this, kind](const ObjectReader &f) { return parseUnary(f, kind); };
  };
  auto member = [this](
                    NodeResult (GraphParser::*method)(const ObjectReader &)) {
    return [this, method](const ObjectReader &f) { return (this->*method)(f); };
  };
  const std::map<std::string, OpSchema> schemas = {
      {"matmul",
       {{"a", "b", "transpose_b"}, member(&GraphParser::parseMatmul)}},
      {"linear", {{"x", "w", "b"}, member(&GraphParser::parseLinear)}},
      {"add", {{"a", "b"}, binary(BinaryKind::Add)}},
      {"sub", {{"a", "b"}, binary(BinaryKind::Sub)}},
      {"mul", {{"a", "b"}, binary(BinaryKind::Mul)}},
      {"div", {{"a", "b"}, binary(BinaryKind::Div)}},
      {"scale", {{"x", "value"}, member(&GraphParser::parseScale)}},
      {"tanh", {{"x"}, unary(UnaryKind::Tanh)}},
      {"exp", {{"x"}, unary(UnaryKind::Exp)}},
      {"neg", {{"x"}, unary(UnaryKind::Neg)}},
      {"sqrt", {{"x"}, unary(UnaryKind::Sqrt)}},
      {"cos", {{"x"}, unary(UnaryKind::Cos)}},
      {"sin", {{"x"}, unary(UnaryKind::Sin)}},
      {"softmax", {{"x", "axis"}, member(&GraphParser::parseSoftmax)}},
      {"masked_fill",
       {{"x", "mask", "value"}, member(&GraphParser::parseMaskedFill)}},
      {"causal_mask", {{"x"}, member(&GraphParser::parseCausalMask)}},
      {"window_mask",
       {{"x", "left", "right"}, member(&GraphParser::parseWindowMask)}},
      {"reshape", {{"x", "shape"}, member(&GraphParser::parseReshape)}},
      {"transpose", {{"x", "perm"}, member(&GraphParser::parseTranspose)}},
      {"unsqueeze", {{"x", "axis"}, member(&GraphParser::parseUnsqueeze)}},
      {"repeat", {{"x", "axis", "times"}, member(&GraphParser::parseRepeat)}},
      {"slice",
       {{"x", "axis", "start", "end"}, member(&GraphParser::parseSlice)}},
      {"reduce_sum",
       {{"x", "axis", "keepdims"}, member(&GraphParser::parseReduceSum)}},
      {"concat", {{"inputs", "axis"}, member(&GraphParser::parseConcat)}},
      {"attention",
       {{"q", "k", "v", "layout", "score", "scale", "softcap", "bias", "mask",
         "return_lse"},
        member(&GraphParser::parseAttention)}},
  };
  auto schema = schemas.find(opName);
  if (schema == schemas.end()) {
    std::vector<std::string> names;
    for (const auto &entry : schemas)
      names.push_back(entry.first);
    fail(pointer + "/op",
         "unknown op " + inQuotes(opName) + suggestion(opName, names));
  }

  std::vector<std::string> keys = schema->second.keys;
  keys.insert(keys.begin(), {"name", "op"});
  ObjectReader fields(*this, node, pointer, withArticle(opName + " node"),
                      keys);
  std::string name = fields.string("name");
  if (!isIdentifier(name))
    fail(fields.pointerOf("name"),
         "node name " + inQuotes(name) + " must match [A-Za-z_][A-Za-z0-9_]*");
  if (auto existing = valueByName.find(name); existing != valueByName.end()) {
    const Value &previous = graph.value(existing->second);
    fail(fields.pointerOf("name"),
         "name " + inQuotes(name) + " is already used by " +
             (previous.isInput() ? "/inputs/" + pointerToken(name)
                                 : graph.nodes[previous.producer].pointer));
  }

  NodeResult result = schema->second.parse(fields);
  Node parsed;
  parsed.name = name;
  parsed.opName = opName;
  parsed.pointer = pointer;
  parsed.op = std::move(result.op);
  int nodeIndex = static_cast<int>(graph.nodes.size());
  parsed.results.push_back(defineValue(name, result.type, nodeIndex, pointer));
  if (const auto *attention = parsed.getIf<AttentionOp>();
      attention && attention->returnLse) {
    AttentionSizes sizes = graph.attentionSizes(*attention);
    TensorType lse{DType::F32, {sizes.batch, sizes.queryHeads, sizes.queryLen}};
    parsed.results.push_back(
        defineValue(name + ".lse", std::move(lse), nodeIndex, pointer));
  }
  graph.nodes.push_back(std::move(parsed));
}

void GraphParser::parseOutputs(const json &outputs) {
  if (!outputs.is_array())
    fail("/outputs",
         "expected a list of value names, got " + describeJsonType(outputs));
  if (outputs.empty())
    fail("/outputs", "a graph needs at least one output");
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string pointer = "/outputs/" + std::to_string(i);
    ValueId id = reference(outputs[i], pointer);
    if (std::find(graph.outputs.begin(), graph.outputs.end(), id) !=
        graph.outputs.end())
      fail(pointer,
           "output " + inQuotes(graph.value(id).name) + " is listed twice");
    graph.outputs.push_back(id);
  }
}

//===----------------------------------------------------------------------===//
// Primitive ops
//===----------------------------------------------------------------------===//

GraphParser::NodeResult GraphParser::parseMatmul(const ObjectReader &fields) {
  MatmulOp op{operand(fields, "a"), operand(fields, "b"),
              fields.boolean("transpose_b", false)};
  requireFloat(op.a, fields.pointerOf("a"));
  requireFloat(op.b, fields.pointerOf("b"));
  if (type(op.a).dtype != type(op.b).dtype)
    fail(fields.pointer(), "matmul operands differ in dtype: " +
                               describe(op.a) + " and " + describe(op.b));
  std::string problem;
  std::optional<Shape> shape = inferMatmulShape(
      type(op.a).shape, type(op.b).shape, op.transposeB, problem);
  if (!shape)
    fail(fields.pointer(),
         "cannot multiply " + describe(op.a) + " by " + describe(op.b) +
             (op.transposeB ? " (transposed)" : "") + ": " + problem);
  return {op, TensorType{type(op.a).dtype, *shape}};
}

GraphParser::NodeResult GraphParser::parseLinear(const ObjectReader &fields) {
  LinearOp op{operand(fields, "x"), operand(fields, "w"),
              optionalOperand(fields, "b")};
  requireFloat(op.x, fields.pointerOf("x"));
  requireFloat(op.w, fields.pointerOf("w"));
  const TensorType &x = type(op.x), &w = type(op.w);
  if (w.dtype != x.dtype)
    fail(fields.pointerOf("w"),
         "dtype differs from x: " + describe(op.w) + " and " + describe(op.x));
  if (w.rank() != 2)
    fail(fields.pointerOf("w"),
         "expected a weight [N, K], got " + describe(op.w));
  if (x.rank() < 1 || x.shape.back() != w.shape[1])
    fail(fields.pointer(),
         "the last dim of x " + x.str() + " must equal K of w " + w.str());
  if (op.bias) {
    const TensorType &b = type(*op.bias);
    if (b.dtype != x.dtype || b.rank() != 1 || b.shape[0] != w.shape[0])
      fail(fields.pointerOf("b"),
           "expected a bias " + std::string(dtypeName(x.dtype)) + "[" +
               w.shape[0].str() + "], got " + describe(*op.bias));
  }
  Shape shape(x.shape.begin(), x.shape.end() - 1);
  shape.push_back(w.shape[0]);
  return {op, TensorType{x.dtype, shape}};
}

GraphParser::NodeResult GraphParser::parseBinary(const ObjectReader &fields,
                                                 BinaryKind kind) {
  BinaryOp op{kind, operand(fields, "a"), operand(fields, "b")};
  const TensorType &a = type(op.a), &b = type(op.b);
  for (auto [id, key] : {std::pair{op.a, "a"}, std::pair{op.b, "b"}}) {
    DType dtype = type(id).dtype;
    if (dtype == DType::Bool || (kind == BinaryKind::Div && !isFloat(dtype)))
      fail(fields.pointerOf(key),
           std::string(kind == BinaryKind::Div ? "div needs float operands"
                                               : "arithmetic needs numbers") +
               ", got " + describe(id));
  }
  if (a.dtype != b.dtype)
    fail(fields.pointer(),
         "operands differ in dtype (no implicit promotion): " + describe(op.a) +
             " and " + describe(op.b));
  std::string problem;
  std::optional<Shape> shape = broadcastShapes(a.shape, b.shape, problem);
  if (!shape)
    fail(fields.pointer(), "cannot broadcast " + describe(op.a) + " with " +
                               describe(op.b) + ": " + problem);
  return {op, TensorType{a.dtype, *shape}};
}

GraphParser::NodeResult GraphParser::parseScale(const ObjectReader &fields) {
  ScaleOp op{operand(fields, "x"), fields.number("value")};
  requireFloat(op.x, fields.pointerOf("x"));
  return {op, type(op.x)};
}

GraphParser::NodeResult GraphParser::parseUnary(const ObjectReader &fields,
                                                UnaryKind kind) {
  UnaryOp op{kind, operand(fields, "x")};
  DType dtype = type(op.x).dtype;
  if (kind == UnaryKind::Neg ? dtype == DType::Bool : !isFloat(dtype))
    fail(fields.pointerOf("x"),
         "expected a " +
             std::string(kind == UnaryKind::Neg ? "numeric" : "float") +
             " tensor, got " + describe(op.x));
  return {op, type(op.x)};
}

GraphParser::NodeResult GraphParser::parseSoftmax(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  requireFloat(x, fields.pointerOf("x"));
  if (type(x).rank() == 0)
    fail(fields.pointerOf("x"), "softmax needs a tensor of rank >= 1");
  return {SoftmaxOp{x, axis(fields, "axis", type(x).rank())}, type(x)};
}

GraphParser::NodeResult
GraphParser::parseMaskedFill(const ObjectReader &fields) {
  ValueId x = operand(fields, "x"), mask = operand(fields, "mask");
  requireFloat(x, fields.pointerOf("x"));
  if (type(mask).dtype != DType::Bool)
    fail(fields.pointerOf("mask"),
         "expected a bool mask, got " + describe(mask));
  std::string problem;
  std::optional<Shape> shape =
      broadcastShapes(type(x).shape, type(mask).shape, problem);
  if (!shape || *shape != type(x).shape)
    fail(fields.pointerOf("mask"), "mask " + describe(mask) +
                                       " does not broadcast to x " +
                                       type(x).str());
  const json &value = fields.require("value");
  double fill;
  if (value.is_string()) {
    if (value.get<std::string>() != "-inf")
      fail(fields.pointerOf("value"),
           "expected a number or \"-inf\", got " + value.dump());
    fill = -std::numeric_limits<double>::infinity();
  } else {
    fill = fields.number("value");
  }
  return {MaskedFillOp{x, mask, fill}, type(x)};
}

ValueId GraphParser::scoresOperand(const ObjectReader &fields,
                                   const std::string &op) const {
  ValueId x = operand(fields, "x");
  requireFloat(x, fields.pointerOf("x"));
  if (type(x).rank() < 2)
    fail(fields.pointerOf("x"), op + " needs [..., S, T], got " + describe(x));
  return x;
}

std::pair<int64_t, int64_t>
GraphParser::windowBounds(const ObjectReader &fields) const {
  std::pair<int64_t, int64_t> bounds{fields.integer("left"),
                                     fields.integer("right")};
  for (auto [value, key] :
       {std::pair{bounds.first, "left"}, std::pair{bounds.second, "right"}})
    if (value < 0)
      fail(fields.pointerOf(key),
           std::string(key) + " must be >= 0, got " + std::to_string(value));
  return bounds;
}

GraphParser::NodeResult
GraphParser::parseCausalMask(const ObjectReader &fields) {
  ValueId x = scoresOperand(fields, "causal_mask");
  return {CausalMaskOp{x}, type(x)};
}

GraphParser::NodeResult
GraphParser::parseWindowMask(const ObjectReader &fields) {
  ValueId x = scoresOperand(fields, "window_mask");
  auto [left, right] = windowBounds(fields);
  return {WindowMaskOp{x, left, right}, type(x)};
}

GraphParser::NodeResult GraphParser::parseReshape(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  const json &shapeField = fields.require("shape");
  std::string shapePointer = fields.pointerOf("shape");
  if (!shapeField.is_array())
    fail(shapePointer,
         "expected a list of dims, got " + describeJsonType(shapeField));
  std::vector<std::optional<Dim>> target; // nullopt marks the -1.
  std::optional<size_t> inferred;
  for (size_t i = 0; i < shapeField.size(); ++i) {
    std::string pointer = shapePointer + "/" + std::to_string(i);
    if (shapeField[i].is_number_integer() &&
        toInteger(shapeField[i], pointer) == -1) {
      if (inferred)
        fail(pointer, "only one -1 is allowed (the first is at " +
                          shapePointer + "/" + std::to_string(*inferred) + ")");
      inferred = i;
      target.push_back(std::nullopt);
      continue;
    }
    target.push_back(parseDim(shapeField[i], pointer));
    // A call binds run-time sizes from its inputs' shapes only.
    const Dim &dim = *target.back();
    std::vector<std::string> bound = graph.runtimeDims();
    if (!dim.isFixed() &&
        std::find(bound.begin(), bound.end(), dim.symbol) == bound.end())
      fail(pointer, "run-time size " + inQuotes(dim.symbol) +
                        " appears in no input's shape, so no call could "
                        "give it a value");
  }
  std::string problem;
  std::optional<Shape> shape = inferReshape(type(x).shape, target, problem);
  if (!shape)
    fail(shapePointer, "cannot reshape " + describe(x) + ": " + problem);
  return {ReshapeOp{x}, TensorType{type(x).dtype, *shape}};
}

GraphParser::NodeResult
GraphParser::parseTranspose(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  int64_t rank = type(x).rank();
  const json &permField = fields.require("perm");
  std::string permPointer = fields.pointerOf("perm");
  if (!permField.is_array() || static_cast<int64_t>(permField.size()) != rank)
    fail(permPointer, "expected a permutation of the " + std::to_string(rank) +
                          " axes of " + describe(x));
  TransposeOp op{x, {}};
  std::vector<bool> seen(rank, false);
  Shape shape;
  for (int64_t i = 0; i < rank; ++i) {
    std::string pointer = permPointer + "/" + std::to_string(i);
    int64_t axis = toInteger(permField[i], pointer);
    if (axis < -rank || axis >= rank)
      fail(pointer, "axis " + std::to_string(axis) +
                        " is out of range for rank " + std::to_string(rank));
    axis = axis < 0 ? axis + rank : axis;
    if (seen[axis])
      fail(pointer, "axis " + std::to_string(axis) + " appears twice");
    seen[axis] = true;
    op.perm.push_back(axis);
    shape.push_back(type(x).shape[axis]);
  }
  return {op, TensorType{type(x).dtype, shape}};
}

GraphParser::NodeResult
GraphParser::parseUnsqueeze(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  int64_t axis = fields.integer("axis");
  int64_t rank = type(x).rank() + 1;
  if (axis < -rank || axis >= rank)
    fail(fields.pointerOf("axis"),
         "axis " + std::to_string(axis) +
             " is out of range for a result of rank " + std::to_string(rank));
  axis = axis < 0 ? axis + rank : axis;
  Shape shape = type(x).shape;
  shape.insert(shape.begin() + axis, Dim::fixed(1));
  return {UnsqueezeOp{x, axis}, TensorType{type(x).dtype, shape}};
}

GraphParser::NodeResult GraphParser::parseRepeat(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  if (type(x).rank() == 0)
    fail(fields.pointerOf("x"), "repeat needs a tensor of rank >= 1");
  if (!fields.has("axis"))
    fail(fields.pointer(), "a repeat node needs \"axis\"");
  RepeatOp op{x, axis(fields, "axis", type(x).rank()), fields.integer("times")};
  if (op.times < 1)
    fail(fields.pointerOf("times"),
         "times must be >= 1, got " + std::to_string(op.times));
  Shape shape = type(x).shape;
  Dim &dim = shape[op.axis];
  if (!dim.isFixed() && op.times > 1)
    fail(fields.pointerOf("axis"), "cannot repeat along the run-time size " +
                                       dim.symbol + " (the result size " +
                                       "would not be a named dim)");
  if (dim.isFixed() && __builtin_mul_overflow(dim.size, op.times, &dim.size))
    fail(fields.pointerOf("times"), "the repeated size overflows");
  return {op, TensorType{type(x).dtype, shape}};
}

GraphParser::NodeResult GraphParser::parseSlice(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  if (type(x).rank() == 0)
    fail(fields.pointerOf("x"), "slice needs a tensor of rank >= 1");
  if (!fields.has("axis"))
    fail(fields.pointer(), "a slice node needs \"axis\"");
  SliceOp op{x, axis(fields, "axis", type(x).rank()), fields.integer("start"),
             fields.integer("end")};
  Shape shape = type(x).shape;
  Dim &dim = shape[op.axis];
  if (!dim.isFixed())
    fail(fields.pointerOf("axis"), "cannot slice along the run-time size " +
                                       dim.symbol + " (the result size " +
                                       "would not be a named dim)");
  if (op.start < 0 || op.start >= op.end || op.end > dim.size)
    fail(fields.pointerOf("start"),
         "needs 0 <= start < end <= " + std::to_string(dim.size) +
             " (the axis's size), got start " + std::to_string(op.start) +
             ", end " + std::to_string(op.end));
  dim = Dim::fixed(op.end - op.start);
  return {op, TensorType{type(x).dtype, shape}};
}

GraphParser::NodeResult
GraphParser::parseReduceSum(const ObjectReader &fields) {
  ValueId x = operand(fields, "x");
  if (type(x).dtype == DType::Bool)
    fail(fields.pointerOf("x"), "reduce_sum needs numbers, got " + describe(x));
  if (type(x).rank() == 0)
    fail(fields.pointerOf("x"), "reduce_sum needs a tensor of rank >= 1");
  if (!fields.has("axis"))
    fail(fields.pointer(), "a reduce_sum node needs \"axis\"");
  ReduceSumOp op{x, axis(fields, "axis", type(x).rank()),
                 fields.boolean("keepdims", false)};
  Shape shape = type(x).shape;
  if (op.keepdims)
    shape[op.axis] = Dim::fixed(1);
  else
    shape.erase(shape.begin() + op.axis);
  return {op, TensorType{type(x).dtype, shape}};
}

GraphParser::NodeResult GraphParser::parseConcat(const ObjectReader &fields) {
  const json &list = fields.require("inputs");
  std::string listPointer = fields.pointerOf("inputs");
  if (!list.is_array() || list.empty())
    fail(listPointer, "expected a non-empty list of value names");
  ConcatOp op;
  for (size_t i = 0; i < list.size(); ++i)
    op.inputs.push_back(
        reference(list[i], listPointer + "/" + std::to_string(i)));
  const TensorType &first = type(op.inputs[0]);
  if (first.rank() == 0)
    fail(listPointer + "/0", "concat needs tensors of rank >= 1");
  if (!fields.has("axis"))
    fail(fields.pointer(), "a concat node needs \"axis\"");
  op.axis = axis(fields, "axis", first.rank());
  Shape shape = first.shape;
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    std::string pointer = listPointer + "/" + std::to_string(i);
    const TensorType &next = type(op.inputs[i]);
    if (next.dtype != first.dtype || next.rank() != first.rank())
      fail(pointer, describe(op.inputs[i]) + " does not match " +
                        describe(op.inputs[0]) + " in dtype and rank");
    for (int64_t d = 0; d < first.rank(); ++d) {
      if (d == op.axis)
        continue;
      if (next.shape[d] != first.shape[d])
        fail(pointer, describe(op.inputs[i]) + " differs from " +
                          describe(op.inputs[0]) + " in dim " +
                          std::to_string(d) +
                          " (only the concat axis may differ)");
    }
    Dim &total = shape[op.axis];
    const Dim &part = next.shape[op.axis];
    if (!total.isFixed() || !part.isFixed())
      fail(pointer, "cannot concatenate along a run-time size (" +
                        (total.isFixed() ? part.symbol : total.symbol) +
                        "): the result size would not be a named dim");
    if (__builtin_add_overflow(total.size, part.size, &total.size))
      fail(pointer, "the concatenated size overflows");
  }
  return {op, TensorType{first.dtype, shape}};
}

//===----------------------------------------------------------------------===//
// The attention op
//===----------------------------------------------------------------------===//

GraphParser::NodeResult
GraphParser::parseAttention(const ObjectReader &fields) {
  AttentionOp op;
  op.q = operand(fields, "q");
  op.k = operand(fields, "k");
  op.v = operand(fields, "v");
  if (const json *layout = fields.find("layout")) {
    if (*layout == "bhsd")
      op.layout = Layout::BHSD;
    else if (*layout == "bshd")
      op.layout = Layout::BSHD;
    else
      fail(fields.pointerOf("layout"), "unknown layout " + layout->dump() +
                                           "; allowed: \"bhsd\", \"bshd\"");
  }
  const char *layoutText =
      op.layout == Layout::BHSD ? "[B, H, S, D]" : "[B, S, H, D]";
  for (auto [id, key] :
       {std::pair{op.q, "q"}, std::pair{op.k, "k"}, std::pair{op.v, "v"}}) {
    requireFloat(id, fields.pointerOf(key));
    if (type(id).rank() != 4)
      fail(fields.pointerOf(key),
           std::string("expected ") + layoutText + " for layout " +
               (op.layout == Layout::BHSD ? "bhsd" : "bshd") + ", got " +
               describe(id));
  }
  if (type(op.k).dtype != type(op.q).dtype ||
      type(op.v).dtype != type(op.q).dtype)
    fail(fields.pointer(), "q, k and v must share one dtype, got " +
                               describe(op.q) + ", " + describe(op.k) + ", " +
                               describe(op.v));
  AttentionSizes sizes = graph.attentionSizes(op);
  auto heads = [&](ValueId id) {
    return type(id).shape[op.layout == Layout::BHSD ? 1 : 2];
  };
  auto seq = [&](ValueId id) {
    return type(id).shape[op.layout == Layout::BHSD ? 2 : 1];
  };
  auto requireSame = [&](const Dim &a, const Dim &b, const char *what) {
    if (a != b)
      fail(fields.pointer(), std::string(what) + " differ (" + a.str() +
                                 " vs " + b.str() + "): q " + type(op.q).str() +
                                 ", k " + type(op.k).str() + ", v " +
                                 type(op.v).str());
  };
  requireSame(type(op.q).shape[0], type(op.k).shape[0],
              "batch sizes of q and k");
  requireSame(type(op.k).shape[0], type(op.v).shape[0],
              "batch sizes of k and v");
  requireSame(heads(op.k), heads(op.v), "head counts of k and v");
  requireSame(seq(op.k), seq(op.v), "key lengths of k and v");
  requireSame(type(op.q).shape[3], type(op.k).shape[3], "head dims of q and k");
  const Dim &hq = sizes.queryHeads, &hkv = sizes.kvHeads;
  // Run-time head counts are checked when bound (Graph::divisibilities).
  if (hq != hkv && hq.isFixed() && hkv.isFixed()) {
    if (hq.size % hkv.size != 0)
      fail(fields.pointer(), "query heads (" + hq.str() +
                                 ") must be a multiple of kv heads (" +
                                 hkv.str() + ")");
  }

  if (const json *score = fields.find("score"))
    op.score = parseScore(*score, fields.pointerOf("score"), sizes);
  if (const json *scale = fields.find("scale")) {
    if (scale->is_string() && *scale != "default")
      fail(fields.pointerOf("scale"),
           "expected a number or \"default\", got " + scale->dump());
    if (!scale->is_string())
      op.scale = toNumber(*scale, fields.pointerOf("scale"));
  }
  if (fields.has("softcap")) {
    op.softcap = fields.number("softcap");
    if (*op.softcap <= 0)
      fail(fields.pointerOf("softcap"), "softcap must be > 0");
  }
  for (auto [key, isBias] :
       {std::pair{"bias", true}, std::pair{"mask", false}}) {
    const json *list = fields.find(key);
    if (!list)
      continue;
    if (!list->is_array())
      fail(fields.pointerOf(key),
           "expected a list, got " + describeJsonType(*list));
    for (size_t i = 0; i < list->size(); ++i) {
      std::string pointer = fields.pointerOf(key) + "/" + std::to_string(i);
      if (isBias)
        op.biases.push_back(parseBias((*list)[i], pointer, sizes));
      else
        op.masks.push_back(parseMask((*list)[i], pointer, sizes));
    }
  }
  op.returnLse = fields.boolean("return_lse", false);

  Shape shape =
      op.layout == Layout::BHSD
          ? Shape{sizes.batch, sizes.queryHeads, sizes.queryLen, sizes.valueDim}
          : Shape{sizes.batch, sizes.queryLen, sizes.queryHeads,
                  sizes.valueDim};
  return {op, TensorType{type(op.v).dtype, shape}};
}

AttentionScore GraphParser::parseScore(const json &score,
                                       const std::string &pointer,
                                       const AttentionSizes &sizes) const {
  if (!score.is_object() || !score.contains("kind") ||
      !score["kind"].is_string())
    fail(pointer, "expected {\"kind\": \"dot\" | \"general\" | \"additive\" | "
                  "\"cosine\", ...}");
  std::string kind = score["kind"].get<std::string>();
  AttentionScore result;
  auto weight = [&](const ObjectReader &fields, const std::string &key,
                    const Shape &expected) {
    ValueId id = operand(fields, key);
    requireFloat(id, fields.pointerOf(key));
    if (type(id).shape != expected)
      fail(fields.pointerOf(key),
           "expected shape " + formatShape(expected) + ", got " + describe(id));
    return id;
  };
  if (kind == "dot") {
    ObjectReader(*this, score, pointer, "a dot score", {"kind"});
    result.kind = ScoreKind::Dot;
  } else if (kind == "cosine") {
    ObjectReader(*this, score, pointer, "a cosine score", {"kind"});
    result.kind = ScoreKind::Cosine;
  } else if (kind == "general") {
    ObjectReader fields(*this, score, pointer, "a general score",
                        {"kind", "w"});
    result.kind = ScoreKind::General;
    result.w = weight(fields, "w", {sizes.keyDim, sizes.keyDim});
  } else if (kind == "additive") {
    ObjectReader fields(*this, score, pointer, "an additive score",
                        {"kind", "wq", "wk", "v"});
    result.kind = ScoreKind::Additive;
    ValueId wq = operand(fields, "wq");
    if (type(wq).rank() != 2)
      fail(fields.pointerOf("wq"), "expected [A, Dk], got " + describe(wq));
    Dim units = type(wq).shape[0];
    result.wq = weight(fields, "wq", {units, sizes.keyDim});
    result.wk = weight(fields, "wk", {units, sizes.keyDim});
    result.va = weight(fields, "v", {units});
  } else {
    fail(pointer + "/kind",
         "unknown score kind " + inQuotes(kind) +
             suggestion(kind, {"dot", "general", "additive", "cosine"}) +
             "; allowed: \"dot\", \"general\", \"additive\", \"cosine\"");
  }
  return result;
}

void GraphParser::requireBroadcastableToScores(
    ValueId id, const std::string &pointer, const AttentionSizes &sizes) const {
  Shape scores{sizes.batch, sizes.queryHeads, sizes.queryLen, sizes.keyLen};
  std::string problem;
  std::optional<Shape> shape = broadcastShapes(scores, type(id).shape, problem);
  if (!shape || *shape != scores)
    fail(pointer, describe(id) + " does not broadcast to the scores " +
                      formatShape(scores));
}

AttentionBias GraphParser::parseBias(const json &bias,
                                     const std::string &pointer,
                                     const AttentionSizes &sizes) const {
  if (!bias.is_object() || !bias.contains("kind") || !bias["kind"].is_string())
    fail(pointer, "expected {\"kind\": \"tensor\" | \"alibi\", ...}");
  std::string kind = bias["kind"].get<std::string>();
  if (kind == "tensor") {
    ObjectReader fields(*this, bias, pointer, "a tensor bias",
                        {"kind", "input"});
    ValueId input = operand(fields, "input");
    requireFloat(input, fields.pointerOf("input"));
    requireBroadcastableToScores(input, fields.pointerOf("input"), sizes);
    return {BiasKind::Tensor, input};
  }
  if (kind == "alibi") {
    ObjectReader fields(*this, bias, pointer, "an alibi bias",
                        {"kind", "slopes"});
    std::optional<ValueId> slopes = optionalOperand(fields, "slopes");
    if (slopes && (type(*slopes).dtype != DType::F32 ||
                   type(*slopes).shape != Shape{sizes.queryHeads}))
      fail(fields.pointerOf("slopes"),
           "expected f32[" + sizes.queryHeads.str() +
               "] (one slope per query head), got " + describe(*slopes));
    return {BiasKind::Alibi, slopes};
  }
  fail(pointer + "/kind", "unknown bias kind " + inQuotes(kind) +
                              suggestion(kind, {"tensor", "alibi"}) +
                              "; allowed: \"tensor\", \"alibi\"");
}

AttentionMask GraphParser::parseMask(const json &mask,
                                     const std::string &pointer,
                                     const AttentionSizes &sizes) const {
  if (!mask.is_object() || !mask.contains("kind") || !mask["kind"].is_string())
    fail(pointer,
         "expected {\"kind\": \"causal\" | \"window\" | \"key_length\" "
         "| \"tensor\", ...}");
  std::string kind = mask["kind"].get<std::string>();
  AttentionMask result;
  if (kind == "causal") {
    ObjectReader(*this, mask, pointer, "a causal mask", {"kind"});
    result.kind = MaskKind::Causal;
  } else if (kind == "window") {
    ObjectReader fields(*this, mask, pointer, "a window mask",
                        {"kind", "left", "right"});
    result.kind = MaskKind::Window;
    std::tie(result.left, result.right) = windowBounds(fields);
  } else if (kind == "key_length") {
    ObjectReader fields(*this, mask, pointer, "a key_length mask",
                        {"kind", "input"});
    result.kind = MaskKind::KeyLength;
    result.input = operand(fields, "input");
    if (type(*result.input).dtype != DType::I32 ||
        type(*result.input).shape != Shape{sizes.batch})
      fail(fields.pointerOf("input"), "expected i32[" + sizes.batch.str() +
                                          "] (one key length per batch), got " +
                                          describe(*result.input));
  } else if (kind == "tensor") {
    ObjectReader fields(*this, mask, pointer, "a tensor mask",
                        {"kind", "input"});
    result.kind = MaskKind::Tensor;
    result.input = operand(fields, "input");
    if (type(*result.input).dtype != DType::Bool)
      fail(fields.pointerOf("input"),
           "expected a bool mask (true = attend), got " +
               describe(*result.input));
    requireBroadcastableToScores(*result.input, fields.pointerOf("input"),
                                 sizes);
  } else {
    fail(pointer + "/kind",
         "unknown mask kind " + inQuotes(kind) +
             suggestion(kind, {"causal", "window", "key_length", "tensor"}) +
             "; allowed: \"causal\", \"window\", \"key_length\", \"tensor\"");
  }
  return result;
}

} // namespace

Graph parseGraph(std::string_view text, const std::string &file) {
  return GraphParser(file).parse(text);
}

Graph loadGraph(const std::string &path) {
  // Weights are inputs (.npy files): a graph is text, 64 MiB is plenty.
  return parseGraph(readUserFile(path, path, "a graph file", kMaxGraphBytes,
                                 "more than any graph file"),
                    path);
}

} // namespace attnc
