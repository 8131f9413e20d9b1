//===- Error.cpp - User-facing errors -------------------------------------===//

#include "Support/Error.h"

#include <cstdio>

namespace attnc {

std::string printableMessage(const std::string &message, size_t limit) {
  std::string out;
  for (size_t i = 0; i < message.size(); ++i) {
    if (out.size() >= limit) {
      out += "... (" + std::to_string(message.size() - i) + " more bytes)";
      break;
    }
    unsigned char c = static_cast<unsigned char>(message[i]);
    if (c == '\n')
      out += "\\n";
    else if (c < 0x20 || c == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += char(c);
    }
  }
  return out;
}

} // namespace attnc
