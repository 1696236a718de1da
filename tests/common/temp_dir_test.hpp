#pragma once
// A gtest fixture with a fresh folder of its own under the system's temporary folder
// (TMP/fast_test_PID/TESTNAME), removed after each test.

#include <gtest/gtest.h>

#include <filesystem>

#include "common/run_fast.hpp"

namespace fast::testing {

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test_dir("fast_test", ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    std::error_code ec;
    std::filesystem::remove(dir_.parent_path(), ec);  // the process's folder, once empty
  }

  std::filesystem::path dir_;
};

}  // namespace fast::testing
