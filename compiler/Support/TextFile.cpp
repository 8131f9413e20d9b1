//===- TextFile.cpp - Reading a user's text file, bounded -----------------===//

#include "Support/TextFile.h"

#include "Support/Error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace attnc {

std::string readTextFile(const std::string &path, const std::string &where,
                         const std::string &what, size_t limit) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw UserError(where + ": is a directory, not " + what);
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    throw UserError(where + ": cannot open " + what + ": " +
                    std::strerror(errno));
  std::string text;
  char buffer[1 << 16];
  while (stream.read(buffer, sizeof buffer) || stream.gcount() > 0) {
    text.append(buffer, size_t(stream.gcount()));
    if (text.size() > limit)
      throw UserError(where + ": larger than " + std::to_string(limit >> 20) +
                      " MiB, more than any " +
                      (what.rfind("a ", 0) == 0 ? what.substr(2) : what));
  }
  if (stream.bad())
    throw UserError(where + ": cannot read " + what + ": " +
                    std::strerror(errno));
  return text;
}

} // namespace attnc
