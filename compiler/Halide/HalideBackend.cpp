//===- HalideBackend.cpp - Kernels through Halide 14 ----------------------===//

#include "Halide/AttentionFuncs.h"
#include "Halide/HalideTarget.h"
#include "Halide/PrimitiveFuncs.h"
#include "Support/Error.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>
#include <utility>

namespace attnc {

namespace {

TemporaryFileObserver temporaryFileObserver = nullptr;

/// A file for Halide to write. Where the temporary directory's file system
/// has unnamed files (O_TMPFILE), it is one, written through /proc/self/fd:
/// it vanishes with the process however that ends, SIGKILL included.
/// Otherwise a named file, removed on destruction (and on SIGINT or SIGTERM
/// through the observer, which is told of the path before the file exists:
/// a signal between creating and telling would leave it behind).
struct TemporaryFile {
  std::string path;
  int unnamed = -1;
  explicit TemporaryFile(const std::string &suffix) {
    std::filesystem::path directory = std::filesystem::temp_directory_path();
    unnamed = open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (unnamed >= 0) {
      path = "/proc/self/fd/" + std::to_string(unnamed);
      if (access(path.c_str(), W_OK) == 0)
        return;
      close(unnamed); // No /proc: a named file instead.
      unnamed = -1;
    }
    std::random_device random;
    for (int attempt = 0; attempt < 128; ++attempt) {
      char name[32];
      std::snprintf(name, sizeof name, "attnc-halide-%08x", random());
      path = (directory / (name + suffix)).string();
      if (temporaryFileObserver)
        temporaryFileObserver(path, true);
      int fd =
          open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd >= 0) {
        close(fd);
        return;
      }
      int reason = errno;
      if (temporaryFileObserver)
        temporaryFileObserver(path, false);
      if (reason != EEXIST)
        break;
    }
    throw std::runtime_error("cannot create a temporary file in " +
                             directory.string());
  }
  ~TemporaryFile() {
    if (unnamed >= 0) {
      close(unnamed);
      return;
    }
    std::error_code error;
    std::filesystem::remove(path, error);
    if (temporaryFileObserver)
      temporaryFileObserver(path, false);
  }
  TemporaryFile(const TemporaryFile &) = delete;
  TemporaryFile &operator=(const TemporaryFile &) = delete;
};

/// The bytes of a file Halide wrote.
std::string readFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << stream.rdbuf();
  if (!stream || bytes.str().empty())
    throw std::runtime_error("Halide wrote no " + path);
  return bytes.str();
}

/// `pipeline` as an object without Halide's runtime, or with `bitcode` as
/// LLVM bitcode with Halide's AVX512-BF16 patterns enabled. Halide 14 has
/// those only for its Sapphire Rapids feature, which also names that CPU
/// to LLVM, and it has AVX512-FP16, which no AMD core has: the driver
/// compiles the bitcode for the target's own CPU instead.
std::string compileObject(Halide::Pipeline &pipeline,
                          const std::vector<Halide::Argument> &arguments,
                          const std::string &function,
                          const std::string &targetClass, bool strictFloat,
                          bool bitcode = false) {
  Halide::Target target = Halide::Target(halideTarget(targetClass))
                              .with_feature(Halide::Target::NoRuntime);
  if (strictFloat)
    target = target.with_feature(Halide::Target::StrictFloat);
  if (bitcode) {
    target = target.with_feature(Halide::Target::AVX512_Cannonlake)
                 .with_feature(Halide::Target::AVX512_SapphireRapids);
    TemporaryFile file(".bc");
    pipeline.compile_to_bitcode(file.path, arguments, function, target);
    return readFile(file.path);
  }
  TemporaryFile object(".o");
  pipeline.compile_to_object(object.path, arguments, function, target);
  return readFile(object.path);
}

/// Sets an environment variable the user has not set, until destruction.
struct DefaultEnvironment {
  std::string name;
  bool set = false;
  DefaultEnvironment(std::string name, const char *value)
      : name(std::move(name)) {
    if (!std::getenv(this->name.c_str()))
      set = setenv(this->name.c_str(), value, 0) == 0;
  }
  ~DefaultEnvironment() {
    if (set)
      unsetenv(name.c_str());
  }
};

} // namespace

