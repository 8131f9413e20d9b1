//===- Options.cpp - The flags of every attnc subcommand ------------------===//

#include "Driver/Options.h"
#include "Support/Error.h"
#include "Tuning/TunedSchedule.h"

#include <filesystem>

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"

namespace attnc::options {
namespace cl = llvm::cl;

static cl::OptionCategory category("attnc options");

cl::SubCommand check("check",
                     "Validate a graph; print a one-line summary per node");
cl::SubCommand explain("explain", "Print the kernels a graph becomes, naming "
                                  "the nodes each covers");
cl::SubCommand import("import", "Print the graph as attn IR (MLIR), before any "
                                "pass; with -o DIR, write an ONNX model as "
                                "an attnc graph and its weights");
cl::SubCommand reference("reference",
                         "Compute the outputs with the float64 reference "
                         "evaluator; one .npy per output");
cl::SubCommand run("run", "Compile and run a graph on given or random inputs");
cl::SubCommand compile("compile",
                       "Compile a graph into NAME.o, NAME.h and NAME.json");
cl::SubCommand tune("tune", "Search the schedules of a graph's kernels and "
                            "keep the fastest in a tuning database");

llvm::ArrayRef<cl::SubCommand *> subcommands() {
  static cl::SubCommand *all[] = {&check,   &explain, &import, &reference,
                                  &compile, &run,     &tune};
  return all;
}

cl::list<std::string>
    tuneArguments(cl::Positional, cl::OneOrMore,
                  cl::desc("<graph.json> | export | import <records.jsonl>"),
                  cl::sub(tune), cl::cat(category));
cl::opt<std::string> budget("budget",
                            cl::desc("Time for the search, e.g. 120s, 10m, "
                                     "1h (default 120s)"),
                            cl::value_desc("TIME"), cl::init("120s"),
                            cl::sub(tune), cl::cat(category));
cl::opt<std::string> database("db",
                              cl::desc("Tuning database (default "
                                       "$XDG_CACHE_HOME/attnc/tuning.db, "
                                       "else ~/.cache/attnc/tuning.db)"),
                              cl::value_desc("PATH"), cl::sub(tune),
                              cl::cat(category));
cl::opt<std::string> shard("shard",
                           cl::desc("Measure only shard I of N of the "
                                    "candidates (0 <= I < N; every shard "
                                    "also times the default)"),
                           cl::value_desc("I/N"), cl::sub(tune),
                           cl::cat(category));
cl::opt<std::string> report("report",
                            cl::desc("Write DIR/candidates.csv and "
                                     "DIR/candidates.svg: every candidate "
                                     "of this run, as a table and a plot"),
                            cl::value_desc("DIR"), cl::sub(tune),
                            cl::cat(category));
cl::opt<std::string> space("space",
                           cl::desc("Schedule space to search (default: "
                                    "the compiled-in schedules/space/"
                                    "cpu.json)"),
                           cl::value_desc("FILE"), cl::sub(tune),
                           cl::cat(category));
cl::opt<bool> exhaustive("exhaustive",
                         cl::desc("Measure every candidate, whatever the "
                                  "budget"),
                         cl::sub(tune), cl::cat(category));
cl::opt<std::string> confirmRounds(
    "confirm",
    cl::desc("Rounds that time the fastest candidates (up to 3) and the "
             "default in turn after the search; the database ranks them "
             "by those rounds (default 5; 0 skips)"),
    cl::value_desc("N"), cl::init("5"), cl::sub(tune), cl::cat(category));
cl::opt<std::string> exportFile("o",
                                cl::desc("tune export: write the records "
                                         "to FILE (default: stdout)"),
                                cl::value_desc("FILE"), cl::sub(tune),
                                cl::cat(category));
cl::opt<std::string> corruptCandidate(
    "test-corrupt-candidate",
    cl::desc("Test hook: candidate N (1 = the default) returns corrupted "
             "outputs"),
    cl::value_desc("N"), cl::init("0"), cl::Hidden, cl::sub(tune),
    cl::cat(category));

cl::opt<std::string> hangCandidate(
    "test-hang-candidate",
    cl::desc("Test hook: candidate N (1 = the default) never ends once its "
             "kernel is loaded"),
    cl::value_desc("N"), cl::init("0"), cl::Hidden, cl::sub(tune),
    cl::cat(category));

cl::opt<std::string> graph(cl::Positional, cl::Required,
                           cl::desc("<graph.json | model.onnx>"),
                           cl::sub(check), cl::sub(explain), cl::sub(import),
                           cl::sub(reference), cl::sub(compile), cl::sub(run),
                           cl::cat(category));

cl::opt<bool> json("json", cl::desc("Print the kernels as a JSON array"),
                   cl::sub(explain), cl::cat(category));

cl::opt<bool> attentionOnly(
    "attention-only",
    cl::desc("With -o: import each attention block of an ONNX model as a "
             "graph of its own (DIR/attention_N/), and say in "
             "DIR/blocks.json which nodes each covers and why the rest was "
             "left out"),
    cl::sub(import), cl::cat(category));

cl::opt<bool> fused("fused",
                    cl::desc("Print the IR after the attn pipeline "
                             "(fuse attention, then canonicalize) instead"),
                    cl::sub(import), cl::cat(category));

cl::list<std::string> dims("dim",
                           cl::desc("Value of a run-time size (repeatable; "
                                    "compile: the size an autoscheduler "
                                    "plans for)"),
                           cl::value_desc("NAME=SIZE"), cl::sub(reference),
                           cl::sub(run), cl::sub(compile), cl::sub(tune),
                           cl::cat(category));
cl::list<std::string>
    inputs("input",
           cl::desc("Read an input from a .npy file (repeatable); the others "
                    "are random"),
           cl::value_desc("NAME=FILE.npy"), cl::sub(reference), cl::sub(run),
           cl::cat(category));
cl::opt<std::string> seed("seed",
                          cl::desc("Seed of the random inputs (default 0)"),
                          cl::value_desc("N"), cl::init("0"),
                          cl::sub(reference), cl::sub(run), cl::sub(tune),
                          cl::cat(category));
cl::opt<std::string> outputDir("output-dir",
                               cl::desc("Write OUT.npy for every output into "
                                        "DIR (created when missing)"),
                               cl::value_desc("DIR"), cl::sub(reference),
                               cl::sub(run), cl::cat(category));

cl::opt<std::string> backend("backend",
                             cl::desc("Code generator: mlir (default), "
                                      "halide, or reference (run only)"),
                             cl::value_desc("B"), cl::init("mlir"),
                             cl::sub(compile), cl::sub(run), cl::sub(tune),
                             cl::cat(category));
cl::opt<std::string> target("target",
                            cl::desc("host (default), x86-64, x86-64-avx2, "
                                     "x86-64-avx512, x86-64-avx512-bf16 or "
                                     "x86-64-amx"),
                            cl::value_desc("T"), cl::init("host"),
                            cl::sub(compile), cl::sub(run), cl::sub(tune),
                            cl::cat(category));
cl::opt<std::string> primitiveGrid(
    "primitive-grid",
    cl::desc("For testing without a GPU: run the ops outside attention with "
             "the code of their CUDA kernels, as N CPU tasks (each one "
             "thread of a grid of N)"),
    cl::value_desc("N"), cl::init("0"), cl::Hidden, cl::sub(compile),
    cl::sub(run), cl::cat(category));
cl::opt<bool> emulateAmx(
    "emulate-amx",
    cl::desc("For testing without AMX: compile the AMX tile path of bf16 "
             "prefill (as --target x86-64-amx does) with each tile "
             "operation in vector code that any CPU runs"),
    cl::init(false), cl::Hidden, cl::sub(compile), cl::sub(run),
    cl::cat(category));
cl::opt<std::string> schedule("schedule",
                              cl::desc("Schedule file (default: the "
                                       "target's, under schedules/); halide "
                                       "also auto:adams2019, "
                                       "auto:mullapudi2016 or auto:li2018"),
                              cl::value_desc("S.json"), cl::sub(compile),
                              cl::sub(run), cl::cat(category));
cl::opt<std::string> outputFiles("o",
                                 cl::desc("Directory for NAME.o, NAME.h and "
                                          "NAME.json (import of an ONNX "
                                          "model: NAME.json and one .npy "
                                          "per weight; created when "
                                          "missing)"),
                                 cl::value_desc("DIR"), cl::sub(compile),
                                 cl::sub(import), cl::cat(category));
cl::opt<std::string> name("name",
                          cl::desc("Name of the kernel's symbols and files "
                                   "(default: the graph's \"name\")"),
                          cl::value_desc("NAME"), cl::sub(compile),
                          cl::cat(category));
cl::opt<std::string>
    emit("emit",
         cl::desc("Also write NAME.mlir (the kernels before "
                  "lowering), NAME.STAGE.mlir for "
                  "mlir:STAGE (attn, fused, tiled, kernels, llvm) "
                  "and/or NAME.ll"),
         cl::value_desc("mlir,mlir:STAGE,llvm"), cl::sub(compile),
         cl::cat(category));
cl::opt<std::string>
    threads("threads", cl::desc("Worker threads (default 1; 0 = one per core)"),
            cl::value_desc("N"), cl::init("1"), cl::sub(run), cl::sub(tune),
            cl::cat(category));
cl::opt<std::string> repeat("repeat",
                            cl::desc("Time N runs after a warm-up and print "
                                     "median_ms"),
                            cl::value_desc("N"), cl::init("0"), cl::sub(run),
                            cl::sub(tune), cl::cat(category));
cl::opt<std::string> tuningDb(
    "tuning-db",
    cl::desc("Take the schedule from this tuning database's best record for "
             "the graph (default: the default database of attnc tune, when "
             "it exists)"),
    cl::value_desc("PATH"), cl::sub(compile), cl::sub(run), cl::cat(category));
cl::opt<bool> noTuningDb("no-tuning-db",
                         cl::desc("Use no tuning database: the target's "
                                  "default schedule"),
                         cl::sub(compile), cl::sub(run), cl::cat(category));
cl::opt<std::string> inputSets(
    "input-sets",
    cl::desc("With --repeat: time over K sets of inputs (the random ones "
             "from seeds N, N+1, ...), used in turn so that caches do not "
             "flatter (default 1, at most 16)"),
    cl::value_desc("K"), cl::init("1"), cl::sub(run), cl::cat(category));
cl::opt<bool> compare("check",
                      cl::desc("Compare with the float64 reference; exit 1 "
                               "when over tolerance (1e-4 f32, 2e-2 f16/bf16)"),
                      cl::sub(run), cl::cat(category));

namespace {
/// LLVM reports a bad flag in two to four lines ("Unknown command line
/// argument ... Try: ...", "Did you mean ...?"); attnc's convention is one.
std::string oneLineMessage(llvm::StringRef report) {
  llvm::SmallVector<llvm::StringRef> lines;
  report.split(lines, '\n', -1, /*KeepEmpty=*/false);
  auto quotedAfter = [](llvm::StringRef line, llvm::StringRef marker) {
    size_t start = line.find(marker);
    if (start == llvm::StringRef::npos)
      return llvm::StringRef();
    llvm::StringRef rest = line.drop_front(start + marker.size());
    return rest.take_until([](char c) { return c == '\''; });
  };
  // The first problem is the one to report; LLVM's later lines follow from it.
  std::string message, suggestion;
  for (llvm::StringRef line : lines) {
    llvm::StringRef guess = quotedAfter(line, "Did you mean '").trim();
    if (!guess.empty()) {
      // Only suggest attnc's own flags, never -h or --help-list.
      if (suggestion.empty() && guess.starts_with("--") &&
          !guess.starts_with("--help") && guess != "--version")
        suggestion = " (did you mean " + guess.str() + "?)";
      continue;
    }
    if (!message.empty())
      continue;
    if (llvm::StringRef flag =
            quotedAfter(line, "Unknown command line argument '");
        !flag.empty())
      message = "unknown flag " + flag.str();
    else if (line.contains("Not enough positional"))
      message = "missing the graph file";
    else if (line.contains("Too many positional"))
      message = "takes exactly one graph file";
    else
      message = line.split(": ").second.empty() ? line.str()
                                                : line.split(": ").second.str();
  }
  return message + suggestion;
}
} // namespace

std::string chosenTuningDatabase() {
  if (noTuningDb && tuningDb.getNumOccurrences())
    throw UserError("--tuning-db and --no-tuning-db: give one of them");
  if (noTuningDb || !schedule.empty())
    return "";
  if (tuningDb.getNumOccurrences()) {
    if (tuningDb.empty())
      throw UserError("--tuning-db: needs a path");
    if (!std::filesystem::is_regular_file(std::string(tuningDb)))
      throw UserError("--tuning-db " + tuningDb + ": no tuning database here");
    return tuningDb;
  }
  std::string path = tuning::defaultTuningDatabasePath();
  return !path.empty() && std::filesystem::is_regular_file(path) ? path : "";
}

uint64_t integer(const cl::opt<std::string> &option, uint64_t minimum,
                 uint64_t maximum) {
  uint64_t value = 0;
  llvm::StringRef text = option.getValue();
  if (text.getAsInteger(10, value))
    throw UserError("--" + option.ArgStr.str() + " " + text.str() +
                    ": expected a non-negative integer");
  if (value < minimum)
    throw UserError("--" + option.ArgStr.str() + " " + text.str() +
                    ": must be at least " + std::to_string(minimum));
  if (value > maximum)
    throw UserError("--" + option.ArgStr.str() + " " + text.str() +
                    ": must be at most " + std::to_string(maximum));
  return value;
}

/// A flag that takes a value but is given none (last on the line, or
/// followed by another flag): LLVM would print its own two-line error, or
/// take the next flag as the value and the rest as positional arguments.
std::optional<std::string> flagWithoutValue(int argc, const char **argv) {
  if (argc < 2)
    return std::nullopt;
  cl::SubCommand *active = nullptr;
  for (cl::SubCommand *sub : subcommands())
    if (sub->getName() == argv[1])
      active = sub;
  if (!active)
    return std::nullopt;
  const auto &options = active->OptionsMap;
  for (int i = 2; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (!arg.starts_with("-") || arg.contains('='))
      continue;
    llvm::StringRef name = arg.drop_while([](char c) { return c == '-'; });
    auto found = options.find(name);
    if (found == options.end() ||
        found->second->getValueExpectedFlag() != cl::ValueRequired)
      continue;
    if (i + 1 == argc)
      return arg.str() + ": needs a value";
    if (llvm::StringRef(argv[i + 1]).starts_with("--"))
      return arg.str() + ": needs a value, got the flag " + argv[i + 1];
    ++i; // Its value.
  }
  return std::nullopt;
}

std::optional<std::string> parse(int argc, const char **argv) {
  for (cl::SubCommand *sub : subcommands())
    cl::HideUnrelatedOptions(category, *sub);
  if (std::optional<std::string> problem = flagWithoutValue(argc, argv))
    return problem;
  std::string report;
  llvm::raw_string_ostream stream(report);
  if (cl::ParseCommandLineOptions(
          argc, argv, "attnc: an ahead-of-time compiler for attention\n",
          &stream))
    return std::nullopt;
  return oneLineMessage(stream.str());
}

} // namespace attnc::options
