//===- CodegenTest.cpp - MLIR to a running object file --------------------===//
//
// Tests the path every CPU kernel takes: MLIR vector code is lowered to the
// LLVM dialect, compiled for a named target, linked, loaded and run.
//
//===----------------------------------------------------------------------===//

#include "Codegen/EmitObject.h"
#include "Codegen/LoadObject.h"
#include "Codegen/Schedule.h"
#include "Codegen/Target.h"
#include "Support/Error.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Parser/Parser.h"

#include <fstream>
#include <gtest/gtest.h>

using namespace attnc;

namespace {

/// y = x · a + a on 16 floats, one vector FMA.
constexpr const char *kFmaKernel = R"mlir(
func.func @fma16(%x: memref<16xf32>, %y: memref<16xf32>, %a: f32) {
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0] : memref<16xf32>, vector<16xf32>
  %s = vector.broadcast %a : f32 to vector<16xf32>
  %r = math.fma %v, %s, %s : vector<16xf32>
  vector.store %r, %y[%c0] : memref<16xf32>, vector<16xf32>
  return
}
)mlir";

/// Whether /proc/cpuinfo's flags list `flag`.
bool cpuinfoHas(const std::string &flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}

bool hostRuns(const std::string &target) {
  __builtin_cpu_init();
  bool avx512 = __builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") &&
                __builtin_cpu_supports("avx512vl");
  if (target == "x86-64-avx512")
    return avx512;
  if (target == "x86-64-amx")
    return avx512 && cpuinfoHas("avx512_bf16") && cpuinfoHas("amx_tile") &&
           cpuinfoHas("amx_bf16");
  if (target == "x86-64-avx2")
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return true;
}

class CodegenTarget : public ::testing::TestWithParam<const char *> {};

// Tests that the kernel compiles for the target with the FMA inline (no libm
// call), links, loads and computes the right values when the CPU can run it.
TEST_P(CodegenTarget, CompilesLinksAndRuns) {
  const std::string name = GetParam();
  mlir::MLIRContext context;
  context.loadDialect<mlir::arith::ArithDialect, mlir::func::FuncDialect,
                      mlir::math::MathDialect, mlir::memref::MemRefDialect,
                      mlir::vector::VectorDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kFmaKernel, &context);
  ASSERT_TRUE(module);
  lowerToLLVMDialect(*module);
  std::string llvmIR;
  std::string object = emitObject(*module, cpuTarget(name), &llvmIR);
  ASSERT_GT(object.size(), 4u);
  EXPECT_EQ(object.substr(0, 4), "\x7f"
                                 "ELF");
  EXPECT_EQ(llvmIR.find("@fmaf"), std::string::npos) << llvmIR;
  EXPECT_NE(llvmIR.find("\"target-cpu\"=\"" + cpuTarget(name).cpu + "\""),
            std::string::npos);

  std::unique_ptr<LoadedObject> loaded = LoadedObject::load(object);
  auto *kernel = reinterpret_cast<void (*)(float *, float *, float)>(
      loaded->symbol("fma16"));
  ASSERT_NE(kernel, nullptr);
  if (!hostRuns(name))
    GTEST_SKIP() << "this CPU cannot run " << name << " code";
  float x[16], y[16];
  for (int i = 0; i < 16; ++i)
    x[i] = 0.5f * float(i) - 3.0f;
  kernel(x, y, 1.5f);
  for (int i = 0; i < 16; ++i)
    EXPECT_FLOAT_EQ(y[i], x[i] * 1.5f + 1.5f) << "element " << i;
}

INSTANTIATE_TEST_SUITE_P(Targets, CodegenTarget,
                         ::testing::Values("host", "x86-64", "x86-64-avx2",
                                           "x86-64-avx512", "x86-64-amx"),
                         [](const auto &info) {
                           std::string name = info.param;
                           for (char &c : name)
                             if (c == '-')
                               c = '_';
                           return name;
                         });

