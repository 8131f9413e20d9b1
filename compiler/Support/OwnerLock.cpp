//===- OwnerLock.cpp - Scratch that outlives a killed process -------------===//

#include "Support/OwnerLock.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnc {

int createOwnerLock(const std::string &path) {
  std::string staged = path + ".new";
  int fd = open(staged.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0)
    return -1;
  // Never over another owner's lock: two sets of kernel files may draw the
  // same random name, and only the lock's creation tells them apart.
  if (flock(fd, LOCK_EX | LOCK_NB) != 0 ||
      renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, path.c_str(),
                RENAME_NOREPLACE) != 0) {
    int reason = errno;
    unlink(staged.c_str());
    close(fd);
    errno = reason;
    return -1;
  }
  return fd;
}

bool takeAbandonedLock(const std::string &path, int &held) {
  struct stat named;
  if (lstat(path.c_str(), &named) != 0 || !S_ISREG(named.st_mode) ||
      named.st_uid != getuid())
    return false;
  int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return false;
  // Still the file at that name once locked: an owner that ended between
  // the lstat and the flock removed it, and the name may be a new owner's.
  struct stat locked;
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &locked) == 0 &&
      lstat(path.c_str(), &named) == 0 && locked.st_ino == named.st_ino &&
      locked.st_dev == named.st_dev) {
    held = fd;
    return true;
  }
  close(fd);
  return false;
}

} // namespace attnc
