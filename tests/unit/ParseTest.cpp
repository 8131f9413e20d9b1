//===- ParseTest.cpp - Tests of the graph parser and validator ------------===//
//
// Bad documents must be rejected with one line "g.json: /json/pointer: ..."
// naming the exact place and the problem; good documents must produce the
// graph docs/graph-format.md describes.
//
//===----------------------------------------------------------------------===//

#include "Graph/Graph.h"
#include "Support/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

using namespace attnc;

namespace {

//===----------------------------------------------------------------------===//
// Document builders
//===----------------------------------------------------------------------===//

/// A graph document named "g" with the given sections (each written without
/// its enclosing braces or brackets, except `outputs` and `dims`).
std::string
doc(const std::string &inputs, const std::string &nodes,
    const std::string &outputs = R"(["o"])",
    const std::string &dims = R"({"B": null, "S": null, "T": null})") {
  return R"({"attnc": 1, "name": "g", "dims": )" + dims + R"(, "inputs": {)" +
         inputs + R"(}, "nodes": [)" + nodes + R"(], "outputs": )" + outputs +
         "}";
}

/// One input entry: "NAME": {"shape": SHAPE, "dtype": DTYPE}.
std::string in(const std::string &name, const std::string &shape,
               const std::string &dtype = "f32") {
  return "\"" + name + R"(": {"shape": )" + shape + R"(, "dtype": ")" + dtype +
         "\"}";
}

/// q [B, 4, S, 8], k [B, 2, T, 8], v [B, 2, T, 6], all f32.
std::string qkv() {
  return in("q", R"(["B", 4, "S", 8])") + ", " +
         in("k", R"(["B", 2, "T", 8])") + ", " + in("v", R"(["B", 2, "T", 6])");
}

/// The standard inputs plus `extra` (one or more input entries).
std::string qkvAnd(const std::string &extra) { return qkv() + ", " + extra; }

/// An attention node "o" over q, k, v with extra attributes.
std::string attn(const std::string &extra = "") {
  return R"({"name": "o", "op": "attention", "q": "q", "k": "k", "v": "v")" +
         (extra.empty() ? std::string() : ", " + extra) + "}";
}

/// A node named "o" with the given op and attributes.
std::string node(const std::string &op, const std::string &attributes) {
  return R"({"name": "o", "op": ")" + op + "\", " + attributes + "}";
}

//===----------------------------------------------------------------------===//
// Bad documents
//===----------------------------------------------------------------------===//

struct BadCase {
  std::string name;    ///< The test's name suffix.
  std::string text;    ///< The document.
  std::string pointer; ///< The JSON pointer the message must name ("" = none).
  std::vector<std::string> words; ///< Must all appear in the message.
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.name; }

std::vector<BadCase> badCases() {
  const std::string x23 = in("x", "[2, 3]");
  return {
      // The document.
      {"MalformedJson", R"({"attnc": 1, "name": )", "", {"malformed JSON"}},
      {"MalformedJsonMultiLine",
       "{\n  \"attnc\": 1,\n  \"name\": \"g\",,\n}",
       "",
       {"malformed JSON", "line 3"}},
      {"EmptyText", "", "", {"malformed JSON"}},
      {"MalformedJsonNewlineInString",
       "{\"attnc\": 1, \"name\": \"a\nb\"}",
       "",
       {"malformed JSON"}},
      {"TrailingGarbage",
       R"({"attnc": 1, "name": "g", "inputs": {}, "nodes": [], "outputs": ["x"]} xyz)",
       "",
       {"malformed JSON"}},
      // A number beyond the range of a double is bad input like any other,
      // not an internal error.
      {"NumberOverflow",
       doc(in("x", "[2]"), node("scale", R"("x": "x", "value": 1e400)")),
       "",
       {"1e400"}},
      {"DocumentNotAnObject", "[1, 2]", "", {"expected", "object", "a list"}},
      {"WrongVersion",
       R"({"attnc": 2, "name": "g", "inputs": {}, "nodes": [], "outputs": []})",
       "/attnc",
       {"version", "2"}},
      {"VersionAsString",
       R"({"attnc": "1", "name": "g", "inputs": {}, "nodes": [], "outputs": []})",
       "/attnc",
       {"integer", "string"}},
      {"MissingVersion",
       R"({"name": "g", "inputs": {}, "nodes": [], "outputs": []})",
       "",
       {"needs", "\"attnc\""}},
      {"BadGraphName",
       R"({"attnc": 1, "name": "my-graph", "inputs": {}, "nodes": [], "outputs": []})",
       "/name",
       {"\"my-graph\"", "[A-Za-z_][A-Za-z0-9_]*"}},
      {"GraphNameStartsWithDigit",
       R"({"attnc": 1, "name": "1g", "inputs": {}, "nodes": [], "outputs": []})",
       "/name",
       {"\"1g\""}},
      {"UnknownTopLevelKey",
       R"({"attnc": 1, "name": "g", "inputs": {}, "nodes": [], "outputs": [], "output": []})",
       "/output",
       {"unknown key \"output\"", "did you mean \"outputs\""}},
      {"NodesNotAList",
       R"({"attnc": 1, "name": "g", "inputs": {}, "nodes": {}, "outputs": ["x"]})",
       "/nodes",
       {"list"}},

      // dims.
      {"DimDeclaredZero",
       doc(x23, "", R"(["x"])", R"({"S": 0})"),
       "/dims/S",
       {"> 0", "0"}},
      {"DimDeclaredNegative",
       doc(x23, "", R"(["x"])", R"({"S": -4})"),
       "/dims/S",
       {"> 0", "-4"}},
      {"DimDeclaredFloat",
       doc(x23, "", R"(["x"])", R"({"S": 2.5})"),
       "/dims/S",
       {"integer"}},
      {"DimDeclaredString",
       doc(x23, "", R"(["x"])", R"({"S": "T"})"),
       "/dims/S",
       {"integer", "null"}},
      {"DimBadName",
       doc(x23, "", R"(["x"])", R"({"S-1": 4})"),
       "/dims/S-1",
       {"\"S-1\""}},

      // inputs.
      {"ShapeDimZero",
       doc(in("x", "[2, 0]"), "", R"(["x"])"),
       "/inputs/x/shape/1",
       {"> 0", "0"}},
      {"ShapeDimNegative",
       doc(in("x", "[-3, 2]"), "", R"(["x"])"),
       "/inputs/x/shape/0",
       {"> 0", "-3"}},
      {"ShapeDimFloat",
       doc(in("x", "[2.5]"), "", R"(["x"])"),
       "/inputs/x/shape/0",
       {"expected a dim", "fraction"}},
      {"ShapeDimBool",
       doc(in("x", "[true]"), "", R"(["x"])"),
       "/inputs/x/shape/0",
       {"expected a dim", "boolean"}},
      {"ShapeDimUnknownName",
       doc(in("x", R"(["B", "U"])"), "", R"(["x"])"),
       "/inputs/x/shape/1",
       {"unknown dim \"U\""}},
      {"ShapeDimUnknownNameSuggests",
       doc(in("x", R"(["Sx"])"), "", R"(["x"])", R"({"S": null})"),
       "/inputs/x/shape/0",
       {"unknown dim \"Sx\"", "did you mean \"S\""}},
      {"ShapeDimUndeclaredWithoutDims",
       R"({"attnc": 1, "name": "g", "inputs": {"x": {"shape": ["S"], "dtype": "f32"}}, "nodes": [], "outputs": ["x"]})",
       "/inputs/x/shape/0",
       {"unknown dim \"S\""}},
      {"ShapeNotAList",
       doc(in("x", R"("B")"), "", R"(["x"])"),
       "/inputs/x/shape",
       {"list"}},
      {"BadDtype",
       doc(in("x", "[2]", "f64"), "", R"(["x"])"),
       "/inputs/x/dtype",
       {"unknown dtype \"f64\""}},
      {"BadDtypeSuggests",
       doc(in("x", "[2]", "bf61"), "", R"(["x"])"),
       "/inputs/x/dtype",
       {"unknown dtype \"bf61\"", "did you mean"}},
      {"MissingDtype",
       doc(R"("x": {"shape": [2]})", "", R"(["x"])"),
       "/inputs/x",
       {"needs", "\"dtype\""}},
      {"UnknownInputKey",
       doc(R"("x": {"shape": [2], "dtype": "f32", "dtyp": "f16"})", "",
           R"(["x"])"),
       "/inputs/x/dtyp",
       {"unknown key \"dtyp\"", "did you mean \"dtype\""}},
      {"BadInputName",
       doc(in("x.y", "[2]"), "", R"(["x"])"),
       "/inputs/x.y",
       {"\"x.y\""}},
      {"BadInputNameEscapedInPointer",
       doc(in("a/b~c", "[2]"), "", R"(["x"])"),
       "/inputs/a~1b~0c",
       {"\"a/b~c\""}},
      {"InputTooManyElements",
       doc(in("x", "[1048576, 1048576, 2]"), "", R"(["x"])"),
       "/inputs/x",
       {"2^40"}},
      {"NodeResultTooManyElements",
       doc(in("x", "[1048576, 1048576]"),
           node("repeat", R"("x": "x", "axis": 0, "times": 2)")),
       "/nodes/0",
       {"2^40"}},

      // Nodes in general.
      {"UnknownNodeKeySuggests",
       doc(qkv(), attn(R"("maks": [])")),
       "/nodes/0/maks",
       {"unknown key \"maks\"", "did you mean \"mask\""}},
      {"UnknownNodeKeyOnPrimitive",
       doc(x23, node("softmax", R"("x": "x", "axes": -1)")),
       "/nodes/0/axes",
       {"unknown key \"axes\"", "did you mean \"axis\""}},
      {"UnknownNodeKeyEscapedInPointer",
       doc(x23, node("neg", R"("x": "x", "a/b~c": 1)")),
       "/nodes/0/a~1b~0c",
       {"unknown key \"a/b~c\""}},
      {"UnknownOp",
       doc(x23, node("softmaxx", R"("x": "x")")),
       "/nodes/0/op",
       {"unknown op \"softmaxx\"", "did you mean \"softmax\""}},
      {"OpNotAString",
       doc(x23, R"({"name": "o", "op": 3, "x": "x"})"),
       "/nodes/0/op",
       {"op"}},
      {"NodeMissingOp",
       doc(x23, R"({"name": "o", "x": "x"})"),
       "/nodes/0",
       {"\"op\""}},
      {"NodeMissingName",
       doc(x23, R"({"op": "neg", "x": "x"})"),
       "/nodes/0",
       {"needs", "\"name\""}},
      {"NodeNotAnObject", doc(x23, R"("neg")"), "/nodes/0", {"object"}},
      {"BadNodeName",
       doc(x23, R"({"name": "o.lse", "op": "neg", "x": "x"})"),
       "/nodes/0/name",
       {"\"o.lse\""}},
      {"UnknownValue",
       doc(qkv(),
           R"({"name": "a", "op": "neg", "x": "q"}, )"
           R"({"name": "b", "op": "neg", "x": "k"}, )"
           R"({"name": "o", "op": "attention", "q": "q", "k": "kk", "v": "v"})"),
       "/nodes/2/k",
       {"unknown value \"kk\""}},
      {"ValueReferenceNotAString",
       doc(x23, node("neg", R"("x": 7)")),
       "/nodes/0/x",
       {"expected the name"}},
      {"ForwardReference",
       doc(x23, R"({"name": "a", "op": "neg", "x": "b"}, )"
                R"({"name": "b", "op": "neg", "x": "x"}, )"
                R"({"name": "o", "op": "neg", "x": "a"})"),
       "/nodes/0/x",
       {"\"b\"", "later", "/nodes/1"}},
      {"SelfReference",
       doc(x23, node("neg", R"("x": "o")")),
       "/nodes/0/x",
       {"\"o\"", "own result"}},
      {"DuplicateNodeNames",
       doc(x23, R"({"name": "o", "op": "neg", "x": "x"}, )"
                R"({"name": "o", "op": "exp", "x": "x"})"),
       "/nodes/1/name",
       {"\"o\"", "already used", "/nodes/0"}},
      {"NodeNameClashesWithInput",
       doc(x23, R"({"name": "x", "op": "neg", "x": "x"})", R"(["x"])"),
       "/nodes/0/name",
       {"\"x\"", "already used", "/inputs/x"}},

      // Primitive ops.
      {"MatmulInnerDims",
       doc(x23 + ", " + in("y", "[4, 5]"),
           node("matmul", R"("a": "x", "b": "y")")),
       "/nodes/0",
       {"inner dims", "3", "4"}},
      {"MatmulInnerDimsTransposed",
       doc(x23 + ", " + in("y", "[5, 4]"),
           node("matmul", R"("a": "x", "b": "y", "transpose_b": true)")),
       "/nodes/0",
       {"inner dims", "3", "4", "transposed"}},
      {"MatmulBatchBroadcast",
       doc(in("x", "[2, 3, 4]") + ", " + in("y", "[5, 4, 6]"),
           node("matmul", R"("a": "x", "b": "y")")),
       "/nodes/0",
       {"batch", "2", "5"}},
      {"MatmulDtypeMix",
       doc(x23 + ", " + in("y", "[3, 4]", "f16"),
           node("matmul", R"("a": "x", "b": "y")")),
       "/nodes/0",
       {"dtype", "f32", "f16"}},
      {"MatmulOnI32",
       doc(in("x", "[2, 3]", "i32") + ", " + in("y", "[3, 4]", "i32"),
           node("matmul", R"("a": "x", "b": "y")")),
       "/nodes/0/a",
       {"float", "i32"}},
      {"MatmulTransposeBNotBool",
       doc(x23 + ", " + in("y", "[4, 3]"),
           node("matmul", R"("a": "x", "b": "y", "transpose_b": 1)")),
       "/nodes/0/transpose_b",
       {"true or false"}},
      {"AddBroadcastFailure",
       doc(x23 + ", " + in("y", "[4]"), node("add", R"("a": "x", "b": "y")")),
       "/nodes/0",
       {"cannot broadcast", "3", "4"}},
      {"AddDifferentRunTimeDims",
       doc(in("x", R"(["S"])") + ", " + in("y", R"(["T"])"),
           node("add", R"("a": "x", "b": "y")")),
       "/nodes/0",
       {"cannot broadcast", "S", "T", "never assumed equal"}},
      {"MulDtypeMismatch",
       doc(x23 + ", " + in("y", "[2, 3]", "f16"),
           node("mul", R"("a": "x", "b": "y")")),
       "/nodes/0",
       {"dtype", "promotion"}},
      {"SubOnBool",
       doc(in("x", "[2]", "bool") + ", " + in("y", "[2]", "bool"),
           node("sub", R"("a": "x", "b": "y")")),
       "/nodes/0/a",
       {"bool"}},
      {"DivOnI32",
       doc(in("x", "[2]", "i32") + ", " + in("y", "[2]", "i32"),
           node("div", R"("a": "x", "b": "y")")),
       "/nodes/0/a",
       {"div", "float", "i32"}},
      {"ScaleValueNotANumber",
       doc(x23, node("scale", R"("x": "x", "value": "2")")),
       "/nodes/0/value",
       {"number"}},
      {"ScaleMissingValue",
       doc(x23, node("scale", R"("x": "x")")),
       "/nodes/0",
       {"needs", "\"value\""}},
      {"TanhOnI32",
       doc(in("x", "[2]", "i32"), node("tanh", R"("x": "x")")),
       "/nodes/0/x",
       {"float", "i32"}},
      {"CosOnI32",
       doc(in("x", "[2]", "i32"), node("cos", R"("x": "x")")),
       "/nodes/0/x",
       {"float", "i32"}},
      {"SinOnBool",
       doc(in("x", "[2]", "bool"), node("sin", R"("x": "x")")),
       "/nodes/0/x",
       {"float", "bool"}},
      {"LinearWeightRank",
       doc(x23 + ", " + in("w", "[3]"),
           node("linear", R"("x": "x", "w": "w")")),
       "/nodes/0/w",
       {"[N, K]"}},
      {"LinearWeightShape",
       doc(x23 + ", " + in("w", "[5, 4]"),
           node("linear", R"("x": "x", "w": "w")")),
       "/nodes/0",
       {"K", "[2, 3]", "[5, 4]"}},
      {"LinearBiasShape",
       doc(x23 + ", " + in("w", "[5, 3]") + ", " + in("b", "[3]"),
           node("linear", R"("x": "x", "w": "w", "b": "b")")),
       "/nodes/0/b",
       {"bias", "[5]"}},
      {"SoftmaxAxisOutOfRange",
       doc(x23, node("softmax", R"("x": "x", "axis": 2)")),
       "/nodes/0/axis",
       {"out of range", "2"}},
      {"SoftmaxNegativeAxisOutOfRange",
       doc(x23, node("softmax", R"("x": "x", "axis": -3)")),
       "/nodes/0/axis",
       {"out of range", "-3"}},
      {"SoftmaxAxisNotAnInteger",
       doc(x23, node("softmax", R"("x": "x", "axis": 1.5)")),
       "/nodes/0/axis",
       {"integer"}},
      {"MaskedFillNonBoolMask",
       doc(x23 + ", " + in("m", "[2, 3]"),
           node("masked_fill", R"("x": "x", "mask": "m", "value": "-inf")")),
       "/nodes/0/mask",
       {"bool", "f32"}},
      {"MaskedFillMaskTooBig",
       doc(x23 + ", " + in("m", "[4, 2, 3]", "bool"),
           node("masked_fill", R"("x": "x", "mask": "m", "value": 0)")),
       "/nodes/0/mask",
       {"broadcast"}},
      {"MaskedFillBadValue",
       doc(x23 + ", " + in("m", "[2, 3]", "bool"),
           node("masked_fill", R"("x": "x", "mask": "m", "value": "inf")")),
       "/nodes/0/value",
       {"-inf"}},
      {"CausalMaskRank1",
       doc(in("x", "[3]"), node("causal_mask", R"("x": "x")")),
       "/nodes/0/x",
       {"[..., S, T]"}},
      {"WindowMaskRank1",
       doc(in("x", "[3]"),
           node("window_mask", R"("x": "x", "left": 1, "right": 0)")),
       "/nodes/0/x",
       {"[..., S, T]"}},
      {"WindowMaskNegativeLeft",
       doc(x23, node("window_mask", R"("x": "x", "left": -2, "right": 0)")),
       "/nodes/0/left",
       {">= 0", "-2"}},
      {"WindowMaskRightNotAnInteger",
       doc(x23, node("window_mask", R"("x": "x", "left": 1, "right": 0.5)")),
       "/nodes/0/right",
       {"integer"}},
      {"WindowMaskNeedsBounds",
       doc(x23, node("window_mask", R"("x": "x", "left": 1)")),
       "/nodes/0",
       {"right"}},
      {"TransposePermRepeatsAxis",
       doc(x23, node("transpose", R"("x": "x", "perm": [0, 0])")),
       "/nodes/0/perm/1",
       {"twice"}},
      {"TransposePermWrongLength",
       doc(x23, node("transpose", R"("x": "x", "perm": [1, 0, 2])")),
       "/nodes/0/perm",
       {"permutation", "2"}},
      {"TransposePermOutOfRange",
       doc(x23, node("transpose", R"("x": "x", "perm": [0, 2])")),
       "/nodes/0/perm/1",
       {"out of range"}},
      {"ReshapeCountMismatch",
       doc(x23, node("reshape", R"("x": "x", "shape": [4, 2])")),
       "/nodes/0/shape",
       {"element counts differ", "6", "8"}},
      {"ReshapeTwoMinusOnes",
       doc(in("x", "[2, 3, 4]"),
           node("reshape", R"("x": "x", "shape": [-1, 2, -1])")),
       "/nodes/0/shape/2",
       {"one -1", "/nodes/0/shape/0"}},
      {"ReshapeMinusOneNotDividing",
       doc(x23, node("reshape", R"("x": "x", "shape": [4, -1])")),
       "/nodes/0/shape",
       {"-1"}},
      {"ReshapeMinusOneTwoNamedDims",
       doc(in("x", R"(["B", 12, "S", 64])"),
           node("reshape", R"("x": "x", "shape": ["B", -1, 64])")),
       "/nodes/0/shape",
       {"-1", "S", "not a single dim"}},
      {"ReshapeMinusOneProductOfRunTimeDims",
       doc(in("x", R"(["B", "S", 4])"),
           node("reshape", R"("x": "x", "shape": [-1, 4])")),
       "/nodes/0/shape",
       {"-1", "B", "S"}},
      {"ReshapeBadDim",
       doc(x23, node("reshape", R"("x": "x", "shape": [6, 0])")),
       "/nodes/0/shape/1",
       {"> 0"}},
      {"ReshapeUnknownDim",
       doc(x23, node("reshape", R"("x": "x", "shape": ["U"])")),
       "/nodes/0/shape/0",
       {"unknown dim \"U\""}},
      {"UnsqueezeAxisOutOfRange",
       doc(x23, node("unsqueeze", R"("x": "x", "axis": 3)")),
       "/nodes/0/axis",
       {"out of range", "3"}},
      {"UnsqueezeNegativeAxisOutOfRange",
       doc(x23, node("unsqueeze", R"("x": "x", "axis": -4)")),
       "/nodes/0/axis",
       {"out of range", "-4"}},
      {"ReduceSumAxisOutOfRange",
       doc(x23, node("reduce_sum", R"("x": "x", "axis": 2)")),
       "/nodes/0/axis",
       {"out of range", "2"}},
      {"ReduceSumKeepdimsNotBool",
       doc(x23, node("reduce_sum", R"("x": "x", "axis": 0, "keepdims": "no")")),
       "/nodes/0/keepdims",
       {"true or false"}},
      {"RepeatAlongRunTimeDim",
       doc(in("x", R"(["S", 2])"),
           node("repeat", R"("x": "x", "axis": 0, "times": 2)")),
       "/nodes/0/axis",
       {"run-time", "S"}},
      {"RepeatTimesZero",
       doc(x23, node("repeat", R"("x": "x", "axis": 0, "times": 0)")),
       "/nodes/0/times",
       {">= 1"}},
      {"RepeatAxisOutOfRange",
       doc(x23, node("repeat", R"("x": "x", "axis": 5, "times": 2)")),
       "/nodes/0/axis",
       {"out of range"}},
      {"SliceAlongRunTimeDim",
       doc(in("x", R"([2, "S", 4])"),
           node("slice", R"("x": "x", "axis": -2, "start": 0, "end": 1)")),
       "/nodes/0/axis",
       {"run-time", "S"}},
      {"SliceEndPastTheAxis",
       doc(x23, node("slice", R"("x": "x", "axis": -1, "start": 1, "end": 4)")),
       "/nodes/0/start",
       {"0 <= start < end <= 3", "start 1, end 4"}},
      {"SliceEmpty",
       doc(x23, node("slice", R"("x": "x", "axis": 1, "start": 2, "end": 2)")),
       "/nodes/0/start",
       {"0 <= start < end <= 3", "start 2, end 2"}},
      {"SliceNegativeStart",
       doc(x23, node("slice", R"("x": "x", "axis": 0, "start": -1, "end": 1)")),
       "/nodes/0/start",
       {"0 <= start < end <= 2", "start -1"}},
      {"SliceAxisOutOfRange",
       doc(x23, node("slice", R"("x": "x", "axis": 2, "start": 0, "end": 1)")),
       "/nodes/0/axis",
       {"out of range", "2"}},
      {"SliceMissingAxis",
       doc(x23, node("slice", R"("x": "x", "start": 0, "end": 1)")),
       "/nodes/0",
       {"needs", "\"axis\""}},
      {"SliceMissingEnd",
       doc(x23, node("slice", R"("x": "x", "axis": 0, "start": 0)")),
       "/nodes/0",
       {"needs", "\"end\""}},
      {"SliceOfAScalar",
       doc(in("x", "[]"),
           node("slice", R"("x": "x", "axis": 0, "start": 0, "end": 1)")),
       "/nodes/0/x",
       {"rank >= 1"}},
      {"ConcatAlongRunTimeDim",
       doc(in("x", R"(["S", 2])") + ", " + in("y", "[3, 2]"),
           node("concat", R"("inputs": ["x", "y"], "axis": 0)")),
       "/nodes/0/inputs/1",
       {"run-time", "S"}},
      {"ConcatOtherDimsDiffer",
       doc(x23 + ", " + in("y", "[2, 4]"),
           node("concat", R"("inputs": ["x", "y"], "axis": 0)")),
       "/nodes/0/inputs/1",
       {"differs", "dim 1"}},
      {"ConcatDtypesDiffer",
       doc(x23 + ", " + in("y", "[2, 3]", "f16"),
           node("concat", R"("inputs": ["x", "y"], "axis": 0)")),
       "/nodes/0/inputs/1",
       {"dtype"}},
      {"ConcatEmptyList",
       doc(x23, node("concat", R"("inputs": [], "axis": 0)")),
       "/nodes/0/inputs",
       {"non-empty"}},
      {"ConcatUnknownInput",
       doc(x23, node("concat", R"("inputs": ["x", "z"], "axis": 0)")),
       "/nodes/0/inputs/1",
       {"unknown value \"z\""}},

      // The attention op.
      {"AttentionMissingQ",
       doc(qkv(), R"({"name": "o", "op": "attention", "k": "k", "v": "v"})"),
       "/nodes/0",
       {"needs", "\"q\""}},
      {"AttentionRank3",
       doc(in("q", R"(["B", "S", 8])") + ", " + in("k", R"(["B", 2, "T", 8])") +
               ", " + in("v", R"(["B", 2, "T", 6])"),
           attn()),
       "/nodes/0/q",
       {"[B, H, S, D]", "bhsd"}},
      {"AttentionRank3Bshd",
       doc(qkv() + ", " + in("k3", R"(["B", "T", 8])"),
           R"({"name": "o", "op": "attention", "q": "q", "k": "k3", "v": "v", "layout": "bshd"})"),
       "/nodes/0/k",
       {"[B, S, H, D]", "bshd"}},
      {"AttentionDtypeMix",
       doc(in("q", R"(["B", 4, "S", 8])") + ", " +
               in("k", R"(["B", 2, "T", 8])", "f16") + ", " +
               in("v", R"(["B", 2, "T", 6])"),
           attn()),
       "/nodes/0",
       {"dtype", "f16"}},
      {"AttentionIntegerValues",
       doc(in("q", R"(["B", 4, "S", 8])") + ", " +
               in("k", R"(["B", 2, "T", 8])") + ", " +
               in("v", R"(["B", 2, "T", 6])", "i32"),
           attn()),
       "/nodes/0/v",
       {"float", "i32"}},
      {"AttentionGqaNotDivisible",
       doc(in("q", R"(["B", 6, "S", 8])") + ", " +
               in("k", R"(["B", 4, "T", 8])") + ", " +
               in("v", R"(["B", 4, "T", 6])"),
           attn()),
       "/nodes/0",
       {"multiple", "6", "4"}},
      {"AttentionMoreKvHeadsThanQueryHeads",
       doc(in("q", R"(["B", 2, "S", 8])") + ", " +
               in("k", R"(["B", 4, "T", 8])") + ", " +
               in("v", R"(["B", 4, "T", 6])"),
           attn()),
       "/nodes/0",
       {"multiple", "2", "4"}},
      {"AttentionKeyLengthsDiffer",
       doc(qkv() + ", " + in("vs", R"(["B", 2, "S", 6])"),
           R"({"name": "o", "op": "attention", "q": "q", "k": "k", "v": "vs"})"),
       "/nodes/0",
       {"key lengths", "T", "S"}},
      {"AttentionHeadDimsDiffer",
       doc(qkv() + ", " + in("k6", R"(["B", 2, "T", 6])"),
           R"({"name": "o", "op": "attention", "q": "q", "k": "k6", "v": "v"})"),
       "/nodes/0",
       {"head dims", "8", "6"}},
      {"AttentionBadLayout",
       doc(qkv(), attn(R"("layout": "bsdh")")),
       "/nodes/0/layout",
       {"unknown layout", "bsdh"}},
      {"AttentionUnknownScoreKind",
       doc(qkv(), attn(R"("score": {"kind": "dott"})")),
       "/nodes/0/score/kind",
       {"unknown score kind \"dott\"", "did you mean \"dot\""}},
      {"AttentionScoreWithoutKind",
       doc(qkv(), attn(R"("score": "dot")")),
       "/nodes/0/score",
       {"kind"}},
      {"AttentionUnknownScoreKey",
       doc(qkv(), attn(R"("score": {"kind": "dot", "w": "q"})")),
       "/nodes/0/score/w",
       {"unknown key \"w\""}},
      {"AttentionUnknownBiasKind",
       doc(qkv(), attn(R"("bias": [{"kind": "alibii"}])")),
       "/nodes/0/bias/0/kind",
       {"unknown bias kind \"alibii\"", "did you mean \"alibi\""}},
      {"AttentionUnknownMaskKind",
       doc(qkv(), attn(R"("mask": [{"kind": "causal"}, {"kind": "casual"}])")),
       "/nodes/0/mask/1/kind",
       {"unknown mask kind \"casual\"", "did you mean \"causal\""}},
      {"AttentionUnknownMaskKey",
       doc(qkvAnd(in("len", R"(["B"])", "i32")),
           attn(
               R"("mask": [{"kind": "causal"}, {"kind": "key_length", "input": "len", "lenght": 3}])")),
       "/nodes/0/mask/1/lenght",
       {"unknown key \"lenght\""}},
      {"AttentionMaskNotAList",
       doc(qkv(), attn(R"("mask": {"kind": "causal"})")),
       "/nodes/0/mask",
       {"list"}},
      {"AttentionGeneralWrongShape",
       doc(qkvAnd(in("w", "[8, 6]")),
           attn(R"("score": {"kind": "general", "w": "w"})")),
       "/nodes/0/score/w",
       {"[8, 8]", "[8, 6]"}},
      {"AttentionGeneralMissingW",
       doc(qkv(), attn(R"("score": {"kind": "general"})")),
       "/nodes/0/score",
       {"needs", "\"w\""}},
      {"AttentionAdditiveWqWrongDk",
       doc(qkvAnd(in("wq", "[5, 7]") + ", " + in("wk", "[5, 8]") + ", " +
                  in("va", "[5]")),
           attn(
               R"("score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"})")),
       "/nodes/0/score/wq",
       {"[5, 8]", "[5, 7]"}},
      {"AttentionAdditiveWkMismatch",
       doc(qkvAnd(in("wq", "[5, 8]") + ", " + in("wk", "[4, 8]") + ", " +
                  in("va", "[5]")),
           attn(
               R"("score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"})")),
       "/nodes/0/score/wk",
       {"[5, 8]", "[4, 8]"}},
      {"AttentionAdditiveVaMismatch",
       doc(qkvAnd(in("wq", "[5, 8]") + ", " + in("wk", "[5, 8]") + ", " +
                  in("va", "[4]")),
           attn(
               R"("score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"})")),
       "/nodes/0/score/v",
       {"[5]", "[4]"}},
      {"AttentionKeyLengthNotI32",
       doc(qkvAnd(in("len", R"(["B"])")),
           attn(R"("mask": [{"kind": "key_length", "input": "len"}])")),
       "/nodes/0/mask/0/input",
       {"i32[B]", "f32"}},
      {"AttentionKeyLengthWrongShape",
       doc(qkvAnd(in("len", R"(["B", 1])", "i32")),
           attn(R"("mask": [{"kind": "key_length", "input": "len"}])")),
       "/nodes/0/mask/0/input",
       {"i32[B]", "[B, 1]"}},
      {"AttentionTensorMaskNotBool",
       doc(qkvAnd(in("keep", R"(["B", 1, "S", "T"])")),
           attn(R"("mask": [{"kind": "tensor", "input": "keep"}])")),
       "/nodes/0/mask/0/input",
       {"bool", "f32"}},
      {"AttentionTensorMaskNotBroadcastable",
       doc(qkvAnd(in("keep", R"(["B", 1, "S", "S"])", "bool")),
           attn(R"("mask": [{"kind": "tensor", "input": "keep"}])")),
       "/nodes/0/mask/0/input",
       {"does not broadcast", "[B, 4, S, T]"}},
      {"AttentionBiasNotBroadcastable",
       doc(qkvAnd(in("pb", R"([1, 3, "S", "T"])")),
           attn(R"("bias": [{"kind": "tensor", "input": "pb"}])")),
       "/nodes/0/bias/0/input",
       {"does not broadcast", "[B, 4, S, T]"}},
      {"AttentionBiasRank5",
       doc(qkvAnd(in("pb", R"([1, 1, 4, "S", "T"])")),
           attn(R"("bias": [{"kind": "tensor", "input": "pb"}])")),
       "/nodes/0/bias/0/input",
       {"does not broadcast"}},
      {"AttentionBiasNotFloat",
       doc(qkvAnd(in("pb", R"(["S", "T"])", "i32")),
           attn(R"("bias": [{"kind": "tensor", "input": "pb"}])")),
       "/nodes/0/bias/0/input",
       {"float", "i32"}},
      {"AttentionAlibiSlopesWrongShape",
       doc(qkvAnd(in("sl", "[2]")),
           attn(R"("bias": [{"kind": "alibi", "slopes": "sl"}])")),
       "/nodes/0/bias/0/slopes",
       {"f32[4]", "[2]"}},
      {"AttentionAlibiSlopesWrongDtype",
       doc(qkvAnd(in("sl", "[4]", "f16")),
           attn(R"("bias": [{"kind": "alibi", "slopes": "sl"}])")),
       "/nodes/0/bias/0/slopes",
       {"f32[4]", "f16"}},
      {"AttentionSoftcapZero",
       doc(qkv(), attn(R"("softcap": 0)")),
       "/nodes/0/softcap",
       {"> 0"}},
      {"AttentionSoftcapNegative",
       doc(qkv(), attn(R"("softcap": -30.0)")),
       "/nodes/0/softcap",
       {"> 0"}},
      {"AttentionScaleBadString",
       doc(qkv(), attn(R"("scale": "auto")")),
       "/nodes/0/scale",
       {"number"}},
      {"AttentionWindowNegativeLeft",
       doc(qkv(),
           attn(R"("mask": [{"kind": "window", "left": -1, "right": 0}])")),
       "/nodes/0/mask/0/left",
       {">= 0", "-1"}},
      {"AttentionWindowNegativeRight",
       doc(qkv(),
           attn(R"("mask": [{"kind": "window", "left": 3, "right": -2}])")),
       "/nodes/0/mask/0/right",
       {">= 0", "-2"}},
      {"AttentionWindowMissingRight",
       doc(qkv(), attn(R"("mask": [{"kind": "window", "left": 3}])")),
       "/nodes/0/mask/0",
       {"needs", "\"right\""}},
      {"AttentionReturnLseNotBool",
       doc(qkv(), attn(R"("return_lse": "yes")")),
       "/nodes/0/return_lse",
       {"true or false"}},

      // outputs.
      {"OutputsEmpty", doc(x23, "", "[]"), "/outputs", {"at least one"}},
      {"OutputsNotAList", doc(x23, "", R"("x")"), "/outputs", {"list"}},
      {"OutputUnknown",
       doc(x23, "", R"(["x", "y"])"),
       "/outputs/1",
       {"unknown value \"y\""}},
      {"OutputDuplicate",
       doc(x23, node("neg", R"("x": "x")"), R"(["o", "x", "o"])"),
       "/outputs/2",
       {"\"o\"", "twice"}},
      {"OutputLseWithoutReturnLse",
       doc(qkv(), attn(), R"(["o", "o.lse"])"),
       "/outputs/1",
       {"\"o.lse\""}},
      {"OutputLseDuplicate",
       doc(qkv(), attn(R"("return_lse": true)"), R"(["o.lse", "o", "o.lse"])"),
       "/outputs/2",
       {"\"o.lse\"", "twice"}},
  };
}

class BadDocumentTest : public testing::TestWithParam<BadCase> {};

// Tests that the document is rejected with one line naming the file, the
// exact JSON pointer and the problem.
TEST_P(BadDocumentTest, RejectedWithOneLineNamingThePointer) {
  const BadCase &c = GetParam();
  SCOPED_TRACE(c.text);
  try {
    parseGraph(c.text, "g.json");
    FAIL() << "parsed without an error";
  } catch (const UserError &error) {
    std::string message = error.what();
    SCOPED_TRACE(message);
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line";
    std::string prefix =
        "g.json: " + (c.pointer.empty() ? "" : c.pointer + ": ");
    EXPECT_EQ(message.rfind(prefix, 0), 0u) << "does not start with " << prefix;
    if (c.pointer.empty()) {
      // No pointer: the message must not start with one either.
      EXPECT_NE(message.rfind("g.json: /", 0), 0u);
    }
    for (const std::string &word : c.words)
      EXPECT_NE(message.find(word), std::string::npos) << "lacks " << word;
  } catch (const std::exception &error) {
    FAIL() << "threw something other than UserError: " << error.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Parse, BadDocumentTest, testing::ValuesIn(badCases()),
                         [](const testing::TestParamInfo<BadCase> &info) {
                           return info.param.name;
                         });

// Tests the exact message of the documented example error.
TEST(ParseTest, DocumentedUnknownValueMessage) {
  std::string text =
      doc(in("q", "[1, 1, 2, 4]") + ", " + in("k", "[1, 1, 3, 4]") + ", " +
              in("v", "[1, 1, 3, 4]"),
          R"({"name": "a", "op": "neg", "x": "q"}, )"
          R"({"name": "b", "op": "neg", "x": "k"}, )"
          R"({"name": "o", "op": "attention", "q": "q", "k": "kk", "v": "v"})");
  try {
    parseGraph(text, "g.json");
    FAIL() << "parsed without an error";
  } catch (const UserError &error) {
    std::string message = error.what();
    EXPECT_EQ(message.rfind(R"(g.json: /nodes/2/k: unknown value "kk")", 0), 0u)
        << message;
  }
}

// Tests that the file name given is the one in the message.
TEST(ParseTest, MessageNamesTheGivenFile) {
  try {
    parseGraph("{", "dir/other.json");
    FAIL() << "parsed without an error";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()).rfind("dir/other.json: ", 0), 0u)
        << error.what();
  }
}

