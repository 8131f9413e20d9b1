//===- NpyTest.cpp - Tests of .npy I/O and host tensors -------------------===//

#include "Support/Npy.h"
#include "Support/Error.h"
#include "Support/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace attnc;

namespace {

/// A byte string from a literal that may contain NULs.
template <size_t N> std::string bytesOf(const char (&literal)[N]) {
  return std::string(literal, N - 1);
}

/// A .npy 1.0 image with the given header text (padded to 64 bytes as numpy
/// does) followed by \p data.
std::string npyImage(const std::string &dict, const std::string &data,
                     int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append(64 - (prefix + header.size() + 1) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

/// The message of the UserError that parsing \p bytes throws ("" if none).
std::string parseError(const std::string &bytes,
                       const std::string &source = "x.npy") {
  try {
    parseNpy(bytes, source);
  } catch (const UserError &e) {
    return e.what();
  }
  return "";
}

std::string headerError(const std::string &dict, const std::string &data = "") {
  return parseError(npyImage(dict, data));
}

/// A fresh, empty directory under the test temp directory.
std::string makeTempDir() {
  std::string pattern = testing::TempDir() + "npytest.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  EXPECT_NE(mkdtemp(buffer.data()), nullptr);
  return buffer.data();
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..")
        names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// numpy 1.24: np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3)).
const std::string kNumpyF32x2x3 =
    bytesOf("\x93NUMPY\x01\x00\x76\x00"
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") +
    std::string(58, ' ') + "\n" +
    bytesOf("\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40"
            "\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40");

// np.save(f, np.array(1.5, np.float16)): rank 0.
const std::string kNumpyF16Scalar =
    bytesOf("\x93NUMPY\x01\x00\x76\x00"
            "{'descr': '<f2', 'fortran_order': False, 'shape': (), }") +
    std::string(62, ' ') + "\n" + bytesOf("\x00\x3e");

// np.save(f, np.array([True, False, True])).
const std::string kNumpyBool3 =
    bytesOf("\x93NUMPY\x01\x00\x76\x00"
            "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }") +
    std::string(60, ' ') + "\n" + bytesOf("\x01\x00\x01");

// np.save(f, np.array([[-1, 2]], np.int32)).
const std::string kNumpyI32x1x2 =
    bytesOf("\x93NUMPY\x01\x00\x76\x00"
            "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 2), }") +
    std::string(58, ' ') + "\n" + bytesOf("\xff\xff\xff\xff\x02\x00\x00\x00");

const char *const kAccepted = "(attnc reads <f4, <f2, <u2, <i4, |b1)";

//===----------------------------------------------------------------------===//
// Byte-exact compatibility with numpy
//===----------------------------------------------------------------------===//

TEST(Npy, ReadsNumpyF32File) {
  ASSERT_EQ(kNumpyF32x2x3.size(), 152u);
  Tensor t = parseNpy(kNumpyF32x2x3, "a.npy");
  EXPECT_EQ(t.dtype, DType::F32);
  EXPECT_EQ(t.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(toDoubles(t), (std::vector<double>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, ReadsNumpyF16BoolI32Files) {
  Tensor half = parseNpy(kNumpyF16Scalar, "h.npy");
  EXPECT_EQ(half.dtype, DType::F16);
  EXPECT_TRUE(half.shape.empty());
  EXPECT_EQ(toDoubles(half), std::vector<double>{1.5});

  Tensor mask = parseNpy(kNumpyBool3, "m.npy");
  EXPECT_EQ(mask.dtype, DType::Bool);
  EXPECT_EQ(toDoubles(mask), (std::vector<double>{1, 0, 1}));

  Tensor ints = parseNpy(kNumpyI32x1x2, "i.npy");
  EXPECT_EQ(ints.dtype, DType::I32);
  EXPECT_EQ(ints.shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(toDoubles(ints), (std::vector<double>{-1, 2}));
}

TEST(Npy, SerializesExactlyAsNumpy) {
  EXPECT_EQ(serializeNpy(fromDoubles(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5})),
            kNumpyF32x2x3);
  EXPECT_EQ(serializeNpy(fromDoubles(DType::F16, {}, {1.5})), kNumpyF16Scalar);
  EXPECT_EQ(serializeNpy(fromDoubles(DType::Bool, {3}, {1, 0, 1})),
            kNumpyBool3);
  EXPECT_EQ(serializeNpy(fromDoubles(DType::I32, {1, 2}, {-1, 2})),
            kNumpyI32x1x2);
}

TEST(Npy, HeaderIsPaddedTo64BytesAndEndsInNewline) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{},
        {7},
        {1, 2, 3, 4},
        {1234567, 0, 89},
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}) {
    Tensor t = fromDoubles(
        DType::BF16, shape,
        std::vector<double>(Tensor{DType::BF16, shape, {}}.numElements()));
    std::string bytes = serializeNpy(t);
    size_t headerLength = static_cast<unsigned char>(bytes[8]) |
                          static_cast<unsigned char>(bytes[9]) << 8;
    EXPECT_EQ(bytes[6], '\x01');
    EXPECT_EQ((10 + headerLength) % 64, 0u) << formatShape(shape);
    EXPECT_EQ(bytes[10 + headerLength - 1], '\n');
    EXPECT_NE(bytes.find("'descr': '<u2'"), std::string::npos);
    EXPECT_EQ(bytes.size(), 10 + headerLength + t.data.size());
  }
}

//===----------------------------------------------------------------------===//
// Round trips
//===----------------------------------------------------------------------===//

class NpyRoundTrip : public testing::TestWithParam<DType> {};

TEST_P(NpyRoundTrip, EveryShapeKind) {
  DType dtype = GetParam();
  std::vector<double> values = {1, 0, -2, 0.5, 3, -0.25};
  if (dtype == DType::Bool)
    values = {1, 0, 1, 1, 0, 0};
  if (dtype == DType::I32)
    values = {7, 0, -2147483648.0, 2147483647.0, 3, -5};
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 3}, {6}, {1, 2, 1, 3}}) {
    Tensor t = fromDoubles(dtype, shape, values);
    Tensor back = parseNpy(serializeNpy(t), "rt.npy");
    EXPECT_EQ(back.dtype, dtype);
    EXPECT_EQ(back.shape, shape);
    EXPECT_EQ(back.data, t.data);
    EXPECT_EQ(toDoubles(back), values);
  }
  // Rank 0 and zero-size shapes.
  Tensor scalar = fromDoubles(dtype, {}, {1});
  Tensor scalarBack = parseNpy(serializeNpy(scalar), "s.npy");
  EXPECT_TRUE(scalarBack.shape.empty());
  EXPECT_EQ(scalarBack.data, scalar.data);
  EXPECT_EQ(scalarBack.data.size(), dtypeSize(dtype));
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{0}, {2, 0, 3}, {0, 0}}) {
    Tensor empty = fromDoubles(dtype, shape, {});
    Tensor back = parseNpy(serializeNpy(empty), "e.npy");
    EXPECT_EQ(back.shape, shape);
    EXPECT_TRUE(back.data.empty());
    EXPECT_EQ(back.numElements(), 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, NpyRoundTrip,
                         testing::Values(DType::F32, DType::F16, DType::BF16,
                                         DType::I32, DType::Bool),
                         [](const testing::TestParamInfo<DType> &info) {
                           return std::string(dtypeName(info.param));
                         });

TEST(Npy, Bf16TravelsAsItsBitPattern) {
  // bf16 1.0 is 0x3F80; the file holds it as a little-endian uint16.
  Tensor t = fromDoubles(DType::BF16, {2}, {1.0, -2.0});
  std::string bytes = serializeNpy(t);
  EXPECT_EQ(bytes.substr(bytes.size() - 4), bytesOf("\x80\x3f\x00\xc0"));
  EXPECT_EQ(parseNpy(bytes, "b.npy").dtype, DType::BF16);
}

TEST(Npy, WriteAndReadFile) {
  std::string dir = makeTempDir();
  std::string path = dir + "/out.npy";
  Tensor t = fromDoubles(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  writeNpy(path, t);
  EXPECT_EQ(readFile(path), kNumpyF32x2x3);
  Tensor back = readNpy(path);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.data, t.data);
  // Overwriting replaces the file and leaves no temporary behind.
  writeNpy(path, fromDoubles(DType::I32, {1, 2}, {-1, 2}));
  EXPECT_EQ(readFile(path), kNumpyI32x1x2);
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"out.npy"});
}

