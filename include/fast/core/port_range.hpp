#pragma once
// A range of TCP ports that every listening socket of a process lies in (FAST_PORTS, --ports LO-HI of
// `fast train` and `fast launch`), so that a firewall opens just that range (docs/launch.md, "Ports
// and firewalls"). Thread-safe (no shared state).

#include <string>
#include <vector>

namespace fast::core {

// A port range; low == 0: any port (the kernel's choice).
struct PortRange {
  int low = 0, high = 0;
  bool any() const noexcept { return low == 0; }
  // "LO-HI" as written, "" for any.
  std::string text() const;
};

// "LO-HI" with 1 <= LO <= HI <= 65535, or "" (any). InvalidArgument naming `key` (the flag and its
// variable), the form expected and the value as given.
PortRange parse_port_range(const std::string& text, const std::string& key);

// The range's ports in the order to try them: every port once but those in `avoid` (the
// rendezvous's, which process 0 or a survivor binds), from a random one upward, wrapping around
// (processes of one host that start together rarely collide on their first try). {0} (any port)
// for an empty range.
std::vector<int> ports_to_try(const PortRange& range, const std::vector<int>& avoid);
inline std::vector<int> ports_to_try(const PortRange& range, int avoid = 0) {
  return ports_to_try(range, std::vector<int>{avoid});
}

}  // namespace fast::core
