#pragma once
// Test helpers for error paths, shared by every test folder.

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>

namespace fast::testing {

// Runs fn, expects it to throw E; returns the message ("" and a test failure when nothing is thrown).
template <typename E>
std::string error_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception, none was thrown";
  return {};
}

// Runs fn, expects it to throw E, and checks the message holds every given fragment.
template <typename E, typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string_view> fragments) {
  const std::string what = error_message<E>(std::forward<Fn>(fn));
  for (std::string_view f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
}

}  // namespace fast::testing