//===----------------------------------------------------------------------===//
// Header syntax that numpy accepts
//===----------------------------------------------------------------------===//

TEST(Npy, AcceptsAnyKeyOrderSpacingAndQuotes) {
  std::string data = bytesOf("\x01\x00\x00\x00\x02\x00\x00\x00");
  for (const char *dict :
       {"{'shape': (2,), 'fortran_order': False, 'descr': '<i4'}",
        "{ \"descr\" : \"<i4\" ,\t'shape':( 2 , ) ,'fortran_order':False,}",
        "{'descr':'<i4','fortran_order':False,'shape':(2,)}",
        "{'descr': '=i4', 'fortran_order': False, 'shape': (2L,), }"}) {
    Tensor t = parseNpy(npyImage(dict, data), "k.npy");
    EXPECT_EQ(t.dtype, DType::I32) << dict;
    EXPECT_EQ(t.shape, std::vector<int64_t>{2}) << dict;
    EXPECT_EQ(toDoubles(t), (std::vector<double>{1, 2})) << dict;
  }
}

TEST(Npy, ReadsFormatVersions2And3) {
  std::string dict =
      "{'descr': '<f2', 'fortran_order': False, 'shape': (1,), }";
  for (int major : {2, 3}) {
    Tensor t = parseNpy(npyImage(dict, bytesOf("\x00\x3c"), major), "v.npy");
    EXPECT_EQ(t.dtype, DType::F16);
    EXPECT_EQ(toDoubles(t), std::vector<double>{1.0});
  }
  // Version 3.0 headers are UTF-8 and had no Python 2 'L' suffixes.
  EXPECT_NE(parseError(npyImage("{'descr': '<f2', 'fortran_order': False, "
                                "'shape': (1L,), }",
                                bytesOf("\x00\x3c"), 3))
                .find("x.npy: malformed .npy header"),
            std::string::npos);
}

