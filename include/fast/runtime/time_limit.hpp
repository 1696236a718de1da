#pragma once
// The message of an operation that passed the operation time limit (op_timeout, FAST_OP_TIMEOUT:
// runtime/environment.hpp, docs/config.md): one text for every runtime and layer that enforces it,
// so that a user sees the same sentence, naming the two ways to change the limit, wherever a wait
// ran out. Thread-safety: a pure function.

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace fast::runtime {

// "WHAT did not complete within SECONDS s (the operation time limit: op_timeout, FAST_OP_TIMEOUT)";
// `clock` follows the seconds: empty for wall-clock time, " of simulated time" under sim.
inline std::string time_limit_message(std::string_view what, double seconds, std::string_view clock = {}) {
  return fmt::format("{} did not complete within {} s{} (the operation time limit: op_timeout, FAST_OP_TIMEOUT)", what,
                     seconds, clock);
}

}  // namespace fast::runtime
