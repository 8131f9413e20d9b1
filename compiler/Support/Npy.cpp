//===- Npy.cpp - numpy .npy reading and writing ---------------------------===//
//
// The header of a .npy file is a Python dict literal. It is parsed here by a
// small recursive-descent parser for the literal subset numpy's reader
// accepts (strings, integers, True/False/None, tuples, lists, dicts), so that
// key order, spacing and trailing commas do not matter and a malformed header
// is an error instead of a crash.
//
//===----------------------------------------------------------------------===//

#include "Support/Npy.h"

#include "Support/Error.h"
#include "Support/Float16.h"
#include "Support/TextFile.h"

#include <atomic>
#include <cassert>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <unistd.h>

namespace attnc {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::string_view kAccepted = "<f4, <f2, <u2, <i4, |b1";
/// numpy never writes headers anywhere near this size (its own reader refuses
/// more than 10000 bytes by default); the cap bounds the parser's memory.
constexpr size_t kMaxHeaderSize = 1 << 20;
/// Bounds the parser's recursion, so nested brackets cannot overflow the stack.
constexpr int kMaxNesting = 32;

//===----------------------------------------------------------------------===//
// Header literal parsing
//===----------------------------------------------------------------------===//

struct PyValue {
  enum class Kind { Str, Int, Bool, None, Tuple, List, Dict };
  Kind kind = Kind::None;
  std::string str;
  int64_t integer = 0;
  /// An integer literal that does not fit in int64.
  bool overflow = false;
  bool boolean = false;
  /// Tuple/list elements; for a dict, key, value, key, value, ...
  std::vector<PyValue> items;
  /// The literal as written, for error messages.
  std::string_view text;
};

/// Makes \p text printable on one line and short enough for a message.
std::string quoteForMessage(std::string_view text) {
  constexpr size_t kMaxLength = 60;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMaxLength; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
  }
  if (text.size() > kMaxLength)
    out += "...";
  return out;
}

class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &source,
               bool allowLongSuffix)
      : text(text), source(source), allowLongSuffix(allowLongSuffix) {}

  /// The whole header: one value, then only whitespace.
  PyValue parseDocument() {
    PyValue value = parseValue(0);
    skipSpace();
    if (pos != text.size())
      fail("unexpected text after the dictionary");
    return value;
  }