TEST(Npy, UnpaddedHeaderIsAccepted) {
  std::string dict = "{'descr': '|b1', 'fortran_order': False, 'shape': (1,)}";
  std::string bytes = bytesOf("\x93NUMPY\x01\x00");
  bytes += static_cast<char>(dict.size());
  bytes += '\0';
  bytes += dict + '\x01';
  EXPECT_EQ(toDoubles(parseNpy(bytes, "u.npy")), std::vector<double>{1});
}

//===----------------------------------------------------------------------===//
// Errors: each names the source and the problem
//===----------------------------------------------------------------------===//

TEST(NpyErrors, NotANpyFile) {
  EXPECT_EQ(parseError("", "q.npy"), "q.npy: empty file, not a .npy file");
  EXPECT_EQ(parseError("PK\x03\x04 a zip file", "q.npy"),
            "q.npy: not a .npy file (it does not start with \"\\x93NUMPY\")");
  EXPECT_EQ(parseError(bytesOf("\x93NUM"), "q.npy"),
            "q.npy: truncated .npy header (4 bytes)");
  EXPECT_EQ(parseError(bytesOf("\x93NUMPY\x01\x00\x76"), "q.npy"),
            "q.npy: truncated .npy header (9 bytes)");
}

TEST(NpyErrors, UnsupportedVersion) {
  std::string bytes = kNumpyF32x2x3;
  bytes[6] = '\x04';
  EXPECT_EQ(parseError(bytes),
            "x.npy: unsupported .npy format version 4.0 (attnc reads 1.0, "
            "2.0, 3.0)");
  bytes[6] = '\x01';
  bytes[7] = '\x01';
  EXPECT_EQ(parseError(bytes),
            "x.npy: unsupported .npy format version 1.1 (attnc reads 1.0, "
            "2.0, 3.0)");
}

TEST(NpyErrors, HeaderLongerThanFile) {
  EXPECT_EQ(parseError(kNumpyF32x2x3.substr(0, 100)),
            "x.npy: truncated .npy header: it declares 118 bytes but only 90 "
            "follow");
}

