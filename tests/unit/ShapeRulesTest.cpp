//===- ShapeRulesTest.cpp - Tests of the symbolic shape rules -------------===//

#include "Graph/ShapeRules.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

using namespace attnc;

namespace {

/// A shape from a compact spelling: integers are fixed, names symbolic.
Shape shape(std::initializer_list<const char *> dims) {
  Shape result;
  for (const char *dim : dims) {
    std::string text(dim);
    if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])))
      result.push_back(Dim::fixed(std::stoll(text)));
    else
      result.push_back(Dim::named(text));
  }
  return result;
}

std::string str(const std::optional<Shape> &s) {
  return s ? formatShape(*s) : "nullopt";
}

/// Reshape target entries: "-1" is the inferred one.
std::vector<std::optional<Dim>>
target(std::initializer_list<const char *> dims) {
  std::vector<std::optional<Dim>> result;
  for (const char *dim : dims) {
    if (std::string(dim) == "-1")
      result.push_back(std::nullopt);
    else
      result.push_back(shape({dim})[0]);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Dim
//===----------------------------------------------------------------------===//

TEST(DimTest, EqualityAndSpelling) {
  EXPECT_EQ(Dim::fixed(4), Dim::fixed(4));
  EXPECT_NE(Dim::fixed(4), Dim::fixed(5));
  EXPECT_EQ(Dim::named("S"), Dim::named("S"));
  EXPECT_NE(Dim::named("S"), Dim::named("T"));
  EXPECT_NE(Dim::named("S"), Dim::fixed(0));
  EXPECT_NE(Dim::fixed(1), Dim::named("S"));
  EXPECT_TRUE(Dim::fixed(1).isOne());
  EXPECT_FALSE(Dim::named("S").isOne());
  EXPECT_EQ(Dim::fixed(64).str(), "64");
  EXPECT_EQ(Dim::named("S").str(), "S");
  EXPECT_EQ(formatShape(shape({"B", "12", "S", "64"})), "[B, 12, S, 64]");
  EXPECT_EQ(formatShape(Shape{}), "[]");
  EXPECT_EQ((TensorType{DType::BF16, shape({"B", "8"})}).str(), "bf16[B, 8]");
}

//===----------------------------------------------------------------------===//
// broadcastShapes
//===----------------------------------------------------------------------===//

struct BroadcastCase {
  Shape a, b;
  std::string expected; ///< formatShape of the result, or "nullopt".
};

TEST(BroadcastShapesTest, Table) {
  std::vector<BroadcastCase> cases = {
      {shape({"2", "3"}), shape({"2", "3"}), "[2, 3]"},
      {shape({"2", "1"}), shape({"3"}), "[2, 3]"},
      {shape({"1", "3"}), shape({"2", "1"}), "[2, 3]"},
      {shape({"4", "1", "3"}), shape({"5", "1"}), "[4, 5, 3]"},
      {Shape{}, shape({"2", "3"}), "[2, 3]"},
      {shape({"2", "3"}), Shape{}, "[2, 3]"},
      {Shape{}, Shape{}, "[]"},
      {shape({"2", "3"}), shape({"4"}), "nullopt"},
      {shape({"2"}), shape({"3"}), "nullopt"},
      // Symbolic: a named size equals itself and broadcasts against 1.
      {shape({"B", "1", "S", "T"}), shape({"1", "12", "S", "T"}),
       "[B, 12, S, T]"},
      {shape({"S"}), shape({"1"}), "[S]"},
      {shape({"1"}), shape({"S"}), "[S]"},
      {shape({"S", "1"}), shape({"1", "T"}), "[S, T]"},
      {shape({"12", "S", "T"}), shape({"B", "1", "1", "1"}), "[B, 12, S, T]"},
      {shape({"S"}), shape({"T"}), "nullopt"},
      {shape({"S"}), shape({"4"}), "nullopt"},
      {shape({"4"}), shape({"S"}), "nullopt"},
  };
  for (const BroadcastCase &c : cases) {
    SCOPED_TRACE(formatShape(c.a) + " with " + formatShape(c.b));
    std::string problem;
    std::optional<Shape> result = broadcastShapes(c.a, c.b, problem);
    EXPECT_EQ(str(result), c.expected);
    if (!result) {
      EXPECT_FALSE(problem.empty());
    }
  }
}

TEST(BroadcastShapesTest, ProblemExplainsRunTimeSizes) {
  std::string problem;
  EXPECT_FALSE(broadcastShapes(shape({"S"}), shape({"T"}), problem));
  EXPECT_NE(problem.find("S"), std::string::npos) << problem;
  EXPECT_NE(problem.find("T"), std::string::npos) << problem;
  EXPECT_NE(problem.find("never assumed equal"), std::string::npos) << problem;
}

//===----------------------------------------------------------------------===//
// inferMatmulShape
//===----------------------------------------------------------------------===//

struct MatmulCase {
  Shape a, b;
  bool transposeB;
  std::string expected;
};

TEST(InferMatmulShapeTest, Table) {
  std::vector<MatmulCase> cases = {
      {shape({"2", "3"}), shape({"3", "4"}), false, "[2, 4]"},
      {shape({"2", "3"}), shape({"4", "3"}), true, "[2, 4]"},
      {shape({"2", "3"}), shape({"4", "3"}), false, "nullopt"},
      {shape({"2", "3"}), shape({"3", "4"}), true, "nullopt"},
      // numpy's 1-D rules: a 1-D a is a row, a 1-D b a column; the added
      // axis is dropped.
      {shape({"3"}), shape({"3"}), false, "[]"},
      {shape({"3"}), shape({"3", "4"}), false, "[4]"},
      {shape({"2", "3"}), shape({"3"}), false, "[2]"},
      {shape({"3"}), shape({"5", "3", "4"}), false, "[5, 4]"},
      {shape({"5", "2", "3"}), shape({"3"}), false, "[5, 2]"},
      {shape({"3"}), shape({"4", "3"}), true, "[4]"},
      {shape({"3"}), shape({"4"}), false, "nullopt"},
      {shape({"2", "3"}), shape({"3"}), true, "nullopt"},
      {Shape{}, shape({"3"}), false, "nullopt"},
      // Batch axes broadcast.
      {shape({"5", "2", "3"}), shape({"3", "4"}), false, "[5, 2, 4]"},
      {shape({"2", "3"}), shape({"5", "3", "4"}), false, "[5, 2, 4]"},
      {shape({"5", "1", "2", "3"}), shape({"6", "3", "4"}), false,
       "[5, 6, 2, 4]"},
      {shape({"5", "2", "3"}), shape({"6", "3", "4"}), false, "nullopt"},
      // Symbolic.
      {shape({"B", "12", "S", "64"}), shape({"B", "12", "T", "64"}), true,
       "[B, 12, S, T]"},
      {shape({"B", "12", "S", "T"}), shape({"B", "12", "T", "64"}), false,
       "[B, 12, S, 64]"},
      {shape({"B", "12", "S", "T"}), shape({"B", "12", "S", "64"}), false,
       "nullopt"},
      {shape({"B", "1", "S", "64"}), shape({"1", "8", "T", "64"}), true,
       "[B, 8, S, T]"},
      {shape({"B", "S", "64"}), shape({"C", "T", "64"}), true, "nullopt"},
      {shape({"S", "K"}), shape({"K"}), false, "[S]"},
  };
  for (const MatmulCase &c : cases) {
    SCOPED_TRACE(formatShape(c.a) + " x " + formatShape(c.b) +
                 (c.transposeB ? " transposed" : ""));
    std::string problem;
    std::optional<Shape> result =
        inferMatmulShape(c.a, c.b, c.transposeB, problem);
    EXPECT_EQ(str(result), c.expected);
    if (!result) {
      EXPECT_FALSE(problem.empty());
    }
  }
}

TEST(InferMatmulShapeTest, ProblemNamesInnerDims) {
  std::string problem;
  EXPECT_FALSE(
      inferMatmulShape(shape({"2", "3"}), shape({"4", "5"}), false, problem));
  EXPECT_NE(problem.find("inner dims 3 and 4"), std::string::npos) << problem;
}

//===----------------------------------------------------------------------===//
// inferReshape
//===----------------------------------------------------------------------===//

struct ReshapeCase {
  Shape input;
  std::vector<std::optional<Dim>> target;
  std::string expected;
};

TEST(InferReshapeTest, Table) {
  std::vector<ReshapeCase> cases = {
      {shape({"2", "3"}), target({"3", "2"}), "[3, 2]"},
      {shape({"2", "3"}), target({"6"}), "[6]"},
      {shape({"2", "3"}), target({"-1"}), "[6]"},
      {shape({"2", "3", "4"}), target({"-1", "4"}), "[6, 4]"},
      {shape({"2", "3", "4"}), target({"2", "-1"}), "[2, 12]"},
      {shape({"6"}), target({"1", "-1", "1"}), "[1, 6, 1]"},
      {shape({"2", "3"}), target({"4", "2"}), "nullopt"},
      {shape({"2", "3"}), target({"4", "-1"}), "nullopt"},
      // -1 resolving to a fixed size among named dims.
      {shape({"B", "S", "12", "64"}), target({"B", "S", "-1"}), "[B, S, 768]"},
      {shape({"B", "S", "768"}), target({"B", "S", "12", "-1"}),
       "[B, S, 12, 64]"},
      // -1 resolving to a single named dim.
      {shape({"B", "S", "768"}), target({"B", "-1", "768"}), "[B, S, 768]"},
      {shape({"B", "12", "S", "64"}), target({"-1", "12", "S", "64"}),
       "[B, 12, S, 64]"},
      {shape({"S", "S"}), target({"S", "-1"}), "[S, S]"},
      // Named dims written out.
      {shape({"B", "S", "12", "64"}), target({"B", "S", "768"}), "[B, S, 768]"},
      {shape({"B", "S", "12", "64"}), target({"S", "B", "768"}), "[S, B, 768]"},
      {shape({"B", "S", "768"}), target({"B", "T", "768"}), "nullopt"},
      // -1 standing for a product of two named dims, or a named dim times a
      // factor: rejected.
      {shape({"B", "12", "S", "64"}), target({"B", "-1", "64"}), "nullopt"},
      {shape({"B", "S", "4"}), target({"-1", "4"}), "nullopt"},
      {shape({"B", "S"}), target({"-1"}), "nullopt"},
      // -1 with a named dim the input does not have.
      {shape({"B", "4"}), target({"T", "-1"}), "nullopt"},
  };
  for (const ReshapeCase &c : cases) {
    std::string targetText;
    for (const std::optional<Dim> &dim : c.target)
      targetText += (dim ? dim->str() : "-1") + " ";
    SCOPED_TRACE(formatShape(c.input) + " to " + targetText);
    std::string problem;
    std::optional<Shape> result = inferReshape(c.input, c.target, problem);
    EXPECT_EQ(str(result), c.expected);
    if (!result) {
      EXPECT_FALSE(problem.empty());
    }
  }
}

TEST(InferReshapeTest, InferredNamedDimIsSymbolic) {
  std::string problem;
  std::optional<Shape> result = inferReshape(
      shape({"B", "S", "768"}), target({"B", "-1", "768"}), problem);
  ASSERT_TRUE(result) << problem;
  EXPECT_FALSE((*result)[1].isFixed());
  EXPECT_EQ((*result)[1].symbol, "S");
}

TEST(InferReshapeTest, InferredFixedSizeIsFixed) {
  std::string problem;
  std::optional<Shape> result = inferReshape(shape({"B", "S", "12", "64"}),
                                             target({"B", "S", "-1"}), problem);
  ASSERT_TRUE(result) << problem;
  EXPECT_EQ((*result)[2], Dim::fixed(768));
}

TEST(InferReshapeTest, ProductOfNamedDimsExplains) {
  std::string problem;
  EXPECT_FALSE(inferReshape(shape({"B", "12", "S", "64"}),
                            target({"B", "-1", "64"}), problem));
  EXPECT_NE(problem.find("12*S"), std::string::npos) << problem;
}

TEST(InferReshapeTest, OverflowIsAProblem) {
  std::string problem;
  EXPECT_FALSE(inferReshape(shape({"4294967296", "4294967296"}), target({"-1"}),
                            problem));
  EXPECT_FALSE(problem.empty());
}

} // namespace