private:
  [[noreturn]] void fail(const std::string &problem) const {
    throw UserError(source + ": malformed .npy header: " + problem +
                    " at column " + std::to_string(pos + 1));
  }

  void skipSpace() {
    while (pos < text.size() &&
           (text[pos] == ' ' || text[pos] == '\t' || text[pos] == '\n' ||
            text[pos] == '\r' || text[pos] == '\f' || text[pos] == '\v'))
      ++pos;
  }

  bool consume(char c) {
    skipSpace();
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }

  static bool isDigit(char c) { return c >= '0' && c <= '9'; }
  static bool isNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           isDigit(c);
  }

  PyValue parseValue(int depth) {
    if (depth > kMaxNesting)
      fail("nesting deeper than " + std::to_string(kMaxNesting));
    skipSpace();
    if (pos == text.size())
      fail("unexpected end of header");
    size_t start = pos;
    PyValue value;
    char c = text[pos];
    if (c == '\'' || c == '"')
      value = parseString();
    else if (isDigit(c) || c == '-' || c == '+')
      value = parseInteger();
    else if (c == '(')
      value = parseTuple(depth);
    else if (c == '[')
      value = parseSequence(depth, ']', PyValue::Kind::List);
    else if (c == '{')
      value = parseDict(depth);
    else if (isNameChar(c))
      value = parseName();
    else
      fail("unexpected character '" + quoteForMessage(text.substr(pos, 1)) +
           "'");
    // A parenthesized value keeps the text of its parentheses.
    if (value.text.empty())
      value.text = text.substr(start, pos - start);
    return value;
  }

  PyValue parseString() {
    size_t start = pos;
    char quote = text[pos++];
    PyValue value;
    value.kind = PyValue::Kind::Str;
    while (true) {
      if (pos >= text.size() || text[pos] == '\n') {
        pos = start;
        fail("unterminated string");
      }
      char c = text[pos++];
      if (c == quote)
        break;
      if (c == '\\') {
        if (pos >= text.size()) {
          pos = start;
          fail("unterminated string");
        }
        c = text[pos++];
      }
      value.str += c;
    }
    return value;
  }

  PyValue parseInteger() {
    PyValue value;
    value.kind = PyValue::Kind::Int;
    bool negative = false;
    if (text[pos] == '-' || text[pos] == '+') {
      negative = text[pos] == '-';
      ++pos;
      skipSpace();
    }
    if (pos >= text.size() || !isDigit(text[pos]))
      fail("expected a digit");
    // Accumulate the magnitude as a negative number, so INT64_MIN fits.
    int64_t accumulated = 0;
    for (; pos < text.size() && isDigit(text[pos]); ++pos) {
      int digit = text[pos] - '0';
      if (accumulated < (INT64_MIN + digit) / 10)
        value.overflow = true;
      else
        accumulated = accumulated * 10 - digit;
    }
    if (!negative) {
      if (accumulated == INT64_MIN)
        value.overflow = true;
      else
        accumulated = -accumulated;
    }
    value.integer = accumulated;
    // Python 2 wrote longs as "3L"; numpy still reads those in 1.0/2.0 files.
    if (allowLongSuffix && pos < text.size() &&
        (text[pos] == 'L' || text[pos] == 'l'))
      ++pos;
    if (pos < text.size() && (isNameChar(text[pos]) || text[pos] == '.'))
      fail("expected an integer");
    return value;
  }

  PyValue parseName() {
    size_t start = pos;
    while (pos < text.size() && isNameChar(text[pos]))
      ++pos;
    std::string_view name = text.substr(start, pos - start);
    PyValue value;
    if (name == "True" || name == "False") {
      value.kind = PyValue::Kind::Bool;
      value.boolean = name == "True";
    } else if (name == "None") {
      value.kind = PyValue::Kind::None;
    } else {
      pos = start;
      fail("unexpected name '" + quoteForMessage(name) + "'");
    }
    return value;
  }

  /// "()" is the empty tuple, "(x)" is just x, "(x,)" and "(x, y)" tuples.
  PyValue parseTuple(int depth) {
    size_t start = pos;
    ++pos; // '('
    if (consume(')')) {
      PyValue value;
      value.kind = PyValue::Kind::Tuple;
      return value;
    }
    PyValue first = parseValue(depth + 1);
    if (consume(')')) {
      first.text = text.substr(start, pos - start);
      return first;
    }
    if (!consume(','))
      fail("expected ',' or ')'");
    PyValue value = parseSequence(depth, ')', PyValue::Kind::Tuple,
                                  /*alreadyOpen=*/true);
    value.items.insert(value.items.begin(), std::move(first));
    return value;
  }

  /// Elements separated by commas, an optional trailing comma, then \p close.
  PyValue parseSequence(int depth, char close, PyValue::Kind kind,
                        bool alreadyOpen = false) {
    if (!alreadyOpen)
      ++pos; // '[' (a tuple's '(' and first element are already consumed)
    PyValue value;
    value.kind = kind;
    while (!consume(close)) {
      value.items.push_back(parseValue(depth + 1));
      if (consume(close))
        break;
      if (!consume(','))
        fail(std::string("expected ',' or '") + close + "'");
    }
    return value;
  }

  PyValue parseDict(int depth) {
    ++pos; // '{'
    PyValue value;
    value.kind = PyValue::Kind::Dict;
    while (!consume('}')) {
      value.items.push_back(parseValue(depth + 1));
      if (!consume(':'))
        fail("expected ':'");
      value.items.push_back(parseValue(depth + 1));
      if (consume('}'))
        break;
      if (!consume(','))
        fail("expected ',' or '}'");
    }
    return value;
  }

  std::string_view text;
  const std::string &source;
  bool allowLongSuffix;
  size_t pos = 0;
};

//===----------------------------------------------------------------------===//
// Header interpretation
//===----------------------------------------------------------------------===//

/// Maps a descriptor to a DType: exactly DType's descriptors, plus '=' (native
/// order, which numpy reads as little-endian on every host attnc runs on) for
/// the multi-byte ones.
std::optional<DType> descrToDType(std::string_view descr) {
  for (DType type :
       {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool}) {
    std::string_view canonical = npyDescr(type);
    if (descr == canonical)
      return type;
    if (canonical[0] == '<' && descr.size() == canonical.size() &&
        descr[0] == '=' && descr.substr(1) == canonical.substr(1))
      return type;
  }
  return std::nullopt;
}

