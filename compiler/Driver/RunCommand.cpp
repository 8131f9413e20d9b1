//===- RunCommand.cpp - attnc run and attnc reference ---------------------===//
//
// Both read the same input flags, compute the graph's outputs and write one
// `.npy` per output. `reference` is the float64 evaluator alone; `run`
// computes with a backend and can compare with the reference (`--check`) and
// time itself (`--repeat`).
//
//===----------------------------------------------------------------------===//

#include "Codegen/GpuKernels.h"
#include "Codegen/LoadObject.h"
#include "Codegen/Target.h"
#include "Driver/Commands.h"
#include "Driver/Compile.h"
#include "Driver/Inputs.h"
#include "Driver/Model.h"
#include "Driver/Options.h"
#include "Reference/Reference.h"
#include "Support/Error.h"
#include "Support/Npy.h"

#include <attnc/attnrt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <new>
#include <optional>

#include <unistd.h>

namespace attnc {

namespace {

/// The --output-dir, or empty when not given; an empty name is an error.
std::string outputDirectory() {
  if (options::outputDir.getNumOccurrences() && options::outputDir.empty())
    throw UserError("--output-dir: needs a directory name");
  return options::outputDir;
}

double physicalMemory() {
  return double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
}

/// Refuses runs whose inputs (each of --input-sets) and outputs alone cannot
/// fit in memory.
void checkBuffersFit(const Graph &graph, const DimBindings &dims,
                     uint64_t inputSets) {
  double bytes = 0;
  for (ValueId id : graph.inputs)
    bytes += double(inputSets) * tensorBytes(graph.type(id), dims);
  for (ValueId id : graph.outputs)
    bytes += tensorBytes(graph.type(id), dims);
  if (bytes > 0.8 * physicalMemory())
    throw UserError("--dim: the inputs and outputs of " + graph.file +
                    " need about " + std::to_string(int64_t(bytes / 1e9)) +
                    " GB of memory; this machine has " +
                    std::to_string(int64_t(physicalMemory() / 1e9)) + " GB");
}

/// Refuses sizes whose float64 evaluation cannot fit in this machine's
/// memory, instead of letting the allocator or the OOM killer decide.
void checkReferenceFits(const Graph &graph, const DimBindings &dims) {
  double bytes = 0;
  for (const Value &value : graph.values) {
    double count = 1;
    for (int64_t size : concreteShape(value.type.shape, dims))
      count *= double(size);
    bytes += 8 * count;
  }
  double available = physicalMemory();
  if (bytes > 0.8 * available)
    throw UserError("--dim: the reference evaluation of " + graph.file +
                    " needs about " + std::to_string(int64_t(bytes / 1e9)) +
                    " GB of memory; this machine has " +
                    std::to_string(int64_t(available / 1e9)) + " GB");
}

std::vector<Tensor> roundOutputs(const Graph &graph,
                                 const std::vector<F64Tensor> &values) {
  std::vector<Tensor> outputs;
  for (size_t i = 0; i < values.size(); ++i)
    outputs.push_back(fromDoubles(graph.type(graph.outputs[i]).dtype,
                                  values[i].shape, values[i].data));
  return outputs;
}

/// Writes every output or none (writeAll), each as NAME.npy.
void writeOutputs(const Graph &graph, const std::string &directory,
                  const std::vector<Tensor> &outputs) {
  std::vector<std::pair<std::string, std::string>> files;
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string name = graph.value(graph.outputs[i]).name + ".npy";
    try {
      files.emplace_back(name, serializeNpy(outputs[i]));
    } catch (const std::bad_alloc &) {
      throw UserError("--output-dir " + directory + ": out of memory writing " +
                      name);
    }
  }
  writeAll(directory, files, "--output-dir");
}

void printSummary(const Graph &graph, const std::vector<Tensor> &outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::vector<double> values = toDoubles(outputs[i]);
    double sum = 0, sumSquares = 0;
    for (double value : values) {
      sum += value;
      sumSquares += value * value;
    }
    const Value &value = graph.value(graph.outputs[i]);
    std::printf("%s: %s%s mean %.6g rms %.6g\n", value.name.c_str(),
                std::string(dtypeName(outputs[i].dtype)).c_str(),
                formatShape(outputs[i].shape).c_str(),
                values.empty() ? 0.0 : sum / double(values.size()),
                values.empty() ? 0.0
                               : std::sqrt(sumSquares / double(values.size())));
  }
}

