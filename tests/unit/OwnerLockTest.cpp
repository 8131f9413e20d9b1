//===- OwnerLockTest.cpp - Tests of owner locks ---------------------------===//

#include "Support/OwnerLock.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

using namespace attnc;
namespace fs = std::filesystem;

namespace {

struct OwnerLock : ::testing::Test {
  fs::path directory;
  std::string lock;
  void SetUp() override {
    std::string model =
        (fs::temp_directory_path() / "attnc-lock-XXXXXX").string();
    ASSERT_NE(mkdtemp(model.data()), nullptr);
    directory = model;
    lock = (directory / "set.lock").string();
  }
  void TearDown() override { fs::remove_all(directory); }
};

TEST_F(OwnerLock, HeldWhileTheOwnerLives) {
  int owner = createOwnerLock(lock);
  ASSERT_GE(owner, 0);
  EXPECT_FALSE(fs::exists(lock + ".new"));
  int held = -1;
  EXPECT_FALSE(takeAbandonedLock(lock, held));
  close(owner);
  ASSERT_TRUE(takeAbandonedLock(lock, held));
  close(held);
}

TEST_F(OwnerLock, NeverReplacesAnotherOwnersLock) {
  int owner = createOwnerLock(lock);
  ASSERT_GE(owner, 0);
  errno = 0;
  EXPECT_EQ(createOwnerLock(lock), -1);
  EXPECT_EQ(errno, EEXIST);
  EXPECT_FALSE(fs::exists(lock + ".new")); // Nothing left behind.
  int held = -1;
  EXPECT_FALSE(takeAbandonedLock(lock, held)); // Still the first owner's.
  close(owner);
}

TEST_F(OwnerLock, AbandonedWhenTheOwnerIsKilled) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (createOwnerLock(lock) < 0)
      _exit(1);
    pause(); // Killed with its lock held.
  }
  int held = -1;
  for (int wait = 0; wait < 500 && !fs::exists(lock); ++wait)
    usleep(10000);
  EXPECT_FALSE(takeAbandonedLock(lock, held));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(takeAbandonedLock(lock, held));
  close(held);
}

TEST_F(OwnerLock, OnlyRegularFilesOfThisUser) {
  int held = -1;
  EXPECT_FALSE(takeAbandonedLock(lock, held)); // Missing.
  fs::create_directory(lock);
  EXPECT_FALSE(takeAbandonedLock(lock, held)); // A directory.
  fs::remove(lock);
  fs::path target = directory / "target";
  close(createOwnerLock(target.string()));
  fs::create_symlink(target, lock);
  EXPECT_FALSE(takeAbandonedLock(lock, held)); // A link, even to a lock.
}

} // namespace
