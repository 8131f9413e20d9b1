//===- RuntimeTest.cpp - Tests of libattnrt, the C runtime ----------------===//
//
// Drives the C API of attnc/attnrt.h with the hand-written kernels of
// fake_kernels.c: results with 1 and 4 threads, every misuse the runtime
// can detect (status and exact message), attnrt_parallel_for coverage,
// attnrt_allocate alignment and reuse, and contexts on a caller's thread
// pool and allocator.
//
//===----------------------------------------------------------------------===//

#include "fake_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pthreadpool.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using ::testing::HasSubstr;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

/// A 64-byte aligned block of caller memory.
class Buffer {
public:
  explicit Buffer(size_t bytes)
      : data_(static_cast<char *>(
            std::aligned_alloc(64, (bytes + 64 + 63) / 64 * 64))) {
    std::memset(data_.get(), 0, bytes);
  }
  template <typename T> T *as(size_t byte_offset = 0) {
    return reinterpret_cast<T *>(data_.get() + byte_offset);
  }

private:
  struct Free {
    void operator()(char *p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data_;
};

attnrt_tensor tensor(void *data, attnrt_dtype dtype,
                     const std::vector<int64_t> &shape,
                     const int64_t *strides = nullptr) {
  return attnrt_tensor{data, dtype, static_cast<int32_t>(shape.size()),
                       shape.empty() ? nullptr : shape.data(), strides};
}

/// A context with `threads` threads, released at the end of the test.
class Context {
public:
  explicit Context(size_t threads = 1) {
    attnrt_context_options options;
    attnrt_context_options_initialize(&options);
    options.threads = threads;
    status_ = attnrt_context_create(&options, &context_);
  }
  ~Context() { attnrt_context_release(context_); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  attnrt_status status() const { return status_; }
  attnrt_context *get() const { return context_; }
  std::string error() const { return attnrt_context_last_error(context_); }

private:
  attnrt_context *context_ = nullptr;
  attnrt_status status_;
};

//===-- Status codes, dtypes, options ------------------------------------===//

TEST(StatusTest, NamesEveryStatus) {
  EXPECT_STREQ(attnrt_status_name(ATTNRT_OK), "ATTNRT_OK");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_INVALID_ARGUMENT),
               "ATTNRT_INVALID_ARGUMENT");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_SHAPE_MISMATCH),
               "ATTNRT_SHAPE_MISMATCH");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_DTYPE_MISMATCH),
               "ATTNRT_DTYPE_MISMATCH");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_LAYOUT_MISMATCH),
               "ATTNRT_LAYOUT_MISMATCH");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_OUT_OF_MEMORY),
               "ATTNRT_OUT_OF_MEMORY");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_NOT_FOUND), "ATTNRT_NOT_FOUND");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_UNAVAILABLE), "ATTNRT_UNAVAILABLE");
  EXPECT_STREQ(attnrt_status_name(ATTNRT_INTERNAL), "ATTNRT_INTERNAL");
}

TEST(StatusTest, UnknownStatusHasANameToo) {
  EXPECT_STREQ(fake_status_name_raw(42), "ATTNRT_UNKNOWN_STATUS");
  EXPECT_STREQ(fake_status_name_raw(-1), "ATTNRT_UNKNOWN_STATUS");
}

TEST(DtypeTest, SizeOfEveryDtype) {
  EXPECT_EQ(attnrt_dtype_size(ATTNRT_F32), 4u);
  EXPECT_EQ(attnrt_dtype_size(ATTNRT_F16), 2u);
  EXPECT_EQ(attnrt_dtype_size(ATTNRT_BF16), 2u);
  EXPECT_EQ(attnrt_dtype_size(ATTNRT_I32), 4u);
  EXPECT_EQ(attnrt_dtype_size(ATTNRT_BOOL), 1u);
  EXPECT_EQ(fake_dtype_size_raw(5), 0u);
  EXPECT_EQ(fake_dtype_size_raw(-1), 0u);
}

TEST(OptionsTest, InitializeSetsDefaults) {
  attnrt_context_options options;
  std::memset(&options, 0x5a, sizeof options);
  options.threads = 77;
  attnrt_context_options_initialize(&options);
  EXPECT_EQ(options.threads, 0u);
  EXPECT_EQ(options.thread_pool, nullptr);
  EXPECT_EQ(options.allocator.self, nullptr);
  EXPECT_EQ(options.allocator.allocate, nullptr);
  EXPECT_EQ(options.allocator.release, nullptr);
  attnrt_context_options_initialize(nullptr); // no crash
}

//===-- Contexts ----------------------------------------------------------===//

TEST(ContextTest, CreatesWithTheRequestedThreads) {
  for (size_t threads : {1, 2, 4}) {
    Context context(threads);
    ASSERT_EQ(context.status(), ATTNRT_OK);
    EXPECT_EQ(attnrt_context_threads(context.get()), threads);
    EXPECT_EQ(context.error(), "");
  }
}

TEST(ContextTest, ZeroThreadsMeansOnePerAvailableCore) {
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  Context context(0);
  ASSERT_EQ(context.status(), ATTNRT_OK);
  EXPECT_EQ(attnrt_context_threads(context.get()),
            static_cast<size_t>(CPU_COUNT(&set)));
}

TEST(ContextTest, RejectsNullArgumentsAndAbsurdThreadCounts) {
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  EXPECT_EQ(attnrt_context_create(&options, nullptr), ATTNRT_INVALID_ARGUMENT);

  attnrt_context *context = reinterpret_cast<attnrt_context *>(0x1);
  EXPECT_EQ(attnrt_context_create(nullptr, &context), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr);

  context = reinterpret_cast<attnrt_context *>(0x1);
  options.threads = 1025;
  EXPECT_EQ(attnrt_context_create(&options, &context), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr);
  options.threads = std::numeric_limits<size_t>::max();
  EXPECT_EQ(attnrt_context_create(&options, &context), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context, nullptr);
}

TEST(ContextTest, NullContextQueriesAreHarmless) {
  attnrt_context_release(nullptr);
  EXPECT_EQ(attnrt_context_threads(nullptr), 0u);
  EXPECT_STREQ(attnrt_context_last_error(nullptr), "");
}

//===-- Registry ----------------------------------------------------------===//

TEST(RegistryTest, FindsRegisteredKernels) {
  Context context;
  ASSERT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
            ATTNRT_OK);
  ASSERT_EQ(attnrt_register_kernel(context.get(), &fake_rows_kernel),
            ATTNRT_OK);
  const attnrt_kernel *kernel = nullptr;
  EXPECT_EQ(attnrt_find_kernel(context.get(), "rows", &kernel), ATTNRT_OK);
  EXPECT_EQ(kernel, &fake_rows_kernel);
  EXPECT_EQ(attnrt_find_kernel(context.get(), "axpy", &kernel), ATTNRT_OK);
  EXPECT_EQ(kernel, &fake_axpy_kernel);
  EXPECT_EQ(context.error(), "");
}

TEST(RegistryTest, RegistersManyKernels) {
  // More than the registry's first capacity, so that it grows.
  std::vector<std::string> names;
  std::vector<attnrt_kernel> kernels;
  for (int i = 0; i < 40; ++i)
    names.push_back("kernel" + std::to_string(i));
  for (int i = 0; i < 40; ++i) {
    kernels.push_back(fake_axpy_kernel);
    kernels.back().name = names[i].c_str();
  }
  Context context;
  for (const attnrt_kernel &kernel : kernels)
    ASSERT_EQ(attnrt_register_kernel(context.get(), &kernel), ATTNRT_OK);
  for (int i = 0; i < 40; ++i) {
    const attnrt_kernel *found = nullptr;
    ASSERT_EQ(attnrt_find_kernel(context.get(), names[i].c_str(), &found),
              ATTNRT_OK);
    EXPECT_EQ(found, &kernels[i]);
  }
}

TEST(RegistryTest, RejectsDuplicateNames) {
  Context context;
  ASSERT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
            ATTNRT_OK);
  EXPECT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context.error(), "kernel axpy: a kernel of that name is already "
                             "registered in this context");
  attnrt_kernel other = fake_rows_kernel;
  other.name = "axpy";
  EXPECT_EQ(attnrt_register_kernel(context.get(), &other),
            ATTNRT_INVALID_ARGUMENT);
  const attnrt_kernel *kernel = nullptr;
  ASSERT_EQ(attnrt_find_kernel(context.get(), "axpy", &kernel), ATTNRT_OK);
  EXPECT_EQ(kernel, &fake_axpy_kernel); // the first registration stands
}

TEST(RegistryTest, RejectsAnotherAbiVersion) {
  Context context;
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.abi_version = ATTNRT_ABI_VERSION + 1;
  EXPECT_EQ(attnrt_register_kernel(context.get(), &kernel),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context.error(), "kernel has ABI version " +
                                 std::to_string(ATTNRT_ABI_VERSION + 1) +
                                 ", this runtime supports 2 to " +
                                 std::to_string(ATTNRT_ABI_VERSION) +
                                 "; rebuild it with a matching attnc");
}

