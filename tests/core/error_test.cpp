#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>

#include "fast/core/error.hpp"
#include "fast/core/log.hpp"
#include "fast/core/work.hpp"

namespace fast::core {
namespace {

TEST(Enforce, FailureNamesConditionFileAndMessage) {
  try {
    FAST_ENFORCE(1 + 1 == 3, "arithmetic on {}", "purpose");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("arithmetic on purpose"), std::string::npos) << what;
    EXPECT_NE(what.find("1 + 1 == 3"), std::string::npos) << what;
    EXPECT_NE(what.find("error_test.cpp"), std::string::npos) << what;
  }
}

// What a user reads, the error itself or a log line that quotes it, names no build file: the
// location and check text FAST_ENFORCE appends are left out (FAST_LOG_LEVEL=debug keeps them).
TEST(Enforce, ErrorsAndLogLinesShownToAUserQuoteNoBuildFile) {
  const char* level = std::getenv("FAST_LOG_LEVEL");
  if (level != nullptr && std::string_view(level) == "debug") GTEST_SKIP() << "FAST_LOG_LEVEL=debug keeps them";
  try {
    FAST_ENFORCE(1 + 1 == 3, "arithmetic on {}", "purpose");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(user_message(e), "arithmetic on purpose");
    ::testing::internal::CaptureStderr();
    log_line(LogLevel::error, fmt::format("refused: {}; then: {}", e.what(), e.what()));
    EXPECT_EQ(::testing::internal::GetCapturedStderr(),
              "[fast error] refused: arithmetic on purpose; then: arithmetic on purpose\n");
  }
}

TEST(Enforce, EqPrintsBothValues) {
  try {
    FAST_ENFORCE_EQ(3, 4, "length of {}", "x");
    FAIL() << "no throw";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("got 3 vs 4"), std::string::npos) << what;
    EXPECT_NE(what.find("length of x"), std::string::npos) << what;
  }
}

TEST(Enforce, PassingChecksDoNotThrow) {
  EXPECT_NO_THROW(FAST_ENFORCE(true, "never"));
  EXPECT_NO_THROW(FAST_ENFORCE_EQ(2, 2, "never"));
}

TEST(Enforce, AsThrowsChosenType) { EXPECT_THROW(FAST_ENFORCE_AS(InvalidUsage, false, "order"), InvalidUsage); }

TEST(WorkBasics, DefaultIsCompletedAndFailedRethrows) {
  Work ok;
  EXPECT_TRUE(ok.is_completed());
  EXPECT_NO_THROW(ok.wait());
  Work bad = Work::failed(std::make_exception_ptr(IoError("link down")));
  EXPECT_TRUE(bad.is_completed());
  EXPECT_THROW(bad.wait(), IoError);
  EXPECT_NE(bad.error(), nullptr);
}

TEST(WorkBasics, WaitAllWaitsEveryWorkAndRethrowsFirstError) {
  std::vector<Work> works{Work(), Work::failed(std::make_exception_ptr(TimeoutError("a"))),
                          Work::failed(std::make_exception_ptr(IoError("b")))};
  EXPECT_THROW(wait_all(works), TimeoutError);
}

}  // namespace
}  // namespace fast::core