uint64_t loadLE(std::string_view bytes, size_t offset, size_t count) {
  uint64_t value = 0;
  for (size_t i = 0; i < count; ++i)
    value |= uint64_t(static_cast<unsigned char>(bytes[offset + i])) << (8 * i);
  return value;
}

/// Descriptors read only to be converted (an ONNX model's int64 masks).
struct OtherDescr {
  std::string_view descr;
  size_t size;
  char kind; ///< 'i' signed, 'u' unsigned, 'f' float
};
constexpr OtherDescr kConvertible[] = {{"<i8", 8, 'i'}, {"<f8", 8, 'f'},
                                       {"|u1", 1, 'u'}, {"|i1", 1, 'i'},
                                       {"<i2", 2, 'i'}, {"<u2", 2, 'u'}};

/// Elements of `from` as `to`, refusing any value that would change.
Tensor convertExactly(std::string_view payload, const OtherDescr &from,
                      std::vector<int64_t> shape, DType to,
                      const std::string &source) {
  size_t count = payload.size() / from.size;
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) {
    uint64_t bits = loadLE(payload, i * from.size, from.size);
    double value;
    if (from.kind == 'f')
      value = from.size == 8 ? detail::bitCast<double>(bits)
                             : double(detail::bitCast<float>(uint32_t(bits)));
    else if (from.kind == 'u')
      value = double(bits);
    else
      value =
          double(int64_t(bits << (64 - 8 * from.size)) >> (64 - 8 * from.size));
    bool exact = true;
    switch (to) {
    case DType::Bool:
      exact = value == 0 || value == 1;
      break;
    case DType::I32:
      exact = value == std::trunc(value) && value >= -2147483648.0 &&
              value <= 2147483647.0;
      break;
    case DType::F32:
      exact = std::isnan(value) || double(float(value)) == value;
      break;
    default:
      exact = false;
    }
    if (!exact)
      throw UserError(source + ": element " + std::to_string(i) + " (" +
                      std::to_string(value) + ", " + std::string(from.descr) +
                      ") does not convert exactly to " +
                      std::string(dtypeName(to)));
    values[i] = value;
  }
  return fromDoubles(to, std::move(shape), values);
}