TEST(RegistryTest, RejectsNullArguments) {
  Context context;
  EXPECT_EQ(attnrt_register_kernel(nullptr, &fake_axpy_kernel),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(attnrt_register_kernel(context.get(), nullptr),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context.error(), "kernel is null");

  const attnrt_kernel *kernel = &fake_axpy_kernel;
  EXPECT_EQ(attnrt_find_kernel(nullptr, "axpy", &kernel),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(attnrt_find_kernel(context.get(), nullptr, &kernel),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_EQ(context.error(), "attnrt_find_kernel: name is null");
  EXPECT_EQ(attnrt_find_kernel(context.get(), "axpy", nullptr),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context.error(), "attnrt_find_kernel: out_kernel is null");
}

TEST(ErrorTest, ThreadsSharingAContextEachSeeTheirOwnError) {
  Context context;
  ASSERT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
            ATTNRT_OK);
  // Each thread fails its own way many times over and must always read its
  // own message, never the other's.
  std::atomic<int> wrong{0};
  auto failWith = [&](const char *name) {
    std::string expected =
        std::string("no kernel named '") + name + "' (registered: axpy)";
    for (int n = 0; n < 2000; ++n) {
      const attnrt_kernel *kernel = nullptr;
      if (attnrt_find_kernel(context.get(), name, &kernel) !=
              ATTNRT_NOT_FOUND ||
          attnrt_context_last_error(context.get()) != expected)
        ++wrong;
    }
  };
  std::thread first(failWith, "first"), second(failWith, "second");
  first.join();
  second.join();
  EXPECT_EQ(wrong.load(), 0);
  // This thread failed nothing on this context.
  EXPECT_EQ(context.error(), "");
}

TEST(ErrorTest, AnotherContextsErrorIsNotShown) {
  Context a, b;
  const attnrt_kernel *kernel = nullptr;
  EXPECT_EQ(attnrt_find_kernel(a.get(), "x", &kernel), ATTNRT_NOT_FOUND);
  EXPECT_THAT(a.error(), HasSubstr("no kernel named 'x'"));
  EXPECT_EQ(b.error(), "");
}

TEST(RegistryTest, AFailedDescriptorIsCheckedAgainEveryTime) {
  // Only descriptors that passed are remembered: a bad one fails on every
  // call with its message.
  Context context;
  attnrt_kernel bad = fake_axpy_kernel;
  bad.abi_version = ATTNRT_ABI_VERSION + 1;
  for (int n = 0; n < 3; ++n) {
    EXPECT_EQ(attnrt_register_kernel(context.get(), &bad),
              ATTNRT_INVALID_ARGUMENT);
    EXPECT_THAT(context.error(), HasSubstr("ABI version"));
  }
}

TEST(RegistryTest, UnknownNameIsNotFound) {
  Context context;
  const attnrt_kernel *kernel = &fake_axpy_kernel;
  EXPECT_EQ(attnrt_find_kernel(context.get(), "axpy", &kernel),
            ATTNRT_NOT_FOUND);
  EXPECT_EQ(kernel, nullptr);
  EXPECT_EQ(context.error(),
            "no kernel named 'axpy': none is registered in this context");

  ASSERT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
            ATTNRT_OK);
  ASSERT_EQ(attnrt_register_kernel(context.get(), &fake_rows_kernel),
            ATTNRT_OK);
  EXPECT_EQ(attnrt_find_kernel(context.get(), "gpt2_attn", &kernel),
            ATTNRT_NOT_FOUND);
  EXPECT_EQ(context.error(),
            "no kernel named 'gpt2_attn' (registered: axpy, rows)");
  EXPECT_EQ(attnrt_find_kernel(context.get(), "", &kernel), ATTNRT_NOT_FOUND);
  EXPECT_EQ(attnrt_find_kernel(context.get(), "AXPY", &kernel),
            ATTNRT_NOT_FOUND);
}

/// A descriptor broken in one way, and the message that names the fault.
struct BadDescriptor {
  const char *what;
  void (*breakIt)(attnrt_kernel &kernel);
  const char *message;
};

const int64_t kDimsTwo[] = {-2};
const int64_t kDimsZero[] = {0};
const char *const kNamesNM[] = {"N", "M"};
const char *const kNamesNull[] = {nullptr};
const attnrt_arg_info kBadRank[] = {{"x", ATTNRT_F32, -1, nullptr}};
const attnrt_arg_info kNullDims[] = {{"x", ATTNRT_F32, 1, nullptr}};
const attnrt_arg_info kDimTwo[] = {{"x", ATTNRT_F32, 1, kDimsTwo}};
const attnrt_arg_info kDimZero[] = {{"x", ATTNRT_F32, 1, kDimsZero}};
const attnrt_divisibility kNOfThree[] = {{-1, 3, "N must be a multiple of 3"}};
const attnrt_divisibility kFourOfN[] = {{4, -1, "4 must be a multiple of N"}};
const attnrt_divisibility kUnknownDim[] = {{-2, 3, "M ..."}};
const attnrt_divisibility kNoText[] = {{-1, 3, nullptr}};

const BadDescriptor kBadDescriptors[] = {
    {"null name", [](attnrt_kernel &k) { k.name = nullptr; },
     "kernel descriptor has no name"},
    {"empty name", [](attnrt_kernel &k) { k.name = ""; },
     "kernel descriptor has no name"},
    {"negative count", [](attnrt_kernel &k) { k.num_inputs = -1; },
     "kernel axpy: negative count (num_dims 1, num_inputs -1, num_outputs 1)"},
    {"null inputs", [](attnrt_kernel &k) { k.inputs = nullptr; },
     "kernel axpy: null dim_names, inputs or outputs array"},
    {"null dim_names", [](attnrt_kernel &k) { k.dim_names = nullptr; },
     "kernel axpy: null dim_names, inputs or outputs array"},
    {"null dim name", [](attnrt_kernel &k) { k.dim_names = kNamesNull; },
     "kernel axpy: dim_names[0] is null"},
    {"zero alignment", [](attnrt_kernel &k) { k.alignment = 0; },
     "kernel axpy: alignment is 0"},
    {"null entry", [](attnrt_kernel &k) { k.entry = nullptr; },
     "kernel axpy: entry is null"},
    {"unknown dtype",
     [](attnrt_kernel &k) { k.inputs = fake_bad_dtype_inputs; },
     "kernel axpy: input x has unknown dtype 9"},
    {"negative rank", [](attnrt_kernel &k) { k.inputs = kBadRank; },
     "kernel axpy: input x has rank -1"},
    {"null dims", [](attnrt_kernel &k) { k.outputs = kNullDims; },
     "kernel axpy: output x has rank 1 and null dims"},
    {"dim 0", [](attnrt_kernel &k) { k.inputs = kDimZero; },
     "kernel axpy: input x dims[0] is 0, neither a size nor one of its 1 "
     "run-time dims"},
    {"unknown run-time dim", [](attnrt_kernel &k) { k.inputs = kDimTwo; },
     "kernel axpy: input x dims[0] is -2, neither a size nor one of its 1 "
     "run-time dims"},
    {"unbound run-time dim",
     [](attnrt_kernel &k) {
       k.num_dims = 2;
       k.dim_names = kNamesNM;
     },
     "kernel axpy: run-time dim M is used by no argument"},
    {"divisibilities null", [](attnrt_kernel &k) { k.num_divisibilities = 1; },
     "kernel axpy: bad divisibilities (count 1)"},
    {"divisibility of an unknown dim",
     [](attnrt_kernel &k) {
       k.num_divisibilities = 1;
       k.divisibilities = kUnknownDim;
     },
     "kernel axpy: divisibilities[0] names no size or has no text"},
    {"divisibility without text",
     [](attnrt_kernel &k) {
       k.num_divisibilities = 1;
       k.divisibilities = kNoText;
     },
     "kernel axpy: divisibilities[0] names no size or has no text"},
};

TEST(RegistryTest, RejectsInconsistentDescriptors) {
  Context context;
  for (const BadDescriptor &bad : kBadDescriptors) {
    SCOPED_TRACE(bad.what);
    attnrt_kernel kernel = fake_axpy_kernel;
    bad.breakIt(kernel);
    EXPECT_EQ(attnrt_register_kernel(context.get(), &kernel),
              ATTNRT_INVALID_ARGUMENT);
    EXPECT_EQ(context.error(), bad.message);
  }
}

//===-- Invocation: results -----------------------------------------------===//

class AxpyTest : public ::testing::TestWithParam<size_t> {};

TEST_P(AxpyTest, ComputesAxpy) {
  Context context(GetParam());
  ASSERT_EQ(context.status(), ATTNRT_OK);
  for (int64_t n : {1, 2, 63, 64, 65, 1000, 100003}) {
    SCOPED_TRACE(n);
    Buffer x(n * 4), y(n * 4), a(4), z(n * 4);
    for (int64_t i = 0; i < n; ++i) {
      x.as<float>()[i] = static_cast<float>(i % 1000);
      y.as<float>()[i] = static_cast<float>(-3 * (i % 777));
      z.as<float>()[i] = -1e30f;
    }
    *a.as<float>() = 0.5f;
    std::vector<int64_t> shape = {n}, one = {1};
    attnrt_tensor inputs[] = {tensor(x.as<void>(), ATTNRT_F32, shape),
                              tensor(y.as<void>(), ATTNRT_F32, shape),
                              tensor(a.as<void>(), ATTNRT_F32, one)};
    attnrt_tensor outputs[] = {tensor(z.as<void>(), ATTNRT_F32, shape)};
    ASSERT_EQ(
        attnrt_invoke(context.get(), &fake_axpy_kernel, inputs, 3, outputs, 1),
        ATTNRT_OK)
        << context.error();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(z.as<float>()[i], 0.5f * static_cast<float>(i % 1000) +
                                      static_cast<float>(-3 * (i % 777)))
          << "at " << i;
  }
  EXPECT_EQ(context.error(), "");
}

TEST_P(AxpyTest, ComputesRows) {
  Context context(GetParam());
  const int64_t b = 3, t = 5;
  Buffer q(b * t * 4 * 4), k(b * t * 4 * 4), bias(t * 4), scale(4),
      o(b * t * 4 * 4);
  for (int64_t i = 0; i < b * t * 4; ++i) {
    q.as<float>()[i] = static_cast<float>(i);
    k.as<float>()[i] = static_cast<float>(2 * i);
  }
  for (int64_t i = 0; i < t; ++i)
    bias.as<int32_t>()[i] = static_cast<int32_t>(100 * i);
  *scale.as<float>() = 2.0f;
  std::vector<int64_t> btc = {b, t, 4}, tt = {t};
  int64_t strides[] = {t * 4, 4, 1}; // explicit dense strides are accepted
  attnrt_tensor inputs[] = {tensor(q.as<void>(), ATTNRT_F32, btc, strides),
                            tensor(k.as<void>(), ATTNRT_F32, btc),
                            tensor(bias.as<void>(), ATTNRT_I32, tt),
                            tensor(scale.as<void>(), ATTNRT_F32, {})};
  attnrt_tensor outputs[] = {tensor(o.as<void>(), ATTNRT_F32, btc)};
  ASSERT_EQ(
      attnrt_invoke(context.get(), &fake_rows_kernel, inputs, 4, outputs, 1),
      ATTNRT_OK)
      << context.error();
  for (int64_t i = 0; i < b * t * 4; ++i) {
    int64_t row = i / 4;
    EXPECT_EQ(o.as<float>()[i], static_cast<float>(3 * i) * 2.0f +
                                    static_cast<float>(100 * (row % t)));
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, AxpyTest, ::testing::Values(1, 4),
                         [](const auto &info) {
                           return std::to_string(info.param) + "Threads";
                         });

//===-- Invocation: misuse ------------------------------------------------===//

/// Valid axpy arguments (N = 8) that each test breaks in one way.
class AxpyMisuseTest : public ::testing::Test {
protected:
  AxpyMisuseTest()
      : x_(8 * 4 + 64), y_(8 * 4), a_(4), z_(8 * 4), shape_{8}, one_{1},
        inputs_{tensor(x_.as<void>(), ATTNRT_F32, shape_),
                tensor(y_.as<void>(), ATTNRT_F32, shape_),
                tensor(a_.as<void>(), ATTNRT_F32, one_)},
        outputs_{tensor(z_.as<void>(), ATTNRT_F32, shape_)} {}

  attnrt_status invoke(const attnrt_kernel *kernel = &fake_axpy_kernel) {
    return attnrt_invoke(context_.get(), kernel, inputs_, 3, outputs_, 1);
  }
  std::string error() const { return context_.error(); }

  Context context_{4};
  Buffer x_, y_, a_, z_;
  std::vector<int64_t> shape_, one_;
  attnrt_tensor inputs_[3];
  attnrt_tensor outputs_[1];
};

TEST_F(AxpyMisuseTest, TheUnbrokenArgumentsAreValid) {
  EXPECT_EQ(invoke(), ATTNRT_OK) << error();
}

TEST_F(AxpyMisuseTest, NullContext) {
  EXPECT_EQ(attnrt_invoke(nullptr, &fake_axpy_kernel, inputs_, 3, outputs_, 1),
            ATTNRT_INVALID_ARGUMENT);
}

TEST_F(AxpyMisuseTest, NullKernel) {
  EXPECT_EQ(invoke(nullptr), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel is null");
}

// A descriptor of ABI version 2 (before attnrt_kernel::cuda) still runs: it
// ends before the field, so its copy here has the field cleared only to
// stand for memory the runtime must not read.
TEST_F(AxpyMisuseTest, AbiVersionTwoStillRuns) {
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.abi_version = 2;
  kernel.cuda = reinterpret_cast<const attnrt_cuda_code *>(uintptr_t{1});
  EXPECT_EQ(invoke(&kernel), ATTNRT_OK) << error();
}

// Version 3 (before attnrt_cuda_code::functions) too; a CPU kernel's is
// null.
TEST_F(AxpyMisuseTest, AbiVersionThreeStillRuns) {
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.abi_version = 3;
  EXPECT_EQ(invoke(&kernel), ATTNRT_OK) << error();
}

TEST_F(AxpyMisuseTest, CpuKernelTakesNoStream) {
  int stream = 0;
  EXPECT_EQ(attnrt_invoke_on_stream(context_.get(), &fake_axpy_kernel, inputs_,
                                    3, outputs_, 1, &stream),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("its stream must be null"));
  EXPECT_EQ(attnrt_invoke_on_stream(context_.get(), &fake_axpy_kernel, inputs_,
                                    3, outputs_, 1, nullptr),
            ATTNRT_OK);
}

TEST_F(AxpyMisuseTest, TimedInvokeOfACpuKernel) {
  double milliseconds = -1;
  EXPECT_EQ(attnrt_invoke_timed(context_.get(), &fake_axpy_kernel, inputs_, 3,
                                outputs_, 1, &milliseconds),
            ATTNRT_OK);
  EXPECT_GE(milliseconds, 0);
  EXPECT_EQ(attnrt_invoke_timed(context_.get(), &fake_axpy_kernel, inputs_, 3,
                                outputs_, 1, nullptr),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "attnrt_invoke_timed: out_milliseconds is null");
}

TEST_F(AxpyMisuseTest, WrongAbiVersion) {
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.abi_version = 0;
  EXPECT_EQ(invoke(&kernel), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel has ABI version 0, this runtime supports 2 to " +
                         std::to_string(ATTNRT_ABI_VERSION) +
                         "; rebuild it with a matching attnc");
}

// N = 8 here: a multiple of 4 (and of 8), not of 3, and 4 is no multiple of 8.
TEST_F(AxpyMisuseTest, DivisibilitiesOfRunTimeDims) {
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.num_divisibilities = 1;
  kernel.divisibilities = kNOfThree;
  EXPECT_EQ(invoke(&kernel), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "kernel axpy: N must be a multiple of 3 (N = 8)");
  kernel.divisibilities = kFourOfN;
  EXPECT_EQ(invoke(&kernel), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "kernel axpy: 4 must be a multiple of N (N = 8)");
  const attnrt_divisibility ofFour[] = {{-1, 4, "N must be a multiple of 4"}};
  kernel.divisibilities = ofFour;
  EXPECT_EQ(invoke(&kernel), ATTNRT_OK) << error();
}

TEST_F(AxpyMisuseTest, InconsistentDescriptorUnregistered) {
  for (const BadDescriptor &bad : kBadDescriptors) {
    SCOPED_TRACE(bad.what);
    attnrt_kernel kernel = fake_axpy_kernel;
    bad.breakIt(kernel);
    EXPECT_EQ(invoke(&kernel), ATTNRT_INVALID_ARGUMENT);
    EXPECT_EQ(error(), bad.message);
  }
}

TEST_F(AxpyMisuseTest, WrongCounts) {
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_axpy_kernel, inputs_, 2, outputs_, 1),
      ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel axpy takes 3 inputs, got 2");
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_axpy_kernel, inputs_, 4, outputs_, 1),
      ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel axpy takes 3 inputs, got 4");
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_axpy_kernel, inputs_, 3, outputs_, 0),
      ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel axpy takes 1 outputs, got 0");
  EXPECT_EQ(attnrt_invoke(context_.get(), &fake_axpy_kernel, inputs_, 3,
                          outputs_, static_cast<size_t>(-1)),
            ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel axpy takes 1 outputs, got 18446744073709551615");
}

TEST_F(AxpyMisuseTest, NullArrays) {
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_axpy_kernel, nullptr, 3, outputs_, 1),
      ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel axpy: inputs is null (num_inputs 3)");
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_axpy_kernel, inputs_, 3, nullptr, 1),
      ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "kernel axpy: outputs is null (num_outputs 1)");
}