TEST(ParseTest, LoadGraphOfAMissingFileIsAUserError) {
  EXPECT_THROW(loadGraph("/nonexistent/dir/g.json"), UserError);
}

//===----------------------------------------------------------------------===//
// Good documents
//===----------------------------------------------------------------------===//

TEST(ParseTest, EveryExampleGraphParses) {
  namespace fs = std::filesystem;
  fs::path directory = fs::path(ATTNC_SOURCE_DIR) / "examples" / "graphs";
  ASSERT_TRUE(fs::is_directory(directory)) << directory;
  int parsed = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(directory)) {
    if (entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(entry.path().string());
    try {
      Graph graph = loadGraph(entry.path().string());
      // The file's name is its stem.
      EXPECT_EQ(graph.name, entry.path().stem().string());
      EXPECT_FALSE(graph.outputs.empty());
      ++parsed;
    } catch (const UserError &error) {
      ADD_FAILURE() << error.what();
    }
  }
  EXPECT_GE(parsed, 10);
}

TEST(ParseTest, InputsKeepTheirWrittenOrder) {
  Graph graph =
      parseGraph(doc(in("zeta", "[2]") + ", " + in("alpha", "[3]") + ", " +
                         in("mid", "[4]", "i32"),
                     node("neg", R"("x": "alpha")"), R"(["o", "zeta"])"),
                 "g.json");
  ASSERT_EQ(graph.inputs.size(), 3u);
  std::vector<std::string> names;
  for (ValueId id : graph.inputs)
    names.push_back(graph.value(id).name);
  EXPECT_EQ(names, (std::vector<std::string>{"zeta", "alpha", "mid"}));
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    EXPECT_TRUE(graph.value(graph.inputs[i]).isInput());
    EXPECT_EQ(graph.value(graph.inputs[i]).inputIndex, int(i));
  }
  EXPECT_EQ(graph.type(graph.inputs[2]).dtype, DType::I32);
}