TEST(NpyErrors, UnsupportedDTypeListsAccepted) {
  const std::string tail = "'fortran_order': False, 'shape': (1,), }";
  EXPECT_EQ(headerError("{'descr': '<f8', " + tail, std::string(8, '\0')),
            std::string("x.npy: unsupported dtype '<f8' ") + kAccepted);
  for (const char *descr : {"'>f4'", "'<i8'", "'O'", "'<b1'", "'|f4'", "'|u1'",
                            "'<U3'", "[('a', '<f4')]", "3"})
    EXPECT_EQ(headerError(std::string("{'descr': ") + descr + ", " + tail,
                          std::string(4, '\0')),
              std::string("x.npy: unsupported dtype ") + descr + " " +
                  kAccepted)
        << descr;
}

TEST(NpyErrors, FortranOrder) {
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': True, "
                        "'shape': (2, 2), }",
                        std::string(16, '\0')),
            "x.npy: fortran_order True is not supported (attnc reads C-order "
            "arrays; save np.ascontiguousarray(a))");
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': 0, 'shape': (), }",
                        std::string(4, '\0')),
            "x.npy: malformed .npy header: fortran_order must be True or "
            "False, not 0");
}

TEST(NpyErrors, MissingUnknownAndDuplicateKeys) {
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': False}"),
            "x.npy: malformed .npy header: missing key 'shape'");
  EXPECT_EQ(headerError("{'descr': '<f4', 'fortran_order': False, "
                        "'shape': (), 'extra': 1}"),
            "x.npy: malformed .npy header: unexpected key 'extra'");
  EXPECT_EQ(headerError("{'descr': '<f4', 'descr': '<f4', "
                        "'fortran_order': False, 'shape': ()}"),
            "x.npy: malformed .npy header: duplicate key 'descr'");
  EXPECT_EQ(headerError("['descr', '<f4']"),
            "x.npy: malformed .npy header: not a dictionary");
}

TEST(NpyErrors, MalformedHeaderSyntax) {
  EXPECT_EQ(headerError("{'descr' '<f4'}"),
            "x.npy: malformed .npy header: expected ':' at column 10");
  EXPECT_EQ(headerError("{'descr': '<f4"),
            "x.npy: malformed .npy header: unterminated string at column 11");
  EXPECT_EQ(headerError("{'descr': <f4}"),
            "x.npy: malformed .npy header: unexpected character '<' at column "
            "11");
  EXPECT_EQ(headerError("{'shape': (2 3)}"),
            "x.npy: malformed .npy header: expected ',' or ')' at column 14");
  EXPECT_EQ(headerError("{'shape': (1.5,)}"),
            "x.npy: malformed .npy header: expected an integer at column 13");
  EXPECT_EQ(headerError("{'fortran_order': false}"),
            "x.npy: malformed .npy header: unexpected name 'false' at column "
            "19");
  EXPECT_EQ(headerError("{}{}"),
            "x.npy: malformed .npy header: unexpected text after the "
            "dictionary at column 3");
  EXPECT_EQ(
      headerError(""),
      "x.npy: malformed .npy header: unexpected end of header at column 55");
}

TEST(NpyErrors, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "{'shape': " + std::string(100000, '(') + "}";
  EXPECT_EQ(parseError(npyImage(deep, "", 2)),
            "x.npy: malformed .npy header: nesting deeper than 32 at column "
            "43");
}

TEST(NpyErrors, BadShapes) {
  const std::string head = "{'descr': '<f4', 'fortran_order': False, 'shape': ";
  EXPECT_EQ(headerError(head + "[2, 3]}"),
            "x.npy: malformed .npy header: shape must be a tuple of integers, "
            "not [2, 3]");
  EXPECT_EQ(headerError(head + "(3)}"),
            "x.npy: malformed .npy header: shape must be a tuple of integers, "
            "not (3)");
  EXPECT_EQ(headerError(head + "(2, 'a')}"),
            "x.npy: malformed .npy header: shape must be a tuple of integers, "
            "not (2, 'a')");
  EXPECT_EQ(headerError(head + "(2, -1)}"),
            "x.npy: malformed .npy header: negative dimension in shape "
            "(2, -1)");
  EXPECT_EQ(headerError(head + "(99999999999999999999,)}"),
            "x.npy: shape (99999999999999999999,) has a dimension that does "
            "not fit in 64 bits");
  EXPECT_EQ(headerError(head + "(4294967296, 4294967296)}"),
            "x.npy: shape [4294967296, 4294967296] has too many elements");
  EXPECT_EQ(headerError(head + "(3037000499, 3037000499)}"),
            "x.npy: shape [3037000499, 3037000499] has too many elements");
  // A huge but representable size is a truncation, not an allocation.
  EXPECT_EQ(headerError(head + "(1099511627776,)}"),
            "x.npy: truncated data: shape [1099511627776] of f32 needs "
            "4398046511104 bytes of data, but 0 follow the header");
  // A zero dimension empties the array whatever the others are.
  EXPECT_EQ(parseNpy(npyImage(head + "(9223372036854775807, 0)}", ""), "z.npy")
                .numElements(),
            0);
  // Also when the dimensions before the zero overflow as a product (found
  // by the npy fuzzer: signed overflow in numElements).
  EXPECT_EQ(
      parseNpy(npyImage(head + "(4611686018427387904, 4, 0)}", ""), "z.npy")
          .numElements(),
      0);
}