TEST_F(AxpyMisuseTest, NullData) {
  inputs_[1].data = nullptr;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "input y: data is null");
  inputs_[1].data = y_.as<void>();
  outputs_[0].data = nullptr;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "output z: data is null");
}

TEST_F(AxpyMisuseTest, DtypeMismatch) {
  const struct {
    int dtype;
    const char *name;
  } cases[] = {{ATTNRT_F16, "f16"},      {ATTNRT_BF16, "bf16"},
               {ATTNRT_I32, "i32"},      {ATTNRT_BOOL, "bool"},
               {42, "unknown dtype 42"}, {-1, "unknown dtype -1"}};
  for (const auto &c : cases) {
    fake_set_raw_dtype(&inputs_[0], c.dtype);
    EXPECT_EQ(invoke(), ATTNRT_DTYPE_MISMATCH);
    EXPECT_EQ(error(),
              std::string("input x: dtype is ") + c.name + ", expected f32");
  }
  inputs_[0].dtype = ATTNRT_F32;
  outputs_[0].dtype = ATTNRT_BF16;
  EXPECT_EQ(invoke(), ATTNRT_DTYPE_MISMATCH);
  EXPECT_EQ(error(), "output z: dtype is bf16, expected f32");
}

TEST_F(AxpyMisuseTest, RankMismatch) {
  std::vector<int64_t> shape = {8, 1};
  inputs_[1] = tensor(y_.as<void>(), ATTNRT_F32, shape);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input y: rank is 2, expected 1 (shape [N])");
  inputs_[1] = tensor(y_.as<void>(), ATTNRT_F32, {});
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input y: rank is 0, expected 1 (shape [N])");
  inputs_[1].rank = -3;
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input y: rank is -3, expected 1 (shape [N])");
  inputs_[1] = tensor(y_.as<void>(), ATTNRT_F32, shape_);
  inputs_[2].rank = 1000000;
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input a: rank is 1000000, expected 1 (shape [1])");
}

TEST_F(AxpyMisuseTest, NullShape) {
  inputs_[0].shape = nullptr;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "input x: shape is null (rank 1)");
}

TEST_F(AxpyMisuseTest, DimBelowOne) {
  for (int64_t dim : {int64_t{0}, int64_t{-1}, int64_t{-8},
                      std::numeric_limits<int64_t>::min()}) {
    std::vector<int64_t> shape = {dim};
    inputs_[0] = tensor(x_.as<void>(), ATTNRT_F32, shape);
    EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
    EXPECT_EQ(error(), "input x: dim 0 is " + std::to_string(dim) +
                           ", expected >= 1 (shape [" + std::to_string(dim) +
                           "])");
  }
  // Checked before the fixed size: a 0 for a fixed dim says ">= 1" too.
  inputs_[0] = tensor(x_.as<void>(), ATTNRT_F32, shape_);
  std::vector<int64_t> zero = {0};
  inputs_[2] = tensor(a_.as<void>(), ATTNRT_F32, zero);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input a: dim 0 is 0, expected >= 1 (shape [0])");
}

TEST_F(AxpyMisuseTest, FixedDimMismatch) {
  std::vector<int64_t> two = {2};
  inputs_[2] = tensor(a_.as<void>(), ATTNRT_F32, two);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input a: dim 0 is 2, expected 1 (shape [2], expected "
                     "[1])");
}

