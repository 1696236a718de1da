// The exit codes: their numbers (an interface: scripts and docs/errors.md rely on them), the
// consumer's mapping back to exceptions, and docs/errors.md listing the same numbers.

#include "fast/core/exit_code.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace fast::core {
namespace {

TEST(ExitCode, NumbersAreTheDocumentedOnes) {
  EXPECT_EQ(exit_code::ok, 0);
  EXPECT_EQ(exit_code::unexpected, 1);
  EXPECT_EQ(exit_code::bad_input, 2);
  EXPECT_EQ(exit_code::io_or_peer_lost, 3);
  EXPECT_EQ(exit_code::timeout, 4);
  EXPECT_EQ(exit_code::failed, 5);
  EXPECT_EQ(exit_code::below_min_workers, 6);
  EXPECT_EQ(exit_code::launch_timeout, 124);
  EXPECT_EQ(exit_code::cannot_exec, 127);
  EXPECT_EQ(exit_code::killed_by(9), 137);  // SIGKILL on Linux, as a shell reports it
  EXPECT_EQ(exit_code::killed_by(15), 143);
}

// Which exception throw_unless_ok throws for `code` ("none" if it returns), and its message.
std::string thrown_by(int code, std::string* message = nullptr) {
  try {
    exit_code::throw_unless_ok(code, "the run in 'r' exited with code " + std::to_string(code));
  } catch (const InvalidArgument& e) {
    if (message) *message = e.what();
    return "InvalidArgument";
  } catch (const IoError& e) {
    if (message) *message = e.what();
    return "IoError";
  } catch (const TimeoutError& e) {
    if (message) *message = e.what();
    return "TimeoutError";
  } catch (const Error& e) {
    if (message) *message = e.what();
    return "Error";
  }
  return "none";
}

TEST(ExitCode, ThrowUnlessOkInvertsTheProducersMapping) {
  EXPECT_EQ(thrown_by(exit_code::ok), "none");
  std::string message;
  EXPECT_EQ(thrown_by(exit_code::bad_input, &message), "InvalidArgument");
  EXPECT_EQ(message, "the run in 'r' exited with code 2");
  EXPECT_EQ(thrown_by(exit_code::io_or_peer_lost), "IoError");
  EXPECT_EQ(thrown_by(exit_code::timeout), "TimeoutError");
  // Every other code is a plain Error, which main turns into `failed` (5).
  for (int code : {1, 5, 6, 7, 124, 127, 137, 255}) EXPECT_EQ(thrown_by(code), "Error") << code;
}

// docs/errors.md: the table row of each exception ends with its code, and the launch codes and
// the header are named.
TEST(ExitCode, ErrorsDocListsTheSameCodes) {
  std::ifstream in(std::string(FAST_TEST_SOURCE_DIR) + "/docs/errors.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  auto row_code = [&](const std::string& type) -> std::string {
    const auto at = doc.find("| `" + type + "` |");
    if (at == std::string::npos) return "(no row)";
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    const auto end = row.find_last_not_of(" |");
    const auto begin = row.find_last_of("| ", end) + 1;
    return row.substr(begin, end + 1 - begin);
  };
  EXPECT_EQ(row_code("InvalidArgument"), std::to_string(exit_code::bad_input));
  EXPECT_EQ(row_code("InvalidUsage"), std::to_string(exit_code::bad_input));
  EXPECT_EQ(row_code("IoError"), std::to_string(exit_code::io_or_peer_lost));
  EXPECT_EQ(row_code("PeerLost"), std::to_string(exit_code::io_or_peer_lost));
  EXPECT_EQ(row_code("TimeoutError"), std::to_string(exit_code::timeout));
  EXPECT_EQ(row_code("RemoteError"), std::to_string(exit_code::failed));
  for (const char* mention :
       {"Exit code 1", "| 6 | `below_min_workers` |", "124", "127", "128 + the signal", "fast/core/exit_code.hpp"})
    EXPECT_NE(doc.find(mention), std::string::npos) << mention;
}

}  // namespace
}  // namespace fast::core
