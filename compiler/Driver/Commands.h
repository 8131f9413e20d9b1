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

namespace attnc {

int checkCommand();
int explainCommand();
int importCommand();
int referenceCommand();
int runCommand();
int compileCommand();
int tuneCommand();

} // namespace attnc

#endif // ATTNC_DRIVER_COMMANDS_H
