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
/// them; prints "wrote PATH" for each.
void writeAll(const std::string &directory,
              const std::vector<std::pair<std::string, std::string>> &files);

int checkCommand();
int explainCommand();
int importCommand();
int referenceCommand();
int runCommand();
int compileCommand();
int tuneCommand();

} // namespace attnc

#endif // ATTNC_DRIVER_COMMANDS_H