TEST(NpyErrors, TruncatedAndTrailingData) {
  EXPECT_EQ(parseError(kNumpyF32x2x3.substr(0, 148), "q.npy"),
            "q.npy: truncated data: shape [2, 3] of f32 needs 24 bytes of "
            "data, but 20 follow the header");
  EXPECT_EQ(parseError(kNumpyF32x2x3 + "junk", "q.npy"),
            "q.npy: unexpected trailing data: shape [2, 3] of f32 needs 24 "
            "bytes of data, but 28 follow the header");
}

TEST(NpyErrors, BoolBytesMustBeZeroOrOne) {
  std::string bytes = kNumpyBool3;
  bytes.back() = '\x02';
  EXPECT_EQ(parseError(bytes, "m.npy"),
            "m.npy: invalid bool byte 2 at element 2 (must be 0 or 1)");
}

TEST(NpyErrors, UnreadableFiles) {
  std::string dir = makeTempDir();
  std::string missing = dir + "/missing.npy";
  try {
    readNpy(missing);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(std::string(e.what()),
              missing + ": cannot open: No such file or directory");
  }
  try {
    readNpy(dir);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir + ": ", 0), 0u) << e.what();
  }
  std::string bad = dir + "/bad.npy";
  std::ofstream(bad) << "not numpy";
  try {
    readNpy(bad);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(std::string(e.what()),
              bad + ": not a .npy file (it does not start with "
                    "\"\\x93NUMPY\")");
  }
}

TEST(NpyErrors, FailedWriteLeavesNoFile) {
  std::string dir = makeTempDir();
  Tensor t = fromDoubles(DType::F32, {1}, {1});
  // A missing directory.
  std::string nowhere = dir + "/no/such/dir/o.npy";
  try {
    writeNpy(nowhere, t);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(std::string(e.what()),
              nowhere + ": cannot write: No such file or directory");
  }
  // The target is a non-empty directory: rename fails, the temporary goes.
  std::string occupied = dir + "/o.npy";
  ASSERT_EQ(mkdir(occupied.c_str(), 0755), 0);
  std::ofstream(occupied + "/keep") << "x";
  try {
    writeNpy(occupied, t);
    FAIL() << "no error";
  } catch (const UserError &e) {
    EXPECT_EQ(std::string(e.what()).rfind(occupied + ": cannot write: ", 0), 0u)
        << e.what();
  }
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"o.npy"});
}

//===----------------------------------------------------------------------===//
// Robustness: no byte string crashes the parser
//===----------------------------------------------------------------------===//

