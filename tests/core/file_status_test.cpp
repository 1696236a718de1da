// core::readable_twice (core/file_status.hpp): which paths a check made before a run may read
// without taking their text from the run.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/test_dir.hpp"
#include "fast/core/file_status.hpp"

namespace fast::core {
namespace {

TEST(ReadableTwice, RegularFilesMissingPathsAndNoPathAreButPipesAreNot) {
  const std::filesystem::path dir = fast::testing::test_dir("fast_file_status_test", "readable_twice");
  std::ofstream(dir / "key") << "public = \"x\"\n";
  EXPECT_TRUE(readable_twice(dir / "key"));
  EXPECT_TRUE(readable_twice(dir / "missing"));  // its reader names it
  EXPECT_TRUE(readable_twice(""));
  const std::filesystem::path fifo = dir / "fifo";
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(readable_twice(fifo));
  std::filesystem::create_symlink(fifo, dir / "link");  // followed, as /dev/stdin is
  EXPECT_FALSE(readable_twice(dir / "link"));
  EXPECT_FALSE(readable_twice(dir));  // a folder is not text at all
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fast::core
