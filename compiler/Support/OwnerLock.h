//===- OwnerLock.h - Scratch that outlives a killed process -----*- C++ -*-===//
//
// A process killed with SIGKILL cannot remove its scratch files. Each owner
// of scratch holds an exclusive flock on a lock file beside it for its life;
// the kernel drops a dead process's locks, so a later process that can take
// the lock knows the owner is gone and removes what it left.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_SUPPORT_OWNERLOCK_H
#define ATTNC_SUPPORT_OWNERLOCK_H

#include <string>

namespace attnc {

/// Creates the lock file `path` (new, mode 0600) holding an exclusive flock:
/// made and locked as `path`.new, then renamed, so that no process sees it
/// unlocked while its owner lives; never replacing an existing `path`.
/// Returns the descriptor to keep open, or -1 with errno set (EEXIST:
/// `path` or `path`.new exists; nothing is left behind).
int createOwnerLock(const std::string &path);

/// Whether the lock file at `path`, a regular file of this user, belongs to
/// an owner that is gone: its lock can be taken and it is still the file at
/// `path`. When true, `held` holds the lock; the caller removes what it
/// guarded, the lock file last, then closes `held`.
bool takeAbandonedLock(const std::string &path, int &held);

} // namespace attnc

#endif // ATTNC_SUPPORT_OWNERLOCK_H