TEST(NpyFuzz, MutatedFilesParseOrThrowUserError) {
  std::vector<std::string> seeds = {
      kNumpyF32x2x3,
      kNumpyF16Scalar,
      kNumpyBool3,
      kNumpyI32x1x2,
      serializeNpy(fromDoubles(DType::BF16, {2, 0, 2}, {})),
      npyImage("{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }",
               bytesOf("\x80\x3f\x00\xc0"), 2),
  };
  const std::string alphabet =
      "(){}[],:'\" \n\\-0123456789LTrueFalseNone<|=fbiu";
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) {
    return n == 0 ? size_t(0)
                  : std::uniform_int_distribution<size_t>(0, n - 1)(rng);
  };
  int parsed = 0, rejected = 0;
  for (int iteration = 0; iteration < 3000; ++iteration) {
    std::string bytes = seeds[pick(seeds.size())];
    int mutations = 1 + static_cast<int>(pick(3));
    for (int m = 0; m < mutations; ++m) {
      size_t at = pick(bytes.size() + 1);
      switch (pick(7)) {
      case 0: // Random byte.
        if (at < bytes.size())
          bytes[at] = static_cast<char>(pick(256));
        break;
      case 1: // Truncate.
        bytes.resize(at);
        break;
      case 2: // Insert.
        bytes.insert(at, 1, static_cast<char>(pick(256)));
        break;
      case 3: // Delete.
        if (at < bytes.size())
          bytes.erase(at, 1);
        break;
      case 4: // Header-ish character, aimed at the header.
        if (bytes.size() > 10) {
          size_t pos = 10 + pick(std::min<size_t>(bytes.size() - 10, 128));
          bytes[pos] = alphabet[pick(alphabet.size())];
        }
        break;
      case 5: // Random header length.
        if (bytes.size() >= 10) {
          bytes[8] = static_cast<char>(pick(256));
          bytes[9] = static_cast<char>(pick(256));
        }
        break;
      case 6: // Duplicate a chunk.
        bytes.insert(at, bytes.substr(pick(bytes.size() + 1), pick(32)));
        break;
      }
    }
    try {
      Tensor t = parseNpy(bytes, "fuzz.npy");
      ASSERT_EQ(t.data.size(),
                static_cast<size_t>(t.numElements()) * dtypeSize(t.dtype));
      ++parsed;
    } catch (const UserError &e) {
      std::string message = e.what();
      ASSERT_EQ(message.rfind("fuzz.npy: ", 0), 0u) << message;
      ASSERT_EQ(message.find('\n'), std::string::npos) << message;
      ++rejected;
    } catch (...) {
      FAIL() << "an exception other than UserError escaped parseNpy";
    }
  }
  // Both outcomes are exercised.
  EXPECT_GT(parsed, 10);
  EXPECT_GT(rejected, 1000);
}

//===----------------------------------------------------------------------===//
// Tensor helpers
//===----------------------------------------------------------------------===//

TEST(Tensor, FormatShape) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({7}), "[7]");
  EXPECT_EQ(formatShape({2, 3, 4}), "[2, 3, 4]");
}

TEST(Tensor, NumElements) {
  Tensor t;
  EXPECT_EQ(t.numElements(), 1);
  t.shape = {2, 3, 4};
  EXPECT_EQ(t.numElements(), 24);
  t.shape = {5, 0};
  EXPECT_EQ(t.numElements(), 0);
}

TEST(Tensor, FromDoublesI32RoundsAndSaturates) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  double inf = std::numeric_limits<double>::infinity();
  Tensor t = fromDoubles(DType::I32, {9},
                         {1.4, 1.6, -1.6, 2.5, 3.5, 1e10, -1e10, nan, -inf});
  EXPECT_EQ(toDoubles(t),
            (std::vector<double>{1, 2, -2, 2, 4, 2147483647.0, -2147483648.0, 0,
                                 -2147483648.0}));
}

TEST(Tensor, FromDoublesBoolAndFloats) {
  EXPECT_EQ(toDoubles(fromDoubles(DType::Bool, {4}, {0, -0.0, 0.5, -3})),
            (std::vector<double>{0, 0, 1, 1}));
  // f32 by cast; f16/bf16 rounded from double directly.
  EXPECT_EQ(toDoubles(fromDoubles(DType::F32, {1}, {0.1}))[0],
            static_cast<double>(0.1f));
  EXPECT_EQ(toDoubles(fromDoubles(DType::F16, {2}, {1.0 / 3, 70000})),
            (std::vector<double>{0.333251953125,
                                 std::numeric_limits<double>::infinity()}));
  // 1 + 2^-8 + 2^-40: just above a bf16 tie, so it rounds up to 1 + 2^-7.
  EXPECT_EQ(
      toDoubles(fromDoubles(DType::BF16, {1},
                            {1 + std::ldexp(1, -8) + std::ldexp(1, -40)})),
      std::vector<double>{1 + std::ldexp(1, -7)});
}

} // namespace
