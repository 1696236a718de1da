#pragma once
// Test helper: runs fn, expects it to throw E, and checks the message holds every given fragment.

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace fast::optim::testing {

template <typename E, typename Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string_view> fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception, none was thrown";
  } catch (const E& e) {
    const std::string what = e.what();
    for (std::string_view f : fragments) EXPECT_NE(what.find(f), std::string::npos) << "'" << f << "' not in: " << what;
  }
}

}  // namespace fast::optim::testing