/// The graph, its run-time sizes and every input, from the shared flags.
struct PreparedRun {
  Graph graph;
  DimBindings dims;
  std::vector<Tensor> inputs;
  /// More sets of inputs for --repeat to use in turn with `inputs`
  /// (--input-sets): random from seeds seed + 1, seed + 2, ...
  std::vector<std::vector<Tensor>> moreInputs;
};

PreparedRun prepareRun(uint64_t seed, bool needsReference,
                       uint64_t inputSets = 1) {
  LoadedModel model = loadModel(options::graph);
  PreparedRun run{std::move(model.graph), {}, {}, {}};
  RunInputs bound = bindInputs(run.graph, options::dims, options::inputs);
  // A model's weights, where no --input replaced them.
  for (auto &[name, tensor] : model.weights) {
    int index = run.graph.value(*run.graph.lookup(name)).inputIndex;
    if (!bound.tensors[index])
      bound.tensors[index] = std::move(tensor);
  }
  // The float64 evaluation needs more than the buffers; report the larger.
  if (needsReference)
    checkReferenceFits(run.graph, bound.dims);
  else
    checkBuffersFit(run.graph, bound.dims, inputSets);
  run.dims = bound.dims;
  for (uint64_t set = 1; set < inputSets; ++set)
    run.moreInputs.push_back(completeInputs(run.graph, bound, seed + set));
  run.inputs = completeInputs(run.graph, std::move(bound), seed);
  return run;
}

/// A compiled graph loaded into this process, run through libattnrt exactly
/// as an application would run it: a CUDA kernel on CUDA device 0, its
/// tensors copied there and back.
class LoadedKernel {
public:
  LoadedKernel(const Graph &graph, const std::string &objectBytes,
               bool isArchive, size_t threads, bool cuda)
      : graph(graph), cuda(cuda),
        object(isArchive ? LoadedObject::loadArchive(objectBytes)
                         : LoadedObject::load(objectBytes)) {
    kernel = static_cast<const attnrt_kernel *>(
        object->symbol(graph.name + "_kernel"));
    if (!kernel)
      throw std::logic_error("the compiled object has no " + graph.name +
                             "_kernel");
    attnrt_context_options settings;
    attnrt_context_options_initialize(&settings);
    settings.threads = threads;
    if (attnrt_context_create_on_device(
            &settings, cuda ? ATTNRT_DEVICE_CUDA : ATTNRT_DEVICE_CPU, 0,
            &context) != ATTNRT_OK)
      throw std::runtime_error("cannot create an attnrt context");
  }
  ~LoadedKernel() { attnrt_context_release(context); }

  /// The outputs; `milliseconds`, when given, receives the kernel's time
  /// (attnrt_invoke_timed: device time for a CUDA kernel).
  std::vector<Tensor> run(const DimBindings &dims, std::vector<Tensor> &inputs,
                          double *milliseconds = nullptr) {
    std::vector<Tensor> outputs;
    for (ValueId id : graph.outputs) {
      Tensor output;
      output.dtype = graph.type(id).dtype;
      output.shape = concreteShape(graph.type(id).shape, dims);
      output.data.resize(size_t(output.numElements()) *
                         dtypeSize(output.dtype));
      outputs.push_back(std::move(output));
    }
    auto describe = [](Tensor &tensor) {
      return attnrt_tensor{tensor.data.data(),
                           static_cast<attnrt_dtype>(tensor.dtype),
                           static_cast<int32_t>(tensor.shape.size()),
                           tensor.shape.data(), nullptr};
    };
    std::vector<attnrt_tensor> in, out;
    for (Tensor &tensor : inputs)
      in.push_back(describe(tensor));
    for (Tensor &tensor : outputs)
      out.push_back(describe(tensor));
    DeviceCopies copies(*this);
    for (size_t i = 0; cuda && i < in.size(); ++i)
      copies.toDevice(in[i], inputs[i].data.size(), /*upload=*/true);
    for (size_t i = 0; cuda && i < out.size(); ++i)
      copies.toDevice(out[i], outputs[i].data.size(), /*upload=*/false);
    attnrt_status status =
        milliseconds
            ? attnrt_invoke_timed(context, kernel, in.data(), in.size(),
                                  out.data(), out.size(), milliseconds)
            : attnrt_invoke(context, kernel, in.data(), in.size(), out.data(),
                            out.size());
    if (status == ATTNRT_OUT_OF_MEMORY)
      throw UserError("attnc run: out of memory running " + graph.name);
    // A CUDA kernel may meet no driver, no device, an older GPU: the
    // user's to act on.
    if (status != ATTNRT_OK && cuda)
      throw UserError(std::string("attnc run: ") +
                      attnrt_context_last_error(context));
    if (status != ATTNRT_OK)
      throw std::logic_error(std::string("attnrt_invoke: ") +
                             attnrt_status_name(status) + ": " +
                             attnrt_context_last_error(context));
    for (size_t i = 0; cuda && i < outputs.size(); ++i)
      copies.toHost(outputs[i], out[i]);
    return outputs;
  }

private:
  /// The device buffers of one CUDA run, released at its end.
  class DeviceCopies {
  public:
    explicit DeviceCopies(LoadedKernel &owner) : owner(owner) {}
    ~DeviceCopies() {
      for (void *buffer : buffers)
        attnrt_device_release(owner.context, buffer);
    }
    /// Points `tensor` at a device copy of its `bytes` of data (uploaded or
    /// not).
    void toDevice(attnrt_tensor &tensor, size_t bytes, bool upload) {
      void *buffer = nullptr;
      check(attnrt_device_allocate(owner.context, bytes, &buffer));
      buffers.push_back(buffer);
      if (upload)
        check(attnrt_device_upload(owner.context, buffer, tensor.data, bytes));
      tensor.data = buffer;
    }
    void toHost(Tensor &output, const attnrt_tensor &device) {
      check(attnrt_device_download(owner.context, output.data.data(),
                                   device.data, output.data.size()));
    }

