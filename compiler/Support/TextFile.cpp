//===- TextFile.cpp - Reading a user's file, writing ours -----------------===//

#include "Support/TextFile.h"

#include "Support/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <utility>

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

int writeSyncAndClose(int fd, std::string_view bytes) {
  auto fail = [fd](int code) {
    ::close(fd);
    return code;
  };
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return fail(errno);
    done += size_t(n);
  }
  // EINVAL, EROFS: a file that cannot be synced (a pipe, some /dev files).
  if (::fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
    return fail(errno);
  return ::close(fd) == 0 ? 0 : errno;
}

StagedFile::StagedFile(StagedFile &&other) noexcept
    : path(std::move(other.path)), unnamed(other.unnamed) {
  other.unnamed = -1;
}

StagedFile::~StagedFile() {
  if (unnamed >= 0)
    ::close(unnamed);
}

int StagedFile::write(const std::string &target, std::string_view bytes) {
  path = target;
  std::string directory = std::filesystem::path(path).parent_path().string();
  int fd = ::open(directory.empty() ? "." : directory.c_str(),
                  O_WRONLY | O_TMPFILE | O_CLOEXEC, 0666);
  if (fd < 0) { // No O_TMPFILE here (EOPNOTSUPP, EISDIR on old kernels).
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    return fd < 0 ? errno : writeSyncAndClose(fd, bytes);
  }
  // writeSyncAndClose closes, so the descriptor is duplicated for naming.
  unnamed = ::dup(fd);
  if (unnamed < 0) {
    int reason = errno;
    ::close(fd);
    return reason;
  }
  return writeSyncAndClose(fd, bytes);
}

int StagedFile::name() {
  if (unnamed < 0)
    return 0; // Written under its path already.
  // linkat does not replace: a file left under `path` by an earlier run
  // goes first. /proc/self/fd names the unnamed file without the
  // privilege AT_EMPTY_PATH needs.
  ::unlink(path.c_str());
  std::string self = "/proc/self/fd/" + std::to_string(unnamed);
  int reason = ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(),
                        AT_SYMLINK_FOLLOW) == 0
                   ? 0
                   : errno;
  ::close(unnamed);
  unnamed = -1;
  return reason;
}

int writeFileWhole(const std::string &path, std::string_view bytes) {
  StagedFile file;
  if (int reason = file.write(path, bytes))
    return reason;
  return file.name();
}

} // namespace attnc
