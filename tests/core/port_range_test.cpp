#include "fast/core/port_range.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "common/error_message.hpp"
#include "fast/core/error.hpp"

namespace fast::core {
namespace {

TEST(PortRange, ParsesLoHiAndEmpty) {
  const PortRange r = parse_port_range("29400-29499", "ports");
  EXPECT_EQ(r.low, 29400);
  EXPECT_EQ(r.high, 29499);
  EXPECT_EQ(r.text(), "29400-29499");
  EXPECT_TRUE(parse_port_range("", "ports").any());
  EXPECT_EQ(parse_port_range("", "ports").text(), "");
  EXPECT_EQ(parse_port_range("7-7", "ports").text(), "7-7");
}

TEST(PortRange, RefusesWhatIsNotARangeNamingTheKeyAndValue) {
  for (const std::string bad : {"0-10", "10-9", "1-65536", "29400", "-5", "a-b", "1-2-3", " 1-2", "1-", "99999999-1"}) {
    const std::string message =
        testing::error_message<InvalidArgument>([&] { (void)parse_port_range(bad, "ports (FAST_PORTS)"); });
    EXPECT_EQ(message,
              "ports (FAST_PORTS): expected a port range LO-HI with 1 <= LO <= HI <= 65535 (e.g. "
              "29400-29499), got '" +
                  bad + "'")
        << bad;
  }
}

TEST(PortRange, TriesEveryPortOnceInARotation) {
  const PortRange r{29400, 29409};
  std::vector<int> ports = ports_to_try(r);
  ASSERT_EQ(ports.size(), 10u);
  // A rotation of low..high: consecutive ports, wrapping once.
  for (std::size_t i = 1; i < ports.size(); ++i) EXPECT_EQ(ports[i], ports[i - 1] == r.high ? r.low : ports[i - 1] + 1);
  std::sort(ports.begin(), ports.end());
  std::vector<int> all(10);
  std::iota(all.begin(), all.end(), 29400);
  EXPECT_EQ(ports, all);
  EXPECT_EQ(ports_to_try(PortRange{}), std::vector<int>{0});
  // The rendezvous's port is left out; a range of just it leaves nothing to try.
  std::vector<int> without = ports_to_try(r, 29403);
  std::sort(without.begin(), without.end());
  all.erase(all.begin() + 3);
  EXPECT_EQ(without, all);
  EXPECT_TRUE(ports_to_try(PortRange{5, 5}, 5).empty());
  // Every rendezvous address's port is left out (a port outside the range changes nothing).
  std::vector<int> without_two = ports_to_try(r, std::vector<int>{29400, 29409, 30000});
  std::sort(without_two.begin(), without_two.end());
  std::vector<int> middle(8);
  std::iota(middle.begin(), middle.end(), 29401);
  EXPECT_EQ(without_two, middle);
}

}  // namespace
}  // namespace fast::core
