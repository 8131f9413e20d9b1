//===- CompileCommand.cpp - attnc compile ---------------------------------===//
//
// Writes DIR/NAME.o, NAME.h and NAME.json (and NAME.mlir, NAME.ll with
// --emit): all of them or, on any failure, none.
//
//===----------------------------------------------------------------------===//

#include "Codegen/GpuKernels.h"
#include "Driver/Commands.h"
#include "Driver/Compile.h"
#include "Driver/Inputs.h"
#include "Driver/Model.h"
#include "Driver/Options.h"
#include "Support/Error.h"
#include "Support/TextFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Signals.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <utility>
#include <vector>

namespace attnc {

namespace {

CompileOptions compileOptions() {
  CompileOptions result;
  result.target = options::target;
  if (options::schedule.getNumOccurrences() && options::schedule.empty())
    throw UserError("--schedule: needs a file name");
  result.schedulePath = options::schedule;
  result.primitiveGrid = options::integer(options::primitiveGrid, 0, 1 << 20);
  result.emulateAmx = options::emulateAmx;
  llvm::SmallVector<llvm::StringRef> kinds;
  llvm::StringRef(options::emit).split(kinds, ',', -1, /*KeepEmpty=*/false);
  std::string stages;
  for (const MlirStage &stage : kMlirStages)
    stages += std::string(stages.empty() ? "" : ", ") + "mlir:" + stage.name;
  for (llvm::StringRef kind : kinds) {
    std::string stage;
    llvm::StringRef stageName = kind;
    if (kind == "llvm") {
      result.emitLlvm = true;
      continue;
    }
    if (kind == "mlir")
      stage = "kernels";
    else if (stageName.consume_front("mlir:") &&
             llvm::any_of(kMlirStages, [&](const MlirStage &known) {
               return stageName == known.name;
             }))
      stage = stageName.str();
    else
      throw UserError("--emit " + options::emit + ": unknown kind \"" +
                      kind.str() + "\"; allowed: mlir, llvm, " + stages);
    if (llvm::is_contained(result.emitMlirStages, stage))
      throw UserError("--emit " + options::emit + ": the stage " + stage +
                      " is asked for twice");
    result.emitMlirStages.push_back(stage);
  }
  return result;
}

} // namespace

/// Writes every file through a temporary and renames them all at the end;
/// on failure removes what it wrote.
void writeAll(const std::string &directory,
              const std::vector<std::pair<std::string, std::string>> &files,
              const std::string &flag) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::create_directories(directory, error);
  if (error || !fs::is_directory(directory))
    throw UserError(flag + " " + directory + ": cannot create the directory" +
                    (error ? " (" + error.message() + ")" : ""));
  std::vector<fs::path> temporaries, finals, createdDirectories;
  std::vector<StagedFile> staged;
  staged.reserve(files.size());
  auto cleanUp = [&] {
    for (const fs::path &path : temporaries) {
      fs::remove(path, error);
      llvm::sys::DontRemoveFileOnSignal(path.string());
    }
    for (auto it = createdDirectories.rbegin(); it != createdDirectories.rend();
         ++it)
      fs::remove(*it, error); // Only if empty.
  };
  for (const auto &[name, contents] : files) {
    fs::path final = fs::path(directory) / name;
    // Names may hold a subdirectory (attnc import --attention-only).
    if (!fs::exists(final.parent_path(), error)) {
      fs::create_directories(final.parent_path(), error);
      createdDirectories.push_back(final.parent_path());
    }
    fs::path temporary = final;
    temporary += ".tmp";
    // SIGINT or SIGTERM (a timeout) mid-write leaves none behind. Registered
    // before the file exists: a signal between creating and registering
    // would leave it.
    temporaries.push_back(temporary);
    llvm::sys::RemoveFileOnSignal(temporary.string());
    // Written and synced but unnamed until every file is: SIGKILL, which no
    // handler sees, finds nothing in the directory while files are written.
    staged.emplace_back();
    if (int reason = staged.back().write(temporary.string(), contents)) {
      cleanUp();
      throw UserError(flag + " " + directory + ": cannot write " +
                      final.string() + ": " + std::strerror(reason));
    }
    finals.push_back(final);
  }
  // SIGINT or SIGTERM between two renames would leave some of the files;
  // held back until every rename is done, it finds the whole set. Naming
  // each file and renaming it over the final name takes moments, the only
  // time SIGKILL can leave a temporary or a part of the set.
  sigset_t interrupts, previous;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &interrupts, &previous);
  for (size_t i = 0; i < finals.size(); ++i) {
    if (int reason = staged[i].name())
      error = std::error_code(reason, std::generic_category());
    else
      fs::rename(temporaries[i], finals[i], error);
    if (error) {
      std::string reason = error.message(); // Before cleanUp reuses `error`.
      cleanUp();
      for (size_t j = 0; j < i; ++j)
        fs::remove(finals[j], error);
      pthread_sigmask(SIG_SETMASK, &previous, nullptr);
      throw UserError(flag + " " + directory + ": cannot write " +
                      finals[i].string() + ": " + reason);
    }
  }
  for (const fs::path &path : temporaries)
    llvm::sys::DontRemoveFileOnSignal(path.string()); // Renamed away.
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  for (const fs::path &path : finals)
    std::cout << "wrote " << path.string() << "\n";
}