Tensor parseNpyImpl(std::string_view bytes, const std::string &source,
                    std::optional<DType> convertTo) {
  auto error = [&](const std::string &problem) {
    return UserError(source + ": " + problem);
  };

  if (bytes.empty())
    throw error("empty file, not a .npy file");
  if (bytes.substr(0, kMagic.size()) != kMagic.substr(0, bytes.size()))
    throw error("not a .npy file (it does not start with \"\\x93NUMPY\")");
  if (bytes.size() < kMagic.size() + 2)
    throw error("truncated .npy header (" + std::to_string(bytes.size()) +
                " bytes)");

  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (minor != 0 || major < 1 || major > 3)
    throw error("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor) + " (attnc reads 1.0, 2.0, 3.0)");
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t prefix = 8 + lengthBytes;
  if (bytes.size() < prefix)
    throw error("truncated .npy header (" + std::to_string(bytes.size()) +
                " bytes)");
  uint64_t headerLength = loadLE(bytes, 8, lengthBytes);
  if (headerLength > bytes.size() - prefix)
    throw error("truncated .npy header: it declares " +
                std::to_string(headerLength) + " bytes but only " +
                std::to_string(bytes.size() - prefix) + " follow");
  if (headerLength > kMaxHeaderSize)
    throw error(".npy header too large (" + std::to_string(headerLength) +
                " bytes)");

  std::string_view headerText = bytes.substr(prefix, headerLength);
  PyValue header =
      HeaderParser(headerText, source, /*allowLongSuffix=*/major < 3)
          .parseDocument();
  if (header.kind != PyValue::Kind::Dict)
    throw error("malformed .npy header: not a dictionary");

  const PyValue *descr = nullptr, *fortranOrder = nullptr, *shape = nullptr;
  for (size_t i = 0; i + 1 < header.items.size(); i += 2) {
    const PyValue &key = header.items[i];
    const PyValue **slot = nullptr;
    if (key.kind == PyValue::Kind::Str) {
      if (key.str == "descr")
        slot = &descr;
      else if (key.str == "fortran_order")
        slot = &fortranOrder;
      else if (key.str == "shape")
        slot = &shape;
    }
    if (!slot)
      throw error("malformed .npy header: unexpected key " +
                  quoteForMessage(key.text));
    if (*slot)
      throw error("malformed .npy header: duplicate key " +
                  quoteForMessage(key.text));
    *slot = &header.items[i + 1];
  }
  for (auto [value, name] :
       {std::pair{descr, "descr"}, std::pair{fortranOrder, "fortran_order"},
        std::pair{shape, "shape"}})
    if (!value)
      throw error(std::string("malformed .npy header: missing key '") + name +
                  "'");

  std::optional<DType> dtype;
  const OtherDescr *other = nullptr;
  if (descr->kind == PyValue::Kind::Str) {
    dtype = descrToDType(descr->str);
    for (const OtherDescr &candidate : kConvertible)
      if (convertTo && !dtype && descr->str == candidate.descr)
        other = &candidate;
  }
  if (!dtype && !other)
    throw error("unsupported dtype " + quoteForMessage(descr->text) +
                " (attnc reads " + std::string(kAccepted) + ")");

  if (fortranOrder->kind != PyValue::Kind::Bool)
    throw error("malformed .npy header: fortran_order must be True or False, "
                "not " +
                quoteForMessage(fortranOrder->text));
  if (fortranOrder->boolean)
    throw error("fortran_order True is not supported (attnc reads C-order "
                "arrays; save np.ascontiguousarray(a))");

  if (shape->kind != PyValue::Kind::Tuple)
    throw error("malformed .npy header: shape must be a tuple of integers, "
                "not " +
                quoteForMessage(shape->text));
  Tensor t;
  t.dtype = dtype ? *dtype : DType::F32;
  bool anyZero = false;
  for (const PyValue &dim : shape->items) {
    if (dim.kind != PyValue::Kind::Int)
      throw error("malformed .npy header: shape must be a tuple of integers, "
                  "not " +
                  quoteForMessage(shape->text));
    if (dim.overflow)
      throw error("shape " + quoteForMessage(shape->text) +
                  " has a dimension that does not fit in 64 bits");
    if (dim.integer < 0)
      throw error("malformed .npy header: negative dimension in shape " +
                  quoteForMessage(shape->text));
    anyZero |= dim.integer == 0;
    t.shape.push_back(dim.integer);
  }

  // Element and byte counts, guarded against overflow. A zero dimension makes
  // the array empty whatever the others are.
  uint64_t elementSize = other ? other->size : dtypeSize(t.dtype);
  uint64_t byteCount = 0;
  if (!anyZero) {
    uint64_t elements = 1;
    constexpr uint64_t kLimit = uint64_t(INT64_MAX);
    for (int64_t dim : t.shape) {
      if (elements > kLimit / uint64_t(dim))
        throw error("shape " + formatShape(t.shape) + " has too many elements");
      elements *= uint64_t(dim);
    }
    if (elements > kLimit / elementSize)
      throw error("shape " + formatShape(t.shape) + " has too many elements");
    byteCount = elements * elementSize;
  }

  uint64_t available = bytes.size() - prefix - headerLength;
  if (available != byteCount)
    throw error(
        std::string(available < byteCount ? "truncated data"
                                          : "unexpected trailing data") +
        ": shape " + formatShape(t.shape) + " of " +
        (other ? std::string(other->descr) : std::string(dtypeName(t.dtype))) +
        " needs " + std::to_string(byteCount) + " bytes of data, but " +
        std::to_string(available) + " follow the header");

  std::string_view payload = bytes.substr(prefix + headerLength);
  if (other)
    return convertExactly(payload, *other, t.shape, *convertTo, source);
  t.data.assign(payload.begin(), payload.end());
  if (t.dtype == DType::Bool)
    for (size_t i = 0; i < t.data.size(); ++i)
      if (t.data[i] > 1)
        throw error("invalid bool byte " + std::to_string(t.data[i]) +
                    " at element " + std::to_string(i) + " (must be 0 or 1)");
  if (convertTo && t.dtype != *convertTo) {
    OtherDescr from{npyDescr(t.dtype), dtypeSize(t.dtype),
                    isFloat(t.dtype)         ? 'f'
                    : t.dtype == DType::Bool ? 'u'
                                             : 'i'};
    if (t.dtype == DType::F16 || t.dtype == DType::BF16)
      throw error("dtype " + std::string(dtypeName(t.dtype)) +
                  " does not convert to " + std::string(dtypeName(*convertTo)));
    return convertExactly(payload, from, t.shape, *convertTo, source);
  }
  return t;
}

std::string errnoMessage(int code) {
  return std::generic_category().message(code);
}

} // namespace