TEST(ParseTest, OutputsKeepTheirWrittenOrder) {
  Graph graph = parseGraph(
      doc(qkv(), attn(R"("return_lse": true)"), R"(["o.lse", "v", "o"])"),
      "g.json");
  std::vector<std::string> names;
  for (ValueId id : graph.outputs)
    names.push_back(graph.value(id).name);
  EXPECT_EQ(names, (std::vector<std::string>{"o.lse", "v", "o"}));
}

// Tests that `o.lse` is defined as f32 [B, Hq, S] whatever the layout and
// dtype, and that the attention result is [B, Hq, S, Dv] with v's dtype.
TEST(ParseTest, ReturnLseDefinesF32Lse) {
  for (const char *layout : {"bhsd", "bshd"}) {
    SCOPED_TRACE(layout);
    bool bshd = std::string(layout) == "bshd";
    std::string shapeQ = bshd ? R"(["B", "S", 4, 8])" : R"(["B", 4, "S", 8])";
    std::string shapeK = bshd ? R"(["B", "T", 2, 8])" : R"(["B", 2, "T", 8])";
    std::string shapeV = bshd ? R"(["B", "T", 2, 6])" : R"(["B", 2, "T", 6])";
    Graph graph =
        parseGraph(doc(in("q", shapeQ, "f16") + ", " + in("k", shapeK, "f16") +
                           ", " + in("v", shapeV, "f16"),
                       attn(std::string(R"("layout": ")") + layout +
                            R"(", "return_lse": true)"),
                       R"(["o", "o.lse"])"),
                   "g.json");
    ASSERT_EQ(graph.nodes.size(), 1u);
    ASSERT_EQ(graph.nodes[0].results.size(), 2u);
    std::optional<ValueId> lse = graph.lookup("o.lse");
    ASSERT_TRUE(lse);
    EXPECT_EQ(graph.nodes[0].results[1], *lse);
    EXPECT_EQ(graph.value(*lse).producer, 0);
    EXPECT_EQ(graph.type(*lse).str(), "f32[B, 4, S]");
    EXPECT_EQ(graph.type(*graph.lookup("o")).str(),
              bshd ? "f16[B, S, 4, 6]" : "f16[B, 4, S, 6]");
    EXPECT_EQ(graph.outputs[1], *lse);
  }
}