// Tests that unknown and not-yet-built targets are user errors naming the flag.
TEST(CodegenTargets, UnknownTargetsAreUserErrors) {
  try {
    cpuTarget("arm64");
    FAIL() << "no error";
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()),
              "--target arm64: unknown target; allowed: host, x86-64, "
              "x86-64-avx2, x86-64-avx512, x86-64-avx512-bf16, x86-64-amx, "
              "cuda-sm80, cuda-sm90, cuda-sm90a");
  }
  // CUDA targets are compile-only (GpuKernels.cpp): no CPU target.
  for (const char *cuda : {"cuda-sm80", "cuda-sm90", "cuda-sm90a"})
    EXPECT_THROW(cpuTarget(cuda), UserError);
}

// Tests that a target this CPU cannot run is refused before anything runs,
// naming what the CPU lacks, and that a target it can run is not (checked
// against the CPU's own answer, so on every machine).
TEST(CodegenTargets, TargetsThisCpuLacksAreRefused) {
  for (const char *target :
       {"host", "x86-64", "x86-64-avx2", "x86-64-avx512", "x86-64-amx"}) {
    SCOPED_TRACE(target);
    std::vector<std::string> missing = missingHostFeatures(cpuTarget(target));
    EXPECT_EQ(missing.empty(), hostRuns(target));
    if (missing.empty()) {
      EXPECT_NO_THROW(requireHostRuns(target));
      continue;
    }
    try {
      requireHostRuns(target);
      FAIL() << "no error";
    } catch (const UserError &error) {
      std::string message = error.what();
      EXPECT_EQ(message.rfind(std::string("--target ") + target +
                                  ": this CPU lacks " + missing[0],
                              0),
                0u)
          << message;
    }
  }
}

// Tests that the vector width follows the target.
TEST(CodegenTargets, VectorWidths) {
  EXPECT_EQ(cpuTarget("x86-64").vectorBits, 128);
  EXPECT_EQ(cpuTarget("x86-64-avx2").vectorBits, 256);
  EXPECT_EQ(cpuTarget("x86-64-avx512").vectorBits, 512);
  EXPECT_EQ(cpuTarget("x86-64-amx").vectorBits, 512);
}

// Tests that --target x86-64-amx puts bf16 prefill on AMX tiles, with the
// avx512 class's schedules and the vector products converting bf16 (as on
// the Intel cores that have AMX), and that it needs the AMX features; that
// `host` does so exactly where this CPU has AMX-BF16 and AVX512-BF16; and
// that no other target does.
TEST(CodegenTargets, AmxTarget) {
  CpuTarget amx = cpuTarget("x86-64-amx");
  EXPECT_TRUE(usesAmx(amx));
  EXPECT_FALSE(prefersBf16Dot(amx));
  EXPECT_EQ(targetClassOf(amx), "x86-64-avx512");
  EXPECT_TRUE(hasFeature(amx, "amx-bf16"));
  for (const char *other : {"x86-64-avx512", "x86-64-avx512-bf16"})
    EXPECT_FALSE(usesAmx(cpuTarget(other))) << other;
  CpuTarget host = cpuTarget("host");
  bool hostHasAmx = missingHostFeatures(amx).empty();
  EXPECT_EQ(usesAmx(host), hostHasAmx);
  if (hostHasAmx)
    EXPECT_FALSE(prefersBf16Dot(host));
}

} // namespace

