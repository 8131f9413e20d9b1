//===- Error.h - User-facing errors ------------------------------*- C++
//-*-===//
//
// Every error caused by the user's input (a graph, a flag, a `.npy` file, a
// run-time size) is reported as one `UserError` whose message is a single line
// naming where the problem is, for example
//   g.json: /nodes/2/k: unknown value "kk"
//   --input q=q.npy: shape [2, 3] does not match input q [2, 4]
// The driver prints the message and exits with status 1.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_ERROR_H
#define ATTNC_SUPPORT_ERROR_H

#include <cstddef>
#include <stdexcept>
#include <string>

namespace attnc {

class UserError : public std::runtime_error {
public:
  explicit UserError(const std::string &message)
      : std::runtime_error(message), text(message) {}
  /// The whole message, NUL bytes included (what() stops at the first).
  const std::string &message() const { return text; }

private:
  std::string text;
};

/// `message` fit for one line of a terminal: control characters (a NUL, a
/// newline, an escape sequence from a user's file) escaped as \n, \xNN,
/// and past `limit` bytes cut with a count of what was left out.
std::string printableMessage(const std::string &message, size_t limit = 1000);

} // namespace attnc

#endif // ATTNC_SUPPORT_ERROR_H