int compileCommand() {
  if (!options::outputFiles.getNumOccurrences() || options::outputFiles.empty())
    throw UserError("attnc compile: needs -o DIR, the directory for NAME.o, "
                    "NAME.h and NAME.json");
  if (options::backend != "mlir" && options::backend != "halide")
    throw UserError("--backend " + options::backend +
                    ": unknown backend; allowed: mlir, halide");
  CompileOptions settings = compileOptions();
  settings.backend = options::backend;
  Graph graph = loadModelGraph(options::graph);
  if (options::name.getNumOccurrences()) {
    // The same graph compiled twice (two backends, two schedules) into one
    // program needs two names.
    if (!isIdentifier(options::name))
      throw UserError("--name " + options::name +
                      ": must match [A-Za-z_][A-Za-z0-9_]*");
    if (std::optional<std::string> why = reservedSymbolName(options::name))
      throw UserError("--name " + options::name +
                      ": cannot name the kernel's C symbols: " + *why);
    graph.name = options::name;
  }
  if (std::optional<std::string> chip = cudaChip(settings.target)) {
    if (!options::dims.empty())
      throw UserError("--dim: a CUDA kernel takes every size at run time");
    if (options::tuningDb.getNumOccurrences())
      throw UserError("--tuning-db: CUDA targets have no tuned schedules yet");
    writeAll(options::outputFiles, compileForCudaFiles(graph, settings, *chip));
    return 0;
  }
  settings.tuningDatabase = options::chosenTuningDatabase();
  if (!options::dims.empty()) {
    // The code serves every size; only an autoscheduler or a tuning
    // database lookup plans for one.
    bool autoscheduled = settings.backend == "halide" &&
                         settings.schedulePath.rfind("auto:", 0) == 0;
    if (!autoscheduled && settings.tuningDatabase.empty())
      throw UserError("--dim: attnc compile takes sizes only as estimates "
                      "for an autoscheduler (--backend halide --schedule "
                      "auto:NAME) or as the shape to look a tuned schedule "
                      "up for (--tuning-db); the compiled code accepts any "
                      "size");
    settings.dimEstimates = bindDimFlags(graph, options::dims);
  }
  CompiledGraph compiled = compileGraph(graph, settings);
  reportTunedSchedule(settings, compiled);
  std::vector<std::pair<std::string, std::string>> files = {
      {graph.name + (compiled.isArchive ? ".a" : ".o"), compiled.object},
      {graph.name + ".h", compiled.header},
      {graph.name + ".json", compiled.manifest}};
  // `--emit mlir` writes NAME.mlir; `--emit mlir:STAGE` NAME.STAGE.mlir.
  llvm::SmallVector<llvm::StringRef> kinds;
  llvm::StringRef(options::emit).split(kinds, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef kind : kinds) {
    if (kind == "mlir")
      files.push_back({graph.name + ".mlir", compiled.mlir.at("kernels")});
    else if (kind.consume_front("mlir:"))
      files.push_back({graph.name + "." + kind.str() + ".mlir",
                       compiled.mlir.at(kind.str())});
  }
  if (settings.emitLlvm)
    files.push_back({graph.name + ".ll", compiled.llvm});
  writeAll(options::outputFiles, files);
  return 0;
}

} // namespace attnc