TEST_F(AxpyMisuseTest, RunTimeDimDisagreesAcrossArguments) {
  std::vector<int64_t> seven = {7};
  inputs_[1] = tensor(y_.as<void>(), ATTNRT_F32, seven);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input y: dim 0 is 7, expected 8 (N, bound to 8 by "
                     "input x)");
  inputs_[1] = tensor(y_.as<void>(), ATTNRT_F32, shape_);
  outputs_[0] = tensor(z_.as<void>(), ATTNRT_F32, seven);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "output z: dim 0 is 7, expected 8 (N, bound to 8 by "
                     "input x)");
  // The first argument binds N, even when the later ones agree with
  // each other.
  outputs_[0] = tensor(z_.as<void>(), ATTNRT_F32, shape_);
  inputs_[0] = tensor(x_.as<void>(), ATTNRT_F32, seven);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input y: dim 0 is 8, expected 7 (N, bound to 7 by "
                     "input x)");
}

TEST_F(AxpyMisuseTest, NonDenseStrides) {
  int64_t two[] = {2}, zero[] = {0}, one[] = {1};
  inputs_[0].strides = two;
  EXPECT_EQ(invoke(), ATTNRT_LAYOUT_MISMATCH);
  EXPECT_EQ(error(), "input x: strides [2] are not dense C order [1]; kernels "
                     "accept dense C order only");
  inputs_[0].strides = one;
  outputs_[0].strides = zero;
  EXPECT_EQ(invoke(), ATTNRT_LAYOUT_MISMATCH);
  EXPECT_EQ(error(), "output z: strides [0] are not dense C order [1]; kernels "
                     "accept dense C order only");
  outputs_[0].strides = one;
  EXPECT_EQ(invoke(), ATTNRT_OK) << error();
}

TEST_F(AxpyMisuseTest, Misalignment) {
  // axpy needs 16-byte alignment; x_ has room for the offset.
  for (size_t offset : {1, 4, 8, 12}) {
    inputs_[0].data = x_.as<char>(offset);
    EXPECT_EQ(invoke(), ATTNRT_LAYOUT_MISMATCH);
    EXPECT_EQ(error(), "input x: data is " + std::to_string(offset) +
                           " bytes past a 16-byte boundary; kernel axpy "
                           "needs 16-byte aligned buffers");
  }
  inputs_[0].data = x_.as<char>(16);
  EXPECT_EQ(invoke(), ATTNRT_OK) << error();
}

TEST_F(AxpyMisuseTest, OutputAliasesInput) {
  outputs_[0].data = inputs_[0].data;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "output z: its memory overlaps input x (outputs must not "
                     "alias inputs or each other)");
  // A partial overlap: z starts 16 bytes into y.
  Buffer both(8 * 4 + 16);
  inputs_[1].data = both.as<void>();
  outputs_[0].data = both.as<char>(16);
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "output z: its memory overlaps input y (outputs must not "
                     "alias inputs or each other)");
  // z ends where a begins: a near miss is fine.
  Buffer adjacent(8 * 4 + 16);
  outputs_[0].data = adjacent.as<void>();
  inputs_[2].data = adjacent.as<char>(32);
  inputs_[1].data = y_.as<void>();
  EXPECT_EQ(invoke(), ATTNRT_OK) << error();
}

TEST_F(AxpyMisuseTest, InputsMayAliasEachOther) {
  for (int i = 0; i < 8; ++i)
    x_.as<float>()[i] = static_cast<float>(i);
  *a_.as<float>() = 2.0f;
  inputs_[1].data = inputs_[0].data;
  ASSERT_EQ(invoke(), ATTNRT_OK) << error();
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(z_.as<float>()[i], 3.0f * static_cast<float>(i));
}

TEST_F(AxpyMisuseTest, ByteSizeOverflow) {
  // N * 4 bytes overflows int64 although N itself fits.
  std::vector<int64_t> huge = {kInt64Max / 2};
  inputs_[0] = tensor(x_.as<void>(), ATTNRT_F32, huge);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input x: shape [4611686018427387903] is too large: its "
                     "byte size overflows int64");
  huge = {kInt64Max};
  inputs_[0] = tensor(x_.as<void>(), ATTNRT_F32, huge);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_THAT(error(), HasSubstr("byte size overflows int64"));
}

TEST_F(AxpyMisuseTest, BufferPastTheEndOfTheAddressSpace) {
  inputs_[0].data = reinterpret_cast<void *>(UINTPTR_MAX - 15);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input x: shape [8] (32 bytes) runs past the end of the "
                     "address space");
}

TEST_F(AxpyMisuseTest, TheFirstProblemIsReported) {
  inputs_[1].dtype = ATTNRT_I32; // y
  inputs_[2].data = nullptr;     // a
  outputs_[0].strides = nullptr;
  outputs_[0].data = inputs_[0].data; // z aliases x
  EXPECT_EQ(invoke(), ATTNRT_DTYPE_MISMATCH);
  EXPECT_EQ(error(), "input y: dtype is i32, expected f32");
  inputs_[1].dtype = ATTNRT_F32;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "input a: data is null");
  // Within one argument: data, then dtype, then rank.
  std::vector<int64_t> two = {1, 1};
  inputs_[2] = tensor(nullptr, ATTNRT_BOOL, two);
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "input a: data is null");
  inputs_[2].data = a_.as<void>();
  EXPECT_EQ(invoke(), ATTNRT_DTYPE_MISMATCH);
  inputs_[2].dtype = ATTNRT_F32;
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input a: rank is 2, expected 1 (shape [1])");
}