Tensor parseNpy(std::string_view bytes, const std::string &source,
                std::optional<DType> convertTo) {
  try {
    return parseNpyImpl(bytes, source, convertTo);
  } catch (const UserError &) {
    throw;
  } catch (const std::bad_alloc &) {
    throw UserError(source + ": out of memory reading the .npy file");
  } catch (const std::exception &e) {
    throw UserError(source + ": cannot read the .npy file: " + e.what());
  }
}

Tensor readNpy(const std::string &path) {
  std::string bytes;
  try {
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> file(
        std::fopen(path.c_str(), "rb"), &std::fclose);
    if (!file)
      throw UserError(path + ": cannot open: " + errnoMessage(errno));
    char buffer[1 << 16];
    while (true) {
      size_t got = std::fread(buffer, 1, sizeof(buffer), file.get());
      bytes.append(buffer, got);
      if (got < sizeof(buffer))
        break;
    }
    if (std::ferror(file.get()))
      throw UserError(path + ": cannot read: " + errnoMessage(errno));
  } catch (const UserError &) {
    throw;
  } catch (const std::exception &) { // bad_alloc, length_error
    throw UserError(path + ": out of memory reading the file");
  }
  return parseNpy(bytes, path);
}

std::string serializeNpy(const Tensor &t) {
  assert(t.data.size() ==
             static_cast<size_t>(t.numElements()) * dtypeSize(t.dtype) &&
         "tensor data does not match shape");
  // Exactly numpy 1.24's _write_array_header: sorted keys, repr() values, a
  // trailing ", ", spare room to grow the first axis, then padding.
  std::string shapeText = "(";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i)
      shapeText += ", ";
    shapeText += std::to_string(t.shape[i]);
  }
  shapeText += t.shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + std::string(npyDescr(t.dtype)) +
                       "', 'fortran_order': False, 'shape': " + shapeText +
                       ", }";
  constexpr size_t kGrowthAxisMaxDigits = 21;
  if (!t.shape.empty()) {
    size_t digits = std::to_string(t.shape[0]).size();
    if (digits < kGrowthAxisMaxDigits)
      header.append(kGrowthAxisMaxDigits - digits, ' ');
  }

  constexpr size_t kAlign = 64;
  size_t withNewline = header.size() + 1;
  int major = 1;
  size_t prefix = 10;
  size_t padding = kAlign - (prefix + withNewline) % kAlign;
  if (withNewline + padding > 0xffff) {
    major = 2;
    prefix = 12;
    padding = kAlign - (prefix + withNewline) % kAlign;
  }
  size_t headerLength = withNewline + padding;

  std::string out;
  out.reserve(prefix + headerLength + t.data.size());
  out += kMagic;
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += header;
  out.append(padding, ' ');
  out += '\n';
  out.append(reinterpret_cast<const char *>(t.data.data()), t.data.size());
  return out;
}

void writeNpy(const std::string &path, const Tensor &t) {
  std::string bytes;
  try {
    bytes = serializeNpy(t);
  } catch (const std::exception &) {
    throw UserError(path + ": out of memory writing the file");
  }

  // The temporary sits in the same directory as `path`, so that rename() is
  // atomic; a short hidden name cannot exceed NAME_MAX when `path`'s does
  // not, and the process id and a counter keep it apart from other writers'.
  // Written whole (writeFileWhole), so that not even SIGKILL leaves it
  // partial.
  static std::atomic<unsigned> counter{0};
  size_t slash = path.rfind('/');
  std::string directory =
      slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string temp = directory + ".attnc-" + std::to_string(::getpid()) + "-" +
                     std::to_string(counter++) + ".npy.tmp";
  if (int code = writeFileWhole(temp, bytes)) {
    ::unlink(temp.c_str());
    throw UserError(path + ": cannot write: " + errnoMessage(code));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    int code = errno;
    ::unlink(temp.c_str());
    throw UserError(path + ": cannot write: " + errnoMessage(code));
  }
}

} // namespace attnc