HalideLibrary compileHalideAttention(const KernelPlan &plan,
                                     const PlannedKernel &kernel,
                                     const HalideSchedule &schedule,
                                     const std::string &targetClass,
                                     const std::string &function, bool decode,
                                     bool bf16Products) {
  if (decode && schedule.isAuto())
    throw std::logic_error("halide backend: the decode form has no "
                           "autoscheduler");
  AlgorithmOptions options;
  options.depthInWholeVectors = !schedule.isAuto();
  options.decode = decode;
  options.keyTile = schedule.keyTile;
  // The hand schedule only, on the 16-lane class.
  options.bf16Products =
      bf16Products && !schedule.isAuto() && targetClass == "x86-64-avx512";
  AttentionFuncs funcs = defineAttention(plan, kernel, options);
  HalideLibrary library;
  library.function = function;
  Halide::Target target(halideTarget(targetClass));
  // Autoschedulers log statistics to std::cerr, and their schedules make
  // Halide warn while lowering (e.g. about storage folding); attnc's output
  // stays what the user asked for. The hand schedule warns about nothing.
  std::ostringstream log;
  struct RestoreStderr {
    std::streambuf *saved = std::cerr.rdbuf();
    ~RestoreStderr() { std::cerr.rdbuf(saved); }
  } restore;
  if (schedule.isAuto())
    std::cerr.rdbuf(log.rdbuf());
  try {
    std::vector<Halide::Func> outputs;
    for (AttentionFuncs::Chain &chain : funcs.chains)
      outputs.push_back(chain.result);
    Halide::Pipeline pipeline(outputs);
    if (schedule.isAuto())
      autoScheduleAttention(funcs, plan, kernel, schedule, target, pipeline);
    else
      scheduleAttention(funcs, schedule);
    std::vector<Halide::Argument> arguments(funcs.params.images.begin(),
                                            funcs.params.images.end());
    for (const Halide::Argument &crop : funcs.cropArguments())
      arguments.push_back(crop);
    {
      // Autoschedulers unroll loops they expect to be short and constant;
      // a key loop bounded by the crop (causal, window) is short but not
      // constant. Halide then makes it a serial loop instead of failing.
      std::optional<DefaultEnvironment> permitFailedUnroll;
      if (schedule.isAuto())
        permitFailedUnroll.emplace("HL_PERMIT_FAILED_UNROLL", "1");
      library.bitcode = false;
      for (const AttentionFuncs::Chain &chain : funcs.chains)
        library.bitcode |= chain.queryPairs.defined();
      library.object = compileObject(pipeline, arguments, function, targetClass,
                                     /*strictFloat=*/false, library.bitcode);
    }
  } catch (const Halide::Error &error) {
    // An autoscheduler's schedule that Halide rejects is a limit of that
    // autoscheduler, reported as such; the hand schedule must compile.
    if (schedule.isAuto())
      throw UserError(plan.graphFile + ": " + kernel.pointer + ": node \"" +
                      kernel.name + "\": --schedule " + schedule.kind +
                      ": Halide cannot compile the autoscheduler's schedule: " +
                      oneLine(error.what()) +
                      "; try another autoscheduler or the hand schedule");
    throw std::logic_error("halide backend: compiling " + kernel.name +
                           " failed: " + error.what());
  }
  library.arguments = funcs.params.values;
  library.cropAt = int(library.arguments.size());
  library.arguments.insert(library.arguments.end(), funcs.resultValues.begin(),
                           funcs.resultValues.end());
  return library;
}

HalideLibrary compileHalideMerge(const KernelPlan &plan,
                                 const PlannedKernel &kernel,
                                 const HalideSchedule &schedule,
                                 const std::string &targetClass,
                                 const std::string &function) {
  HalideLibrary library;
  library.function = function;
  try {
    MergeFuncs funcs = defineMerge(plan, kernel);
    scheduleMerge(funcs, schedule);
    Halide::Pipeline pipeline(funcs.results);
    library.object = compileObject(pipeline, {funcs.partials, funcs.keys},
                                   function, targetClass,
                                   /*strictFloat=*/false);
    library.arguments = funcs.resultValues;
  } catch (const Halide::Error &error) {
    throw std::logic_error("halide backend: compiling the merge of " +
                           kernel.name + " failed: " + error.what());
  }
  return library;
}

HalideLibrary compileHalidePrimitive(const KernelPlan &plan,
                                     const PlannedKernel &kernel,
                                     const HalideSchedule &schedule,
                                     const std::string &targetClass,
                                     const std::string &function) {
  HalideLibrary library;
  library.function = function;
  try {
    PrimitiveFuncs funcs = definePrimitive(plan, kernel);
    schedulePrimitive(funcs, schedule);
    // Fixed sizes of the result are promises Halide specialises on, as for
    // the inputs.
    constrainToShape(funcs.result.output_buffer(),
                     plan.values[funcs.resultValue].shape);
    Halide::Pipeline pipeline(funcs.result);
    std::vector<Halide::Argument> arguments(funcs.params.images.begin(),
                                            funcs.params.images.end());
    library.object = compileObject(pipeline, arguments, function, targetClass,
                                   funcs.strictFloat);
    library.arguments = funcs.params.values;
    library.arguments.push_back(funcs.resultValue);
  } catch (const Halide::Error &error) {
    throw std::logic_error("halide backend: compiling " + kernel.name +
                           " failed: " + error.what());
  }
  return library;
}

void setTemporaryFileObserver(TemporaryFileObserver observer) {
  temporaryFileObserver = observer;
}

std::string halideRuntime(const std::string &targetClass) {
  std::string_view object = embeddedHalideRuntime(targetClass);
  if (object.empty())
    throw std::logic_error("halide backend: no runtime for the class '" +
                           targetClass + "'");
  return std::string(object);
}

} // namespace attnc
