// Spec strings: topologies and their schedules (topology/builders.hpp, schedule.hpp) and codecs
// (compress/codec.hpp). The first byte picks the worker count (1 to 64), the rest is the spec.
// Specs that name a file (file:PATH) are left out: the edge-list reader has its own checks and a
// fuzzer could name /dev/zero.

#include "fast/compress/codec.hpp"
#include "fast/topology/builders.hpp"
#include "fast/topology/schedule.hpp"
#include "harness.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int n = 1 + data[0] % 64;
  const std::string spec(fast::fuzz::text_of(data + 1, size - 1));
  if (spec.find("file:") != std::string::npos) return 0;
  fast::fuzz::expect_accepted_or_refused([&] { (void)fast::topology::make_topology(spec, n, 7); });
  fast::fuzz::expect_accepted_or_refused([&] { (void)fast::topology::make_schedule(spec, n, 7); });
  fast::fuzz::expect_accepted_or_refused([&] { (void)fast::compress::make_codec(spec, 7); });
  return 0;
}
