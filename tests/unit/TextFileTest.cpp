//===- TextFileTest.cpp - Tests of writing our files whole ----------------===//

#include "Support/TextFile.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

using namespace attnc;
namespace fs = std::filesystem;

namespace {

std::string contentsOf(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

struct WriteFileWhole : ::testing::Test {
  fs::path directory;
  void SetUp() override {
    std::string model = (fs::temp_directory_path() / "attnc-text-XXXXXX").string();
    ASSERT_NE(mkdtemp(model.data()), nullptr);
    directory = model;
  }
  void TearDown() override { fs::remove_all(directory); }
};

TEST_F(WriteFileWhole, WritesAndReplaces) {
  fs::path path = directory / "out.txt";
  ASSERT_EQ(writeFileWhole(path.string(), "first, longer contents"), 0);
  EXPECT_EQ(contentsOf(path), "first, longer contents");
  ASSERT_EQ(writeFileWhole(path.string(), "second"), 0);
  EXPECT_EQ(contentsOf(path), "second");
  // Nothing but the file: no unnamed or temporary file is left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(directory),
                          fs::directory_iterator()),
            1);
}

TEST_F(WriteFileWhole, EmptyContents) {
  fs::path path = directory / "empty";
  ASSERT_EQ(writeFileWhole(path.string(), ""), 0);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::file_size(path), 0u);
}

TEST_F(WriteFileWhole, MissingDirectoryIsAnErrno) {
  fs::path path = directory / "missing" / "out.txt";
  EXPECT_EQ(writeFileWhole(path.string(), "x"), ENOENT);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(WriteFileWhole, StagedFileHasNoNameUntilNamed) {
  fs::path path = directory / "out.txt";
  {
    StagedFile dropped;
    ASSERT_EQ(dropped.write(path.string(), "never named"), 0);
  }
  StagedFile file;
  ASSERT_EQ(file.write(path.string(), "contents"), 0);
  // Where O_TMPFILE works (every file system the tests run on), nothing is
  // in the directory yet, and a file dropped unnamed leaves nothing.
  EXPECT_TRUE(fs::is_empty(directory));
  ASSERT_EQ(file.name(), 0);
  EXPECT_EQ(contentsOf(path), "contents");
  EXPECT_EQ(std::distance(fs::directory_iterator(directory),
                          fs::directory_iterator()),
            1);
}

} // namespace