// Tests that a later node may read `o.lse` like any other value.
TEST(ParseTest, LseIsAnOperandOfLaterNodes) {
  Graph graph =
      parseGraph(doc(qkv(),
                     attn(R"("return_lse": true)") +
                         R"(, {"name": "e", "op": "exp", "x": "o.lse"})",
                     R"(["e"])"),
                 "g.json");
  EXPECT_EQ(graph.type(*graph.lookup("e")).str(), "f32[B, 4, S]");
  EXPECT_EQ(graph.nodes[1].operands(),
            (std::vector<ValueId>{*graph.lookup("o.lse")}));
}

TEST(ParseTest, WithoutReturnLseThereIsNoLseValue) {
  Graph graph = parseGraph(doc(qkv(), attn()), "g.json");
  EXPECT_FALSE(graph.lookup("o.lse"));
  EXPECT_EQ(graph.nodes[0].results.size(), 1u);
}

// Tests that a dim fixed in `dims` becomes an integer wherever it is used and
// that a null dim stays a named run-time size.
TEST(ParseTest, FixedDimsResolveAndNullDimsStaySymbolic) {
  Graph graph = parseGraph(doc(in("x", R"(["B", "S", 3, "T"])"),
                               node("neg", R"("x": "x")"), R"(["o"])",
                               R"({"B": null, "S": 16, "T": null})"),
                           "g.json");
  const Shape &shape = graph.type(*graph.lookup("x")).shape;
  ASSERT_EQ(shape.size(), 4u);
  EXPECT_FALSE(shape[0].isFixed());
  EXPECT_EQ(shape[0].symbol, "B");
  EXPECT_TRUE(shape[1].isFixed());
  EXPECT_EQ(shape[1].size, 16);
  EXPECT_EQ(shape[1], Dim::fixed(16));
  EXPECT_EQ(shape[2], Dim::fixed(3));
  EXPECT_EQ(shape[3], Dim::named("T"));
  EXPECT_EQ(graph.type(*graph.lookup("o")).str(), "f32[B, 16, 3, T]");
  EXPECT_EQ(graph.runtimeDims(), (std::vector<std::string>{"B", "T"}));
  ASSERT_EQ(graph.dims.size(), 3u);
  EXPECT_EQ(graph.dims[1].name, "S");
  EXPECT_EQ(graph.dims[1].fixed, std::optional<int64_t>(16));
  EXPECT_FALSE(graph.dims[0].fixed);
}