  private:
    void check(attnrt_status status) {
      if (status == ATTNRT_OUT_OF_MEMORY)
        throw UserError("attnc run: out of device memory: " +
                        std::string(attnrt_context_last_error(owner.context)));
      if (status != ATTNRT_OK)
        throw UserError(std::string("attnc run: ") +
                        attnrt_context_last_error(owner.context));
    }
    LoadedKernel &owner;
    std::vector<void *> buffers;
  };

  const Graph &graph;
  bool cuda;
  std::unique_ptr<LoadedObject> object;
  const attnrt_kernel *kernel = nullptr;
  attnrt_context *context = nullptr;
};

} // namespace

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle]
                           : (values[middle - 1] + values[middle]) / 2;
}

int referenceCommand() {
  std::string directory = outputDirectory();
  PreparedRun run =
      prepareRun(options::integer(options::seed, 0), /*needsReference=*/true);
  const Graph &graph = run.graph;
  std::vector<Tensor> outputs =
      roundOutputs(graph, evaluateReference(graph, run.dims, run.inputs));
  if (directory.empty())
    printSummary(graph, outputs);
  else
    writeOutputs(graph, directory, outputs);
  return 0;
}

int runCommand() {
  const std::string &backend = options::backend;
  if (backend != "reference" && backend != "mlir" && backend != "halide")
    throw UserError("--backend " + backend +
                    ": unknown backend; allowed: mlir, reference, halide");
  bool compiled = backend != "reference";
  uint64_t threads = options::integer(options::threads, 0, ATTNRT_MAX_THREADS);
  uint64_t repeat = options::integer(options::repeat, 0, options::kMaxRepeat);
  uint64_t seed = options::integer(options::seed, 0);
  std::string directory = outputDirectory();
  CompileOptions settings;
  settings.backend = backend;
  settings.target = options::target;
  std::optional<std::string> cudaChipName =
      compiled ? cudaChip(options::target) : std::nullopt;
  if (compiled && !cudaChipName)
    requireHostRuns(options::target); // The kernel runs here.

  settings.schedulePath = options::schedule;
  settings.primitiveGrid = options::integer(options::primitiveGrid, 0, 1 << 20);
  settings.emulateAmx = options::emulateAmx;
  if (cudaChipName && options::tuningDb.getNumOccurrences())
    throw UserError("--tuning-db: CUDA targets have no tuned schedules yet");
  if (backend != "reference" && !cudaChipName)
    settings.tuningDatabase = options::chosenTuningDatabase();

  uint64_t inputSets = options::integer(options::inputSets, 1);
  if (inputSets > 16)
    throw UserError("--input-sets " + options::inputSets + ": at most 16 sets");
  if (inputSets > 1 && repeat == 0)
    throw UserError("--input-sets: only with --repeat (the sets are used "
                    "in turn by the timed runs)");
  PreparedRun run = prepareRun(seed, !compiled || options::compare, inputSets);
  const Graph &graph = run.graph;
  // An autoscheduler plans for the sizes of this run.
  settings.dimEstimates = run.dims;
  std::vector<F64Tensor> reference;
  std::function<std::vector<Tensor>()> compute;
  std::unique_ptr<LoadedKernel> kernel;
  std::vector<Tensor> outputs;
  if (cudaChipName) {
    // NAME.o as `attnc compile --target cuda-*` writes it: the flags and
    // the graph checked first, then the driver and the GPU.
    std::vector<std::pair<std::string, std::string>> files =
        compileForCudaFiles(graph, settings, *cudaChipName);
    int32_t devices = 0;
    char why[512] = "";
    if (attnrt_device_count(ATTNRT_DEVICE_CUDA, &devices, why, sizeof why) !=
            ATTNRT_OK ||
        devices == 0)
      throw UserError("attnc run --target " + options::target + ": " +
                      (devices == 0 && !why[0] ? "no CUDA device" : why));
    for (auto &[file, contents] : files)
      if (file == graph.name + ".o")
        kernel = std::make_unique<LoadedKernel>(graph, contents, false, threads,
                                                /*cuda=*/true);
    compute = [&] { return kernel->run(run.dims, run.inputs); };
    outputs = compute();
    if (options::compare)
      reference = evaluateReference(graph, run.dims, run.inputs);
  } else if (compiled) {
    CompiledGraph built = compileGraph(graph, settings);
    reportTunedSchedule(settings, built);
    kernel = std::make_unique<LoadedKernel>(graph, built.object,
                                            built.isArchive, threads,
                                            /*cuda=*/false);
    // The test hook of `attnc tune --test-hang-candidate`: a candidate that
    // never ends once its kernel is loaded.
    if (std::getenv("ATTNC_TEST_HANG"))
      for (;;)
        pause();
    compute = [&] { return kernel->run(run.dims, run.inputs); };
    outputs = compute();
    // The test hook of `attnc tune --test-corrupt-candidate`: a kernel that
    // returns a wrong number (NaN), which the tuner must reject.
    if (std::getenv("ATTNC_TEST_CORRUPT_OUTPUT") && !outputs.empty())
      std::fill_n(
          outputs[0].data.begin(),
          std::min(outputs[0].data.size(), size_t(dtypeSize(outputs[0].dtype))),
          0xff);
    if (options::compare)
      reference = evaluateReference(graph, run.dims, run.inputs);
  } else {
    // The reference backend's outputs are the reference rounded to each
    // output's dtype; --check compares them with the unrounded values.
    compute = [&] {
      return roundOutputs(graph,
                          evaluateReference(graph, run.dims, run.inputs));
    };
    reference = evaluateReference(graph, run.dims, run.inputs);
    outputs = roundOutputs(graph, reference);
  }

  int status = 0;
  if (options::compare) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      double error = relativeError(toDoubles(outputs[i]), reference[i].data);
      double tolerance = checkTolerance(outputs[i].dtype);
      bool pass = error <= tolerance; // False for NaN.
      std::printf("check %s: rel_err %.3g (tolerance %.0e) %s\n",
                  graph.value(graph.outputs[i]).name.c_str(), error, tolerance,
                  pass ? "ok" : "FAIL");
      if (!pass)
        status = 1;
    }
  }
  if (repeat > 0) {
    std::vector<double> times;
    // With --input-sets the runs take the sets in turn, so no run finds
    // its inputs in the caches the previous one left.
    for (uint64_t i = 0; i < repeat; ++i) {
      size_t set = i % (run.moreInputs.size() + 1);
      if (cudaChipName) {
        // Device time (CUDA events), not the copies around it.
        double milliseconds = 0;
        kernel->run(run.dims, set == 0 ? run.inputs : run.moreInputs[set - 1],
                    &milliseconds);
        times.push_back(milliseconds);
        continue;
      }
      auto start = std::chrono::steady_clock::now();
      if (set == 0 || !compiled)
        compute();
      else
        kernel->run(run.dims, run.moreInputs[set - 1]);
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    auto [fastest, slowest] = std::minmax_element(times.begin(), times.end());
    // The fastest run is what a busy host's noise leaves least of.
    std::printf("median_ms: %.3f\nmin_ms: %.3f\nmax_ms: %.3f\n", median(times),
                *fastest, *slowest);
  }
  if (!directory.empty())
    writeOutputs(graph, directory, outputs);
  else if (!options::compare && repeat == 0)
    printSummary(graph, outputs);
  return status;
}

} // namespace attnc
