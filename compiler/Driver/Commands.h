//===- Commands.h - The attnc subcommands -------------------------*- C++
//-*-===//
//
// Each subcommand reads its flags from Driver/Options.h and returns the
// process exit status. User errors are thrown as UserError and reported by
// main.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_COMMANDS_H
#define ATTNC_DRIVER_COMMANDS_H

#include <string>
#include <utility>
#include <vector>

namespace attnc {

/// Writes (name, contents) files into `directory` (created when missing)
/// through temporaries renamed at the end, so that a failure leaves none of
/// them, and SIGINT or SIGTERM finds either none or all of them in place;
/// prints "wrote PATH" for each. Errors name `flag` (the option that chose
/// the directory) and the file.
void writeAll(const std::string &directory,
              const std::vector<std::pair<std::string, std::string>> &files,
              const std::string &flag = "-o");

/// The median of `values` (not empty): the middle one, or the mean of the
/// two middle ones.
double median(std::vector<double> values);

/// In a candidate `attnc tune` runs (ATTNC_TUNER_PID names the tuner):
/// asks to be killed when the tuner dies, and exits at once when it already
/// has. Does nothing elsewhere.
void followTuner();

int checkCommand();
int explainCommand();
int importCommand();
int referenceCommand();
int runCommand();
int compileCommand();
int tuneCommand();

} // namespace attnc

#endif // ATTNC_DRIVER_COMMANDS_H
