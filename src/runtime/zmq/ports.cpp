// free_loopback_port() and loopback_port_taken() of ports.hpp.

#include "fast/runtime/zmq/ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>

#include "fast/core/error.hpp"

namespace fast::runtime::zmq {

namespace {

// Binds a TCP socket to 127.0.0.1:port (0: any; with SO_REUSEADDR when `reuse`) and closes it;
// returns the port bound, or 0 with errno set when the bind fails.
int probe_port(int port, bool reuse = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  FAST_ENFORCE_AS(core::IoError, fd >= 0, "cannot create a socket to find a free port ({})", std::strerror(errno));
  const int one = 1;
  if (reuse) (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok ? ntohs(addr.sin_port) : 0;
}

// The lowest port of the kernel's ephemeral range (32768 where /proc does not say).
int ephemeral_low() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0, high = 0;
  return range >> low >> high && low > 4096 ? low : 32768;
}

}  // namespace

int free_loopback_port() {
  const int low = ephemeral_low();
  std::mt19937 gen(std::random_device{}());
  std::uniform_int_distribution<int> pick(std::max(1024, low - 12000), low - 1);
  for (int attempt = 0; attempt < 64; ++attempt)
    if (const int port = probe_port(pick(gen)); port != 0) return port;
  const int port = probe_port(0);
  FAST_ENFORCE_AS(core::IoError, port != 0, "cannot find a free TCP port on 127.0.0.1 ({})", std::strerror(errno));
  return port;
}

std::string loopback_port_taken(int port) { return probe_port(port, true) != 0 ? std::string() : std::strerror(errno); }

}  // namespace fast::runtime::zmq