TEST_F(AxpyMisuseTest, LastErrorStaysUntilTheNextFailure) {
  inputs_[0].data = nullptr;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  inputs_[0].data = x_.as<void>();
  EXPECT_EQ(invoke(), ATTNRT_OK);
  // "The message of the last call on this context that failed".
  EXPECT_EQ(error(), "input x: data is null");
  outputs_[0].data = nullptr;
  EXPECT_EQ(invoke(), ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(error(), "output z: data is null");
}

TEST_F(AxpyMisuseTest, LongNamesAreCutShortNotOverrun) {
  std::string long_name(5000, 'q');
  const attnrt_arg_info inputs[] = {
      {long_name.c_str(), ATTNRT_F32, 1, fake_axpy_kernel.inputs[0].dims},
      fake_axpy_kernel.inputs[1],
      fake_axpy_kernel.inputs[2]};
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.inputs = inputs;
  kernel.name = long_name.c_str();
  inputs_[0].data = nullptr;
  EXPECT_EQ(invoke(&kernel), ATTNRT_INVALID_ARGUMENT);
  EXPECT_THAT(error(), HasSubstr("input qqqq"));
  EXPECT_LT(error().size(), 1024u);
  ASSERT_EQ(attnrt_register_kernel(context_.get(), &kernel), ATTNRT_OK);
  const attnrt_kernel *found = nullptr;
  EXPECT_EQ(attnrt_find_kernel(context_.get(), long_name.c_str(), &found),
            ATTNRT_OK);
  EXPECT_EQ(found, &kernel);
  EXPECT_EQ(
      attnrt_find_kernel(context_.get(), (long_name + "x").c_str(), &found),
      ATTNRT_NOT_FOUND);
  EXPECT_THAT(error(), ::testing::StartsWith("no kernel named 'qqqq"));
  EXPECT_EQ(error().size(), 1023u); // cut short at the buffer's end
}

TEST_F(AxpyMisuseTest, UnnamedArgumentsAreNamedByIndex) {
  const attnrt_arg_info inputs[] = {
      {nullptr, ATTNRT_F32, 1, fake_axpy_kernel.inputs[0].dims},
      {"", ATTNRT_F32, 1, fake_axpy_kernel.inputs[1].dims},
      fake_axpy_kernel.inputs[2]};
  attnrt_kernel kernel = fake_axpy_kernel;
  kernel.inputs = inputs;
  std::vector<int64_t> seven = {7};
  inputs_[1] = tensor(y_.as<void>(), ATTNRT_F32, seven);
  EXPECT_EQ(invoke(&kernel), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(error(), "input 1: dim 0 is 7, expected 8 (N, bound to 8 by "
                     "input 0)");
}

TEST(RowsMisuseTest, RunTimeDimsAcrossArgumentsAndFixedDims) {
  Context context(4);
  Buffer q(4096), k(4096), bias(4096), scale(64), o(4096);
  std::vector<int64_t> btc = {2, 3, 4}, tt = {3};
  attnrt_tensor inputs[] = {tensor(q.as<void>(), ATTNRT_F32, btc),
                            tensor(k.as<void>(), ATTNRT_F32, btc),
                            tensor(bias.as<void>(), ATTNRT_I32, tt),
                            tensor(scale.as<void>(), ATTNRT_F32, {})};
  attnrt_tensor outputs[] = {tensor(o.as<void>(), ATTNRT_F32, btc)};
  auto invoke = [&] {
    return attnrt_invoke(context.get(), &fake_rows_kernel, inputs, 4, outputs,
                         1);
  };
  ASSERT_EQ(invoke(), ATTNRT_OK) << context.error();

  std::vector<int64_t> k_shape = {2, 5, 4};
  inputs[1] = tensor(k.as<void>(), ATTNRT_F32, k_shape);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(context.error(), "input k: dim 1 is 5, expected 3 (T, bound to 3 "
                             "by input q)");
  inputs[1] = tensor(k.as<void>(), ATTNRT_F32, btc);

  std::vector<int64_t> bias_shape = {4};
  inputs[2] = tensor(bias.as<void>(), ATTNRT_I32, bias_shape);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(context.error(), "input bias: dim 0 is 4, expected 3 (T, bound to "
                             "3 by input q)");
  inputs[2] = tensor(bias.as<void>(), ATTNRT_I32, tt);

  std::vector<int64_t> o_shape = {1, 3, 4};
  outputs[0] = tensor(o.as<void>(), ATTNRT_F32, o_shape);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(context.error(), "output o: dim 0 is 1, expected 2 (B, bound to 2 "
                             "by input q)");
  outputs[0] = tensor(o.as<void>(), ATTNRT_F32, btc);

  std::vector<int64_t> q_shape = {2, 3, 5};
  inputs[0] = tensor(q.as<void>(), ATTNRT_F32, q_shape);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(context.error(), "input q: dim 2 is 5, expected 4 (shape [2, 3, "
                             "5], expected [B, T, 4])");
  inputs[0] = tensor(q.as<void>(), ATTNRT_F32, btc);

  std::vector<int64_t> scale_shape = {1};
  inputs[3] = tensor(scale.as<void>(), ATTNRT_F32, scale_shape);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(context.error(), "input scale: rank is 1, expected 0 (shape [])");
  inputs[3] = tensor(scale.as<void>(), ATTNRT_F32, {});

  int64_t transposed[] = {12, 1, 3};
  inputs[1].strides = transposed;
  EXPECT_EQ(invoke(), ATTNRT_LAYOUT_MISMATCH);
  EXPECT_EQ(context.error(), "input k: strides [12, 1, 3] are not dense C "
                             "order [12, 4, 1]; kernels accept dense C order "
                             "only");
  inputs[1].strides = nullptr;

  // The element count itself overflows int64.
  std::vector<int64_t> huge = {int64_t{1} << 32, int64_t{1} << 32, 4};
  inputs[0] = tensor(q.as<void>(), ATTNRT_F32, huge);
  EXPECT_EQ(invoke(), ATTNRT_SHAPE_MISMATCH);
  EXPECT_EQ(context.error(), "input q: shape [4294967296, 4294967296, 4] is "
                             "too large: its byte size overflows int64");
  inputs[0] = tensor(q.as<void>(), ATTNRT_F32, btc);
  ASSERT_EQ(invoke(), ATTNRT_OK) << context.error();
}

TEST(CoverMisuseTest, OutputsMustNotOverlapEachOther) {
  Context context(2);
  Buffer hits(64 * 4);
  std::vector<int64_t> n = {64};
  attnrt_tensor outputs[] = {tensor(hits.as<void>(), ATTNRT_I32, n),
                             tensor(hits.as<char>(128), ATTNRT_I32, n)};
  EXPECT_EQ(
      attnrt_invoke(context.get(), &fake_cover_kernel, nullptr, 0, outputs, 2),
      ATTNRT_INVALID_ARGUMENT);
  EXPECT_EQ(context.error(), "output thread: its memory overlaps output hits "
                             "(outputs must not alias inputs or each other)");
}

/// Random garbage in every field but the pointers: always a status, never a
/// crash, and a message whenever the status is not ATTNRT_OK.
TEST(FuzzTest, GarbageShapesNeverCrash) {
  Context context(2);
  Buffer q(4096), k(4096), bias(4096), scale(64), o(4096);
  const int64_t dims[] = {-5,
                          -1,
                          0,
                          1,
                          2,
                          3,
                          4,
                          5,
                          int64_t{1} << 31,
                          int64_t{1} << 40,
                          kInt64Max,
                          std::numeric_limits<int64_t>::min()};
  std::mt19937 random(1234);
  auto pick = [&](size_t n) {
    return std::uniform_int_distribution<size_t>(0, n - 1)(random);
  };
  int ok = 0;
  for (int iteration = 0; iteration < 20000; ++iteration) {
    int64_t shapes[5][4], strides[5][4];
    attnrt_tensor tensors[5];
    void *data[5] = {q.as<void>(), k.as<void>(), bias.as<void>(),
                     scale.as<void>(), o.as<void>()};
    const int32_t ranks[5] = {3, 3, 1, 0, 3};
    for (int t = 0; t < 5; ++t) {
      // Mostly valid values, so that runs get deep into the checks.
      for (int d = 0; d < 4; ++d) {
        shapes[t][d] = pick(4) ? 1 + static_cast<int64_t>(pick(3))
                               : dims[pick(std::size(dims))];
        strides[t][d] = dims[pick(std::size(dims))];
      }
      if (ranks[t] == 3 && pick(2))
        shapes[t][2] = 4;
      tensors[t].data = pick(30) ? data[t] : nullptr;
      fake_set_raw_dtype(&tensors[t], pick(10)
                                          ? (t == 2 ? ATTNRT_I32 : ATTNRT_F32)
                                          : static_cast<int>(pick(7)) - 1);
      tensors[t].rank = pick(10) ? ranks[t] : static_cast<int32_t>(pick(5));
      tensors[t].shape = pick(30) ? shapes[t] : nullptr;
      tensors[t].strides = pick(10) ? nullptr : strides[t];
    }
    attnrt_status status = attnrt_invoke(context.get(), &fake_rows_kernel,
                                         tensors, 4, tensors + 4, 1);
    ASSERT_GE(status, ATTNRT_OK);
    ASSERT_LE(status, ATTNRT_INTERNAL);
    if (status == ATTNRT_OK) {
      ++ok;
    } else {
      // Names the argument at fault.
      std::string error = context.error();
      ASSERT_TRUE(error.rfind("input ", 0) == 0 ||
                  error.rfind("output ", 0) == 0)
          << error;
    }
  }
  EXPECT_GT(ok, 0);
}

//===-- Kernel failures ---------------------------------------------------===//

TEST(KernelFailureTest, MapsTheEntryStatus) {
  Context context(4);
  Buffer x(16), y(16);
  std::vector<int64_t> four = {4};
  attnrt_tensor inputs[] = {tensor(x.as<void>(), ATTNRT_F32, four)};
  attnrt_tensor outputs[] = {tensor(y.as<void>(), ATTNRT_F32, four)};
  const struct {
    int32_t returned;
    attnrt_status status;
    const char *message;
  } cases[] = {
      {ATTNRT_OUT_OF_MEMORY, ATTNRT_OUT_OF_MEMORY,
       "kernel fail failed: ATTNRT_OUT_OF_MEMORY"},
      {ATTNRT_UNAVAILABLE, ATTNRT_UNAVAILABLE,
       "kernel fail failed: ATTNRT_UNAVAILABLE"},
      {ATTNRT_SHAPE_MISMATCH, ATTNRT_SHAPE_MISMATCH,
       "kernel fail failed: ATTNRT_SHAPE_MISMATCH"},
      {ATTNRT_INTERNAL, ATTNRT_INTERNAL, "kernel fail failed: ATTNRT_INTERNAL"},
      {99, ATTNRT_INTERNAL,
       "kernel fail failed: status 99 (not an attnrt_status, reported as "
       "ATTNRT_INTERNAL)"},
      {-1, ATTNRT_INTERNAL,
       "kernel fail failed: status -1 (not an attnrt_status, reported as "
       "ATTNRT_INTERNAL)"},
  };
  for (const auto &c : cases) {
    fake_fail_status = c.returned;
    EXPECT_EQ(
        attnrt_invoke(context.get(), &fake_fail_kernel, inputs, 1, outputs, 1),
        c.status);
    EXPECT_EQ(context.error(), c.message);
  }
  fake_fail_status = ATTNRT_OK;
  EXPECT_EQ(
      attnrt_invoke(context.get(), &fake_fail_kernel, inputs, 1, outputs, 1),
      ATTNRT_OK);
  fake_fail_status = ATTNRT_OUT_OF_MEMORY;
}

/// The fake kernel that succeeds, named `name` and compiled for `target`,
/// invoked once on `context`.
attnrt_status invokeTargeted(Context &context, const char *name,
                             const char *target) {
  attnrt_kernel kernel = fake_fail_kernel;
  kernel.name = name;
  kernel.target = target;
  Buffer x(16), y(16);
  std::vector<int64_t> four = {4};
  attnrt_tensor inputs[] = {tensor(x.as<void>(), ATTNRT_F32, four)};
  attnrt_tensor outputs[] = {tensor(y.as<void>(), ATTNRT_F32, four)};
  fake_fail_status = ATTNRT_OK;
  attnrt_status status =
      attnrt_invoke(context.get(), &kernel, inputs, 1, outputs, 1);
  fake_fail_status = ATTNRT_OUT_OF_MEMORY;
  return status;
}

// A kernel for x86-64-amx runs only once Linux granted the process the AMX
// tile state; where the CPU has no AMX that is refused, and the kernel is
// never entered (its first tile instruction would raise SIGILL).
TEST(KernelFailureTest, AmxKernelNeedsTheTileState) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  bool amx = false;
  while (std::getline(cpuinfo, line))
    if (line.rfind("flags", 0) == 0) {
      amx = line.find(" amx_tile") != std::string::npos;
      break;
    }
  Context context(1);
  attnrt_status status = invokeTargeted(context, "tiles", "x86-64-amx");
  if (amx) {
    EXPECT_EQ(status, ATTNRT_OK) << context.error();
    return;
  }
  EXPECT_EQ(status, ATTNRT_UNAVAILABLE);
  EXPECT_THAT(context.error(),
              ::testing::StartsWith("kernel tiles targets x86-64-amx, and "
                                    "Linux did not grant this process the "
                                    "AMX tile state"));
}

// Tests that a host kernel runs whether or not Linux grants the tile state
// (the runtime asks for it, as the kernel uses the tiles where the CPU that
// compiled it had AMX, and a refusal is no error for it).
TEST(KernelFailureTest, HostKernelRunsWithOrWithoutTheTileState) {
  Context context(1);
  attnrt_status status = invokeTargeted(context, "native", "host");
  EXPECT_EQ(status, ATTNRT_OK) << context.error();
}

//===-- The entry point's view --------------------------------------------===//

/// Runs the probe kernel on N = n with `hook` as its body.
class ProbeTest : public ::testing::TestWithParam<size_t> {
protected:
  attnrt_status run(fake_probe_fn hook, int64_t n = 16) {
    fake_probe_hook = hook;
    fake_probe_calls = 0;
    x_ = std::make_unique<Buffer>(n * 4);
    y_ = std::make_unique<Buffer>(n * 4);
    shape_ = {n};
    attnrt_tensor inputs[] = {tensor(x_->as<void>(), ATTNRT_I32, shape_)};
    attnrt_tensor outputs[] = {tensor(y_->as<void>(), ATTNRT_I32, shape_)};
    attnrt_status status = attnrt_invoke(context_.get(), &fake_probe_kernel,
                                         inputs, 1, outputs, 1);
    fake_probe_hook = nullptr;
    return status;
  }
  void TearDown() override { fake_probe_hook = nullptr; }

  Context context_{GetParam()};
  std::unique_ptr<Buffer> x_, y_;
  std::vector<int64_t> shape_;
};

// What the hooks (captureless, so plain C function pointers) look at.
std::atomic<int> gCalls[64 * 64];

TEST_P(ProbeTest, EntryGetsTheDimsAndTheBuffers) {
  static int64_t seen_n;
  static void *seen[2];
  ASSERT_EQ(run(
                [](attnrt_invocation *, const int64_t *dims,
                   void *const *buffers) -> int32_t {
                  seen_n = dims[0];
                  seen[0] = buffers[0];
                  seen[1] = buffers[1];
                  return ATTNRT_OK;
                },
                37),
            ATTNRT_OK);
  EXPECT_EQ(fake_probe_calls, 1);
  EXPECT_EQ(seen_n, 37);
  EXPECT_EQ(seen[0], x_->as<void>());
  EXPECT_EQ(seen[1], y_->as<void>());
}

TEST_P(ProbeTest, EntryIsNotCalledWhenValidationFails) {
  fake_probe_calls = 0;
  Buffer x(64);
  std::vector<int64_t> n = {4};
  attnrt_tensor inputs[] = {tensor(x.as<void>(), ATTNRT_I32, n)};
  attnrt_tensor outputs[] = {tensor(x.as<void>(), ATTNRT_I32, n)};
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_probe_kernel, inputs, 1, outputs, 1),
      ATTNRT_INVALID_ARGUMENT);
  inputs[0].dtype = ATTNRT_F32;
  EXPECT_EQ(
      attnrt_invoke(context_.get(), &fake_probe_kernel, inputs, 1, outputs, 1),
      ATTNRT_DTYPE_MISMATCH);
  EXPECT_EQ(fake_probe_calls, 0);
}

