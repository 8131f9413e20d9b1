//===- TextFile.h - Reading a user's text file, bounded -----------*- C++
//-*-===//
//
// Graphs and schedules are text a user gives: a directory, an unreadable
// file or an endless one (/dev/zero, a pipe) must get one clear line, not a
// parse error of nothing or a process out of memory.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_TEXTFILE_H
#define ATTNC_SUPPORT_TEXTFILE_H

#include <cstddef>
#include <string>

namespace attnc {

/// The file at `path`, read whole in chunks of at most `limit` bytes in all.
/// Throws UserError("WHERE: ...") with WHERE `where` (the path, or the flag
/// and the path) naming `what` the file should be ("a graph file").
std::string readTextFile(const std::string &path, const std::string &where,
                         const std::string &what, size_t limit);

} // namespace attnc

#endif // ATTNC_SUPPORT_TEXTFILE_H
