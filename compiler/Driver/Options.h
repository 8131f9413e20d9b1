//===- Options.h - The flags of every attnc subcommand ------------*- C++
//-*-===//
//
// Each subcommand is an llvm::cl::SubCommand with its own option namespace:
// libLLVM registers hundreds of global options (one of them `--threads`), and
// only per-subcommand namespaces keep the spec's flag names free of clashes.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_OPTIONS_H
#define ATTNC_DRIVER_OPTIONS_H

#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

namespace attnc::options {

extern llvm::cl::SubCommand check, explain, import, reference, compile, run,
    tune;

/// Every subcommand, in the order `attnc --help` lists them.
llvm::ArrayRef<llvm::cl::SubCommand *> subcommands();

/// The graph file: the positional argument of every subcommand.
extern llvm::cl::opt<std::string> graph;
/// explain
extern llvm::cl::opt<bool> json;
/// import
extern llvm::cl::opt<bool> fused;
/// reference and run (and compile: estimates for an autoscheduler)
extern llvm::cl::list<std::string> dims;
extern llvm::cl::list<std::string> inputs;
extern llvm::cl::opt<std::string> seed;
extern llvm::cl::opt<std::string> outputDir;
/// run
extern llvm::cl::opt<std::string> backend;
extern llvm::cl::opt<std::string> target;
extern llvm::cl::opt<std::string> schedule;
extern llvm::cl::opt<std::string> primitiveGrid;
extern llvm::cl::opt<bool> emulateAmx;
extern llvm::cl::opt<std::string> outputFiles;
extern llvm::cl::opt<bool> attentionOnly;
extern llvm::cl::opt<std::string> name;
extern llvm::cl::opt<std::string> emit;
extern llvm::cl::opt<std::string> threads;
extern llvm::cl::opt<std::string> repeat;
extern llvm::cl::opt<bool> compare;
extern llvm::cl::opt<std::string> inputSets;
extern llvm::cl::opt<std::string> tuningDb;
extern llvm::cl::opt<bool> noTuningDb;
/// The tuning database compile and run take their schedule from: --tuning-db
/// (which must exist), else attnc tune's default database when it exists;
/// empty with --no-tuning-db, with --schedule, or when there is none.
std::string chosenTuningDatabase();
/// tune
extern llvm::cl::list<std::string> tuneArguments;
extern llvm::cl::opt<std::string> budget;
extern llvm::cl::opt<std::string> database;
extern llvm::cl::opt<std::string> shard;
extern llvm::cl::opt<std::string> report;
extern llvm::cl::opt<std::string> space;
extern llvm::cl::opt<bool> exhaustive;
extern llvm::cl::opt<std::string> confirmRounds;
extern llvm::cl::opt<std::string> exportFile;
extern llvm::cl::opt<std::string> corruptCandidate;
extern llvm::cl::opt<std::string> hangCandidate;

/// The value of a numeric flag (written as text so that every bad value gets
/// attnc's one-line message). Throws UserError naming the flag.
uint64_t integer(const llvm::cl::opt<std::string> &option, uint64_t minimum,
                 uint64_t maximum = UINT64_MAX);

/// The most timed runs --repeat takes (a run of a tiny kernel is ~1 µs; a
/// million stays minutes even for large ones, not years).
constexpr uint64_t kMaxRepeat = 1000000;

/// Parses argv into the options above. On a bad flag returns the problem as
/// one line ("unknown flag --x (did you mean --y?)").
std::optional<std::string> parse(int argc, const char **argv);

} // namespace attnc::options

#endif // ATTNC_DRIVER_OPTIONS_H