TEST_P(ProbeTest, ParallelForWithNothingToDo) {
  ASSERT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                   void *const *) -> int32_t {
              auto fail = [](void *, int64_t) { std::abort(); };
              attnrt_parallel_for(invocation, 0, fail, nullptr);
              attnrt_parallel_for(invocation, -5, fail, nullptr);
              attnrt_parallel_for(invocation,
                                  std::numeric_limits<int64_t>::min(), fail,
                                  nullptr);
              attnrt_parallel_for(invocation, 10, nullptr, nullptr);
              return ATTNRT_OK;
            }),
            ATTNRT_OK);
}

TEST_P(ProbeTest, ParallelForCoversEveryIndexOnce) {
  for (int64_t count : {1, 2, 3, 7, 64, 1000, 4096}) {
    SCOPED_TRACE(count);
    static int64_t gCount;
    gCount = count;
    for (auto &c : gCalls)
      c = 0;
    ASSERT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                     void *const *) -> int32_t {
                attnrt_parallel_for(
                    invocation, gCount,
                    [](void *closure, int64_t i) {
                      EXPECT_EQ(closure, &gCalls);
                      static_cast<std::atomic<int> *>(closure)[i]++;
                    },
                    &gCalls);
                return ATTNRT_OK;
              }),
              ATTNRT_OK);
    for (int64_t i = 0; i < 64 * 64; ++i)
      ASSERT_EQ(gCalls[i].load(), i < count ? 1 : 0) << "index " << i;
  }
}

TEST_P(ProbeTest, NestedParallelForRunsEveryPairOnce) {
  for (auto &c : gCalls)
    c = 0;
  ASSERT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                   void *const *) -> int32_t {
              struct Outer {
                attnrt_invocation *invocation;
              } outer{invocation};
              attnrt_parallel_for(
                  invocation, 64,
                  [](void *closure, int64_t i) {
                    static thread_local int64_t row;
                    row = i;
                    attnrt_parallel_for(
                        static_cast<Outer *>(closure)->invocation, 64,
                        [](void *, int64_t j) { gCalls[row * 64 + j]++; },
                        nullptr);
                  },
                  &outer);
              return ATTNRT_OK;
            }),
            ATTNRT_OK);
  for (int i = 0; i < 64 * 64; ++i)
    ASSERT_EQ(gCalls[i].load(), 1) << "pair " << i;
}

TEST_P(ProbeTest, AllocateIsAlignedDistinctAndWritable) {
  ASSERT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                   void *const *) -> int32_t {
              std::set<void *> seen;
              for (int64_t bytes : {0, 1, 7, 63, 64, 65, 4096, 1 << 20, 0}) {
                void *p = attnrt_allocate(invocation, bytes);
                EXPECT_NE(p, nullptr) << bytes;
                if (!p)
                  return ATTNRT_OUT_OF_MEMORY;
                EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
                EXPECT_TRUE(seen.insert(p).second) << bytes;
                std::memset(p, 0xab, static_cast<size_t>(bytes));
              }
              return ATTNRT_OK;
            }),
            ATTNRT_OK);
}

TEST_P(ProbeTest, AllocateRefusesWhatItCannotGive) {
  ASSERT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                   void *const *) -> int32_t {
              EXPECT_EQ(attnrt_allocate(invocation, -1), nullptr);
              EXPECT_EQ(attnrt_allocate(invocation,
                                        std::numeric_limits<int64_t>::min()),
                        nullptr);
              EXPECT_EQ(attnrt_allocate(invocation, kInt64Max), nullptr);
              EXPECT_EQ(attnrt_allocate(invocation, kInt64Max - 64), nullptr);
              EXPECT_EQ(attnrt_allocate(nullptr, 64), nullptr);
              return ATTNRT_OK;
            }),
            ATTNRT_OK);
}

TEST_P(ProbeTest, AllocationFailureBecomesOutOfMemory) {
  // 1 PiB: more than the address space of x86-64 user space (128 TiB).
  EXPECT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                   void *const *) -> int32_t {
              return attnrt_allocate(invocation, int64_t{1} << 50)
                         ? ATTNRT_OK
                         : ATTNRT_OUT_OF_MEMORY;
            }),
            ATTNRT_OUT_OF_MEMORY);
  EXPECT_EQ(context_.error(), "kernel probe failed: ATTNRT_OUT_OF_MEMORY");
}

TEST_P(ProbeTest, AllocateFromManyTasksAtOnce) {
  ASSERT_EQ(run([](attnrt_invocation *invocation, const int64_t *,
                   void *const *) -> int32_t {
              static std::atomic<int> misaligned, failed;
              misaligned = 0;
              failed = 0;
              attnrt_parallel_for(
                  invocation, 2000,
                  [](void *closure, int64_t i) {
                    auto *inv = static_cast<attnrt_invocation *>(closure);
                    void *p = attnrt_allocate(inv, 8 * (i % 100));
                    if (!p)
                      ++failed;
                    else if (reinterpret_cast<uintptr_t>(p) % 64)
                      ++misaligned;
                    else
                      std::memset(p, static_cast<int>(i), 8 * (i % 100));
                  },
                  invocation);
              EXPECT_EQ(failed.load(), 0);
              EXPECT_EQ(misaligned.load(), 0);
              return ATTNRT_OK;
            }),
            ATTNRT_OK);
}

INSTANTIATE_TEST_SUITE_P(Threads, ProbeTest, ::testing::Values(1, 4),
                         [](const auto &info) {
                           return std::to_string(info.param) + "Threads";
                         });

TEST(ParallelForTest, RunsInlineWithoutAnInvocation) {
  // Generated code called outside attnrt_invoke (e.g. by a unit test).
  static int calls[5];
  std::fill(std::begin(calls), std::end(calls), 0);
  attnrt_parallel_for(
      nullptr, 5, [](void *, int64_t i) { calls[i]++; }, nullptr);
  for (int c : calls)
    EXPECT_EQ(c, 1);
}

//===-- Coverage across threads (the C cover kernel) ----------------------===//

/// The ids of the threads that ran the cover kernel's n indices.
std::set<int32_t> runCoverOn(attnrt_context *context, int64_t n) {
  Buffer hits(n * 4), thread(n * 4);
  std::vector<int64_t> shape = {n};
  attnrt_tensor outputs[] = {tensor(hits.as<void>(), ATTNRT_I32, shape),
                             tensor(thread.as<void>(), ATTNRT_I32, shape)};
  EXPECT_EQ(attnrt_invoke(context, &fake_cover_kernel, nullptr, 0, outputs, 2),
            ATTNRT_OK)
      << attnrt_context_last_error(context);
  std::set<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(hits.as<int32_t>()[i], 1) << "index " << i;
    ids.insert(thread.as<int32_t>()[i]);
  }
  return ids;
}

std::set<int32_t> runCover(size_t threads, int64_t n) {
  Context context(threads);
  EXPECT_EQ(context.status(), ATTNRT_OK);
  return runCoverOn(context.get(), n);
}

TEST(ParallelForTest, EveryIndexExactlyOnceUnderFourThreads) {
  std::set<int32_t> ids = runCover(4, 10007);
  EXPECT_GE(ids.size(), 2u) << "the work ran on one thread only";
  EXPECT_LE(ids.size(), 4u);
}

TEST(ParallelForTest, OneThreadRunsInline) {
  EXPECT_EQ(runCover(1, 1000).size(), 1u);
}

//===-- A caller's thread pool --------------------------------------------===//

struct PoolDeleter {
  void operator()(pthreadpool *pool) const { pthreadpool_destroy(pool); }
};
using Pool = std::unique_ptr<pthreadpool, PoolDeleter>;

/// The threads that ran tasks of recordThreads, with a little work each so
/// that the pool's workers wake up before the range is done.
std::mutex gThreadsMutex;
std::set<std::thread::id> gThreads;

void recordThread() {
  volatile uint32_t sink = 1;
  for (int k = 0; k < 2000; ++k)
    sink = sink * 1664525u + 1013904223u;
  std::lock_guard<std::mutex> lock(gThreadsMutex);
  gThreads.insert(std::this_thread::get_id());
}