namespace {

// Tests that every target class has a default schedule that validates, and
// that host resolves to its vector width's class.
TEST(Schedules, DefaultsValidate) {
  for (const char *name : {"x86-64", "x86-64-avx2", "x86-64-avx512"}) {
    AttentionSchedule schedule = defaultSchedule(cpuTarget(name));
    EXPECT_EQ(schedule.targetClass, name);
    EXPECT_EQ(schedule.source, "default");
    EXPECT_EQ(schedule.queryTile % schedule.vectorWidth, 0);
  }
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx512")).vectorWidth, 16);
  CpuTarget host = cpuTarget("host");
  EXPECT_EQ(defaultSchedule(host).vectorWidth * 32,
            std::min(host.vectorBits, 512));
}

// Tests that a schedule round-trips through its JSON form.
TEST(Schedules, RoundTrip) {
  CpuTarget target = cpuTarget("x86-64-avx2");
  AttentionSchedule schedule = defaultSchedule(target);
  AttentionSchedule again = parseSchedule(schedule.toJson(), "s.json", target);
  EXPECT_EQ(again.toJson(), schedule.toJson());
  EXPECT_EQ(again.source, "s.json");
}

// Tests that value_prefetch_bytes is optional: a file without it takes its
// class's default (none on AVX-512, every row elsewhere).
TEST(Schedules, ValuePrefetchDefaultsToTheClass) {
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx512")).valuePrefetchBytes, 0);
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx2")).valuePrefetchBytes, 4);
  CpuTarget target = cpuTarget("x86-64-avx512");
  std::string text =
      "{\"attnc_schedule\": 1, \"target_class\": \"x86-64-avx512\", "
      "\"query_tile\": 64, \"key_tile\": 64, \"vector_width\": 16, "
      "\"score_block\": [2, 8], \"pv_block\": [4, 4], \"threads\": 0}";
  EXPECT_EQ(parseSchedule(text, "s.json", target).valuePrefetchBytes, 0);
  text.insert(text.size() - 1, ", \"value_prefetch_bytes\": 2");
  EXPECT_EQ(parseSchedule(text, "s.json", target).valuePrefetchBytes, 2);
}

// Tests that decode_prefetch_level is optional likewise: L2 on AVX-512, L1
// elsewhere.
TEST(Schedules, DecodePrefetchLevelDefaultsToTheClass) {
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx512")).decodePrefetchLevel, 2);
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx2")).decodePrefetchLevel, 1);
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64")).decodePrefetchLevel, 1);
  CpuTarget target = cpuTarget("x86-64-avx2");
  std::string text =
      "{\"attnc_schedule\": 1, \"target_class\": \"x86-64-avx2\", "
      "\"query_tile\": 32, \"key_tile\": 64, \"vector_width\": 8, "
      "\"score_block\": [2, 8], \"pv_block\": [4, 2], \"threads\": 0}";
  EXPECT_EQ(parseSchedule(text, "s.json", target).decodePrefetchLevel, 1);
  text.insert(text.size() - 1, ", \"decode_prefetch_level\": 2");
  EXPECT_EQ(parseSchedule(text, "s.json", target).decodePrefetchLevel, 2);
}

// Tests that decode_step is optional (two vectors of keys) and stated by
// every default (AVX-512: the whole key tile, measured on Zen 4).
TEST(Schedules, DecodeStepDefaultsToTwoVectors) {
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx512")).decodeStep, 64);
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64-avx2")).decodeStep, 16);
  EXPECT_EQ(defaultSchedule(cpuTarget("x86-64")).decodeStep, 8);
  CpuTarget target = cpuTarget("x86-64-avx512");
  std::string text =
      "{\"attnc_schedule\": 1, \"target_class\": \"x86-64-avx512\", "
      "\"query_tile\": 32, \"key_tile\": 64, \"vector_width\": 8, "
      "\"score_block\": [2, 8], \"pv_block\": [4, 4], \"threads\": 0}";
  EXPECT_EQ(parseSchedule(text, "s.json", target).decodeStep, 16);
  text.insert(text.size() - 1, ", \"decode_step\": 6");
  EXPECT_EQ(parseSchedule(text, "s.json", target).decodeStep, 6);
}

struct BadSchedule {
  const char *name, *edit, *message;
};

class ScheduleErrors : public ::testing::TestWithParam<BadSchedule> {};

// Tests that each bad schedule is one user error naming the file and the
// JSON pointer.
TEST_P(ScheduleErrors, NameFileAndPointer) {
  CpuTarget target = cpuTarget("x86-64-avx512");
  std::string text = GetParam().edit;
  try {
    parseSchedule(text, "s.json", target);
    FAIL() << "accepted " << text;
  } catch (const UserError &error) {
    EXPECT_EQ(std::string(error.what()), GetParam().message);
  }
}

#define SCHEDULE(fields)                                                       \
  "{\"attnc_schedule\": 1, \"target_class\": \"x86-64-avx512\", " fields "}"
#define GOOD_BLOCKS                                                            \
  "\"score_block\": [2, 8], \"pv_block\": [4, 4], \"threads\": 0"

INSTANTIATE_TEST_SUITE_P(
    Schedules, ScheduleErrors,
    ::testing::Values(
        BadSchedule{"Malformed", "{",
                    "s.json: malformed JSON: parse error at line 1, column 2: "
                    "syntax error while parsing object key - unexpected end of "
                    "input; expected string literal"},
        BadSchedule{"UnknownKey", SCHEDULE("\"query_tiel\": 64"),
                    "s.json: /query_tiel: unknown key \"query_tiel\""},
        BadSchedule{"WrongClass",
                    "{\"attnc_schedule\": 1, \"target_class\": \"x86-64\"}",
                    "s.json: /target_class: schedule is for x86-64 but the "
                    "target x86-64-avx512 is x86-64-avx512"},
        BadSchedule{"WideVector",
                    "{\"attnc_schedule\": 1, \"target_class\": "
                    "\"x86-64-avx512\", \"vector_width\": 32}",
                    "s.json: /vector_width: must be 4, 8 or 16"},
        BadSchedule{
            "QueryTile", SCHEDULE("\"vector_width\": 16, \"query_tile\": 40"),
            "s.json: /query_tile: must be a multiple of vector_width (16)"},
        BadSchedule{
            "KeyTile",
            SCHEDULE("\"vector_width\": 16, \"query_tile\": 64, \"key_tile\": "
                     "60, " GOOD_BLOCKS),
            "s.json: /key_tile: must be a multiple of score_block[1] (8)"},
        BadSchedule{
            "Block",
            SCHEDULE("\"vector_width\": 16, \"query_tile\": 64, "
                     "\"score_block\": [2, 99]"),
            "s.json: /score_block/1: expected an integer in [1, 32], got 99"},
        BadSchedule{"Missing", SCHEDULE("\"vector_width\": 16"),
                    "s.json: needs \"query_tile\""},
        BadSchedule{"NotInteger", SCHEDULE("\"vector_width\": 16.5"),
                    "s.json: /vector_width: expected an integer, got 16.5"},
        BadSchedule{"ValuePrefetch",
                    SCHEDULE("\"vector_width\": 16, \"query_tile\": 64, "
                             "\"key_tile\": 64, " GOOD_BLOCKS
                             ", \"value_prefetch_bytes\": 3"),
                    "s.json: /value_prefetch_bytes: must be 0, 2 or 4"},
        BadSchedule{"DecodeStep",
                    SCHEDULE("\"vector_width\": 16, \"query_tile\": 64, "
                             "\"key_tile\": 64, " GOOD_BLOCKS
                             ", \"decode_step\": 6"),
                    "s.json: /decode_step: must be a multiple of 4 (the keys "
                    "of a decode score block at vector_width 16)"},
        BadSchedule{
            "DecodePrefetchLevel",
            SCHEDULE("\"vector_width\": 16, \"query_tile\": 64, "
                     "\"key_tile\": 64, " GOOD_BLOCKS
                     ", \"decode_prefetch_level\": 3"),
            "s.json: /decode_prefetch_level: must be 1 (L1) or 2 (L2)"}),
    [](const auto &info) { return std::string(info.param.name); });

} // namespace
