#pragma once
// The memory this process has used, as the kernel counts it.

#include <cstdint>

namespace fast::core {

// The largest resident set this process has had since it started, in bytes (getrusage's
// ru_maxrss, which Linux reports in KiB); 0 where the kernel does not tell. Thread-safe.
std::uint64_t peak_rss_bytes();

}  // namespace fast::core