// Tests that a fixed dim equals the same integer written out, so shapes
// written either way match.
TEST(ParseTest, FixedDimEqualsTheWrittenInteger) {
  EXPECT_NO_THROW(parseGraph(
      doc(in("x", R"(["S", 2])") + ", " + in("y", "[4, 2]"),
          node("add", R"("a": "x", "b": "y")"), R"(["o"])", R"({"S": 4})"),
      "g.json"));
}

TEST(ParseTest, AttentionDefaultsAndAttributes) {
  Graph graph = parseGraph(
      doc(qkvAnd(in("len", R"(["B"])", "i32") + ", " +
                 in("keep", R"(["B", 1, "S", "T"])", "bool") + ", " +
                 in("pb", R"([1, 4, "S", "T"])") + ", " + in("sl", "[4]")),
          R"({"name": "d", "op": "attention", "q": "q", "k": "k", "v": "v"}, )" +
              attn(R"("scale": 0.5, "softcap": 30, "layout": "bhsd",
                     "bias": [{"kind": "tensor", "input": "pb"}, {"kind": "alibi"},
                              {"kind": "alibi", "slopes": "sl"}],
                     "mask": [{"kind": "causal"}, {"kind": "window", "left": 5, "right": 1},
                              {"kind": "key_length", "input": "len"},
                              {"kind": "tensor", "input": "keep"}])")),
      "g.json");
  const AttentionOp *d = graph.nodes[0].getIf<AttentionOp>();
  ASSERT_TRUE(d);
  EXPECT_EQ(d->layout, Layout::BHSD);
  EXPECT_EQ(d->score.kind, ScoreKind::Dot);
  EXPECT_FALSE(d->scale);
  EXPECT_FALSE(d->softcap);
  EXPECT_TRUE(d->biases.empty());
  EXPECT_TRUE(d->masks.empty());
  EXPECT_FALSE(d->returnLse);

  const AttentionOp *o = graph.nodes[1].getIf<AttentionOp>();
  ASSERT_TRUE(o);
  EXPECT_EQ(o->scale, std::optional<double>(0.5));
  EXPECT_EQ(o->softcap, std::optional<double>(30));
  ASSERT_EQ(o->biases.size(), 3u);
  EXPECT_EQ(o->biases[0].kind, BiasKind::Tensor);
  EXPECT_EQ(o->biases[0].input, graph.lookup("pb"));
  EXPECT_EQ(o->biases[1].kind, BiasKind::Alibi);
  EXPECT_FALSE(o->biases[1].input);
  EXPECT_EQ(o->biases[2].input, graph.lookup("sl"));
  ASSERT_EQ(o->masks.size(), 4u);
  EXPECT_EQ(o->masks[0].kind, MaskKind::Causal);
  EXPECT_EQ(o->masks[1].kind, MaskKind::Window);
  EXPECT_EQ(o->masks[1].left, 5);
  EXPECT_EQ(o->masks[1].right, 1);
  EXPECT_EQ(o->masks[2].kind, MaskKind::KeyLength);
  EXPECT_EQ(o->masks[3].kind, MaskKind::Tensor);

  AttentionSizes sizes = graph.attentionSizes(*o);
  EXPECT_EQ(sizes.batch, Dim::named("B"));
  EXPECT_EQ(sizes.queryHeads, Dim::fixed(4));
  EXPECT_EQ(sizes.kvHeads, Dim::fixed(2));
  EXPECT_EQ(sizes.queryLen, Dim::named("S"));
  EXPECT_EQ(sizes.keyLen, Dim::named("T"));
  EXPECT_EQ(sizes.keyDim, Dim::fixed(8));
  EXPECT_EQ(sizes.valueDim, Dim::fixed(6));
  // The operands, in a fixed order: q, k, v, then bias and mask inputs.
  std::vector<ValueId> operands = graph.nodes[1].operands();
  EXPECT_EQ(operands.size(), 3u + 2u + 2u);
}

TEST(ParseTest, ScoreKindsParse) {
  Graph graph = parseGraph(
      doc(qkvAnd(in("w", "[8, 8]") + ", " + in("wq", "[5, 8]") + ", " +
                 in("wk", "[5, 8]") + ", " + in("va", "[5]")),
          R"({"name": "g1", "op": "attention", "q": "q", "k": "k", "v": "v", "score": {"kind": "general", "w": "w"}}, )"
          R"({"name": "a1", "op": "attention", "q": "q", "k": "k", "v": "v", "score": {"kind": "additive", "wq": "wq", "wk": "wk", "v": "va"}}, )"
          R"({"name": "c1", "op": "attention", "q": "q", "k": "k", "v": "v", "score": {"kind": "cosine"}, "scale": "default"})",
          R"(["g1", "a1", "c1"])"),
      "g.json");
  const AttentionOp *general = graph.nodes[0].getIf<AttentionOp>();
  const AttentionOp *additive = graph.nodes[1].getIf<AttentionOp>();
  const AttentionOp *cosine = graph.nodes[2].getIf<AttentionOp>();
  ASSERT_TRUE(general && additive && cosine);
  EXPECT_EQ(general->score.kind, ScoreKind::General);
  EXPECT_EQ(general->score.w, graph.lookup("w"));
  EXPECT_EQ(additive->score.kind, ScoreKind::Additive);
  EXPECT_EQ(additive->score.wq, graph.lookup("wq"));
  EXPECT_EQ(additive->score.wk, graph.lookup("wk"));
  EXPECT_EQ(additive->score.va, graph.lookup("va"));
  EXPECT_EQ(additive->v, graph.lookup("v"));
  EXPECT_EQ(cosine->score.kind, ScoreKind::Cosine);
  EXPECT_FALSE(cosine->scale);
}

// Tests that GQA and MQA head counts are accepted and the output has Hq heads.
TEST(ParseTest, GroupedAndMultiQueryHeads) {
  for (int kvHeads : {1, 2, 3, 6}) {
    SCOPED_TRACE(kvHeads);
    std::string kv = "[\"B\", " + std::to_string(kvHeads) + ", \"T\", 8]";
    Graph graph = parseGraph(doc(in("q", R"(["B", 6, "S", 8])") + ", " +
                                     in("k", kv) + ", " + in("v", kv),
                                 attn()),
                             "g.json");
    EXPECT_EQ(graph.type(*graph.lookup("o")).str(), "f32[B, 6, S, 8]");
  }
}

// Tests the result types and normalised attributes of the primitive ops.
TEST(ParseTest, PrimitiveOpResultTypes) {
  Graph graph = parseGraph(
      doc(in("x", R"(["B", "S", 12, 4])") + ", " + in("w", "[5, 4]") + ", " +
              in("b", "[5]") + ", " + in("m", R"(["S", 1, 1])", "bool") + ", " +
              in("r", "[3]"),
          R"({"name": "l", "op": "linear", "x": "x", "w": "w", "b": "b"},
             {"name": "t", "op": "transpose", "x": "x", "perm": [0, -2, 1, 3]},
             {"name": "s", "op": "matmul", "a": "t", "b": "t", "transpose_b": true},
             {"name": "sm", "op": "softmax", "x": "s"},
             {"name": "f", "op": "masked_fill", "x": "x", "mask": "m", "value": "-inf"},
             {"name": "rs", "op": "reshape", "x": "x", "shape": ["B", "S", -1]},
             {"name": "u", "op": "unsqueeze", "x": "x", "axis": -1},
             {"name": "rp", "op": "repeat", "x": "x", "axis": 2, "times": 2},
             {"name": "su", "op": "reduce_sum", "x": "x", "axis": -1},
             {"name": "sk", "op": "reduce_sum", "x": "x", "axis": 1, "keepdims": true},
             {"name": "c", "op": "concat", "inputs": ["x", "x", "x"], "axis": 2},
             {"name": "mv", "op": "matmul", "a": "r", "b": "r"},
             {"name": "sl", "op": "slice", "x": "x", "axis": -1, "start": 1, "end": 3},
             {"name": "cs", "op": "cos", "x": "sl"},
             {"name": "sn", "op": "sin", "x": "x"})",
          R"(["l"])"),
      "g.json");
  auto typeOf = [&](const char *name) {
    return graph.type(*graph.lookup(name)).str();
  };
  EXPECT_EQ(typeOf("l"), "f32[B, S, 12, 5]");
  EXPECT_EQ(typeOf("t"), "f32[B, 12, S, 4]");
  EXPECT_EQ(graph.nodes[1].getIf<TransposeOp>()->perm,
            (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(typeOf("s"), "f32[B, 12, S, S]");
  EXPECT_EQ(typeOf("sm"), "f32[B, 12, S, S]");
  EXPECT_EQ(graph.nodes[3].getIf<SoftmaxOp>()->axis, 3);
  EXPECT_EQ(typeOf("f"), "f32[B, S, 12, 4]");
  EXPECT_TRUE(std::isinf(graph.nodes[4].getIf<MaskedFillOp>()->value));
  EXPECT_LT(graph.nodes[4].getIf<MaskedFillOp>()->value, 0);
  EXPECT_EQ(typeOf("rs"), "f32[B, S, 48]");
  EXPECT_EQ(typeOf("u"), "f32[B, S, 12, 4, 1]");
  EXPECT_EQ(graph.nodes[6].getIf<UnsqueezeOp>()->axis, 4);
  EXPECT_EQ(typeOf("rp"), "f32[B, S, 24, 4]");
  EXPECT_EQ(typeOf("su"), "f32[B, S, 12]");
  EXPECT_EQ(graph.nodes[8].getIf<ReduceSumOp>()->axis, 3);
  EXPECT_EQ(typeOf("sk"), "f32[B, 1, 12, 4]");
  EXPECT_EQ(typeOf("c"), "f32[B, S, 36, 4]");
  EXPECT_EQ(typeOf("mv"), "f32[]");
  EXPECT_EQ(typeOf("sl"), "f32[B, S, 12, 2]");
  const SliceOp *slice = graph.nodes[12].getIf<SliceOp>();
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ(slice->axis, 3);
  EXPECT_EQ(slice->start, 1);
  EXPECT_EQ(slice->end, 3);
  EXPECT_EQ(typeOf("cs"), "f32[B, S, 12, 2]");
  EXPECT_EQ(graph.nodes[13].getIf<UnaryOp>()->kind, UnaryKind::Cos);
  EXPECT_EQ(typeOf("sn"), "f32[B, S, 12, 4]");
  EXPECT_EQ(graph.nodes[14].getIf<UnaryOp>()->kind, UnaryKind::Sin);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    EXPECT_EQ(graph.nodes[i].pointer, "/nodes/" + std::to_string(i));
}

// Tests that an output may be a graph input and that an input may feed
// several nodes.
TEST(ParseTest, InputAsOutput) {
  Graph graph = parseGraph(doc(in("x", "[2]"), "", R"(["x"])"), "g.json");
  ASSERT_EQ(graph.outputs.size(), 1u);
  EXPECT_TRUE(graph.value(graph.outputs[0]).isInput());
  EXPECT_TRUE(graph.nodes.empty());
}

//===----------------------------------------------------------------------===//
// Run-time sizes
//===----------------------------------------------------------------------===//

/// Expects checkBindings to throw a UserError whose message contains `word`.
void expectBindingError(const Graph &graph, const DimBindings &bindings,
                        const std::string &word) {
  try {
    checkBindings(graph, bindings);
    ADD_FAILURE() << "accepted";
  } catch (const UserError &error) {
    std::string message = error.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_NE(message.find(word), std::string::npos) << message;
  }
}

TEST(BindingsTest, ConcreteShapeAndCheckBindings) {
  Graph graph = parseGraph(doc(in("x", R"(["B", "S", "T"])") + ", " +
                                   in("y", R"(["B", 1048576, 1048576])"),
                               node("neg", R"("x": "x")"), R"(["o"])",
                               R"({"B": null, "S": 4, "T": null})"),
                           "g.json");
  EXPECT_EQ(
      concreteShape(graph.type(*graph.lookup("x")).shape, {{"B", 2}, {"T", 3}}),
      (std::vector<int64_t>{2, 4, 3}));
  EXPECT_NO_THROW(checkBindings(graph, {{"B", 1}, {"T", 3}}));
  // A missing or non-positive run-time size, and a value that would exceed
  // 2^40 elements once bound, are errors.
  expectBindingError(graph, {{"B", 1}}, "T");
  expectBindingError(graph, {{"B", 1}, {"T", 0}}, "T");
  expectBindingError(graph, {{"B", -2}, {"T", 3}}, "B");
  expectBindingError(graph, {{"B", 2}, {"T", 3}}, "2^40");
}

} // namespace
