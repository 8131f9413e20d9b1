//===- GraphDocuments.h - Graph documents for unit tests ---------*- C++
//-*-===//
//
// Small builders for graph-format JSON, shared by the tests that parse and
// evaluate graphs written inline.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_UNIT_GRAPHDOCUMENTS_H
#define ATTNC_TESTS_UNIT_GRAPHDOCUMENTS_H

#include "Support/Tensor.h"

#include <limits>
#include <string>
#include <vector>

namespace attnc::testing {

inline const double kInf = std::numeric_limits<double>::infinity();

/// One input entry: "name": {"shape": shape, "dtype": dtype}.
inline std::string in(const std::string &name, const std::string &shape,
                      const std::string &dtype = "f32") {
  return "\"" + name + R"(": {"shape": )" + shape + R"(, "dtype": ")" + dtype +
         "\"}";
}

/// A whole graph document named g.
inline std::string doc(const std::string &inputs, const std::string &nodes,
                       const std::string &outputs = R"(["o"])",
                       const std::string &dims = "{}") {
  return R"({"attnc": 1, "name": "g", "dims": )" + dims + R"(, "inputs": {)" +
         inputs + R"(}, "nodes": [)" + nodes + R"(], "outputs": )" + outputs +
         "}";
}

/// An attention node reading q, k, v, with `extra` attributes.
inline std::string attn(const std::string &extra = "",
                        const std::string &name = "o",
                        const std::string &q = "q", const std::string &k = "k",
                        const std::string &v = "v") {
  return R"({"name": ")" + name + R"(", "op": "attention", "q": ")" + q +
         R"(", "k": ")" + k + R"(", "v": ")" + v + "\"" +
         (extra.empty() ? std::string() : ", " + extra) + "}";
}

inline Tensor f32(std::vector<int64_t> shape,
                  const std::vector<double> &values) {
  return fromDoubles(DType::F32, std::move(shape), values);
}

} // namespace attnc::testing

#endif // ATTNC_TESTS_UNIT_GRAPHDOCUMENTS_H