TEST(ThreadPoolTest, KernelsRunOnTheCallersPool) {
  // 3 threads: not what a context of threads = 0 would make on its own here.
  Pool pool(pthreadpool_create(3));
  ASSERT_NE(pool, nullptr);
  ASSERT_EQ(pthreadpool_get_threads_count(pool.get()), 3u);
  gThreads.clear();
  pthreadpool_parallelize_1d(
      pool.get(), [](void *, size_t) { recordThread(); }, nullptr, 20000, 0);
  const std::set<std::thread::id> poolThreads = gThreads;

  for (size_t threads : {0, 3}) { // 0: the pool's count
    attnrt_context_options options;
    attnrt_context_options_initialize(&options);
    options.threads = threads;
    options.thread_pool = pool.get();
    attnrt_context *context = nullptr;
    ASSERT_EQ(attnrt_context_create(&options, &context), ATTNRT_OK);
    EXPECT_EQ(attnrt_context_threads(context), 3u);
    // The tasks run on the pool's threads (this one among them), no other.
    gThreads.clear();
    fake_probe_hook = [](attnrt_invocation *invocation, const int64_t *,
                         void *const *) -> int32_t {
      if (attnrt_invocation_threads(invocation) != 3)
        return ATTNRT_INTERNAL;
      attnrt_parallel_for(
          invocation, 20000, [](void *, int64_t) { recordThread(); }, nullptr);
      return ATTNRT_OK;
    };
    int32_t x[4] = {}, y[4] = {};
    std::vector<int64_t> shape = {4};
    attnrt_tensor inputs[] = {tensor(x, ATTNRT_I32, shape)};
    attnrt_tensor outputs[] = {tensor(y, ATTNRT_I32, shape)};
    EXPECT_EQ(attnrt_invoke(context, &fake_probe_kernel, inputs, 1, outputs, 1),
              ATTNRT_OK);
    fake_probe_hook = nullptr;
    for (std::thread::id id : gThreads)
      EXPECT_TRUE(poolThreads.count(id) || id == std::this_thread::get_id());
    EXPECT_GE(gThreads.size(), 1u);
    EXPECT_LE(runCoverOn(context, 10007).size(), 3u);
    attnrt_context_release(context);
  }
  // Not the context's to destroy: it still runs work.
  static std::atomic<int> calls;
  calls = 0;
  pthreadpool_parallelize_1d(
      pool.get(), [](void *, size_t) { ++calls; }, nullptr, 100, 0);
  EXPECT_EQ(calls.load(), 100);
}

TEST(ThreadPoolTest, TwoContextsShareOnePool) {
  Pool pool(pthreadpool_create(2));
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  options.thread_pool = pool.get();
  attnrt_context *first = nullptr, *second = nullptr;
  ASSERT_EQ(attnrt_context_create(&options, &first), ATTNRT_OK);
  ASSERT_EQ(attnrt_context_create(&options, &second), ATTNRT_OK);
  attnrt_context_release(first);
  EXPECT_LE(runCoverOn(second, 1000).size(), 2u); // every index once
  attnrt_context_release(second);
}

TEST(ThreadPoolTest, APoolOfOneThreadRunsInline) {
  Pool pool(pthreadpool_create(1));
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  options.thread_pool = pool.get();
  attnrt_context *context = nullptr;
  ASSERT_EQ(attnrt_context_create(&options, &context), ATTNRT_OK);
  EXPECT_EQ(attnrt_context_threads(context), 1u);
  EXPECT_EQ(runCoverOn(context, 1000).size(), 1u);
  attnrt_context_release(context);
}

TEST(ThreadPoolTest, ThreadsMustMatchThePool) {
  Pool pool(pthreadpool_create(2));
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  options.thread_pool = pool.get();
  for (size_t threads : {size_t{1}, size_t{3}, size_t{1025}}) {
    options.threads = threads;
    attnrt_context *context = reinterpret_cast<attnrt_context *>(0x1);
    EXPECT_EQ(attnrt_context_create(&options, &context),
              ATTNRT_INVALID_ARGUMENT)
        << threads;
    EXPECT_EQ(context, nullptr);
  }
}

//===-- A caller's allocator ----------------------------------------------===//

/// Counts calls and live bytes (thread-safe); fails every allocation while
/// `fail` is set. Each block carries its size in front of the caller's
/// bytes.
class CountingAllocator {
public:
  attnrt_allocator get() { return {this, &allocate, &release}; }

  std::atomic<long> allocations{0}, releases{0}, live_bytes{0},
      bad_alignment{0};
  std::atomic<bool> fail{false};

  long live_blocks() const { return allocations - releases; }

private:
  static constexpr size_t kHeader = 4096; // the largest alignment allowed

  static void *allocate(void *self, size_t bytes, size_t alignment) {
    auto *counter = static_cast<CountingAllocator *>(self);
    if (alignment == 0 || (alignment & (alignment - 1)) || alignment > 4096)
      ++counter->bad_alignment;
    if (counter->fail || bytes > (size_t{1} << 40))
      return nullptr;
    char *base = static_cast<char *>(
        std::aligned_alloc(kHeader, kHeader + (bytes + 4095) / 4096 * 4096));
    if (!base)
      return nullptr;
    std::memcpy(base, &bytes, sizeof bytes);
    ++counter->allocations;
    counter->live_bytes += static_cast<long>(bytes);
    return base + kHeader;
  }
  static void release(void *self, void *pointer) {
    auto *counter = static_cast<CountingAllocator *>(self);
    EXPECT_NE(pointer, nullptr);
    char *base = static_cast<char *>(pointer) - kHeader;
    size_t bytes;
    std::memcpy(&bytes, base, sizeof bytes);
    ++counter->releases;
    counter->live_bytes -= static_cast<long>(bytes);
    std::free(base);
  }
};

/// A context on `allocator`, released at the end of the test.
class AllocatorContext {
public:
  AllocatorContext(CountingAllocator &allocator, size_t threads = 1) {
    attnrt_context_options options;
    attnrt_context_options_initialize(&options);
    options.threads = threads;
    options.allocator = allocator.get();
    status_ = attnrt_context_create(&options, &context_);
  }
  ~AllocatorContext() { attnrt_context_release(context_); }
  AllocatorContext(const AllocatorContext &) = delete;
  AllocatorContext &operator=(const AllocatorContext &) = delete;

  attnrt_status status() const { return status_; }
  attnrt_context *get() const { return context_; }

  /// The scratch kernel on N = n, seed `seed`; checks y.
  attnrt_status scratch(int64_t n, int32_t seed = 7) const {
    std::vector<int32_t> y(static_cast<size_t>(n), 0);
    std::vector<int64_t> one = {1}, shape = {n};
    attnrt_tensor inputs[] = {tensor(&seed, ATTNRT_I32, one)};
    attnrt_tensor outputs[] = {tensor(y.data(), ATTNRT_I32, shape)};
    attnrt_status status =
        attnrt_invoke(context_, &fake_scratch_kernel, inputs, 1, outputs, 1);
    for (int64_t i = 0; status == ATTNRT_OK && i < n; ++i)
      if (static_cast<uint32_t>(y[i]) !=
          static_cast<uint32_t>(seed) + static_cast<uint32_t>(i))
        return ATTNRT_INTERNAL;
    return status;
  }

private:
  attnrt_context *context_ = nullptr;
  attnrt_status status_;
};

TEST(AllocatorTest, SeesEveryAllocationOfTheContext) {
  CountingAllocator allocator;
  {
    AllocatorContext context(allocator, 4);
    ASSERT_EQ(context.status(), ATTNRT_OK);
    EXPECT_EQ(allocator.allocations.load(), 1); // the context
    // The registry, grown twice over.
    std::vector<attnrt_kernel> kernels(20, fake_axpy_kernel);
    std::vector<std::string> names;
    for (size_t i = 0; i < kernels.size(); ++i)
      names.push_back("k" + std::to_string(i));
    for (size_t i = 0; i < kernels.size(); ++i) {
      kernels[i].name = names[i].c_str();
      ASSERT_EQ(attnrt_register_kernel(context.get(), &kernels[i]), ATTNRT_OK);
    }
    long registered = allocator.allocations;
    EXPECT_GE(registered, 3);
    EXPECT_EQ(allocator.live_blocks(), 2); // the context and its registry
    // Scratch: three blocks.
    ASSERT_EQ(context.scratch(1000), ATTNRT_OK);
    EXPECT_EQ(allocator.allocations.load(), registered + 3);
    EXPECT_EQ(allocator.live_blocks(), 5); // kept for the next invoke
    EXPECT_GT(allocator.live_bytes.load(), 2 * 4000);
  }
  EXPECT_EQ(allocator.live_bytes.load(), 0);
  EXPECT_EQ(allocator.live_blocks(), 0);
  EXPECT_EQ(allocator.bad_alignment.load(), 0);
}

TEST(AllocatorTest, ArgumentBookkeepingBeyondTheStackToo) {
  // 300 run-time dims need more than attnrt_invoke's 4 KiB on the stack.
  constexpr int kRank = 300;
  static std::vector<std::string> names;
  static std::vector<const char *> dim_names;
  static std::vector<int64_t> dims;
  names.clear();
  dim_names.clear();
  dims.clear();
  for (int d = 0; d < kRank; ++d)
    names.push_back("D" + std::to_string(d));
  for (int d = 0; d < kRank; ++d) {
    dim_names.push_back(names[d].c_str());
    dims.push_back(-d - 1);
  }
  attnrt_arg_info inputs[] = {{"x", ATTNRT_I32, kRank, dims.data()}};
  attnrt_arg_info outputs[] = {{"y", ATTNRT_I32, kRank, dims.data()}};
  attnrt_kernel kernel = fake_probe_kernel;
  kernel.name = "wide";
  kernel.num_dims = kRank;
  kernel.dim_names = dim_names.data();
  kernel.inputs = inputs;
  kernel.outputs = outputs;

  CountingAllocator allocator;
  {
    AllocatorContext context(allocator);
    ASSERT_EQ(context.status(), ATTNRT_OK);
    std::vector<int64_t> shape(kRank, 1);
    int32_t x = 1, y = 0;
    attnrt_tensor in[] = {tensor(&x, ATTNRT_I32, shape)};
    attnrt_tensor out[] = {tensor(&y, ATTNRT_I32, shape)};
    fake_probe_hook = nullptr;
    long before = allocator.allocations;
    ASSERT_EQ(attnrt_invoke(context.get(), &kernel, in, 1, out, 1), ATTNRT_OK)
        << attnrt_context_last_error(context.get());
    EXPECT_EQ(allocator.allocations.load(), before + 1);
    EXPECT_EQ(allocator.live_blocks(), 1); // given back at once

    allocator.fail = true;
    EXPECT_EQ(attnrt_invoke(context.get(), &kernel, in, 1, out, 1),
              ATTNRT_OUT_OF_MEMORY);
    EXPECT_EQ(std::string(attnrt_context_last_error(context.get())),
              "kernel wide: out of memory validating its arguments");
    allocator.fail = false;
  }
  EXPECT_EQ(allocator.live_bytes.load(), 0);
}

