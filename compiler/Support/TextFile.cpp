//===- TextFile.cpp - Reading a user's file, bounded ----------------------===//

#include "Support/TextFile.h"

#include "Support/Error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace attnc {

std::string
readUserFile(const std::string &path, const std::string &where,
             const std::string &what, size_t limit,
             const std::string &pastLimit,
             const std::function<void(std::string_view)> &checkStart) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw UserError(where + ": is a directory, not " + what);
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    throw UserError(where + ": cannot open " + what + ": " +
                    std::strerror(errno));
  std::string bytes;
  char buffer[1 << 16];
  while (stream.read(buffer, sizeof buffer) || stream.gcount() > 0) {
    std::string_view chunk(buffer, size_t(stream.gcount()));
    if (bytes.empty() && checkStart)
      checkStart(chunk);
    bytes.append(chunk);
    if (bytes.size() > limit)
      throw UserError(where + ": larger than " + std::to_string(limit >> 20) +
                      " MiB, " + pastLimit);
  }
  if (stream.bad())
    throw UserError(where + ": cannot read " + what + ": " +
                    std::strerror(errno));
  return bytes;
}

} // namespace attnc
