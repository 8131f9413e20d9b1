//===- Options.cpp - The flags of every attnc subcommand ------------------===//

#include "Driver/Options.h"

namespace attnc::options {
namespace cl = llvm::cl;

static cl::OptionCategory category("attnc options");

cl::SubCommand check("check",
                     "Validate a graph; print a one-line summary per node");
cl::SubCommand explain("explain", "Print the kernels a graph becomes, naming "
                                  "the nodes each covers");
cl::SubCommand reference("reference",
                         "Compute the outputs with the float64 reference "
                         "evaluator; one .npy per output");
cl::SubCommand run("run", "Compile and run a graph on given or random inputs");

cl::opt<std::string> graph(cl::Positional, cl::Required,
                           cl::desc("<graph.json>"), cl::sub(check),
                           cl::sub(explain), cl::sub(reference), cl::sub(run),
                           cl::cat(category));

cl::opt<bool> json("json", cl::desc("Print the kernels as a JSON array"),
                   cl::sub(explain), cl::cat(category));

cl::list<std::string> dims("dim",
                           cl::desc("Value of a run-time size (repeatable)"),
                           cl::value_desc("NAME=SIZE"), cl::sub(reference),
                           cl::sub(run), cl::cat(category));
cl::list<std::string>
    inputs("input",
           cl::desc("Read an input from a .npy file (repeatable); the others "
                    "are random"),
           cl::value_desc("NAME=FILE.npy"), cl::sub(reference), cl::sub(run),
           cl::cat(category));
cl::opt<uint64_t> seed("seed", cl::desc("Seed of the random inputs"),
                       cl::init(0), cl::sub(reference), cl::sub(run),
                       cl::cat(category));
cl::opt<std::string> outputDir("output-dir",
                               cl::desc("Write OUT.npy for every output into "
                                        "DIR (created when missing)"),
                               cl::value_desc("DIR"), cl::sub(reference),
                               cl::sub(run), cl::cat(category));

cl::opt<std::string> backend("backend",
                             cl::desc("Code generator (only `reference` is "
                                      "built so far)"),
                             cl::init("reference"), cl::sub(run),
                             cl::cat(category));
cl::opt<unsigned> threads("threads", cl::desc("Worker threads"), cl::init(1),
                          cl::sub(run), cl::cat(category));
cl::opt<unsigned> repeat("repeat",
                         cl::desc("Time N runs after a warm-up and print "
                                  "median_ms"),
                         cl::value_desc("N"), cl::init(0), cl::sub(run),
                         cl::cat(category));
cl::opt<bool> compare("check",
                      cl::desc("Compare with the float64 reference; exit 1 "
                               "when over tolerance (1e-4 f32, 2e-2 f16/bf16)"),
                      cl::sub(run), cl::cat(category));

void parse(int argc, const char **argv) {
  for (cl::SubCommand *sub : {&check, &explain, &reference, &run})
    cl::HideUnrelatedOptions(category, *sub);
  cl::ParseCommandLineOptions(argc, argv,
                              "attnc: an ahead-of-time compiler for attention\n");
}

} // namespace attnc::options
