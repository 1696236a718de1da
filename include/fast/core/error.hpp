#pragma once
// The exception family of FAST and the FAST_ENFORCE checks.
//
// Each exception type asks the caller for a different reaction:
//   InvalidArgument  bad input (a value, a shape, a name, a file): fix the input.
//   InvalidUsage     calls in the wrong order or on the wrong object: fix the program.
//   IoError          a peer, link or file is broken: retry elsewhere or give up.
//   TimeoutError     an operation did not complete within its limit.
//   PeerLost         a peer left or died; the strategy decides whether to go on.
//   RemoteError      another worker failed; this one was released from its wait.
// Nothing in the library aborts the process; only the CLI turns exceptions into exit codes.
// The checks always run (also in release builds) and report file:line, the failed condition
// and, for FAST_ENFORCE_EQ, both values.

#include <stdexcept>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fast::core {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class InvalidArgument : public Error {
 public:
  using Error::Error;
};
class InvalidUsage : public Error {
 public:
  using Error::Error;
};
class IoError : public Error {
 public:
  using Error::Error;
};
class TimeoutError : public Error {
 public:
  using Error::Error;
};
class PeerLost : public Error {
 public:
  using Error::Error;
};
class RemoteError : public Error {
 public:
  using Error::Error;
};
// A process that joins an elastic run under way (docs/faults.md) was not admitted because the run
// ended, or was asked to stop (SIGINT, SIGTERM), first: it trained nothing and writes nothing.
// exit_status: what `fast` exits with, 0 (the run ended without it) or 128 + the signal.
class NotAdmitted : public Error {
 public:
  NotAdmitted(const std::string& what, int exit_status) : Error(what), exit_status_(exit_status) {}
  int exit_status() const noexcept { return exit_status_; }

 private:
  int exit_status_;
};

// The message of an error as a user sees it (the command's stderr, a Python exception): without the
// source location and check text that FAST_ENFORCE appends (" (dir/file.cpp:42: check 'x > 0'
// failed)"), which name the build's files. FAST_LOG_LEVEL=debug keeps them.
std::string user_message(const std::exception& e);
// The same for any text that may quote such messages (a log line: core::log_line).
std::string without_check_locations(std::string_view text);

namespace detail {
// Builds "<message> (<file>:<line>: check '<cond>' failed)" and throws E.
template <typename E>
[[noreturn]] void fail_check(const char* file, int line, const char* cond, const std::string& message) {
  throw E(fmt::format("{} ({}:{}: check '{}' failed)", message, file, line, cond));
}
}  // namespace detail

}  // namespace fast::core

namespace fast {
using core::Error;
using core::InvalidArgument;
using core::InvalidUsage;
using core::IoError;
using core::PeerLost;
using core::RemoteError;
using core::TimeoutError;
}  // namespace fast

// Throws ErrorType with a fmt-formatted message.
#define FAST_THROW(ErrorType, ...) throw ErrorType(::fmt::format(__VA_ARGS__))

// Throws InvalidArgument with the fmt-formatted message when cond is false.
#define FAST_ENFORCE(cond, ...)                                                                    \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      ::fast::core::detail::fail_check<::fast::core::InvalidArgument>(__FILE__, __LINE__, #cond,   \
                                                                      ::fmt::format(__VA_ARGS__)); \
    }                                                                                              \
  } while (0)

// Same as FAST_ENFORCE with a chosen exception type.
#define FAST_ENFORCE_AS(ErrorType, cond, ...)                                                             \
  do {                                                                                                    \
    if (!(cond)) {                                                                                        \
      ::fast::core::detail::fail_check<ErrorType>(__FILE__, __LINE__, #cond, ::fmt::format(__VA_ARGS__)); \
    }                                                                                                     \
  } while (0)

// Throws InvalidArgument naming both values ("expected a == b, got 3 vs 4") when a != b.
#define FAST_ENFORCE_EQ(a, b, ...)                                                                                  \
  do {                                                                                                              \
    const auto& fast_enforce_a_ = (a);                                                                              \
    const auto& fast_enforce_b_ = (b);                                                                              \
    if (!(fast_enforce_a_ == fast_enforce_b_)) {                                                                    \
      ::fast::core::detail::fail_check<::fast::core::InvalidArgument>(                                              \
          __FILE__, __LINE__, #a " == " #b,                                                                         \
          ::fmt::format("{}: expected {} == {}, got {} vs {}", ::fmt::format(__VA_ARGS__), #a, #b, fast_enforce_a_, \
                        fast_enforce_b_));                                                                          \
    }                                                                                                               \
  } while (0)
