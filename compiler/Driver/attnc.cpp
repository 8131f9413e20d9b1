//===- attnc.cpp - The attnc command-line tool ----------------------------===//
//
//   attnc check G.json                  validate, one line per node
//   attnc explain G.json [--json]       the kernels after fusion
//   attnc import G.json [--fused]       the graph as attn IR
//   attnc reference G.json [flags]      the float64 reference evaluator
//   attnc compile G.json -o DIR         NAME.o, NAME.h and NAME.json
//   attnc run G.json [flags]            compile and run, --check, --repeat
//   attnc tune G.json [flags]           search schedules into a tuning database
//
// Exit status: 0 on success, 1 on bad input (one message on stderr naming
// the file and JSON pointer or the flag), 2 on an internal error.
//
//===----------------------------------------------------------------------===//

#include "Driver/Commands.h"
#include "Driver/Options.h"
#include "Halide/HalideBackend.h"
#include "Support/Error.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Signals.h"

#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <vector>

namespace {

void printUsage(std::FILE *stream) {
  std::fprintf(stream,
               "attnc: an ahead-of-time compiler for attention\n\n"
               "USAGE: attnc <command> <graph.json | model.onnx> [options]\n\n"
               "Commands:\n");
  for (const llvm::cl::SubCommand *sub : attnc::options::subcommands())
    std::fprintf(stream, "  %-10s %s\n", sub->getName().str().c_str(),
                 sub->getDescription().str().c_str());
  std::fprintf(
      stream,
      "\n'attnc <command> --help' lists a command's options. "
      "The graph format: docs/graph-format.md; ONNX models: docs/onnx.md\n");
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  attnc::followTuner();
  namespace options = attnc::options;
  std::string command = argc > 1 ? argv[1] : "";
  if (command == "--help" || command == "-h" || command == "help") {
    printUsage(stdout);
    return 0;
  }
  std::string names;
  bool known = false;
  for (const llvm::cl::SubCommand *sub : options::subcommands()) {
    names += (names.empty() ? "" : ", ") + sub->getName().str();
    known |= sub->getName() == command;
  }
  if (!known) {
    if (command.empty())
      printUsage(stderr);
    else
      std::fprintf(stderr, "attnc: unknown command \"%s\"; commands: %s\n",
                   command.c_str(), names.c_str());
    return 1;
  }
  // The files Halide writes for the Halide backend go when a signal ends
  // attnc, like the driver's own temporaries.
  attnc::setTemporaryFileObserver([](const std::string &path, bool live) {
    if (live)
      llvm::sys::RemoveFileOnSignal(path);
    else
      llvm::sys::DontRemoveFileOnSignal(path);
  });
  // InitLLVM installs an out-of-memory handler that aborts; attnc reports
  // std::bad_alloc as a user error instead.
  std::set_new_handler(nullptr);
  if (std::optional<std::string> problem =
          options::parse(argc, const_cast<const char **>(argv))) {
    // Empty when LLVM already printed its one line (a bad boolean value).
    if (!problem->empty())
      std::fprintf(stderr, "attnc %s: %s; see 'attnc %s --help'\n",
                   command.c_str(), attnc::printableMessage(*problem).c_str(),
                   command.c_str());
    return 1;
  }
  try {
    if (options::check)
      return attnc::checkCommand();
    if (options::explain)
      return attnc::explainCommand();
    if (options::import)
      return attnc::importCommand();
    if (options::reference)
      return attnc::referenceCommand();
    if (options::compile)
      return attnc::compileCommand();
    if (options::tune)
      return attnc::tuneCommand();
    return attnc::runCommand();
  } catch (const attnc::UserError &error) {
    std::cerr << attnc::printableMessage(error.message()) << "\n";
    return 1;
  } catch (const std::bad_alloc &) {
    std::cerr << "attnc " << command
              << ": out of memory (are the sizes what you meant?)\n";
    return 1;
  } catch (const std::exception &error) {
    std::cerr << "attnc " << command << ": internal error: " << error.what()
              << "\n";
    return 2;
  }
}
