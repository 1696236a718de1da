#include "signal_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fast/core/error.hpp"

namespace fast::cli {

namespace {
volatile sig_atomic_t g_write_fd = -1;

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] auto n = ::write(g_write_fd, &byte, 1);  // a full pipe drops the byte: still readable
  errno = saved;
}
}  // namespace

SignalPipe::SignalPipe(const std::vector<int>& signals) {
  FAST_ENFORCE_AS(core::InvalidUsage, g_write_fd == -1, "SignalPipe: only one may exist at a time");
  int fds[2];
  FAST_ENFORCE_AS(core::IoError, ::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0, "cannot create a pipe for signals ({})",
                  std::strerror(errno));
  read_fd_ = fds[0];
  write_fd_ = fds[1];
  g_write_fd = write_fd_;
  struct sigaction action {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  std::vector<std::pair<int, struct sigaction>> wanted;
  for (int sig : signals) wanted.push_back({sig, action});
  wanted.push_back({SIGPIPE, ignore});
  for (const auto& [sig, act] : wanted) {
    struct sigaction old {};
    ::sigaction(sig, &act, &old);
    previous_.push_back({sig, old});
  }
}

SignalPipe::~SignalPipe() {
  for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) ::sigaction(it->first, &it->second, nullptr);
  g_write_fd = -1;
  ::close(read_fd_);
  ::close(write_fd_);
}

std::vector<int> SignalPipe::take() {
  std::vector<int> got;
  unsigned char bytes[64];
  ssize_t n = 0;
  while ((n = ::read(read_fd_, bytes, sizeof bytes)) > 0 || (n < 0 && errno == EINTR)) {
    for (ssize_t i = 0; i < n; ++i) got.push_back(bytes[i]);
  }
  return got;
}

}  // namespace fast::cli