TEST(AllocatorTest, HalfAnAllocatorIsRefused) {
  CountingAllocator allocator;
  attnrt_context_options options;
  attnrt_context_options_initialize(&options);
  for (int half = 0; half < 2; ++half) {
    options.allocator = allocator.get();
    if (half)
      options.allocator.release = nullptr;
    else
      options.allocator.allocate = nullptr;
    attnrt_context *context = reinterpret_cast<attnrt_context *>(0x1);
    EXPECT_EQ(attnrt_context_create(&options, &context),
              ATTNRT_INVALID_ARGUMENT);
    EXPECT_EQ(context, nullptr);
  }
  EXPECT_EQ(allocator.allocations.load(), 0);
}

TEST(AllocatorTest, OutOfMemoryIsReported) {
  CountingAllocator allocator;
  allocator.fail = true;
  {
    AllocatorContext context(allocator);
    EXPECT_EQ(context.status(), ATTNRT_OUT_OF_MEMORY);
    EXPECT_EQ(context.get(), nullptr);
  }
  allocator.fail = false;
  {
    AllocatorContext context(allocator, 2);
    ASSERT_EQ(context.status(), ATTNRT_OK);
    allocator.fail = true;
    EXPECT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
              ATTNRT_OUT_OF_MEMORY);
    EXPECT_EQ(context.scratch(100), ATTNRT_OUT_OF_MEMORY);
    EXPECT_EQ(std::string(attnrt_context_last_error(context.get())),
              "kernel scratch failed: ATTNRT_OUT_OF_MEMORY");
    allocator.fail = false;
    EXPECT_EQ(attnrt_register_kernel(context.get(), &fake_axpy_kernel),
              ATTNRT_OK);
    EXPECT_EQ(context.scratch(100), ATTNRT_OK);
  }
  EXPECT_EQ(allocator.live_bytes.load(), 0);
  EXPECT_EQ(allocator.live_blocks(), 0);
}

//===-- Scratch reuse: the hot path ---------------------------------------===//

TEST(ScratchReuseTest, RepeatedInvokesAllocateNothing) {
  CountingAllocator allocator;
  AllocatorContext context(allocator);
  ASSERT_EQ(context.status(), ATTNRT_OK);
  int32_t seed = 3, y[16];
  std::vector<int64_t> one = {1}, shape = {16};
  attnrt_tensor inputs[] = {tensor(&seed, ATTNRT_I32, one)};
  attnrt_tensor outputs[] = {tensor(y, ATTNRT_I32, shape)};
  ASSERT_EQ(
      attnrt_invoke(context.get(), &fake_scratch_kernel, inputs, 1, outputs, 1),
      ATTNRT_OK);
  const long allocations = allocator.allocations, releases = allocator.releases;
  const long heap = fake_heap_calls();
  EXPECT_EQ(allocations, 1 + 3); // the context, then the kernel's blocks
  int failures = 0;
  for (int i = 1; i < 1000000; ++i)
    failures += attnrt_invoke(context.get(), &fake_scratch_kernel, inputs, 1,
                              outputs, 1) != ATTNRT_OK;
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(allocator.allocations.load(), allocations);
  EXPECT_EQ(allocator.releases.load(), releases);
  EXPECT_EQ(fake_heap_calls(), heap) << "the runtime called the heap";
  EXPECT_EQ(y[15], 3 + 15);

  // Trim gives the cache back; the next invoke fills it again.
  attnrt_context_trim(context.get());
  EXPECT_EQ(allocator.live_blocks(), 1);
  attnrt_context_trim(context.get()); // nothing left: harmless
  attnrt_context_trim(nullptr);
  EXPECT_EQ(allocator.releases.load(), releases + 3);
  ASSERT_EQ(context.scratch(16), ATTNRT_OK);
  EXPECT_EQ(allocator.allocations.load(), allocations + 3);
}

TEST(ScratchReuseTest, TheDefaultAllocatorLeavesTheHeapAloneToo) {
  Context context(1);
  int32_t seed = 3, y[100];
  std::vector<int64_t> one = {1}, shape = {100};
  attnrt_tensor inputs[] = {tensor(&seed, ATTNRT_I32, one)};
  attnrt_tensor outputs[] = {tensor(y, ATTNRT_I32, shape)};
  long heap = fake_heap_calls();
  ASSERT_EQ(
      attnrt_invoke(context.get(), &fake_scratch_kernel, inputs, 1, outputs, 1),
      ATTNRT_OK);
  EXPECT_EQ(fake_heap_calls(), heap + 3); // wrapped: the count works
  heap = fake_heap_calls();
  int failures = 0;
  for (int i = 0; i < 10000; ++i)
    failures += attnrt_invoke(context.get(), &fake_scratch_kernel, inputs, 1,
                              outputs, 1) != ATTNRT_OK;
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(fake_heap_calls(), heap);
}

TEST(ScratchReuseTest, SmallerSizesReuseLargerBlocks) {
  CountingAllocator allocator;
  AllocatorContext context(allocator);
  ASSERT_EQ(context.scratch(5000), ATTNRT_OK);
  const long allocations = allocator.allocations;
  for (int64_t n : {4999, 1000, 17, 1, 5000, 3000})
    ASSERT_EQ(context.scratch(n), ATTNRT_OK) << n;
  EXPECT_EQ(allocator.allocations.load(), allocations);
}

TEST(ScratchReuseTest, GrowingSizesDoNotPileUpBlocks) {
  // Decoding over a growing key sequence asks for a little more each call:
  // the blocks it outgrew go back to the allocator.
  CountingAllocator allocator;
  AllocatorContext context(allocator);
  for (int64_t n = 1; n <= 3000; n += 7) {
    ASSERT_EQ(context.scratch(n), ATTNRT_OK) << n;
    ASSERT_LE(allocator.live_blocks(), 1 + 3) << n;
  }
  EXPECT_GT(allocator.allocations.load(), 50);
}

TEST(ScratchReuseTest, ConcurrentInvokesNeverShareABlock) {
  CountingAllocator allocator;
  {
    AllocatorContext context(allocator, 2);
    ASSERT_EQ(context.status(), ATTNRT_OK);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < 3000; ++i) {
          int64_t n = 64 + 100 * ((i + t) % 7);
          if (context.scratch(n, t * 1000003 + i) != ATTNRT_OK)
            ++failures;
        }
      });
    for (std::thread &thread : threads)
      thread.join();
    EXPECT_EQ(failures.load(), 0);
    // About the blocks of the invokes that ran at once (4 of 3 blocks; a
    // race may add a few), not one per call.
    EXPECT_LE(allocator.live_blocks(), 1 + 2 * 4 * 3);
  }
  EXPECT_EQ(allocator.live_bytes.load(), 0);
  EXPECT_EQ(allocator.live_blocks(), 0);
}

TEST(ScratchReuseTest, ParallelTasksAllocateFromTheCacheAtOnce) {
  // attnrt_allocate from the tasks of one parallel_for, several invokes in
  // a row: blocks of a call are distinct, and come back for the next.
  CountingAllocator allocator;
  AllocatorContext context(allocator, 4);
  static std::atomic<int> duplicates;
  duplicates = 0;
  fake_probe_hook = [](attnrt_invocation *invocation, const int64_t *,
                       void *const *) -> int32_t {
    static void *blocks[256];
    attnrt_parallel_for(
        invocation, 256,
        [](void *closure, int64_t i) {
          auto *inv = static_cast<attnrt_invocation *>(closure);
          blocks[i] = attnrt_allocate(inv, 64 * (i % 5));
        },
        invocation);
    std::set<void *> seen(std::begin(blocks), std::end(blocks));
    if (seen.size() != 256 || seen.count(nullptr))
      ++duplicates;
    return ATTNRT_OK;
  };
  int32_t x[4] = {}, y[4] = {};
  std::vector<int64_t> shape = {4};
  attnrt_tensor inputs[] = {tensor(x, ATTNRT_I32, shape)};
  attnrt_tensor outputs[] = {tensor(y, ATTNRT_I32, shape)};
  for (int round = 0; round < 20; ++round)
    ASSERT_EQ(
        attnrt_invoke(context.get(), &fake_probe_kernel, inputs, 1, outputs, 1),
        ATTNRT_OK);
  fake_probe_hook = nullptr;
  EXPECT_EQ(duplicates.load(), 0);
  // A block is added only when none is cached (all are in use): no more
  // than one call uses at once.
  EXPECT_LE(allocator.live_blocks(), 1 + 256);
}

} // namespace

// attnrt_scratch_allocate / attnrt_scratch_release: aligned, reused by the
// same thread (what keeps per-call allocations from faulting in pages), and
// safe from many threads at once.
TEST(ScratchTest, AlignedAndReusedBySameThread) {
  void *first = attnrt_scratch_allocate(100000);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  std::memset(first, 1, 100000);
  attnrt_scratch_release(first);
  // The cached block serves any size up to its own.
  void *again = attnrt_scratch_allocate(99000);
  EXPECT_EQ(again, first);
  // A larger request cannot use it.
  void *larger = attnrt_scratch_allocate(200000);
  ASSERT_NE(larger, nullptr);
  EXPECT_NE(larger, first);
  attnrt_scratch_release(again);
  attnrt_scratch_release(larger);
  attnrt_scratch_release(nullptr);
  EXPECT_EQ(attnrt_scratch_allocate(SIZE_MAX), nullptr);
}

TEST(ScratchTest, ManyThreadsManyBlocks) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int round = 0; round < 50; ++round) {
        std::vector<void *> blocks;
        for (int n = 0; n < 12; ++n) { // more than a thread caches
          size_t bytes = size_t(1 + n * 4096 + t);
          auto *p =
              static_cast<unsigned char *>(attnrt_scratch_allocate(bytes));
          ASSERT_NE(p, nullptr);
          p[0] = p[bytes - 1] = static_cast<unsigned char>(n);
          blocks.push_back(p);
        }
        for (void *p : blocks)
          attnrt_scratch_release(p);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
}
