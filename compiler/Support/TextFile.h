//===- TextFile.h - Reading a user's file, writing ours -----------*- C++
//-*-===//
//
// Graphs, schedules and ONNX models are files a user gives: a directory, an
// unreadable file or an endless one (/dev/zero, a pipe) must get one clear
// line, not a parse error of nothing or a process out of memory. What attnc
// writes goes to disk whole before it is renamed into place.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_TEXTFILE_H
#define ATTNC_SUPPORT_TEXTFILE_H

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace attnc {

/// The file at `path`, read whole in chunks of at most `limit` bytes in all
/// ("WHERE: larger than N MiB, PAST_LIMIT" beyond). `checkStart`, if given,
/// sees the first chunk before the rest is read and throws for a file that
/// cannot be what is wanted. Throws UserError("WHERE: ...") with WHERE
/// `where` (the path, or the flag and the path) naming `what` the file
/// should be ("a graph file").
std::string
readUserFile(const std::string &path, const std::string &where,
             const std::string &what, size_t limit,
             const std::string &pastLimit,
             const std::function<void(std::string_view)> &checkStart = {});

/// Writes every byte of `bytes` to `fd` (retrying interrupted writes),
/// flushes it to disk so that a crash after a rename cannot leave an empty
/// file under the final name, and closes `fd` in every case. Returns 0, or
/// the errno of the call that failed.
int writeSyncAndClose(int fd, std::string_view bytes);

/// A file written and synced before it has its name, so that even SIGKILL,
/// which no handler sees, cannot leave a partial file under that name. The
/// bytes go to an unnamed file (O_TMPFILE) in the directory of the path;
/// where the file system has no O_TMPFILE, to the path directly. Naming is
/// a separate step, so that a caller with several files can write them all
/// first and then name them together in a moment.
class StagedFile {
public:
  StagedFile() = default;
  StagedFile(StagedFile &&other) noexcept;
  StagedFile &operator=(StagedFile &&) = delete;
  ~StagedFile();

  /// Writes `bytes` to be named `path`. Returns 0 or an errno.
  int write(const std::string &path, std::string_view bytes);
  /// Gives the written file its path, replacing a file there. Returns 0 or
  /// an errno.
  int name();

private:
  std::string path;
  int unnamed = -1; // Open on the unnamed file until it is named.
};

/// Writes `bytes` to a new file at `path` (replacing one there), synced,
/// that has its name only once complete (a StagedFile named at once).
/// Returns 0 or an errno.
int writeFileWhole(const std::string &path, std::string_view bytes);

} // namespace attnc

#endif // ATTNC_SUPPORT_TEXTFILE_H
